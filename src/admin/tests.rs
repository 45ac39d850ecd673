use super::*;
use crate::records::OfferRecord;
use crate::store::Reads;
use serde_json::json;
use std::io::{BufRead as _, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

fn settings(dir: &Path) -> Settings {
    let mut s = Settings::defaults();
    s.data_dir = dir.join("data");
    s
}

fn row(reference: &str, title: &str) -> Value {
    json!({"ref": reference, "title": title, "category": "vehicles",
           "attributes": {"make": "Škoda"}, "price": {"amount": 9000, "currency": "EUR"},
           "area": "Košice", "seller": {"name": "Auto Kováč"}})
}

/// 3 good rows (lines 1, 3, 6) and 2 bad ones (lines 2 and 5), a blank line 4.
fn jsonl(dir: &Path) -> PathBuf {
    let mut no_seller = row("x", "Fabia");
    no_seller.as_object_mut().unwrap().remove("seller");
    let lines = [
        row("a", "Škoda Octavia").to_string(),
        no_seller.to_string(),
        row("b", "Škoda Fabia").to_string(),
        String::new(),
        "{\"title\": ".to_owned(),
        row("c", "Škoda Superb").to_string(),
    ];
    let p = dir.join("feed.jsonl");
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    p
}

fn stored_offers(s: &Settings) -> usize {
    let store = Store::open(&s.store_path()).unwrap();
    store.read(|rx| rx.all_offers::<OfferRecord>()).unwrap().len()
}

#[test]
fn offline_import_counts_lines_and_updates() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(dir.path());
    let config = dir.path().join("etc").join("isto.toml");
    init(&s, Some(&config), false).unwrap();
    assert_eq!(std::fs::read_to_string(&config).unwrap(), crate::config::SKELETON);
    std::fs::write(&config, "# mine\n").unwrap();
    init(&s, Some(&config), false).unwrap();
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "# mine\n", "init never overwrites");
    let mode = std::fs::metadata(&s.data_dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    assert!(s.key_path().exists() && s.store_path().exists());

    let file = jsonl(dir.path());
    let r = import(&s, &file, false, true).unwrap();
    assert_eq!(r.via, Route::Direct);
    assert_eq!((r.rows, r.rejected), (5, 2));
    assert_eq!(r.imported, ImportCounts { created: 3, updated: 0, delivered: 0 });
    let lines: Vec<u64> = r.errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, vec![2, 5]);
    assert!(r.errors[0].message.contains("seller is required"), "{:?}", r.errors);
    assert!(r.errors[1].message.contains("not valid JSON"), "{:?}", r.errors);
    // Some rows rejected: exit status 1, the good rows stored.
    assert_eq!(r.exit_code(), 1);
    assert_eq!(r.summary(), "imported 3 offers (3 new, 0 updated), 0 deliveries to standing intents; 2 rows rejected");
    let j = serde_json::to_value(&r).unwrap();
    assert_eq!(j["imported"]["created"], 3);
    assert_eq!(j["errors"][0]["line"], 2);
    assert_eq!(j["via"], "direct");
    // The data directory's offer index is in step: `isto serve` need not rebuild it.
    let in_step = |s: &Settings| {
        let g = Store::open(&s.store_path()).unwrap().read(|rx| rx.offers_generation()).unwrap();
        let ix = crate::catalogue::index::OfferIndex::open_priced(Some(&s.data_dir.join("index")), &s.rates).unwrap();
        (ix.generation() == Some(g), ix.num_docs())
    };
    assert_eq!(in_step(&s), (true, 3));

    // The same file again: the feed's refs update the offers in place.
    let r = import(&s, &file, false, true).unwrap();
    assert_eq!(r.imported, ImportCounts { created: 0, updated: 3, delivered: 0 });
    assert_eq!(stored_offers(&s), 3);
    assert_eq!(in_step(&s), (true, 3));

    // Every row bad → exit status 1; an empty file is not a failure.
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{}\n[]\n").unwrap();
    assert_eq!(import(&s, &bad, false, true).unwrap().exit_code(), 1);
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    assert_eq!(import(&s, &empty, false, true).unwrap().exit_code(), 0);
}

#[test]
fn import_creates_a_fresh_store_but_never_a_key_for_an_existing_one() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(dir.path());
    // A new data directory is created as `isto admin init` would.
    let r = import(&s, &jsonl(dir.path()), false, true).unwrap();
    assert_eq!(r.imported.created, 3);
    assert!(s.key_path().exists() && s.store_path().exists());
    // A store whose key is gone is refused: a new key would orphan the sealed data.
    std::fs::remove_file(s.key_path()).unwrap();
    let e = import(&s, &jsonl(dir.path()), false, true).unwrap_err();
    assert!(e.to_string().contains("restore it from your backup"), "{e:#}");
    let dir = tempfile::tempdir().unwrap();
    let s = settings(dir.path());
    init(&s, None, false).unwrap();
    let csv = dir.path().join("f.csv");
    std::fs::write(&csv, "title,colour\n").unwrap();
    let e = import(&s, &csv, false, true).unwrap_err();
    assert!(format!("{e:#}").contains("unknown columns colour"), "{e:#}");
}

#[test]
fn stale_socket_falls_back_to_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(dir.path());
    init(&s, None, false).unwrap();
    // A socket file nothing listens on (a server that died).
    drop(std::os::unix::net::UnixListener::bind(s.admin_socket_path()).unwrap());
    assert!(s.admin_socket_path().exists());
    let r = import(&s, &jsonl(dir.path()), false, true).unwrap();
    assert_eq!(r.via, Route::Direct);
    assert_eq!(r.imported.created, 3);
}

#[test]
fn held_store_without_socket_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(dir.path());
    init(&s, None, false).unwrap();
    let _held = Store::open(&s.store_path()).unwrap();
    let e = import(&s, &jsonl(dir.path()), false, true).unwrap_err().to_string();
    assert!(e.contains("`isto serve` is running without its admin socket"), "{e}");
    assert!(e.contains("is missing"), "{e}");
}

fn server_holder(s: &Settings) -> AppState {
    let store = Store::open(&s.store_path()).unwrap();
    let (keys, _) = KeyRing::load_or_create(&s.key_path()).unwrap();
    AppState::new(s.clone(), store, keys, Arc::new(SystemClock))
}

async fn wait_for(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(start.elapsed() < Duration::from_secs(10), "socket {} did not appear", path.display());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_goes_through_the_running_server() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(dir.path());
    init(&s, None, false).unwrap();
    let holder = server_holder(&s);
    let stop = CancellationToken::new();
    let server = tokio::spawn(serve_socket(holder.clone(), stop.clone()));
    let sock = s.admin_socket_path();
    wait_for(&sock).await;
    // The server sets the mode right after binding (polled with a deadline).
    let start = Instant::now();
    while std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777 != 0o600 {
        assert!(start.elapsed() < Duration::from_secs(10), "the socket's mode is not 0600");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // The server's Holder holds the store: a direct open fails, so an import that
    // succeeds must have gone through the socket.
    assert!(Store::open(&s.store_path()).is_err_and(|e| e.is_already_open()));

    // A CSV file: parsed here into JSON rows, validated again by the server.
    let csv = dir.path().join("feed.csv");
    std::fs::write(
        &csv,
        "ref,title,category,price.amount,price.currency,area,seller.name,attr.year\n\
         k1,Škoda Octavia,vehicles,9000,EUR,Košice,Auto Kováč,2018\n\
         k2,Škoda Fabia,vehicles,5000,,Košice,Auto Kováč,2012\n\
         k3,Škoda Superb,vehicles,15000,EUR,SK-BL,Auto Kováč,2020\n",
    )
    .unwrap();
    let (s2, f2) = (s.clone(), csv.clone());
    let r = tokio::task::spawn_blocking(move || import(&s2, &f2, false, true)).await.unwrap().unwrap();
    assert_eq!(r.via, Route::Socket);
    assert_eq!(r.imported, ImportCounts { created: 2, updated: 0, delivered: 0 });
    assert_eq!(r.errors, vec![RowError { line: 3, message: "price.currency is required".into() }]);
    let (s2, f2) = (s.clone(), jsonl(dir.path()));
    let r = tokio::task::spawn_blocking(move || import(&s2, &f2, false, true)).await.unwrap().unwrap();
    assert_eq!((r.via, r.imported.created, r.rejected), (Route::Socket, 3, 2));
    let offers: Vec<OfferRecord> = holder.base.store().read(|rx| rx.all_offers()).unwrap();
    assert_eq!(offers.len(), 5, "the offers are in the server's store");
    let year = offers.iter().find(|o| o.offer.title == "Škoda Octavia" && o.offer.attributes.contains_key("year"));
    assert_eq!(year.unwrap().offer.attributes["year"], json!(2018));

    // The protocol itself.
    let sock2 = sock.clone();
    let answers = tokio::task::spawn_blocking(move || {
        let stream = std::os::unix::net::UnixStream::connect(&sock2).unwrap();
        let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
        let mut w = stream;
        let mut out = Vec::new();
        let mut bad_row = row("z", "Fabia");
        bad_row["price"] = json!({"amount": 1, "currency": "USD"});
        for req in [
            json!({"op": "ping"}).to_string(),
            "not json".to_owned(),
            json!({"op": "drop"}).to_string(),
            json!({"op": "import"}).to_string(),
            json!({"op": "import", "rows": [row("y", "Fabia"), bad_row]}).to_string(),
        ] {
            w.write_all(format!("{req}\n").as_bytes()).unwrap();
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            out.push(serde_json::from_str::<Value>(&line).unwrap());
        }
        out
    })
    .await
    .unwrap();
    assert_eq!(answers[0], json!({"ok": true, "version": VERSION}));
    assert!(answers[1]["error"].as_str().unwrap().starts_with("the request is not JSON"));
    // The unknown op is named, with every op the server knows (before: only three).
    let unknown = answers[2]["error"].as_str().unwrap();
    assert!(unknown.starts_with("unknown op \"drop\" (known: ping, import, finish_full, seller_add,"), "{unknown}");
    assert!(unknown.contains("backup") && unknown.ends_with("keys_retire)"), "{unknown}");
    assert_eq!(answers[3]["error"], "import: missing field `rows`");
    assert_eq!(answers[4]["ok"], false);
    assert!(answers[4]["error"].as_str().unwrap().starts_with("rows[1]: price.currency"), "{}", answers[4]);
    let n = holder.base.store().read(|rx| rx.all_offers::<OfferRecord>()).unwrap().len();
    assert_eq!(n, 5, "a refused batch stores nothing");

    // Stopping removes the socket file; with the store still held the import says why.
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(10), server).await.unwrap().unwrap().unwrap();
    assert!(!sock.exists());
    let (s2, f2) = (s.clone(), csv.clone());
    let e = tokio::task::spawn_blocking(move || import(&s2, &f2, false, true)).await.unwrap().unwrap_err();
    assert!(e.to_string().contains("without its admin socket"), "{e}");
    drop(holder);
    let (s2, f2) = (s.clone(), csv);
    let r = tokio::task::spawn_blocking(move || import(&s2, &f2, false, true)).await.unwrap().unwrap();
    assert_eq!((r.via, r.imported.updated), (Route::Direct, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_socket_file_is_replaced_and_idle_connections_end_on_stop() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(dir.path());
    init(&s, None, false).unwrap();
    let sock = s.admin_socket_path();
    drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
    std::fs::write(dir.path().join("data").join("not-a-socket"), "x").unwrap();
    let e = AdminSocket::bind(&dir.path().join("data").join("not-a-socket")).err().unwrap();
    assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists, "{e}");
    assert!(e.to_string().contains("is not a socket; move it away"), "{e}");
    let holder = server_holder(&s);
    let stop = CancellationToken::new();
    let socket = AdminSocket::bind(&sock).unwrap();
    assert_eq!(socket.path(), sock.as_path());
    let server = tokio::spawn(socket.run(holder, stop.clone()));
    // An idle client must not keep the server from stopping: one that was answered a
    // ping (so the server holds its connection) and now waits without a request.
    let mut idle = tokio::net::UnixStream::connect(&sock).await.unwrap();
    {
        use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
        idle.write_all(b"{\"op\": \"ping\"}\n").await.unwrap();
        let mut line = String::new();
        tokio::io::BufReader::new(&mut idle).read_line(&mut line).await.unwrap();
        assert_eq!(serde_json::from_str::<Value>(&line).unwrap()["ok"], true, "{line}");
    }
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(10), server).await.unwrap().unwrap().unwrap();
    assert!(!sock.exists());
}

#[test]
fn full_import_withdraws_vanished_offers_unless_rows_were_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(dir.path());
    init(&s, None, false).unwrap();
    let write = |name: &str, rows: &[Value]| {
        let p = dir.path().join(name);
        let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
        std::fs::write(&p, text).unwrap();
        p
    };
    let first = write("all.jsonl", &[row("a", "Škoda Octavia"), row("b", "Škoda Fabia"), row("c", "Škoda Superb")]);
    assert_eq!(import(&s, &first, true, true).unwrap().withdrawn, Some(0));
    // A bad row in a full feed withdraws nothing.
    let bad = write("bad.jsonl", &[row("a", "Škoda Octavia"), json!({"title": "broken"})]);
    let r = import(&s, &bad, true, true).unwrap();
    assert_eq!((r.rejected, r.withdrawn), (1, None));
    let active = |s: &Settings| {
        let store = Store::open(&s.store_path()).unwrap();
        store.read(|rx| rx.all_offers::<OfferRecord>()).unwrap().into_iter().filter(|o| o.active).count()
    };
    assert_eq!(active(&s), 3);
    let second = write("two.jsonl", &[row("a", "Škoda Octavia"), row("c", "Škoda Superb")]);
    let r = import(&s, &second, true, true).unwrap();
    assert_eq!(r.withdrawn, Some(1));
    assert_eq!(active(&s), 2);
    assert!(r.summary().contains("1 offers no longer in the feed withdrawn"));
}

/// Publishes `n` consent-link drafts on `holder`; returns their intentCodes.
fn drafts(holder: &AppState, n: usize) -> Vec<String> {
    let args = json!({"statement": "Škoda Octavia", "criteria": {"category": "vehicles"}, "area": "SK"});
    (0..n)
        .map(|_| holder.intents.publish_draft(holder.intents.parse_publish(&args).unwrap()).unwrap().intent_code)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purge_goes_through_the_running_server_or_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings(dir.path());
    s.draft_ttl_secs = 1;
    init(&s, None, false).unwrap();
    let holder = server_holder(&s);
    let codes = drafts(&holder, 3);
    let stop = CancellationToken::new();
    let server = tokio::spawn(serve_socket(holder.clone(), stop.clone()));
    wait_for(&s.admin_socket_path()).await;
    // The time window under test: the drafts' TTL (1 s, on the system clock) passes.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let s2 = s.clone();
    let dry = tokio::task::spawn_blocking(move || purge_command(&s2, true, true)).await.unwrap().unwrap();
    assert_eq!((dry.drafts, dry.draft_tokens), (3, 6));
    assert_eq!(holder.base.store().read(|rx| rx.all_intents::<Value>()).unwrap().len(), 3, "dry: all kept");
    let s2 = s.clone();
    let real = tokio::task::spawn_blocking(move || purge_command(&s2, false, false)).await.unwrap().unwrap();
    assert_eq!(real, dry, "through the socket, exactly what the dry run counted");
    assert_eq!(holder.base.store().read(|rx| rx.all_intents::<Value>()).unwrap().len(), 0);
    for c in &codes {
        assert_eq!(holder.base.store().read(|rx| rx.token(&crate::crypto::token_key("code", c))).unwrap(), None);
    }
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(10), server).await.unwrap().unwrap().unwrap();
    // Without a server: on the store opened here.
    drafts(&holder, 2);
    drop(holder);
    // The time window under test again: the new drafts' TTL passes.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let s2 = s.clone();
    let p = tokio::task::spawn_blocking(move || purge_command(&s2, false, true)).await.unwrap().unwrap();
    assert_eq!(p.drafts, 2);
    let s2 = s.clone();
    let p = tokio::task::spawn_blocking(move || purge_command(&s2, true, false)).await.unwrap().unwrap();
    assert_eq!(p.total(), 0);
    let text = purge_report(&crate::intents::Purged { drafts: 4, ..Default::default() }, true);
    assert!(text.starts_with("would remove (dry run, nothing removed):"), "{text}");
    assert!(text.contains("       4  lapsed drafts") && text.contains("       4  records in all"), "{text}");
}

#[test]
fn a_check_report_is_taken_only_when_small_of_this_holder_and_without_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let base = "https://holder.example";
    let write = |name: &str, v: &Value| {
        let p = dir.path().join(name);
        std::fs::write(&p, serde_json::to_vec(v).unwrap()).unwrap();
        p
    };
    let check = json!([{"id": "tools.present", "status": "pass"}]);
    let good = write(
        "good.json",
        &json!({"ok": true, "complete": true, "holder": "https://alice:s3cret@holder.example/mcp", "checks": check}),
    );
    let v = read_check_report(&good, base).unwrap();
    assert_eq!(v["holder"], "https://holder.example/mcp");
    assert!(!v.to_string().contains("s3cret"));
    let other = write("other.json", &json!({"ok": false, "holder": "https://other.example/mcp", "checks": check}));
    let e = read_check_report(&other, base).unwrap_err().to_string();
    assert!(e.contains("https://other.example") && e.contains("not of this holder"), "{e}");
    for (name, v) in [
        ("n.json", json!({"checks": 5})),
        ("e.json", json!({"checks": []})),
        ("x.json", json!({"checks": [{"id": 1}]})),
    ] {
        let e = read_check_report(&write(name, &v), base).unwrap_err().to_string();
        assert!(e.contains("\"checks\" must be"), "{name}: {e}");
    }
    let big = dir.path().join("big.json");
    std::fs::write(&big, vec![b' '; (MAX_CHECK_REPORT_BYTES + 10) as usize]).unwrap();
    let e = read_check_report(&big, base).unwrap_err().to_string();
    assert!(e.contains("is over"), "{e}");
    // An endless file is read no further than the limit.
    let e = read_check_report(Path::new("/dev/zero"), base).unwrap_err().to_string();
    assert!(e.contains("is over") || e.contains("not JSON"), "{e}");
}
