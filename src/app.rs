//! `isto serve`: opens the store and keys, assembles the router (`/mcp`, pages,
//! `/healthz`), starts the outbox worker, the expiry sweeper and the admin socket, and
//! shuts down gracefully on SIGTERM or Ctrl-C.

use crate::clock::SystemClock;
use crate::config::Settings;
use crate::crypto::KeyRing;
use crate::mcp::service::{buyer_service, mcp_service, seller_service};
use crate::state::AppState;
use crate::store::Store;
use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// A start-up failure, with what to do.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The data directory cannot be created.
    #[error("cannot create data directory {0}: {1}")]
    DataDir(String, std::io::Error),
    /// The store cannot be opened.
    #[error("{0} (is another `isto serve` running on this data directory?)")]
    Store(#[from] crate::store::StoreError),
    /// The store exists but its sealing key does not.
    #[error("the sealing key {0} is missing but the store exists: restore the key from your backup (a new key could not open the sealed contacts and limits)")]
    MissingKey(String),
    /// The sealing key cannot be loaded or created.
    #[error(transparent)]
    Key(#[from] crate::crypto::CryptoError),
    /// Mail transport misconfigured.
    #[error(transparent)]
    Mail(#[from] crate::mail::MailError),
    /// The listen address cannot be bound.
    #[error("cannot listen on {0}: {1}")]
    Bind(std::net::SocketAddr, std::io::Error),
    /// The server stopped with an I/O error.
    #[error("server: {0}")]
    Io(#[from] std::io::Error),
}

/// Opens the holder's store and key ring under `settings.data_dir`, creating them on
/// first start. Returns the holder and whether the key was created.
///
/// # Errors
/// [`ServeError`].
pub fn open_holder(settings: Settings) -> Result<(AppState, bool), ServeError> {
    let dir = &settings.data_dir;
    if !dir.exists() {
        std::fs::create_dir_all(dir).map_err(|e| ServeError::DataDir(dir.display().to_string(), e))?;
        // Contacts, tokens in queued mail and keys live here: owner only.
        crate::crypto::set_mode(dir, 0o700).map_err(|e| ServeError::DataDir(dir.display().to_string(), e))?;
    }
    let store_path = settings.store_path();
    if store_path.exists() && !settings.key_path().exists() {
        // A new key would make every sealed contact and limit unreadable.
        return Err(ServeError::MissingKey(settings.key_path().display().to_string()));
    }
    let (keys, created) = KeyRing::load_or_create(&settings.key_path())?;
    let store = Store::open(&store_path)?;
    crate::crypto::set_mode(&store_path, 0o600)
        .map_err(|e| ServeError::DataDir(store_path.display().to_string(), e))?;
    let index_dir = settings.data_dir.join("index");
    Ok((AppState::with_index_dir(settings, store, keys, Arc::new(SystemClock), Some(index_dir)), created))
}

/// Requires a seller token for `/mcp/seller` (PROTOCOL.md §7: scopes `offers`, `demand`).
async fn require_seller(
    axum::extract::State(holder): axum::extract::State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    let resource = crate::oauth::Resource::Seller.url(&holder.base.settings.public_url.base);
    match crate::oauth::check_bearer(&holder.base, req.headers(), &resource, "") {
        Ok(grant) => {
            req.extensions_mut().insert(grant);
            next.run(req).await
        }
        Err(res) => res,
    }
}

/// Logs one line per request: method, route pattern (never the path: page URLs carry
/// tokens), status and latency.
async fn access_log(req: Request, next: Next) -> Response {
    let method = req.method().clone();
    let route = req.extensions().get::<MatchedPath>().map(|m| m.as_str().to_owned()).unwrap_or_else(|| {
        if req.uri().path().starts_with("/mcp") {
            "/mcp".to_owned()
        } else {
            "-".to_owned()
        }
    });
    let start = Instant::now();
    let res = next.run(req).await;
    tracing::info!(target: "isto::access", %method, route, status = res.status().as_u16(), ms = start.elapsed().as_millis() as u64, "request");
    res
}

/// Refuses page POSTs whose `Origin` is another site's (a second line of defence beside
/// the CSRF tokens). `/mcp` checks Host and Origin itself; the RFC 8058 one-click POST
/// comes from mail providers' servers, which send no Origin.
async fn same_origin_posts(
    axum::extract::State(allowed): axum::extract::State<Arc<Vec<String>>>,
    req: Request,
    next: Next,
) -> Response {
    let path = req.uri().path();
    // Machine endpoints: /mcp checks Host and Origin itself; browser-based MCP clients
    // call the OAuth token, registration and revocation endpoints cross-origin (CORS).
    let machine = path.starts_with("/mcp") || matches!(path, "/oauth/token" | "/oauth/register" | "/oauth/revoke");
    if req.method() == axum::http::Method::POST && !machine {
        if let Some(origin) = req.headers().get(axum::http::header::ORIGIN) {
            let o = origin.to_str().unwrap_or("").trim_end_matches('/').to_ascii_lowercase();
            // Pages send `Referrer-Policy: no-referrer`, under which browsers post their
            // forms with `Origin: null`; the CSRF token decides then.
            if o != "null" && !allowed.contains(&o) {
                return (axum::http::StatusCode::FORBIDDEN, "Forbidden: cross-site form post\n").into_response();
            }
        }
    }
    next.run(req).await
}

async fn healthz() -> impl IntoResponse {
    "ok\n"
}

/// The three MCP endpoints, each a router with its Streamable HTTP service mounted at
/// its path and the Host and Origin checks from the public URL. The bearer checks of
/// `/mcp/buyer` and `/mcp/seller` are not in them: [`router`] layers those on.
pub struct McpServices {
    /// `/mcp`: the public endpoint (no account).
    pub public: Router,
    /// `/mcp/buyer`: expects the request's `oauth::Grant` in its extensions.
    pub buyer: Router,
    /// `/mcp/seller`: expects the request's `oauth::Grant` in its extensions.
    pub seller: Router,
}

/// Builds the three MCP endpoints over `holder`; `stop` cancels their sessions.
pub fn mcp_services(holder: AppState, stop: CancellationToken) -> McpServices {
    McpServices {
        public: Router::new().nest_service("/mcp", mcp_service(holder.clone(), stop.clone())),
        buyer: Router::new().nest_service("/mcp/buyer", buyer_service(holder.clone(), stop.clone())),
        seller: Router::new().nest_service("/mcp/seller", seller_service(holder, stop)),
    }
}

/// The whole HTTP router.
pub fn router(holder: AppState, stop: CancellationToken) -> Router {
    let url = &holder.base.settings.public_url;
    // The origin as browsers send it: without the default port.
    let mut origins = vec![url.base.clone()];
    origins.extend(url.allowed_origins());
    let origins = Arc::new(origins);
    let oauth = crate::oauth::Server::new(holder.base.clone());
    let mcp = mcp_services(holder.clone(), stop);
    let buyer =
        mcp.buyer.layer(axum::middleware::from_fn_with_state(holder.clone(), crate::mcp::buyer::require_bearer));
    let seller = mcp.seller.layer(axum::middleware::from_fn_with_state(holder.clone(), require_seller));
    mcp.public
        .merge(buyer)
        .merge(seller)
        .route("/healthz", get(healthz))
        .merge(crate::web::routes(holder.clone(), oauth.clone()))
        .merge(crate::oauth::routes(oauth))
        .layer(axum::middleware::from_fn_with_state(origins, same_origin_posts))
        .layer(axum::middleware::from_fn(access_log))
}

/// Runs `isto serve` until SIGTERM/Ctrl-C.
///
/// # Errors
/// [`ServeError`] on start-up failures.
pub async fn serve(settings: Settings) -> Result<(), ServeError> {
    let transport = crate::mail::Transport::new(
        settings.smtp_url.as_deref(),
        &settings.outbox_dir(),
        settings.allow_plaintext_auth,
    )?;
    let (holder, created) = tokio::task::block_in_place(|| open_holder(settings))?;
    let s = &holder.base.settings;
    if created {
        tracing::warn!(path = %s.key_path().display(), "created a new sealing key; back it up: without it sealed contacts and limits cannot be read");
    } else {
        tracing::info!(path = %s.key_path().display(), "sealing key loaded");
    }
    match &s.smtp_url {
        Some(_) => tracing::info!("mail goes to the configured SMTP server (ISTO_SMTP_URL)"),
        None => {
            tracing::warn!(dir = %s.outbox_dir().display(), "no SMTP configured (ISTO_SMTP_URL): mail is written as .eml files")
        }
    }
    // Open (and if needed rebuild) the offer index now rather than on the first search.
    let h = holder.clone();
    match tokio::task::spawn_blocking(move || h.catalogue.offer_index().map(|i| i.num_docs())).await {
        Ok(Ok(n)) => tracing::info!(
            offers = n,
            active_intents = holder.base.engine.len(),
            "catalogue index and matching engine ready"
        ),
        Ok(Err(e)) => tracing::error!(error = %e, "offer index unavailable; search fails until restart"),
        Err(e) => tracing::error!(error = %e, "offer index task failed"),
    }
    let stop = CancellationToken::new();
    let listener = tokio::net::TcpListener::bind(s.listen).await.map_err(|e| ServeError::Bind(s.listen, e))?;
    tracing::info!(listen = %s.listen, public_url = %s.public_url.base, data_dir = %s.data_dir.display(), "isto serving; MCP at {}/mcp", s.public_url.base);

    let worker = tokio::spawn(crate::mail::worker::run(
        holder.base.outbox.clone(),
        Arc::new(holder.digests()),
        transport,
        stop.clone(),
    ));
    let admin = tokio::spawn(crate::admin::serve_socket(holder.clone(), stop.clone()));
    let sweeper = {
        let (h, stop) = (holder.clone(), stop.clone());
        tokio::spawn(async move {
            loop {
                let h2 = h.clone();
                let swept = tokio::task::spawn_blocking(move || {
                    let intents = h2.intents.sweep().and_then(|n| Ok(n + h2.intents.sweep_renewals()?));
                    let grants = crate::oauth::sweep(&h2.base);
                    let accounts = crate::accounts::sweep(&h2.base);
                    (intents, grants.map_err(|e| e.to_string()), accounts.map_err(|e| e.to_string()))
                })
                .await;
                match swept {
                    Ok((intents, grants, accounts)) => {
                        match intents {
                            Ok(n) if n > 0 => tracing::info!(changed = n, "expiry sweep"),
                            Err(e) => tracing::error!(error = %e, "expiry sweep failed"),
                            _ => {}
                        }
                        if let Err(e) = grants {
                            tracing::error!(error = %e, "OAuth sweep failed");
                        }
                        if let Err(e) = accounts {
                            tracing::error!(error = %e, "account sweep failed");
                        }
                    }
                    Err(e) => tracing::error!(error = %e, "sweep task failed"),
                }
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_secs(60)) => {}
                }
            }
        })
    };

    let app = router(holder.clone(), stop.clone());
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        // Without TCP_NODELAY a streamed MCP reply waits ~40 ms for a delayed ACK.
        let _ = tcp.set_nodelay(true);
    });
    let shutdown = {
        let stop = stop.clone();
        async move {
            wait_for_signal().await;
            tracing::info!("shutting down");
            stop.cancel();
        }
    };
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await?;
    stop.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(10), async {
        let _ = worker.await;
        let _ = admin.await;
        let _ = sweeper.await;
    })
    .await;
    Ok(())
}

async fn wait_for_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
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
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
