//! The store handle's tests: a disk that fills, concurrent failures, the write probe,
//! the schema version, failed writes and encoding errors.

use super::faults::{open_failing, Fail};
use super::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// A file that refuses every write and resize while its flag is set, as a full disk
/// does (ENOSPC); fsync works.
#[derive(Debug, Clone)]
struct FullDisk(Arc<AtomicBool>);

impl Fail for FullDisk {
    fn check(&self, sync: bool) -> std::io::Result<()> {
        if !sync && self.0.load(Ordering::SeqCst) {
            Err(std::io::Error::from_raw_os_error(28))
        } else {
            Ok(())
        }
    }
}

/// A store at `path` on a disk that is full while the returned flag is set.
fn on_a_disk_that_fills(path: &Path) -> (Store, Arc<AtomicBool>) {
    let full = Arc::new(AtomicBool::new(false));
    (open_failing(path, FullDisk(full.clone())).unwrap(), full)
}

fn put(s: &Store, id: &str, size: usize) -> Result<()> {
    s.write(|tx| {
        tx.put_intent(
            &crate::store::IntentKey::for_tests(),
            id,
            &serde_json::json!({"pad": "x".repeat(size)}),
            true,
            IntentDue::default(),
        )
    })
}

fn has(s: &Store, id: &str) -> bool {
    s.read(|rx| rx.intent::<serde_json::Value>(id)).unwrap().is_some()
}

#[test]
fn a_write_that_failed_for_lack_of_space_succeeds_once_space_returns() {
    let d = tempfile::tempdir().unwrap();
    let (s, full) = on_a_disk_that_fills(&d.path().join("s.redb"));
    put(&s, "int_a", 100).unwrap();
    assert!(s.writable(Duration::from_secs(60)).ok);

    full.store(true, Ordering::SeqCst);
    let e = put(&s, "int_b", 20_000).unwrap_err();
    assert!(matches!(e, StoreError::Db(_)), "{e}");
    // Every write fails while the disk is full, reopened or not.
    std::thread::sleep(REOPEN_INTERVAL);
    let e = put(&s, "int_b", 10).unwrap_err();
    assert!(matches!(e, StoreError::Unavailable), "{e}");
    let w = s.writable(Duration::from_secs(60));
    assert!(!w.ok, "{w:?}");

    full.store(false, Ordering::SeqCst);
    std::thread::sleep(REOPEN_INTERVAL);
    put(&s, "int_b", 20_000).unwrap();
    assert!(has(&s, "int_a") && has(&s, "int_b"), "committed data survives the reopen");
    assert_eq!(s.read(|rx| rx.active_ids()).unwrap(), vec!["int_a", "int_b"]);
    let w = s.writable(Duration::from_secs(60));
    assert!(w.ok && !w.probed, "{w:?}");
}

#[test]
fn concurrent_calls_fail_together_and_recover_together_without_deadlock() {
    let d = tempfile::tempdir().unwrap();
    let (s, full) = on_a_disk_that_fills(&d.path().join("s.redb"));
    let s = Arc::new(s);
    put(&s, "int_0", 10).unwrap();
    full.store(true, Ordering::SeqCst);
    let failing: Vec<_> = (0..4)
        .map(|i| {
            let s = s.clone();
            std::thread::spawn(move || put(&s, &format!("int_f{i}"), 5_000).err())
        })
        .collect();
    for t in failing {
        let e = t.join().unwrap();
        assert!(
            matches!(e, Some(StoreError::Db(_) | StoreError::Unavailable)),
            "a write on a full disk must fail: {e:?}"
        );
    }
    full.store(false, Ordering::SeqCst);
    std::thread::sleep(REOPEN_INTERVAL);
    let started = Instant::now();
    let workers: Vec<_> = (0..4)
        .map(|i| {
            let s = s.clone();
            std::thread::spawn(move || {
                for j in 0..10 {
                    let id = format!("int_{i}_{j}");
                    // A read nested in a write's closure uses the outer call's handle.
                    s.write(|tx| {
                        let seen = s.read(|rx| rx.intent::<serde_json::Value>("int_0"))?;
                        assert!(seen.is_some());
                        tx.put_intent(
                            &crate::store::IntentKey::for_tests(),
                            &id,
                            &serde_json::json!({"i": i}),
                            true,
                            IntentDue::default(),
                        )
                    })
                    .unwrap();
                    assert!(has(&s, &id));
                }
            })
        })
        .collect();
    for t in workers {
        t.join().unwrap();
    }
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert_eq!(s.read(|rx| rx.active_ids()).unwrap().len(), 41);
    assert!(!has(&s, "int_f0"), "a failed write leaves nothing");
}

#[test]
fn writable_reports_the_last_write_or_probes_without_visible_change() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(&d.path().join("s.redb")).unwrap();
    // No write yet: a probe.
    let w = s.writable(Duration::from_secs(60));
    assert!(w.ok && w.probed, "{w:?}");
    // The probe counts as the last write.
    let w = s.writable(Duration::from_secs(60));
    assert!(w.ok && !w.probed, "{w:?}");
    // Stale: probed again.
    assert!(s.writable(Duration::ZERO).probed);
    // A write refused by its own closure says nothing about the disk.
    let _: Result<()> = s.write(|_| Err(StoreError::Corrupt("k".into(), "refused".into())));
    assert!(s.writable(Duration::from_secs(60)).ok);
    assert_eq!(s.read(|rx| rx.all_intents::<serde_json::Value>()).unwrap().len(), 0);
    assert_eq!(s.read(|rx| rx.outbox::<serde_json::Value>()).unwrap().len(), 0);
}

#[test]
fn the_probe_never_waits_for_a_running_write() {
    let d = tempfile::tempdir().unwrap();
    let s = Arc::new(Store::open(&d.path().join("s.redb")).unwrap());
    put(&s, "int_a", 10).unwrap();
    let (started_tx, started) = std::sync::mpsc::channel();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let long = {
        let s = s.clone();
        std::thread::spawn(move || {
            s.write(|tx| {
                started_tx.send(()).unwrap();
                released.recv().unwrap();
                tx.put_token("code:x", "int_a")
            })
        })
    };
    started.recv().unwrap();
    let t = Instant::now();
    let w = s.writable(Duration::ZERO);
    assert!(w.ok && w.busy && !w.probed, "{w:?}");
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    release.send(()).unwrap();
    long.join().unwrap().unwrap();
    assert!(!s.writable(Duration::ZERO).busy);
}

#[test]
fn schema_version_and_reopen() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("s.redb");
    {
        let s = Store::open(&p).unwrap();
        s.write(|tx| {
            tx.put_intent(
                &crate::store::IntentKey::for_tests(),
                "int_a",
                &serde_json::json!({"x": 1}),
                true,
                IntentDue::default(),
            )
        })
        .unwrap();
    }
    let s = Store::open(&p).unwrap();
    let v: Option<serde_json::Value> = s.read(|rx| rx.intent("int_a")).unwrap();
    assert_eq!(v.unwrap()["x"], 1);
    assert_eq!(s.read(|rx| rx.active_ids()).unwrap(), vec!["int_a"]);
}

#[test]
fn failed_write_leaves_nothing() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(&d.path().join("s.redb")).unwrap();
    let r: Result<(), StoreError> = s.write(|tx| {
        tx.put_token("code:x", "int_a")?;
        Err(StoreError::Corrupt("test".into(), "abort".into()))
    });
    assert!(matches!(&r, Err(StoreError::Corrupt(k, m)) if k == "test" && m == "abort"), "{r:?}");
    assert_eq!(s.read(|rx| rx.token("code:x")).unwrap(), None);
}

#[test]
fn a_second_open_is_already_open() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("s.redb");
    let _s = Store::open(&p).unwrap();
    let e = Store::open(&p).unwrap_err();
    assert!(e.is_already_open(), "{e}");
    assert!(!StoreError::Corrupt("k".into(), "x".into()).is_already_open());
}

/// A record type that does not encode (JSON object keys must be strings), for the test below.
impl crate::store::IntentWrite for std::collections::HashMap<(i32, i32), i32> {
    type Target = ();
    fn target(&self) -> Option<()> {
        None
    }
}

#[test]
fn a_record_that_does_not_encode_is_an_error_and_writes_nothing() {
    use std::collections::HashMap;
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(&d.path().join("s.redb")).unwrap();
    // JSON object keys must be strings: a map keyed by tuples does not encode.
    let bad: HashMap<(i32, i32), i32> = HashMap::from([((1, 2), 3)]);
    let e = s.write(|tx| tx.put_record(Ns::Client, "a", &bad)).unwrap_err();
    assert!(matches!(e, StoreError::Encode(ref t, _) if t == "records/client"), "{e}");
    assert!(!e.to_string().contains("a\""), "{e}");
    assert_eq!(s.read(|rx| rx.record::<serde_json::Value>(Ns::Client, "a")).unwrap(), None);
    let e = s
        .write(|tx| tx.put_intent(&crate::store::IntentKey::for_tests(), "int_a", &bad, true, IntentDue::default()))
        .unwrap_err();
    assert!(matches!(e, StoreError::Encode(ref t, _) if t == "intents"), "{e}");
    assert_eq!(s.read(|rx| rx.active_ids()).unwrap(), Vec::<String>::new());
    let encode = |table: &str, e: StoreError| assert!(matches!(e, StoreError::Encode(ref t, _) if t == table), "{e}");
    encode("outbox", s.write(|tx| tx.enqueue_mail(&bad)).unwrap_err());
    encode("offers", s.write(|tx| tx.put_offer("off_a", &bad, None)).unwrap_err());
    encode("sellers", s.write(|tx| tx.put_seller("sel_a", "a", &bad)).unwrap_err());
}

#[test]
fn an_unreadable_counter_is_an_error_naming_it_never_zero() {
    for (backend, s, _d) in crate::store::testpg::both() {
        eprintln!("backend: {backend}");
        s.write(|tx| {
            tx.enqueue_mail(&1)?;
            tx.queue_reply("int_a", "off_a")?;
            tx.bump_offers_generation()?;
            tx.bump_write_probe()
        })
        .unwrap();
        for key in ["outbox_seq", "pending_reply_seq", "offers_generation", "mail_dropped", "write_probe"] {
            s.write(|tx| tx.open(schema::META)?.insert(key, "7x").map(drop)).unwrap();
        }
        let corrupt = |key: &str, e: StoreError| {
            assert!(
                matches!(&e, StoreError::Corrupt(k, m) if k == &format!("meta:{key}") && m == "\"7x\" is not a whole number"),
                "{key}: {e}"
            );
        };
        // Nothing is handed out again, nothing is written.
        corrupt("outbox_seq", s.write(|tx| tx.enqueue_mail(&2)).unwrap_err());
        assert_eq!(s.read(|rx| rx.outbox::<serde_json::Value>()).unwrap().len(), 1);
        corrupt("pending_reply_seq", s.write(|tx| tx.queue_reply("int_b", "off_b")).unwrap_err());
        assert_eq!(s.read(|rx| rx.pending_reply_count()).unwrap(), 1);
        corrupt("offers_generation", s.write(|tx| tx.bump_offers_generation()).unwrap_err());
        corrupt("offers_generation", s.read(|rx| rx.offers_generation()).unwrap_err());
        corrupt("mail_dropped", s.read(|rx| rx.mail_dropped()).unwrap_err());
        // The write probe's value is read by nothing: it is overwritten.
        s.write(|tx| tx.bump_write_probe()).unwrap();
        assert_eq!(s.read(|rx| rx.table(schema::META)?.get("write_probe")).unwrap().as_deref(), Some("1"));
    }
}

#[test]
fn the_cache_is_released_only_when_nothing_holds_the_file_and_the_data_stays() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("s.redb");
    let s = Store::open(&p).unwrap();
    put(&s, "int_a", 10).unwrap();
    assert!(!s.release_cache(), "not without the lock file held");
    assert!(s.hold_file());
    let first = Arc::downgrade(s.lock_state().db.as_ref().unwrap());
    // A call in flight (here on this thread) keeps the file open.
    assert!(!s.read(|_| Ok::<_, StoreError>(s.release_cache())).unwrap());
    // So does a committed write still waiting for its durable commit.
    let ((), pending) = s.write_unsynced(|tx| tx.put_token("code:x", "int_a")).unwrap();
    assert!(!s.release_cache());
    s.sync::<StoreError>(pending).unwrap();
    assert!(first.upgrade().is_some(), "the handle stays while refused");

    assert!(s.release_cache());
    assert!(first.upgrade().is_none(), "the handle and its cache are gone");
    assert!(has(&s, "int_a"), "committed data survives the release");
    assert_eq!(s.read(|rx| rx.token("code:x")).unwrap().as_deref(), Some("int_a"));
    put(&s, "int_b", 10).unwrap();
    assert_eq!(s.read(|rx| rx.active_ids()).unwrap(), vec!["int_a", "int_b"]);
    // The file is held again: a second open is refused.
    let e = Store::open(&p).unwrap_err();
    assert!(e.is_already_open(), "{e}");
}

#[test]
fn while_the_lock_file_is_held_no_other_open_takes_the_store_even_with_the_file_closed() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("isto.redb");
    let s = Store::open(&p).unwrap();
    assert!(s.hold_file());
    assert!(d.path().join("isto.redb.lock").exists());
    // The moment of a release: the store file closed, its lock file still held.
    let handle = s.lock_state().db.take().unwrap();
    Arc::try_unwrap(handle).ok().unwrap().db.close().unwrap();
    let e = Store::open(&p).unwrap_err();
    assert!(e.is_already_open(), "{e}");
    assert!(in_use(&p), "a restore sees the store in use");
    drop(s);
    assert!(!in_use(&p), "the lock ends with the store");
    Store::open(&p).unwrap();
}

#[test]
fn a_write_left_unsynced_does_not_keep_the_cache_and_survives_the_release() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("s.redb");
    let s = Store::open(&p).unwrap();
    // Committed without durability, its caller gone without waiting for the sync.
    let ((), pending) = s.write_unsynced(|tx| tx.put_token("code:y", "int_a")).unwrap();
    drop(pending);
    assert!(s.hold_file());
    assert!(s.release_cache());
    drop(s);
    let s = Store::open(&p).unwrap();
    assert_eq!(s.read(|rx| rx.token("code:y")).unwrap().as_deref(), Some("int_a"));
}
