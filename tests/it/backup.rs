//! Backup and restore (issue 11 point 1): `isto admin backup` against a real `isto serve`
//! child process under a bounded write load, `isto admin restore` into a fresh data
//! directory, and every refusal of a restore leaving the directory as it was. The
//! holder's data is made in-process with the kit first (every table gets rows), on a
//! real redb file; the commands are the real binary. Loopback only; every loop bounded
//! in count and time.

use isto::crypto::KeyRing;
use isto::intents::{ConfirmOutcome, ConsentOutcome};
use isto::sellers::{self, NewSeller};
use isto::state::AppState;
use isto::store::{Export, Reads as _, Store, StoreError};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead as _, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::kit::{token_from_outbox, Fx, Opts};

/// Rows of every table: `table → (key JSON → whole line)`.
type Rows = BTreeMap<String, BTreeMap<String, String>>;

/// Every row of the store at `path` (opened here, so no server may hold it).
fn rows_of(path: &Path) -> Rows {
    let s = Store::open(path).unwrap();
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

/// A holder whose every table has rows: offers of a seller feed, a registered seller,
/// a buyer account with a session, a confirmed intent with a hidden limit and matches
/// (deliveries, a pending digest, queued mail), a withdrawn one (erasure index) and a
/// draft. Returns the data dir (kept by the returned temp dir).
fn populated() -> (tempfile::TempDir, PathBuf) {
    let f = Fx::with(Opts::default());
    let h: &AppState = &f.holder;
    let row = |r: &str, title: &str, price: f64| {
        isto::catalogue::parse_json_row(
            &json!({"ref": r, "title": title, "category": "vehicles", "price": {"amount": price, "currency": "EUR"},
                    "area": "Bratislava", "seller": {"name": "Dealer"}, "attributes": {"make": "Škoda", "model": "Octavia"}}),
            &["EUR".to_owned()],
        )
        .unwrap()
    };
    h.catalogue
        .import_offers(vec![row("a", "Škoda Octavia Combi", 9000.0), row("b", "Škoda Octavia RS", 20000.0)])
        .unwrap();
    let added = sellers::add(
        &h.base,
        &NewSeller {
            name: "Auto Centrum".into(),
            email: "sales@auto.example".into(),
            url: None,
            categories: vec!["vehicles".into()],
            regions: vec!["SK".into()],
            invite: false,
        },
    )
    .unwrap();
    f.buyer("signed.in@example.com");
    let publish = |args: Value| {
        let r = h.intents.publish_draft(h.intents.parse_publish(&args).unwrap()).unwrap();
        (r.intent_code, r.consent_url.rsplit('/').next().unwrap().to_owned())
    };
    let octavia = json!({"statement": "Hľadám Škoda Octavia", "criteria": {"category": "vehicles", "make": "skoda", "model": "Octavia"},
                         "area": "SK", "hiddenLimit": 12000});
    let (_, consent) = publish(octavia.clone());
    assert_eq!(h.intents.give_consent(&consent, "buyer@example.com", "en").unwrap(), ConsentOutcome::Recorded);
    let confirm = token_from_outbox(h, "/confirm/");
    assert_eq!(h.intents.confirm(&confirm).unwrap(), ConfirmOutcome::Activated);
    let (code, consent) = publish(octavia.clone());
    assert_eq!(h.intents.give_consent(&consent, "other@example.com", "en").unwrap(), ConsentOutcome::Recorded);
    h.intents.withdraw_by_code(&code, None).unwrap();
    publish(octavia.clone());
    // A pseudonymous intent with a seller's reply answered but not yet matched (the
    // `pending_replies` queue; the kit runs no mail worker to drain it).
    let mut open = octavia;
    open["visibility"] = json!("pseudonymous");
    let (_, consent) = publish(open);
    assert_eq!(h.intents.give_consent(&consent, "third@example.com", "en").unwrap(), ConsentOutcome::Recorded);
    let confirm = token_from_outbox(h, "/confirm/");
    assert_eq!(h.intents.confirm(&confirm).unwrap(), ConfirmOutcome::Activated);
    let profile = sellers::find(&h.base, &added.seller.seller_id).unwrap();
    let ids: Vec<String> = h.base.store.read(|rx| rx.active_ids()).unwrap();
    let seen = ids
        .iter()
        .find(|id| {
            let rec: Option<isto::records::IntentRecord> = h.base.store.read(|rx| rx.intent(id)).unwrap();
            rec.is_some_and(|r| r.visibility == isto::protocol::Visibility::Pseudonymous)
        })
        .unwrap();
    let args = json!({"source": {"kind": "reply"}, "inReplyTo": sellers::handle(&h.base, &profile.seller_id, seen),
        "title": "Škoda Octavia Combi", "category": "vehicles", "attributes": {"make": "Škoda", "model": "Octavia"},
        "price": {"amount": 9000, "currency": "EUR"}, "area": "Bratislava"});
    let reply = sellers::parse_reply(&h.base, &profile, &args).unwrap();
    assert!(sellers::submit_reply(&h.base, &profile, &reply).unwrap().accepted);
    let dir = f.dir.path().to_owned();
    let Fx { dir: keep, holder, app, rt, stop, .. } = f;
    stop.cancel();
    drop(app);
    drop(holder);
    drop(rt);
    (keep, dir)
}

/// The tables the kit's holder fills (all of them, checked here so that a new table
/// gets rows in this fixture too).
fn assert_every_table_has_rows(rows: &Rows, what: &str, except: &[&str]) {
    for t in isto::store::table_names().into_iter().filter(|t| !except.contains(t)) {
        assert!(rows.get(t).is_some_and(|r| !r.is_empty()), "{what}: table {t} has no rows");
    }
}

fn isto(data: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_isto"));
    c.env("ISTO_DATA_DIR", data).env_remove("ISTO_CONFIG").env("RUST_LOG", "warn").stdin(Stdio::null());
    c
}

/// Runs `isto admin ARGS` on `data` (bounded: 60 s).
fn admin(data: &Path, args: &[&str]) -> Output {
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

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn ok_json(o: &Output) -> Value {
    assert!(o.status.success(), "{}", text(o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(o)))
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// Every file of a directory tree with its bytes (to see that a refusal changed nothing).
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn copy_keys(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.join("keys")).unwrap();
    for e in std::fs::read_dir(from.join("keys")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, to.join("keys").join(p.file_name().unwrap())).unwrap();
    }
}

/// `isto serve` on `data`, killed when dropped.
struct Serve {
    child: Child,
    log: PathBuf,
    port: u16,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    fn start(data: &Path, log: PathBuf) -> Serve {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = isto(data)
            .arg("serve")
            .env("ISTO_LISTEN", format!("127.0.0.1:{port}"))
            .env("ISTO_PUBLIC_URL", format!("http://127.0.0.1:{port}"))
            .env("RUST_LOG", "info")
            // Nothing listens on port 1: queued mail stays queued (so the outbox has rows).
            .env("ISTO_SMTP_URL", "smtp://127.0.0.1:1")
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

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM, then waits (at most 15 s) for a clean exit.
    fn stop(mut self) {
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

/// One request line on the admin socket; its answer.
fn socket_call(
    conn: &mut (std::io::BufReader<std::os::unix::net::UnixStream>, std::os::unix::net::UnixStream),
    req: &Value,
) -> Value {
    let mut line = req.to_string();
    line.push('\n');
    conn.1.write_all(line.as_bytes()).unwrap();
    let mut answer = String::new();
    conn.0.read_line(&mut answer).unwrap();
    serde_json::from_str(&answer).unwrap()
}

/// The numbers N of the rows of `table` whose value holds `marker` followed by N.
fn numbered(rows: &Rows, table: &str, marker: &str) -> BTreeSet<u64> {
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
fn load_numbers(rows: &Rows) -> BTreeSet<u64> {
    numbered(rows, "offers", "Load offer ")
}

/// One JSON-RPC message to `/mcp` on 127.0.0.1:`port` (HTTP/1.0): the session id header
/// and the message (JSON body or the SSE `data:` line).
fn mcp(port: u16, session: Option<&str>, body: &Value) -> (Option<String>, Value) {
    use std::io::Read as _;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let body = body.to_string();
    let mut req = format!(
        "POST /mcp HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(sid) = session {
        req.push_str(&format!("Mcp-Session-Id: {sid}\r\nMcp-Protocol-Version: 2025-06-18\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    s.write_all(req.as_bytes()).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
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
        .or_else(|| serde_json::from_str(rest).ok())
        .unwrap_or(Value::Null);
    (sid, msg)
}

/// Drafts the load publishes at most (the per-client draft quota is 60 an hour).
const DRAFTS: u64 = 50;

#[test]
fn a_backup_under_write_load_restores_to_the_store_as_it_was_at_the_backup() {
    let (_keep, data) = populated();
    let before = rows_of(&data.join("isto.redb"));
    assert_every_table_has_rows(&before, "the fixture", &[]);
    let work = tempfile::tempdir().unwrap();
    let serve = Serve::start(&data, work.path().join("serve.log"));

    // The load: one writer importing one offer per transaction through the admin socket
    // (and so through the server), as fast as it goes, bounded in count and time.
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let load = {
        let (stop, written, sock) = (stop.clone(), written.clone(), data.join("admin.sock"));
        std::thread::spawn(move || {
            let s = std::os::unix::net::UnixStream::connect(&sock).unwrap();
            let mut conn = (std::io::BufReader::new(s.try_clone().unwrap()), s);
            let t0 = Instant::now();
            for n in 0..3000u64 {
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
    };
    // And one assistant publishing drafts on /mcp (under the per-client draft quota).
    let published = Arc::new(AtomicU64::new(0));
    let drafts = {
        let (stop, published, port) = (stop.clone(), published.clone(), serve.port);
        std::thread::spawn(move || {
            let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "backup-load", "version": "1"}}});
            let (sid, msg) = mcp(port, None, &init);
            let sid = sid.unwrap_or_else(|| panic!("no MCP session: {msg}"));
            mcp(port, Some(&sid), &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
            let t0 = Instant::now();
            for n in 0..DRAFTS {
                if stop.load(Ordering::SeqCst) || t0.elapsed() > Duration::from_secs(40) {
                    break;
                }
                let call = json!({"jsonrpc": "2.0", "id": 10 + n, "method": "tools/call", "params": {
                    "name": "intent_publish_intent",
                    "arguments": {"statement": format!("Hľadám byt Load draft {n}"), "criteria": {"category": "property"}, "area": "SK"}}});
                let (_, msg) = mcp(port, Some(&sid), &call);
                assert!(msg["result"].is_object() && msg["result"]["isError"] != true, "publish {n}: {msg}");
                published.store(n + 1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let t0 = Instant::now();
    while written.load(Ordering::SeqCst) < 20 || published.load(Ordering::SeqCst) < 3 {
        assert!(t0.elapsed() < Duration::from_secs(20), "the load did not start:\n{}", serve.log());
        std::thread::sleep(Duration::from_millis(10));
    }
    let file = work.path().join("backups").join("holder.isto-backup");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let (at_start, drafts_at_start) = (written.load(Ordering::SeqCst), published.load(Ordering::SeqCst));
    let report = ok_json(&admin(&data, &["backup", "--out", file.to_str().unwrap(), "--json"]));
    let (at_end, drafts_at_end) = (written.load(Ordering::SeqCst), published.load(Ordering::SeqCst));
    // A restore never runs under a server, --force or not.
    let refused = admin(&data, &["restore", file.to_str().unwrap(), "--force"]);
    assert!(!refused.status.success() && text(&refused).contains("`isto serve` is running"), "{}", text(&refused));
    // Let the load go on after the backup, then stop it and the server.
    let t1 = Instant::now();
    while (written.load(Ordering::SeqCst) < at_end + 20
        || published.load(Ordering::SeqCst) < (drafts_at_end + 2).min(DRAFTS))
        && t1.elapsed() < Duration::from_secs(20)
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::SeqCst);
    load.join().unwrap();
    drafts.join().unwrap();
    serve.stop();

    assert_eq!(report["via"], "socket", "{report}");
    assert_eq!(report["keysIncluded"], false);
    assert!(report["note"].as_str().unwrap().contains("NOT in it"), "{report}");
    assert_eq!(report["header"]["format"], "isto-backup");
    assert_eq!(report["header"]["version"], 1);
    assert_eq!(report["header"]["schema"], isto::store::SCHEMA_VERSION);
    assert_eq!(mode(&file), 0o600);
    let leftovers: Vec<_> =
        std::fs::read_dir(file.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "no temp file is left beside the backup: {leftovers:?}");
    let after = rows_of(&data.join("isto.redb"));

    // Restore into a fresh data directory with the holder's key ring.
    let fresh = work.path().join("restored");
    copy_keys(&data, &fresh);
    let restored_report = ok_json(&admin(&fresh, &["restore", file.to_str().unwrap(), "--json"]));
    assert_eq!(restored_report["rows"], report["trailer"]["rows"], "{restored_report}");
    assert!(restored_report["sealedOpened"].as_u64().unwrap() >= 3, "{restored_report}");
    assert_eq!(mode(&fresh.join("isto.redb")), 0o600);
    let restored = rows_of(&fresh.join("isto.redb"));
    // The server sends the pending digest at once (and forgets its due time), and its
    // mail worker matches the queued reply at start (the queue empties).
    assert_every_table_has_rows(&restored, "the restored store", &["digest_due", "pending_replies"]);
    assert_eq!(restored.values().map(|t| t.len() as u64).sum::<u64>(), report["trailer"]["rows"].as_u64().unwrap());

    // One transaction: the load's offers in the backup are exactly the first m of them,
    // each with its feed reference, and m lies between the loads seen around the backup.
    let loaded = load_numbers(&restored);
    let m = loaded.len() as u64;
    assert_eq!(loaded, (0..m).collect::<BTreeSet<u64>>(), "a prefix of the load");
    // (An import committed but not yet answered when the backup ended may be in it: +1.)
    assert!(m >= at_start && m <= at_end + 1, "{at_start} ≤ {m} ≤ {at_end} + 1");
    assert!((load_numbers(&after).len() as u64) > m, "the load went on after the backup");
    let drafted = numbered(&restored, "intents", "Load draft ");
    let d = drafted.len() as u64;
    assert_eq!(drafted, (0..d).collect::<BTreeSet<u64>>(), "a prefix of the drafts");
    assert!(d >= drafts_at_start && d <= drafts_at_end + 1, "{drafts_at_start} ≤ {d} ≤ {drafts_at_end} + 1");
    if drafts_at_end < DRAFTS {
        let later = numbered(&after, "intents", "Load draft ").len() as u64;
        assert!(later > d, "the drafts went on after the backup ({later} > {d})");
    }
    let refs = restored["offer_refs"].values().filter(|l| l.contains("load-")).count() as u64;
    assert_eq!(refs, m, "every load offer with its reference, no reference without its offer");
    // Every row equals the source's: as it was before the server started, or as the
    // server left it (rows the load or the server wrote). Counters in `meta` and the
    // outbox (mail the server queued and sent meanwhile) may be in neither.
    for (table, rows) in &restored {
        if table == "meta" || table == "outbox" {
            continue;
        }
        for (k, line) in rows {
            let same = |r: &Rows| r.get(table).and_then(|t| t.get(k)) == Some(line);
            assert!(same(&before) || same(&after), "table {table}: row {k} is in neither the source before nor after");
        }
    }
    // Rows nobody changed meanwhile are all there.
    for table in ["sellers", "seller_names", "delivered", "delivery_log"] {
        for (k, line) in &before[table] {
            assert_eq!(restored[table].get(k), Some(line), "table {table}: row {k}");
        }
    }

    // The restored holder serves: it starts and its store passes a backup of its own.
    let serve = Serve::start(&fresh, work.path().join("restored.log"));
    let again = work.path().join("again.isto-backup");
    let second = ok_json(&admin(&fresh, &["backup", "--out", again.to_str().unwrap(), "--json"]));
    assert!(second["trailer"]["rows"].as_u64().unwrap() >= m);
    serve.stop();
}

/// A populated holder's data dir and an offline backup of it.
fn backed_up(work: &Path) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let (keep, data) = populated();
    let file = work.join("b.isto-backup");
    let out = admin(&data, &["backup", "--out", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let says = text(&out);
    assert!(says.contains("NOT in it") && says.contains("keys export"), "the keys note is on screen: {says}");
    (keep, data, file)
}

/// Rewrites a backup with `edit` applied to its header (zstd JSON Lines).
fn with_header(file: &Path, to: &Path, edit: impl FnOnce(&mut Value)) {
    let raw = zstd::decode_all(std::fs::File::open(file).unwrap()).unwrap();
    let text = String::from_utf8(raw).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut h: Value = serde_json::from_str(&lines[0]).unwrap();
    edit(&mut h);
    lines[0] = h.to_string();
    let body = lines.join("\n") + "\n";
    std::fs::write(to, zstd::encode_all(body.as_bytes(), 3).unwrap()).unwrap();
}

#[test]
fn offline_backup_verify_and_every_refusal_of_restore_leaves_the_directory_untouched() {
    let work = tempfile::tempdir().unwrap();
    let (_keep, data, file) = backed_up(work.path());
    assert_eq!(mode(&file), 0o600);
    let v = ok_json(&admin(&data, &["backup", "--verify", file.to_str().unwrap(), "--json"]));
    assert_eq!(v["header"]["format"], "isto-backup");
    // An existing --out is kept without --force.
    let again = admin(&data, &["backup", "--out", file.to_str().unwrap()]);
    assert!(!again.status.success() && text(&again).contains("--force"), "{}", text(&again));

    // One corrupt byte: the check fails, naming the damage.
    let corrupt = work.path().join("corrupt.isto-backup");
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x55;
    std::fs::write(&corrupt, &bytes).unwrap();
    let out = admin(&data, &["backup", "--verify", corrupt.to_str().unwrap()]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("damaged"), "{}", text(&out));

    // Into the non-empty source directory without --force: refused, nothing changed.
    let untouched = tree(&data);
    let out = admin(&data, &["restore", file.to_str().unwrap()]);
    assert!(
        !out.status.success() && text(&out).contains("not empty") && text(&out).contains("--force"),
        "{}",
        text(&out)
    );
    assert!(tree(&data) == untouched, "the refused restore changed the data directory");
    // A corrupt file is refused before anything is written, even with --force.
    let out = admin(&data, &["restore", corrupt.to_str().unwrap(), "--force"]);
    assert!(!out.status.success() && text(&out).contains("damaged"), "{}", text(&out));
    assert!(tree(&data) == untouched, "the refused restore changed the data directory");

    // A newer format version, and a newer schema: refused, naming the versions.
    let newer = work.path().join("newer.isto-backup");
    with_header(&file, &newer, |h| h["version"] = json!(2));
    let fresh = work.path().join("fresh");
    copy_keys(&data, &fresh);
    let untouched_fresh = tree(&fresh);
    let out = admin(&fresh, &["restore", newer.to_str().unwrap()]);
    assert!(!out.status.success() && text(&out).contains("format version 2, newer"), "{}", text(&out));
    with_header(&file, &newer, |h| h["schema"] = json!(isto::store::SCHEMA_VERSION + 1));
    let out = admin(&fresh, &["restore", newer.to_str().unwrap()]);
    assert!(!out.status.success() && text(&out).contains("schema version"), "{}", text(&out));
    assert!(tree(&fresh) == untouched_fresh, "the refused restore changed the data directory");

    // Another key ring: refused before the store is renamed into place; no temp file left.
    let other = work.path().join("other");
    KeyRing::load_or_create(&other.join("keys").join("sealing.key")).unwrap();
    let untouched_other = tree(&other);
    let out = admin(&other, &["restore", file.to_str().unwrap(), "--json"]);
    assert!(!out.status.success() && text(&out).contains("cannot open"), "{}", text(&out));
    assert!(tree(&other) == untouched_other, "no store, no temp file");
    // Also when the key ids match but the sealed bytes were changed: every value is opened.
    let tampered = work.path().join("tampered.isto-backup");
    {
        let raw = String::from_utf8(zstd::decode_all(std::fs::File::open(&file).unwrap()).unwrap()).unwrap();
        let mut lines: Vec<String> = raw.lines().map(str::to_owned).collect();
        let i = lines.iter().position(|l| l.contains("\"ct\":\"")).unwrap();
        let at = lines[i].find("\"ct\":\"").unwrap() + 6;
        let flipped = if &lines[i][at..at + 1] == "A" { "B" } else { "A" };
        lines[i].replace_range(at..at + 1, flipped);
        // Recompute the trailer's checksum, so only the key ring can notice.
        let n = lines.len() - 1;
        use sha2::Digest as _;
        let mut sha = sha2::Sha256::new();
        for l in &lines[..n] {
            sha.update(l.as_bytes());
            sha.update(b"\n");
        }
        let hex: String = sha.finalize().iter().map(|b| format!("{b:02x}")).collect();
        let mut end: Value = serde_json::from_str(&lines[n]).unwrap();
        end["end"]["sha256"] = json!(hex);
        lines[n] = end.to_string();
        std::fs::write(&tampered, zstd::encode_all((lines.join("\n") + "\n").as_bytes(), 3).unwrap()).unwrap();
    }
    let out = admin(&fresh, &["restore", tampered.to_str().unwrap()]);
    assert!(!out.status.success() && text(&out).contains("cannot open a sealed value"), "{}", text(&out));
    assert!(tree(&fresh) == untouched_fresh, "no store, no temp file");

    // The right key ring: restored; and --force replaces a store.
    let r = ok_json(&admin(&fresh, &["restore", file.to_str().unwrap(), "--json"]));
    assert_eq!(r["replaced"], false);
    assert_eq!(rows_of(&fresh.join("isto.redb")), rows_of(&data.join("isto.redb")));
    let r = ok_json(&admin(&fresh, &["restore", file.to_str().unwrap(), "--force", "--json"]));
    assert_eq!(r["replaced"], true);
    assert_eq!(rows_of(&fresh.join("isto.redb")), rows_of(&data.join("isto.redb")));
}

#[test]
fn keys_export_is_private_refuses_to_overwrite_and_restores_with_the_backup() {
    let work = tempfile::tempdir().unwrap();
    let (_keep, data, file) = backed_up(work.path());
    let keys = work.path().join("keys.json");
    let out = admin(&data, &["keys", "export", "--out", keys.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("WARNING"), "{}", text(&out));
    assert_eq!(mode(&keys), 0o600);
    let out = admin(&data, &["keys", "export", "--out", keys.to_str().unwrap()]);
    assert!(!out.status.success() && text(&out).contains("--force"), "{}", text(&out));
    let r = ok_json(&admin(&data, &["keys", "export", "--out", keys.to_str().unwrap(), "--force", "--json"]));
    assert_eq!(r["kids"].as_array().unwrap().len(), 1);
    assert!(r["warning"].as_str().unwrap().contains("sealing keys"));
    assert_eq!(mode(&keys), 0o600);

    // A new machine: the backup and the key export are all it needs; with the key export
    // of another holder the restore is refused and leaves nothing behind, not even the
    // directory or the keys.
    let fresh = work.path().join("new-host");
    let other = work.path().join("other-holder");
    KeyRing::load_or_create(&other.join("keys").join("sealing.key")).unwrap();
    let other_keys = work.path().join("other-keys.json");
    assert!(admin(&other, &["keys", "export", "--out", other_keys.to_str().unwrap()]).status.success());
    let out = admin(&fresh, &["restore", file.to_str().unwrap(), "--keys", other_keys.to_str().unwrap()]);
    assert!(!out.status.success() && text(&out).contains("cannot open"), "{}", text(&out));
    assert!(!fresh.exists(), "a refused restore leaves no data directory behind");
    let r = ok_json(&admin(&fresh, &["restore", file.to_str().unwrap(), "--keys", keys.to_str().unwrap(), "--json"]));
    assert!(r["sealedOpened"].as_u64().unwrap() >= 3, "{r}");
    assert_eq!(rows_of(&fresh.join("isto.redb")), rows_of(&data.join("isto.redb")));
    assert_eq!(mode(&fresh.join("keys").join("sealing.key")), 0o600);
    assert_eq!(
        std::fs::read(fresh.join("keys/sealing.key")).unwrap(),
        std::fs::read(data.join("keys/sealing.key")).unwrap()
    );
    // The handle key travels too: sellers see the intents under the same handles.
    assert_eq!(mode(&fresh.join("keys").join("handle.key")), 0o600);
    assert_eq!(
        std::fs::read(fresh.join("keys/handle.key")).unwrap(),
        std::fs::read(data.join("keys/handle.key")).unwrap()
    );
}
