//! One test per decision of `backup run`'s state machines, fed events as the runner would.

use super::*;
use chrono::{TimeZone, Utc};
use etcd_core::MemberId;

fn position(base: &str, covered: i64) -> ChainPosition {
    ChainPosition {
        base: base.to_string(),
        highest_time: Utc.timestamp_opt(0, 0).unwrap(),
        base_revision: 100,
        cluster_id: MemberId(0xabc),
        next_sequence: 4,
        covered_revision: covered,
    }
}

const CADENCE: Cadence = Cadence {
    full_every: Duration::from_secs(3600),
    delta_every: Duration::from_secs(60),
    segment_bytes: 4096,
};

/// A chain from revision 100, its segment opened at `t0`, the next full backup due in an
/// hour.
fn chain(t0: Instant) -> ChainMachine<&'static str> {
    ChainMachine::new(CADENCE, 100, "http://e1", t0 + CADENCE.full_every, t0)
}

#[test]
fn a_restart_continues_the_chain_an_earlier_run_left() {
    let t0 = Instant::now();
    let mut run = RunMachine::<&str>::default();
    let mut state = RunState::default();
    let full_at = Utc.with_ymd_and_hms(2026, 11, 30, 1, 0, 0).unwrap();
    let found = Resume::Chain {
        chain: position("etcd-abc/full", 130),
        endpoint: "http://e2".into(),
        full_due: t0,
        full_at,
    };
    let (resumed, event) = run.on_resume(&mut state, Ok(found));
    assert_eq!(resumed, Resumed::Decided);
    assert!(
        matches!(&event, Some(RunEvent::Resumed { base, covered_revision: 130 }) if base == "etcd-abc/full"),
        "{event:?}"
    );
    // The metrics show the continued chain's full backup and how far it is published.
    assert_eq!(state.last_full_at, Some(full_at));
    assert_eq!(state.last_full_revision, 100);
    assert_eq!(state.last_delta_revision, 130);
    match run.next(false) {
        Next::Continue(c) => {
            assert_eq!(c.chain.covered_revision, 130);
            assert_eq!(c.chain.next_sequence, 4);
            assert_eq!(c.endpoint, "http://e2");
            assert_eq!(c.full_due, t0);
        }
        _ => panic!("the earlier chain is not continued"),
    }
    // Continued once: afterwards a full backup starts the next chain.
    assert!(matches!(run.next(false), Next::TakeFull));
}

#[test]
fn a_restart_continues_the_chain_even_when_asked_to_stop() {
    // The chain is followed (and its segment published) before the stop is seen.
    let mut run = RunMachine::<&str>::default();
    let found = Resume::Chain {
        chain: position("etcd-abc/full", 130),
        endpoint: "http://e2".into(),
        full_due: Instant::now(),
        full_at: Utc::now(),
    };
    run.on_resume(&mut RunState::default(), Ok(found));
    assert!(matches!(run.next(true), Next::Continue(_)));
    assert!(matches!(run.next(true), Next::Stop));
}

#[test]
fn a_broken_chain_at_restart_is_a_gap_and_a_new_full_backup_follows() {
    let mut run = RunMachine::<&str>::default();
    let mut state = RunState::default();
    let found = Resume::Broken {
        base: "etcd-abc/full".into(),
        covered_revision: 120,
        reason: "segment 3 is missing".into(),
    };
    let (resumed, event) = run.on_resume(&mut state, Ok(found));
    assert_eq!(resumed, Resumed::Decided);
    assert!(
        matches!(&event, Some(RunEvent::Gap { covered_revision: 120, reason, .. }) if reason == "segment 3 is missing"),
        "{event:?}"
    );
    assert_eq!(state.gaps, 1);
    assert!(matches!(run.next(false), Next::TakeFull));
}

#[test]
fn an_empty_store_at_start_means_a_full_backup_first() {
    let mut run = RunMachine::<&str>::default();
    let mut state = RunState::default();
    let (resumed, event) = run.on_resume(&mut state, Ok(Resume::Nothing));
    assert_eq!(resumed, Resumed::Decided);
    assert!(event.is_none());
    assert_eq!(state.gaps, 0);
    assert!(matches!(run.next(false), Next::TakeFull));
    // Asked to stop before any full backup: nothing to do.
    assert!(matches!(run.next(true), Next::Stop));
}

#[test]
fn an_unreadable_store_at_start_is_read_again_with_growing_waits() {
    let mut run = RunMachine::<&str>::default();
    let mut state = RunState::default();
    let waits: Vec<Duration> = (0..7)
        .map(|_| match run.on_resume(&mut state, Err("503".into())) {
            (
                Resumed::Retry(wait),
                Some(RunEvent::Failed {
                    reason: FailureReason::Store,
                    error,
                }),
            ) => {
                assert_eq!(
                    error, "reading the store for a chain to continue: 503",
                    "{error}"
                );
                wait
            }
            other => panic!("not retried: {:?}", other.0),
        })
        .collect();
    let secs: Vec<u64> = waits.iter().map(Duration::as_secs).collect();
    assert_eq!(secs, [1, 2, 4, 8, 16, 30, 30]);
}

#[test]
fn a_saved_full_backup_starts_the_next_chain_and_failures_back_off() {
    let mut run = RunMachine::<&str>::default();
    assert!(matches!(run.next(false), Next::TakeFull));
    assert_eq!(run.on_full_failed(), Duration::from_secs(2));
    assert_eq!(run.on_full_failed(), Duration::from_secs(4));
    run.on_full_saved("full-1");
    // A full backup taken is followed even once asked to stop (its chain publishes what
    // it has before stopping).
    assert!(matches!(run.next(true), Next::Start("full-1")));
    // A success resets the wait after the next failure.
    assert!(matches!(run.next(false), Next::TakeFull));
    assert_eq!(run.on_full_failed(), Duration::from_secs(2));
}

#[test]
fn a_chain_ending_at_the_next_full_backup_continues_from_it() {
    let mut run = RunMachine::<&str>::default();
    let mut state = RunState::default();
    let (after, event) = run.on_chain_end(
        &mut state,
        &position("old", 200),
        ChainEnd::FullDue(Box::new("new")),
        false,
    );
    assert_eq!(after, AfterChain::Next);
    assert!(event.is_none());
    assert_eq!(state.gaps, 0);
    assert!(matches!(run.next(false), Next::Start("new")));
}

#[test]
fn a_vanished_full_backup_is_a_gap_and_a_new_full_backup_follows_at_once() {
    let mut run = RunMachine::<&str>::default();
    let mut state = RunState {
        last_full_at: Some(Utc::now()),
        last_full_revision: 100,
        ..RunState::default()
    };
    let (after, event) =
        run.on_chain_end(&mut state, &position("gone", 150), ChainEnd::Lost, false);
    assert_eq!(after, AfterChain::Next);
    assert!(
        matches!(&event, Some(RunEvent::FullBackupLost { base, covered_revision: 150 }) if base == "gone"),
        "{event:?}"
    );
    assert_eq!((state.gaps, state.fulls_lost), (1, 1));
    // Until the next one is stored the metrics show no full backup.
    assert_eq!(state.last_full_at, None);
    assert_eq!(state.last_full_revision, 0);
    assert!(matches!(run.next(false), Next::TakeFull));
    // Found while stopping: reported, and the run stops.
    let (after, _) = run.on_chain_end(&mut state, &position("gone", 150), ChainEnd::Lost, true);
    assert_eq!(after, AfterChain::Stop);
    assert_eq!(state.fulls_lost, 2);
}

#[test]
fn a_gap_is_counted_and_reported_and_a_new_full_backup_follows() {
    let mut run = RunMachine::<&str>::default();
    let mut state = RunState::default();
    let end = ChainEnd::Gap("the watch fell behind a compaction".into());
    let (after, event) = run.on_chain_end(&mut state, &position("base", 170), end, false);
    assert_eq!(after, AfterChain::Next);
    assert!(
        matches!(&event, Some(RunEvent::Gap { base, covered_revision: 170, .. }) if base == "base"),
        "{event:?}"
    );
    assert_eq!(state.gaps, 1);
    assert!(matches!(run.next(false), Next::TakeFull));
    // After a gap while stopping, nothing more is taken.
    assert!(matches!(run.next(true), Next::Stop));
}

#[test]
fn a_chain_that_ends_leaves_no_watch_behind() {
    let ends: [fn() -> ChainEnd<&'static str>; 5] = [
        || ChainEnd::Gap("the watch fell behind a compaction".into()),
        || ChainEnd::Lost,
        || ChainEnd::FullDue(Box::new("next")),
        || ChainEnd::Stopped,
        || ChainEnd::TakenOver("lock held by host-b".into()),
    ];
    for (i, end) in ends.into_iter().enumerate() {
        let mut run = RunMachine::<&str>::default();
        let mut state = RunState {
            watch_behind_seconds: 45.0,
            ..RunState::default()
        };
        run.on_chain_end(&mut state, &position("base", 170), end(), false);
        assert_eq!(state.watch_behind_seconds, 0.0, "end {i}");
    }
}

#[test]
fn a_takeover_or_a_stop_ends_the_run() {
    let mut run = RunMachine::<&str>::default();
    let mut state = RunState::default();
    let chain = position("base", 170);
    let taken = ChainEnd::TakenOver("lock held by host-b".into());
    assert_eq!(
        run.on_chain_end(&mut state, &chain, taken, false).0,
        AfterChain::TakenOver("lock held by host-b".into())
    );
    assert_eq!(
        run.on_chain_end(&mut state, &chain, ChainEnd::Stopped, true)
            .0,
        AfterChain::Stop
    );
    assert_eq!(state.gaps, 0);
}

#[test]
fn a_member_behind_the_chain_at_reconnect_means_rewound_history() {
    let t0 = Instant::now();
    let mut machine = chain(t0);
    assert_eq!(machine.on_connected(100), Ok(()));
    assert_eq!(machine.on_connected(250), Ok(()));
    let reason = machine.on_connected(40).unwrap_err();
    assert!(
        reason.starts_with("history rewound: cluster at revision 40, chain had 100"),
        "{reason}"
    );
    // A check finds it too, once the chain received more.
    machine.on_response(false, 0, "");
    machine.on_change(120, 0);
    machine.on_recorded(120);
    assert!(matches!(machine.on_check(110), Checked::Rewound(r) if r.contains("chain had 120")));
}

#[test]
fn a_check_reports_the_lag_and_marks_the_time_once_caught_up() {
    let t0 = Instant::now();
    let machine = chain(t0);
    assert_eq!(
        machine.on_check(130),
        Checked::Fine {
            lag: 30,
            mark: None
        }
    );
    assert_eq!(
        machine.on_check(100),
        Checked::Fine {
            lag: 0,
            mark: Some(100)
        }
    );
}

#[test]
fn a_watch_behind_a_compaction_ends_the_chain_and_other_cancels_reconnect() {
    let t0 = Instant::now();
    let mut machine = chain(t0);
    let gap = machine.on_response(true, 150, "");
    assert_eq!(
        gap,
        Response::Gap(
            "the watch fell behind a compaction: history starts at revision 150 but revision 101 was next"
                .into()
        )
    );
    assert_eq!(
        machine.on_response(true, 0, "permission denied"),
        Response::Reconnect("etcd cancelled the watch: permission denied".into())
    );
    assert_eq!(machine.on_response(false, 0, ""), Response::Record);
}

#[test]
fn changes_already_received_are_skipped_and_sub_revisions_numbered() {
    let t0 = Instant::now();
    let mut machine = chain(t0);
    assert_eq!(machine.watch_from(), 101);
    machine.on_response(false, 0, "");
    assert_eq!(machine.on_change(100, 0), Change::Skip);
    assert_eq!(machine.on_change(99, 0), Change::Skip);
    for (main, sub) in [(101, 0), (101, 1), (101, 2), (102, 0)] {
        assert_eq!(
            machine.on_change(main, 0),
            Change::Record { sub, cut_at: None }
        );
        machine.on_recorded(main);
    }
    assert_eq!(machine.received(), 102);
    assert_eq!(machine.end_of_response(), Some(102));
    assert_eq!(machine.watch_from(), 103);
    // A response of nothing new (a resent revision) marks nothing.
    machine.on_response(false, 0, "");
    assert_eq!(machine.on_change(102, 0), Change::Skip);
    assert_eq!(machine.end_of_response(), None);
}

#[test]
fn a_full_segment_is_cut_between_two_revisions_never_inside_one() {
    let t0 = Instant::now();
    let mut machine = chain(t0);
    machine.on_response(false, 0, "");
    assert_eq!(
        machine.on_change(101, 4095),
        Change::Record {
            sub: 0,
            cut_at: None
        }
    );
    machine.on_recorded(101);
    // Past the cut size, the next change of the same revision stays in the segment...
    assert_eq!(
        machine.on_change(101, 5000),
        Change::Record {
            sub: 1,
            cut_at: None
        }
    );
    machine.on_recorded(101);
    // ...and the first of the next revision cuts it, marked at the last one received.
    assert_eq!(
        machine.on_change(102, 5000),
        Change::Record {
            sub: 0,
            cut_at: Some(101)
        }
    );
}

#[test]
fn a_segment_is_cut_on_time_from_when_it_was_opened() {
    let t0 = Instant::now();
    let mut machine = chain(t0);
    let due = t0 + CADENCE.delta_every;
    assert!(!machine.segment_due(due - Duration::from_millis(1)));
    assert!(machine.segment_due(due));
    assert_eq!(machine.after_check(due), AfterCheck::Cut);
    assert_eq!(
        machine.after_check(due - Duration::from_secs(1)),
        AfterCheck::Idle
    );
    machine.on_segment_opened(due + Duration::from_secs(5));
    assert!(!machine.segment_due(due + Duration::from_secs(64)));
    assert!(machine.segment_due(due + Duration::from_secs(65)));
}

#[test]
fn the_chain_switches_once_it_received_what_the_next_full_backup_may_hold() {
    let t0 = Instant::now();
    let mut machine = chain(t0);
    let due = t0 + CADENCE.full_every;
    assert!(!machine.full_needed(due - Duration::from_secs(1)));
    assert!(machine.full_needed(due));
    // Stored while the store was at 130: the chain goes on to there.
    machine.on_full_saved("next", 130);
    assert!(!machine.full_needed(due), "taken once");
    assert!(!machine.ready_to_switch());
    assert_eq!(machine.after_check(t0), AfterCheck::Idle);
    machine.on_response(false, 0, "");
    machine.on_change(129, 0);
    machine.on_recorded(129);
    assert!(!machine.ready_to_switch());
    machine.on_change(130, 0);
    machine.on_recorded(130);
    assert!(machine.ready_to_switch());
    // Switching comes before a cut that is due too.
    assert_eq!(machine.after_check(due), AfterCheck::Switch);
    assert_eq!(machine.take_next_full(), Some("next"));
    assert_eq!(machine.take_next_full(), None);
}

#[test]
fn a_failed_next_full_backup_is_tried_again_within_a_minute() {
    let t0 = Instant::now();
    let mut machine = chain(t0);
    let failed_at = t0 + CADENCE.full_every;
    machine.on_full_failed(failed_at);
    assert!(!machine.full_needed(failed_at + Duration::from_secs(59)));
    assert!(machine.full_needed(failed_at + Duration::from_secs(60)));
    // With a shorter full_every, within that.
    let short = Cadence {
        full_every: Duration::from_secs(10),
        ..CADENCE
    };
    let mut machine = ChainMachine::<&str>::new(short, 100, "e1", t0, t0);
    machine.on_full_failed(t0);
    assert!(machine.full_needed(t0 + Duration::from_secs(10)));
    assert!(!machine.full_needed(t0 + Duration::from_secs(9)));
}

#[test]
fn a_lost_watch_tries_other_members_first_with_growing_waits_reset_by_a_response() {
    let t0 = Instant::now();
    let mut machine = chain(t0);
    assert_eq!(machine.members(), (Some("http://e1"), None));
    assert_eq!(machine.on_connect_failed(), Duration::from_millis(200));
    assert_eq!(machine.members(), (Some("http://e1"), None));
    assert_eq!(
        machine.on_watch_lost("http://e1"),
        Duration::from_millis(400)
    );
    assert_eq!(machine.members(), (None, Some("http://e1")));
    assert_eq!(machine.on_connect_failed(), Duration::from_millis(800));
    machine.on_response(false, 0, "");
    assert_eq!(
        machine.on_watch_lost("http://e2"),
        Duration::from_millis(200)
    );
    assert_eq!(machine.members(), (None, Some("http://e2")));
}

#[test]
fn a_lease_ttl_is_asked_once_per_chain() {
    let mut machine = chain(Instant::now());
    assert!(!machine.lease_unknown(0), "no lease");
    assert!(machine.lease_unknown(7));
    machine.on_lease_known(7);
    assert!(!machine.lease_unknown(7));
    assert!(machine.lease_unknown(8));
}

#[test]
fn a_change_larger_than_a_record_is_a_gap() {
    assert!(record_fits(10, MAX_RECORD_BYTES - 10, 5).is_ok());
    let reason = record_fits(11, MAX_RECORD_BYTES - 10, 5).unwrap_err();
    assert_eq!(
        reason,
        format!(
            "a change of {} bytes at revision 5 is larger than a segment record may be",
            MAX_RECORD_BYTES - 10
        )
    );
}

#[test]
fn publishing_is_tried_the_given_number_of_times_with_growing_waits() {
    let mut last = Attempts::new(LAST_SEGMENT_ATTEMPTS);
    assert_eq!(last.failed(), Some(Duration::from_secs(1)));
    assert_eq!(last.failed(), Some(Duration::from_secs(2)));
    assert_eq!(last.failed(), None, "the third failure gives up");
    let mut each = Attempts::new(u32::MAX);
    let waits: Vec<u64> = (0..8).map(|_| each.failed().unwrap().as_secs()).collect();
    assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30, 30]);
}

#[test]
fn a_chain_ended_early_is_a_gap_unless_its_full_backup_is_gone_or_the_lock_taken() {
    let end = ended_early::<&str>(Ok(()), "rewound".into());
    assert!(matches!(end, ChainEnd::Gap(r) if r == "rewound"));
    let end = ended_early::<&str>(Err(ChainEnd::Gap("store down".into())), "rewound".into());
    assert!(matches!(end, ChainEnd::Gap(r) if r == "rewound"));
    assert!(matches!(
        ended_early::<&str>(Err(ChainEnd::Lost), "rewound".into()),
        ChainEnd::Lost
    ));
    assert!(matches!(
        ended_early::<&str>(Err(ChainEnd::TakenOver("b".into())), "rewound".into()),
        ChainEnd::TakenOver(_)
    ));
}

#[test]
fn a_stop_is_a_stop_even_when_the_last_segment_fails_but_reports_it() {
    let (end, failure) = stopped::<&str>(Ok(()));
    assert!(matches!(end, ChainEnd::Stopped) && failure.is_none());
    let (end, failure) = stopped::<&str>(Err(ChainEnd::Gap("503".into())));
    assert!(matches!(end, ChainEnd::Stopped));
    assert!(
        matches!(&failure, Some(RunEvent::Failed { reason: FailureReason::Segment, error }) if error == "the last segment was not published: 503"),
        "{failure:?}"
    );
    let (end, _) = stopped::<&str>(Err(ChainEnd::Lost));
    assert!(matches!(end, ChainEnd::Lost));
    let (end, _) = stopped::<&str>(Err(ChainEnd::TakenOver("b".into())));
    assert!(matches!(end, ChainEnd::TakenOver(_)));
}
