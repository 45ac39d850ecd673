//! Search relevance on the real listings: the judged query set of
//! `tests/relevance/make_queries.py` (queries and their right answers computed from the
//! structured columns of `../shared/data`, never from the engine) is run through the
//! catalogue search of `intent_search_offers` over a real redb file and the tantivy
//! index, and scored with precision@3 and nDCG@10 per query class.
//!
//! Targets: precision@3 ≥ 0.95 on the make/model queries, and no vehicle query whose top
//! hit has the wrong model when a listing with the right model exists. The data is read
//! at test time only; the test is skipped (with a message) when `../shared/data` is
//! absent.

use crate::kit::{Fx, Opts};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

/// The make/model precision@3 target.
const P3_TARGET: f64 = 0.95;

/// One judged query of `queries.jsonl`.
struct Judged {
    id: String,
    class: String,
    statement: String,
    relevant: HashSet<String>,
    models: HashSet<String>,
}

fn strings(v: &Value) -> HashSet<String> {
    v.as_array().map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect()).unwrap_or_default()
}

/// precision@3 (hits in the top 3 over min(3, right answers)) and binary nDCG@10.
fn metrics(ranked: &[String], relevant: &HashSet<String>) -> (f64, f64) {
    let top3 = ranked.iter().take(3).filter(|r| relevant.contains(*r)).count();
    let p3 = top3 as f64 / relevant.len().clamp(1, 3) as f64;
    let dcg: f64 = ranked
        .iter()
        .take(10)
        .enumerate()
        .filter(|(_, r)| relevant.contains(*r))
        .map(|(i, _)| 1.0 / ((i + 2) as f64).log2())
        .sum();
    let ideal: f64 = (0..relevant.len().min(10)).map(|i| 1.0 / ((i + 2) as f64).log2()).sum();
    (p3, if ideal > 0.0 { dcg / ideal } else { 0.0 })
}

#[test]
fn judged_queries_meet_the_relevance_targets() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    // ISTO_SHARED_DATA names the listings when this checkout has no ../shared beside it.
    let data = std::env::var_os("ISTO_SHARED_DATA").map_or_else(|| root.join("../shared/data"), PathBuf::from);
    if !data.is_dir() {
        crate::kit::prerequisite_missing(&format!(
            "{} is absent (the real listings); the relevance evaluation needs it",
            data.display()
        ));
        return;
    }
    let started = Instant::now();
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
    let rows: Vec<_> = catalogue
        .lines()
        .map(|l| isto::catalogue::parse_json_row(&serde_json::from_str(l).unwrap(), &currencies).unwrap())
        .collect();
    let n_rows = rows.len();
    for batch in rows.chunks(2000) {
        h.catalogue.import_offers(batch.to_vec()).unwrap();
    }
    let imported = started.elapsed();

    let queries: Vec<Judged> = std::fs::read_to_string(out.path().join("queries.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            Judged {
                id: v["id"].as_str().unwrap().to_owned(),
                class: v["class"].as_str().unwrap().to_owned(),
                statement: v["statement"].as_str().unwrap().to_owned(),
                relevant: strings(&v["relevant"]),
                models: strings(&v["models"]),
            }
        })
        .collect();
    assert!(queries.len() >= 60, "the judged set has {} queries, at least 60 are needed", queries.len());

    let index = h.catalogue.offer_index().unwrap();
    let mut per_class: BTreeMap<String, (usize, f64, f64)> = BTreeMap::new();
    let mut wrong_model = Vec::new();
    for q in &queries {
        let offers = isto::catalogue::search_with(&index, &h.base, &q.statement, None, None, 10).unwrap();
        let ranked: Vec<String> =
            offers.iter().map(|o| o.extensions["ref"].as_str().unwrap_or_default().to_owned()).collect();
        let (p3, ndcg) = metrics(&ranked, &q.relevant);
        let e = per_class.entry(q.class.clone()).or_default();
        e.0 += 1;
        e.1 += p3;
        e.2 += ndcg;
        if !q.models.is_empty() && ranked.first().is_none_or(|top| !q.models.contains(top)) {
            wrong_model.push(format!("{} {:?} → {:?}", q.id, q.statement, offers.first().map(|o| &o.title)));
        }
        if p3 < 1.0 {
            eprintln!("{} [{}] {:?}: p@3 {p3:.2}, nDCG@10 {ndcg:.2}", q.id, q.class, q.statement);
        }
    }
    let mut table = String::from("| class | queries | precision@3 | nDCG@10 |\n|---|---|---|---|\n");
    let (mut n_all, mut p_all, mut g_all) = (0, 0.0, 0.0);
    for (class, (n, p, g)) in &per_class {
        table.push_str(&format!("| {class} | {n} | {:.3} | {:.3} |\n", p / *n as f64, g / *n as f64));
        n_all += n;
        p_all += p;
        g_all += g;
    }
    table.push_str(&format!("| all | {n_all} | {:.3} | {:.3} |\n", p_all / n_all as f64, g_all / n_all as f64));
    eprintln!(
        "{n_rows} listings imported in {:.1} s, {} queries, total {:.1} s\n{table}",
        imported.as_secs_f64(),
        queries.len(),
        started.elapsed().as_secs_f64()
    );
    eprintln!("top hit with the wrong model: {}", wrong_model.len());
    for w in &wrong_model {
        eprintln!("  {w}");
    }
    let (n, p, _) = per_class["make_model"];
    assert!(p / n as f64 >= P3_TARGET, "make/model precision@3 {:.3} is below {P3_TARGET}\n{table}", p / n as f64);
    assert!(
        wrong_model.is_empty(),
        "{} queries rank a wrong model first:\n{}",
        wrong_model.len(),
        wrong_model.join("\n")
    );
}
