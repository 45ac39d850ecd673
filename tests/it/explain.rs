//! Match explanations in words through the real holder: the intent's language (sk, cs,
//! en) decides the words of `intent_list_matches` (`extensions.reasons`, with the codes
//! kept as `extensions.reasonCodes`), of the results page (`p.why`) and of the digest
//! mail in the kit's outbox; the price phrase is pass/fail only (the same words for an
//! offer 1 EUR and 11 000 EUR under the hidden limit, and the limit's digits nowhere).

use axum::http::StatusCode;
use isto::protocol::Money;
use isto::records::OfferInput;
use isto::state::AppState;
use serde_json::{json, Value};

use crate::kit::{token_from_outbox, Fx};

/// A vehicle offer in `place` with make, model and fuel.
pub fn car(reference: &str, title: &str, price: f64, place: &str) -> OfferInput {
    OfferInput {
        reference: Some(reference.into()),
        title: title.into(),
        description: String::new(),
        category: "vehicles".into(),
        attributes: json!({"make": "SKODA", "model": "Octavia", "fuel": "diesel"}).as_object().cloned().unwrap(),
        price: Money { amount: price, currency: "EUR".into() },
        area: isto::gazetteer::resolve(place).unwrap(),
        seller_name: "Dealer".into(),
        seller_url: None,
        url: None,
        valid_until: None,
    }
}

/// Publishes `statement` on `/mcp` (make Škoda, model Octavia, fuel diesel, Bratislava
/// region, hidden limit `limit`), consents and confirms; returns the intentCode.
pub fn publish_confirmed(h: &AppState, statement: &str, limit: f64) -> String {
    let args = json!({
        "statement": statement,
        "criteria": {"category": "vehicles", "make": "Škoda", "model": "Octavia", "fuel": "diesel"},
        "area": "SK-BL",
        "hiddenLimit": limit,
    });
    let r = crate::kit::mcp_call(h, "intent_publish_intent", &args).unwrap();
    let v = serde_json::to_value(r).unwrap();
    assert_ne!(v["isError"], true, "{v}");
    let sc = &v["structuredContent"];
    let code = sc["intentCode"].as_str().unwrap().to_owned();
    let consent = sc["consentUrl"].as_str().unwrap().rsplit('/').next().unwrap().to_owned();
    h.intents.give_consent(&consent, "person@example.com", "en").unwrap();
    let confirm = token_from_outbox(h, "/confirm/");
    h.intents.confirm(&confirm).unwrap();
    code
}

/// `intent_list_matches` by code: `(title, extensions)` of each match, by title.
pub fn matches(h: &AppState, code: &str) -> Vec<(String, Value)> {
    let r = crate::kit::mcp_call(h, "intent_list_matches", &json!({"intentCode": code})).unwrap();
    let v = serde_json::to_value(r).unwrap();
    let mut out: Vec<(String, Value)> = v["structuredContent"]["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["offer"]["title"].as_str().unwrap().to_owned(), m["extensions"].clone()))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The `p.why` paragraphs of a page, in page order.
pub fn why_paragraphs(body: &str) -> Vec<String> {
    body.split("<p class=\"why\">").skip(1).map(|p| p.split("</p>").next().unwrap().to_owned()).collect()
}

/// The digest's "why" lines (`  Why this offer: …`), in mail order.
pub fn why_lines(mail: &str, heading: &str) -> Vec<String> {
    mail.lines().filter(|l| l.trim_start().starts_with(heading)).map(|l| l.trim().to_owned()).collect()
}

struct Lang {
    statement: &'static str,
    tag: &'static str,
    heading: &'static str,
    words: [&'static str; 4],
}

const LANGS: [Lang; 3] = [
    Lang {
        statement: "Hľadám Škodu Octaviu, diesel, Bratislavský kraj",
        tag: "sk",
        heading: "Prečo táto ponuka:",
        words: [
            "značka Škoda, model Octavia, palivo diesel",
            "vo vašej oblasti: Bratislava (Bratislavský kraj)",
            "v rámci vášho cenového limitu",
            "zodpovedá slovám vášho dopytu",
        ],
    },
    Lang {
        statement: "Hledám ojetou Škodu Octavii, nafta, Bratislavský kraj",
        tag: "cs",
        heading: "Proč tato nabídka:",
        words: [
            "značka Škoda, model Octavia, palivo diesel",
            "ve vaší oblasti: Bratislava (Bratislavský kraj)",
            "v rámci vašeho cenového limitu",
            "odpovídá slovům vaší poptávky",
        ],
    },
    Lang {
        statement: "Looking for a used Skoda Octavia diesel in the Bratislava region",
        tag: "en",
        heading: "Why this offer:",
        words: [
            "make Škoda, model Octavia, fuel diesel",
            "in your area: Bratislava (Bratislava Region)",
            "within your price limit",
            "matches the words of your request",
        ],
    },
];

#[test]
fn explanations_in_words_in_list_matches_results_page_and_digest_in_each_language() {
    for lang in &LANGS {
        let f = Fx::new();
        let h = &f.holder;
        h.catalogue
            .import_offers(vec![
                car("near", "Škoda Octavia Combi 2.0 TDI", 11_999.0, "Bratislava"),
                car("far", "Škoda Octavia 1.9 TDI", 999.0, "Bratislava"),
                car("over", "Škoda Octavia RS", 12_001.0, "Bratislava"),
            ])
            .unwrap();
        let code = publish_confirmed(h, lang.statement, 12_000.0);
        let intent = h.intents.get_by_code(&code, None).unwrap();
        assert_eq!(intent.language, lang.tag, "the statement's language is detected");

        // intent_list_matches: words in `reasons`, codes in `reasonCodes`, score kept.
        let got = matches(h, &code);
        let titles: Vec<&str> = got.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(titles, ["Škoda Octavia 1.9 TDI", "Škoda Octavia Combi 2.0 TDI"], "under the hidden limit only");
        for (title, ext) in &got {
            assert_eq!(ext["reasons"], json!(lang.words), "{} {title}", lang.tag);
            assert_eq!(ext["reasonCodes"], json!(["category", "criteria", "area", "price", "text"]));
            assert!(ext["score"].as_f64().is_some_and(|s| s > 0.0), "{ext}");
        }
        assert_eq!(got[0].1["reasons"], got[1].1["reasons"], "1 EUR or 11 000 EUR under: the same words");

        // The digest mail: one line per offer, in the intent's language, no limit.
        assert_eq!(isto::deliveries::queue_due_digests(&h.base).unwrap(), 1);
        let mail = f.mails().last().unwrap().text.clone();
        let lines = why_lines(&mail, lang.heading);
        let want = format!("{} {}", lang.heading, lang.words.join("; "));
        assert_eq!(lines, [want.clone(), want], "{mail}");
        assert!(!mail.contains("12000") && !mail.contains("12\u{a0}000") && !mail.contains("12 000"), "{mail}");

        // The results page (from the digest's link): one paragraph per offer.
        let token = token_from_outbox(h, "/results/");
        let page = f.get(&format!("/results/{token}"), None);
        assert_eq!(page.status, StatusCode::OK);
        assert!(page.body.contains(&format!("lang=\"{}\"", lang.tag)), "the page is in the intent's language");
        let paras = why_paragraphs(&page.body);
        let want = format!("<strong>{}</strong> {}", lang.heading, lang.words.join("; "));
        assert_eq!(paras, [want.clone(), want], "{}", page.body);
        assert!(!page.body.contains("12000") && !page.body.contains("12\u{a0}000"), "no limit on the page");
    }
}

#[test]
fn without_a_price_limit_there_is_no_price_phrase_and_criteria_met_follow_the_intent() {
    let f = Fx::new();
    let h = &f.holder;
    h.catalogue.import_offers(vec![car("a", "Škoda Octavia Combi", 9_000.0, "Bratislava")]).unwrap();
    let args = json!({
        "statement": "Looking for a Skoda Octavia",
        "criteria": {"category": "vehicles", "make": "skoda"},
        "area": "SK",
    });
    let v = serde_json::to_value(crate::kit::mcp_call(h, "intent_publish_intent", &args).unwrap()).unwrap();
    let code = v["structuredContent"]["intentCode"].as_str().unwrap().to_owned();
    let consent = v["structuredContent"]["consentUrl"].as_str().unwrap().rsplit('/').next().unwrap().to_owned();
    h.intents.give_consent(&consent, "p@example.com", "en").unwrap();
    h.intents.confirm(&token_from_outbox(h, "/confirm/")).unwrap();
    let got = matches(h, &code);
    assert_eq!(got.len(), 1);
    assert_eq!(
        got[0].1["reasons"],
        json!(["make skoda", "in your area: Bratislava (Bratislava Region)", "matches the words of your request"]),
        "the person's spelling of the criterion; no price limit, no price phrase"
    );
    assert_eq!(got[0].1["reasonCodes"], json!(["category", "criteria", "area", "price", "text"]));
}
