//! What every etcdops crate shares and none owns: the neutral option hints that library errors
//! carry (each front-end spells them its own way), the one [`InvalidOption`] error every
//! library wraps for a bad option, the atomic file writer, the private
//! creation of files and dirs that can hold etcd data ([`private`]), the size and
//! duration parsers behind every `--*-size` and `--*-age` option, and URL password redaction.
//! It depends on no etcd, network or store crate, so the offline crates can use it.
//!
//! ```
//! use etcd_common::{Hint, Style, options, parse_duration, parse_size, with_hint};
//!
//! assert_eq!(parse_size("5MiB").unwrap(), 5 * 1024 * 1024);
//! assert_eq!(parse_duration("7d").unwrap().as_secs(), 7 * 86400);
//! let hint = Hint::option(options::SKIP_HASH_CHECK);
//! assert_eq!(
//!     with_hint("the db has no SHA-256 trailer", Some(&hint), Style::Cli),
//!     "the db has no SHA-256 trailer (--skip-hash-check)"
//! );
//! ```
#![deny(missing_docs)]
// Test code makes fixtures with std's creating calls; library code creates through
// `etcd_common::private` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

mod duration;
mod file;
mod hint;
mod invalid;
pub mod options;
pub mod private;
mod redact;
mod size;

pub use duration::parse_duration;
pub use file::{FileError, write_file_atomically};
pub use hint::{ErrorKind, Hint, Hinted, OptionId, OptionKind, Style, with_hint};
pub use invalid::InvalidOption;
pub use redact::{redact_endpoint, redact_urls};
pub use size::parse_size;
