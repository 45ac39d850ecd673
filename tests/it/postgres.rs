//! The PostgreSQL store through the real binary: a backup restored into an empty
//! database (`store.backend = "postgres"`) holds the same rows as the store it was made
//! from, and a database with data is never replaced.

use crate::backup::{backed_up, copy_keys};
use crate::kit::load::{isto, ok_json, rows_in, rows_of, text};
use isto::store::{Location, Reads as _, Store};

#[test]
fn a_backup_restored_into_an_empty_postgresql_store_holds_the_same_rows_and_a_full_one_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let (_keep, data, file) = backed_up(work.path());
    let source = rows_of(&data.join(isto::store::FILE_NAME));
    let fresh = work.path().join("restored");
    copy_keys(&data, &fresh);
    let db = isto::store::testpg::database();
    let restore = || {
        isto(&fresh)
            .env("ISTO_STORE_BACKEND", "postgres")
            .env("ISTO_STORE_URL", &db.url)
            .args(["admin", "restore", file.to_str().unwrap(), "--json"])
            .output()
            .unwrap()
    };
    let report = ok_json(&restore());
    assert!(report["sealedOpened"].as_u64().unwrap() >= 3, "{report}");
    assert!(report["store"].as_str().unwrap().starts_with("PostgreSQL "), "{report}");
    assert!(!fresh.join(isto::store::FILE_NAME).exists(), "no redb file is left in the data directory");
    let restored = rows_in(&Store::open_at(&Location::Postgres(db.clone())).unwrap());
    assert_eq!(restored, source, "the same rows, keys and sealed values");
    // A second restore meets a store with data: refused, nothing written.
    let again = restore();
    assert!(!again.status.success() && text(&again).contains("not empty"), "{}", text(&again));
    assert_eq!(rows_in(&Store::open_at(&Location::Postgres(db)).unwrap()), source);
}

/// Losing the database (its connections ended and new ones refused) makes calls fail
/// fast with the database's error, and once it takes connections again calls succeed
/// on the same open store (no restart). Only this test's database is cut off.
#[test]
fn a_lost_database_fails_calls_fast_and_they_succeed_again_when_it_is_back() {
    use std::time::{Duration, Instant};
    let db = isto::store::testpg::database();
    let name = db.url.split_whitespace().find_map(|kv| kv.strip_prefix("dbname=")).unwrap().to_owned();
    let admin =
        isto::store::PgSettings { url: db.url.replace(&format!("dbname={name}"), "dbname=postgres"), ..db.clone() };
    let store = Store::open_at(&Location::Postgres(db)).unwrap();
    let outbox = |s: &Store| s.read(|rx| rx.outbox::<serde_json::Value>()).map(|jobs| jobs.len());
    assert_eq!(outbox(&store).unwrap(), 0);
    isto::store::testpg::execute(
        &admin,
        &format!(
            "ALTER DATABASE {name} ALLOW_CONNECTIONS false; \
             SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"
        ),
    );
    // Every call fails within the pool's bounded wait; soon with the refusal itself.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let t0 = Instant::now();
        let e = outbox(&store).unwrap_err();
        assert!(t0.elapsed() < Duration::from_secs(11), "a call hung for {:?}: {e}", t0.elapsed());
        if e.to_string().contains(&format!("database \"{name}\" is not currently accepting connections")) {
            break;
        }
        assert!(Instant::now() < deadline, "never refused with the database's reason: {e}");
        std::thread::sleep(Duration::from_millis(50));
    }
    isto::store::testpg::execute(&admin, &format!("ALTER DATABASE {name} ALLOW_CONNECTIONS true"));
    let deadline = Instant::now() + Duration::from_secs(30);
    while let Err(e) = outbox(&store) {
        assert!(Instant::now() < deadline, "calls never succeeded again: {e}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(outbox(&store).unwrap(), 0, "the same store answers again, no restart");
}

/// A holder over `db` in `dir`, on the kit's clock.
fn holder_on(dir: &std::path::Path, db: &isto::store::PgSettings) -> isto::state::AppState {
    let mut s = crate::kit::settings(dir, crate::kit::Opts::default());
    s.store_postgres = Some(db.clone());
    let (keys, _) = isto::crypto::KeyRing::load_or_create(&s.key_path()).unwrap();
    let store = Store::open_at(&s.store_location()).unwrap();
    isto::state::AppState::with_index_dir(s, store, keys, crate::kit::clock(), None)
}

/// `GET path` on the metrics listener's router of `holder`: the body.
fn scrape(rt: &tokio::runtime::Runtime, holder: &isto::state::AppState, path: &str) -> String {
    let app = isto::app::metrics::router(holder.clone());
    let req = axum::http::Request::get(path).body(axum::body::Body::empty()).unwrap();
    crate::kit::send(rt, &app, req).body
}

/// The value of `series` in the exposition `text` (0 when absent).
fn series(text: &str, series: &str) -> f64 {
    text.lines().find_map(|l| l.strip_prefix(series)).and_then(|v| v.trim().parse().ok()).unwrap_or(0.0)
}

/// On PostgreSQL the detailed `/readyz` and `/metrics` report the store's pool: its size,
/// the connections in use and idle (a transaction held open is in use), the calls that
/// waited for a connection (one more than the pool holds), and the connection errors
/// after the database was cut off.
#[test]
fn readyz_and_metrics_report_the_pool_its_waits_and_its_connection_errors() {
    use std::sync::mpsc;
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let db = isto::store::testpg::database();
    let holder = holder_on(dir.path(), &db);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let ready =
        |h: &isto::state::AppState| -> serde_json::Value { serde_json::from_str(&scrape(&rt, h, "/readyz")).unwrap() };
    let pool = ready(&holder)["checks"]["pool"].clone();
    assert_eq!(pool["size"], 4, "{pool}");
    assert_eq!(pool["inUse"], 0, "{pool}");
    assert!(pool["idle"].as_u64().unwrap() >= 1, "the check's own connection went back: {pool}");

    // Every connection held by a read transaction: in use 4, and a fifth call waits.
    let store = holder.base.store().clone();
    let (held_tx, held) = mpsc::channel();
    let (release_tx, release) = mpsc::channel::<()>();
    let release = std::sync::Arc::new(std::sync::Mutex::new(release));
    let mut readers = Vec::new();
    let mut hold = || {
        let (s, held_tx, release) = (store.clone(), held_tx.clone(), release.clone());
        readers.push(std::thread::spawn(move || {
            s.read(|_rx| -> Result<(), isto::store::StoreError> {
                held_tx.send(()).unwrap();
                let _ = release.lock().unwrap().recv();
                Ok(())
            })
            .unwrap();
        }));
        held.recv_timeout(Duration::from_secs(10)).unwrap();
    };
    // Three of four connections held by read transactions: in use 3, as /metrics says
    // (its own reads take the fourth).
    for _ in 0..3 {
        hold();
    }
    let stats = store.pool_stats().unwrap();
    assert_eq!((stats.size, stats.in_use), (4, 3), "{stats:?}");
    let text = scrape(&rt, &holder, "/metrics");
    assert_eq!(series(&text, "isto_store_pool_connections{state=\"in_use\"} "), 3.0, "{text}");
    assert_eq!(series(&text, "isto_store_pool_connections{state=\"size\"} "), 4.0, "{text}");
    // All four held: a fifth call waits for one.
    hold();
    let stats = store.pool_stats().unwrap();
    assert_eq!((stats.in_use, stats.idle), (4, 0), "{stats:?}");
    let waits_before = stats.waits;
    let waiter = {
        let s = store.clone();
        std::thread::spawn(move || s.read(|rx| rx.outbox::<serde_json::Value>()).map(|j| j.len()))
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while store.pool_stats().unwrap().waits == waits_before {
        assert!(std::time::Instant::now() < deadline, "the fifth call never waited");
        std::thread::sleep(Duration::from_millis(10));
    }
    for _ in 0..4 {
        release_tx.send(()).unwrap();
    }
    for r in readers {
        r.join().unwrap();
    }
    assert_eq!(waiter.join().unwrap().unwrap(), 0, "the waiting call got a freed connection");
    let text = scrape(&rt, &holder, "/metrics");
    assert!(series(&text, "isto_store_pool_waits_total ") >= 1.0, "{text}");
    let pool = ready(&holder)["checks"]["pool"].clone();
    assert_eq!(pool["inUse"], 0, "{pool}");
    assert!(pool["waits"].as_u64().unwrap() > waits_before, "{pool}");
    assert_eq!(pool["waitTimeouts"], 0, "{pool}");
    assert_eq!(pool["connectionErrors"], 0, "{pool}");

    // The database cut off: its connections end, new ones are refused; both counted.
    let name = db.url.split_whitespace().find_map(|kv| kv.strip_prefix("dbname=")).unwrap().to_owned();
    let admin =
        isto::store::PgSettings { url: db.url.replace(&format!("dbname={name}"), "dbname=postgres"), ..db.clone() };
    isto::store::testpg::execute(
        &admin,
        &format!(
            "ALTER DATABASE {name} ALLOW_CONNECTIONS false; \
             SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"
        ),
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let e = store.read(|rx| rx.outbox::<serde_json::Value>()).unwrap_err();
        if e.to_string().contains("is not currently accepting connections") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never refused with the database's reason: {e}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let body = ready(&holder);
    assert_eq!(body["status"], "not_ready", "{body}");
    assert!(body["checks"]["pool"]["connectionErrors"].as_u64().unwrap() >= 1, "{body}");
    let text = scrape(&rt, &holder, "/metrics");
    assert!(series(&text, "isto_store_pool_connection_errors_total ") >= 1.0, "{text}");
    isto::store::testpg::execute(&admin, &format!("ALTER DATABASE {name} ALLOW_CONNECTIONS true"));
}

/// On redb there is no pool: `Store::pool_stats` is `None` and `/readyz` has no `pool`.
#[test]
fn a_redb_store_reports_no_pool() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join(isto::store::FILE_NAME)).unwrap();
    assert_eq!(store.pool_stats(), None);
}
