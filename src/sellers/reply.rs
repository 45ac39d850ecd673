//! `intent_submit_offer` (PROTOCOL.md §3): a seller's reply to one open pseudonymous
//! intent.
//!
//! The answer depends only on the input's validity, on whether the intent is open to
//! this seller (active, pseudonymous, in the seller's categories and regions — one
//! reason text either way, so it does not tell whether the intent exists), and on the
//! seller's reply count for the intent. `accepted: true` means stored and valid; the
//! PROTOCOL.md §6 check (hidden limit included) runs afterwards in the same transaction
//! and only decides whether the reply is delivered, which the answer never shows — so
//! price probing learns nothing.

use super::{open_to, replies_key, Result, SellerProfile};
use crate::base::Base;
use crate::catalogue::parse_json_row;
use crate::clock;
use crate::crypto;
use crate::deliveries::disabled_sellers;
use crate::protocol::input::{Fields, InputError};
use crate::protocol::{Offer, OfferSource, SellerPublic};
use crate::records::{IntentRecord, OfferInput, OfferRecord, SellerRecord};
use crate::store::{Ns, Reads};
use serde::Serialize;
use serde_json::{json, Map, Value};

/// Most replies one seller may send to one intent.
pub const MAX_REPLIES: usize = 3;
/// The one refusal for an intent that is unknown, not active, private, or outside the
/// seller's categories and regions.
pub const REFUSED_NOT_OPEN: &str = "not open for replies";
/// The refusal after [`MAX_REPLIES`] replies.
pub const REFUSED_LIMIT: &str = "reply limit reached";

/// The result of `intent_submit_offer`: `{accepted, offerId?, reason?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplyOutcome {
    /// Stored and valid.
    pub accepted: bool,
    /// The stored offer's id (`off_…`), when accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offer_id: Option<String>,
    /// Why not, when refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl ReplyOutcome {
    fn refused(reason: &str) -> Self {
        Self { accepted: false, offer_id: None, reason: Some(reason.to_owned()) }
    }
}

/// The intent id of a reply whose `inReplyTo` is no handle of the seller's: empty, an
/// id no intent has.
pub const NO_INTENT: &str = "";

/// Longest `inReplyTo`, characters (a handle is 80).
pub const IN_REPLY_TO_MAX: usize = 128;

/// The Offer fields a reply may carry besides `source` and `inReplyTo`.
const OFFER_FIELDS: [&str; 8] =
    ["title", "description", "category", "attributes", "price", "area", "url", "validUntil"];

/// A validated `intent_submit_offer` input: the intent it answers and the offer.
#[derive(Debug, Clone)]
pub struct ReplyInput {
    /// The intent behind `inReplyTo`, the seller's handle (PROTOCOL.md §2): its id, or
    /// [`NO_INTENT`] when the handle is not one this seller can open (another seller's,
    /// a tampered one, an intent id) — no intent has that id, so the reply is refused
    /// as [`REFUSED_NOT_OPEN`] exactly like an unknown intent.
    pub intent_id: String,
    /// The Offer fields, checked as a catalogue row.
    pub offer: OfferInput,
}

/// Validates a reply (the face calls it before [`submit_reply`]): `source` must be
/// `{"kind": "reply"}`, `inReplyTo` a string (the seller's handle of the intent, opened
/// here: see [`ReplyInput::intent_id`]), the Offer fields follow the catalogue
/// rules ([`parse_json_row`]); the category must be one the seller serves and
/// `validUntil` (if any) in the future.
///
/// # Errors
/// [`InputError`] naming the field and rule.
pub fn parse_reply(base: &Base, profile: &SellerProfile, args: &Value) -> Result<ReplyInput, InputError> {
    parse(base, profile, args).map(|(intent_id, offer)| ReplyInput { intent_id, offer })
}

fn parse(base: &Base, profile: &SellerProfile, args: &Value) -> Result<(String, OfferInput), InputError> {
    let mut f = Fields::new(args, "")?;
    match f.get("source") {
        None => return Err(InputError("source is required: {\"kind\": \"reply\"}".into())),
        Some(v) => {
            let mut s = Fields::new(v, "source")?;
            let kind = s.req_str("kind", 20)?;
            if kind != "reply" {
                return Err(InputError("source.kind must be \"reply\" (replies to an open intent)".into()));
            }
            s.finish("; the holder fills in sellerId")?;
        }
    }
    let in_reply_to = f.req_str("inReplyTo", IN_REPLY_TO_MAX)?;
    let mut row = Map::new();
    for key in OFFER_FIELDS {
        if let Some(v) = f.get(key) {
            row.insert(key.to_owned(), v.clone());
        }
    }
    f.finish("; id, seller, publishedAt and extensions are assigned by the holder")?;
    row.insert("seller".into(), json!({"name": profile.name}));
    let currencies: Vec<String> = base.settings.rates.keys().cloned().collect();
    let input = parse_json_row(&Value::Object(row), &currencies)?;
    if !profile.serves_category(&input.category) {
        return Err(InputError(format!("category must be one this seller serves ({})", profile.categories.join(", "))));
    }
    if let Some(v) = &input.valid_until {
        if clock::parse_rfc3339(v).map_or(true, |t| t <= base.clock.now()) {
            return Err(InputError("validUntil must be in the future".into()));
        }
    }
    let intent_id =
        super::intent_of_handle(base, &profile.seller_id, &in_reply_to).unwrap_or_else(|| NO_INTENT.to_owned());
    Ok((intent_id, input))
}

/// `intent_submit_offer` for `profile`'s seller (the caller has checked the grant and
/// that the account is an enabled seller). In one transaction: checks that the intent
/// is open to the seller and the reply count, stores the reply (see the module docs of
/// [`crate::sellers`]), and checks it against its one intent with the PROTOCOL.md §6
/// rules — delivering it once and scheduling the digest when it matches.
///
/// # Errors
/// Storage and key errors.
pub fn submit_reply(base: &Base, profile: &SellerProfile, reply: &ReplyInput) -> Result<ReplyOutcome> {
    let (intent_id, input) = (reply.intent_id.clone(), reply.offer.clone());
    let now = base.clock.now();
    let (outcome, delivered) = base.write(|tx| -> Result<(ReplyOutcome, u64)> {
        let Some(mut rec) = tx.intent::<IntentRecord>(&intent_id)? else {
            return Ok((ReplyOutcome::refused(REFUSED_NOT_OPEN), 0));
        };
        if !open_to(&rec, profile, now) {
            return Ok((ReplyOutcome::refused(REFUSED_NOT_OPEN), 0));
        }
        let key = replies_key(&profile.account_id, &intent_id);
        let mut ids: Vec<String> = tx.record(Ns::Seller, &key)?.unwrap_or_default();
        if ids.len() >= MAX_REPLIES {
            return Ok((ReplyOutcome::refused(REFUSED_LIMIT), 0));
        }
        let seller = tx.seller::<SellerRecord>(&profile.seller_id)?.unwrap_or_else(|| SellerRecord {
            id: profile.seller_id.clone(),
            name: profile.name.clone(),
            url: profile.url.clone(),
            disabled: false,
        });
        let id = crypto::new_id("off_");
        let offer = Offer {
            id: id.clone(),
            source: OfferSource { kind: "reply".into(), seller_id: seller.id.clone(), url: input.url },
            in_reply_to: Some(rec.id.clone()),
            title: input.title,
            description: input.description,
            category: input.category,
            attributes: input.attributes,
            price: input.price,
            area: input.area,
            seller: SellerPublic { id: seller.id.clone(), name: seller.name, url: seller.url },
            published_at: clock::rfc3339(now),
            valid_until: input.valid_until,
            extensions: Value::Object(Map::new()),
        };
        // Inactive: not in the catalogue (search, index, other intents' matching).
        let stored = OfferRecord { offer, active: false, import_run: None };
        tx.put_offer(&id, &stored, None)?;
        ids.push(id.clone());
        tx.put_record(Ns::Seller, &key, &ids)?;
        // PROTOCOL.md §6 for its one intent: the reply is current (valid, seller checked
        // by the disabled set) as a candidate.
        let candidate = OfferRecord { active: true, ..stored };
        let disabled = disabled_sellers(tx)?;
        let n =
            crate::deliveries::match_intent_tx(base, tx, &mut rec, std::slice::from_ref(&candidate), &disabled, now)?;
        if n > 0 {
            tx.put_intent(&rec, true)?;
        }
        Ok((ReplyOutcome { accepted: true, offer_id: Some(id), reason: None }, n))
    })?;
    if outcome.accepted {
        tracing::info!(
            seller = %profile.seller_id,
            intent = %intent_id,
            offer = outcome.offer_id.as_deref().unwrap_or_default(),
            delivered,
            "seller reply stored"
        );
    }
    if delivered > 0 {
        base.outbox.wake();
    }
    Ok(outcome)
}
