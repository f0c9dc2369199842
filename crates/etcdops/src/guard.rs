//! The guards every changing operation passes, keyed by a typed [`Operation`] with a typed
//! [`Force`]: today the OpenShift operator guard (OpenShift's cluster-etcd-operator owns
//! membership, defragmentation and restores). The workflows call [`Guards::check`] themselves,
//! so neither a front-end nor another program calling them can skip it.

use std::path::{Path, PathBuf};

use etcd_core::ClusterConfig;
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// An operation that a guard may refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    /// Adding a member (or a learner).
    MemberAdd,
    /// Removing a member.
    MemberRemove,
    /// Changing a member's peer URLs.
    MemberUpdate,
    /// Promoting a learner.
    MemberPromote,
    /// Defragmenting members.
    Defrag,
    /// Restoring a snapshot into a data dir.
    SnapshotRestore,
}

impl Operation {
    /// The operation in words, as messages name it.
    pub fn words(self) -> &'static str {
        match self {
            Operation::MemberAdd => "member add",
            Operation::MemberRemove => "member remove",
            Operation::MemberUpdate => "member update",
            Operation::MemberPromote => "member promote",
            Operation::Defrag => "defrag",
            Operation::SnapshotRestore => "snapshot restore",
        }
    }

    /// Whether the guard also looks at the cluster (not only at the host's files).
    fn online(self) -> bool {
        !matches!(self, Operation::SnapshotRestore)
    }
}

/// Whether the caller asked to go past a guard's refusal (`force`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Force(pub bool);

/// Where the guards look: the directory standing for the host's `/` (platform files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guards {
    /// The host root (`/`, or a test's fake root).
    pub root: PathBuf,
}

/// What the guards found for one operation that they let through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Passed {
    /// What the OpenShift operator guard found.
    pub operator: etcd_k8s::OperatorCheck,
}

impl Passed {
    /// The warning to give when a guard was forced through.
    pub fn warning(&self) -> Option<String> {
        self.operator.warning()
    }
}

impl Guards {
    /// The guards of the host whose root is `root`.
    pub fn on_host(root: impl AsRef<Path>) -> Guards {
        Guards {
            root: root.as_ref().to_path_buf(),
        }
    }

    /// Refuses `operation` unless every guard lets it through (or `force`). `cluster` is
    /// looked at for online operations when given.
    pub async fn check(
        &self,
        operation: Operation,
        force: Force,
        cluster: Option<&ClusterConfig>,
    ) -> Result<Passed> {
        let cluster = if operation.online() { cluster } else { None };
        let operator =
            etcd_k8s::check_operator(&self.root, cluster, operation.words(), force.0).await?;
        Ok(Passed { operator })
    }
}

impl Default for Guards {
    fn default() -> Guards {
        Guards::on_host("/")
    }
}
