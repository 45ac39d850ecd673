//! Readiness: `GET /readyz` on the public listener says only whether the holder is ready
//! ([`public`]); the report of why ([`readiness`]) is served on the metrics listener
//! (`metrics_listen`), which only the operator reaches.
//!
//! Why not in public: the outbox backlog moved with each digest a seller's reply caused,
//! so a seller polling `/readyz` after a reply learnt whether it was delivered, and with
//! three replies in which price band the hidden limit lies (`docs/choices.md`, "Delivery
//! bit"). The public answer reads neither the outbox nor any count.

use crate::state::AppState;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::time::Duration;

/// How old the last write may be for `/readyz` to report its outcome rather than make
/// a probe write (at most one probe per this interval however often `/readyz` is asked).
pub const READY_FRESH: Duration = Duration::from_secs(5);
/// Longest `/readyz` answer; a slower check is answered not ready.
const READY_TIMEOUT: Duration = Duration::from_secs(5);

/// What `/readyz` on the metrics listener reports: whether the holder is ready, and why —
///
/// ```json
/// {"status": "ready" | "not_ready",
///  "checks": {"store": {"writable": true, "probed": false, "busy": false, "lastWriteAgeSecs": 3,
///                       "freeBytes": 52428800, "writeBatches": {"batches": 40, "writes": 95, "largest": 6}},
///             "outbox": {"backlog": 0, "oldestAgeSecs": 0, "dropped": 0},
///             "index": {"inStep": true, "updating": false, "opening": false, "generation": 4, "storeGeneration": 4,
///                       "offers": 120},
///             "pool": {"size": 8, "inUse": 1, "idle": 3, "waits": 0, "waitTimeouts": 0, "connectionErrors": 0}}}
/// ```
///
/// `writeBatches` counts, since start, the intent writes committed in batches (drafts
/// and `/mcp/buyer` publishes, one durable commit per batch: [`crate::base::BatchStats`];
/// always zero on PostgreSQL, where each commit is durable by itself); it informs and
/// never decides readiness. `pool` and `feed` are there on PostgreSQL only: the store's connections
/// ([`crate::store::PoolStats`]), which inform and never decide readiness (a lost
/// database already fails the store check); and the change feed
/// (`{"inStep": true, "version": 42, "applied": 42, "lastInStepSecs": 0, "notifications": 40}`): a replica
/// behind it for more than `follow::FEED_BOUND` is not ready.
///
/// Ready means the store takes writes ([`crate::store::Store::writable`]) and the offer
/// index is in step with the store's catalogue (not while `isto serve` is still opening
/// or rebuilding it after the start: `opening`); the outbox is reported but never makes
/// the holder not ready (a stuck SMTP server must not take it out of a load balancer:
/// see `docs/choices.md`). Blocking (store I/O); changes nothing a user can see.
pub fn readiness(holder: &AppState) -> (bool, Value) {
    let w = holder.base.store().writable(READY_FRESH);
    let store = json!({"writable": w.ok, "probed": w.probed, "busy": w.busy, "lastWriteAgeSecs": w.age_secs,
                       "freeBytes": w.free_bytes, "writeBatches": batches(holder)});
    let outbox = match holder.base.outbox().backlog() {
        Ok(b) => json!({"backlog": b.jobs, "oldestAgeSecs": b.oldest_age_secs, "dropped": b.dropped}),
        Err(e) => {
            tracing::debug!(error = %e, "readiness: outbox unreadable");
            json!({"backlog": null, "oldestAgeSecs": null, "dropped": null, "error": "unreadable"})
        }
    };
    let (in_step, index) = index_check(holder);
    let feed = super::follow::behind(holder);
    let ready = w.ok && in_step && !feed.as_ref().is_some_and(|f| f.0);
    let mut checks = json!({"store": store, "outbox": outbox, "index": index});
    if let Some((_, f)) = feed {
        checks["feed"] = f;
    }
    if let Some(p) = holder.base.store().pool_stats() {
        checks["pool"] = json!({"size": p.size, "inUse": p.in_use, "idle": p.idle, "waits": p.waits,
                                "waitTimeouts": p.wait_timeouts, "connectionErrors": p.connection_errors});
    }
    (ready, json!({"status": if ready { "ready" } else { "not_ready" }, "checks": checks}))
}

/// The `writeBatches` of [`readiness`].
fn batches(holder: &AppState) -> Value {
    let b = holder.base.batch_stats();
    json!({"batches": b.batches, "writes": b.writes, "largest": b.largest})
}

/// Whether the holder is ready, as [`readiness`] decides it, without reading the outbox.
/// Blocking.
pub fn ready(holder: &AppState) -> bool {
    holder.base.store().writable(READY_FRESH).ok
        && index_check(holder).0
        && !super::follow::behind(holder).is_some_and(|f| f.0)
}

/// Whether the offer index is in step, and its part of the report.
fn index_check(holder: &AppState) -> (bool, Value) {
    match holder.catalogue.index_status() {
        Ok(i) => (
            i.in_step,
            json!({"inStep": i.in_step, "updating": i.updating, "opening": i.opening,
                   "generation": i.index_generation, "storeGeneration": i.store_generation, "offers": i.offers}),
        ),
        Err(e) => {
            tracing::debug!(error = %e, "readiness: offer index unavailable");
            (false, json!({"inStep": false, "error": "unavailable"}))
        }
    }
}

/// The response: 200 when ready, 503 when not; never cached.
fn answer(ready: bool, body: Value) -> Response {
    let code = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (code, [(header::CACHE_CONTROL, "no-store")], axum::Json(body)).into_response()
}

/// `GET /readyz` on the public listener: `{"status": "ready"}` with 200, or
/// `{"status": "not_ready"}` with 503 (also when the check takes longer than 5 s).
pub async fn public(holder: AppState) -> Response {
    let check = tokio::task::spawn_blocking(move || ready(&holder));
    let ready = matches!(tokio::time::timeout(READY_TIMEOUT, check).await, Ok(Ok(true)));
    answer(ready, json!({"status": if ready { "ready" } else { "not_ready" }}))
}

/// `GET /readyz` on the metrics listener: [`readiness`] as JSON, 200 when ready, 503
/// when not (also when the checks take longer than 5 s, then with `"error": "timeout"`).
pub async fn detailed(holder: AppState) -> Response {
    let checks = tokio::task::spawn_blocking(move || readiness(&holder));
    let (ready, body) = match tokio::time::timeout(READY_TIMEOUT, checks).await {
        Ok(Ok(r)) => r,
        Ok(Err(_)) | Err(_) => (false, json!({"status": "not_ready", "checks": {}, "error": "timeout"})),
    };
    answer(ready, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock as _, ManualClock};
    use crate::config::{PublicUrl, Settings};
    use crate::crypto::KeyRing;
    use crate::store::Store;
    use axum::body::Body;
    use axum::extract::Request;
    use axum::Router;
    use std::sync::Arc;
    use tokio_util::sync::CancellationToken;
    use tower::ServiceExt as _;

    /// A holder for `https://holder.example` over `dir`, with a manual clock.
    fn holder(dir: &std::path::Path) -> (AppState, Arc<ManualClock>) {
        let mut s = Settings::defaults();
        s.data_dir = dir.to_owned();
        s.public_url = PublicUrl::parse("https://holder.example").unwrap();
        let store = Store::open(&dir.join("isto.redb")).unwrap();
        let clock = Arc::new(ManualClock::new(crate::clock::parse_rfc3339("2026-12-01T10:00:00Z").unwrap()));
        (AppState::new(s, store, KeyRing::ephemeral(), clock.clone()), clock)
    }

    /// `GET path` on `app`: the status and the body (as JSON when it is JSON).
    async fn get(app: &Router, path: &str) -> (StatusCode, Value, String) {
        let req = Request::get(path).header("host", "holder.example").body(Body::empty()).unwrap();
        let res = app.clone().oneshot(req).await.unwrap();
        let status = res.status();
        let bytes = axum::body::to_bytes(res.into_body(), usize::MAX).await.unwrap();
        let text = String::from_utf8(bytes.to_vec()).unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null), text)
    }

    /// The public `/readyz` says ready or not and nothing else; the metrics listener's
    /// `/readyz` has the report (store, outbox with its age, index) with the same status
    /// code; `/healthz` stays liveness.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn public_readyz_says_only_ready_and_the_metrics_listener_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let (h, clock) = holder(dir.path());
        let public = crate::app::router(h.clone(), CancellationToken::new());
        let private = crate::app::metrics::router(h.clone());
        let (code, _, text) = get(&public, "/readyz").await;
        assert_eq!((code, text.as_str()), (StatusCode::OK, r#"{"status":"ready"}"#));
        let (code, body, _) = get(&private, "/readyz").await;
        assert_eq!(code, StatusCode::OK, "{body}");
        assert_eq!(body["status"], "ready");
        assert_eq!(body["checks"]["store"]["writable"], true);
        assert_eq!(body["checks"]["outbox"], json!({"backlog": 0, "oldestAgeSecs": 0, "dropped": 0}));
        assert_eq!(body["checks"]["index"]["inStep"], true);

        // Queued mail is reported on the metrics listener with its age, never in public,
        // and alone never makes the holder unready.
        let content = crate::mail::MailContent {
            to: "a@b.example".into(),
            subject: "s".into(),
            text: "t".into(),
            unsubscribe_url: "https://holder.example/u".into(),
        };
        let job =
            crate::mail::MailJob::seal(h.base.keys(), None, &content, clock.now().unix_timestamp(), "holder.example")
                .unwrap();
        h.base.store().write(|tx| tx.enqueue_mail(&job)).unwrap();
        clock.advance(time::Duration::minutes(90));
        let (code, _, text) = get(&public, "/readyz").await;
        assert_eq!((code, text.as_str()), (StatusCode::OK, r#"{"status":"ready"}"#), "no backlog in public");
        let (code, body, _) = get(&private, "/readyz").await;
        assert_eq!(code, StatusCode::OK, "{body}");
        assert_eq!(body["checks"]["outbox"], json!({"backlog": 1, "oldestAgeSecs": 5400, "dropped": 0}));

        // An index that missed a catalogue change: not ready, 503 on both; only the
        // metrics listener says why. /healthz still ok.
        h.base.store().write(|tx| tx.bump_offers_generation()).unwrap();
        let (code, _, text) = get(&public, "/readyz").await;
        assert_eq!((code, text.as_str()), (StatusCode::SERVICE_UNAVAILABLE, r#"{"status":"not_ready"}"#));
        let (code, body, _) = get(&private, "/readyz").await;
        assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        assert_eq!(body["status"], "not_ready");
        assert_eq!(body["checks"]["index"]["inStep"], false);
        assert_eq!(body["checks"]["store"]["writable"], true);
        let (code, _, text) = get(&public, "/healthz").await;
        assert_eq!((code, text.as_str()), (StatusCode::OK, "ok\n"));
    }
}
