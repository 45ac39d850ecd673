//! What `isto serve` and the admin commands refuse to trust at start (issue "Under
//! attack, round 3", points 8 and 9), against the real binary: an empty or foreign
//! `isto.redb` is refused naming the file and left as it was (never initialised); a
//! start after `kill -9` logs the store's check and repair with its duration; a key ring
//! that is not the store's — another holder's keys, a missing `handle.key` or
//! another `mac.key` — refuses the start (exit non-zero) naming the files or key ids;
//! and an active intent the matching engine cannot load stops the start too.
//! Loopback only; every wait bounded.

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use crate::kit::load::{admin, isto, text, Serve};
use crate::kit::redb_only;

/// `isto serve` on `data` that must end by itself (a refused start), at most 30 s.
fn serve_refused(data: &Path) -> Output {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = isto(data)
        .arg("serve")
        .env("ISTO_LISTEN", format!("127.0.0.1:{port}"))
        .env("ISTO_PUBLIC_URL", format!("http://127.0.0.1:{port}"))
        .env("ISTO_SMTP_URL", "smtp://127.0.0.1:1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!("isto serve did not refuse to start within 30 s:\n{}", text(&o));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Waits (at most 20 s) until `s` answers `/readyz` with 200, then stops it (SIGTERM).
fn ready_then_stop(s: Serve) {
    let t0 = Instant::now();
    while crate::kit::load::http(s.port, "GET", "/readyz", &[], "").0 != 200 {
        assert!(t0.elapsed() < Duration::from_secs(20), "never ready:\n{}", s.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    s.stop();
}

/// A data directory made by `isto admin init` whose `isto.redb` is then replaced by
/// `bytes` (or, when `None`, left to the caller).
fn with_store_file(bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    let o = admin(&data, &["init"]);
    assert!(o.status.success(), "{}", text(&o));
    std::fs::write(data.join("isto.redb"), bytes).unwrap();
    (d, data)
}

/// The store file is refused by `serve` and by admin commands, naming it and the
/// reason, and is left byte for byte as it was.
fn refused_everywhere(data: &Path, reason: &str) {
    let store = data.join("isto.redb");
    let before = std::fs::read(&store).unwrap();
    let o = serve_refused(data);
    let err = text(&o);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains(&store.display().to_string()) && err.contains("not an isto store"), "{err}");
    assert!(err.contains(reason), "{reason}: {err}");
    for args in [&["stats"][..], &["migrate", "--dry-run"], &["init"], &["backup", "--out", "/nonexistent-dir/b"]] {
        let o = admin(data, args);
        let err = text(&o);
        assert!(!o.status.success(), "admin {args:?} accepted it: {err}");
        if args[0] != "backup" {
            assert!(err.contains(&store.display().to_string()) && err.contains("not an isto store"), "{args:?}: {err}");
        }
    }
    let o = admin(data, &["backup", "--out", &data.parent().unwrap().join("b.isto-backup").display().to_string()]);
    let err = text(&o);
    assert!(!o.status.success() && err.contains("not an isto store"), "backup: {err}");
    assert!(std::fs::read(&store).unwrap() == before, "a refused store file was changed");
}

#[test]
fn an_empty_store_file_is_refused_by_serve_and_admin_commands_naming_it() {
    if !redb_only("an empty store file", "about the redb file's bytes (see another_programs_tables_in_the_database…)")
    {
        return;
    }
    let (_d, data) = with_store_file(b"");
    refused_everywhere(&data, "empty file");
}

#[test]
fn random_bytes_named_isto_redb_are_refused_naming_the_file() {
    if !redb_only(
        "random bytes as the store",
        "about the redb file's bytes (see another_programs_tables_in_the_database…)",
    ) {
        return;
    }
    let bytes: Vec<u8> = (0..64 * 1024u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let (_d, data) = with_store_file(&bytes);
    refused_everywhere(&data, "not a redb database");
}

#[test]
fn another_programs_redb_file_is_refused_naming_its_tables() {
    if !redb_only("another program's redb file", "the PostgreSQL equivalent: another_programs_tables_in_the_database…")
    {
        return;
    }
    let (_d, data) = with_store_file(b"");
    std::fs::remove_file(data.join("isto.redb")).unwrap();
    {
        let db = redb::Database::create(data.join("isto.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        let t: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("their_counters");
        txn.open_table(t).unwrap().insert("x", 1).unwrap();
        txn.commit().unwrap();
    }
    refused_everywhere(&data, "\"their_counters\"");
}

#[test]
fn a_missing_store_is_still_made_on_the_first_start() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    let o = admin(&data, &["init"]);
    assert!(o.status.success(), "{}", text(&o));
    if crate::kit::backend_is_postgres() {
        // The database exists before isto (its operator makes it); the open makes its tables.
        assert!(text(&o).contains("the store PostgreSQL") && text(&o).contains(" opens"), "{}", text(&o));
    } else {
        assert!(text(&o).contains("created the store"), "{}", text(&o));
    }
    let leftovers: Vec<_> = std::fs::read_dir(&data)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.contains(".new-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let o = admin(&data, &["stats"]);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn a_start_after_kill_9_logs_the_check_and_repair_and_its_duration() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    let first = Serve::start(&data, d.path().join("first.log"));
    // Its start wrote (the key record), so the file has commits a clean close would seal.
    drop(first); // SIGKILL
    let second = Serve::start(&data, d.path().join("second.log"));
    if crate::kit::backend_is_postgres() {
        // PostgreSQL recovers its own crashes: the next start has nothing to repair.
        ready_then_stop(second);
        let log = std::fs::read_to_string(d.path().join("second.log")).unwrap();
        assert!(!log.contains("repair") && !log.contains("not closed cleanly"), "{log}");
        return;
    }
    let t0 = Instant::now();
    let log = loop {
        let log = second.log();
        if log.contains("store: checked and repaired") || t0.elapsed() > Duration::from_secs(20) {
            break log;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(log.contains("not closed cleanly") && log.contains("checking and repairing"), "{log}");
    let line = log.lines().find(|l| l.contains("store: checked and repaired")).unwrap_or_else(|| panic!("{log}"));
    assert!(line.contains("ms=") && line.contains("isto.redb"), "{line}");
    ready_then_stop(second);
    // A clean stop leaves nothing to repair.
    ready_then_stop(Serve::start(&data, d.path().join("third.log")));
    let log = std::fs::read_to_string(d.path().join("third.log")).unwrap();
    assert!(!log.contains("repair"), "{log}");
}

/// A holder with sealed values (contacts, hidden limits, queued mail) in its store.
fn holder_with_sealed_values() -> (tempfile::TempDir, std::path::PathBuf) {
    let (d, data) = crate::backup::populated();
    let o = admin(&data, &["keys", "status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert!(v["sealedValues"].as_u64().unwrap() > 0, "{v}");
    (d, data)
}

#[test]
fn another_holders_keys_refuse_the_start_naming_the_key_ids() {
    let (_d, data) = holder_with_sealed_values();
    let kid = {
        let o = admin(&data, &["keys", "status", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["current"].as_str().unwrap().to_owned()
    };
    // Another holder's key ring in place of this one's.
    let other = tempfile::tempdir().unwrap();
    let o = admin(&other.path().join("data"), &["init"]);
    assert!(o.status.success(), "{}", text(&o));
    std::fs::remove_dir_all(data.join("keys")).unwrap();
    std::fs::rename(other.path().join("data/keys"), data.join("keys")).unwrap();
    let o = serve_refused(&data);
    let err = text(&o);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains(&kid) && err.contains("not this store's keys"), "{err}");
    assert!(err.contains(&data.join("keys").display().to_string()) && err.contains("did not start"), "{err}");
}

/// An admin command that opens the store itself checks the key ring as `isto serve`
/// does: another holder's keys refuse `offers import` (before it writes) naming the key
/// file. A store the import made records its keys, so a start reads that one row
/// instead of counting every sealed value (the count keeps the store's pages in memory).
#[test]
fn an_admin_import_checks_and_records_the_keys_as_serve_does() {
    let d = tempfile::tempdir().unwrap();
    let (data, feed) = (d.path().join("data"), d.path().join("feed.jsonl"));
    let row = serde_json::json!({"ref": "a", "title": "Škoda Octavia Combi", "category": "vehicles",
        "price": {"amount": 9000, "currency": "EUR"}, "area": "Bratislava", "seller": {"name": "Dealer"}});
    std::fs::write(&feed, format!("{row}\n")).unwrap();
    let o = admin(&data, &["offers", "import", feed.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    if redb_only("the key record of an imported store", "opens the redb file to read the record") {
        let store = isto::store::Store::open(&data.join("isto.redb")).unwrap();
        let keys = isto::crypto::KeyRing::load_or_create(&data.join("keys/sealing.key")).unwrap().0;
        let check = isto::state::check_keys(&store, &keys, &data.join("keys/sealing.key")).unwrap();
        assert!(!check.scanned, "the import did not record the keys: {:?}", check.record);
    }
    // Another holder's key ring in place of this one's: its handle.key is not the one the
    // store recorded.
    let other = tempfile::tempdir().unwrap();
    assert!(admin(&other.path().join("data"), &["init"]).status.success());
    std::fs::remove_dir_all(data.join("keys")).unwrap();
    std::fs::rename(other.path().join("data/keys"), data.join("keys")).unwrap();
    let o = admin(&data, &["offers", "import", feed.to_str().unwrap(), "--json"]);
    let err = text(&o);
    assert!(!o.status.success(), "{err}");
    let handle = data.join("keys/handle.key").display().to_string();
    assert!(err.contains(&format!("{handle} is not the key this store was written with")), "{err}");
    assert!(err.contains("nothing was done") && !err.contains("isto did not start"), "{err}");
}

#[test]
fn a_missing_handle_key_or_another_mac_key_refuses_the_start_naming_the_file() {
    let (_d, data) = holder_with_sealed_values();
    // A first start records the keys' fingerprints (a store written before has none).
    ready_then_stop(Serve::start(&data, data.parent().unwrap().join("ok.log")));
    let other = tempfile::tempdir().unwrap();
    let o = admin(&other.path().join("data"), &["init"]);
    assert!(o.status.success(), "{}", text(&o));
    // A missing handle.key is made anew (another key); mac.key, made from the current
    // sealing key when missing, is replaced by another holder's.
    for (file, replace) in [("handle.key", false), ("mac.key", true)] {
        let path = data.join("keys").join(file);
        let kept = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        if replace {
            std::fs::copy(other.path().join("data/keys").join(file), &path).unwrap();
        }
        let o = serve_refused(&data);
        let err = text(&o);
        assert!(!o.status.success(), "{file}: {err}");
        assert!(
            err.contains(&path.display().to_string()) && err.contains("not the key this store was written with"),
            "{err}"
        );
        std::fs::write(&path, kept).unwrap();
    }
    ready_then_stop(Serve::start(&data, data.parent().unwrap().join("again.log")));
}

#[test]
fn a_missing_old_sealing_key_refuses_the_start_naming_its_id() {
    let (_d, data) = holder_with_sealed_values();
    // The values sealed with the current key; that key moves aside as an old key
    // whose file then goes missing, with a new current key.
    let kid = {
        let o = admin(&data, &["keys", "status", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["current"].as_str().unwrap().to_owned()
    };
    let fresh = tempfile::tempdir().unwrap();
    let o = admin(&fresh.path().join("data"), &["init"]);
    assert!(o.status.success(), "{}", text(&o));
    std::fs::copy(fresh.path().join("data/keys/sealing.key"), data.join("keys/sealing.key")).unwrap();
    let o = serve_refused(&data);
    let err = text(&o);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains(&format!("{kid} (")) && err.contains("sealing.key.<id>"), "{err}");
}

#[test]
fn an_active_intent_the_engine_cannot_load_stops_the_start_naming_the_cause() {
    let (_d, data) = holder_with_sealed_values();
    // An active intent's record replaced by bytes that are no intent record.
    crate::kit::load::edit_rows(&data, |rows| {
        let id = rows.iter().find(|r| r["t"] == "active").unwrap()["k"].clone();
        let record = rows.iter_mut().find(|r| r["t"] == "intents" && r["k"] == id).unwrap();
        record.as_object_mut().unwrap().remove("b");
        record["v"] = serde_json::json!({"id": "not an intent record"});
    });
    let o = serve_refused(&data);
    let err = text(&o);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("cannot load the active intents into the matching engine"), "{err}");
    assert!(err.contains("is corrupt") && err.contains("did not start"), "{err}");
}

/// The PostgreSQL equivalent of a foreign store file: a database holding a table of
/// isto's names but no `schema_migrations` (another program's tables) is refused by
/// `serve` and by the admin commands, naming the table, and is left as it was.
#[test]
fn another_programs_tables_in_the_database_are_refused_by_serve_and_admin_commands() {
    if !crate::kit::backend_is_postgres() {
        eprintln!("PostgreSQL only (ISTO_TEST_BACKEND=postgres): another program's tables in the database");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    let settings = crate::kit::database_of(&data);
    isto::store::testpg::execute(
        &settings,
        "CREATE TABLE intents (id text PRIMARY KEY); INSERT INTO intents VALUES ('theirs')",
    );
    let o = serve_refused(&data);
    let err = text(&o);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("has a table \"intents\" but no schema_migrations table"), "{err}");
    for args in [&["stats"][..], &["migrate", "--dry-run"], &["init"]] {
        let o = admin(&data, args);
        let err = text(&o);
        assert!(!o.status.success() && err.contains("another program's tables"), "admin {args:?}: {err}");
    }
    let rows = isto::store::testpg::query_count(&settings, "SELECT count(*) FROM intents WHERE id = 'theirs'");
    assert_eq!(rows, 1, "their table is left as it was");
    let tables =
        isto::store::testpg::query_count(&settings, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'");
    assert_eq!(tables, 1, "no table of isto's was made beside it");
}

/// The PostgreSQL equivalent of a store file marked newer than this isto: a database
/// whose `meta` says a newer schema version (and the isto that wrote it) is refused by
/// `serve` and by `admin migrate` with the same message as the file, and left as it was.
#[test]
fn a_database_newer_than_this_isto_is_refused_by_serve_and_migrate() {
    if !crate::kit::backend_is_postgres() {
        eprintln!("PostgreSQL only (ISTO_TEST_BACKEND=postgres): a database newer than this isto");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    let o = admin(&data, &["init"]);
    assert!(o.status.success(), "{}", text(&o));
    let newer = isto::store::SCHEMA_VERSION + 1;
    crate::kit::load::edit_rows(&data, |rows| {
        rows.retain(|r| !(r["t"] == "meta" && r["k"].as_str().is_some_and(|k| k.starts_with("pass:"))));
        for r in rows.iter_mut().filter(|r| r["t"] == "meta") {
            match r["k"].as_str() {
                Some("schema_version") => r["v"] = serde_json::json!(newer.to_string()),
                Some("isto_version") => r["v"] = serde_json::json!("99.0.0"),
                _ => {}
            }
        }
    });
    let settings = crate::kit::database_of(&data);
    let meta = "SELECT count(*) FROM meta";
    let before = isto::store::testpg::query_count(&settings, meta);
    let says_what_to_do = |t: &str| {
        assert!(t.contains(&format!("store schema version {newer}")), "{t}");
        assert!(t.contains("isto 99.0.0") && t.contains("upgrade isto again"), "{t}");
        assert!(t.contains(&format!("({})", isto::store::SCHEMA_VERSION)), "{t}");
    };
    for args in [&["migrate"][..], &["migrate", "--dry-run"], &["stats"]] {
        let o = admin(&data, args);
        assert!(!o.status.success(), "{args:?}: {}", text(&o));
        says_what_to_do(&text(&o));
    }
    let o = serve_refused(&data);
    assert!(!o.status.success(), "{}", text(&o));
    says_what_to_do(&text(&o));
    assert_eq!(isto::store::testpg::query_count(&settings, meta), before, "refusing changed nothing");
    let e = isto::store::Store::open_at(&isto::store::Location::Postgres(settings)).err().unwrap();
    assert!(matches!(e, isto::store::StoreError::TooNew { found, .. } if found == newer), "{e}");
}
