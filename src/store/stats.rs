//! Counts for `/metrics` and `isto admin stats` (issue 11 point 4): row counts of whole
//! tables, which redb keeps in each table's header (no scan), and visits of every
//! intent or offer, one record at a time (a scan, for the callers that need the
//! records' fields).

use super::schema::{ACTIVE, DELIVERED, INTENTS, OFFERS, RECORDS};
use super::{decode, Ns, Result, Rx};
use redb::{ReadableTable, ReadableTableMetadata};
use serde::de::DeserializeOwned;

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

impl Rx {
    /// [`Counts`] of this read transaction's snapshot.
    ///
    /// # Errors
    /// Storage errors.
    pub fn counts(&self) -> Result<Counts> {
        Ok(Counts {
            intents: self.txn.open_table(INTENTS)?.len()?,
            active: self.txn.open_table(ACTIVE)?.len()?,
            offers: self.txn.open_table(OFFERS)?.len()?,
            deliveries: self.txn.open_table(DELIVERED)?.len()?,
        })
    }

    /// Hands every intent record to `visit`, in id order, decoding one at a time.
    ///
    /// # Errors
    /// Storage errors; [`super::StoreError::Corrupt`].
    pub fn each_intent<T: DeserializeOwned>(&self, mut visit: impl FnMut(T)) -> Result<()> {
        for row in self.txn.open_table(INTENTS)?.iter()? {
            let (k, v) = row?;
            visit(decode(k.value(), v.value())?);
        }
        Ok(())
    }

    /// Hands every offer record to `visit`, in id order, decoding one at a time.
    ///
    /// # Errors
    /// Storage errors; [`super::StoreError::Corrupt`].
    pub fn each_offer<T: DeserializeOwned>(&self, mut visit: impl FnMut(T)) -> Result<()> {
        for row in self.txn.open_table(OFFERS)?.iter()? {
            let (k, v) = row?;
            visit(decode(k.value(), v.value())?);
        }
        Ok(())
    }

    /// How many records the namespace `ns` holds (a key range walk; nothing decoded).
    ///
    /// # Errors
    /// Storage errors.
    pub fn count_records(&self, ns: Ns) -> Result<u64> {
        let p = ns.prefix();
        let to = format!("{p}\u{10ffff}");
        let t = self.txn.open_table(RECORDS)?;
        let mut n = 0;
        for row in t.range(p..to.as_str())? {
            row?;
            n += 1;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Store, Tx};
    use super::*;

    #[test]
    fn counts_follow_writes() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("s.redb")).unwrap();
        assert_eq!(s.read(|rx| rx.counts()).unwrap(), Counts::default());
        s.write(|tx: &mut Tx<'_>| -> Result<()> {
            tx.put_intent("int_a", &serde_json::json!({"n": 1}), true, Default::default())?;
            tx.put_intent("int_b", &serde_json::json!({"n": 2}), false, Default::default())?;
            tx.put_delivery("int_a", "off_1", 1, &serde_json::json!({}))?;
            tx.put_record(Ns::Account, "acc_1", &serde_json::json!({}))?;
            tx.put_record(Ns::Session, "s1", &serde_json::json!({}))?;
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
