//! Registered sellers and `/mcp/seller` (PROTOCOL.md §1, §2 "Seller pseudonyms", §3
//! intent_submit_offer / intent_list_open_intents, §6 for replies) on a real redb file
//! with a clock the test advances. Sellers are registered with `isto::sellers::add` (what
//! `isto admin seller add` runs), buyers sign up through the account pages, sellers sign
//! in with their one-time link and authorize an agent through the OAuth pages — all
//! driven in-process with `oneshot`.

use axum::body::Body;
use axum::http::Request;
use axum::http::{header, StatusCode};
use axum::Router;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use isto::intents::{ConfirmOutcome, ConsentOutcome};
use isto::mail::MailJob;
use isto::oauth::Grant;
use isto::protocol::{Money, AGGREGATOR_NOTE};
use isto::records::OfferInput;
use isto::sellers::{self, NewSeller, SellerProfile};
use isto::state::AppState;
use isto::store::Reads;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::kit::{self, Fx, Opts, BASE};

pub(crate) const SELLER_RESOURCE: &str = "https://holder.example/mcp/seller";
const LIMIT: f64 = 12345.0;

fn fixture() -> Fx {
    Fx::new()
}

impl Fx {
    /// Registers a seller (as `isto admin seller add` does).
    pub(crate) fn seller(&self, name: &str, email: &str, categories: &[&str], regions: &[&str]) -> SellerProfile {
        let added = sellers::add(
            &self.holder.base,
            &NewSeller {
                name: name.into(),
                email: email.into(),
                url: Some(format!("https://{}.example", name.to_lowercase().replace(' ', "-"))),
                categories: categories.iter().map(|s| s.to_string()).collect(),
                regions: regions.iter().map(|s| s.to_string()).collect(),
                invite: false,
            },
        )
        .unwrap();
        sellers::profile(&self.holder.base, &added.seller.account_id).unwrap().unwrap()
    }

    /// The seller signs in with a one-time link (from `/signin`); returns the cookie.
    pub(crate) fn seller_signs_in(&self, email: &str) -> String {
        let page = self.get("/signin?next=/seller/intents", None);
        let csrf = page.csrf_for("/signin/link");
        let fields = [("csrf", csrf.as_str()), ("email", email), ("next", "/seller/intents")];
        let r = self.post("/signin/link", &fields, page.pre_cookie().as_deref());
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
        let token = self.token_from_outbox("/signin/link/");
        let page = self.get(&format!("/signin/link/{token}"), None);
        let csrf = page.csrf_for(&format!("/signin/link/{token}"));
        let r = self.post(&format!("/signin/link/{token}"), &[("csrf", &csrf)], None);
        assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/seller/intents"), "{}", r.body);
        r.cookie().unwrap()
    }

    /// A consent-link intent made active: publish, consent with `email`, confirm.
    /// Returns (id, intentCode).
    pub(crate) fn consent_intent(&self, args: Value, email: &str) -> (String, String) {
        let h = &self.holder;
        let r = h.intents.publish_draft(h.intents.parse_publish(&args).unwrap()).unwrap();
        let token = r.consent_url.rsplit('/').next().unwrap().to_owned();
        assert_eq!(h.intents.give_consent(&token, email, "en").unwrap(), ConsentOutcome::Recorded);
        assert_eq!(h.intents.confirm(&self.token_from_outbox("/confirm/")).unwrap(), ConfirmOutcome::Activated);
        (r.intent.id, r.intent_code)
    }

    fn owned_intent(&self, account: &str, args: Value) -> String {
        let h = &self.holder;
        let r = h.intents.publish_for(account, h.intents.parse_publish(&args).unwrap()).unwrap();
        assert_eq!(r.intent.status, isto::protocol::Status::Active);
        r.intent.id
    }
}

/// A pseudonymous vehicles intent in Slovakia, budget 20 000 EUR, with `extra` fields.
pub(crate) fn octavia(extra: Value) -> Value {
    let mut v = json!({"statement": "Hľadám Škoda Octavia combi",
        "criteria": {"category": "vehicles", "make": "Škoda", "model": "Octavia"},
        "area": "SK", "budget": {"max": 20000, "currency": "EUR"}, "visibility": "pseudonymous"});
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

pub(crate) fn reply(intent: &str, title: &str, price: f64) -> Value {
    json!({"source": {"kind": "reply"}, "inReplyTo": intent, "title": title,
           "description": "Servisná knižka, 1. majiteľ.", "category": "vehicles",
           "attributes": {"make": "Škoda", "model": "Octavia", "year": 2019},
           "price": {"amount": price, "currency": "EUR"}, "area": "Bratislava",
           "url": "https://dealer.example/octavia"})
}

fn grant(p: &SellerProfile) -> Grant {
    Grant {
        account_id: p.account_id.clone(),
        role: "seller".into(),
        client_id: "client".into(),
        scopes: vec!["offers".into(), "demand".into()],
        resource: SELLER_RESOURCE.into(),
    }
}

/// Runs a seller tool; returns (isError, structuredContent or the error text, the whole
/// result as JSON text).
fn call(h: &AppState, g: Option<&Grant>, tool: &str, args: Value) -> (bool, Value, String) {
    let r = crate::kit::mcp_call_as(h, isto::mcp::Endpoint::Seller, g, tool, &args).expect("known tool");
    let v = serde_json::to_value(&r).unwrap();
    let whole = v.to_string();
    if v["isError"].as_bool().unwrap_or(false) {
        (true, v["content"][0]["text"].clone(), whole)
    } else {
        (false, v["structuredContent"].clone(), whole)
    }
}

fn open_list(h: &AppState, p: &SellerProfile, args: Value) -> Vec<Value> {
    let (err, v, _) = call(h, Some(&grant(p)), "intent_list_open_intents", args);
    assert!(!err, "{v}");
    v["intents"].as_array().unwrap().clone()
}

/// Seller `p`'s handle for intent `id` (PROTOCOL.md §2): what the seller sees as the
/// intent's `id` and gives as `inReplyTo`.
pub(crate) fn hd(h: &AppState, p: &SellerProfile, id: &str) -> String {
    sellers::handle(&h.base, &p.seller_id, id)
}

/// Seller `p`'s handles for `ids`, sorted (to compare with [`ids`]).
fn hds(h: &AppState, p: &SellerProfile, ids: &[&String]) -> Vec<String> {
    let mut v: Vec<String> = ids.iter().map(|id| hd(h, p, id)).collect();
    v.sort();
    v
}

fn ids(list: &[Value]) -> Vec<String> {
    let mut v: Vec<String> = list.iter().map(|i| i["id"].as_str().unwrap().to_owned()).collect();
    v.sort();
    v
}

fn pseudonym_of(list: &[Value], id: &str) -> String {
    list.iter().find(|i| i["id"] == id).unwrap_or_else(|| panic!("{id} not listed"))["pseudonym"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A tick of the reply matching (the queued replies are matched and delivered), then the
/// scheduler's digest pass (due digests queued). Returns the digests queued.
fn drain(h: &AppState) -> u64 {
    isto::deliveries::match_queued_replies(&h.base).unwrap();
    isto::deliveries::queue_due_digests(&h.base).unwrap()
}

fn pending(h: &AppState) -> u64 {
    h.base.store().read(|rx| rx.pending_reply_count()).unwrap()
}

fn delivered_titles(h: &AppState, id: &str) -> Vec<String> {
    let mut t: Vec<String> =
        isto::deliveries::list(&h.base, id, None, 100).unwrap().0.into_iter().map(|d| d.offer.title).collect();
    t.sort();
    t
}

#[test]
fn seller_tools_are_declared_with_schemas_annotations_and_the_note() {
    let tools = isto::mcp::tools_of(isto::mcp::Endpoint::Seller);
    let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    for want in ["intent_submit_offer", "intent_list_open_intents", "intent_search_offers", "intent_demand_summary"] {
        assert!(names.contains(&want.to_owned()), "{names:?}");
    }
    for t in &tools {
        let v = serde_json::to_value(t).unwrap();
        assert!(v["description"].as_str().unwrap().contains(AGGREGATOR_NOTE), "{}", t.name);
        assert_eq!(v["inputSchema"]["additionalProperties"], false, "{}", t.name);
        assert!(v["outputSchema"].is_object(), "{}", t.name);
        assert!(v["annotations"]["readOnlyHint"].is_boolean(), "{}", t.name);
    }
    // Unknown properties are refused, naming the property.
    let f = fixture();
    let s = f.seller("Dealer One", "one@dealer.example", &["vehicles"], &["SK-BL"]);
    let (err, msg, _) = call(&f.holder, Some(&grant(&s)), "intent_list_open_intents", json!({"contact": "x"}));
    assert!(err && msg.as_str().unwrap().contains("contact is not a known property"), "{msg}");
    let mut r = reply("int_x", "Škoda Octavia", 9000.0);
    r["seller"] = json!({"name": "Someone else"});
    let (err, msg, _) = call(&f.holder, Some(&grant(&s)), "intent_submit_offer", r);
    assert!(err && msg.as_str().unwrap().contains("seller is not a known property"), "{msg}");
    let mut r = reply("int_x", "Škoda Octavia", 9000.0);
    r["source"] = json!({"kind": "catalogue"});
    let (err, msg, _) = call(&f.holder, Some(&grant(&s)), "intent_submit_offer", r);
    assert!(err && msg.as_str().unwrap().contains("source.kind"), "{msg}");
    let mut r = reply("int_x", "Škoda Octavia", 9000.0);
    r["price"] = json!({"amount": 9000});
    let (err, msg, _) = call(&f.holder, Some(&grant(&s)), "intent_submit_offer", r);
    assert!(err && msg.as_str().unwrap().contains("price.currency"), "{msg}");
    let mut r = reply("int_x", "Byt 3+1", 9000.0);
    r["category"] = json!("property");
    r["attributes"] = json!({});
    let (err, msg, _) = call(&f.holder, Some(&grant(&s)), "intent_submit_offer", r);
    assert!(err && msg.as_str().unwrap().contains("category must be one this seller serves"), "{msg}");
    // Without a grant, with a buyer's grant, or without the scope: refused.
    let (err, msg, _) = call(&f.holder, None, "intent_list_open_intents", json!({}));
    assert!(err && msg.as_str().unwrap().starts_with("unauthorized"), "{msg}");
    let mut g = grant(&s);
    g.role = "buyer".into();
    assert!(call(&f.holder, Some(&g), "intent_list_open_intents", json!({})).0);
    let mut g = grant(&s);
    g.scopes = vec!["demand".into()];
    let (err, msg, _) = call(&f.holder, Some(&g), "intent_submit_offer", reply("int_x", "Škoda", 1.0));
    assert!(err && msg.as_str().unwrap().starts_with("insufficient_scope"), "{msg}");
    assert!(crate::kit::mcp_call_as(
        &f.holder,
        isto::mcp::Endpoint::Seller,
        Some(&grant(&s)),
        "intent_publish_intent",
        &json!({})
    )
    .is_none());
}

#[test]
fn a_seller_never_sees_contact_hidden_limit_or_has_hidden_limit() {
    let f = fixture();
    let h = &f.holder;
    let s = f.seller("Dealer One", "one@dealer.example", &["vehicles"], &["SK-BL"]);
    let (buyer, _) = f.buyer("owner.person@example.com");
    let owned = f.owned_intent(&buyer, octavia(json!({"hiddenLimit": LIMIT})));
    let (linked, _) = f.consent_intent(octavia(json!({"hiddenLimit": LIMIT})), "secret.buyer@example.com");

    let mut outputs = Vec::new();
    let (err, v, whole) = call(h, Some(&grant(&s)), "intent_list_open_intents", json!({}));
    assert!(!err);
    assert_eq!(ids(v["intents"].as_array().unwrap()), hds(h, &s, &[&owned, &linked]));
    let item = &v["intents"][0];
    for key in ["id", "pseudonym", "statement", "category", "criteria", "area", "budget", "validUntil"] {
        assert!(item.get(key).is_some(), "{key} missing in {item}");
    }
    outputs.push(whole);
    for id in [&owned, &linked] {
        let r = |price| reply(&hd(h, &s, id), "Škoda Octavia Combi", price);
        outputs.push(call(h, Some(&grant(&s)), "intent_submit_offer", r(9000.0)).2);
        outputs.push(call(h, Some(&grant(&s)), "intent_submit_offer", r(15000.0)).2);
    }
    outputs.push(call(h, Some(&grant(&s)), "intent_search_offers", json!({"statement": "Škoda Octavia"})).2);
    let cookie = f.seller_signs_in("one@dealer.example");
    let page = f.get("/seller/intents", Some(&cookie));
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("Hľadám Škoda Octavia combi"), "{}", page.body);
    outputs.push(page.body);
    for out in &outputs {
        for secret in [
            "secret.buyer",
            "owner.person",
            "@example.com",
            "12345",
            "12 345",
            "12\u{a0}345",
            "hasHiddenLimit",
            "hiddenLimit",
            "int_",
            &owned,
            &linked,
        ] {
            assert!(!out.contains(secret), "{secret} in {out}");
        }
    }
}

#[test]
fn pseudonyms_are_stable_per_buyer_and_differ_between_sellers() {
    let f = fixture();
    let h = &f.holder;
    let a = f.seller("Dealer A", "a@dealer.example", &["vehicles"], &["SK-BL"]);
    let b = f.seller("Dealer B", "b@dealer.example", &[], &[]);
    // One person: an account intent and a consent-link intent with the same address.
    let (anna, _) = f.buyer("anna@example.com");
    let owned = f.owned_intent(&anna, octavia(json!({})));
    let (linked, _) = f.consent_intent(octavia(json!({"statement": "Škoda Octavia RS"})), "Anna@Example.com");
    // Another person.
    let (other, _) = f.consent_intent(octavia(json!({})), "bob@example.com");

    let la = open_list(h, &a, json!({}));
    let lb = open_list(h, &b, json!({}));
    assert_eq!(la.len(), 3);
    let (pa, pb) = (pseudonym_of(&la, &hd(h, &a, &owned)), pseudonym_of(&lb, &hd(h, &b, &owned)));
    assert!(pa.starts_with("buyer-") && pa.len() == "buyer-".len() + 12, "{pa}");
    assert_eq!(pseudonym_of(&la, &hd(h, &a, &linked)), pa, "one buyer, one pseudonym for seller A");
    assert_eq!(pseudonym_of(&lb, &hd(h, &b, &linked)), pb, "one buyer, one pseudonym for seller B");
    assert_ne!(pa, pb, "sellers cannot link a buyer across sellers");
    assert_ne!(pseudonym_of(&la, &hd(h, &a, &other)), pa);
    assert_ne!(pseudonym_of(&lb, &hd(h, &b, &other)), pb);
    // Stable across calls (and after a restart: a keyed hash, nothing random).
    assert_eq!(pseudonym_of(&open_list(h, &a, json!({})), &hd(h, &a, &owned)), pa);
}

#[test]
fn submit_answers_the_same_above_and_below_the_hidden_limit() {
    let f = fixture();
    let h = &f.holder;
    let s = f.seller("Dealer One", "one@dealer.example", &["vehicles"], &["SK-BL"]);
    let (id, _) = f.consent_intent(octavia(json!({"hiddenLimit": 12000})), "buyer@example.com");
    let (e1, below, _) =
        call(h, Some(&grant(&s)), "intent_submit_offer", reply(&hd(h, &s, &id), "Škoda Octavia Combi below", 11000.0));
    let (e2, above, _) =
        call(h, Some(&grant(&s)), "intent_submit_offer", reply(&hd(h, &s, &id), "Škoda Octavia Combi above", 15000.0));
    assert!(!e1 && !e2);
    assert_eq!(below["accepted"], true);
    let strip = |mut v: Value| {
        assert!(v["offerId"].as_str().unwrap().starts_with("off_"));
        v.as_object_mut().unwrap().remove("offerId");
        v
    };
    assert_eq!(strip(below), strip(above), "identical answers");
    // Matched after the answer, when the worker drains the queue.
    assert!(delivered_titles(h, &id).is_empty());
    assert_eq!(pending(h), 2);
    drain(h);
    // Only the one within the hidden limit (the budget's 20 000 does not count) is delivered.
    assert_eq!(delivered_titles(h, &id), vec!["Škoda Octavia Combi below"]);
    let d = &isto::deliveries::list(&h.base, &id, None, 10).unwrap().0[0];
    assert_eq!(d.offer.source.kind, "reply");
    assert_eq!(d.offer.in_reply_to.as_deref(), Some(id.as_str()));
    assert_eq!(d.offer.seller.id, s.seller_id);
    assert_eq!(d.offer.seller.name, "Dealer One");
    assert_eq!(d.offer.seller.url.as_deref(), Some("https://dealer-one.example"));
}

#[test]
fn drafts_expired_withdrawn_private_and_foreign_intents_are_neither_listed_nor_answered() {
    let f = fixture();
    let h = &f.holder;
    let s = f.seller("Dealer One", "one@dealer.example", &["vehicles"], &["SK-BL"]);
    let g = grant(&s);
    // Draft (awaiting_consent) and awaiting e-mail confirmation.
    let draft = h.intents.publish_draft(h.intents.parse_publish(&octavia(json!({}))).unwrap()).unwrap().intent.id;
    let unconfirmed = {
        let r = h.intents.publish_draft(h.intents.parse_publish(&octavia(json!({}))).unwrap()).unwrap();
        let token = r.consent_url.rsplit('/').next().unwrap().to_owned();
        assert_eq!(h.intents.give_consent(&token, "u@example.com", "en").unwrap(), ConsentOutcome::Recorded);
        r.intent.id
    };
    let (withdrawn, code) = f.consent_intent(octavia(json!({})), "w@example.com");
    h.intents.withdraw_by_code(&code, None).unwrap();
    let soon = isto::clock::rfc3339(isto::clock::Clock::now(&*f.clock) + time::Duration::hours(2));
    let (expiring, _) = f.consent_intent(octavia(json!({"validUntil": soon})), "e@example.com");
    let (private, _) = f.consent_intent(octavia(json!({"visibility": "private"})), "p@example.com");
    let (kosice, _) = f.consent_intent(octavia(json!({"area": "Košice"})), "k@example.com");
    let (flat, _) = f.consent_intent(
        json!({"statement": "Hľadám byt 3+1", "criteria": {"category": "property"}, "area": "Bratislava",
               "visibility": "pseudonymous"}),
        "f@example.com",
    );
    let (open, _) = f.consent_intent(octavia(json!({})), "o@example.com");
    assert_eq!(ids(&open_list(h, &s, json!({}))), hds(h, &s, &[&expiring, &open]));
    f.clock.advance(time::Duration::hours(3));
    assert_eq!(ids(&open_list(h, &s, json!({}))), vec![hd(h, &s, &open)], "expired drops out");

    // Each by this seller's handle; and an unknown id, the open intent's own id (not a
    // handle), another seller's handle of it, a tampered handle.
    let other = f.seller("Dealer Other", "other@dealer.example", &["vehicles"], &["SK"]);
    let mut tampered = hd(h, &s, &open);
    let last = tampered.pop().unwrap();
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    let refusals: Vec<String> = [
        hd(h, &s, &draft),
        hd(h, &s, &unconfirmed),
        hd(h, &s, &withdrawn),
        hd(h, &s, &expiring),
        hd(h, &s, &private),
        hd(h, &s, &kosice),
        hd(h, &s, &flat),
        "int_nosuchintentxxxxxxxxxxxxx".into(),
        open.clone(),
        hd(h, &other, &open),
        tampered,
    ]
    .iter()
    .map(|id| {
        let (err, v, whole) = call(h, Some(&g), "intent_submit_offer", reply(id, "Škoda Octavia Combi", 9000.0));
        assert!(!err);
        assert_eq!(v, json!({"accepted": false, "reason": "not open for replies"}));
        whole
    })
    .collect();
    assert!(refusals.windows(2).all(|w| w[0] == w[1]), "one indistinguishable answer: {refusals:?}");
    // Nothing was stored or delivered for them.
    for id in [&draft, &unconfirmed, &withdrawn, &expiring, &private, &kosice, &flat] {
        assert!(isto::deliveries::list(&h.base, id, None, 10).unwrap().0.is_empty());
    }
    let (_, v, _) = call(h, Some(&g), "intent_submit_offer", reply(&hd(h, &s, &open), "Škoda Octavia Combi", 9000.0));
    assert_eq!(v["accepted"], true);
    // Filters narrow the list; a since cursor returns only later changes.
    assert!(open_list(h, &s, json!({"category": "property"})).is_empty());
    assert!(open_list(h, &s, json!({"area": "CZ"})).is_empty());
    let (_, page, _) = call(h, Some(&g), "intent_list_open_intents", json!({"area": "Bratislava", "limit": 1}));
    let next = page["nextSince"].as_str().unwrap().to_owned();
    assert!(open_list(h, &s, json!({"since": next})).is_empty());
}

#[test]
fn the_fourth_reply_is_refused() {
    let f = fixture();
    let h = &f.holder;
    let s = f.seller("Dealer One", "one@dealer.example", &["vehicles"], &["SK-BL"]);
    let t = f.seller("Dealer Two", "two@dealer.example", &["vehicles"], &["SK"]);
    let (id, _) = f.consent_intent(octavia(json!({})), "buyer@example.com");
    for n in 1..=3 {
        let (_, v, _) = call(
            h,
            Some(&grant(&s)),
            "intent_submit_offer",
            reply(&hd(h, &s, &id), &format!("Škoda Octavia Combi {n}"), 9000.0),
        );
        assert_eq!(v["accepted"], true, "{n}: {v}");
    }
    let (_, v, _) =
        call(h, Some(&grant(&s)), "intent_submit_offer", reply(&hd(h, &s, &id), "Škoda Octavia Combi 4", 9000.0));
    assert_eq!(v, json!({"accepted": false, "reason": "reply limit reached"}));
    drain(h);
    assert_eq!(delivered_titles(h, &id).len(), 3);
    // Another seller has its own three.
    let (_, v, _) =
        call(h, Some(&grant(&t)), "intent_submit_offer", reply(&hd(h, &t, &id), "Škoda Octavia Combi T", 9000.0));
    assert_eq!(v["accepted"], true);
    // With its own handle only: seller S's handle is not open to T.
    let (_, v, _) =
        call(h, Some(&grant(&t)), "intent_submit_offer", reply(&hd(h, &s, &id), "Škoda Octavia Combi", 9000.0));
    assert_eq!(v, json!({"accepted": false, "reason": "not open for replies"}));
}

/// Registers an OAuth client and authorizes it for `/mcp/seller` with the seller's
/// session; returns the access token.
pub(crate) fn seller_token(f: &Fx, cookie: &str) -> String {
    seller_token_for(f, cookie, "offers demand")
}

/// [`seller_token`] for the scopes `scope`.
fn seller_token_for(f: &Fx, cookie: &str, scope: &str) -> String {
    let redirect = "https://agent.example/callback";
    let r = f.post_json(
        "/oauth/register",
        &json!({"redirect_uris": [redirect], "client_name": "Seller agent", "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]}),
    );
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let client: Value = serde_json::from_str(&r.body).unwrap();
    let client = client["client_id"].as_str().unwrap().to_owned();
    let verifier = isto::crypto::new_token(32).expose().to_owned();
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    let fields = [
        ("response_type", "code"),
        ("client_id", client.as_str()),
        ("redirect_uri", redirect),
        ("code_challenge", challenge.as_str()),
        ("code_challenge_method", "S256"),
        ("resource", SELLER_RESOURCE),
        ("scope", scope),
        ("state", "s1"),
    ];
    let page = f.get(&format!("/oauth/authorize?{}", serde_urlencoded::to_string(fields).unwrap()), Some(cookie));
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let csrf = page.csrf_for("/oauth/authorize");
    let mut form = fields.to_vec();
    form.push(("csrf", &csrf));
    form.push(("decision", "allow"));
    let r = f.post("/oauth/authorize", &form, Some(cookie));
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let query = r.location().split_once('?').unwrap().1.to_owned();
    let params: Vec<(String, String)> = serde_urlencoded::from_str(&query).unwrap();
    let code = params.iter().find(|(k, _)| k == "code").unwrap().1.clone();
    let r = f.post(
        "/oauth/token",
        &[
            ("grant_type", "authorization_code"),
            ("client_id", &client),
            ("code", &code),
            ("redirect_uri", redirect),
            ("code_verifier", &verifier),
        ],
        None,
    );
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let tok: Value = serde_json::from_str(&r.body).unwrap();
    tok["access_token"].as_str().unwrap().to_owned()
}

/// The `Authorization` header's value of a bearer `token`.
fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

#[test]
fn a_disabled_seller_stops_at_once_and_its_tokens_are_revoked() {
    let f = fixture();
    let h = &f.holder;
    let s = f.seller("Dealer One", "one@dealer.example", &["vehicles"], &["SK-BL"]);
    let (id, _) = f.consent_intent(octavia(json!({})), "buyer@example.com");
    let cookie = f.seller_signs_in("one@dealer.example");
    let token = seller_token(&f, &cookie);
    let g = isto::oauth::check_bearer(&h.base, Some(&bearer(&token)), SELLER_RESOURCE, "offers").unwrap();
    assert_eq!(g.account_id, s.account_id);
    assert!(!call(h, Some(&g), "intent_list_open_intents", json!({})).0);
    assert_eq!(f.get("/seller/intents", Some(&cookie)).status, StatusCode::OK);

    let t = sellers::set_disabled(&h.base, &s.seller_id, true).unwrap();
    assert!(t.seller.disabled);
    assert_eq!(t.tokens_revoked, 1);
    // The grant the request already carried no longer works: the account is read on every call.
    for (tool, args) in [
        ("intent_list_open_intents", json!({})),
        ("intent_submit_offer", reply(&hd(h, &s, &id), "Škoda Octavia Combi", 9000.0)),
        ("intent_search_offers", json!({"statement": "Škoda"})),
        ("intent_demand_summary", json!({})),
    ] {
        let (err, msg, _) = call(h, Some(&g), tool, args);
        assert!(err, "{tool}");
        assert_eq!(msg, "unauthorized: the seller account is disabled or unknown", "{tool}");
    }
    assert!(isto::deliveries::list(&h.base, &id, None, 10).unwrap().0.is_empty());
    // Its token is refused at the door, and its session ended.
    let res = isto::oauth::check_bearer(&h.base, Some(&bearer(&token)), SELLER_RESOURCE, "offers").unwrap_err();
    assert_eq!(res.status, StatusCode::UNAUTHORIZED);
    let page = f.get("/seller/intents", Some(&cookie));
    assert_eq!((page.status, page.location()), (StatusCode::SEE_OTHER, "/signin?next=/seller/intents"));
    assert!(sellers::list(&h.base).unwrap()[0].disabled);

    // Enabled again: tools work for a grant, the old token stays revoked.
    let t = sellers::set_disabled(&h.base, &s.account_id, false).unwrap();
    assert!(!t.seller.disabled);
    assert!(!call(h, Some(&g), "intent_list_open_intents", json!({})).0);
    let res = isto::oauth::check_bearer(&h.base, Some(&bearer(&token)), SELLER_RESOURCE, "offers").unwrap_err();
    assert_eq!(res.status, StatusCode::UNAUTHORIZED);
    let isto::oauth::Challenge::Bearer(challenge) = &res.challenge else {
        panic!("no bearer challenge: {:?}", res.challenge)
    };
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    assert!(matches!(sellers::set_disabled(&h.base, "acc_nosuchseller", true), Err(sellers::SellerError::NotFound)));
}

fn catalogue_row(reference: &str, title: &str, price: f64) -> OfferInput {
    OfferInput {
        reference: Some(reference.into()),
        title: title.into(),
        description: String::new(),
        category: "vehicles".into(),
        attributes: json!({"make": "Škoda", "model": "Octavia"}).as_object().cloned().unwrap(),
        price: Money { amount: price, currency: "EUR".into() },
        area: isto::gazetteer::resolve("Trnava").unwrap(),
        seller_name: "Feed Dealer".into(),
        seller_url: None,
        url: None,
        valid_until: None,
    }
}

#[test]
fn a_reply_reaches_its_buyer_once_and_nothing_else() {
    let f = fixture();
    let h = &f.holder;
    h.catalogue.import_offers(vec![catalogue_row("c1", "Škoda Octavia Combi katalóg", 9500.0)]).unwrap();
    let s = f.seller("Dealer One", "one@dealer.example", &["vehicles"], &["SK-BL"]);
    let (anna, _) = f.buyer("anna@example.com");
    let mine = f.owned_intent(&anna, octavia(json!({})));
    let (other, _) = f.consent_intent(octavia(json!({})), "bob@example.com");
    assert_eq!(delivered_titles(h, &mine), vec!["Škoda Octavia Combi katalóg"]);

    let (_, v, _) = call(
        h,
        Some(&grant(&s)),
        "intent_submit_offer",
        reply(&hd(h, &s, &mine), "Škoda Octavia Combi odpoveď", 9000.0),
    );
    assert_eq!(v["accepted"], true);
    let offer_id = v["offerId"].as_str().unwrap().to_owned();
    drain(h);
    // In the buyer's list_matches (over /mcp/buyer too), once.
    assert_eq!(delivered_titles(h, &mine), vec!["Škoda Octavia Combi katalóg", "Škoda Octavia Combi odpoveď"]);
    let buyer_grant = Grant {
        account_id: anna.clone(),
        role: "buyer".into(),
        client_id: "c".into(),
        scopes: vec!["intents".into()],
        resource: format!("{BASE}/mcp/buyer"),
    };
    let r = crate::kit::mcp_call_as(
        h,
        isto::mcp::Endpoint::Buyer,
        Some(&buyer_grant),
        "intent_list_matches",
        &json!({"intent": mine}),
    )
    .unwrap();
    let r = serde_json::to_value(&r).unwrap();
    let matches = r["structuredContent"]["matches"].as_array().unwrap();
    let replies: Vec<&Value> = matches.iter().filter(|m| m["offer"]["id"] == offer_id.as_str()).collect();
    assert_eq!(replies.len(), 1);
    assert_eq!(replies[0]["offer"]["source"]["kind"], "reply");
    assert_eq!(replies[0]["offer"]["inReplyTo"], mine.as_str());
    // Not matched against another intent it would fit, nor one that opens later (also
    // after a restart, when the offer index is rebuilt from the store).
    assert_eq!(delivered_titles(h, &other), vec!["Škoda Octavia Combi katalóg"]);
    let f = f.restart();
    let h = &f.holder;
    let (later, _) = f.consent_intent(octavia(json!({})), "carl@example.com");
    assert_eq!(delivered_titles(h, &later), vec!["Škoda Octavia Combi katalóg"]);
    // Not in catalogue search, on any endpoint.
    let search = crate::kit::mcp_call(h, "intent_search_offers", &json!({"statement": "Škoda Octavia"})).unwrap();
    let text = serde_json::to_string(&search).unwrap();
    assert!(text.contains("katalóg") && !text.contains("odpoveď"), "{text}");
    let index = h.catalogue.offer_index().unwrap();
    let plain = isto::catalogue::search_with(&index, &h.base, "odpoveď Octavia", None, None, 20).unwrap();
    assert!(plain.iter().all(|o| o.source.kind == "catalogue"), "{plain:?}");
    let (_, found, _) = call(h, Some(&grant(&s)), "intent_search_offers", json!({"statement": "odpoveď Octavia"}));
    assert!(!found.to_string().contains("odpoveď"), "{found}");
    // The digest carries it to the buyer's address.
    f.clock.advance(time::Duration::hours(2));
    assert!(isto::deliveries::queue_due_digests(&h.base).unwrap() >= 1);
    let digest = f.mails().into_iter().rev().find(|m| m.to == "anna@example.com").unwrap();
    assert!(digest.text.contains("odpoveď"), "{}", digest.text);
}

#[test]
fn the_seller_page_lists_open_intents_for_signed_in_sellers_only() {
    let f = fixture();
    let h = &f.holder;
    f.seller("Dealer One", "one@dealer.example", &["vehicles"], &["SK-BL"]);
    let (id, _) =
        f.consent_intent(octavia(json!({"hiddenLimit": LIMIT, "buyBy": "2027-03-31"})), "secret.buyer@example.com");
    let r = f.get("/seller/intents", None);
    assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/signin?next=/seller/intents"));
    let (_, buyer_cookie) = f.buyer("anna@example.com");
    assert_eq!(f.get("/seller/intents", Some(&buyer_cookie)).status, StatusCode::FORBIDDEN);
    let cookie = f.seller_signs_in("one@dealer.example");
    let page = f.get("/seller/intents", Some(&cookie));
    assert_eq!(page.status, StatusCode::OK);
    let s = sellers::find(&h.base, &sellers::list(&h.base).unwrap()[0].seller_id).unwrap();
    let listed = open_list(h, &s, json!({}));
    assert_eq!(ids(&listed), vec![hd(h, &s, &id)]);
    assert!(page.body.contains(&pseudonym_of(&listed, &hd(h, &s, &id))), "{}", page.body);
    assert!(page.body.contains(&hd(h, &s, &id)), "the seller's handle, to reply with: {}", page.body);
    assert!(!page.body.contains(&id), "the intent id is not on the seller page: {}", page.body);
    for shown in ["Hľadám Škoda Octavia combi", "Octavia", "20\u{a0}000", "2027-03-31", "Slovakia"] {
        assert!(page.body.contains(shown), "{shown} missing in {}", page.body);
    }
    for secret in ["secret.buyer", "12345", "12 345", "limit"] {
        assert!(!page.body.to_lowercase().contains(secret), "{secret} in {}", page.body);
    }
}

#[test]
fn admin_add_list_and_refusals() {
    let f = fixture();
    let h = &f.holder;
    h.catalogue.import_offers(vec![catalogue_row("c1", "Škoda Octavia", 9500.0)]).unwrap();
    let new = |name: &str, email: &str| NewSeller {
        name: name.into(),
        email: email.into(),
        url: None,
        categories: vec!["vehicles".into()],
        regions: vec!["Bratislava".into(), "SK-TA".into()],
        invite: true,
    };
    // A feed's seller of the same name is taken over.
    let added = sellers::add(&h.base, &new("Feed  Dealer", "feed@dealer.example")).unwrap();
    assert!(added.adopted_catalogue_seller && !added.adopted_account);
    assert_eq!(added.seller.regions, vec!["SK-BL", "SK-TA"]);
    assert_eq!(added.invite.as_deref(), Some("queued"));
    assert!(f.mails().iter().any(|m| m.to == "feed@dealer.example" && m.text.contains("/signin/link/")));
    let offers: Vec<isto::records::OfferRecord> = h.base.store().read(|rx| rx.all_offers()).unwrap();
    assert_eq!(offers[0].offer.seller.id, added.seller.seller_id);
    // Refusals: the same address, the same name, a buyer's address, bad input.
    assert!(matches!(
        sellers::add(&h.base, &new("Other", "feed@dealer.example")),
        Err(sellers::SellerError::Exists(_))
    ));
    assert!(matches!(
        sellers::add(&h.base, &new("feed dealer", "x@dealer.example")),
        Err(sellers::SellerError::Exists(_))
    ));
    f.buyer("anna@example.com");
    assert!(matches!(sellers::add(&h.base, &new("Anna's", "anna@example.com")), Err(sellers::SellerError::Exists(_))));
    let mut bad = new("Bad", "bad@dealer.example");
    bad.regions = vec!["Atlantis".into()];
    assert!(matches!(sellers::add(&h.base, &bad), Err(sellers::SellerError::Input(_))));
    let mut bad = new("Bad", "bad@dealer.example");
    bad.categories = vec!["boats".into()];
    assert!(matches!(sellers::add(&h.base, &bad), Err(sellers::SellerError::Input(_))));
    assert!(isto::accounts::account_by_email(&h.base, "bad@dealer.example").unwrap().is_none(), "nothing half-made");
    // A seller account made without a profile is taken over.
    let bare = isto::accounts::create_seller(&h.base, "bare@dealer.example", "Bare").unwrap();
    let added = sellers::add(&h.base, &new("Bare", "bare@dealer.example")).unwrap();
    assert!(added.adopted_account);
    assert_eq!(added.seller.account_id, bare);

    let list = sellers::list(&h.base).unwrap();
    assert_eq!(list.len(), 2);
    let table = isto::admin::seller_table(&list);
    assert!(table.starts_with("ACCOUNT") && table.contains("feed@dealer.example") && table.contains("SK-BL, SK-TA"));
}

#[test]
fn admin_commands_go_through_the_running_servers_socket() {
    let f = fixture();
    let settings = f.holder.base.settings().clone();
    let stop = tokio_util::sync::CancellationToken::new();
    let server = {
        let (h, stop) = (f.holder.clone(), stop.clone());
        let socket = {
            let _in_runtime = f.rt.enter();
            isto::admin::AdminSocket::bind(&settings.admin_socket_path()).unwrap()
        };
        f.rt.spawn(socket.run(h, stop))
    };
    use isto::cli::SellerCommand;
    isto::admin::seller_command(
        &settings,
        SellerCommand::Add {
            name: "Socket Dealer".into(),
            email: "socket@dealer.example".into(),
            url: Some("https://socket.example".into()),
            categories: vec!["vehicles".into()],
            regions: vec!["SK".into()],
            invite: false,
            json: true,
        },
    )
    .unwrap();
    let list = sellers::list(&f.holder.base).unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!((list[0].name.as_str(), list[0].regions.clone()), ("Socket Dealer", vec!["SK".to_owned()]));
    isto::admin::seller_command(&settings, SellerCommand::Disable { id: list[0].account_id.clone(), json: false })
        .unwrap();
    assert!(sellers::list(&f.holder.base).unwrap()[0].disabled);
    isto::admin::seller_command(&settings, SellerCommand::List { json: false }).unwrap();
    let e = isto::admin::seller_command(&settings, SellerCommand::Enable { id: "sel_unknown".into(), json: false })
        .unwrap_err();
    assert!(e.to_string().contains("no seller with this id"), "{e}");
    let e = isto::admin::seller_command(
        &settings,
        SellerCommand::Add {
            name: "Socket Dealer".into(),
            email: "other@dealer.example".into(),
            url: None,
            categories: vec![],
            regions: vec![],
            invite: false,
            json: false,
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("named"), "{e}");
    stop.cancel();
    f.rt.block_on(server).unwrap().unwrap();
}

#[test]
fn admin_commands_work_offline() {
    let f = fixture();
    let Fx { dir, holder, app, rt, .. } = f;
    drop(app);
    drop(holder);
    drop(rt);
    let settings = crate::kit::settings(dir.path(), Opts::default());
    use isto::cli::SellerCommand;
    isto::admin::seller_command(
        &settings,
        SellerCommand::Add {
            name: "Offline Dealer".into(),
            email: "offline@dealer.example".into(),
            url: None,
            categories: vec!["property".into()],
            regions: vec!["Brno".into()],
            invite: true,
            json: false,
        },
    )
    .unwrap();
    isto::admin::seller_command(&settings, SellerCommand::List { json: true }).unwrap();
    let h = crate::kit::open_state(dir.path(), crate::kit::clock(), Opts::default());
    let list = sellers::list(&h.base).unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!((list[0].categories.clone(), list[0].regions.clone()), (vec!["property".into()], vec!["CZ-64".into()]));
    let jobs: Vec<(u64, MailJob)> = h.base.store().read(|rx| rx.outbox()).unwrap();
    assert_eq!(jobs.len(), 1, "the invitation waits in the outbox for `isto serve`");
}

/// One JSON-RPC request to `/mcp/seller` of `app` with a bearer token.
fn rpc(f: &Fx, app: &Router, session: Option<&str>, token: &str, body: Value) -> (StatusCode, Option<String>, Value) {
    f.rpc(app, "/mcp/seller", session, &[("authorization", format!("Bearer {token}"))], body)
}

#[test]
fn seller_server_over_http_with_a_real_token() {
    let f = fixture();
    let h = f.holder.clone();
    let s = f.seller("Dealer One", "one@dealer.example", &["vehicles"], &["SK-BL"]);
    let (id, _) = f.consent_intent(octavia(json!({"hiddenLimit": LIMIT})), "secret.buyer@example.com");
    let cookie = f.seller_signs_in("one@dealer.example");
    let token = seller_token(&f, &cookie);
    // The production router: the bearer check in front of /mcp/seller and its service.
    let mcp = f.app.clone();

    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
                      "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (status, sid, out) = rpc(&f, &mcp, None, &token, init);
    assert_eq!(status, StatusCode::OK, "{out}");
    assert!(out["result"]["instructions"].as_str().unwrap().contains("market aggregator"));
    let sid = sid.expect("a session");
    rpc(&f, &mcp, Some(&sid), &token, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let (_, _, list) = rpc(&f, &mcp, Some(&sid), &token, json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 4, "{list}");

    let call = |n: u32, name: &str, args: Value| json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": name, "arguments": args}});
    let (_, _, out) = rpc(&f, &mcp, Some(&sid), &token, call(3, "intent_list_open_intents", json!({})));
    let intents = out["result"]["structuredContent"]["intents"].as_array().unwrap();
    assert_eq!(ids(intents), vec![hd(&h, &s, &id)], "{out}");
    let text: Value = serde_json::from_str(out["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(&text, &out["result"]["structuredContent"]["intents"], "the text content is the bare array");
    let (_, _, out) = rpc(
        &f,
        &mcp,
        Some(&sid),
        &token,
        call(4, "intent_submit_offer", reply(&hd(&h, &s, &id), "Škoda Octavia Combi", 9000.0)),
    );
    assert_eq!(out["result"]["structuredContent"]["accepted"], true, "{out}");
    drain(&h);
    assert_eq!(delivered_titles(&h, &id), vec!["Škoda Octavia Combi"]);
    let whole = out.to_string();
    assert!(!whole.contains("secret.buyer") && !whole.contains("12345"));

    // Disabled: the very next request is refused at the door.
    sellers::set_disabled(&h.base, &s.account_id, true).unwrap();
    let (status, _, _) = rpc(&f, &mcp, Some(&sid), &token, call(5, "intent_list_open_intents", json!({})));
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

/// Issue 10 point 7: a tool the token's scopes do not cover is refused before dispatch
/// with HTTP 403 and the RFC 6750 `insufficient_scope` challenge (MCP "Scope challenge
/// handling"); every 401 carries `resource_metadata`.
#[test]
fn too_little_scope_for_a_tool_is_http_403_insufficient_scope() {
    let f = fixture();
    f.seller("Dealer One", "one@dealer.example", &["vehicles"], &["SK-BL"]);
    let (id, _) = f.consent_intent(octavia(json!({"hiddenLimit": LIMIT})), "secret.buyer@example.com");
    let cookie = f.seller_signs_in("one@dealer.example");
    let token = seller_token_for(&f, &cookie, "demand");
    let mcp = f.app.clone();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
                      "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (status, sid, out) = rpc(&f, &mcp, None, &token, init);
    assert_eq!(status, StatusCode::OK, "{out}");
    let sid = sid.unwrap();
    rpc(&f, &mcp, Some(&sid), &token, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let call = |n: u32, name: &str, args: Value| json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": name, "arguments": args}});
    let host = f.holder.base.settings().public_url.allowed_hosts().into_iter().next().unwrap();
    let raw = |body: Value, auth: Option<&str>| {
        let mut b = Request::post("/mcp/seller")
            .header("host", host.clone())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", sid.as_str())
            .header("mcp-protocol-version", "2025-06-18");
        if let Some(a) = auth {
            b = b.header("authorization", a);
        }
        kit::send(&f.rt, &mcp, b.body(Body::from(body.to_string())).unwrap())
    };
    let metadata = format!("resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp/seller\"", BASE);
    let r = raw(call(2, "intent_submit_offer", reply(&id, "Škoda", 9000.0)), Some(&format!("Bearer {token}")));
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    let challenge = r.headers.get(header::WWW_AUTHENTICATE).unwrap().to_str().unwrap().to_owned();
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    assert!(challenge.contains("error=\"insufficient_scope\""), "{challenge}");
    assert!(challenge.contains("scope=\"demand offers\""), "the token's scopes plus the one needed: {challenge}");
    assert!(challenge.contains(&metadata), "{challenge}");
    assert!(delivered_titles(&f.holder, &id).is_empty(), "nothing was dispatched");
    // In a batch too; the list of open intents needs offers as well.
    let batch = json!([call(3, "intent_list_open_intents", json!({}))]);
    assert_eq!(raw(batch, Some(&format!("Bearer {token}"))).status, StatusCode::FORBIDDEN);
    // A tool the scope covers is dispatched.
    let (status, _, out) =
        rpc(&f, &mcp, Some(&sid), &token, call(4, "intent_demand_summary", json!({"category": "vehicles"})));
    assert_eq!(status, StatusCode::OK, "{out}");
    assert!(out["result"].is_object(), "{out}");
    // Every 401 carries the challenge with resource_metadata.
    for auth in [None, Some("Bearer unknown-token"), Some("Basic eDp5"), Some("Bearer ")] {
        let r = raw(call(5, "intent_demand_summary", json!({})), auth);
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{auth:?}");
        let challenge = r.headers.get(header::WWW_AUTHENTICATE).unwrap().to_str().unwrap();
        assert!(challenge.starts_with("Bearer ") && challenge.contains(&metadata), "{auth:?}: {challenge}");
    }
}

/// Issue 9 point 2: `/mcp/seller` counts each token's grant (account and client) apart
/// from the client address; over its rate a credential gets 429 with `Retry-After`, the
/// other seller's token is served, and the answer never echoes the token.
#[test]
fn requests_are_limited_per_credential() {
    let limits =
        isto::config::Limits { credential_requests_per_minute: 1, credential_burst: 3, ..crate::kit::unlimited() };
    let f = Fx::with(Opts { limits: Some(limits), ..Opts::default() });
    f.seller("Dealer One", "one@dealer.example", &["vehicles"], &["SK-BL"]);
    f.seller("Dealer Two", "two@dealer.example", &["vehicles"], &["SK-BL"]);
    let one = seller_token(&f, &f.seller_signs_in("one@dealer.example"));
    let two = seller_token(&f, &f.seller_signs_in("two@dealer.example"));
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let send = |token: &str| {
        let headers = [("authorization", format!("Bearer {token}"))];
        let host = f.holder.base.settings().public_url.allowed_hosts().into_iter().next().unwrap();
        let mut b = axum::http::Request::post("/mcp/seller")
            .header("host", host)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        for (k, v) in &headers {
            b = b.header(*k, v);
        }
        f.send(b.body(axum::body::Body::from(init.to_string())).unwrap())
    };
    for _ in 0..3 {
        assert_eq!(send(&one).status, StatusCode::OK);
    }
    let r = send(&one);
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "{}", r.body);
    assert!(r.headers.get(header::RETRY_AFTER).is_some());
    assert!(r.body.contains("with this token") && !r.body.contains(&one), "{}", r.body);
    // Another seller's token (same client address: the kit's requests have none) is served.
    assert_eq!(send(&two).status, StatusCode::OK);
    // A wrong token is the bearer check's 401, never counted per credential.
    assert_eq!(send("not-a-token").status, StatusCode::UNAUTHORIZED);
}

/// Issue 10 point 2: a reply answered but not yet matched (the holder killed between the
/// answer and the match) is matched after a restart — by the reply matching's first tick —
/// and reaches its buyer once, in a digest that the domain's scheduler queues without the
/// mail worker.
#[test]
fn a_queued_reply_survives_a_restart_and_is_delivered_by_the_first_tick_after_it() {
    let f = fixture();
    let s = f.seller("Dealer One", "one@dealer.example", &["vehicles"], &["SK-BL"]);
    let (id, _) = f.consent_intent(octavia(json!({"hiddenLimit": 12000})), "buyer@example.com");
    let (_, v, _) = call(
        &f.holder,
        Some(&grant(&s)),
        "intent_submit_offer",
        reply(&hd(&f.holder, &s, &id), "Škoda Octavia Combi", 9000.0),
    );
    assert_eq!(v["accepted"], true);
    assert_eq!(pending(&f.holder), 1);
    assert!(delivered_titles(&f.holder, &id).is_empty());
    let f = f.restart();
    let h = f.holder.clone();
    assert_eq!(pending(&h), 1, "the queue is in the store");
    // The domain's scheduler, as `isto serve` starts it, and no mail worker: the reply
    // matching's first tick comes at once, and the digest it makes due is queued by the
    // scheduler's own digest pass (the worker only sends).
    let digests = |h: &AppState| {
        kit::mails(h)
            .into_iter()
            .filter(|m| m.to == "buyer@example.com" && m.text.contains("Škoda Octavia Combi"))
            .count()
    };
    assert_eq!(digests(&h), 0);
    let stop = tokio_util::sync::CancellationToken::new();
    let scheduler = f.rt.spawn(h.scheduler().run(stop.clone()));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while (delivered_titles(&h, &id).is_empty() || digests(&h) == 0) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(delivered_titles(&h, &id), vec!["Škoda Octavia Combi"]);
    assert_eq!(pending(&h), 0);
    assert_eq!(digests(&h), 1, "the scheduler queued the digest, no worker running");
    stop.cancel();
    f.rt.block_on(scheduler).unwrap();
    // Matched once: another pass delivers nothing more.
    drain(&h);
    assert_eq!(delivered_titles(&h, &id).len(), 1);
}

/// Issue 10 point 2: an intent withdrawn after a reply was answered, before the worker
/// matched it, never gets it — no delivery, no digest.
#[test]
fn a_reply_to_an_intent_withdrawn_before_the_drain_is_not_delivered() {
    let f = fixture();
    let h = &f.holder;
    let s = f.seller("Dealer One", "one@dealer.example", &["vehicles"], &["SK-BL"]);
    let (id, code) = f.consent_intent(octavia(json!({})), "buyer@example.com");
    let (_, v, _) =
        call(h, Some(&grant(&s)), "intent_submit_offer", reply(&hd(&f.holder, &s, &id), "Škoda Octavia Combi", 9000.0));
    assert_eq!(v["accepted"], true);
    h.intents.withdraw_by_code(&code, None).unwrap();
    let mails_before = f.mails().len();
    f.clock.advance(time::Duration::hours(2));
    assert_eq!(drain(h), 0, "no digest");
    assert!(delivered_titles(h, &id).is_empty());
    assert_eq!(pending(h), 0, "dropped, not kept for later");
    assert_eq!(f.mails().len(), mails_before);
}

/// Issue 10 point 2: what `intent_submit_offer` does before it answers does not depend
/// on the hidden limit — the answers below and above it are identical, and so is the
/// answer when the hidden limit cannot even be opened (sealed under a key this holder
/// lacks), which shows the answer path never opens it. Only the worker's match, later,
/// tells the prices apart.
#[test]
fn the_answer_does_not_touch_the_hidden_limit() {
    let f = fixture();
    let h = &f.holder;
    let s = f.seller("Dealer One", "one@dealer.example", &["vehicles"], &["SK-BL"]);
    let (id, _) = f.consent_intent(octavia(json!({"hiddenLimit": 12000})), "buyer@example.com");
    let (sealed_elsewhere, _) = f.consent_intent(octavia(json!({"hiddenLimit": 12000})), "other@example.com");
    {
        // Re-seal the second intent's limit under a foreign key, in the store only.
        let mut rec: isto::records::IntentRecord =
            h.base.store().read(|rx| rx.intent(&sealed_elsewhere)).unwrap().unwrap();
        rec.hidden_limit = Some(isto::crypto::KeyRing::ephemeral().seal_str("12000").unwrap());
        let due = isto::base::sweep_due(&rec);
        h.base
            .store()
            .write(|tx| tx.put_intent(&isto::store::IntentKey::for_tests(), &rec.id, &rec, true, due))
            .unwrap();
    }
    let answer = |intent: &str, price: f64| {
        let (err, mut v, _) =
            call(h, Some(&grant(&s)), "intent_submit_offer", reply(&hd(h, &s, intent), "Škoda Octavia Combi", price));
        assert!(!err, "{v}");
        assert!(v["offerId"].as_str().unwrap().starts_with("off_"));
        v.as_object_mut().unwrap().remove("offerId");
        v
    };
    let answers = [answer(&id, 11000.0), answer(&id, 15000.0), answer(&sealed_elsewhere, 11000.0)];
    assert!(answers.iter().all(|a| a == &json!({"accepted": true})), "{answers:?}");
    assert!(delivered_titles(h, &id).is_empty() && delivered_titles(h, &sealed_elsewhere).is_empty());
    drain(h);
    assert_eq!(isto::deliveries::list(&h.base, &id, None, 10).unwrap().0.len(), 1, "only the one below 12 000");
    assert!(delivered_titles(h, &sealed_elsewhere).is_empty(), "an unopenable limit matches nothing");
    assert_eq!(pending(h), 0);
}

/// Every RFC 3339 time in `v` (any string that parses as one), to check their precision.
fn times_in(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) if isto::clock::parse_rfc3339(s).is_ok() => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| times_in(x, out)),
        Value::Object(o) => o.values().for_each(|x| times_in(x, out)),
        _ => {}
    }
}

fn whole_minute(t: &str) -> bool {
    isto::clock::parse_rfc3339(t).is_ok_and(|t| t.second() == 0 && t.nanosecond() == 0)
}

/// Issue 10 point 3 (PROTOCOL.md §2 "Seller pseudonyms and handles"): two sellers list
/// the same intent and compare notes — its id, the pseudonym and the exact times differ
/// or are coarse; seller B cannot reply with seller A's handle (refused exactly like an
/// unknown intent), A can, and B can with its own.
#[test]
fn two_sellers_see_nothing_in_common_for_one_intent() {
    let f = fixture();
    let h = &f.holder;
    let a = f.seller("Dealer A", "a@dealer.example", &["vehicles"], &["SK-BL"]);
    let b = f.seller("Dealer B", "b@dealer.example", &[], &[]);
    f.clock.advance(time::Duration::seconds(17) + time::Duration::microseconds(123_456));
    let soon = isto::clock::rfc3339(isto::clock::Clock::now(&*f.clock) + time::Duration::days(20));
    let (id, _) = f.consent_intent(octavia(json!({"validUntil": soon})), "anna@example.com");
    f.clock.advance(time::Duration::seconds(5));
    let (other, _) = f.consent_intent(octavia(json!({})), "bob@example.com");

    let (_, pa, whole_a) = call(h, Some(&grant(&a)), "intent_list_open_intents", json!({}));
    let (_, pb, whole_b) = call(h, Some(&grant(&b)), "intent_list_open_intents", json!({}));
    let (la, lb) = (pa["intents"].as_array().unwrap(), pb["intents"].as_array().unwrap());
    assert_eq!((la.len(), lb.len()), (2, 2));
    let (ha, hb) = (hd(h, &a, &id), hd(h, &b, &id));
    let ia = la.iter().find(|i| i["id"] == ha.as_str()).unwrap();
    let ib = lb.iter().find(|i| i["id"] == hb.as_str()).unwrap();
    assert!(ha.starts_with("hdl_") && hb.starts_with("hdl_"));
    assert_ne!(ia["id"], ib["id"], "one intent, two unrelated handles");
    assert_ne!(ia["pseudonym"], ib["pseudonym"]);
    for whole in [&whole_a, &whole_b] {
        for secret in [id.as_str(), other.as_str(), &id[4..], &other[4..]] {
            assert!(!whole.contains(secret), "the intent id in a seller's view: {whole}");
        }
    }
    assert!(!whole_a.contains(&hb) && !whole_b.contains(&ha), "a handle is only its seller's");
    // Times a seller sees are whole minutes: validUntil a day, nextSince a minute.
    for page in [&pa, &pb] {
        let mut times = Vec::new();
        times_in(page, &mut times);
        assert!(times.len() >= 3, "{page}");
        assert!(times.iter().all(|t| whole_minute(t)), "{times:?}");
    }
    let exact = isto::clock::parse_rfc3339(&soon).unwrap();
    let shown = isto::clock::parse_rfc3339(ia["validUntil"].as_str().unwrap()).unwrap();
    assert!(shown <= exact && exact - shown < time::Duration::days(1), "{shown} for {exact}");
    assert_eq!((shown.hour(), shown.minute()), (0, 0), "validUntil is only its day: {shown}");
    // Within one minute the order is each seller's own (by its handles), not the
    // holder's order of ids or of seconds.
    let order = |l: &[Value]| l.iter().map(|i| i["id"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    for (l, p) in [(la, &a), (lb, &b)] {
        assert_eq!(order(l), hds(h, p, &[&id, &other]), "sorted by handle within the minute");
    }

    // B with A's handle: refused exactly as an unknown intent; A's own works, B's own too.
    let unknown = call(h, Some(&grant(&b)), "intent_submit_offer", reply("hdl_nosuchhandle", "Škoda Octavia", 9000.0));
    let foreign = call(h, Some(&grant(&b)), "intent_submit_offer", reply(&ha, "Škoda Octavia", 9000.0));
    assert_eq!(foreign.1, json!({"accepted": false, "reason": "not open for replies"}));
    assert_eq!(foreign.2, unknown.2, "one indistinguishable answer");
    let by_id = call(h, Some(&grant(&a)), "intent_submit_offer", reply(&id, "Škoda Octavia", 9000.0));
    assert_eq!(by_id.2, unknown.2, "the intent id itself is no handle");
    drain(h);
    assert!(delivered_titles(h, &id).is_empty());
    let (_, v, _) = call(h, Some(&grant(&a)), "intent_submit_offer", reply(&ha, "Škoda Octavia A", 9000.0));
    assert_eq!(v["accepted"], true, "{v}");
    let (_, v, _) = call(h, Some(&grant(&b)), "intent_submit_offer", reply(&hb, "Škoda Octavia B", 9000.0));
    assert_eq!(v["accepted"], true, "{v}");
    drain(h);
    assert_eq!(delivered_titles(h, &id), vec!["Škoda Octavia A", "Škoda Octavia B"]);
    // The buyer sees its own intent id in the replies' inReplyTo (nothing of the sellers' handles).
    let d = isto::deliveries::list(&h.base, &id, None, 10).unwrap().0;
    assert!(d.iter().all(|d| d.offer.in_reply_to.as_deref() == Some(id.as_str())), "{d:?}");
    // Stable: the same handles after a restart (the handle key is kept in the data dir).
    let f = f.restart();
    assert_eq!(ids(&open_list(&f.holder, &a, json!({}))), hds(&f.holder, &a, &[&id, &other]));
    assert!(open_list(&f.holder, &a, json!({})).iter().any(|i| i["id"] == ha.as_str()));
}

/// The `since` cursor counts in minutes: the current minute is listed again (more may
/// change in it), a minute that is over is not, and nothing is skipped.
#[test]
fn the_since_cursor_counts_in_whole_minutes_and_skips_nothing() {
    let f = fixture();
    let h = &f.holder;
    let s = f.seller("Dealer One", "one@dealer.example", &["vehicles"], &["SK-BL"]);
    f.clock.advance(time::Duration::seconds(10));
    let (first, _) = f.consent_intent(octavia(json!({})), "a@example.com");
    let (_, page, _) = call(h, Some(&grant(&s)), "intent_list_open_intents", json!({}));
    let next = page["nextSince"].as_str().unwrap().to_owned();
    assert!(whole_minute(&next), "{next}");
    // Later in the same minute: the first is listed again, the second too.
    f.clock.advance(time::Duration::seconds(20));
    let (second, _) = f.consent_intent(octavia(json!({})), "b@example.com");
    let (_, page, _) = call(h, Some(&grant(&s)), "intent_list_open_intents", json!({"since": next}));
    assert_eq!(ids(page["intents"].as_array().unwrap()), hds(h, &s, &[&first, &second]));
    // Once the minute is over, nextSince moves past it.
    f.clock.advance(time::Duration::minutes(2));
    let (_, page, _) = call(h, Some(&grant(&s)), "intent_list_open_intents", json!({"since": next}));
    let after = page["nextSince"].as_str().unwrap().to_owned();
    assert!(whole_minute(&after) && after > next, "{after} after {next}");
    assert!(open_list(h, &s, json!({"since": after})).is_empty());
    let (third, _) = f.consent_intent(octavia(json!({})), "c@example.com");
    assert_eq!(ids(&open_list(h, &s, json!({"since": after}))), vec![hd(h, &s, &third)]);
    // Paging by one: every intent comes, none twice once its minute is over.
    f.clock.advance(time::Duration::minutes(2));
    let mut seen = Vec::new();
    let mut since: Option<String> = None;
    for _ in 0..10 {
        let args = match &since {
            Some(t) => json!({"limit": 1, "since": t}),
            None => json!({"limit": 1}),
        };
        let (_, page, _) = call(h, Some(&grant(&s)), "intent_list_open_intents", args);
        let got = ids(page["intents"].as_array().unwrap());
        if got.is_empty() {
            break;
        }
        seen.extend(got);
        since = page["nextSince"].as_str().map(str::to_owned);
    }
    seen.sort();
    assert_eq!(seen, hds(h, &s, &[&first, &second, &third]));
}

/// Property: over generated sellers and intents, no
/// seller-visible value of an intent equals another seller's (handle, pseudonym), a
/// handle never shows the intent id, and every time a seller sees is a whole minute.
#[test]
fn property_no_seller_visible_value_is_shared_between_sellers() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    let f = fixture();
    let h = &f.holder;
    let case = std::cell::Cell::new(0u32);
    let regions = prop_oneof![Just(vec![]), Just(vec!["SK"]), Just(vec!["SK-BL"])];
    let sellers = proptest::collection::vec(regions, 2..=4);
    // Per intent: the buyer (one of two), seconds to wait before it, validUntil in days
    // and seconds, and whether it is an account's intent.
    let intents = proptest::collection::vec((0..2usize, 0..150i64, 1..200i64, 0..86_400i64, any::<bool>()), 1..=4);
    let mut runner = TestRunner::new(Config { cases: 12, failure_persistence: None, ..Config::default() });
    runner
        .run(&(sellers, intents), |(regions, specs)| {
            let n = case.get();
            case.set(n + 1);
            // Each case in an hour of its own: the consent quota (`consents_per_client_per_hour`,
            // 20) counts the fixture's one client address over all cases, and up to 48 consents
            // in one hour made the property fail at random.
            f.clock.advance(time::Duration::hours(1));
            let sellers: Vec<SellerProfile> = regions
                .iter()
                .enumerate()
                .map(|(i, r)| f.seller(&format!("Dealer {n} {i}"), &format!("d{n}x{i}@dealer.example"), &[], r))
                .collect();
            let mut made = Vec::new();
            for (i, (buyer, wait, days, secs, owned)) in specs.iter().enumerate() {
                f.clock.advance(time::Duration::seconds(*wait) + time::Duration::microseconds(i as i64 * 7919));
                let until =
                    isto::clock::Clock::now(&*f.clock) + time::Duration::days(*days) + time::Duration::seconds(*secs);
                let args = octavia(json!({"validUntil": isto::clock::rfc3339(until), "area": "Bratislava"}));
                let email = format!("p{n}x{buyer}@example.com");
                let id = if *owned {
                    let account = match isto::accounts::account_by_email(&h.base, &email).unwrap() {
                        Some(a) => a.id,
                        None => f.buyer(&email).0,
                    };
                    f.owned_intent(&account, args)
                } else {
                    f.consent_intent(args, &email).0
                };
                made.push(id);
            }
            let views: Vec<(Value, String)> = sellers
                .iter()
                .map(|p| {
                    let (err, v, whole) = call(h, Some(&grant(p)), "intent_list_open_intents", json!({"limit": 100}));
                    assert!(!err, "{v}");
                    (v, whole)
                })
                .collect();
            for (p, (v, whole)) in sellers.iter().zip(&views) {
                let mut times = Vec::new();
                times_in(v, &mut times);
                prop_assert!(times.iter().all(|t| whole_minute(t)), "{:?}", times);
                for id in &made {
                    prop_assert!(!whole.contains(&id[4..]), "an intent id in a seller's view");
                    let listed: Vec<&Value> =
                        v["intents"].as_array().unwrap().iter().filter(|i| i["id"] == hd(h, p, id).as_str()).collect();
                    prop_assert_eq!(listed.len(), 1, "each intent once, under the seller's handle");
                }
            }
            for id in &made {
                let seen: Vec<(String, String)> = sellers
                    .iter()
                    .zip(&views)
                    .map(|(p, (v, _))| {
                        let item = v["intents"].as_array().unwrap().iter().find(|i| i["id"] == hd(h, p, id).as_str());
                        let item = item.unwrap();
                        (item["id"].as_str().unwrap().to_owned(), item["pseudonym"].as_str().unwrap().to_owned())
                    })
                    .collect();
                for (x, one) in seen.iter().enumerate() {
                    for two in &seen[x + 1..] {
                        prop_assert_ne!(&one.0, &two.0, "handles");
                        prop_assert_ne!(&one.1, &two.1, "pseudonyms");
                    }
                }
                for (p, (_, whole)) in sellers.iter().zip(&views) {
                    for q in &sellers {
                        if q.seller_id != p.seller_id {
                            prop_assert!(!whole.contains(&hd(h, q, id)), "another seller's handle in a view");
                        }
                    }
                }
            }
            Ok(())
        })
        .unwrap();
}

#[path = "seller_days.rs"]
mod days;
