//! The transactions ([`Rx`], [`Tx`]), the reads they share ([`Reads`]: each method is
//! its entity module's read) and the generic JSON-record helpers behind them.

use super::column::Column;
use super::pg::{Conn, Lease};
use super::table::Table;
use super::*;
use redb::TableDefinition;
use serde::de::DeserializeOwned;
use std::ops::Bound;

/// A read transaction.
pub struct Rx {
    pub(super) txn: RxTxn,
}

/// The backend's read transaction.
pub(super) enum RxTxn {
    Redb(redb::ReadTransaction),
    /// A connection inside a `REPEATABLE READ, READ ONLY` transaction.
    Pg(Lease),
}

/// A write transaction (reads see its own writes).
pub struct Tx<'a> {
    pub(super) txn: TxTxn<'a>,
}

/// The backend's write transaction.
#[derive(Clone, Copy)]
pub(super) enum TxTxn<'a> {
    Redb(&'a redb::WriteTransaction),
    /// A connection inside a write transaction holding the writer lock.
    Pg(&'a Conn),
}

mod sealed {
    /// Opening a table for reading, in a read or a write transaction. Sealed: only
    /// [`super::Rx`] and [`super::Tx`] implement it, and only `store` calls it.
    pub trait Tables {
        /// The table `def`, readable.
        fn table<K: super::Column + redb::Key, V: super::Column>(
            &self,
            def: redb::TableDefinition<'_, K, V>,
        ) -> super::Result<super::Table<'_, K, V>>;
    }
}
pub(super) use sealed::Tables;

impl Tables for Rx {
    fn table<K: Column + redb::Key, V: Column>(&self, def: TableDefinition<'_, K, V>) -> Result<Table<'_, K, V>> {
        match &self.txn {
            RxTxn::Redb(txn) => Table::redb_read(txn, def),
            RxTxn::Pg(lease) => Ok(Table::pg(lease.conn()?, def)),
        }
    }
}

impl Tables for Tx<'_> {
    fn table<K: Column + redb::Key, V: Column>(&self, def: TableDefinition<'_, K, V>) -> Result<Table<'_, K, V>> {
        self.open(def)
    }
}

impl<'a> Tx<'a> {
    /// The table `def`, writable (redb creates it when missing).
    pub(super) fn open<K: Column + redb::Key, V: Column>(
        &self,
        def: TableDefinition<'_, K, V>,
    ) -> Result<Table<'a, K, V>> {
        match self.txn {
            TxTxn::Redb(txn) => Table::redb_write(txn, def),
            TxTxn::Pg(conn) => Ok(Table::pg(conn, def)),
        }
    }
}

/// A JSON record from a `&str → &[u8]` table.
pub(super) fn get_json<T: DeserializeOwned, R: Tables + ?Sized>(
    r: &R,
    def: TableDefinition<&str, &[u8]>,
    key: &str,
) -> Result<Option<T>> {
    json_at(&r.table(def)?, key)
}

/// The JSON record at `key` of an open `&str → &[u8]` table.
pub(super) fn json_at<T: DeserializeOwned>(t: &Table<'_, &'static str, &'static [u8]>, key: &str) -> Result<Option<T>> {
    t.get(key)?.map(|b| decode(key, &b)).transpose()
}

/// The delivery log rows within `from..to`, as [`deliveries::rows`].
fn log_range<R: Tables + ?Sized>(
    r: &R,
    (from, to): (&str, &str),
    limit: usize,
    rev: bool,
) -> Result<Vec<(i64, String, Vec<u8>)>> {
    let rows = r.table(schema::DELIVERY_LOG)?.range((Bound::Included(from), Bound::Excluded(to)), rev, limit)?;
    Ok(deliveries::rows(rows))
}

/// Every record of a `&str → &[u8]` table, in key order.
pub(super) fn all_json<T: DeserializeOwned, R: Tables + ?Sized>(
    r: &R,
    def: TableDefinition<&str, &[u8]>,
) -> Result<Vec<T>> {
    let mut out = Vec::new();
    each_json(r, def, |v| out.push(v))?;
    Ok(out)
}

/// Hands every record of a `&str → &[u8]` table to `visit`, in key order, decoding one
/// at a time.
pub(super) fn each_json<T: DeserializeOwned, R: Tables + ?Sized>(
    r: &R,
    def: TableDefinition<&str, &[u8]>,
    mut visit: impl FnMut(T),
) -> Result<()> {
    r.table(def)?.each(|k, v| {
        visit(decode(&k, &v)?);
        Ok(true)
    })
}

/// A counter kept as a decimal string in `meta` (0 when absent). One that is not a whole
/// number is [`StoreError::Corrupt`] (`meta:` and `key`), never read as 0, which would
/// hand out sequence numbers or an offer generation again.
pub(super) fn meta_counter<R: Tables + ?Sized>(r: &R, key: &str) -> Result<u64> {
    r.table(schema::META)?
        .get(key)?
        .map(|v| {
            v.parse().map_err(|_| StoreError::Corrupt(format!("meta:{key}"), format!("{v:?} is not a whole number")))
        })
        .transpose()
        .map(Option::unwrap_or_default)
}

/// Key of the write-probe counter in `meta` (see [`Store::writable`]; nothing reads it).
const WRITE_PROBE: &str = "write_probe";

/// Prefix in `meta` of the one-time start-up passes recorded as done
/// (`pass:<name>` → the isto version that ran it; see `crate::state`).
const PASS_PREFIX: &str = "pass:";

impl Tx<'_> {
    /// Records the one-time start-up pass `name` (a snake_case name from
    /// `crate::state::PASSES`) as done, by this isto version; later starts skip it.
    pub fn record_pass(&mut self, name: &str) -> Result<()> {
        self.open(schema::META)?.insert(format!("{PASS_PREFIX}{name}").as_str(), ISTO_VERSION)?;
        Ok(())
    }

    #[cfg(any(test, feature = "testkit"))]
    /// Forgets that the start-up pass `name` ran, so the next start runs it again (as
    /// on a store written before the pass was recorded). Returns whether it was recorded.
    pub fn forget_pass(&mut self, name: &str) -> Result<bool> {
        Ok(self.open(schema::META)?.remove(format!("{PASS_PREFIX}{name}").as_str())?.is_some())
    }

    /// Sets the `meta` counter `key` to one more than the larger of its value and
    /// `floor`, and returns it (a sequence number never handed out before, a generation).
    pub(super) fn bump_counter(&mut self, key: &str, floor: u64) -> Result<u64> {
        let next = meta_counter(&*self, key)?.max(floor).saturating_add(1);
        self.open(schema::META)?.insert(key, next.to_string().as_str())?;
        Ok(next)
    }

    /// Bumps the write-probe counter: the smallest write that goes through a commit.
    pub(super) fn bump_write_probe(&mut self) -> Result<()> {
        // Nothing reads the value: an unreadable one is overwritten, not an error.
        let n = self.table(schema::META)?.get(WRITE_PROBE)?.and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        let n = n.wrapping_add(1);
        self.open(schema::META)?.insert(WRITE_PROBE, n.to_string().as_str())?;
        Ok(())
    }
}

/// Reads shared by [`Rx`] and [`Tx`]. Each method is its entity module's read; errors as
/// [`crate::store`] says.
pub trait Reads: Tables {
    /// The isto version that ran the one-time start-up pass `name`, when it is
    /// recorded as done ([`Tx::record_pass`]).
    fn pass_done(&self, name: &str) -> Result<Option<String>> {
        self.table(schema::META)?.get(format!("{PASS_PREFIX}{name}").as_str())
    }

    /// The intent record with this id (with its delivery bookkeeping when `T` takes it:
    /// [`IntentRow`]).
    fn intent<T: IntentRow>(&self, id: &str) -> Result<Option<T>> {
        let matches = if T::MATCHES { Some(self.table(schema::INTENT_MATCHES)?) } else { None };
        intents::intent_at(&self.table(schema::INTENTS)?, matches.as_ref(), id)
    }

    /// Every intent record, in id order (for admin listings; sweeps use
    /// [`Reads::intents_due`]).
    fn all_intents<T: IntentRow>(&self) -> Result<Vec<T>> {
        let mut out = Vec::new();
        intents::each(self, |r| out.push(r))?;
        Ok(out)
    }

    /// Ids of active intents.
    fn active_ids(&self) -> Result<Vec<String>> {
        Ok(self.table(schema::ACTIVE)?.all()?.into_iter().map(|(id, ())| id).collect())
    }

    /// Ids of the intents the sweep must look at, in id order, each once: those whose
    /// status-change time is at or before `now_micros`, and those that ended (still
    /// holding a contact) at or before `ended_before_micros` (both unix µs; see
    /// [`IntentDue`]).
    fn intents_due(&self, now_micros: i64, ended_before_micros: i64) -> Result<Vec<String>> {
        intents::due(self, now_micros, ended_before_micros)
    }

    #[cfg(any(test, feature = "testkit"))]
    /// The sweep times recorded for an intent (`None` when it has none).
    fn intent_due(&self, id: &str) -> Result<Option<IntentDue>> {
        let v = self.table(schema::INTENT_DUE)?.get(id)?;
        Ok(v.map(|(status_change, contact_ended)| IntentDue { status_change, contact_ended }))
    }

    /// The person-index row of an intent: its person key and the validUntil (unix µs)
    /// recorded with it; `None` when it has none (not in the active set, or no person
    /// key). See [`Tx::set_intent_person`].
    fn intent_person(&self, id: &str) -> Result<Option<(String, i64)>> {
        let Some(person) = self.table(schema::INTENT_PERSON)?.get(id)? else { return Ok(None) };
        let until = self.table(schema::PERSON_ACTIVE)?.get((person.as_str(), id))?;
        Ok(until.map(|u| (person, u)))
    }

    /// How many intents of `person` in the active set are valid after `after_micros`
    /// (validUntil strictly later; unix µs), leaving out intent `except` — at most
    /// `limit` (the scan stops there). The per-person cap's count.
    fn person_active(&self, person: &str, after_micros: i64, except: &str, limit: usize) -> Result<usize> {
        people::count(self, person, after_micros, except, limit)
    }

    /// The intent id a token hash points to.
    fn token(&self, hash: &str) -> Result<Option<String>> {
        self.table(schema::TOKENS)?.get(hash)
    }

    /// The offer record with this id.
    fn offer<T: DeserializeOwned>(&self, id: &str) -> Result<Option<T>> {
        get_json(self, schema::OFFERS, id)
    }

    /// Every offer record.
    fn all_offers<T: DeserializeOwned>(&self) -> Result<Vec<T>> {
        all_json(self, schema::OFFERS)
    }

    /// The offer id stored for a feed's `(seller id, ref)`.
    fn offer_by_ref(&self, seller_id: &str, reference: &str) -> Result<Option<String>> {
        self.table(schema::OFFER_REFS)?.get(offers::ref_key(seller_id, reference).as_str())
    }

    /// The seller record with this id.
    fn seller<T: DeserializeOwned>(&self, id: &str) -> Result<Option<T>> {
        get_json(self, schema::SELLERS, id)
    }

    /// Every `intent_targets` row (what an import reads of an active intent; see
    /// [`super::IntentWrite`]), in intent id order.
    fn all_intent_targets<T: DeserializeOwned>(&self) -> Result<Vec<T>> {
        all_json(self, schema::INTENT_TARGETS)
    }

    /// Every seller record.
    fn all_sellers<T: DeserializeOwned>(&self) -> Result<Vec<T>> {
        all_json(self, schema::SELLERS)
    }

    /// The seller id registered under a folded name.
    fn seller_by_name(&self, folded: &str) -> Result<Option<String>> {
        self.table(schema::SELLER_NAMES)?.get(folded)
    }

    #[cfg(any(test, feature = "testkit"))]
    /// When `(intent, offer)` was delivered (unix µs), if it was.
    fn delivered_at(&self, intent: &str, offer: &str) -> Result<Option<i64>> {
        self.table(schema::DELIVERED)?.get(deliveries::pair_key(&mut String::new(), intent, offer))
    }

    /// Deliveries of `intent` strictly after `after_micros`, oldest first, at most
    /// `limit`: `(delivered µs, offer id, stored extensions)` (their form is the
    /// writer's: `deliveries::extensions` reads it).
    fn deliveries(&self, intent: &str, after_micros: i64, limit: usize) -> Result<Vec<(i64, String, Vec<u8>)>> {
        let mut from = String::new();
        let to = format!("{intent}\u{1}");
        let from = deliveries::log_key(&mut from, intent, after_micros.saturating_add(1), "");
        log_range(self, (from, to.as_str()), limit, false)
    }

    /// The newest `limit` deliveries of `intent`, newest first (as [`Reads::deliveries`]).
    fn latest_deliveries(&self, intent: &str, limit: usize) -> Result<Vec<(i64, String, Vec<u8>)>> {
        let (from, to) = (format!("{intent}\0"), format!("{intent}\u{1}"));
        log_range(self, (&from, &to), limit, true)
    }

    /// When an intent's pending digest is due (unix seconds), if one is pending.
    fn digest_due_at(&self, intent: &str) -> Result<Option<i64>> {
        self.table(schema::DIGEST_DUE)?.get(intent)
    }

    /// Intents whose digest is pending: `(id, due unix seconds)`.
    fn digests_due(&self) -> Result<Vec<(String, i64)>> {
        self.table(schema::DIGEST_DUE)?.all()
    }

    /// A record of a namespace.
    fn record<T: DeserializeOwned>(&self, ns: Ns, key: &str) -> Result<Option<T>> {
        get_json(self, schema::RECORDS, &ns.key(key))
    }

    /// How many messages were dropped after a permanent SMTP refusal (5xx) since the
    /// store was created ("5xx dropped and recorded"); counted with the removal in one
    /// transaction ([`Tx::drop_mail`]).
    fn mail_dropped(&self) -> Result<u64> {
        meta_counter(self, outbox::DROPPED)
    }

    /// Whether an outbox job still exists (not sent, not cancelled).
    fn has_mail(&self, seq: u64) -> Result<bool> {
        Ok(self.table(schema::OUTBOX)?.get(seq)?.is_some())
    }

    /// The outbox job `seq` as stored now (`None`: sent or cancelled).
    fn mail<T: DeserializeOwned>(&self, seq: u64) -> Result<Option<T>> {
        let got = self.table(schema::OUTBOX)?.get(seq)?;
        got.map(|v| decode(&seq.to_string(), &v)).transpose()
    }

    /// Every outbox job, oldest first.
    fn outbox<T: DeserializeOwned>(&self) -> Result<Vec<(u64, T)>> {
        let rows = self.table(schema::OUTBOX)?.all()?;
        rows.into_iter().map(|(k, v)| Ok((k, decode(&k.to_string(), &v)?))).collect()
    }

    /// The first `limit` queued seller replies, oldest first: `(sequence, intent id,
    /// reply offer id)` (see [`Tx::queue_reply`]).
    fn pending_replies(&self, limit: usize) -> Result<Vec<PendingReply>> {
        let rows = self.table(schema::PENDING_REPLIES)?.range((Bound::Unbounded, Bound::Unbounded), false, limit)?;
        Ok(rows.into_iter().map(|(k, (intent, offer))| (k, intent, offer)).collect())
    }

    #[cfg(any(test, feature = "testkit"))]
    /// How many seller replies wait to be matched.
    fn pending_reply_count(&self) -> Result<u64> {
        self.table(schema::PENDING_REPLIES)?.len()
    }

    /// Every record of a namespace, `(key without prefix, value)`, in key order.
    fn records<T: DeserializeOwned>(&self, ns: Ns) -> Result<Vec<(String, T)>> {
        records::each(self, ns)?.into_iter().map(|(k, v)| v.map(|v| (k, v))).collect()
    }

    /// Every record of a namespace that decodes as `T`, `(key without prefix, value)` in
    /// key order, and how many were skipped, for a pass over many (the purges): one that
    /// does not decode is left out with a warning naming it ([`StoreError::Corrupt`]: the
    /// record's key — a hash for tokens, sessions and links — and what does not read), so
    /// that nothing is deleted on the strength of a value that could not be read and one
    /// damaged record does not stop the pass.
    fn readable_records<T: DeserializeOwned>(&self, ns: Ns) -> Result<(Vec<(String, T)>, usize)> {
        let (mut out, mut skipped) = (Vec::new(), 0);
        for (k, v) in records::each(self, ns)? {
            match v {
                Ok(t) => out.push((k, t)),
                Err(e) => {
                    skipped += 1;
                    tracing::warn!(error = %e, "record skipped: it does not decode");
                }
            }
        }
        Ok((out, skipped))
    }
}

impl Reads for Rx {}
impl Reads for Tx<'_> {}
