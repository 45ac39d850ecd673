//! Bench of the standing-intent matching engine (`src/matching/engine.rs`): engines with
//! 100 000 and 1 000 000 synthetic SK/CZ car and property intents
//! (`isto::matching::engine::synth`, min_should_match 0.5, the holder default), and —
//! when `../shared/data` is present — the realistic case: 1 000 000 intents whose
//! statements are the real listings' titles, matched against real listings arriving as
//! offers ([`real`]; `ISTO_BENCH_REAL_SIZES` picks its sizes, `0` skips it;
//! `ISTO_BENCH_DATA` names another folder of the listings). The target
//! there is a median under 1 ms per arriving offer.
//!
//! Run: `cargo bench --bench matching` (about 4–5 minutes on 2 idle cores, mostly the
//! 1M pass). `ISTO_BENCH_SIZES=100000` picks the sizes (comma-separated),
//! `ISTO_BENCH_MSM=0` another min_should_match;
//! `ISTO_BENCH_PROFILE=1` stops after the timed `match_offer_indexed` pass of each size
//! (for `perf record`; build with `CARGO_PROFILE_BENCH_STRIP=none` to keep symbols). A
//! criterion filter (`cargo bench --bench matching -- indexed`) selects criterion groups;
//! the build and timed-pass figures are printed for every size regardless.
//!
//! Printed per size: generation and build time and RSS; one timed pass over 10 000 new
//! offers with `match_offer_indexed` (the batch time, and per-offer median / p90 / p99 /
//! max) and over a part of them with `match_offer` (`check` decides each candidate);
//! criterion estimates for one new offer with both; at 100 000 intents criterion for the
//! whole 10 000-offer batch and the oracle's brute force (`matching::check` over every
//! intent) per offer for comparison; at the end the process's peak RSS (VmHWM).

// A benchmark harness, not the holder: a failed set-up may abort the run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{Criterion, SamplingMode};
use isto::matching::check;
use isto::matching::engine::synth::{self, Synth};
use isto::matching::engine::{Engine, EngineIntent};
use isto::protocol::Offer;
use std::hint::black_box;
use std::time::{Duration, Instant};

// Each benchmark uses part of the shared loader (this one not the sauto-only fields).
#[allow(dead_code)]
#[path = "common/listings.rs"]
mod listings;
#[path = "matching/real.rs"]
mod real;

/// min_should_match: the holder default, or `ISTO_BENCH_MSM`.
fn msm() -> f64 {
    std::env::var("ISTO_BENCH_MSM").ok().and_then(|v| v.parse().ok()).unwrap_or(0.5)
}
const BATCH: usize = 10_000;

fn status(field: &str) -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with(field)).map(|l| l.split_whitespace().skip(1).collect::<Vec<_>>().join(" "))
        })
        .unwrap_or_else(|| "n/a".into())
}

fn intents(seed: u64, n: usize) -> Vec<EngineIntent> {
    let mut g = Synth::new(seed);
    (0..n).map(|_| g.intent()).collect()
}

fn offers(seed: u64, n: usize) -> Vec<Offer> {
    let mut g = Synth::new(seed);
    (0..n).map(|_| g.offer()).collect()
}

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// The engine's two ways to match: `check` decides each candidate, or the index does.
#[derive(Clone, Copy)]
enum Way {
    Checked,
    Indexed,
}

impl Way {
    fn run(self, engine: &Engine, offer: &Offer) -> usize {
        match self {
            Way::Checked => engine.match_offer(offer, true).len(),
            Way::Indexed => engine.match_offer_indexed(offer, true).len(),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Way::Checked => "match_offer (check decides)",
            Way::Indexed => "match_offer_indexed",
        }
    }
}

/// Median / p90 / p99 / max of counts, for printing.
fn spread(mut v: Vec<usize>) -> String {
    v.sort_unstable();
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    format!("median {}, p90 {}, p99 {}, max {}", at(0.5), at(0.9), at(0.99), v[v.len() - 1])
}

/// The index work per offer of the batch (untimed): dictionary terms hit, posting
/// entries walked, candidates before the exact checks, matches.
fn work(engine: &Engine, batch: &[Offer], label: &str) {
    let probes: Vec<_> = batch.iter().map(|o| engine.probe(o)).collect();
    let matches: Vec<usize> = batch.iter().map(|o| engine.match_offer_indexed(o, true).len()).collect();
    println!("{label}, per offer: hit terms {}", spread(probes.iter().map(|p| p.hit_terms).collect()));
    println!("{label}, per offer: postings walked {}", spread(probes.iter().map(|p| p.postings).collect()));
    println!("{label}, per offer: candidates {}", spread(probes.iter().map(|p| p.candidates).collect()));
    println!("{label}, per offer: matches {}", spread(matches));
}

/// One timed pass over the batch: per-offer latencies and matches.
fn pass(engine: &Engine, batch: &[Offer], label: &str, way: Way) {
    let mut times = Vec::with_capacity(batch.len());
    let mut matches = 0usize;
    let start = Instant::now();
    for o in batch {
        let t = Instant::now();
        matches += black_box(way.run(engine, o));
        times.push(t.elapsed());
    }
    let total = start.elapsed();
    if matches!(way, Way::Indexed) {
        work(engine, batch, label);
    }
    times.sort();
    println!(
        "{label}, {}: batch of {} offers {:.3} s; per offer median {:?}, p90 {:?}, p99 {:?}, max {:?}; {:.1} matches per offer",
        way.name(),
        batch.len(),
        total.as_secs_f64(),
        percentile(&times, 0.5),
        percentile(&times, 0.9),
        percentile(&times, 0.99),
        times[times.len() - 1],
        matches as f64 / batch.len() as f64
    );
}

fn bench_size(c: &mut Criterion, n: usize) {
    let label = format!("{n} intents (min_should_match {})", msm());
    let t = Instant::now();
    let generated = intents(7, n);
    let gen = t.elapsed();
    bench_engine(c, &label, &format!("engine/{n}"), generated, gen, offers(8, BATCH));
}

/// The realistic case at `n` intents ([`real`]).
fn bench_real(c: &mut Criterion, n: usize, all: &[listings::Listing]) {
    let label = format!("{n} realistic intents (real titles, min_should_match {})", msm());
    let t = Instant::now();
    let generated = real::intents(7, n, all);
    let gen = t.elapsed();
    bench_engine(c, &label, &format!("engine/real/{n}"), generated, gen, real::offers(8, BATCH, all));
}

fn bench_engine(
    c: &mut Criterion,
    label: &str,
    group: &str,
    generated: Vec<EngineIntent>,
    gen: Duration,
    batch: Vec<Offer>,
) {
    let n = generated.len();
    let brute_set = (n <= 100_000).then(|| generated.clone());
    let engine = Engine::new(synth::params(msm()));
    let t = Instant::now();
    for i in generated {
        engine.upsert(i);
    }
    let build = t.elapsed();
    println!(
        "{label}: generated in {:.2} s, engine built in {:.2} s ({:.2} µs per upsert); VmRSS {}",
        gen.as_secs_f64(),
        build.as_secs_f64(),
        build.as_secs_f64() * 1e6 / n as f64,
        status("VmRSS:")
    );
    pass(&engine, &batch, label, Way::Indexed);
    if std::env::var_os("ISTO_BENCH_PROFILE").is_some() {
        return;
    }
    // `check` costs ~5-10 µs per matching intent: time it on a part of the batch.
    let checked = if n >= 1_000_000 { &batch[..200] } else { &batch[..2000] };
    pass(&engine, checked, label, Way::Checked);

    let mut g = c.benchmark_group(group);
    g.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    for way in [Way::Indexed, Way::Checked] {
        if n >= 1_000_000 && matches!(way, Way::Checked) {
            g.sampling_mode(SamplingMode::Flat).sample_size(10).measurement_time(Duration::from_secs(6));
        }
        let mut k = 0usize;
        g.bench_function(format!("{}, one new offer", way.name()), |b| {
            b.iter(|| {
                k = (k + 1) % batch.len();
                way.run(&engine, &batch[k])
            })
        });
    }
    g.sampling_mode(SamplingMode::Flat).sample_size(10).warm_up_time(Duration::from_millis(500));
    if n < 1_000_000 {
        // At 1M intents one pass takes over a minute: the timed pass above is the figure.
        g.measurement_time(Duration::from_secs(20));
        g.bench_function("match_offer_indexed, batch of 10 000 offers", |b| {
            b.iter(|| batch.iter().map(|o| Way::Indexed.run(&engine, o)).sum::<usize>())
        });
    }
    if let Some(all) = &brute_set {
        let p = engine.params();
        let t = Instant::now();
        let sample = &batch[..50];
        let mut found = 0usize;
        for o in sample {
            found += all.iter().filter(|i| check(&i.view(), o, true, p).is_some()).count();
        }
        println!(
            "{label}: oracle brute force (check over all intents) {:?} per offer over 50 offers ({:.1} matches per offer)",
            t.elapsed() / sample.len() as u32,
            found as f64 / sample.len() as f64
        );
        g.measurement_time(Duration::from_secs(6));
        let mut k = 0usize;
        g.bench_function("oracle brute force, one offer", |b| {
            b.iter(|| {
                k = (k + 1) % batch.len();
                let o = &batch[k];
                all.iter().filter(|i| check(&i.view(), o, true, p).is_some()).count()
            })
        });
    }
    g.finish();
    let t = Instant::now();
    drop(engine);
    println!("{label}: dropped in {:.2} s", t.elapsed().as_secs_f64());
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let sizes: Vec<usize> = std::env::var("ISTO_BENCH_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![100_000, 1_000_000]);
    for n in sizes {
        bench_size(&mut c, n);
    }
    let data = listings::data_dir();
    let all = listings::listings(&data);
    if all.is_empty() {
        println!("realistic case: no listings in {} (absent), skipped", data.display());
    } else {
        let sizes: Vec<usize> = std::env::var("ISTO_BENCH_REAL_SIZES")
            .ok()
            .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).filter(|&n| n > 0).collect())
            .unwrap_or_else(|| vec![1_000_000]);
        println!("realistic case: {} listings with a title read from {}", all.len(), data.display());
        for n in sizes {
            bench_real(&mut c, n, &all);
        }
    }
    c.final_summary();
    println!("peak RSS (VmHWM): {}", status("VmHWM:"));
}
