//! `isto serve`: opens the store and keys, assembles the router (`/mcp`, pages,
//! `/healthz` and `/readyz`), starts the outbox worker, the reply matching, the expiry sweeper and the admin socket, and
//! shuts down gracefully on SIGTERM or Ctrl-C.

use crate::clock::SystemClock;
use crate::config::Settings;
use crate::crypto::KeyRing;
use crate::mcp::service::{accept_json, mcp_service, negotiate_initialize, protect};
use crate::mcp::Endpoint;
use crate::net::{ClientAddr, TrustedProxies};
use crate::policy::Resource;
use crate::state::AppState;
use crate::store::Store;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tower_http::trace::TraceLayer;
use tracing::Span;

pub mod listener;
pub mod metrics;
pub mod rate;
pub mod ready;
pub mod systemd;

pub use listener::{listen, serve_http, LISTEN_BACKLOG};

/// A start-up failure, with what to do.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The data directory cannot be created.
    #[error("cannot create data directory {0}: {1}")]
    DataDir(String, std::io::Error),
    /// The store cannot be opened (the hint about another server only when another
    /// process holds the file; a store newer than this isto says what to do itself).
    #[error("{0}{hint}", hint = if .0.is_already_open() { " (is another `isto serve` running on this data directory?)" } else { "" })]
    Store(#[from] crate::store::StoreError),
    /// The store file cannot be opened at start: its path, and the cause (with a hint
    /// for another server holding it or a permission the user lacks).
    #[error("cannot open the store {0}: {1}{hint}", hint = open_hint(.1))]
    StoreOpen(String, crate::store::StoreError),
    /// The store exists but its sealing key does not.
    #[error("the sealing key {0} is missing but the store exists: restore the key from your backup (a new key could not open the sealed contacts and limits)")]
    MissingKey(String),
    /// The sealing key cannot be loaded or created.
    #[error(transparent)]
    Key(#[from] crate::crypto::CryptoError),
    /// The key ring is not this store's (a wrong or missing key file): the check says
    /// which file or key ids.
    #[error(transparent)]
    WrongKeys(#[from] crate::state::KeyCheckError),
    /// The active intents could not be loaded into the matching engine: the cause.
    #[error("cannot load the active intents into the matching engine: {0}; isto did not start")]
    Engine(String),
    /// Mail transport misconfigured.
    #[error(transparent)]
    Mail(#[from] crate::mail::MailError),
    /// The listen address cannot be bound.
    #[error("cannot listen on {0}: {1}; {hint}", hint = bind_hint(.1))]
    Bind(std::net::SocketAddr, std::io::Error),
    /// The admin socket cannot be created (`DATA_DIR/admin.sock`).
    #[error("cannot create the admin socket {0}: {1}{hint}", hint = socket_hint(.1))]
    AdminSocket(String, std::io::Error),
    /// The server stopped with an I/O error.
    #[error("server: {0}")]
    Io(#[from] std::io::Error),
}

/// The hint of [`ServeError::StoreOpen`].
fn open_hint(e: &crate::store::StoreError) -> &'static str {
    if e.is_already_open() {
        " (is another `isto serve` running on this data directory?)"
    } else if e.is_permission_denied() {
        "; run `isto serve` as the data directory's owner (the packaged unit runs it as the user `isto`)"
    } else {
        ""
    }
}

impl ServeError {
    /// A short fixed phrase for the kind of failure (no path, no address), for the
    /// service manager's `STATUS=` ([`systemd::failed`]).
    pub fn kind(&self) -> &'static str {
        match self {
            ServeError::DataDir(..) => "cannot create the data directory",
            ServeError::Store(_) | ServeError::StoreOpen(..) => "cannot open the store",
            ServeError::MissingKey(_) => "the sealing key is missing",
            ServeError::Key(_) => "cannot load the sealing key",
            ServeError::WrongKeys(_) => "the key files are not this store's",
            ServeError::Engine(_) => "cannot load the matching engine",
            ServeError::Mail(_) => "mail transport misconfigured",
            ServeError::Bind(..) => "cannot listen",
            ServeError::AdminSocket(..) => "cannot create the admin socket",
            ServeError::Io(_) => "server I/O error",
        }
    }
}

/// What to do when the listen address cannot be bound, by the error's kind.
fn bind_hint(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::AddrInUse => {
            "another program (another `isto serve`?) uses that port: stop it, or choose another address with `listen` in the config, ISTO_LISTEN or --listen"
        }
        std::io::ErrorKind::PermissionDenied => {
            "ports below 1024 need CAP_NET_BIND_SERVICE: listen on a higher port behind a reverse proxy, or grant the capability (see the README)"
        }
        std::io::ErrorKind::AddrNotAvailable => {
            "no interface of this machine has that address: use 127.0.0.1, 0.0.0.0 or one of its own addresses (`listen`, ISTO_LISTEN or --listen)"
        }
        _ => "check `listen` in the config, ISTO_LISTEN or --listen",
    }
}

/// What to do when the admin socket cannot be bound (a Unix socket path has at most 107
/// bytes on Linux).
fn socket_hint(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::InvalidInput => " (a Unix socket path has at most 107 bytes: choose a shorter data_dir)",
        _ => "",
    }
}

/// What one start of `isto serve` creates under the data directory, so that a start that
/// fails before it serves removes exactly that and nothing else (issue 11 point 7: a
/// failed start leaves no new data directory, sealing key or store behind).
///
/// [`Fresh::survey`] notes, before anything is created, which of the paths a start may
/// create do not exist yet: the data directory itself (then its topmost missing
/// ancestor, as `create_dir_all` makes it), or else inside an existing one the store,
/// the sealing and handle keys, the `keys/`, `index/` and `outbox/` directories. Dropped
/// while armed, it removes those of them that exist now, files first; [`Fresh::keep`]
/// disarms it once the holder serves. A path that existed before is never touched.
#[derive(Debug)]
struct Fresh {
    /// Paths this start may create that did not exist at the survey, files first.
    made: Vec<std::path::PathBuf>,
    /// Whether dropping removes them.
    armed: bool,
}

impl Fresh {
    /// Notes the paths under `settings.data_dir` that do not exist yet.
    fn survey(settings: &Settings) -> Self {
        let absent = |p: &std::path::Path| std::fs::symlink_metadata(p).is_err();
        let dir = &settings.data_dir;
        let made = if absent(dir) {
            // The topmost ancestor that does not exist: `create_dir_all` makes it and
            // everything below.
            let mut top = dir.clone();
            while let Some(parent) = top.parent().filter(|p| !p.as_os_str().is_empty() && absent(p)) {
                top = parent.to_path_buf();
            }
            vec![top]
        } else {
            let key = settings.key_path();
            let mut paths =
                vec![settings.store_path(), KeyRing::handle_key_path(&key), KeyRing::mac_key_path(&key), key.clone()];
            paths.extend(key.parent().map(std::path::Path::to_path_buf));
            paths.push(dir.join("index"));
            paths.push(settings.outbox_dir());
            paths.into_iter().filter(|p| absent(p)).collect()
        };
        Self { made, armed: true }
    }

    /// The start succeeded: keep everything.
    fn keep(mut self) {
        self.armed = false;
    }
}

impl Drop for Fresh {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        for p in &self.made {
            let removed = match std::fs::symlink_metadata(p) {
                Ok(m) if m.is_dir() => std::fs::remove_dir_all(p),
                Ok(_) => std::fs::remove_file(p),
                Err(_) => continue,
            };
            match removed {
                Ok(()) => tracing::info!(path = %p.display(), "failed start: removed what it had created"),
                Err(e) => {
                    tracing::warn!(path = %p.display(), error = %e, "failed start: cannot remove what it had created")
                }
            }
        }
    }
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
    let store = Store::open_cached(&store_path, settings.store_cache_mib)
        .map_err(|e| ServeError::StoreOpen(store_path.display().to_string(), e))?;
    crate::crypto::set_mode(&store_path, 0o600)
        .map_err(|e| ServeError::DataDir(store_path.display().to_string(), e))?;
    crate::state::check_keys(&store, &keys, &settings.key_path())?;
    let index_dir = settings.data_dir.join("index");
    let state = AppState::with_index_dir(settings, store, keys, Arc::new(SystemClock), Some(index_dir));
    if let Some(e) = state.base.engine_failure.as_deref() {
        return Err(ServeError::Engine(e.to_owned()));
    }
    Ok((state, created))
}

/// A request's id: 16 hex digits, made here for every request (an incoming
/// `x-request-id` is not trusted: it would put a client's text into the log), carried in
/// the request span and sent back in the `x-request-id` response header.
#[derive(Debug, Clone)]
struct RequestId(String);

/// The request-id response header.
const REQUEST_ID: &str = "x-request-id";

/// The router's outermost layer: gives the request its [`RequestId`] (in the
/// extensions, for the span) and the response its `x-request-id` header, and counts
/// the request in the Prometheus request metrics when its response head is ready
/// (route pattern or `telemetry::UNMATCHED`, method, status, latency). One layer rather
/// than two: each `from_fn` layer clones the whole inner service per request (issue 12
/// point 3, measured with `perf`).
async fn outer(mut req: Request, next: Next) -> Response {
    let id = format!("{:016x}", rand::random::<u64>());
    req.extensions_mut().insert(RequestId(id.clone()));
    let started = metrics::Started::of(&req);
    let mut res = next.run(req).await;
    started.count(&res);
    if let Ok(v) = HeaderValue::from_str(&id) {
        res.headers_mut().insert(REQUEST_ID, v);
    }
    res
}

/// The span of one request: method, route pattern (never the path: page URLs carry
/// tokens), the request id, and — recorded when the response starts — status and
/// latency (`ms`). Everything logged while answering the request is inside it.
fn request_span(req: &Request) -> Span {
    let route = metrics::route_of(req).unwrap_or_else(|| "-".to_owned());
    let id = req.extensions().get::<RequestId>().map(|r| r.0.as_str()).unwrap_or("-");
    tracing::info_span!(
        "request",
        method = %req.method(),
        route = %route,
        id = %id,
        status = tracing::field::Empty,
        ms = tracing::field::Empty
    )
}

/// The access log: one line per request, inside its span, when the response starts.
fn log_response(res: &Response, latency: Duration, span: &Span) {
    span.record("status", res.status().as_u16());
    span.record("ms", latency.as_millis() as u64);
    tracing::info!(target: "isto::access", "request");
}

/// What [`front`] needs: the trusted proxies (client address), the per-address rate
/// limits, the origins allowed to post forms.
#[derive(Debug)]
struct Front {
    trusted: Arc<TrustedProxies>,
    limits: Arc<rate::RateLimits>,
    origins: Arc<Vec<String>>,
}

/// The router's layer inside the request span, in this order: the request's
/// [`ClientAddr`] ([`client_of_request`]), the per-address rate limit
/// ([`rate::refuse_client`]: 429), the request's span and (on `/mcp`) its CPU charge
/// ([`rate::mcp_charge`]) put into its extensions for the MCP tools (rmcp runs them in a session task outside the span and hands them the
/// request's parts), and the refusal of cross-site page POSTs ([`cross_site_post`]). One
/// layer rather than four: each `from_fn` layer clones the whole inner service per
/// request (issue 12 point 3, measured with `perf`).
async fn front(State(f): State<Arc<Front>>, mut req: Request, next: Next) -> Response {
    let client = client_of_request(&f.trusted, &req);
    req.extensions_mut().insert(client);
    if let Some(refused) = rate::refuse_client(&f.limits, &req) {
        return refused;
    }
    req.extensions_mut().insert(Span::current());
    if let Some(charge) = rate::mcp_charge(&f.limits, &req) {
        req.extensions_mut().insert(charge);
    }
    if let Some(refused) = cross_site_post(&f.origins, &req) {
        return refused;
    }
    next.run(req).await
}

/// Refuses page POSTs whose `Origin` is another site's (a second line of defence beside
/// the CSRF tokens): the 403 answer, else None. `/mcp` checks Host and Origin itself; the
/// RFC 8058 one-click POST comes from mail providers' servers, which send no Origin.
fn cross_site_post(allowed: &[String], req: &Request) -> Option<Response> {
    let path = req.uri().path();
    // Machine endpoints: /mcp checks Host and Origin itself; browser-based MCP clients
    // call the OAuth token, registration and revocation endpoints cross-origin (CORS).
    let machine = path.starts_with("/mcp") || matches!(path, "/oauth/token" | "/oauth/register" | "/oauth/revoke");
    if req.method() != axum::http::Method::POST || machine {
        return None;
    }
    let origin = req.headers().get(axum::http::header::ORIGIN)?;
    let o = origin.to_str().unwrap_or("").trim_end_matches('/').to_ascii_lowercase();
    // Pages send `Referrer-Policy: no-referrer`, under which browsers post their forms
    // with `Origin: null`; the CSRF token decides then.
    (o != "null" && !allowed.contains(&o))
        .then(|| (axum::http::StatusCode::FORBIDDEN, "Forbidden: cross-site form post\n").into_response())
}

/// The ceiling on what any `RUST_LOG` can turn on (issue 10 point 6): isto's own targets
/// as the filter says, every other crate's at `warn` and above only. Below warn, rmcp
/// logs whole MCP messages (intentCode, statement, hidden limit, consent token), lettre
/// the SMTP conversation (recipients), hyper and h2 request and response bytes; none of
/// that may reach a log, whatever the operator sets. rmcp is held to `error`: at `warn`
/// it logs every JSON-RPC error response with its message, which quotes the tool or
/// method name the client sent (any string: an e-mail address, a statement); its
/// `error` events are transport failures (tested in `tests/it/log_privacy.rs`).
pub fn log_ceiling(meta: &tracing::Metadata<'_>) -> bool {
    let target = meta.target();
    if target == "isto" || target.starts_with("isto::") {
        return true;
    }
    let ceiling =
        if target == "rmcp" || target.starts_with("rmcp::") { tracing::Level::ERROR } else { tracing::Level::WARN };
    *meta.level() <= ceiling
}

/// Puts the request's [`ClientAddr`] into its extensions ([`client_of_request`]); the
/// router does this in [`front`].
#[cfg(test)]
async fn client_addr(State(trusted): State<Arc<TrustedProxies>>, mut req: Request, next: Next) -> Response {
    let client = client_of_request(&trusted, &req);
    req.extensions_mut().insert(client);
    next.run(req).await
}

/// The request's [`ClientAddr`]: the socket peer (from the `ConnectInfo` that
/// [`serve_http`] adds per connection), or the client named by `X-Forwarded-For` when
/// the peer is a trusted proxy (see [`crate::net`]).
fn client_of_request(trusted: &TrustedProxies, req: &Request) -> ClientAddr {
    let peer = req.extensions().get::<ConnectInfo<std::net::SocketAddr>>().map(|ConnectInfo(a)| *a);
    listener::client_of(trusted, peer, req.headers())
}

/// `GET /healthz`: liveness only — the process is up and answering (issue 9 point 7).
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
    // Clients that accept only JSON get JSON (issue 12 point 1); an `initialize` naming
    // a newer version in its header too is negotiated down, not refused.
    let json = || axum::middleware::from_fn(accept_json);
    let newer = || axum::middleware::from_fn(negotiate_initialize);
    McpServices {
        public: Router::new()
            .nest_service("/mcp", mcp_service(holder.clone(), Endpoint::Public, stop.clone()))
            .layer(json())
            .layer(newer()),
        buyer: Router::new()
            .nest_service("/mcp/buyer", mcp_service(holder.clone(), Endpoint::Buyer, stop.clone()))
            .layer(json())
            .layer(newer()),
        seller: Router::new()
            .nest_service("/mcp/seller", mcp_service(holder, Endpoint::Seller, stop))
            .layer(json())
            .layer(newer()),
    }
}

/// The whole HTTP router: the MCP endpoints (the OAuth-protected two behind the bearer
/// middleware), the pages, the OAuth routes; every request in its own span with a
/// request id (see [`request_span`]), rate-limited per client address and, on
/// `/mcp/buyer` and `/mcp/seller`, per credential ([`rate`]; a sweeper task forgets idle
/// clients until `stop`).
pub fn router(holder: AppState, stop: CancellationToken) -> Router {
    let url = &holder.base.settings.public_url;
    // The origin as browsers send it: without the default port.
    let mut origins = vec![url.base.clone()];
    origins.extend(url.allowed_origins());
    let origins = Arc::new(origins);
    let trusted = Arc::new(holder.base.settings.trusted_proxies.clone());
    let oauth = crate::oauth::Server::new(holder.base.clone());
    let limits = Arc::new(rate::RateLimits::new(&holder.base.settings.limits));
    if let Ok(rt) = tokio::runtime::Handle::try_current() {
        rt.spawn(rate::sweeper(Arc::downgrade(&limits), stop.clone()));
    }
    let mcp = mcp_services(holder.clone(), stop);
    // The bearer check runs first and puts the grant in; then its credential is counted.
    let per_credential = axum::middleware::from_fn_with_state(limits.clone(), rate::per_credential);
    let buyer = protect(mcp.buyer.layer(per_credential.clone()), &holder, Resource::Buyer);
    let seller = protect(mcp.seller.layer(per_credential), &holder, Resource::Seller);
    let trace = TraceLayer::new_for_http()
        .make_span_with(request_span)
        .on_request(())
        .on_response(log_response)
        .on_body_chunk(())
        .on_eos(())
        .on_failure(());
    mcp.public
        .merge(buyer)
        .merge(seller)
        .route("/healthz", get(healthz))
        .route("/readyz", {
            let h = holder.clone();
            get(move || ready::public(h.clone()))
        })
        .merge(crate::web::routes(holder.clone(), oauth.clone()))
        .merge(crate::web::oauth::routes(oauth))
        .layer(axum::middleware::from_fn_with_state(Arc::new(Front { trusted, limits, origins }), front))
        .layer(trace)
        .layer(axum::middleware::from_fn(outer))
}

/// Runs `isto serve` until SIGTERM/Ctrl-C. Under systemd (`Type=notify`, see
/// [`systemd`]) it reports `STATUS=` phases, `READY=1` once it listens with the store
/// and the offer index open (it answers before that: the index opens in the
/// background, `/readyz` not ready until then), `STOPPING=1` at the signal, and pings
/// the watchdog when the unit sets one.
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

/// The mail transport `s` names: its SMTP server, or `.eml` files in `DATA_DIR/outbox`
/// (created, owner-only).
fn mail_transport(s: &Settings) -> Result<crate::mail::Transport, ServeError> {
    Ok(crate::mail::Transport::with_timeout(
        s.smtp_url.as_deref(),
        &s.outbox_dir(),
        s.allow_plaintext_auth,
        Duration::from_secs(s.smtp_timeout_secs),
    )?
    .with_hello(&s.helo_name()))
}

/// [`serve`] without the failure status.
async fn serve_until_signal(mut settings: Settings) -> Result<(), ServeError> {
    systemd::status("opening the store");
    // Descriptors first: out of them, `accept` fails before any connection limit acts.
    settings.limits.max_connections = listener::nofile::raise_and_fit(settings.limits.max_connections);
    // Listen first and check the SMTP server's URL: a port in use or a bad URL is
    // reported before anything is created on disk.
    let listener = listen(settings.listen).map_err(|e| ServeError::Bind(settings.listen, e))?;
    let metrics_listener = match settings.metrics_listen {
        Some(addr) => Some(listen(addr).map_err(|e| ServeError::Bind(addr, e))?),
        None => None,
    };
    let smtp = match settings.smtp_url {
        Some(_) => Some(mail_transport(&settings)?),
        None => None,
    };
    // From here on what this start creates is removed again if it fails before serving.
    let fresh = Fresh::survey(&settings);
    let (holder, created) = tokio::task::block_in_place(|| open_holder(settings))?;
    let s = &holder.base.settings;
    // The .eml directory is made inside the data directory that `open_holder` made
    // owner-only (made first, it would have created the data directory with the umask).
    let transport = match smtp {
        Some(t) => t,
        None => mail_transport(s)?,
    };
    let admin_socket = crate::admin::AdminSocket::bind(&s.admin_socket_path())
        .map_err(|e| ServeError::AdminSocket(s.admin_socket_path().display().to_string(), e))?;
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
    // The offer index is opened (and rebuilt when it lags the store) in the background
    // once the listener answers (issue 12 point 3: a rebuild no longer delays the first
    // answer): `/readyz` says not ready (`opening`) until it is in step, and a search
    // before then waits for it (it never sees a half-built index). `READY=1` follows it.
    systemd::status("opening the offer index");
    let index_task = {
        let h = holder.clone();
        tokio::task::spawn_blocking(move || {
            let opened = h.catalogue.offer_index().map(|i| i.num_docs());
            let active = h.base.engine.len();
            let offers = match opened {
                Ok(n) => {
                    tracing::info!(offers = n, active_intents = active, "catalogue index and matching engine ready");
                    Some(n)
                }
                Err(e) => {
                    tracing::error!(error = %e, "offer index unavailable; search fails until restart");
                    None
                }
            };
            systemd::ready(&match offers {
                Some(n) => format!("serving: {n} offers, {active} active intents"),
                None => format!("serving without the offer index (search fails): {active} active intents"),
            });
        })
    };
    let stop = CancellationToken::new();
    tracing::info!(listen = %s.listen, public_url = %s.public_url.base, data_dir = %s.data_dir.display(), "isto serving; MCP at {}/mcp", s.public_url.base);

    let worker = tokio::spawn(crate::mail::worker::run(
        holder.base.outbox.clone(),
        Arc::new(holder.digests()),
        transport,
        stop.clone(),
    ));
    // Seller replies are matched on their own jittered tick, not by the mail worker.
    let replies = tokio::spawn(holder.reply_ticker().run(stop.clone()));
    let admin = tokio::spawn(admin_socket.run(holder.clone(), stop.clone()));
    let metrics = metrics_listener.map(|l| {
        if let Ok(addr) = l.local_addr() {
            tracing::info!(listen = %addr, "metrics at /metrics");
        }
        tokio::spawn(metrics::serve(l, holder.clone(), stop.clone()))
    });
    let sweeper = {
        let (h, stop) = (holder.clone(), stop.clone());
        tokio::spawn(async move {
            loop {
                let h2 = h.clone();
                let swept = tokio::task::spawn_blocking(move || {
                    // The purge first: it deletes lapsed drafts, which the sweep leaves to it.
                    let purged = h2.intents.purge(false);
                    let intents = h2.intents.sweep().and_then(|n| Ok(n + h2.intents.sweep_renewals()?));
                    (purged, intents)
                })
                .await;
                match swept {
                    Ok((purged, intents)) => {
                        if let Err(e) = purged {
                            tracing::error!(error = %e, "purge failed");
                        }
                        match intents {
                            Ok(n) if n > 0 => tracing::info!(changed = n, "expiry sweep"),
                            Err(e) => tracing::error!(error = %e, "expiry sweep failed"),
                            _ => {}
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
    {
        let stop = stop.clone();
        tokio::spawn(async move {
            wait_for_signal().await;
            tracing::info!("shutting down");
            systemd::stopping();
            stop.cancel();
        });
    }
    // The socket listens since the start (connections wait in its backlog) and is
    // accepted from at once; `READY=1` comes with the offer index (above).
    fresh.keep();
    serve_http(listener, app, s.limits, s.trusted_proxies.clone(), stop.clone()).await;
    stop.cancel();
    // The worker, the admin socket and the sweeper stop on `stop` at once (the worker
    // drops a stuck SMTP conversation: its job stays queued); a sweep in progress gets
    // the rest of the shutdown budget (issue 9 point 5: stop within 10 s).
    let _ = tokio::time::timeout(SHUTDOWN_TASKS, async {
        let _ = worker.await;
        let _ = replies.await;
        let _ = admin.await;
        let _ = sweeper.await;
        let _ = index_task.await;
        if let Some(m) = metrics {
            let _ = m.await;
        }
    })
    .await;
    Ok(())
}

/// How long a shutdown waits for open connections to finish their requests.
pub const SHUTDOWN_CONNECTIONS: Duration = Duration::from_secs(8);
/// How long a shutdown then waits for the background tasks; with
/// [`SHUTDOWN_CONNECTIONS`] and the runtime's own bound (`main`) under 10 s in all.
pub const SHUTDOWN_TASKS: Duration = Duration::from_secs(1);

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::config::PublicUrl;
    use axum::body::Body;
    use std::sync::{Mutex, OnceLock};
    use tower::ServiceExt as _;

    /// Everything logged in this test binary from the first call on (one global
    /// subscriber: the tools log on blocking threads and in rmcp's session tasks).
    fn captured_log() -> Arc<Mutex<Vec<u8>>> {
        static LOG: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
        LOG.get_or_init(|| {
            let buf = Arc::new(Mutex::new(Vec::new()));
            let w = buf.clone();
            let subscriber = tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::new("info,rmcp=warn"))
                .with_ansi(false)
                .with_writer(move || Writer(w.clone()))
                .finish();
            tracing::subscriber::set_global_default(subscriber).unwrap();
            buf
        })
        .clone()
    }

    struct Writer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Writer {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn log_text(log: &Mutex<Vec<u8>>) -> String {
        String::from_utf8_lossy(&log.lock().unwrap()).into_owned()
    }

    /// Settings for `https://holder.example` over `dir`, its store and a manual clock.
    fn holder_parts(dir: &std::path::Path) -> (Settings, Store, Arc<ManualClock>) {
        let mut s = Settings::defaults();
        s.data_dir = dir.to_owned();
        s.public_url = PublicUrl::parse("https://holder.example").unwrap();
        let store = Store::open(&dir.join("isto.redb")).unwrap();
        let clock = Arc::new(ManualClock::new(crate::clock::parse_rfc3339("2026-12-01T10:00:00Z").unwrap()));
        (s, store, clock)
    }

    /// Sends `body` to `/mcp`; answers the response's request id, session id and body.
    async fn mcp(app: &Router, session: Option<&str>, body: &str) -> (String, Option<String>, String) {
        let mut b = Request::post("/mcp")
            .header("host", "holder.example")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(s) = session {
            b = b.header("mcp-session-id", s).header("mcp-protocol-version", "2025-06-18");
        }
        let res = app.clone().oneshot(b.body(Body::from(body.to_owned())).unwrap()).await.unwrap();
        let header = |n: &str| res.headers().get(n).map(|v| v.to_str().unwrap().to_owned());
        let (id, sid) = (header(REQUEST_ID).expect("x-request-id"), header("mcp-session-id"));
        let bytes = axum::body::to_bytes(res.into_body(), usize::MAX).await.unwrap();
        (id, sid, String::from_utf8(bytes.to_vec()).unwrap())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_internal_error_is_logged_once_with_its_request_id_and_never_answered() {
        let log = captured_log();
        let dir = tempfile::tempdir().unwrap();
        let (s, store, clock) = holder_parts(dir.path());
        // The offer index cannot be created under a regular file: every search fails.
        let blocker = dir.path().join("not-a-directory");
        std::fs::write(&blocker, b"").unwrap();
        let h = AppState::with_index_dir(s, store, KeyRing::ephemeral(), clock, Some(blocker.join("index")));
        let cause = h.catalogue.offer_index().unwrap_err().to_string();
        assert!(!cause.is_empty());
        let app = router(h, CancellationToken::new());

        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        let (_, sid, _) = mcp(&app, None, init).await;
        let sid = sid.expect("a session");
        mcp(&app, Some(&sid), r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
        let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"intent_search_offers","arguments":{"statement":"Škoda Octavia"}}}"#;
        let (request_id, _, body) = mcp(&app, Some(&sid), call).await;

        // The client gets the generic message only.
        assert!(body.contains("internal error: the holder could not complete the call; try again later"), "{body}");
        assert!(body.contains("\"isError\":true"), "{body}");
        assert!(!body.contains(&cause), "the cause leaked into the response: {body}");
        assert_eq!(request_id.len(), 16, "{request_id}");

        // The log has the cause once, on a line inside the call's request span.
        let text = log_text(&log);
        let lines: Vec<&str> = text.lines().filter(|l| l.contains(&cause)).collect();
        assert_eq!(lines.len(), 1, "the cause must be logged exactly once:\n{text}");
        assert!(lines[0].contains(&format!("id={request_id}")), "{}", lines[0]);
        assert!(lines[0].contains("request{method=POST route=/mcp"), "{}", lines[0]);
        assert!(lines[0].contains("tool failed") && lines[0].contains("intent_search_offers"), "{}", lines[0]);
        // And the access line of that request, with status and latency.
        let access: Vec<&str> =
            text.lines().filter(|l| l.contains(&format!("id={request_id}")) && l.contains(" request")).collect();
        assert!(access.iter().any(|l| l.contains("status=200") && l.contains("ms=")), "{access:?}");
    }

    #[tokio::test]
    async fn the_client_address_comes_from_the_socket_or_a_trusted_proxy() {
        let seen = |trusted: TrustedProxies, peer: &str, xff: &[&str]| {
            let app = Router::new()
                .route("/", get(|axum::Extension(c): axum::Extension<ClientAddr>| async move { format!("{:?}", c.0) }))
                .layer(axum::middleware::from_fn_with_state(Arc::new(trusted), client_addr));
            let mut req = Request::get("/");
            for v in xff {
                req = req.header("x-forwarded-for", *v);
            }
            let mut req = req.body(Body::empty()).unwrap();
            req.extensions_mut().insert(ConnectInfo(peer.parse::<std::net::SocketAddr>().unwrap()));
            async move {
                let res = app.oneshot(req).await.unwrap();
                String::from_utf8(axum::body::to_bytes(res.into_body(), 1024).await.unwrap().to_vec()).unwrap()
            }
        };
        let lo = TrustedProxies::loopback;
        assert_eq!(seen(lo(), "127.0.0.1:5", &["192.0.2.7"]).await, "Some(192.0.2.7)");
        // Two header lines read as one list, the last entry first.
        assert_eq!(seen(lo(), "127.0.0.1:5", &["198.51.100.1", "192.0.2.7"]).await, "Some(192.0.2.7)");
        assert_eq!(seen(lo(), "192.0.2.9:5", &["192.0.2.7"]).await, "Some(192.0.2.9)");
        // A client's own lines before the one its proxy appends (HAProxy adds a line of
        // its own): however many, the proxy's line decides.
        let mut many = vec!["203.0.113.66"; 12];
        many.push("192.0.2.7");
        assert_eq!(seen(lo(), "127.0.0.1:5", &many).await, "Some(192.0.2.7)");
        assert_eq!(seen(TrustedProxies::none(), "127.0.0.1:5", &["192.0.2.7"]).await, "Some(127.0.0.1)");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn request_spans_carry_the_route_pattern_never_the_token() {
        let log = captured_log();
        let dir = tempfile::tempdir().unwrap();
        let (s, store, clock) = holder_parts(dir.path());
        let app = router(AppState::new(s, store, KeyRing::ephemeral(), clock), CancellationToken::new());
        let token = "tok3n-that-must-never-be-logged-0123456789";
        let req = Request::get(format!("/consent/{token}")).header("host", "holder.example").body(Body::empty());
        let res = app.oneshot(req.unwrap()).await.unwrap();
        assert_eq!(res.status(), axum::http::StatusCode::NOT_FOUND);
        let id = res.headers().get(REQUEST_ID).unwrap().to_str().unwrap().to_owned();
        let text = log_text(&log);
        let line = text.lines().find(|l| l.contains(&format!("id={id}"))).unwrap_or_else(|| panic!("{text}"));
        assert!(line.contains("method=GET route=/consent/{token}"), "{line}");
        assert!(line.contains("status=404"), "{line}");
        assert!(!text.contains(token), "a URL token reached the log:\n{text}");
    }
}
