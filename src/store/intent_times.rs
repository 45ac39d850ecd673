//! Migration 5 (`intent_times`, see [`v5_intent_times`]): the times of intent records
//! and pending renewals become unix microseconds (`records::Stamp`).

use super::schema::{INTENTS, RECORDS};
use super::{Result, StoreError, Tx};
use std::ops::Bound;

/// The RFC 3339 times of an intent record (schema ≤ 4), by field.
const INTENT_RFC3339: [&str; 7] =
    ["valid_until", "created_at", "updated_at", "draft_expires_at", "confirm_expires_at", "confirmed_at", "ended_at"];

/// Above this, a stored `last_digest_at` is not unix seconds (see [`v5_intent_times`]).
const SECS_BOUND: i64 = 100_000_000_000;

/// The RFC 3339 times of a pending renewal (`records`, `renewal:…`; schema ≤ 4).
const RENEWAL_RFC3339: [&str; 3] = ["valid_until", "created_at", "expires_at"];

/// 5: every time of an intent record becomes unix microseconds (`records::Stamp`): the
/// RFC 3339 strings of [`INTENT_RFC3339`] and `consent.at`, and `last_digest_at` (unix
/// seconds); likewise the times of pending renewals. A field is converted only when it
/// holds what the older isto wrote (a string that parses, an integer of seconds); any
/// other value is left as it was, so that reading the record fails naming it instead
/// of the migration inventing a time or refusing the whole store. The store reads the
/// records as JSON objects only: it knows their field names, not their types.
pub(super) fn v5_intent_times(tx: &mut Tx<'_>) -> Result<()> {
    let mut intents = tx.open(INTENTS)?;
    let mut rewritten = Vec::new();
    intents.each(|id, bytes| {
        let Ok(serde_json::Value::Object(mut rec)) = serde_json::from_slice(&bytes) else { return Ok(true) };
        let mut changed = convert_times(&mut rec, &INTENT_RFC3339);
        if let Some(serde_json::Value::Object(consent)) = rec.get_mut("consent") {
            changed |= convert_times(consent, &["at"]);
        }
        // Seconds (below 10^11: before the year 5138); microseconds are far larger.
        if let Some(secs) =
            rec.get("last_digest_at").and_then(serde_json::Value::as_i64).filter(|s| s.abs() < SECS_BOUND)
        {
            if let Some(m) = secs.checked_mul(1_000_000) {
                rec.insert("last_digest_at".into(), m.into());
                changed = true;
            }
        }
        if changed {
            rewritten.push((id, serde_json::to_vec(&rec).map_err(encode_error)?));
        }
        Ok(true)
    })?;
    for (id, bytes) in rewritten {
        intents.insert(id.as_str(), bytes.as_slice())?;
    }
    let mut records = tx.open(RECORDS)?;
    let mut rewritten = Vec::new();
    records.scan((Bound::Included("renewal:"), Bound::Excluded("renewal;")), false, |key, bytes| {
        let Ok(serde_json::Value::Object(mut rec)) = serde_json::from_slice(&bytes) else { return Ok(true) };
        if convert_times(&mut rec, &RENEWAL_RFC3339) {
            rewritten.push((key, serde_json::to_vec(&rec).map_err(encode_error)?));
        }
        Ok(true)
    })?;
    for (key, bytes) in rewritten {
        records.insert(key.as_str(), bytes.as_slice())?;
    }
    Ok(())
}

/// Converts the RFC 3339 strings under `fields` of `rec` to unix microseconds; leaves
/// any other value. Whether anything changed.
fn convert_times(rec: &mut serde_json::Map<String, serde_json::Value>, fields: &[&str]) -> bool {
    let mut changed = false;
    for f in fields {
        let Some(serde_json::Value::String(s)) = rec.get(*f) else { continue };
        let Ok(t) = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339) else { continue };
        let micros = t.unix_timestamp_nanos().div_euclid(1000);
        let Ok(micros) = i64::try_from(micros) else { continue };
        rec.insert((*f).to_owned(), micros.into());
        changed = true;
    }
    changed
}

fn encode_error(e: serde_json::Error) -> StoreError {
    StoreError::Encode("intents".into(), e.to_string())
}
