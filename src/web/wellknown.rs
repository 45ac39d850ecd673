//! `GET /.well-known/isto-intents`: the holder metadata of PROTOCOL.md §8.
//!
//! ```json
//! {"name": "isto", "countries": ["SK", "CZ"], "languages": ["sk", "cs", "en"],
//!  "categories": [{"key": "vehicles",
//!                  "attributes": [{"key": "make", "type": "string"},
//!                                 {"key": "mileageKm", "type": "number", "unit": "km"}, ...],
//!                  "currency": "EUR",
//!                  "bandGrid": {"area": ["SK-BC", ...], "budgetBand": ["0-5000", ..., "none"],
//!                               "buyByBand": ["1m", "3m", "12m", "later", "none"]}}, ...],
//!  "rates": {"CZK": 0.04, "EUR": 1.0},
//!  "endpoints": {"mcp": ".../mcp", "buyer": ".../mcp/buyer", "seller": ".../mcp/seller",
//!                "authorizationServer": "<issuer>"},
//!  "consentTextVersions": {"sk": "…", "cs": "…", "en": "…"},
//!  "k": 5}
//! ```
//!
//! `rates` are the value of one unit of each currency in the categories' currency (the
//! holder's default currency); `authorizationServer` is the OAuth issuer, whose RFC 8414
//! metadata is at `<issuer>/.well-known/oauth-authorization-server`. Public, cached for
//! five minutes (`Cache-Control: public, max-age=300`); it holds nothing private.

use super::i18n::LANGUAGES;
use super::Shared;
use crate::protocol::CATEGORIES;
use crate::state::AppState;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Map, Value};

/// The route (merged into the pages' router before its state is set; no page headers).
pub(super) fn routes() -> Router<Shared> {
    Router::new().route("/.well-known/isto-intents", get(metadata))
}

/// The metadata document (see the module docs); also what `isto admin registry-entry`
/// can draw countries, categories, languages and endpoints from.
pub fn document(h: &AppState) -> Value {
    let s = &h.base.settings;
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
    let consent: Map<String, Value> =
        LANGUAGES.iter().map(|l| ((*l).to_owned(), Value::String(h.base.consent.get(l).version))).collect();
    json!({
        "name": s.holder_name,
        "countries": countries,
        "languages": LANGUAGES,
        "categories": categories,
        "rates": s.rates,
        "endpoints": {
            "mcp": format!("{base}/mcp"),
            "buyer": crate::oauth::Resource::Buyer.url(base),
            "seller": crate::oauth::Resource::Seller.url(base),
            "authorizationServer": base,
        },
        "consentTextVersions": consent,
        "k": s.demand_k,
    })
}

/// `GET /.well-known/isto-intents`.
async fn metadata(State(h): State<Shared>) -> Response {
    ([(header::CACHE_CONTROL, "public, max-age=300")], Json(document(&h))).into_response()
}
