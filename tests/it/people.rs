//! Distinct people (PROTOCOL.md §3 "Limits", §5): the demand threshold k counts people —
//! verified e-mail addresses, folded (case, `+tag`, Gmail dots), and accounts, an account
//! being one person with its address's consent-link intents — not intents; and a person
//! holds at most `quotas.active_intents_per_person` active intents, refused with a clear
//! answer on every path where an intent becomes active (`/mcp/buyer` publish, the consent
//! page, the confirmation POST, a renewal), with nothing written.

use crate::kit::buyer_grant;
use crate::kit::{Fx, Opts};
use axum::http::{header, StatusCode};
use isto::base::ServiceError;
use isto::config::Quotas;
use isto::demand::{Cell, DemandAnswer};
use isto::intents::{ConfirmOutcome, ConsentOutcome};
use isto::protocol::Status;
use isto::records::IntentRecord;
use isto::state::AppState;
use isto::store::Reads;
use serde_json::{json, Value};

fn fx(k: u32, cap: u32) -> Fx {
    Fx::with(Opts {
        demand_k: Some(k),
        quotas: Some(Quotas { active_intents_per_person: cap, ..Quotas::default() }),
        ..Opts::default()
    })
}

/// A vehicles intent in SK-BL with a visible budget of 12 000 EUR.
fn args(pseudonymous: bool) -> Value {
    let visibility = if pseudonymous { "pseudonymous" } else { "private" };
    json!({"statement": "Looking for a used car", "criteria": {"category": "vehicles"}, "area": "SK-BL",
           "budget": 12000, "visibility": visibility})
}

fn the_cell() -> Cell {
    Cell { area: "SK-BL".into(), budget_band: "10000-20000".into(), buy_by_band: "none".into() }
}

/// A consent-link draft: (id, intentCode, consent token).
fn draft(h: &AppState, a: Value) -> (String, String, String) {
    let r = h.intents.publish_draft(h.intents.parse_publish(&a).unwrap()).unwrap();
    (r.intent.id, r.intent_code, r.consent_url.rsplit('/').next().unwrap().to_owned())
}

/// Publish, consent with `email`, confirm: an active consent-link intent's (id, code).
fn active(h: &AppState, email: &str, pseudonymous: bool) -> (String, String) {
    let (id, code, consent) = draft(h, args(pseudonymous));
    assert_eq!(h.intents.give_consent(&consent, email, "en").unwrap(), ConsentOutcome::Recorded);
    let confirm = crate::kit::token_from_outbox(h, "/confirm/");
    assert_eq!(h.intents.confirm(&confirm).unwrap(), ConfirmOutcome::Activated);
    (id, code)
}

/// A `/mcp/buyer` tool call: (isError, structuredContent or the error text).
fn buyer_call(h: &AppState, account: &str, tool: &str, a: Value) -> (bool, Value) {
    let r = crate::kit::mcp_call_as(h, isto::mcp::Endpoint::Buyer, Some(&buyer_grant(account)), tool, &a)
        .expect("known tool");
    let v = serde_json::to_value(&r).unwrap();
    if v["isError"].as_bool().unwrap_or(false) {
        (true, v["content"][0]["text"].clone())
    } else {
        (false, v["structuredContent"].clone())
    }
}

/// `intent_publish_intent` on `/mcp/buyer`; the new intent's id.
fn publish_owned(h: &AppState, account: &str, a: Value) -> String {
    let (err, out) = buyer_call(h, account, "intent_publish_intent", a);
    assert!(!err, "{out}");
    assert_eq!(out["intent"]["status"], "active", "{out}");
    out["intent"]["id"].as_str().unwrap().to_owned()
}

/// The `intent_demand_summary` answer for the cell on `/mcp`, checked against
/// `demand::summary` and the heat map (every place k applies answers alike).
fn demand(h: &AppState) -> Value {
    let r = crate::kit::mcp_call(h, "intent_demand_summary", &json!({"category": "vehicles", "cell": the_cell()}))
        .expect("known tool");
    let v = serde_json::to_value(&r).unwrap();
    assert_ne!(v["isError"], true, "{v}");
    let out = v["structuredContent"].clone();
    let direct = isto::demand::summary(&h.base, "vehicles", &the_cell()).unwrap();
    let map = isto::demand::heat_map(&h.base, "vehicles").unwrap();
    let in_map = map.cells.iter().find(|(c, _)| *c == the_cell()).unwrap().1;
    match direct {
        DemandAnswer::Summary(s) => {
            assert_eq!(out["activeIntents"], s.counts.active_intents);
            assert_eq!(in_map.map(|c| c.active_intents), Some(s.counts.active_intents), "the heat map shows it too");
        }
        DemandAnswer::Withheld(_) => {
            assert_eq!(out, json!({"withheld": true, "reason": "below_threshold"}));
            assert!(in_map.is_none(), "the heat map withholds it too");
        }
    }
    out
}

fn withheld() -> Value {
    json!({"withheld": true, "reason": "below_threshold"})
}

fn stored(h: &AppState, id: &str) -> IntentRecord {
    h.base.store().read(|rx| rx.intent(id)).unwrap().unwrap()
}

fn intent_count(h: &AppState) -> usize {
    h.base.store().read(|rx| rx.all_intents::<Value>()).unwrap().len()
}

#[test]
fn four_intents_of_one_address_and_one_real_intent_stay_withheld() {
    let f = fx(5, 20);
    let h = &f.holder;
    for _ in 0..4 {
        active(h, "sybil@example.com", false);
    }
    active(h, "real@example.com", true);
    assert_eq!(demand(h), withheld(), "5 intents, 2 people: no numbers at all, `pseudonymous: 1` included");
    // Three more people make five: the cell is shown, and still counts intents.
    for p in ["p3@example.com", "p4@example.com", "p5@example.com"] {
        active(h, p, false);
    }
    let out = demand(h);
    // The sub-counts are null: one person's pseudonymous intent, and no one's old ones,
    // are parts of fewer than k people.
    assert_eq!((out["activeIntents"].clone(), out["pseudonymous"].clone()), (json!(8), Value::Null), "{out}");
    assert_eq!(out["newLast7Days"], Value::Null);
}

#[test]
fn plus_tags_case_and_gmail_dots_are_one_person() {
    let f = fx(5, 20);
    let h = &f.holder;
    for email in ["ann+1@example.com", "Ann+2@Example.com", "ANN@example.com", "ann+shop@example.com"] {
        active(h, email, false);
    }
    active(h, "real@example.com", true);
    assert_eq!(demand(h), withheld(), "ann with tags and in any case is one person");
    for email in ["c.a.t@gmail.com", "cat+x@googlemail.com", "C.at@Gmail.com"] {
        active(h, email, false);
    }
    assert_eq!(demand(h), withheld(), "8 intents, 3 people (Gmail ignores dots)");
    // Dots elsewhere are significant: two more people.
    active(h, "d.o.g@example.com", false);
    assert_eq!(demand(h), withheld(), "4 people");
    active(h, "dog@example.com", false);
    assert_eq!(demand(h)["activeIntents"], 10, "5 people");
}

#[test]
fn one_accounts_intents_and_its_addresss_consent_link_intents_are_one_person() {
    let f = fx(5, 20);
    let h = &f.holder;
    let (acc, _) = f.buyer("dan@example.com");
    for _ in 0..4 {
        publish_owned(h, &acc, args(false));
    }
    active(h, "real@example.com", true);
    assert_eq!(demand(h), withheld(), "4 account intents + 1 real");
    // The account's own address (any tag) on consent links: still the same person.
    active(h, "dan+x@example.com", false);
    active(h, "Dan@example.com", false);
    assert_eq!(demand(h), withheld(), "7 intents, 2 people");
    // Another account is another person; with two more addresses, five.
    let (other, _) = f.buyer("eve@example.com");
    publish_owned(h, &other, args(true));
    active(h, "p4@example.com", false);
    assert_eq!(demand(h), withheld(), "4 people");
    active(h, "p5@example.com", false);
    let out = demand(h);
    assert_eq!((out["activeIntents"].clone(), out["pseudonymous"].clone()), (json!(10), Value::Null), "{out}");
}

#[test]
fn the_person_key_is_stored_and_never_the_address() {
    let f = fx(5, 20);
    let h = &f.holder;
    let (a, _) = active(h, "ann+1@example.com", false);
    let (b, _) = active(h, "ann+2@example.com", false);
    let (ra, rb) = (stored(h, &a), stored(h, &b));
    let key = ra.person.clone().unwrap();
    assert!(key.starts_with("per_") && !key.contains("ann") && !key.contains("example"), "{key}");
    assert_eq!(rb.person, Some(key));
    let (acc, _) = f.buyer("ann@example.com");
    let c = publish_owned(h, &acc, args(false));
    assert_eq!(stored(h, &c).person, ra.person, "the account's address is the same person");
}

#[test]
fn the_cap_on_mcp_buyer_publish_is_20_by_default_and_names_the_setting() {
    let f = Fx::new();
    let h = &f.holder;
    assert_eq!(h.base.settings().quotas.active_intents_per_person, 20);
    let (acc, _) = f.buyer("busy@example.com");
    let mut ids = Vec::new();
    for _ in 0..20 {
        ids.push(publish_owned(h, &acc, args(false)));
    }
    let before = intent_count(h);
    let (err, text) = buyer_call(h, &acc, "intent_publish_intent", args(false));
    assert!(err, "{text}");
    let text = text.as_str().unwrap();
    assert!(text.contains("quotas.active_intents_per_person = 20"), "{text}");
    assert!(text.contains("already holds 20 active intents") && text.contains("withdraw one"), "{text}");
    let key = stored(h, &ids[0]).person.unwrap();
    assert!(!text.contains("busy") && !text.contains("example.com") && !text.contains(&key), "{text}");
    assert_eq!(intent_count(h), before, "nothing written");
    // The same person's consent-link intents count too: the address's confirmation is
    // refused (here through the service; the page tests are below).
    let (_, _, consent) = draft(h, args(false));
    assert_eq!(h.intents.give_consent(&consent, "Busy+x@example.com", "en").unwrap(), ConsentOutcome::Recorded);
    let e = h.intents.confirm(&f.token_from_outbox("/confirm/")).unwrap_err();
    assert!(matches!(e, ServiceError::PersonCap { limit: 20 }), "{e}");
    // Withdrawing one makes room for exactly one.
    let (err, out) = buyer_call(h, &acc, "intent_withdraw_intent", json!({"id": ids[0]}));
    assert!(!err, "{out}");
    publish_owned(h, &acc, args(false));
    assert!(buyer_call(h, &acc, "intent_publish_intent", args(false)).0);
}

#[test]
fn an_account_without_consent_at_the_cap_gets_no_draft_either() {
    let f = fx(5, 1);
    let h = &f.holder;
    let (acc, _) = f.buyer("full@example.com");
    publish_owned(h, &acc, args(false));
    // The consent text changes: the account's next publish would be a draft, which could
    // only become a second active intent; refused at once.
    let mut a = isto::accounts::account(&h.base, &acc).unwrap().unwrap();
    a.consent_version = Some("stale".into());
    h.base.store().write(|tx| tx.put_record(isto::store::Ns::Account, &acc, &a)).unwrap();
    let before = intent_count(h);
    let (err, text) = buyer_call(h, &acc, "intent_publish_intent", args(false));
    assert!(err && text.as_str().unwrap().contains("quotas.active_intents_per_person = 1"), "{text}");
    assert_eq!(intent_count(h), before);
}

/// The consent page of a draft submitted with `email`: (intent id, response).
fn consent_page(f: &Fx, email: &str) -> (String, crate::kit::Resp) {
    let (id, _, token) = draft(&f.holder, args(false));
    let path = format!("/consent/{token}");
    let page = f.get(&path, None);
    let csrf = page.csrf_for(&path);
    let r = f.post(&path, &[("csrf", &csrf), ("email", email), ("accept", "yes"), ("lang", "en")], None);
    (id, r)
}

fn confirm_page(f: &Fx, token: &str) -> crate::kit::Resp {
    let path = format!("/confirm/{token}");
    let page = f.get(&path, None);
    let csrf = page.csrf_for(&path);
    f.post(&path, &[("csrf", &csrf)], None)
}

const CAP_TEXT: &str = "already has 2 active requests, the most one person can have here";

/// The consent page answers an address at the cap exactly as any other (no oracle for
/// whoever types an address, the tester's finding); the confirmation, which only the
/// mailbox's owner reaches, refuses it and activates nothing.
#[test]
fn the_consent_page_answers_alike_at_the_cap_and_the_confirmation_refuses() {
    let f = fx(5, 2);
    let h = &f.holder;
    active(h, "gil@example.com", false);
    active(h, "gil+2@example.com", false);
    let mails = f.mails().len();
    let (id, r) = consent_page(&f, "Gil+3@example.com");
    let gil_token = f.token_from_outbox("/confirm/");
    let (_, fresh) = consent_page(&f, "hal@example.com");
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(fresh.status, StatusCode::SEE_OTHER, "{}", fresh.body);
    let location = |r: &crate::kit::Resp| r.headers.get(header::LOCATION).unwrap().to_str().unwrap().to_owned();
    // `/consent/<the draft's token>/…`: the same but for the token.
    let shape =
        |l: String| l.split('/').enumerate().map(|(i, p)| if i == 2 { "T" } else { p }).collect::<Vec<_>>().join("/");
    assert_eq!(shape(location(&r)), shape(location(&fresh)), "one answer for both addresses");
    assert_eq!(f.mails().len(), mails + 2, "a confirmation e-mail to each mailbox");
    assert_eq!(stored(h, &id).status, Status::AwaitingEmailConfirmation);
    let r = confirm_page(&f, &gil_token);
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert!(r.body.contains("Too many active requests") && r.body.contains(CAP_TEXT), "{}", r.body);
    assert!(r.body.contains("Withdraw one of them"), "{}", r.body);
    assert!(!r.body.contains("gil") && !r.body.contains("Gil"), "the page never repeats an address");
    let rec = stored(h, &id);
    assert_eq!(rec.status, Status::AwaitingEmailConfirmation, "not activated");
    assert!(!h.base.store().read(|rx| rx.active_ids()).unwrap().contains(&id));
}

#[test]
fn the_confirmation_post_refuses_a_person_at_the_cap_and_writes_nothing() {
    let f = fx(5, 2);
    let h = &f.holder;
    // Three consents while none is active; then three confirmations.
    let mut confirms = Vec::new();
    for email in ["ivy@example.com", "ivy+b@example.com", "IVY+c@example.com"] {
        let (id, r) = consent_page(&f, email);
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
        confirms.push((id, f.token_from_outbox("/confirm/")));
    }
    for (_, token) in &confirms[..2] {
        let r = confirm_page(&f, token);
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    }
    let (third, token) = &confirms[2];
    let mails = f.mails().len();
    let r = confirm_page(&f, token);
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert!(r.body.contains("Too many active requests") && r.body.contains(CAP_TEXT), "{}", r.body);
    assert_eq!(stored(h, third).status, Status::AwaitingEmailConfirmation, "not activated");
    assert!(!h.base.store().read(|rx| rx.active_ids()).unwrap().contains(third));
    assert_eq!(f.mails().len(), mails);
    // The GET page still offers the Confirm button; after a withdrawal the POST works.
    assert_eq!(f.get(&format!("/confirm/{token}"), None).status, StatusCode::OK);
    h.intents.withdraw_by_manage(&manage_token_of(&f, &confirms[0].0)).unwrap();
    let r = confirm_page(&f, token);
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(stored(h, third).status, Status::Active);
}

/// The withdraw (manage) token of the confirmation e-mail of intent `id`.
fn manage_token_of(f: &Fx, id: &str) -> String {
    let h = &f.holder;
    let jobs: Vec<(u64, isto::mail::MailJob)> = h.base.store().read(|rx| rx.outbox()).unwrap();
    for (_, j) in jobs {
        if j.intent_id.as_deref() != Some(id) {
            continue;
        }
        let m: isto::mail::MailContent = serde_json::from_slice(&h.base.keys().open(&j.sealed).unwrap()).unwrap();
        if let Some(i) = m.text.find("/withdraw/") {
            return m.text[i + "/withdraw/".len()..].split_whitespace().next().unwrap().to_owned();
        }
    }
    panic!("no withdraw link for {id}");
}

#[test]
fn renewing_an_expired_intent_at_the_cap_is_refused_and_can_be_retried() {
    let f = fx(5, 2);
    let h = &f.holder;
    let (acc, cookie) = f.buyer("jo@example.com");
    let mut short = args(false);
    short["validUntil"] = json!("2026-12-03T10:00:00Z");
    let x = publish_owned(h, &acc, short);
    let y = publish_owned(h, &acc, args(false));
    f.clock.advance(time::Duration::days(3));
    // x expired (not yet swept): it no longer counts, so z fits.
    publish_owned(h, &acc, args(false));
    let (err, out) =
        buyer_call(h, &acc, "intent_update_intent", json!({"id": x, "validUntil": "2027-01-31T00:00:00Z"}));
    assert!(!err, "{out}");
    let token = out["renewUrl"].as_str().unwrap().rsplit('/').next().unwrap().to_owned();
    let e = h.intents.renew(&acc, &token).unwrap_err();
    assert!(matches!(e, ServiceError::PersonCap { limit: 2 }), "{e}");
    assert_eq!(stored(h, &x).status, Status::Active, "stored as before (the sweep has not run)");
    assert_eq!(h.intents.get_owned(&acc, &x).unwrap().status, Status::Expired, "still expired");
    // The renewal page says why; the token is not used up.
    let path = format!("/renew/{token}");
    let page = f.get(&path, Some(&cookie));
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let csrf = page.csrf_for(&path);
    let r = f.post(&path, &[("csrf", &csrf)], Some(&cookie));
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert!(r.body.contains(CAP_TEXT), "{}", r.body);
    // After a withdrawal the same renewal goes through.
    assert!(!buyer_call(h, &acc, "intent_withdraw_intent", json!({"id": y})).0);
    let i = h.intents.renew(&acc, &token).unwrap();
    assert_eq!(i.status, Status::Active);
}

#[test]
fn active_intents_stored_before_person_keys_get_them_at_start() {
    let f = fx(2, 20);
    let (a, _) = active(&f.holder, "old@example.com", false);
    let (b, _) = active(&f.holder, "old+2@example.com", false);
    // As an older isto stored them: no person key, no index rows, and no record of the
    // start-up pass (which the first start recorded).
    let forgot = f.holder.base.store().write(|tx| tx.forget_pass(isto::state::PERSON_KEYS.name)).unwrap();
    assert!(forgot, "the first start recorded the pass");
    for id in [&a, &b] {
        let mut rec = stored(&f.holder, id);
        rec.person = None;
        f.holder
            .base
            .store()
            .write(|tx| -> Result<(), isto::store::StoreError> {
                tx.put_intent(&isto::store::IntentKey::for_tests(), id, &rec, true, isto::base::sweep_due(&rec))?;
                tx.set_intent_person(id, None)
            })
            .unwrap();
    }
    let f = f.restart();
    let h = &f.holder;
    let key = stored(h, &a).person.unwrap();
    assert_eq!(stored(h, &b).person.as_deref(), Some(key.as_str()));
    assert_eq!(h.base.store().read(|rx| rx.person_active(&key, 0, "", 10)).unwrap(), 2);
    assert_eq!(demand(h), withheld(), "k = 2, one person");
}

#[test]
fn the_start_up_passes_run_once_and_later_starts_do_not_scan() {
    let f = fx(2, 20);
    // A new store's first start ran every pass and recorded it, by this version.
    for p in isto::state::PASSES {
        let by = f.holder.base.store().read(|rx| rx.pass_done(p.name)).unwrap();
        assert_eq!(by.as_deref(), Some(isto::store::ISTO_VERSION), "{}", p.name);
    }
    assert!(isto::state::pending_passes(f.holder.base.store()).unwrap().is_empty());
    let (a, _) = active(&f.holder, "once@example.com", false);
    let mut rec = stored(&f.holder, &a);
    rec.person = None;
    f.holder
        .base
        .store()
        .write(|tx| -> Result<(), isto::store::StoreError> {
            tx.put_intent(&isto::store::IntentKey::for_tests(), &a, &rec, true, isto::base::sweep_due(&rec))?;
            tx.set_intent_person(&a, None)
        })
        .unwrap();
    // A later start does not scan: the intent without a person key stays so.
    let f = f.restart();
    assert_eq!(stored(&f.holder, &a).person, None, "the pass did not run again");
    // Forgotten (as on a store written before the record), the next start runs it once.
    assert!(f.holder.base.store().write(|tx| tx.forget_pass(isto::state::PERSON_KEYS.name)).unwrap());
    assert_eq!(isto::state::pending_passes(f.holder.base.store()).unwrap(), vec![isto::state::PERSON_KEYS]);
    let f = f.restart();
    assert!(stored(&f.holder, &a).person.is_some());
    assert!(isto::state::pending_passes(f.holder.base.store()).unwrap().is_empty());
}

#[test]
fn racing_publishes_never_overshoot_the_cap() {
    let f = fx(5, 3);
    let h = &f.holder;
    let (acc, _) = f.buyer("race@example.com");
    let results: Vec<bool> = std::thread::scope(|s| {
        let calls: Vec<_> =
            (0..8).map(|_| s.spawn(|| buyer_call(h, &acc, "intent_publish_intent", args(false)).0)).collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    assert_eq!(results.iter().filter(|err| !**err).count(), 3, "{results:?}");
    let active = h.base.store().read(|rx| rx.active_ids()).unwrap().len();
    assert_eq!((active, intent_count(h)), (3, 3), "the refused calls wrote nothing");
    // On redb the publishes were intent-write batches (several in one, when they met):
    // the three accepted ones were committed in them, the refused ones in none. PostgreSQL
    // commits each durably by itself, without batches.
    let b = h.base.batch_stats();
    if crate::kit::backend_is_postgres() {
        assert_eq!(b, isto::base::BatchStats::default(), "no batches on PostgreSQL");
    } else {
        assert_eq!(b.writes, 3, "{b:?}");
        assert!((1..=3).contains(&b.batches), "{b:?}");
    }
}
