//! The one error for a bad option or other bad input, shared by every library's error type
//! (each wraps it transparently), so the option it names is its hint in every crate alike.

use std::borrow::Cow;

use crate::{ErrorKind, Hint, Hinted, OptionId};

/// An option (or other input) has a bad value or contradicts another: `invalid {subject}:
/// {reason}`. When it names an option of the operation, that option is its hint; its kind
/// is [`ErrorKind::InvalidInput`] and it is never transient.
///
/// ```
/// use etcd_common::{Hint, Hinted, InvalidOption, OptionId};
///
/// const PART_SIZE: OptionId = OptionId::value("part_size");
/// let err = InvalidOption::new(PART_SIZE, "below 5 MiB");
/// assert_eq!(err.to_string(), "invalid part_size: below 5 MiB");
/// assert_eq!(err.hint(), Some(Hint::option(PART_SIZE)));
/// // A positional argument or an environment variable is no option: no hint.
/// let err = InvalidOption::input("member", "empty");
/// assert_eq!(err.to_string(), "invalid member: empty");
/// assert_eq!(err.hint(), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {subject}: {reason}")]
pub struct InvalidOption {
    /// What the message calls the bad input: the option's neutral id (`part_size`), or the
    /// input's name in words (`member`, `lease ID`, `ETCDOPS_PART_SIZE`).
    pub subject: Cow<'static, str>,
    /// The option of the operation that fixes it, the error's hint; `None` for input that
    /// no option gives (a positional argument, an environment variable).
    pub option: Option<OptionId>,
    /// What was wrong and what to do.
    pub reason: String,
}

impl InvalidOption {
    /// `option` has a bad value: the message names it by its neutral id, and it is the hint.
    pub fn new(option: OptionId, reason: impl Into<String>) -> InvalidOption {
        InvalidOption {
            subject: Cow::Borrowed(option.name),
            option: Some(option),
            reason: reason.into(),
        }
    }

    /// Input that is no option of the operation (a positional argument, an environment
    /// variable, a value described in words) is bad: no hint.
    pub fn input(what: &'static str, reason: impl Into<String>) -> InvalidOption {
        InvalidOption {
            subject: Cow::Borrowed(what),
            option: None,
            reason: reason.into(),
        }
    }

    /// The same error with the message calling the input `subject` (`store option
    /// s3_endpoint`, `data dir`) instead of by its neutral id; the hint stays.
    pub fn called(mut self, subject: impl Into<Cow<'static, str>>) -> InvalidOption {
        self.subject = subject.into();
        self
    }

    /// Whether this error is about `option`.
    pub fn is_about(&self, option: OptionId) -> bool {
        self.option == Some(option)
    }
}

impl Hinted for InvalidOption {
    fn hint(&self) -> Option<Hint> {
        self.option.map(Hint::option)
    }

    fn kind(&self) -> Option<ErrorKind> {
        Some(ErrorKind::InvalidInput)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Style, with_hint};

    #[test]
    fn the_message_may_call_the_option_otherwise_and_keeps_its_hint() {
        const STORE_ENDPOINT: OptionId = OptionId::value("store_endpoint");
        let err = InvalidOption::new(STORE_ENDPOINT, "not a URL")
            .called("store option endpoint_override");
        assert_eq!(
            with_hint(&err.to_string(), err.hint().as_ref(), Style::Cli),
            "invalid store option endpoint_override: not a URL (--store-endpoint)"
        );
        assert!(err.is_about(STORE_ENDPOINT));
        assert!(!err.is_transient());
        assert_eq!(err.kind(), Some(ErrorKind::InvalidInput));
        let input = InvalidOption::input("ETCDOPS_PART_SIZE", "not a size");
        assert!(!input.is_about(STORE_ENDPOINT));
        assert_eq!(input.kind(), Some(ErrorKind::InvalidInput));
    }
}
