//! The one test kit of the integration tests: an [`AppState`] over a real store — a redb
//! file in a temp dir, or with `ISTO_TEST_BACKEND=postgres` a new database of a
//! throw-away PostgreSQL cluster (`isto::store::testpg`) — with a [`ManualClock`], the production router (`isto::app::router`) driven
//! in-process (axum's `oneshot` pattern), form and JSON-RPC helpers, the outbox reader,
//! and the account sign-up every suite needs.

use axum::body::Body;
use axum::http::{header, HeaderMap, Method, Request, StatusCode};
use axum::Router;
use isto::clock::ManualClock;
use isto::config::{PublicUrl, Settings};
use isto::crypto::KeyRing;
use isto::mail::{MailContent, MailJob};
use isto::state::AppState;
use isto::store::{Reads as _, Store};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

pub mod load;
pub mod net;

/// The clock's start.
pub const START: &str = "2026-12-01T10:00:00Z";

/// The public URL of the kit's holder unless [`Opts::public_url`] says otherwise.
pub const BASE: &str = "https://holder.example";

/// How the kit's holder is set up.
#[derive(Clone, Copy)]
pub struct Opts {
    /// `public_url` (Host and Origin checks, links in mail).
    pub public_url: &'static str,
    /// `demand_k`; `None` keeps the default.
    pub demand_k: Option<u32>,
    /// Open the offer index on disk under the data dir (as `isto serve` does) instead of
    /// in memory.
    pub index_on_disk: bool,
    /// `limits.max_mcp_sessions`; `None` keeps the default.
    pub max_mcp_sessions: Option<usize>,
    /// `[limits]` as given (then `max_mcp_sessions` applies on top). `None`: the defaults,
    /// with the request rates and the per-client session cap at their maxima, because the
    /// kit's requests carry no peer address and so all count as one client.
    pub limits: Option<isto::config::Limits>,
    /// `[quotas]`; `None` keeps the defaults.
    pub quotas: Option<isto::config::Quotas>,
    /// Start the clock at the system time instead of [`START`]: for stores the real
    /// binary reads afterwards (it runs on the system clock, so drafts made at a fixed
    /// past [`START`] would already have lapsed).
    pub wall_clock: bool,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            public_url: BASE,
            demand_k: None,
            index_on_disk: false,
            max_mcp_sessions: None,
            limits: None,
            quotas: None,
            wall_clock: false,
        }
    }
}

/// The default `[limits]` with every request rate and the per-client session cap at the
/// top of its range (see [`Opts::limits`]).
/// A test that cannot run here because `what` is missing: skipped with a message on a
/// developer's machine, but a failure in CI (`CI` set), where `.ci/run` installs every
/// prerequisite and a silent skip would hide a test that never ran.
pub fn prerequisite_missing(what: &str) {
    assert!(std::env::var_os("CI").is_none(), "in CI a prerequisite is missing, so this test would not run: {what}");
    eprintln!("SKIPPED: {what}");
}

/// The value of the Prometheus series `series` (its name and labels, as rendered) in
/// this process's metrics now; 0 when it is not there yet. The metrics are process-wide:
/// compare before and after, other tests may only add.
pub fn metric(series: &str) -> f64 {
    let text = isto::telemetry::render(None);
    text.lines().find_map(|l| l.strip_prefix(series)).and_then(|v| v.trim().parse().ok()).unwrap_or(0.0)
}

pub fn unlimited() -> isto::config::Limits {
    isto::config::Limits {
        max_mcp_sessions_per_client: 100_000,
        mcp_requests_per_minute: 1_000_000,
        mcp_burst: 100_000,
        credential_requests_per_minute: 1_000_000,
        credential_burst: 100_000,
        page_requests_per_minute: 1_000_000,
        page_burst: 100_000,
        oauth_requests_per_minute: 1_000_000,
        oauth_burst: 100_000,
        ..isto::config::Limits::default()
    }
}

/// Settings for a holder in `dir`: English pages, the public URL and `demand_k` of `opts`.
pub fn settings(dir: &Path, opts: Opts) -> Settings {
    let mut s = Settings::defaults();
    s.data_dir = dir.to_owned();
    s.default_language = "en".into();
    s.public_url = PublicUrl::parse(opts.public_url).unwrap();
    if let Some(k) = opts.demand_k {
        s.demand_k = k;
    }
    s.limits = opts.limits.unwrap_or_else(unlimited);
    if let Some(n) = opts.max_mcp_sessions {
        s.limits.max_mcp_sessions = n;
    }
    if let Some(q) = opts.quotas {
        s.quotas = q;
    }
    if backend_is_postgres() {
        s.store_postgres = Some(database_of(dir));
    }
    s
}

/// Whether the tests run on PostgreSQL (`ISTO_TEST_BACKEND=postgres`; the default,
/// `redb`, or anything else: the redb file).
pub fn backend_is_postgres() -> bool {
    std::env::var("ISTO_TEST_BACKEND").is_ok_and(|b| b == "postgres")
}

/// The PostgreSQL database of the holder in `dir`: made at the first call for the
/// directory and kept for this test process in a map by path, so that a reopened
/// holder, the binary run on the directory and the rows read back all find it. Nothing
/// is written into `dir` (tests compare data directories file by file, and a refused
/// restore must leave no directory behind).
pub fn database_of(dir: &Path) -> isto::store::PgSettings {
    static DATABASES: std::sync::Mutex<Vec<(std::path::PathBuf, isto::store::PgSettings)>> =
        std::sync::Mutex::new(Vec::new());
    let mut known = DATABASES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, db)) = known.iter().find(|(d, _)| d == dir) {
        return db.clone();
    }
    let db = isto::store::testpg::database();
    known.push((dir.to_owned(), db.clone()));
    db
}

/// Whether a test is about the redb file itself (its lock, its bytes, its repair, its
/// permissions): true on redb; on PostgreSQL false, after saying on stderr which test is
/// left out and `why` (a test of the PostgreSQL equivalent, where there is one, runs
/// instead). Not a skip for a missing prerequisite: the test has no meaning there.
pub fn redb_only(test: &str, why: &str) -> bool {
    if !backend_is_postgres() {
        return true;
    }
    eprintln!("redb only, not run on PostgreSQL: {test}: {why}");
    false
}

/// A clock standing at [`START`].
pub fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(isto::clock::parse_rfc3339(START).unwrap()))
}

/// A clock standing at the system time (whole seconds), for stores that the real
/// binary, on the system clock, reads afterwards.
pub fn wall_clock() -> Arc<ManualClock> {
    let now = isto::clock::Clock::now(&isto::clock::SystemClock).replace_nanosecond(0).unwrap();
    Arc::new(ManualClock::new(now))
}

/// [`wall_clock`] when `opts.wall_clock`, else [`clock`].
pub fn clock_for(opts: &Opts) -> Arc<ManualClock> {
    if opts.wall_clock {
        wall_clock()
    } else {
        clock()
    }
}

/// Opens (or reopens) the holder in `dir`: the store and a sealing key kept in the dir,
/// so a reopened holder reads what the last one sealed.
pub fn open_state(dir: &Path, clock: Arc<ManualClock>, opts: Opts) -> AppState {
    let settings = settings(dir, opts);
    let (keys, _) = KeyRing::load_or_create(&settings.key_path()).unwrap();
    let store = Store::open_at(&settings.store_location()).unwrap();
    let index = opts.index_on_disk.then(|| dir.join("index"));
    AppState::with_index_dir(settings, store, keys, clock, index)
}

/// Everything queued in the outbox, opened, oldest first.
pub fn mails(h: &AppState) -> Vec<MailContent> {
    let jobs: Vec<(u64, MailJob)> = h.base.store().read(|rx| rx.outbox()).unwrap();
    jobs.iter().map(|(_, j)| serde_json::from_slice(&h.base.keys().open(&j.sealed).unwrap()).unwrap()).collect()
}

/// The token after `marker` (e.g. `/confirm/`) in the newest queued mail containing it.
pub fn token_from_outbox(h: &AppState, marker: &str) -> String {
    for m in mails(h).iter().rev() {
        if let Some(i) = m.text.find(marker) {
            return m.text[i + marker.len()..].split_whitespace().next().unwrap().to_owned();
        }
    }
    panic!("no mail with {marker}");
}

/// A holder in a temp dir, the production router over it and a runtime to drive it.
pub struct Fx {
    pub dir: tempfile::TempDir,
    pub clock: Arc<ManualClock>,
    pub holder: AppState,
    /// `isto::app::router` over `holder`.
    pub app: Router,
    pub rt: tokio::runtime::Runtime,
    pub opts: Opts,
    /// The router's MCP services' cancellation token.
    pub stop: CancellationToken,
}

/// A response with its body read.
pub struct Resp {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Resp {
    pub fn location(&self) -> &str {
        self.headers.get(header::LOCATION).map(|v| v.to_str().unwrap()).unwrap_or_default()
    }

    pub fn cookie(&self) -> Option<String> {
        let v = self
            .headers
            .get_all(header::SET_COOKIE)
            .iter()
            .map(|v| v.to_str().unwrap())
            .find(|v| !v.contains("isto_pre="))?;
        Some(v.split(';').next().unwrap().to_owned())
    }

    /// The `name=value` of the pre-session cookie a sign-in or sign-up form's GET sets
    /// (the forms' CSRF tokens are bound to it), if any.
    pub fn pre_cookie(&self) -> Option<String> {
        let v = self
            .headers
            .get_all(header::SET_COOKIE)
            .iter()
            .map(|v| v.to_str().unwrap())
            .find(|v| v.contains("isto_pre="))?;
        Some(v.split(';').next().unwrap().to_owned())
    }

    /// The CSRF token of the form posting to `action`.
    pub fn csrf_for(&self, action: &str) -> String {
        let at = self
            .body
            .find(&format!("action=\"{action}\""))
            .unwrap_or_else(|| panic!("no form for {action} in:\n{}", self.body));
        let marker = "name=\"csrf\" value=\"";
        let from = at + self.body[at..].find(marker).unwrap() + marker.len();
        self.body[from..].split('"').next().unwrap().to_owned()
    }
}

impl Fx {
    /// A fixture with [`Opts::default`].
    pub fn new() -> Fx {
        Fx::with(Opts::default())
    }

    /// A fixture set up as `opts` says.
    pub fn with(opts: Opts) -> Fx {
        let dir = tempfile::tempdir().unwrap();
        let clock = clock_for(&opts);
        let holder = open_state(dir.path(), clock.clone(), opts);
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let stop = CancellationToken::new();
        let app = isto::app::router(holder.clone(), stop.clone());
        Fx { dir, clock, holder, app, rt, opts, stop }
    }

    /// Stops and reopens the holder on the same files (a restart: in-memory state such as
    /// the engine and the offer index is rebuilt from the store).
    pub fn restart(self) -> Fx {
        let Fx { dir, clock, holder, app, rt, opts, stop } = self;
        stop.cancel();
        drop(app);
        drop(holder);
        let holder = open_state(dir.path(), clock.clone(), opts);
        let stop = CancellationToken::new();
        let app = isto::app::router(holder.clone(), stop.clone());
        Fx { dir, clock, holder, app, rt, opts, stop }
    }

    /// Everything the store holds as bytes, to look for what must never be stored in
    /// the clear: the redb file, or on PostgreSQL every row of the export (the tables'
    /// keys and values as they are stored).
    pub fn store_bytes(&self) -> Vec<u8> {
        if !backend_is_postgres() {
            return std::fs::read(self.dir.path().join(isto::store::FILE_NAME)).unwrap();
        }
        let mut out = Vec::new();
        self.holder
            .base
            .store()
            .export(|step| -> Result<(), isto::store::StoreError> {
                if let isto::store::Export::Row { line, .. } = step {
                    out.extend_from_slice(line.as_bytes());
                    out.push(b'\n');
                }
                Ok(())
            })
            .unwrap();
        out
    }

    /// Sends a request through the router.
    pub fn send(&self, req: Request<Body>) -> Resp {
        send(&self.rt, &self.app, req)
    }

    pub fn get(&self, path: &str, cookie: Option<&str>) -> Resp {
        let mut b = Request::builder().method(Method::GET).uri(path).header(header::ACCEPT_LANGUAGE, "en");
        if let Some(c) = cookie {
            b = b.header(header::COOKIE, c);
        }
        self.send(b.body(Body::empty()).unwrap())
    }

    /// A form POST (`application/x-www-form-urlencoded`).
    pub fn post(&self, path: &str, fields: &[(&str, &str)], cookie: Option<&str>) -> Resp {
        let mut b = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header(header::ACCEPT_LANGUAGE, "en")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        if let Some(c) = cookie {
            b = b.header(header::COOKIE, c);
        }
        self.send(b.body(Body::from(serde_urlencoded::to_string(fields).unwrap())).unwrap())
    }

    /// A JSON POST (the OAuth registration endpoint).
    pub fn post_json(&self, path: &str, v: &Value) -> Resp {
        self.send(
            Request::builder()
                .method(Method::POST)
                .uri(path)
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(v.to_string()))
                .unwrap(),
        )
    }

    pub fn mails(&self) -> Vec<MailContent> {
        mails(&self.holder)
    }

    pub fn token_from_outbox(&self, marker: &str) -> String {
        token_from_outbox(&self.holder, marker)
    }

    /// Signs a buyer up through the account pages (form, e-mail link, Confirm); returns
    /// the account id and the session cookie.
    pub fn buyer(&self, email: &str) -> (String, String) {
        let page = self.get("/signup?next=/me", None);
        assert_eq!(page.status, StatusCode::OK);
        let csrf = page.csrf_for("/signup");
        let r = self.post(
            "/signup",
            &[("csrf", &csrf), ("email", email), ("accept", "yes"), ("lang", "en"), ("next", "/me")],
            page.pre_cookie().as_deref(),
        );
        assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/signup/sent"), "{}", r.body);
        let token = self.token_from_outbox("/signup/confirm/");
        let page = self.get(&format!("/signup/confirm/{token}"), None);
        let csrf = page.csrf_for(&format!("/signup/confirm/{token}"));
        let r = self.post(&format!("/signup/confirm/{token}"), &[("csrf", &csrf)], None);
        assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/me"));
        let cookie = r.cookie().unwrap();
        let account = isto::accounts::account_by_email(&self.holder.base, email).unwrap().unwrap();
        assert_eq!(account.role, "buyer");
        (account.id, cookie)
    }

    /// One JSON-RPC POST to the MCP endpoint `path` of `app` (Host: the public URL's),
    /// with the MCP session id when given and `headers`; returns the response's status,
    /// session id and the JSON-RPC message (from a JSON body or the SSE `data:` line).
    pub fn rpc(
        &self,
        app: &Router,
        path: &str,
        session: Option<&str>,
        headers: &[(&str, String)],
        body: Value,
    ) -> (StatusCode, Option<String>, Value) {
        let host = self.holder.base.settings().public_url.allowed_hosts().into_iter().next().unwrap();
        let mut b = Request::post(path)
            .header("host", host)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(s) = session {
            b = b.header("mcp-session-id", s).header("mcp-protocol-version", "2025-06-18");
        }
        for (k, v) in headers {
            b = b.header(*k, v);
        }
        let req = b.body(Body::from(body.to_string())).unwrap();
        let res = send(&self.rt, app, req);
        let sid = res.headers.get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned());
        let msg = res
            .body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .or_else(|| serde_json::from_str(&res.body).ok())
            .unwrap_or(Value::Null);
        (res.status, sid, msg)
    }
}

/// Sends `req` through `app` on `rt` and reads the body.
pub fn send(rt: &tokio::runtime::Runtime, app: &Router, req: Request<Body>) -> Resp {
    rt.block_on(async {
        let res = app.clone().oneshot(req).await.unwrap();
        let status = res.status();
        let headers = res.headers().clone();
        let body = axum::body::to_bytes(res.into_body(), usize::MAX).await.unwrap();
        Resp { status, headers, body: String::from_utf8(body.to_vec()).unwrap() }
    })
}

/// A buyer grant for `account` on `/mcp/buyer` with the `intents` scope, as a signed-in
/// buyer's OAuth token would give (for calling the buyer tools directly).
pub fn buyer_grant(account: &str) -> isto::oauth::Grant {
    isto::oauth::Grant {
        account_id: account.to_owned(),
        role: "buyer".into(),
        client_id: "client".into(),
        scopes: vec!["intents".into()],
        resource: "https://holder.example/mcp/buyer".into(),
    }
}

/// One `/mcp` tool call as from an unknown client address ([`isto::mcp::dispatch`]);
/// `None` for a tool `/mcp` does not have.
pub fn mcp_call(h: &AppState, name: &str, args: &Value) -> Option<rmcp::model::CallToolResult> {
    mcp_call_as(h, isto::mcp::Endpoint::Public, None, name, args)
}

/// One tool call of `endpoint` with `grant`, as from an unknown client address
/// ([`isto::mcp::dispatch`]); `None` for a tool the endpoint does not have.
pub fn mcp_call_as(
    h: &AppState,
    endpoint: isto::mcp::Endpoint,
    grant: Option<&isto::oauth::Grant>,
    name: &str,
    args: &Value,
) -> Option<rmcp::model::CallToolResult> {
    isto::mcp::dispatch(h, endpoint, grant, isto::net::ClientAddr(None), name, args)
}
