//! Offers: the records, their feed references (`seller id \0 ref` → offer id) and the
//! catalogue generation that the full-text index compares with.

use super::reads::json_at;
use super::schema::{OFFERS, OFFER_REFS};
use super::table::Table;
use super::{encode, meta_counter, Result, Rx, Tx};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Key of the catalogue generation in `meta`.
const GENERATION: &str = "offers_generation";

/// Key of a feed reference.
pub(super) fn ref_key(seller_id: &str, reference: &str) -> String {
    format!("{seller_id}\0{reference}")
}

/// The offer tables (`offers`, `offer_refs`) opened once for a batch of catalogue rows
/// ([`Tx::offer_rows`]): an import reads and writes each of thousands of rows per batch
/// there, and opening the tables for each row was a tenth of its store work. While it
/// lives, the transaction must not open these tables again (redb refuses a table opened
/// twice): read and write offers through it. Dropped before the transaction commits.
pub struct OfferRows<'a> {
    tx: Tx<'a>,
    offers: Table<'a, &'static str, &'static [u8]>,
    refs: Table<'a, &'static str, &'static str>,
}

impl OfferRows<'_> {
    /// The id of the offer stored under a seller's feed reference
    /// ([`super::Reads::offer_by_ref`] through the open tables).
    pub fn by_ref(&self, seller_id: &str, reference: &str) -> Result<Option<String>> {
        self.refs.get(ref_key(seller_id, reference).as_str())
    }

    /// The offer record `id` ([`super::Reads::offer`] through the open tables).
    pub fn offer<T: DeserializeOwned>(&self, id: &str) -> Result<Option<T>> {
        json_at(&self.offers, id)
    }

    /// Inserts or replaces an offer record and its feed reference `(seller id, ref)`.
    pub fn put<T: Serialize>(&mut self, id: &str, record: &T, seller_ref: Option<(&str, &str)>) -> Result<()> {
        let bytes = encode("offers", record)?;
        self.offers.insert(id, bytes.as_slice())?;
        if let Some((seller, r)) = seller_ref {
            self.refs.insert(ref_key(seller, r).as_str(), id)?;
        }
        self.tx.note_change(super::ChangeKind::Offer, id)
    }
}

impl<'a> Tx<'a> {
    /// The offer tables, open for a batch of [`OfferRows`] reads and writes.
    pub fn offer_rows(&self) -> Result<OfferRows<'a>> {
        Ok(OfferRows { tx: Tx { txn: self.txn }, offers: self.open(OFFERS)?, refs: self.open(OFFER_REFS)? })
    }

    /// Inserts or replaces an offer record and its feed reference ([`OfferRows::put`]).
    pub fn put_offer<T: Serialize>(&mut self, id: &str, record: &T, seller_ref: Option<(&str, &str)>) -> Result<()> {
        self.offer_rows()?.put(id, record, seller_ref)
    }

    /// Bumps the catalogue generation (see [`Rx::offers_generation`]); returns the new one.
    pub fn bump_offers_generation(&mut self) -> Result<u64> {
        self.bump_counter(GENERATION, 0)
    }
}

impl Rx {
    /// The catalogue generation: bumped by every transaction that writes offers; the
    /// full-text index stores the generation it reflects.
    pub fn offers_generation(&self) -> Result<u64> {
        meta_counter(self, GENERATION)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Reads;
    use serde_json::json;

    #[test]
    fn offers_refs_and_generation() {
        for (backend, s, _d) in crate::store::testpg::both() {
            eprintln!("backend: {backend}");
            assert_eq!(s.read(|rx| rx.offers_generation()).unwrap(), 0);
            let g = s
                .write(|tx| {
                    tx.put_offer("off_a", &json!({"n": 1}), Some(("sel_1", "r1")))?;
                    tx.put_offer("off_b", &json!({"n": 2}), None)?;
                    tx.bump_offers_generation()
                })
                .unwrap();
            assert_eq!(g, 1);
            assert_eq!(s.write(|tx| tx.bump_offers_generation()).unwrap(), 2);
            assert_eq!(s.read(|rx| rx.offers_generation()).unwrap(), 2);
            assert_eq!(s.read(|rx| rx.offer_by_ref("sel_1", "r1")).unwrap().as_deref(), Some("off_a"));
            assert_eq!(s.read(|rx| rx.offer_by_ref("sel_1", "r2")).unwrap(), None);
            let all: Vec<serde_json::Value> = s.read(|rx| rx.all_offers()).unwrap();
            assert_eq!(all.len(), 2);
            let b: Option<serde_json::Value> = s.read(|rx| rx.offer("off_b")).unwrap();
            assert_eq!(b.unwrap()["n"], 2);
        }
    }
}
