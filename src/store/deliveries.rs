//! Deliveries: once per `(intent, offer)` (`delivered`), the per-intent log in time
//! order (`delivery_log`), and when each intent's next digest is due (`digest_due`).

use super::schema::{DELIVERED, DELIVERY_LOG, DIGEST_DUE, INTENTS, INTENT_MATCHES, INTENT_TARGETS};
use super::table::Table;
use super::{IntentRow, Result, Tx};
use std::collections::HashSet;

/// Key of a `delivered` row, written into `key`: the offer first, so that the rows of an
/// import's offers (new ids sort last) are written together, not on a page of each
/// intent's.
pub(super) fn pair_key<'k>(key: &'k mut String, intent: &str, offer: &str) -> &'k str {
    key.clear();
    key.extend([offer, "\0", intent]);
    key
}

/// Key of a delivery log row, written into `key`: `intent`, µs in 20 digits, `offer`.
pub(super) fn log_key<'k>(key: &'k mut String, intent: &str, micros: i64, offer: &str) -> &'k str {
    key.clear();
    key.extend([intent, "\0"]);
    let _ = std::fmt::Write::write_fmt(key, format_args!("{micros:020}"));
    key.extend(["\0", offer]);
    key
}

/// Splits a delivery log key into (µs, offer id).
fn split_log_key(k: &str) -> Option<(i64, String)> {
    let mut parts = k.split('\0');
    let _ = parts.next()?;
    let micros = parts.next()?.parse().ok()?;
    Some((micros, parts.next()?.to_owned()))
}

/// Log rows as `(µs, offer id, stored extensions)`.
pub(super) fn rows(rows: Vec<(String, Vec<u8>)>) -> Vec<(i64, String, Vec<u8>)> {
    rows.into_iter().filter_map(|(k, v)| split_log_key(&k).map(|(m, o)| (m, o, v))).collect()
}

/// The tables a batch of deliveries writes in a write transaction (`delivered`,
/// `delivery_log`, `digest_due`, `intent_matches` for the intents' delivery bookkeeping,
/// and `intent_targets` and `intents` to read them),
/// opened once for the batch ([`Tx::delivery_log`]): a catalogue import records tens of
/// thousands per batch for thousands of intents, and opening the tables again for each
/// row cost more than the row. While it lives, the transaction must not open these tables
/// again (redb refuses a table opened twice): read and write them through it. Dropped
/// before the transaction commits.
pub struct DeliveryLog<'a> {
    delivered: Table<'a, &'static str, i64>,
    log: Table<'a, &'static str, &'static [u8]>,
    digest_due: Table<'a, &'static str, i64>,
    intents: Table<'a, &'static str, &'static [u8]>,
    matches: Table<'a, &'static str, (u64, i64)>,
    targets: Table<'a, &'static str, &'static [u8]>,
    /// The key being written (reused: tens of thousands per import batch).
    key: String,
    /// Offers never delivered ([`DeliveryLog::new_offers`]).
    fresh: HashSet<String>,
}

impl DeliveryLog<'_> {
    /// Records a delivery of `offer` to `intent` at `micros` (Unix µs, the delivery
    /// time, the log's order within the intent) with its extensions in their stored
    /// form `ext` (the caller's: `deliveries`), unless one exists; returns whether it was
    /// new (PROTOCOL.md §2: one per (intent, offer)).
    pub fn put(&mut self, intent: &str, offer: &str, micros: i64, ext: &[u8]) -> Result<bool> {
        let pair = pair_key(&mut self.key, intent, offer);
        // A new offer's row is inserted without a lookup; should one have been there after
        // all, no second delivery is logged (its time in `delivered` becomes this one).
        let known = if self.fresh.contains(offer) {
            self.delivered.insert(pair, micros)?
        } else {
            !self.delivered.insert_new(pair, micros)?
        };
        if known {
            return Ok(false);
        }
        self.log.insert(log_key(&mut self.key, intent, micros, offer), ext)?;
        Ok(true)
    }

    /// Declares `ids` offers that were never delivered (made in this transaction and
    /// put once to each intent): [`DeliveryLog::put`] inserts their `delivered` rows
    /// without looking for one first (in redb a lookup saved per delivery).
    pub fn new_offers(&mut self, ids: HashSet<String>) {
        self.fresh = ids;
    }

    /// Sets the time an intent's next digest is due (unix seconds) unless one is set.
    pub fn schedule_digest(&mut self, intent: &str, due_unix: i64) -> Result<()> {
        self.digest_due.insert_new(intent, due_unix).map(drop)
    }

    /// The intent record `id` ([`super::Reads::intent`] through the open tables).
    pub fn intent<T: IntentRow>(&self, id: &str) -> Result<Option<T>> {
        super::intents::intent_at(&self.intents, Some(&self.matches), id)
    }

    /// What recording deliveries reads of intent `id` (`T`: the fields of
    /// [`super::IntentWrite::Target`], with its bookkeeping when `T` takes it): from its
    /// `intent_targets` row while it is active, else (not active, or not written since
    /// that table came) from its record as [`DeliveryLog::intent`] reads it.
    pub fn target<T: IntentRow>(&self, id: &str) -> Result<Option<T>> {
        match super::intents::intent_at(&self.targets, Some(&self.matches), id)? {
            Some(t) => Ok(Some(t)),
            None => self.intent(id),
        }
    }

    /// Sets an intent's delivery bookkeeping: `count` deliveries, the newest at
    /// `newest_micros` (unix µs). Its record is not written: reads of the intent take
    /// these from here ([`IntentRow`]).
    pub fn put_matches(&mut self, intent: &str, count: u64, newest_micros: i64) -> Result<()> {
        self.matches.insert(intent, (count, newest_micros)).map(drop)
    }
}

impl<'a> Tx<'a> {
    /// The delivery tables, open for a batch of [`DeliveryLog::put`].
    pub fn delivery_log(&self) -> Result<DeliveryLog<'a>> {
        Ok(DeliveryLog {
            delivered: self.open(DELIVERED)?,
            log: self.open(DELIVERY_LOG)?,
            digest_due: self.open(DIGEST_DUE)?,
            intents: self.open(INTENTS)?,
            matches: self.open(INTENT_MATCHES)?,
            targets: self.open(INTENT_TARGETS)?,
            key: String::new(),
            fresh: HashSet::new(),
        })
    }

    /// Sets (or with `None` clears) the time an intent's next digest is due.
    pub fn set_digest_due(&mut self, intent: &str, due_unix: Option<i64>) -> Result<()> {
        let mut t = self.open(DIGEST_DUE)?;
        match due_unix {
            Some(d) => t.insert(intent, d).map(drop),
            None => t.remove(intent).map(drop),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Reads, StoreError};
    use super::*;

    impl Tx<'_> {
        /// Records one delivery (tests): [`DeliveryLog::put`] with the tables opened for it.
        pub(crate) fn put_delivery(&mut self, i: &str, o: &str, micros: i64, ext: &[u8]) -> Result<bool> {
            self.delivery_log()?.put(i, o, micros, ext)
        }
    }

    #[test]
    fn deliveries_once_and_in_order() {
        for (backend, s, _d) in crate::store::testpg::both() {
            eprintln!("backend: {backend}");
            s.write(|tx| {
                assert!(tx.put_delivery("int_a", "off_2", 20, b"1")?);
                assert!(tx.put_delivery("int_a", "off_1", 10, b"1")?);
                assert!(!tx.put_delivery("int_a", "off_1", 30, b"1")?);
                assert!(tx.put_delivery("int_b", "off_1", 5, b"1")?);
                Ok::<_, StoreError>(())
            })
            .unwrap();
            let all: Vec<(i64, String, Vec<u8>)> = s.read(|rx| rx.deliveries("int_a", 0, 10)).unwrap();
            assert_eq!(all.iter().map(|r| r.1.as_str()).collect::<Vec<_>>(), vec!["off_1", "off_2"]);
            let later: Vec<(i64, String, Vec<u8>)> = s.read(|rx| rx.deliveries("int_a", 10, 10)).unwrap();
            assert_eq!(later.len(), 1);
            let newest: Vec<(i64, String, Vec<u8>)> = s.read(|rx| rx.latest_deliveries("int_a", 1)).unwrap();
            assert_eq!(newest.iter().map(|r| (r.0, r.1.as_str())).collect::<Vec<_>>(), vec![(20, "off_2")]);
            assert_eq!(s.read(|rx| rx.delivered_at("int_a", "off_1")).unwrap(), Some(10));
        }
    }

    /// A new offer's delivery is inserted without a lookup, yet never logged twice.
    #[test]
    fn a_new_offer_is_delivered_once_without_a_lookup() {
        for (backend, s, _d) in crate::store::testpg::both() {
            eprintln!("backend: {backend}");
            let put = |micros| {
                s.write(|tx| {
                    let mut log = tx.delivery_log()?;
                    log.new_offers(HashSet::from(["off_1".to_owned()]));
                    log.put("int_a", "off_1", micros, b"1")
                })
                .unwrap()
            };
            assert!(put(10));
            assert!(!put(20), "a row there after all: no second delivery");
            let all = s.read(|rx| rx.deliveries("int_a", 0, 10)).unwrap();
            assert_eq!(all.iter().map(|r| (r.0, r.1.as_str())).collect::<Vec<_>>(), [(10, "off_1")]);
        }
    }

    #[test]
    fn digest_due_times() {
        for (backend, s, _d) in crate::store::testpg::both() {
            eprintln!("backend: {backend}");
            s.write(|tx| {
                tx.set_digest_due("int_a", Some(100))?;
                tx.set_digest_due("int_b", Some(50))?;
                tx.set_digest_due("int_b", None)
            })
            .unwrap();
            assert_eq!(s.read(|rx| rx.digest_due_at("int_a")).unwrap(), Some(100));
            assert_eq!(s.read(|rx| rx.digests_due()).unwrap(), vec![("int_a".to_owned(), 100)]);
        }
    }
}
