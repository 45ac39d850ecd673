//! Several replicas on one PostgreSQL database: two holders, each with its own store
//! handle (its own pool), matching engine, active set, offer index and data directory —
//! what two `isto serve` processes hold — over one database. Each replica applies the
//! change feed as its follower does (`AppState::catch_up`, here on a thread of its own
//! every 50 ms). PostgreSQL only: skipped with a printed reason on redb, where one
//! process holds the store.

use crate::kit::{backend_is_postgres, clock, settings, token_from_outbox, Opts};
use isto::intents::{ConfirmOutcome, ConsentOutcome};
use isto::protocol::Status;
use isto::records::OfferInput;
use isto::state::AppState;
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Whether the test runs here (PostgreSQL), else says why not.
fn on_postgres(test: &str) -> bool {
    if backend_is_postgres() {
        return true;
    }
    eprintln!("PostgreSQL only, not run on redb (one process per store, no replicas): {test}");
    false
}

/// A replica: its holder, and its follower thread while `follow` is set.
struct Replica {
    holder: AppState,
    _dir: tempfile::TempDir,
    follow: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Two replicas over one new database, sharing one key directory (`keys` of the first
/// replica's data directory, linked from the second's: see the operator guide).
fn two_replicas() -> (Replica, Replica) {
    two_replicas_on(&isto::store::testpg::database())
}

/// [`two_replicas`] over the database of `db`.
fn two_replicas_on(db: &isto::store::PgSettings) -> (Replica, Replica) {
    let clock = clock();
    let open = |dir: &std::path::Path, keys: Option<&std::path::Path>| {
        if let Some(k) = keys {
            std::os::unix::fs::symlink(k, dir.join("keys")).unwrap();
        }
        let mut s = settings(dir, Opts::default());
        s.store_postgres = Some(db.clone());
        let (ring, _) = isto::crypto::KeyRing::load_or_create(&s.key_path()).unwrap();
        let store = isto::store::Store::open_at(&s.store_location()).unwrap();
        AppState::with_index_dir(s, store, ring, clock.clone(), None)
    };
    let (da, db_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = open(da.path(), None);
    let b = open(db_dir.path(), Some(&da.path().join("keys")));
    (replica(a, da), replica(b, db_dir))
}

fn replica(holder: AppState, dir: tempfile::TempDir) -> Replica {
    let (follow, stop) = (Arc::new(AtomicBool::new(true)), Arc::new(AtomicBool::new(false)));
    let (h, f, s) = (holder.clone(), follow.clone(), stop.clone());
    std::thread::spawn(move || {
        while !s.load(Ordering::SeqCst) {
            if f.load(Ordering::SeqCst) {
                h.catch_up().unwrap();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    Replica { holder, _dir: dir, follow, stop }
}

/// A catalogue offer of an Octavia in Bratislava (`holder_flow`'s).
fn offer(reference: &str, title: &str, price: f64) -> OfferInput {
    crate::holder_flow::offer(reference, title, price, "Bratislava", "Škoda", "Octavia")
}

/// A draft published on `h`: (id, code, consent token).
fn publish(h: &AppState) -> (String, String, String) {
    let args = json!({"statement": "Hľadám Škoda Octavia",
        "criteria": {"category": "vehicles", "make": "skoda", "model": "Octavia"},
        "area": {"country": "SK", "regions": ["SK-BL"]}, "budget": {"max": 15000, "currency": "EUR"}});
    let r = h.intents.publish_draft(h.intents.parse_publish(&args).unwrap()).unwrap();
    let consent = r.consent_url.rsplit('/').next().unwrap().to_owned();
    (r.intent.id, r.intent_code, consent)
}

/// Polls `ok` every 10 ms until it holds; fails after `within`.
fn within(within: Duration, what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !ok() {
        assert!(Instant::now() < deadline, "not within {within:?}: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// An intent activated on A is in B's engine and listings; withdrawn on A, B's `get`
/// and match list say so within a second and B's engine drops it; and an offer B
/// imports while its follower is stopped (its engine stale) is still not delivered to
/// the withdrawn intent: the write transaction reads the intent's status itself.
#[test]
fn a_withdrawal_on_one_replica_is_seen_on_the_other_within_a_second() {
    if !on_postgres("a_withdrawal_on_one_replica_is_seen_on_the_other_within_a_second") {
        return;
    }
    let (a, b) = two_replicas();
    let (ha, hb) = (&a.holder, &b.holder);
    ha.catalogue.import_offers(vec![offer("a", "Škoda Octavia Combi", 9000.0)]).unwrap();
    let (id, code, consent) = publish(ha);
    assert_eq!(ha.intents.give_consent(&consent, "buyer@example.com", "sk").unwrap(), ConsentOutcome::Recorded);
    let confirm = token_from_outbox(ha, "/confirm/");
    assert_eq!(ha.intents.confirm(&confirm).unwrap(), ConfirmOutcome::Activated);
    within(Duration::from_secs(1), "B sees the activation", || {
        hb.intents.get_by_code(&code, None).unwrap().status == Status::Active && hb.base.engine_len() == 1
    });
    assert_eq!(isto::deliveries::list(&hb.base, &id, None, 50).unwrap().0.len(), 1, "B lists A's match");
    // B imports a matching offer: B's engine (fed by A's activation) delivers it.
    hb.catalogue.import_offers(vec![offer("b", "Škoda Octavia RS", 12000.0)]).unwrap();
    within(Duration::from_secs(1), "A lists B's delivery", || {
        isto::deliveries::list(&ha.base, &id, None, 50).unwrap().0.len() == 2
    });

    ha.intents.withdraw_by_code(&code, None).unwrap();
    let t0 = Instant::now();
    within(Duration::from_secs(1), "B sees the withdrawal", || {
        hb.intents.get_by_code(&code, None).unwrap().status == Status::Withdrawn && hb.base.engine_len() == 0
    });
    eprintln!("withdrawal seen on B after {:?}", t0.elapsed());
    assert_eq!(isto::deliveries::list(&hb.base, &id, None, 50).unwrap().0.len(), 2, "B lists what was delivered");

    // A stale engine on B: a second intent reaches B's engine, then B's follower stops
    // and A withdraws it.
    b.follow.store(false, Ordering::SeqCst);
    let (id2, code2, consent2) = publish(ha);
    assert_eq!(ha.intents.give_consent(&consent2, "other@example.com", "sk").unwrap(), ConsentOutcome::Recorded);
    let confirm2 = token_from_outbox(ha, "/confirm/");
    assert_eq!(ha.intents.confirm(&confirm2).unwrap(), ConfirmOutcome::Activated);
    hb.catch_up().unwrap();
    assert_eq!(hb.base.engine_len(), 1, "B's engine holds the second intent");
    ha.intents.withdraw_by_code(&code2, None).unwrap();
    assert_eq!(hb.base.engine_len(), 1, "B's engine is stale: its follower is stopped");
    let before = isto::deliveries::list(&ha.base, &id2, None, 50).map(|l| l.0.len()).unwrap_or(0);
    hb.catalogue.import_offers(vec![offer("c", "Škoda Octavia Scout", 10000.0)]).unwrap();
    let after = isto::deliveries::list(&ha.base, &id2, None, 50).map(|l| l.0.len()).unwrap_or(0);
    assert_eq!(after, before, "nothing delivered to an intent the database says is withdrawn");
    b.follow.store(true, Ordering::SeqCst);
    within(Duration::from_secs(1), "B catches up", || hb.base.engine_len() == 0);
}

/// The first-come consent race, split across two replicas: exactly one address wins,
/// the other is told the intent is taken, and one confirmation mail is queued.
#[test]
fn a_consent_race_split_across_two_replicas_has_one_winner() {
    if !on_postgres("a_consent_race_split_across_two_replicas_has_one_winner") {
        return;
    }
    let (a, b) = two_replicas();
    for round in 0..5 {
        let (_, _, consent) = publish(&a.holder);
        let go = Arc::new(std::sync::Barrier::new(2));
        let racers: Vec<_> = [(a.holder.clone(), "a"), (b.holder.clone(), "b")]
            .into_iter()
            .map(|(h, who)| {
                let (go, consent) = (go.clone(), consent.clone());
                std::thread::spawn(move || {
                    go.wait();
                    h.intents.give_consent(&consent, &format!("{who}{round}@example.com"), "sk").unwrap()
                })
            })
            .collect();
        let mut outcomes: Vec<ConsentOutcome> = racers.into_iter().map(|t| t.join().unwrap()).collect();
        outcomes.sort_by_key(|o| format!("{o:?}"));
        assert_eq!(outcomes, vec![ConsentOutcome::Recorded, ConsentOutcome::Taken], "round {round}");
    }
    assert_eq!(crate::kit::mails(&a.holder).len(), 5, "one confirmation per intent");
}

/// Offers imported on A reach B's offer index: B is in step (ready) and finds them.
#[test]
fn offers_imported_on_one_replica_reach_the_other_replicas_index() {
    if !on_postgres("offers_imported_on_one_replica_reach_the_other_replicas_index") {
        return;
    }
    let (a, b) = two_replicas();
    assert!(b.holder.catalogue.index_status().unwrap().in_step);
    a.holder.catalogue.import_offers(vec![offer("a", "Škoda Octavia Combi", 9000.0)]).unwrap();
    within(Duration::from_secs(1), "B's index takes A's import", || {
        b.holder.catalogue.index_status().unwrap().in_step && b.holder.catalogue.offer_index().unwrap().num_docs() == 1
    });
    assert!(isto::app::ready::ready(&b.holder), "B is ready once in step");
}

/// A key rotation on A (key files in the shared key directory, the key record in the
/// database) reaches B: B reads its ring again and opens what A sealed with the new key.
#[test]
fn a_key_rotation_on_one_replica_is_honoured_by_the_other() {
    if !on_postgres("a_key_rotation_on_one_replica_is_honoured_by_the_other") {
        return;
    }
    let (a, b) = two_replicas();
    let (ka, kb) = (a.holder.base.keys(), b.holder.base.keys());
    assert_eq!(ka.current_kid(), kb.current_kid());
    let kid = ka.rotate().unwrap();
    let rec = isto::store::KeyRecord { sealed: ka.kids(), ..Default::default() };
    a.holder.base.store().write(|tx| tx.set_key_record(&rec)).unwrap();
    let sealed = ka.seal_str("sealed on A with the new key").unwrap();
    within(Duration::from_secs(1), "B reads the rotated ring", || kb.current_kid() == kid);
    assert_eq!(kb.open_str(&sealed).unwrap().expose(), "sealed on A with the new key");
}

/// The version of the change feed on `h`'s store now.
fn feed_version(h: &AppState) -> i64 {
    h.base.store().change_version().unwrap().unwrap()
}

/// Writes on A and returns how long B's follower took to apply each write, from the
/// write's commit (B's applied version polled every millisecond, 1 s at most).
fn lags(a: &AppState, b: &AppState, rounds: usize, tag: &str) -> Vec<Duration> {
    (0..rounds)
        .map(|i| {
            a.catalogue
                .import_offers(vec![offer(&format!("{tag}{i}"), "Škoda Octavia Combi", 9000.0 + i as f64)])
                .unwrap();
            let (version, t0) = (feed_version(a), Instant::now());
            within(Duration::from_secs(1), "B applies A's write", || b.base.store().feed_applied() >= version);
            t0.elapsed()
        })
        .collect()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// LISTEN/NOTIFY: B runs the real follower of `isto serve` (`app::follow::run`), which
/// reads the change feed when the database notifies it; each write on A is applied on B
/// at once rather than at the next 0.2 s poll (the lags are measured and printed, the
/// notifications counted). When B's listening connection is ended by the database, the
/// poll still applies writes, and the follower listens again (with backoff) and is
/// notified again.
#[test]
fn a_change_reaches_the_other_replica_by_notification() {
    if !on_postgres("a_change_reaches_the_other_replica_by_notification") {
        return;
    }
    let db = isto::store::testpg::database();
    let (a, b) = two_replicas_on(&db);
    b.follow.store(false, Ordering::SeqCst);
    let (ha, hb) = (&a.holder, &b.holder);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let stop = tokio_util::sync::CancellationToken::new();
    rt.spawn(isto::app::follow::run(hb.clone(), stop.clone()));
    // The follower listens once it was notified of a first write.
    let store_b = hb.base.store();
    within(Duration::from_secs(5), "B's follower is notified", || {
        ha.catalogue.import_offers(vec![offer("warm", "Škoda Octavia", 8000.0)]).unwrap();
        let v = feed_version(ha);
        let t = Instant::now();
        while store_b.feed_applied() < v && t.elapsed() < Duration::from_millis(300) {
            std::thread::sleep(Duration::from_millis(1));
        }
        store_b.feed_notified() > 0
    });

    let before = store_b.feed_notified();
    let notified = lags(ha, hb, 20, "n");
    let got = store_b.feed_notified() - before;
    eprintln!(
        "change feed lag with LISTEN/NOTIFY: median {:?}, max {:?} over 20 writes, {got} notifications (poll every {:?})",
        median(notified.clone()),
        notified.iter().max().unwrap(),
        isto::app::follow::FEED_POLL
    );
    assert!(got >= 10, "B's follower was notified of {got} of 20 writes");
    assert!(
        median(notified) < isto::app::follow::FEED_POLL,
        "most writes were applied before a poll would have read them"
    );

    // The database ends B's listening connection: writes still arrive by the poll, and
    // the follower listens again.
    isto::store::testpg::execute(
        &db,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'LISTEN isto_changes'",
    );
    let polled = lags(ha, hb, 3, "p");
    eprintln!("change feed lag after the listening connection was ended: {polled:?}");
    let before = store_b.feed_notified();
    within(Duration::from_secs(5), "B's follower listens again", || {
        lags(ha, hb, 1, &format!("r{}", store_b.feed_notified()));
        store_b.feed_notified() > before
    });
    stop.cancel();
}
