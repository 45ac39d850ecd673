//! The tasks `isto serve` runs beside the HTTP listener, started together and stopped
//! together ([`Tasks`]).

use super::{metrics, systemd, SHUTDOWN_TASKS};
use crate::state::AppState;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The running background tasks: the offer index opening (then `READY=1`), the mail
/// worker (it only sends), the domain's scheduler (`crate::schedule`), on PostgreSQL the
/// change-feed follower (`follow`), the admin socket, the metrics listener, and the wait
/// for SIGTERM or Ctrl-C that cancels `stop`.
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
