//! The ordinary catalogue search of `intent_search_offers` (PROTOCOL.md §3), answered
//! from the full-text index alone ([`OfferIndex::search_offers`]): no store read, since
//! the index holds the active catalogue offers and is updated right after each
//! catalogue commit (docs/choices.md).

use super::index::OfferIndex;
use crate::base::{Base, ServiceError};
use crate::gazetteer::AreaObject;

/// [`OfferIndex::search_offers`] at the holder's clock: at most `limit` public offers,
/// best first, each the JSON text of `serde_json::to_value(&offer)`.
///
/// # Errors
/// Index errors (internal).
pub fn search_json(
    index: &OfferIndex,
    base: &Base,
    statement: &str,
    area: Option<&AreaObject>,
    category: Option<&str>,
    limit: usize,
) -> Result<Vec<String>, ServiceError> {
    Ok(index.search_offers(statement, area, category, limit, base.clock().now())?)
}

/// The answer of `intent_search_offers` from [`search_json`]'s texts: its structured
/// content `{"offers": [...]}` and its text, the JSON array. The stored texts are
/// `to_value(&offer).to_string()`, so joined they are the array's text byte for byte;
/// parsed once, its value tree, moved into the object (`json!` would serialize the tree
/// into a copy: a third of a typical search).
///
/// # Errors
/// A stored text that is not JSON (an index written by something else).
pub fn search_answer(offers: &[String]) -> Result<(serde_json::Value, String), serde_json::Error> {
    use serde_json::Value;
    let text = format!("[{}]", offers.join(","));
    let arr = offers.iter().map(|j| serde_json::from_str(j)).collect::<Result<Vec<Value>, _>>()?;
    let structured = Value::Object(serde_json::Map::from_iter([("offers".to_owned(), Value::Array(arr))]));
    Ok((structured, text))
}

#[cfg(any(test, feature = "testkit"))]
/// [`search_json`] with the offers decoded (tests).
///
/// # Errors
/// Index errors, a stored offer that does not decode (internal).
pub fn search_with(
    index: &OfferIndex,
    base: &Base,
    statement: &str,
    area: Option<&AreaObject>,
    category: Option<&str>,
    limit: usize,
) -> Result<Vec<crate::protocol::Offer>, ServiceError> {
    search_json(index, base, statement, area, category, limit)?
        .iter()
        .map(|j| Ok(serde_json::from_str(j).map_err(super::index::IndexError::from)?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::parse_json_row;
    use crate::catalogue::Catalogue;
    use crate::clock::SystemClock;
    use crate::config::Settings;
    use crate::crypto::KeyRing;
    use crate::gazetteer;
    use crate::protocol::Offer;
    use crate::records::{OfferInput, OfferRecord};
    use crate::store::Reads;
    use crate::store::Store;
    use serde_json::json;
    use std::sync::Arc;

    fn row(reference: &str, title: &str, make: &str, area: &str, valid_until: Option<&str>) -> OfferInput {
        let mut v = json!({"ref": reference, "title": title, "category": "vehicles", "attributes": {"make": make},
                           "price": {"amount": 9000, "currency": "EUR"}, "area": area, "seller": {"name": "Auto Kováč"}});
        if let Some(t) = valid_until {
            v["validUntil"] = json!(t);
        }
        parse_json_row(&v, &["EUR".to_owned()]).unwrap()
    }

    #[test]
    fn search_with_loads_current_offers_in_index_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Settings::defaults();
        s.data_dir = dir.path().to_owned();
        let store = Store::open(&s.store_path()).unwrap();
        let cat = Catalogue::new(
            Arc::new(Base::new(s, Arc::new(store), Arc::new(KeyRing::ephemeral()), Arc::new(SystemClock))),
            None,
        );
        let h = &*cat.base;
        cat.import_offers(vec![
            row("1", "Škoda Octavia Combi", "Škoda", "Košice", None),
            row("2", "Škoda Fabia", "Škoda", "Bratislava", None),
            row("3", "Škoda Superb", "Škoda", "Košice", Some("2020-01-01")),
            row("4", "Toyota Corolla", "Toyota", "Košice", None),
        ])
        .unwrap();
        let records: Vec<OfferRecord> = h.store().read(|rx| rx.all_offers()).unwrap();
        let index = OfferIndex::open(None).unwrap();
        index.rebuild(records.into_iter().filter(|r| r.active).map(|r| r.offer), 1).unwrap();
        let refs =
            |v: Vec<Offer>| v.into_iter().map(|o| o.extensions["ref"].as_str().unwrap().to_owned()).collect::<Vec<_>>();

        // "3" is past validUntil: skipped although indexed.
        let got = refs(search_with(&index, h, "skoda", None, None, 10).unwrap());
        assert_eq!(got.len(), 2);
        assert!(!got.contains(&"3".to_owned()));
        assert_eq!(refs(search_with(&index, h, "ŠKODU OCTAVIU", None, None, 10).unwrap())[0], "1");
        let kosice = gazetteer::resolve("Košice").unwrap();
        assert_eq!(refs(search_with(&index, h, "skoda", Some(&kosice), None, 10).unwrap()), vec!["1"]);
        assert_eq!(search_with(&index, h, "skoda", None, Some("vehicles"), 1).unwrap().len(), 1);
        assert!(search_with(&index, h, "skoda", None, Some("property"), 10).unwrap().is_empty());
        assert!(search_with(&index, h, "skoda", None, None, 0).unwrap().is_empty());
        // The answer comes from the index alone: an offer only the index holds is found
        // (the store is not read), and it is gone as soon as the index commits its removal.
        let mut ghost = h.store().read(|rx| rx.all_offers::<OfferRecord>()).unwrap().remove(0).offer;
        ghost.id = "off_ghost".into();
        ghost.title = "Škoda Kodiaq".into();
        // The first record by (random) id may be "3", past its validUntil.
        ghost.valid_until = None;
        index.apply(Vec::new(), vec![ghost.clone()], Vec::new(), 2);
        index.flush().unwrap();
        assert_eq!(search_with(&index, h, "kodiaq", None, None, 10).unwrap(), vec![ghost.clone()]);
        let json = search_json(&index, h, "kodiaq", None, None, 10).unwrap();
        assert_eq!(json, vec![serde_json::to_value(&ghost).unwrap().to_string()]);
        index.apply(Vec::new(), Vec::new(), vec!["off_ghost".to_owned()], 3);
        index.flush().unwrap();
        assert!(search_with(&index, h, "kodiaq", None, None, 10).unwrap().is_empty());
    }

    #[test]
    fn withdrawn_offers_leave_the_search_and_an_old_index_is_rebuilt_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Settings::defaults();
        s.data_dir = dir.path().to_owned();
        let index_dir = dir.path().join("index");
        let base = Arc::new(Base::new(
            s.clone(),
            Arc::new(Store::open(&s.store_path()).unwrap()),
            Arc::new(KeyRing::ephemeral()),
            Arc::new(SystemClock),
        ));
        let cat = Catalogue::new(base.clone(), Some(index_dir.clone()));
        cat.import_offers(vec![row("1", "Škoda Octavia", "Škoda", "Košice", None)]).unwrap();
        let index = cat.offer_index().unwrap();
        assert_eq!(search_with(&index, &base, "octavia", None, None, 10).unwrap().len(), 1);
        // A full-feed run without the offer withdraws it: gone from search at once.
        cat.import_offers_run(vec![row("2", "Škoda Fabia", "Škoda", "Košice", None)], Some("run-2")).unwrap();
        assert_eq!(cat.withdraw_vanished("run-2").unwrap().len(), 1);
        assert!(search_with(&index, &base, "octavia", None, None, 10).unwrap().is_empty());
        assert_eq!(search_with(&index, &base, "fabia", None, None, 10).unwrap().len(), 1);
        drop((index, cat));

        // The index on disk is replaced by one of the previous schema that claims the
        // store's generation: the next start recreates and rebuilds it from the store.
        let generation = base.store().read(|rx| rx.offers_generation()).unwrap();
        std::fs::remove_dir_all(&index_dir).unwrap();
        crate::catalogue::index::tests::write_version_2_index(&index_dir, generation, true);
        let cat = Catalogue::new(base.clone(), Some(index_dir));
        let index = cat.offer_index().unwrap();
        assert_eq!((index.generation(), index.num_docs()), (Some(generation), 1));
        let got = search_with(&index, &base, "fabia", None, None, 10).unwrap();
        assert_eq!(got.iter().map(|o| o.extensions["ref"].as_str().unwrap()).collect::<Vec<_>>(), ["2"]);
        assert!(search_with(&index, &base, "octavia", None, None, 10).unwrap().is_empty());
    }
}
