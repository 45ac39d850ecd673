//! Property tests for the hidden limit:
//! for any two hidden limits, every answer that a buyer agent, a seller or the public can
//! get is the same (PROTOCOL.md §2 "hiddenLimit", §3, §5).
//!
//! Each case generates intents (statement, category, criteria, area, a budget with or
//! without min and max, buyBy, visibility, made through `/mcp` + the consent pages or by
//! a signed-in buyer on `/mcp/buyer`), catalogue offers and seller replies with prices on
//! both sides of the limits, sellers (categories, regions) and the calls of every
//! caller. It builds **two holders** — two redb files in temp dirs, each with its own
//! [`ManualClock`](isto::clock::ManualClock) advanced in step — that get the very same
//! calls in the same order and differ only in the hidden limits given (at publish and in
//! hiddenLimit-only updates). Then it compares the two transcripts answer by answer.
//!
//! **What is compared.** Every answer is kept as text: a tool result as its whole JSON
//! (`isError`, `content`, `structuredContent`), a page as status, `Location` and body.
//! Random values are renamed, per holder, in order of first appearance (the n-th new
//! one becomes `<n>`): ids (`int_…`, `off_…`, `sel_…`, `acc_…`, any future
//! `prefix_` + base32 handle), 160-bit tokens and MACs (intentCode, consent/manage URL
//! tokens, CSRF MACs: base64url runs of 16 or more characters with a digit or a capital),
//! and seller pseudonyms (`buyer-…`). Prices, counts, timestamps and every other
//! character are compared as they are. Orderings that could fall back to a random value
//! (the open-intents feed orders by the minute of the last change, then by handle) are
//! made deterministic by advancing both clocks by 61 seconds after every step.
//!
//! - **Sellers and the public** (always identical): `intent_list_open_intents` (whole
//!   feed and `since` feed, after publishing, after updates, after withdrawals),
//!   `intent_submit_offer` answers (accepted, refused, reply limit), `intent_search_offers`
//!   and `intent_demand_summary` on `/mcp`, `/mcp/buyer` and `/mcp/seller`, the consent
//!   page (GET and POST: anyone holding the link), `/seller/intents`, `/seller/demand`,
//!   `/.well-known/isto-intents` and `/`.
//! - **The buyer's agent and the person's own pages** (`intent_publish_intent`,
//!   `intent_get_intent`, `intent_update_intent` — of other fields, of `budget.min` alone
//!   between the two limits (the issue's probe), of `hiddenLimit` alone —,
//!   `intent_withdraw_intent`, `intent_list_matches`, `/confirm/…`, `/results/…`, `/me`,
//!   `/me/intents/…`): what is delivered to the person depends on the hidden limit by
//!   design, so these are compared exactly only when both holders have delivered the
//!   same offers to the same intents at the same times (checked in the store just before
//!   and just after the call). Otherwise the JSON answers that carry no delivery list (publish, get, update,
//!   withdraw) are still compared with `extensions.matchCount` masked, and the delivery
//!   lists and the person's HTML pages are not compared.
//!
//! - **The MCP App's view** ([`view`]): the same reads as a host with the MCP App gets
//!   them, the view's data included, compared by the same rules.
//!
//! Also checked in every case: every sealed hidden limit has the same ciphertext length,
//! whatever its digits (point 5), and a hiddenLimit-only update leaves the stored
//! `updatedAt` as it was (point 1).
//!
//! The delivery lists and pages compared include the match explanations in words
//! (`extensions.reasons`, the results page's "Why this offer"), and
//! [`explanations_do_not_depend_on_the_hidden_limit`] checks them on their own: the words
//! of `intent_list_matches`, the digest mail and the results page are the same for two
//! hidden limits above the same offers (1 EUR or far under) and never name a limit.
//!
//! Cases: 32 by default (`PROPTEST_CASES=256 cargo test --test it hidden_limit` runs
//! more); each builds two holders, so a case costs tens of milliseconds in a debug build.

use axum::http::StatusCode;
use isto::oauth::Grant;
use isto::protocol::Money;
use isto::records::{IntentRecord, OfferInput};
use isto::sellers::{self, NewSeller, SellerProfile};
use isto::store::Reads;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{json, Value};
use std::collections::HashMap;

use crate::kit::buyer_grant;

mod delivery_bit;
use crate::kit::{Fx, Opts, Resp, START};

mod view;

// ---------------------------------------------------------------------------
// what a case is made of

/// Vehicle models and property types the generated intents and offers use.
const MODELS: [&str; 3] = ["Octavia", "Fabia", "Superb"];
const TYPES: [&str; 2] = ["byt", "dom"];
/// Areas as buyers and sellers write them.
const AREAS: [&str; 6] = ["SK", "SK-BL", "Bratislava", "Košice", "CZ", "Brno"];
/// Seller regions (empty: everywhere).
const SELLER_REGIONS: [&[&str]; 4] = [&[], &["SK-BL"], &["SK"], &["CZ", "SK-KI"]];

#[derive(Debug, Clone)]
enum BudgetSpec {
    None,
    Max(f64),
    Min(f64),
    MinMax(f64, f64),
}

impl BudgetSpec {
    fn min(&self) -> f64 {
        match self {
            BudgetSpec::Min(m) | BudgetSpec::MinMax(m, _) => *m,
            _ => 0.0,
        }
    }

    fn json(&self) -> Option<Value> {
        match self {
            BudgetSpec::None => None,
            BudgetSpec::Max(x) => Some(json!({"max": x, "currency": "EUR"})),
            BudgetSpec::Min(m) => Some(json!({"min": m, "currency": "EUR"})),
            BudgetSpec::MinMax(m, x) => Some(json!({"min": m, "max": x, "currency": "EUR"})),
        }
    }
}

/// A change of other fields than the hidden limit (`intent_update_intent`).
#[derive(Debug, Clone)]
enum Change {
    Statement,
    BudgetMax(f64),
    BuyBy(u32),
    RemoveCriteria,
    Visibility,
    ValidUntilEarlier,
}

#[derive(Debug, Clone)]
struct IntentSpec {
    vehicles: bool,
    kind: usize,
    with_criteria: bool,
    area: usize,
    budget: BudgetSpec,
    buy_by_days: Option<u32>,
    pseudonymous: bool,
    /// Published by the signed-in buyer on `/mcp/buyer` (else through `/mcp` and the
    /// consent pages, by person `email`).
    owned: bool,
    email: usize,
    /// The hidden limits of holder A and holder B at publish…
    limits: (f64, f64),
    /// …and in the hiddenLimit-only update.
    new_limits: (f64, f64),
    change: Change,
    withdraw: bool,
}

#[derive(Debug, Clone)]
struct OfferSpec {
    vehicles: bool,
    kind: usize,
    area: usize,
    price: f64,
    /// Imported after the intents (matched as a new offer) rather than before.
    late: bool,
}

#[derive(Debug, Clone)]
struct SellerSpec {
    /// 0: every category, 1: vehicles, 2: property.
    categories: usize,
    regions: usize,
    /// The prices of its replies, sent to each of the first two intents open to it (a
    /// fourth reply to one intent is refused by the reply limit).
    prices: Vec<f64>,
}

#[derive(Debug, Clone)]
struct Case {
    intents: Vec<IntentSpec>,
    offers: Vec<OfferSpec>,
    sellers: Vec<SellerSpec>,
}

/// Amounts in EUR around the generated budgets and prices.
fn amount() -> impl Strategy<Value = f64> {
    prop_oneof![
        (5u32..900).prop_map(|h| f64::from(h) * 100.0),
        500.0f64..90_000.0,
        (1u32..400).prop_map(|k| f64::from(k) * 1000.0 + 0.5),
    ]
}

/// A hidden limit no lower than `min` (the publish rule for values given in one call):
/// mostly near the prices, sometimes far away, with many or few digits.
fn limit(min: f64) -> BoxedStrategy<f64> {
    let near = (min.max(1.0)..min.max(1.0) + 90_000.0).boxed();
    let exact = (1u32..900).prop_map(move |h| min.ceil() + f64::from(h) * 100.0).boxed();
    let huge = (1.0e6f64..1.0e12).prop_filter("≥ min", move |v| *v >= min).boxed();
    if min > 0.0 {
        prop_oneof![6 => near, 3 => exact, 1 => huge].boxed()
    } else {
        let tiny = prop_oneof![1.0e-30f64..1.0, Just(0.01), Just(1.0e-300)].boxed();
        prop_oneof![6 => near, 3 => exact, 1 => huge, 1 => tiny].boxed()
    }
}

fn budget() -> impl Strategy<Value = BudgetSpec> {
    prop_oneof![
        Just(BudgetSpec::None),
        amount().prop_map(BudgetSpec::Max),
        amount().prop_map(BudgetSpec::Min),
        (amount(), amount()).prop_map(|(a, b)| BudgetSpec::MinMax(a.min(b), a.max(b))),
    ]
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        Just(Change::Statement),
        amount().prop_map(Change::BudgetMax),
        (0u32..500).prop_map(Change::BuyBy),
        Just(Change::RemoveCriteria),
        Just(Change::Visibility),
        Just(Change::ValidUntilEarlier),
    ]
}

fn intent() -> impl Strategy<Value = IntentSpec> {
    (
        any::<bool>(),
        0usize..3,
        any::<bool>(),
        0..AREAS.len(),
        budget(),
        proptest::option::of(0u32..500),
        prop::bool::weighted(0.75),
        any::<bool>(),
        0usize..2,
        change(),
        prop::bool::weighted(0.3),
    )
        .prop_flat_map(
            |(
                vehicles,
                kind,
                with_criteria,
                area,
                budget,
                buy_by_days,
                pseudonymous,
                owned,
                email,
                change,
                withdraw,
            )| {
                let min = budget.min();
                ((limit(min), limit(min)), (limit(min), limit(min))).prop_map(move |(limits, new_limits)| IntentSpec {
                    vehicles,
                    kind,
                    with_criteria,
                    area,
                    budget: budget.clone(),
                    buy_by_days,
                    pseudonymous,
                    owned,
                    email,
                    limits,
                    new_limits,
                    change: change.clone(),
                    withdraw,
                })
            },
        )
}

fn offer() -> impl Strategy<Value = OfferSpec> {
    (prop::bool::weighted(0.7), 0usize..3, 0..AREAS.len(), amount(), any::<bool>())
        .prop_map(|(vehicles, kind, area, price, late)| OfferSpec { vehicles, kind, area, price, late })
}

fn seller() -> impl Strategy<Value = SellerSpec> {
    (0usize..3, 0..SELLER_REGIONS.len(), prop::collection::vec(amount(), 1..=4))
        .prop_map(|(categories, regions, prices)| SellerSpec { categories, regions, prices })
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(intent(), 1..=4),
        prop::collection::vec(offer(), 0..=5),
        prop::collection::vec(seller(), 1..=2),
    )
        .prop_map(|(intents, offers, sellers)| Case { intents, offers, sellers })
}

// ---------------------------------------------------------------------------
// one holder and its transcript

/// How an answer is compared (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Seen by sellers or the public: always identical.
    Open,
    /// The buyer's agent, no delivery list: identical when the deliveries are, else with
    /// `matchCount` masked.
    Own,
    /// A delivery list or the person's page: identical when the deliveries are.
    OwnDeliveries,
}

/// One answer: what it is, how it is compared, the text, and the deliveries (per intent,
/// the delivered offers' titles and the delivery times) just before and just after it.
struct Entry {
    label: String,
    kind: Kind,
    text: String,
    before: Vec<Vec<String>>,
    after: Vec<Vec<String>>,
}

/// What one intent is known by in one holder.
#[derive(Default, Clone)]
struct Known {
    id: String,
    code: Option<String>,
    consent: Option<String>,
    manage: Option<String>,
    statement: String,
}

struct Side {
    fx: Fx,
    /// A: 0, B: 1 (which of each limit pair this holder gets).
    which: usize,
    buyer: String,
    buyer_cookie: String,
    sellers: Vec<(SellerProfile, String)>,
    intents: Vec<Known>,
    /// Per seller: the `nextSince` of its last full feed.
    since: Vec<Option<String>>,
    log: Vec<Entry>,
}

fn pick(pair: (f64, f64), which: usize) -> f64 {
    if which == 0 {
        pair.0
    } else {
        pair.1
    }
}

fn seller_grant(p: &SellerProfile) -> Grant {
    Grant {
        account_id: p.account_id.clone(),
        role: "seller".into(),
        client_id: "client".into(),
        scopes: vec!["offers".into(), "demand".into()],
        resource: "https://holder.example/mcp/seller".into(),
    }
}

fn result_text(r: Option<impl serde::Serialize>) -> String {
    serde_json::to_value(r.expect("known tool")).unwrap().to_string()
}

fn structured(text: &str) -> Value {
    let v: Value = serde_json::from_str(text).unwrap();
    v["structuredContent"].clone()
}

fn page_text(r: &Resp) -> String {
    format!("{} {}\n{}", r.status.as_u16(), r.location(), r.body)
}

fn token_after(text: &str, marker: &str) -> Option<String> {
    let i = text.find(marker)?;
    Some(text[i + marker.len()..].split(|c: char| c.is_whitespace() || c == '"').next()?.to_owned())
}

impl Side {
    fn new(case: &Case, which: usize) -> Side {
        let fx = Fx::with(Opts { demand_k: Some(1), ..Opts::default() });
        let base = &fx.holder.base;
        // The buyer signs up (double opt-in) and so has accepted the consent text.
        isto::accounts::request_signup(
            base,
            isto::accounts::SignupRequest {
                email: "owner.person@example.com".into(),
                password_hash: None,
                lang: "en".into(),
                next: "/me".into(),
            },
        )
        .unwrap();
        let token = fx.token_from_outbox("/signup/confirm/");
        let (session, _) = isto::accounts::confirm_signup(base, &token).unwrap().unwrap();
        let buyer = isto::accounts::account_by_email(base, "owner.person@example.com").unwrap().unwrap().id;
        let buyer_cookie = format!("{}={}", isto::web::SESSION_COOKIE, session.expose());
        let mut seller_list = Vec::new();
        for (n, s) in case.sellers.iter().enumerate() {
            let email = format!("seller{n}@dealer.example");
            let categories: Vec<String> = match s.categories {
                1 => vec!["vehicles".into()],
                2 => vec!["property".into()],
                _ => vec![],
            };
            let added = sellers::add(
                base,
                &NewSeller {
                    name: format!("Dealer {n}"),
                    email: email.clone(),
                    url: Some(format!("https://dealer{n}.example")),
                    categories,
                    regions: SELLER_REGIONS[s.regions].iter().map(|r| r.to_string()).collect(),
                    invite: false,
                },
            )
            .unwrap();
            let profile = sellers::profile(base, &added.seller.account_id).unwrap().unwrap();
            isto::accounts::request_signin_link(base, &email, "/seller/intents", "en").unwrap();
            let token = fx.token_from_outbox("/signin/link/");
            let (session, _) = isto::accounts::use_signin_link(base, &token).unwrap().unwrap();
            seller_list.push((profile, format!("{}={}", isto::web::SESSION_COOKIE, session.expose())));
        }
        let n = case.sellers.len();
        Side {
            fx,
            which,
            buyer,
            buyer_cookie,
            sellers: seller_list,
            intents: Vec::new(),
            since: vec![None; n],
            log: Vec::new(),
        }
    }

    /// Per intent (in generation order), the titles of the offers delivered to it and,
    /// apart, the delivery times (which offer of one matching run got which microsecond
    /// follows the random offer ids).
    fn deliveries(&self) -> Vec<Vec<String>> {
        self.intents
            .iter()
            .map(|k| {
                let list = isto::deliveries::list(&self.fx.holder.base, &k.id, None, 1000).unwrap().0;
                let mut titles: Vec<String> = list.iter().map(|d| d.offer.title.clone()).collect();
                let mut times: Vec<String> = list.into_iter().map(|d| d.delivered_at).collect();
                titles.sort();
                times.sort();
                titles.extend(times);
                titles
            })
            .collect()
    }

    /// After a publish answer: its entry's deliveries include the new intent's (none
    /// before, what the publish delivered after).
    fn published(&mut self) {
        let after = self.deliveries();
        let e = self.log.last_mut().unwrap();
        e.before.push(Vec::new());
        e.after = after;
    }

    /// Runs `f`, logging its answer with the deliveries around it.
    fn record(&mut self, label: String, kind: Kind, f: impl FnOnce(&Side) -> String) -> String {
        let before = self.deliveries();
        let text = f(self);
        let after = self.deliveries();
        self.log.push(Entry { label, kind, text: text.clone(), before, after });
        text
    }

    fn public_tool(&mut self, label: &str, kind: Kind, tool: &'static str, args: Value) -> String {
        self.record(format!("/mcp {tool} {label}"), kind, |s| {
            result_text(crate::kit::mcp_call(&s.fx.holder, tool, &args))
        })
    }

    fn buyer_tool(&mut self, label: &str, kind: Kind, tool: &'static str, args: Value) -> String {
        self.record(format!("/mcp/buyer {tool} {label}"), kind, |s| {
            result_text(crate::kit::mcp_call_as(
                &s.fx.holder,
                isto::mcp::Endpoint::Buyer,
                Some(&buyer_grant(&s.buyer)),
                tool,
                &args,
            ))
        })
    }

    fn seller_tool(&mut self, n: usize, label: &str, tool: &'static str, args: Value) -> String {
        self.record(format!("/mcp/seller#{n} {tool} {label}"), Kind::Open, |s| {
            result_text(crate::kit::mcp_call_as(
                &s.fx.holder,
                isto::mcp::Endpoint::Seller,
                Some(&seller_grant(&s.sellers[n].0)),
                tool,
                &args,
            ))
        })
    }

    fn page(&mut self, kind: Kind, path: &str, cookie: Option<String>) -> Resp {
        let before = self.deliveries();
        let r = self.fx.get(path, cookie.as_deref());
        let after = self.deliveries();
        self.log.push(Entry { label: format!("GET {}", mask_path(path)), kind, text: page_text(&r), before, after });
        r
    }

    fn post(&mut self, kind: Kind, path: &str, fields: &[(&str, &str)]) -> Resp {
        let before = self.deliveries();
        let r = self.fx.post(path, fields, None);
        let after = self.deliveries();
        self.log.push(Entry { label: format!("POST {}", mask_path(path)), kind, text: page_text(&r), before, after });
        r
    }

    /// One step: a minute and a second, so that every change falls in a minute of its
    /// own (sellers see change times to the minute and, within one, an order by
    /// handle, which is random per holder).
    fn tick(&self) {
        self.fx.clock.advance(time::Duration::seconds(61));
    }

    fn stored(&self, i: usize) -> IntentRecord {
        self.fx.holder.base.store().read(|rx| rx.intent(&self.intents[i].id)).unwrap().unwrap()
    }

    /// The id under which seller `n` sees intent `i` in its last feed answer `feed`
    /// (found by the intent's unique statement), if it is open to it.
    fn seller_visible(&self, feed: &str, i: usize) -> Option<String> {
        let v = structured(feed);
        v["intents"]
            .as_array()?
            .iter()
            .find(|x| x["statement"] == self.intents[i].statement.as_str())
            .map(|x| x["id"].as_str().unwrap().to_owned())
    }
}

/// A path with its URL token shown as `{token}` (labels only: the text keeps it).
fn mask_path(path: &str) -> String {
    path.split('/').map(|p| if p.len() >= 20 { "{token}" } else { p }).collect::<Vec<_>>().join("/")
}

fn statement(spec: &IntentSpec, i: usize) -> String {
    if spec.vehicles {
        format!("Hľadám Škoda {} číslo {i}", MODELS[spec.kind])
    } else {
        format!("Hľadám {} na bývanie číslo {i}", TYPES[spec.kind % 2])
    }
}

fn publish_args(spec: &IntentSpec, i: usize, limit: f64) -> Value {
    let criteria = match (spec.vehicles, spec.with_criteria) {
        (true, true) => json!({"category": "vehicles", "make": "Škoda", "model": MODELS[spec.kind]}),
        (true, false) => json!({"category": "vehicles"}),
        (false, true) => json!({"category": "property", "type": TYPES[spec.kind % 2]}),
        (false, false) => json!({"category": "property"}),
    };
    let mut v = json!({"statement": statement(spec, i), "criteria": criteria, "area": AREAS[spec.area],
        "visibility": if spec.pseudonymous { "pseudonymous" } else { "private" }, "hiddenLimit": limit});
    if let Some(b) = spec.budget.json() {
        v["budget"] = b;
    }
    if let Some(d) = spec.buy_by_days {
        v["buyBy"] = json!(date_after(d));
    }
    v
}

fn date_after(days: u32) -> String {
    let start = isto::clock::parse_rfc3339(START).unwrap();
    isto::clock::date_string((start + time::Duration::days(i64::from(days))).date())
}

fn offer_row(o: &OfferSpec, n: usize) -> OfferInput {
    let (category, title, attributes) = if o.vehicles {
        ("vehicles", format!("Škoda {} ponuka {n}", MODELS[o.kind]), json!({"make": "Škoda", "model": MODELS[o.kind]}))
    } else {
        ("property", format!("Predaj {} ponuka {n}", TYPES[o.kind % 2]), json!({"type": TYPES[o.kind % 2]}))
    };
    OfferInput {
        reference: Some(format!("ref{n}")),
        title,
        description: "Pekný stav.".into(),
        category: category.into(),
        attributes: attributes.as_object().cloned().unwrap(),
        price: Money { amount: o.price, currency: "EUR".into() },
        area: isto::gazetteer::resolve(AREAS[o.area]).unwrap(),
        seller_name: "Catalogue dealer".into(),
        seller_url: None,
        url: Some(format!("https://catalogue.example/{n}")),
        valid_until: None,
    }
}

fn reply_args(visible_id: &str, vehicles: bool, price: f64, n: usize) -> Value {
    let (category, title, attributes) = if vehicles {
        ("vehicles", format!("Škoda Octavia odpoveď {n}"), json!({"make": "Škoda", "model": "Octavia"}))
    } else {
        ("property", format!("Byt odpoveď {n}"), json!({"type": "byt"}))
    };
    json!({"source": {"kind": "reply"}, "inReplyTo": visible_id, "title": title, "description": "Ihneď k dispozícii.",
           "category": category, "attributes": attributes, "price": {"amount": price, "currency": "EUR"},
           "area": "Bratislava", "url": format!("https://reply.example/{n}")})
}

// ---------------------------------------------------------------------------
// the calls of one case, the same on both holders

/// Runs every call of `case` on `s` (holder `s.which`), logging the answers. Also checks
/// points 1 and 5 on this holder.
fn run(case: &Case, s: &mut Side) -> Result<(), TestCaseError> {
    let h = s.fx.holder.clone();
    let early: Vec<OfferInput> =
        case.offers.iter().enumerate().filter(|(_, o)| !o.late).map(|(n, o)| offer_row(o, n)).collect();
    h.catalogue.import_offers(early).unwrap();
    s.tick();

    // Publishing: by the signed-in buyer, or through /mcp and the consent pages.
    for (i, spec) in case.intents.iter().enumerate() {
        let args = publish_args(spec, i, pick(spec.limits, s.which));
        let mut known = Known { statement: statement(spec, i), ..Known::default() };
        if spec.owned {
            let out = s.buyer_tool(&format!("#{i}"), Kind::Own, "intent_publish_intent", args);
            known.id = structured(&out)["intent"]["id"].as_str().unwrap().to_owned();
            s.intents.push(known);
            s.published();
        } else {
            let out = s.public_tool(&format!("#{i}"), Kind::Own, "intent_publish_intent", args);
            let v = structured(&out);
            known.id = v["intent"]["id"].as_str().unwrap().to_owned();
            known.code = Some(v["intentCode"].as_str().unwrap().to_owned());
            let token = v["consentUrl"].as_str().unwrap().rsplit('/').next().unwrap().to_owned();
            known.consent = Some(token.clone());
            s.intents.push(known);
            s.published();
            let page = s.page(Kind::Open, &format!("/consent/{token}"), None);
            prop_assert_eq!(page.status, StatusCode::OK);
            let csrf = page.csrf_for(&format!("/consent/{token}"));
            let email = format!("person{}@example.com", spec.email);
            let r = s.post(
                Kind::Open,
                &format!("/consent/{token}"),
                &[("csrf", &csrf), ("email", &email), ("accept", "yes"), ("lang", "en")],
            );
            prop_assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
            s.page(Kind::Open, &format!("/consent/{token}/sent"), None);
            let mail = s.fx.mails().last().unwrap().text.clone();
            let confirm = token_after(&mail, "/confirm/").unwrap();
            s.intents[i].manage = token_after(&mail, "/withdraw/");
            let page = s.page(Kind::Own, &format!("/confirm/{confirm}"), None);
            let csrf = page.csrf_for(&format!("/confirm/{confirm}"));
            let r = s.post(Kind::Own, &format!("/confirm/{confirm}"), &[("csrf", &csrf)]);
            prop_assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
            s.page(Kind::Own, &format!("/confirm/{confirm}/done"), None);
        }
        s.tick();
    }
    // A consent given again for the same intent (a reload) answers the same.
    if let Some(i) = case.intents.iter().position(|x| !x.owned) {
        let token = s.intents[i].consent.clone().unwrap();
        s.page(Kind::Open, &format!("/consent/{token}"), None);
    }

    let late: Vec<OfferInput> =
        case.offers.iter().enumerate().filter(|(_, o)| o.late).map(|(n, o)| offer_row(o, n)).collect();
    h.catalogue.import_offers(late).unwrap();
    s.tick();

    sellers_look(case, s, "after publishing");
    // The sellers reply: to the first two intents open to each, at every price.
    let mut reply_no = 0;
    for (n, spec) in case.sellers.iter().enumerate() {
        let feed = s.seller_tool(n, "feed before replies", "intent_list_open_intents", json!({}));
        let open: Vec<(usize, String)> =
            (0..s.intents.len()).filter_map(|i| s.seller_visible(&feed, i).map(|v| (i, v))).take(2).collect();
        for (i, visible) in &open {
            for price in &spec.prices {
                let args = reply_args(visible, case.intents[*i].vehicles, *price, reply_no);
                reply_no += 1;
                s.seller_tool(n, &format!("reply to #{i} at {price}"), "intent_submit_offer", args);
                s.tick();
            }
        }
        // A reply to an id this seller was not given (another seller's, or a private
        // intent's), and to an unknown one.
        let other = s.intents.iter().map(|k| k.id.clone()).find(|id| !open.iter().any(|(_, v)| v == id));
        for id in other.into_iter().chain(["int_aaaaaaaaaaaaaaaaaaaaaaaaaa".to_owned()]) {
            s.seller_tool(n, "reply not open", "intent_submit_offer", reply_args(&id, true, 1000.0, reply_no));
            reply_no += 1;
        }
        s.tick();
    }
    // A tick of the reply matching: the queued replies are matched and delivered; then
    // what the mail worker runs before each pass: due digests queued.
    isto::deliveries::match_queued_replies(&h.base).unwrap();
    isto::deliveries::queue_due_digests(&h.base).unwrap();
    public_looks(case, s, "after replies");
    buyer_looks(s, "after replies");

    // Updates on /mcp/buyer: other fields; budget.min alone between the two holders'
    // limits (the issue's probe: the answer must not tell which side of it the stored
    // limit is); hiddenLimit alone.
    for (i, spec) in case.intents.iter().enumerate() {
        if !spec.owned {
            continue;
        }
        let id = s.intents[i].id.clone();
        let mut args = json!({"id": id});
        match &spec.change {
            Change::Statement => {
                let new = format!("{} (upravené)", s.intents[i].statement);
                args["statement"] = json!(new);
                s.intents[i].statement = new;
            }
            Change::BudgetMax(x) => args["budget"] = json!({"max": x.max(spec.budget.min()), "currency": "EUR"}),
            Change::BuyBy(d) => args["buyBy"] = json!(date_after(*d)),
            Change::RemoveCriteria => args["criteria"] = Value::Null,
            Change::Visibility => {
                args["visibility"] = json!(if spec.pseudonymous { "private" } else { "pseudonymous" })
            }
            Change::ValidUntilEarlier => {
                args["validUntil"] =
                    json!(isto::clock::rfc3339(isto::clock::parse_rfc3339(START).unwrap() + time::Duration::days(10)))
            }
        }
        s.buyer_tool(&format!("#{i} {:?}", spec.change), Kind::Own, "intent_update_intent", args);
        s.tick();
        let probe = (spec.limits.0 + spec.limits.1) / 2.0;
        for min in [probe, spec.limits.0.min(spec.limits.1) * 0.999, spec.limits.0.max(spec.limits.1) * 1.001] {
            let args = json!({"id": id, "budget": {"min": min, "currency": "EUR"}});
            s.buyer_tool(&format!("#{i} budget.min alone"), Kind::Own, "intent_update_intent", args);
            s.tick();
        }
        // The hiddenLimit-only update, over the published budget again (the limits
        // were generated no lower than its min).
        let args = json!({"id": id, "budget": spec.budget.json().unwrap_or(Value::Null)});
        s.buyer_tool(&format!("#{i} budget back"), Kind::Own, "intent_update_intent", args);
        s.tick();
        let before = s.stored(i);
        let new = pick(spec.new_limits, s.which);
        let out = s.buyer_tool(
            &format!("#{i} hiddenLimit alone"),
            Kind::Own,
            "intent_update_intent",
            json!({"id": id, "hiddenLimit": new}),
        );
        let after = s.stored(i);
        prop_assert_eq!(&after.updated_at, &before.updated_at, "point 1: {}", out);
        s.buyer_tool(&format!("#{i} get"), Kind::Own, "intent_get_intent", json!({"id": id}));
        s.tick();
    }
    sellers_look(case, s, "after updates");
    public_looks(case, s, "after updates");
    buyer_looks(s, "after updates");

    // Withdrawals (by id on /mcp/buyer, by intentCode on /mcp).
    for (i, spec) in case.intents.iter().enumerate() {
        if !spec.withdraw {
            continue;
        }
        match s.intents[i].code.clone() {
            Some(code) => {
                s.public_tool(&format!("#{i}"), Kind::Own, "intent_withdraw_intent", json!({"intentCode": code}))
            }
            None => {
                let id = s.intents[i].id.clone();
                s.buyer_tool(&format!("#{i}"), Kind::Own, "intent_withdraw_intent", json!({"id": id}))
            }
        };
        s.tick();
    }
    sellers_look(case, s, "after withdrawals");
    public_looks(case, s, "after withdrawals");
    buyer_looks(s, "after withdrawals");

    // Point 5: every sealed hidden limit has one ciphertext length.
    let mut lengths = std::collections::BTreeSet::new();
    for i in 0..s.intents.len() {
        if let Some(sealed) = s.stored(i).hidden_limit {
            lengths.insert(sealed.ct.len());
        }
    }
    prop_assert!(lengths.len() <= 1, "point 5: ciphertext lengths {:?}", lengths);
    s.log.push(Entry {
        label: "sealed hidden limit lengths".into(),
        kind: Kind::Open,
        text: format!("{lengths:?}"),
        before: Vec::new(),
        after: Vec::new(),
    });
    Ok(())
}

/// Every seller's feed (whole and since its last one) and its pages.
fn sellers_look(case: &Case, s: &mut Side, when: &str) {
    for n in 0..case.sellers.len() {
        let args = match &s.since[n] {
            Some(t) => json!({"since": t}),
            None => json!({}),
        };
        s.seller_tool(n, &format!("since feed {when}"), "intent_list_open_intents", args);
        let whole = s.seller_tool(n, &format!("feed {when}"), "intent_list_open_intents", json!({}));
        s.since[n] = structured(&whole)["nextSince"].as_str().map(str::to_owned);
        for cat in ["vehicles", "property"] {
            s.seller_tool(
                n,
                &format!("feed {cat} {when}"),
                "intent_list_open_intents",
                json!({"category": cat, "limit": 2}),
            );
        }
        let cookie = s.sellers[n].1.clone();
        s.page(Kind::Open, "/seller/intents", Some(cookie.clone()));
        for q in ["category=vehicles", "category=property", "category=vehicles&buyBy=3m"] {
            s.page(Kind::Open, &format!("/seller/demand?{q}"), Some(cookie.clone()));
        }
    }
    s.tick();
}

/// The public's and sellers' view of the catalogue and the demand, on every endpoint,
/// and of the holder's readiness (`/readyz`, which once showed the outbox backlog: a
/// digest queued for a delivered reply).
fn public_looks(case: &Case, s: &mut Side, when: &str) {
    s.page(Kind::Open, "/readyz", None);
    s.page(Kind::Open, "/.well-known/isto-intents", None);
    s.page(Kind::Open, "/", None);
    let mut searches = vec![json!({"statement": "Škoda Octavia"}), json!({"statement": "byt", "category": "property"})];
    searches.push(json!({"statement": "Škoda", "area": "SK", "limit": 50}));
    for args in searches {
        s.public_tool(when, Kind::Open, "intent_search_offers", args.clone());
        s.buyer_tool(when, Kind::Open, "intent_search_offers", args);
    }
    let mut cells = Vec::new();
    for spec in &case.intents {
        let category = if spec.vehicles { "vehicles" } else { "property" };
        for area in ["SK-BL", "SK-KI", "CZ-64"] {
            for budget in ["none", "0-5000", "10000-20000", "50000-100000"] {
                cells.push(
                    json!({"category": category, "cell": {"area": area, "budgetBand": budget, "buyByBand": "none"}}),
                );
            }
        }
    }
    cells.sort_by_key(Value::to_string);
    cells.dedup();
    for (k, args) in cells.into_iter().enumerate() {
        match k % 3 {
            0 => s.public_tool(when, Kind::Open, "intent_demand_summary", args),
            1 => s.buyer_tool(when, Kind::Open, "intent_demand_summary", args),
            _ => s.seller_tool(0, when, "intent_demand_summary", args),
        };
    }
    s.tick();
}

/// What the buyer's agent and the person see of their intents.
fn buyer_looks(s: &mut Side, when: &str) {
    for i in 0..s.intents.len() {
        let k = s.intents[i].clone();
        match &k.code {
            Some(code) => {
                s.public_tool(&format!("#{i} {when}"), Kind::Own, "intent_get_intent", json!({"intentCode": code}));
                s.public_tool(
                    &format!("#{i} {when}"),
                    Kind::OwnDeliveries,
                    "intent_list_matches",
                    json!({"intentCode": code}),
                );
            }
            None => {
                s.buyer_tool(&format!("#{i} {when}"), Kind::Own, "intent_get_intent", json!({"id": k.id}));
                s.buyer_tool(
                    &format!("#{i} {when}"),
                    Kind::OwnDeliveries,
                    "intent_list_matches",
                    json!({"intent": k.id}),
                );
                s.page(Kind::OwnDeliveries, &format!("/me/intents/{}", k.id), Some(s.buyer_cookie.clone()));
            }
        }
        if let Some(m) = &k.manage {
            s.page(Kind::OwnDeliveries, &format!("/results/{m}"), None);
            s.page(Kind::Own, &format!("/withdraw/{m}"), None);
        }
    }
    s.page(Kind::OwnDeliveries, "/me", Some(s.buyer_cookie.clone()));
    view::looks(s, when);
    s.tick();
}

// ---------------------------------------------------------------------------
// comparing the two transcripts

/// Renames random values in order of first appearance (see the module docs).
#[derive(Default)]
struct Names {
    map: HashMap<String, usize>,
}

fn random_looking(run: &str) -> bool {
    let id = run.split_once('_').is_some_and(|(p, rest)| {
        (1..=8).contains(&p.len())
            && p.bytes().all(|b| b.is_ascii_lowercase())
            && rest.len() >= 16
            && rest.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    });
    let pseudonym = run.strip_prefix("buyer-").is_some_and(|r| r.len() >= 8);
    let token = run.len() >= 16
        && run.bytes().any(|b| b.is_ascii_alphabetic())
        && run.bytes().any(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        && !word_like(run);
    id || pseudonym || token
}

/// A camelCase, kebab-case or snake_case word (`structuredContent`,
/// `awaiting_email_confirmation`): segments of letters, each starting with at most one
/// capital or separator and then at least two lower-case letters, no digit. A random
/// base64url token has this shape with a chance of about 10^-6.
fn word_like(run: &str) -> bool {
    let b = run.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'_' || b[i] == b'-' {
            i += 1;
        }
        if i < b.len() && b[i].is_ascii_uppercase() {
            i += 1;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_lowercase() {
            i += 1;
        }
        if i - start < 2 {
            return false;
        }
    }
    true
}

/// Puts what random ids order into a fixed order before renaming (see the module docs):
/// search results tie on score and then follow the offer ids, and the deliveries of one
/// matching run get their microsecond times in offer-id order. Search offers are sorted
/// by title; a delivery list is sorted by title with its delivery times sorted apart (so
/// every time is still compared, not which offer of one run got which microsecond); a
/// page's delivered-offers list is sorted by item.
fn canonical(label: &str, text: &str) -> String {
    let sort_array = |v: &mut Value, deliveries: bool| {
        let Some(a) = v.as_array_mut() else { return };
        let title = |x: &Value| {
            if deliveries {
                x["offer"]["title"].to_string()
            } else {
                x["title"].to_string()
            }
        };
        let mut times: Vec<Value> = a.iter().map(|x| x["deliveredAt"].clone()).collect();
        a.sort_by_key(|x| title(x));
        if deliveries {
            times.sort_by_key(Value::to_string);
            for (x, t) in a.iter_mut().zip(times) {
                x["deliveredAt"] = t;
            }
        }
    };
    let (key, deliveries) = if label.contains("intent_search_offers") {
        ("offers", false)
    } else if label.contains("intent_list_matches") {
        ("matches", true)
    } else if label.starts_with("GET ") && text.contains("<ol class=\"offers\">") {
        return canonical_offer_list(text);
    } else {
        return text.to_owned();
    };
    let mut v: Value = serde_json::from_str(text).unwrap();
    if v["isError"] == true {
        return text.to_owned();
    }
    sort_array(&mut v["structuredContent"][key], deliveries);
    if let Some(t) = v["content"][0]["text"].as_str() {
        let mut inner: Value = serde_json::from_str(t).unwrap();
        sort_array(&mut inner, deliveries);
        v["content"][0]["text"] = Value::String(inner.to_string());
    }
    v.to_string()
}

fn canonical_offer_list(text: &str) -> String {
    let open = "<ol class=\"offers\">";
    let (Some(i), Some(j)) = (text.find(open), text.find("</ol>")) else { return text.to_owned() };
    let inner = &text[i + open.len()..j];
    let mut items: Vec<&str> = inner.split("<li>").filter(|x| !x.is_empty()).collect();
    items.sort_unstable();
    format!("{}{open}<li>{}{}", &text[..i], items.join("<li>"), &text[j..])
}

impl Names {
    /// `text` with random values renamed; new ones are learned only when `learn` (else
    /// shown as `<?>`).
    fn normalise(&mut self, text: &str, learn: bool) -> String {
        let mut out = String::with_capacity(text.len());
        let mut run = String::new();
        let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        let flush = |run: &mut String, out: &mut String, map: &mut HashMap<String, usize>| {
            if random_looking(run) {
                let n = map.len();
                match map.get(run.as_str()) {
                    Some(k) => out.push_str(&format!("<{k}>")),
                    None if learn => {
                        map.insert(run.clone(), n);
                        out.push_str(&format!("<{n}>"));
                    }
                    None => out.push_str("<?>"),
                }
            } else {
                out.push_str(run);
            }
            run.clear();
        };
        for c in text.chars() {
            if word(c) {
                run.push(c);
            } else {
                flush(&mut run, &mut out, &mut self.map);
                out.push(c);
            }
        }
        flush(&mut run, &mut out, &mut self.map);
        out
    }
}

fn mask_match_count(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("matchCount") {
        let j = i + "matchCount".len();
        out.push_str(&rest[..j]);
        rest = &rest[j..];
        let k = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(0);
        let digits = rest[k..].find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len() - k);
        out.push_str(&rest[..k]);
        out.push('*');
        rest = &rest[k + digits..];
    }
    out.push_str(rest);
    out
}

/// Where two answers part: 200 characters of each from a little before the first
/// difference.
fn diff(a: &str, b: &str) -> String {
    let at = a.char_indices().zip(b.chars()).find(|((_, x), y)| x != y).map_or(a.len().min(b.len()), |((i, _), _)| i);
    let from = a[..at].char_indices().rev().nth(20).map_or(0, |(i, _)| i);
    let show = |s: &str| s[from.min(s.len())..].chars().take(700).collect::<String>();
    format!("A: …{}\nB: …{}", show(a), show(b))
}

/// Compares the two transcripts as the module docs say.
fn compare(a: &Side, b: &Side) -> Result<(), TestCaseError> {
    prop_assert_eq!(a.log.len(), b.log.len(), "the two holders answered a different number of calls");
    let (mut na, mut nb) = (Names::default(), Names::default());
    for (x, y) in a.log.iter().zip(&b.log) {
        prop_assert_eq!(&x.label, &y.label);
        prop_assert_eq!(x.kind, y.kind);
        let same_deliveries = x.before == y.before && x.after == y.after && x.before == x.after;
        let exact = x.kind == Kind::Open || same_deliveries;
        let (ca, cb) = (canonical(&x.label, &x.text), canonical(&y.label, &y.text));
        let (ta, tb) = (na.normalise(&ca, exact), nb.normalise(&cb, exact));
        if exact {
            prop_assert!(ta == tb, "{} ({:?}) differs between two hidden limits:\n{}", x.label, x.kind, diff(&ta, &tb));
        } else if x.kind == Kind::Own {
            let (ma, mb) = (mask_match_count(&ta), mask_match_count(&tb));
            prop_assert!(
                ma == mb,
                "{} differs beyond matchCount between two hidden limits:\n{}",
                x.label,
                diff(&ma, &mb)
            );
        }
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(32)
}

/// For any two hidden limits, every answer to a buyer agent, a seller or the public is
/// the same (see the module docs for exactly what is compared), every sealed limit has
/// one ciphertext length, and a hiddenLimit-only update keeps `updatedAt`.
#[test]
fn no_answer_depends_on_the_hidden_limit() {
    let config = Config { cases: cases(), max_shrink_iters: 200, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new(config);
    runner
        .run(&case(), |case| {
            let mut a = Side::new(&case, 0);
            let mut b = Side::new(&case, 1);
            run(&case, &mut a)?;
            run(&case, &mut b)?;
            compare(&a, &b)
        })
        .unwrap();
}

/// The normaliser renames ids, tokens and pseudonyms and nothing else.
#[test]
fn the_normaliser_renames_random_values_only() {
    let mut n = Names::default();
    let t = n.normalise(
        r#"{"id":"int_abcdefghijklmnopqrstuvwxyz","pseudonym":"buyer-Ab3dEfGh1jKl","url":"https://h.example/consent/AbCdEfGhIjKlMnOpQrStUvWxYz0","price":12345.5,"at":"2026-12-01T10:00:01Z","status":"awaiting_email_confirmation","csrf":"1796119200.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-abcde"}"#,
        true,
    );
    assert_eq!(
        t,
        r#"{"id":"<0>","pseudonym":"<1>","url":"https://h.example/consent/<2>","price":12345.5,"at":"2026-12-01T10:00:01Z","status":"awaiting_email_confirmation","csrf":"1796119200.<3>"}"#
    );
    assert_eq!(n.normalise("int_abcdefghijklmnopqrstuvwxyz int_zzzzzzzzzzzzzzzzzzzzzzzzzz", false), "<0> <?>");
    assert_eq!(
        n.normalise("structuredContent Content-Security-Policy awaiting_email_confirmation", true),
        "structuredContent Content-Security-Policy awaiting_email_confirmation"
    );
    assert_eq!(
        mask_match_count(r#"{"matchCount":12},"x":{"matchCount":0}"#),
        r#"{"matchCount":*},"x":{"matchCount":*}"#
    );
}

// --------------------------------------------------------------------------- the match
// explanations

/// What a person is told about why offers were sent, on one holder: per offer (by
/// title) the `extensions.reasons` of `intent_list_matches`, then the digest's "why"
/// lines and the results page's `p.why` paragraphs (each sorted: the order of one
/// matching run follows random offer ids).
fn explanations(limit: f64, prices: &[f64]) -> Vec<String> {
    let f = Fx::new();
    let h = &f.holder;
    let offers = prices
        .iter()
        .enumerate()
        .map(|(n, p)| crate::explain::car(&format!("r{n}"), &format!("Škoda Octavia {n}"), *p, "Bratislava"))
        .collect();
    h.catalogue.import_offers(offers).unwrap();
    let code = crate::explain::publish_confirmed(h, "Looking for a used Skoda Octavia diesel", limit);
    let mut out: Vec<String> =
        crate::explain::matches(h, &code).into_iter().map(|(t, e)| format!("{t}: {}", e["reasons"])).collect();
    isto::deliveries::queue_due_digests(&h.base).unwrap();
    let mail = f.mails().last().unwrap().text.clone();
    let mut lines = crate::explain::why_lines(&mail, "Why this offer:");
    lines.sort();
    out.extend(lines);
    let token = f.token_from_outbox("/results/");
    let mut paras = crate::explain::why_paragraphs(&f.get(&format!("/results/{token}"), None).body);
    paras.sort();
    out.extend(paras);
    out
}

/// The explanation words (list_matches, digest mail, results page) are the same for any
/// two hidden limits above the same offers, whatever the distance between price and
/// limit (1 EUR or far under), and never carry the limit's digits.
#[test]
fn explanations_do_not_depend_on_the_hidden_limit() {
    let config = Config { cases: cases().min(16), failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new(config);
    let strategy = (2_000.0f64..200_000.0, 2_000.0f64..200_000.0).prop_flat_map(|(a, b)| {
        let top = a.min(b);
        let price = prop_oneof![1.0f64..top, Just(top.floor()), Just((top - 1.0).max(1.0))];
        (Just((a.round(), b.round())), proptest::collection::vec(price, 1..4))
    });
    runner
        .run(&strategy, |((a, b), prices)| {
            let (ea, eb) = (explanations(a, &prices), explanations(b, &prices));
            prop_assert_eq!(ea.len(), 3 * prices.len(), "every offer explained three times: {:?}", ea);
            prop_assert_eq!(&ea, &eb, "limits {} and {}", a, b);
            for limit in [a, b] {
                let digits = format!("{}", limit as i64);
                let grouped = isto::text::format_amount(limit);
                for e in &ea {
                    prop_assert!(!e.contains(&digits) && !e.contains(&grouped), "{e} names the limit {limit}");
                }
            }
            Ok(())
        })
        .unwrap();
}
