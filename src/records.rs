//! The records isto stores (PROTOCOL.md §2 objects plus what only the holder keeps):
//! intents with their sealed contact and hidden limit, offers, sellers, and the rules
//! read off a record alone (effective status, next status change, whether an offer may
//! match). Model layer: no storage, no transport.

use crate::clock;
use crate::crypto::Sealed;
use crate::protocol::{AreaObject, Budget, Intent, Offer, Status, Visibility};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use time::OffsetDateTime;

mod content;
mod stamp;
pub use content::IntentContent;
pub use stamp::Stamp;

/// Consent given on the holder's page (PROTOCOL.md §4.2).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConsentRecord {
    /// When.
    pub at: Stamp,
    /// Version (hash prefix) of the consent text shown.
    pub text_version: String,
    /// Language of the consent text shown.
    pub language: String,
}

/// An intent as stored. Contact and hidden limit are sealed; tokens live only as hashes
/// in the `tokens` table. Read through [`StoredIntent`] (the same JSON object).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(from = "StoredIntent")]
pub struct IntentRecord {
    /// `int_...`.
    pub id: String,
    /// Stored status (see [`IntentRecord::effective_status`]).
    pub status: Status,
    /// What the person asked for (stored flattened: its fields are the record's).
    #[serde(flatten)]
    pub content: IntentContent,
    /// Sealed hidden limit (decimal string), in the budget's currency.
    pub hidden_limit: Option<Sealed>,
    /// When it was published.
    pub created_at: Stamp,
    /// The last change a seller or the person sees.
    pub updated_at: Stamp,
    /// When a draft lapses without consent.
    pub draft_expires_at: Stamp,
    /// Sealed e-mail address (after consent; erased after retention).
    pub contact: Option<Sealed>,
    /// Consent record.
    pub consent: Option<ConsentRecord>,
    /// Deadline of the e-mail confirmation.
    pub confirm_expires_at: Option<Stamp>,
    /// When the e-mail was confirmed.
    pub confirmed_at: Option<Stamp>,
    /// When it became expired or withdrawn.
    pub ended_at: Option<Stamp>,
    /// Number of deliveries.
    pub match_count: u64,
    /// When the last digest was sent.
    pub last_digest_at: Option<Stamp>,
    /// Delivery time (µs) of the last delivery included in a digest.
    pub digest_cursor: i64,
    /// The account that owns it when published on `/mcp/buyer` (PROTOCOL.md §1); `None`
    /// for consent-link intents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Delivery time (µs) of the newest delivery: the next one is strictly later, so
    /// `since` cursors and digests never skip a delivery made in the same microsecond.
    #[serde(default)]
    pub last_delivered: i64,
    /// The person key ([`crate::base::person`]; PROTOCOL.md §3 "Limits", §5), set when
    /// consent is given or the intent is published active; `None` before consent (and on
    /// records of an older isto until the start-up backfill).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
    /// How often the person wants the match digest; absent (on records of an older isto)
    /// reads as, and is not written when it is, [`Cadence::AsTheyCome`].
    #[serde(default, skip_serializing_if = "Cadence::is_default")]
    pub cadence: Cadence,
}

/// An [`IntentRecord`] as the store holds it, read field by field: one JSON object with
/// the content's fields beside the record's (as `#[serde(flatten)]` writes it). Read
/// without `flatten`, which first buffers the whole object into an intermediate tree and
/// then reads the content out of it: that was most of the cost of reading an intent.
/// Missing optional fields read as [`IntentRecord`]'s attributes say.
#[derive(Deserialize)]
struct StoredIntent {
    id: String,
    status: Status,
    statement: String,
    category: String,
    criteria: Map<String, Value>,
    area: AreaObject,
    budget: Option<Budget>,
    buy_by: Option<String>,
    valid_until: Stamp,
    visibility: Visibility,
    language: String,
    hidden_limit: Option<Sealed>,
    created_at: Stamp,
    updated_at: Stamp,
    draft_expires_at: Stamp,
    contact: Option<Sealed>,
    consent: Option<ConsentRecord>,
    confirm_expires_at: Option<Stamp>,
    confirmed_at: Option<Stamp>,
    ended_at: Option<Stamp>,
    match_count: u64,
    last_digest_at: Option<Stamp>,
    digest_cursor: i64,
    #[serde(default)]
    owner: Option<String>,
    #[serde(default)]
    last_delivered: i64,
    #[serde(default)]
    person: Option<String>,
    #[serde(default)]
    cadence: Cadence,
}

impl From<StoredIntent> for IntentRecord {
    fn from(s: StoredIntent) -> Self {
        let content = IntentContent {
            statement: s.statement,
            category: s.category,
            criteria: s.criteria,
            area: s.area,
            budget: s.budget,
            buy_by: s.buy_by,
            valid_until: s.valid_until,
            visibility: s.visibility,
            language: s.language,
        };
        Self {
            id: s.id,
            status: s.status,
            content,
            hidden_limit: s.hidden_limit,
            created_at: s.created_at,
            updated_at: s.updated_at,
            draft_expires_at: s.draft_expires_at,
            contact: s.contact,
            consent: s.consent,
            confirm_expires_at: s.confirm_expires_at,
            confirmed_at: s.confirmed_at,
            ended_at: s.ended_at,
            match_count: s.match_count,
            last_digest_at: s.last_digest_at,
            digest_cursor: s.digest_cursor,
            owner: s.owner,
            last_delivered: s.last_delivered,
            person: s.person,
            cadence: s.cadence,
        }
    }
}

/// How often the match digest of an intent may go out (the rule is
/// [`Cadence::next_digest_at`], docs/choices.md "Delivery cadence"). Stored by its
/// [`Cadence::key`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cadence {
    /// As matches come: at most one digest per `mail.digest_min_interval_secs`.
    #[default]
    AsTheyCome,
    /// At most one digest per 24 hours.
    Daily,
    /// At most one digest per 7 days.
    Weekly,
    /// No digest; matches keep being recorded and are mailed once another cadence is
    /// chosen.
    Pause,
}

impl Cadence {
    /// Every cadence, in the order the pages offer them.
    pub const ALL: [Cadence; 4] = [Cadence::AsTheyCome, Cadence::Daily, Cadence::Weekly, Cadence::Pause];

    /// Seconds in a day (the [`Cadence::Daily`] spacing).
    pub const DAY_SECS: i64 = 24 * 3600;

    /// Seconds in a week (the [`Cadence::Weekly`] spacing).
    pub const WEEK_SECS: i64 = 7 * Self::DAY_SECS;

    /// The form value and stored name: `as_they_come`, `daily`, `weekly`, `pause`.
    pub fn key(self) -> &'static str {
        ["as_they_come", "daily", "weekly", "pause"][self as usize]
    }

    /// The cadence whose [`Cadence::key`] is `s` exactly, if any.
    pub fn parse(s: &str) -> Option<Cadence> {
        Self::ALL.into_iter().find(|c| c.key() == s)
    }

    /// Whether this is the default ([`Cadence::AsTheyCome`]).
    pub fn is_default(&self) -> bool {
        *self == Cadence::AsTheyCome
    }

    /// Least seconds between two digests: `min_interval_secs` (the holder's
    /// `mail.digest_min_interval_secs`) as they come, a day daily, a week weekly (never
    /// less than `min_interval_secs`); `None` when paused.
    pub fn spacing_secs(self, min_interval_secs: u64) -> Option<i64> {
        let min = i64::try_from(min_interval_secs).unwrap_or(i64::MAX);
        match self {
            Cadence::AsTheyCome => Some(min),
            Cadence::Daily => Some(Self::DAY_SECS.max(min)),
            Cadence::Weekly => Some(Self::WEEK_SECS.max(min)),
            Cadence::Pause => None,
        }
    }

    /// When (Unix seconds) the next digest of an intent with undigested matches may go
    /// out: [`Cadence::spacing_secs`] after the last digest (`last_digest_at`, Unix
    /// seconds), or `now` when there was none or that time has passed; `None` when
    /// paused. The timer counts from the last digest sent, so choosing another cadence
    /// does not reset it.
    pub fn next_digest_at(self, last_digest_at: Option<i64>, now: i64, min_interval_secs: u64) -> Option<i64> {
        let spacing = self.spacing_secs(min_interval_secs)?;
        Some(last_digest_at.map_or(now, |l| l.saturating_add(spacing)).max(now))
    }

    /// [`Cadence::next_digest_at`] of a last digest sent at `last_digest_at`.
    fn next_digest_after(
        self,
        last_digest_at: Option<Stamp>,
        now: OffsetDateTime,
        min_interval_secs: u64,
    ) -> Option<i64> {
        let last = last_digest_at.map(|t| t.at().unix_timestamp());
        self.next_digest_at(last, now.unix_timestamp(), min_interval_secs)
    }

    /// The cadence in words, in `lang` (`sk`, `cs`, else English): the pages' choices
    /// and the line every e-mail about the intent carries.
    pub fn label(self, lang: &str) -> &'static str {
        match (lang, self) {
            ("sk", Cadence::AsTheyCome) => "priebežne, hneď ako prídu",
            ("sk", Cadence::Daily) => "denne (najviac jeden e-mail za 24 hodín)",
            ("sk", Cadence::Weekly) => "týždenne (najviac jeden e-mail za 7 dní)",
            ("sk", Cadence::Pause) => "pozastavené (e-maily nechodia, ponuky sa zbierajú na stránke výsledkov)",
            ("cs", Cadence::AsTheyCome) => "průběžně, hned jak přijdou",
            ("cs", Cadence::Daily) => "denně (nejvýše jeden e-mail za 24 hodin)",
            ("cs", Cadence::Weekly) => "týdně (nejvýše jeden e-mail za 7 dní)",
            ("cs", Cadence::Pause) => "pozastaveno (e-maily nechodí, nabídky se sbírají na stránce výsledků)",
            (_, Cadence::AsTheyCome) => "as they come",
            (_, Cadence::Daily) => "daily (at most one e-mail in 24 hours)",
            (_, Cadence::Weekly) => "weekly (at most one e-mail in 7 days)",
            (_, Cadence::Pause) => "paused (no e-mail; offers collect on the results page)",
        }
    }
}

impl std::ops::Deref for IntentRecord {
    type Target = IntentContent;

    /// The record reads as its content (`rec.statement`, `rec.valid_until`, …).
    fn deref(&self) -> &IntentContent {
        &self.content
    }
}

impl std::ops::DerefMut for IntentRecord {
    fn deref_mut(&mut self) -> &mut IntentContent {
        &mut self.content
    }
}

impl IntentRecord {
    /// A new draft (`awaiting_consent`) of `content` created at `created` that lapses at
    /// `draft_expires`: no hidden limit, contact, consent, owner, person key nor
    /// deliveries yet; cadence "as they come".
    pub fn draft(id: String, content: IntentContent, created: Stamp, draft_expires: Stamp) -> Self {
        IntentRecord {
            id,
            status: Status::AwaitingConsent,
            content,
            hidden_limit: None,
            created_at: created,
            updated_at: created,
            draft_expires_at: draft_expires,
            contact: None,
            consent: None,
            confirm_expires_at: None,
            confirmed_at: None,
            ended_at: None,
            match_count: 0,
            last_digest_at: None,
            digest_cursor: 0,
            owner: None,
            last_delivered: 0,
            person: None,
            cadence: Cadence::AsTheyCome,
        }
    }

    /// The status at `now`: stored status, with expiry applied (drafts after their
    /// deadline, unconfirmed after 72 h, active after validUntil).
    pub fn effective_status(&self, now: OffsetDateTime) -> Status {
        match self.status {
            Status::AwaitingConsent if now > self.draft_expires_at.at() => Status::Expired,
            Status::AwaitingEmailConfirmation if self.confirm_expires_at.is_some_and(|t| now > t.at()) => {
                Status::Expired
            }
            Status::Active if now > self.valid_until.at() => Status::Expired,
            s => s,
        }
    }

    /// When [`IntentRecord::effective_status`] next changes by itself, by the same rules:
    /// the draft deadline while awaiting consent, the confirmation deadline (if any)
    /// while awaiting the e-mail confirmation, validUntil while active; `None` once
    /// ended. The status changes at every instant strictly after the time returned.
    pub fn next_status_change(&self) -> Option<OffsetDateTime> {
        match self.status {
            Status::AwaitingConsent => Some(self.draft_expires_at.at()),
            Status::AwaitingEmailConfirmation => self.confirm_expires_at.map(Stamp::at),
            Status::Active => Some(self.valid_until.at()),
            Status::Expired | Status::Withdrawn => None,
        }
    }

    /// When the intent ended, if it has ended and still holds a contact (which the sweep
    /// erases `contact_retention_days` later, PROTOCOL.md §4.6).
    pub fn ended_with_contact_at(&self) -> Option<OffsetDateTime> {
        match (&self.contact, self.ended_at) {
            (Some(_), Some(e)) if self.status.is_final() => Some(e.at()),
            _ => None,
        }
    }

    /// When (Unix seconds) its next digest may go out by its cadence
    /// ([`Cadence::next_digest_at`] from its last digest); `None` when paused.
    pub fn next_digest_at(&self, now: OffsetDateTime, min_interval_secs: u64) -> Option<i64> {
        self.cadence.next_digest_after(self.last_digest_at, now, min_interval_secs)
    }

    /// The fields recording deliveries reads and changes ([`DeliveryTarget`]).
    pub fn delivery_target(&self) -> DeliveryTarget {
        DeliveryTarget {
            id: self.id.clone(),
            status: self.status,
            valid_until: self.valid_until,
            cadence: self.cadence,
            last_digest_at: self.last_digest_at,
            match_count: self.match_count,
            last_delivered: self.last_delivered,
        }
    }

    /// The public view (PROTOCOL.md §2 Intent): the content, no contact, no hidden limit
    /// value.
    pub fn to_intent(&self, now: OffsetDateTime) -> Intent {
        let (status, hidden, times, extensions) = self.view_fields(now);
        self.content.to_intent(&self.id, status, hidden, times, extensions)
    }

    /// [`IntentRecord::to_intent`] of a record read to be shown (its texts moved, not
    /// copied).
    pub fn into_intent(self, now: OffsetDateTime) -> Intent {
        let (status, hidden, times, extensions) = self.view_fields(now);
        self.content.into_intent(self.id, status, hidden, times, extensions)
    }

    /// What the public view adds to the content: the status at `now`, whether a hidden
    /// limit is set, `(createdAt, updatedAt)`, the extensions.
    fn view_fields(&self, now: OffsetDateTime) -> (Status, bool, (Stamp, Stamp), Value) {
        let extensions = json!({"matchCount": self.match_count});
        (self.effective_status(now), self.hidden_limit.is_some(), (self.created_at, self.updated_at), extensions)
    }
}

/// The fields of a stored intent that recording deliveries reads and changes
/// (`deliveries::record_hits_in`): stored beside an active intent's record as its
/// `intent_targets` row (`store::IntentWrite`), or read from the record without its
/// texts, criteria and sealed fields (which are skipped, not decoded). A catalogue
/// import reads one for every intent it delivers to. Field meanings as in
/// [`IntentRecord`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeliveryTarget {
    /// `int_...`.
    pub id: String,
    /// Stored status.
    pub status: Status,
    /// `validUntil`.
    pub valid_until: Stamp,
    /// The digest cadence (absent on records of an older isto: as they come).
    #[serde(default)]
    pub cadence: Cadence,
    /// When the last digest was sent.
    pub last_digest_at: Option<Stamp>,
    /// Number of deliveries.
    pub match_count: u64,
    /// Delivery time (µs) of the newest delivery.
    #[serde(default)]
    pub last_delivered: i64,
}

impl DeliveryTarget {
    /// Whether the intent is active at `now`: exactly
    /// `IntentRecord::effective_status(now) == Status::Active`.
    pub fn active_at(&self, now: OffsetDateTime) -> bool {
        self.status == Status::Active && now <= self.valid_until.at()
    }

    /// [`IntentRecord::next_digest_at`] of its record.
    pub fn next_digest_at(&self, now: OffsetDateTime, min_interval_secs: u64) -> Option<i64> {
        self.cadence.next_digest_after(self.last_digest_at, now, min_interval_secs)
    }
}

/// A seller as stored (catalogue feeds create them by name).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SellerRecord {
    /// `sel_...`.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Web site.
    pub url: Option<String>,
    /// Disabled sellers' offers never match.
    pub disabled: bool,
}

/// An offer as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OfferRecord {
    /// The public offer.
    pub offer: Offer,
    /// False once withdrawn from the catalogue.
    pub active: bool,
    /// The `--full` import run that last wrote it (see `catalogue::Catalogue::withdraw_vanished`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import_run: Option<String>,
}

/// A catalogue row after validation (PROTOCOL.md §2 Offer without holder-assigned
/// fields; see `crate::catalogue`).
#[derive(Debug, Clone)]
pub struct OfferInput {
    /// The feed's own id, stable across re-imports.
    pub reference: Option<String>,
    /// Title.
    pub title: String,
    /// Description.
    pub description: String,
    /// Category key.
    pub category: String,
    /// Attributes.
    pub attributes: Map<String, Value>,
    /// Price.
    pub price: crate::protocol::Money,
    /// Location.
    pub area: AreaObject,
    /// Seller name.
    pub seller_name: String,
    /// Seller site.
    pub seller_url: Option<String>,
    /// Listing URL.
    pub url: Option<String>,
    /// RFC 3339.
    pub valid_until: Option<String>,
}

/// Counts of one import batch.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ImportCounts {
    /// New offers stored.
    pub created: u64,
    /// Existing offers (same seller and ref) updated in place.
    pub updated: u64,
    /// New deliveries to standing intents.
    pub delivered: u64,
}

/// Microseconds since the Unix epoch, rounded down (also before 1970: a time strictly
/// after `t` is at or after this microsecond, which is what the expiry index compares).
pub fn micros(t: OffsetDateTime) -> i64 {
    t.unix_timestamp_nanos().div_euclid(1000) as i64
}

/// Whether an offer is current at `now` (PROTOCOL.md §2 Offer `validUntil`, §6): it has
/// no `validUntil`, or one strictly after `now`. A `validUntil` that is not RFC 3339
/// (never written by isto, which checks it on import and reply) is not current. The one
/// rule for matching ([`offer_valid`]), the search's filter and the sellers' replies.
pub fn offer_current(valid_until: Option<&str>, now: OffsetDateTime) -> bool {
    valid_until.is_none_or(|v| clock::parse_rfc3339(v).is_ok_and(|t| t > now))
}

/// Whether an offer may match (PROTOCOL.md §6): current ([`offer_current`]), active,
/// seller enabled.
pub fn offer_valid(o: &OfferRecord, disabled: &HashSet<String>, now: OffsetDateTime) -> bool {
    o.active && !disabled.contains(&o.offer.source.seller_id) && offer_current(o.offer.valid_until.as_deref(), now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};

    fn at(c: &ManualClock) -> i64 {
        c.now().unix_timestamp()
    }

    #[test]
    fn each_cadence_spaces_digests_by_its_interval() {
        let clock = ManualClock::new(clock::parse_rfc3339("2026-12-01T10:00:00Z").unwrap());
        let min = 3600;
        // No digest yet: the first one may go out at once, whatever the cadence.
        for c in [Cadence::AsTheyCome, Cadence::Daily, Cadence::Weekly] {
            assert_eq!(c.next_digest_at(None, at(&clock), min), Some(at(&clock)), "{c:?}");
        }
        let sent = at(&clock);
        clock.advance(time::Duration::minutes(10));
        assert_eq!(Cadence::AsTheyCome.next_digest_at(Some(sent), at(&clock), min), Some(sent + 3600));
        assert_eq!(Cadence::Daily.next_digest_at(Some(sent), at(&clock), min), Some(sent + 86_400));
        assert_eq!(Cadence::Weekly.next_digest_at(Some(sent), at(&clock), min), Some(sent + 7 * 86_400));
        assert_eq!(Cadence::Pause.next_digest_at(Some(sent), at(&clock), min), None);
        assert_eq!(Cadence::Pause.next_digest_at(None, at(&clock), min), None);
        // Once the spacing has passed: now (a late digest is not pushed further out).
        clock.advance(time::Duration::days(2));
        assert_eq!(Cadence::Daily.next_digest_at(Some(sent), at(&clock), min), Some(at(&clock)));
        assert_eq!(Cadence::Weekly.next_digest_at(Some(sent), at(&clock), min), Some(sent + 7 * 86_400));
        // A holder minimum longer than a day wins over "daily".
        assert_eq!(Cadence::Daily.spacing_secs(2 * 86_400), Some(2 * 86_400));
        assert_eq!(Cadence::AsTheyCome.spacing_secs(u64::MAX), Some(i64::MAX));
        assert_eq!(Cadence::AsTheyCome.next_digest_at(Some(sent), at(&clock), u64::MAX), Some(i64::MAX));
    }

    #[test]
    fn keys_parse_back_and_old_records_read_as_they_come() {
        for c in Cadence::ALL {
            assert_eq!(Cadence::parse(c.key()), Some(c));
            assert_eq!(serde_json::to_value(c).unwrap(), Value::String(c.key().into()));
            for l in ["sk", "cs", "en"] {
                assert!(!c.label(l).is_empty());
            }
        }
        assert_eq!(Cadence::parse("Daily"), None);
        assert_eq!(Cadence::parse("hourly"), None);
        assert_eq!(Cadence::parse(""), None);
        assert_ne!(Cadence::Daily.label("sk"), Cadence::Daily.label("en"));
        #[derive(Deserialize)]
        struct Old {
            #[serde(default)]
            cadence: Cadence,
        }
        let old: Old = serde_json::from_str("{}").unwrap();
        assert_eq!(old.cadence, Cadence::AsTheyCome);
    }

    /// A record with every optional field set, as `IntentRecord`'s own encoder writes it.
    fn full_record() -> IntentRecord {
        let t = |s: &str| Stamp::of(clock::parse_rfc3339(s).unwrap());
        let sealed = |c: &str| Sealed { kid: "0a1b2c3d".into(), nonce: "bm9uY2U".into(), ct: c.into() };
        let mut criteria = Map::new();
        criteria.insert("make".into(), json!("Škoda"));
        criteria.insert("yearFrom".into(), json!(2015));
        let content = IntentContent {
            statement: "Hledám Škoda Octavia do 300000 Kč".into(),
            category: "vehicles".into(),
            criteria,
            area: AreaObject { country: "CZ".into(), regions: vec!["CZ-64".into()], place: None },
            budget: Some(Budget { max: Some(300_000.0), min: None, currency: "CZK".into() }),
            buy_by: Some("2027-01-31".into()),
            valid_until: t("2027-02-01T00:00:00Z"),
            visibility: Visibility::Private,
            language: "cs".into(),
        };
        IntentRecord {
            status: Status::Active,
            hidden_limit: Some(sealed("aGlkZGVu")),
            updated_at: t("2026-12-02T10:00:00.123456Z"),
            contact: Some(sealed("Y29udGFjdA")),
            consent: Some(ConsentRecord {
                at: t("2026-12-01T10:05:00Z"),
                text_version: "v1".into(),
                language: "cs".into(),
            }),
            confirm_expires_at: Some(t("2026-12-04T10:05:00Z")),
            confirmed_at: Some(t("2026-12-01T10:06:00Z")),
            ended_at: Some(t("2026-12-03T10:06:00Z")),
            match_count: 7,
            last_digest_at: Some(t("2026-12-02T11:00:00Z")),
            digest_cursor: 42,
            owner: Some("acc_1".into()),
            last_delivered: 43,
            person: Some("per_1".into()),
            cadence: Cadence::Weekly,
            ..IntentRecord::draft("int_1".into(), content, t("2026-12-01T10:00:00Z"), t("2026-12-02T10:00:00Z"))
        }
    }

    #[test]
    fn a_stored_intent_reads_back_field_for_field() {
        let rec = full_record();
        let stored = serde_json::to_value(&rec).unwrap();
        // One flat object: the content's fields beside the record's.
        assert_eq!(stored["statement"], "Hledám Škoda Octavia do 300000 Kč");
        assert_eq!(stored["buy_by"], "2027-01-31");
        assert!(stored.get("content").is_none(), "{stored}");
        let back: IntentRecord = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(back.content, rec.content);
        assert_eq!(serde_json::to_value(&back).unwrap(), stored);
        assert_eq!((back.status, back.match_count, back.cadence), (Status::Active, 7, Cadence::Weekly));
        assert_eq!(back.hidden_limit, rec.hidden_limit);
        assert_eq!(back.owner.as_deref(), Some("acc_1"));
    }

    #[test]
    fn a_record_of_an_older_isto_reads_with_the_defaults() {
        // Written before `owner`, `last_delivered`, `person` and `cadence` existed, and
        // without the optional fields an older encoder wrote as null.
        let mut stored = serde_json::to_value(full_record()).unwrap();
        let fields = stored.as_object_mut().unwrap();
        for later in ["owner", "last_delivered", "person", "cadence", "budget", "buy_by", "hidden_limit", "contact"] {
            fields.remove(later);
        }
        // A field of a newer isto is ignored.
        fields.insert("later_field".into(), json!({"x": 1}));
        let old: IntentRecord = serde_json::from_value(stored).unwrap();
        assert_eq!((old.owner.as_deref(), old.last_delivered, old.person.as_deref()), (None, 0, None));
        assert_eq!(old.cadence, Cadence::AsTheyCome);
        assert_eq!((old.content.budget.as_ref(), old.content.buy_by.as_deref()), (None, None));
        assert_eq!((old.hidden_limit.as_ref(), old.contact.as_ref()), (None, None));
        assert_eq!(old.content.statement, "Hledám Škoda Octavia do 300000 Kč");
        assert_eq!(old.digest_cursor, 42);
        // A record missing a required field is refused, naming it.
        let mut broken = serde_json::to_value(full_record()).unwrap();
        broken.as_object_mut().unwrap().remove("language");
        let e = serde_json::from_value::<IntentRecord>(broken).unwrap_err();
        assert_eq!(e.to_string(), "missing field `language`");
    }
}
