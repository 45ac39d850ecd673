//! The sweep over the store's expiry index ([`crate::base::sweep_due`]): it expires
//! exactly what is due and erases contacts after retention, reads nothing else, and
//! works the same on a store migrated from before the index. Lapsed consent-link drafts
//! are the purge's ([`Intents::purge`], run before the sweep as the sweeper does): they
//! are deleted, not marked expired.

use super::*;
use crate::base::sweep_due;
use crate::clock::ManualClock;
use crate::config::Settings;
use crate::crypto::KeyRing;
use crate::records::micros;
use crate::store::{IntentDue, Store};
use serde_json::json;

pub(super) const T0: &str = "2026-12-01T10:00:00Z";

fn ts(s: &str) -> OffsetDateTime {
    clock::parse_rfc3339(s).unwrap()
}

pub(super) fn at(offset: time::Duration) -> Stamp {
    Stamp::of(ts(T0) + offset)
}

pub(super) fn record(id: &str, status: Status) -> IntentRecord {
    let far = at(time::Duration::days(60));
    let content = crate::records::IntentContent {
        statement: "Octavia".into(),
        category: "vehicles".into(),
        criteria: serde_json::Map::new(),
        area: crate::protocol::AreaObject { country: "SK".into(), regions: Vec::new(), place: None },
        budget: None,
        buy_by: None,
        valid_until: far,
        visibility: crate::protocol::Visibility::Private,
        language: "sk".into(),
    };
    IntentRecord { status, ..IntentRecord::draft(id.to_owned(), content, at(-time::Duration::days(40)), far) }
}

/// The records of the test, with the statuses they must have after one sweep at T0.
fn records(keys: &KeyRing) -> Vec<(IntentRecord, Status)> {
    let s = time::Duration::seconds;
    let mut out = Vec::new();
    let mut draft = |id: &str, deadline: time::Duration, after: Status| {
        let mut r = record(id, Status::AwaitingConsent);
        r.draft_expires_at = at(deadline);
        out.push((r, after));
    };
    draft("int_draft_due", -s(1), Status::Expired);
    draft("int_draft_at_now", s(0), Status::AwaitingConsent);
    draft("int_draft_later", s(3600), Status::AwaitingConsent);
    let contact = keys.seal_str("buyer@example.com").unwrap();
    for (id, deadline, after) in
        [("int_unconf_due", -s(1), Status::Expired), ("int_unconf_later", s(60), Status::AwaitingEmailConfirmation)]
    {
        let mut r = record(id, Status::AwaitingEmailConfirmation);
        r.confirm_expires_at = Some(at(deadline));
        r.contact = Some(contact.clone());
        out.push((r, after));
    }
    for (id, deadline, after) in
        [("int_active_due", -s(1), Status::Expired), ("int_active_later", s(86400), Status::Active)]
    {
        let mut r = record(id, Status::Active);
        r.valid_until = at(deadline);
        r.contact = Some(contact.clone());
        out.push((r, after));
    }
    // Ended: contact erased 30 days (the default retention) after the end, not before.
    for (id, ended) in [("int_ended_erase", -time::Duration::days(31)), ("int_ended_keep", -time::Duration::days(29))] {
        let mut r = record(id, Status::Withdrawn);
        r.ended_at = Some(at(ended));
        r.contact = Some(contact.clone());
        out.push((r, Status::Withdrawn));
    }
    let mut r = record("int_ended_clean", Status::Expired);
    r.ended_at = Some(at(-time::Duration::days(90)));
    out.push((r, Status::Expired));
    out
}

pub(super) struct Fixture {
    pub(super) dir: tempfile::TempDir,
    pub(super) clock: Arc<ManualClock>,
    pub(super) holder: Intents,
}

pub(super) fn holder(dir: tempfile::TempDir, clock: Arc<ManualClock>) -> Fixture {
    let mut settings = Settings::defaults();
    settings.data_dir = dir.path().to_owned();
    let store = Store::open(&settings.store_path()).unwrap();
    let base = Arc::new(Base::new(settings, Arc::new(store), Arc::new(KeyRing::ephemeral()), clock.clone()));
    let catalogue = Arc::new(Catalogue::new(base.clone(), None));
    Fixture { dir, clock, holder: Intents::new(base, catalogue) }
}

/// A holder whose store holds [`records`], written an hour before T0 through the one
/// intent write (`Writes::put_intent`), with the clock at T0; `undecodable` adds an intent
/// record that does not decode and is never due.
fn fixture(undecodable: bool) -> Fixture {
    let clock = Arc::new(ManualClock::new(ts(T0) - time::Duration::hours(1)));
    let f = holder(tempfile::tempdir().unwrap(), clock);
    let h = &f.holder;
    h.base
        .write(|tx| -> Result<()> {
            for (r, _) in records(h.base.keys()) {
                tx.put_intent(&r, r.status == Status::Active)?;
            }
            if undecodable {
                // Not an IntentRecord: a sweep that decoded every intent would fail on it.
                std::ops::DerefMut::deref_mut(tx).put_intent(
                    &crate::store::IntentKey::for_tests(),
                    "int_not_a_record",
                    &json!({"x": 1}),
                    false,
                    IntentDue::default(),
                )?;
            }
            Ok(())
        })
        .unwrap();
    f.clock.advance(time::Duration::hours(1));
    f
}

fn stored(h: &Intents, id: &str) -> IntentRecord {
    h.base.store().read(|rx| rx.intent::<IntentRecord>(id)).unwrap().unwrap()
}

/// Whether the record is gone (purged), with its index rows.
fn gone(h: &Intents, id: &str) -> bool {
    let rec = h.base.store().read(|rx| rx.intent::<IntentRecord>(id)).unwrap();
    rec.is_none() && h.base.store().read(|rx| rx.intent_due(id)).unwrap().is_none()
}

/// Whether a fixture record is a consent-link draft that lapses: purged, not expired.
fn purged_draft(r: &IntentRecord, after: Status) -> bool {
    r.status == Status::AwaitingConsent && after == Status::Expired
}

/// One pass of the sweeper: the purge, then the sweep; returns (drafts purged, changed).
fn pass(h: &Intents) -> (u64, u64) {
    let purged = h.purge(false).unwrap();
    (purged.drafts, h.sweep().unwrap())
}

/// Checks the statuses after the first sweep at T0, and that every record's index
/// entry is its own [`crate::base::sweep_due`].
fn check_after_first_sweep(h: &Intents) {
    for (r, after) in records(h.base.keys()) {
        if purged_draft(&r, after) {
            // The lapsed draft is deleted, not marked expired.
            assert!(gone(h, &r.id), "{}", r.id);
            continue;
        }
        let s = stored(h, &r.id);
        assert_eq!(s.status, after, "{}", r.id);
        if after != r.status {
            assert_eq!(s.ended_at.map(Stamp::rfc3339).as_deref(), Some(T0), "{}", r.id);
        }
        assert_eq!(
            h.base.store().read(|rx| rx.intent_due(&r.id)).unwrap().unwrap_or_default(),
            sweep_due(&s),
            "{}",
            r.id
        );
    }
    assert!(stored(h, "int_ended_erase").contact.is_none(), "erased after retention");
    assert!(stored(h, "int_ended_keep").contact.is_some(), "kept within retention");
    assert!(stored(h, "int_unconf_due").contact.is_some(), "just ended: kept");
    let active = h.base.store().read(|rx| rx.active_ids()).unwrap();
    assert_eq!(active, vec!["int_active_later"]);
    // Only the draft due within this very microsecond is still listed.
    let now = micros(h.now());
    assert_eq!(
        h.base.store().read(|rx| rx.intents_due(now, now - 30 * 86_400_000_000)).unwrap(),
        vec!["int_draft_at_now"]
    );
}

#[test]
fn next_status_change_follows_effective_status() {
    let keys = KeyRing::ephemeral();
    for (r, _) in records(&keys) {
        let Some(t) = r.next_status_change() else {
            assert!(r.status.is_final(), "{}", r.id);
            assert_eq!(r.effective_status(ts(T0) + time::Duration::days(365)), r.status);
            continue;
        };
        assert_eq!(r.effective_status(t), r.status, "{}: not yet at the time itself", r.id);
        assert_eq!(r.effective_status(t + time::Duration::nanoseconds(1)), Status::Expired, "{}", r.id);
    }
    let mut unbounded = record("int_x", Status::AwaitingEmailConfirmation);
    unbounded.confirm_expires_at = None;
    assert_eq!(unbounded.next_status_change(), None);
    assert_eq!(unbounded.effective_status(ts(T0) + time::Duration::days(365)), Status::AwaitingEmailConfirmation);
}

#[test]
fn sweep_expires_exactly_what_is_due_and_reads_only_the_index() {
    let f = fixture(true);
    let h = &f.holder;
    // Due: the draft, the unconfirmed and the active intent past their deadlines, and
    // the contact of the intent that ended 31 days ago: 4, of which the draft is purged.
    let (purged, changed) = pass(h);
    assert_eq!(purged + changed, 4);
    assert_eq!((purged, changed), (1, 3));
    check_after_first_sweep(h);
    assert_eq!(pass(h), (0, 0), "nothing more is due");
    f.clock.advance(time::Duration::microseconds(1));
    let (purged, changed) = pass(h);
    assert_eq!(purged + changed, 1, "the draft due at T0 expires after it");
    assert_eq!((purged, changed), (1, 0));
    assert!(gone(h, "int_draft_at_now"), "and is purged");
    f.clock.advance(time::Duration::days(30));
    // The rest in turn: three expiries (the draft's a purge) and three contact erasures.
    let (purged, changed) = pass(h);
    assert_eq!(purged + changed, 6);
    assert_eq!((purged, changed), (1, 5));
    assert!(gone(h, "int_draft_later"));
    for id in ["int_unconf_later", "int_active_later"] {
        assert_eq!(stored(h, id).status, Status::Expired, "{id}");
    }
    for id in ["int_unconf_due", "int_active_due", "int_ended_keep"] {
        assert!(stored(h, id).contact.is_none(), "{id}: ended over 30 days ago");
    }
    for id in ["int_unconf_later", "int_active_later"] {
        assert!(stored(h, id).contact.is_some(), "{id}: just ended");
    }
    assert_eq!(h.base.store().read(|rx| rx.active_ids()).unwrap(), Vec::<String>::new());
}

#[test]
fn a_store_written_without_the_index_is_backfilled_and_swept_the_same() {
    let Fixture { dir, clock, holder: h } = fixture(false);
    let path = h.base.settings().store_path();
    drop(h);
    crate::store::rewind_to_version_1(&path);
    let f = holder(dir, clock);
    let h = &f.holder;
    // Migration 2 entered every intent as due now.
    let all_due = h.base.store().read(|rx| rx.intents_due(0, i64::MIN)).unwrap();
    assert_eq!(all_due.len(), records(h.base.keys()).len());
    // The first sweep looks at each once, changes what is due and records the real
    // times of the rest: the same state as on a store that always had the index.
    let (purged, changed) = pass(h);
    assert_eq!(purged + changed, 4);
    check_after_first_sweep(h);
}

#[test]
fn the_sweep_alone_leaves_a_lapsed_draft_due_for_the_purge() {
    let f = fixture(false);
    let h = &f.holder;
    assert_eq!(h.sweep().unwrap(), 3, "the lapsed draft is not the sweep's");
    assert_eq!(stored(h, "int_draft_due").status, Status::AwaitingConsent);
    assert_eq!(stored(h, "int_draft_due").to_intent(h.now()).status, Status::Expired, "read as expired");
    let now = micros(h.now());
    assert!(h.base.store().read(|rx| rx.intents_due(now, i64::MIN)).unwrap().contains(&"int_draft_due".to_owned()));
    // A dry run counts it and leaves it; the real run deletes exactly what it counted.
    let dry = h.purge(true).unwrap();
    assert_eq!(dry.drafts, 1);
    assert!(!gone(h, "int_draft_due"));
    assert_eq!(h.purge(false).unwrap(), dry);
    assert!(gone(h, "int_draft_due"));
    assert_eq!(h.purge(true).unwrap().total(), 0);
}

/// The `Confirmed` mark of `email`'s person key: the time it holds, if any.
fn mark(h: &Intents, email: &str) -> Option<Stamp> {
    let person = h.base.person_key(email);
    h.base.store().read(|rx| rx.record::<Stamp>(crate::store::Ns::Confirmed, &person)).unwrap()
}

/// Writes a `Confirmed` mark for `email` at the clock's now, as a confirmation does.
fn confirm_mark(h: &Intents, email: &str) {
    let person = h.base.person_key(email);
    let now = h.now();
    h.base.write(|tx| -> Result<()> { Ok(tx.put_record(Ns::Confirmed, &person, &Stamp::of(now))?) }).unwrap();
}

#[test]
fn a_mark_counts_within_its_lifetime_and_is_purged_after_it() {
    let f = holder(tempfile::tempdir().unwrap(), Arc::new(ManualClock::new(ts(T0))));
    let h = &f.holder;
    confirm_mark(h, "ann@example.com");
    confirm_mark(h, "bob@example.com");
    assert!(h.known_person("Ann@Example.com").unwrap(), "a fresh mark grants the reserved share");
    assert!(!h.known_person("carl@example.com").unwrap());
    // Bob confirms again 200 days later: his lifetime starts again.
    f.clock.advance(time::Duration::days(200));
    confirm_mark(h, "bob@example.com");
    // A second before Ann's mark's lifetime ends it still counts, and stays.
    f.clock.advance(known::MARK_LIFETIME - time::Duration::days(200) - time::Duration::seconds(1));
    assert!(h.known_person("ann@example.com").unwrap(), "within its lifetime the mark counts");
    assert_eq!(h.purge(false).unwrap().confirmed_marks, 0);
    assert!(mark(h, "ann@example.com").is_some());
    // At its end it no longer counts, and the purge deletes it (a dry run first counts it).
    f.clock.advance(time::Duration::seconds(1));
    assert!(!h.known_person("ann@example.com").unwrap(), "a lapsed mark grants nothing");
    assert_eq!(h.purge(true).unwrap().confirmed_marks, 1);
    assert!(mark(h, "ann@example.com").is_some(), "a dry run removes nothing");
    let purged = h.purge(false).unwrap();
    assert_eq!((purged.confirmed_marks, purged.total()), (1, 1));
    assert_eq!(mark(h, "ann@example.com"), None);
    assert!(mark(h, "bob@example.com").is_some(), "Bob's later confirmation keeps his mark");
    assert!(h.known_person("bob@example.com").unwrap());
}

#[test]
fn an_unreadable_mark_is_an_error_naming_it_never_lapsed_and_the_purge_leaves_it() {
    let f = holder(tempfile::tempdir().unwrap(), Arc::new(ManualClock::new(ts(T0))));
    let h = &f.holder;
    confirm_mark(h, "ann@example.com");
    let person = h.base.person_key("ann@example.com");
    let ns = crate::store::Ns::Confirmed;
    let raw = || h.base.store().read(|rx| rx.record::<serde_json::Value>(ns, &person)).unwrap();
    assert_eq!(raw(), Some(json!(Stamp::of(h.now()).micros())), "one integer of microseconds");
    h.base.store().write(|tx| tx.put_record(ns, &person, &json!("last spring"))).unwrap();
    match h.known_person("ann@example.com") {
        Err(ServiceError::Store(crate::store::StoreError::Corrupt(k, cause))) => {
            assert_eq!(k, format!("confirmed:{person}"));
            assert!(cause.starts_with("invalid type: string \"last spring\", expected i64"), "{cause}");
        }
        other => panic!("not an error naming the mark: {other:?}"),
    }
    // Past any lifetime, the purge leaves it as it was (with a warning).
    f.clock.advance(known::MARK_LIFETIME + time::Duration::days(1));
    assert_eq!(h.purge(false).unwrap().confirmed_marks, 0);
    assert_eq!(raw(), Some(json!("last spring")));
}

#[test]
fn erasing_a_persons_contact_removes_their_mark_unless_they_hold_an_active_intent() {
    let f = holder(tempfile::tempdir().unwrap(), Arc::new(ManualClock::new(ts(T0))));
    let h = &f.holder;
    let contact = h.base.keys().seal_str("buyer@example.com").unwrap();
    let (gone, kept) = ("dana@example.com", "emil@example.com");
    h.base
        .write(|tx| -> Result<()> {
            for (id, email) in [("int_dana_ended", gone), ("int_emil_ended", kept)] {
                let mut r = record(id, Status::Withdrawn);
                r.ended_at = Some(at(-time::Duration::days(31)));
                r.contact = Some(contact.clone());
                r.person = Some(h.base.person_key(email));
                tx.put_intent(&r, false)?;
            }
            let mut r = record("int_emil_active", Status::Active);
            r.contact = Some(contact.clone());
            r.person = Some(h.base.person_key(kept));
            tx.put_intent(&r, true)?;
            Ok(())
        })
        .unwrap();
    confirm_mark(h, gone);
    confirm_mark(h, kept);
    assert_eq!(h.sweep().unwrap(), 2, "both ended intents' contacts erased");
    assert!(stored(h, "int_dana_ended").contact.is_none() && stored(h, "int_emil_ended").contact.is_none());
    assert_eq!(mark(h, gone), None, "the erased person's mark is gone");
    assert!(!h.known_person(gone).unwrap());
    assert!(mark(h, kept).is_some(), "a person with another active intent keeps the mark");
}
