//! The search's in-process floor in the MCP load benchmark (issue 24): over the offer
//! index a stopped `isto serve` left in its data directory, one thread, the same
//! statements as the load, timed on the thread's CPU clock:
//! - the floor: a plain tantivy BM25 top-10 OR query of the statement's words over the
//!   index's one searchable field (title, attributes and description:
//!   `OfferIndex::floor_search`);
//! - isto's own search as the tool runs it: the best 20 current offers with their stored
//!   JSON texts (`OfferIndex::search_offers`).
//!
//! With the rmcp echo of the same answers (the load's row "rmcp echo of the search's
//! answers"), the floor of a search call is the echo's CPU per call plus this floor.

use isto::catalogue::index::OfferIndex;
use isto::clock::{thread_cpu, Clock as _, SystemClock};
use std::fmt;
use std::path::Path;
use std::time::Duration;

/// CPU per query, microseconds.
#[derive(Clone, Copy, Debug, Default)]
pub struct InProcess {
    /// The plain tantivy top-10 (the floor).
    pub floor_us: f64,
    /// isto's best 20 with their stored offers.
    pub isto_us: f64,
}

impl fmt::Display for InProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "search in-process over the same index, CPU per query: tantivy floor (plain BM25 top-10 OR over the \
             searchable field) {:.1} µs; isto's search with its 20 stored offers {:.1} µs ({:.2}× the floor)",
            self.floor_us,
            self.isto_us,
            self.isto_us / self.floor_us
        )
    }
}

/// Mean CPU per call of `f` over `statements` in turn, for about `budget` of CPU after one
/// warm-up round.
fn per_query(statements: &[&str], budget: Duration, mut f: impl FnMut(&str)) -> f64 {
    statements.iter().for_each(|s| f(s));
    let (t0, mut n) = (thread_cpu(), 0u64);
    while thread_cpu() - t0 < budget {
        for s in statements {
            f(s);
            n += 1;
        }
    }
    (thread_cpu() - t0).as_secs_f64() * 1e6 / n as f64
}

/// Measures both on the index in `dir` (read only: nothing is written to it).
pub fn in_process(dir: &Path, statements: &[&str]) -> InProcess {
    let index = OfferIndex::open(Some(dir)).expect("open the served offer index");
    let now = SystemClock.now();
    let budget = Duration::from_secs(2);
    let floor_us = per_query(statements, budget, |s| {
        std::hint::black_box(index.floor_search(s, 10).expect("floor search"));
    });
    let isto_us = per_query(statements, budget, |s| {
        std::hint::black_box(index.search_offers(s, None, None, 20, now).expect("isto search"));
    });
    InProcess { floor_us, isto_us }
}
