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
