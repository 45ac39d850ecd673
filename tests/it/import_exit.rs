//! The exit status of the real `isto admin offers import`: 0 when every row was imported
//! (or the file has none), 1 when any row was rejected — with the report still printed,
//! as text and as `--json`, and the good rows stored —, 2 when the import did not run (no
//! such file, bad arguments). Offline (the store opened by the command) and through a
//! running `isto serve`'s admin socket. Loopback only; every wait bounded.

use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn row(r: &str, title: &str) -> Value {
    json!({"ref": r, "title": title, "category": "vehicles",
        "attributes": {"make": "Škoda", "model": "Octavia", "year": 2018},
        "price": {"amount": 9000, "currency": "EUR"},
        "area": {"country": "SK", "regions": ["SK-BL"], "place": "Bratislava"},
        "seller": {"name": "AutoPredaj s. r. o.", "url": "https://autopredaj.example"},
        "url": format!("https://autopredaj.example/{r}")})
}

/// Writes `lines` (JSON values or raw text) as a JSON Lines file.
fn jsonl(dir: &Path, name: &str, lines: &[String]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    p
}

fn isto(config: &Path, data: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_isto"));
    c.env("ISTO_CONFIG", config)
        .env("ISTO_DATA_DIR", data)
        .env_remove("ISTO_SMTP_URL")
        .env_remove("NOTIFY_SOCKET")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// `isto admin offers import ARGS` to its end (at most 60 s).
fn import(config: &Path, data: &Path, args: &[&str]) -> Output {
    let mut child = isto(config, data).args(["admin", "offers", "import"]).args(args).spawn().unwrap();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("isto admin offers import {args:?} did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json_report(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: stdout {} stderr {}", out(o), err(o)))
}

struct Files {
    good: std::path::PathBuf,
    mixed: std::path::PathBuf,
    bad: std::path::PathBuf,
    empty: std::path::PathBuf,
}

fn files(dir: &Path) -> Files {
    let good = [row("g1", "Škoda Octavia Combi 2.0 TDI"), row("g2", "Škoda Octavia RS")];
    let mut no_seller = row("m2", "Škoda Octavia Scout");
    no_seller.as_object_mut().unwrap().remove("seller");
    Files {
        good: jsonl(dir, "good.jsonl", &good.iter().map(Value::to_string).collect::<Vec<_>>()),
        // Line 2 has no seller, line 4 is not JSON; lines 1 and 3 are good.
        mixed: jsonl(
            dir,
            "mixed.jsonl",
            &[
                row("m1", "Škoda Octavia Combi").to_string(),
                no_seller.to_string(),
                row("m3", "Škoda Octavia Style").to_string(),
                "{not json".to_owned(),
            ],
        ),
        bad: jsonl(dir, "bad.jsonl", &["{}".to_owned(), "[]".to_owned()]),
        empty: jsonl(dir, "empty.jsonl", &[]),
    }
}

/// The checks shared by the offline and the online run: `via` is the route expected.
fn check_exit_statuses(config: &Path, data: &Path, f: &Files, via: &str) {
    // Every row good: 0.
    let o = import(config, data, &[f.good.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{via} good: {}{}", out(&o), err(&o));
    assert!(out(&o).contains("0 rows rejected"), "{}", out(&o));

    // Some rows rejected, text: 1, the bad lines on stderr, the summary on stdout.
    let o = import(config, data, &[f.mixed.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{via} mixed: {}{}", out(&o), err(&o));
    assert!(out(&o).contains("imported 2 offers") && out(&o).contains("2 rows rejected"), "{}", out(&o));
    assert!(err(&o).contains("line 2") && err(&o).contains("seller is required"), "{}", err(&o));
    assert!(err(&o).contains("line 4"), "{}", err(&o));

    // The same as --json: 1, the report on stdout with the good rows stored (updated now).
    let o = import(config, data, &[f.mixed.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(1), "{via} mixed --json: {}{}", out(&o), err(&o));
    let r = json_report(&o);
    assert_eq!(r["via"], via, "{r}");
    assert_eq!((r["rows"].as_u64(), r["rejected"].as_u64()), (Some(4), Some(2)), "{r}");
    assert_eq!(r["imported"]["updated"], 2, "{r}");
    let lines: Vec<u64> = r["errors"].as_array().unwrap().iter().map(|e| e["line"].as_u64().unwrap()).collect();
    assert_eq!(lines, vec![2, 4], "{r}");

    // --full with a rejected row: 1, and nothing is withdrawn (g1, g2 are not in the file).
    let o = import(config, data, &[f.mixed.to_str().unwrap(), "--full", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{via} --full: {}{}", out(&o), err(&o));
    let r = json_report(&o);
    assert!(r.get("withdrawn").is_none(), "{r}");

    // Every row rejected: 1 as well.
    let o = import(config, data, &[f.bad.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(1), "{via} bad: {}{}", out(&o), err(&o));
    assert_eq!(json_report(&o)["rejected"], 2);

    // No rows: 0.
    let o = import(config, data, &[f.empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{via} empty: {}{}", out(&o), err(&o));

    // No such file: 2, the error names it on stderr, nothing on stdout; with --json the
    // error is the one JSON object on stdout.
    let missing = f.good.with_file_name("missing.jsonl");
    let o = import(config, data, &[missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{via} missing: {}{}", out(&o), err(&o));
    assert!(err(&o).contains("missing.jsonl"), "{}", err(&o));
    assert!(out(&o).is_empty(), "{}", out(&o));
    let o = import(config, data, &[missing.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(2), "{via} missing --json: {}{}", out(&o), err(&o));
    let r = json_report(&o);
    assert_eq!(r["ok"], false, "{r}");
    assert!(r["error"].as_str().unwrap_or_default().contains("missing.jsonl"), "{r}");

    // Bad arguments (no file): 2.
    let o = import(config, data, &[]);
    assert_eq!(o.status.code(), Some(2), "{via} no file: {}{}", out(&o), err(&o));
}

#[test]
fn import_exits_1_when_rows_are_rejected_offline() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("isto.toml");
    std::fs::write(&config, "").unwrap();
    let f = files(dir.path());
    check_exit_statuses(&config, &dir.path().join("data"), &f, "direct");
}

#[test]
fn import_exits_1_when_rows_are_rejected_through_the_running_server() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("isto.toml");
    std::fs::write(&config, "").unwrap();
    let data = dir.path().join("data");
    let f = files(dir.path());
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut server = isto(&config, &data)
        .arg("serve")
        .env("ISTO_LISTEN", format!("127.0.0.1:{port}"))
        .env("ISTO_PUBLIC_URL", format!("http://127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !data.join("admin.sock").exists() {
        if t0.elapsed() > Duration::from_secs(30) || server.try_wait().unwrap().is_some() {
            let _ = server.kill();
            panic!("isto serve did not open its admin socket within 30 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let checked = std::panic::catch_unwind(|| check_exit_statuses(&config, &data, &f, "socket"));
    let _ = server.kill();
    let _ = server.wait();
    if let Err(e) = checked {
        std::panic::resume_unwind(e);
    }
}
