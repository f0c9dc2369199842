//! One function per command: build the config, call the library, print the result, and say
//! which exit status the result deserves.

pub mod access;
pub mod backup;
pub mod endpoint;
pub mod k8s;
pub mod kv;
pub mod maintenance;
pub mod member;
pub mod pki;
pub mod platform;
pub mod snapshot;

use std::process::ExitCode;

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Done, and everything checked is fine.
    Success,
    /// Done, but what it checked is not fine (an unhealthy endpoint, hashes that disagree).
    Failure,
    /// Could not be done: bad input, unreachable cluster, refused credentials.
    Error,
}

impl From<ExitStatus> for ExitCode {
    fn from(status: ExitStatus) -> Self {
        match status {
            ExitStatus::Success => ExitCode::SUCCESS,
            ExitStatus::Failure => ExitCode::from(1),
            ExitStatus::Error => ExitCode::from(2),
        }
    }
}

impl ExitStatus {
    /// Success when `ok`, else Failure.
    pub fn from_ok(ok: bool) -> Self {
        if ok { Self::Success } else { Self::Failure }
    }
}
