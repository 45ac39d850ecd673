//! Parsing and validation of tool inputs and catalogue rows (PROTOCOL.md §2, §3).
//!
//! Every error names the field by its JSON path and the rule it breaks
//! (`"budget.max must be a positive number"`), as PROTOCOL.md §3 "Errors" asks. Nothing
//! is stored before the whole input has passed.

use super::{category, Budget, Money, Visibility, CATEGORIES};
use crate::gazetteer::{self, AreaObject};
use crate::text;
use serde_json::{Map, Value};

/// A validation failure: the message names the field and the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InputError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, InputError> {
    Err(InputError(msg.into()))
}

/// Maximum statement length in characters (PROTOCOL.md §2).
pub const STATEMENT_MAX: usize = 2000;

/// How a JSON value's type reads in an error message: `a string`, `an array`, ...
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A JSON object being read field by field; [`Fields::finish`] rejects properties that
/// were never asked for.
pub struct Fields<'a> {
    map: &'a Map<String, Value>,
    prefix: String,
    known: Vec<&'static str>,
}

impl<'a> Fields<'a> {
    /// Starts reading `v`, which must be an object; `prefix` is its path (`""` at top level).
    ///
    /// # Errors
    /// When `v` is not an object.
    pub fn new(v: &'a Value, prefix: &str) -> Result<Self, InputError> {
        match v {
            Value::Object(map) => Ok(Self { map, prefix: prefix.to_owned(), known: Vec::new() }),
            other => {
                let what = if prefix.is_empty() { "arguments" } else { prefix };
                err(format!("{what} must be an object, not {}", type_name(other)))
            }
        }
    }

    /// The path of `key` for messages: `budget.max`.
    pub fn path(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.prefix)
        }
    }

    /// The raw value of `key` (null counts as absent).
    pub fn get(&mut self, key: &'static str) -> Option<&'a Value> {
        self.known.push(key);
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// A required string of 1..=max characters, trimmed.
    ///
    /// # Errors
    /// Missing, not a string, empty or too long.
    pub fn req_str(&mut self, key: &'static str, max: usize) -> Result<String, InputError> {
        match self.opt_str(key, max)? {
            Some(s) => Ok(s),
            None => err(format!("{} is required", self.path(key))),
        }
    }

    /// An optional string of 1..=max characters, trimmed.
    ///
    /// # Errors
    /// Not a string, empty or too long.
    pub fn opt_str(&mut self, key: &'static str, max: usize) -> Result<Option<String>, InputError> {
        let Some(v) = self.get(key) else { return Ok(None) };
        let Value::String(s) = v else {
            return err(format!("{} must be a string, not {}", self.path(key), type_name(v)));
        };
        let s = s.trim();
        if s.is_empty() {
            return err(format!("{} must not be empty", self.path(key)));
        }
        let n = s.chars().count();
        if n > max {
            return err(format!("{} must be at most {max} characters (got {n})", self.path(key)));
        }
        Ok(Some(s.to_owned()))
    }

    /// An optional string that may be empty (descriptions).
    ///
    /// # Errors
    /// Not a string or too long.
    pub fn opt_text(&mut self, key: &'static str, max: usize) -> Result<String, InputError> {
        let Some(v) = self.get(key) else { return Ok(String::new()) };
        let Value::String(s) = v else {
            return err(format!("{} must be a string, not {}", self.path(key), type_name(v)));
        };
        let n = s.chars().count();
        if n > max {
            return err(format!("{} must be at most {max} characters (got {n})", self.path(key)));
        }
        Ok(s.trim().to_owned())
    }

    /// An optional positive finite number ≤ 10^12.
    ///
    /// # Errors
    /// Not a number, not positive, or too large.
    pub fn opt_positive(&mut self, key: &'static str) -> Result<Option<f64>, InputError> {
        let Some(v) = self.get(key) else { return Ok(None) };
        match v.as_f64() {
            Some(n) if n.is_finite() && n > 0.0 && n <= 1e12 => Ok(Some(n)),
            Some(_) => err(format!("{} must be a positive number up to 10^12", self.path(key))),
            None => err(format!("{} must be a positive number, not {}", self.path(key), type_name(v))),
        }
    }

    /// An optional integer in `min..=max`.
    ///
    /// # Errors
    /// Not an integer or out of range.
    pub fn opt_int(&mut self, key: &'static str, min: i64, max: i64) -> Result<Option<i64>, InputError> {
        let Some(v) = self.get(key) else { return Ok(None) };
        match v.as_i64() {
            Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
            _ => err(format!("{} must be an integer from {min} to {max}", self.path(key))),
        }
    }

    /// Rejects properties that no getter asked for, listing the accepted ones. `hint`
    /// is appended (used to point contact data to the consent page).
    ///
    /// # Errors
    /// The first unknown property.
    pub fn finish(self, hint: &str) -> Result<(), InputError> {
        if let Some(k) = self.map.keys().find(|k| !self.known.contains(&k.as_str())) {
            let mut allowed = self.known.clone();
            allowed.dedup();
            let name = self.path(&echo(k));
            return err(format!("{name} is not a known property (accepted: {}){hint}", allowed.join(", ")));
        }
        Ok(())
    }
}

/// Most characters of a caller-chosen name (an unknown property or tool) that an error
/// message repeats.
pub const ECHO_MAX_CHARS: usize = 64;

/// `name` as an error message repeats it: at most [`ECHO_MAX_CHARS`] characters, then
/// `…`, so that an answer never grows with what the caller sent.
pub fn echo(name: &str) -> std::borrow::Cow<'_, str> {
    match name.char_indices().nth(ECHO_MAX_CHARS) {
        Some((at, _)) => format!("{}…", &name[..at]).into(),
        None => name.into(),
    }
}

/// Parses a currency code: three ASCII letters, upper-cased, with a configured rate.
///
/// # Errors
/// Bad shape or no rate, naming `path`.
pub fn parse_currency(v: &Value, path: &str, accepted: &[String]) -> Result<String, InputError> {
    let Value::String(s) = v else { return err(format!("{path} must be a string, not {}", type_name(v))) };
    let c = s.trim().to_ascii_uppercase();
    if c.len() != 3 || !c.chars().all(|ch| ch.is_ascii_alphabetic()) {
        return err(format!("{path} must be an ISO 4217 code such as EUR"));
    }
    if !accepted.contains(&c) {
        return err(format!("{path}: no exchange rate for {c}; this holder accepts {}", accepted.join(", ")));
    }
    Ok(c)
}

/// Parses a Budget: a plain number (= max in `default_currency`) or
/// `{max?, min?, currency?}` with at least one bound, min ≤ max.
///
/// # Errors
/// Naming `budget.max`, `budget.min`, `budget.currency`.
pub fn parse_budget(v: &Value, default_currency: &str, accepted: &[String]) -> Result<Budget, InputError> {
    if let Some(n) = v.as_f64() {
        if !(n.is_finite() && n > 0.0 && n <= 1e12) {
            return err("budget must be a positive number up to 10^12");
        }
        return Ok(Budget { max: Some(n), min: None, currency: default_currency.to_owned() });
    }
    if !v.is_object() {
        return err(format!("budget must be a number or an object {{max, min, currency}}, not {}", type_name(v)));
    }
    let mut f = Fields::new(v, "budget")?;
    let max = f.opt_positive("max")?;
    let min = match f.get("min") {
        None => None,
        Some(m) => match m.as_f64() {
            Some(n) if n.is_finite() && (0.0..=1e12).contains(&n) => Some(n),
            _ => return err("budget.min must be a number ≥ 0"),
        },
    };
    let currency = match f.get("currency") {
        Some(c) => parse_currency(c, "budget.currency", accepted)?,
        None => default_currency.to_owned(),
    };
    f.finish("")?;
    if max.is_none() && min.is_none() {
        return err("budget.max is required when budget is an object");
    }
    if let (Some(lo), Some(hi)) = (min, max) {
        if lo > hi {
            return err("budget.min must not exceed budget.max");
        }
    }
    Ok(Budget { max, min, currency })
}

/// Parses Money `{amount, currency}`.
///
/// # Errors
/// Naming `<path>.amount` / `<path>.currency`.
pub fn parse_money(v: &Value, path: &str, accepted: &[String]) -> Result<Money, InputError> {
    let mut f = Fields::new(v, path)?;
    let amount = f.opt_positive("amount")?.ok_or_else(|| InputError(format!("{path}.amount is required")))?;
    let currency = match f.get("currency") {
        Some(c) => parse_currency(c, &format!("{path}.currency"), accepted)?,
        None => return err(format!("{path}.currency is required")),
    };
    f.finish("")?;
    Ok(Money { amount, currency })
}

/// Refuses an area string (or region entry) longer than [`gazetteer::MAX_AREA_CHARS`]
/// characters after trimming, before any folding or lookup; counts at most one
/// character past the cap.
fn check_area_len(s: &str, path: &str) -> Result<(), InputError> {
    let max = gazetteer::MAX_AREA_CHARS;
    if s.trim().chars().nth(max).is_some() {
        return err(format!("{path} must be at most {max} characters (a region code or place name)"));
    }
    Ok(())
}

/// Parses an Area (string or object) through the gazetteer.
///
/// # Errors
/// `area` (or `path`) and the gazetteer's message, which lists close names; `area` (or
/// `area.regions[i]`) longer than [`gazetteer::MAX_AREA_CHARS`] characters is refused
/// before the gazetteer sees it.
pub fn parse_area(v: &Value, path: &str) -> Result<AreaObject, InputError> {
    match v {
        Value::String(s) => {
            check_area_len(s, path)?;
            gazetteer::resolve(s).map_err(|e| InputError(format!("{path}: {e}")))
        }
        Value::Object(_) => {
            let mut f = Fields::new(v, path)?;
            let country = f.req_str("country", 2)?;
            let regions = match f.get("regions") {
                None => Vec::new(),
                Some(Value::Array(a)) if a.len() <= 30 => a
                    .iter()
                    .enumerate()
                    .map(|(i, r)| match r {
                        Value::String(s) => check_area_len(s, &format!("{path}.regions[{i}]")).map(|()| s.clone()),
                        other => err(format!("{path}.regions must hold strings, not {}", type_name(other))),
                    })
                    .collect::<Result<Vec<_>, _>>()?,
                Some(_) => return err(format!("{path}.regions must be an array of at most 30 region codes")),
            };
            let place = f.opt_str("place", 200)?;
            f.finish("")?;
            let area = gazetteer::normalize(&AreaObject { country, regions, place })
                .map_err(|e| InputError(format!("{path}: {e}")))?;
            // A known place must lie in the regions given, or the area says two things.
            if let (Some(p), false) = (&area.place, area.regions.is_empty()) {
                if let Ok(known) = gazetteer::resolve(p) {
                    if known.place.is_some() && !known.regions.iter().all(|r| area.regions.contains(r)) {
                        return err(format!(
                            "{path}.place {p:?} lies in {}, which is not in {path}.regions",
                            known.regions.join(", ")
                        ));
                    }
                }
            }
            Ok(area)
        }
        other => err(format!("{path} must be a string or an object {{country, regions}}, not {}", type_name(other))),
    }
}

/// The longest criteria or attributes key accepted, in characters (attribute keys are
/// short identifiers such as `"rooms"`).
pub const CRITERIA_KEY_MAX: usize = 64;

/// Validates `criteria` (PROTOCOL.md §2): a flat object whose keys other than `category`
/// are attribute keys of the category; values are a string, number, array of those
/// (any of, 1..=20), or `{min?, max?}`. Returns the category (if named) and the criteria
/// without it.
///
/// # Errors
/// Naming `criteria.<key>` and the rule.
pub fn parse_criteria(v: &Value) -> Result<(Option<String>, Map<String, Value>), InputError> {
    let Value::Object(map) = v else {
        return err(format!("criteria must be an object, not {}", type_name(v)));
    };
    if map.len() > 30 {
        return err("criteria must have at most 30 keys");
    }
    let cat = match map.get("category") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => match category(c.trim()) {
            Some(c) => Some(c.key.to_owned()),
            None => {
                let keys: Vec<_> = CATEGORIES.iter().map(|c| c.key).collect();
                return err(format!("criteria.category must be one of {}", keys.join(", ")));
            }
        },
        Some(other) => return err(format!("criteria.category must be a string, not {}", type_name(other))),
    };
    let mut out = Map::new();
    for (k, val) in map {
        if k == "category" {
            continue;
        }
        if k.chars().nth(CRITERIA_KEY_MAX).is_some() {
            return err(format!("criteria keys must be at most {CRITERIA_KEY_MAX} characters"));
        }
        let path = format!("criteria.{k}");
        out.insert(k.clone(), parse_constraint(val, &path)?);
    }
    if let Some(c) = &cat {
        check_criteria_keys(c, &out)?;
    }
    Ok((cat, out))
}

/// Checks criteria against a category's attributes (PROTOCOL.md §2): every key is an
/// attribute of the category; number attributes take numbers or `{min, max}`, string
/// attributes take strings (or arrays of them). Called again once a category has been
/// classified from the statement.
///
/// # Errors
/// Naming `criteria.<key>` and the rule.
pub fn check_criteria_keys(cat: &str, criteria: &Map<String, Value>) -> Result<(), InputError> {
    let Some(c) = category(cat) else { return err(format!("criteria.category {cat:?} is unknown")) };
    for (k, v) in criteria {
        let Some((_, kind, _)) = c.attributes.iter().find(|(a, _, _)| a == k) else {
            let keys: Vec<_> = c.attributes.iter().map(|(a, _, _)| *a).collect();
            return err(format!("criteria.{k} is not an attribute of {} (known: {})", c.key, keys.join(", ")));
        };
        let ok = |x: &Value| match *kind {
            "number" => x.is_number(),
            _ => x.is_string(),
        };
        let fits = match v {
            Value::Array(a) => a.iter().all(ok),
            Value::Object(_) => *kind == "number",
            x => ok(x),
        };
        if !fits {
            let want = if *kind == "number" { "a number or {min, max}" } else { "a string or an array of strings" };
            return err(format!("criteria.{k} must be {want}"));
        }
    }
    Ok(())
}

fn parse_scalar(v: &Value, path: &str) -> Result<Value, InputError> {
    match v {
        Value::String(s) if !s.trim().is_empty() && s.chars().count() <= 200 => Ok(Value::String(s.trim().to_owned())),
        Value::String(_) => err(format!("{path} must be a non-empty string of at most 200 characters")),
        Value::Number(n) if n.as_f64().is_some_and(f64::is_finite) => Ok(v.clone()),
        other => err(format!("{path} must be a string, number, array or {{min, max}}, not {}", type_name(other))),
    }
}

fn parse_constraint(v: &Value, path: &str) -> Result<Value, InputError> {
    match v {
        Value::Array(a) => {
            if a.is_empty() || a.len() > 20 {
                return err(format!("{path} must list 1 to 20 values"));
            }
            a.iter().map(|x| parse_scalar(x, path)).collect::<Result<Vec<_>, _>>().map(Value::Array)
        }
        Value::Object(_) => {
            let mut f = Fields::new(v, path)?;
            let num = |x: Option<&Value>, p: String| match x {
                None => Ok(None),
                Some(n) => {
                    n.as_f64().filter(|n| n.is_finite()).map(Some).ok_or(InputError(format!("{p} must be a number")))
                }
            };
            let min = num(f.get("min"), f.path("min"))?;
            let max = num(f.get("max"), f.path("max"))?;
            f.finish("")?;
            if min.is_none() && max.is_none() {
                return err(format!("{path} needs min or max"));
            }
            if let (Some(lo), Some(hi)) = (min, max) {
                if lo > hi {
                    return err(format!("{path}.min must not exceed {path}.max"));
                }
            }
            let mut m = Map::new();
            if let Some(x) = min {
                m.insert("min".into(), Value::from(x));
            }
            if let Some(x) = max {
                m.insert("max".into(), Value::from(x));
            }
            Ok(Value::Object(m))
        }
        other => parse_scalar(other, path),
    }
}

/// Validates offer attributes: a flat object of strings (≤200 chars), finite numbers or
/// booleans; keys must be attributes of the category.
///
/// # Errors
/// Naming `attributes.<key>`.
pub fn parse_attributes(v: &Value, cat: &str) -> Result<Map<String, Value>, InputError> {
    let Value::Object(map) = v else {
        return err(format!("attributes must be an object, not {}", type_name(v)));
    };
    let c = category(cat);
    let mut out = Map::new();
    for (k, val) in map {
        if k.chars().nth(CRITERIA_KEY_MAX).is_some() {
            return err(format!("attributes keys must be at most {CRITERIA_KEY_MAX} characters"));
        }
        if let Some(c) = c {
            if !c.attributes.iter().any(|(a, _, _)| a == k) {
                let keys: Vec<_> = c.attributes.iter().map(|(a, _, _)| *a).collect();
                return err(format!("attributes.{k} is not an attribute of {} (known: {})", c.key, keys.join(", ")));
            }
        }
        match val {
            Value::Null => {}
            Value::Array(_) | Value::Object(_) => {
                return err(format!("attributes.{k} must be a string or number, not {}", type_name(val)));
            }
            other => {
                out.insert(k.clone(), parse_scalar(other, &format!("attributes.{k}"))?);
            }
        }
    }
    Ok(out)
}

/// Guesses the category of a statement from its words (used when criteria has none).
pub fn classify(statement: &str) -> Option<&'static str> {
    const VEHICLE: &[&str] = &[
        "auto",
        "auta",
        "autom",
        "car",
        "cars",
        "vozidl",
        "vuz",
        "voz",
        "skoda",
        "octavi",
        "fabi",
        "superb",
        "kodiaq",
        "karoq",
        "bmw",
        "audi",
        "volkswagen",
        "vw",
        "passat",
        "golf",
        "toyota",
        "ford",
        "hyundai",
        "kia",
        "renault",
        "peugeot",
        "opel",
        "mercedes",
        "volvo",
        "dacia",
        "seat",
        "mazda",
        "nissan",
        "honda",
        "suzuki",
        "citroen",
        "fiat",
        "tesla",
        "combi",
        "kombi",
        "sedan",
        "suv",
        "diesel",
        "nafta",
        "tdi",
        "motorka",
        "motocykel",
        "dodavk",
        "van",
        "pickup",
    ];
    const PROPERTY: &[&str] = &[
        "byt",
        "bytu",
        "flat",
        "apartment",
        "apartman",
        "dom",
        "domu",
        "dum",
        "house",
        "pozemok",
        "pozemek",
        "land",
        "izbovy",
        "izb",
        "garsonk",
        "garson",
        "nehnutel",
        "nemovit",
        "chata",
        "chalupa",
        "kancelar",
        "office",
        "1+kk",
        "2+kk",
        "3+kk",
        "4+kk",
        "2+1",
        "3+1",
        "4+1",
        "rodinny",
        "property",
        "real",
    ];
    let folded = text::fold(statement);
    let toks: Vec<&str> =
        folded.split(|c: char| !(c.is_alphanumeric() || c == '+')).filter(|t| !t.is_empty()).collect();
    let hit = |list: &[&str]| toks.iter().filter(|t| list.iter().any(|k| t.starts_with(k))).count();
    let (v, p) = (hit(VEHICLE), hit(PROPERTY));
    match (v, p) {
        (0, 0) => None,
        (v, p) if v >= p => Some("vehicles"),
        _ => Some("property"),
    }
}

/// Detects the statement's language among sk, cs and en; `fallback` when unsure.
pub fn detect_language(statement: &str, fallback: &str) -> String {
    let lower = statement.to_lowercase();
    if lower.chars().any(|c| matches!(c, 'ř' | 'ů' | 'ě')) {
        return "cs".into();
    }
    if lower.chars().any(|c| matches!(c, 'ľ' | 'ĺ' | 'ŕ' | 'ô' | 'ä')) {
        return "sk".into();
    }
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphabetic()).filter(|w| !w.is_empty()).collect();
    let count = |list: &[&str]| words.iter().filter(|w| list.contains(w)).count();
    let en = count(&["the", "a", "for", "with", "up", "to", "looking", "want", "used", "buy", "and", "in", "or", "of"]);
    let cs = count(&[
        "hledám",
        "koupím",
        "poptávám",
        "nebo",
        "jsem",
        "chci",
        "ojetý",
        "ojeté",
        "ojetou",
        "který",
        "kterou",
        "až",
        "nejlépe",
        "kč",
        "korun",
        "auto",
        "byt",
    ]);
    let sk =
        count(&["hľadám", "kúpim", "alebo", "som", "chcem", "ktorý", "ktorú", "najlepšie", "rokov", "eur", "izbový"]);
    if en > cs && en > sk {
        "en".into()
    } else if cs > sk {
        "cs".into()
    } else if sk > cs {
        "sk".into()
    } else {
        fallback.into()
    }
}

/// Parses `visibility`.
///
/// # Errors
/// When not `private` or `pseudonymous`.
pub fn parse_visibility(v: &Value) -> Result<Visibility, InputError> {
    match v.as_str() {
        Some("private") => Ok(Visibility::Private),
        Some("pseudonymous") => Ok(Visibility::Pseudonymous),
        _ => err("visibility must be \"private\" or \"pseudonymous\""),
    }
}

/// Checks an e-mail address's shape (one `@`, a dotted domain, no spaces, ≤ 254 chars)
/// and returns it trimmed with the domain lower-cased.
///
/// # Errors
/// [`InputError`] naming `email`.
pub fn validate_email(s: &str) -> Result<String, InputError> {
    let s = s.trim();
    let bad = || InputError("email must be an address such as name@example.com".into());
    if s.len() > 254
        || s.chars().any(|c| c.is_whitespace() || c.is_control() || matches!(c, '<' | '>' | ',' | ';' | '"'))
    {
        return Err(bad());
    }
    if !s.is_ascii() {
        return Err(InputError("email must be written in ASCII characters (name@example.com)".into()));
    }
    let (local, domain) = s.rsplit_once('@').ok_or_else(bad)?;
    if local.is_empty()
        || local.contains('@')
        || !domain.contains('.')
        || domain.starts_with('.')
        || domain.ends_with('.')
    {
        return Err(bad());
    }
    Ok(format!("{local}@{}", domain.to_ascii_lowercase()))
}

/// The arguments of `intent_list_matches` (PROTOCOL.md §3): on `/mcp` by `intentCode`
/// (with an optional `intent` id that must match), on `/mcp/buyer` by `intent` id;
/// `since` an RFC 3339 cursor (exclusive), `limit` 1..=100 (default 50).
#[derive(Debug, Clone, PartialEq)]
pub struct ListMatches {
    /// The caller's secret code (`/mcp`).
    pub intent_code: Option<String>,
    /// The intent id (`/mcp/buyer`; optional check on `/mcp`).
    pub intent: Option<String>,
    /// Deliveries strictly after this time.
    pub since: Option<time::OffsetDateTime>,
    /// At most this many deliveries.
    pub limit: usize,
}

impl ListMatches {
    /// Parses the `/mcp` form: `intentCode` required, `intent` optional.
    ///
    /// # Errors
    /// [`InputError`] naming the field and rule.
    pub fn by_code(args: &Value) -> Result<Self, InputError> {
        Self::parse(args, true)
    }

    /// Parses the `/mcp/buyer` form: `intent` required, no `intentCode`.
    ///
    /// # Errors
    /// [`InputError`] naming the field and rule.
    pub fn by_id(args: &Value) -> Result<Self, InputError> {
        Self::parse(args, false)
    }

    fn parse(args: &Value, by_code: bool) -> Result<Self, InputError> {
        let mut f = Fields::new(args, "")?;
        let (intent_code, intent) = if by_code {
            (Some(f.req_str("intentCode", 200)?), f.opt_str("intent", 64)?)
        } else {
            (None, Some(f.req_str("intent", 64)?))
        };
        let since = f
            .opt_str("since", 64)?
            .map(|s| crate::clock::parse_rfc3339(&s).map_err(|m| InputError(format!("since {m}"))))
            .transpose()?;
        let limit = f.opt_int("limit", 1, 100)?.unwrap_or(50) as usize;
        f.finish("")?;
        Ok(Self { intent_code, intent, since, limit })
    }
}

/// The fields `intent_update_intent` may change (PROTOCOL.md §3).
pub const UPDATABLE: [&str; 8] =
    ["statement", "criteria", "area", "budget", "hiddenLimit", "buyBy", "validUntil", "visibility"];

/// The fields an update may remove with `null`.
pub const REMOVABLE: [&str; 4] = ["criteria", "budget", "hiddenLimit", "buyBy"];

/// The arguments of `intent_update_intent` (PROTOCOL.md §3): the intent `id` and the
/// changed fields as sent (each one of [`UPDATABLE`]; `null` only for [`REMOVABLE`]).
/// The changes are validated as a publish when laid over the stored intent.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateArgs {
    /// The intent id.
    pub id: String,
    /// The changed fields, by name.
    pub changes: Map<String, Value>,
}

impl UpdateArgs {
    /// Parses and checks the shape (unknown fields, `null` where not removable).
    ///
    /// # Errors
    /// [`InputError`] naming the field and rule.
    pub fn parse(args: &Value) -> Result<Self, InputError> {
        let mut f = Fields::new(args, "")?;
        let id = f.req_str("id", 64)?;
        let raw = args.as_object().cloned().unwrap_or_default();
        let mut changes = Map::new();
        for key in UPDATABLE {
            let _ = f.get(key);
            if let Some(v) = raw.get(key) {
                if v.is_null() && !REMOVABLE.contains(&key) {
                    return Err(InputError(format!("{key} cannot be removed (null); give a new value")));
                }
                changes.insert(key.to_owned(), v.clone());
            }
        }
        f.finish(". Contact data is never accepted: the account's verified e-mail address is used.")?;
        Ok(Self { id, changes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_name_is_echoed_shortly() {
        let mut m = serde_json::Map::new();
        m.insert("x".repeat(200_000), Value::Bool(true));
        let v = Value::Object(m);
        let f = Fields::new(&v, "").unwrap();
        let e = f.finish("").unwrap_err().0;
        assert!(e.len() < 300 && e.contains(&format!("{}… is not a known property", "x".repeat(64))), "{e}");
        assert_eq!(echo("budget"), "budget");
        assert_eq!(echo(&"é".repeat(65)), format!("{}…", "é".repeat(64)));
    }
    use serde_json::json;

    /// A 250 KB area (string or region entry) is refused fast, naming the field and rule.
    #[test]
    fn huge_area_is_refused_fast_naming_the_field() {
        let huge = "okres ".repeat(42_000);
        let t = std::time::Instant::now();
        let e = parse_area(&json!(huge), "area").unwrap_err().0;
        assert!(t.elapsed() < std::time::Duration::from_secs(1), "took {:?}", t.elapsed());
        assert_eq!(e, "area must be at most 200 characters (a region code or place name)");
        let obj = json!({"country": "SK", "regions": ["SK-BL", huge]});
        let t = std::time::Instant::now();
        let e = parse_area(&obj, "area").unwrap_err().0;
        assert!(t.elapsed() < std::time::Duration::from_secs(1), "took {:?}", t.elapsed());
        assert_eq!(e, "area.regions[1] must be at most 200 characters (a region code or place name)");
        let e = parse_area(&json!({"country": "SK", "place": "a".repeat(201)}), "area").unwrap_err().0;
        assert!(e.starts_with("area.place must be at most 200 characters"), "{e}");
        assert!(parse_area(&json!(format!("  {}  ", "a".repeat(200))), "area")
            .unwrap_err()
            .0
            .contains("unknown place"));
        assert!(parse_area(&json!("Bratislavský kraj"), "area").is_ok());
    }

    /// Criteria values and keys, and attribute keys, have caps that name the field.
    #[test]
    fn criteria_caps_name_the_field() {
        let long_key = "k".repeat(65);
        let e = parse_criteria(&json!({ long_key: 1 })).unwrap_err().0;
        assert_eq!(e, "criteria keys must be at most 64 characters");
        let e = parse_criteria(&json!({"district": "x".repeat(250_000)})).unwrap_err().0;
        assert_eq!(e, "criteria.district must be a non-empty string of at most 200 characters");
        let e = parse_attributes(&json!({ "k".repeat(65): 1 }), "unknown").unwrap_err().0;
        assert_eq!(e, "attributes keys must be at most 64 characters");
    }

    fn cur() -> Vec<String> {
        vec!["EUR".into(), "CZK".into()]
    }

    #[test]
    fn budget_rules_name_fields() {
        assert_eq!(parse_budget(&json!(12000), "EUR", &cur()).unwrap().max, Some(12000.0));
        assert!(parse_budget(&json!({"max": "x"}), "EUR", &cur()).unwrap_err().0.contains("budget.max"));
        assert!(parse_budget(&json!({"max": -1}), "EUR", &cur()).unwrap_err().0.contains("budget.max"));
        assert!(parse_budget(&json!({"max": 5, "min": 9}), "EUR", &cur()).unwrap_err().0.contains("budget.min"));
        assert!(parse_budget(&json!({"max": 5, "currency": "USD"}), "EUR", &cur())
            .unwrap_err()
            .0
            .contains("budget.currency"));
        assert!(parse_budget(&json!({"max": 5, "foo": 1}), "EUR", &cur()).unwrap_err().0.contains("budget.foo"));
    }

    #[test]
    fn criteria_checks_keys_and_shapes() {
        let (c, m) = parse_criteria(
            &json!({"category": "vehicles", "make": "Škoda", "fuel": ["diesel"], "year": {"min": 2016}}),
        )
        .unwrap();
        assert_eq!(c.as_deref(), Some("vehicles"));
        assert_eq!(m.len(), 3);
        assert!(parse_criteria(&json!({"category": "boats"})).unwrap_err().0.contains("criteria.category"));
        assert!(parse_criteria(&json!({"category": "vehicles", "wings": 2})).unwrap_err().0.contains("criteria.wings"));
        assert!(parse_criteria(&json!({"year": {"min": 2020, "max": 2010}}))
            .unwrap_err()
            .0
            .contains("criteria.year.min"));
        assert!(parse_criteria(&json!({"make": []})).unwrap_err().0.contains("criteria.make"));
        assert!(parse_criteria(&json!({"category": "vehicles", "make": 5})).unwrap_err().0.contains("criteria.make"));
        let e = check_criteria_keys("property", &json!({"make": "x"}).as_object().cloned().unwrap()).unwrap_err();
        assert!(e.0.starts_with("criteria.make is not an attribute of property (known: "), "{}", e.0);
        assert!(check_criteria_keys("vehicles", &json!({"year": {"min": 2010}}).as_object().cloned().unwrap()).is_ok());
    }

    #[test]
    fn unknown_property_is_named() {
        let v = json!({"statement": "x", "email": "a@b.c"});
        let mut f = Fields::new(&v, "").unwrap();
        f.req_str("statement", 10).unwrap();
        let e = f.finish("").unwrap_err();
        assert!(e.0.starts_with("email is not a known property"), "{e}");
    }

    #[test]
    fn classifies_and_detects() {
        assert_eq!(classify("Hledám Škoda Octavia combi"), Some("vehicles"));
        assert_eq!(classify("Kúpim 3-izbový byt v Bratislave"), Some("property"));
        assert_eq!(classify("something"), None);
        assert_eq!(detect_language("Hľadám auto", "en"), "sk");
        assert_eq!(detect_language("Hledám ojetý vůz", "en"), "cs");
        assert_eq!(detect_language("Looking for a used Octavia", "sk"), "en");
    }
}
