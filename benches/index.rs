//! Timing of the offer index (`isto::catalogue::index::OfferIndex`, tantivy in memory)
//! over synthetic SK/CZ car and property offers and intents
//! (`isto::matching::engine::synth`): what it printed, it measures; it asserts nothing,
//! so it is a bench, not a test.
//!
//! Run: `cargo bench --bench index` (100 000 offers; `ISTO_INDEX_OFFERS=20000` for
//! another size).
//!
//! Printed: the build (`rebuild`) of the index; `search` (limit 20) of 1000 intent
//! statements without a filter and with area Košice + category vehicles (p50, p99, max in
//! ms, average hits); `candidates_for_intent` and `candidates_for_intent_min` for 1000
//! intents (p50, p99 in ms, average candidates); one `apply` of 1000 upserts and one
//! removal (commit and reload).

// A benchmark harness, not the holder: a failed set-up may abort the run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use isto::catalogue::index::OfferIndex;
use isto::gazetteer;
use isto::matching;
use isto::matching::engine::synth::Synth;
use isto::protocol::Offer;
use std::time::Instant;

/// min_should_match of the narrow candidates: the holder default.
const MSM: f64 = 0.5;

/// The value at quantile `p` (0..=1) of `v` (sorted in place).
fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// Milliseconds `f` took, and its result.
fn timed<T>(f: impl FnOnce() -> T) -> (f64, T) {
    let t = Instant::now();
    let out = f();
    (t.elapsed().as_secs_f64() * 1000.0, out)
}

fn main() {
    let n: usize = std::env::var("ISTO_INDEX_OFFERS").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let mut synth = Synth::new(5);
    let offers: Vec<Offer> = (0..n).map(|_| synth.offer()).collect();
    let first_id = offers[0].id.clone();
    let avg_desc = offers.iter().map(|o| o.description.chars().count()).sum::<usize>() / n.max(1);
    let ix = OfferIndex::open(None).unwrap();
    let (build, _) = timed(|| ix.rebuild(offers.into_iter(), 1).unwrap());
    println!("index build: {n} offers (description avg {avg_desc} chars) in {build:.0} ms, {} docs", ix.num_docs());
    let intents: Vec<_> = (0..1000).map(|_| synth.intent()).collect();
    let kosice = gazetteer::resolve("Košice").unwrap();
    for (label, area, category) in
        [("no filter", None, None), ("area SK-KI + category", Some(&kosice), Some("vehicles"))]
    {
        let (mut ms, mut hits) = (Vec::new(), 0);
        for g in &intents {
            let (t, found) = timed(|| ix.search(&g.statement, area, category, 20).unwrap());
            hits += found.len();
            ms.push(t);
        }
        println!(
            "search ({label}, limit 20): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms, avg hits {:.1}",
            percentile(&mut ms, 0.5),
            percentile(&mut ms, 0.99),
            percentile(&mut ms, 1.0),
            hits as f64 / intents.len() as f64
        );
    }
    for narrow in [false, true] {
        let (mut ms, mut total) = (Vec::new(), 0);
        for g in &intents {
            let terms = matching::statement_terms(&g.statement);
            let (t, found) = timed(|| {
                if narrow {
                    ix.candidates_for_intent_min(&g.category, &g.area, &terms, MSM).unwrap()
                } else {
                    ix.candidates_for_intent(&g.category, &g.area, &terms).unwrap()
                }
            });
            total += found.len();
            ms.push(t);
        }
        println!(
            "{}: p50 {:.2} ms, p99 {:.2} ms, avg {:.0} candidates",
            if narrow { "candidates_for_intent_min (0.5)" } else { "candidates_for_intent" },
            percentile(&mut ms, 0.5),
            percentile(&mut ms, 0.99),
            total as f64 / intents.len() as f64
        );
    }
    let upserts: Vec<Offer> = (0..1000).map(|_| synth.offer()).collect();
    // `apply` leaves the commit to the series' next read: `flush` makes it here.
    let removed = vec![first_id];
    let (t, _) = timed(|| {
        ix.apply(Vec::new(), upserts, removed, 2);
        ix.flush().unwrap();
    });
    println!("apply (1000 upserts + 1 removal, commit, reload): {t:.0} ms");
}
