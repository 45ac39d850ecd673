//! The PostgreSQL store through the real binary: a backup restored into an empty
//! database (`store.backend = "postgres"`) holds the same rows as the store it was made
//! from, and a database with data is never replaced.

use crate::backup::{backed_up, copy_keys};
use crate::kit::load::{isto, ok_json, rows_in, rows_of, text};
use isto::store::{Location, Store};

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
