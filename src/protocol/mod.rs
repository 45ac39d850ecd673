//! The Isto Intents objects of PROTOCOL.md §2 as they travel in tool results, plus the
//! categories this holder serves. Input parsing and validation live in [`input`]; the
//! JSON Schemas of the tools in [`schema`].

pub mod consent;
pub mod input;
pub mod schema;
pub mod tools;

pub use crate::gazetteer::AreaObject;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Money: a decimal amount and an ISO 4217 code (PROTOCOL.md §2 Offer.price).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Money {
    /// Amount in the currency's main unit.
    pub amount: f64,
    /// ISO 4217 code, upper case.
    pub currency: String,
}

/// Serializes `v` when finite; names `field` otherwise.
fn finite<S: serde::Serializer>(v: &Option<f64>, field: &str, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(n) if !n.is_finite() => Err(serde::ser::Error::custom(format!("{field} must be a finite number"))),
        _ => v.serialize(s),
    }
}

fn finite_max<S: serde::Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    finite(v, "budget.max", s)
}

fn finite_min<S: serde::Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    finite(v, "budget.min", s)
}

/// The visible budget (PROTOCOL.md §2 Budget): `max`, optional `min`, currency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// Upper bound, in `currency`. A non-finite value does not serialize (JSON would
    /// write `null`, which reads back as no bound).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "finite_max")]
    pub max: Option<f64>,
    /// Lower bound, in `currency`; finite, as `max`.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "finite_min")]
    pub min: Option<f64>,
    /// ISO 4217 code.
    pub currency: String,
}

/// Intent status (PROTOCOL.md §2, seed §5): `awaiting_consent → awaiting_email_confirmation
/// → active`, or `expired` / `withdrawn`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// A draft published over `/mcp`, waiting for the person on the consent page.
    AwaitingConsent,
    /// Consent given; waiting for the e-mail confirmation (double opt-in).
    AwaitingEmailConfirmation,
    /// Confirmed: matched and delivered.
    Active,
    /// Ran out (draft after 24 h, unconfirmed after 72 h, active after validUntil).
    Expired,
    /// Withdrawn by the person or the code holder.
    Withdrawn,
}

impl Status {
    /// Every status, in the order of the lifecycle.
    pub const ALL: [Status; 5] =
        [Self::AwaitingConsent, Self::AwaitingEmailConfirmation, Self::Active, Self::Expired, Self::Withdrawn];

    /// The wire name (`"awaiting_consent"`, ...; by declaration order).
    pub fn as_str(self) -> &'static str {
        ["awaiting_consent", "awaiting_email_confirmation", "active", "expired", "withdrawn"][self as usize]
    }

    /// Whether no further transition is possible.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Expired | Self::Withdrawn)
    }
}

/// Who may see an intent beyond the holder (PROTOCOL.md §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    /// Only the holder matches it (default).
    #[default]
    Private,
    /// Sellers may see it under a per-seller pseudonym.
    Pseudonymous,
}

/// An intent as tools return it (PROTOCOL.md §2 "Intent"): never contact data, never the
/// hidden limit's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Intent {
    /// `int_` + 26 characters; not secret.
    pub id: String,
    /// Current status.
    pub status: Status,
    /// The buyer's words, 1..2000 characters.
    pub statement: String,
    /// Holder category key (`vehicles`, `property`).
    pub category: String,
    /// Structured constraints (see [`input::parse_criteria`]).
    pub criteria: Map<String, Value>,
    /// The normalised area.
    pub area: AreaObject,
    /// The visible budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
    /// Whether a hidden limit is set; never its value.
    pub has_hidden_limit: bool,
    /// Date by which the buyer wants to buy, `YYYY-MM-DD`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buy_by: Option<String>,
    /// End of validity, RFC 3339.
    pub valid_until: String,
    /// `private` or `pseudonymous`.
    pub visibility: Visibility,
    /// BCP 47 tag of the statement (`sk`, `cs`, `en`).
    pub language: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
    /// Holder additions: `{"matchCount": n}`.
    pub extensions: Value,
}

/// Where an offer comes from (PROTOCOL.md §2 Offer.source).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OfferSource {
    /// `catalogue` or `reply`.
    pub kind: String,
    /// The seller's holder-assigned id.
    pub seller_id: String,
    /// The listing's own page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// A business seller's public details.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SellerPublic {
    /// `sel_` + 26 characters.
    pub id: String,
    /// Display name.
    pub name: String,
    /// The seller's web site.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// An offer (PROTOCOL.md §2 "Offer").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Offer {
    /// `off_` + 26 characters.
    pub id: String,
    /// Origin of the offer.
    pub source: OfferSource,
    /// The intent a reply answers; present iff `source.kind = "reply"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_reply_to: Option<String>,
    /// 1..300 characters.
    pub title: String,
    /// 0..10000 characters.
    pub description: String,
    /// Category key.
    pub category: String,
    /// Attributes, same keys and units as criteria.
    pub attributes: Map<String, Value>,
    /// Asking price.
    pub price: Money,
    /// The offer's location: country and exactly one region when known.
    pub area: AreaObject,
    /// The seller's public details.
    pub seller: SellerPublic,
    /// RFC 3339.
    pub published_at: String,
    /// RFC 3339, when the offer lapses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<String>,
    /// Holder additions: `{"ref": "<feed id>"}`.
    pub extensions: Value,
}

/// One delivered match (PROTOCOL.md §2 "Delivery").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    /// The offer as it was when delivered... and as it is now, when still stored.
    pub offer: Offer,
    /// RFC 3339 with microseconds.
    pub delivered_at: String,
    /// `{"score": number, "reasons": [string]}` (PROTOCOL.md §2): as answered,
    /// `reasons` are phrases in the intent's language and `reasonCodes` the stored
    /// machine codes (`category`, `criteria`, `area`, `price`, `text`); see
    /// `matching::explain::annotate`. Stored, `reasons` holds the codes.
    pub extensions: Value,
}

/// A category this holder serves, with its attribute keys and units (PROTOCOL.md §2, §8).
#[derive(Debug, Clone, Copy)]
pub struct Category {
    /// Key: `vehicles`, `property`.
    pub key: &'static str,
    /// `(attribute key, kind, unit)`; kind is `string` or `number`.
    pub attributes: &'static [(&'static str, &'static str, Option<&'static str>)],
}

/// The budget band of intents without a visible `budget.max`, and the buy-by band of
/// intents without `buyBy` (PROTOCOL.md §5).
pub const NONE: &str = "none";

/// The buy-by bands of demand summaries (PROTOCOL.md §5), in grid order.
pub const BUY_BY_BANDS: [&str; 5] = ["1m", "3m", "12m", "later", NONE];

/// The categories of the first holders (vehicles and property in SK and CZ).
pub const CATEGORIES: &[Category] = &[
    Category {
        key: "vehicles",
        attributes: &[
            ("make", "string", None),
            ("model", "string", None),
            ("body", "string", None),
            ("fuel", "string", None),
            ("transmission", "string", None),
            ("year", "number", Some("calendar year")),
            ("mileageKm", "number", Some("km")),
            ("powerKw", "number", Some("kW")),
            ("color", "string", None),
        ],
    },
    Category {
        key: "property",
        attributes: &[
            ("type", "string", None),
            ("transaction", "string", None),
            ("disposition", "string", None),
            ("rooms", "number", Some("count")),
            ("floorAreaM2", "number", Some("m²")),
            ("landAreaM2", "number", Some("m²")),
            ("floor", "number", Some("count")),
        ],
    },
];

/// Looks a category up by key.
pub fn category(key: &str) -> Option<&'static Category> {
    CATEGORIES.iter().find(|c| c.key == key)
}

/// The disclaimer every tool description carries (seed "Rules specific to agents" 2).
pub const AGGREGATOR_NOTE: &str =
    "Results come from a market aggregator (an Isto Intents holder) and may be incomplete.";

#[cfg(test)]
mod category_keys_tests {
    #[test]
    fn settings_know_the_same_category_keys() {
        let keys: Vec<&str> = super::CATEGORIES.iter().map(|c| c.key).collect();
        assert_eq!(keys, crate::config::CATEGORY_KEYS);
    }

    #[test]
    fn status_names_are_the_wire_names() {
        for s in super::Status::ALL {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
    }
}
