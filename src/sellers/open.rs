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

/// The last minute of the first page of `minutes` (the open intents' minute numbers,
/// reordered here) at `limit`, and whether open intents are left after it; `None` when
/// there are none. A page ends between two minutes, so that `since` skips nothing: it
/// holds whole minutes of at most `limit` intents, or the whole first minute when that
/// one alone holds more. Which intents a page holds depends on their minutes alone.
fn page_end(minutes: &mut [i64], limit: usize) -> (Option<i64>, bool) {
    if minutes.len() <= limit {
        return (minutes.iter().max().copied(), false);
    }
    // The limit + 1 earliest first, the first limit of them in order.
    minutes.select_nth_unstable(limit);
    minutes[..limit].sort_unstable();
    let edge = minutes[limit - 1];
    let last = if minutes[limit] != edge {
        edge
    } else if minutes[0] == edge {
        // The first minute alone is more than a page: the page is all of it.
        edge
    } else {
        // The page ends before the minute that does not fit.
        minutes[..limit].iter().rev().find(|m| **m != edge).copied().unwrap_or(edge)
    };
    let left = minutes.iter().any(|m| *m > last);
    (Some(last), left)
}

/// The open intents for `profile`'s seller (see the module docs), oldest minute of
/// change first, then by handle.
pub fn open_intents(base: &Base, profile: &SellerProfile, q: &OpenQuery) -> Result<OpenPage> {
    let now = base.clock().now();
    let since = q.since.map(seller_minute);
    let since_number = since.map(|s| s.unix_timestamp().div_euclid(60));
    let now_ns = crate::base::active::nanos(now);
    // `open_to` on the active set in memory, from the facets kept beside each record
    // first: the number of its minute (the page's order) when it is open to the seller.
    let open = |rec: &IntentRecord, t: &crate::base::active::Times| -> Option<i64> {
        let minute = t.updated_at.unix_timestamp().div_euclid(60);
        let category = t.category_of(rec);
        (t.active_at(now_ns)
            && t.pseudonymous
            && since_number.is_none_or(|s| minute >= s)
            && profile.serves(category, &rec.area)
            && q.category.as_deref().is_none_or(|c| c == category)
            && q.area.as_ref().is_none_or(|a| overlaps(a, &rec.area)))
        .then_some(minute)
    };
    let limit = q.limit.max(1);
    // Where the page ends is found from the minutes alone; only the page's records are
    // kept (a walk that kept every open record cost a cache miss for each).
    let (page, cut_short) = base.active().read(|set| {
        let open: Vec<(i64, &Arc<IntentRecord>, &OffsetDateTime)> =
            set.iter().filter_map(|(r, t)| Some((open(r, t)?, r, &t.updated_at))).collect();
        let mut minutes: Vec<i64> = open.iter().map(|o| o.0).collect();
        let (last, cut_short) = page_end(&mut minutes, limit);
        let page: Vec<(OffsetDateTime, Arc<IntentRecord>)> = open
            .into_iter()
            .filter(|(m, _, _)| last.is_some_and(|last| *m <= last))
            .map(|(_, r, t)| (*t, Arc::clone(r)))
            .collect();
        (page, cut_short)
    });
    // The handles (the order within a minute) are made for the page's intents only.
    let seller = &profile.seller_id;
    let mut keyed: Vec<(OffsetDateTime, String, Arc<IntentRecord>)> =
        page.into_iter().map(|(t, r)| (seller_minute(t), handle(base, seller, &r.id), r)).collect();
    keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
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

#[cfg(test)]
mod tests {
    use super::page_end;

    #[test]
    fn a_page_ends_between_two_minutes() {
        let end = |m: &[i64], limit: usize| page_end(&mut m.to_vec(), limit);
        assert_eq!(end(&[], 3), (None, false));
        assert_eq!(end(&[5, 1, 3], 3), (Some(5), false), "everything fits");
        assert_eq!(end(&[4, 1, 2, 3], 3), (Some(3), true), "the first three minutes");
        // Minute 2 does not fit whole: the page ends before it.
        assert_eq!(end(&[2, 1, 2, 2, 3], 3), (Some(1), true));
        // The first minute alone is more than a page: all of it.
        assert_eq!(end(&[1, 1, 2, 1, 1], 3), (Some(1), true));
        assert_eq!(end(&[1, 1, 1, 1], 3), (Some(1), false));
    }
}
