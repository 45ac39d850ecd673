//! The plain handles every domain service shares ([`Base`]), the services' error type
//! ([`ServiceError`]) and the one function through which every intent is written
//! ([`Base::write`] with [`Writes::put_intent`]).
//!
//! The lowest module of the services layer (see ARCHITECTURE.md): it holds the
//! infrastructure handles (settings, store, keys, clock, outbox), the consent texts and
//! the standing-intent matching engine, and nothing that answers a request. How the
//! engine follows the store: see `write`. A fallible method fails with storage or key
//! errors ([`ServiceError::Store`], [`ServiceError::Crypto`]) unless its `# Errors` says more.

use crate::clock::Clock;
use crate::config::Settings;
use crate::crypto::{self, KeyRing, Secret};
use crate::mail::{MailContent, MailJob, Outbox};
use crate::matching::engine::{Engine, EngineIntent};
use crate::matching::Params;
use crate::protocol::consent::ConsentTexts;
use crate::protocol::input::InputError;
use crate::records::IntentRecord;
use crate::store::{IntentDue, IntentKey, Store, StoreError, Tx};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use time::OffsetDateTime;

pub mod active;
pub mod keycheck;
pub mod person;
pub mod quota;
mod write;

pub use write::{BatchStats, Writes};

/// A failure of a domain operation, split by who should see what.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
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
    /// An hourly quota is used up; nothing was written. The message names the rule and
    /// when to retry.
    #[error("{0}")]
    Quota(quota::Exceeded),
    /// The person already holds `limit` active intents (`quotas.active_intents_per_person`,
    /// PROTOCOL.md §3 "Limits"); nothing was written. The message names the setting and
    /// the way out, and nothing else: never an address, nor which intents count.
    #[error(
        "limit: this person (the verified e-mail address, with its +tag variants, or the account) already holds \
         {limit} active intents, the most one person may hold at this holder (quotas.active_intents_per_person = \
         {limit}); withdraw one before another can become active"
    )]
    PersonCap {
        /// The limit in force.
        limit: u32,
    },
}

impl ServiceError {
    /// Whether this is an internal failure (to be logged, and answered generically).
    pub fn is_internal(&self) -> bool {
        matches!(self, Self::Store(_) | Self::Crypto(_) | Self::Index(_))
    }

    /// What a client may see: the field and rule of bad input, the one not-found
    /// answer, why the state refuses; for an internal failure only
    /// [`INTERNAL_MESSAGE`], never its cause (the `Display`, which is for the log).
    pub fn public_message(&self) -> String {
        if self.is_internal() {
            INTERNAL_MESSAGE.to_owned()
        } else {
            self.to_string()
        }
    }
}

/// What a client is told of an internal failure (the cause goes to the log).
pub const INTERNAL_MESSAGE: &str = "internal error: the holder could not complete the call; try again later";

/// An error with two faces: what a client may see ([`PublicError::public_message`]) and
/// what the log gets (`Display`: the cause, logged once by the face that answers, and
/// only when [`PublicError::is_internal`]). The faces map it to their outward shape in
/// one place each (an MCP tool error, an OAuth error, an HTML error page).
pub trait PublicError: std::fmt::Display {
    /// Whether this is an internal failure (logged, answered generically).
    fn is_internal(&self) -> bool;
    /// The message for the client; never an internal detail.
    fn public_message(&self) -> String;
}

impl PublicError for ServiceError {
    fn is_internal(&self) -> bool {
        ServiceError::is_internal(self)
    }
    fn public_message(&self) -> String {
        ServiceError::public_message(self)
    }
}

/// Result of a domain operation.
pub type Result<T, E = ServiceError> = std::result::Result<T, E>;

/// Bytes a sealed number is padded to ([`Base::seal_hidden_limit`]): more than any
/// accepted limit (a positive number up to 10^12) needs in its shortest decimal form of
/// at most 32 bytes, or else in its shortest exponent form (at most 23 bytes, e.g.
/// `1.2345678901234567e-300`).
pub const SEALED_NUMBER_WIDTH: usize = 32;

/// The handles the domain services share (each field's getter says what it is). Cheap to
/// share behind an `Arc`; no field is a service.
pub struct Base {
    settings: Settings,
    store: Arc<Store>,
    keys: Arc<KeyRing>,
    clock: Arc<dyn Clock>,
    outbox: Outbox,
    consent: ConsentTexts,
    /// The standing-intent matching engine over the active intents (PROTOCOL.md §6).
    /// Changed only by [`Base::write`].
    engine: Engine,
    quotas: quota::Quotas,
    /// Changed only by [`Base::write`], after the commit, as the engine.
    active: active::ActiveSet,
    /// Held across every intent write transaction and the engine update after it.
    intent_writes: Mutex<()>,
    /// The intent writes waiting for the next batch ([`Base::write_batched`]).
    batches: write::Batches,
    /// The store's one key to intent writes (`None` when another base over the same
    /// store took it first: then every intent write fails, and `engine_failure` says why).
    intent_key: Option<IntentKey>,
    /// A durable commit failed and the engine has not been rebuilt from the store since
    /// (see [`write`]).
    engine_stale: AtomicBool,
    /// See [`Base::engine_failure`]: `isto serve` refuses to start rather than run with an
    /// engine that misses intents.
    engine_failure: Option<String>,
}

impl std::fmt::Debug for Base {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Base")
    }
}

/// The record's row in the store's person index: its person key and validUntil (unix
/// µs, rounded down) while it is in the active set and has a person key.
fn person_entry(rec: &IntentRecord, active: bool) -> Option<(&str, i64)> {
    rec.person.as_deref().filter(|_| active).map(|p| (p, rec.valid_until.micros()))
}

/// The record's entry in the store's expiry index, which the sweep reads
/// ([`crate::store::Reads::intents_due`]): its next status change
/// ([`IntentRecord::next_status_change`]) and, once ended while still holding a contact,
/// when it ended ([`IntentRecord::ended_with_contact_at`]). Unix µs, rounded down.
pub fn sweep_due(rec: &IntentRecord) -> IntentDue {
    IntentDue {
        status_change: rec.next_status_change().map(crate::records::micros),
        contact_ended: rec.ended_with_contact_at().map(crate::records::micros),
    }
}

impl Base {
    /// Assembles the handles; loads consent texts from `settings.consent_dir()` and every
    /// active intent of the store into the matching engine.
    pub fn new(settings: Settings, store: Arc<Store>, keys: Arc<KeyRing>, clock: Arc<dyn Clock>) -> Self {
        let consent = ConsentTexts::load(&settings.consent_dir());
        let engine = Engine::new(Params {
            min_should_match: settings.min_should_match,
            default_currency: settings.default_currency.clone(),
            rates: settings.rates.clone(),
        });
        let mut outbox = Outbox::new(store.clone(), keys.clone(), clock.clone(), &settings.mail_from);
        outbox.retry_base_secs = settings.mail_retry_base_secs;
        let quotas = quota::Quotas::new(settings.quotas);
        let intent_key = store.intent_key();
        let mut b = Self {
            settings,
            store,
            keys,
            clock,
            outbox,
            consent,
            engine,
            quotas,
            active: Default::default(),
            intent_writes: Mutex::new(()),
            batches: Default::default(),
            intent_key,
            engine_stale: AtomicBool::new(false),
            engine_failure: None,
        };
        if b.intent_key.is_none() {
            b.engine_failure = Some("another holder over this store took its intent key: one store, one base".into());
            return b;
        }
        match b.reload_engine() {
            Ok(n) => tracing::debug!(intents = n, "matching engine loaded"),
            Err(e) => {
                tracing::error!(error = %e, "loading active intents into the matching engine failed");
                b.engine_failure = Some(e.to_string());
            }
        }
        b
    }

    /// The engine's view of an intent (hidden limit opened).
    fn engine_intent(&self, rec: &IntentRecord) -> Result<EngineIntent> {
        let c = &rec.content;
        Ok(EngineIntent {
            id: rec.id.clone(),
            category: c.category.clone(),
            criteria: c.criteria.clone(),
            area: c.area.clone(),
            budget: c.budget.clone(),
            hidden_limit: self.hidden_limit(rec)?,
            statement: c.statement.clone(),
        })
    }

    /// Effective settings (read-only at run time).
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The store. Intents are written only through [`Base::write`]: the store's intent
    /// writes need the key only this base holds.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Sealing keys.
    pub fn keys(&self) -> &Arc<KeyRing> {
        &self.keys
    }

    /// The clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The durable mail queue and its worker's wake-up (see [`Outbox`]).
    pub fn outbox(&self) -> &Outbox {
        &self.outbox
    }

    /// Consent texts in force (PROTOCOL.md §4.2).
    pub fn consent(&self) -> &ConsentTexts {
        &self.consent
    }

    /// The hourly quotas on unauthenticated writes (`[quotas]`).
    pub fn quotas(&self) -> &quota::Quotas {
        &self.quotas
    }

    /// The records of the store's active set, in memory (read-only outside [`Base::write`]).
    pub fn active(&self) -> &active::ActiveSet {
        &self.active
    }

    /// The active intents that `offer` matches (PROTOCOL.md §6), from the standing-intent
    /// engine ([`Engine::match_offer_indexed`]; changed only by [`Base::write`]).
    pub fn engine_matches(
        &self,
        offer: &crate::protocol::Offer,
        offer_valid: bool,
    ) -> Vec<(String, crate::matching::Hit)> {
        self.engine.match_offer_indexed(offer, offer_valid)
    }

    /// How many intents the matching engine holds.
    pub fn engine_len(&self) -> usize {
        self.engine.len()
    }

    /// Why loading the active intents into the engine at assembly failed (`None`: it
    /// loaded); `isto serve` refuses to start with it.
    pub fn engine_failure(&self) -> Option<&str> {
        self.engine_failure.as_deref()
    }

    /// The current time.
    pub fn now(&self) -> OffsetDateTime {
        self.clock.now()
    }

    /// The matching parameters of the settings (PROTOCOL.md §6).
    pub fn params(&self) -> &Params {
        self.engine.params()
    }

    /// The currencies budgets may use (those with a rate).
    pub fn currencies(&self) -> Vec<String> {
        self.settings.rates.keys().cloned().collect()
    }

    /// Seals a hidden limit in its shortest round-trip decimal form (`13777.5`), or its
    /// shortest exponent form (`1e-30`) when that is longer, padded with spaces to
    /// [`SEALED_NUMBER_WIDTH`] bytes, so that the ciphertext's length does not tell how
    /// many digits the limit has. [`Base::hidden_limit`] also reads the unpadded form of
    /// older records.
    pub fn seal_hidden_limit(&self, limit: f64) -> Result<crate::crypto::Sealed> {
        let mut text = limit.to_string();
        if text.len() > SEALED_NUMBER_WIDTH {
            text = format!("{limit:e}");
        }
        Ok(self.keys.seal_str(&format!("{text:<SEALED_NUMBER_WIDTH$}"))?)
    }

    /// The intent's hidden limit, opened (`None` without one).
    ///
    /// # Errors
    /// Key errors; [`StoreError::Corrupt`] naming the intent when the sealed text is not
    /// a positive number: never read as "no limit", which would match offers above it.
    /// The message never holds the text.
    pub fn hidden_limit(&self, rec: &IntentRecord) -> Result<Option<f64>> {
        let Some(sealed) = &rec.hidden_limit else { return Ok(None) };
        match self.keys.open_str(sealed)?.expose().trim_end().parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 => Ok(Some(v)),
            _ => Err(ServiceError::Store(StoreError::Corrupt(
                format!("intent {}", rec.id),
                "its sealed hidden limit does not read as a positive number".into(),
            ))),
        }
    }

    /// The person key of a verified e-mail address ([`person::person_key`] under this
    /// holder's keys).
    pub fn person_key(&self, email: &str) -> String {
        person::person_key(&self.keys, email)
    }

    /// Seals `content` into the outbox in `tx`, for intent `intent` when given (the
    /// caller wakes the worker after the commit with `outbox.wake()`).
    pub fn enqueue(&self, tx: &mut Tx<'_>, intent: Option<&str>, content: &MailContent) -> Result<()> {
        let job = MailJob::seal(&self.keys, intent, content, self.now().unix_timestamp(), &self.settings.helo_name())?;
        tx.enqueue_mail(&job)?;
        Ok(())
    }
}

/// Runs `work` on a blocking thread at once, then after every `delay()` (asked afresh
/// each time) and at once when `wake` is notified (also while `work` runs: one more pass
/// right after it), until `stop`; a failure is logged once (as `what`) until the work
/// succeeds again. The domain's background work runs through it.
pub(crate) async fn every_after<F>(
    delay: impl Fn() -> std::time::Duration,
    wake: Option<Arc<tokio::sync::Notify>>,
    what: &'static str,
    stop: tokio_util::sync::CancellationToken,
    work: F,
) where
    F: Fn() -> Result<()> + Clone + Send + 'static,
{
    let mut failing = false;
    loop {
        let w = work.clone();
        let done = tokio::select! {
            _ = stop.cancelled() => return,
            r = tokio::task::spawn_blocking(w) => r,
        };
        match done {
            Ok(Ok(())) if failing => {
                failing = false;
                tracing::info!(task = what, "background work succeeds again");
            }
            Ok(Ok(())) => {}
            Ok(Err(e)) if !failing => {
                failing = true;
                tracing::error!(task = what, error = %e, "background work failed");
            }
            Ok(Err(e)) => tracing::debug!(task = what, error = %e, "background work failed again"),
            Err(e) => tracing::error!(task = what, error = %e, "background task failed"),
        }
        let woken = async {
            match &wake {
                Some(w) => w.notified().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(delay()) => {}
            () = woken => {}
        }
    }
}

/// The contact of an intent, opened, for the mail worker and erasure tests.
pub fn open_contact(keys: &KeyRing, rec: &IntentRecord) -> Result<Option<Secret>> {
    rec.contact.as_ref().map(|c| keys.open_str(c)).transpose().map_err(ServiceError::from)
}

#[cfg(test)]
pub(crate) use tests::test_base;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::protocol::{Status, Visibility};
    use crate::store::Reads as _;
    use serde_json::Map;

    /// A base for unit tests: the default settings over a store in `dir`, a fresh key ring
    /// and a manual clock at 2026-12-01T10:00:00Z.
    ///
    /// # Panics
    /// When the store cannot be opened (tests only).
    pub(crate) fn test_base(dir: &std::path::Path) -> Base {
        let mut s = Settings::defaults();
        s.data_dir = dir.to_owned();
        let store = Store::open(&dir.join(crate::store::FILE_NAME)).unwrap();
        let clock =
            Arc::new(crate::clock::ManualClock::new(crate::clock::parse_rfc3339("2026-12-01T10:00:00Z").unwrap()));
        Base::new(s, Arc::new(store), Arc::new(KeyRing::ephemeral()), clock)
    }

    fn base(dir: &std::path::Path) -> Base {
        test_base(dir)
    }

    impl Base {
        /// Whether the matching engine holds intent `id`.
        pub(crate) fn engine_contains(&self, id: &str) -> bool {
            self.engine.contains(id)
        }
    }

    pub(crate) fn active(id: &str) -> IntentRecord {
        let t = |s: &str| crate::records::Stamp::parse(s).unwrap();
        let content = crate::records::IntentContent {
            statement: "Škoda Octavia combi".into(),
            category: "vehicles".into(),
            criteria: Map::new(),
            area: serde_json::from_value(serde_json::json!({"country": "SK", "regions": ["SK-BL"]})).unwrap(),
            budget: None,
            buy_by: None,
            valid_until: t("2027-03-01T00:00:00Z"),
            visibility: Visibility::default(),
            language: "sk".into(),
        };
        IntentRecord {
            status: Status::Active,
            confirmed_at: Some(t("2026-12-01T10:00:00Z")),
            ..IntentRecord::draft(id.into(), content, t("2026-12-01T10:00:00Z"), t("2026-12-02T10:00:00Z"))
        }
    }

    fn stored_active(b: &Base, id: &str) -> bool {
        b.store.read(|rx| rx.active_ids()).unwrap().iter().any(|i| i == id)
    }

    #[test]
    fn put_intent_holds_the_per_person_cap() {
        let dir = tempfile::tempdir().unwrap();
        let mut b = base(dir.path());
        b.settings.quotas.active_intents_per_person = 2;
        let of = |id: &str, person: &str| IntentRecord { person: Some(person.into()), ..active(id) };
        b.write(|w| w.put_intent(&of("int_a", "per_x"), true)).unwrap();
        b.write(|w| w.put_intent(&of("int_b", "per_x"), true)).unwrap();
        let e = b.write(|w| w.put_intent(&of("int_c", "per_x"), true)).unwrap_err();
        assert!(matches!(e, ServiceError::PersonCap { limit: 2 }), "{e}");
        assert!(e.to_string().contains("quotas.active_intents_per_person = 2"), "{e}");
        assert!(!stored_active(&b, "int_c") && !b.engine.contains("int_c"), "nothing written");
        assert!(b.store.read(|rx| rx.intent::<IntentRecord>("int_c")).unwrap().is_none());
        // Rewriting a counted intent, another person, an intent without a person key:
        // no refusal.
        b.write(|w| w.put_intent(&of("int_a", "per_x"), true)).unwrap();
        b.write(|w| w.put_intent(&of("int_c", "per_y"), true)).unwrap();
        b.write(|w| w.put_intent(&active("int_n"), true)).unwrap();
        // An intent whose validUntil passed no longer counts (and is not checked).
        let mut ended = of("int_b", "per_x");
        ended.valid_until = crate::records::Stamp::parse("2026-11-30T00:00:00Z").unwrap();
        b.write(|w| w.put_intent(&ended, true)).unwrap();
        b.write(|w| w.put_intent(&of("int_d", "per_x"), true)).unwrap();
        // Coming back with a new validUntil is checked like a new one.
        let e = b.write(|w| w.put_intent(&of("int_b", "per_x"), true)).unwrap_err();
        assert!(matches!(e, ServiceError::PersonCap { .. }), "{e}");
        // Leaving the active set makes room.
        let withdrawn = IntentRecord { status: Status::Withdrawn, ..of("int_a", "per_x") };
        b.write(|w| w.put_intent(&withdrawn, false)).unwrap();
        assert_eq!(b.store.read(|rx| rx.intent_person("int_a")).unwrap(), None);
        b.write(|w| w.put_intent(&of("int_b", "per_x"), true)).unwrap();
        // The backfill's write takes no cap.
        b.write(|w| w.put_person(&of("int_e", "per_x"))).unwrap();
        assert_eq!(b.store.read(|rx| rx.person_active("per_x", 0, "", 10)).unwrap(), 3);
        assert!(!b.engine.contains("int_e"), "put_person leaves the engine alone");
    }

    #[test]
    fn hidden_limits_seal_to_one_length_whatever_their_digits() {
        let dir = tempfile::tempdir().unwrap();
        let b = base(dir.path());
        let mut rec = active("int_a");
        let mut lengths = std::collections::BTreeSet::new();
        // Tiny limits too: written out in full, 1e-300 has 300 zeros (found by the
        // property test in tests/it/hidden_limit.rs).
        for v in [5.0, 13_777.5, 999_999_999_999.99, 0.01, 1e-300, 1.234_567_890_123_456_7e-20, f64::MIN_POSITIVE] {
            rec.hidden_limit = Some(b.seal_hidden_limit(v).unwrap());
            lengths.insert(rec.hidden_limit.as_ref().unwrap().ct.len());
            assert_eq!(b.hidden_limit(&rec).unwrap(), Some(v));
        }
        assert_eq!(lengths.len(), 1, "{lengths:?}");
        // A record sealed by an older isto (unpadded) still opens.
        rec.hidden_limit = Some(b.keys.seal_str("13777.5").unwrap());
        assert_eq!(b.hidden_limit(&rec).unwrap(), Some(13_777.5));
    }

    /// A sealed hidden limit that opens but is not a positive number is an error naming
    /// the intent (and not the text): read as "no limit" it would match offers above it.
    #[test]
    fn an_unreadable_hidden_limit_is_an_error_not_no_limit() {
        let dir = tempfile::tempdir().unwrap();
        let b = base(dir.path());
        let mut rec = active("int_a");
        for bad in ["12 000", "NaN", "inf", "-5", "0", ""] {
            rec.hidden_limit = Some(b.keys.seal_str(bad).unwrap());
            let e = b.hidden_limit(&rec).unwrap_err();
            assert!(
                matches!(&e, ServiceError::Store(StoreError::Corrupt(k, m)) if k == "intent int_a" && m.contains("hidden limit")),
                "{bad:?}: {e}"
            );
            assert!(bad.is_empty() || !e.to_string().contains(bad), "the message holds the limit: {e}");
        }
        // Nor does such an intent reach the engine without its limit: the write fails.
        let r = b.write(|w| w.put_intent(&rec, true));
        assert!(matches!(&r, Err(ServiceError::Store(StoreError::Corrupt(k, _))) if k == "intent int_a"), "{r:?}");
        assert!(!b.engine.contains("int_a"));
    }

    #[test]
    fn the_public_message_of_an_internal_failure_hides_its_cause() {
        let e = ServiceError::Index("segment 7 of /data/index is corrupt".into());
        assert!(e.is_internal());
        assert_eq!(e.public_message(), INTERNAL_MESSAGE);
        assert!(e.to_string().contains("segment 7"), "the cause stays in Display, for the log");
        let e = ServiceError::State("the intent is withdrawn".into());
        assert_eq!(e.public_message(), "the intent is withdrawn");
        assert_eq!(ServiceError::NotFound.public_message(), "not_found: no intent for this code");
    }

    #[test]
    fn a_failed_write_leaves_the_engine_as_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let b = base(dir.path());

        // Activation whose transaction fails after the put: neither store nor engine has it.
        let r: Result<()> = b.write(|w| {
            w.put_intent(&active("int_a"), true)?;
            Err(ServiceError::State("refused after the put".into()))
        });
        assert!(matches!(&r, Err(ServiceError::State(m)) if m == "refused after the put"), "{r:?}");
        assert!(!stored_active(&b, "int_a"));
        assert!(!b.engine.contains("int_a"), "a failed transaction must not reach the engine");
        assert_eq!(b.engine.len(), 0);

        // A committed activation reaches both.
        b.write(|w| w.put_intent(&active("int_a"), true)).unwrap();
        assert!(stored_active(&b, "int_a"));
        assert!(b.engine.contains("int_a"));

        // A withdrawal whose transaction fails: the intent stays active in both.
        let mut withdrawn = active("int_a");
        withdrawn.status = Status::Withdrawn;
        let r: Result<()> = b.write(|w| {
            w.put_intent(&withdrawn, false)?;
            Err(ServiceError::State("refused after the put".into()))
        });
        assert!(matches!(&r, Err(ServiceError::State(m)) if m == "refused after the put"), "{r:?}");
        assert!(stored_active(&b, "int_a"));
        assert!(b.engine.contains("int_a"), "the engine keeps what the store keeps");

        // The committed withdrawal leaves both.
        b.write(|w| w.put_intent(&withdrawn, false)).unwrap();
        assert!(!stored_active(&b, "int_a"));
        assert!(!b.engine.contains("int_a"));

        // A restart loads the same set from the store.
        b.write(|w| w.put_intent(&active("int_b"), true)).unwrap();
        drop(b);
        let again = base(dir.path());
        assert!(again.engine.contains("int_b") && !again.engine.contains("int_a"));
    }
}
