//! `etcd_snapshot_copy`: copies what one restore reads (one backup, a store's newest complete
//! backup, or what a point-in-time restore needs: its full backups and their delta segments)
//! into a local directory laid out as a file store, each object checked against its manifest.
//! Run on the controller, it keeps store credentials there: the etcd hosts restore from the
//! copy (`etcd_snapshot_restore` with `remote_src: false`). A repeated copy changes nothing;
//! check mode copies nothing and says what would be copied.

use etcdops::snapshot::{LocalCopyRequest, NoProgress, copy_for_restore};

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let mut request: LocalCopyRequest = context.args()?;
    request.dry_run = context.check_mode;
    let copied = copy_for_restore(&request, &NoProgress).await?;
    let report = &copied.report;
    let what = format!(
        "{} backup(s) and {} delta segment(s)",
        report.copied, report.segments_copied
    );
    let mut outcome = Outcome::unchanged(if !copied.changed {
        format!(
            "{} already holds {} with its segments; nothing copied",
            request.dest.display(),
            copied.backups.join(", ")
        )
    } else if context.check_mode {
        format!(
            "would copy {what} into {} (check mode: nothing copied)",
            request.dest.display()
        )
    } else {
        format!("copied {what} into {}, verified", request.dest.display())
    });
    outcome.changed = copied.changed;
    Ok(outcome.with_fields(&copied))
}
