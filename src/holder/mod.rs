//! The holder's operations: the consent-link flow (seed §5, PROTOCOL.md §4), offers and
//! matching (§6), deliveries and digests (§4.5), expiry sweeps. Transport-free: the MCP
//! tools, web pages and admin commands all call these functions.
//!
//! Every state change is one store write transaction, so nothing is half-written and an
//! acknowledged change is durable. Statuses are computed at read time from the stored
//! status and the clock ([`IntentRecord::effective_status`]): a GET never writes, and a
//! sweep later persists what expiry already means.

use crate::clock::{self, Clock};
use crate::config::Settings;
use crate::crypto::{self, KeyRing, Sealed, Secret};
use crate::mail::{self, MailContent, MailJob};
use crate::matching::{self, IntentView, Params};
use crate::protocol::input::{self, Fields, InputError};
use crate::protocol::{AreaObject, Budget, Delivery, Intent, Offer, Status, Visibility};
use crate::store::{IntentDue, Reads, Store, StoreError, Tx};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use time::OffsetDateTime;

pub mod buyer;
#[cfg(test)]
mod sweep_tests;

/// Bytes of randomness in intentCode and the page tokens (160 bits ≥ the seed's 128).
pub const TOKEN_BYTES: usize = 20;

/// A failure of a holder operation, split by who should see what.
#[derive(Debug, thiserror::Error)]
pub enum HolderError {
    /// Bad input; the message names the field and rule.
    #[error("{0}")]
    Input(#[from] InputError),
    /// Unknown intent, or a code/token that does not fit: one indistinguishable answer.
    #[error("not_found: no intent for this code")]
    NotFound,
    /// The action is not possible in the intent's current state (message says why).
    #[error("{0}")]
    State(String),
    /// Storage failure (logged, never shown in detail).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Key failure (logged, never shown in detail).
    #[error(transparent)]
    Crypto(#[from] crypto::CryptoError),
    /// Full-text index failure (logged, never shown in detail).
    #[error("offer index: {0}")]
    Index(String),
}

fn index_error(e: crate::catalogue::index::IndexError) -> HolderError {
    HolderError::Index(e.to_string())
}

impl HolderError {
    /// Whether this is an internal failure (to be logged, and answered generically).
    pub fn is_internal(&self) -> bool {
        matches!(self, Self::Store(_) | Self::Crypto(_) | Self::Index(_))
    }
}

type Result<T, E = HolderError> = std::result::Result<T, E>;

/// Consent given on the holder's page (PROTOCOL.md §4.2).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConsentRecord {
    /// When, RFC 3339.
    pub at: String,
    /// Version (hash prefix) of the consent text shown.
    pub text_version: String,
    /// Language of the consent text shown.
    pub language: String,
}

/// An intent as stored. Contact and hidden limit are sealed; tokens live only as hashes
/// in the `tokens` table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IntentRecord {
    /// `int_...`.
    pub id: String,
    /// Stored status (see [`IntentRecord::effective_status`]).
    pub status: Status,
    /// The buyer's words.
    pub statement: String,
    /// Category key.
    pub category: String,
    /// Criteria without `category`.
    pub criteria: Map<String, Value>,
    /// Normalised area.
    pub area: AreaObject,
    /// Visible budget.
    pub budget: Option<Budget>,
    /// Sealed hidden limit (decimal string), in the budget's currency.
    pub hidden_limit: Option<Sealed>,
    /// `YYYY-MM-DD`.
    pub buy_by: Option<String>,
    /// RFC 3339.
    pub valid_until: String,
    /// Visibility.
    pub visibility: Visibility,
    /// BCP 47 tag.
    pub language: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
    /// When a draft lapses without consent, RFC 3339.
    pub draft_expires_at: String,
    /// Sealed e-mail address (after consent; erased after retention).
    pub contact: Option<Sealed>,
    /// Consent record.
    pub consent: Option<ConsentRecord>,
    /// Deadline of the e-mail confirmation, RFC 3339.
    pub confirm_expires_at: Option<String>,
    /// When the e-mail was confirmed.
    pub confirmed_at: Option<String>,
    /// When it became expired or withdrawn.
    pub ended_at: Option<String>,
    /// Number of deliveries.
    pub match_count: u64,
    /// Unix seconds of the last digest sent.
    pub last_digest_at: Option<i64>,
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
}

pub(crate) fn ts(s: &str) -> OffsetDateTime {
    clock::parse_rfc3339(s).unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

impl IntentRecord {
    /// The status at `now`: stored status, with expiry applied (drafts after their
    /// deadline, unconfirmed after 72 h, active after validUntil).
    pub fn effective_status(&self, now: OffsetDateTime) -> Status {
        match self.status {
            Status::AwaitingConsent if now > ts(&self.draft_expires_at) => Status::Expired,
            Status::AwaitingEmailConfirmation if self.confirm_expires_at.as_deref().is_some_and(|t| now > ts(t)) => {
                Status::Expired
            }
            Status::Active if now > ts(&self.valid_until) => Status::Expired,
            s => s,
        }
    }

    /// When [`IntentRecord::effective_status`] next changes by itself, by the same rules:
    /// the draft deadline while awaiting consent, the confirmation deadline (if any)
    /// while awaiting the e-mail confirmation, validUntil while active; `None` once
    /// ended. The status changes at every instant strictly after the time returned.
    pub fn next_status_change(&self) -> Option<OffsetDateTime> {
        match self.status {
            Status::AwaitingConsent => Some(ts(&self.draft_expires_at)),
            Status::AwaitingEmailConfirmation => self.confirm_expires_at.as_deref().map(ts),
            Status::Active => Some(ts(&self.valid_until)),
            Status::Expired | Status::Withdrawn => None,
        }
    }

    /// The record's entry in the store's expiry index, which [`Holder::sweep`] reads:
    /// its next status change and, once ended while still holding a contact, when it
    /// ended (the contact is erased `contact_retention_days` later). Unix µs, floored.
    pub fn sweep_due(&self) -> IntentDue {
        let contact_ended = match (&self.contact, &self.ended_at) {
            (Some(_), Some(e)) if self.status.is_final() => Some(floor_micros(ts(e))),
            _ => None,
        };
        IntentDue { status_change: self.next_status_change().map(floor_micros), contact_ended }
    }

    /// The public view (PROTOCOL.md §2 Intent): no contact, no hidden limit value.
    pub fn to_intent(&self, now: OffsetDateTime) -> Intent {
        let mut criteria = self.criteria.clone();
        criteria.insert("category".into(), Value::String(self.category.clone()));
        Intent {
            id: self.id.clone(),
            status: self.effective_status(now),
            statement: self.statement.clone(),
            category: self.category.clone(),
            criteria,
            area: self.area.clone(),
            budget: self.budget.clone(),
            has_hidden_limit: self.hidden_limit.is_some(),
            buy_by: self.buy_by.clone(),
            valid_until: self.valid_until.clone(),
            visibility: self.visibility,
            language: self.language.clone(),
            created_at: self.created_at.clone(),
            updated_at: self.updated_at.clone(),
            extensions: json!({"matchCount": self.match_count}),
        }
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
    /// The `--full` import run that last wrote it (see [`Holder::withdraw_vanished`]).
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

/// A validated `intent_publish_intent` input (PROTOCOL.md §3).
#[derive(Debug, Clone)]
pub struct PublishInput {
    statement: String,
    category: String,
    criteria: Map<String, Value>,
    area: AreaObject,
    budget: Option<Budget>,
    hidden_limit: Option<f64>,
    buy_by: Option<String>,
    valid_until: OffsetDateTime,
    visibility: Visibility,
    language: String,
}

/// The `/mcp` publish result (PROTOCOL.md §3).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishResult {
    /// The draft.
    pub intent: Intent,
    /// The caller's secret code.
    pub intent_code: String,
    /// The holder page where the person consents.
    pub consent_url: String,
    /// When the draft lapses.
    pub expires_at: String,
}

/// What the consent page shows.
#[derive(Debug, Clone)]
pub struct ConsentView {
    /// The intent (public view).
    pub intent: Intent,
    /// Whether consent can still be given.
    pub open: bool,
}

/// What the code holder's results page shows.
#[derive(Debug, Clone)]
pub struct ResultsView {
    /// The intent.
    pub intent: Intent,
    /// Deliveries, newest first.
    pub deliveries: Vec<Delivery>,
}

/// Outcome of a consent submission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsentOutcome {
    /// Recorded; a confirmation e-mail is queued.
    Recorded,
    /// The same address consented before; nothing new was queued.
    Repeated,
    /// Someone already consented on this link (first come, seed §5.3).
    Taken,
    /// This address was sent too many confirmation e-mails lately (nothing recorded).
    Throttled,
    /// The draft lapsed or was withdrawn.
    Closed,
}

/// Outcome of a confirmation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfirmOutcome {
    /// The intent is now active.
    Activated,
    /// It already was.
    AlreadyActive,
    /// Expired or withdrawn.
    Closed,
}

/// The holder: settings, store, keys and clock, shared by every transport.
pub struct Holder {
    /// Effective settings.
    pub settings: Settings,
    /// The store.
    pub store: Store,
    /// Sealing keys.
    pub keys: KeyRing,
    /// The clock.
    pub clock: Arc<dyn Clock>,
    /// Consent texts.
    pub consent: mail::ConsentTexts,
    /// Woken when mail or digests may be due.
    pub wake: Arc<tokio::sync::Notify>,
    /// Held by the mail worker from its last check that a job still exists until the
    /// job is sent, and by a withdrawal around its transaction: a withdrawal that has
    /// returned has no mail of its intent in flight, and none is sent afterwards.
    pub send_lock: Arc<tokio::sync::Mutex<()>>,
    /// The standing-intent matching engine over the active intents (PROTOCOL.md §6).
    pub engine: crate::matching::engine::Engine,
    /// The full-text offer index, built on first use (see [`Holder::offer_index`]).
    index: std::sync::Mutex<Option<Arc<crate::catalogue::index::OfferIndex>>>,
    /// Where the index lives (`None`: in memory).
    index_dir: Option<std::path::PathBuf>,
    /// Held across a catalogue write and its index update, so the index applies
    /// catalogue changes in commit order.
    catalogue_lock: std::sync::Mutex<()>,
    /// Recent confirmation e-mails per address hash (unix seconds), so that nobody can
    /// make the holder mail an address over and over.
    consent_sent: std::sync::Mutex<std::collections::HashMap<String, Vec<i64>>>,
}

/// Confirmation e-mails one address may receive per hour.
pub const CONSENTS_PER_ADDRESS_PER_HOUR: usize = 5;

impl std::fmt::Debug for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Holder")
    }
}

pub(crate) fn micros(t: OffsetDateTime) -> i64 {
    (t.unix_timestamp_nanos() / 1000) as i64
}

/// `t` in unix µs, rounded down (also before 1970): a time strictly after `t` is at or
/// after this microsecond, which is what the expiry index compares.
fn floor_micros(t: OffsetDateTime) -> i64 {
    t.unix_timestamp_nanos().div_euclid(1000) as i64
}

fn from_micros(m: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(m) * 1000).unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

impl Holder {
    /// Assembles a holder with an in-memory offer index; loads the active intents into
    /// the matching engine.
    pub fn new(settings: Settings, store: Store, keys: KeyRing, clock: Arc<dyn Clock>) -> Self {
        Self::with_index_dir(settings, store, keys, clock, None)
    }

    /// As [`Holder::new`], with the offer index kept in `index_dir` (`DATA_DIR/index`)
    /// and caught up at first use when its generation lags the store's.
    pub fn with_index_dir(
        settings: Settings,
        store: Store,
        keys: KeyRing,
        clock: Arc<dyn Clock>,
        index_dir: Option<std::path::PathBuf>,
    ) -> Self {
        let consent = mail::ConsentTexts::load(&settings.consent_dir());
        let engine = crate::matching::engine::Engine::new(crate::matching::engine::EngineParams {
            min_should_match: settings.min_should_match,
            default_currency: settings.default_currency.clone(),
            rates: settings.rates.clone(),
        });
        let h = Self {
            engine,
            index: std::sync::Mutex::new(None),
            index_dir,
            catalogue_lock: std::sync::Mutex::new(()),
            settings,
            store,
            keys,
            clock,
            consent,
            wake: Arc::new(tokio::sync::Notify::new()),
            send_lock: Arc::new(tokio::sync::Mutex::new(())),
            consent_sent: std::sync::Mutex::new(std::collections::HashMap::new()),
        };
        if let Err(e) = h.load_engine() {
            tracing::error!(error = %e, "loading active intents into the matching engine failed");
        }
        h
    }

    /// Loads every active intent into the matching engine (start-up).
    fn load_engine(&self) -> Result<usize> {
        let now = self.now();
        let recs: Vec<IntentRecord> = self.store.read(|rx| -> Result<Vec<IntentRecord>> {
            let mut out = Vec::new();
            for id in rx.active_ids()? {
                if let Some(r) = rx.intent::<IntentRecord>(&id)? {
                    out.push(r);
                }
            }
            Ok(out)
        })?;
        let mut n = 0;
        for rec in recs.iter().filter(|r| r.effective_status(now) == Status::Active) {
            self.engine.upsert(self.engine_intent(rec)?);
            n += 1;
        }
        Ok(n)
    }

    fn engine_intent(&self, rec: &IntentRecord) -> Result<crate::matching::engine::EngineIntent> {
        Ok(crate::matching::engine::EngineIntent {
            id: rec.id.clone(),
            category: rec.category.clone(),
            criteria: rec.criteria.clone(),
            area: rec.area.clone(),
            budget: rec.budget.clone(),
            hidden_limit: self.hidden_limit(rec)?,
            statement: rec.statement.clone(),
        })
    }

    /// Stores an intent record and keeps the active set and the matching engine in step
    /// (the engine is updated before the commit: a stale entry can only cause a candidate
    /// that the in-transaction status check then drops).
    pub(crate) fn put_intent_tx(&self, tx: &mut Tx<'_>, rec: &IntentRecord, active: bool) -> Result<()> {
        tx.put_intent(&rec.id, rec, active, rec.sweep_due())?;
        if active {
            self.engine.upsert(self.engine_intent(rec)?);
        } else {
            self.engine.remove(&rec.id);
        }
        Ok(())
    }

    /// The full-text offer index, opened (and rebuilt from the store when its generation
    /// lags) on first use.
    ///
    /// # Errors
    /// Index or storage errors (internal).
    pub fn offer_index(&self) -> Result<Arc<crate::catalogue::index::OfferIndex>> {
        let mut slot = self.index.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(i) = slot.as_ref() {
            return Ok(i.clone());
        }
        let idx = crate::catalogue::index::OfferIndex::open(self.index_dir.as_deref()).map_err(index_error)?;
        let (generation, offers) = self.store.read(|rx| -> Result<(u64, Vec<OfferRecord>)> {
            let g = rx.offers_generation()?;
            let offers = if idx.generation() == Some(g) { Vec::new() } else { rx.all_offers()? };
            Ok((g, offers))
        })?;
        if idx.generation() != Some(generation) {
            let n = idx
                .rebuild(
                    offers.into_iter().filter(|o| o.active && o.offer.source.kind == "catalogue").map(|o| o.offer),
                    generation,
                )
                .map_err(index_error)?;
            tracing::info!(offers = n, "offer index rebuilt from the store");
        }
        let idx = Arc::new(idx);
        *slot = Some(idx.clone());
        Ok(idx)
    }

    /// Applies committed catalogue changes to the index when it is open (otherwise it
    /// is rebuilt at first use).
    fn index_apply(&self, upserts: &[Offer], removed: &[String], generation: u64) {
        let slot = self.index.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(i) = slot.as_ref() {
            if let Err(e) = i.apply(upserts, removed, generation) {
                tracing::error!(error = %e, "offer index update failed; it is rebuilt at the next start");
            }
        }
    }

    /// Matches the catalogue against one intent inside a write transaction: candidate
    /// offers from the index (a superset of the matches), then the exact §6 check.
    pub(crate) fn match_catalogue_tx(
        &self,
        tx: &mut Tx<'_>,
        rec: &mut IntentRecord,
        now: OffsetDateTime,
    ) -> Result<u64> {
        let terms = matching::statement_terms(&rec.statement);
        let ids = self
            .offer_index()?
            .candidates_for_intent_min(&rec.category, &rec.area, &terms, self.settings.min_should_match)
            .map_err(index_error)?;
        let mut offers = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(o) = tx.offer::<OfferRecord>(&id)? {
                offers.push(o);
            }
        }
        let sellers = disabled_sellers(tx)?;
        self.match_intent_tx(tx, rec, &offers, &sellers, now)
    }

    pub(crate) fn now(&self) -> OffsetDateTime {
        self.clock.now()
    }

    pub(crate) fn params(&self) -> Params<'_> {
        Params {
            min_should_match: self.settings.min_should_match,
            default_currency: &self.settings.default_currency,
            rates: &self.settings.rates,
        }
    }

    pub(crate) fn currencies(&self) -> Vec<String> {
        self.settings.rates.keys().cloned().collect()
    }

    /// Validates `intent_publish_intent` arguments (PROTOCOL.md §3). There is no
    /// contact field; any unknown property is refused.
    ///
    /// # Errors
    /// [`HolderError::Input`] naming the field and rule.
    pub fn parse_publish(&self, args: &Value) -> Result<PublishInput> {
        let now = self.now();
        let mut f = Fields::new(args, "")?;
        let statement = f.req_str("statement", input::STATEMENT_MAX)?;
        let (cat, criteria) = match f.get("criteria") {
            Some(c) => input::parse_criteria(c)?,
            None => (None, Map::new()),
        };
        let area = match f.get("area") {
            Some(a) => input::parse_area(a, "area")?,
            None => {
                return Err(InputError(
                    "area is required (a country, region or place name, e.g. \"SK-BL\" or \"Brno\")".into(),
                )
                .into())
            }
        };
        let currencies = self.currencies();
        let budget = f
            .get("budget")
            .map(|b| input::parse_budget(b, &self.settings.default_currency, &currencies))
            .transpose()?;
        let hidden_limit = f.opt_positive("hiddenLimit")?;
        let buy_by = match f.get("buyBy") {
            None => None,
            Some(Value::String(s)) => {
                let d = clock::parse_date(s).map_err(|m| InputError(format!("buyBy {m}")))?;
                if d < now.date() {
                    return Err(InputError("buyBy must not be in the past".into()).into());
                }
                Some(clock::date_string(d))
            }
            Some(_) => return Err(InputError("buyBy must be a string such as 2027-01-31".into()).into()),
        };
        let max_valid = now + time::Duration::days(i64::from(self.settings.max_validity_days));
        let valid_until = match f.get("validUntil") {
            None => now + time::Duration::days(i64::from(self.settings.default_validity_days)),
            Some(Value::String(s)) => {
                let t = clock::parse_rfc3339(s).map_err(|m| InputError(format!("validUntil {m}")))?;
                if t <= now {
                    return Err(InputError("validUntil must be in the future".into()).into());
                }
                if t > max_valid {
                    return Err(InputError(format!(
                        "validUntil must be at most {} days from now",
                        self.settings.max_validity_days
                    ))
                    .into());
                }
                t
            }
            Some(_) => return Err(InputError("validUntil must be an RFC 3339 string".into()).into()),
        };
        let visibility = f.get("visibility").map(input::parse_visibility).transpose()?.unwrap_or_default();
        f.finish(". Contact data is never accepted here: the person enters it on the holder's consent page.")?;
        let category = match cat {
            Some(c) => c,
            None => input::classify(&statement).map(str::to_owned).ok_or_else(|| {
                InputError(
                    "criteria.category is required: the statement does not say whether it is vehicles or property"
                        .into(),
                )
            })?,
        };
        input::check_criteria_keys(&category, &criteria)?;
        if let (Some(h), Some(b)) = (hidden_limit, &budget) {
            if let Some(min) = b.min {
                if h < min {
                    return Err(InputError("hiddenLimit must not be below budget.min".into()).into());
                }
            }
        }
        let language = input::detect_language(&statement, &self.settings.default_language);
        Ok(PublishInput {
            statement,
            category,
            criteria,
            area,
            budget,
            hidden_limit,
            buy_by,
            valid_until,
            visibility,
            language,
        })
    }

    /// Stores a draft (seed §5.1–5.2): status `awaiting_consent`, not matched, expiring
    /// after the draft TTL; returns the intentCode and consentUrl (each a fresh 160-bit
    /// token, stored only as a hash).
    ///
    /// # Errors
    /// Storage errors.
    pub fn publish_draft(&self, p: PublishInput) -> Result<PublishResult> {
        let now = self.now();
        let id = crypto::new_id("int_");
        let code = crypto::new_token(TOKEN_BYTES);
        let consent = crypto::new_token(TOKEN_BYTES);
        let expires = now + time::Duration::seconds(self.settings.draft_ttl_secs as i64);
        let rec = IntentRecord {
            id: id.clone(),
            status: Status::AwaitingConsent,
            statement: p.statement,
            category: p.category,
            criteria: p.criteria,
            area: p.area,
            budget: p.budget,
            hidden_limit: p.hidden_limit.map(|h| self.keys.seal_str(&h.to_string())).transpose()?,
            buy_by: p.buy_by,
            valid_until: clock::rfc3339(p.valid_until),
            visibility: p.visibility,
            language: p.language,
            created_at: clock::rfc3339(now),
            updated_at: clock::rfc3339(now),
            draft_expires_at: clock::rfc3339(expires),
            contact: None,
            consent: None,
            confirm_expires_at: None,
            confirmed_at: None,
            ended_at: None,
            match_count: 0,
            last_digest_at: None,
            digest_cursor: 0,
            last_delivered: 0,
            owner: None,
        };
        self.store.write(|tx| -> Result<()> {
            self.put_intent_tx(tx, &rec, false)?;
            tx.put_token(&crypto::token_hash("code", code.expose()), &id)?;
            tx.put_token(&crypto::token_hash("consent", consent.expose()), &id)?;
            Ok(())
        })?;
        tracing::info!(intent = %id, category = %rec.category, "draft published");
        Ok(PublishResult {
            intent: rec.to_intent(now),
            intent_code: code.0,
            consent_url: format!("{}/consent/{}", self.settings.public_url.base, consent.expose()),
            expires_at: clock::rfc3339(expires),
        })
    }

    pub(crate) fn by_token(&self, kind: &str, token: &str) -> Result<IntentRecord> {
        if token.is_empty() || token.len() > 200 {
            return Err(HolderError::NotFound);
        }
        let hash = crypto::token_hash(kind, token);
        self.store.read(|rx| -> Result<IntentRecord> {
            let id = rx.token(&hash)?.ok_or(HolderError::NotFound)?;
            rx.intent(&id)?.ok_or(HolderError::NotFound)
        })
    }

    /// Resolves an intentCode (and optional id that must match) to its intent
    /// (seed §5.4).
    ///
    /// # Errors
    /// [`HolderError::NotFound`] for an unknown code or a mismatching id.
    pub fn intent_by_code(&self, code: &str, id: Option<&str>) -> Result<IntentRecord> {
        let rec = self.by_token("code", code)?;
        if id.is_some_and(|i| i != rec.id) {
            return Err(HolderError::NotFound);
        }
        Ok(rec)
    }

    /// The public view of the code's intent (`intent_get_intent` on `/mcp`).
    ///
    /// # Errors
    /// [`HolderError::NotFound`].
    pub fn get_by_code(&self, code: &str, id: Option<&str>) -> Result<Intent> {
        Ok(self.intent_by_code(code, id)?.to_intent(self.now()))
    }

    /// Withdraws in one transaction: status `withdrawn`, out of the active set, pending
    /// digest and queued mail for it cancelled (PROTOCOL.md §3: no delivery, e-mail or
    /// listing after it returns). Idempotent.
    pub(crate) fn withdraw_id(&self, id: &str) -> Result<()> {
        let now = self.now();
        // Called on blocking threads (tool calls and pages use spawn_blocking).
        let _in_flight = self.send_lock.blocking_lock();
        self.store.write(|tx| -> Result<()> {
            let mut rec: IntentRecord = tx.intent(id)?.ok_or(HolderError::NotFound)?;
            if rec.status == Status::Withdrawn {
                return Ok(());
            }
            rec.status = Status::Withdrawn;
            rec.ended_at = Some(clock::rfc3339(now));
            rec.updated_at = clock::rfc3339(now);
            self.put_intent_tx(tx, &rec, false)?;
            tx.set_digest_due(id, None)?;
            for (seq, job) in tx.outbox::<MailJob>()? {
                if job.intent_id.as_deref() == Some(id) {
                    tx.remove_mail(seq)?;
                }
            }
            Ok(())
        })?;
        tracing::info!(intent = %id, "intent withdrawn");
        Ok(())
    }

    /// `intent_withdraw_intent` on `/mcp`.
    ///
    /// # Errors
    /// [`HolderError::NotFound`].
    pub fn withdraw_by_code(&self, code: &str, id: Option<&str>) -> Result<()> {
        let rec = self.intent_by_code(code, id)?;
        self.withdraw_id(&rec.id)
    }

    /// Deliveries of an intent after `since` (exclusive), oldest first, at most `limit`,
    /// and the cursor for the next call (PROTOCOL.md §3 intent_list_matches).
    ///
    /// # Errors
    /// Storage errors.
    pub fn deliveries(
        &self,
        id: &str,
        since: Option<OffsetDateTime>,
        limit: usize,
    ) -> Result<(Vec<Delivery>, Option<String>)> {
        let after = since.map(micros).unwrap_or(0);
        self.store.read(|rx| -> Result<_> {
            let out = with_offers(rx, rx.deliveries(id, after, limit)?)?;
            let next = out.last().map(|d| d.delivered_at.clone());
            Ok((out, next))
        })
    }

    /// `intent_list_matches` on `/mcp` (seed §5.6): pull, by code.
    ///
    /// # Errors
    /// [`HolderError::NotFound`], bad `since`.
    pub fn list_matches_by_code(&self, args: &Value) -> Result<(Vec<Delivery>, Option<String>)> {
        let mut f = Fields::new(args, "")?;
        let code = f.req_str("intentCode", 200)?;
        let id = f.opt_str("intent", 64)?;
        let since = f
            .opt_str("since", 64)?
            .map(|s| clock::parse_rfc3339(&s).map_err(|m| InputError(format!("since {m}"))))
            .transpose()?;
        let limit = f.opt_int("limit", 1, 100)?.unwrap_or(50) as usize;
        f.finish("")?;
        let rec = self.intent_by_code(&code, id.as_deref())?;
        let (matches, next) = self.deliveries(&rec.id, since, limit)?;
        // With no new deliveries the cursor stays where the caller was.
        let next = next.or_else(|| since.map(clock::rfc3339_micros));
        Ok((matches, next))
    }

    /// What the consent page shows for a consent token.
    ///
    /// # Errors
    /// [`HolderError::NotFound`].
    pub fn consent_view(&self, token: &str) -> Result<ConsentView> {
        let rec = self.by_token("consent", token)?;
        let now = self.now();
        Ok(ConsentView { open: rec.effective_status(now) == Status::AwaitingConsent, intent: rec.to_intent(now) })
    }

    /// Records consent (PROTOCOL.md §4.2): first come, atomically; seals the e-mail,
    /// moves the intent to `awaiting_email_confirmation` and queues the confirmation
    /// e-mail (double opt-in) in the same transaction.
    ///
    /// # Errors
    /// [`HolderError::NotFound`]; [`HolderError::Input`] for a bad e-mail address.
    pub fn give_consent(&self, token: &str, email: &str, language: &str) -> Result<ConsentOutcome> {
        let email = validate_email(email)?;
        let rec = self.by_token("consent", token)?;
        let now = self.now();
        let address_key = crypto::token_hash("address", &email.to_ascii_lowercase());
        if !self.consent_allowed(&address_key, now.unix_timestamp(), false) {
            return Ok(ConsentOutcome::Throttled);
        }
        let text = self.consent.get(language);
        let confirm = crypto::new_token(TOKEN_BYTES);
        let manage = crypto::new_token(TOKEN_BYTES);
        let base = &self.settings.public_url.base;
        let content = mail::confirmation(
            &self.settings,
            &email,
            &rec.to_intent(now),
            &format!("{base}/confirm/{}", confirm.expose()),
            &format!("{base}/withdraw/{}", manage.expose()),
            &format!("{base}/unsubscribe/{}", manage.expose()),
        );
        let outcome = self.store.write(|tx| -> Result<ConsentOutcome> {
            let mut rec: IntentRecord = tx.intent(&rec.id)?.ok_or(HolderError::NotFound)?;
            match rec.effective_status(now) {
                Status::AwaitingConsent => {}
                Status::AwaitingEmailConfirmation | Status::Active => {
                    // The same person submitting again (double click, reload) is not a
                    // takeover: answer as before, queue nothing new.
                    let same = open_contact(&self.keys, &rec)?.is_some_and(|c| c.expose().eq_ignore_ascii_case(&email));
                    return Ok(if same { ConsentOutcome::Repeated } else { ConsentOutcome::Taken });
                }
                _ => return Ok(ConsentOutcome::Closed),
            }
            rec.status = Status::AwaitingEmailConfirmation;
            rec.contact = Some(self.keys.seal_str(&email)?);
            rec.consent = Some(ConsentRecord {
                at: clock::rfc3339(now),
                text_version: text.version.clone(),
                language: text.language.clone(),
            });
            rec.confirm_expires_at =
                Some(clock::rfc3339(now + time::Duration::seconds(self.settings.confirm_ttl_secs as i64)));
            rec.updated_at = clock::rfc3339(now);
            self.put_intent_tx(tx, &rec, false)?;
            tx.put_token(&crypto::token_hash("confirm", confirm.expose()), &rec.id)?;
            tx.put_token(&crypto::token_hash("manage", manage.expose()), &rec.id)?;
            self.enqueue(tx, Some(&rec.id), &content)?;
            Ok(ConsentOutcome::Recorded)
        })?;
        if outcome == ConsentOutcome::Recorded {
            self.consent_allowed(&address_key, now.unix_timestamp(), true);
            tracing::info!(intent = %rec.id, "consent recorded; confirmation e-mail queued");
            self.wake.notify_one();
        }
        Ok(outcome)
    }

    /// Whether `address_key` may get another confirmation e-mail now; with `record`,
    /// counts one.
    fn consent_allowed(&self, address_key: &str, now: i64, record: bool) -> bool {
        let Ok(mut map) = self.consent_sent.lock() else { return true };
        if map.len() > 100_000 {
            map.retain(|_, v| v.iter().any(|t| now - t < 3600));
        }
        let times = map.entry(address_key.to_owned()).or_default();
        times.retain(|t| now - t < 3600);
        if record {
            times.push(now);
        }
        times.len() < CONSENTS_PER_ADDRESS_PER_HOUR || record
    }

    pub(crate) fn enqueue(&self, tx: &mut Tx<'_>, intent: Option<&str>, content: &MailContent) -> Result<()> {
        let job =
            MailJob::seal(&self.keys, intent, content, self.now().unix_timestamp(), &self.settings.public_url.host)?;
        tx.enqueue_mail(&job)?;
        Ok(())
    }

    /// The intent behind a confirmation token (for the page; never changes state).
    ///
    /// # Errors
    /// [`HolderError::NotFound`].
    pub fn confirm_view(&self, token: &str) -> Result<Intent> {
        Ok(self.by_token("confirm", token)?.to_intent(self.now()))
    }

    /// Confirms the e-mail (POST only): `awaiting_email_confirmation → active`, then
    /// matches the catalogue for the intent, all in one transaction (PROTOCOL.md §4.3).
    ///
    /// # Errors
    /// [`HolderError::NotFound`], storage errors.
    pub fn confirm(&self, token: &str) -> Result<ConfirmOutcome> {
        let rec = self.by_token("confirm", token)?;
        let now = self.now();
        let out = self.store.write(|tx| -> Result<(ConfirmOutcome, u64)> {
            let mut rec: IntentRecord = tx.intent(&rec.id)?.ok_or(HolderError::NotFound)?;
            match rec.effective_status(now) {
                Status::AwaitingEmailConfirmation => {}
                Status::Active => return Ok((ConfirmOutcome::AlreadyActive, 0)),
                _ => return Ok((ConfirmOutcome::Closed, 0)),
            }
            rec.status = Status::Active;
            rec.confirmed_at = Some(clock::rfc3339(now));
            rec.updated_at = clock::rfc3339(now);
            let n = self.match_catalogue_tx(tx, &mut rec, now)?;
            self.put_intent_tx(tx, &rec, true)?;
            Ok((ConfirmOutcome::Activated, n))
        })?;
        if out.0 == ConfirmOutcome::Activated {
            tracing::info!(intent = %rec.id, delivered = out.1, "intent confirmed and active");
            self.wake.notify_one();
        }
        Ok(out.0)
    }

    /// The results page of a manage token (from an e-mail): the intent and its
    /// deliveries, newest first (at most 100).
    ///
    /// # Errors
    /// [`HolderError::NotFound`].
    pub fn results_view(&self, token: &str) -> Result<ResultsView> {
        let rec = self.by_token("manage", token)?;
        let deliveries = self.store.read(|rx| with_offers(rx, rx.latest_deliveries(&rec.id, 100)?))?;
        Ok(ResultsView { intent: rec.to_intent(self.now()), deliveries })
    }

    /// The intent behind a manage token (withdraw pages), without its deliveries.
    ///
    /// # Errors
    /// [`HolderError::NotFound`].
    pub fn manage_view(&self, token: &str) -> Result<Intent> {
        Ok(self.by_token("manage", token)?.to_intent(self.now()))
    }

    /// Withdraws through a manage token (withdraw page POST, RFC 8058 one-click).
    ///
    /// # Errors
    /// [`HolderError::NotFound`].
    pub fn withdraw_by_manage(&self, token: &str) -> Result<()> {
        let rec = self.by_token("manage", token)?;
        self.withdraw_id(&rec.id)
    }

    pub(crate) fn hidden_limit(&self, rec: &IntentRecord) -> Result<Option<f64>> {
        match &rec.hidden_limit {
            None => Ok(None),
            Some(s) => Ok(self.keys.open_str(s)?.expose().parse::<f64>().ok()),
        }
    }

    /// Matches `offers` against one intent and records new deliveries (once per pair),
    /// scheduling its digest. Returns the number of new deliveries.
    pub(crate) fn match_intent_tx(
        &self,
        tx: &mut Tx<'_>,
        rec: &mut IntentRecord,
        offers: &[OfferRecord],
        disabled: &std::collections::HashSet<String>,
        now: OffsetDateTime,
    ) -> Result<u64> {
        let hidden = self.hidden_limit(rec)?;
        let view = IntentView {
            category: &rec.category,
            criteria: &rec.criteria,
            area: &rec.area,
            budget: rec.budget.as_ref(),
            hidden_limit: hidden,
            statement: &rec.statement,
        };
        let params = self.params();
        let mut hits = Vec::new();
        for o in offers {
            let valid = offer_valid(o, disabled, now);
            if let Some(hit) = matching::check(&view, &o.offer, valid, &params) {
                hits.push((o.offer.id.as_str(), hit));
            }
        }
        self.record_hits_tx(tx, rec, &hits, now)
    }

    /// Records deliveries of `hits` (offer id, §6 hit) to one intent, once per pair, in
    /// strictly increasing delivery times, and schedules its digest. Returns how many
    /// were new.
    pub(crate) fn record_hits_tx(
        &self,
        tx: &mut Tx<'_>,
        rec: &mut IntentRecord,
        hits: &[(&str, matching::Hit)],
        now: OffsetDateTime,
    ) -> Result<u64> {
        let mut n = 0;
        let mut m = micros(now).max(rec.last_delivered + 1);
        for (offer_id, hit) in hits {
            let ext = json!({"score": hit.score, "reasons": hit.reasons});
            if tx.put_delivery(&rec.id, offer_id, m, &ext)? {
                n += 1;
                rec.last_delivered = m;
                m += 1; // distinct, ordered delivery times
            }
        }
        if n > 0 {
            rec.match_count += n;
            let interval = self.settings.digest_min_interval_secs as i64;
            let due = rec.last_digest_at.map(|l| l + interval).unwrap_or(0).max(now.unix_timestamp());
            if tx.digest_due_at(&rec.id)?.is_none() {
                tx.set_digest_due(&rec.id, Some(due))?;
            }
        }
        Ok(n)
    }

    /// Stores a batch of catalogue rows in one transaction (new offers get ids; rows
    /// whose (seller, ref) exists update that offer in place) and matches them against
    /// every active intent (PROTOCOL.md §6: new offers reach standing intents).
    ///
    /// # Errors
    /// Storage errors; nothing of the batch is stored then.
    pub fn import_offers(&self, rows: Vec<OfferInput>) -> Result<ImportCounts> {
        self.import_offers_run(rows, None)
    }

    /// As [`Holder::import_offers`], marking every stored offer with the full-feed run
    /// `run` so that [`Holder::withdraw_vanished`] can find the offers the feed no longer
    /// has.
    ///
    /// # Errors
    /// Storage errors; nothing of the batch is stored then.
    pub fn import_offers_run(&self, rows: Vec<OfferInput>, run: Option<&str>) -> Result<ImportCounts> {
        let now = self.now();
        let _catalogue = self.catalogue_lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (counts, offers, generation) = self.store.write(|tx| -> Result<(ImportCounts, Vec<Offer>, u64)> {
            let mut counts = ImportCounts::default();
            let mut changed = Vec::with_capacity(rows.len());
            for row in rows {
                let seller = ensure_seller(tx, &row.seller_name, row.seller_url.as_deref())?;
                let existing = match &row.reference {
                    Some(r) => tx.offer_by_ref(&seller.id, r)?,
                    None => None,
                };
                let (id, published_at) = match &existing {
                    Some(id) => {
                        let old: Option<OfferRecord> = tx.offer(id)?;
                        (id.clone(), old.map(|o| o.offer.published_at).unwrap_or_else(|| clock::rfc3339(now)))
                    }
                    None => (crypto::new_id("off_"), clock::rfc3339(now)),
                };
                let mut ext = Map::new();
                if let Some(r) = &row.reference {
                    ext.insert("ref".into(), Value::String(r.clone()));
                }
                let offer = Offer {
                    id: id.clone(),
                    source: crate::protocol::OfferSource {
                        kind: "catalogue".into(),
                        seller_id: seller.id.clone(),
                        url: row.url,
                    },
                    in_reply_to: None,
                    title: row.title,
                    description: row.description,
                    category: row.category,
                    attributes: row.attributes,
                    price: row.price,
                    area: row.area,
                    seller: crate::protocol::SellerPublic { id: seller.id.clone(), name: seller.name, url: seller.url },
                    published_at,
                    valid_until: row.valid_until,
                    extensions: Value::Object(ext),
                };
                let rec = OfferRecord { offer, active: true, import_run: run.map(str::to_owned) };
                tx.put_offer(&id, &rec, row.reference.as_deref().map(|r| (seller.id.as_str(), r)))?;
                if existing.is_some() {
                    counts.updated += 1;
                } else {
                    counts.created += 1;
                }
                changed.push(rec);
            }
            // Standing intents: the engine finds the intents each offer matches without
            // scanning them all; the status is checked again here.
            let disabled = disabled_sellers(tx)?;
            let mut by_intent: std::collections::BTreeMap<String, Vec<(&str, matching::Hit)>> = Default::default();
            for o in &changed {
                for (intent, hit) in self.engine.match_offer_indexed(&o.offer, offer_valid(o, &disabled, now)) {
                    by_intent.entry(intent).or_default().push((o.offer.id.as_str(), hit));
                }
            }
            for (id, hits) in by_intent {
                let Some(mut rec) = tx.intent::<IntentRecord>(&id)? else { continue };
                if rec.effective_status(now) != Status::Active {
                    continue;
                }
                let n = self.record_hits_tx(tx, &mut rec, &hits, now)?;
                if n > 0 {
                    counts.delivered += n;
                    self.put_intent_tx(tx, &rec, true)?;
                }
            }
            let generation = tx.bump_offers_generation()?;
            let offers: Vec<Offer> = changed.into_iter().map(|o| o.offer).collect();
            Ok((counts, offers, generation))
        })?;
        self.index_apply(&offers, &[], generation);
        drop(_catalogue);
        if counts.delivered > 0 {
            self.wake.notify_one();
        }
        Ok(counts)
    }

    /// Ends a full-feed import (`isto admin offers import --full`): every active
    /// catalogue offer of a seller that appears in run `run` but was not written by it
    /// vanished from the feed and is withdrawn (it no longer matches or shows in search).
    /// Sellers absent from the feed keep their offers. Returns the ids withdrawn.
    ///
    /// # Errors
    /// Storage errors; nothing is withdrawn then.
    pub fn withdraw_vanished(&self, run: &str) -> Result<Vec<String>> {
        let _catalogue = self.catalogue_lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (gone, generation) = self.store.write(|tx| -> Result<(Vec<String>, u64)> {
            let offers: Vec<OfferRecord> = tx.all_offers()?;
            let sellers: std::collections::HashSet<String> = offers
                .iter()
                .filter(|o| o.import_run.as_deref() == Some(run))
                .map(|o| o.offer.source.seller_id.clone())
                .collect();
            let mut gone = Vec::new();
            for mut o in offers {
                if o.active
                    && o.offer.source.kind == "catalogue"
                    && sellers.contains(&o.offer.source.seller_id)
                    && o.import_run.as_deref() != Some(run)
                {
                    o.active = false;
                    tx.put_offer(&o.offer.id.clone(), &o, None)?;
                    gone.push(o.offer.id);
                }
            }
            let generation = tx.bump_offers_generation()?;
            Ok((gone, generation))
        })?;
        self.index_apply(&[], &gone, generation);
        Ok(gone)
    }

    /// Sends what is due: builds digests for intents whose digest time has come (first
    /// one at once, later ones after the minimum interval) into the outbox. Returns the
    /// number of digests queued.
    ///
    /// # Errors
    /// Storage or key errors.
    pub fn queue_due_digests(&self) -> Result<u64> {
        let now = self.now();
        let due: Vec<(String, i64)> = self.store.read(|rx| rx.digests_due())?;
        let mut queued = 0;
        for (id, at) in due {
            if at > now.unix_timestamp() {
                continue;
            }
            let manage = crypto::new_token(TOKEN_BYTES);
            let base = self.settings.public_url.base.clone();
            let sent = self.store.write(|tx| -> Result<bool> {
                let Some(mut rec) = tx.intent::<IntentRecord>(&id)? else {
                    tx.set_digest_due(&id, None)?;
                    return Ok(false);
                };
                tx.set_digest_due(&id, None)?;
                if rec.effective_status(now) != Status::Active {
                    return Ok(false);
                }
                let Some(contact) = &rec.contact else { return Ok(false) };
                let rows: Vec<(i64, String, Value)> = tx.deliveries(&id, rec.digest_cursor, 50)?;
                if rows.is_empty() {
                    return Ok(false);
                }
                let mut offers = Vec::new();
                for (_, oid, _) in &rows {
                    if let Some(o) = tx.offer::<OfferRecord>(oid)? {
                        offers.push(o.offer);
                    }
                }
                let email = self.keys.open_str(contact)?;
                let content = mail::digest(
                    &self.settings,
                    email.expose(),
                    &rec.to_intent(now),
                    &offers,
                    &format!("{base}/results/{}", manage.expose()),
                    &format!("{base}/withdraw/{}", manage.expose()),
                    &format!("{base}/unsubscribe/{}", manage.expose()),
                );
                tx.put_token(&crypto::token_hash("manage", manage.expose()), &id)?;
                self.enqueue(tx, Some(&id), &content)?;
                rec.digest_cursor = rows.last().map(|r| r.0).unwrap_or(rec.digest_cursor);
                rec.last_digest_at = Some(now.unix_timestamp());
                if rows.len() == 50 {
                    tx.set_digest_due(&id, Some(now.unix_timestamp() + self.settings.digest_min_interval_secs as i64))?;
                }
                self.put_intent_tx(tx, &rec, true)?;
                Ok(true)
            })?;
            if sent {
                queued += 1;
                tracing::info!(intent = %id, "digest queued");
            }
        }
        Ok(queued)
    }

    /// Persists what time already means: expired drafts, unconfirmed and past-validity
    /// intents become `expired`; contact is erased `contact_retention_days` after an
    /// intent ended (PROTOCOL.md §4.6). Returns how many records changed.
    ///
    /// Reads only the intents that the store's expiry index names as due
    /// ([`IntentRecord::sweep_due`]), not every intent.
    ///
    /// # Errors
    /// Storage errors.
    pub fn sweep(&self) -> Result<u64> {
        let now = self.now();
        let retention = time::Duration::days(i64::from(self.settings.contact_retention_days));
        let ended_before = now.checked_sub(retention).map_or(i64::MIN, floor_micros);
        self.store.write(|tx| -> Result<u64> {
            let mut changed = 0;
            for id in tx.intents_due(floor_micros(now), ended_before)? {
                let Some(mut rec) = tx.intent::<IntentRecord>(&id)? else { continue };
                let eff = rec.effective_status(now);
                let mut dirty = false;
                if eff != rec.status {
                    rec.status = eff;
                    rec.ended_at = Some(clock::rfc3339(now));
                    dirty = true;
                    tx.set_digest_due(&rec.id, None)?;
                }
                if rec.status.is_final()
                    && rec.contact.is_some()
                    && rec.ended_at.as_deref().is_some_and(|e| ts(e) + retention < now)
                {
                    rec.contact = None;
                    dirty = true;
                }
                if dirty {
                    rec.updated_at = clock::rfc3339(now);
                    self.put_intent_tx(tx, &rec, rec.status == Status::Active)?;
                    changed += 1;
                } else {
                    // Not due after all (due within this microsecond, or entered as due
                    // by a migration): record its real times.
                    tx.set_intent_due(&rec.id, rec.sweep_due())?;
                }
            }
            Ok(changed)
        })
    }
}

/// Whether an offer may match (PROTOCOL.md §6): current, active, seller enabled.
fn offer_valid(o: &OfferRecord, disabled: &std::collections::HashSet<String>, now: OffsetDateTime) -> bool {
    o.active
        && !disabled.contains(&o.offer.source.seller_id)
        && o.offer.valid_until.as_deref().is_none_or(|v| ts(v) > now)
}

/// Turns delivery rows `(µs, offer id, extensions)` into Deliveries with their offers
/// (rows whose offer is gone are skipped).
pub(crate) fn with_offers(rx: &impl Reads, rows: Vec<(i64, String, Value)>) -> Result<Vec<Delivery>> {
    let mut out = Vec::with_capacity(rows.len());
    for (m, offer_id, ext) in rows {
        if let Some(o) = rx.offer::<OfferRecord>(&offer_id)? {
            out.push(Delivery { offer: o.offer, delivered_at: clock::rfc3339_micros(from_micros(m)), extensions: ext });
        }
    }
    Ok(out)
}

/// Ids of disabled sellers: their offers never match (PROTOCOL.md §6).
pub(crate) fn disabled_sellers(tx: &Tx<'_>) -> Result<std::collections::HashSet<String>> {
    Ok(tx.all_sellers::<SellerRecord>()?.into_iter().filter(|s| s.disabled).map(|s| s.id).collect())
}

fn ensure_seller(tx: &mut Tx<'_>, name: &str, url: Option<&str>) -> Result<SellerRecord> {
    let folded = crate::text::fold(name.trim());
    if let Some(id) = tx.seller_by_name(&folded)? {
        if let Some(s) = tx.seller::<SellerRecord>(&id)? {
            return Ok(s);
        }
    }
    let s = SellerRecord {
        id: crypto::new_id("sel_"),
        name: name.trim().to_owned(),
        url: url.map(str::to_owned),
        disabled: false,
    };
    tx.put_seller(&s.id, &folded, &s)?;
    Ok(s)
}

/// Checks an e-mail address's shape (one `@`, a dotted domain, no spaces, ≤ 254 chars)
/// and returns it trimmed with the domain lower-cased.
///
/// # Errors
/// [`InputError`] naming `email`.
pub fn validate_email(s: &str) -> Result<String, InputError> {
    let s = s.trim();
    let bad = || InputError("email must be an address such as name@example.com".into());
    if s.len() > 254
        || s.chars().any(|c| c.is_whitespace() || c.is_control() || matches!(c, '<' | '>' | ',' | ';' | '"'))
    {
        return Err(bad());
    }
    if !s.is_ascii() {
        return Err(InputError("email must be written in ASCII characters (name@example.com)".into()));
    }
    let (local, domain) = s.rsplit_once('@').ok_or_else(bad)?;
    if local.is_empty()
        || local.contains('@')
        || !domain.contains('.')
        || domain.starts_with('.')
        || domain.ends_with('.')
    {
        return Err(bad());
    }
    Ok(format!("{local}@{}", domain.to_ascii_lowercase()))
}

/// The contact of an intent, opened, for the mail worker and erasure tests.
///
/// # Errors
/// Key errors.
pub fn open_contact(keys: &KeyRing, rec: &IntentRecord) -> Result<Option<Secret>> {
    rec.contact.as_ref().map(|c| keys.open_str(c)).transpose().map_err(HolderError::from)
}
