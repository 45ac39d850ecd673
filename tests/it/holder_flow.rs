//! The consent-link flow through the holder's operations, on a real redb file, with a
//! clock the test advances (no sleeps): PROTOCOL.md §4 and §6.

use isto::base::ServiceError;
use isto::intents::{ConfirmOutcome, ConsentOutcome};
use isto::mail::MailJob;
use isto::protocol::{Money, Status};
use isto::records::{IntentRecord, OfferInput};
use isto::state::AppState;
use isto::store::Reads;
use serde_json::{json, Value};

use crate::kit::{token_from_outbox, Fx, Opts};

fn fixture() -> Fx {
    Fx::new()
}

pub(crate) fn offer(reference: &str, title: &str, price: f64, region: &str, make: &str, model: &str) -> OfferInput {
    OfferInput {
        reference: Some(reference.into()),
        title: title.into(),
        description: String::new(),
        category: "vehicles".into(),
        attributes: json!({"make": make, "model": model}).as_object().cloned().unwrap(),
        price: Money { amount: price, currency: "EUR".into() },
        area: isto::gazetteer::resolve(region).unwrap(),
        seller_name: "Dealer".into(),
        seller_url: None,
        url: None,
        valid_until: None,
    }
}

fn publish(h: &AppState, args: Value) -> (String, String, String) {
    let r = h.intents.publish_draft(h.intents.parse_publish(&args).unwrap()).unwrap();
    let consent = r.consent_url.rsplit('/').next().unwrap().to_owned();
    (r.intent.id, r.intent_code, consent)
}

#[test]
fn full_flow_respects_hidden_limit_and_withdrawal() {
    let f = fixture();
    let h = &f.holder;
    h.catalogue
        .import_offers(vec![
            offer("a", "Škoda Octavia Combi 2.0 TDI", 9000.0, "Bratislava", "Škoda", "Octavia"),
            offer("b", "Škoda Octavia 1.6 TDI", 11500.0, "Trnava", "Škoda", "Octavia"),
            offer("c", "Škoda Octavia RS", 14000.0, "Bratislava", "Škoda", "Octavia"),
            offer("d", "Škoda Fabia", 5000.0, "Bratislava", "Škoda", "Fabia"),
            offer("e", "Škoda Octavia", 8000.0, "Košice", "Škoda", "Octavia"),
        ])
        .unwrap();
    let (id, code, consent) = publish(
        h,
        json!({"statement": "Hľadám Škoda Octavia", "criteria": {"category": "vehicles", "make": "skoda", "model": "Octavia"},
               "area": {"country": "SK", "regions": ["SK-BL", "Trnavský kraj"]}, "budget": {"max": 15000, "currency": "EUR"}, "hiddenLimit": 12000}),
    );
    // A draft is not matched.
    assert_eq!(isto::deliveries::list(&h.base, &id, None, 50).unwrap().0.len(), 0);
    assert_eq!(h.intents.get_by_code(&code, None).unwrap().status, Status::AwaitingConsent);
    assert!(h.intents.get_by_code(&code, None).unwrap().has_hidden_limit);

    assert_eq!(h.intents.give_consent(&consent, "buyer@example.com", "sk").unwrap(), ConsentOutcome::Recorded);
    assert_eq!(h.intents.give_consent(&consent, "thief@example.com", "sk").unwrap(), ConsentOutcome::Taken);
    let confirm = token_from_outbox(h, "/confirm/");
    // The confirmation mail goes only to the first address.
    let jobs: Vec<(u64, MailJob)> = h.base.store().read(|rx| rx.outbox()).unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(h.intents.confirm(&confirm).unwrap(), ConfirmOutcome::Activated);
    assert_eq!(h.intents.confirm(&confirm).unwrap(), ConfirmOutcome::AlreadyActive);

    let (matches, next) = isto::deliveries::list(&h.base, &id, None, 50).unwrap();
    let mut titles: Vec<_> = matches.iter().map(|d| d.offer.title.as_str()).collect();
    titles.sort();
    assert_eq!(titles, vec!["Škoda Octavia 1.6 TDI", "Škoda Octavia Combi 2.0 TDI"], "≤ hidden 12 000, in BL/TA");

    // First digest goes out at once; the next waits for the interval.
    assert_eq!(isto::deliveries::queue_due_digests(&h.base).unwrap(), 1);
    h.catalogue
        .import_offers(vec![offer("f", "Škoda Octavia Scout", 10000.0, "Bratislava", "Škoda", "Octavia")])
        .unwrap();
    assert_eq!(isto::deliveries::queue_due_digests(&h.base).unwrap(), 0, "interval not over");
    f.clock.advance(time::Duration::minutes(61));
    assert_eq!(isto::deliveries::queue_due_digests(&h.base).unwrap(), 1);
    let (later, _) =
        isto::deliveries::list(&h.base, &id, isto::clock::parse_rfc3339(next.as_deref().unwrap()).ok(), 50).unwrap();
    assert_eq!(later.len(), 1, "since returns only the new delivery");

    // Re-import of the same ref updates in place and is not delivered twice.
    let c = h
        .catalogue
        .import_offers(vec![offer("f", "Škoda Octavia Scout 4x4", 10000.0, "Bratislava", "Škoda", "Octavia")])
        .unwrap();
    assert_eq!((c.created, c.updated, c.delivered), (0, 1, 0));

    h.intents.withdraw_by_code(&code, Some(&id)).unwrap();
    h.intents.withdraw_by_code(&code, None).unwrap(); // idempotent
    assert_eq!(h.intents.get_by_code(&code, None).unwrap().status, Status::Withdrawn);
    let c =
        h.catalogue.import_offers(vec![offer("g", "Škoda Octavia", 7000.0, "Bratislava", "Škoda", "Octavia")]).unwrap();
    assert_eq!(c.delivered, 0);
    assert_eq!(isto::deliveries::list(&h.base, &id, None, 50).unwrap().0.len(), 3);
}

/// Publishes, consents to and confirms an intent for a Škoda Octavia in Bratislava up to
/// 12 000 EUR (hidden); returns its id.
fn octavia_intent(h: &AppState) -> String {
    let (id, _, consent) = publish(
        h,
        json!({"statement": "Hľadám Škoda Octavia", "criteria": {"category": "vehicles", "make": "skoda", "model": "Octavia"},
               "area": "SK-BL", "hiddenLimit": 12000}),
    );
    h.intents.give_consent(&consent, "buyer@example.com", "sk").unwrap();
    assert_eq!(h.intents.confirm(&token_from_outbox(h, "/confirm/")).unwrap(), ConfirmOutcome::Activated);
    id
}

/// A batch large enough to be matched on a second thread while its rows are stored
/// (catalogue::service's `Matcher`, from 128 rows) delivers exactly what the same rows in
/// smaller batches (matched inline) deliver: the same offers, each once, and the count.
#[test]
fn a_large_batch_matched_on_a_second_thread_delivers_as_small_batches_matched_inline() {
    let rows: Vec<OfferInput> = (0..300)
        .map(|i| {
            let (region, price) =
                (if i % 2 == 0 { "Bratislava" } else { "Košice" }, 8000.0 + f64::from(i % 7) * 1000.0);
            match i % 3 {
                0 => offer(&format!("r{i}"), &format!("Škoda Fabia {i}"), price, region, "Škoda", "Fabia"),
                _ => offer(&format!("r{i}"), &format!("Škoda Octavia {i}"), price, region, "Škoda", "Octavia"),
            }
        })
        .collect();
    // Octavias within the hidden limit in Bratislava.
    let want: Vec<String> = rows
        .iter()
        .filter(|r| r.title.contains("Octavia") && r.price.amount <= 12000.0 && r.area.regions == ["SK-BL"])
        .map(|r| r.title.clone())
        .collect();
    assert!(want.len() > 50, "{}", want.len());
    let delivered = |batch: usize| {
        let f = fixture();
        let h = &f.holder;
        let id = octavia_intent(h);
        let mut n = 0;
        for chunk in rows.chunks(batch) {
            n += h.catalogue.import_offers(chunk.to_vec()).unwrap().delivered;
        }
        let mut titles: Vec<String> =
            isto::deliveries::list(&h.base, &id, None, 500).unwrap().0.into_iter().map(|d| d.offer.title).collect();
        titles.sort();
        assert_eq!(n, titles.len() as u64);
        titles
    };
    let mut want = want;
    want.sort();
    assert_eq!(delivered(rows.len()), want, "one batch of {}", rows.len());
    assert_eq!(delivered(100), want, "batches of 100, matched inline");
}

/// An offer made and then updated in one batch (two rows with one reference, both
/// matching) is delivered once, as its update: the second row finds the first's
/// delivery (PROTOCOL.md §2: one per (intent, offer)); importing it again delivers
/// nothing.
#[test]
fn an_offer_made_and_updated_in_one_batch_is_delivered_once() {
    let f = fixture();
    let h = &f.holder;
    let id = octavia_intent(h);
    let row = |title: &str| offer("r1", title, 9000.0, "Bratislava", "Škoda", "Octavia");
    let c = h.catalogue.import_offers(vec![row("Škoda Octavia"), row("Škoda Octavia combi")]).unwrap();
    assert_eq!((c.created, c.updated, c.delivered), (1, 1, 1));
    let listed = isto::deliveries::list(&h.base, &id, None, 50).unwrap().0;
    assert_eq!(listed.iter().map(|d| d.offer.title.as_str()).collect::<Vec<_>>(), ["Škoda Octavia combi"]);
    let c = h.catalogue.import_offers(vec![row("Škoda Octavia combi 2.0 TDI")]).unwrap();
    assert_eq!((c.created, c.updated, c.delivered), (0, 1, 0));
    assert_eq!(isto::deliveries::list(&h.base, &id, None, 50).unwrap().0.len(), 1);
}

#[test]
fn withdrawal_drops_queued_mail() {
    let f = fixture();
    let h = &f.holder;
    let (_, code, consent) =
        publish(h, json!({"statement": "Octavia", "criteria": {"category": "vehicles"}, "area": "SK"}));
    h.intents.give_consent(&consent, "buyer@example.com", "en").unwrap();
    assert_eq!(h.base.store().read(|rx| rx.outbox::<MailJob>()).unwrap().len(), 1);
    h.intents.withdraw_by_code(&code, None).unwrap();
    assert_eq!(h.base.store().read(|rx| rx.outbox::<MailJob>()).unwrap().len(), 0);
}

#[test]
fn expired_draft_cannot_be_consented_and_the_purge_deletes_it() {
    let f = fixture();
    let h = &f.holder;
    let (id, code, consent) =
        publish(h, json!({"statement": "Octavia", "criteria": {"category": "vehicles"}, "area": "SK"}));
    f.clock.advance(time::Duration::hours(25));
    assert_eq!(h.intents.get_by_code(&code, None).unwrap().status, Status::Expired);
    assert_eq!(h.intents.give_consent(&consent, "buyer@example.com", "sk").unwrap(), ConsentOutcome::Closed);
    let stored: IntentRecord = h.base.store().read(|rx| rx.intent(&id)).unwrap().unwrap();
    assert_eq!(stored.status, Status::AwaitingConsent, "reading never writes");
    // A lapsed consent-link draft is the purge's: the sweep leaves it, the purge deletes
    // it with its code and consent link, rather than persisting `expired`.
    assert_eq!(h.intents.sweep().unwrap(), 0);
    let purged = h.intents.purge(false).unwrap();
    assert_eq!((purged.drafts, purged.draft_tokens), (1, 2));
    assert!(h.base.store().read(|rx| rx.intent::<IntentRecord>(&id)).unwrap().is_none());
    assert!(matches!(h.intents.get_by_code(&code, None), Err(isto::base::ServiceError::NotFound)));
    assert!(matches!(h.intents.consent_view(&consent), Err(isto::base::ServiceError::NotFound)));
}

#[test]
fn unconfirmed_intent_expires_after_72h_and_contact_is_erased_later() {
    let f = fixture();
    let h = &f.holder;
    let (id, code, consent) =
        publish(h, json!({"statement": "Octavia", "criteria": {"category": "vehicles"}, "area": "SK"}));
    h.intents.give_consent(&consent, "buyer@example.com", "sk").unwrap();
    let confirm = token_from_outbox(h, "/confirm/");
    f.clock.advance(time::Duration::hours(73));
    assert_eq!(h.intents.confirm(&confirm).unwrap(), ConfirmOutcome::Closed);
    assert_eq!(h.intents.get_by_code(&code, None).unwrap().status, Status::Expired);
    h.intents.sweep().unwrap();
    f.clock.advance(time::Duration::days(31));
    h.intents.sweep().unwrap();
    let stored: IntentRecord = h.base.store().read(|rx| rx.intent(&id)).unwrap().unwrap();
    assert!(stored.contact.is_none(), "contact erased after retention");
}

#[test]
fn codes_are_secret_and_ids_must_match() {
    let f = fixture();
    let h = &f.holder;
    let (_, code, _) = publish(h, json!({"statement": "Octavia", "criteria": {"category": "vehicles"}, "area": "SK"}));
    let (other_id, _, _) =
        publish(h, json!({"statement": "Fabia", "criteria": {"category": "vehicles"}, "area": "SK"}));
    assert!(code.len() >= 26, "≥128 bits");
    assert!(matches!(h.intents.get_by_code("nope-nope-nope-nope", None), Err(ServiceError::NotFound)));
    assert!(matches!(h.intents.get_by_code(&code, Some(&other_id)), Err(ServiceError::NotFound)));
    // The code is stored only as a hash.
    let raw = f.store_bytes();
    assert!(!raw.windows(code.len()).any(|w| w == code.as_bytes()));
}

#[test]
fn publish_input_errors_name_the_field() {
    let f = fixture();
    let h = &f.holder;
    let cases = [
        (json!({"area": "SK"}), "statement"),
        (json!({"statement": 5, "area": "SK"}), "statement"),
        (json!({"statement": "x".repeat(2001), "area": "SK"}), "statement"),
        (json!({"statement": "Octavia"}), "area"),
        (json!({"statement": "Octavia", "area": "Atlantis"}), "area"),
        (json!({"statement": "Octavia", "area": "SK", "email": "a@b.c"}), "email"),
        (json!({"statement": "Octavia", "area": "SK", "budget": {"max": "x"}}), "budget.max"),
        (json!({"statement": "Octavia", "area": "SK", "hiddenLimit": -3}), "hiddenLimit"),
        (json!({"statement": "Octavia", "area": "SK", "buyBy": "2020-01-01"}), "buyBy"),
        (json!({"statement": "Octavia", "area": "SK", "validUntil": "2030-01-01T00:00:00Z"}), "validUntil"),
        (json!({"statement": "Octavia", "area": "SK", "visibility": "public"}), "visibility"),
        (
            json!({"statement": "Octavia", "area": "SK", "criteria": {"category": "vehicles", "wings": 2}}),
            "criteria.wings",
        ),
    ];
    for (args, field) in cases {
        let e = h.intents.parse_publish(&args).unwrap_err().to_string();
        assert!(e.contains(field), "{args} → {e}");
    }
}

#[test]
fn full_feed_withdraws_vanished_offers_of_its_sellers_only() {
    let f = fixture();
    let h = &f.holder;
    let mut other = offer("x", "Škoda Octavia", 9000.0, "Bratislava", "Škoda", "Octavia");
    other.seller_name = "Other dealer".into();
    h.catalogue
        .import_offers(vec![
            offer("a", "Škoda Octavia A", 9000.0, "Bratislava", "Škoda", "Octavia"),
            offer("b", "Škoda Octavia B", 9000.0, "Bratislava", "Škoda", "Octavia"),
            other,
        ])
        .unwrap();
    // The dealer's next full feed has only "a" (updated) and a new "c".
    let c = h
        .catalogue
        .import_offers_run(
            vec![
                offer("a", "Škoda Octavia A2", 9000.0, "Bratislava", "Škoda", "Octavia"),
                offer("c", "Škoda Octavia C", 9000.0, "Bratislava", "Škoda", "Octavia"),
            ],
            Some("run_1"),
        )
        .unwrap();
    assert_eq!((c.created, c.updated), (1, 1));
    let gone = h.catalogue.withdraw_vanished("run_1").unwrap();
    assert_eq!(gone.len(), 1, "only b vanished; the other dealer's offer stays");
    let offers: Vec<isto::records::OfferRecord> = h.base.store().read(|rx| rx.all_offers()).unwrap();
    let active: Vec<_> = offers.iter().filter(|o| o.active).map(|o| o.offer.title.as_str()).collect();
    assert_eq!(active.len(), 3, "{active:?}");
    assert!(!active.contains(&"Škoda Octavia B"));
    // A withdrawn offer no longer matches a new intent.
    let (id, _, consent) = publish(
        h,
        json!({"statement": "Škoda Octavia", "criteria": {"category": "vehicles", "model": "Octavia"}, "area": "SK"}),
    );
    h.intents.give_consent(&consent, "buyer@example.com", "sk").unwrap();
    h.intents.confirm(&token_from_outbox(h, "/confirm/")).unwrap();
    let titles: Vec<String> =
        isto::deliveries::list(&h.base, &id, None, 50).unwrap().0.into_iter().map(|d| d.offer.title).collect();
    assert_eq!(titles.len(), 3, "{titles:?}");
    assert!(!titles.iter().any(|t| t == "Škoda Octavia B"));
}

#[test]
fn one_address_gets_a_limited_number_of_confirmation_mails() {
    let f = fixture();
    let h = &f.holder;
    let mut outcomes = Vec::new();
    for _ in 0..isto::intents::CONSENTS_PER_ADDRESS_PER_HOUR + 1 {
        let (_, _, consent) =
            publish(h, json!({"statement": "Octavia", "criteria": {"category": "vehicles"}, "area": "SK"}));
        outcomes.push(h.intents.give_consent(&consent, "Victim@Example.com", "en").unwrap());
    }
    assert!(
        matches!(outcomes.last(), Some(ConsentOutcome::Throttled(e)) if e.rule == isto::base::quota::Rule::ConsentsPerAddress),
        "{outcomes:?}"
    );
    assert_eq!(
        outcomes.iter().filter(|o| **o == ConsentOutcome::Recorded).count(),
        isto::intents::CONSENTS_PER_ADDRESS_PER_HOUR
    );
    f.clock.advance(time::Duration::minutes(61));
    let (_, _, consent) =
        publish(h, json!({"statement": "Octavia", "criteria": {"category": "vehicles"}, "area": "SK"}));
    assert_eq!(h.intents.give_consent(&consent, "victim@example.com", "en").unwrap(), ConsentOutcome::Recorded);
}

#[test]
fn engine_and_index_survive_a_restart_and_catch_up_with_offline_imports() {
    let dir = tempfile::tempdir().unwrap();
    let clock = crate::kit::clock();
    let open = |index_on_disk: bool| {
        crate::kit::open_state(dir.path(), clock.clone(), Opts { index_on_disk, ..Opts::default() })
    };
    let search = |h: &AppState, q: &str| -> Vec<String> {
        let idx = h.catalogue.offer_index().unwrap();
        isto::catalogue::search_with(&idx, &h.base, q, None, None, 20).unwrap().into_iter().map(|o| o.title).collect()
    };
    let id = {
        let h = open(true);
        h.catalogue
            .import_offers(vec![offer("a", "Škoda Octavia Combi", 9000.0, "Bratislava", "Škoda", "Octavia")])
            .unwrap();
        let (id, _, consent) = publish(
            &h,
            json!({"statement": "Škoda Octavia", "criteria": {"category": "vehicles", "model": "Octavia"}, "area": "SK-BL"}),
        );
        h.intents.give_consent(&consent, "buyer@example.com", "sk").unwrap();
        h.intents.confirm(&token_from_outbox(&h, "/confirm/")).unwrap();
        assert_eq!(
            isto::deliveries::list(&h.base, &id, None, 50).unwrap().0.len(),
            1,
            "found through the index at confirmation"
        );
        assert_eq!(search(&h, "octavia"), vec!["Škoda Octavia Combi"]);
        id
    };
    {
        // An offline import (no index open) still reaches the standing intent through
        // the engine loaded from the store.
        let h = open(false);
        assert_eq!(h.base.engine_len(), 1);
        let c = h
            .catalogue
            .import_offers(vec![offer("b", "Škoda Octavia RS", 9500.0, "Bratislava", "Škoda", "Octavia")])
            .unwrap();
        assert_eq!(c.delivered, 1);
    }
    let h = open(true);
    assert_eq!(isto::deliveries::list(&h.base, &id, None, 50).unwrap().0.len(), 2);
    let mut titles = search(&h, "octavia");
    titles.sort();
    assert_eq!(titles, vec!["Škoda Octavia Combi", "Škoda Octavia RS"], "the disk index caught up");
}
