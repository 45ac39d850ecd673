//! The real binary under a bounded write load, shared by the backup and the key rotation
//! tests ("What must be shown"): `isto serve` as a child process on a data dir
//! ([`Serve`]), `isto admin …` runs ([`admin`]), the store's rows read back
//! ([`rows_of`]), and [`Load`]: threads that write through the running server — offer
//! imports through the admin socket (`Load offer N`), drafts published on `/mcp` (`Load
//! draft N`) and, optionally, intents taken through consent (the consent page's GET and
//! POST, sealing a contact and a hidden limit and queueing sealed mail), confirmed on the
//! confirmation page when the test gives an [`SmtpSink`] to read the mail from, and every
//! other one withdrawn again (`intent_withdraw_intent`). Every write the server
//! acknowledged is recorded. Loopback only; every loop bounded in count and time.

use isto::store::{Export, Store, StoreError};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead as _, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Rows of every table: `table → (key JSON → whole line)`.
pub type Rows = BTreeMap<String, BTreeMap<String, String>>;

/// Every row of the store at `path` (opened here, so no server may hold it); with
/// `ISTO_TEST_BACKEND=postgres`, of the database of `path`'s directory.
pub fn rows_of(path: &Path) -> Rows {
    match (super::backend_is_postgres(), path.parent()) {
        (true, Some(dir)) => rows_in(&store_of(dir)),
        _ => rows_in(&Store::open(path).unwrap()),
    }
}

/// The store of the data directory `data` (no server may hold it): its redb file, or
/// with `ISTO_TEST_BACKEND=postgres` its database.
pub fn store_of(data: &Path) -> Store {
    if super::backend_is_postgres() {
        Store::open_at(&isto::store::Location::Postgres(super::database_of(data))).unwrap()
    } else {
        Store::open(&data.join(isto::store::FILE_NAME)).unwrap()
    }
}

/// Rewrites the rows of the store of `data` (either backend, no server holding it) with
/// `edit` applied to them (backup rows, `{"t", "k", "v"}` JSON, in table and key order),
/// in one transaction through the store's own restore (`Store::restore_rows`, replacing).
pub fn edit_rows(data: &Path, edit: impl FnOnce(&mut Vec<Value>)) {
    let store = store_of(data);
    let mut rows: Vec<Value> = Vec::new();
    store
        .export(|step| -> Result<(), StoreError> {
            if let Export::Row { line, .. } = step {
                rows.push(serde_json::from_str(line).unwrap());
            }
            Ok(())
        })
        .unwrap();
    edit(&mut rows);
    store.restore_rows(rows.iter().map(|r| Ok::<_, StoreError>(r.to_string())), true).unwrap();
}

/// Every row of the open store `s`.
pub fn rows_in(s: &Store) -> Rows {
    let mut rows = Rows::new();
    s.export(|step| -> Result<(), StoreError> {
        if let Export::Row { table, line } = step {
            let v: Value = serde_json::from_str(line).unwrap();
            rows.entry(table.to_owned()).or_default().insert(v["k"].to_string(), line.to_owned());
        }
        Ok(())
    })
    .unwrap();
    rows
}

/// The binary on `data` (no config file, warnings only); with
/// `ISTO_TEST_BACKEND=postgres`, on the database of `data` ([`super::database_of`]).
pub fn isto(data: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_isto"));
    c.env("ISTO_DATA_DIR", data).env_remove("ISTO_CONFIG").env("RUST_LOG", "warn").stdin(Stdio::null());
    if super::backend_is_postgres() {
        c.env("ISTO_STORE_BACKEND", "postgres").env("ISTO_STORE_URL", super::database_of(data).url);
    } else {
        c.env_remove("ISTO_STORE_BACKEND").env_remove("ISTO_STORE_URL");
    }
    c
}

/// Runs `isto admin ARGS` on `data` (bounded: 60 s).
pub fn admin(data: &Path, args: &[&str]) -> Output {
    let mut child = isto(data).arg("admin").args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("isto admin {args:?} did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Stdout and stderr of a run.
pub fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// The JSON on stdout of a run that succeeded.
pub fn ok_json(o: &Output) -> Value {
    assert!(o.status.success(), "{}", text(o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(o)))
}

/// A file's permission bits.
pub fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// `isto serve` on `data`, killed when dropped.
pub struct Serve {
    child: Child,
    log: PathBuf,
    /// Its HTTP port on 127.0.0.1.
    pub port: u16,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    /// Starts it (logging to `log`) and waits (at most 20 s) for its admin socket. Its
    /// SMTP server is port 1, where nothing listens: queued mail stays queued (so the
    /// outbox has rows).
    pub fn start(data: &Path, log: PathBuf) -> Serve {
        Self::start_with_smtp(data, log, "smtp://127.0.0.1:1")
    }

    /// [`Serve::start`] sending mail to `smtp_url` (an [`SmtpSink`]'s, say).
    pub fn start_with_smtp(data: &Path, log: PathBuf, smtp_url: &str) -> Serve {
        Self::start_with_env(data, log, &[("ISTO_SMTP_URL", smtp_url)])
    }

    /// [`Serve::start`] with the environment `env` added (after the listen address and
    /// the public URL `http://127.0.0.1:PORT`, which it may override); without
    /// `ISTO_SMTP_URL` in it mail goes to `.eml` files in the data dir.
    pub fn start_with_env(data: &Path, log: PathBuf, env: &[(&str, &str)]) -> Serve {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = isto(data)
            .arg("serve")
            .env("ISTO_LISTEN", format!("127.0.0.1:{port}"))
            .env("ISTO_PUBLIC_URL", format!("http://127.0.0.1:{port}"))
            .env("RUST_LOG", "info")
            .env_remove("ISTO_SMTP_URL")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let s = Serve { child, log, port };
        let sock = data.join("admin.sock");
        let t0 = Instant::now();
        while std::os::unix::net::UnixStream::connect(&sock).is_err() {
            assert!(t0.elapsed() < Duration::from_secs(20), "isto serve did not start:\n{}", s.log());
            std::thread::sleep(Duration::from_millis(50));
        }
        s
    }

    /// What it logged so far.
    pub fn log(&self) -> String {
        settled_log(self.port, &self.log)
    }

    /// SIGTERM, then waits (at most 15 s) for a clean exit.
    pub fn stop(mut self) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        let t0 = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                assert!(st.success(), "isto serve exited with {st}:\n{}", self.log());
                return;
            }
            assert!(t0.elapsed() < Duration::from_secs(15), "isto serve did not stop:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A connection to the admin socket: reader and writer.
pub type Conn = (std::io::BufReader<std::os::unix::net::UnixStream>, std::os::unix::net::UnixStream);

/// Connects to the admin socket of `data`.
pub fn connect(data: &Path) -> Conn {
    let s = std::os::unix::net::UnixStream::connect(data.join("admin.sock")).unwrap();
    (std::io::BufReader::new(s.try_clone().unwrap()), s)
}

/// One request line on the admin socket; its answer.
pub fn socket_call(conn: &mut Conn, req: &Value) -> Value {
    let mut line = req.to_string();
    line.push('\n');
    conn.1.write_all(line.as_bytes()).unwrap();
    let mut answer = String::new();
    conn.0.read_line(&mut answer).unwrap();
    serde_json::from_str(&answer).unwrap()
}

/// The numbers N of the rows of `table` whose value holds `marker` followed by N.
pub fn numbered(rows: &Rows, table: &str, marker: &str) -> BTreeSet<u64> {
    rows.get(table)
        .into_iter()
        .flat_map(|t| t.values())
        .filter_map(|line| {
            let v: Value = serde_json::from_str(line).unwrap();
            let text = v["v"].to_string();
            let digits: String = text.split(marker).nth(1)?.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect()
}

/// The load offers (`Load offer N`) of a store's rows: their numbers.
pub fn load_numbers(rows: &Rows) -> BTreeSet<u64> {
    numbered(rows, "offers", "Load offer ")
}

/// The log that `isto serve` on 127.0.0.1:`port` writes to `path`, once it holds every
/// line logged before this call: `serve` writes lines below warning level in batches
/// (`app::logbuf`), in order, so this asks `GET /healthz` and waits (at most 10 s) for
/// that request's access line (its `x-request-id`). A server that does not answer: the
/// file as it is.
pub fn settled_log(port: u16, path: &Path) -> String {
    use std::io::Read as _;
    let read = || std::fs::read_to_string(path).unwrap_or_default();
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else { return read() };
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let mut head = String::new();
    if s.write_all(b"GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").is_err() || s.read_to_string(&mut head).is_err()
    {
        return read();
    }
    let Some(id) = head.lines().find_map(|l| l.strip_prefix("x-request-id: ")).map(|v| v.trim().to_owned()) else {
        return read();
    };
    let t0 = Instant::now();
    loop {
        let log = read();
        if log.contains(&id) || t0.elapsed() > Duration::from_secs(10) {
            return log;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One HTTP/1.0 request to 127.0.0.1:`port`: status, headers and body.
pub fn http(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String, String) {
    use std::io::Read as _;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, head.to_owned(), rest.to_owned())
}

/// One JSON-RPC message to `/mcp` on 127.0.0.1:`port` (HTTP/1.0): the session id header
/// and the message (JSON body or the SSE `data:` line).
pub fn mcp(port: u16, session: Option<&str>, body: &Value) -> (Option<String>, Value) {
    let mut headers = vec![("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")];
    if let Some(sid) = session {
        headers.push(("Mcp-Session-Id", sid));
        headers.push(("Mcp-Protocol-Version", "2025-06-18"));
    }
    let (_, head, rest) = http(port, "POST", "/mcp", &headers, &body.to_string());
    let sid = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id")))
        .map(|(_, v)| v.trim().to_owned());
    let msg = rest
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .find(|l| !l.is_empty())
        .and_then(|l| serde_json::from_str(l).ok())
        .or_else(|| serde_json::from_str(&rest).ok())
        .unwrap_or(Value::Null);
    (sid, msg)
}

/// An initialized MCP session on `/mcp`.
pub fn mcp_session(port: u16, name: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": name, "version": "1"}}});
    let (sid, msg) = mcp(port, None, &init);
    let sid = sid.unwrap_or_else(|| panic!("no MCP session: {msg}"));
    mcp(port, Some(&sid), &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    sid
}

/// A tool call's structured result (the call must succeed).
fn tool(port: u16, sid: &str, id: u64, name: &str, args: Value) -> Value {
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args}});
    let (_, msg) = mcp(port, Some(sid), &call);
    assert!(msg["result"].is_object() && msg["result"]["isError"] != true, "{name}: {msg}");
    msg["result"]["structuredContent"].clone()
}

/// A minimal SMTP server on 127.0.0.1 that accepts every message and keeps it (raw,
/// as sent after DATA), so a test can follow the links in the mail. Its threads end
/// when it is dropped.
pub struct SmtpSink {
    /// Its port.
    pub port: u16,
    received: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

impl SmtpSink {
    /// Starts it.
    pub fn start() -> SmtpSink {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let (received, stop) = (Arc::new(Mutex::new(Vec::new())), Arc::new(AtomicBool::new(false)));
        let (r, st) = (received.clone(), stop.clone());
        std::thread::spawn(move || {
            while !st.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((s, _)) => {
                        let r = r.clone();
                        std::thread::spawn(move || {
                            let _ = Self::serve(s, &r);
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        SmtpSink { port, received, stop }
    }

    /// The URL for `ISTO_SMTP_URL`.
    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    fn serve(s: std::net::TcpStream, received: &Mutex<Vec<String>>) -> std::io::Result<()> {
        s.set_nonblocking(false)?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        let mut w = s.try_clone()?;
        let mut r = std::io::BufReader::new(s);
        w.write_all(b"220 sink.test ESMTP\r\n")?;
        let mut line = String::new();
        loop {
            line.clear();
            if r.read_line(&mut line)? == 0 {
                return Ok(());
            }
            let cmd = line.trim_end().to_ascii_uppercase();
            let reply: &[u8] = if cmd.starts_with("EHLO") {
                b"250-sink.test\r\n250-8BITMIME\r\n250 SMTPUTF8\r\n"
            } else if cmd.starts_with("DATA") {
                w.write_all(b"354 go ahead\r\n")?;
                let mut data = String::new();
                loop {
                    let mut l = String::new();
                    if r.read_line(&mut l)? == 0 {
                        return Ok(());
                    }
                    if l == ".\r\n" {
                        break;
                    }
                    data.push_str(&l);
                }
                received.lock().unwrap().push(data);
                b"250 queued\r\n"
            } else if cmd.starts_with("QUIT") {
                w.write_all(b"221 bye\r\n")?;
                return Ok(());
            } else {
                b"250 ok\r\n"
            };
            w.write_all(reply)?;
        }
    }

    /// The token after `marker` (`/confirm/`) in the newest message to `to`, quoted-
    /// printable soft line breaks undone; waits for it at most `wait`.
    pub fn token(&self, to: &str, marker: &str, wait: Duration) -> Option<String> {
        let t0 = Instant::now();
        loop {
            let found = self.received.lock().unwrap().iter().rev().find_map(|m| {
                let (head, body) = m.split_once("\r\n\r\n")?;
                if !head.to_ascii_lowercase().contains(&to.to_ascii_lowercase()) {
                    return None;
                }
                let body = body.replace("=\r\n", "");
                let rest = body.split(marker).nth(1)?;
                let token: String =
                    rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').collect();
                (!token.is_empty()).then_some(token)
            });
            if found.is_some() || t0.elapsed() > wait {
                return found;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// How much [`Load`] writes at most (the per-client quotas of the defaults allow 60
/// drafts and 20 consents an hour: drafts + consents stay under 60, consents under 20).
#[derive(Clone, Copy)]
pub struct LoadSize {
    /// Offer imports, one per transaction.
    pub imports: u64,
    /// Drafts published (`Load draft N`).
    pub drafts: u64,
    /// Intents taken through consent (`Load consent N`, hidden limit 5000 + N, contact
    /// `loadN@example.com`); the odd ones are withdrawn afterwards.
    pub consents: u64,
}

/// Where the load reads the confirmation mail (then every consented intent is also
/// confirmed on its page before the odd ones are withdrawn).
pub type Mailbox = Option<Arc<SmtpSink>>;

/// An intent the load took through consent, as the server acknowledged it.
#[derive(Debug, Clone)]
pub struct Consented {
    /// Its number N.
    pub n: u64,
    /// Its intentCode.
    pub code: String,
    /// Whether the load confirmed it on the confirmation page (acknowledged).
    pub confirmed: bool,
    /// Whether the load withdrew it afterwards (acknowledged).
    pub withdrawn: bool,
}

/// The load's threads and what the server acknowledged so far.
pub struct Load {
    stop: Arc<AtomicBool>,
    /// Imports acknowledged (offers `Load offer 0..n`).
    pub imports: Arc<AtomicU64>,
    /// Drafts acknowledged (`Load draft 0..n`).
    pub drafts: Arc<AtomicU64>,
    /// Consents (and withdrawals) acknowledged.
    pub consented: Arc<Mutex<Vec<Consented>>>,
    threads: Vec<JoinHandle<()>>,
}

impl Load {
    /// Starts the load against `serve` on `data`: each thread stops at its count, after
    /// 40 s, or at [`Load::stop`].
    pub fn start(serve: &Serve, data: &Path, size: LoadSize, mailbox: Mailbox) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let imports = Arc::new(AtomicU64::new(0));
        let drafts = Arc::new(AtomicU64::new(0));
        let consented = Arc::new(Mutex::new(Vec::new()));
        let mut threads = Vec::new();
        // One writer importing one offer per transaction through the admin socket (and
        // so through the server), as fast as it goes.
        threads.push({
            let (stop, written, data) = (stop.clone(), imports.clone(), data.to_owned());
            std::thread::spawn(move || {
                let mut conn = connect(&data);
                let t0 = Instant::now();
                for n in 0..size.imports {
                    if stop.load(Ordering::SeqCst) || t0.elapsed() > Duration::from_secs(40) {
                        break;
                    }
                    let row = json!({"ref": format!("load-{n}"), "title": format!("Load offer {n}"), "category": "property",
                                     "price": {"amount": 100 + n, "currency": "EUR"}, "area": "SK", "seller": {"name": "Loader"}});
                    let a = socket_call(&mut conn, &json!({"op": "import", "rows": [row]}));
                    assert_eq!(a["ok"], true, "{a}");
                    written.store(n + 1, Ordering::SeqCst);
                }
            })
        });
        // One assistant publishing drafts on /mcp.
        threads.push({
            let (stop, published, port) = (stop.clone(), drafts.clone(), serve.port);
            std::thread::spawn(move || {
                let sid = mcp_session(port, "load-drafts");
                let t0 = Instant::now();
                for n in 0..size.drafts {
                    if stop.load(Ordering::SeqCst) || t0.elapsed() > Duration::from_secs(40) {
                        break;
                    }
                    tool(
                        port,
                        &sid,
                        10 + n,
                        "intent_publish_intent",
                        json!({"statement": format!("Hľadám byt Load draft {n}"),
                        "criteria": {"category": "property"}, "area": "SK"}),
                    );
                    published.store(n + 1, Ordering::SeqCst);
                    // The load's pace (a draft every 20 ms), not a synchronisation.
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        });
        // One person after another: publish with a hidden limit, consent on the page,
        // and every other one withdrawn.
        if size.consents > 0 {
            threads.push({
                let (stop, consented, port) = (stop.clone(), consented.clone(), serve.port);
                std::thread::spawn(move || {
                    let sid = mcp_session(port, "load-consents");
                    let t0 = Instant::now();
                    for n in 0..size.consents {
                        if stop.load(Ordering::SeqCst) || t0.elapsed() > Duration::from_secs(40) {
                            break;
                        }
                        let out = tool(
                            port,
                            &sid,
                            1000 + 2 * n,
                            "intent_publish_intent",
                            json!({
                            "statement": format!("Hľadám byt Load consent {n}"), "criteria": {"category": "property"},
                            "area": "SK", "hiddenLimit": 5000 + n}),
                        );
                        let code = out["intentCode"].as_str().unwrap().to_owned();
                        let url = out["consentUrl"].as_str().unwrap();
                        let path = format!("/consent/{}", url.rsplit('/').next().unwrap());
                        let (status, _, page) = http(port, "GET", &path, &[("Accept-Language", "en")], "");
                        assert_eq!(status, 200, "{page}");
                        let csrf = page.split("name=\"csrf\" value=\"").nth(1).unwrap().split('"').next().unwrap();
                        let email = format!("load{n}@example.com");
                        let form = serde_urlencoded::to_string([
                            ("email", email.as_str()),
                            ("accept", "yes"),
                            ("csrf", csrf),
                            ("lang", "en"),
                        ])
                        .unwrap();
                        let origin = format!("http://127.0.0.1:{port}");
                        let (status, head, _) = http(
                            port,
                            "POST",
                            &path,
                            &[
                                ("Content-Type", "application/x-www-form-urlencoded"),
                                ("Origin", &origin),
                                ("Accept-Language", "en"),
                            ],
                            &form,
                        );
                        assert_eq!(status, 303, "consent {n}: {head}");
                        consented.lock().unwrap().push(Consented {
                            n,
                            code: code.clone(),
                            confirmed: false,
                            withdrawn: false,
                        });
                        if let Some(sink) = &mailbox {
                            let token = sink.token(&email, "/confirm/", Duration::from_secs(10));
                            let token = token.unwrap_or_else(|| panic!("no confirmation mail for intent {n}"));
                            let path = format!("/confirm/{token}");
                            let (status, _, page) = http(port, "GET", &path, &[("Accept-Language", "en")], "");
                            assert_eq!(status, 200, "{page}");
                            let csrf = page.split("name=\"csrf\" value=\"").nth(1).unwrap().split('"').next().unwrap();
                            let form = serde_urlencoded::to_string([("csrf", csrf)]).unwrap();
                            let (status, head, _) = http(
                                port,
                                "POST",
                                &path,
                                &[
                                    ("Content-Type", "application/x-www-form-urlencoded"),
                                    ("Origin", &origin),
                                    ("Accept-Language", "en"),
                                ],
                                &form,
                            );
                            assert_eq!(status, 303, "confirm {n}: {head}");
                            consented.lock().unwrap().last_mut().unwrap().confirmed = true;
                        }
                        if n % 2 == 1 {
                            tool(port, &sid, 1001 + 2 * n, "intent_withdraw_intent", json!({"intentCode": code}));
                            consented.lock().unwrap().last_mut().unwrap().withdrawn = true;
                        }
                        // The load's pace (a person every 20 ms), not a synchronisation.
                        std::thread::sleep(Duration::from_millis(20));
                    }
                })
            });
        }
        Load { stop, imports, drafts, consented, threads }
    }

    /// Waits (at most 20 s) until each thread acknowledged at least the given writes.
    pub fn wait_for(&self, serve: &Serve, imports: u64, drafts: u64, consents: usize) {
        let t0 = Instant::now();
        while self.imports.load(Ordering::SeqCst) < imports
            || self.drafts.load(Ordering::SeqCst) < drafts
            || self.consented.lock().unwrap().len() < consents
        {
            assert!(t0.elapsed() < Duration::from_secs(20), "the load did not go on:\n{}", serve.log());
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stops the threads and waits for them (a failed write fails the test here).
    pub fn stop(self) -> (u64, u64, Vec<Consented>) {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.threads {
            t.join().unwrap();
        }
        let consented = self.consented.lock().unwrap().clone();
        (self.imports.load(Ordering::SeqCst), self.drafts.load(Ordering::SeqCst), consented)
    }
}
