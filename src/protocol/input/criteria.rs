//! Criteria of an intent and attributes of an offer, checked against the category's
//! attributes (PROTOCOL.md §2).

use super::{err, type_name, Fields, InputError};
use crate::protocol::{category, Category, CATEGORIES};
use serde_json::{Map, Value};

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
        let kind = attribute_kind(c, "criteria", k)?;
        let ok = |x: &Value| match kind {
            "number" => x.is_number(),
            _ => x.is_string(),
        };
        let fits = match v {
            Value::Array(a) => a.iter().all(ok),
            Value::Object(_) => kind == "number",
            x => ok(x),
        };
        if !fits {
            let want = if kind == "number" { "a number or {min, max}" } else { "a string or an array of strings" };
            return err(format!("criteria.{k} must be {want}"));
        }
    }
    Ok(())
}

/// The kind (`string` or `number`) of category `c`'s attribute `k`; an error naming
/// `<field>.<k>` and the known keys when `c` has no such attribute.
fn attribute_kind(c: &Category, field: &str, k: &str) -> Result<&'static str, InputError> {
    if let Some((_, kind, _)) = c.attributes.iter().find(|(a, _, _)| *a == k) {
        return Ok(kind);
    }
    let keys: Vec<_> = c.attributes.iter().map(|(a, _, _)| *a).collect();
    err(format!("{field}.{k} is not an attribute of {} (known: {})", c.key, keys.join(", ")))
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
            let bounds = [("min", min), ("max", max)].into_iter();
            Ok(Value::Object(bounds.filter_map(|(k, x)| Some((k.to_owned(), Value::from(x?)))).collect()))
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
            attribute_kind(c, "attributes", k)?;
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
