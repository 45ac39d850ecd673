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
//! five minutes.

use super::Shared;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use axum::Router;

/// The route (merged into the pages' router before its state is set; no page headers).
pub(super) fn routes() -> Router<Shared> {
    Router::new().route("/.well-known/isto-intents", get(metadata))
}

/// `GET /.well-known/isto-intents`: [`crate::metadata::document`] (the one source, which
/// `isto admin registry-entry` draws from too).
async fn metadata(State(h): State<Shared>) -> Response {
    super::oauth::cached_json(crate::metadata::document(h.base.settings(), h.base.consent()))
}
