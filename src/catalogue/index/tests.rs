//! Unit tests of the offer index: analysis, ranking, filters, updates, storage.

use super::search::analyse;
use super::search::Analysed;
use super::writer::WRITER_IDLE;
use super::*;
use crate::protocol::{Money, OfferSource, SellerPublic};
use serde_json::json;

/// Test support: writes in `path` (created, must hold no index) an index of the schema
/// of INDEX_VERSION 2 (no stored offer, no `validUntil`) with one document and a commit
/// payload claiming `generation` (and, when `current_analysis`, today's analysis
/// fingerprint): what an older isto left on disk.
pub(crate) fn write_version_2_index(path: &Path, generation: u64, current_analysis: bool) {
    let mut b = Schema::builder();
    let text = |analyzer: &str, record: IndexRecordOption, norms: bool| {
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default().set_tokenizer(analyzer).set_index_option(record).set_fieldnorms(norms),
        )
    };
    let searchable = || text("isto_match_v2", IndexRecordOption::WithFreqs, true);
    let id = b.add_text_field("id", STRING | STORED | FAST);
    b.add_text_field("category", STRING);
    b.add_text_field("country", STRING);
    b.add_text_field("region", STRING);
    let title = b.add_text_field("title", searchable());
    b.add_text_field("attrs", searchable());
    b.add_text_field("description", searchable());
    b.add_text_field("terms", text("isto_terms_v1", IndexRecordOption::Basic, false));
    let published = b.add_i64_field("published", NumericOptions::default().set_fast());
    std::fs::create_dir_all(path).unwrap();
    let old = Index::create_in_dir(path, b.build()).unwrap();
    old.tokenizers().register("isto_match_v2", TextAnalyzer::from(IstoTokenizer));
    old.tokenizers().register("isto_terms_v1", TextAnalyzer::from(IstoTokenizer));
    let mut w: IndexWriter = old.writer(15_000_000).unwrap();
    let mut d = TantivyDocument::new();
    d.add_text(id, "o1");
    d.add_text(title, "Škoda Octavia");
    d.add_i64(published, 0);
    w.add_document(d).unwrap();
    let mut payload = serde_json::json!({ "generation": generation });
    if current_analysis {
        payload["analysis"] = Value::String(analysis_fingerprint().to_owned());
    }
    let mut prepared = w.prepare_commit().unwrap();
    prepared.set_payload(&payload.to_string());
    prepared.commit().unwrap();
}

pub(super) fn area_of(code: &str) -> AreaObject {
    let country = gazetteer::region_country(code).unwrap_or(code);
    let regions = if code.contains('-') { vec![code.to_owned()] } else { Vec::new() };
    AreaObject { country: country.to_owned(), regions, place: None }
}

pub(super) fn offer(id: &str, title: &str, description: &str, attrs: Value, area: &str) -> Offer {
    Offer {
        id: id.into(),
        source: OfferSource { kind: "catalogue".into(), seller_id: "sel_1".into(), url: None },
        in_reply_to: None,
        title: title.into(),
        description: description.into(),
        category: "vehicles".into(),
        attributes: attrs.as_object().cloned().unwrap_or_default(),
        price: Money { amount: 10000.0, currency: "EUR".into() },
        area: gazetteer::resolve(area).unwrap(),
        seller: SellerPublic { id: "sel_1".into(), name: "Auto Kováč".into(), url: None },
        published_at: "2026-11-30T00:00:00Z".into(),
        valid_until: None,
        extensions: json!({}),
    }
}

pub(super) fn index_of(offers: Vec<Offer>) -> OfferIndex {
    let ix = OfferIndex::open(None).unwrap();
    assert_eq!(ix.generation(), None);
    assert_eq!(ix.rebuild(offers.into_iter(), 1).unwrap(), ix.num_docs());
    ix
}

pub(super) fn ids(ix: &OfferIndex, statement: &str, area: Option<&AreaObject>, category: Option<&str>) -> Vec<String> {
    ix.search(statement, area, category, 100).unwrap().into_iter().map(|(id, _)| id).collect()
}

fn sample() -> OfferIndex {
    index_of(vec![
        offer("o1", "Škoda Octavia Combi 2.0 TDI", "", json!({"make": "Škoda", "model": "Octavia"}), "Košice"),
        offer("o2", "Volkswagen Passat", "Lepšie ako Škoda, garážované.", json!({"make": "Volkswagen"}), "Bratislava"),
        offer("o3", "Škoda Fabia", "", json!({"make": "Škoda"}), "Bratislava"),
        offer(
            "o4",
            "Toyota Corolla",
            "Auto stojí v Košice, do 5000 km od servisu.",
            json!({"make": "Toyota"}),
            "Žilina",
        ),
        offer("o5", "Sedan", "", json!({"make": "Škoda"}), "Brno"),
    ])
}

#[test]
fn folds_case_and_diacritics() {
    let ix = sample();
    let got = ids(&ix, "skoda", None, None);
    assert_eq!(got.len(), 4, "{got:?}");
    assert!(!got.contains(&"o4".to_owned()));
    assert_eq!(ids(&ix, "KOSICE", None, None), vec!["o4"], "a place name alone searches the text");
    assert_eq!(ids(&ix, "ŠKODU OCTAVIU", None, None)[0], "o1", "inflected forms find Octavia");
    assert_eq!(ids(&ix, "nafta", None, None), vec!["o1"], "synonyms fold: nafta = TDI = diesel");
}

#[test]
fn stop_words_do_not_match() {
    let ix = sample();
    for s in ["a", "do", "the", "A DO THE", "ale že", "aj s"] {
        assert!(ids(&ix, s, None, None).is_empty(), "{s}");
    }
    assert_eq!(analyse("do a the", false), Analysed::default());
    // A stop word next to a real word changes nothing.
    assert_eq!(ids(&ix, "corolla do", None, None), vec!["o4"]);
}

#[test]
fn ranks_title_then_attributes_then_description() {
    let ix = index_of(vec![
        offer("d", "Combi", "Superb v top stave", json!({}), "SK"),
        offer("a", "Combi", "", json!({"model": "Superb"}), "SK"),
        offer("t", "Superb", "", json!({}), "SK"),
    ]);
    assert_eq!(ids(&ix, "superb", None, None), vec!["t", "a", "d"]);
    let s = ix.search("superb", None, None, 10).unwrap();
    assert!(s[0].1 > s[1].1 && s[1].1 > s[2].1, "{s:?}");
    // More words found rank higher; an inflected form counts as a hit.
    let ix = index_of(vec![
        offer("x1", "Škoda Superb", "", json!({}), "SK"),
        offer("x2", "Škoda Octavia", "", json!({}), "SK"),
        offer("x3", "Octavia", "", json!({}), "SK"),
    ]);
    let got = ids(&ix, "škoda octaviu", None, None);
    assert_eq!(got[0], "x2", "{got:?}");
    assert_eq!(got.len(), 3);
}

#[test]
fn equal_scores_go_by_id() {
    let ix =
        index_of(["c", "a", "d", "b"].iter().map(|id| offer(id, "Škoda Fabia", "", json!({}), "Košice")).collect());
    assert_eq!(ids(&ix, "fabia", None, None), vec!["a", "b", "c", "d"]);
    assert_eq!(ix.search("fabia", None, None, 2).unwrap().into_iter().map(|h| h.0).collect::<Vec<_>>(), ["a", "b"]);
}

#[test]
fn equal_scores_go_by_price_in_the_default_currency() {
    let rates = BTreeMap::from([("EUR".to_owned(), 1.0), ("CZK".to_owned(), 0.04)]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    let priced = |id: &str, amount: f64, currency: &str| {
        let mut o = offer(id, "Škoda Fabia", "", json!({}), "Košice");
        o.price = Money { amount, currency: currency.into() };
        o
    };
    // 20 000 EUR; 100 000 CZK = 4 000 EUR; USD has no rate (last); 5 000 EUR.
    let offers = vec![priced("a", 20_000.0, "EUR"), priced("b", 100_000.0, "CZK"), priced("c", 1.0, "USD")];
    let ix = OfferIndex::open_priced(Some(&path), &rates).unwrap();
    ix.rebuild(offers.into_iter(), 1).unwrap();
    ix.apply(Vec::new(), vec![priced("d", 5_000.0, "EUR")], Vec::new(), 2);
    ix.flush().unwrap();
    // "d" is alone in the second segment, searched after the first: the score carried
    // over from it (collector::TopIds::search) must still let an equal score in.
    assert_eq!(ix.reader.searcher().segment_readers().len(), 2);
    assert_eq!(ids(&ix, "fabia", None, None), vec!["b", "d", "a", "c"]);
    assert_eq!(ix.search("fabia", None, None, 2).unwrap().into_iter().map(|h| h.0).collect::<Vec<_>>(), ["b", "d"]);
    drop(ix);
    // Reopened with the same rates it is in step; with other rates its prices are stale:
    // it reports no generation, so its owner rebuilds it.
    assert_eq!(OfferIndex::open_priced(Some(&path), &rates).unwrap().generation(), Some(2));
    let other = BTreeMap::from([("EUR".to_owned(), 1.0), ("CZK".to_owned(), 0.05)]);
    assert_eq!(OfferIndex::open_priced(Some(&path), &other).unwrap().generation(), None);
}

#[test]
fn a_word_weighs_the_same_in_every_field() {
    // "Škoda" is a make in three offers' attributes and appears in one description
    // (o2): with per-field IDF the rare description hit outweighed the attribute hit of
    // o5 ("Sedan", make Škoda). With one field (one IDF per word) the field weights
    // decide: title and attributes (o1, o3), then attributes (o5), then description.
    let ix = sample();
    let got = ix.search("skoda", None, None, 10).unwrap();
    let order: Vec<&str> = got.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(order[2..], ["o5", "o2"], "{got:?}");
    assert!(got[1].1 > got[2].1, "title and attributes above attributes alone: {got:?}");
    // Weights 2:1 as term frequencies 2 and 1 of equal length norms (the padding):
    // BM25 gives (2 (k1 + 1) / (2 + k1)) / ((k1 + 1) / (1 + k1)) with k1 = 1.2.
    let (attribute, description) = (got[2].1, got[3].1);
    let k1 = 1.2_f32;
    let expected = (2.0 * (k1 + 1.0) / (2.0 + k1)) / ((k1 + 1.0) / (1.0 + k1));
    assert!((attribute / description - expected).abs() < 0.01, "the field weights 2:1 decide: {got:?}");
}

#[test]
fn filters_area_category_and_limit() {
    let ix = sample();
    let kosice = gazetteer::resolve("Košice").unwrap();
    assert_eq!(ids(&ix, "skoda", Some(&kosice), None), vec!["o1"]);
    let sk = gazetteer::resolve("SK").unwrap();
    assert_eq!(ids(&ix, "skoda", Some(&sk), None).len(), 3, "o5 lies in Brno");
    let two = AreaObject { country: "sk".into(), regions: vec!["sk-ki".into(), "SK-BL".into()], place: None };
    let mut got = ids(&ix, "skoda", Some(&two), None);
    got.sort();
    assert_eq!(got, vec!["o1", "o2", "o3"]);
    assert!(ids(&ix, "skoda", None, Some("property")).is_empty());
    assert_eq!(ids(&ix, "skoda", None, Some("vehicles")).len(), 4);
    assert_eq!(ix.search("skoda", None, Some("vehicles"), 2).unwrap().len(), 2);
    assert!(ix.search("skoda", None, None, 0).unwrap().is_empty());
    assert!(ids(&ix, "zzz", None, None).is_empty());
    // No words: the filter's offers (newest first, then id); no words and no filter: nothing.
    let mut kos = ids(&ix, "kosice", Some(&kosice), None);
    kos.sort();
    assert_eq!(kos, vec!["o1"]);
    assert_eq!(ids(&ix, "", None, Some("vehicles")), vec!["o1", "o2", "o3", "o4", "o5"]);
    assert!(ids(&ix, "", None, None).is_empty());
    // A whole-country offer matches only a whole-country area.
    let ix = index_of(vec![offer("c", "Škoda Fabia", "", json!({}), "SK")]);
    assert_eq!(ids(&ix, "fabia", Some(&sk), None), vec!["c"]);
    assert!(ids(&ix, "fabia", Some(&kosice), None).is_empty());
}

#[test]
fn apply_replaces_and_removes() {
    let ix = sample();
    let mut o1 = offer("o1", "Hyundai i30", "", json!({"make": "Hyundai"}), "Košice");
    o1.published_at = "2026-12-01T00:00:00Z".into();
    let new = offer("o6", "Kia Ceed", "", json!({"make": "Kia"}), "Košice");
    ix.apply(Vec::new(), vec![o1, new], vec!["o3".to_owned(), "nope".to_owned()], 2);
    assert_eq!(ix.generation(), Some(2));
    assert_eq!(ix.num_docs(), 5);
    assert!(!ids(&ix, "octavia", None, None).contains(&"o1".to_owned()), "the old title is gone");
    assert_eq!(ids(&ix, "hyundai", None, None), vec!["o1"]);
    assert_eq!(ids(&ix, "ceed", None, None), vec!["o6"]);
    assert!(ids(&ix, "fabia", None, None).is_empty(), "o3 was removed");
    // The same id twice in one batch: the last one wins.
    let a = offer("o7", "Dacia Duster", "", json!({}), "SK");
    let b = offer("o7", "Dacia Sandero", "", json!({}), "SK");
    ix.apply(Vec::new(), vec![a, b], Vec::new(), 3);
    ix.flush().unwrap();
    assert!(ids(&ix, "duster", None, None).is_empty());
    assert_eq!(ids(&ix, "sandero", None, None), vec!["o7"]);
    // New offers go in without a delete and before the replaced ones: an offer added and
    // then updated in one update ends as updated, once.
    let c = offer("o8", "Dacia Logan", "", json!({}), "SK");
    let d = offer("o8", "Dacia Jogger", "", json!({}), "SK");
    ix.apply(vec![c, offer("o9", "Dacia Spring", "", json!({}), "SK")], vec![d], Vec::new(), 4);
    ix.flush().unwrap();
    assert!(ids(&ix, "logan", None, None).is_empty());
    assert_eq!(ids(&ix, "jogger", None, None), vec!["o8"]);
    assert_eq!(ids(&ix, "dacia", None, None).len(), 3, "o7, o8 and o9, each once");
    // Newest first without words.
    let kosice = gazetteer::resolve("Košice").unwrap();
    assert_eq!(ids(&ix, "", Some(&kosice), None), vec!["o1", "o6"]);
}

#[test]
fn an_offer_whose_published_time_does_not_read_is_left_out_naming_it() {
    let mut bad = offer("o9", "Škoda Octavia Combi", "", json!({"make": "Škoda"}), "Košice");
    bad.published_at = "last week".into();
    assert_eq!(
        published_secs(&bad).unwrap_err(),
        "offer o9: publishedAt must be an RFC 3339 time such as 2026-12-01T10:00:00Z"
    );
    // Not indexed as if published in 1970: left out, the others indexed.
    let ix = index_of(vec![offer("o1", "Škoda Octavia", "", json!({"make": "Škoda"}), "Košice"), bad]);
    assert_eq!(ix.num_docs(), 1);
    assert_eq!(ids(&ix, "octavia", None, None), vec!["o1"]);
    // An update that makes it unreadable takes the offer's old document out too.
    let mut o1 = offer("o1", "Škoda Octavia RS", "", json!({"make": "Škoda"}), "Košice");
    o1.published_at = String::new();
    ix.apply(Vec::new(), vec![o1], Vec::new(), 2);
    ix.flush().unwrap();
    assert!(ids(&ix, "octavia", None, None).is_empty());
    assert_eq!(ix.num_docs(), 0);
}

#[test]
fn rebuild_replaces_everything() {
    let ix = sample();
    assert_eq!(ix.generation(), Some(1));
    let n = ix.rebuild(vec![offer("z", "Škoda Kodiaq", "", json!({}), "SK")].into_iter(), 7).unwrap();
    assert_eq!((n, ix.num_docs(), ix.generation()), (1, 1, Some(7)));
    assert!(ids(&ix, "octavia", None, None).is_empty());
    assert_eq!(ids(&ix, "kodiaq", None, None), vec!["z"]);
}

#[test]
fn no_writer_outlives_a_rebuild_or_an_idle_series() {
    let dir = tempfile::tempdir().unwrap();
    let ix = OfferIndex::open(Some(&dir.path().join("index"))).unwrap();
    let free = |ix: &OfferIndex| ix.writing.index.writer::<TantivyDocument>(15_000_000).map(drop).is_ok();
    assert!(free(&ix), "opening takes no writer (nor its lock and threads)");
    ix.rebuild(vec![offer("o1", "Škoda Octavia", "", json!({}), "Košice")].into_iter(), 1).unwrap();
    assert!(free(&ix), "the rebuild's writer ended with it");
    for g in 2..12 {
        let o = offer(&format!("o{g}"), "Škoda Fabia", "", json!({}), "Košice");
        ix.apply(Vec::new(), vec![o], Vec::new(), g);
    }
    // A series of updates shares one writer; a read that must see them commits it, and
    // the writer lives on.
    assert_eq!((ix.num_docs(), ix.generation()), (11, Some(11)));
    assert!(!free(&ix), "the series' writer is pending");
    assert_eq!(ids(&ix, "fabia", None, None).len(), 10);
    // The writer ends once it has been idle for a while (polled with a deadline).
    let deadline = std::time::Instant::now() + WRITER_IDLE * 5;
    while !free(&ix) {
        assert!(std::time::Instant::now() < deadline, "the idle writer did not end");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // While another writer holds the index, an update fails and changes nothing.
    let held = ix.writing.index.writer::<TantivyDocument>(15_000_000).unwrap();
    ix.apply(Vec::new(), Vec::new(), vec!["o1".to_owned()], 12);
    let e = ix.flush().unwrap_err();
    assert!(matches!(e, IndexError::Tantivy(tantivy::TantivyError::LockFailure(..))), "{e}");
    drop(held);
    assert_eq!((ix.num_docs(), ix.generation()), (11, Some(11)));
    // The removal lost with the failed writer is not in the index: later commits keep the
    // last good generation (the index lags the store, so it is rebuilt at the next start)
    // until a rebuild.
    ix.apply(Vec::new(), vec![offer("o13", "Kia Ceed", "", json!({}), "Košice")], Vec::new(), 13);
    assert_eq!((ix.num_docs(), ix.generation()), (12, Some(11)));
    ix.rebuild(vec![offer("o1", "Škoda Octavia", "", json!({}), "Košice")].into_iter(), 14).unwrap();
    assert_eq!((ix.num_docs(), ix.generation()), (1, Some(14)));
    ix.apply(Vec::new(), vec![offer("o15", "Kia Ceed", "", json!({}), "Košice")], Vec::new(), 15);
    assert_eq!((ix.num_docs(), ix.generation()), (2, Some(15)));
}

#[test]
fn searches_see_an_update_within_the_refresh_lag_without_a_flush() {
    let ix = sample();
    let t = std::time::Instant::now();
    ix.apply(Vec::new(), vec![offer("o9", "Kia Sportage", "", json!({}), "Košice")], Vec::new(), 2);
    // Nothing commits it but the refresher (searches never do).
    let deadline = t + REFRESH_LAG * 10;
    while ids(&ix, "sportage", None, None).is_empty() {
        assert!(std::time::Instant::now() < deadline, "the update was not committed in the background");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let seen = t.elapsed();
    assert!(seen >= REFRESH_LAG, "committed only after the lag ({seen:?}), not by the search");
    assert_eq!(ix.writing.generation.lock().unwrap().as_ref(), Some(&2));
}

#[test]
fn directory_index_reopens_with_its_generation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    {
        let ix = OfferIndex::open(Some(&path)).unwrap();
        assert_eq!(ix.generation(), None);
        ix.rebuild(vec![offer("o1", "Škoda Octavia", "", json!({}), "Košice")].into_iter(), 41).unwrap();
        ix.apply(Vec::new(), vec![offer("o2", "Škoda Fabia", "", json!({}), "Košice")], Vec::new(), 42);
    }
    let ix = OfferIndex::open(Some(&path)).unwrap();
    assert_eq!(ix.generation(), Some(42));
    assert_eq!(ix.num_docs(), 2);
    assert_eq!(ids(&ix, "octaviu", None, None), vec!["o1"]);
    drop(ix);
    // An index with another schema is wiped and recreated.
    std::fs::remove_dir_all(&path).unwrap();
    std::fs::create_dir_all(&path).unwrap();
    {
        let mut b = Schema::builder();
        b.add_text_field("id", STRING | STORED);
        let other = Index::create_in_dir(&path, b.build()).unwrap();
        let mut w: IndexWriter = other.writer(15_000_000).unwrap();
        w.commit().unwrap();
    }
    let ix = OfferIndex::open(Some(&path)).unwrap();
    assert_eq!((ix.generation(), ix.num_docs()), (None, 0));
    ix.rebuild(vec![offer("o1", "Škoda Octavia", "", json!({}), "Košice")].into_iter(), 1).unwrap();
    assert_eq!(ids(&ix, "octavia", None, None), vec!["o1"]);
}

fn at(t: &str) -> OffsetDateTime {
    crate::clock::parse_rfc3339(t).unwrap()
}

#[test]
fn search_offers_answers_stored_current_offers() {
    let mut offers: Vec<Offer> = Vec::new();
    // The best hits by id ("a…" sort first at equal scores) are past validUntil or
    // have one that does not parse; enough current offers come after them.
    for (id, until) in [
        ("a1", Some("2026-11-01T00:00:00Z")),
        ("a2", Some("2026-12-01T10:00:00Z")),
        ("a3", Some("garbage")),
        ("a4", Some("2026-11-30T23:59:59.999Z")),
        ("b1", None),
        ("b2", Some("2026-12-01T10:00:00.001Z")),
        ("b3", Some("2030-01-01T00:00:00Z")),
        ("b4", None),
    ] {
        let mut o = offer(id, "Škoda Fabia", "", json!({"make": "Škoda", "year": 2019, "km": 12.5}), "Košice");
        o.valid_until = until.map(str::to_owned);
        offers.push(o);
    }
    let ix = index_of(offers.clone());
    let now = at("2026-12-01T10:00:00Z");
    let got = ix.search_offers("fabia", None, None, 3, now).unwrap();
    let want: Vec<String> = offers[4..7].iter().map(|o| serde_json::to_value(o).unwrap().to_string()).collect();
    assert_eq!(got, want, "the stored JSON is to_value(&offer), byte for byte; expired offers take no place");
    let all = ix.search_offers("fabia", None, None, 100, now).unwrap();
    assert_eq!(all.len(), 4);
    let back: Offer = serde_json::from_str(&all[3]).unwrap();
    assert_eq!(back, offers[7]);
    // Without a clock (`search`), every indexed offer is a hit; a later clock drops more.
    assert_eq!(ids(&ix, "fabia", None, None).len(), 8);
    assert_eq!(ix.search_offers("fabia", None, None, 100, at("2027-01-01T00:00:00Z")).unwrap().len(), 3);
    // Filters and the newest-first order without words apply as in `search`.
    let kosice = gazetteer::resolve("Košice").unwrap();
    assert_eq!(ix.search_offers("", Some(&kosice), None, 100, now).unwrap().len(), 4);
    assert!(ix.search_offers("fabia", None, Some("property"), 100, now).unwrap().is_empty());
    assert!(ix.search_offers("fabia", None, None, 0, now).unwrap().is_empty());
    // A withdrawn offer (removed by apply) is gone from the answer at once.
    ix.apply(Vec::new(), Vec::new(), vec!["b1".to_owned()], 2);
    ix.flush().unwrap();
    let got: Vec<Offer> = ix
        .search_offers("fabia", None, None, 100, now)
        .unwrap()
        .iter()
        .map(|j| serde_json::from_str(j).unwrap())
        .collect();
    assert_eq!(got.iter().map(|o| o.id.as_str()).collect::<Vec<_>>(), ["b2", "b3", "b4"]);
}

#[test]
fn valid_until_is_indexed_in_nanoseconds() {
    assert_eq!(valid_until_nanos(None), i64::MAX);
    assert_eq!(valid_until_nanos(Some("not a time")), i64::MIN);
    assert_eq!(valid_until_nanos(Some("1970-01-01T00:00:01.5Z")), 1_500_000_000);
    assert_eq!(valid_until_nanos(Some("9999-12-31T23:59:59Z")), i64::MAX, "saturates");
    assert_eq!(valid_until_nanos(Some("1000-01-01T00:00:00Z")), i64::MIN, "saturates");
}

#[test]
fn an_index_of_the_previous_schema_is_recreated_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    // Even a payload that claims the current analysis and a generation.
    write_version_2_index(&path, 9, true);
    let ix = OfferIndex::open(Some(&path)).unwrap();
    assert_eq!((ix.generation(), ix.num_docs()), (None, 0), "recreated: its owner rebuilds it");
    ix.rebuild(vec![offer("o1", "Škoda Octavia", "", json!({}), "Košice")].into_iter(), 9).unwrap();
    let got = ix.search_offers("octavia", None, None, 10, at("2026-12-01T00:00:00Z")).unwrap();
    assert_eq!(got.len(), 1);
    assert!(got[0].contains("\"title\":\"Škoda Octavia\""), "{got:?}");
}

#[test]
fn candidates_follow_category_area_and_terms() {
    let ix = sample();
    let sk = gazetteer::resolve("SK").unwrap();
    let t = |s: &str| matching::statement_terms(s);
    assert_eq!(ix.candidates_for_intent("vehicles", &sk, &[]).unwrap(), vec!["o1", "o2", "o3", "o4"]);
    assert_eq!(ix.candidates_for_intent("vehicles", &sk, &t("Hľadám Octaviu")).unwrap(), vec!["o1"]);
    // Stop words of the search fields still count here (the text rule of matching keeps them).
    assert_eq!(ix.candidates_for_intent("vehicles", &sk, &t("ako nová")).unwrap(), vec!["o2"]);
    assert!(ix.candidates_for_intent("property", &sk, &[]).unwrap().is_empty());
    let cz = gazetteer::resolve("Jihomoravský kraj").unwrap();
    assert_eq!(ix.candidates_for_intent("vehicles", &cz, &t("skoda")).unwrap(), vec!["o5"]);
}

// ---- generated offers and intents (property test and timing) ----

/// Names that differ in one letter rank their own model first: hyphenated (`C-MAX`,
/// `S-MAX`) and the single-letter classes (`Třídy C`, where `s`, `v`, `a` are also stop
/// words). The wrong model sorts first by id, so equal scores would rank it first.
#[test]
fn one_letter_names_rank_their_model_first() {
    let ix = index_of(vec![
        offer("a1", "Ford S-MAX 2.0 TDCi", "", json!({"make": "ford", "model": "s max"}), "SK"),
        offer("a2", "Ford C-MAX 1.6", "", json!({"make": "ford", "model": "c max"}), "SK"),
        offer("b1", "Mercedes-Benz Třídy S", "", json!({"make": "mercedes benz", "model": "tridy s"}), "SK"),
        offer("b2", "Mercedes-Benz Třídy V", "", json!({"make": "mercedes benz", "model": "tridy v"}), "SK"),
        offer("b3", "Mercedes-Benz Třídy C", "", json!({"make": "mercedes benz", "model": "tridy c"}), "SK"),
    ]);
    assert_eq!(ids(&ix, "Ford C-MAX", None, None)[0], "a2");
    assert_eq!(ids(&ix, "ford s-max", None, None)[0], "a1");
    assert_eq!(ids(&ix, "Hledám Mercedes-Benz Třídy C", None, None)[0], "b3");
    assert_eq!(ids(&ix, "mercedes-benz tridy v", None, None)[0], "b2");
    assert_eq!(ids(&ix, "Mercedes-Benz Třídy S", None, None)[0], "b1");
}

#[test]
fn the_text_field_weighs_title_3_attributes_2_description_1_and_is_padded() {
    let count = |tokens: &[String], t: &str| tokens.iter().filter(|k| *k == t).count();
    let tokens = analysis::text_tokens("Škoda Octavia", &["Škoda", "kombi"], "Octavia, garážovaná");
    assert_eq!(count(&tokens, "~skoda"), 3 + 2, "title 3x, attribute 2x");
    assert_eq!(count(&tokens, "~octavia"), 3 + 1, "title 3x, description 1x");
    assert_eq!(count(&tokens, "~octav"), 3 + 1, "with the stem forms");
    assert_eq!(count(&tokens, "octavia"), 0, "a word with a stem only as its stem forms");
    assert_eq!(count(&tokens, "~combi"), 2, "kombi folds to combi: {tokens:?}");
    // A word without a stem (under 5 characters, or with a digit) is indexed as itself.
    let short = analysis::text_tokens("Audi A4", &[], "");
    assert_eq!((count(&short, "audi"), count(&short, "~audi"), count(&short, "a4")), (3, 3, 3), "{short:?}");
    assert_eq!(tokens.len(), analysis::TEXT_PAD, "padded");
    assert_eq!(tokens.last().map(String::as_str), Some("~"));
    let long = "Octavia garážovaná ".repeat(60);
    let tokens = analysis::text_tokens("", &[], &long);
    assert_eq!(count(&tokens, "~garazovana"), 60, "the description once: {}", tokens.len());
    assert!(tokens.len() > analysis::TEXT_PAD && !tokens.contains(&"~".to_owned()), "a longer text is not padded");
    // The section separator inside a text gives the same tokens as a space.
    assert_eq!(analysis::text_tokens("Škoda\u{1}Octavia", &[], ""), analysis::text_tokens("Škoda Octavia", &[], ""));
}

#[test]
fn stem_forms_are_the_prefixes_of_4_to_m_characters_and_at_most_5_shorter() {
    let lens = |t: &str| analysis::stem_prefixes(t).map(|p| p.chars().count()).collect::<Vec<_>>();
    assert_eq!(lens("abc"), Vec::<usize>::new(), "under 4 characters: none");
    assert_eq!(lens("audi"), vec![4]);
    assert_eq!(lens("octavia"), vec![4, 5, 6, 7]);
    assert_eq!(lens("garážová"), vec![4, 5, 6, 7, 8], "characters, not bytes");
    assert_eq!(lens("garážovaný"), vec![5, 6, 7, 8, 9, 10], "4 only up to 8 characters");
    assert_eq!(lens("elektromobilu"), vec![8, 9, 10, 11, 12, 13]);
    assert_eq!(lens("x5"), Vec::<usize>::new());
    assert_eq!(lens("octavia2"), Vec::<usize>::new(), "a digit: no stem");
    assert_eq!(lens("c_max"), Vec::<usize>::new(), "a phrase: no stem");
    assert_eq!(analysis::stem_prefixes("garážová").next(), Some("gará"));
}
