//! One function per command: build the config, call the library, print the result, and say
//! which exit status the result deserves.

pub mod access;
pub mod backup;
pub mod completion;
pub mod data_dir;
pub mod downgrade;
pub mod endpoint;
pub mod k8s;
pub mod kv;
pub mod maintenance;
pub mod member;
pub mod offline;
pub mod pki;
pub mod platform;
pub mod quorum;
pub mod snapshot;
pub mod usage;

use std::process::ExitCode;

use crate::flags::Compat;

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

impl ExitStatus {
    /// The process exit code: 0, 1 for a failure, 2 for an error (etcdctl's 1 for both under
    /// `--compat etcdctl`).
    pub fn code(self, compat: Compat) -> ExitCode {
        match (self, compat) {
            (ExitStatus::Success, _) => ExitCode::SUCCESS,
            (ExitStatus::Failure, _) | (ExitStatus::Error, Compat::Etcdctl) => ExitCode::from(1),
            (ExitStatus::Error, Compat::Etcdops) => ExitCode::from(2),
        }
    }

    /// Success when `ok`, else Failure.
    pub fn from_ok(ok: bool) -> Self {
        if ok { Self::Success } else { Self::Failure }
    }
}

/// etcdctl's writes are not ours: say so, plainly, before any connection.
pub fn refuse_write() -> anyhow::Error {
    anyhow::anyhow!(
        "etcdops never writes or deletes keys or leases (put, del, txn, lease grant/revoke/keep-alive, lock, elect, make-mirror), on purpose: that is how Kubernetes clusters get broken; use etcdctl for writes"
    )
}
