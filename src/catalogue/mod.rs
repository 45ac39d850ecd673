//! The catalogue: offer rows from feeds (JSON Lines and CSV), their validation, and the
//! ordinary catalogue search of `intent_search_offers` (PROTOCOL.md §2 Offer, §3).
//!
//! A row is an Offer of PROTOCOL.md §2 without the holder-assigned fields (`id`,
//! `source`, `publishedAt`), plus the feed's own id `ref`:
//!
//! ```json
//! {"ref": "A-17", "title": "Škoda Octavia 2.0 TDI", "description": "...",
//!  "category": "vehicles", "attributes": {"make": "Škoda", "year": 2018},
//!  "price": {"amount": 12900, "currency": "EUR"}, "area": "Košice",
//!  "seller": {"name": "Auto Kováč", "url": "https://auto.example"},
//!  "url": "https://auto.example/a-17", "validUntil": "2027-01-31T00:00:00Z"}
//! ```
//!
//! CSV files carry the same fields as columns (see [`reader`]); each CSV record is turned
//! into the JSON value above and goes through the same validator, [`parse_json_row`].

pub mod index;
mod reader;
mod search;
mod service;

pub use reader::{read_file, CatalogueError, Format, RawRow, RowError, RowReader, CSV_COLUMNS, MAX_LINE_BYTES};
#[cfg(any(test, feature = "testkit"))]
pub use search::search_with;
pub use search::{search_answer, search_json};
pub use service::{Catalogue, IndexStatus};

use crate::clock;
use crate::gazetteer::AreaObject;
use crate::protocol::input::{self, Fields, InputError};
use crate::protocol::{category, Category, CATEGORIES};
use crate::protocol::{Offer, OfferSource, SellerPublic};
use crate::records::{OfferInput, SellerRecord};
use crate::text;
use serde_json::{Map, Value};

/// Longest title, characters (PROTOCOL.md §2 Offer).
pub const TITLE_MAX: usize = 300;
/// Longest description, characters (PROTOCOL.md §2 Offer).
pub const DESCRIPTION_MAX: usize = 10_000;
/// Longest seller name and feed reference, characters.
pub const NAME_MAX: usize = 200;
/// Longest listing or seller URL, characters.
pub const URL_MAX: usize = 2000;

/// Holder-assigned Offer fields a feed must not send.
const HOLDER_FIELDS: &[&str] = &["id", "source", "publishedAt", "inReplyTo", "extensions"];

fn err<T>(msg: impl Into<String>) -> Result<T, InputError> {
    Err(InputError(msg.into()))
}

use crate::protocol::input::type_name;

/// Validates one catalogue row (a JSON object; see the module docs) into an
/// [`OfferInput`]. `currencies` are the ISO 4217 codes the holder has rates for.
///
/// Rules: `title` 1..300 characters (inner whitespace runs become one space; control
/// characters and bidirectional embeddings, overrides and isolates are removed from the
/// title, `ref`, `seller.name` and, but for tabs and line breaks, `description`:
/// [`text::one_line`], [`text::without_hidden`]),
/// `description` 0..10000, `category` a holder category key, `attributes` an object of
/// that category's attribute keys (number attributes accept numeric strings such as
/// `"2018"` and refuse other strings), `price` `{amount, currency}`, `area` a string or
/// object resolved by the gazetteer to a country and at most one region, `seller`
/// `{name (1..200), url?}`, `ref` 1..200, `url` http(s) up to 2000 characters,
/// `validUntil` an RFC 3339 time (a full-date means the end of that day, UTC). Unknown
/// properties are refused.
///
/// # Errors
/// [`InputError`] whose message names the field and the rule (`"price.currency is
/// required"`, `"attributes.year must be a number (calendar year)"`).
pub fn parse_json_row(v: &Value, currencies: &[String]) -> Result<OfferInput, InputError> {
    let Value::Object(map) = v else {
        return err(format!("a row must be a JSON object (one offer), not {}", type_name(v)));
    };
    let mut f = Fields::new(v, "")?;
    let reference = f.opt_str("ref", NAME_MAX)?.map(|r| text::one_line(&r)).filter(|r| !r.is_empty());
    let title = visible_line(f.req_str("title", TITLE_MAX)?, "title")?;
    let description = text::without_hidden(&f.opt_text("description", DESCRIPTION_MAX)?);
    let cat = parse_category(f.get("category"))?;
    let attributes = match f.get("attributes") {
        Some(a) => number_attributes(input::parse_attributes(a, cat.key)?, cat)?,
        None => Map::new(),
    };
    let price = match f.get("price") {
        Some(p) => input::parse_money(p, "price", currencies)?,
        None => return err("price is required: {\"amount\": 12900, \"currency\": \"EUR\"}"),
    };
    let area = match f.get("area") {
        Some(a) => offer_area(a)?,
        None => return err("area is required: the offer's location, e.g. \"Košice\" or \"SK-KI\""),
    };
    let (seller_name, seller_url) = match f.get("seller") {
        Some(s) => parse_seller(s)?,
        None => return err("seller is required: {\"name\": \"...\", \"url\": \"https://...\"}"),
    };
    let url = f.get("url").map(|u| parse_url(u, "url")).transpose()?;
    let valid_until = f.get("validUntil").map(parse_valid_until).transpose()?;
    let hint = if map.keys().any(|k| HOLDER_FIELDS.contains(&k.as_str())) {
        "; id, source, publishedAt, inReplyTo and extensions are assigned by the holder"
    } else {
        ""
    };
    f.finish(hint)?;
    Ok(OfferInput {
        reference,
        title,
        description,
        category: cat.key.to_owned(),
        attributes,
        price,
        area,
        seller_name,
        seller_url,
        url,
        valid_until,
    })
}

/// The Offer (PROTOCOL.md §2) of a validated row: `id`, `source.kind` (`catalogue` or
/// `reply`) from `seller`, `inReplyTo`, `publishedAt` (RFC 3339); the row's `ref`, when
/// given, becomes `extensions.ref`.
pub(crate) fn offer_of(
    row: OfferInput,
    id: String,
    kind: &str,
    seller: SellerRecord,
    in_reply_to: Option<String>,
    published_at: String,
) -> Offer {
    let mut ext = Map::new();
    if let Some(r) = row.reference {
        ext.insert("ref".into(), Value::String(r));
    }
    Offer {
        id,
        source: OfferSource { kind: kind.into(), seller_id: seller.id.clone(), url: row.url },
        in_reply_to,
        title: row.title,
        description: row.description,
        category: row.category,
        attributes: row.attributes,
        price: row.price,
        area: row.area,
        seller: SellerPublic { id: seller.id, name: seller.name, url: seller.url },
        published_at,
        valid_until: row.valid_until,
        extensions: Value::Object(ext),
    }
}

fn parse_category(v: Option<&Value>) -> Result<&'static Category, InputError> {
    let keys = || CATEGORIES.iter().map(|c| c.key).collect::<Vec<_>>().join(", ");
    match v {
        None => err(format!("category is required (one of {})", keys())),
        Some(Value::String(s)) => match category(s.trim()) {
            Some(c) => Ok(c),
            None => err(format!("category must be one of {}", keys())),
        },
        Some(other) => err(format!("category must be a string, not {}", type_name(other))),
    }
}

/// Number attributes: numbers stay, numeric strings become numbers, other strings fail.
fn number_attributes(mut attrs: Map<String, Value>, cat: &Category) -> Result<Map<String, Value>, InputError> {
    for (key, kind, unit) in cat.attributes {
        if *kind != "number" {
            continue;
        }
        let Some(v) = attrs.get_mut(*key) else { continue };
        if let Value::String(s) = v {
            match parse_number_text(s).and_then(number_value) {
                Some(n) => *v = n,
                None => {
                    let unit = unit.map(|u| format!(" ({u})")).unwrap_or_default();
                    return err(format!("attributes.{key} must be a number{unit}"));
                }
            }
        }
    }
    Ok(attrs)
}

/// Reads a number written in a feed: surrounding and grouping spaces (also no-break
/// spaces) are ignored, and a decimal comma is accepted when it is the only separator
/// and one or two digits follow it (`"1,9"`). `"150,000"` is not a number: the comma is
/// ambiguous.
pub fn parse_number_text(s: &str) -> Option<f64> {
    let compact: String = s.chars().filter(|c| !matches!(c, ' ' | '\u{a0}' | '\u{202f}')).collect();
    let text = match compact.split_once(',') {
        None => compact,
        Some((int, frac))
            if !int.contains('.')
                && !frac.contains([',', '.'])
                && (1..=2).contains(&frac.len())
                && frac.chars().all(|c| c.is_ascii_digit()) =>
        {
            format!("{int}.{frac}")
        }
        Some(_) => return None,
    };
    if text.is_empty() || !text.chars().all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+')) {
        return None;
    }
    text.parse::<f64>().ok().filter(|n| n.is_finite())
}

/// A JSON number for `n`: an integer when it has no fraction (`2018`, not `2018.0`).
fn number_value(n: f64) -> Option<Value> {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        Some(Value::from(n as i64))
    } else {
        serde_json::Number::from_f64(n).map(Value::Number)
    }
}

/// The offer's location: an Area with a country and at most one region (PROTOCOL.md §2
/// Offer.area); a country alone matches only intents that cover the whole country.
fn offer_area(v: &Value) -> Result<AreaObject, InputError> {
    let area = input::parse_area(v, "area")?;
    if area.regions.len() > 1 {
        return err(format!(
            "area must be the offer's location: one region, not {} ({})",
            area.regions.len(),
            area.regions.join(", ")
        ));
    }
    Ok(area)
}

/// `s` as [`text::one_line`]; an error naming `path` when nothing visible is left.
fn visible_line(s: String, path: &str) -> Result<String, InputError> {
    let line = text::one_line(&s);
    if line.is_empty() {
        return err(format!(
            "{path} must have a visible character (control and bidirectional formatting characters are removed)"
        ));
    }
    Ok(line)
}

fn parse_seller(v: &Value) -> Result<(String, Option<String>), InputError> {
    if !v.is_object() {
        return err(format!("seller must be an object {{name, url?}}, not {}", type_name(v)));
    }
    let mut f = Fields::new(v, "seller")?;
    let name = visible_line(f.req_str("name", NAME_MAX)?, "seller.name")?;
    let url = f.get("url").map(|u| parse_url(u, "seller.url")).transpose()?;
    f.finish("")?;
    Ok((name, url))
}

/// An absolute http(s) URL with a host, no spaces or control characters, at most
/// [`URL_MAX`] characters (listing, seller and registered seller URLs).
pub(crate) fn parse_url(v: &Value, path: &str) -> Result<String, InputError> {
    let rule = || InputError(format!("{path} must be an http or https URL of at most {URL_MAX} characters"));
    let Value::String(s) = v else {
        return err(format!("{path} must be a string, not {}", type_name(v)));
    };
    let s = s.trim();
    if s.chars().count() > URL_MAX || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(rule());
    }
    let lower = s.to_ascii_lowercase();
    let rest = lower.strip_prefix("https://").or_else(|| lower.strip_prefix("http://")).ok_or_else(rule)?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority.rsplit('@').next().unwrap_or_default();
    if host.is_empty() || host.starts_with(':') {
        return Err(rule());
    }
    Ok(s.to_owned())
}

fn parse_valid_until(v: &Value) -> Result<String, InputError> {
    let Value::String(s) = v else {
        return err(format!("validUntil must be a string, not {}", type_name(v)));
    };
    let s = s.trim();
    if let Ok(d) = clock::parse_date(s) {
        let end = d.with_hms(23, 59, 59).map_err(|_| InputError("validUntil is out of range".into()))?;
        return Ok(clock::rfc3339(end.assume_utc()));
    }
    clock::parse_rfc3339(s).map(clock::rfc3339).map_err(|m| InputError(format!("validUntil {m}")))
}

#[cfg(test)]
mod tests;
