//! Neutral option ids and hints. A library error that an option of the operation gets past
//! (or fixes) names that option by its neutral id, never by a front-end's spelling: the CLI
//! renders `skip_hash_check` as `--skip-hash-check`, the Ansible shim as
//! `skip_hash_check: true`. Library error messages therefore never name a `--flag`.

use serde::Serialize;

/// How an option takes its value, which decides how a front-end spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OptionKind {
    /// A switch: `--force` on the command line, `force: true` in a module.
    Switch,
    /// An option with a value: `--cacert FILE`, `cacert: FILE`.
    Value,
    /// A value the command line takes as a positional argument (`member remove MEMBER`) and
    /// a module as an option (`member: NAME`).
    Argument,
}

/// An option of an operation by its neutral id: the snake_case name both front-ends derive
/// their own spelling from (CLI flags and module options share these names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct OptionId {
    /// The snake_case name, e.g. `skip_hash_check`.
    pub name: &'static str,
    /// Switch or value.
    pub kind: OptionKind,
}

impl OptionId {
    /// A switch option (`force`, `move_aside`).
    pub const fn switch(name: &'static str) -> OptionId {
        OptionId {
            name,
            kind: OptionKind::Switch,
        }
    }

    /// An option that takes a value (`cacert`, `data_dir`).
    pub const fn value(name: &'static str) -> OptionId {
        OptionId {
            name,
            kind: OptionKind::Value,
        }
    }

    /// A value that is a positional argument on the command line (`member`, `version`).
    pub const fn argument(name: &'static str) -> OptionId {
        OptionId {
            name,
            kind: OptionKind::Argument,
        }
    }

    /// The option as a front-end spells it.
    pub fn render(&self, style: Style) -> String {
        match (style, self.kind) {
            (Style::Cli, OptionKind::Argument) => format!("the {} argument", self.name),
            (Style::Cli, _) => format!("--{}", self.name.replace('_', "-")),
            (Style::Module, OptionKind::Switch) => format!("{}: true", self.name),
            (Style::Module, OptionKind::Value | OptionKind::Argument) => self.name.to_string(),
            (Style::Neutral, _) => format!("option {}", self.name),
        }
    }
}

/// Which front-end renders a hint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// The `etcdops` command line: `--skip-hash-check`.
    Cli,
    /// An Ansible module of etcd.core: `skip_hash_check: true`.
    Module,
    /// A library caller: `option skip_hash_check`.
    Neutral,
}

/// What gets past an error or fixes it: any one of `options`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hint {
    /// The options, any one of which would do.
    pub options: Vec<OptionId>,
}

impl Hint {
    /// A hint naming one option.
    pub fn option(option: OptionId) -> Hint {
        Hint {
            options: vec![option],
        }
    }

    /// A hint naming several options, any one of which would do.
    pub fn any_of(options: &[OptionId]) -> Hint {
        Hint {
            options: options.to_vec(),
        }
    }

    /// The options in a front-end's words, `--cacert or --insecure-skip-tls-verify`.
    pub fn render(&self, style: Style) -> String {
        self.options
            .iter()
            .map(|o| o.render(style))
            .collect::<Vec<_>>()
            .join(" or ")
    }
}

/// What kind of failure an error is, for a caller that acts on it (an exit code, a retry, a
/// check that says "could not verify" rather than "damaged") without knowing which library
/// raised it or which variant: every library error says its kind or defers to the error it
/// wraps, and `etcdops::kind_of` reads it from any error chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// A bad option, argument or request: the input needs fixing.
    InvalidInput,
    /// A certificate, key or CA file could not be read or is not what it should be.
    CredentialFile,
    /// etcd or the store refused the credentials.
    AuthFailed,
    /// The credentials were accepted but lack a permission the call needs.
    PermissionDenied,
    /// Nothing answered in time, or the service cannot serve now: may succeed later.
    Unreachable,
    /// A guard refused the change (quorum, an operator that owns the member, a running
    /// member, a restore in the way): the hint names what gets past it.
    Refused,
    /// The data is encrypted and no matching identity was given.
    NeedsIdentity,
    /// The data does not check: a hash, a trailer, a page or a record is wrong.
    Damaged,
    /// What was asked for does not exist.
    NotFound,
    /// Anything else: a local I/O error, an unexpected answer.
    Other,
}

/// Implemented by every library error type: the hint an error carries, whether trying again
/// may succeed (an unreachable endpoint, a store's 503), for callers that retry, and its kind.
pub trait Hinted {
    /// The options that get past or fix this error, if any.
    fn hint(&self) -> Option<Hint> {
        None
    }

    /// Whether the same call may succeed if tried again later.
    fn is_transient(&self) -> bool {
        false
    }

    /// This error's kind; `None` when it is the kind of the error it wraps (or, with none,
    /// [`ErrorKind::Other`]).
    fn kind(&self) -> Option<ErrorKind> {
        None
    }
}

/// An error message with its hint appended in `style`: `message (--skip-hash-check)`.
pub fn with_hint(message: &str, hint: Option<&Hint>, style: Style) -> String {
    match hint {
        Some(hint) if !hint.options.is_empty() => format!("{message} ({})", hint.render(style)),
        _ => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::*;

    #[test]
    fn front_ends_spell_an_option_their_own_way() {
        assert_eq!(SKIP_HASH_CHECK.render(Style::Cli), "--skip-hash-check");
        assert_eq!(
            SKIP_HASH_CHECK.render(Style::Module),
            "skip_hash_check: true"
        );
        assert_eq!(CACERT.render(Style::Module), "cacert");
        assert_eq!(CACERT.render(Style::Neutral), "option cacert");
        // A positional argument of the command line, an option of a module.
        assert_eq!(MEMBER.render(Style::Cli), "the member argument");
        assert_eq!(MEMBER.render(Style::Module), "member");
        let hint = Hint::any_of(&[CACERT, INSECURE_SKIP_TLS_VERIFY]);
        assert_eq!(
            with_hint("not trusted", Some(&hint), Style::Cli),
            "not trusted (--cacert or --insecure-skip-tls-verify)"
        );
        assert_eq!(
            with_hint("not trusted", Some(&hint), Style::Module),
            "not trusted (cacert or insecure_skip_tls_verify: true)"
        );
        assert_eq!(with_hint("plain", None, Style::Cli), "plain");
    }
}
