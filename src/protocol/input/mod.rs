//! Parsing and validation of tool inputs and catalogue rows (PROTOCOL.md §2, §3).
//!
//! Every error names the field by its JSON path and the rule it breaks
//! (`"budget.max must be a positive number"`), as PROTOCOL.md §3 "Errors" asks. Nothing
//! is stored before the whole input has passed.
//!
//! Here: the field reader ([`Fields`]) and the plain fields (visibility, e-mail); in
//! submodules the values with units and places (budget, money, area), the criteria and
//! attributes of a category, what a statement's words tell (category, language), and the
//! arguments of the tools that are not a publish.

use super::Visibility;
use serde_json::{Map, Value};

mod args;
mod criteria;
mod statement;
mod values;

pub use args::{ListMatches, UpdateArgs, REMOVABLE, UPDATABLE};
pub use criteria::{check_criteria_keys, parse_attributes, parse_criteria, CRITERIA_KEY_MAX};
pub use statement::{classify, detect_language};
pub use values::{parse_area, parse_budget, parse_currency, parse_money};

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

    /// A required text of 1..=max characters as [`Fields::req_str`], without the
    /// characters that can make it show other than it reads or look empty
    /// ([`crate::text::without_hidden`]: [`crate::text::hidden`] but tabs and line breaks,
    /// every line break as `\n`). For the statement, which sellers read in pseudonymous
    /// intents and the person on the consent page.
    ///
    /// # Errors
    /// As [`Fields::req_str`]; and nothing else left: "`key` must contain visible text".
    pub fn req_text(&mut self, key: &'static str, max: usize) -> Result<String, InputError> {
        let text = crate::text::without_hidden(&self.req_str(key, max)?);
        if text.is_empty() {
            return err(format!(
                "{} must contain visible text, not only control or bidirectional characters",
                self.path(key)
            ));
        }
        Ok(text)
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

/// Parses `visibility`.
///
/// # Errors
/// When not `private` or `pseudonymous`.
pub fn parse_visibility(v: &Value) -> Result<Visibility, InputError> {
    serde::Deserialize::deserialize(v).or_else(|_| err("visibility must be \"private\" or \"pseudonymous\""))
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

#[cfg(test)]
mod tests;
