//! Tests of the table layout, its version and the migrations (`store::schema`).

use super::super::{Reads, Store};
use super::*;
use redb::{Database, ReadableDatabase};

/// Turns a store at the current version back into one as version 1 wrote it (drops the
/// tables added since, records version 1, forgets the writer and the start-up passes), for tests of the migrations' callers.
///
/// # Panics
/// On any storage error (tests only).
pub(crate) fn rewind_to_version_1(path: &std::path::Path) {
    let db = redb::Database::create(path).unwrap();
    let txn = db.begin_write().unwrap();
    txn.delete_table(INTENT_EXPIRY).unwrap();
    txn.delete_table(INTENT_ERASURE).unwrap();
    txn.delete_table(INTENT_DUE).unwrap();
    txn.delete_table(PERSON_ACTIVE).unwrap();
    txn.delete_table(INTENT_PERSON).unwrap();
    txn.delete_table(PENDING_REPLIES).unwrap();
    txn.delete_table(INTENT_MATCHES).unwrap();
    txn.delete_table(INTENT_TARGETS).unwrap();
    {
        let mut meta = txn.open_table(META).unwrap();
        meta.insert(VERSION_KEY, "1").unwrap();
        // Neither the writer nor the start-up passes were recorded then.
        meta.remove(WRITER_KEY).unwrap();
        meta.retain(|k, _| !k.starts_with("pass:")).unwrap();
    }
    txn.commit().unwrap();
}

/// Writes a store as isto wrote it at schema version 1: the v1 tables, one intent,
/// `schema_version` "1".
fn write_v1(path: &std::path::Path) {
    let db = Database::create(path).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut meta = txn.open_table(META).unwrap();
        meta.insert(VERSION_KEY, "1").unwrap();
        txn.open_table(INTENTS).unwrap().insert("int_a", br#"{"x":1}"#.as_slice()).unwrap();
        txn.open_table(INTENTS).unwrap().insert("int_b", br#"{"x":2}"#.as_slice()).unwrap();
        txn.open_table(ACTIVE).unwrap().insert("int_a", ()).unwrap();
        txn.open_table(TOKENS).unwrap();
        txn.open_table(OFFERS).unwrap();
        txn.open_table(OFFER_REFS).unwrap();
        txn.open_table(SELLERS).unwrap();
        txn.open_table(SELLER_NAMES).unwrap();
        let mut delivered = txn.open_table(DELIVERED).unwrap();
        delivered.insert("int_a\0off_1", 10).unwrap();
        delivered.insert("int_b\0off_1", 20).unwrap();
        delivered.insert("int_b\0off_2", 30).unwrap();
        drop(delivered);
        txn.open_table(DELIVERY_LOG).unwrap();
        txn.open_table(DIGEST_DUE).unwrap();
        txn.open_table(OUTBOX).unwrap();
        txn.open_table(RECORDS).unwrap();
    }
    txn.commit().unwrap();
}

fn version_in(path: &std::path::Path) -> String {
    let db = Database::open(path).unwrap();
    let txn = db.begin_read().unwrap();
    let meta = txn.open_table(META).unwrap();
    let v = meta.get(VERSION_KEY).unwrap().unwrap().value().to_owned();
    v
}

#[test]
fn the_backup_table_list_names_every_table_of_a_new_store_once() {
    use redb::TableHandle as _;
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("s.redb");
    drop(Store::open(&p).unwrap());
    let db = Database::open(&p).unwrap();
    let txn = db.begin_read().unwrap();
    let mut in_file: Vec<String> = txn.list_tables().unwrap().map(|h| h.name().to_owned()).collect();
    in_file.sort();
    let mut listed: Vec<String> = TABLES.iter().map(|t| t.name().to_owned()).collect();
    listed.sort();
    let before = listed.len();
    listed.dedup();
    assert_eq!(listed.len(), before, "a table is listed twice in TABLES");
    assert_eq!(in_file, listed, "schema::TABLES must name every table create_tables opens (for backups)");
    assert_eq!(txn.list_multimap_tables().unwrap().count(), 0);
}

#[test]
fn migrations_are_numbered_from_one_without_gaps() {
    for (i, m) in MIGRATIONS.iter().enumerate() {
        assert_eq!(m.number, i as u64 + 1);
        assert!(!m.name.is_empty() && !m.description.is_empty() && !m.description.contains('\n'), "{}", m.name);
    }
    assert_eq!(SCHEMA_VERSION, MIGRATIONS.len() as u64);
}

#[test]
fn a_new_store_gets_the_current_version() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("s.redb");
    drop(Store::open(&p).unwrap());
    assert_eq!(version_in(&p), SCHEMA_VERSION.to_string());
    // Reopening leaves it as it is.
    drop(Store::open(&p).unwrap());
    assert_eq!(version_in(&p), SCHEMA_VERSION.to_string());
}

#[test]
fn a_version_1_store_is_migrated_and_its_intents_backfilled_into_the_expiry_index() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("s.redb");
    write_v1(&p);
    let s = Store::open(&p).unwrap();
    // Everything written at version 1 is still there.
    let v: serde_json::Value = s.read(|rx| rx.intent("int_a")).unwrap().unwrap();
    assert_eq!(v["x"], 1);
    assert_eq!(s.read(|rx| rx.active_ids()).unwrap(), vec!["int_a"]);
    // Migration 2: every intent is due now, once.
    assert_eq!(s.read(|rx| rx.intents_due(0, i64::MIN)).unwrap(), vec!["int_a", "int_b"]);
    assert_eq!(s.read(|rx| rx.intent_due("int_b")).unwrap().unwrap().status_change, Some(0));
    // Migration 3: the person index exists, empty (the services fill it at start).
    assert_eq!(s.read(|rx| rx.person_active("per_x", i64::MIN, "", 10)).unwrap(), 0);
    assert_eq!(s.read(|rx| rx.intent_person("int_a")).unwrap(), None);
    // Migration 4: the reply queue exists, empty.
    assert_eq!(s.read(|rx| rx.pending_reply_count()).unwrap(), 0);
    // Migration 10: each delivery row, keyed offer first, keeps its time.
    let at = |i: &str, o: &str| s.read(|rx| rx.delivered_at(i, o)).unwrap();
    assert_eq!((at("int_a", "off_1"), at("int_b", "off_1"), at("int_b", "off_2")), (Some(10), Some(20), Some(30)));
    assert_eq!(s.read(|rx| rx.counts()).unwrap().deliveries, 3);
    drop(s);
    assert_eq!(version_in(&p), SCHEMA_VERSION.to_string());
}

/// Migration 10 moves the delivery rows in chunks of 10 000: more than two chunks'
/// worth are all moved, each once.
#[test]
fn every_delivery_row_is_keyed_by_offer_across_chunks() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("s.redb");
    write_v1(&p);
    {
        let db = Database::open(&p).unwrap();
        let txn = db.begin_write().unwrap();
        let mut t = txn.open_table(DELIVERED).unwrap();
        for i in 0..25_001i64 {
            t.insert(format!("int_{i:06}\0off_{}", i % 7).as_str(), i).unwrap();
        }
        drop(t);
        txn.commit().unwrap();
    }
    let s = Store::open(&p).unwrap();
    assert_eq!(s.read(|rx| rx.counts()).unwrap().deliveries, 25_004);
    for i in [0i64, 9_999, 10_000, 20_001, 25_000] {
        let got = s.read(|rx| rx.delivered_at(&format!("int_{i:06}"), &format!("off_{}", i % 7))).unwrap();
        assert_eq!(got, Some(i));
    }
}

#[test]
fn a_newer_store_is_refused_naming_both_versions_and_what_to_do() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("s.redb");
    {
        let db = Database::create(&p).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(META).unwrap().insert(VERSION_KEY, (SCHEMA_VERSION + 1).to_string().as_str()).unwrap();
        txn.commit().unwrap();
    }
    let e = Store::open(&p).unwrap_err();
    assert!(matches!(e, StoreError::TooNew { found, .. } if found == SCHEMA_VERSION + 1), "{e}");
    let msg = e.to_string();
    assert!(msg.contains(&format!("version {}", SCHEMA_VERSION + 1)), "{msg}");
    assert!(msg.contains(&format!("({SCHEMA_VERSION})")), "{msg}");
    assert!(msg.contains("upgrade isto") && msg.contains("restore a backup"), "{msg}");
    // Refusing changes nothing.
    assert_eq!(version_in(&p), (SCHEMA_VERSION + 1).to_string());
}

#[test]
fn migrate_file_rehearses_then_runs_the_pending_migrations_counting_rows() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("s.redb");
    write_v1(&p);
    let dry = migrate_file(&p, false).unwrap();
    assert_eq!((dry.stored, dry.writer.as_deref(), dry.current, dry.committed), (Some(1), None, SCHEMA_VERSION, false));
    let numbers: Vec<u64> = dry.pending.iter().map(|m| m.number).collect();
    assert_eq!(numbers, (2..=SCHEMA_VERSION).collect::<Vec<_>>());
    let due = dry.tables.iter().find(|t| t.table == "intent_due").unwrap();
    assert_eq!((due.before, due.after), (None, 2), "both intents entered as due");
    let meta = dry.tables.iter().find(|t| t.table == "meta").unwrap();
    assert_eq!((meta.before, meta.after), (Some(1), 2), "the writer is added");
    assert!(dry.passes_done.is_empty());
    assert_eq!(version_in(&p), "1", "a dry run changes nothing");
    let run = migrate_file(&p, true).unwrap();
    assert_eq!((run.pending.clone(), run.tables.clone(), run.committed), (dry.pending, dry.tables, true));
    assert_eq!(version_in(&p), SCHEMA_VERSION.to_string());
    let again = migrate_file(&p, true).unwrap();
    assert!(again.pending.is_empty() && again.tables.is_empty(), "{again:?}");
    assert_eq!(again.writer.as_deref(), Some(ISTO_VERSION));
    // A newer store: refused before anything is counted, naming its writer.
    {
        let db = Database::create(&p).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(META).unwrap().insert(VERSION_KEY, (SCHEMA_VERSION + 1).to_string().as_str()).unwrap();
        txn.open_table(META).unwrap().insert(WRITER_KEY, "9.9.9").unwrap();
        txn.commit().unwrap();
    }
    let e = migrate_file(&p, false).unwrap_err();
    assert!(e.to_string().contains("written by isto 9.9.9"), "{e}");
    assert!(e.to_string().contains("install isto 9.9.9 or later"), "{e}");
}

#[test]
fn an_unreadable_version_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("s.redb");
    {
        let db = Database::create(&p).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(META).unwrap().insert(VERSION_KEY, "two").unwrap();
        txn.commit().unwrap();
    }
    let e = Store::open(&p).unwrap_err();
    assert!(e.to_string().contains("schema version"), "{e}");
}
