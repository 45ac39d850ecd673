//! Group commit (true group commit): drafts published concurrently on `/mcp` are written
//! in batches, several in one write transaction with one durable commit (the batch counts
//! of `/readyz` on the metrics listener), and every draft the server acknowledged
//! survives `kill -9` of the real binary in the middle of the load (read back from the
//! redb file afterwards).

use crate::kit::load::{http, mcp_session, rows_of, Serve};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::io::{Read as _, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Publishing threads, each with its own MCP session.
const THREADS: usize = 6;
/// Drafts per thread at most (all from 127.0.0.1: under the default 60 per hour).
const PER_THREAD: usize = 9;

#[test]
fn every_acknowledged_draft_survives_kill_9_during_concurrent_publishes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let metrics = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let listen = format!("127.0.0.1:{metrics}");
    let serve = Serve::start_with_env(
        &data,
        dir.path().join("serve.log"),
        &[("ISTO_SMTP_URL", "smtp://127.0.0.1:1"), ("ISTO_METRICS_LISTEN", &listen)],
    );
    let port = serve.port;
    let acked: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (acked, stop) = (acked.clone(), stop.clone());
            std::thread::spawn(move || {
                let sid = mcp_session(port, &format!("group-commit-{t}"));
                for n in 0..PER_THREAD {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let call = json!({"jsonrpc": "2.0", "id": n + 2, "method": "tools/call", "params": {
                        "name": "intent_publish_intent",
                        "arguments": {"statement": format!("Hľadám Škoda Octavia kombi {t}-{n}"),
                                      "criteria": {"category": "vehicles"}, "area": "SK"}}});
                    let Some(msg) = try_call(port, &sid, &call) else { return };
                    // A call cut off by the kill has no result: only acknowledged ones count.
                    if let Some(id) = msg.pointer("/result/structuredContent/intent/id").and_then(|v| v.as_str()) {
                        assert_ne!(msg["result"]["isError"], true, "{msg}");
                        acked.lock().unwrap().insert(id.to_owned());
                    }
                }
            })
        })
        .collect();
    // Kill in the middle of the load: once a third of the drafts are acknowledged and (on
    // redb; on PostgreSQL each commit is durable by itself) a batch has held more than one.
    let batching = !crate::kit::backend_is_postgres();
    let t0 = Instant::now();
    let batches = loop {
        // The report comes with 503 too (the index may still be opening at first).
        let (code, _, body) = http(metrics, "GET", "/readyz", &[], "");
        assert!(code == 200 || code == 503, "{code}: {body}");
        let batches = serde_json::from_str::<Value>(&body).unwrap()["checks"]["store"]["writeBatches"].clone();
        let done = acked.lock().unwrap().len();
        if done >= THREADS * PER_THREAD / 3 && (!batching || batches["largest"].as_u64().unwrap() >= 2) {
            break batches;
        }
        assert!(done < THREADS * PER_THREAD, "every draft went in a batch of its own: {batches}");
        assert!(t0.elapsed() < Duration::from_secs(60), "the drafts were not acknowledged:\n{}", serve.log());
        std::thread::sleep(Duration::from_millis(2));
    };
    let (writes, n) = (batches["writes"].as_u64().unwrap(), batches["batches"].as_u64().unwrap());
    if batching {
        assert!(writes > n && n >= 1, "some batch held more than one write: {batches}");
    } else {
        assert_eq!((writes, n), (0, 0), "no batches on PostgreSQL: {batches}");
    }
    drop(serve); // SIGKILL, then reaped
    stop.store(true, Ordering::SeqCst);
    for t in threads {
        // A thread may panic only on a tool error, which is a failure of its own.
        t.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= THREADS * PER_THREAD / 3, "{}", acked.len());
    let rows = rows_of(&data.join("isto.redb"));
    let stored: BTreeSet<String> =
        rows.get("intents").map(|t| t.keys().map(|k| k.trim_matches('"').to_owned()).collect()).unwrap_or_default();
    let lost: Vec<_> = acked.difference(&stored).collect();
    assert!(lost.is_empty(), "acknowledged drafts lost at kill -9: {lost:?} (of {})", acked.len());
}

/// One `tools/call` on the session (HTTP/1.0); None when the server is gone or cut the
/// answer off (killed mid-call).
fn try_call(port: u16, sid: &str, body: &Value) -> Option<Value> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let body = body.to_string();
    let req = format!(
        "POST /mcp HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: application/json, \
         text/event-stream\r\nMcp-Session-Id: {sid}\r\nMcp-Protocol-Version: 2025-06-18\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).ok()?;
    let text = String::from_utf8_lossy(&out);
    let (_, rest) = text.split_once("\r\n\r\n")?;
    rest.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .find(|l| !l.is_empty())
        .and_then(|l| serde_json::from_str(l).ok())
        .or_else(|| serde_json::from_str(rest).ok())
}
