//! Calls whose cost one client chooses: the costliest catalogue search, demand call and
//! seller's open-intents page a client can craft cost at most 20 times a typical search,
//! in CPU time of the calling thread (`CLOCK_THREAD_CPUTIME_ID`, ns), measured in the
//! same run (a ratio, so it holds in debug builds and on a busy machine).
//!
//! At the scale where the costs were found: the catalogue is the real listings of
//! `../shared/data` (as `relevance.rs`, or `ISTO_SHARED_DATA`) plus generated variants
//! of each (another reference, a title with one more word) up to at least 32 000 offers,
//! imported through `import_offers`; 20 000 active intents are written straight through
//! `Base::write`, as the flows write them. The test is skipped (with a message) when the
//! listings are absent.

use crate::kit::{Fx, Opts};
use isto::base::Base;
use isto::protocol::{Status, Visibility};
use isto::records::IntentRecord;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// The bound of the issue: no call may cost more than this many typical searches.
const MAX_RATIO: f64 = 20.0;
/// Active intents in the store (the demand scan's size).
const INTENTS: usize = 20_000;
/// Offers in the catalogue, at least (the real listings and their variants).
const OFFERS: usize = 32_000;

/// CPU time of the calling thread spent in `f`.
fn cpu<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let a = isto::clock::thread_cpu();
    let out = f();
    (isto::clock::thread_cpu().saturating_sub(a), out)
}

/// The catalogue rows with generated variants of each (a new `ref`, one more title
/// word) until there are at least [`OFFERS`].
fn with_variants(catalogue: &str) -> Vec<Value> {
    let rows: Vec<Value> = catalogue.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let words = ["metalíza", "garážované", "servisná knižka", "po STK", "ťažné zariadenie", "klimatizácia"];
    let mut out = rows.clone();
    for (v, word) in words.iter().enumerate() {
        if out.len() >= OFFERS {
            break;
        }
        for row in &rows {
            let mut r = row.clone();
            let reference = format!("{}-v{v}", r["ref"].as_str().unwrap());
            let title = format!("{} {word}", r["title"].as_str().unwrap_or_default());
            r["ref"] = json!(reference);
            r["title"] = json!(title);
            out.push(r);
        }
    }
    out
}

fn call(f: &Fx, tool: &str, args: Value) -> (Duration, Value) {
    let (t, r) = cpu(|| crate::kit::mcp_call(&f.holder, tool, &args).expect("known tool"));
    let v = serde_json::to_value(&r).unwrap();
    assert_ne!(v["isError"], json!(true), "{tool} {args}: {v}");
    (t, v["structuredContent"].clone())
}

/// Active intent `i`, made a minute after `start` for each `i` (intents change one at a
/// time).
fn intent(i: usize, pseudonymous: bool, start: time::OffsetDateTime) -> IntentRecord {
    let regions = ["SK-BL", "SK-KI", "SK-ZI", "CZ-10", "CZ-64"];
    let at = isto::records::Stamp::of(start + time::Duration::minutes(i as i64));
    let content = isto::records::IntentContent {
        statement: "Hľadám Škodu Octaviu combi diesel".into(),
        category: "vehicles".into(),
        criteria: Map::new(),
        area: serde_json::from_value(json!({"country": &regions[i % 5][..2], "regions": [regions[i % 5]]})).unwrap(),
        budget: serde_json::from_value(json!({"max": 5000 + (i % 7) * 4000, "currency": "EUR"})).unwrap(),
        buy_by: None,
        valid_until: isto::records::Stamp::parse("2027-06-01T00:00:00Z").unwrap(),
        visibility: if pseudonymous { Visibility::Pseudonymous } else { Visibility::default() },
        language: "sk".into(),
    };
    IntentRecord {
        status: Status::Active,
        confirmed_at: Some(at),
        person: Some(format!("per_cost{i}")),
        ..IntentRecord::draft(format!("int_cost{i:06}"), content, at, at)
    }
}

/// Writes intents `range`, dated from 17.5 days ago: their ages, and so what a demand
/// summary counts, do not move with the day the test runs on.
fn write_intents(base: &Base, range: std::ops::Range<usize>) {
    let start = isto::clock::Clock::now(&isto::clock::SystemClock) - time::Duration::hours(17 * 24 + 12);
    base.write(|w| -> Result<(), isto::base::ServiceError> {
        for i in range {
            w.put_intent(&intent(i, i % 2 == 0, start), true)?;
        }
        Ok(())
    })
    .unwrap();
}

/// The crafted statement: the most frequent 4-character stems of the catalogue's title
/// words, each with case endings, as long as a statement may be.
fn crafted(catalogue: &str, round: usize) -> String {
    let mut per_stem: HashMap<String, usize> = HashMap::new();
    for line in catalogue.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        for w in isto::matching::text_terms(v["title"].as_str().unwrap_or_default()) {
            if w.chars().count() >= 6 && w.chars().all(char::is_alphabetic) {
                *per_stem.entry(w.chars().take(4).collect()).or_default() += 1;
            }
        }
    }
    let mut stems: Vec<(String, usize)> = per_stem.into_iter().collect();
    stems.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let endings = ["a", "u", "y", "e", "ou", "om", "ami", "ach", "ov", "ej", "i", "o"];
    let mut s = String::new();
    'fill: for e in endings.iter().cycle().skip(round) {
        for (stem, _) in &stems {
            let w = format!("{stem}{e} ");
            if s.len() + w.len() > isto::protocol::input::STATEMENT_MAX {
                break 'fill;
            }
            s.push_str(&w);
        }
    }
    s
}

#[test]
fn no_search_or_demand_call_costs_more_than_20_typical_searches() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    // ISTO_SHARED_DATA names the listings when this checkout has no ../shared beside it.
    let data = std::env::var_os("ISTO_SHARED_DATA").map_or_else(|| root.join("../shared/data"), PathBuf::from);
    if !data.is_dir() {
        eprintln!("SKIPPED: {} is absent (the real listings); the cost test needs it", data.display());
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let gen = Command::new("python3")
        .arg(root.join("tests/relevance/make_queries.py"))
        .arg(&data)
        .arg(out.path())
        .output()
        .expect("python3 runs tests/relevance/make_queries.py");
    assert!(gen.status.success(), "make_queries.py failed: {}", String::from_utf8_lossy(&gen.stderr));
    let f = Fx::with(Opts::default());
    let h = &f.holder;
    let currencies = vec!["EUR".to_owned(), "CZK".to_owned()];
    let catalogue = std::fs::read_to_string(out.path().join("catalogue.jsonl")).unwrap();
    let rows: Vec<_> =
        with_variants(&catalogue).iter().map(|v| isto::catalogue::parse_json_row(v, &currencies).unwrap()).collect();
    assert!(rows.len() >= OFFERS, "{} offers", rows.len());
    for batch in rows.chunks(2000) {
        h.catalogue.import_offers(batch.to_vec()).unwrap();
    }
    write_intents(&h.base, 0..INTENTS);

    // A typical search: the median of the judged queries (each asked twice: warm).
    let statements: Vec<String> = std::fs::read_to_string(out.path().join("queries.jsonl"))
        .unwrap()
        .lines()
        .take(40)
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["statement"].as_str().unwrap().to_owned())
        .collect();
    for s in &statements {
        call(&f, "intent_search_offers", json!({"statement": s}));
    }
    // The median of the judged queries, warm: taken again right before each costly call,
    // so that both run under the same load (the suite runs tests side by side on few
    // cores, and a load that changes between the two would move their ratio).
    let typical_now = || {
        let mut t: Vec<Duration> =
            statements.iter().map(|s| call(&f, "intent_search_offers", json!({"statement": s})).0).collect();
        t.sort();
        t[t.len() / 2]
    };
    let typical = typical_now();
    // A call's cost beside the typical search measured right before it, as a ratio.
    let ratio = |(d, t): (Duration, Duration)| d.as_secs_f64() / t.as_secs_f64().max(1e-6);
    // Keeps the costliest call seen (by its ratio).
    let worst = |seen: &mut (Duration, Duration), cost: Duration, typical: Duration| {
        if ratio((cost, typical)) > ratio(*seen) {
            *seen = (cost, typical);
        }
    };

    // The crafted search, each round with other endings (nothing cached for it).
    let mut worst_search = (Duration::ZERO, typical);
    for round in 0..3 {
        let s = crafted(&catalogue, round);
        let near = typical_now();
        let (t, out) = call(&f, "intent_search_offers", json!({"statement": s, "limit": 100}));
        assert!(!out["offers"].as_array().unwrap().is_empty());
        worst(&mut worst_search, t, near);
    }

    // Demand: the first call after a change of the active set counts the grid; the
    // next ones read it.
    let ask =
        json!({"category": "vehicles", "cell": {"area": "SK-BL", "budgetBand": "5000-10000", "buyByBand": "none"}});
    let mut worst_demand = (Duration::ZERO, typical);
    for round in 0..3 {
        write_intents(&h.base, INTENTS + round..INTENTS + round + 1);
        let near = typical_now();
        let (first, out) = call(&f, "intent_demand_summary", ask.clone());
        assert!(out["activeIntents"].as_u64().unwrap() > 100, "{out}");
        let (again, _) = call(&f, "intent_demand_summary", ask.clone());
        worst(&mut worst_demand, first, near);
        worst(&mut worst_demand, again, near);
    }

    // A seller's open intents: every pseudonymous intent is open to it.
    let profile = isto::sellers::SellerProfile {
        account_id: "acc_cost".into(),
        seller_id: "sel_cost".into(),
        name: "Cost".into(),
        url: None,
        categories: Vec::new(),
        regions: Vec::new(),
        created_at: isto::records::Stamp::parse("2026-11-01T00:00:00Z").unwrap(),
    };
    let q = isto::sellers::parse_open_query(&json!({"limit": 100})).unwrap();
    let near = typical_now();
    let (open, page) = cpu(|| isto::sellers::open_intents(&h.base, &profile, &q).unwrap());
    let open = (open, near);
    assert!(page.intents.len() >= 100, "{}", page.intents.len());

    eprintln!(
        "typical search {typical:?}; (cost, typical search beside it): crafted search {worst_search:?} ({:.1}×); \
         demand {worst_demand:?} ({:.1}×); open intents {open:?} ({:.1}×); {INTENTS} active intents, {} offers",
        ratio(worst_search),
        ratio(worst_demand),
        ratio(open),
        rows.len()
    );
    assert!(
        ratio(worst_search) <= MAX_RATIO,
        "crafted search {:?} vs the typical search beside it {:?}",
        worst_search.0,
        worst_search.1
    );
    assert!(
        ratio(worst_demand) <= MAX_RATIO,
        "demand summary {:?} vs the typical search beside it {:?}",
        worst_demand.0,
        worst_demand.1
    );
    assert!(ratio(open) <= MAX_RATIO, "open intents {:?} vs the typical search beside it {:?}", open.0, open.1);
}
