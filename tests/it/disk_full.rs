//! A full disk: the real `isto serve` with its data directory on a small tmpfs that this
//! test mounts in a private mount namespace (`unshare`). The test fills the tmpfs through
//! `/proc/<pid>/root` until publishing a draft over `/mcp` fails, sees `/readyz` answer
//! 503 while `/healthz` stays 200, deletes the filler, and sees the next publish succeed
//! and `/readyz` answer 200 — without a restart. The report (why) is read from `/readyz`
//! on the metrics listener; the public one says only ready or not.
//!
//! Skipped, with a message, where no tmpfs can be mounted (no `unshare`, no user or
//! mount namespaces) or the server's mount namespace cannot be reached. Loopback only; every loop bounded in count and time.

use crate::kit::load::{http, mcp, mcp_session};
use serde_json::{json, Value};
use std::io::Write as _;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Size of the tmpfs the data directory lives on.
const TMPFS: &str = "size=4m";
/// The whole test's budget.
const BUDGET: Duration = Duration::from_secs(25);

/// The `unshare` arguments that can mount a tmpfs here, tried in order: a user namespace
/// mapping us to root (unprivileged), then a plain mount namespace (root).
fn mount_namespace(dir: &Path) -> Option<Vec<&'static str>> {
    for args in [vec!["--user", "--map-root-user", "--mount"], vec!["--mount"]] {
        let ok = Command::new("unshare")
            .args(&args)
            .args(["sh", "-c", "mount -t tmpfs -o size=1m tmpfs \"$0\""])
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Some(args);
        }
    }
    None
}

/// `isto serve`, killed when dropped.
struct Isto {
    child: Child,
    port: u16,
    /// The metrics listener's port (`/readyz` with the report).
    metrics: u16,
}

impl Drop for Isto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Publishes a draft with a long statement; `Ok` when it was stored, `Err(text)` with the
/// tool's error text otherwise.
fn publish(port: u16, sid: &str, n: usize) -> Result<(), String> {
    let statement = format!("Hľadám Škoda Octavia {n} {}", "kombi s ťažným zariadením ".repeat(70));
    let call = json!({"jsonrpc": "2.0", "id": 10 + n, "method": "tools/call", "params": {
        "name": "intent_publish_intent", "arguments": {"statement": statement, "area": "SK"}}});
    let (_, msg) = mcp(port, Some(sid), &call);
    let result = &msg["result"];
    if result.is_null() {
        return Err(format!("no result: {msg}"));
    }
    if result["isError"] == true {
        return Err(result["content"][0]["text"].as_str().unwrap_or_default().to_owned());
    }
    Ok(())
}

/// `GET /readyz` on the metrics listener `metrics`: the status code and the report. The
/// public listener `port` answers its status alone (200 ready, 503 not ready).
fn readyz(port: u16, metrics: u16) -> (u16, Value) {
    let (code, _, body) = http(metrics, "GET", "/readyz", &[], "");
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let (public, _, text) = http(port, "GET", "/readyz", &[], "");
    let status = if public == 200 { "ready" } else { "not_ready" };
    assert_eq!(text, format!(r#"{{"status":"{status}"}}"#), "the public /readyz says ready or not, nothing more");
    (code, body)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Starts `isto serve` inside a new mount namespace whose `dir` is a fresh tmpfs, and
/// waits for `/healthz` and for the offer index to be open.
fn start(ns: &[&str], dir: &Path, work: &Path) -> Isto {
    let (port, metrics) = (free_port(), free_port());
    let mut cmd = Command::new("unshare");
    cmd.args(ns)
        .args(["sh", "-c", "mount -t tmpfs -o \"$2\" tmpfs \"$1\" && exec \"$0\" serve"])
        .arg(env!("CARGO_BIN_EXE_isto"))
        .arg(dir)
        .arg(TMPFS);
    for (k, _) in std::env::vars() {
        if k.starts_with("ISTO_") {
            cmd.env_remove(k);
        }
    }
    let log = std::fs::File::create(work.join("isto.log")).unwrap();
    cmd.env("ISTO_DATA_DIR", dir.join("data"))
        .env("ISTO_LISTEN", format!("127.0.0.1:{port}"))
        .env("ISTO_PUBLIC_URL", format!("http://127.0.0.1:{port}"))
        .env("ISTO_METRICS_LISTEN", format!("127.0.0.1:{metrics}"))
        .env("ISTO_MAIL_FROM", "holder@example.test")
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    let isto = Isto { child: cmd.spawn().unwrap(), port, metrics };
    let t = Instant::now();
    loop {
        let up = TcpStream::connect(("127.0.0.1", port)).is_ok() && http(port, "GET", "/healthz", &[], "").0 == 200;
        // It answers before its offer index is open; then waits for that (`opening`).
        let metrics_up = TcpStream::connect(("127.0.0.1", metrics)).is_ok();
        if up && metrics_up && readyz(port, metrics).1["checks"]["index"]["opening"] != true {
            return isto;
        }
        assert!(t.elapsed() < Duration::from_secs(15), "isto serve did not answer /healthz:\n{}", log_of(work));
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn log_of(work: &Path) -> String {
    std::fs::read_to_string(work.join("isto.log")).unwrap_or_default()
}

/// Writes zeros to `path` until the file system refuses (bounded by the tmpfs size).
fn fill(path: &Path) -> u64 {
    let mut f = std::fs::File::create(path).unwrap();
    let chunk = vec![0u8; 64 * 1024];
    let mut n = 0u64;
    for _ in 0..1024 {
        match f.write(&chunk) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k as u64,
        }
    }
    // The last pages, byte-sized writes (tmpfs allocates whole pages).
    for _ in 0..64 {
        if f.write(&[0u8; 512]).map_or(true, |k| k == 0) {
            break;
        }
    }
    let _ = f.sync_all();
    n
}

#[test]
fn a_full_disk_makes_the_holder_unready_and_writes_work_again_once_space_returns() {
    let started = Instant::now();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("mnt");
    std::fs::create_dir(&dir).unwrap();
    let Some(ns) = mount_namespace(&dir) else {
        eprintln!("SKIPPED disk_full: cannot mount a tmpfs here (unshare with a user or mount namespace failed)");
        return;
    };
    let isto = start(&ns, &dir, work.path());
    let (port, metrics) = (isto.port, isto.metrics);
    // The tmpfs as the test sees it: through the server's root, in its mount namespace.
    let inside: PathBuf = PathBuf::from(format!("/proc/{}/root", isto.child.id())).join(dir.strip_prefix("/").unwrap());
    if !inside.join("data").is_dir() {
        eprintln!("SKIPPED disk_full: the server's mount namespace is not reachable at {}", inside.display());
        return;
    }

    let (code, body) = readyz(port, metrics);
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["status"], "ready", "{body}");
    let sid = mcp_session(port, "disk-full");
    publish(port, &sid, 0).unwrap();

    // Fill the disk, then publish until the store refuses.
    let filler = inside.join("filler");
    assert!(fill(&filler) > 0);
    let mut failure = None;
    for n in 1..=200 {
        assert!(started.elapsed() < BUDGET, "publishing on a full disk never failed");
        match publish(port, &sid, n) {
            Ok(()) => continue,
            Err(text) => {
                eprintln!("disk_full: draft {n} after filling the disk failed");
                failure = Some(text);
                break;
            }
        }
    }
    let text = failure.expect("200 drafts on a full 4 MiB disk: one must fail");
    assert!(text.contains("internal error"), "the failure is the store's, answered generically: {text}");

    let (code, body) = readyz(port, metrics);
    assert_eq!(code, 503, "{body}");
    assert_eq!(body["status"], "not_ready", "{body}");
    assert_eq!(body["checks"]["store"]["writable"], false, "{body}");
    assert_eq!(http(port, "GET", "/healthz", &[], "").0, 200, "/healthz is liveness only");

    // Space returns: no restart, the next write commits and the holder is ready again.
    std::fs::remove_file(&filler).unwrap();
    // The time window under test: the store tries again only after REOPEN_INTERVAL.
    std::thread::sleep(isto::store::REOPEN_INTERVAL + Duration::from_millis(100));
    publish(port, &sid, 1000).unwrap_or_else(|e| panic!("publish after space returned: {e}\n{}", log_of(work.path())));
    let (code, body) = readyz(port, metrics);
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["checks"]["store"]["writable"], true, "{body}");
    assert_eq!(body["checks"]["index"]["inStep"], true, "{body}");

    // One log line for the failure episode and one for the recovery; no restart.
    let log = crate::kit::load::settled_log(port, &work.path().join("isto.log"));
    assert_eq!(log.matches("store I/O failure").count(), 1, "{log}");
    assert_eq!(log.matches("store writes succeed again").count(), 1, "{log}");
    assert_eq!(log.matches("isto serving").count(), 1, "{log}");
    assert!(!log.contains("Hľadám"), "a statement reached the log");
    assert!(started.elapsed() < BUDGET, "{:?}", started.elapsed());
    if std::env::var_os("ISTO_TEST_SHOW_LOG").is_some() {
        eprintln!("{log}");
    }
}
