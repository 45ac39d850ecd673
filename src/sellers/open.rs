//! `intent_list_open_intents` (PROTOCOL.md §3, isto extension) and the seller page
//! `/seller/intents`: the active pseudonymous intents in a seller's categories and
//! regions, each under the seller's pseudonym for its buyer — never contact data, the
//! hidden limit or whether one is set.
//!
//! Nothing a seller sees of an intent is shared with another seller beyond the buyer's
//! own content (statement, criteria, area, budget, buy-by date: PROTOCOL.md §2 "Seller
//! pseudonyms and handles"):
//! * `id` is the seller's handle ([`super::handle`]), never the intent id;
//! * `validUntil` is only its day ([`seller_day`]: 00:00 UTC of the day it lapses), not
//!   the publish minute + 90 days, which two sellers could compare to tell that their
//!   intents are one (the content alone may link them: PROTOCOL.md §2); the `since`
//!   cursor counts in whole minutes of the last change ([`seller_minute`]; `updatedAt`
//!   itself is not shown);
//! * the order is by minute of the last change, then by the handle — so within one
//!   minute each seller has its own order, and no order is shared between sellers.
//!
//! The cursor: `since` keeps the intents whose last change falls in its minute or later.
//! `nextSince` is the minute after the page's last listed minute when that minute is
//! over (or the page was cut: a page ends between two minutes), else that minute
//! itself — the current minute is listed again on the next call, since more intents may
//! still change in it. A seller skips what it has seen by the handle, which is stable.

use super::{handle, pseudonym, Result, SellerProfile};
use crate::base::Base;
use crate::clock;
use crate::gazetteer::AreaObject;
use crate::protocol::input::{self, Fields, InputError};
use crate::protocol::Budget;
use crate::records::{IntentContent, IntentRecord};
use serde::Serialize;
use serde_json::{Map, Value};
use std::sync::Arc;
use time::OffsetDateTime;

/// Default and largest page of the tool.
pub const DEFAULT_LIMIT: usize = 50;
/// Largest `limit` the tool accepts.
pub const MAX_LIMIT: usize = 100;

impl OpenIntent {
    /// The seller's view of `content` (what the person asked for, nothing else of the
    /// record), under the seller's handle `id` and `pseudonym`.
    fn of(content: &IntentContent, id: String, pseudonym: String, changed_minute: OffsetDateTime) -> Self {
        Self {
            id,
            pseudonym,
            statement: content.statement.clone(),
            category: content.category.clone(),
            criteria: content.criteria_with_category(),
            area: content.area.clone(),
            budget: content.budget.clone(),
            buy_by: content.buy_by.clone(),
            valid_until: clock::rfc3339(seller_day(content.valid_until.at())),
            language: content.language.clone(),
            changed_minute,
        }
    }
}

/// An open intent as a seller sees it (PROTOCOL.md §3 intent_list_open_intents).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenIntent {
    /// The seller's handle for the intent, `hdl_…` (what `intent_submit_offer` takes as
    /// `inReplyTo`); never the intent id.
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
    /// RFC 3339, rounded down to the day: 00:00 UTC of the day the intent lapses
    /// ([`seller_day`]).
    pub valid_until: String,
    /// The statement's language (pages mark it up; not in tool results).
    #[serde(skip)]
    pub language: String,
    /// The minute of the last change (the `since` cursor; not in tool results).
    #[serde(skip)]
    pub changed_minute: OffsetDateTime,
}

/// The filters of `intent_list_open_intents`.
#[derive(Debug, Clone, Default)]
pub struct OpenQuery {
    /// Only this category.
    pub category: Option<String>,
    /// Only intents whose area overlaps this one.
    pub area: Option<AreaObject>,
    /// Only intents that became active or changed in this minute or later.
    pub since: Option<OffsetDateTime>,
    /// At most this many (a page ends between two minutes of change, so a cursor never
    /// skips an intent; a page can exceed it only when more intents than `limit`
    /// changed in the same minute).
    pub limit: usize,
}

/// A page of open intents, oldest change first, with the cursor for the next call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenPage {
    /// The intents.
    pub intents: Vec<OpenIntent>,
    /// Pass as `since` to get the intents that became open or changed since (a whole
    /// minute, see the module docs); `null` when nothing was listed and no `since` was
    /// given.
    pub next_since: Option<String>,
}

/// Validates `{category?, area?, since?, limit?}`.
///
/// # Errors
/// [`InputError`] naming the field and rule (unknown properties refused).
pub fn parse_open_query(args: &Value) -> Result<OpenQuery, InputError> {
    let mut f = Fields::new(args, "")?;
    let category = f
        .opt_str("category", 40)?
        .map(|c| crate::protocol::category(&c).map(|c| c.key.to_owned()))
        .map(|c| c.ok_or_else(|| InputError("category must be one of vehicles, property".into())))
        .transpose()?;
    let area = f.get("area").map(|a| input::parse_area(a, "area")).transpose()?;
    let since = f
        .opt_str("since", 64)?
        .map(|s| clock::parse_rfc3339(&s).map_err(|m| InputError(format!("since {m}"))))
        .transpose()?;
    let limit = f.opt_int("limit", 1, MAX_LIMIT as i64)?.map_or(DEFAULT_LIMIT, |n| n as usize);
    f.finish("")?;
    Ok(OpenQuery { category, area, since, limit })
}

/// `t` rounded down to the whole minute: the precision of every time a seller sees.
pub fn seller_minute(t: OffsetDateTime) -> OffsetDateTime {
    t.to_offset(time::UtcOffset::UTC).truncate_to_minute()
}

/// `t` rounded down to 00:00 UTC of its day: the precision of `validUntil` for sellers.
pub fn seller_day(t: OffsetDateTime) -> OffsetDateTime {
    t.to_offset(time::UtcOffset::UTC).truncate_to_day()
}

/// Whether two areas share ground: same country, and one covers the whole country or
/// their regions meet.
fn overlaps(a: &AreaObject, b: &AreaObject) -> bool {
    a.country.eq_ignore_ascii_case(&b.country)
        && (a.regions.is_empty()
            || b.regions.is_empty()
            || a.regions.iter().any(|r| b.regions.iter().any(|s| s.eq_ignore_ascii_case(r))))
}

/// The open intents for `profile`'s seller (see the module docs), oldest minute of
/// change first, then by handle.
pub fn open_intents(base: &Base, profile: &SellerProfile, q: &OpenQuery) -> Result<OpenPage> {
    let now = base.clock().now();
    let since = q.since.map(seller_minute);
    let since_number = since.map(|s| s.unix_timestamp().div_euclid(60));
    // `open_to` on the active set in memory, its times parsed once.
    let recs = base.active().filter(|rec, t| {
        t.active_at(now)
            && rec.visibility == crate::protocol::Visibility::Pseudonymous
            && profile.serves(&rec.category, &rec.area)
            && q.category.as_deref().is_none_or(|c| c == rec.category)
            && q.area.as_ref().is_none_or(|a| overlaps(a, &rec.area))
            && since_number.is_none_or(|s| t.updated_at.unix_timestamp().div_euclid(60) >= s)
    });
    // Sorted by the minute's number, the time itself kept for the page.
    let mut by_minute: Vec<(i64, OffsetDateTime, Arc<IntentRecord>)> =
        recs.into_iter().map(|(r, t)| (t.updated_at.unix_timestamp().div_euclid(60), t.updated_at, r)).collect();
    by_minute.sort_by_key(|r| r.0);
    let limit = q.limit.max(1);
    let mut cut_short = false;
    if by_minute.len() > limit {
        // End the page between two minutes, so that `since` skips nothing. Which
        // intents a page holds depends on their minutes alone, so the handles (the
        // order within a minute) are made for the page's intents only.
        let edge = by_minute[limit - 1].0;
        let mut cut = limit;
        if by_minute[limit].0 == edge {
            cut = by_minute[..limit].iter().position(|r| r.0 == edge).unwrap_or(limit);
            if cut == 0 {
                cut = by_minute.iter().position(|r| r.0 != edge).unwrap_or(by_minute.len());
            }
        }
        cut_short = cut < by_minute.len();
        by_minute.truncate(cut);
    }
    let seller = &profile.seller_id;
    let mut keyed: Vec<(OffsetDateTime, String, Arc<IntentRecord>)> =
        by_minute.into_iter().map(|(_, t, r)| (seller_minute(t), handle(base, seller, &r.id), r)).collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    let mut intents = Vec::with_capacity(keyed.len());
    for (changed_minute, id, rec) in keyed {
        let pseudonym = pseudonym(base, &rec, seller)?;
        intents.push(OpenIntent::of(&rec.content, id, pseudonym, changed_minute));
    }
    let minute = time::Duration::minutes(1);
    let next_since = match intents.last() {
        Some(last) if cut_short || last.changed_minute + minute <= now => Some(last.changed_minute + minute),
        Some(last) => Some(last.changed_minute),
        None => since,
    }
    .map(clock::rfc3339);
    Ok(OpenPage { intents, next_since })
}
