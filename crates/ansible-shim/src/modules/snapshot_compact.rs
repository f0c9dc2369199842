//! `etcd_snapshot_compact`: makes a chain of a store (a full backup and the delta segments
//! `backup run` wrote after it) into one new full backup at the chain's last revision,
//! verified before and after it is published, as `etcdops snapshot compact` does. A chain
//! already compacted up to its last revision changes nothing; check mode reads the store's
//! catalog only and says which chain, how many segments and up to which revision. A
//! compaction of the same chain already under way elsewhere is a failure that wrote nothing.

use etcdops::snapshot::{ConsolidateRequest, NoProgress, consolidate, preview_consolidate};

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let request: ConsolidateRequest = context.args()?;
    if context.check_mode {
        let preview = preview_consolidate(&request).await?;
        let mut outcome = Outcome::unchanged(match &preview.compacted {
            Some(done) => format!(
                "the chain of {} is compacted already up to revision {} ({done}); nothing to do",
                preview.source, preview.to_revision
            ),
            None => format!(
                "would compact the chain of {} (revision {}) and its {} segment(s) into one full backup at revision {} (check mode: nothing written)",
                preview.source, preview.source_revision, preview.segments, preview.to_revision
            ),
        });
        outcome.changed = preview.changed;
        outcome.warnings.clone_from(&preview.warnings);
        return Ok(outcome.with_fields(&preview));
    }
    let compacted = consolidate(&request, &NoProgress).await?;
    let result = &compacted.result;
    // Another compaction holds the chain: nothing was written by this one, and it is no
    // success (the compacted backup is not there yet).
    if let Some(busy) = &result.busy {
        return Err(ModuleError::new(format!(
            "{busy}; run the task again once it is done"
        )));
    }
    let mut outcome = Outcome::unchanged(if result.changed {
        format!(
            "compacted the chain of {} ({} segment(s), {} change(s)) into {} at revision {}, verified",
            result.source,
            result.segments,
            result.changes_applied,
            result.manifest.object,
            result.manifest.revision
        )
    } else {
        format!(
            "the chain of {} is compacted already up to revision {} ({}); nothing written",
            result.source, result.manifest.revision, result.manifest.object
        )
    });
    outcome.changed = result.changed;
    outcome.warnings.clone_from(&compacted.warnings);
    Ok(outcome.with_fields(&compacted))
}
