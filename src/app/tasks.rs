//! The tasks `isto serve` runs beside the HTTP listener, started together and stopped
//! together ([`Tasks`]).

use super::{metrics, systemd, SHUTDOWN_TASKS};
use crate::state::AppState;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The running background tasks: the offer index opening (then `READY=1`), the mail
/// worker (it only sends), the domain's scheduler (`crate::schedule`), on PostgreSQL the
/// change-feed follower (`follow`), the admin socket, the metrics listener, and the wait
/// for SIGTERM or Ctrl-C that cancels `stop`; on redb, with the store's lock file held
/// (`Store::hold_file`), the page cache's release once the holder is quiet
/// ([`release_when_quiet`]).
#[derive(Debug)]
pub(super) struct Tasks {
    running: Vec<JoinHandle<()>>,
}

impl Tasks {
    /// Starts every task over `holder`; they stop at `stop`.
    pub(super) fn start(
        holder: &AppState,
        transport: crate::mail::Transport,
        admin_socket: crate::admin::AdminSocket,
        metrics_listener: Option<tokio::net::TcpListener>,
        stop: &CancellationToken,
    ) -> Self {
        let mut running = vec![open_index(holder.clone())];
        running.push(tokio::spawn(crate::mail::worker::run(holder.base.outbox().clone(), transport, stop.clone())));
        running.push(tokio::spawn(holder.scheduler().run(stop.clone())));
        if holder.base.store().pool_stats().is_some() {
            running.push(tokio::spawn(super::follow::run(holder.clone(), stop.clone())));
        } else if holder.base.store().hold_file() {
            running.push(tokio::spawn(release_when_quiet(holder.clone(), stop.clone())));
        }
        let admin = admin_socket.run(holder.clone(), stop.clone());
        running.push(tokio::spawn(async move {
            if let Err(e) = admin.await {
                tracing::error!(error = %e, "admin socket stopped");
            }
        }));
        if let Some(l) = metrics_listener {
            if let Ok(addr) = l.local_addr() {
                tracing::info!(listen = %addr, "metrics at /metrics");
            }
            running.push(tokio::spawn(metrics::serve(l, holder.clone(), stop.clone())));
        }
        let stop = stop.clone();
        running.push(tokio::spawn(async move {
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = wait_for_signal() => {
                    tracing::info!("shutting down");
                    systemd::stopping();
                    stop.cancel();
                }
            }
        }));
        Self { running }
    }

    /// Waits for the tasks to end after `stop`, at most [`SHUTDOWN_TASKS`]: the worker,
    /// the admin socket and the scheduler stop at once (the worker drops a stuck SMTP
    /// conversation: its job stays queued); a sweep in progress gets the rest of the
    /// shutdown budget (stop within 10 s in all).
    pub(super) async fn join(self) {
        let _ = tokio::time::timeout(SHUTDOWN_TASKS, async {
            for t in self.running {
                let _ = t.await;
            }
        })
        .await;
    }
}

/// How long the holder answers no request (health checks aside) before `isto serve`
/// gives the store's page cache back ([`crate::store::Store::release_cache`]): the
/// memory a load left in it returns to the system, and the next calls read their pages
/// from the operating system's page cache again (docs/choices.md, "The page cache is
/// given back when quiet").
pub const RELEASE_CACHE_AFTER: Duration = Duration::from_secs(30);

/// How often [`release_when_quiet`] looks at the request count.
const QUIET_CHECK: Duration = Duration::from_secs(5);

/// Tells a quiet spell from the count of requests answered ([`Quiet::due`]).
#[derive(Debug)]
struct Quiet {
    /// The count at the last check.
    seen: u64,
    /// When the count last moved (or the start).
    since: Instant,
    /// The cache may hold pages: there were calls (or the start) since the last release.
    used: bool,
}

impl Quiet {
    /// From the start: `count` requests answered by `now`; the start counts as use.
    fn new(count: u64, now: Instant) -> Self {
        Self { seen: count, since: now, used: true }
    }

    /// Whether to release the cache now, `count` requests having been answered by `now`:
    /// once per spell of [`RELEASE_CACHE_AFTER`] without requests that follows some.
    fn due(&mut self, count: u64, now: Instant) -> bool {
        if count != self.seen {
            (self.seen, self.since, self.used) = (count, now, true);
            return false;
        }
        self.used && now.duration_since(self.since) >= RELEASE_CACHE_AFTER
    }
}

/// Gives the store's page cache back after every quiet spell ([`RELEASE_CACHE_AFTER`]);
/// a release that cannot happen now (a call holds the file) is tried at the next check.
async fn release_when_quiet(holder: AppState, stop: CancellationToken) {
    let mut quiet = Quiet::new(crate::telemetry::requests_answered(), Instant::now());
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(QUIET_CHECK) => {}
        }
        if !quiet.due(crate::telemetry::requests_answered(), Instant::now()) {
            continue;
        }
        let base = holder.base.clone();
        if let Ok(true) = tokio::task::spawn_blocking(move || base.store().release_cache()).await {
            quiet.used = false;
            tracing::debug!("store page cache given back after a quiet spell");
        }
    }
}

/// Opens the offer index (rebuilt when it lags the store) on a blocking thread, so that
/// a rebuild does not delay the first answer (a search waits for it; `/readyz` says not
/// ready until then). `READY=1` follows it.
fn open_index(holder: AppState) -> JoinHandle<()> {
    systemd::status("opening the offer index");
    tokio::task::spawn_blocking(move || {
        let active = holder.base.engine_len();
        systemd::ready(&match holder.catalogue.offer_index().map(|i| i.num_docs()) {
            Ok(n) => {
                tracing::info!(offers = n, active_intents = active, "catalogue index and matching engine ready");
                format!("serving: {n} offers, {active} active intents")
            }
            Err(e) => {
                tracing::error!(error = %e, "offer index unavailable; search fails until restart");
                format!("serving without the offer index (search fails): {active} active intents")
            }
        });
    })
}

/// Resolves at SIGTERM or Ctrl-C (isto is built for Unix only: the admin socket is one).
async fn wait_for_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = ctrl_c.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_is_released_once_per_quiet_spell_that_follows_requests() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut q = Quiet::new(7, t0);
        assert!(!q.due(7, at(29)), "quiet for less than RELEASE_CACHE_AFTER");
        assert!(q.due(7, at(30)), "the start counts as use: released after its quiet");
        q.used = false;
        assert!(!q.due(7, at(90)), "nothing new since the release");
        assert!(!q.due(9, at(95)), "requests: the spell starts again");
        assert!(!q.due(9, at(124)));
        assert!(q.due(9, at(125)));
        // A release that could not happen is tried again at the next check.
        assert!(q.due(9, at(130)));
    }
}
