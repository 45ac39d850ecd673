//! The delivery cadence through the production router, on a real redb file with the kit's
//! clock: the person chooses "as they come", "daily", "weekly" or "pause" on the results
//! page (manage token) by a POST with the CSRF token, confirmed from the link of the
//! e-mail that asks them (a results link may have leaked) unless signed in as that
//! person; the digest scheduler (`deliveries::queue_due_digests`, what the mail worker
//! calls) sends by it; every mail says the cadence with the results page link;
//! `intent_list_matches` is unaffected.

use axum::http::StatusCode;
use isto::clock::Clock;
use isto::mail::MailContent;
use isto::protocol::input::ListMatches;
use isto::protocol::Money;
use isto::records::{Cadence, IntentRecord, OfferInput};
use isto::store::Reads;
use serde_json::json;
use time::Duration;

use crate::kit::Fx;

/// A Škoda Octavia offer in Bratislava (matches the test intent).
fn octavia(reference: &str) -> OfferInput {
    OfferInput {
        reference: Some(reference.into()),
        title: format!("Skoda Octavia {reference}"),
        description: String::new(),
        category: "vehicles".into(),
        attributes: json!({"make": "Škoda", "model": "Octavia"}).as_object().cloned().unwrap(),
        price: Money { amount: 9000.0, currency: "EUR".into() },
        area: isto::gazetteer::resolve("Bratislava").unwrap(),
        seller_name: "Dealer".into(),
        seller_url: None,
        url: Some(format!("https://dealer.example/{reference}")),
        valid_until: None,
    }
}

/// An active English intent for an Octavia, confirmed through the router: its id, code,
/// confirmation token and manage token.
struct Active {
    id: String,
    code: String,
    confirm: String,
    manage: String,
}

fn activate(f: &Fx) -> Active {
    let h = &f.holder;
    h.catalogue.import_offers(vec![octavia("first")]).unwrap();
    let args = json!({"statement": "I am looking for a used Skoda Octavia estate", "criteria": {"category": "vehicles", "make": "skoda", "model": "Octavia"}, "area": "SK"});
    let published = h.intents.publish_draft(h.intents.parse_publish(&args).unwrap()).unwrap();
    assert_eq!(published.intent.language, "en");
    let consent = published.consent_url.rsplit('/').next().unwrap().to_owned();
    h.intents.give_consent(&consent, "buyer@example.com", "en").unwrap();
    let confirm = f.token_from_outbox("/confirm/");
    let manage = f.token_from_outbox("/results/");
    // The confirmation mail already says the cadence and where to change it.
    let mail = f.mails().pop().unwrap();
    assert!(mail.text.contains("Once confirmed, e-mails about this request come: as they come."), "{}", mail.text);
    assert!(mail.text.contains(&format!("/results/{manage}")), "{}", mail.text);
    let page = f.get(&format!("/confirm/{confirm}"), None);
    let r = f.post(&format!("/confirm/{confirm}"), &[("csrf", &page.csrf_for(&format!("/confirm/{confirm}")))], None);
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    Active { id: published.intent.id, code: published.intent_code, confirm, manage }
}

/// The digests queued so far (newest last).
fn digests(f: &Fx) -> Vec<MailContent> {
    f.mails().into_iter().filter(|m| m.subject.starts_with("New offers")).collect()
}

/// Runs the digest scheduler once; returns how many digests it queued.
fn tick(f: &Fx) -> u64 {
    isto::deliveries::queue_due_digests(&f.holder.base).unwrap()
}

fn stored(f: &Fx, id: &str) -> IntentRecord {
    f.holder.base.store().read(|rx| rx.intent::<IntentRecord>(id)).unwrap().unwrap()
}

/// Chooses `value` on the page at `page_path` (its form posts to `action`) with the
/// page's CSRF token; returns the redirect target.
fn choose(f: &Fx, page_path: &str, action: &str, value: &str) -> String {
    let page = f.get(page_path, None);
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let r = f.post(action, &[("csrf", &page.csrf_for(action)), ("cadence", value)], None);
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    r.location().to_owned()
}

/// Chooses `value` on the results page without a session, as a stranger holding the
/// link would: nothing changes until the person follows the link of the e-mail that
/// asks them and presses its button.
fn choose_on_results(f: &Fx, a: &Active, value: &str) {
    let results = format!("/results/{}", a.manage);
    let before = stored(f, &a.id).cadence;
    let to = choose(f, &results, &format!("{results}/cadence"), value);
    assert_eq!(to, format!("{results}?sent=cadence"));
    if before.key() != value {
        assert_eq!(stored(f, &a.id).cadence, before, "changed before the person confirmed");
    }
    let to = confirm_by_mail(f, value);
    assert_eq!(to, format!("{results}?saved=cadence"));
}

/// Follows the newest cadence e-mail's link for `value` and presses its button; returns
/// the redirect target.
fn confirm_by_mail(f: &Fx, value: &str) -> String {
    let marker = format!("/cadence/{value}?k=");
    let mail = f.mails().into_iter().rev().find(|m| m.text.contains(&marker)).expect("a cadence e-mail");
    let link = mail.text.split_whitespace().find(|w| w.contains(&marker)).unwrap().to_owned();
    let path = link.strip_prefix("https://holder.example").unwrap().to_owned();
    let page = f.get(&path, None);
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let action = path.split('?').next().unwrap();
    let r = f.post(action, &[("csrf", &page.csrf_for(action))], None);
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    r.location().to_owned()
}

#[test]
fn each_cadence_paces_the_digests_over_the_clock() {
    let f = Fx::new();
    let a = activate(&f);
    // As they come (the default): the first digest at once, the next after the holder's
    // minimum interval (an hour).
    assert_eq!(stored(&f, &a.id).cadence, Cadence::AsTheyCome);
    assert_eq!(tick(&f), 1);
    let d = digests(&f).pop().unwrap();
    assert!(d.text.contains("E-mails about this request come: as they come."), "{}", d.text);
    assert!(d.text.contains("Change how often (as they come, daily, weekly, or pause) on the results page:\nhttps://holder.example/results/"), "{}", d.text);
    f.holder.catalogue.import_offers(vec![octavia("second")]).unwrap();
    f.clock.advance(Duration::minutes(59));
    assert_eq!(tick(&f), 0, "within the minimum interval");
    f.clock.advance(Duration::minutes(2));
    assert_eq!(tick(&f), 1, "an hour after the last digest");

    // Daily: at most one digest per 24 hours, counted from the last digest (choosing
    // does not reset the timer).
    choose_on_results(&f, &a, "daily");
    let page = f.get(&format!("/results/{}?saved=cadence", a.manage), None);
    assert!(page.body.contains("Saved. E-mails will come: <strong>daily"), "{}", page.body);
    assert!(page.body.contains("value=\"daily\" checked"), "{}", page.body);
    assert_eq!(stored(&f, &a.id).cadence, Cadence::Daily);
    f.holder.catalogue.import_offers(vec![octavia("third")]).unwrap();
    f.clock.advance(Duration::hours(2));
    assert_eq!(tick(&f), 0, "daily: not 2 hours after the last digest");
    f.clock.advance(Duration::hours(21));
    assert_eq!(tick(&f), 0, "daily: not 23 hours after");
    f.clock.advance(Duration::minutes(61));
    assert_eq!(tick(&f), 1, "daily: 24 hours after");
    let d = digests(&f).pop().unwrap();
    assert!(d.text.contains("come: daily (at most one e-mail in 24 hours)."), "{}", d.text);
    assert!(d.text.contains("Skoda Octavia third"));

    // Weekly, on the results page: at most one per 7 days.
    choose_on_results(&f, &a, "weekly");
    f.holder.catalogue.import_offers(vec![octavia("fourth")]).unwrap();
    f.clock.advance(Duration::days(3));
    assert_eq!(tick(&f), 0, "weekly: not 3 days after");
    f.clock.advance(Duration::days(3) + Duration::hours(23));
    assert_eq!(tick(&f), 0, "weekly: not 6 days 23 hours after");
    f.clock.advance(Duration::hours(1));
    assert_eq!(tick(&f), 1, "weekly: 7 days after");
    assert!(digests(&f).pop().unwrap().text.contains("come: weekly (at most one e-mail in 7 days)."));

    // Pause: no digest however long; the matches keep coming to the results page and
    // to intent_list_matches (pull).
    choose_on_results(&f, &a, "pause");
    let before = digests(&f).len();
    f.holder.catalogue.import_offers(vec![octavia("fifth"), octavia("sixth")]).unwrap();
    for _ in 0..3 {
        f.clock.advance(Duration::days(8));
        assert_eq!(tick(&f), 0, "paused");
    }
    assert_eq!(digests(&f).len(), before);
    let results = f.get(&format!("/results/{}", a.manage), None);
    assert!(
        results.body.contains("Skoda Octavia fifth") && results.body.contains("Skoda Octavia sixth"),
        "{}",
        results.body
    );
    assert!(results.body.contains("value=\"pause\" checked"));
    let q = ListMatches { intent_code: Some(a.code.clone()), intent: None, since: None, limit: 50 };
    let (pulled, _) = f.holder.intents.list_matches_by_code(&q).unwrap();
    assert_eq!(pulled.len(), 6, "intent_list_matches is unaffected by the pause");

    // Resume (as they come): the matches found during the pause go out at once.
    choose_on_results(&f, &a, "as_they_come");
    assert_eq!(tick(&f), 1);
    let d = digests(&f).pop().unwrap();
    assert!(d.text.contains("Skoda Octavia fifth") && d.text.contains("Skoda Octavia sixth"), "{}", d.text);
    assert!(!d.text.contains("Skoda Octavia fourth"), "already mailed");
    assert!(d.text.contains("come: as they come."));
}

#[test]
fn pausing_holds_a_digest_already_due_and_a_new_cadence_keeps_the_timer() {
    let f = Fx::new();
    let a = activate(&f);
    // The first match is due at once; pausing before the scheduler runs holds it.
    choose_on_results(&f, &a, "pause");
    assert_eq!(tick(&f), 0);
    // Weekly with no digest sent yet: the waiting matches go out at once.
    choose_on_results(&f, &a, "weekly");
    assert_eq!(tick(&f), 1);
    // Switching to "as they come" after a weekly digest: the hour counts from that digest.
    f.holder.catalogue.import_offers(vec![octavia("second")]).unwrap();
    assert_eq!(tick(&f), 0);
    f.clock.advance(Duration::minutes(30));
    choose_on_results(&f, &a, "as_they_come");
    assert_eq!(tick(&f), 0, "30 minutes after the last digest");
    f.clock.advance(Duration::minutes(31));
    assert_eq!(tick(&f), 1);
}

#[test]
fn a_change_needs_a_post_with_the_csrf_token_and_a_known_value() {
    let f = Fx::new();
    let a = activate(&f);
    let action = format!("/results/{}/cadence", a.manage);
    let before = stored(&f, &a.id);
    // A GET of the form's address changes nothing (mail scanners follow links).
    let r = f.get(&format!("{action}?cadence=pause"), None);
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    // Without the CSRF token, or with another page's: 403.
    let r = f.post(&action, &[("cadence", "pause")], None);
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert!(r.body.contains("The form expired"));
    let other = f.get(&format!("/withdraw/{}", a.manage), None).csrf_for(&format!("/withdraw/{}", a.manage));
    let r = f.post(&action, &[("csrf", &other), ("cadence", "pause")], None);
    assert_eq!(r.status, StatusCode::FORBIDDEN, "a withdraw form's token is not a cadence token");
    let confirm_csrf = f.holder.base.keys().csrf_token("cadence", &a.confirm, f.clock.now().unix_timestamp());
    let r = f.post(&action, &[("csrf", &confirm_csrf), ("cadence", "pause")], None);
    assert_eq!(r.status, StatusCode::FORBIDDEN, "bound to the page's own token");
    // An unknown or missing value: 400 naming the field.
    let csrf = f.get(&format!("/results/{}", a.manage), None).csrf_for(&action);
    for bad in [
        &[("csrf", csrf.as_str()), ("cadence", "hourly")][..],
        &[("csrf", csrf.as_str()), ("cadence", "Daily")][..],
        &[("csrf", csrf.as_str())][..],
    ] {
        let r = f.post(&action, bad, None);
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad:?}");
        assert!(r.body.contains("The field “cadence”"), "{}", r.body);
    }
    // An unknown token: 404.
    let r = f.post("/results/nope/cadence", &[("csrf", &csrf), ("cadence", "pause")], None);
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let after = stored(&f, &a.id);
    assert_eq!(after.cadence, Cadence::AsTheyCome);
    assert_eq!(after.updated_at, before.updated_at, "nothing was written");
    // The default is not written: a store read by an older isto looks as it did.
    let raw = serde_json::to_value(&after).unwrap();
    assert!(raw.get("cadence").is_none(), "{raw}");
    // A withdrawn intent's cadence cannot change: 410.
    f.holder.intents.withdraw_by_manage(&a.manage).unwrap();
    let r = f.post(&action, &[("csrf", &csrf), ("cadence", "pause")], None);
    assert_eq!(r.status, StatusCode::GONE);
    assert_eq!(stored(&f, &a.id).cadence, Cadence::AsTheyCome);
    assert!(!f.get(&format!("/results/{}", a.manage), None).body.contains(&action), "no form once ended");
}

#[test]
fn the_digest_says_the_cadence_in_the_intents_language() {
    let f = Fx::new();
    let h = &f.holder;
    h.catalogue.import_offers(vec![octavia("first")]).unwrap();
    let args = json!({"statement": "Hledám ojetou Škodu Octavia kombi", "criteria": {"category": "vehicles", "make": "skoda", "model": "Octavia"}, "area": "SK"});
    let published = h.intents.publish_draft(h.intents.parse_publish(&args).unwrap()).unwrap();
    assert_eq!(published.intent.language, "cs");
    let consent = published.consent_url.rsplit('/').next().unwrap().to_owned();
    h.intents.give_consent(&consent, "kupec@example.com", "cs").unwrap();
    let confirm = f.token_from_outbox("/confirm/");
    let page = f.get(&format!("/confirm/{confirm}"), None);
    f.post(&format!("/confirm/{confirm}"), &[("csrf", &page.csrf_for(&format!("/confirm/{confirm}")))], None);
    let manage = f.token_from_outbox("/results/");
    let results = f.get(&format!("/results/{manage}"), None);
    assert!(results.body.contains("Jak často vám mají chodit e-maily s nabídkami?"), "{}", results.body);
    let action = format!("/results/{manage}/cadence");
    let r = f.post(&action, &[("csrf", &results.csrf_for(&action)), ("cadence", "weekly")], None);
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    // The e-mail that asks the person is in the intent's language.
    let ask = f.mails().pop().unwrap();
    assert!(ask.subject.starts_with("Potvrďte změnu e-mailů o poptávce"), "{}", ask.subject);
    assert!(ask.text.contains("chodily: týdně"), "{}", ask.text);
    confirm_by_mail(&f, "weekly");
    assert_eq!(tick(&f), 1);
    let d = f.mails().pop().unwrap();
    assert!(d.text.contains("E-maily o této poptávce chodí: týdně (nejvýše jeden e-mail za 7 dní)."), "{}", d.text);
    assert!(d.text.contains("změníte na stránce výsledků:\nhttps://holder.example/results/"), "{}", d.text);
}

#[test]
fn a_signed_in_buyer_sets_the_cadence_on_the_intents_page() {
    let f = Fx::new();
    let h = &f.holder;
    h.catalogue.import_offers(vec![octavia("first")]).unwrap();
    let (account, cookie) = f.buyer("buyer@example.com");
    let args = json!({"statement": "I am looking for a used Skoda Octavia estate", "criteria": {"category": "vehicles", "make": "skoda", "model": "Octavia"}, "area": "SK"});
    let id = h.intents.publish_for(&account, h.intents.parse_publish(&args).unwrap()).unwrap().intent.id;
    let page_path = format!("/me/intents/{id}");
    let action = format!("{page_path}/cadence");
    let page = f.get(&page_path, Some(&cookie));
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("value=\"as_they_come\" checked"), "{}", page.body);
    let csrf = page.csrf_for(&action);
    // Without the session, or without the token: nothing changes.
    let r = f.post(&action, &[("csrf", &csrf), ("cadence", "weekly")], None);
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert!(r.location().starts_with("/signin"), "{}", r.location());
    assert_eq!(f.post(&action, &[("cadence", "weekly")], Some(&cookie)).status, StatusCode::FORBIDDEN);
    let r = f.post(&action, &[("csrf", &csrf), ("cadence", "sometimes")], Some(&cookie));
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.body.contains("The field “cadence”"));
    // Another account's session: the token is bound to the owner's account (403), and
    // the intent is not its own (404 for its page).
    let (_, other) = f.buyer("other@example.com");
    assert_eq!(f.post(&action, &[("csrf", &csrf), ("cadence", "weekly")], Some(&other)).status, StatusCode::FORBIDDEN);
    assert_eq!(f.get(&page_path, Some(&other)).status, StatusCode::NOT_FOUND);
    assert_eq!(stored(&f, &id).cadence, Cadence::AsTheyCome);
    // With both: 303 back to the page, which shows the choice.
    let r = f.post(&action, &[("csrf", &csrf), ("cadence", "weekly")], Some(&cookie));
    assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, format!("{page_path}?saved=cadence").as_str()));
    assert_eq!(stored(&f, &id).cadence, Cadence::Weekly);
    let page = f.get(&format!("{page_path}?saved=cadence"), Some(&cookie));
    assert!(page.body.contains("value=\"weekly\" checked"), "{}", page.body);
    assert!(page.body.contains("Saved. E-mails will come: <strong>weekly"), "{}", page.body);
}

#[test]
fn the_person_signed_in_changes_the_cadence_at_once_and_another_account_is_asked_by_mail() {
    let f = Fx::new();
    let a = activate(&f);
    let results = format!("/results/{}", a.manage);
    let action = format!("{results}/cadence");
    // Signed in as someone else: the person is asked by e-mail, nothing changes.
    let (_, other) = f.buyer("other@example.com");
    let csrf = f.get(&results, Some(&other)).csrf_for(&action);
    let r = f.post(&action, &[("csrf", &csrf), ("cadence", "pause")], Some(&other));
    assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, format!("{results}?sent=cadence").as_str()));
    assert_eq!(stored(&f, &a.id).cadence, Cadence::AsTheyCome);
    // Signed in as the person (an account of the intent's address): at once.
    let (_, mine) = f.buyer("buyer@example.com");
    let r = f.post(&action, &[("csrf", &csrf), ("cadence", "pause")], Some(&mine));
    assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, format!("{results}?saved=cadence").as_str()));
    assert_eq!(stored(&f, &a.id).cadence, Cadence::Pause);
}
