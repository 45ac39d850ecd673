//! Demand summaries (PROTOCOL.md §5) on a real redb file with a clock the test advances:
//! the threshold k, what counts (active intents only), the band grid (visible budget
//! only, never the hidden limit; whole-country areas; buy-by bands), the
//! `intent_demand_summary` tool on `/mcp` and `/mcp/buyer`, the `[demand]` settings, the
//! holder metadata at `/.well-known/isto-intents` (PROTOCOL.md §8) and the sellers' heat
//! map page. Intents are made active the way people do it: publish, consent on the
//! holder's page, confirm with the token from the e-mail.

use axum::http::{header, StatusCode};
use isto::config::{Overrides, Settings};
use isto::demand::{Cell, DemandAnswer};
use isto::intents::{ConfirmOutcome, ConsentOutcome};
use isto::state::AppState;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::kit::{Fx, Opts, Resp, START};

fn fixture_with(k: u32) -> Fx {
    Fx::with(Opts { demand_k: Some(k), ..Opts::default() })
}

fn fixture() -> Fx {
    fixture_with(5)
}

/// A vehicles intent in `area` with the `extra` publish fields.
fn vehicles(area: Value, extra: Value) -> Value {
    let mut args = json!({"statement": "Hľadám auto", "criteria": {"category": "vehicles"}, "area": area});
    for (k, v) in extra.as_object().unwrap() {
        args[k] = v.clone();
    }
    args
}

/// Publishes a draft; returns (id, intentCode, consent token).
fn draft(h: &AppState, args: Value) -> (String, String, String) {
    let r = h.intents.publish_draft(h.intents.parse_publish(&args).unwrap()).unwrap();
    (r.intent.id, r.intent_code, r.consent_url.rsplit('/').next().unwrap().to_owned())
}

/// Publishes, consents (each intent its own address: a person gets at most 5
/// confirmation e-mails an hour) and returns the consent-given draft's (id, code).
fn consented(h: &AppState, args: Value) -> (String, String) {
    static N: AtomicUsize = AtomicUsize::new(0);
    let (id, code, consent) = draft(h, args);
    let email = format!("buyer{}@example.com", N.fetch_add(1, Ordering::SeqCst));
    assert_eq!(h.intents.give_consent(&consent, &email, "en").unwrap(), ConsentOutcome::Recorded);
    (id, code)
}

/// An active intent: publish + consent + confirm with the token from the outbox.
fn active(h: &AppState, args: Value) -> (String, String) {
    let (id, code) = consented(h, args);
    assert_eq!(h.intents.confirm(&crate::kit::token_from_outbox(h, "/confirm/")).unwrap(), ConfirmOutcome::Activated);
    (id, code)
}

fn cell(area: &str, budget: &str, buy_by: &str) -> Cell {
    Cell { area: area.into(), budget_band: budget.into(), buy_by_band: buy_by.into() }
}

/// activeIntents of a cell, `None` when withheld.
fn count(h: &AppState, c: &Cell) -> Option<u64> {
    match isto::demand::summary(&h.base, "vehicles", c).unwrap() {
        DemandAnswer::Summary(s) => {
            assert_eq!(&s.cell, c);
            Some(s.counts.active_intents)
        }
        DemandAnswer::Withheld(w) => {
            assert!(w.withheld && w.reason == "below_threshold");
            None
        }
    }
}

/// Calls the tool on `/mcp`: (isError, structuredContent or the error text).
fn tool(h: &AppState, args: Value) -> (bool, Value) {
    let r = crate::kit::mcp_call(h, "intent_demand_summary", &args).expect("known tool");
    let v = serde_json::to_value(&r).unwrap();
    if v["isError"].as_bool().unwrap_or(false) {
        (true, v["content"][0]["text"].clone())
    } else {
        let text: Value = serde_json::from_str(v["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text, v["structuredContent"], "the text content carries the same JSON");
        (false, v["structuredContent"].clone())
    }
}

#[test]
fn a_cell_below_k_is_withheld_and_at_k_is_shown() {
    let f = fixture();
    let h = &f.holder;
    let args = |pseudo: bool| {
        let visibility = if pseudo { "pseudonymous" } else { "private" };
        vehicles(json!("SK-BL"), json!({"budget": 12000, "visibility": visibility}))
    };
    for i in 0..4 {
        active(h, args(i < 2));
    }
    let c = cell("SK-BL", "10000-20000", "none");
    assert_eq!(count(h, &c), None, "k - 1 = 4 active intents");
    let (err, out) = tool(h, json!({"category": "vehicles", "cell": c}));
    assert!(!err);
    assert_eq!(out, json!({"withheld": true, "reason": "below_threshold"}));

    active(h, args(false));
    assert_eq!(count(h, &c), Some(5));
    let (err, out) = tool(
        h,
        json!({"category": "vehicles", "cell": {"area": "Bratislava", "budgetBand": "10000-20000", "buyByBand": "none"}}),
    );
    assert!(!err, "{out}");
    assert_eq!(
        out,
        json!({"category": "vehicles", "cell": {"area": "SK-BL", "budgetBand": "10000-20000", "buyByBand": "none"},
               "activeIntents": 5, "newLast7Days": null, "pseudonymous": null, "asOf": START})
    );
    // Neighbouring cells stay withheld.
    assert_eq!(count(h, &cell("SK-TA", "10000-20000", "none")), None);
    assert_eq!(count(h, &cell("SK-BL", "5000-10000", "none")), None);
    assert_eq!(count(h, &cell("SK-BL", "10000-20000", "1m")), None);

    // The heat map shows the same numbers and withholds the same cells.
    let map = isto::demand::heat_map(&h.base, "vehicles").unwrap();
    let shown: Vec<_> = map.cells.iter().filter(|(_, c)| c.is_some()).collect();
    assert_eq!(shown.len(), 1);
    assert_eq!(shown[0].0, c);
    assert_eq!(shown[0].1.unwrap().active_intents, 5);
    assert_eq!(map.cells.len(), 5 * 22 * 6);
}

#[test]
fn drafts_unconfirmed_expired_and_withdrawn_intents_do_not_count() {
    let f = fixture_with(1);
    let h = &f.holder;
    let args = || vehicles(json!("SK-KI"), json!({"budget": 3000}));
    let c = cell("SK-KI", "0-5000", "none");
    for _ in 0..3 {
        active(h, args());
    }
    let mut short = args();
    short["validUntil"] = json!("2026-12-03T10:00:00Z");
    active(h, short);
    let (_, to_withdraw) = active(h, args());
    draft(h, args()); // awaiting_consent
    consented(h, args()); // awaiting_email_confirmation
    assert_eq!(count(h, &c), Some(5), "3 + short-lived + to be withdrawn; not the draft or the unconfirmed");

    h.intents.withdraw_by_code(&to_withdraw, None).unwrap();
    assert_eq!(count(h, &c), Some(4), "withdrawn");

    f.clock.advance(time::Duration::days(3));
    assert_eq!(count(h, &c), Some(3), "expired at validUntil, before any sweep");
    h.intents.sweep().unwrap();
    assert_eq!(count(h, &c), Some(3));
    let map = isto::demand::heat_map(&h.base, "vehicles").unwrap();
    let total: u64 = map.cells.iter().filter_map(|(_, c)| c.map(|c| c.active_intents)).sum();
    assert_eq!(total, 3);
}

#[test]
fn the_hidden_limit_never_changes_the_band() {
    let f = fixture_with(1);
    let h = &f.holder;
    let area = json!({"country": "CZ", "regions": ["CZ-64"]});
    active(h, vehicles(area.clone(), json!({"budget": {"max": 12000, "currency": "EUR"}, "hiddenLimit": 9000})));
    active(h, vehicles(area.clone(), json!({"budget": {"max": 12000, "currency": "EUR"}, "hiddenLimit": 45000})));
    assert_eq!(count(h, &cell("CZ-64", "10000-20000", "none")), Some(2), "same budget.max, same band");
    assert_eq!(count(h, &cell("CZ-64", "5000-10000", "none")), None);
    assert_eq!(count(h, &cell("CZ-64", "40000+", "none")), None);

    // Only a hidden limit, or a budget without max: the "none" band.
    active(h, vehicles(area.clone(), json!({"hiddenLimit": 15000})));
    active(h, vehicles(area.clone(), json!({"budget": {"min": 8000}})));
    assert_eq!(count(h, &cell("CZ-64", "none", "none")), Some(2));
    assert_eq!(count(h, &cell("CZ-64", "10000-20000", "none")), Some(2));

    // A budget in CZK is converted with the holder's rates: 300 000 CZK = 12 000 EUR.
    active(h, vehicles(area, json!({"budget": {"max": 300000, "currency": "CZK"}})));
    assert_eq!(count(h, &cell("CZ-64", "10000-20000", "none")), Some(3));
}

#[test]
fn a_whole_country_intent_counts_in_every_region_of_it() {
    let f = fixture_with(1);
    let h = &f.holder;
    active(h, vehicles(json!("SK"), json!({"budget": 25000})));
    active(h, vehicles(json!({"country": "CZ", "regions": ["CZ-10", "Brno"]}), json!({"budget": 25000})));
    for region in ["SK-BL", "SK-KI", "SK-ZI", "SK-PV"] {
        assert_eq!(count(h, &cell(region, "20000-40000", "none")), Some(1), "{region}");
    }
    assert_eq!(count(h, &cell("CZ-10", "20000-40000", "none")), Some(1));
    assert_eq!(count(h, &cell("CZ-64", "20000-40000", "none")), Some(1));
    assert_eq!(count(h, &cell("CZ-20", "20000-40000", "none")), None, "not in the listed regions");
    let (err, out) = tool(
        h,
        json!({"category": "vehicles", "cell": {"area": "Košice", "budgetBand": "20000-40000", "buyByBand": "none"}}),
    );
    assert!(!err, "{out}");
    assert_eq!(out["activeIntents"], 1);
    assert_eq!(out["cell"]["area"], "SK-KI");
}

/// The sub-counts of a shown cell are null when the intents they count, or the cell's
/// others, come from fewer than k people: k − 1 people who know their own intents
/// cannot read a victim's visibility, nor when its intent became active.
#[test]
fn sub_counts_of_fewer_than_k_people_are_null() {
    let f = fixture();
    let h = &f.holder;
    let c = cell("SK-BL", "10000-20000", "none");
    let args = |pseudo: bool| {
        let visibility = if pseudo { "pseudonymous" } else { "private" };
        vehicles(json!("SK-BL"), json!({"budget": 12000, "visibility": visibility}))
    };
    let ask = |h: &AppState| tool(h, json!({"category": "vehicles", "cell": c.clone()})).1;
    // Four attackers' private intents, a week old, and the victim's new pseudonymous one.
    for _ in 0..4 {
        active(h, args(false));
    }
    f.clock.advance(time::Duration::days(8));
    active(h, args(true));
    let out = ask(h);
    assert_eq!(out["activeIntents"], 5, "{out}");
    assert_eq!(out["pseudonymous"], Value::Null, "1 of 5 would be the victim's visibility: {out}");
    assert_eq!(out["newLast7Days"], Value::Null, "1 of 5 would say when the victim's became active: {out}");
    // Five more pseudonymous people and one more private: both parts of the visibility
    // split hold at least k people; the old intents are still the four attackers'.
    for i in 0..6 {
        active(h, args(i < 5));
    }
    let out = ask(h);
    assert_eq!((out["activeIntents"].clone(), out["pseudonymous"].clone()), (json!(11), json!(6)), "{out}");
    assert_eq!(out["newLast7Days"], Value::Null, "the old part is 4 people: {out}");
    // The same in the heat map.
    let map = isto::demand::heat_map(&h.base, "vehicles").unwrap();
    let shown: Vec<_> = map.cells.iter().filter_map(|(x, n)| n.filter(|_| *x == c)).collect();
    assert_eq!(shown[0].pseudonymous, Some(6));
}

#[test]
fn new_last_7_days_and_buy_by_bands() {
    let f = fixture_with(1);
    let h = &f.holder;
    let with = |buy_by: Option<&str>| {
        let mut extra = json!({"budget": 7000});
        if let Some(d) = buy_by {
            extra["buyBy"] = json!(d);
        }
        vehicles(json!("SK-TA"), extra)
    };
    active(h, with(Some("2026-12-21")));
    f.clock.advance(time::Duration::days(8)); // now 2026-12-09
    active(h, with(Some("2026-12-21")));
    let answer = isto::demand::summary(&h.base, "vehicles", &cell("SK-TA", "5000-10000", "1m")).unwrap();
    let DemandAnswer::Summary(s) = answer else { panic!("withheld") };
    assert_eq!((s.counts.active_intents, s.counts.new_last_7_days), (2, Some(1)), "the first became active 8 days ago");
    assert_eq!(s.as_of, "2026-12-09T10:00:00Z");

    active(h, with(Some("2027-02-20"))); // ≤ 2027-03-09
    active(h, with(Some("2027-08-01"))); // ≤ 2027-12-09
    active(h, with(Some("2028-06-01")));
    active(h, with(None));
    for band in ["3m", "12m", "later", "none"] {
        assert_eq!(count(h, &cell("SK-TA", "5000-10000", band)), Some(1), "{band}");
    }
    // Time moves intents into nearer bands.
    f.clock.advance(time::Duration::days(60)); // 2027-02-07
    assert_eq!(count(h, &cell("SK-TA", "5000-10000", "1m")), Some(3));
}

#[test]
fn tool_input_errors_name_the_field() {
    let f = fixture();
    let h = &f.holder;
    let c = |area: Value, b: &str, y: &str| json!({"area": area, "budgetBand": b, "buyByBand": y});
    let cases = [
        (json!({}), "category"),
        (
            json!({"category": "boats", "cell": c(json!("SK-BL"), "none", "1m")}),
            "category must be one of vehicles, property",
        ),
        (json!({"category": "vehicles"}), "cell"),
        (json!({"category": "vehicles", "cell": []}), "cell must be an object"),
        (json!({"category": "vehicles", "cell": c(json!("Atlantis"), "none", "1m")}), "cell.area"),
        (json!({"category": "vehicles", "cell": c(json!("CZ"), "none", "1m")}), "cell.area"),
        (
            json!({"category": "vehicles", "cell": c(json!({"country": "SK"}), "none", "1m")}),
            "cell.area must be a string",
        ),
        (
            json!({"category": "vehicles", "cell": c(json!("SK-BL"), "12000", "1m")}),
            "cell.budgetBand must be one of 0-5000, 5000-10000, 10000-20000, 20000-40000, 40000+, none",
        ),
        (
            json!({"category": "vehicles", "cell": c(json!("SK-BL"), "none", "6m")}),
            "cell.buyByBand must be one of 1m, 3m, 12m, later, none",
        ),
        (json!({"category": "vehicles", "cell": {"area": "SK-BL", "buyByBand": "1m"}}), "cell.budgetBand is required"),
        (
            json!({"category": "vehicles", "cell": {"area": "SK-BL", "budgetBand": "none", "buyByBand": "1m", "max": 1}}),
            "cell.max",
        ),
        (json!({"category": "vehicles", "cell": c(json!("SK-BL"), "none", "1m"), "hiddenLimit": 1}), "hiddenLimit"),
    ];
    for (args, want) in cases {
        let (err, msg) = tool(h, args.clone());
        assert!(err, "{args} should fail");
        assert!(msg.as_str().unwrap().contains(want), "{args} → {msg}");
    }
    // The same tool on /mcp/buyer; demand is not personal, so no grant is needed.
    let r = crate::kit::mcp_call_as(
        h,
        isto::mcp::Endpoint::Buyer,
        None,
        "intent_demand_summary",
        &json!({"category": "property", "cell": c(json!("CZ-10"), "100000-200000", "12m")}),
    )
    .unwrap();
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["structuredContent"], json!({"withheld": true, "reason": "below_threshold"}), "{v}");
}

#[test]
fn the_tool_is_listed_with_schemas_and_annotations() {
    for (endpoint, tools) in [
        ("/mcp", isto::mcp::tools_of(isto::mcp::Endpoint::Public)),
        ("/mcp/buyer", isto::mcp::tools_of(isto::mcp::Endpoint::Buyer)),
    ] {
        let t = tools.iter().find(|t| t.name == "intent_demand_summary").unwrap_or_else(|| panic!("{endpoint}"));
        let v = serde_json::to_value(t).unwrap();
        assert!(v["description"].as_str().unwrap().contains(isto::protocol::AGGREGATOR_NOTE), "{endpoint}");
        assert_eq!(v["annotations"]["readOnlyHint"], true);
        assert_eq!(v["annotations"]["destructiveHint"], false);
        assert_eq!(v["annotations"]["idempotentHint"], true);
        assert_eq!(v["inputSchema"]["additionalProperties"], false);
        assert_eq!(v["inputSchema"]["required"], json!(["category", "cell"]));
        assert_eq!(v["inputSchema"]["properties"]["cell"]["required"], json!(["area", "budgetBand", "buyByBand"]));
        assert_eq!(v["outputSchema"]["type"], "object");
        let one_of = v["outputSchema"]["oneOf"].as_array().unwrap();
        assert_eq!(one_of.len(), 2);
        assert!(one_of[0]["required"].as_array().unwrap().contains(&json!("newLast7Days")));
        assert_eq!(one_of[1]["required"], json!(["withheld", "reason"]));
    }
}

#[test]
fn demand_settings_come_from_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("isto.toml");
    let load = |text: &str| {
        std::fs::write(&p, text).unwrap();
        Settings::load(&Overrides { config: Some(p.clone()), ..Default::default() })
    };
    let s = load("[demand]\nk = 3\n[demand.budget_bands]\nvehicles = [0, 1000, 3000]\n").unwrap();
    assert_eq!(s.demand_k, 3);
    assert_eq!(isto::demand::grid(&s, "vehicles").budget_labels(), ["0-1000", "1000-3000", "3000+", "none"]);
    assert_eq!(isto::demand::grid(&s, "property").budget_labels()[0], "0-50000", "defaults stay for the rest");
    let d = Settings::defaults();
    assert_eq!(d.demand_k, 5);
    for (text, key) in [
        ("[demand]\nk = 0\n", "demand.k"),
        ("[demand.budget_bands]\nvehicles = [1000, 2000]\n", "demand.budget_bands"),
        ("[demand.budget_bands]\nvehicles = [0, 2000, 2000]\n", "demand.budget_bands"),
        ("[demand.budget_bands]\nboats = [0, 2000]\n", "boats"),
        ("[demand]\nkk = 3\n", "kk"),
    ] {
        let e = load(text).unwrap_err().to_string();
        assert!(e.contains(key), "{text} → {e}");
    }
}

#[test]
fn holder_metadata_is_published_at_the_well_known_path() {
    let f = fixture();
    let Resp { status, headers, body } = f.get("/.well-known/isto-intents", None);
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CACHE_CONTROL], "public, max-age=300");
    assert!(headers[header::CONTENT_TYPE].to_str().unwrap().starts_with("application/json"));
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["name"], "isto");
    assert_eq!(v["countries"], json!(["SK", "CZ"]));
    assert_eq!(v["languages"], json!(["sk", "cs", "en"]));
    assert_eq!(v["k"], 5);
    assert_eq!(v["rates"], json!({"CZK": 0.04, "EUR": 1.0}));
    assert_eq!(
        v["endpoints"],
        json!({"mcp": "https://holder.example/mcp", "buyer": "https://holder.example/mcp/buyer",
               "seller": "https://holder.example/mcp/seller", "authorizationServer": "https://holder.example"})
    );
    for lang in ["sk", "cs", "en"] {
        assert!(!v["consentTextVersions"][lang].as_str().unwrap().is_empty(), "{lang}");
    }
    let cats = v["categories"].as_array().unwrap();
    let keys: Vec<_> = cats.iter().map(|c| c["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["vehicles", "property"]);
    let vehicles = &cats[0];
    assert_eq!(vehicles["currency"], "EUR");
    let attrs = vehicles["attributes"].as_array().unwrap();
    assert!(attrs.contains(&json!({"key": "mileageKm", "type": "number", "unit": "km"})));
    assert!(attrs.contains(&json!({"key": "make", "type": "string"})), "no unit key without a unit");
    let grid = &vehicles["bandGrid"];
    assert_eq!(grid["budgetBand"], json!(["0-5000", "5000-10000", "10000-20000", "20000-40000", "40000+", "none"]));
    assert_eq!(grid["buyByBand"], json!(["1m", "3m", "12m", "later", "none"]));
    let area = grid["area"].as_array().unwrap();
    assert_eq!(area.len(), 22);
    assert!(area.contains(&json!("SK-BL")) && area.contains(&json!("CZ-10")));
    assert_eq!(cats[1]["bandGrid"]["budgetBand"][4], "400000+");
    assert!(cats[1]["attributes"]
        .as_array()
        .unwrap()
        .contains(&json!({"key": "floorAreaM2", "type": "number", "unit": "m²"})));
}

impl Fx {
    /// Creates a seller with a password and signs in; returns the session cookie.
    fn seller_session(&self, email: &str) -> String {
        let h = &self.holder;
        let id = isto::accounts::create_seller(&h.base, email, "Dealer").unwrap();
        isto::accounts::set_password(&h.base, &id, "correct horse battery", None).unwrap();
        let page = self.get("/signin?next=/seller/demand", None);
        let csrf = page.csrf_for("/signin");
        let fields = [
            ("csrf", csrf.as_str()),
            ("email", email),
            ("password", "correct horse battery"),
            ("next", "/seller/demand"),
        ];
        let r = self.post("/signin", &fields, page.pre_cookie().as_deref());
        assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/seller/demand"), "{}", r.body);
        r.cookie().unwrap()
    }
}

#[test]
fn the_heat_map_page_is_for_signed_in_sellers() {
    let f = fixture();
    let h = &f.holder;
    for _ in 0..5 {
        active(h, vehicles(json!("SK-BL"), json!({"budget": 15000})));
    }

    let Resp { status, headers, .. } = f.get("/seller/demand?category=vehicles", None);
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(
        headers.get(header::LOCATION).unwrap().to_str().unwrap(),
        "/signin?next=%2Fseller%2Fdemand%3Fcategory%3Dvehicles"
    );

    let (_, buyer) = f.buyer("buyer-page@example.com");
    let Resp { status, body, .. } = f.get("/seller/demand?category=vehicles", Some(&buyer));
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(!body.contains("<svg"));

    let seller = f.seller_session("seller@example.com");
    let Resp { status, headers, body } = f.get("/seller/demand?category=vehicles", Some(&seller));
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(headers[header::CACHE_CONTROL], "no-store");
    let csp = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert!(!body.contains("<script") && !body.contains(" style="), "no script, no inline style");
    assert_eq!(body.matches("<svg").count(), 5, "one heat map per buy-by band");
    assert_eq!(body.matches("<table").count(), 5, "and one table each");
    assert!(body.contains("url(#hatch-none)") && body.contains(">withheld<"));
    assert!(body.contains("<td>5</td>"), "the shown cell in the table, without its new ones: all 5 are new");
    assert!(body.contains(">10000-20000<") && body.contains(">no budget<"));
    let shown = body.matches("text-anchor=\"middle\" fill=\"#ffffff\">5<").count();
    assert_eq!(shown, 1, "the one shown cell in the SVG, darkest");

    let Resp { status, body, .. } = f.get("/seller/demand?category=vehicles&buyBy=3m", Some(&seller));
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body.matches("<svg").count(), 1);
    assert!(body.contains("id=\"band-3m\"") && !body.contains("id=\"band-none\""));
    assert!(!body.contains(">5 (5)<"), "nothing shown in 3m");

    let Resp { status, body, .. } = f.get("/seller/demand?category=property", Some(&seller));
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains(">400000+<"));
    let Resp { status, .. } = f.get("/seller/demand?category=boats", Some(&seller));
    assert_eq!(status, StatusCode::NOT_FOUND);
}
