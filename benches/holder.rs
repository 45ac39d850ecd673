//! Whole-holder load generator: the catalogue, search and standing-intent
//! matching as `isto serve` runs them (a real redb file, the tantivy index on disk, the
//! matching engine), on generated data shaped like the SK/CZ listings, and on the real
//! sauto listings in `../shared/data` when that folder is present.
//!
//! Run: `cargo bench --bench holder` (a few minutes on 2 cores). `ISTO_BENCH_IMPORT_ONLY=1`
//! runs the imports only (no searches, no real listings). Set `ISTO_BENCH_OFFERS`
//! / `ISTO_BENCH_INTENTS` / `ISTO_BENCH_MATCH_OFFERS` to change the sizes (defaults
//! 100 000 offers, 20 000 standing intents and 10 000 offers imported against them: the
//! synthetic intents are broad, so every arriving offer is delivered to many of them and
//! that import measures delivery writes as much as matching). `ISTO_BENCH_BATCH` sets
//! the rows per import transaction (default as `isto admin offers import`: 1 000).
//!
//! Prints: import rate (offers/s) for the generated catalogue (batches of 1 000, one
//! transaction each; the index commit of the series, which the next read would make, is
//! timed with the import); search p50/p99 over 1 000 statements, and
//! isto's top-10 answer beside its floor (a plain tantivy BM25 top-10 OR query over the
//! same index and statements, in-process) with their ratio; the rate of a 10 000-offer
//! import into the store with the standing intents (matching, deliveries recorded);
//! the same for one offer (its import and its index commit apart, with the index open as
//! in `isto serve`); the process's peak RSS (VmHWM); and random reads of the standing
//! intents' records with the store's page cache at 16, 4 and 1 MiB. The matching engine alone
//! at 100 000 and 1 000 000 intents is in `cargo bench --bench matching`.

// A benchmark harness, not the holder: a failed set-up may abort the run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use isto::clock::{Clock as _, SystemClock};
use isto::config::Settings;
use isto::crypto::KeyRing;
use isto::matching::engine::synth::Synth;
use isto::matching::engine::EngineIntent;
use isto::protocol::{Offer, Status, Visibility};
use isto::records::{IntentRecord, OfferInput, OfferRecord};
use isto::state::AppState;
use isto::store::Store;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The allocator of `isto serve` and `isto admin` (`src/main.rs`), with the same options
/// (compiled in from `.cargo/config.toml`): the holder measured as it runs, not on glibc's
/// malloc (a fifth of an import's CPU there).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

// Each benchmark uses part of the shared loader (this one the sauto cars only).
#[allow(dead_code)]
#[path = "common/listings.rs"]
mod listings;
// The realistic intents and arriving offers of `cargo bench --bench matching`.
#[allow(dead_code)]
#[path = "matching/real.rs"]
mod real;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn peak_rss() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM")).map(|l| l[6..].trim().to_owned()))
        .unwrap_or_else(|| "n/a".into())
}

/// Bytes this process has caused to be written to storage so far (`write_bytes` of
/// `/proc/self/io`; 0 where it cannot be read).
fn written_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("write_bytes:").and_then(|v| v.trim().parse().ok())))
        .unwrap_or(0)
}

fn input(o: Offer) -> OfferInput {
    OfferInput {
        reference: Some(o.id),
        title: o.title,
        description: o.description,
        category: o.category,
        attributes: o.attributes,
        price: o.price,
        area: o.area,
        seller_name: o.seller.name,
        seller_url: None,
        url: None,
        valid_until: None,
    }
}

/// Rows per import transaction: `ISTO_BENCH_BATCH`, by default `isto admin offers import`'s.
fn batch_rows() -> usize {
    env_usize("ISTO_BENCH_BATCH", isto::admin::BATCH_ROWS).max(1)
}

/// Imports `batch` in batches of `ISTO_BENCH_BATCH` rows (`isto admin offers import`'s
/// [`isto::admin::BATCH_ROWS`]; one durable transaction
/// each, matching and deliveries included) and commits the index after the last: the
/// time taken and the deliveries written.
fn import_batches(h: &AppState, batch: Vec<OfferInput>) -> (Duration, u64) {
    let rows = batch_rows();
    let t = Instant::now();
    let mut delivered = 0;
    for chunk in batch.chunks(rows) {
        delivered += h.catalogue.import_offers_run(chunk.to_vec(), None).expect("import batch").delivered;
    }
    let stored = t.elapsed();
    flush(h);
    let el = t.elapsed();
    println!(
        "  ({} offers: the batches {:.2} s, then the index commit {:.2} s)",
        batch.len(),
        stored.as_secs_f64(),
        (el - stored).as_secs_f64()
    );
    (el, delivered)
}

/// Commits the index's pending updates (an import's batches share one commit, made at
/// the latest by the next read): timed with the import, so that it counts.
fn flush(h: &AppState) {
    h.catalogue.offer_index().expect("index").flush().expect("index commit");
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn open(dir: &std::path::Path) -> AppState {
    let mut s = Settings::defaults();
    s.data_dir = dir.to_owned();
    // `ISTO_BENCH_CACHE_MIB`: the store's page cache (`store.cache_mib`; default as
    // `isto serve`'s).
    let cache = env_usize("ISTO_BENCH_CACHE_MIB", isto::store::DEFAULT_CACHE_MIB as usize) as u64;
    let store = Store::open_cached(&dir.join("isto.redb"), cache).expect("store");
    let (keys, _) = KeyRing::load_or_create(&dir.join("keys/sealing.key")).expect("key");
    AppState::with_index_dir(s, store, keys, Arc::new(SystemClock), Some(dir.join("index")))
}

/// Stores `intents` as active intents directly (as if confirmed), then reopens the
/// holder so the engine loads them as `isto serve` does at start-up.
fn seed_intents(
    dir: &std::path::Path,
    h: AppState,
    intents: impl IntoIterator<Item = EngineIntent>,
) -> (AppState, Duration, Vec<String>) {
    let mut intents = intents.into_iter().peekable();
    let t = SystemClock.now();
    let now = isto::records::Stamp::of(t);
    let later = isto::records::Stamp::of(t + time::Duration::days(90));
    let contact = h.base.keys().seal_str("bench@example.com").expect("seal");
    let mut ids = Vec::new();
    while intents.peek().is_some() {
        let recs: Vec<IntentRecord> = intents
            .by_ref()
            .take(5_000)
            .map(|e| {
                let content = isto::records::IntentContent {
                    statement: e.statement,
                    category: e.category,
                    criteria: e.criteria,
                    area: e.area,
                    budget: e.budget,
                    buy_by: None,
                    valid_until: later,
                    visibility: Visibility::Private,
                    language: "sk".into(),
                };
                IntentRecord {
                    status: Status::Active,
                    hidden_limit: e.hidden_limit.map(|l| h.base.keys().seal_str(&l.to_string()).expect("seal")),
                    contact: Some(contact.clone()),
                    confirmed_at: Some(now),
                    ..IntentRecord::draft(e.id, content, now, now)
                }
            })
            .collect();
        ids.extend(recs.iter().map(|r| r.id.clone()));
        h.base
            .write(|w| {
                for r in &recs {
                    w.put_intent(r, true)?;
                }
                Ok::<_, isto::base::ServiceError>(())
            })
            .expect("seed intents");
    }
    drop(h);
    let t = Instant::now();
    let h = open(dir);
    (h, t.elapsed(), ids)
}

fn main() {
    let n_offers = env_usize("ISTO_BENCH_OFFERS", 100_000);
    let n_intents = env_usize("ISTO_BENCH_INTENTS", 20_000);
    if std::env::var_os("ISTO_BENCH_REALISTIC_ONLY").is_some() {
        realistic_import(n_intents);
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let h = open(dir.path());
    h.catalogue.offer_index().expect("index");

    // 1. Import rate.
    let mut g = Synth::new(1);
    let t = Instant::now();
    let mut done = 0;
    while done < n_offers {
        let take = (n_offers - done).min(batch_rows());
        h.catalogue.import_offers_run((0..take).map(|_| input(g.offer())).collect(), None).expect("import");
        done += take;
    }
    flush(&h);
    let el = t.elapsed();
    println!(
        "import: {n_offers} offers in {:.1} s = {:.0} offers/s ({} index segments)",
        el.as_secs_f64(),
        n_offers as f64 / el.as_secs_f64(),
        h.catalogue.offer_index().expect("index").num_segments()
    );

    let import_only = std::env::var_os("ISTO_BENCH_IMPORT_ONLY").is_some();
    // 2. Search over the catalogue.
    if !import_only && searches(&h, n_offers) {
        return;
    }

    // 3. Matching arriving offers against standing intents.
    let (h, ids) = standing(dir.path(), h, n_intents);

    // 4. The real listings, when present.
    if !import_only {
        let sauto = listings::sauto(&listings::data_dir());
        if !sauto.is_empty() {
            real_listings(&h, &sauto);
        } else {
            println!("real listings: ../shared/data absent, skipped");
        }
    }
    println!("peak RSS: {}", peak_rss());
    drop(h);
    cache_reads(dir.path(), &ids);
    if !import_only {
        realistic_import(n_intents);
    }
}

/// The import target's case (issue 24): `n_intents` realistic standing intents (real
/// titles: `matching/real.rs`), then `ISTO_BENCH_MATCH_OFFERS` (10 000) real listings
/// imported against them in batches of 500, matching and deliveries included, the index
/// commit that makes the last batch searchable timed with the import.
fn realistic_import(n_intents: usize) {
    let all = listings::listings(&listings::data_dir());
    if all.is_empty() {
        println!("realistic import: ../shared/data absent, skipped");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let h = open(dir.path());
    let (h, _, _) = seed_intents(dir.path(), h, real::intents(17, n_intents, &all));
    h.catalogue.offer_index().expect("index");
    let n = env_usize("ISTO_BENCH_MATCH_OFFERS", 10_000);
    let written = written_bytes();
    let (el, delivered) = import_batches(&h, real::offers(19, n, &all).into_iter().map(input).collect());
    println!(
        "{n}-offer import of real listings against {n_intents} realistic intents (real titles; batches of {}, \
         index in step, matching and deliveries): {:.2} s = {:.0} offers/s, {delivered} deliveries, {:.1} MB \
         written to storage (store and index)",
        batch_rows(),
        el.as_secs_f64(),
        n as f64 / el.as_secs_f64(),
        (written_bytes() - written) as f64 / 1e6
    );
}

/// The searches over the generated catalogue of `n_offers` (and, with
/// `ISTO_BENCH_SEARCH_ONLY`, over the real listings; it then returns `true`: the run ends).
fn searches(h: &AppState, n_offers: usize) -> bool {
    let mut q = Synth::new(2);
    let statements: Vec<String> = (0..1_000).map(|_| q.intent().statement).collect();
    search_times(h, &format!("{n_offers} offers"), &statements, None, 1);
    // The statements of `cargo bench --bench mcp_load` over the same catalogue.
    let mcp_statements: Vec<String> = [
        "škoda octavia",
        "bmw x3 diesel",
        "volkswagen golf",
        "toyota corolla automat",
        "ford focus kombi",
        "hyundai i30",
        "audi a4 avant",
        "byt 3+1 Brno",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    search_times(h, &format!("{n_offers} offers, the mcp_load statements"), &mcp_statements, None, 50);
    if std::env::var_os("ISTO_BENCH_SEARCH_ONLY").is_some() {
        let sauto = listings::sauto(&listings::data_dir());
        if !sauto.is_empty() {
            let dir = tempfile::tempdir().expect("tempdir");
            real_listings(&open(dir.path()), &sauto);
        }
        return true;
    }
    false
}

/// Seeds `n_intents` standing intents, then imports arriving offers against them: one at
/// a time, then a batch series. Returns the reopened holder.
fn standing(dir: &std::path::Path, h: AppState, n_intents: usize) -> (AppState, Vec<String>) {
    let mut g = Synth::new(7);
    let (h, load, ids) = seed_intents(dir, h, (0..n_intents).map(|_| g.intent()));
    println!("start-up with {} active intents: engine loaded in {:.1} s", h.base.engine_len(), load.as_secs_f64());
    // The offer index is opened on first use (`isto serve` opens it at start): open it
    // now, so that each arriving offer below is indexed as it would be in the server.
    h.catalogue.offer_index().expect("index");
    let mut fresh = Synth::new(3);
    // The call is the store write and the matching; the index commits in the background
    // (near real time, `REFRESH_LAG`), so its commits run beside these calls as in
    // `isto serve`. Then the commit that makes the last offers searchable, apart.
    let mut one = Vec::new();
    for _ in 0..200 {
        let o = input(fresh.offer());
        let t = Instant::now();
        h.catalogue.import_offers_run(vec![o], None).expect("import one");
        one.push(t.elapsed());
    }
    let t = Instant::now();
    flush(&h);
    let committed = t.elapsed();
    one.sort();
    println!(
        "one new offer against {n_intents} intents (import transaction + matching + deliveries; the index \
         commits in the background within {} ms): p50 {:.2} ms, p99 {:.2} ms; an index commit {:.2} ms",
        isto::catalogue::index::REFRESH_LAG.as_millis(),
        pct(&one, 0.5).as_secs_f64() * 1e3,
        pct(&one, 0.99).as_secs_f64() * 1e3,
        committed.as_secs_f64() * 1e3
    );
    let n_match = env_usize("ISTO_BENCH_MATCH_OFFERS", 10_000);
    let (el, delivered) = import_batches(&h, (0..n_match).map(|_| input(fresh.offer())).collect());
    println!(
        "{n_match}-offer import against {n_intents} intents (batches of {}, index in step, matching and deliveries): \
         {:.2} s = {:.0} offers/s, {delivered} deliveries",
        batch_rows(),
        el.as_secs_f64(),
        n_match as f64 / el.as_secs_f64()
    );
    (h, ids)
}

/// The stored record of a standing intent (what a get reads) in a fixed random order,
/// 10^5 reads after one warm pass, with the store's page cache (`store.cache_mib`) at 16,
/// 4 and 1 MiB: the same file, reopened for each (pages it no longer caches are read
/// through the operating system's page cache).
fn cache_reads(dir: &std::path::Path, ids: &[String]) {
    use isto::store::Reads as _;
    if ids.is_empty() {
        return;
    }
    let order: Vec<usize> = (0..100_000usize).map(|i| (i.wrapping_mul(7_919) + 13) % ids.len()).collect();
    for mib in [16, 4, 1] {
        let store = Store::open_cached(&dir.join("isto.redb"), mib).expect("store");
        let pass = || {
            let t = Instant::now();
            for &i in &order {
                store.read(|rx| rx.intent::<IntentRecord>(&ids[i])).expect("read").expect("intent");
            }
            t.elapsed()
        };
        pass();
        let el = pass();
        println!(
            "intent reads in random order over {} intents, store page cache {mib} MiB: {:.2} µs per read",
            ids.len(),
            el.as_secs_f64() * 1e6 / order.len() as f64
        );
    }
}

/// Imports the sauto listings (CZK, regions assigned by listing id) and searches them.
fn real_listings(h: &AppState, sauto: &[listings::Listing]) {
    let regions: Vec<&str> = isto::gazetteer::all_regions().filter(|(_, c)| *c == "CZ").map(|(r, _)| r).collect();
    let mut rows = Vec::new();
    for l in sauto {
        let (Some((price, _)), Some(car)) = (l.price, &l.sauto) else { continue };
        let id: u64 = car.id.parse().unwrap_or(0);
        let mut attrs = l.attributes.clone();
        if let Some(y) = car.year {
            attrs.insert("year".into(), y.into());
        }
        rows.push(OfferInput {
            reference: Some(format!("sauto-{}", car.id)),
            title: l.title.clone(),
            description: l.description.clone(),
            category: "vehicles".into(),
            attributes: attrs,
            price: isto::protocol::Money { amount: price, currency: "CZK".into() },
            area: isto::gazetteer::resolve(regions[(id % regions.len() as u64) as usize]).expect("region"),
            seller_name: "sauto".into(),
            seller_url: None,
            url: Some(car.url.clone()),
            valid_until: None,
        });
    }
    let n = rows.len();
    let t = Instant::now();
    for chunk in rows.chunks(500) {
        h.catalogue.import_offers_run(chunk.to_vec(), None).expect("import sauto");
    }
    flush(h);
    let el = t.elapsed();
    println!(
        "real sauto listings: {n} imported in {:.2} s ({:.0} offers/s, with standing intents)",
        el.as_secs_f64(),
        n as f64 / el.as_secs_f64(),
    );
    let queries = ["skoda octavia", "octavia combi diesel", "bmw x5", "toyota hybrid", "fabia", "tesla model 3"];
    let statements: Vec<String> = queries.iter().map(|q| (*q).to_owned()).collect();
    search_times(h, "the real sauto listings", &statements, Some("vehicles"), 50);
}

/// Times the `intent_search_offers` answer (limit 20) over `statements` (`rounds` times
/// each): the holder's path (index with the stored offers: [`isto::catalogue::search_json`],
/// then the structured value and the text as the MCP tool builds them), and for
/// comparison the former path (ids from the index, each offer read from redb and
/// decoded, `to_value`, the text serialized twice). Prints p50/p99 in µs of both.
fn search_times(h: &AppState, what: &str, statements: &[String], category: Option<&str>, rounds: usize) {
    use isto::store::Reads as _;
    let idx = h.catalogue.offer_index().expect("index");
    let (mut new, mut old) = (Vec::new(), Vec::new());
    let mut found = 0usize;
    for _ in 0..rounds {
        for s in statements {
            let t = Instant::now();
            let offers = isto::catalogue::search_json(&idx, &h.base, s, None, category, 20).expect("search");
            // The tool's answer from them (`mcp::handlers::search`).
            std::hint::black_box(isto::catalogue::search_answer(&offers).expect("json"));
            new.push(t.elapsed());
            found += offers.len();

            let t = Instant::now();
            let now = h.base.clock().now();
            let hits = idx.search(s, None, category, 28).expect("search");
            let offers: Vec<Offer> = h
                .base
                .store()
                .read(|rx| {
                    let mut out = Vec::new();
                    for (id, _) in &hits {
                        let Some(rec) = rx.offer::<OfferRecord>(id)? else { continue };
                        let current = rec.active
                            && rec
                                .offer
                                .valid_until
                                .as_deref()
                                .is_none_or(|v| isto::clock::parse_rfc3339(v).is_ok_and(|t| t > now));
                        if current && out.len() < 20 {
                            out.push(rec.offer);
                        }
                    }
                    Ok::<_, isto::base::ServiceError>(out)
                })
                .expect("store");
            let arr = serde_json::to_value(&offers).expect("value");
            let structured = serde_json::json!({ "offers": arr });
            let wasted = structured.to_string();
            let text = arr.to_string();
            std::hint::black_box((&structured, &wasted, &text));
            old.push(t.elapsed());
        }
    }
    // The floor: a plain tantivy BM25 top-10 query over the same index and statements
    // (`OfferIndex::floor_search`), beside isto's own top-10 answer from the index.
    let (mut isto10, mut floor) = (Vec::new(), Vec::new());
    let now = h.base.clock().now();
    for _ in 0..rounds.max(3) {
        for s in statements {
            let t = Instant::now();
            std::hint::black_box(idx.search_offers(s, None, category, 10, now).expect("search"));
            isto10.push(t.elapsed());
            let t = Instant::now();
            std::hint::black_box(idx.floor_search(s, 10).expect("floor"));
            floor.push(t.elapsed());
        }
    }
    isto10.sort();
    floor.sort();
    let mean = |v: &[Duration]| v.iter().map(Duration::as_secs_f64).sum::<f64>() * 1e6 / v.len().max(1) as f64;
    println!(
        "search over {what}, top 10 in-process (one thread, so wall ≈ CPU): isto search_offers mean {:.0} µs \
         (p50 {:.0}, p99 {:.0}); floor (plain tantivy BM25 OR top-10) mean {:.0} µs (p50 {:.0}, p99 {:.0}); \
         ratio {:.2}",
        mean(&isto10),
        pct(&isto10, 0.5).as_secs_f64() * 1e6,
        pct(&isto10, 0.99).as_secs_f64() * 1e6,
        mean(&floor),
        pct(&floor, 0.5).as_secs_f64() * 1e6,
        pct(&floor, 0.99).as_secs_f64() * 1e6,
        mean(&isto10) / mean(&floor)
    );
    new.sort();
    old.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "search over {what} (limit 20, {} results per query on average): index with stored offers p50 {:.0} µs, \
         p99 {:.0} µs; former path (index ids + redb reads) p50 {:.0} µs, p99 {:.0} µs",
        found / new.len().max(1),
        us(pct(&new, 0.5)),
        us(pct(&new, 0.99)),
        us(pct(&old, 0.5)),
        us(pct(&old, 0.99))
    );
}
