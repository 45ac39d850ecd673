//! The domain's scheduler: every piece of background work of the domain, on its own
//! clock, in one place (`isto serve` runs one [`Scheduler`]; the mail worker only sends
//! mail and drives none of it):
//!
//! * the seller replies waiting to be matched — [`ReplyTicker`], on its own jittered
//!   tick (what keeps a delivery invisible to the seller, see `deliveries::replies`);
//! * the match digests that have come due — [`queue_due_digests`] every
//!   [`DIGEST_EVERY`], on a fixed tick that nothing a request does moves;
//! * the purge, then the expiry sweep and the renewal reminders — every [`SWEEP_EVERY`].
//!
//! Each task runs through [`every_after`]. With several replicas on one PostgreSQL
//! database, only the one that leads ([`crate::store::Store::leading`]) does the work of
//! a tick (docs/choices.md, "Background work on one replica").

pub(crate) use crate::base::every_after;
use crate::base::Base;
use crate::deliveries::{queue_due_digests, ReplyTicker};
use crate::intents::Intents;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Time between two passes that queue the due digests.
pub const DIGEST_EVERY: Duration = Duration::from_secs(2);

/// Time between two purges and expiry sweeps.
pub const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// How long the change feed keeps a row: a replica that has not read it by then
/// rebuilds its engine and index from the store.
pub const FEED_KEEP: Duration = Duration::from_secs(600);

/// The domain's background work (see the module docs).
#[derive(Debug, Clone)]
pub struct Scheduler {
    base: Arc<Base>,
    intents: Arc<Intents>,
}

impl Scheduler {
    /// The scheduler over the holder's base and intents service.
    pub fn new(base: Arc<Base>, intents: Arc<Intents>) -> Self {
        Self { base, intents }
    }

    /// Runs every task until `stop` is cancelled.
    pub async fn run(self, stop: CancellationToken) {
        let digests = {
            let base = self.base.clone();
            every_after(
                || DIGEST_EVERY,
                None,
                "queueing due digests",
                stop.clone(),
                move || {
                    if base.store().leading() && queue_due_digests(&base)? > 0 {
                        base.outbox().wake();
                    }
                    Ok(())
                },
            )
        };
        let sweeps = {
            let (intents, base) = (self.intents.clone(), self.base.clone());
            every_after(|| SWEEP_EVERY, None, "purge and expiry sweep", stop.clone(), move || sweep(&base, &intents))
        };
        tokio::join!(ReplyTicker(self.base).run(stop), digests, sweeps);
    }
}

/// One purge, expiry sweep and renewal pass (none on a replica that does not lead): the
/// purge first (it deletes lapsed drafts, which the sweep leaves to it); a failed purge
/// is logged and does not keep the sweep from running, whose error is returned.
fn sweep(base: &Base, intents: &Intents) -> crate::base::Result<()> {
    if !base.store().leading() {
        return Ok(());
    }
    if let Err(e) = intents.purge(false) {
        tracing::error!(error = %e, "purge failed");
    }
    if let Err(e) = base.store().prune_changes(FEED_KEEP) {
        tracing::error!(error = %e, "pruning the change feed failed");
    }
    let changed = intents.sweep()? + intents.sweep_renewals()?;
    if changed > 0 {
        tracing::info!(changed, "expiry sweep");
    }
    Ok(())
}
