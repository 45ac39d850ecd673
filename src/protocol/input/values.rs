//! Values with units and places: currency codes, budgets, money and areas
//! (PROTOCOL.md §2).

use super::{err, type_name, Fields, InputError};
use crate::gazetteer::{self, AreaObject};
use crate::protocol::{Budget, Money};
use serde_json::Value;

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
    let bad_min = || InputError("budget.min must be a number ≥ 0".into());
    let min = f.get("min").map(|m| m.as_f64().filter(|n| (0.0..=1e12).contains(n)).ok_or_else(bad_min)).transpose()?;
    let currency = f.get("currency").map(|c| parse_currency(c, "budget.currency", accepted)).transpose()?;
    let currency = currency.unwrap_or_else(|| default_currency.to_owned());
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
    let currency = f.get("currency").ok_or_else(|| InputError(format!("{path}.currency is required")))?;
    let currency = parse_currency(currency, &format!("{path}.currency"), accepted)?;
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
