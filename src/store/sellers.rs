//! Sellers of catalogue feeds: the records and the folded-name index.

use super::schema::{SELLERS, SELLER_NAMES};
use super::{encode, Result, Tx};
use serde::Serialize;

impl Tx<'_> {
    /// Inserts or replaces a seller record under its folded name.
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
