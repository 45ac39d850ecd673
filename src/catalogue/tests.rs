use super::*;
use crate::base::Base;
use crate::catalogue::Catalogue;
use crate::clock::SystemClock;
use crate::config::Settings;
use crate::crypto::KeyRing;
use crate::gazetteer;
use crate::protocol::Offer;
use crate::store::Store;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn cur() -> Vec<String> {
    vec!["EUR".into(), "CZK".into()]
}

fn good() -> Value {
    json!({
        "ref": "A-17",
        "title": "  Škoda Octavia\n 2.0 TDI ",
        "description": "Servisná knižka, 1. majiteľ",
        "category": "vehicles",
        "attributes": {"make": "Škoda", "model": "Octavia", "year": "2018", "mileageKm": 154000},
        "price": {"amount": 12900, "currency": "eur"},
        "area": "Košice",
        "seller": {"name": "Auto Kováč", "url": "https://auto.example"},
        "url": "https://auto.example/a-17",
        "validUntil": "2027-01-31"
    })
}

fn with(mut v: Value, key: &str, val: Value) -> Value {
    let m = v.as_object_mut().unwrap();
    if val.is_null() {
        m.remove(key);
    } else {
        m.insert(key.into(), val);
    }
    v
}

fn bad(v: Value) -> String {
    parse_json_row(&v, &cur()).unwrap_err().0
}

#[test]
fn good_json_row() {
    let o = parse_json_row(&good(), &cur()).unwrap();
    assert_eq!(o.reference.as_deref(), Some("A-17"));
    assert_eq!(o.title, "Škoda Octavia 2.0 TDI");
    assert_eq!(o.category, "vehicles");
    assert_eq!(o.attributes["year"], json!(2018), "numeric string of a number attribute becomes a number");
    assert_eq!(o.price.currency, "EUR");
    assert_eq!((o.area.country.as_str(), o.area.regions.clone()), ("SK", vec!["SK-KI".to_owned()]));
    assert_eq!(o.seller_name, "Auto Kováč");
    assert_eq!(o.valid_until.as_deref(), Some("2027-01-31T23:59:59Z"));
    // Country-only areas are accepted; minimal rows too.
    let min = json!({"title": "Byt", "category": "property", "price": {"amount": 1, "currency": "CZK"},
                     "area": "CZ", "seller": {"name": "RK"}});
    let o = parse_json_row(&min, &cur()).unwrap();
    assert!(o.area.regions.is_empty() && o.reference.is_none() && o.attributes.is_empty());
}

/// Control characters (a terminal's escape sequences, NUL, BEL) and bidirectional
/// overrides cannot make a title, ref, seller name or description show other than it
/// reads: they are removed (real feeds carry stray U+202A–U+202D), and a title or seller
/// name of nothing else is refused, naming the field.
#[test]
fn hidden_characters_are_removed_and_a_title_of_nothing_else_is_refused() {
    let mut v = with(good(), "title", json!("Škoda\u{1b}[31m Octavia\u{202e}ATD\u{0}\u{7}  \u{2066}combi"));
    v = with(v, "ref", json!("A-\u{202d}17\u{85}"));
    v = with(v, "description", json!("Servis\u{1b}[2J\n1. majiteľ\t\u{202a}ok\u{202c}\r\n"));
    v = with(v, "seller", json!({"name": "Auto\u{9b} Kováč\u{2069}"}));
    let o = parse_json_row(&v, &cur()).unwrap();
    assert_eq!(o.title, "Škoda[31m OctaviaATD combi");
    assert_eq!(o.reference.as_deref(), Some("A-17"));
    assert_eq!(o.description, "Servis[2J\n1. majiteľ\tok");
    assert_eq!(o.seller_name, "Auto Kováč");
    assert!(bad(with(good(), "title", json!("\u{202e}\u{1b}"))).starts_with("title must have a visible character"));
    let e = bad(with(good(), "seller", json!({"name": "\u{0}"})));
    assert!(e.starts_with("seller.name must have a visible character"), "{e}");
}

#[test]
fn bad_json_rows_name_the_field() {
    let cases = [
        (with(good(), "title", Value::Null), "title is required"),
        (with(good(), "title", json!("x".repeat(301))), "title must be at most 300"),
        (with(good(), "description", json!("x".repeat(10_001))), "description must be at most"),
        (with(good(), "category", json!("boats")), "category must be one of"),
        (with(good(), "category", Value::Null), "category is required"),
        (with(good(), "attributes", json!({"wings": 2})), "attributes.wings"),
        (with(good(), "attributes", json!({"year": "new"})), "attributes.year must be a number"),
        (with(good(), "price", Value::Null), "price is required"),
        (with(good(), "price", json!({"amount": 5})), "price.currency is required"),
        (with(good(), "price", json!({"amount": -5, "currency": "EUR"})), "price.amount"),
        (with(good(), "price", json!({"amount": 5, "currency": "USD"})), "price.currency"),
        (with(good(), "area", Value::Null), "area is required"),
        (with(good(), "area", json!("Atlantis")), "area: unknown place"),
        (
            with(good(), "area", json!({"country": "SK", "regions": ["SK-KI", "SK-BL"]})),
            "area must be the offer's location",
        ),
        (with(good(), "seller", Value::Null), "seller is required"),
        (with(good(), "seller", json!({"url": "https://a.example"})), "seller.name is required"),
        (with(good(), "seller", json!({"name": "A", "phone": "1"})), "seller.phone is not a known property"),
        (with(good(), "seller", json!("Auto")), "seller must be an object"),
        (with(good(), "url", json!("ftp://a.example/x")), "url must be an http or https URL"),
        (with(good(), "url", json!("https://")), "url must be an http or https URL"),
        (with(good(), "url", json!(format!("https://a.example/{}", "x".repeat(2000)))), "url must be"),
        (with(good(), "ref", json!("")), "ref must not be empty"),
        (with(good(), "validUntil", json!("soon")), "validUntil must be an RFC 3339"),
        (with(good(), "colour", json!("red")), "colour is not a known property"),
        (with(good(), "id", json!("off_x")), "assigned by the holder"),
        (json!([1, 2]), "a row must be a JSON object"),
    ];
    for (row, want) in cases {
        let got = bad(row);
        assert!(got.contains(want), "want {want:?}, got {got:?}");
    }
}

#[test]
fn numbers_in_feeds() {
    assert_eq!(parse_number_text(" 154 000 "), Some(154_000.0));
    assert_eq!(parse_number_text("1,9"), Some(1.9));
    assert_eq!(parse_number_text("12.5"), Some(12.5));
    assert_eq!(parse_number_text("150,000"), None);
    assert_eq!(parse_number_text("2018a"), None);
    assert_eq!(parse_number_text(""), None);
}

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

#[test]
fn jsonl_rows_with_line_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let good_line = good().to_string();
    let no_currency = with(good(), "price", json!({"amount": 1})).to_string();
    let body = format!("{good_line}\n\n   \n{no_currency}\n{{not json\r\n{good_line}\r\n[1]\n");
    let p = write(dir.path(), "feed.jsonl", &body);
    let mut r = read_file(&p, &cur()).unwrap();
    assert_eq!(r.format(), Format::Jsonl);
    let rows: Vec<_> = r.by_ref().collect();
    r.finish().unwrap();
    assert_eq!(rows.len(), 5, "blank lines are skipped");
    assert!(rows[0].is_ok() && rows[3].is_ok());
    let errs: Vec<(u64, String)> =
        rows.iter().filter_map(|r| r.as_ref().err()).map(|e| (e.line, e.message.clone())).collect();
    assert_eq!(errs[0].0, 4);
    assert!(errs[0].1.contains("price.currency"), "{errs:?}");
    assert_eq!(errs[1].0, 5);
    assert!(errs[1].1.starts_with("not valid JSON at column"), "{errs:?}");
    assert_eq!(errs[2].0, 7);
    assert!(errs[2].1.contains("must be a JSON object"), "{errs:?}");
    assert_eq!(RowError { line: 4, message: "x".into() }.to_string(), "line 4: x");
}

#[test]
fn json_array_and_sniffing() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "feed.json", "[{\"title\": \"x\"}]");
    let e = read_file(&p, &cur()).unwrap_err().to_string();
    assert!(e.contains("JSON Lines"), "{e}");
    // No extension: `{` means JSON Lines, anything else CSV.
    let p = write(dir.path(), "feed", &format!("\u{feff}{}\n", good()));
    let mut r = read_file(&p, &cur()).unwrap();
    assert_eq!(r.format(), Format::Jsonl);
    assert!(r.next().unwrap().is_ok(), "a byte order mark is skipped");
    let p = write(dir.path(), "feed.txt", "title,category,price.amount,price.currency,area,seller.name\n");
    assert_eq!(read_file(&p, &cur()).unwrap().format(), Format::Csv);
    let e = read_file(&dir.path().join("missing.csv"), &cur()).unwrap_err();
    assert!(
        matches!(&e, CatalogueError::Io { path, source } if path.ends_with("missing.csv") && source.kind() == std::io::ErrorKind::NotFound),
        "{e}"
    );
}

const HEADER: &str = "ref,title,description,category,price.amount,price.currency,area,area.place,seller.name,seller.url,url,validUntil,attr.make,attr.year,attr.mileageKm";

#[test]
fn csv_rows_share_the_validator() {
    let dir = tempfile::tempdir().unwrap();
    let body = format!(
        "\u{feff}{HEADER}\n\
         A1,Škoda Octavia,\"Pekné auto,\nnová STK\",vehicles,12 900,EUR,Košice,Staré Mesto,Auto Kováč,https://auto.example,,,Škoda,2018,154 000\n\
         A2,Fabia,,vehicles,5000,,SK-BL,,Auto Kováč,,,,Škoda,2012,\n\
         \n\
         A3,Fabia,,vehicles,5000,EUR,SK-BL,,Auto Kováč,,,,Škoda,old,\n\
         A4,Fabia,,vehicles,5000,EUR,,Petržalka,Auto Kováč,,,,Škoda,,\n\
         A5,Fabia,,vehicles\n\
         A6,Byt 2+kk,,vehicles,4000000,CZK,Brno,,RK,,,2027-01-01T00:00:00Z,,,\n"
    );
    check_csv(&write(dir.path(), "feed.csv", &body));
    check_csv(&write(dir.path(), "crlf.csv", &body.replace('\n', "\r\n")));
    check_csv(&write(dir.path(), "nofinal.csv", body.trim_end()));
}

fn check_csv(p: &Path) {
    let mut r = read_file(p, &cur()).unwrap();
    assert_eq!(r.format(), Format::Csv);
    let first = r.next_raw().unwrap().unwrap();
    assert_eq!(first.line, 2);
    assert_eq!(first.value["price"], json!({"amount": 12900, "currency": "EUR"}));
    assert_eq!(first.value["attributes"], json!({"make": "Škoda", "year": 2018, "mileageKm": 154000}));
    assert_eq!(first.value["area"], json!({"country": "SK", "regions": ["Košice"], "place": "Staré Mesto"}));
    let o = parse_json_row(&first.value, &cur()).unwrap();
    assert_eq!(o.area.regions, vec!["SK-KI"]);
    assert_eq!(o.area.place.as_deref(), Some("Staré Mesto"));
    assert_eq!(o.description, "Pekné auto,\nnová STK");
    let rest: Vec<_> = r.by_ref().collect();
    r.finish().unwrap();
    let lines: Vec<(u64, String)> = rest
        .iter()
        .map(|x| match x {
            Ok(o) => (0, o.reference.clone().unwrap_or_default()),
            Err(e) => (e.line, e.message.clone()),
        })
        .collect();
    assert_eq!(lines.len(), 5, "{lines:?}");
    assert_eq!(lines[0].0, 4, "the first record spans lines 2-3");
    assert!(lines[0].1.contains("price.currency is required"), "{lines:?}");
    assert_eq!(lines[1].0, 6);
    assert!(lines[1].1.contains("attributes.year must be a number"), "{lines:?}");
    assert_eq!(lines[2].0, 7);
    assert!(lines[2].1.contains("area is required"), "{lines:?}");
    assert_eq!(lines[3].0, 8);
    assert!(lines[3].1.contains("fields; the header has 15"), "{lines:?}");
    assert_eq!(lines[4], (0, "A6".to_owned()), "an empty attr cell is absent");
}

#[test]
fn csv_header_problems_fail_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "a.csv",
        "title,category,price.amount,price.currency,area,seller.name,colour,attr.wings,title\n",
    );
    let e = read_file(&p, &cur()).unwrap_err().to_string();
    assert!(e.contains("header line: unknown columns colour, attr.wings"), "{e}");
    assert!(e.contains("duplicate columns title"), "{e}");
    let p = write(dir.path(), "b.csv", "title;category\nx;vehicles\n");
    let e = read_file(&p, &cur()).unwrap_err().to_string();
    assert!(e.contains("missing required columns price.amount, price.currency, area, seller.name"), "{e}");
    let p = write(dir.path(), "c.csv", "");
    assert!(read_file(&p, &cur()).unwrap_err().to_string().contains("header line"));
}

#[test]
fn csv_semicolons_and_an_unbalanced_quote() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "semi.csv",
        "title;category;price.amount;price.currency;area;seller.name\nFabia;vehicles;4 500,50;EUR;Žilina;A\n",
    );
    let rows: Vec<_> = read_file(&p, &cur()).unwrap().collect();
    assert_eq!(rows[0].as_ref().unwrap().price.amount, 4500.5);
    // An unbalanced quote would swallow the rest of the file: refused past 1 MiB.
    let mut body = String::from("title,category,price.amount,price.currency,area,seller.name\n\"Fabia,vehicles\n");
    let filler = "x".repeat(1000);
    while body.len() < 3 * MAX_LINE_BYTES {
        body.push_str(&filler);
        body.push('\n');
    }
    let p = write(dir.path(), "quote.csv", &body);
    let mut r = read_file(&p, &cur()).unwrap();
    assert_eq!(r.by_ref().count(), 0, "the quote swallows every row");
    let e = r.finish().unwrap_err().to_string();
    assert!(e.contains("longer than 1 MiB"), "{e}");
}

#[test]
fn jsonl_long_line_is_one_bad_row() {
    let dir = tempfile::tempdir().unwrap();
    let long = format!("{{\"title\": \"{}\"}}", "x".repeat(MAX_LINE_BYTES + 10));
    let p = write(dir.path(), "long.jsonl", &format!("{long}\n{}\n", good()));
    let rows: Vec<_> = read_file(&p, &cur()).unwrap().collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].as_ref().unwrap_err().line, 1);
    assert!(rows[0].as_ref().unwrap_err().message.contains("longer than 1 MiB"));
    assert!(rows[1].is_ok());
}

fn holder(dir: &Path) -> Catalogue {
    let mut s = Settings::defaults();
    s.data_dir = dir.to_owned();
    let store = Store::open(&s.store_path()).unwrap();
    Catalogue::new(Arc::new(Base::new(s, Arc::new(store), Arc::new(KeyRing::ephemeral()), Arc::new(SystemClock))), None)
}

fn offer(reference: &str, title: &str, description: &str, make: &str, price: f64, area: &str) -> OfferInput {
    parse_json_row(
        &json!({"ref": reference, "title": title, "description": description, "category": "vehicles",
                "attributes": {"make": make}, "price": {"amount": price, "currency": "EUR"},
                "area": area, "seller": {"name": "Auto Kováč"}}),
        &cur(),
    )
    .unwrap()
}

#[test]
fn search_folds_filters_and_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let h = holder(dir.path());
    let rows = vec![
        offer("1", "Škoda Octavia Combi", "", "Škoda", 9000.0, "Košice"),
        offer("2", "Volkswagen Passat", "lepšie ako Škoda", "Volkswagen", 8000.0, "Bratislava"),
        offer("3", "Škoda Fabia", "", "Škoda", 5000.0, "Bratislava"),
        offer("4", "Toyota Corolla", "", "Toyota", 7000.0, "Košice"),
        offer("5", "Sedan", "", "Škoda", 4000.0, "Žilina"),
    ];
    h.import_offers(rows).unwrap();
    let index = h.offer_index().unwrap();
    let search = |q: &str, area, category, limit| search_with(&index, &h.base, q, area, category, limit);
    let refs =
        |v: Vec<Offer>| v.into_iter().map(|o| o.extensions["ref"].as_str().unwrap().to_owned()).collect::<Vec<_>>();

    // "skoda" finds "Škoda": title + attribute (5) beats attribute only (2) beats
    // description only (1); equal scores go by price.
    let got = refs(search("skoda", None, None, 10).unwrap());
    assert_eq!(got, vec!["3", "1", "5", "2"]);
    // Inflection: "octaviu" finds "Octavia".
    assert_eq!(refs(search("ŠKODU OCTAVIU", None, None, 10).unwrap())[0], "1");
    // "kosice" is a place name, not a term: with the area filter it finds what lies in Košice.
    let kosice = gazetteer::resolve("Košice").unwrap();
    assert_eq!(refs(search("kosice", Some(&kosice), None, 10).unwrap()), vec!["4", "1"]);
    assert_eq!(refs(search("skoda", Some(&kosice), None, 10).unwrap()), vec!["1"]);
    // Category and limit.
    assert!(search("skoda", None, Some("property"), 10).unwrap().is_empty());
    assert_eq!(search("skoda", None, Some("vehicles"), 2).unwrap().len(), 2);
    assert!(search("zzz", None, None, 10).unwrap().is_empty());
    assert!(search("skoda", None, None, 0).unwrap().is_empty());
}

#[test]
fn search_ranks_title_above_description() {
    let dir = tempfile::tempdir().unwrap();
    let h = holder(dir.path());
    h.import_offers(vec![
        offer("d", "Combi", "Superb v top stave", "Škoda", 1000.0, "SK"),
        offer("t", "Superb", "", "Škoda", 20000.0, "SK"),
    ])
    .unwrap();
    let index = h.offer_index().unwrap();
    let got = search_with(&index, &h.base, "superb", None, None, 10).unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].title, "Superb", "a title hit outranks a cheaper description hit");
    assert_eq!(score(&matching_terms("superb"), &got[0]), 3);
    assert_eq!(score(&matching_terms("superb"), &got[1]), 1);
}

fn matching_terms(s: &str) -> Vec<String> {
    crate::matching::statement_terms(s)
}

/// Relevance of `offer` for the statement terms `terms` (from
/// [`crate::matching::statement_terms`]): 3 per term found in the title, 2 per term found
/// in an attribute value, 1 per term found in the description (each with inflection, see
/// [`crate::matching::term_hit`]).
fn score(terms: &[String], offer: &Offer) -> u32 {
    let hits = |text: &str| {
        let set: std::collections::HashSet<String> = crate::matching::text_terms(text).collect();
        terms.iter().filter(|t| crate::matching::term_hit(t, &set)).count() as u32
    };
    let values = offer.attributes.values().filter_map(Value::as_str).collect::<Vec<_>>().join(" ");
    3 * hits(&offer.title) + 2 * hits(&values) + hits(&offer.description)
}

#[test]
fn invalid_utf8_is_one_bad_row() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("latin2.csv");
    let mut body = b"title,category,price.amount,price.currency,area,seller.name\n".to_vec();
    body.extend_from_slice(b"Fabia,vehicles,5000,EUR,Ko\xB9ice,A\nFabia,vehicles,5000,EUR,SK-KI,A\n");
    std::fs::write(&p, body).unwrap();
    let rows: Vec<_> = read_file(&p, &cur()).unwrap().collect();
    assert_eq!(rows[0].as_ref().unwrap_err(), &RowError { line: 2, message: "area is not valid UTF-8".into() });
    assert!(rows[1].is_ok());
    let p = dir.path().join("latin2.jsonl");
    let mut body = b"{\"title\": \"\xB9\"}\n".to_vec();
    body.extend_from_slice(good().to_string().as_bytes());
    std::fs::write(&p, body).unwrap();
    let rows: Vec<_> = read_file(&p, &cur()).unwrap().collect();
    assert_eq!(rows[0].as_ref().unwrap_err().message, "the line is not valid UTF-8");
    assert!(rows[1].is_ok(), "a last line without a newline is read");
}

#[test]
fn index_status_answers_at_once_while_another_thread_opens_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let h = Arc::new(holder(dir.path()));
    h.import_offers(vec![offer("1", "Škoda Octavia", "", "Škoda", 9000.0, "Košice")]).unwrap();
    // As while `isto serve`'s start-up task opens and rebuilds the index: the slot is
    // held and `opening` set.
    let slot = h.index.lock().unwrap();
    h.opening.store(true, std::sync::atomic::Ordering::Release);
    let (tx, rx) = std::sync::mpsc::channel();
    let h2 = h.clone();
    std::thread::spawn(move || tx.send(h2.index_status().unwrap()).unwrap());
    let st = rx.recv_timeout(std::time::Duration::from_secs(10)).expect("index_status waited for the opening");
    assert!(st.opening && !st.in_step && !st.updating, "{st:?}");
    assert_eq!((st.index_generation, st.store_generation, st.offers), (None, 1, 0));
    h.opening.store(false, std::sync::atomic::Ordering::Release);
    drop(slot);
    // Opened (by this call, as the first search would): in step.
    let st = h.index_status().unwrap();
    assert!(st.in_step && !st.opening, "{st:?}");
    assert_eq!((st.index_generation, st.store_generation, st.offers), (Some(1), 1, 1));
    assert!(!h.opening.load(std::sync::atomic::Ordering::Acquire));
}

#[test]
fn index_status_is_in_step_after_imports_and_reports_a_lag() {
    let dir = tempfile::tempdir().unwrap();
    let h = holder(dir.path());
    let st = h.index_status().unwrap();
    assert!(st.in_step && !st.updating, "{st:?}");
    assert_eq!((st.index_generation, st.store_generation, st.offers), (Some(0), 0, 0));
    h.import_offers(vec![offer("1", "Škoda Octavia", "", "Škoda", 9000.0, "Košice")]).unwrap();
    let st = h.index_status().unwrap();
    assert!(st.in_step, "{st:?}");
    assert_eq!((st.index_generation, st.store_generation, st.offers), (Some(1), 1, 1));
    // A catalogue change the index never saw (its update failed): out of step.
    h.base.store().write(|tx| tx.bump_offers_generation()).unwrap();
    let st = h.index_status().unwrap();
    assert!(!st.in_step && !st.updating, "{st:?}");
    assert_eq!((st.index_generation, st.store_generation), (Some(1), 2));
}

/// An intent that becomes active while a seller's import runs gets every offer of the
/// batches committed before its own write: the batch's matching ran before it was
/// active, so the index must have them when its candidates are read (found in review:
/// a batch handed its offers to the index only after the intent-write lock was free).
#[test]
fn an_intent_made_active_during_an_import_gets_every_offer_committed_before_it() {
    use crate::store::Reads as _;
    let dir = tempfile::tempdir().unwrap();
    let h = Arc::new(holder(dir.path()));
    let row = |i: usize| offer(&format!("r{i}"), "Škoda Octavia combi", "", "Škoda", 9000.0, "Bratislava");
    h.import_offers(vec![row(0)]).unwrap();
    let importer = {
        let h = Arc::clone(&h);
        std::thread::spawn(move || {
            for i in 1..=40 {
                h.import_offers_run(vec![row(i)], None).unwrap();
            }
        })
    };
    let mut rounds = 0;
    while rounds == 0 || !importer.is_finished() {
        rounds += 1;
        let mut rec = crate::base::tests::active(&format!("int_{rounds}"));
        let started = std::time::Instant::now();
        let (stored, delivered) = h
            .base
            .write(|tx| -> crate::base::Result<(usize, u64)> {
                let stored = tx.all_offers::<crate::records::OfferRecord>()?.len();
                Ok((stored, h.match_catalogue_tx(tx, &mut rec, h.base.now())?))
            })
            .unwrap();
        assert_eq!(delivered, stored as u64, "round {rounds}: each stored offer is delivered");
        assert!(started.elapsed() < std::time::Duration::from_secs(1), "round {rounds}: {:?}", started.elapsed());
    }
    importer.join().unwrap();
}
