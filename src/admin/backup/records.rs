//! A restored intent meets the rules its input met (PROTOCOL.md §2–§3): a backup is
//! input too, so an intent whose statement, criteria or area break the publish rules
//! is refused by record and field before anything replaces the store.

use crate::protocol::input::{self, InputError};
use crate::records::IntentRecord;
use serde_json::{Map, Value};

/// Checks the time-independent input rules of `rec`: the statement (1 to
/// [`input::STATEMENT_MAX`] characters), the category and criteria
/// ([`input::parse_criteria`]) and the area ([`input::parse_area`]).
///
/// # Errors
/// The input rule's message, naming the field.
pub(super) fn check_intent(rec: &IntentRecord) -> Result<(), InputError> {
    let statement = rec.statement.trim();
    if statement.is_empty() {
        return Err(InputError("statement must not be empty".into()));
    }
    let n = statement.chars().count();
    if n > input::STATEMENT_MAX {
        return Err(InputError(format!("statement must be at most {} characters (got {n})", input::STATEMENT_MAX)));
    }
    let mut criteria = Map::new();
    criteria.insert("category".into(), Value::String(rec.category.clone()));
    criteria.extend(rec.criteria.iter().map(|(k, v)| (k.clone(), v.clone())));
    match input::parse_criteria(&Value::Object(criteria))? {
        (Some(c), _) if c == rec.category => {}
        _ => return Err(InputError(format!("criteria.category {:?} is not a category key", rec.category))),
    }
    let area = serde_json::to_value(&rec.area).map_err(|e| InputError(format!("area does not encode: {e}")))?;
    input::parse_area(&area, "area")?;
    Ok(())
}
