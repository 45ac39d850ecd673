//! The intent model's failures are errors, never defaults: a stored time that cannot be
//! read neither erases a contact, nor deletes a draft, nor lists as 1970; a value that
//! cannot be written removes nothing. Tokens an older isto stored keep opening their
//! intent.

use super::sweep_tests::{at, holder, record, T0};
use super::*;
use crate::clock::ManualClock;
use crate::protocol::Budget;
use crate::store::{IntentDue, StoreError};
use serde_json::json;

/// Replaces `field` of the stored intent `id` with `value`, its index rows as they
/// were (as a damaged file or a foreign writer would leave it).
fn damage(h: &Intents, id: &str, field: &str, value: serde_json::Value) {
    h.base
        .store()
        .write(|tx| -> std::result::Result<(), StoreError> {
            let mut v: serde_json::Value = tx.intent(id)?.unwrap_or_default();
            v[field] = value;
            let due = tx.intent_due(id)?.unwrap_or_default();
            let active = tx.active_ids()?.iter().any(|a| a == id);
            tx.put_intent(&crate::store::IntentKey::for_tests(), id, &v, active, due)
        })
        .unwrap();
}

/// The stored record as JSON (whatever it holds).
fn raw(h: &Intents, id: &str) -> serde_json::Value {
    h.base.store().read(|rx| rx.intent::<serde_json::Value>(id)).unwrap().unwrap_or_default()
}

#[test]
fn a_record_with_an_unreadable_time_keeps_its_contact_and_draft_and_does_not_list_as_1970() {
    let f = holder(tempfile::tempdir().unwrap(), Arc::new(ManualClock::new(clock::parse_rfc3339(T0).unwrap())));
    let h = &f.holder;
    let contact = h.base.keys().seal_str("buyer@example.com").unwrap();
    // Ended two days ago: its contact stays for the retention period (30 days).
    let mut ended = record("int_ended", Status::Withdrawn);
    ended.ended_at = Some(at(-time::Duration::days(2)));
    ended.contact = Some(contact.clone());
    // A consent-link draft with a day left.
    let mut draft = record("int_draft", Status::AwaitingConsent);
    draft.draft_expires_at = at(time::Duration::days(1));
    // An account's active intent, on its "my intents" list.
    let mut listed = record("int_listed", Status::Active);
    listed.owner = Some("acc_owner".into());
    listed.contact = Some(contact);
    h.base
        .write(|tx| -> Result<()> {
            for r in [&ended, &draft, &listed] {
                tx.put_intent(r, r.status == Status::Active)?;
            }
            Ok(())
        })
        .unwrap();
    damage(h, "int_ended", "ended_at", json!("not a time"));
    damage(h, "int_draft", "draft_expires_at", json!("not a time"));
    damage(h, "int_listed", "created_at", json!("not a time"));
    // Due now in both indexes, as a migration enters every intent: the sweep and the
    // purge read them.
    h.base
        .store()
        .write(|tx| {
            for id in ["int_ended", "int_draft", "int_listed"] {
                tx.set_intent_due(id, IntentDue { status_change: Some(0), contact_ended: Some(0) })?;
            }
            Ok::<_, StoreError>(())
        })
        .unwrap();

    let purged = h.purge(false).unwrap();
    assert_eq!(purged.drafts, 0, "a draft whose deadline cannot be read is not deleted");
    h.sweep().unwrap();
    assert!(raw(h, "int_draft").is_object(), "the draft is still stored");
    assert!(raw(h, "int_ended")["contact"].is_object(), "the contact is kept: {}", raw(h, "int_ended"));
    assert_eq!(raw(h, "int_ended")["status"], "withdrawn");

    // Listing: an error that names the record, never an intent created in 1970.
    match h.owned_intents("acc_owner") {
        Err(ServiceError::Store(StoreError::Corrupt(key, cause))) => {
            assert_eq!(key, "int_listed");
            assert!(cause.contains("expected i64"), "{cause}");
        }
        Err(e) => panic!("another error: {e}"),
        Ok(list) => panic!("listed: {:?}", list.iter().map(|i| &i.created_at).collect::<Vec<_>>()),
    }
}

#[test]
fn an_intent_value_that_cannot_be_stored_is_an_error_and_removes_nothing() {
    let f = holder(tempfile::tempdir().unwrap(), Arc::new(ManualClock::new(clock::parse_rfc3339(T0).unwrap())));
    let h = &f.holder;
    let mut rec = record("int_budget", Status::Active);
    rec.owner = Some("acc_owner".into());
    rec.budget = Some(Budget { max: Some(20_000.0), min: Some(5_000.0), currency: "EUR".into() });
    h.base.write(|tx| tx.put_intent(&rec, true)).unwrap();
    // JSON has no NaN nor infinity: such a value must not be written as `null`, which
    // reads back as "no maximum".
    for bad in [f64::NAN, f64::INFINITY] {
        let mut changed = rec.clone();
        changed.budget = Some(Budget { max: Some(bad), min: Some(5_000.0), currency: "EUR".into() });
        let e = h.base.write(|tx| tx.put_intent(&changed, true)).unwrap_err();
        assert!(matches!(e, ServiceError::Store(StoreError::Encode(ref t, _)) if t == "intents"), "{e}");
        assert!(e.to_string().contains("budget.max must be a finite number"), "{e}");
        let stored = raw(h, "int_budget");
        assert_eq!(stored["budget"], json!({"max": 20000.0, "min": 5000.0, "currency": "EUR"}), "{bad}");
    }
    // The typed update refuses it before any write, naming the field.
    for (changes, field) in [
        (
            IntentChanges {
                budget: Change::Set(Budget { max: Some(f64::NAN), min: None, currency: "EUR".into() }),
                ..Default::default()
            },
            "budget.max",
        ),
        (IntentChanges { hidden_limit: Change::Set(f64::INFINITY), ..Default::default() }, "hiddenLimit"),
    ] {
        let e = h.update_owned_with("acc_owner", "int_budget", &changes).unwrap_err();
        assert!(matches!(e, ServiceError::Input(_)), "{e}");
        assert!(e.to_string().starts_with(field), "{e}");
        assert_eq!(raw(h, "int_budget")["budget"]["max"], json!(20000.0));
        assert!(raw(h, "int_budget")["hidden_limit"].is_null());
    }
}

#[test]
fn codes_begin_with_their_intent_and_codes_stored_by_an_older_isto_still_work() {
    let f = holder(tempfile::tempdir().unwrap(), Arc::new(ManualClock::new(clock::parse_rfc3339(T0).unwrap())));
    let h = &f.holder;
    let args = json!({"statement": "Škoda Octavia combi", "criteria": {"category": "vehicles"}, "area": "SK"});
    let made = h.publish_draft(h.parse_publish(&args).unwrap()).unwrap();
    let id = made.intent.id.clone();
    assert_eq!(&made.intent_code[..26], &id[4..], "{}", made.intent_code);
    assert_eq!(h.get_by_code(&made.intent_code, Some(&id)).unwrap().id, id);
    let consent = made.consent_url.rsplit('/').next().unwrap();
    assert_eq!(h.consent_view(consent).unwrap().intent.id, id);
    // A code as an older isto made and stored it: 27 characters, under its plain hash.
    let old = crypto::new_token(crypto::TOKEN_BYTES);
    h.base.store().write(|tx| tx.put_token(&crypto::token_hash("code", old.expose()), &id)).unwrap();
    assert_eq!(h.get_by_code(old.expose(), Some(&id)).unwrap().id, id);
    // One character of the secret or of the id changed, or a code used as another kind:
    // nothing found.
    let code = &made.intent_code;
    let last = if code.ends_with('A') { "B" } else { "A" };
    let first = if code.starts_with('a') { "b" } else { "a" };
    for bad in [format!("{}{last}", &code[..52]), format!("{first}{}", &code[1..])] {
        assert!(matches!(h.get_by_code(&bad, None), Err(ServiceError::NotFound)), "{bad}");
    }
    assert!(matches!(h.consent_view(code), Err(ServiceError::NotFound)));
}
