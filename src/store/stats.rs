//! Counts for `/metrics` and `isto admin stats`: row counts of whole tables (redb keeps
//! them in each table's header; PostgreSQL counts), and visits of every intent or offer,
//! one record at a time.

use super::reads::each_json;
use super::schema::{
    ACTIVE, DELIVERED, INTENTS, INTENT_EXPIRY, INTENT_MATCHES, INTENT_PERSON, INTENT_TARGETS, OFFERS, OFFER_REFS,
    PERSON_ACTIVE, RECORDS, SELLERS, SELLER_NAMES, TOKENS,
};
use super::Tables as _;
use super::{Ns, Result, Rx};
use serde::de::DeserializeOwned;
use std::ops::Bound;

impl super::Store {
    #[cfg(any(test, feature = "testkit"))]
    /// How many write transactions have committed on the open file since it was opened
    /// (or last reopened: after an I/O failure, or to give the page cache back): a count kept for the group commit, read
    /// here so that tests can tell how many writes a call made.
    ///
    /// # Errors
    /// [`super::StoreError::Unavailable`] while the file is being reopened.
    pub fn commits(&self) -> Result<u64> {
        if let Some(pool) = &self.pg {
            return Ok(pool.commits.load(std::sync::atomic::Ordering::Relaxed));
        }
        Ok(self.current()?.lock_group().committed)
    }

    /// The PostgreSQL pool's state and counters (`/readyz`, `/metrics`); `None` on redb,
    /// which has no connections. Never waits: reads the pool's own counts.
    pub fn pool_stats(&self) -> Option<super::PoolStats> {
        self.pg.as_ref().map(|pool| pool.stats())
    }
}

/// Row counts read from table headers, without a scan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Intents stored (every status).
    pub intents: u64,
    /// Intents in the active set (stored `active`; one whose validUntil passed leaves it
    /// at the next sweep, within a minute).
    pub active: u64,
    /// Offers stored (active or withdrawn).
    pub offers: u64,
    /// Deliveries (intent, offer) recorded; they are never deleted.
    pub deliveries: u64,
}

/// An index row that names a record elsewhere, as [`Rx::dangling_refs`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dangling {
    /// The index table.
    pub table: &'static str,
    /// The table the record should be in.
    pub target: &'static str,
    /// The id the row names (an intent, offer or seller id; never a token hash, person
    /// key or name, which stay out of messages).
    pub id: String,
}

impl Rx {
    /// [`Counts`] of this read transaction's snapshot.
    pub fn counts(&self) -> Result<Counts> {
        Ok(Counts {
            intents: self.table(INTENTS)?.len()?,
            active: self.table(ACTIVE)?.len()?,
            offers: self.table(OFFERS)?.len()?,
            deliveries: self.table(DELIVERED)?.len()?,
        })
    }

    /// Hands every intent record to `visit`, in id order, decoding one at a time.
    pub fn each_intent<T: super::IntentRow>(&self, visit: impl FnMut(T)) -> Result<()> {
        super::intents::each(self, visit)
    }

    /// Hands every offer record to `visit`, in id order, decoding one at a time.
    pub fn each_offer<T: DeserializeOwned>(&self, visit: impl FnMut(T)) -> Result<()> {
        each_json(self, OFFERS, visit)
    }

    /// How many records the namespace `ns` holds (a key range walk; nothing decoded).
    pub fn count_records(&self, ns: Ns) -> Result<u64> {
        let p = ns.prefix();
        let to = format!("{p}\u{10ffff}");
        let mut n = 0;
        self.table(RECORDS)?.scan((Bound::Included(p), Bound::Excluded(to.as_str())), false, |_, _| {
            n += 1;
            Ok(true)
        })?;
        Ok(n)
    }

    /// Every index row naming a record that does not exist: `active`, `intent_expiry`,
    /// `tokens`, `intent_person`, `person_active`, `intent_matches` and `intent_targets` →
    /// `intents`; `offer_refs` →
    /// `offers`; `seller_names` → `sellers` (a restore refuses a backup with such
    /// rows). At most `limit` are returned.
    pub fn dangling_refs(&self, limit: usize) -> Result<Vec<Dangling>> {
        let intents = self.table(INTENTS)?;
        let offers = self.table(OFFERS)?;
        let sellers = self.table(SELLERS)?;
        // Once `limit` are found, every scan stops at its first row.
        let check = |out: &mut Vec<Dangling>, table: &'static str, target: &'static str, id: &str| -> Result<bool> {
            if out.len() >= limit {
                return Ok(false);
            }
            let there = match target {
                "intents" => intents.get(id)?.is_some(),
                "offers" => offers.get(id)?.is_some(),
                _ => sellers.get(id)?.is_some(),
            };
            if !there {
                out.push(Dangling { table, target, id: id.to_owned() });
            }
            Ok(out.len() < limit)
        };
        let mut out = Vec::new();
        let o = &mut out;
        self.table(ACTIVE)?.each(|id, ()| check(o, "active", "intents", &id))?;
        self.table(INTENT_EXPIRY)?.each(|(_, id), ()| check(o, "intent_expiry", "intents", &id))?;
        self.table(TOKENS)?.each(|_, id| check(o, "tokens", "intents", &id))?;
        self.table(INTENT_PERSON)?.each(|id, _| check(o, "intent_person", "intents", &id))?;
        self.table(INTENT_MATCHES)?.each(|id, _| check(o, "intent_matches", "intents", &id))?;
        self.table(INTENT_TARGETS)?.each(|id, _| check(o, "intent_targets", "intents", &id))?;
        self.table(PERSON_ACTIVE)?.each(|(_, id), _| check(o, "person_active", "intents", &id))?;
        self.table(OFFER_REFS)?.each(|_, id| check(o, "offer_refs", "offers", &id))?;
        self.table(SELLER_NAMES)?.each(|_, id| check(o, "seller_names", "sellers", &id))?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Tx;
    use super::*;

    #[test]
    fn counts_follow_writes() {
        for (backend, s, _d) in crate::store::testpg::both() {
            eprintln!("backend: {backend}");
            assert_eq!(s.read(|rx| rx.counts()).unwrap(), Counts::default());
            s.write(|tx: &mut Tx<'_>| -> Result<()> {
                tx.put_intent(
                    &crate::store::IntentKey::for_tests(),
                    "int_a",
                    &serde_json::json!({"n": 1}),
                    true,
                    Default::default(),
                )?;
                tx.put_intent(
                    &crate::store::IntentKey::for_tests(),
                    "int_b",
                    &serde_json::json!({"n": 2}),
                    false,
                    Default::default(),
                )?;
                tx.put_delivery("int_a", "off_1", 1, b"{}")?;
                tx.put_record(Ns::Account, "acc_1", b"{}")?;
                tx.put_record(Ns::Session, "s1", b"{}")?;
                Ok(())
            })
            .unwrap();
            let c = s.read(|rx| rx.counts()).unwrap();
            assert_eq!(c, Counts { intents: 2, active: 1, offers: 0, deliveries: 1 });
            let mut seen = Vec::new();
            s.read(|rx| rx.each_intent(|v: serde_json::Value| seen.push(v["n"].as_u64().unwrap()))).unwrap();
            assert_eq!(seen, [1, 2]);
            assert_eq!(s.read(|rx| rx.count_records(Ns::Account)).unwrap(), 1);
        }
    }
}
