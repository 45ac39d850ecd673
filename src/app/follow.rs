//! The change-feed follower of `isto serve` on PostgreSQL (not on redb, one process per
//! store): it applies what other replicas wrote ([`AppState::catch_up`]) as soon as the
//! database notifies it ([`listen`]) and every [`FEED_POLL`] besides, so a withdrawal on
//! one replica leaves the engine and the listings of every other within milliseconds. A
//! replica behind the feed for more than [`FEED_BOUND`] is not ready ([`behind`]).

use crate::state::AppState;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Time between two reads of the change feed without a notification.
pub const FEED_POLL: Duration = Duration::from_millis(200);

/// Longest time a replica may be behind the change feed and still be ready.
pub const FEED_BOUND: Duration = Duration::from_secs(5);

/// First wait before listening again after the listening connection failed or ended.
pub const LISTEN_RETRY_MIN: Duration = Duration::from_millis(200);

/// Longest wait between two tries to listen again (the wait doubles up to it).
pub const LISTEN_RETRY_MAX: Duration = Duration::from_secs(5);

/// Applies the change feed at each notification and every [`FEED_POLL`] until `stop`;
/// a failure is logged once until a pass succeeds again ([`crate::schedule::every_after`]).
pub async fn run(holder: AppState, stop: CancellationToken) {
    let wake = Arc::new(Notify::new());
    let listening = tokio::spawn(listen(holder.clone(), wake.clone(), stop.clone()));
    crate::schedule::every_after(
        || FEED_POLL,
        Some(wake),
        "applying the change feed",
        stop,
        move || holder.catch_up().map(drop),
    )
    .await;
    listening.abort();
}

/// Holds a listening connection and wakes the follower at each notification; opens it
/// again with backoff when it fails or ends, and wakes the follower once it listens
/// again (what was written meanwhile was not notified to it).
async fn listen(holder: AppState, wake: Arc<Notify>, stop: CancellationToken) {
    let mut retry = LISTEN_RETRY_MIN;
    let mut failing = false;
    loop {
        let h = holder.clone();
        let opened = tokio::select! {
            _ = stop.cancelled() => return,
            r = tokio::task::spawn_blocking(move || h.base.store().listen_changes()) => r,
        };
        match opened {
            Ok(Ok(None)) => return,
            Ok(Ok(Some(mut listener))) => {
                if failing {
                    tracing::info!("listening to the change feed again");
                }
                retry = LISTEN_RETRY_MIN;
                wake.notify_one();
                loop {
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        more = listener.notified() => {
                            if !more {
                                break;
                            }
                            holder.base.store().note_notified();
                            wake.notify_one();
                        }
                    }
                }
                tracing::warn!(
                    "the change feed's listening connection ended: reading the feed every 0.2 s until it is back"
                );
                failing = true;
            }
            Ok(Err(e)) => {
                if !failing {
                    tracing::warn!(error = %e, "listening to the change feed failed: reading it every 0.2 s until it works");
                }
                failing = true;
            }
            Err(e) => tracing::error!(error = %e, "listening to the change feed: the task failed"),
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(retry) => {}
        }
        retry = (retry * 2).min(LISTEN_RETRY_MAX);
    }
}

/// Whether this replica is behind the change feed by more than [`FEED_BOUND`], with its
/// part of the readiness report (`None` on redb). Blocking (one query).
pub fn behind(holder: &AppState) -> Option<(bool, serde_json::Value)> {
    let store = holder.base.store();
    match store.feed_lag() {
        Ok(None) => None,
        Ok(Some((version, applied, since))) => {
            let late = applied < version && since > FEED_BOUND;
            Some((
                late,
                serde_json::json!({"inStep": !late, "version": version, "applied": applied,
                                   "lastInStepSecs": since.as_secs(), "notifications": store.feed_notified()}),
            ))
        }
        Err(e) => {
            tracing::debug!(error = %e, "readiness: the change feed is unreadable");
            Some((true, serde_json::json!({"inStep": false, "error": "unreadable"})))
        }
    }
}
