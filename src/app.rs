//! `isto serve`: opens the store and keys (`start`), assembles the router (`router`:
//! `/mcp`, pages, `/healthz` and `/readyz`), starts the background tasks (`tasks`: the
//! mail worker, the domain's scheduler, the admin socket, the metrics listener), serves
//! (`listener`) and shuts down gracefully on SIGTERM or Ctrl-C.

use crate::config::Settings;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub mod follow;
pub mod listener;
pub mod logbuf;
pub mod metrics;
pub mod rate;
pub mod ready;
mod router;
mod start;
pub mod systemd;
mod tasks;

pub use listener::{listen, serve_http, LISTEN_BACKLOG};
pub use router::{mcp_services, router, McpServices};
pub use start::{open_holder, ServeError};

/// The ceiling on what any `RUST_LOG` can turn on: isto's own targets as the filter says,
/// every other crate's at `warn` and above only. Below warn, rmcp logs whole MCP messages
/// (intentCode, statement, hidden limit, consent token), lettre the SMTP conversation
/// (recipients), hyper and h2 request and response bytes; none of that may reach a log,
/// whatever the operator sets. rmcp is held to `error`: at `warn` it logs every JSON-RPC
/// error response with its message, which quotes the tool or method name the client sent
/// (any string: an e-mail address, a statement); its `error` events are transport
/// failures (tested in `tests/it/log_privacy.rs`).
pub fn log_ceiling(meta: &tracing::Metadata<'_>) -> bool {
    let target = meta.target();
    if target == "isto" || target.starts_with("isto::") {
        return true;
    }
    let ceiling =
        if target == "rmcp" || target.starts_with("rmcp::") { tracing::Level::ERROR } else { tracing::Level::WARN };
    *meta.level() <= ceiling
}

/// Runs `isto serve` until SIGTERM/Ctrl-C, reporting to systemd ([`systemd`]): `READY=1`
/// comes once the offer index is open (it answers before that: `/readyz` not ready).
///
/// # Errors
/// [`ServeError`] on start-up failures (also sent as `STATUS=`).
pub async fn serve(settings: Settings) -> Result<(), ServeError> {
    if let Some(every) = systemd::spawn_watchdog() {
        tracing::info!(interval_ms = every.as_millis() as u64, "systemd watchdog pings");
    }
    let served = serve_until_signal(settings).await;
    if let Err(e) = &served {
        systemd::failed(e.kind());
    }
    served
}

/// [`serve`] without the failure status.
async fn serve_until_signal(mut settings: Settings) -> Result<(), ServeError> {
    systemd::status("opening the store");
    // Descriptors first: out of them, `accept` fails before any connection limit acts.
    settings.limits.max_connections = listener::nofile::raise_and_fit(settings.limits.max_connections);
    // Listen first and check the SMTP server's URL: a port in use or a bad URL is
    // reported before anything is created on disk.
    let listener = listen(settings.listen).map_err(|e| ServeError::Bind(settings.listen, e))?;
    let metrics_listener =
        settings.metrics_listen.map(|a| listen(a).map_err(|e| ServeError::Bind(a, e))).transpose()?;
    let smtp = settings.smtp_url.as_ref().map(|_| start::mail_transport(&settings)).transpose()?;
    // From here on what this start creates is removed again if it fails before serving.
    let fresh = start::Fresh::survey(&settings);
    let (holder, created) = tokio::task::block_in_place(|| open_holder(settings))?;
    let s = &holder.base.settings();
    // The .eml directory is made inside the data directory that `open_holder` made
    // owner-only (made first, it would have created the data directory with the umask).
    let transport = smtp.map_or_else(|| start::mail_transport(s), Ok)?;
    let admin_socket = crate::admin::AdminSocket::bind(&s.admin_socket_path())
        .map_err(|e| ServeError::AdminSocket(s.admin_socket_path().display().to_string(), e))?;
    start::log_start(s, created);
    let stop = CancellationToken::new();
    let tasks = tasks::Tasks::start(&holder, transport, admin_socket, metrics_listener, &stop);
    tracing::info!(listen = %s.listen, public_url = %s.public_url.base, data_dir = %s.data_dir.display(), "isto serving; MCP at {}/mcp", s.public_url.base);
    let app = router(holder.clone(), stop.clone());
    // The socket listens since the start (connections wait in its backlog) and is
    // accepted from at once; `READY=1` comes with the offer index (`tasks`).
    fresh.keep();
    serve_http(listener, app, s.limits, s.trusted_proxies.clone(), stop.clone()).await;
    stop.cancel();
    tasks.join().await;
    Ok(())
}

/// The most threads `isto serve` runs blocking work on at once (tokio's blocking pool:
/// tool calls, store reads and writes, index updates), instead of tokio's 512. Work
/// beyond it waits in the pool's queue. Each thread holds a stack and allocator caches,
/// so a burst of calls (up to `limits.max_connections` at once) no longer leaves hundreds
/// of idle threads' memory behind; 64 still lets a group commit gather 64 waiting writes
/// and keeps the 2 cores of a small VPS busy while some calls wait on the disk.
pub const BLOCKING_THREADS: usize = 64;

/// How long an idle thread of the blocking pool ([`BLOCKING_THREADS`]) stays before it
/// exits, instead of tokio's 10 s. A thread that exits gives back its stack and its
/// allocator caches (jemalloc's thread cache: up to a few MiB a thread after a load).
/// With tokio's 10 s, the scheduler's work every 2 s ([`crate::schedule::DIGEST_EVERY`])
/// woke the idle threads in turn, each before its 10 s ran out, so the threads a burst
/// started (up to 64 during a publish load) stayed for good. A thread costs tens of
/// microseconds to start again.
pub const BLOCKING_KEEP_ALIVE: Duration = Duration::from_secs(2);

/// How long a shutdown waits for open connections to finish their requests.
pub const SHUTDOWN_CONNECTIONS: Duration = Duration::from_secs(8);
/// How long a shutdown then waits for the background tasks; with
/// [`SHUTDOWN_CONNECTIONS`] and the runtime's own bound (`main`) under 10 s in all.
pub const SHUTDOWN_TASKS: Duration = Duration::from_secs(1);
