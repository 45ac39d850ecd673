//! Tests of the intent write and its batches ([`super`]).

use super::*;
use crate::base::tests::active;
use crate::clock::{parse_rfc3339, ManualClock};
use crate::config::Settings;
use crate::crypto::KeyRing;
use crate::store::faults::{open_faulty, Faults};
use std::sync::Arc;

/// A base over a store whose file fails on demand.
fn faulty_base(dir: &std::path::Path) -> (Base, Faults) {
    let mut s = Settings::defaults();
    s.data_dir = dir.to_owned();
    let (store, faults) = open_faulty(&dir.join(crate::store::FILE_NAME)).unwrap();
    let clock = Arc::new(ManualClock::new(parse_rfc3339("2026-12-01T10:00:00Z").unwrap()));
    (Base::new(s, Arc::new(store), Arc::new(KeyRing::ephemeral()), clock), faults)
}

/// The ids of the store's active set, and whether engine and active set hold exactly
/// those (every test record is effectively active while in the set).
fn in_step(b: &Base, ids: &[&str]) -> Vec<String> {
    let stored = b.store.read(|rx| rx.active_ids()).unwrap();
    assert_eq!(b.engine.len(), stored.len(), "engine {:?} vs store {stored:?}", b.engine);
    assert_eq!(b.active.len(), stored.len(), "active set vs store {stored:?}");
    for id in ids {
        let s = stored.iter().any(|i| i == id);
        assert_eq!(b.engine.contains(id), s, "{id}: engine vs store {stored:?}");
    }
    stored
}

#[test]
fn a_failed_durable_commit_leaves_the_engine_as_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let (b, faults) = faulty_base(dir.path());
    b.write(|w| w.put_intent(&active("int_a"), true)).unwrap();

    // An activation whose transaction commits but whose durable commit fails: the
    // store reopens at its last durable commit, without it; so must the engine.
    faults.fail_next_write();
    let e = b.write(|w| w.put_intent(&active("int_b"), true)).unwrap_err();
    assert!(!faults.armed(), "the injected failure came");
    assert!(matches!(e, ServiceError::Store(StoreError::Db(_))), "{e}");
    assert_eq!(in_step(&b, &["int_a", "int_b"]), vec!["int_a"], "the failed batch is gone from the store");
    assert!(!b.engine_stale());

    // A withdrawal whose durable commit fails within a second of that reopen: the
    // store reopens again only after a second, so the engine waits for that.
    let withdrawn = IntentRecord { status: Status::Withdrawn, ..active("int_a") };
    faults.fail_next_write();
    let e = b.write(|w| w.put_intent(&withdrawn, false)).unwrap_err();
    assert!(matches!(e, ServiceError::Store(StoreError::Db(_))), "{e}");

    // Writes work again once the store has reopened (at most one reopen a second),
    // and the engine is rebuilt before the first of them.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match b.write(|w| w.put_intent(&active("int_c"), true)) {
            Ok(()) => break,
            Err(ServiceError::Store(e @ (StoreError::Unavailable | StoreError::Db(_)))) => {
                assert!(b.engine_stale(), "a write refused for the rebuild: {e}");
                assert!(std::time::Instant::now() < deadline, "the store never came back: {e}");
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            Err(e) => panic!("{e}"),
        }
    }
    let stored = in_step(&b, &["int_a", "int_b", "int_c"]);
    assert!(stored.contains(&"int_c".to_owned()) && stored.contains(&"int_a".to_owned()), "{stored:?}");
    assert!(!b.engine_stale());
}

/// A queued job writing `rec` (active) and a token for it; its receiver.
fn put_job(rec: IntentRecord) -> (Box<dyn Job>, Receiver<Result<()>>) {
    job(move |w| {
        w.put_token(&format!("hash_{}", rec.id), &rec.id)?;
        w.put_intent(&rec, true)
    })
}

/// An active intent of person `per_x`.
fn of(id: &str) -> IntentRecord {
    IntentRecord { person: Some("per_x".into()), ..active(id) }
}

/// A base whose cap is one active intent per person, and `per_x` holding it (`int_x`).
fn person_at_cap(dir: &std::path::Path) -> Base {
    let mut b = crate::base::test_base(dir);
    b.settings.quotas.active_intents_per_person = 1;
    b.write(|w| w.put_intent(&of("int_x"), true)).unwrap();
    b
}

/// Runs `jobs` as one batch, as the caller holding the intent-write lock does.
fn batch(b: &Base, jobs: Vec<Box<dyn Job>>) {
    let _serial = b.intent_writes.lock().unwrap();
    b.run_batch(jobs);
}

#[test]
fn a_failed_durable_commit_of_a_batch_leaves_the_engine_as_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let (b, faults) = faulty_base(dir.path());
    b.write_batched(|w| w.put_intent(&active("int_a"), true)).unwrap();
    assert_eq!(b.batch_stats(), BatchStats { batches: 1, writes: 1, largest: 1 });

    // Two writes in one transaction whose commit fails: both fail, neither is in the
    // store (reopened at its last durable commit) nor in the engine.
    let (jobs, rxs): (Vec<_>, Vec<_>) = ["int_b", "int_c"].map(|id| put_job(active(id))).into_iter().unzip();
    faults.fail_next_write();
    batch(&b, jobs);
    assert!(!faults.armed(), "the injected failure came");
    for rx in rxs {
        let e = rx.try_recv().unwrap().unwrap_err();
        assert!(matches!(e, ServiceError::Store(StoreError::Db(_))), "{e}");
    }
    assert_eq!(in_step(&b, &["int_a", "int_b", "int_c"]), vec!["int_a"], "the failed batch is gone");
    assert!(b.store.read(|rx| rx.token("hash_int_b")).unwrap().is_none());
    assert!(!b.engine_stale());
    assert_eq!(b.batch_stats(), BatchStats { batches: 1, writes: 1, largest: 1 }, "a failed batch is not counted");

    // The next batch commits.
    let (jobs, rxs): (Vec<_>, Vec<_>) = ["int_d", "int_e"].map(|id| put_job(active(id))).into_iter().unzip();
    batch(&b, jobs);
    rxs.iter().for_each(|rx| rx.try_recv().unwrap().unwrap());
    assert_eq!(in_step(&b, &["int_a", "int_d", "int_e"]), vec!["int_a", "int_d", "int_e"]);
    assert_eq!(b.batch_stats(), BatchStats { batches: 2, writes: 3, largest: 2 });
}

#[test]
fn a_failing_write_leaves_nothing_and_keeps_the_others_of_its_batch() {
    let dir = tempfile::tempdir().unwrap();
    let b = person_at_cap(dir.path());
    // The middle one writes its token, then is refused at the cap.
    let (jobs, rxs): (Vec<_>, Vec<_>) =
        [active("int_a"), of("int_b"), active("int_c")].map(put_job).into_iter().unzip();
    batch(&b, jobs);
    let outs: Vec<_> = rxs.iter().map(|rx| rx.try_recv().unwrap()).collect();
    assert!(outs[0].is_ok() && outs[2].is_ok(), "{outs:?}");
    assert!(matches!(outs[1], Err(ServiceError::PersonCap { limit: 1 })), "{outs:?}");
    assert_eq!(in_step(&b, &["int_a", "int_b", "int_c", "int_x"]), vec!["int_a", "int_c", "int_x"]);
    let tokens = ["int_a", "int_b", "int_c"].map(|id| b.store.read(|rx| rx.token(&format!("hash_{id}"))).unwrap());
    assert_eq!(tokens, [Some("int_a".to_owned()), None, Some("int_c".to_owned())], "the refused write left no token");
    assert!(b.store.read(|rx| rx.intent::<IntentRecord>("int_b")).unwrap().is_none());
    assert_eq!(b.batch_stats(), BatchStats { batches: 1, writes: 2, largest: 2 }, "one commit for both");
}

#[test]
fn many_refused_writes_in_one_batch_run_each_write_at_most_three_times() {
    let dir = tempfile::tempdir().unwrap();
    let b = person_at_cap(dir.path());
    // Every odd write is refused at the cap: re-running the whole batch after each
    // refusal would run the first write six times.
    let runs: Vec<Arc<std::sync::atomic::AtomicUsize>> = (0..10).map(|_| Arc::default()).collect();
    let (jobs, rxs): (Vec<_>, Vec<_>) = (0..10)
        .map(|i| {
            let id = format!("int_{i}");
            let rec = if i % 2 == 1 { of(&id) } else { active(&id) };
            let n = runs[i].clone();
            job(move |w| {
                n.fetch_add(1, Ordering::SeqCst);
                w.put_intent(&rec, true)
            })
        })
        .unzip();
    batch(&b, jobs);
    for (i, rx) in rxs.iter().enumerate() {
        let out = rx.try_recv().unwrap();
        if i % 2 == 1 {
            assert!(matches!(out, Err(ServiceError::PersonCap { limit: 1 })), "{i}: {out:?}");
        } else {
            assert!(out.is_ok(), "{i}: {out:?}");
        }
        let stored = b.store.read(|rx| rx.intent::<IntentRecord>(&format!("int_{i}"))).unwrap();
        assert_eq!(stored.is_some(), i % 2 == 0, "int_{i}");
    }
    let most = runs.iter().map(|n| n.load(Ordering::SeqCst)).max().unwrap();
    assert!(most <= 3, "a write ran {most} times");
}

#[test]
fn one_batch_of_one_persons_writes_stops_exactly_at_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = crate::base::test_base(dir.path());
    b.settings.quotas.active_intents_per_person = 3;
    let ids: Vec<String> = (0..7).map(|i| format!("int_{i}")).collect();
    let (jobs, rxs): (Vec<_>, Vec<_>) =
        ids.iter().map(|id| put_job(IntentRecord { person: Some("per_x".into()), ..active(id) })).unzip();
    let commits = b.store.commits().unwrap();
    batch(&b, jobs);
    let outs: Vec<_> = rxs.iter().map(|rx| rx.try_recv().unwrap()).collect();
    assert!(outs[..3].iter().all(Result::is_ok), "{outs:?}");
    assert!(outs[3..].iter().all(|o| matches!(o, Err(ServiceError::PersonCap { limit: 3 }))), "{outs:?}");
    assert_eq!(b.store.read(|rx| rx.person_active("per_x", 0, "", 10)).unwrap(), 3);
    assert_eq!(in_step(&b, &["int_0", "int_3"]), vec!["int_0", "int_1", "int_2"]);
    assert_eq!(b.store.commits().unwrap() - commits, 1, "one durable commit for the batch");
    assert_eq!(b.batch_stats(), BatchStats { batches: 1, writes: 3, largest: 3 });
}

#[test]
fn concurrent_batched_writes_each_return_their_own_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let b = Arc::new(crate::base::test_base(dir.path()));
    let outs: Vec<Result<String>> = std::thread::scope(|s| {
        let calls: Vec<_> = (0..16)
            .map(|i| {
                let b = b.clone();
                s.spawn(move || {
                    let id = format!("int_{i:02}");
                    b.write_batched(move |w| {
                        w.put_intent(&active(&id), true)?;
                        Ok(id.clone())
                    })
                })
            })
            .collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let got: Vec<String> = outs.into_iter().map(Result::unwrap).collect();
    let want: Vec<String> = (0..16).map(|i| format!("int_{i:02}")).collect();
    assert_eq!(got, want, "each caller its own outcome");
    assert_eq!(in_step(&b, &[]), want);
    let st = b.batch_stats();
    assert_eq!(st.writes, 16, "{st:?}");
    assert!(st.batches <= 16 && st.largest >= 1, "{st:?}");
}

#[test]
fn awaited_and_blocking_writes_share_batches_and_each_get_their_own_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let b = Arc::new(crate::base::test_base(dir.path()));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let put = |id: String| {
        move |w: &mut Writes<'_, '_>| -> Result<String> {
            w.put_intent(&active(&id), true)?;
            Ok(id.clone())
        }
    };
    let blocking: Vec<_> = (0..4)
        .map(|i| {
            let b = b.clone();
            std::thread::spawn(move || b.write_batched(put(format!("int_t{i}"))))
        })
        .collect();
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let b = b.clone();
            rt.spawn(async move { b.write_batched_async(put(format!("int_a{i:02}"))).await })
        })
        .collect();
    let awaited: Vec<String> = rt.block_on(async {
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap().unwrap());
        }
        out
    });
    let threads: Vec<String> = blocking.into_iter().map(|t| t.join().unwrap().unwrap()).collect();
    assert_eq!(awaited, (0..16).map(|i| format!("int_a{i:02}")).collect::<Vec<_>>(), "each task its own outcome");
    assert_eq!(threads, (0..4).map(|i| format!("int_t{i}")).collect::<Vec<_>>(), "each thread its own outcome");
    assert_eq!(in_step(&b, &[]).len(), 20);
    let st = b.batch_stats();
    assert_eq!(st.writes, 20, "{st:?}");
    // The runner thread is gone once the queue is empty.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while b.batches.runner.load(Ordering::Relaxed) {
        assert!(std::time::Instant::now() < deadline, "the batch runner never stopped");
        std::thread::yield_now();
    }
    assert!(b.batches.queue.lock().unwrap().is_empty());
    // A refused write fails alone, the awaiting caller gets the error.
    let refused = rt.block_on(b.write_batched_async(|_w| -> Result<()> { Err(ServiceError::NotFound) }));
    assert!(matches!(refused, Err(ServiceError::NotFound)), "{refused:?}");
}

#[test]
fn the_batch_thread_takes_at_most_max_batch_writes_per_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let b = crate::base::test_base(dir.path());
    let n = MAX_BATCH + 44;
    let (jobs, rxs): (Vec<_>, Vec<_>) = (0..n).map(|i| put_job(active(&format!("int_{i:04}")))).unzip();
    b.batches.queue.lock().unwrap().extend(jobs);
    b.batches.runner.store(true, Ordering::Relaxed);
    b.run_batches();
    assert!(rxs.iter().all(|rx| rx.try_recv().unwrap().is_ok()), "every write done");
    assert_eq!(
        b.batch_stats(),
        BatchStats { batches: 2, writes: n as u64, largest: MAX_BATCH as u64 },
        "the oldest {MAX_BATCH}, then the rest"
    );
    assert!(!b.batches.runner.load(Ordering::Relaxed), "the thread's turn ended with the queue");
}

#[test]
fn writes_queued_behind_a_running_batch_run_as_the_next_batch() {
    let dir = tempfile::tempdir().unwrap();
    let b = Arc::new(crate::base::test_base(dir.path()));
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let (started, running) = std::sync::mpsc::channel::<()>();
    let outs: Vec<Result<String>> = std::thread::scope(|s| {
        let first = {
            let b = b.clone();
            let mut hold = Some((started, wait));
            s.spawn(move || {
                b.write_batched(move |w| {
                    // The first run holds its batch open until the others queue.
                    if let Some((started, wait)) = hold.take() {
                        started.send(()).unwrap();
                        wait.recv().unwrap();
                    }
                    w.put_intent(&active("int_a"), true)?;
                    Ok("int_a".to_owned())
                })
            })
        };
        running.recv_timeout(std::time::Duration::from_secs(10)).expect("the first batch never ran");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let later: Vec<_> = ["int_b", "int_c"]
            .map(|id| {
                let b = b.clone();
                s.spawn(move || {
                    b.write_batched(move |w| {
                        w.put_intent(&active(id), true)?;
                        Ok(id.to_owned())
                    })
                })
            })
            .into();
        while b.batches.queue.lock().unwrap().len() < 2 {
            assert!(std::time::Instant::now() < deadline, "the later writes never queued");
            std::thread::yield_now();
        }
        go.send(()).unwrap();
        std::iter::once(first).chain(later).map(|c| c.join().unwrap()).collect()
    });
    let got: Vec<String> = outs.into_iter().map(Result::unwrap).collect();
    assert_eq!(got, ["int_a", "int_b", "int_c"], "each caller its own outcome");
    assert_eq!(in_step(&b, &[]), got);
    assert_eq!(b.batch_stats(), BatchStats { batches: 2, writes: 3, largest: 2 }, "the queued two in one batch");
}

#[test]
fn the_base_holds_the_stores_only_intent_key() {
    let dir = tempfile::tempdir().unwrap();
    let b = crate::base::test_base(dir.path());
    assert!(b.store.intent_key().is_none(), "the base took it at assembly");
    assert!(b.engine_failure().is_none());
    // A second base over the same store cannot write intents, and says why.
    let settings = b.settings.clone();
    let other = Base::new(settings, b.store.clone(), b.keys.clone(), b.clock.clone());
    assert!(other.engine_failure().is_some_and(|e| e.contains("intent key")));
    let e = other.write(|w| w.put_intent(&active("int_a"), true)).unwrap_err();
    assert!(matches!(e, ServiceError::Store(StoreError::Unavailable)), "{e}");
    assert!(b.store.read(|rx| rx.active_ids()).unwrap().is_empty());
}
