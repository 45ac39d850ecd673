//! Quotas on unauthenticated writes and the purge, in-process over the production router
//! with client addresses set as `serve_http` sets them (`ConnectInfo`): over a quota the
//! answer names the rule and when to retry, nothing is written, and other addresses are
//! unaffected; the purge removes exactly what a dry run counted and keeps what must stay.

use crate::kit::{Fx, Opts};
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, Method, Request, StatusCode};
use isto::base::quota::Rule;
use isto::config::Quotas;
use isto::intents::{ConfirmOutcome, ConsentOutcome};
use isto::net::ClientAddr;
use isto::store::{Ns, Reads};
use serde_json::{json, Value};
use std::net::SocketAddr;

const A: &str = "192.0.2.1:5000";
const B: &str = "198.51.100.7:5000";

fn fx(q: Quotas) -> Fx {
    Fx::with(Opts { quotas: Some(q), ..Opts::default() })
}

fn peer(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn client(s: &str) -> ClientAddr {
    ClientAddr(Some(peer(s).ip()))
}

fn octavia() -> Value {
    json!({"statement": "Škoda Octavia combi", "criteria": {"category": "vehicles"}, "area": "SK"})
}

fn intents(f: &Fx) -> usize {
    f.holder.base.store().read(|rx| rx.all_intents::<Value>()).unwrap().len()
}

/// `intent_publish_intent` on `/mcp` from `from`: the tool result as JSON.
fn publish(f: &Fx, from: &str) -> Value {
    publish_with(f, from, &octavia())
}

/// `intent_publish_intent` with `args` on `/mcp` from `from`: the tool result as JSON.
fn publish_with(f: &Fx, from: &str, args: &Value) -> Value {
    let public = isto::mcp::Endpoint::Public;
    let r = isto::mcp::dispatch(&f.holder, public, None, client(from), "intent_publish_intent", args).unwrap();
    serde_json::to_value(r).unwrap()
}

/// A request from `from` (as `serve_http` marks a connection's peer).
fn from(f: &Fx, from: &str, b: axum::http::request::Builder, body: Body) -> crate::kit::Resp {
    f.send(b.extension(ConnectInfo(peer(from))).body(body).unwrap())
}

#[test]
fn drafts_stop_at_the_per_address_quota_with_the_rule_and_nothing_written() {
    let f = fx(Quotas { drafts_per_client_per_hour: 3, ..Quotas::default() });
    for _ in 0..3 {
        let r = publish(&f, A);
        assert_ne!(r["isError"], true, "{r}");
        assert!(r["structuredContent"]["consentUrl"].is_string());
    }
    let before = intents(&f);
    let r = publish(&f, A);
    assert_eq!(r["isError"], true, "{r}");
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("too many drafts from this address in the last hour"), "{text}");
    assert!(text.contains("quotas.drafts_per_client_per_hour = 3"), "{text}");
    assert!(text.contains("try again after 2026-12-01T11:00:00Z"), "{text}");
    assert_eq!(intents(&f), before, "nothing is written over the quota");
    // Another address counts apart.
    assert_ne!(publish(&f, B)["isError"], true);
    assert_eq!(intents(&f), before + 1);
    // IPv6 addresses count per /64: rotating within one's prefix gains nothing.
    for i in 1..=3 {
        assert_ne!(publish(&f, &format!("[2001:db8:1:2::{i}]:1"))["isError"], true);
    }
    assert_eq!(publish(&f, "[2001:db8:1:2::ffff]:1")["isError"], true);
    assert_ne!(publish(&f, "[2001:db8:1:3::1]:1")["isError"], true);
    // Invalid input is refused before the quota and never counted.
    let f = fx(Quotas { drafts_per_client_per_hour: 1, ..Quotas::default() });
    assert_eq!(publish_with(&f, A, &json!({}))["isError"], true);
    assert_ne!(publish(&f, A)["isError"], true);
    // An hour later the address may publish again.
    assert_eq!(publish(&f, A)["isError"], true);
    f.clock.advance(time::Duration::minutes(60));
    assert_ne!(publish(&f, A)["isError"], true);
}

/// Publishes a draft and submits consent for `email` on its page from `addr`.
fn consent(f: &Fx, addr: &str, email: &str) -> (String, crate::kit::Resp) {
    let r = publish(f, "203.0.113.9:1");
    let url = r["structuredContent"]["consentUrl"].as_str().unwrap().to_owned();
    let path = url.strip_prefix(crate::kit::BASE).unwrap().to_owned();
    let page = f.get(&path, None);
    let csrf = page.csrf_for(&path);
    let fields = [("csrf", csrf.as_str()), ("email", email), ("accept", "yes"), ("lang", "en")];
    let b = Request::builder()
        .method(Method::POST)
        .uri(&path)
        .header(header::ACCEPT_LANGUAGE, "en")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    let resp = from(f, addr, b, Body::from(serde_urlencoded::to_string(fields).unwrap()));
    (r["structuredContent"]["intent"]["id"].as_str().unwrap().to_owned(), resp)
}

fn status_of(f: &Fx, id: &str) -> String {
    let v: Value = f.holder.base.store().read(|rx| rx.intent(id)).unwrap().unwrap();
    v["status"].as_str().unwrap().to_owned()
}

#[test]
fn consent_submissions_stop_at_the_per_address_quota_with_429_and_retry_after() {
    let f = fx(Quotas { consents_per_client_per_hour: 2, ..Quotas::default() });
    for i in 0..2 {
        let (_, r) = consent(&f, A, &format!("p{i}@example.com"));
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    }
    let mails = f.mails().len();
    let (id, r) = consent(&f, A, "p9@example.com");
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = r.headers.get(header::RETRY_AFTER).unwrap().to_str().unwrap().parse().unwrap();
    assert!((1..=3600).contains(&retry), "{retry}");
    assert!(r.body.contains("Too many consent submissions came from your network in the last hour"), "{}", r.body);
    assert!(r.body.contains("Try again in 60 min (at 11:00 UTC)"), "{}", r.body);
    assert_eq!(status_of(&f, &id), "awaiting_consent", "nothing recorded");
    assert_eq!(f.mails().len(), mails, "no mail queued");
    // Another client address is not affected.
    let (_, r) = consent(&f, B, "p9@example.com");
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    // A submission that records nothing (the link already taken) counts against nothing.
    let r = publish(&f, "203.0.113.9:1");
    let token = r["structuredContent"]["consentUrl"].as_str().unwrap().rsplit('/').next().unwrap().to_owned();
    let (c, d) = (client("192.0.2.77:1").key(), client("192.0.2.78:1").key());
    assert_eq!(
        f.holder.intents.give_consent_from(&token, "q1@example.com", "en", d).unwrap(),
        ConsentOutcome::Recorded
    );
    for _ in 0..3 {
        let out = f.holder.intents.give_consent_from(&token, "q2@example.com", "en", c).unwrap();
        assert_eq!(out, ConsentOutcome::Taken);
    }
    for i in 0..2 {
        let (_, r) = consent(&f, "192.0.2.77:1", &format!("q{i}@example.net"));
        assert_eq!(r.status, StatusCode::SEE_OTHER, "the taken submissions used up nothing: {}", r.body);
    }
}

#[test]
fn the_per_address_quota_counts_a_mailbox_once_whatever_its_tag_or_case() {
    let f = fx(Quotas { consents_per_address_per_hour: 2, ..Quotas::default() });
    let h = &f.holder;
    let draft = |n: u8| {
        let r = publish(&f, &format!("203.0.113.{n}:1"));
        let url = r["structuredContent"]["consentUrl"].as_str().unwrap().to_owned();
        (
            r["structuredContent"]["intent"]["id"].as_str().unwrap().to_owned(),
            url.rsplit('/').next().unwrap().to_owned(),
        )
    };
    for (n, email) in [(1, "ana+cars@example.com"), (2, "Ana+flats@Example.com")] {
        let (_, token) = draft(n);
        let key = client(&format!("192.0.2.{n}:1")).key();
        assert_eq!(h.intents.give_consent_from(&token, email, "en", key).unwrap(), ConsentOutcome::Recorded);
    }
    let (id, token) = draft(3);
    let out = h.intents.give_consent_from(&token, "ANA@example.com", "en", client("192.0.2.3:1").key()).unwrap();
    let ConsentOutcome::Throttled(e) = out else { panic!("{out:?}") };
    assert_eq!(e.rule, Rule::ConsentsPerAddress);
    assert_eq!(status_of(&f, &id), "awaiting_consent", "nothing recorded");
    assert_eq!(f.mails().len(), 2, "no third mail to the one mailbox");
    // Another mailbox is not affected.
    let out = h.intents.give_consent_from(&token, "bea@example.com", "en", client("192.0.2.3:1").key()).unwrap();
    assert_eq!(out, ConsentOutcome::Recorded);
}

#[test]
fn confirmation_mails_stop_at_the_global_quota() {
    let f = fx(Quotas { confirmation_mails_per_hour: 2, ..Quotas::default() });
    let h = &f.holder;
    let draft = |n: &str| {
        let r = publish(&f, &format!("203.0.113.{n}:1"));
        let url = r["structuredContent"]["consentUrl"].as_str().unwrap().to_owned();
        (
            r["structuredContent"]["intent"]["id"].as_str().unwrap().to_owned(),
            url.rsplit('/').next().unwrap().to_owned(),
        )
    };
    for n in ["1", "2"] {
        let (_, token) = draft(n);
        let key = client(&format!("192.0.2.{n}:1")).key();
        assert_eq!(
            h.intents.give_consent_from(&token, &format!("{n}@example.com"), "en", key).unwrap(),
            ConsentOutcome::Recorded
        );
    }
    let (id, token) = draft("3");
    let key = client("192.0.2.3:1").key();
    let out = h.intents.give_consent_from(&token, "3@example.com", "en", key).unwrap();
    let ConsentOutcome::Throttled(e) = out else { panic!("{out:?}") };
    // New addresses: the holder-wide rule for addresses that never confirmed (2 less 20 %,
    // rounded down, reserves nothing of so small a quota).
    assert_eq!((e.rule, e.limit), (Rule::MailsUnconfirmed, 2));
    assert!(e.to_string().contains("all addresses together"), "{e}");
    assert_eq!(status_of(&f, &id), "awaiting_consent");
    assert_eq!(f.mails().len(), 2);
    // A repeated submission queues no mail and so uses up nothing.
    let (_, token) = draft("4");
    f.clock.advance(time::Duration::minutes(61));
    h.intents.give_consent_from(&token, "4@example.com", "en", key).unwrap();
    assert_eq!(h.intents.give_consent_from(&token, "4@example.com", "en", key).unwrap(), ConsentOutcome::Repeated);
    let (_, token) = draft("5");
    assert_eq!(h.intents.give_consent_from(&token, "5@example.com", "en", key).unwrap(), ConsentOutcome::Recorded);
    let (_, token) = draft("6");
    let out = h.intents.give_consent_from(&token, "6@example.com", "en", key).unwrap();
    assert!(matches!(out, ConsentOutcome::Throttled(e) if e.rule == Rule::MailsUnconfirmed), "{out:?}");
}

fn register(f: &Fx, addr: &str) -> crate::kit::Resp {
    let body = json!({"redirect_uris": ["http://127.0.0.1/cb"], "token_endpoint_auth_method": "none"});
    let b =
        Request::builder().method(Method::POST).uri("/oauth/register").header(header::CONTENT_TYPE, "application/json");
    from(f, addr, b, Body::from(body.to_string()))
}

fn clients(f: &Fx) -> usize {
    f.holder.base.store().read(|rx| rx.records::<Value>(Ns::Client)).unwrap().len()
}

#[test]
fn registrations_stop_at_the_per_address_quota_with_an_oauth_error() {
    let f = fx(Quotas { registrations_per_client_per_hour: 2, ..Quotas::default() });
    for _ in 0..2 {
        assert_eq!(register(&f, A).status, StatusCode::CREATED);
    }
    let r = register(&f, A);
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "{}", r.body);
    assert_eq!(r.headers.get(header::RETRY_AFTER).unwrap(), "3600");
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["error"], "temporarily_unavailable");
    let why = v["error_description"].as_str().unwrap();
    assert!(why.starts_with("too many client registrations from this address in the last hour"), "{why}");
    assert!(why.contains("quotas.registrations_per_client_per_hour = 2"), "{why}");
    assert_eq!(clients(&f), 2, "nothing stored over the quota");
    assert_eq!(register(&f, B).status, StatusCode::CREATED);
    // Refused metadata is not counted.
    let b =
        Request::builder().method(Method::POST).uri("/oauth/register").header(header::CONTENT_TYPE, "application/json");
    assert_eq!(from(&f, "192.0.2.50:1", b, Body::from("{}")).status, StatusCode::BAD_REQUEST);
    for _ in 0..2 {
        assert_eq!(register(&f, "192.0.2.50:1").status, StatusCode::CREATED);
    }
}

#[test]
fn the_purge_removes_lapsed_drafts_and_unused_clients_and_keeps_the_rest() {
    let f = fx(Quotas::default());
    let h = &f.holder;
    let lapsed: Vec<Value> = (0..3).map(|_| publish(&f, A)).collect();
    let (consented, r) = consent(&f, B, "buyer@example.com");
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_eq!(register(&f, A).status, StatusCode::CREATED);
    f.clock.advance(time::Duration::hours(23));
    let fresh = publish(&f, A);
    assert_eq!(h.intents.purge(true).unwrap().total(), 0, "nothing is due yet");
    f.clock.advance(time::Duration::hours(2));
    let dry = h.intents.purge(true).unwrap();
    assert_eq!((dry.drafts, dry.draft_tokens, dry.oauth.clients), (3, 6, 1), "{dry:?}");
    assert_eq!(intents(&f), 5, "a dry run removes nothing");
    assert_eq!(clients(&f), 1);
    let real = h.intents.purge(false).unwrap();
    assert_eq!(real, dry, "the real run removes what the dry run counted");
    assert_eq!(intents(&f), 2);
    assert_eq!(clients(&f), 0);
    for d in &lapsed {
        let code = d["structuredContent"]["intentCode"].as_str().unwrap();
        assert!(matches!(h.intents.get_by_code(code, None), Err(isto::base::ServiceError::NotFound)));
    }
    // The consented intent and the draft still within its day stay.
    assert_eq!(status_of(&f, &consented), "awaiting_email_confirmation");
    let code = fresh["structuredContent"]["intentCode"].as_str().unwrap();
    assert_eq!(h.intents.get_by_code(code, None).unwrap().status, isto::protocol::Status::AwaitingConsent);
    assert_eq!(h.intents.purge(true).unwrap().total(), 0);
}

/// Round 3 point 4: a consent flood from 30 client keys, first in one /24 (the per-network
/// quota stops it), then spread over 30 /24s (the holder-wide quota for unknown addresses
/// stops it, short of the reserved share). Afterwards a person whose address confirmed
/// an intent before (and withdrew it: only the confirmation mark says so) can still
/// consent through the page; a new address gets the 429 of the holder-wide quota.
#[test]
fn a_consent_flood_from_30_client_keys_leaves_room_for_a_person_who_confirmed_before() {
    let f = fx(Quotas {
        drafts_per_client_per_hour: 10_000,
        consents_per_client_per_hour: 20,
        consents_per_network_per_hour: 60,
        confirmation_mails_per_hour: 200,
        confirmation_mails_reserved_percent: 20,
        ..Quotas::default()
    });
    let h = &f.holder;
    let draft = || {
        let r = publish(&f, "203.0.113.9:1");
        let url = r["structuredContent"]["consentUrl"].as_str().unwrap().to_owned();
        let code = r["structuredContent"]["intentCode"].as_str().unwrap().to_owned();
        (code, url.rsplit('/').next().unwrap().to_owned())
    };
    // The known person: consented, confirmed and withdrew before the flood.
    let (code, token) = draft();
    let key = client("127.0.99.1:1").key();
    assert_eq!(h.intents.give_consent_from(&token, "kim@example.org", "en", key).unwrap(), ConsentOutcome::Recorded);
    let confirm = f.token_from_outbox("/confirm/");
    assert_eq!(h.intents.confirm(&confirm).unwrap(), ConfirmOutcome::Activated);
    h.intents.withdraw_by_code(&code, None).unwrap();

    // The flood: 30 client keys × 10 consents, each for a new address.
    let mut n = 0;
    let mut flood = |addr: &dyn Fn(u8) -> String| {
        let (mut recorded, mut refused) = (0, std::collections::BTreeMap::<String, usize>::new());
        for k in 1..=30u8 {
            for _ in 0..10 {
                n += 1;
                let (_, token) = draft();
                let key = client(&addr(k)).key();
                match h.intents.give_consent_from(&token, &format!("flood{n}@example.net"), "en", key).unwrap() {
                    ConsentOutcome::Recorded => recorded += 1,
                    ConsentOutcome::Throttled(e) => *refused.entry(e.rule.setting().to_owned()).or_default() += 1,
                    other => panic!("{other:?}"),
                }
            }
        }
        (recorded, refused)
    };
    // One /24 (127.0.0.1 ..= 127.0.0.30): 60 recorded, the rest refused per network.
    let (recorded, refused) = flood(&|k| format!("127.0.0.{k}:1"));
    assert_eq!(recorded, 60, "{refused:?}");
    assert_eq!(refused.get("quotas.consents_per_network_per_hour"), Some(&240), "{refused:?}");
    // 30 /24s (127.0.1.1 ..= 127.0.30.1): unknown addresses stop at 200 − 20 % = 160 mails
    // (61 counted already), 40 stay reserved.
    let (recorded, refused) = flood(&|k| format!("127.0.{k}.1:1"));
    assert_eq!(recorded, 99, "{refused:?}");
    let unconfirmed = "quotas.confirmation_mails_per_hour less quotas.confirmation_mails_reserved_percent";
    assert_eq!(refused.get(unconfirmed), Some(&201), "{refused:?}");
    let mails = f.mails().len();

    // A new address is refused with the holder-wide 429; the known person gets through.
    let (_, r) = consent(&f, "127.0.77.1:1", "newcomer@example.org");
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "{}", r.body);
    assert!(r.body.contains("We sent too many confirmation e-mails in the last hour"), "{}", r.body);
    let (id, r) = consent(&f, "127.0.78.1:1", "Kim+again@example.org");
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(status_of(&f, &id), "awaiting_email_confirmation");
    assert_eq!(f.mails().len(), mails + 1, "one confirmation mail, to the known person");
}
