//! The MCP load benchmark: isto's MCP path measured side by side with
//! its floors, in one run, on loopback, one server core and one load-generator core.
//!
//! Run: `cargo bench --bench mcp_load` (about 8 minutes on 2 cores; the release build
//! first if it is not there). It builds (as bench-only code in this file, from the same
//! dependency versions as isto) and starts as child processes:
//!
//! - a raw axum JSON handler (`POST /mcp`: parse the JSON-RPC body, answer its params);
//! - a bare rmcp echo server (one tool `echo` returning its arguments) with isto's
//!   Streamable HTTP settings (session mode for 2025-11-25 clients, JSON answers for the
//!   stateless 2026-07-28 requests), driven in both modes; and, as the read tools' floor,
//!   the same echo answering the get's own answer (`intent_get_intent`'s structured
//!   content, read from isto once) to the get's requests, and after the searches over
//!   10^5 offers the search's own answers (one per statement) to the search's requests;
//!   with it, the search's in-process floor over the same index (`common/search_floor.rs`:
//!   a plain tantivy BM25 top-10 query), so that a search's floor is the echo's CPU
//!   per call plus the query's;
//! - `isto serve` (the release binary) on a fresh data dir with a config raising the
//!   `[limits]` and `[quotas]` that would otherwise throttle the load, the real sauto
//!   listings of `../shared/data` imported when present (2 288 offers); then a second
//!   `isto serve` with a generated catalogue of 100 000 more offers for the search target;
//! - last, isto on redb beside isto on PostgreSQL: a throw-away cluster started as the
//!   tests start one (`isto::store::testpg`: initdb + pg_ctl in a temporary directory;
//!   not measured, with the reason printed, when PostgreSQL's binaries are not
//!   installed), both on one generated catalogue (`ISTO_BENCH_STORE_OFFERS`, default 10
//!   000), loaded in turn with 2026-07-28 `intent_get_intent`, `intent_search_offers` and
//!   `intent_publish_intent`; the database cluster's CPU (postmaster and backends) is
//!   measured beside isto's. `ISTO_BENCH_MCP_ONLY=stores` runs only this part;
//!   `ISTO_BENCH_MCP_ONLY=publish` only the durable publish rows with redb's one-row
//!   commit rate and the writes per durable commit (group commit);
//!   `ISTO_BENCH_MCP_ONLY=search` only the rmcp echo (both modes) and the two
//!   `intent_search_offers` phases (real listings, then 10^5 generated offers more) with
//!   their floors, printed, with no report written; `ISTO_BENCH_MCP_ONLY=search-floor`
//!   only the in-process search floor over the index an earlier run left in
//!   `target/bench/mcp_load-work/isto-gen`. `ISTO_BENCH_QUIET_TRACE=1` waits the whole
//!   quiet minute after the load and prints isto's RSS, anonymous RSS and threads each
//!   second.
//!
//! Every server runs under `taskset` on one core (`ISTO_BENCH_SERVER_CPU`, default 0); the
//! load generator (this process: an HTTP/1.1 keep-alive client on tokio's current-thread
//! runtime) on the other (`ISTO_BENCH_CLIENT_CPU`, default 1). Each path is loaded with 16
//! and 64 connections for `ISTO_BENCH_WARM_SECS` (default 4) of warm-up and
//! `ISTO_BENCH_SECS` (default 8) of measurement. A 2025-11-25 connection runs its own
//! session (initialize, notifications/initialized, then `tools/call` with
//! `Mcp-Session-Id`); a 2026-07-28 request is stateless (no initialize, `Mcp-Method` /
//! `Mcp-Name` headers, `_meta` with the protocol version). Every connection binds its own
//! loopback source address (127.1.x.y), so per-client limits count each connection alone.
//! Only answers that are HTTP 200 with a JSON-RPC `result` and no `isError: true` count;
//! the others are counted and printed as errors.
//!
//! Prints a table (req/s, p50/p99 latency, server CPU µs per request from
//! `/proc/PID/stat` utime+stime over the measured window, ratios to the bare rmcp echo in
//! the same mode and to raw axum), redb's one-row durable commit rate measured in the same
//! run and the ratio of isto's durable publish to it, redb alone writing a draft's rows 25
//! drafts per durable commit on one thread (drafts/s and CPU µs per draft: the store's
//! part of a publish's floor), isto's idle RSS (after start, after the load, once back
//! within 2× idle or after 60 s quiet, and 1 s after a restart on the store the load
//! wrote), the time from process
//! start to the first answer (`GET /healthz`) and to ready (`GET /readyz` 200: the offer
//! index open), and the release binary's size (stripped by the release profile). The same as JSON in
//! `target/bench/mcp_load.json`; the redb / PostgreSQL table in
//! `target/bench/mcp_load_stores.json`. Loopback only; every phase bounded in time.

// A benchmark harness, not the holder: a failed set-up may abort the run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{json, Value};
use std::io::{BufRead as _, Write as _};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpSocket, TcpStream};

// Each benchmark uses part of the shared loader (this one the sauto cars only).
#[allow(dead_code)]
#[path = "common/listings.rs"]
mod listings;
#[path = "common/search_floor.rs"]
mod search_floor;

const V1: &str = "2025-11-25";
const V2: &str = "2026-07-28";

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--serve") {
        servers::serve(args.get(i + 1).map(String::as_str).unwrap_or(""));
        return;
    }
    if std::env::var_os("ISTO_BENCH_MCP_SKIP").is_some() {
        eprintln!("mcp_load: ISTO_BENCH_MCP_SKIP set, nothing run");
        return;
    }
    run::main();
}

/// The servers this file starts as child processes (`mcp_load --serve KIND`).
mod servers {
    use axum::routing::post;
    use axum::{Json, Router};
    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    };
    use rmcp::service::RequestContext;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
    use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
    use serde_json::{json, Value};
    use std::io::Write as _;
    use std::sync::Arc;

    /// Serves `kind` (`axum` or `echo`) on a free loopback port and prints `PORT n`.
    pub fn serve(kind: &str) {
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let router = match kind {
                "axum" => Router::new().route("/mcp", post(raw)),
                "echo" => Router::new().nest_service("/mcp", echo_service()),
                other => panic!("unknown server kind {other:?}"),
            };
            println!("PORT {port}");
            std::io::stdout().flush().unwrap();
            // Nagle off, as isto's own listener (else a session's SSE writes wait on delayed ACKs).
            use axum::serve::ListenerExt as _;
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            axum::serve(listener, router).await.unwrap();
        });
    }

    /// The raw floor: parse the JSON-RPC body, answer its params as the result.
    async fn raw(Json(req): Json<Value>) -> Json<Value> {
        let id = req.get("id").cloned().unwrap_or(Value::Null);
        let args = req.pointer("/params/arguments").cloned().unwrap_or(Value::Null);
        Json(json!({"jsonrpc": "2.0", "id": id, "result": {"structuredContent": args}}))
    }

    /// The bare rmcp echo: one tool returning its arguments, or (`answers`) fixed results
    /// read at start from the JSON file `ISTO_BENCH_ECHO_ANSWER` names, an array of
    /// `[arguments, answer]` pairs: the answer of the pair whose arguments equal the call's,
    /// else the first. The floor of a read tool: rmcp answering the same bytes (as a
    /// `CallToolResult::structured` of a copy of the answer's value tree) without any work
    /// of its own.
    #[derive(Clone)]
    struct Echo {
        tools: Arc<Vec<Tool>>,
        answers: Option<Arc<Vec<(Value, Value)>>>,
    }

    impl ServerHandler for Echo {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
                .with_server_info(Implementation::new("echo", "0.0.0"))
        }

        async fn list_tools(
            &self,
            _request: Option<PaginatedRequestParams>,
            _context: RequestContext<RoleServer>,
        ) -> Result<ListToolsResult, McpError> {
            Ok(ListToolsResult::with_all_items((*self.tools).clone()))
        }

        fn get_tool(&self, name: &str) -> Option<Tool> {
            self.tools.iter().find(|t| t.name == name).cloned()
        }

        async fn call_tool(
            &self,
            request: CallToolRequestParams,
            _context: RequestContext<RoleServer>,
        ) -> Result<CallToolResponse, McpError> {
            let args = Value::Object(request.arguments.unwrap_or_default());
            let out = match self.answers.as_deref() {
                Some(answers) => answers.iter().find(|(a, _)| *a == args).unwrap_or(&answers[0]).1.clone(),
                None => args,
            };
            Ok(CallToolResponse::Complete(CallToolResult::structured(out)))
        }
    }

    /// isto's Streamable HTTP settings (`mcp::service::mcp_config`) without its Host list.
    fn echo_service() -> StreamableHttpService<Echo, LocalSessionManager> {
        let schema = json!({"type": "object", "additionalProperties": true}).as_object().cloned().unwrap_or_default();
        let tools = Arc::new(vec![Tool::new("echo", "Returns its arguments.", schema)]);
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(vec!["127.0.0.1".to_owned()])
            .with_json_response(true)
            .with_max_request_body_bytes(256 * 1024);
        let answers = std::env::var_os("ISTO_BENCH_ECHO_ANSWER")
            .map(|f| Arc::new(serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap()));
        StreamableHttpService::new(
            move || Ok(Echo { tools: tools.clone(), answers: answers.clone() }),
            Default::default(),
            config,
        )
    }
}

/// A minimal HTTP/1.1 keep-alive client: one request at a time per connection.
mod http {
    use super::*;

    /// One answer: status, the session id header, the body.
    pub struct Answer {
        pub status: u16,
        pub session: Option<String>,
        pub body: Vec<u8>,
    }

    pub struct Conn {
        stream: TcpStream,
        buf: Vec<u8>,
        start: usize,
        host: String,
    }

    static NEXT_SOURCE: AtomicU32 = AtomicU32::new(1);

    impl Conn {
        /// Connects from a loopback source address of its own (127.1.x.y).
        pub async fn connect(addr: SocketAddr) -> std::io::Result<Conn> {
            let n = NEXT_SOURCE.fetch_add(1, Ordering::Relaxed);
            let src = Ipv4Addr::new(127, 1 + (n >> 16) as u8, (n >> 8) as u8, (n & 0xff).max(1) as u8);
            let socket = TcpSocket::new_v4()?;
            socket.bind(SocketAddr::V4(SocketAddrV4::new(src, 0)))?;
            let stream = socket.connect(addr).await?;
            stream.set_nodelay(true)?;
            Ok(Conn { stream, buf: Vec::with_capacity(64 * 1024), start: 0, host: addr.to_string() })
        }

        /// `METHOD path` with `headers` and `body`; the whole answer.
        pub async fn request(
            &mut self,
            method: &str,
            path: &str,
            headers: &[(&str, &str)],
            body: &str,
        ) -> std::io::Result<Answer> {
            let mut req = String::with_capacity(256 + body.len());
            req.push_str(method);
            req.push(' ');
            req.push_str(path);
            req.push_str(" HTTP/1.1\r\nHost: ");
            req.push_str(&self.host);
            req.push_str("\r\n");
            if method == "POST" {
                req.push_str("Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n");
                req.push_str("Content-Length: ");
                req.push_str(&body.len().to_string());
                req.push_str("\r\n");
            }
            for (k, v) in headers {
                req.push_str(k);
                req.push_str(": ");
                req.push_str(v);
                req.push_str("\r\n");
            }
            req.push_str("\r\n");
            req.push_str(body);
            self.stream.write_all(req.as_bytes()).await?;
            self.read_answer().await
        }

        async fn fill(&mut self) -> std::io::Result<()> {
            if self.start > 0 && self.start == self.buf.len() {
                self.buf.clear();
                self.start = 0;
            }
            let mut chunk = [0u8; 16 * 1024];
            let n = self.stream.read(&mut chunk).await?;
            if n == 0 {
                return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "connection closed"));
            }
            self.buf.extend_from_slice(&chunk[..n]);
            Ok(())
        }

        async fn read_answer(&mut self) -> std::io::Result<Answer> {
            let head_end = loop {
                if let Some(p) = find(&self.buf[self.start..], b"\r\n\r\n") {
                    break self.start + p + 4;
                }
                self.fill().await?;
            };
            let head = String::from_utf8_lossy(&self.buf[self.start..head_end]).into_owned();
            self.start = head_end;
            let mut lines = head.split("\r\n");
            let status: u16 = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok()).unwrap_or(0);
            let (mut length, mut chunked, mut session) = (None, false, None);
            for line in lines {
                let Some((k, v)) = line.split_once(':') else { continue };
                let v = v.trim();
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.parse::<usize>().ok();
                } else if k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked") {
                    chunked = true;
                } else if k.eq_ignore_ascii_case("mcp-session-id") {
                    session = Some(v.to_owned());
                }
            }
            let mut body = Vec::new();
            if chunked {
                loop {
                    let line_end = loop {
                        if let Some(p) = find(&self.buf[self.start..], b"\r\n") {
                            break self.start + p;
                        }
                        self.fill().await?;
                    };
                    let size_text = String::from_utf8_lossy(&self.buf[self.start..line_end]).into_owned();
                    let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                        .map_err(|_| std::io::Error::other(format!("bad chunk size {size_text:?}")))?;
                    self.start = line_end + 2;
                    while self.buf.len() - self.start < size + 2 {
                        self.fill().await?;
                    }
                    body.extend_from_slice(&self.buf[self.start..self.start + size]);
                    self.start += size + 2;
                    if size == 0 {
                        break;
                    }
                }
            } else if let Some(n) = length {
                while self.buf.len() - self.start < n {
                    self.fill().await?;
                }
                body.extend_from_slice(&self.buf[self.start..self.start + n]);
                self.start += n;
            }
            if self.start == self.buf.len() {
                self.buf.clear();
                self.start = 0;
            }
            Ok(Answer { status, session, body })
        }
    }

    pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
        hay.windows(needle.len()).position(|w| w == needle)
    }
}

/// The orchestration: servers, loads, the table.
mod run {
    use super::http::{find, Answer, Conn};
    use super::*;

    /// How a path talks.
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub enum Mode {
        /// Plain JSON POST (the raw axum floor).
        Raw,
        /// 2025-11-25: a session per connection.
        Session,
        /// 2026-07-28: stateless, per-request headers and `_meta`.
        Stateless,
    }

    impl Mode {
        fn label(self) -> &'static str {
            match self {
                Mode::Raw => "raw",
                Mode::Session => V1,
                Mode::Stateless => V2,
            }
        }
    }

    /// One loaded path: the tool and how its arguments are made (`n` counts requests).
    #[derive(Clone)]
    pub struct Target {
        pub name: String,
        pub addr: SocketAddr,
        pub pid: u32,
        pub mode: Mode,
        pub tool: &'static str,
        /// The postmaster of the PostgreSQL cluster the server uses, whose CPU (its own
        /// and its backends') is measured too ([`cluster_ticks`]).
        pub db: Option<u32>,
        pub args: Args,
    }

    /// How a [`Target`]'s arguments are made from the request count.
    pub type Args = Arc<dyn Fn(u64) -> Value + Send + Sync>;

    /// The two revisions isto's paths are loaded in, with their rows' labels: 2025-11-25
    /// (one session per connection) and 2026-07-28 (stateless).
    const REVISIONS: [(Mode, &str); 2] = [(Mode::Session, "2025-11-25"), (Mode::Stateless, "2026-07-28")];

    /// The targets of `tool` on isto at `addr` (`pid`) in each of `revs`, named `{name}, {label}`.
    fn isto_targets<'a>(
        name: &'a str,
        (addr, pid): (SocketAddr, u32),
        tool: &'static str,
        args: &'a Args,
        revs: &'a [(Mode, &str)],
    ) -> impl Iterator<Item = Target> + 'a {
        revs.iter().map(move |&(mode, rev)| Target {
            name: format!("{name}, {rev}"),
            addr,
            pid,
            mode,
            tool,
            db: None,
            args: args.clone(),
        })
    }

    /// One measured run.
    #[derive(Debug, Clone)]
    pub struct Row {
        pub name: String,
        pub mode: Mode,
        pub conns: usize,
        pub ok: u64,
        pub errors: u64,
        pub rps: f64,
        pub p50_us: f64,
        pub p99_us: f64,
        pub cpu_us: f64,
        /// CPU µs per request of the database cluster (NaN without one).
        pub db_cpu_us: f64,
    }

    fn call_body(mode: Mode, id: u64, tool: &str, args: &Value) -> String {
        let mut params = json!({"name": tool, "arguments": args});
        if mode == Mode::Stateless {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": V2,
                "io.modelcontextprotocol/clientInfo": {"name": "isto-bench", "version": "0.0.0"},
                "io.modelcontextprotocol/clientCapabilities": {},
            });
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
    }

    /// An answer counts when it is HTTP 200 with a JSON-RPC result and no tool error.
    fn good(a: &Answer) -> bool {
        a.status == 200
            && find(&a.body, b"\"result\"").is_some()
            && find(&a.body, b"\"isError\":true").is_none()
            && find(&a.body, b"\"error\":{").is_none()
    }

    /// A connection ready for `tools/call` (its session opened for [`Mode::Session`]).
    pub async fn open(t: &Target) -> Result<(Conn, Option<String>), String> {
        let mut c = Conn::connect(t.addr).await.map_err(|e| format!("connect {}: {e}", t.addr))?;
        if t.mode != Mode::Session {
            return Ok((c, None));
        }
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": V1, "capabilities": {}, "clientInfo": {"name": "isto-bench", "version": "0.0.0"}}})
        .to_string();
        let a = c.request("POST", "/mcp", &[], &init).await.map_err(|e| format!("initialize: {e}"))?;
        let Some(session) = a.session.filter(|_| a.status == 200) else {
            return Err(format!("initialize: HTTP {} {}", a.status, String::from_utf8_lossy(&a.body)));
        };
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
        let h = [("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", V1)];
        let a = c.request("POST", "/mcp", &h, &note).await.map_err(|e| format!("initialized: {e}"))?;
        if a.status != 202 && a.status != 200 {
            return Err(format!("notifications/initialized: HTTP {}", a.status));
        }
        Ok((c, Some(session)))
    }

    /// Ends `session` with `DELETE` as a client done with it does (MCP 2025-11-25,
    /// "Session Management"), so what isto holds after the load is not sessions that a
    /// client left open (those end only after `limits.mcp_session_idle_secs`).
    async fn close(c: &mut Conn, session: Option<&str>) {
        if let Some(s) = session {
            let _ = c.request("DELETE", "/mcp", &[("Mcp-Session-Id", s), ("MCP-Protocol-Version", V1)], "").await;
        }
    }

    /// One `tools/call` on an open connection.
    pub async fn call(
        c: &mut Conn,
        t: &Target,
        session: Option<&str>,
        id: u64,
        args: &Value,
    ) -> std::io::Result<Answer> {
        let body = call_body(t.mode, id, t.tool, args);
        match t.mode {
            Mode::Raw => c.request("POST", "/mcp", &[], &body).await,
            Mode::Session => {
                let h = [("Mcp-Session-Id", session.unwrap_or("")), ("MCP-Protocol-Version", V1)];
                c.request("POST", "/mcp", &h, &body).await
            }
            Mode::Stateless => {
                let h = [("MCP-Protocol-Version", V2), ("Mcp-Method", "tools/call"), ("Mcp-Name", t.tool)];
                c.request("POST", "/mcp", &h, &body).await
            }
        }
    }

    /// utime + stime of `pid`, clock ticks (`/proc/PID/stat` fields 14 and 15).
    fn cpu_ticks(pid: u32) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let rest = s.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let f: Vec<&str> = rest.split_whitespace().collect();
        // After ")": field 3 is f[0], so utime (14) is f[11] and stime (15) f[12].
        f.get(11).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
            + f.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
    }

    /// The fields of `/proc/PID/stat` after the command name (field 3 first).
    fn stat_fields(pid: u32) -> Vec<String> {
        let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        s.rsplit_once(')').map(|(_, r)| r.split_whitespace().map(str::to_owned).collect()).unwrap_or_default()
    }

    /// CPU of a PostgreSQL cluster, clock ticks: its postmaster's own, its reaped
    /// children's (cutime + cstime, fields 16 and 17) and every live child's (the
    /// backends serving isto's pool, the background workers).
    pub fn cluster_ticks(postmaster: u32) -> u64 {
        let f = stat_fields(postmaster);
        let field = |f: &[String], i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        let mut ticks = field(&f, 11) + field(&f, 12) + field(&f, 13) + field(&f, 14);
        let children = std::fs::read_dir("/proc").into_iter().flatten().flatten();
        for pid in children.filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok()) {
            let f = stat_fields(pid);
            if field(&f, 1) == u64::from(postmaster) {
                ticks += field(&f, 11) + field(&f, 12);
            }
        }
        ticks
    }

    fn clock_ticks_per_sec() -> u64 {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .unwrap_or(100)
    }

    /// isto's resident memory, KiB: after start (`idle`), right after the load (`after`),
    /// after up to [`QUIET`] without requests (`quiet`, read once a second and taken as
    /// soon as it is within 2× `idle`, after `quiet_secs`), after a restart on the store the
    /// load wrote (`restart`: what that store's intents hold in memory, the floor of
    /// `quiet`), and after start with the generated catalogue (`big`).
    #[derive(Default)]
    pub struct Rss {
        pub idle: u64,
        pub after: u64,
        pub quiet: u64,
        pub quiet_secs: f64,
        pub restart: u64,
        pub big: u64,
    }

    /// Longest quiet wait for the RSS to come back within 2× idle (issue 24: 60 s).
    pub const QUIET: Duration = Duration::from_secs(60);

    /// [`Rss::quiet`] and [`Rss::quiet_secs`] of `pid`: VmRSS once a second until it is at
    /// most 2 × `idle` or [`QUIET`] has passed. With `ISTO_BENCH_QUIET_TRACE=1` it waits the
    /// whole [`QUIET`] and prints each second's VmRSS, RssAnon and thread count.
    pub fn quiet_rss(pid: u32, idle: u64) -> (u64, f64) {
        let trace = std::env::var("ISTO_BENCH_QUIET_TRACE").as_deref() == Ok("1");
        let t0 = Instant::now();
        loop {
            let now = rss_kib(pid);
            if trace {
                let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
                let field = |k: &str| status.lines().find(|l| l.starts_with(k)).map_or("", |l| l[k.len()..].trim());
                eprintln!(
                    "mcp_load: quiet {:>2.0} s: VmRSS {now} KiB, RssAnon {}, threads {}",
                    t0.elapsed().as_secs_f64(),
                    field("RssAnon:"),
                    field("Threads:")
                );
            }
            if (!trace && now <= 2 * idle) || t0.elapsed() >= QUIET {
                return (now, t0.elapsed().as_secs_f64());
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    /// VmRSS of `pid`, KiB.
    pub fn rss_kib(pid: u32) -> u64 {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            })
            .unwrap_or(0)
    }

    fn pct(sorted: &[u32], p: f64) -> f64 {
        if sorted.is_empty() {
            return f64::NAN;
        }
        sorted[((sorted.len() - 1) as f64 * p).round() as usize] as f64
    }

    /// Loads `t` with `conns` connections: `warm` then `measure`; one [`Row`].
    pub async fn load(t: &Target, conns: usize, warm: Duration, measure: Duration) -> Row {
        let t0 = Instant::now();
        let (warm_end, end) = (t0 + warm, t0 + warm + measure);
        let mut tasks = Vec::new();
        for k in 0..conns {
            let t = t.clone();
            tasks.push(tokio::task::spawn_local(async move {
                let mut lat: Vec<u32> = Vec::with_capacity(1 << 16);
                let (mut errors, mut first_error) = (0u64, None::<String>);
                let mut n: u64 = (k as u64) << 32;
                'outer: while Instant::now() < end {
                    let (mut c, session) = match open(&t).await {
                        Ok(x) => x,
                        Err(e) => {
                            errors += 1;
                            first_error.get_or_insert(e);
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            continue;
                        }
                    };
                    loop {
                        let start = Instant::now();
                        if start >= end {
                            close(&mut c, session.as_deref()).await;
                            break 'outer;
                        }
                        n += 1;
                        let args = (t.args)(n);
                        let a = call(&mut c, &t, session.as_deref(), n, &args).await;
                        let done = Instant::now();
                        let counted = start >= warm_end && done < end;
                        match a {
                            Ok(a) if good(&a) => {
                                if counted {
                                    lat.push(done.duration_since(start).as_micros().min(u32::MAX as u128) as u32);
                                }
                            }
                            Ok(a) => {
                                if counted {
                                    errors += 1;
                                }
                                first_error.get_or_insert_with(|| {
                                    format!(
                                        "HTTP {}: {}",
                                        a.status,
                                        String::from_utf8_lossy(&a.body[..a.body.len().min(400)])
                                    )
                                });
                            }
                            Err(e) => {
                                if counted {
                                    errors += 1;
                                }
                                first_error.get_or_insert_with(|| e.to_string());
                                continue 'outer;
                            }
                        }
                    }
                }
                (lat, errors, first_error)
            }));
        }
        tokio::time::sleep_until(warm_end.into()).await;
        let (c0, d0, w0) = (cpu_ticks(t.pid), t.db.map(cluster_ticks), Instant::now());
        tokio::time::sleep_until(end.into()).await;
        let (c1, d1, w1) = (cpu_ticks(t.pid), t.db.map(cluster_ticks), Instant::now());
        let mut lat = Vec::new();
        let (mut errors, mut first) = (0, None);
        for task in tasks {
            let (l, e, f) = task.await.unwrap();
            lat.extend(l);
            errors += e;
            if first.is_none() {
                first = f;
            }
        }
        if let Some(f) = first {
            eprintln!("  {} @{conns}: {errors} errors in the window; first: {f}", t.name);
        }
        lat.sort_unstable();
        let secs = w1.duration_since(w0).as_secs_f64();
        let ok = lat.len() as u64;
        let cpu_us = (c1.saturating_sub(c0)) as f64 * 1e6 / clock_ticks_per_sec() as f64;
        Row {
            name: t.name.clone(),
            mode: t.mode,
            conns,
            ok,
            errors,
            rps: ok as f64 / secs,
            p50_us: pct(&lat, 0.50),
            p99_us: pct(&lat, 0.99),
            cpu_us: if ok > 0 { cpu_us / ok as f64 } else { f64::NAN },
            db_cpu_us: match (d0, d1) {
                (Some(a), Some(b)) if ok > 0 => {
                    b.saturating_sub(a) as f64 * 1e6 / clock_ticks_per_sec() as f64 / ok as f64
                }
                _ => f64::NAN,
            },
        }
    }

    /// A child server process, killed when dropped.
    pub struct Server {
        pub child: Child,
        pub addr: SocketAddr,
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(10) {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    fn pinned(cpu: &str, program: &Path) -> Command {
        let mut c = Command::new("taskset");
        c.arg("-c").arg(cpu).arg(program);
        c
    }

    /// Starts `mcp_load --serve KIND` pinned to the server core; waits for its port line.
    fn start_own(kind: &str, cpu: &str) -> Server {
        start_own_with(kind, cpu, None)
    }

    /// [`start_own`] of the echo answering the JSON file `answer` (see `servers::Echo`).
    fn start_own_with(kind: &str, cpu: &str, answer: Option<&Path>) -> Server {
        let exe = std::env::current_exe().unwrap();
        let mut cmd = pinned(cpu, &exe);
        if let Some(file) = answer {
            cmd.env("ISTO_BENCH_ECHO_ANSWER", file);
        }
        let mut child = cmd
            .arg("--serve")
            .arg(kind)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port: u16 = line.trim().strip_prefix("PORT ").and_then(|p| p.parse().ok()).expect("server port line");
        Server { child, addr: SocketAddr::from(([127, 0, 0, 1], port)) }
    }

    fn free_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
    }

    /// The config of the isto under test: loopback, limits and quotas raised.
    fn isto_config(dir: &Path, port: u16) -> PathBuf {
        let data = dir.join("data");
        std::fs::create_dir_all(&data).unwrap();
        let cfg = dir.join("isto.toml");
        let text = format!(
            "listen = \"127.0.0.1:{port}\"\npublic_url = \"http://127.0.0.1:{port}\"\ndata_dir = {}\n\
             [mail]\nfrom = \"bench <bench@holder.example>\"\n\
             [limits]\nmax_connections = 4096\nmcp_session_idle_secs = 3600\nmax_mcp_sessions = 100000\n\
             max_mcp_sessions_per_client = 100000\nmcp_requests_per_minute = 1000000\nmcp_burst = 100000\n\
             [quotas]\ndrafts_per_client_per_hour = 10000\n",
            toml_string(&data.to_string_lossy())
        );
        std::fs::write(&cfg, text).unwrap();
        cfg
    }

    fn toml_string(s: &str) -> String {
        serde_json::to_string(s).unwrap()
    }

    fn isto_cmd(bin: &Path, cfg: &Path) -> Command {
        let mut c = Command::new(bin);
        isto_env(&mut c, cfg);
        c
    }

    fn isto_env(c: &mut Command, cfg: &Path) {
        for (k, _) in std::env::vars() {
            if k.starts_with("ISTO_") {
                c.env_remove(k);
            }
        }
        c.env("ISTO_CONFIG", cfg).env("RUST_LOG", "info").stdin(Stdio::null());
    }

    /// `isto admin offers import FILE --json` on the stopped store: (imported, rejected, seconds).
    fn import(bin: &Path, cfg: &Path, file: &Path) -> (u64, u64, f64) {
        let t0 = Instant::now();
        let out = isto_cmd(bin, cfg)
            .args(["admin", "offers", "import"])
            .arg(file)
            .arg("--json")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let secs = t0.elapsed().as_secs_f64();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
            panic!(
                "isto admin offers import {}: {}\n{}",
                file.display(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        let n = |p: &str| v.pointer(p).and_then(Value::as_u64).unwrap_or(0);
        (n("/imported/created") + n("/imported/updated"), n("/rejected"), secs)
    }

    /// Starts `isto serve` pinned; the time until its first `GET /healthz` answer.
    fn start_isto(bin: &Path, cfg: &Path, port: u16, cpu: &str, log: &Path) -> (Server, Duration, Duration) {
        let mut c = pinned(cpu, bin);
        isto_env(&mut c, cfg);
        let log = std::fs::File::create(log).unwrap();
        let t0 = Instant::now();
        let child = c.arg("serve").stdout(Stdio::null()).stderr(log).spawn().unwrap();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let server = Server { child, addr };
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        // The first 200 of `path`, polled every 0.5 ms for at most 30 s from the start.
        let first_ok = |path: &'static str| {
            rt.block_on(async {
                loop {
                    if t0.elapsed() > Duration::from_secs(30) {
                        panic!("isto serve did not answer {path} with 200 within 30 s");
                    }
                    if let Ok(mut conn) = Conn::connect(addr).await {
                        if let Ok(a) = conn.request("GET", path, &[], "").await {
                            if a.status == 200 {
                                return t0.elapsed();
                            }
                        }
                    }
                    tokio::time::sleep(Duration::from_micros(500)).await;
                }
            })
        };
        let first = first_ok("/healthz");
        let ready = first_ok("/readyz");
        (server, first, ready)
    }

    /// The priced sauto listings (`common/listings.rs`) as isto's JSON Lines import (make
    /// and model from the title's first comma-separated part, the region assigned from
    /// the listing id).
    fn sauto_jsonl(sauto: &[crate::listings::Listing], out: &Path) -> usize {
        const REGIONS: [&str; 14] = [
            "CZ-10", "CZ-20", "CZ-31", "CZ-32", "CZ-41", "CZ-42", "CZ-51", "CZ-52", "CZ-53", "CZ-63", "CZ-64", "CZ-71",
            "CZ-72", "CZ-80",
        ];
        let mut w = std::io::BufWriter::new(std::fs::File::create(out).unwrap());
        let mut n = 0;
        for l in sauto {
            let (Some((amount, _)), Some(car)) = (l.price, &l.sauto) else { continue };
            let head = l.title.split(',').next().unwrap_or("").trim().to_owned();
            let mut words = head.splitn(2, ' ');
            let make = words.next().unwrap_or("").to_owned();
            let mut attributes = json!({"make": make});
            if let Some(model) = words.next().filter(|m| !m.is_empty()) {
                attributes["model"] = json!(model);
            }
            if let Some(y) = car.year {
                attributes["year"] = json!(y);
            }
            if let Some(k) = car.mileage_km {
                attributes["mileageKm"] = json!(k);
            }
            let h = car.id.bytes().fold(2166136261u32, |h, b| (h ^ b as u32).wrapping_mul(16777619));
            let offer = json!({
                "ref": format!("sauto-{}", car.id),
                "title": &l.title,
                "description": &l.description,
                "category": "vehicles",
                "attributes": attributes,
                "price": {"amount": amount, "currency": "CZK"},
                "area": {"country": "CZ", "regions": [REGIONS[h as usize % REGIONS.len()]]},
                "seller": {"name": format!("sauto dealer {}", (h >> 8) % 40 + 1)},
                "url": &car.url,
            });
            writeln!(w, "{offer}").unwrap();
            n += 1;
        }
        w.flush().unwrap();
        n
    }

    /// `n` generated offers (the `testkit` generator of `cargo bench --bench holder`).
    fn synth_jsonl(n: usize, out: &Path) {
        let mut g = isto::matching::engine::synth::Synth::new(11);
        let mut w = std::io::BufWriter::new(std::fs::File::create(out).unwrap());
        for i in 0..n {
            let o = g.offer();
            let mut area = serde_json::to_value(&o.area).unwrap();
            if area["regions"]
                .as_array()
                .is_some_and(|r| r.iter().any(|x| x.as_str().is_some_and(|s| s != s.to_uppercase())))
            {
                area["regions"] = json!([]);
            }
            let offer = json!({
                "ref": format!("gen-{i}"),
                "title": o.title,
                "description": o.description,
                "category": o.category,
                "attributes": o.attributes,
                "price": o.price,
                "area": area,
                "seller": {"name": o.seller.name},
            });
            writeln!(w, "{offer}").unwrap();
        }
        w.flush().unwrap();
    }

    /// One 2026-07-28 `tools/call` of `tool` with `args` on its own connection; the
    /// parsed answer.
    async fn one_call(addr: SocketAddr, pid: u32, tool: &'static str, args: &Value) -> Value {
        let t = Target {
            name: "setup".into(),
            addr,
            pid,
            mode: Mode::Stateless,
            tool,
            db: None,
            args: Arc::new(|_| Value::Null),
        };
        let (mut c, _) = open(&t).await.unwrap();
        let a = call(&mut c, &t, None, 1, args).await.unwrap();
        serde_json::from_slice(&a.body)
            .unwrap_or_else(|_| panic!("{tool}: HTTP {} {}", a.status, String::from_utf8_lossy(&a.body)))
    }

    /// A draft published once on a 2026-07-28 request; its intentCode.
    async fn one_code(addr: SocketAddr, pid: u32) -> String {
        let v = one_call(addr, pid, "intent_publish_intent", &publish_args(0)).await;
        v.pointer("/result/structuredContent/intentCode")
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("publish answered no intentCode: {v}"))
            .to_owned()
    }

    /// The `structuredContent` of one `intent_get_intent` of `code`.
    async fn one_answer(addr: SocketAddr, pid: u32, code: &str) -> Value {
        let v = one_call(addr, pid, "intent_get_intent", &json!({"intentCode": code})).await;
        v.pointer("/result/structuredContent").cloned().unwrap_or_else(|| panic!("get answered no result: {v}"))
    }

    /// A read tool's floor: the bare rmcp echo answering `answers` (`[arguments, answer]`
    /// pairs, each answer isto's own structured content for those arguments, so the same
    /// answer bytes; see `servers::Echo`) to the tool's own requests, in both modes, as
    /// the rows "rmcp echo of the `what`, ...".
    fn answer_floor(work: &Path, cpu: &str, what: &str, answers: &Value, args: &Args, run: &mut dyn FnMut(Target)) {
        let file = work.join("echo-answers.json");
        std::fs::write(&file, answers.to_string()).unwrap();
        let s = start_own_with("echo", cpu, Some(&file));
        for (mode, rev) in [(Mode::Session, "2025-11-25 session"), (Mode::Stateless, "2026-07-28 stateless JSON")] {
            run(Target {
                name: format!("rmcp echo of the {what}, {rev}"),
                addr: s.addr,
                pid: s.child.id(),
                mode,
                tool: "echo",
                db: None,
                args: args.clone(),
            });
        }
    }

    fn publish_args(n: u64) -> Value {
        const MODELS: [&str; 6] =
            ["Škoda Octavia", "Škoda Fabia", "Volkswagen Golf", "BMW X3", "Toyota Corolla", "Ford Focus"];
        json!({
            "statement": format!("Hledám {} do {} Kč", MODELS[(n % 6) as usize], 200_000 + (n % 50) * 10_000),
            "area": "CZ-64",
        })
    }

    const STATEMENTS: [&str; 8] = [
        "škoda octavia",
        "bmw x3 diesel",
        "volkswagen golf",
        "toyota corolla automat",
        "ford focus kombi",
        "hyundai i30",
        "audi a4 avant",
        "byt 3+1 Brno",
    ];

    fn search_args(n: u64) -> Value {
        json!({"statement": STATEMENTS[(n % STATEMENTS.len() as u64) as usize]})
    }

    /// redb's one-row durable commit rate: commits/s over `secs` on `path`.
    fn redb_rate(path: &Path, secs: f64) -> f64 {
        const T: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("rows");
        let _ = std::fs::remove_file(path);
        let db = redb::Database::create(path).unwrap();
        let row = [7u8; 200];
        let t0 = Instant::now();
        let mut n = 0u64;
        while t0.elapsed().as_secs_f64() < secs {
            let tx = db.begin_write().unwrap();
            {
                let mut t = tx.open_table(T).unwrap();
                t.insert(n, &row[..]).unwrap();
            }
            tx.commit().unwrap();
            n += 1;
        }
        n as f64 / t0.elapsed().as_secs_f64()
    }

    /// The store's part of a durable publish, alone: redb writing the rows one draft
    /// writes (a record of 1 KiB under an id that sorts by creation, two token hashes, an expiry-index
    /// row), `batch` drafts per durable commit, on one thread, for `secs` on `path`:
    /// (drafts/s, the thread's CPU µs per draft). With the rmcp echo's CPU per call it
    /// is the floor of a publish's CPU on isto's one core.
    fn redb_batch_floor(path: &Path, secs: f64, batch: u64) -> (f64, f64) {
        type Rows = redb::TableDefinition<'static, &'static [u8], &'static [u8]>;
        const RECORDS: Rows = redb::TableDefinition::new("records");
        const TOKENS: Rows = redb::TableDefinition::new("tokens");
        const DUE: Rows = redb::TableDefinition::new("due");
        let _ = std::fs::remove_file(path);
        let db = redb::Database::create(path).unwrap();
        let record = [7u8; 1024];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut key = |len: usize| -> Vec<u8> {
            (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect()
        };
        let (t0, cpu0) = (Instant::now(), isto::clock::thread_cpu());
        let mut n = 0u64;
        while t0.elapsed().as_secs_f64() < secs {
            let tx = db.begin_write().unwrap();
            {
                let (mut r, mut t, mut d) =
                    (tx.open_table(RECORDS).unwrap(), tx.open_table(TOKENS).unwrap(), tx.open_table(DUE).unwrap());
                for _ in 0..batch {
                    // As isto's ids: in order of creation, then random (crypto::new_id).
                    let id = [&n.to_be_bytes()[2..], &key(10)[..]].concat();
                    r.insert(&id[..], &record[..]).unwrap();
                    t.insert(&key(32)[..], &id[..]).unwrap();
                    t.insert(&key(32)[..], &id[..]).unwrap();
                    d.insert(&[&n.to_be_bytes()[..], &id[..]].concat()[..], &[][..]).unwrap();
                    n += 1;
                }
            }
            tx.commit().unwrap();
        }
        let cpu = (isto::clock::thread_cpu() - cpu0).as_secs_f64();
        (n as f64 / t0.elapsed().as_secs_f64(), cpu * 1e6 / n.max(1) as f64)
    }

    fn fmt_ratio(x: f64) -> String {
        if x.is_finite() {
            format!("{x:.2}")
        } else {
            "–".into()
        }
    }

    pub fn main() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let out_dir = root.join("target/bench");
        let work = out_dir.join("mcp_load-work");
        if std::env::var("ISTO_BENCH_MCP_ONLY").as_deref() == Ok("search-floor") {
            let index = work.join("isto-gen").join("data").join("index");
            assert!(index.join("meta.json").exists(), "no index in {}: run the search part first", index.display());
            eprintln!("mcp_load: {}", crate::search_floor::in_process(&index, &STATEMENTS));
            return;
        }
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).unwrap();
        // `ISTO_BENCH_ISTO_BIN`: another isto binary (e.g. a release build for a dev-built bench).
        let bin = std::env::var_os("ISTO_BENCH_ISTO_BIN")
            .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_isto")), PathBuf::from);
        let server_cpu = env_u64("ISTO_BENCH_SERVER_CPU", 0).to_string();
        let client_cpu = env_u64("ISTO_BENCH_CLIENT_CPU", 1).to_string();
        let warm = Duration::from_secs(env_u64("ISTO_BENCH_WARM_SECS", 4));
        let measure = Duration::from_secs(env_u64("ISTO_BENCH_SECS", 8));
        let generated = env_u64("ISTO_BENCH_GEN_OFFERS", 100_000) as usize;
        let conn_counts = [16usize, 64];
        let t_all = Instant::now();

        // The load generator (every thread of this process) on its own core.
        let pinned_ok = Command::new("taskset")
            .args(["-a", "-cp", &client_cpu, &std::process::id().to_string()])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        eprintln!(
            "mcp_load: servers on cpu {server_cpu}, load generator on cpu {client_cpu}{}; {}s warm + {}s measured per path",
            if pinned_ok { "" } else { " (taskset FAILED: unpinned)" },
            warm.as_secs(),
            measure.as_secs()
        );
        eprintln!("mcp_load: isto binary {}", bin.display());

        let redb_secs = env_u64("ISTO_BENCH_REDB_SECS", 5) as f64;
        let search_only = std::env::var("ISTO_BENCH_MCP_ONLY").as_deref() == Ok("search");
        let redb = if search_only { f64::NAN } else { redb_rate(&work.join("redb-one-row.redb"), redb_secs) };
        eprintln!("mcp_load: redb one-row durable commits: {redb:.0}/s");
        let store_floor = if search_only {
            (f64::NAN, f64::NAN)
        } else {
            redb_batch_floor(&work.join("redb-drafts.redb"), redb_secs, 25)
        };
        eprintln!(
            "mcp_load: redb writing a draft's rows, 25 drafts per durable commit, one thread: {:.0} drafts/s, {:.1} CPU µs per draft",
            store_floor.0, store_floor.1
        );

        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let local = tokio::task::LocalSet::new();
        let mut rows: Vec<Row> = Vec::new();
        let run_target = |t: Target, rows: &mut Vec<Row>| {
            for &c in &conn_counts {
                let r = local.block_on(&rt, load(&t, c, warm, measure));
                eprintln!(
                    "  {:<44} {:>4} conns {:>9.0} req/s  p50 {:>7.0} µs  p99 {:>7.0} µs  {:>6.1} CPU µs/req  errors {}",
                    r.name, c, r.rps, r.p50_us, r.p99_us, r.cpu_us, r.errors
                );
                rows.push(r);
            }
        };

        let code_of = |addr: SocketAddr, pid: u32| local.block_on(&rt, one_code(addr, pid));
        if std::env::var("ISTO_BENCH_MCP_ONLY").as_deref() == Ok("stores") {
            let rows = stores(&bin, &work, &server_cpu, &run_target, &code_of);
            stores_report(&rows, &out_dir);
            return;
        }
        if std::env::var("ISTO_BENCH_MCP_ONLY").as_deref() == Ok("publish") {
            publish_only(&bin, &work, &server_cpu, redb, &|t, c| local.block_on(&rt, load(t, c, warm, measure)));
            return;
        }

        // The floors.
        if !search_only {
            let s = start_own("axum", &server_cpu);
            let t = Target {
                name: "raw axum JSON handler".into(),
                addr: s.addr,
                pid: s.child.id(),
                mode: Mode::Raw,
                tool: "echo",
                db: None,
                args: Arc::new(search_args),
            };
            run_target(t, &mut rows);
        }
        {
            let s = start_own("echo", &server_cpu);
            for (name, mode) in [
                ("bare rmcp echo, 2025-11-25 session", Mode::Session),
                ("bare rmcp echo, 2026-07-28 stateless JSON", Mode::Stateless),
            ] {
                let t = Target {
                    name: name.into(),
                    addr: s.addr,
                    pid: s.child.id(),
                    mode,
                    tool: "echo",
                    db: None,
                    args: Arc::new(search_args),
                };
                run_target(t, &mut rows);
            }
        }

        // isto on the real listings.
        let size = std::fs::metadata(&bin).map(|m| m.len()).unwrap_or(0);
        let data = crate::listings::data_dir();
        let sauto = crate::listings::sauto(&data);
        let dir_a = work.join("isto-real");
        let port_a = free_port();
        let cfg_a = isto_config(&dir_a, port_a);
        let mut real_offers = 0;
        if !sauto.is_empty() {
            let file = work.join("sauto.jsonl");
            let rows_in = sauto_jsonl(&sauto, &file);
            let (imported, rejected, secs) = import(&bin, &cfg_a, &file);
            eprintln!("mcp_load: sauto: {rows_in} rows, {imported} imported, {rejected} rejected in {secs:.1} s");
            real_offers = imported;
        } else {
            eprintln!("mcp_load: no sauto listings in {}: the isto store has no real offers", data.display());
        }
        let mut rss = Rss::default();
        let (first_answer, first_ready);
        {
            let (s, first, ready) = start_isto(&bin, &cfg_a, port_a, &server_cpu, &dir_a.join("serve.log"));
            first_answer = first;
            first_ready = ready;
            std::thread::sleep(Duration::from_secs(1));
            let pid = isto_pid(&s);
            rss.idle = rss_kib(pid);
            eprintln!("mcp_load: isto first answer {:.1} ms, idle RSS {} KiB", first.as_secs_f64() * 1e3, rss.idle);
            let code = local.block_on(&rt, one_code(s.addr, pid));
            let get = {
                let code = code.clone();
                Arc::new(move |_n: u64| json!({"intentCode": code})) as Args
            };
            // `ISTO_BENCH_MCP_ONLY=search`: the searches only.
            let get_revs = [(Mode::Session, "2025-11-25 session"), (Mode::Stateless, "2026-07-28")];
            let (get_revs, publish_revs): (&[_], &[_]) = if search_only { (&[], &[]) } else { (&get_revs, &REVISIONS) };
            for t in isto_targets("isto intent_get_intent", (s.addr, pid), "intent_get_intent", &get, get_revs) {
                run_target(t, &mut rows);
            }
            if !search_only {
                let answer = local.block_on(&rt, one_answer(s.addr, pid, &code));
                let floor = &mut |t| run_target(t, &mut rows);
                answer_floor(&work, &server_cpu, "get's answer", &json!([[null, answer]]), &get, floor);
            }
            let search: Args = Arc::new(search_args);
            let name = format!("isto intent_search_offers, {real_offers} real");
            for t in isto_targets(&name, (s.addr, pid), "intent_search_offers", &search, &REVISIONS) {
                run_target(t, &mut rows);
            }
            let publish: Args = Arc::new(publish_args);
            let name = "isto intent_publish_intent (durable)";
            for t in isto_targets(name, (s.addr, pid), "intent_publish_intent", &publish, publish_revs) {
                run_target(t, &mut rows);
            }
            rss.after = rss_kib(pid);
            eprintln!("mcp_load: isto RSS after the load {} KiB; waiting up to 60 s for it to settle", rss.after);
            if !search_only {
                (rss.quiet, rss.quiet_secs) = quiet_rss(pid, rss.idle);
            }
            eprintln!("mcp_load: isto RSS {} KiB after {:.0} s quiet", rss.quiet, rss.quiet_secs);
        }
        if !search_only {
            // The same store, started again: its idle RSS with the intents the load wrote.
            let (s, _, _) = start_isto(&bin, &cfg_a, port_a, &server_cpu, &dir_a.join("serve-again.log"));
            std::thread::sleep(Duration::from_secs(1));
            rss.restart = rss_kib(isto_pid(&s));
            eprintln!("mcp_load: isto RSS {} KiB 1 s after a restart on the loaded store", rss.restart);
        }

        // isto with 10^5 generated offers more.
        let dir_b = work.join("isto-gen");
        let port_b = free_port();
        let cfg_b = isto_config(&dir_b, port_b);
        if !sauto.is_empty() {
            import(&bin, &cfg_b, &work.join("sauto.jsonl"));
        }
        let gen_file = work.join("generated.jsonl");
        synth_jsonl(generated, &gen_file);
        let (gen_imported, gen_rejected, gen_secs) = import(&bin, &cfg_b, &gen_file);
        eprintln!("mcp_load: generated: {gen_imported} imported, {gen_rejected} rejected in {gen_secs:.1} s");
        let big_offers = gen_imported + real_offers;
        {
            let (s, _, _) = start_isto(&bin, &cfg_b, port_b, &server_cpu, &dir_b.join("serve.log"));
            let pid = isto_pid(&s);
            std::thread::sleep(Duration::from_secs(1));
            rss.big = rss_kib(pid);
            let search: Args = Arc::new(search_args);
            let name = format!("isto intent_search_offers, {big_offers} offers");
            for t in isto_targets(&name, (s.addr, pid), "intent_search_offers", &search, &REVISIONS) {
                run_target(t, &mut rows);
            }
            // The search's floors: rmcp answering the same answers, then (the server
            // stopped) tantivy's plain query over the same index, in-process.
            let answers: Vec<Value> = STATEMENTS
                .iter()
                .map(|st| {
                    let args = json!({"statement": st});
                    let v = local.block_on(&rt, one_call(s.addr, pid, "intent_search_offers", &args));
                    json!([args, v.pointer("/result/structuredContent").cloned().unwrap()])
                })
                .collect();
            let floor = &mut |t| run_target(t, &mut rows);
            answer_floor(&work, &server_cpu, "search's answers", &Value::Array(answers), &search, floor);
        }
        let search_cpu = crate::search_floor::in_process(&dir_b.join("data").join("index"), &STATEMENTS);
        eprintln!("mcp_load: {search_cpu}");

        if search_only {
            return;
        }
        report(
            &rows,
            (redb, store_floor),
            &rss,
            search_cpu,
            (first_answer, first_ready),
            size,
            &out_dir,
            t_all.elapsed(),
        );
        let store_rows = stores(&bin, &work, &server_cpu, &run_target, &code_of);
        stores_report(&store_rows, &out_dir);
    }

    /// `ISTO_BENCH_MCP_ONLY=publish`: only the durable publish rows (both modes, 16 and
    /// 64 connections) on a fresh store without offers, with redb's one-row durable
    /// commit rate of the same run, the ratio, and the writes per durable commit that
    /// isto's `/readyz` reports on its metrics listener (`writeBatches`; `-` for an isto
    /// without it).
    fn publish_only(bin: &Path, work: &Path, cpu: &str, redb: f64, run: &dyn Fn(&Target, usize) -> Row) {
        let dir = work.join("isto-publish");
        let (port, metrics) = (free_port(), free_port());
        let cfg = isto_config(&dir, port);
        let mut text = std::fs::read_to_string(&cfg).unwrap();
        text.insert_str(0, &format!("metrics_listen = \"127.0.0.1:{metrics}\"\n"));
        std::fs::write(&cfg, text).unwrap();
        let (s, _, _) = start_isto(bin, &cfg, port, cpu, &dir.join("serve.log"));
        let batches = || -> Option<(u64, u64)> {
            let mut c = std::net::TcpStream::connect(("127.0.0.1", metrics)).ok()?;
            c.write_all(b"GET /readyz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
            let mut out = String::new();
            std::io::Read::read_to_string(&mut c, &mut out).ok()?;
            let v: Value = serde_json::from_str(out.split_once("\r\n\r\n")?.1).ok()?;
            let b = &v["checks"]["store"]["writeBatches"];
            Some((b["batches"].as_u64()?, b["writes"].as_u64()?))
        };
        println!("\n| publish | conns | req/s | p50 ms | p99 ms | CPU µs/req | × redb one-row commits | writes per durable commit | errors |");
        println!("|---|---|---|---|---|---|---|---|---|");
        for (mode, rev) in [(Mode::Session, "2025-11-25"), (Mode::Stateless, "2026-07-28")] {
            let t = Target {
                name: format!("isto intent_publish_intent (durable), {rev}"),
                addr: s.addr,
                pid: isto_pid(&s),
                mode,
                tool: "intent_publish_intent",
                db: None,
                args: Arc::new(publish_args),
            };
            for c in [16usize, 64] {
                let before = batches();
                let r = run(&t, c);
                let per = match (before, batches()) {
                    (Some((b0, w0)), Some((b1, w1))) if b1 > b0 => {
                        format!("{:.2}", (w1 - w0) as f64 / (b1 - b0) as f64)
                    }
                    _ => "-".to_owned(),
                };
                println!(
                    "| {rev} | {c} | {:.0} | {:.2} | {:.2} | {:.1} | {:.2} | {per} | {} |",
                    r.rps,
                    r.p50_us / 1e3,
                    r.p99_us / 1e3,
                    r.cpu_us,
                    r.rps / redb,
                    r.errors
                );
            }
        }
        println!("redb one-row durable commits (same run, same disk): {redb:.0}/s; isto binary {}", bin.display());
    }

    /// isto on redb beside isto on PostgreSQL (a throw-away cluster started as the tests
    /// start one, `isto::store::testpg`), one after the other on the same core and the
    /// same generated catalogue (`ISTO_BENCH_STORE_OFFERS`, default 10 000): get, search
    /// and publish on 2026-07-28 requests (stateless: what replicas behind a balancer
    /// serve). No rows, with the reason printed, without PostgreSQL's binaries.
    fn stores(
        bin: &Path,
        work: &Path,
        cpu: &str,
        run_target: &dyn Fn(Target, &mut Vec<Row>),
        code_of: &dyn Fn(SocketAddr, u32) -> String,
    ) -> Vec<Row> {
        if let Err(why) = isto::store::testpg::binaries() {
            eprintln!("mcp_load: isto on PostgreSQL not measured: {why}");
            return Vec::new();
        }
        let pg = isto::store::testpg::database();
        let postmaster = postmaster_pid(&pg.url);
        if postmaster.is_none() {
            eprintln!("mcp_load: the PostgreSQL cluster's postmaster was not found: its CPU is not measured");
        }
        let catalogue = work.join("stores.jsonl");
        synth_jsonl(env_u64("ISTO_BENCH_STORE_OFFERS", 10_000) as usize, &catalogue);
        let mut rows = Vec::new();
        for (label, url) in [("isto-redb", None), ("isto-PG", Some(pg.url.as_str()))] {
            let dir = work.join(label);
            let port = free_port();
            let cfg = isto_config(&dir, port);
            if let Some(url) = url {
                let mut f = std::fs::OpenOptions::new().append(true).open(&cfg).unwrap();
                writeln!(f, "[store]\nbackend = \"postgres\"\nurl = {}", toml_string(url)).unwrap();
            }
            let (imported, rejected, secs) = import(bin, &cfg, &catalogue);
            eprintln!("mcp_load: {label}: {imported} offers imported, {rejected} rejected in {secs:.1} s");
            let (s, _, _) = start_isto(bin, &cfg, port, cpu, &dir.join("serve.log"));
            let pid = isto_pid(&s);
            let code = code_of(s.addr, pid);
            let get = Arc::new(move |_n: u64| json!({"intentCode": code})) as Args;
            let search = Arc::new(search_args) as Args;
            let publish = Arc::new(publish_args) as Args;
            for (tool, args) in
                [("intent_get_intent", get), ("intent_search_offers", search), ("intent_publish_intent", publish)]
            {
                let t = Target {
                    name: format!("{label} {tool}"),
                    addr: s.addr,
                    pid,
                    mode: Mode::Stateless,
                    tool,
                    db: url.and(postmaster),
                    args,
                };
                run_target(t, &mut rows);
            }
        }
        rows
    }

    /// The pid of the postmaster serving the `port=N` of `url` (its command line has
    /// `-p N`), if found.
    fn postmaster_pid(url: &str) -> Option<u32> {
        let port = url.split_whitespace().find_map(|kv| kv.strip_prefix("port="))?;
        let want = format!("\0-p\0{port}\0");
        let procs = std::fs::read_dir("/proc").ok()?.flatten();
        procs.filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok()).find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                c.windows(want.len()).any(|w| w == want.as_bytes()) && String::from_utf8_lossy(&c).contains("postgres")
            })
        })
    }

    /// The table isto-redb beside isto-PG (req/s, CPU µs per request of isto and of the
    /// database cluster), printed and written to `target/bench/mcp_load_stores.json`.
    fn stores_report(rows: &[Row], out_dir: &Path) {
        if rows.is_empty() {
            return;
        }
        let mut out = String::from(
            "| 2026-07-28 call | conns | isto-redb req/s | isto-PG req/s | PG / redb | isto-redb CPU µs/req | isto-PG CPU µs/req: isto + PostgreSQL |\n\
             |---|---|---|---|---|---|---|\n",
        );
        let mut json_rows = Vec::new();
        for tool in ["intent_get_intent", "intent_search_offers", "intent_publish_intent"] {
            for r in rows.iter().filter(|r| r.name == format!("isto-redb {tool}")) {
                let Some(p) = rows.iter().find(|p| p.name == format!("isto-PG {tool}") && p.conns == r.conns) else {
                    continue;
                };
                out.push_str(&format!(
                    "| {tool} | {} | {:.0} | {:.0} | {} | {:.1} | {:.1} + {:.1} = {:.1} |\n",
                    r.conns,
                    r.rps,
                    p.rps,
                    fmt_ratio(p.rps / r.rps),
                    r.cpu_us,
                    p.cpu_us,
                    p.db_cpu_us,
                    p.cpu_us + p.db_cpu_us
                ));
                json_rows.push(json!({
                    "tool": tool, "connections": r.conns, "redbReqPerSec": r.rps, "pgReqPerSec": p.rps,
                    "redbCpuUsPerReq": r.cpu_us, "pgIstoCpuUsPerReq": p.cpu_us, "pgDatabaseCpuUsPerReq": p.db_cpu_us,
                    "redbErrors": r.errors, "pgErrors": p.errors, "redbP50Ms": r.p50_us / 1e3, "pgP50Ms": p.p50_us / 1e3,
                }));
            }
        }
        println!("\nisto on redb beside isto on PostgreSQL (same run, same core, same catalogue):\n{out}");
        let path = out_dir.join("mcp_load_stores.json");
        std::fs::write(&path, serde_json::to_string_pretty(&json!({"rows": json_rows})).unwrap()).unwrap();
        println!("written: {}", path.display());
    }

    /// The pid of the isto process itself (`taskset` execs it, so the child's pid).
    fn isto_pid(s: &Server) -> u32 {
        s.child.id()
    }

    #[allow(clippy::too_many_arguments)]
    fn report(
        rows: &[Row],
        (redb, store_floor): (f64, (f64, f64)),
        rss: &Rss,
        search_cpu: crate::search_floor::InProcess,
        (first, ready): (Duration, Duration),
        size: u64,
        out_dir: &Path,
        took: Duration,
    ) {
        let find = |prefix: &str, conns: usize| rows.iter().find(|r| r.name.starts_with(prefix) && r.conns == conns);
        let mut out = String::new();
        out.push_str("| path | conns | req/s | p50 ms | p99 ms | CPU µs/req | vs rmcp echo (same mode) | vs raw axum | errors |\n");
        out.push_str("|---|---|---|---|---|---|---|---|---|\n");
        let mut json_rows = Vec::new();
        for r in rows {
            let echo = match r.mode {
                Mode::Stateless => find("bare rmcp echo, 2026-07-28", r.conns),
                _ => find("bare rmcp echo, 2025-11-25", r.conns),
            };
            let axum = find("raw axum", r.conns);
            let vs_echo = echo.map_or(f64::NAN, |e| r.rps / e.rps);
            let vs_axum = axum.map_or(f64::NAN, |a| r.rps / a.rps);
            out.push_str(&format!(
                "| {} | {} | {:.0} | {:.2} | {:.2} | {:.1} | {} | {} | {} |\n",
                r.name,
                r.conns,
                r.rps,
                r.p50_us / 1e3,
                r.p99_us / 1e3,
                r.cpu_us,
                fmt_ratio(vs_echo),
                fmt_ratio(vs_axum),
                r.errors
            ));
            json_rows.push(json!({
                "path": r.name, "mode": r.mode.label(), "connections": r.conns, "ok": r.ok, "errors": r.errors,
                "reqPerSec": r.rps, "p50Ms": r.p50_us / 1e3, "p99Ms": r.p99_us / 1e3, "cpuUsPerReq": r.cpu_us,
                "vsEchoSameMode": vs_echo, "vsRawAxum": vs_axum,
            }));
        }
        let publish: Vec<(usize, Mode, f64)> =
            rows.iter().filter(|r| r.name.contains("publish")).map(|r| (r.conns, r.mode, r.rps)).collect();
        out.push('\n');
        out.push_str(&format!("redb one-row durable commits (same run, same disk): {redb:.0}/s\n"));
        out.push_str(&format!(
            "redb alone writing a draft's rows, 25 per durable commit, one thread: {:.0} drafts/s ({:.2}× the one-row rate), {:.1} CPU µs per draft\n",
            store_floor.0,
            store_floor.0 / redb,
            store_floor.1
        ));
        for (c, m, rps) in &publish {
            let echo = find(
                if *m == Mode::Stateless { "bare rmcp echo, 2026-07-28" } else { "bare rmcp echo, 2025-11-25" },
                *c,
            );
            // A publish's CPU floor on isto's one core: the echo's call and the store's rows.
            let floor_cpu = echo.map_or(f64::NAN, |e| e.cpu_us + store_floor.1);
            let floor_rate = 1e6 / floor_cpu;
            // With `c` connections each waiting for its durable commit, one commit serves
            // at most `c` calls, which take at least `c` floors of CPU on the one core
            // before it, and nothing runs while it syncs: the commit's latency (one
            // one-row durable commit) adds to every cycle.
            let waiting_rate = *c as f64 * 1e6 / (*c as f64 * floor_cpu + 1e6 / redb);
            out.push_str(&format!(
                "isto durable publish {} @{c}: {:.2}× redb's one-row commit rate; its floor (the echo's CPU + the store's per draft) allows {:.0}/s on one core = {:.2}× redb's one-row rate; with {c} connections each waiting for its commit, {:.0}/s = {:.2}×\n",
                m.label(),
                rps / redb,
                floor_rate,
                floor_rate / redb,
                waiting_rate,
                waiting_rate / redb
            ));
        }
        // The row "rmcp echo of the `what`" of `r`'s revision and connections.
        let echo_of = |what: &str, r: &Row| {
            let revision = if r.mode == Mode::Stateless { V2 } else { V1 };
            find(&format!("rmcp echo of the {what}, {revision}"), r.conns)
        };
        for r in rows.iter().filter(|r| r.name.starts_with("isto intent_get_intent")) {
            if let Some(f) = echo_of("get's answer", r) {
                out.push_str(&format!(
                    "{} @{}: {:.2}× the rmcp echo of the same answer ({:.0} req/s, {:.1} CPU µs/req)\n",
                    r.name,
                    r.conns,
                    r.rps / f.rps,
                    f.rps,
                    f.cpu_us
                ));
            }
        }
        out.push_str(&format!("{search_cpu}\n"));
        let mut search_json = Vec::new();
        for r in rows.iter().filter(|r| r.name.starts_with("isto intent_search_offers") && r.name.contains(" offers, "))
        {
            let Some(echo) = echo_of("search's answers", r) else { continue };
            // The floor of one call: rmcp answering the same answer, plus tantivy's query.
            let floor_cpu = echo.cpu_us + search_cpu.floor_us;
            out.push_str(&format!(
                "{} @{}: {:.1} CPU µs per search = {:.2}× its floor ({:.1} µs: the rmcp echo of the same answers \
                 {:.1} + the tantivy query {:.1}); the floor's rate on one core {:.0}/s\n",
                r.name,
                r.conns,
                r.cpu_us,
                r.cpu_us / floor_cpu,
                floor_cpu,
                echo.cpu_us,
                search_cpu.floor_us,
                1e6 / floor_cpu
            ));
            search_json.push(json!({
                "mode": r.mode.label(), "connections": r.conns, "cpuUsPerSearch": r.cpu_us,
                "echoOfAnswersCpuUs": echo.cpu_us, "floorCpuUs": floor_cpu, "vsFloor": r.cpu_us / floor_cpu,
            }));
        }
        out.push_str(&format!(
            "isto idle RSS (fresh store, real offers): {:.1} MiB after start, {:.1} MiB after the load, {:.1} MiB ({:.2}× idle) after {:.0} s quiet, {:.1} MiB after a restart on the loaded store (quiet {:.2}× that); with the generated catalogue: {:.1} MiB\n",
            rss.idle as f64 / 1024.0,
            rss.after as f64 / 1024.0,
            rss.quiet as f64 / 1024.0,
            rss.quiet as f64 / rss.idle.max(1) as f64,
            rss.quiet_secs,
            rss.restart as f64 / 1024.0,
            rss.quiet as f64 / rss.restart.max(1) as f64,
            rss.big as f64 / 1024.0
        ));
        out.push_str(&format!(
            "isto start to first answer (GET /healthz): {:.1} ms; to ready (GET /readyz 200): {:.1} ms\n",
            first.as_secs_f64() * 1e3,
            ready.as_secs_f64() * 1e3
        ));
        out.push_str(&format!(
            "isto release binary (stripped): {:.1} MiB ({size} bytes)\n",
            size as f64 / (1024.0 * 1024.0)
        ));
        out.push_str(&format!("whole bench: {:.0} s\n", took.as_secs_f64()));
        println!("\n{out}");
        let j = json!({
            "rows": json_rows,
            "redbOneRowCommitsPerSec": redb,
            "redbDraftRowsPerSec": store_floor.0, "redbDraftRowsCpuUs": store_floor.1,
            "searchInProcess": {"tantivyFloorUs": search_cpu.floor_us, "istoUs": search_cpu.isto_us},
            "searchVsFloor": search_json,
            "publishVsRedb": publish.iter().map(|(c, m, rps)| json!({"connections": c, "mode": m.label(), "ratio": rps / redb})).collect::<Vec<_>>(),
            "idleRssKiB": rss.idle, "rssAfterLoadKiB": rss.after, "rssAfterQuietKiB": rss.quiet,
            "quietSecs": rss.quiet_secs, "restartRssKiB": rss.restart, "generatedStoreRssKiB": rss.big,
            "firstAnswerMs": first.as_secs_f64() * 1e3,
            "readyMs": ready.as_secs_f64() * 1e3,
            "binaryBytes": size,
            "seconds": took.as_secs_f64(),
        });
        let path = out_dir.join("mcp_load.json");
        std::fs::write(&path, serde_json::to_string_pretty(&j).unwrap()).unwrap();
        println!("written: {}", path.display());
    }
}
