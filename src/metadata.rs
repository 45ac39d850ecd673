//! The holder's public description (PROTOCOL.md §8), in one place: the document of
//! `GET /.well-known/isto-intents` ([`document`], served by `web::wellknown`) and the
//! entry for the Isto Intents Registry ([`registry_entry`], printed by `isto admin
//! registry-entry`), which is drawn from the document.

use crate::config::Settings;
use crate::policy::Resource;
use crate::protocol::consent::{ConsentTexts, LANGUAGES};
use crate::protocol::CATEGORIES;
use serde_json::{json, Map, Value};

/// The MCP revisions the holder's endpoints speak (rmcp's server: `initialize` up to
/// 2025-11-25, `server/discover` on 2026-07-28).
pub const PROTOCOL_REVISIONS: [&str; 2] = ["2025-11-25", "2026-07-28"];

/// The metadata document of `GET /.well-known/isto-intents`:
///
/// ```json
/// {"name": "isto", "countries": ["SK", "CZ"], "languages": ["sk", "cs", "en"],
///  "categories": [{"key": "vehicles",
///                  "attributes": [{"key": "make", "type": "string"},
///                                 {"key": "mileageKm", "type": "number", "unit": "km"}, ...],
///                  "currency": "EUR",
///                  "bandGrid": {"area": ["SK-BC", ...], "budgetBand": ["0-5000", ..., "none"],
///                               "buyByBand": ["1m", "3m", "12m", "later", "none"]}}, ...],
///  "rates": {"CZK": 0.04, "EUR": 1.0},
///  "endpoints": {"mcp": ".../mcp", "buyer": ".../mcp/buyer", "seller": ".../mcp/seller",
///                "authorizationServer": "<issuer>"},
///  "consentTextVersions": {"sk": "…", "cs": "…", "en": "…"},
///  "k": 5}
/// ```
///
/// `rates` are the value of one unit of each currency in the categories' currency (the
/// holder's default currency); `authorizationServer` is the OAuth issuer, whose RFC 8414
/// metadata is at `<issuer>/.well-known/oauth-authorization-server`. It holds nothing
/// private.
pub fn document(settings: &Settings, consent: &ConsentTexts) -> Value {
    let s = settings;
    let base = &s.public_url.base;
    let mut countries: Vec<&str> = Vec::new();
    for (_, country) in crate::gazetteer::all_regions() {
        if !countries.contains(&country) {
            countries.push(country);
        }
    }
    let categories: Vec<Value> = CATEGORIES
        .iter()
        .map(|c| {
            let attributes: Vec<Value> = c
                .attributes
                .iter()
                .map(|(key, kind, unit)| {
                    let mut a = json!({"key": key, "type": kind});
                    if let Some(u) = unit {
                        a["unit"] = json!(u);
                    }
                    a
                })
                .collect();
            let grid = crate::demand::grid(s, c.key);
            json!({"key": c.key, "attributes": attributes, "currency": grid.currency, "bandGrid": grid.to_json()})
        })
        .collect();
    let versions: Map<String, Value> =
        LANGUAGES.iter().map(|l| ((*l).to_owned(), Value::String(consent.get(l).version))).collect();
    json!({
        "name": s.holder_name,
        "countries": countries,
        "languages": LANGUAGES,
        "categories": categories,
        "rates": s.rates,
        "endpoints": {
            "mcp": format!("{base}/mcp"),
            "buyer": Resource::Buyer.url(base),
            "seller": Resource::Seller.url(base),
            "authorizationServer": base,
        },
        "consentTextVersions": versions,
        "k": s.demand_k,
    })
}

/// The holder's entry for the Isto Intents Registry (PROTOCOL.md §8), drawn from
/// [`document`]:
///
/// ```json
/// {"name": "isto", "url": "https://holder.example", "metadata": ".../.well-known/isto-intents",
///  "countries": ["SK", "CZ"], "categories": ["vehicles", "property"],
///  "languages": ["sk", "cs", "en"], "endpoints": {...as in the document...},
///  "protocolRevisions": ["2025-11-25", "2026-07-28"], "check": <isto check --json> | null}
/// ```
///
/// `check` is the report of `isto check --json` when one is given (else `null`).
pub fn registry_entry(document: &Value, base: &str, check: Option<Value>) -> Value {
    let categories: Vec<Value> = document["categories"]
        .as_array()
        .map(|cs| cs.iter().filter_map(|c| c.get("key").cloned()).collect())
        .unwrap_or_default();
    json!({
        "name": document["name"],
        "url": base,
        "metadata": format!("{base}/.well-known/isto-intents"),
        "countries": document["countries"],
        "categories": categories,
        "languages": document["languages"],
        "endpoints": document["endpoints"],
        "protocolRevisions": PROTOCOL_REVISIONS,
        "check": check.unwrap_or(Value::Null),
    })
}
