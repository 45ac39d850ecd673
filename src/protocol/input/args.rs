//! The arguments of the buyer's tools other than a publish: `intent_list_matches` and
//! `intent_update_intent` (PROTOCOL.md §3).

use super::{Fields, InputError};
use serde_json::{Map, Value};

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
    /// Parses the `/mcp` form (`by_code`: `intentCode` required, `intent` optional) or the
    /// `/mcp/buyer` form (`intent` required, no `intentCode`).
    ///
    /// # Errors
    /// [`InputError`] naming the field and rule.
    pub fn parse(args: &Value, by_code: bool) -> Result<Self, InputError> {
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
