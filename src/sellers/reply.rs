//! `intent_submit_offer` (PROTOCOL.md §3): a seller's reply to one open pseudonymous
//! intent.
//!
//! The answer depends only on the input's validity, on whether the intent is open to this
//! seller (active, pseudonymous, in the seller's categories and regions — one reason text
//! either way, so it does not tell whether the intent exists), and on the seller's reply
//! count for the intent. `accepted: true` means stored and valid. The PROTOCOL.md §6
//! check (hidden limit included), which decides whether the reply is delivered, runs
//! after the answer: the reply is queued in the transaction that stores it, and the queue
//! is matched on a jittered tick of its own ([`crate::deliveries::replies`]), so that not
//! even the seller's next call is slowed by a delivery. The work before the answer never
//! opens, reads or branches on the hidden limit ([`ReplyTarget`] does not hold it), so
//! neither the answer nor the time it takes tells a price below the limit from one above
//! it — price probing learns nothing.

use super::{replies_key, Result, SellerProfile};
use crate::base::Base;
use crate::catalogue::parse_json_row;
use crate::clock;
use crate::crypto;
use crate::protocol::input::{Fields, InputError};
use crate::protocol::{AreaObject, Status, Visibility};
use crate::records::{offer_current, OfferInput, OfferRecord, SellerRecord, Stamp};
use crate::store::{Ns, Reads};
use serde::{Deserialize, Serialize};
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

/// Longest `inReplyTo`, characters (the tool schema's limit).
pub use crate::protocol::schema::IN_REPLY_TO_MAX;

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

/// Validates a reply (before [`submit_reply`]): `source` must be `{"kind": "reply"}`,
/// `inReplyTo` the seller's handle of the intent ([`ReplyInput::intent_id`]), the Offer
/// fields follow the catalogue rules ([`parse_json_row`]); the category must be one the
/// seller serves and `validUntil` (if any) in the future.
///
/// # Errors
/// [`InputError`] naming the field and rule.
pub fn parse_reply(base: &Base, profile: &SellerProfile, args: &Value) -> Result<ReplyInput, InputError> {
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
    let currencies: Vec<String> = base.settings().rates.keys().cloned().collect();
    let input = parse_json_row(&Value::Object(row), &currencies)?;
    if !profile.serves_category(&input.category) {
        return Err(InputError(format!("category must be one this seller serves ({})", profile.categories.join(", "))));
    }
    if let Some(v) = &input.valid_until {
        if !offer_current(Some(v), base.clock().now()) {
            return Err(InputError("validUntil must be in the future".into()));
        }
    }
    let intent_id =
        super::intent_of_handle(base, &profile.seller_id, &in_reply_to).unwrap_or_else(|| NO_INTENT.to_owned());
    Ok(ReplyInput { intent_id, offer: input })
}

/// What the answer path of [`submit_reply`] reads of the intent: the fields that decide
/// whether it takes replies, with every other field skipped — no contact, no hidden
/// limit, nothing derived from either, so the answer cannot depend on them.
#[derive(Debug, Deserialize)]
struct ReplyTarget {
    id: String,
    status: Status,
    category: String,
    area: AreaObject,
    valid_until: Stamp,
    visibility: Visibility,
}

impl crate::store::IntentRow for ReplyTarget {
    const MATCHES: bool = false;
}

impl ReplyTarget {
    /// [`open_to`](super::open_to) on these fields.
    fn open_to(&self, profile: &SellerProfile, now: time::OffsetDateTime) -> bool {
        self.status == Status::Active
            && now <= self.valid_until.at()
            && self.visibility == Visibility::Pseudonymous
            && profile.serves(&self.category, &self.area)
    }
}

/// `intent_submit_offer` for `profile`'s seller (the caller has checked the grant and
/// that the account is an enabled seller). In one transaction: checks that the intent
/// is open to the seller (reading only [`ReplyTarget`]'s fields) and the reply count,
/// stores the reply (see [`crate::sellers`]) and queues it for matching
/// ([`crate::deliveries::match_queued_replies`]; see the module docs).
pub fn submit_reply(base: &Base, profile: &SellerProfile, reply: &ReplyInput) -> Result<ReplyOutcome> {
    let (intent_id, input) = (reply.intent_id.clone(), reply.offer.clone());
    let now = base.clock().now();
    // No intent is written here (the match is), so the plain store transaction.
    let outcome = base.store().write(|tx| -> Result<ReplyOutcome> {
        let Some(rec) = tx.intent::<ReplyTarget>(&intent_id)?.filter(|r| r.open_to(profile, now)) else {
            return Ok(ReplyOutcome::refused(REFUSED_NOT_OPEN));
        };
        let key = replies_key(&profile.account_id, &intent_id);
        let mut ids: Vec<String> = tx.record(Ns::Seller, &key)?.unwrap_or_default();
        if ids.len() >= MAX_REPLIES {
            return Ok(ReplyOutcome::refused(REFUSED_LIMIT));
        }
        let seller = tx.seller::<SellerRecord>(&profile.seller_id)?.unwrap_or_else(|| SellerRecord {
            id: profile.seller_id.clone(),
            name: profile.name.clone(),
            url: profile.url.clone(),
            disabled: false,
        });
        let id = crypto::new_id("off_");
        let (in_reply_to, published_at) = (Some(rec.id.clone()), clock::rfc3339(now));
        let offer = crate::catalogue::offer_of(input, id.clone(), "reply", seller, in_reply_to, published_at);
        // Inactive: not in the catalogue (search, index, other intents' matching).
        let stored = OfferRecord { offer, active: false, import_run: None };
        tx.put_offer(&id, &stored, None)?;
        ids.push(id.clone());
        tx.put_record(Ns::Seller, &key, &ids)?;
        // PROTOCOL.md §6 for its one intent happens after the answer.
        tx.queue_reply(&rec.id, &id)?;
        Ok(ReplyOutcome { accepted: true, offer_id: Some(id), reason: None })
    })?;
    if outcome.accepted {
        tracing::info!(
            seller = %profile.seller_id,
            intent = %intent_id,
            offer = outcome.offer_id.as_deref().unwrap_or_default(),
            "seller reply stored and queued for matching"
        );
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::config::Settings;
    use crate::crypto::KeyRing;
    use crate::deliveries;
    use crate::records::IntentRecord;
    use crate::store::Store;
    use std::sync::Arc;

    const START: &str = "2026-12-01T10:00:00Z";

    fn base(dir: &std::path::Path) -> (Base, Arc<ManualClock>) {
        let mut s = Settings::defaults();
        s.data_dir = dir.to_owned();
        let store = Store::open(&dir.join(crate::store::FILE_NAME)).unwrap();
        let clock = Arc::new(ManualClock::new(clock::parse_rfc3339(START).unwrap()));
        (Base::new(s, Arc::new(store), Arc::new(KeyRing::ephemeral()), clock.clone()), clock)
    }

    fn profile() -> SellerProfile {
        SellerProfile {
            account_id: "acc_seller".into(),
            seller_id: "sel_seller".into(),
            name: "Dealer One".into(),
            url: None,
            categories: vec!["vehicles".into()],
            regions: vec!["SK-BL".into()],
            created_at: Stamp::parse(START).unwrap(),
        }
    }

    /// An active pseudonymous Octavia intent in Slovakia, budget 20 000 EUR, hidden
    /// limit `limit` sealed with `keys`.
    fn intent(b: &Base, id: &str, limit: f64, keys: &KeyRing) -> IntentRecord {
        let t = |s: &str| Stamp::parse(s).unwrap();
        let v = json!({
            "id": id, "status": "active", "statement": "Hľadám Škoda Octavia combi", "category": "vehicles",
            "criteria": {"make": "Škoda", "model": "Octavia"},
            "area": crate::gazetteer::resolve("SK").unwrap(),
            "budget": {"max": 20000, "currency": "EUR"},
            "hidden_limit": keys.seal_str(&format!("{limit:<32}")).unwrap(),
            "buy_by": null, "valid_until": t("2027-03-01T00:00:00Z"), "visibility": "pseudonymous",
            "language": "sk", "created_at": t(START), "updated_at": t(START),
            "draft_expires_at": t("2026-12-02T10:00:00Z"),
            "contact": null, "consent": null, "confirm_expires_at": null, "confirmed_at": t(START), "ended_at": null,
            "match_count": 0, "last_digest_at": null, "digest_cursor": 0
        });
        let rec: IntentRecord = serde_json::from_value(v).unwrap();
        // Written as the store keeps it, without the engine (which would open the limit).
        b.store()
            .write(|tx| {
                tx.put_intent(&crate::store::IntentKey::for_tests(), &rec.id, &rec, true, crate::base::sweep_due(&rec))
            })
            .unwrap();
        rec
    }

    fn reply(b: &Base, intent: &str, title: &str, price: f64) -> ReplyInput {
        let args = json!({"source": {"kind": "reply"}, "inReplyTo": crate::sellers::handle(b, &profile().seller_id, intent), "title": title,
            "description": "Servisná knižka.", "category": "vehicles",
            "attributes": {"make": "Škoda", "model": "Octavia", "year": 2019},
            "price": {"amount": price, "currency": "EUR"}, "area": "Bratislava"});
        parse_reply(b, &profile(), &args).unwrap()
    }

    /// Submits and returns the answer without its offer id, and how many sealed values
    /// the call opened on this thread.
    fn submit(b: &Base, r: &ReplyInput) -> (Value, u64, String) {
        let before = crypto::opened_on_this_thread();
        let out = submit_reply(b, &profile(), r).unwrap();
        let opened = crypto::opened_on_this_thread() - before;
        let id = out.offer_id.clone().unwrap_or_default();
        let mut v = serde_json::to_value(&out).unwrap();
        v.as_object_mut().unwrap().remove("offerId");
        (v, opened, id)
    }

    fn delivered(b: &Base, id: &str) -> Vec<String> {
        deliveries::list(b, id, None, 100).unwrap().0.into_iter().map(|d| d.offer.title).collect()
    }

    #[test]
    fn the_answer_path_never_opens_the_hidden_limit_and_answers_alike_on_both_sides_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let (b, _) = base(dir.path());
        intent(&b, "int_a", 12_000.0, b.keys());
        let (below, opened_below, below_id) = submit(&b, &reply(&b, "int_a", "Octavia below", 11_000.0));
        let (above, opened_above, _) = submit(&b, &reply(&b, "int_a", "Octavia above", 15_000.0));
        assert_eq!(below, json!({"accepted": true}));
        assert_eq!(below, above, "identical answers");
        assert_eq!((opened_below, opened_above), (0, 0), "no sealed value is opened before the answer");
        // Nothing is delivered or scheduled before the tick: the queue holds both.
        assert!(delivered(&b, "int_a").is_empty());
        assert_eq!(b.store().read(|rx| rx.digest_due_at("int_a")).unwrap(), None);
        assert_eq!(b.store().read(|rx| rx.pending_reply_count()).unwrap(), 2);
        // The tick opens the limit and delivers only the reply within it.
        let before = crypto::opened_on_this_thread();
        assert_eq!(deliveries::match_queued_replies(&b).unwrap(), 1);
        assert!(crypto::opened_on_this_thread() > before, "the match after the answer opens the limit");
        assert_eq!(delivered(&b, "int_a"), vec!["Octavia below"]);
        assert!(b.store().read(|rx| rx.digest_due_at("int_a")).unwrap().is_some(), "the digest is scheduled");
        assert_eq!(b.store().read(|rx| rx.pending_reply_count()).unwrap(), 0);
        let rec: IntentRecord = b.store().read(|rx| rx.intent("int_a")).unwrap().unwrap();
        assert_eq!(rec.match_count, 1);
        assert!(b.engine_contains("int_a"), "the delivery's intent write went through Base::write");
        // A second drain finds nothing: matched once.
        assert_eq!(deliveries::match_queued_replies(&b).unwrap(), 0);
        assert_eq!(delivered(&b, "int_a").len(), 1);
        let stored: OfferRecord = b.store().read(|rx| rx.offer(&below_id)).unwrap().unwrap();
        assert!(!stored.active, "a reply never enters the catalogue");
    }

    /// The reply matching's tick is one write transaction whatever the queue holds —
    /// nothing, a refused reply, a delivered one, several — so a refused reply opens no
    /// write transaction of its own and a delivered one none more.
    #[test]
    fn one_tick_is_one_write_transaction_whatever_the_replies_outcomes() {
        let dir = tempfile::tempdir().unwrap();
        let (b, _) = base(dir.path());
        intent(&b, "int_a", 12_000.0, b.keys());
        intent(&b, "int_b", 12_000.0, b.keys());
        let tick = |expect_delivered: u64| {
            let before = b.store().commits().unwrap();
            assert_eq!(deliveries::match_queued_replies(&b).unwrap(), expect_delivered);
            b.store().commits().unwrap() - before
        };
        assert_eq!(tick(0), 1, "an empty queue");
        submit(&b, &reply(&b, "int_a", "Octavia above", 15_000.0));
        assert_eq!(tick(0), 1, "one refused reply");
        submit(&b, &reply(&b, "int_a", "Octavia below", 11_000.0));
        assert_eq!(tick(1), 1, "one delivered reply");
        submit(&b, &reply(&b, "int_b", "Octavia above", 15_000.0));
        submit(&b, &reply(&b, "int_b", "Octavia below", 11_000.0));
        submit(&b, &reply(&b, "int_a", "Octavia above again", 16_000.0));
        assert_eq!(tick(1), 1, "three replies, one delivered");
        assert_eq!(b.store().read(|rx| rx.pending_reply_count()).unwrap(), 0);
        assert_eq!(delivered(&b, "int_a"), vec!["Octavia below"]);
        assert_eq!(delivered(&b, "int_b"), vec!["Octavia below"]);
    }

    #[test]
    fn a_hidden_limit_that_cannot_be_opened_changes_nothing_in_the_answer() {
        // Sealed under a key this holder does not have: opening it fails, so an answer
        // path that opened it (or branched on it) could not answer as usual.
        let dir = tempfile::tempdir().unwrap();
        let (b, _) = base(dir.path());
        intent(&b, "int_ok", 12_000.0, b.keys());
        intent(&b, "int_sealed_elsewhere", 12_000.0, &KeyRing::ephemeral());
        let (normal, _, _) = submit(&b, &reply(&b, "int_ok", "Octavia", 11_000.0));
        let (foreign, opened, _) = submit(&b, &reply(&b, "int_sealed_elsewhere", "Octavia", 11_000.0));
        assert_eq!(normal, foreign);
        assert_eq!(opened, 0);
        // The drain drops the one it cannot match (logged) and delivers the other.
        assert_eq!(deliveries::match_queued_replies(&b).unwrap(), 1);
        assert_eq!(delivered(&b, "int_ok"), vec!["Octavia"]);
        assert!(delivered(&b, "int_sealed_elsewhere").is_empty());
        assert_eq!(b.store().read(|rx| rx.pending_reply_count()).unwrap(), 0, "not retried forever");
    }

    #[test]
    fn replies_are_not_delivered_to_intents_that_stopped_taking_them_before_the_drain() {
        let dir = tempfile::tempdir().unwrap();
        let (b, clock) = base(dir.path());
        let mut private = intent(&b, "int_private", 12_000.0, b.keys());
        let erased = intent(&b, "int_erased", 12_000.0, b.keys());
        intent(&b, "int_expiring", 12_000.0, b.keys());
        for id in ["int_private", "int_erased", "int_expiring"] {
            assert_eq!(submit(&b, &reply(&b, id, "Octavia", 11_000.0)).0, json!({"accepted": true}));
        }
        private.visibility = Visibility::Private;
        b.store()
            .write(|tx| {
                tx.put_intent(
                    &crate::store::IntentKey::for_tests(),
                    &private.id,
                    &private,
                    true,
                    crate::base::sweep_due(&private),
                )
            })
            .unwrap();
        b.store().write(|tx| tx.remove_intent(&crate::store::IntentKey::for_tests(), &erased.id)).unwrap();
        clock.advance(time::Duration::days(100));
        assert_eq!(deliveries::match_queued_replies(&b).unwrap(), 0);
        for id in ["int_private", "int_erased", "int_expiring"] {
            assert!(delivered(&b, id).is_empty(), "{id}");
        }
        assert_eq!(b.store().read(|rx| rx.pending_reply_count()).unwrap(), 0);
    }

    #[test]
    fn the_reply_target_is_open_exactly_when_the_record_is() {
        let dir = tempfile::tempdir().unwrap();
        let (b, _) = base(dir.path());
        let rec = intent(&b, "int_a", 1.0, b.keys());
        let now = clock::parse_rfc3339(START).unwrap();
        let later = clock::parse_rfc3339("2027-03-02T00:00:00Z").unwrap();
        let mut other_seller = profile();
        other_seller.regions = vec!["CZ".into()];
        for status in [Status::Active, Status::AwaitingConsent, Status::Withdrawn, Status::Expired] {
            for visibility in [Visibility::Pseudonymous, Visibility::Private] {
                let mut r = rec.clone();
                r.status = status;
                r.visibility = visibility;
                let target: ReplyTarget = serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
                for t in [now, later] {
                    for p in [profile(), other_seller.clone()] {
                        assert_eq!(
                            target.open_to(&p, t),
                            super::super::open_to(&r, &p, t),
                            "{status:?} {visibility:?}"
                        );
                    }
                }
            }
        }
    }
}
