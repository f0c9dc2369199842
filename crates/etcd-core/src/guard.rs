//! The guard every changing primitive asks before it changes a cluster: membership changes,
//! defragmentation, access changes (auth, users, roles) and downgrade enables take a
//! [`ChangeGuard`] argument, so no caller can forget one. The
//! real guards (the OpenShift operator guard and the quorum guards, with their typed
//! `force`) are the workflow layer's: `etcdops::guard::Guards::check` hands out a decision
//! that is one. [`Unguarded`] is the explicit "no guard" of tests and of tools that took the
//! decision themselves.

use crate::cluster::{ClusterView, MemberState};
use crate::error::Error;
use crate::member::Targets;

/// A change about to be made, as the guard sees it.
#[derive(Debug, Clone, Copy)]
pub enum Change<'a> {
    /// Adding a member (a voter, or a learner), on the cluster as read.
    MemberAdd {
        /// The cluster the member joins.
        view: &'a ClusterView,
        /// Whether it joins as a non-voting learner.
        learner: bool,
    },
    /// Removing `member` from the cluster `view`.
    MemberRemove {
        /// The cluster as read.
        view: &'a ClusterView,
        /// The member to remove.
        member: &'a MemberState,
    },
    /// Changing the peer URLs of `member`.
    MemberUpdate {
        /// The cluster as read.
        view: &'a ClusterView,
        /// The member to change.
        member: &'a MemberState,
    },
    /// Promoting the learner `member`.
    MemberPromote {
        /// The cluster as read.
        view: &'a ClusterView,
        /// The learner to promote.
        member: &'a MemberState,
    },
    /// Defragmenting `targets`, asked before any member is dialled.
    Defrag {
        /// The members to defragment.
        targets: Targets,
    },
    /// Enabling a cluster downgrade, asked before any member is dialled (validating and
    /// cancelling one change no version and are not asked).
    DowngradeEnable,
    /// Changing authentication, a user or a role, asked before any member is dialled.
    Access {
        /// The change in words (`user add`, `auth enable`).
        what: &'static str,
    },
}

impl Change<'_> {
    /// The change in words, as messages name it (`member remove`, `defrag`).
    pub fn words(&self) -> &'static str {
        match self {
            Change::MemberAdd { .. } => "member add",
            Change::MemberRemove { .. } => "member remove",
            Change::MemberUpdate { .. } => "member update",
            Change::MemberPromote { .. } => "member promote",
            Change::Defrag { .. } => "defrag",
            Change::DowngradeEnable => "downgrade",
            Change::Access { what } => what,
        }
    }
}

/// A guard decision a changing primitive asks before it changes anything (also in a dry
/// run); its refusal stops the change and is the primitive's error.
pub trait ChangeGuard {
    /// The refusal's error; the primitive's own errors convert into it.
    type Error: From<Error>;

    /// Lets `change` through, or refuses it.
    fn check(&self, change: Change<'_>) -> Result<(), Self::Error>;
}

/// No guard at all: every change passes. For tests, and for a tool that took the guard
/// decision itself; a program on an OpenShift host or a sick cluster passes the workflow
/// layer's guards instead (`etcdops::guard::Guards`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unguarded;

impl ChangeGuard for Unguarded {
    type Error = Error;

    fn check(&self, _change: Change<'_>) -> Result<(), Error> {
        Ok(())
    }
}

impl<G: ChangeGuard + ?Sized> ChangeGuard for &G {
    type Error = G::Error;

    fn check(&self, change: Change<'_>) -> Result<(), G::Error> {
        (**self).check(change)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Client;
    use crate::config::ClusterConfig;

    /// Refuses everything, naming the change it was asked about.
    struct Refuse;

    impl ChangeGuard for Refuse {
        type Error = Error;

        fn check(&self, change: Change<'_>) -> Result<(), Error> {
            Err(Error::Refused {
                reason: format!("test guard refuses {}", change.words()),
            })
        }
    }

    fn nobody() -> ClusterConfig {
        ClusterConfig::for_endpoints(["http://127.0.0.1:1"]).unwrap()
    }

    #[tokio::test]
    async fn a_refused_defrag_dials_nothing() {
        let client = Client::new(nobody());
        let refused = client
            .maintenance()
            .defrag(Targets::Cluster, &Refuse)
            .await
            .unwrap_err();
        assert!(
            refused.to_string().contains("test guard refuses defrag"),
            "{refused}"
        );
        assert_eq!(client.dials(), 0);
        let free = Client::new(nobody())
            .maintenance()
            .defrag(Targets::Configured, &Refuse)
            .await;
        assert!(matches!(free, Err(Error::Refused { .. })), "{free:?}");
    }

    #[tokio::test]
    async fn unguarded_lets_the_change_through_to_the_cluster() {
        // Nobody listens: past the guard, the defrag fails on the dial, not on a refusal.
        let client = Client::new(nobody());
        let report = client
            .maintenance()
            .defrag(Targets::Configured, &Unguarded)
            .await
            .unwrap();
        assert!(!report.completed, "{report:?}");
        assert!(report.steps[0].error.is_some(), "{report:?}");
    }
}
