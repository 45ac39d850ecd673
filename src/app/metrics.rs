//! `/metrics`: the request counts ([`Started`]), the scrape handler with the values read
//! from the store ([`Scraper`]), and the separate listener `metrics_listen` (default:
//! off; never the public listener), which also serves the readiness report
//! ([`super::ready`]).
//!
//! At scrape time the store gives the active intents and the deliveries (row counts: no
//! scan) and the outbox backlog. The other intent statuses need a scan of every intent:
//! it runs at most once per [`INTENT_SCAN_EVERY`] however often Prometheus scrapes
//! (docs/choices.md).

use crate::protocol::Status;
use crate::records::IntentRecord;
use crate::state::AppState;
use crate::telemetry::{self, StoreGauges};
use axum::extract::{MatchedPath, Request};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How often at most the intents are scanned for their statuses (the active count is
/// read at every scrape).
pub const INTENT_SCAN_EVERY: Duration = Duration::from_secs(60);

/// The route pattern of a request (`/consent/{token}`), never its path: `/mcp` for the
/// MCP endpoints (mounted as services), `None` when no route matched.
pub fn route_of(req: &Request) -> Option<String> {
    match req.extensions().get::<MatchedPath>() {
        Some(m) => Some(m.as_str().to_owned()),
        None => mcp_route(req.uri().path()).map(str::to_owned),
    }
}

/// The MCP endpoint a path belongs to.
fn mcp_route(path: &str) -> Option<&'static str> {
    match path {
        "/mcp/buyer" | "/mcp/buyer/" => Some("/mcp/buyer"),
        "/mcp/seller" | "/mcp/seller/" => Some("/mcp/seller"),
        p if p.starts_with("/mcp") => Some("/mcp"),
        _ => None,
    }
}

/// A request as the request metrics count it (`telemetry::request`), taken before it is
/// answered (by the app's outer layer).
pub struct Started {
    route: Option<String>,
    method: axum::http::Method,
    start: Instant,
}

impl Started {
    /// Route, method and now, of `req`.
    pub fn of(req: &Request) -> Self {
        Self { route: route_of(req), method: req.method().clone(), start: Instant::now() }
    }

    /// The request's route pattern ([`route_of`]), `None` when no route matched.
    pub fn route(&self) -> Option<&str> {
        self.route.as_deref()
    }

    /// The time since [`Started::of`].
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// Counts the answer `res` and its latency since [`Started::of`].
    pub fn count(self, res: &Response) {
        let endpoint = self.route.as_deref().unwrap_or(telemetry::UNMATCHED);
        telemetry::request(endpoint, self.method.as_str(), res.status().as_u16(), self.start.elapsed());
    }
}

/// The last intent scan: when, and its counts by status.
#[derive(Debug, Default)]
struct Scan {
    at: Option<Instant>,
    counts: Vec<(&'static str, u64)>,
}

/// What the scrape handler keeps between scrapes.
#[derive(Clone)]
pub struct Scraper {
    holder: AppState,
    scan: Arc<Mutex<Scan>>,
}

impl Scraper {
    /// A scraper over `holder`'s store.
    pub fn new(holder: AppState) -> Self {
        Self { holder, scan: Arc::new(Mutex::new(Scan::default())) }
    }

    /// The store's values (blocking). `None` when the store cannot be read (logged).
    pub fn store_gauges(&self) -> Option<StoreGauges> {
        let base = &self.holder.base;
        let counts = (base.store().read(|rx| rx.counts()))
            .map_err(|e| tracing::warn!(error = %e, "metrics: the store could not be read"))
            .ok()?;
        let backlog = base
            .outbox()
            .backlog()
            .map_err(|e| tracing::warn!(error = %e, "metrics: the outbox could not be read"))
            .ok()?;
        let mut intents = self.intent_statuses();
        intents.retain(|(s, _)| *s != Status::Active.as_str());
        intents.push((Status::Active.as_str(), counts.active));
        Some(StoreGauges {
            intents,
            outbox_depth: backlog.jobs,
            outbox_oldest_age_secs: backlog.oldest_age_secs,
            deliveries: counts.deliveries,
        })
    }

    /// Intents by effective status, from a scan at most once per [`INTENT_SCAN_EVERY`].
    fn intent_statuses(&self) -> Vec<(&'static str, u64)> {
        let mut scan = self.scan.lock().unwrap_or_else(PoisonError::into_inner);
        if scan.at.is_some_and(|t| t.elapsed() < INTENT_SCAN_EVERY) {
            return scan.counts.clone();
        }
        let now = self.holder.base.clock().now();
        // Indexed by `status as usize`: `Status::ALL` is in declaration order.
        let mut by = [0u64; Status::ALL.len()];
        let count = |r: IntentRecord| by[r.effective_status(now) as usize] += 1;
        let read = self.holder.base.store().read(|rx| rx.each_intent(count));
        match read {
            Ok(()) => {
                scan.counts = Status::ALL.iter().zip(by).map(|(s, n)| (s.as_str(), n)).collect();
                scan.at = Some(Instant::now());
            }
            Err(e) => tracing::warn!(error = %e, "metrics: the intents could not be counted"),
        }
        scan.counts.clone()
    }
}

/// `GET /metrics`: [`telemetry::render`] with the store's values (and the PostgreSQL
/// pool's, set first: they need no store read, so they are there when it fails).
async fn metrics(scraper: Scraper) -> Response {
    let text = tokio::task::spawn_blocking(move || {
        if let Some(p) = scraper.holder.base.store().pool_stats() {
            telemetry::pool([p.size, p.in_use, p.idle], [p.waits, p.wait_timeouts, p.connection_errors]);
        }
        telemetry::render(scraper.store_gauges().as_ref())
    })
    .await;
    match text {
        Ok(t) => {
            ([(header::CONTENT_TYPE, telemetry::CONTENT_TYPE), (header::CACHE_CONTROL, "no-store")], t).into_response()
        }
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "metrics unavailable\n").into_response(),
    }
}

/// The router of the metrics listener: `GET /metrics`, and `GET /readyz` with the
/// readiness report ([`super::ready::detailed`]; the public `/readyz` says only ready or
/// not).
pub fn router(holder: AppState) -> Router {
    let scraper = Scraper::new(holder.clone());
    Router::new()
        .route("/metrics", get(move || metrics(scraper.clone())))
        .route("/readyz", get(move || super::ready::detailed(holder.clone())))
}

/// Serves [`router`] on `listener` until `stop`.
pub async fn serve(listener: tokio::net::TcpListener, holder: AppState, stop: CancellationToken) {
    let served = axum::serve(listener, router(holder)).with_graceful_shutdown(stop.cancelled_owned()).await;
    if let Err(e) = served {
        tracing::error!(error = %e, "metrics listener failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_paths_map_to_their_endpoint_and_others_to_none() {
        assert_eq!(mcp_route("/mcp"), Some("/mcp"));
        assert_eq!(mcp_route("/mcp/buyer"), Some("/mcp/buyer"));
        assert_eq!(mcp_route("/mcp/seller/"), Some("/mcp/seller"));
        assert_eq!(mcp_route("/mcp/anything-else"), Some("/mcp"));
        assert_eq!(mcp_route("/consent/abc"), None);
    }
}
