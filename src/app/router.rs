//! The HTTP router of `isto serve`: the MCP endpoints, the pages, the OAuth routes,
//! `/healthz` and `/readyz`, under the layers every request passes — its id and span
//! ([`outer`], [`request_span`]), the request metrics, the client address, the
//! per-address rate limit and the refusal of cross-site form posts ([`front`]).

use super::{listener, rate, ready};
use crate::mcp::service::{mcp_service, protect};
use crate::mcp::Endpoint;
use crate::net::{ClientAddr, TrustedProxies};
use crate::policy::Resource;
use crate::state::AppState;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument as _, Span};

/// A request's id: 16 hex digits, made here for every request (an incoming
/// `x-request-id` is not trusted: it would put a client's text into the log), carried in
/// the request span and sent back in the `x-request-id` response header.
#[derive(Debug, Clone)]
struct RequestId(String);

/// The request-id response header.
const REQUEST_ID: &str = "x-request-id";

/// The router's outermost layer: gives the request its [`RequestId`] and its span
/// ([`request_span`]), runs the rest of the router inside that span, then writes the
/// access log line ([`log_response`]), counts the request in the request metrics
/// ([`super::metrics::Started`]) and gives the response its `x-request-id` header. One
/// layer rather than three: each `from_fn` layer clones the whole inner service per
/// request, and a `tower-http` `TraceLayer` entered the span at every poll of the
/// response and of its body.
async fn outer(req: Request, next: Next) -> Response {
    let id = RequestId(format!("{:016x}", rand::random::<u64>()));
    let started = super::metrics::Started::of(&req);
    let span = request_span(&req, started.route(), &id);
    let mut res = next.run(req).instrument(span.clone()).await;
    log_response(&res, started.elapsed(), &span);
    started.count(&res);
    if let Ok(v) = HeaderValue::from_str(&id.0) {
        res.headers_mut().insert(REQUEST_ID, v);
    }
    res
}

/// The span of one request: method, route pattern (`route`, never the path: page URLs
/// carry tokens), the request id, and — recorded when the response starts — status and
/// latency (`ms`). Everything logged while answering the request is inside it.
fn request_span(req: &Request, route: Option<&str>, id: &RequestId) -> Span {
    tracing::info_span!(
        "request",
        method = %req.method(),
        route = %route.unwrap_or("-"),
        id = %id.0,
        status = tracing::field::Empty,
        ms = tracing::field::Empty
    )
}

/// The access log: one line per request, inside its span, when the response starts.
fn log_response(res: &Response, latency: Duration, span: &Span) {
    span.record("status", res.status().as_u16());
    span.record("ms", latency.as_millis() as u64);
    tracing::info!(target: "isto::access", parent: span, "request");
}

/// What [`front`] needs.
#[derive(Debug)]
struct Front {
    trusted: Arc<TrustedProxies>,
    limits: Arc<rate::RateLimits>,
    origins: Arc<Vec<String>>,
}

/// The router's layer inside the request span, in this order: the request's
/// [`ClientAddr`] ([`client_of_request`]), the per-address rate limit
/// ([`rate::refuse_client`]: 429), the request's span and (on `/mcp`) its CPU charge
/// ([`rate::mcp_charge`]) put into its extensions for the MCP tools (rmcp runs them in
/// a session task outside the span and hands them the request's parts), and the refusal
/// of cross-site page POSTs ([`cross_site_post`]). One layer rather than four, as
/// [`outer`].
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
/// the CSRF tokens): the 403 answer, else None. The RFC 8058 one-click POST comes from
/// mail providers' servers, which send no Origin.
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
    let mount = |path: &str, endpoint| mcp_service(holder.clone(), endpoint, path, stop.clone());
    McpServices {
        public: mount("/mcp", Endpoint::Public),
        buyer: mount("/mcp/buyer", Endpoint::Buyer),
        seller: mount("/mcp/seller", Endpoint::Seller),
    }
}

/// The whole HTTP router (see the module docs): the OAuth-protected MCP endpoints behind
/// the bearer middleware and rate-limited per credential too ([`rate`]; a sweeper task
/// forgets idle clients until `stop`).
pub fn router(holder: AppState, stop: CancellationToken) -> Router {
    let url = &holder.base.settings().public_url;
    // The origin as browsers send it: without the default port.
    let mut origins = vec![url.base.clone()];
    origins.extend(url.allowed_origins());
    let origins = Arc::new(origins);
    let trusted = Arc::new(holder.base.settings().trusted_proxies.clone());
    let oauth = crate::oauth::Server::new(holder.base.clone());
    let limits = Arc::new(rate::RateLimits::new(&holder.base.settings().limits));
    if let Ok(rt) = tokio::runtime::Handle::try_current() {
        rt.spawn(rate::sweeper(Arc::downgrade(&limits), stop.clone()));
    }
    let mcp = mcp_services(holder.clone(), stop);
    // The bearer check runs first and puts the grant in; then its credential is counted.
    let per_credential = axum::middleware::from_fn_with_state(limits.clone(), rate::per_credential);
    let buyer = protect(mcp.buyer.layer(per_credential.clone()), &holder, Resource::Buyer);
    let seller = protect(mcp.seller.layer(per_credential), &holder, Resource::Seller);
    mcp.public
        .merge(buyer)
        .merge(seller)
        // Liveness only: the process is up and answering.
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", {
            let h = holder.clone();
            get(move || ready::public(h.clone()))
        })
        .merge(crate::web::routes(holder.clone(), oauth.clone()))
        .merge(crate::web::oauth::routes(oauth))
        .layer(axum::middleware::from_fn_with_state(Arc::new(Front { trusted, limits, origins }), front))
        .layer(axum::middleware::from_fn(outer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::config::PublicUrl;
    use crate::config::Settings;
    use crate::crypto::KeyRing;
    use crate::store::Store;
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
            use tracing_subscriber::layer::SubscriberExt as _;
            let targets: tracing_subscriber::filter::Targets = "info,rmcp=warn".parse().unwrap();
            let subscriber = tracing_subscriber::fmt()
                .with_ansi(false)
                .with_writer(move || Writer(w.clone()))
                .finish()
                .with(targets);
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
