//! Account-owned intents: the operations behind `/mcp/buyer` (PROTOCOL.md §1, §3) and
//! the "my intents" and renewal pages.
//!
//! Every operation takes the signed-in account's id and works only on intents whose
//! `owner` is that account; any other id — another account's, a consent-link intent's,
//! or one that does not exist — is the same [`ServiceError::NotFound`].
//!
//! **Publishing** ([`Intents::publish_for`]): the intent is `active` at once, with the
//! account's (already sealed, already verified at sign-up) e-mail address as its contact,
//! when the account is an enabled buyer that accepted the *current* consent text. The
//! rule: `account.consent_version` equals the version of the consent text in force for
//! the intent's language (`holder.consent.get(language)`, which falls back to English),
//! or the version of the text in force for any other language the holder serves (sk, cs,
//! en) — the person accepted today's text, in whichever language they read it. A text
//! changed since sign-up makes the version stale. Otherwise the intent is stored as a
//! draft (`awaiting_consent`, owner set, 24 h) and the result carries the same
//! `consentUrl` as on `/mcp`; there is no intentCode on `/mcp/buyer`.
//!
//! **Updating** ([`Intents::update_owned`]): the changed fields are validated by
//! [`Intents::parse_publish`] itself — the stored intent is written back as a publish
//! input, the changes laid over it — so an update accepts exactly what a publish accepts
//! and its errors name the same fields. `null` removes `criteria` (the category stays),
//! `budget`, `hiddenLimit` and `buyBy`. Content changes apply at once and re-run matching
//! (new deliveries only: one per (intent, offer), ever). Moving `validUntil` earlier
//! applies at once; moving it later (or renewing an expired intent) creates a pending
//! renewal that the person confirms on the holder's renewal page (seed: "renewing
//! validUntil requires the buyer's fresh action").
//!
//! **Renewals** are records in [`Ns::Renewal`] under `token_hash("renewal", token)`:
//! `{intent id, account id, new validUntil, expiry 72 h}`. Only the hash is stored; the
//! token is single use. Applying one ([`Intents::renew`]) needs the owning account (the
//! page requires the person to be signed in), so the agent that received the URL cannot
//! complete it.
//!
//! Account-owned intents are found by scanning the intents table (there is no owner
//! index): fine for a holder's size, and only the "my intents" page lists them.

use super::{Intents, PublishInput, ResultsView};
use crate::accounts::{self, Account, AccountError, ROLE_BUYER};
use crate::base::{Result, ServiceError};
use crate::clock;
use crate::crypto::TOKEN_BYTES;
use crate::crypto::{self, Secret};
use crate::deliveries::{self, with_offers};
use crate::protocol::input::{InputError, ListMatches, UpdateArgs};
use crate::protocol::{Delivery, Intent, Status};
use crate::records::{ts, ConsentRecord, IntentRecord};
use crate::store::{Ns, Reads, Tx};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use time::OffsetDateTime;

/// How long a pending renewal can be confirmed, seconds (72 h, as an e-mail confirmation).
pub const RENEWAL_TTL_SECS: i64 = 72 * 3600;

pub use crate::protocol::input::UPDATABLE;

/// The `/mcp/buyer` publish result (PROTOCOL.md §3): the intent, and the consent page
/// when the account has not accepted the current consent text.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BuyerPublishResult {
    /// The intent: `active`, or a draft `awaiting_consent`.
    pub intent: Intent,
    /// The holder page where the person consents (drafts only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consent_url: Option<String>,
}

/// The `intent_update_intent` result (PROTOCOL.md §3).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateResult {
    /// The intent after the changes that apply at once.
    pub intent: Intent,
    /// The renewal page, when `validUntil` moved later (not applied until confirmed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renew_url: Option<String>,
}

/// A pending renewal as stored (under `token_hash("renewal", token)`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RenewalRecord {
    /// The intent to renew.
    pub intent_id: String,
    /// The account that asked (only it can confirm).
    pub account_id: String,
    /// The new validUntil, RFC 3339.
    pub valid_until: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339 (created + 72 h).
    pub expires_at: String,
}

/// A renewal just created.
#[derive(Debug, Clone)]
pub struct PendingRenewal {
    /// The intent as it is now (validUntil unchanged).
    pub intent: Intent,
    /// The renewal token (the last segment of `renew_url`).
    pub token: String,
    /// `<public>/renew/<token>`.
    pub renew_url: String,
    /// The validUntil the renewal would set, RFC 3339.
    pub valid_until: String,
}

/// What the renewal page shows.
#[derive(Debug, Clone)]
pub struct RenewalView {
    /// The intent as it is now.
    pub intent: Intent,
    /// The validUntil a confirmation sets, RFC 3339.
    pub valid_until: String,
    /// Whether confirming can still work (the intent is not withdrawn, the new date has
    /// not passed).
    pub open: bool,
}

fn account_error(e: AccountError) -> ServiceError {
    match e {
        AccountError::Store(e) => ServiceError::Store(e),
        AccountError::Crypto(e) => ServiceError::Crypto(e),
        _ => ServiceError::State("unauthorized: the account cannot be used".into()),
    }
}

fn renewal_key(token: &str) -> String {
    crypto::token_hash("renewal", token)
}

/// Whether an expired intent was active once (and can therefore be renewed); a draft
/// that lapsed without consent or confirmation cannot.
fn was_active(rec: &IntentRecord) -> bool {
    rec.confirmed_at.is_some()
}

/// Refuses changes to intents that ended for good.
fn check_changeable(rec: &IntentRecord, now: OffsetDateTime) -> Result<Status> {
    let status = rec.effective_status(now);
    match status {
        Status::Withdrawn => Err(ServiceError::State(
            "the intent is withdrawn and cannot be changed; publish a new intent instead".into(),
        )),
        Status::Expired if !was_active(rec) => Err(ServiceError::State(
            "the intent expired before it became active (no consent or confirmation); publish it again".into(),
        )),
        s => Ok(s),
    }
}

fn nothing_to_change() -> ServiceError {
    InputError(format!("nothing to change: give the id and at least one of {}", UPDATABLE.join(", "))).into()
}

impl Intents {
    /// Whether `account` accepted the consent text in force (see the module docs for the
    /// rule): its version equals the current text's for `language`, or for any other
    /// language the holder serves. Returns the language of the matching text.
    pub fn consent_accepted(&self, account: &Account, language: &str) -> Option<String> {
        let v = account.consent_version.as_deref()?;
        let first = self.base.consent().get(language);
        if first.version == v {
            return Some(first.language);
        }
        ["sk", "cs", "en"].into_iter().map(|l| self.base.consent().get(l)).find(|t| t.version == v).map(|t| t.language)
    }

    fn new_owned_record(&self, account_id: &str, p: PublishInput, now: OffsetDateTime) -> Result<IntentRecord> {
        self.new_record(crypto::new_id("int_"), p, now, now, Some(account_id))
    }

    /// `intent_publish_intent` on `/mcp/buyer` for a signed-in account (PROTOCOL.md §3):
    /// active at once — contact = the account's sealed e-mail, consent recorded from the
    /// account (version, when, language), matched against the catalogue in the same
    /// transaction — when the account is an enabled buyer that accepted the current
    /// consent text; otherwise a draft `awaiting_consent` (owner set) with a `consentUrl`.
    ///
    /// The intent's person is the account (`base::person`: the key of its address), so
    /// the account's intents and its address's consent-link intents count together.
    ///
    /// # Errors
    /// [`ServiceError::State`] ("unauthorized") when the account does not exist;
    /// [`ServiceError::PersonCap`] when the account already holds the most active
    /// intents one person may (`quotas.active_intents_per_person`; also for a draft,
    /// which could only become one too many; nothing is stored); storage and key errors.
    pub fn publish_for(&self, account_id: &str, p: PublishInput) -> Result<BuyerPublishResult> {
        let account = accounts::account(&self.base, account_id)
            .map_err(account_error)?
            .ok_or_else(|| ServiceError::State("unauthorized: the account does not exist".into()))?;
        let now = self.now();
        let accepted = if account.role == ROLE_BUYER && !account.disabled {
            self.consent_accepted(&account, &p.language)
        } else {
            None
        };
        let mut rec = self.new_owned_record(account_id, p, now)?;
        let id = rec.id.clone();
        // One person: the account with its address (its consent-link intents included).
        rec.person = Some(self.base.person_key(self.base.keys().open_str(&account.email)?.expose()));
        if let Some(language) = accepted {
            rec.status = Status::Active;
            rec.contact = Some(account.email.clone());
            rec.consent = Some(ConsentRecord {
                at: account.consent_at.clone().unwrap_or_else(|| clock::rfc3339(now)),
                text_version: account.consent_version.clone().unwrap_or_default(),
                language: account.consent_language.clone().unwrap_or(language),
            });
            // The address was verified when the account was confirmed (double opt-in).
            rec.confirmed_at = Some(clock::rfc3339(now));
            let n = self.base.write(|tx| -> Result<u64> {
                self.check_person_cap(tx, &rec)?;
                let n = self.catalogue.match_catalogue_tx(tx, &mut rec, now)?;
                tx.put_intent(&rec, true)?;
                Ok(n)
            })?;
            tracing::info!(intent = %id, category = %rec.category, delivered = n, "account intent published and active");
            self.base.outbox().wake();
            return Ok(BuyerPublishResult { intent: rec.to_intent(now), consent_url: None });
        }
        let consent = crypto::new_token(TOKEN_BYTES);
        rec.draft_expires_at =
            clock::rfc3339(now + time::Duration::seconds(self.base.settings().draft_ttl_secs as i64));
        self.base.write(|tx| -> Result<()> {
            // A draft that could only become one active intent too many is refused now.
            self.check_person_cap(tx, &rec)?;
            tx.put_intent(&rec, false)?;
            tx.put_token(&crypto::token_hash("consent", consent.expose()), &id)?;
            Ok(())
        })?;
        tracing::info!(intent = %id, category = %rec.category, "account intent published as a draft (consent missing)");
        Ok(BuyerPublishResult {
            intent: rec.to_intent(now),
            consent_url: Some(format!("{}/consent/{}", self.base.settings().public_url.base, consent.expose())),
        })
    }

    /// The intent `id` if `account_id` owns it.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] for any other id.
    pub fn owned(&self, account_id: &str, id: &str) -> Result<IntentRecord> {
        if id.is_empty() || id.len() > 64 || account_id.is_empty() {
            return Err(ServiceError::NotFound);
        }
        let rec: IntentRecord = self
            .base
            .store()
            .read(|rx| -> Result<Option<IntentRecord>> { Ok(rx.intent(id)?) })?
            .ok_or(ServiceError::NotFound)?;
        if rec.owner.as_deref() != Some(account_id) {
            return Err(ServiceError::NotFound);
        }
        Ok(rec)
    }

    /// `intent_get_intent` on `/mcp/buyer`.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn get_owned(&self, account_id: &str, id: &str) -> Result<Intent> {
        Ok(self.owned(account_id, id)?.to_intent(self.now()))
    }

    /// `intent_withdraw_intent` on `/mcp/buyer`: at once, idempotent (see
    /// [`Intents::withdraw_by_code`]). Call it on a blocking thread.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn withdraw_owned(&self, account_id: &str, id: &str) -> Result<()> {
        let rec = self.owned(account_id, id)?;
        self.withdraw_id(&rec.id)
    }

    /// Sets the delivery cadence of an owned intent (the "my intents" page; issue 13
    /// point 2), see [`Intents::set_cadence_id`]. Call it on a blocking thread.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] (not this account's); as [`Intents::set_cadence_id`].
    pub fn set_cadence_owned(&self, account_id: &str, id: &str, cadence: crate::records::Cadence) -> Result<Intent> {
        let rec = self.owned(account_id, id)?;
        self.set_cadence_id(&rec.id, cadence)
    }

    /// `intent_list_matches` on `/mcp/buyer`: `{intent, since?, limit?}` (the same cursor
    /// rules as [`Intents::list_matches_by_code`]).
    ///
    /// # Errors
    /// [`ServiceError::Input`] naming the field; [`ServiceError::NotFound`].
    pub fn list_matches_owned(&self, account_id: &str, q: &ListMatches) -> Result<(Vec<Delivery>, Option<String>)> {
        let id = q.intent.as_deref().ok_or(ServiceError::NotFound)?;
        let (since, limit) = (q.since, q.limit);
        let rec = self.owned(account_id, id)?;
        let (mut matches, next) = deliveries::list(&self.base, &rec.id, since, limit)?;
        deliveries::explain(&rec.to_intent(self.now()), &mut matches);
        let next = next.or_else(|| since.map(clock::rfc3339_micros));
        Ok((matches, next))
    }

    /// The account's intents, newest first ("my intents" page).
    ///
    /// # Errors
    /// Storage errors.
    pub fn owned_intents(&self, account_id: &str) -> Result<Vec<Intent>> {
        let now = self.now();
        let mut all: Vec<IntentRecord> = self.base.store().read(|rx| -> Result<Vec<IntentRecord>> {
            Ok(rx
                .all_intents::<IntentRecord>()?
                .into_iter()
                .filter(|r| r.owner.as_deref() == Some(account_id))
                .collect())
        })?;
        all.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| b.id.cmp(&a.id)));
        Ok(all.iter().map(|r| r.to_intent(now)).collect())
    }

    /// The results view of an owned intent: the intent and its newest 100 deliveries.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn owned_results(&self, account_id: &str, id: &str) -> Result<ResultsView> {
        let rec = self.owned(account_id, id)?;
        let deliveries = self.base.store().read(|rx| with_offers(rx, rx.latest_deliveries(&rec.id, 100)?))?;
        Ok(ResultsView { intent: rec.to_intent(self.now()), deliveries, cadence: rec.cadence })
    }

    /// `intent_update_intent` on `/mcp/buyer`: `{id, ...changed fields}` (see the module
    /// docs). Returns the intent after the changes that apply at once, and a `renewUrl`
    /// when `validUntil` moved later.
    ///
    /// # Errors
    /// [`ServiceError::Input`] naming the field (the publish rules);
    /// [`ServiceError::NotFound`]; [`ServiceError::State`] for a withdrawn intent, a draft
    /// that lapsed, or content changes to an expired intent (renew it first).
    pub fn update_owned(&self, account_id: &str, args: &UpdateArgs) -> Result<UpdateResult> {
        let (id, changes) = (args.id.as_str(), &args.changes);
        if changes.is_empty() {
            return Err(nothing_to_change());
        }
        let rec = self.owned(account_id, id)?;
        let now = self.now();
        let status = check_changeable(&rec, now)?;
        let content = changes.keys().any(|k| k != "validUntil");
        if status == Status::Expired && content {
            return Err(ServiceError::State(
                "the intent has expired: renew it first by moving validUntil later (the person confirms on the \
                 holder's renewal page), then change the other fields"
                    .into(),
            ));
        }
        let p = self.parse_publish(&Value::Object(self.merged_input(&rec, changes)?))?;

        // validUntil: earlier applies at once; later (or any date for an expired intent)
        // waits for the person's confirmation.
        let (mut earlier, mut later) = (None, None);
        if changes.contains_key("validUntil") {
            if status == Status::Expired || p.valid_until > ts(&rec.valid_until) {
                later = Some(p.valid_until);
            } else {
                earlier = Some(p.valid_until);
            }
        }
        let hidden_changed = changes.contains_key("hiddenLimit");
        // The hidden limit is a number in the budget's currency (or the holder's default):
        // a change of currency would silently re-read it in another one. Whether a limit is
        // set is the caller's own knowledge (`hasHiddenLimit`), never its value.
        let currency_of = |b: Option<&crate::protocol::Budget>| {
            b.map_or_else(|| self.base.settings().default_currency.clone(), |b| b.currency.clone())
        };
        if rec.hidden_limit.is_some()
            && !hidden_changed
            && currency_of(rec.budget.as_ref()) != currency_of(p.budget.as_ref())
        {
            return Err(InputError(
                "hiddenLimit must be given again (or null) when budget.currency changes: the hidden limit is in the \
                 budget's currency"
                    .into(),
            )
            .into());
        }
        let buy_by_changed = changes.contains_key("buyBy");
        let hidden = p.hidden_limit.map(|h| self.base.seal_hidden_limit(h)).transpose()?;
        let before = content_of(&rec);
        let (rec, n, token) = self.base.write(|tx| -> Result<(IntentRecord, u64, Option<Secret>)> {
            let mut rec: IntentRecord = tx.intent(id)?.ok_or(ServiceError::NotFound)?;
            if rec.owner.as_deref() != Some(account_id) {
                return Err(ServiceError::NotFound);
            }
            check_changeable(&rec, now)?; // a withdrawal may have won the race
            if content_of(&rec) != before {
                // Another update came between reading and writing: never apply changes
                // laid over stale fields.
                return Err(ServiceError::State("the intent changed meanwhile; send the update again".into()));
            }
            let mut n = 0;
            if content {
                rec.statement = p.statement;
                rec.category = p.category;
                rec.criteria = p.criteria;
                rec.area = p.area;
                rec.budget = p.budget;
                if hidden_changed {
                    rec.hidden_limit = hidden;
                }
                if buy_by_changed {
                    rec.buy_by = p.buy_by;
                }
                rec.visibility = p.visibility;
                rec.language = p.language;
            }
            if let Some(t) = earlier {
                rec.valid_until = clock::rfc3339(t);
            }
            if content || earlier.is_some() {
                // A change of the hidden limit alone is nothing a seller sees: the intent
                // does not move in the sellers' `since` feed (PROTOCOL.md §3).
                if !changes.keys().all(|k| k == "hiddenLimit") {
                    rec.updated_at = clock::rfc3339(now);
                }
                if content && rec.effective_status(now) == Status::Active {
                    n = self.catalogue.match_catalogue_tx(tx, &mut rec, now)?;
                }
                tx.put_intent(&rec, rec.status == Status::Active)?;
            }
            let token = match later {
                Some(t) => Some(self.put_renewal(tx, account_id, id, t, now)?),
                None => None,
            };
            Ok((rec, n, token))
        })?;
        if n > 0 {
            self.base.outbox().wake();
        }
        tracing::info!(intent = %id, delivered = n, renewal = token.is_some(), "account intent updated");
        Ok(UpdateResult { intent: rec.to_intent(now), renew_url: token.map(|t| self.renew_url(t.expose())) })
    }

    /// The stored intent written back as a publish input, with `changes` laid over it
    /// (`null` removes a removable field). `validUntil` is present only when changed, so
    /// that the publish rules check a new date and leave the stored one alone; likewise
    /// `buyBy` (a stored date may be in the past by now).
    fn merged_input(&self, rec: &IntentRecord, changes: &Map<String, Value>) -> Result<Map<String, Value>> {
        let mut m = Map::new();
        let mut criteria = rec.criteria.clone();
        criteria.insert("category".into(), Value::String(rec.category.clone()));
        m.insert("statement".into(), Value::String(rec.statement.clone()));
        m.insert("criteria".into(), Value::Object(criteria.clone()));
        m.insert("area".into(), json(&rec.area));
        if let Some(b) = &rec.budget {
            m.insert("budget".into(), json(b));
        }
        // The stored hidden limit is never laid in: the checks that relate it to other
        // fields run only when the call itself gives one (PROTOCOL.md §3), so no answer
        // depends on the stored value (issue 10 point 1). The write keeps it unless the
        // call changes it.
        m.insert("visibility".into(), json(&rec.visibility));
        for (k, v) in changes {
            match (k.as_str(), v) {
                // No criteria: no constraints, the category stays.
                ("criteria", Value::Null) => {
                    let mut c = Map::new();
                    c.insert("category".into(), Value::String(rec.category.clone()));
                    m.insert(k.clone(), Value::Object(c));
                }
                (_, Value::Null) => {
                    m.remove(k);
                }
                _ => {
                    m.insert(k.clone(), v.clone());
                }
            }
        }
        Ok(m)
    }

    fn renew_url(&self, token: &str) -> String {
        format!("{}/renew/{token}", self.base.settings().public_url.base)
    }

    /// Stores a pending renewal in `tx`; returns its token.
    fn put_renewal(
        &self,
        tx: &mut Tx<'_>,
        account_id: &str,
        intent_id: &str,
        valid_until: OffsetDateTime,
        now: OffsetDateTime,
    ) -> Result<Secret> {
        let token = crypto::new_token(TOKEN_BYTES);
        let rec = RenewalRecord {
            intent_id: intent_id.to_owned(),
            account_id: account_id.to_owned(),
            valid_until: clock::rfc3339(valid_until),
            created_at: clock::rfc3339(now),
            expires_at: clock::rfc3339(now + time::Duration::seconds(RENEWAL_TTL_SECS)),
        };
        tx.put_record(Ns::Renewal, &renewal_key(token.expose()), &rec)?;
        Ok(token)
    }

    /// The "Renew" button of the "my intents" page: a pending renewal that moves
    /// validUntil to `max(now, validUntil) + default validity`, capped at the maximum
    /// validity from now. The person confirms it on `/renew/{token}`.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`]; [`ServiceError::State`] for a withdrawn intent, a lapsed
    /// draft, or one already valid for as long as the holder allows.
    pub fn request_renewal(&self, account_id: &str, id: &str) -> Result<PendingRenewal> {
        let rec = self.owned(account_id, id)?;
        let now = self.now();
        check_changeable(&rec, now)?;
        let current = ts(&rec.valid_until);
        let wanted = current.max(now) + time::Duration::days(i64::from(self.base.settings().default_validity_days));
        let target = wanted.min(now + time::Duration::days(i64::from(self.base.settings().max_validity_days)));
        if rec.effective_status(now) != Status::Expired && target <= current {
            return Err(ServiceError::State(format!(
                "the intent is already valid for the longest time this holder allows ({} days)",
                self.base.settings().max_validity_days
            )));
        }
        let token = self.base.write(|tx| self.put_renewal(tx, account_id, &rec.id, target, now))?;
        Ok(PendingRenewal {
            intent: rec.to_intent(now),
            renew_url: self.renew_url(token.expose()),
            token: token.0,
            valid_until: clock::rfc3339(target),
        })
    }

    fn renewal(&self, account_id: &str, token: &str) -> Result<(String, RenewalRecord)> {
        if token.is_empty() || token.len() > 200 {
            return Err(ServiceError::NotFound);
        }
        let key = renewal_key(token);
        let rec: RenewalRecord = self
            .base
            .store()
            .read(|rx| -> Result<Option<RenewalRecord>> { Ok(rx.record(Ns::Renewal, &key)?) })?
            .ok_or(ServiceError::NotFound)?;
        if rec.account_id != account_id || ts(&rec.expires_at) <= self.now() {
            return Err(ServiceError::NotFound);
        }
        Ok((key, rec))
    }

    /// What the renewal page shows (never changes state).
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] for an unknown, used or expired token, or another
    /// account's.
    pub fn renewal_view(&self, account_id: &str, token: &str) -> Result<RenewalView> {
        let (_, r) = self.renewal(account_id, token)?;
        let rec = self.owned(account_id, &r.intent_id)?;
        let now = self.now();
        let open = check_changeable(&rec, now).is_ok() && ts(&r.valid_until) > now;
        Ok(RenewalView { intent: rec.to_intent(now), valid_until: r.valid_until, open })
    }

    /// Confirms a renewal (the renewal page's POST, by the signed-in owner): sets the new
    /// validUntil; an expired intent becomes `active` again (contact re-set from the
    /// account) and is matched against the catalogue. Single use.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`]; [`ServiceError::State`] for a withdrawn intent, a lapsed
    /// draft, or a new validUntil that has passed meanwhile; [`ServiceError::PersonCap`]
    /// when reactivating would give the person one active intent too many (nothing
    /// changes, the renewal stays usable).
    pub fn renew(&self, account_id: &str, token: &str) -> Result<Intent> {
        let (key, r) = self.renewal(account_id, token)?;
        let now = self.now();
        let (rec, n) = self.base.write(|tx| -> Result<(IntentRecord, u64)> {
            if tx.record::<RenewalRecord>(Ns::Renewal, &key)?.is_none() {
                return Err(ServiceError::NotFound); // used meanwhile
            }
            tx.remove_record(Ns::Renewal, &key)?;
            let mut rec: IntentRecord = tx.intent(&r.intent_id)?.ok_or(ServiceError::NotFound)?;
            if rec.owner.as_deref() != Some(account_id) {
                return Err(ServiceError::NotFound);
            }
            let status = check_changeable(&rec, now)?;
            let until = ts(&r.valid_until);
            if until <= now {
                return Err(ServiceError::State("the new validUntil has passed already; ask for a new renewal".into()));
            }
            rec.valid_until = r.valid_until.clone();
            rec.updated_at = clock::rfc3339(now);
            let mut n = 0;
            if status == Status::Expired {
                let account = tx
                    .record::<Account>(Ns::Account, account_id)?
                    .filter(|a| !a.disabled)
                    .ok_or(ServiceError::NotFound)?;
                rec.status = Status::Active;
                rec.ended_at = None;
                if rec.contact.is_none() {
                    // Erased after the retention period: the account's verified address.
                    rec.contact = Some(account.email);
                }
                if rec.person.is_none() {
                    rec.person = self.person_of(&**tx, &rec, None)?;
                }
                // Active again: one more for the person (PROTOCOL.md §3 "Limits"); a
                // refusal leaves the renewal unused, to confirm after a withdrawal.
                self.check_person_cap(tx, &rec)?;
                n = self.catalogue.match_catalogue_tx(tx, &mut rec, now)?;
            }
            tx.put_intent(&rec, rec.status == Status::Active)?;
            Ok((rec, n))
        })?;
        tracing::info!(intent = %rec.id, delivered = n, "intent renewed");
        self.base.outbox().wake();
        Ok(rec.to_intent(now))
    }

    /// Deletes expired pending renewals; returns how many went (for the periodic sweep).
    ///
    /// # Errors
    /// Storage errors.
    pub fn sweep_renewals(&self) -> Result<u64> {
        let now = self.now();
        self.base.write(|tx| -> Result<u64> {
            let mut n = 0;
            for (k, r) in tx.records::<RenewalRecord>(Ns::Renewal)? {
                if ts(&r.expires_at) <= now {
                    tx.remove_record(Ns::Renewal, &k)?;
                    n += 1;
                }
            }
            Ok(n)
        })
    }
}

/// The fields an update writes, for detecting a concurrent update.
fn content_of(rec: &IntentRecord) -> Value {
    json(&(
        &rec.statement,
        &rec.category,
        &rec.criteria,
        &rec.area,
        &rec.budget,
        &rec.hidden_limit,
        &rec.buy_by,
        &rec.valid_until,
        &rec.visibility,
    ))
}

/// A stored value written back as JSON input.
fn json<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}
