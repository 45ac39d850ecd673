//! Matching the queued seller replies (PROTOCOL.md §3 intent_submit_offer: "check and
//! deliver after answering"; `sellers::submit_reply` queues them) on a tick of its own.
//!
//! Whether a reply was delivered must not show in anything its seller sees: not in the
//! answer, not in `/readyz`, and not in the time the seller's next call takes (matching
//! right after the answer would take the write lock and CPU just when that call comes).
//! So:
//!
//! * the queue is matched by a [`ReplyTicker`] of the domain, on a fixed tick with a
//!   random jitter of seconds ([`tick_delay`]: every [`TICK_EVERY`] plus up to
//!   [`TICK_JITTER`]), not when a reply comes and not by the mail worker;
//! * each tick is one write transaction ([`match_queued_replies`]), whether the queue
//!   is empty or not and whatever the replies' outcomes: a reply the §6 check refuses
//!   opens no write transaction of its own;
//! * in it every queued reply to an open intent costs the same work and the same
//!   writes delivered or not — the queue row removed, the intent and the reply read,
//!   the hidden limit opened, the §6 check, the intent record and its delivery
//!   bookkeeping row written back (and the matching engine's copy with it) — apart from
//!   the delivery rows and the digest's due time that a delivery adds (see
//!   `docs/choices.md`, "Delivery bit").
//!
//! The digest a delivery schedules is queued by the scheduler's own fixed tick (every
//! few seconds, `crate::schedule`), so nothing else happens at once after a delivery
//! either.

use super::{disabled_sellers, match_intent_tx};
use crate::base::{Base, Result, ServiceError, Writes};
use crate::protocol::{Status, Visibility};
use crate::records::{IntentRecord, OfferRecord};
use crate::store::Reads as _;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;

/// Most queued replies one tick matches; more wait for the next tick.
pub const DRAIN_MAX: usize = 256;

/// The fixed part of the time between two ticks.
pub const TICK_EVERY: Duration = Duration::from_secs(1);

/// The most random time added to [`TICK_EVERY`] (uniformly, in milliseconds): ticks
/// come 1 to 4 s apart, so the last write is never older than the 5 s after which
/// `/readyz` would make a probe write of its own.
pub const TICK_JITTER: Duration = Duration::from_secs(3);

/// The time until the next tick for `u`, a uniform random number in `[0, 1)`:
/// [`TICK_EVERY`] plus `u` × [`TICK_JITTER`], to the millisecond (a `u` outside
/// `[0, 1)`, or not a number, counts as the nearest end).
pub fn tick_delay(u: f64) -> Duration {
    let u = if u.is_nan() { 0.0 } else { u.clamp(0.0, 1.0) };
    let jitter_ms = (TICK_JITTER.as_millis() as f64 * u) as u64;
    TICK_EVERY + Duration::from_millis(jitter_ms.min(TICK_JITTER.as_millis() as u64))
}

/// Matches the queued replies, oldest first (at most [`DRAIN_MAX`]), each against its
/// one intent with the exact PROTOCOL.md §6 rules, in **one** write transaction (see the
/// module docs) that also takes them off the queue: a reply is matched at most once. A
/// reply whose intent no longer takes replies (withdrawn, expired, made private, erased)
/// or whose offer is gone is dropped undelivered; one whose intent's hidden limit cannot
/// be opened (a key error) is dropped and logged. Returns the number of new deliveries
/// (for tests and the log; never shown to a seller).
///
/// # Errors
/// Storage errors (nothing is written then: the whole batch stays queued).
pub fn match_queued_replies(base: &Base) -> Result<u64> {
    let now = base.now();
    let mut matched = Vec::new();
    let delivered = base.write(|tx| -> Result<u64> {
        let batch = tx.pending_replies(DRAIN_MAX)?;
        let disabled = disabled_sellers(tx)?;
        let mut delivered = 0;
        for (seq, _, _) in batch {
            let Some((intent_id, offer_id)) = tx.take_pending_reply(seq)? else { continue };
            match match_one(base, tx, &intent_id, &offer_id, &disabled, now) {
                Ok(n) => {
                    delivered += n;
                    matched.push((intent_id, offer_id, n));
                }
                Err(ServiceError::Crypto(e)) => {
                    tracing::error!(error = %e, intent = %intent_id, "a queued seller reply was dropped undelivered: its intent's sealed fields cannot be opened");
                }
                Err(e) => return Err(e),
            }
        }
        Ok(delivered)
    })?;
    for (intent, offer, n) in matched {
        tracing::info!(intent = %intent, offer = %offer, delivered = n, "seller reply matched");
    }
    Ok(delivered)
}

/// Matches reply `offer_id` (taken from the queue) against intent `intent_id` inside the
/// tick's transaction; returns the number of new deliveries (0 or 1). For an intent that
/// takes replies the work and writes are the same whatever the outcome (see the module
/// docs); nothing is written before the hidden limit is open, so a key error leaves
/// nothing of this reply behind.
fn match_one(
    base: &Base,
    tx: &mut Writes<'_, '_>,
    intent_id: &str,
    offer_id: &str,
    disabled: &HashSet<String>,
    now: OffsetDateTime,
) -> Result<u64> {
    let Some(mut rec) = tx.intent::<IntentRecord>(intent_id)? else { return Ok(0) };
    if rec.effective_status(now) != Status::Active || rec.visibility != Visibility::Pseudonymous {
        return Ok(0);
    }
    let Some(offer) = tx.offer::<OfferRecord>(offer_id)? else { return Ok(0) };
    // The reply is current (valid, seller checked by the disabled set) as a candidate.
    let candidate = OfferRecord { active: true, ..offer };
    let n = match_intent_tx(base, tx, &mut rec, std::slice::from_ref(&candidate), disabled, now)?;
    // Written back delivered or not: the same writes either way (the bookkeeping row,
    // which `match_intent_tx` writes either way, and the record).
    tx.put_intent(&rec, true)?;
    Ok(n)
}

/// The domain's scheduler of reply matching (run by `crate::schedule`): runs
/// [`match_queued_replies`] at once and then every [`tick_delay`] until stopped.
#[derive(Debug, Clone)]
pub struct ReplyTicker(pub Arc<Base>);

impl ReplyTicker {
    /// Ticks until `stop` is cancelled (a tick in progress finishes; it is one short
    /// transaction). A failed tick leaves the batch queued for the next; failures are
    /// logged once until a tick succeeds again (a full disk fails every tick). With
    /// several replicas on one PostgreSQL database only the leading one ticks
    /// ([`crate::store::Store::leading`]): the others skip their ticks.
    pub async fn run(self, stop: CancellationToken) {
        let base = self.0;
        let work = move || if base.store().leading() { match_queued_replies(&base).map(drop) } else { Ok(()) };
        let delay = || tick_delay(rand::random::<f64>());
        crate::base::every_after(delay, None, "matching queued seller replies", stop, work).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_come_every_one_to_four_seconds_to_the_millisecond() {
        assert_eq!(tick_delay(0.0), Duration::from_secs(1));
        assert_eq!(tick_delay(0.5), Duration::from_millis(2500));
        assert_eq!(tick_delay(0.999_9), Duration::from_millis(3999));
        assert_eq!(tick_delay(1.0), Duration::from_secs(4));
        assert_eq!(tick_delay(-3.0), Duration::from_secs(1));
        assert_eq!(tick_delay(f64::NAN), Duration::from_secs(1));
    }
}
