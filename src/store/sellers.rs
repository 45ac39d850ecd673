//! Sellers of catalogue feeds: the records and the folded-name index.

use super::schema::{SELLERS, SELLER_NAMES};
use super::{all_json, encode, get_json, get_str, Result, Tables, Tx};
use serde::{de::DeserializeOwned, Serialize};

pub(super) fn get<T: DeserializeOwned, R: Tables + ?Sized>(r: &R, id: &str) -> Result<Option<T>> {
    get_json(r, SELLERS, id)
}

pub(super) fn all<T: DeserializeOwned, R: Tables + ?Sized>(r: &R) -> Result<Vec<T>> {
    all_json(r, SELLERS)
}

pub(super) fn by_name<R: Tables + ?Sized>(r: &R, folded: &str) -> Result<Option<String>> {
    get_str(r, SELLER_NAMES, folded)
}

impl Tx<'_> {
    /// Inserts or replaces a seller record under its folded name.
    ///
    /// # Errors
    /// Storage errors; [`super::StoreError::Encode`] (nothing is written).
    pub fn put_seller<T: Serialize>(&mut self, id: &str, folded_name: &str, record: &T) -> Result<()> {
        let bytes = encode("sellers", record)?;
        self.open(SELLERS)?.insert(id, bytes.as_slice())?;
        self.open(SELLER_NAMES)?.insert(folded_name, id)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::Reads;
    use serde_json::json;

    #[test]
    fn sellers_by_id_and_folded_name() {
        for (backend, s, _d) in crate::store::testpg::both() {
            eprintln!("backend: {backend}");
            s.write(|tx| tx.put_seller("sel_a", "auto kovac", &json!({"name": "Auto Kováč"}))).unwrap();
            assert_eq!(s.read(|rx| rx.seller_by_name("auto kovac")).unwrap().as_deref(), Some("sel_a"));
            let v: Option<serde_json::Value> = s.read(|rx| rx.seller("sel_a")).unwrap();
            assert_eq!(v.unwrap()["name"], "Auto Kováč");
            assert_eq!(s.read(|rx| rx.all_sellers::<serde_json::Value>()).unwrap().len(), 1);
        }
    }
}
