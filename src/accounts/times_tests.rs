//! The stored times of accounts, sessions and links: one integer of unix microseconds
//! ([`Stamp`]), and a stored time that does not read is an error naming the record —
//! never an expired session, never 1970.

use super::*;
use serde_json::{json, Value};

fn raw(b: &Base, ns: Ns, key: &str) -> Value {
    b.store().read(|rx| rx.record::<Value>(ns, key)).unwrap().unwrap()
}

/// Replaces one field of a stored record, as a damaged file (or a faulty older isto)
/// would hold it.
fn damage(b: &Base, ns: Ns, key: &str, field: &str, v: Value) {
    let mut r = raw(b, ns, key);
    r[field] = v;
    b.store().write(|tx| tx.put_record(ns, key, &r)).unwrap();
}

#[test]
fn an_unreadable_session_or_account_time_is_an_error_naming_the_record_never_expired() {
    let d = tempfile::tempdir().unwrap();
    let b = crate::base::test_base(d.path());
    let now = b.clock().now();
    let id = create_seller(&b, "ann@example.com", "Ann").unwrap();
    let start = |at: OffsetDateTime| b.store().write(|tx| start_session(tx, at, &id, "link")).unwrap();
    let token = start(now);
    let key = session_key(token.expose());
    // Every time is one integer of microseconds.
    let s = raw(&b, Ns::Session, &key);
    let ttl = time::Duration::seconds(SESSION_TTL_SECS);
    assert_eq!(
        (&s["created_at"], &s["expires_at"]),
        (&json!(Stamp::of(now).micros()), &json!(Stamp::of(now + ttl).micros()))
    );
    assert_eq!(raw(&b, Ns::Account, &id)["created_at"], json!(Stamp::of(now).micros()));
    assert_eq!(session_for(&b, token.expose()).unwrap().map(|s| s.account.id), Some(id.clone()));
    // A session that ended 1 s ago, for the purge below.
    let old = session_key(start(now - ttl - time::Duration::seconds(1)).expose());

    // An unreadable end: an error that names the session, not "expired".
    damage(&b, Ns::Session, &key, "expires_at", json!("soon"));
    match session_for(&b, token.expose()) {
        Err(AccountError::Store(StoreError::Corrupt(k, cause))) => {
            assert_eq!(k, format!("session:{key}"));
            assert!(cause.contains("expected i64"), "{cause}");
        }
        other => panic!("not an error naming the session: {other:?}"),
    }
    assert!(signed_in(&b, &SessionTokens::new([token.expose().to_owned()])).is_none(), "not honoured");
    // The purge deletes the expired session and leaves the unreadable one as it is.
    let purged = b.store().write(|tx| purge_tx(tx, now)).unwrap();
    assert_eq!(purged.sessions, 1, "{purged:?}");
    assert!(b.store().read(|rx| rx.record::<Value>(Ns::Session, &old)).unwrap().is_none());
    assert_eq!(raw(&b, Ns::Session, &key)["expires_at"], json!("soon"), "kept for the operator");
    // Disabling the account still ends it (only its account id is read).
    set_disabled(&b, &id, true).unwrap();
    assert!(b.store().read(|rx| rx.record::<Value>(Ns::Session, &key)).unwrap().is_none());
    set_disabled(&b, &id, false).unwrap();

    // An unreadable account time: an error naming the account, never 1970.
    let token = start(now);
    damage(&b, Ns::Account, &id, "created_at", json!("2026-12-01T10:00:00Z"));
    match account(&b, &id) {
        Err(AccountError::Store(StoreError::Corrupt(k, _))) => assert_eq!(k, format!("account:{id}")),
        other => panic!("not an error naming the account: {other:?}"),
    }
    match session_for(&b, token.expose()) {
        Err(AccountError::Store(StoreError::Corrupt(k, _))) => assert_eq!(k, format!("account:{id}")),
        other => panic!("not an error naming the account: {other:?}"),
    }
}

#[test]
fn an_unreadable_link_time_is_refused_naming_the_link_and_not_purged() {
    let d = tempfile::tempdir().unwrap();
    let b = crate::base::test_base(d.path());
    create_seller(&b, "ann@example.com", "Ann").unwrap();
    assert_eq!(request_signin_link(&b, "ann@example.com", "/me", "en").unwrap(), MailOutcome::Queued);
    let links = b.store().read(|rx| rx.records::<Value>(Ns::SignInLink)).unwrap();
    let (key, link) = &links[0];
    let now = b.clock().now();
    assert_eq!(link["expires_at"], json!(Stamp::of(now + time::Duration::seconds(SIGNIN_LINK_TTL_SECS)).micros()));
    damage(&b, Ns::SignInLink, key, "expires_at", json!(null));
    // The throttle counter is stored in microseconds too.
    let throttles = b.store().read(|rx| rx.records::<Value>(Ns::Throttle)).unwrap();
    assert_eq!(throttles[0].1["times"], json!([Stamp::of(now).micros()]));
    // (A link record has no `Debug`: it may hold a password hash.)
    match b.store().read(|rx| rx.record::<LinkRecord>(Ns::SignInLink, key)) {
        Err(StoreError::Corrupt(k, cause)) => {
            assert_eq!(k, format!("signin:{key}"));
            assert!(cause.starts_with("invalid type: null, expected i64"), "{cause}");
        }
        Err(e) => panic!("not an error naming the link: {e}"),
        Ok(_) => panic!("an unreadable link time was read"),
    }
    let purged = b.store().write(|tx| purge_tx(tx, now + time::Duration::days(30))).unwrap();
    assert_eq!((purged.sign_in_links, purged.throttles), (0, 1), "{purged:?}");
    assert!(raw(&b, Ns::SignInLink, key)["expires_at"].is_null(), "left as it is");
}
