//! The guards every changing operation passes, keyed by a typed [`Operation`] with a typed
//! [`Force`]: the OpenShift operator guard (OpenShift's cluster-etcd-operator owns
//! membership, defragmentation and restores), [`Guards::check`], and the quorum guards of
//! membership changes, [`quorum`] (a removal must leave a quorum of healthy voters, a voter
//! is not added to a sick cluster, a learner is promoted only once in sync). The workflows
//! call them themselves, so neither a front-end nor another program calling them can skip
//! them. A refusal is an error whose hint is `force` (or another option that gets past it),
//! which each front-end spells in its own words.

use std::path::{Path, PathBuf};

use etcd_common::{Hint, options::FORCE};
use etcd_core::{
    Change, ChangeGuard, ClusterConfig, ClusterView, LEARNER_READY_PERCENT, MemberState,
};
use etcd_snapshot::RestoreGuard;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

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
    /// Enabling a cluster downgrade (OpenShift's operator owns etcd's version).
    Downgrade,
    /// Changing authentication, users or roles (OpenShift's operator owns etcd's access).
    AccessChange,
    /// Making or reissuing a CA or member certificate (OpenShift's operator issues them).
    CertificateIssue,
    /// Writing etcd's configuration file (OpenShift's operator renders etcd's static pod).
    ServerConfigWrite,
    /// Rewriting the apiserver's encryption configuration (OpenShift's apiserver operators own
    /// encryption at rest).
    EncryptionConfig,
    /// Raising a stopped member's saved commit index to its WAL's tail (a quorum recovery
    /// step; OpenShift restores with its own procedure).
    WalTailAdoption,
    /// Stopping a member's static etcd pod by parking its manifest (OpenShift's operator
    /// renders that pod; its own restore procedure moves it aside, forced on purpose).
    StaticPodStop,
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
            Operation::Downgrade => "downgrade",
            Operation::AccessChange => "auth, user or role change",
            Operation::CertificateIssue => "certificate issue",
            Operation::ServerConfigWrite => "server config write",
            Operation::EncryptionConfig => "encryption config rewrite",
            Operation::WalTailAdoption => "WAL tail adoption",
            Operation::StaticPodStop => "static pod stop",
        }
    }

    /// Whether the guard also looks at the cluster (not only at the host's files).
    fn online(self) -> bool {
        !matches!(
            self,
            Operation::SnapshotRestore
                | Operation::CertificateIssue
                | Operation::ServerConfigWrite
                | Operation::EncryptionConfig
                | Operation::WalTailAdoption
                | Operation::StaticPodStop
        )
    }
}

/// Whether the caller asked to go past a guard's refusal (`force`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(transparent)]
pub struct Force(pub bool);

/// Where the guards look: the directory standing for the host's `/` (platform files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guards {
    /// The host root (`/`, or a test's fake root).
    pub root: PathBuf,
}

/// What the guards found for one operation that they let through, and the decision the
/// changing primitives ask for: only [`Guards::check`] makes one. Passed to etcd-core's
/// membership changes, defrag and auth, user and role changes (a [`ChangeGuard`]: it runs
/// the [`quorum`] guards on the cluster as read, with the same `force`) and to
/// etcd-snapshot's restores (a [`RestoreGuard`]); for any other operation than the one
/// checked it refuses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Passed {
    /// What the OpenShift operator guard found.
    pub operator: etcd_k8s::OperatorCheck,
    /// The operation checked.
    #[serde(skip)]
    operation: Operation,
    /// Whether it was forced.
    #[serde(skip)]
    force: Force,
}

impl Passed {
    /// The warning to give when a guard was forced through.
    pub fn warning(&self) -> Option<String> {
        self.operator.warning()
    }

    /// The operation this decision is for.
    pub fn operation(&self) -> Operation {
        self.operation
    }

    /// Refuses using this decision for another operation than the one checked.
    fn for_operation(&self, asked: Operation) -> Result<()> {
        if asked == self.operation {
            return Ok(());
        }
        Err(Error::invalid(
            format!(
                "the guards were checked for `{}`, not for `{}`; check them for this operation",
                self.operation.words(),
                asked.words()
            ),
            None,
        ))
    }
}

impl ChangeGuard for Passed {
    type Error = Error;

    fn check(&self, change: Change<'_>) -> Result<()> {
        let (operation, view, subject) = match change {
            Change::MemberAdd { view, learner } => {
                (Operation::MemberAdd, Some(view), Subject::New { learner })
            }
            Change::MemberRemove { view, member } => {
                (Operation::MemberRemove, Some(view), Subject::Member(member))
            }
            Change::MemberUpdate { view, member } => {
                (Operation::MemberUpdate, Some(view), Subject::Member(member))
            }
            Change::MemberPromote { view, member } => (
                Operation::MemberPromote,
                Some(view),
                Subject::Member(member),
            ),
            Change::Defrag { .. } => (Operation::Defrag, None, Subject::New { learner: false }),
            Change::DowngradeEnable => {
                (Operation::Downgrade, None, Subject::New { learner: false })
            }
            Change::Access { .. } => (
                Operation::AccessChange,
                None,
                Subject::New { learner: false },
            ),
        };
        self.for_operation(operation)?;
        match view {
            Some(view) => quorum(operation, self.force, view, subject),
            None => Ok(()),
        }
    }
}

impl RestoreGuard for Passed {
    fn check_restore(&self) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>> {
        self.for_operation(Operation::SnapshotRestore)
            .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
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
        // A refusal is K8sError::ManagedByOperator, whose hint is `force`.
        let operator =
            etcd_k8s::check_operator(&self.root, cluster, operation.words(), force.0).await?;
        Ok(Passed {
            operator,
            operation,
            force,
        })
    }
}

/// A guard's refusal: what it found and what to do, with the options that get past it.
fn refused(reason: String, hint: Hint) -> Error {
    Error::Refused { reason, hint }
}

pub use etcd_common::options::LEARNER;

/// What a membership change is about, for the [`quorum`] guards.
#[derive(Debug, Clone, Copy)]
pub enum Subject<'a> {
    /// A member to be added: a voter, or a learner.
    New {
        /// Whether it joins as a non-voting learner.
        learner: bool,
    },
    /// A member of the cluster (to be removed, updated or promoted).
    Member(&'a MemberState),
}

/// The quorum guards of a membership change, decided on `view` (the cluster as the change
/// is about to be made against it): refuses, unless `force`,
/// - [`Operation::MemberRemove`] of a voter that would leave fewer healthy voters than the
///   quorum, or no voter at all;
/// - [`Operation::MemberAdd`] of a voter while any member is unhealthy, or when the healthy
///   voters alone would not make the new quorum (a one-member cluster: the new voter raises the
///   quorum before it can vote);
/// - [`Operation::MemberPromote`] of a learner that does not answer, or is behind the leader
///   (below [`LEARNER_READY_PERCENT`] of its raft index), or without a reachable leader.
///
/// Other operations and subjects pass.
pub fn quorum(
    operation: Operation,
    force: Force,
    view: &ClusterView,
    subject: Subject<'_>,
) -> Result<()> {
    if force.0 {
        return Ok(());
    }
    match (operation, subject) {
        (Operation::MemberRemove, Subject::Member(target)) => removal(view, target),
        (Operation::MemberAdd, Subject::New { learner: false }) => new_voter(view),
        (Operation::MemberPromote, Subject::Member(target)) => promotion(view, target),
        _ => Ok(()),
    }
}

fn removal(view: &ClusterView, target: &MemberState) -> Result<()> {
    if target.member.is_learner {
        return Ok(());
    }
    let voters_after = view.voters().count().saturating_sub(1);
    let quorum_after = voters_after / 2 + 1;
    let healthy_after = view
        .healthy_voters()
        .saturating_sub(usize::from(target.healthy));
    if voters_after == 0 {
        return Err(refused(
            "this is the last voting member; removing it would destroy the cluster".into(),
            Hint::option(FORCE),
        ));
    }
    if healthy_after < quorum_after {
        return Err(refused(
            format!(
                "removing {} would leave {healthy_after} healthy voting member(s) of {voters_after}, below the quorum of {quorum_after}; fix the unhealthy members first ({})",
                target.member.id,
                unhealthy_summary(view)
            ),
            Hint::option(FORCE),
        ));
    }
    Ok(())
}

fn new_voter(view: &ClusterView) -> Result<()> {
    if !view.unhealthy().is_empty() {
        return Err(refused(
            format!(
                "not adding a voting member while members are unhealthy ({}): the new member raises the quorum before it can vote; add it as a learner and promote it once in sync, or force it",
                unhealthy_summary(view)
            ),
            Hint::any_of(&[LEARNER, FORCE]),
        ));
    }
    // Until the new member runs and votes, the healthy voters must make the new quorum alone.
    let voters_after = view.voters().count() + 1;
    let quorum_after = voters_after / 2 + 1;
    let healthy = view.healthy_voters();
    if healthy < quorum_after {
        return Err(refused(
            format!(
                "adding a voting member makes the quorum {quorum_after} of {voters_after} while {healthy} voting member(s) are healthy: writes stop until the new member runs and catches up; add it as a learner and promote it once in sync, or force it"
            ),
            Hint::any_of(&[LEARNER, FORCE]),
        ));
    }
    Ok(())
}

fn promotion(view: &ClusterView, target: &MemberState) -> Result<()> {
    learner_in_sync(view, target)
}

/// Whether a learner answers and is in sync with the leader (its applied index at least
/// [`LEARNER_READY_PERCENT`] of the leader's raft index); a voter passes. The refusal says
/// what is missing (a promotion waits on it: `crate::wait`).
pub(crate) fn learner_in_sync(view: &ClusterView, target: &MemberState) -> Result<()> {
    if !target.member.is_learner {
        return Ok(());
    }
    let hint = || Hint::option(FORCE);
    let leader_index = view
        .leader_state()
        .and_then(|l| l.status.as_ref())
        .map(|s| s.raft_index)
        .ok_or_else(|| {
            refused(
                "the cluster has no reachable leader; promotion needs one".into(),
                hint(),
            )
        })?;
    let learner_index = target
        .status
        .as_ref()
        .map(|s| s.raft_applied_index)
        .ok_or_else(|| {
            refused(
                format!(
                    "learner {} does not answer ({}); start it and let it catch up first",
                    target.member.id,
                    target.error.as_deref().unwrap_or("unreachable")
                ),
                hint(),
            )
        })?;
    if learner_index * 100 < leader_index * LEARNER_READY_PERCENT {
        return Err(refused(
            format!(
                "learner {} is not in sync: applied index {learner_index} against the leader's {leader_index}; wait and retry",
                target.member.id
            ),
            hint(),
        ));
    }
    Ok(())
}

/// The unhealthy members, `id (name): why`, for refusals.
fn unhealthy_summary(view: &ClusterView) -> String {
    view.unhealthy()
        .iter()
        .map(|m| {
            format!(
                "{} ({}): {}",
                m.member.id,
                if m.member.name.is_empty() {
                    "unstarted"
                } else {
                    &m.member.name
                },
                m.error.as_deref().unwrap_or("unhealthy")
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

impl Default for Guards {
    fn default() -> Guards {
        Guards::on_host("/")
    }
}

#[cfg(test)]
mod tests {
    use etcd_common::OptionId;
    use etcd_common::options::FORCE;
    use etcd_core::{Member, MemberId, MemberStatus};

    use super::*;
    use crate::hint_of;

    fn state(id: u64, learner: bool, healthy: bool, applied: Option<u64>) -> MemberState {
        MemberState {
            member: Member {
                id: MemberId(id),
                name: format!("m{id}"),
                peer_urls: vec![format!("http://10.0.0.{id}:2380")],
                client_urls: vec![format!("http://10.0.0.{id}:2379")],
                is_learner: learner,
                started: true,
            },
            endpoint: Some(format!("http://10.0.0.{id}:2379")),
            healthy,
            status: applied.map(|index| MemberStatus {
                version: "3.5.0".into(),
                db_size: 0,
                db_size_in_use: 0,
                is_leader: id == 1,
                leader: MemberId(1),
                raft_term: 2,
                raft_index: index,
                raft_applied_index: index,
                revision: 1,
                errors: Vec::new(),
            }),
            error: (!healthy).then(|| "connection refused".to_string()),
        }
    }

    fn view(members: Vec<MemberState>) -> ClusterView {
        ClusterView {
            cluster_id: MemberId(7),
            members,
            leader: Some(MemberId(1)),
        }
    }

    fn hint(result: Result<()>) -> Vec<OptionId> {
        let error = result.unwrap_err();
        hint_of(&error).expect("a refusal has a hint").options
    }

    #[test]
    fn removing_a_healthy_voter_from_a_sick_cluster_is_refused_unless_forced() {
        let sick = view(vec![
            state(1, false, true, Some(100)),
            state(2, false, true, Some(100)),
            state(3, false, false, None),
        ]);
        let target = Subject::Member(&sick.members[1]);
        let refused = quorum(Operation::MemberRemove, Force(false), &sick, target).unwrap_err();
        let message = refused.to_string();
        assert!(message.contains("below the quorum of 2"), "{message}");
        assert!(message.contains("m3"), "{message}");
        assert!(!message.contains("--"), "{message}");
        assert_eq!(hint_of(&refused).unwrap().options, vec![FORCE]);
        assert!(quorum(Operation::MemberRemove, Force(true), &sick, target).is_ok());
        // The dead one may go: two healthy voters of two remain.
        let dead = Subject::Member(&sick.members[2]);
        assert!(quorum(Operation::MemberRemove, Force(false), &sick, dead).is_ok());
    }

    #[test]
    fn the_last_voter_is_kept_and_learners_go_freely() {
        let alone = view(vec![
            state(1, false, true, Some(5)),
            state(2, true, false, None),
        ]);
        let last = Subject::Member(&alone.members[0]);
        assert_eq!(
            hint(quorum(Operation::MemberRemove, Force(false), &alone, last)),
            vec![FORCE]
        );
        let learner = Subject::Member(&alone.members[1]);
        assert!(quorum(Operation::MemberRemove, Force(false), &alone, learner).is_ok());
    }

    #[test]
    fn a_voter_is_not_added_to_a_sick_cluster_but_a_learner_is() {
        let sick = view(vec![
            state(1, false, true, Some(9)),
            state(2, false, false, None),
        ]);
        let voter = Subject::New { learner: false };
        assert_eq!(
            hint(quorum(Operation::MemberAdd, Force(false), &sick, voter)),
            vec![LEARNER, FORCE]
        );
        let learner = Subject::New { learner: true };
        assert!(quorum(Operation::MemberAdd, Force(false), &sick, learner).is_ok());
        assert!(quorum(Operation::MemberAdd, Force(true), &sick, voter).is_ok());
        let well = view(vec![
            state(1, false, true, Some(9)),
            state(2, false, true, Some(9)),
            state(3, false, true, Some(9)),
        ]);
        assert!(quorum(Operation::MemberAdd, Force(false), &well, voter).is_ok());
    }

    #[test]
    fn a_voter_is_not_added_to_a_one_member_cluster_whose_writes_it_would_stop() {
        let alone = view(vec![state(1, false, true, Some(9))]);
        let voter = Subject::New { learner: false };
        let refused = quorum(Operation::MemberAdd, Force(false), &alone, voter).unwrap_err();
        assert!(refused.to_string().contains("quorum 2 of 2"), "{refused}");
        assert_eq!(hint(Err(refused)), vec![LEARNER, FORCE]);
        let learner = Subject::New { learner: true };
        assert!(quorum(Operation::MemberAdd, Force(false), &alone, learner).is_ok());
        // Two healthy voters make the quorum of three alone.
        let pair = view(vec![
            state(1, false, true, Some(9)),
            state(2, false, true, Some(9)),
        ]);
        assert!(quorum(Operation::MemberAdd, Force(false), &pair, voter).is_ok());
    }

    #[test]
    fn a_learner_is_promoted_only_once_it_answers_and_is_in_sync() {
        let cluster = view(vec![
            state(1, false, true, Some(1000)),
            state(2, true, true, Some(500)),
            state(3, true, false, None),
            state(4, true, true, Some(950)),
        ]);
        let promote = |i: usize| {
            quorum(
                Operation::MemberPromote,
                Force(false),
                &cluster,
                Subject::Member(&cluster.members[i]),
            )
        };
        let behind = promote(1).unwrap_err().to_string();
        assert!(behind.contains("not in sync"), "{behind}");
        let silent = promote(2).unwrap_err().to_string();
        assert!(silent.contains("does not answer"), "{silent}");
        assert!(promote(3).is_ok());
        let forced = Subject::Member(&cluster.members[1]);
        assert!(quorum(Operation::MemberPromote, Force(true), &cluster, forced).is_ok());
    }

    #[test]
    fn updates_restores_and_defrags_pass_the_quorum_guards() {
        let sick = view(vec![
            state(1, false, true, Some(9)),
            state(2, false, false, None),
        ]);
        let member = Subject::Member(&sick.members[0]);
        for operation in [
            Operation::MemberUpdate,
            Operation::Defrag,
            Operation::SnapshotRestore,
        ] {
            assert!(quorum(operation, Force(false), &sick, member).is_ok());
        }
    }

    async fn decision(operation: Operation, force: bool) -> Passed {
        let plain = tempfile::tempdir().unwrap();
        Guards::on_host(plain.path())
            .check(operation, Force(force), None)
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn the_decision_the_membership_primitives_ask_runs_the_quorum_guards() {
        let sick = view(vec![
            state(1, false, true, Some(100)),
            state(2, false, true, Some(100)),
            state(3, false, false, None),
        ]);
        let change = Change::MemberRemove {
            view: &sick,
            member: &sick.members[1],
        };
        let refused = decision(Operation::MemberRemove, false)
            .await
            .check(change)
            .unwrap_err();
        assert!(
            refused.to_string().contains("below the quorum"),
            "{refused}"
        );
        assert!(
            decision(Operation::MemberRemove, true)
                .await
                .check(change)
                .is_ok()
        );
        let add = Change::MemberAdd {
            view: &sick,
            learner: false,
        };
        let refused = decision(Operation::MemberAdd, false)
            .await
            .check(add)
            .unwrap_err();
        assert_eq!(hint_of(&refused).unwrap().options, vec![LEARNER, FORCE]);
    }

    #[tokio::test]
    async fn a_decision_is_only_good_for_the_operation_checked() {
        let well = view(vec![state(1, false, true, Some(9))]);
        let update = Change::MemberUpdate {
            view: &well,
            member: &well.members[0],
        };
        assert!(
            decision(Operation::MemberUpdate, false)
                .await
                .check(update)
                .is_ok()
        );
        let forced_defrag = decision(Operation::Defrag, true).await;
        let refused = forced_defrag.check(update).unwrap_err().to_string();
        assert!(
            refused.contains("checked for `defrag`, not for `member update`"),
            "{refused}"
        );
        assert!(forced_defrag.check_restore().is_err());
        assert!(
            decision(Operation::SnapshotRestore, false)
                .await
                .check_restore()
                .is_ok()
        );
    }
}
