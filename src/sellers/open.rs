//! `intent_list_open_intents` (PROTOCOL.md §3, isto extension) and the seller page
//! `/seller/intents`: the active pseudonymous intents in a seller's categories and
//! regions, each under the seller's pseudonym for its buyer — never contact data, the
//! hidden limit or whether one is set.

use super::{open_to, pseudonym, Result, SellerProfile};
use crate::base::Base;
use crate::clock;
use crate::gazetteer::AreaObject;
use crate::protocol::input::{self, Fields, InputError};
use crate::protocol::Budget;
use crate::records::ts;
use crate::records::IntentRecord;
use crate::store::Reads;
use serde::Serialize;
use serde_json::{Map, Value};
use time::OffsetDateTime;

/// Default and largest page of the tool.
pub const DEFAULT_LIMIT: usize = 50;
/// Largest `limit` the tool accepts.
pub const MAX_LIMIT: usize = 100;

/// An open intent as a seller sees it (PROTOCOL.md §3 intent_list_open_intents).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenIntent {
    /// `int_…` (the id `intent_submit_offer` takes as `inReplyTo`).
    pub id: String,
    /// The seller's pseudonym for the buyer.
    pub pseudonym: String,
    /// The buyer's words.
    pub statement: String,
    /// Category key.
    pub category: String,
    /// Criteria, with `category` (as in Intent).
    pub criteria: Map<String, Value>,
    /// Normalised area.
    pub area: AreaObject,
    /// Visible budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
    /// `YYYY-MM-DD`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buy_by: Option<String>,
    /// RFC 3339.
    pub valid_until: String,
    /// The statement's language (pages mark it up; not in tool results).
    #[serde(skip)]
    pub language: String,
    /// Last change (the `since` cursor; not in tool results).
    #[serde(skip)]
    pub updated_at: String,
}

/// The filters of `intent_list_open_intents`.
#[derive(Debug, Clone, Default)]
pub struct OpenQuery {
    /// Only this category.
    pub category: Option<String>,
    /// Only intents whose area overlaps this one.
    pub area: Option<AreaObject>,
    /// Only intents that became active or changed after this time.
    pub since: Option<OffsetDateTime>,
    /// At most this many (a page ends between two change times, so a cursor never
    /// skips an intent; a page can exceed it only when more intents than `limit`
    /// changed in the same second).
    pub limit: usize,
}

/// A page of open intents, oldest change first, with the cursor for the next call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenPage {
    /// The intents.
    pub intents: Vec<OpenIntent>,
    /// Pass as `since` to get only intents that became open or changed later; `null`
    /// when nothing was listed and no `since` was given.
    pub next_since: Option<String>,
}

/// Validates `{category?, area?, since?, limit?}`.
///
/// # Errors
/// [`InputError`] naming the field and rule (unknown properties refused).
pub fn parse_open_query(args: &Value) -> Result<OpenQuery, InputError> {
    let mut f = Fields::new(args, "")?;
    let category = match f.opt_str("category", 40)? {
        Some(c) => Some(
            crate::protocol::category(&c)
                .map(|c| c.key.to_owned())
                .ok_or_else(|| InputError("category must be one of vehicles, property".into()))?,
        ),
        None => None,
    };
    let area = f.get("area").map(|a| input::parse_area(a, "area")).transpose()?;
    let since = f
        .opt_str("since", 64)?
        .map(|s| clock::parse_rfc3339(&s).map_err(|m| InputError(format!("since {m}"))))
        .transpose()?;
    let limit = f.opt_int("limit", 1, MAX_LIMIT as i64)?.map_or(DEFAULT_LIMIT, |n| n as usize);
    f.finish("")?;
    Ok(OpenQuery { category, area, since, limit })
}

/// Whether two areas share ground: same country, and one covers the whole country or
/// their regions meet.
fn overlaps(a: &AreaObject, b: &AreaObject) -> bool {
    a.country.eq_ignore_ascii_case(&b.country)
        && (a.regions.is_empty()
            || b.regions.is_empty()
            || a.regions.iter().any(|r| b.regions.iter().any(|s| s.eq_ignore_ascii_case(r))))
}

/// The open intents for `profile`'s seller (see the module docs), oldest change first.
///
/// # Errors
/// Storage and key errors.
pub fn open_intents(base: &Base, profile: &SellerProfile, q: &OpenQuery) -> Result<OpenPage> {
    let now = base.clock.now();
    let mut recs: Vec<IntentRecord> = base.store.read(|rx| -> Result<Vec<IntentRecord>> {
        let mut out = Vec::new();
        for id in rx.active_ids()? {
            let Some(rec) = rx.intent::<IntentRecord>(&id)? else { continue };
            let wanted = open_to(&rec, profile, now)
                && q.category.as_deref().is_none_or(|c| c == rec.category)
                && q.area.as_ref().is_none_or(|a| overlaps(a, &rec.area))
                && q.since.is_none_or(|s| ts(&rec.updated_at) > s);
            if wanted {
                out.push(rec);
            }
        }
        Ok(out)
    })?;
    recs.sort_by(|a, b| ts(&a.updated_at).cmp(&ts(&b.updated_at)).then_with(|| a.id.cmp(&b.id)));
    let limit = q.limit.max(1);
    if recs.len() > limit {
        // End the page between two change times, so that `since` skips nothing.
        let edge = ts(&recs[limit - 1].updated_at);
        let mut cut = limit;
        if ts(&recs[limit].updated_at) == edge {
            cut = recs[..limit].iter().position(|r| ts(&r.updated_at) == edge).unwrap_or(limit);
            if cut == 0 {
                cut = recs.iter().position(|r| ts(&r.updated_at) != edge).unwrap_or(recs.len());
            }
        }
        recs.truncate(cut);
    }
    let mut intents = Vec::with_capacity(recs.len());
    for rec in recs {
        let mut criteria = rec.criteria.clone();
        criteria.insert("category".into(), Value::String(rec.category.clone()));
        intents.push(OpenIntent {
            pseudonym: pseudonym(base, &rec, &profile.seller_id)?,
            id: rec.id,
            statement: rec.statement,
            category: rec.category,
            criteria,
            area: rec.area,
            budget: rec.budget,
            buy_by: rec.buy_by,
            valid_until: rec.valid_until,
            language: rec.language,
            updated_at: rec.updated_at,
        });
    }
    let next_since = intents.last().map(|i| i.updated_at.clone()).or_else(|| q.since.map(clock::rfc3339_micros));
    Ok(OpenPage { intents, next_since })
}
