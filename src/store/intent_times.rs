//! Migration 5 (`intent_times`, see [`v5_intent_times`]): the times of intent records
//! and pending renewals become unix microseconds (`records::Stamp`).

use super::schema::{INTENTS, RECORDS};
use super::table::Table;
use super::{encode, Result, Tx};
use std::ops::Bound;

/// The RFC 3339 times of an intent record (schema ≤ 4), by field.
const INTENT_RFC3339: [&str; 7] =
    ["valid_until", "created_at", "updated_at", "draft_expires_at", "confirm_expires_at", "confirmed_at", "ended_at"];

/// At or above this, a stored integer is not unix seconds (10^11 s is the year 5138;
/// microseconds are far larger, so a value converted already is left).
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
    // Intent ids are ASCII (`int_…`): the prefix "" takes every record.
    rewrite_records(&mut tx.open(INTENTS)?, "intents", "", |v| {
        let Some(rec) = v.as_object_mut() else { return false };
        let mut changed = convert_times(rec, Old::Rfc3339, &INTENT_RFC3339);
        if let Some(serde_json::Value::Object(consent)) = rec.get_mut("consent") {
            changed |= convert_times(consent, Old::Rfc3339, &["at"]);
        }
        changed | convert_times(rec, Old::Secs, &["last_digest_at"])
    })?;
    convert_records(&mut tx.open(RECORDS)?, &[("renewal:", Old::Rfc3339, &RENEWAL_RFC3339)])
}

/// How an older isto wrote a time (what a migration converts from).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Old {
    /// An RFC 3339 string (any offset).
    Rfc3339,
    /// An integer of unix seconds (below [`SECS_BOUND`]).
    Secs,
}

/// The times of one record namespace that a migration converts: the key prefix of the
/// `records` table, how the older isto wrote them, and the fields (of a JSON object).
pub(super) type NsTimes = (&'static str, Old, &'static [&'static str]);

/// Converts the times of every record of each namespace of `times` ([`convert_times`]).
pub(super) fn convert_records(records: &mut Table<'_, &'static str, &'static [u8]>, times: &[NsTimes]) -> Result<()> {
    for (prefix, old, fields) in times {
        rewrite_records(records, "records", prefix, |v| {
            v.as_object_mut().is_some_and(|rec| convert_times(rec, *old, fields))
        })?;
    }
    Ok(())
}

/// Rewrites every record of `records` (the table named `table`: `records`, `intents`)
/// whose key starts with `prefix` and which `convert` changes (any JSON value; a record
/// that is not JSON is left as it is, for its reader to name).
pub(super) fn rewrite_records(
    records: &mut Table<'_, &'static str, &'static [u8]>,
    table: &str,
    prefix: &str,
    mut convert: impl FnMut(&mut serde_json::Value) -> bool,
) -> Result<()> {
    let to = format!("{prefix}\u{10ffff}");
    let mut rewritten = Vec::new();
    records.scan((Bound::Included(prefix), Bound::Excluded(to.as_str())), false, |key, bytes| {
        let Ok(mut rec) = serde_json::from_slice::<serde_json::Value>(&bytes) else { return Ok(true) };
        if convert(&mut rec) {
            rewritten.push((key, encode(table, &rec)?));
        }
        Ok(true)
    })?;
    for (key, bytes) in rewritten {
        records.insert(key.as_str(), bytes.as_slice())?;
    }
    Ok(())
}

/// Converts one stored time `v`, written as `old`, to unix microseconds; leaves any
/// other value (one the older isto never wrote, or one converted already). Whether it
/// changed.
pub(super) fn convert_time(v: &mut serde_json::Value, old: Old) -> bool {
    let micros = match old {
        Old::Rfc3339 => v
            .as_str()
            .and_then(|s| time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok())
            .and_then(|t| i64::try_from(t.unix_timestamp_nanos().div_euclid(1000)).ok()),
        Old::Secs => v.as_i64().filter(|s| s.abs() < SECS_BOUND).and_then(|s| s.checked_mul(1_000_000)),
    };
    micros.inspect(|m| *v = (*m).into()).is_some()
}

/// Converts the times under `fields` of `rec`, written as `old` ([`convert_time`]).
/// Whether anything changed.
pub(super) fn convert_times(rec: &mut serde_json::Map<String, serde_json::Value>, old: Old, fields: &[&str]) -> bool {
    let mut changed = false;
    for f in fields {
        if let Some(v) = rec.get_mut(*f) {
            changed |= convert_time(v, old);
        }
    }
    changed
}
