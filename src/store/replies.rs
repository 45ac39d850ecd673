//! Pending replies (v4): sellers' replies that were stored and answered but not yet
//! matched against their intent — PROTOCOL.md §3 intent_submit_offer, "check and
//! deliver after answering". A durable queue by sequence number (never reused), written
//! in the transaction that stores the reply and emptied in batches, one write
//! transaction per tick, by the reply matching (`deliveries::match_queued_replies`).

use super::schema::PENDING_REPLIES;
use super::{Result, Tx};

/// Key of the last sequence number handed out, in `meta`.
const SEQ: &str = "pending_reply_seq";

/// A queued reply: its sequence number, the intent it answers and the reply offer's id.
pub type PendingReply = (u64, String, String);

impl Tx<'_> {
    /// Queues reply `offer_id` to intent `intent_id` for matching; returns its sequence
    /// number (one more than any handed out before).
    pub fn queue_reply(&mut self, intent_id: &str, offer_id: &str) -> Result<u64> {
        let mut t = self.open(PENDING_REPLIES)?;
        let next = self.bump_counter(SEQ, t.last()?.map_or(0, |(k, _)| k))?;
        t.insert(next, (intent_id, offer_id))?;
        Ok(next)
    }

    /// Removes queued reply `seq` and returns `(intent id, offer id)`, or `None` when it
    /// is gone already (another pass took it): whoever removes it matches it, once.
    pub fn take_pending_reply(&mut self, seq: u64) -> Result<Option<(String, String)>> {
        self.open(PENDING_REPLIES)?.remove(seq)
    }
}
