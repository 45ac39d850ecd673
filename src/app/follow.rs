//! The change-feed follower of `isto serve` on PostgreSQL (issue 27 point 3): every
//! [`FEED_POLL`] it applies what other replicas wrote ([`AppState::catch_up`]), so a
//! withdrawal on one replica leaves the engine and the listings of every other within
//! about that time. `/readyz` (both listeners) says not ready while this replica has
//! been behind the feed for more than [`FEED_BOUND`] ([`behind`]). On redb it does not
//! run (one process per store).

use crate::state::AppState;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Time between two reads of the change feed.
pub const FEED_POLL: Duration = Duration::from_millis(200);

/// Longest time a replica may be behind the change feed and still be ready.
pub const FEED_BOUND: Duration = Duration::from_secs(5);

/// Applies the change feed every [`FEED_POLL`] until `stop`; a failure is logged once
/// until a pass succeeds again ([`crate::schedule::every`]).
pub(super) async fn run(holder: AppState, stop: CancellationToken) {
    crate::schedule::every(FEED_POLL, "applying the change feed", stop, move || holder.catch_up().map(drop)).await;
}

/// Whether this replica is behind the change feed by more than [`FEED_BOUND`], with its
/// part of the readiness report (`None` on redb). Blocking (one query).
pub fn behind(holder: &AppState) -> Option<(bool, serde_json::Value)> {
    match holder.base.store().feed_lag() {
        Ok(None) => None,
        Ok(Some((version, applied, since))) => {
            let late = applied < version && since > FEED_BOUND;
            Some((
                late,
                serde_json::json!({"inStep": !late, "version": version, "applied": applied,
                                   "lastInStepSecs": since.as_secs()}),
            ))
        }
        Err(e) => {
            tracing::debug!(error = %e, "readiness: the change feed is unreadable");
            Some((true, serde_json::json!({"inStep": false, "error": "unreadable"})))
        }
    }
}
