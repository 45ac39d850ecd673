//! Account-owned intents: the operations behind `/mcp/buyer` (PROTOCOL.md §1, §3) and
//! the "my intents" and renewal pages.
//!
//! Every operation takes the signed-in account's id and works only on intents whose
//! `owner` is that account; any other id — another account's, a consent-link intent's,
//! or one that does not exist — is the same [`ServiceError::NotFound`].
//!
//! **Publishing** ([`Intents::publish_for`]): the intent is `active` at once when the
//! account is an enabled buyer that accepted the *current* consent text:
//! `account.consent_version` equals the version of the text in force for the intent's
//! language (`holder.consent.get(language)`, which falls back to English) or for any
//! other language the holder serves — a text changed since sign-up makes it stale.
//! Otherwise the intent is a draft (`awaiting_consent`, owner set) with the same
//! `consentUrl` as on `/mcp`; there is no intentCode on `/mcp/buyer`.
//!
//! **Updating** ([`Intents::update_owned`]): each changed field is parsed by the
//! publish parser of that field ([`Intents::parse_changes`]) into typed changes, laid
//! over the stored content, and the publish rules between fields run on the result — so
//! an update accepts exactly what a publish accepts and its errors name the same fields.
//! `null` removes `criteria` (the category stays), `budget`, `hiddenLimit` and `buyBy`.
//! Content changes apply at once and re-run matching (new deliveries only). Moving
//! `validUntil` earlier applies at once; moving it later (or renewing an expired intent)
//! creates a pending renewal that the person confirms on the holder's renewal page
//! (seed: "renewing validUntil requires the buyer's fresh action").
//!
//! **Renewals** ([`RenewalRecord`]): only the token's hash is stored; the token is
//! single use, and applying it ([`Intents::renew`]) needs the owning account signed in,
//! so the agent that received the URL cannot complete it.
//!
//! Account-owned intents are found by scanning the intents table (there is no owner
//! index): fine for a holder's size, and only the "my intents" page lists them.

use super::content::{check_content, Change, IntentChanges};
use super::{Intents, PublishInput, ResultsView};
use crate::accounts::{self, Account, AccountError, ROLE_BUYER};
use crate::base::{Result, ServiceError};
use crate::clock;
use crate::crypto::TOKEN_BYTES;
use crate::crypto::{self, Secret};
use crate::protocol::input::{InputError, ListMatches, UpdateArgs};
use crate::protocol::{Delivery, Intent, Status};
use crate::records::{ConsentRecord, IntentContent, IntentRecord, Stamp};
use crate::store::{Ns, Reads, StoreError, Tx};
use serde::{Deserialize, Serialize};
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

/// A pending renewal as stored in [`Ns::Renewal`] under `token_hash("renewal", token)`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RenewalRecord {
    /// The intent to renew.
    pub intent_id: String,
    /// The account that asked (only it can confirm).
    pub account_id: String,
    /// The new validUntil.
    pub valid_until: Stamp,
    /// When it was asked for.
    pub created_at: Stamp,
    /// When it lapses (created + 72 h).
    pub expires_at: Stamp,
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

fn owned_by(rec: &IntentRecord, account_id: &str) -> bool {
    rec.owner.as_deref() == Some(account_id)
}

fn renewal_key(token: &str) -> String {
    crypto::token_hash("renewal", token)
}

/// Refuses changes to intents that ended for good.
fn check_changeable(rec: &IntentRecord, now: OffsetDateTime) -> Result<Status> {
    let status = rec.effective_status(now);
    match status {
        Status::Withdrawn => Err(ServiceError::State(
            "the intent is withdrawn and cannot be changed; publish a new intent instead".into(),
        )),
        // An expired intent that was active once can be renewed; a lapsed draft cannot.
        Status::Expired if rec.confirmed_at.is_none() => Err(ServiceError::State(
            "the intent expired before it became active (no consent or confirmation); publish it again".into(),
        )),
        s => Ok(s),
    }
}

/// The consent record of an account that accepted the consent text: the version, time
/// and language its sign-up recorded (PROTOCOL.md §4.2). Never made up: a record that
/// lacks one is an internal error naming the account, and no intent is published.
fn account_consent(account: &Account) -> Result<ConsentRecord> {
    let missing = |what: &str| {
        ServiceError::Store(StoreError::Corrupt(
            format!("account {}", account.id),
            format!("it accepted the consent text but its {what} is not recorded"),
        ))
    };
    let text_version = account.consent_version.clone().ok_or_else(|| missing("consent text version"))?;
    let language = account.consent_language.clone().ok_or_else(|| missing("consent language"))?;
    let at = account.consent_at.ok_or_else(|| missing("consent time"))?;
    Ok(ConsentRecord { at, text_version, language })
}

fn nothing_to_change() -> ServiceError {
    InputError(format!("nothing to change: give the id and at least one of {}", UPDATABLE.join(", "))).into()
}

impl Intents {
    /// The language of the consent text in force that `account` accepted (see the module
    /// docs), if any.
    pub fn consent_accepted(&self, account: &Account, language: &str) -> Option<String> {
        let v = account.consent_version.as_deref()?;
        let first = self.base.consent().get(language);
        if first.version == v {
            return Some(first.language);
        }
        ["sk", "cs", "en"].into_iter().map(|l| self.base.consent().get(l)).find(|t| t.version == v).map(|t| t.language)
    }

    /// `intent_publish_intent` on `/mcp/buyer` for a signed-in account (PROTOCOL.md §3, see
    /// the module docs): active at once — contact the account's sealed e-mail, consent
    /// recorded from the account, matched in the same transaction — or a draft with a
    /// `consentUrl`. Its person is the account's address.
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
            self.consent_accepted(&account, &p.content.language)
        } else {
            None
        };
        let mut rec = self.new_record(crypto::new_id("int_"), p, now, now, Some(account_id))?;
        let id = rec.id.clone();
        rec.person = Some(self.base.person_key(self.base.keys().open_str(&account.email)?.expose()));
        if accepted.is_some() {
            rec.status = Status::Active;
            rec.contact = Some(account.email.clone());
            rec.consent = Some(account_consent(&account)?);
            // The address was verified when the account was confirmed (double opt-in).
            rec.confirmed_at = Some(Stamp::of(now));
            // One of a batch of concurrent intent writes (each sees the ones before it,
            // so the cap holds); run again when another write of its batch fails.
            let (me, new) = (self.clone(), rec);
            let (rec, n) = self.base.write_batched(move |tx| -> Result<(IntentRecord, u64)> {
                let mut rec = new.clone();
                me.check_person_cap(tx, &rec)?;
                let n = me.catalogue.match_catalogue_tx(tx, &mut rec, now)?;
                tx.put_intent(&rec, true)?;
                Ok((rec, n))
            })?;
            tracing::info!(intent = %id, category = %rec.category, delivered = n, "account intent published and active");
            self.base.outbox().wake();
            return Ok(BuyerPublishResult { intent: rec.to_intent(now), consent_url: None });
        }
        let consent = crypto::new_intent_token(&id);
        rec.draft_expires_at = Stamp::of(now + time::Duration::seconds(self.base.settings().draft_ttl_secs as i64));
        let (me, draft, consent_key) = (self.clone(), rec.clone(), crypto::token_key("consent", consent.expose()));
        self.base.write_batched(move |tx| -> Result<()> {
            // A draft that could only become one active intent too many is refused now.
            me.check_person_cap(tx, &draft)?;
            tx.put_intent(&draft, false)?;
            tx.put_token(&consent_key, &draft.id)?;
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
        let rec: Option<IntentRecord> = self.base.store().read(|rx| rx.intent(id))?;
        rec.filter(|r| owned_by(r, account_id)).ok_or(ServiceError::NotFound)
    }

    /// `intent_get_intent` on `/mcp/buyer`.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn get_owned(&self, account_id: &str, id: &str) -> Result<Intent> {
        Ok(self.owned(account_id, id)?.into_intent(self.now()))
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

    /// Sets the delivery cadence of an owned intent (the "my intents" page), see
    /// [`Intents::set_cadence_id`]. Call it on a blocking thread.
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
        self.matches_of(&self.owned(account_id, id)?, q)
    }

    /// The account's intents, newest first ("my intents" page).
    ///
    /// # Errors
    /// Storage errors; [`StoreError::Corrupt`] naming the first of the account's
    /// records that does not decode.
    pub fn owned_intents(&self, account_id: &str) -> Result<Vec<Intent>> {
        let now = self.now();
        /// The fields that say whose an intent is: other people's records are not
        /// decoded further (one damaged record of theirs does not stop this list).
        #[derive(Deserialize)]
        struct Whose {
            #[serde(default)]
            id: String,
            #[serde(default)]
            owner: Option<String>,
        }
        impl crate::store::IntentRow for Whose {
            const MATCHES: bool = false;
        }
        let mut all: Vec<IntentRecord> = self.base.store().read(|rx| -> Result<Vec<IntentRecord>> {
            let mut out = Vec::new();
            for w in rx.all_intents::<Whose>()? {
                if w.owner.as_deref() == Some(account_id) {
                    out.extend(rx.intent::<IntentRecord>(&w.id)?);
                }
            }
            Ok(out)
        })?;
        all.sort_unstable_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| b.id.cmp(&a.id)));
        Ok(all.into_iter().map(|r| r.into_intent(now)).collect())
    }

    /// The results view of an owned intent: the intent and its newest 100 deliveries.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn owned_results(&self, account_id: &str, id: &str) -> Result<ResultsView> {
        self.results_of(&self.owned(account_id, id)?)
    }

    /// `intent_update_intent` on `/mcp/buyer`: `{id, ...changed fields}` (see the module
    /// docs).
    ///
    /// # Errors
    /// [`ServiceError::Input`] naming the field (the publish rules);
    /// [`ServiceError::NotFound`]; [`ServiceError::State`] for a withdrawn intent, a draft
    /// that lapsed, or content changes to an expired intent (renew it first).
    pub fn update_owned(&self, account_id: &str, args: &UpdateArgs) -> Result<UpdateResult> {
        if args.changes.is_empty() {
            return Err(nothing_to_change());
        }
        let changes = self.parse_changes(args)?;
        self.update_owned_with(account_id, &args.id, &changes)
    }

    /// [`Intents::update_owned`] with its changes parsed; nothing is written unless all
    /// of it holds.
    ///
    /// # Errors
    /// As [`Intents::update_owned`].
    pub fn update_owned_with(&self, account_id: &str, id: &str, changes: &IntentChanges) -> Result<UpdateResult> {
        if !changes.content() && changes.valid_until.is_none() {
            return Err(nothing_to_change());
        }
        let rec = self.owned(account_id, id)?;
        let now = self.now();
        let status = check_changeable(&rec, now)?;
        let content = changes.content();
        if status == Status::Expired && content {
            return Err(ServiceError::State(
                "the intent has expired: renew it first by moving validUntil later (the person confirms on the \
                 holder's renewal page), then change the other fields"
                    .into(),
            ));
        }
        let new = changes.apply(&rec.content, &self.base.settings().default_language)?;
        let new_limit = match changes.hidden_limit {
            Change::Set(h) => Some(h),
            _ => None,
        };
        check_content(&new, new_limit)?;
        // validUntil: earlier applies at once; later (or any date for an expired intent)
        // waits for the person's confirmation.
        let (mut earlier, mut later) = (None, None);
        if let Some(t) = changes.valid_until {
            if status == Status::Expired || t > rec.valid_until.at() {
                later = Some(t);
            } else {
                earlier = Some(t);
            }
        }
        // The hidden limit is a number in the budget's currency: a change of currency would
        // silently re-read it in another one.
        let currency_of = |b: Option<&crate::protocol::Budget>| {
            b.map_or_else(|| self.base.settings().default_currency.clone(), |b| b.currency.clone())
        };
        if rec.hidden_limit.is_some()
            && !changes.hidden_limit.given()
            && currency_of(rec.budget.as_ref()) != currency_of(new.budget.as_ref())
        {
            return Err(InputError(
                "hiddenLimit must be given again (or null) when budget.currency changes: the hidden limit is in the \
                 budget's currency"
                    .into(),
            )
            .into());
        }
        let hidden = new_limit.map(|h| self.base.seal_hidden_limit(h)).transpose()?;
        let before = (rec.content.clone(), rec.hidden_limit.clone());
        let (rec, n, token) = self.base.write(|tx| -> Result<(IntentRecord, u64, Option<Secret>)> {
            let mut rec =
                tx.intent::<IntentRecord>(id)?.filter(|r| owned_by(r, account_id)).ok_or(ServiceError::NotFound)?;
            check_changeable(&rec, now)?; // a withdrawal may have won the race
            if (&rec.content, &rec.hidden_limit) != (&before.0, &before.1) {
                // Another update came between reading and writing: never apply changes
                // laid over stale fields.
                return Err(ServiceError::State("the intent changed meanwhile; send the update again".into()));
            }
            let mut n = 0;
            if content {
                rec.content = IntentContent { valid_until: rec.valid_until, ..new.clone() };
                if changes.hidden_limit.given() {
                    rec.hidden_limit = hidden.clone();
                }
            }
            if let Some(t) = earlier {
                rec.valid_until = Stamp::of(t);
            }
            if content || earlier.is_some() {
                // A change of the hidden limit alone is nothing a seller sees: the intent
                // does not move in the sellers' `since` feed (PROTOCOL.md §3).
                if !changes.hidden_limit_only() {
                    rec.updated_at = Stamp::of(now);
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
            valid_until: Stamp::of(valid_until),
            created_at: Stamp::of(now),
            expires_at: Stamp::of(now + time::Duration::seconds(RENEWAL_TTL_SECS)),
        };
        tx.put_record(Ns::Renewal, &renewal_key(token.expose()), &rec)?;
        Ok(token)
    }

    /// The "Renew" button of the "my intents" page: a pending renewal that moves
    /// validUntil to `max(now, validUntil) + default validity`, capped at the maximum
    /// validity from now.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`]; [`ServiceError::State`] for a withdrawn intent, a lapsed
    /// draft, or one already valid for as long as the holder allows.
    pub fn request_renewal(&self, account_id: &str, id: &str) -> Result<PendingRenewal> {
        let rec = self.owned(account_id, id)?;
        let now = self.now();
        check_changeable(&rec, now)?;
        let current = rec.valid_until.at();
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
        let rec: RenewalRecord =
            self.base.store().read(|rx| rx.record(Ns::Renewal, &key))?.ok_or(ServiceError::NotFound)?;
        if rec.account_id != account_id || rec.expires_at.at() <= self.now() {
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
        let open = check_changeable(&rec, now).is_ok() && r.valid_until.at() > now;
        Ok(RenewalView { intent: rec.to_intent(now), valid_until: r.valid_until.rfc3339(), open })
    }

    /// Confirms a renewal (the renewal page's POST, by the signed-in owner): sets the new
    /// validUntil; an expired intent becomes `active` again and is matched. Single use.
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
            let rec = tx.intent::<IntentRecord>(&r.intent_id)?.filter(|x| owned_by(x, account_id));
            let mut rec = rec.ok_or(ServiceError::NotFound)?;
            let status = check_changeable(&rec, now)?;
            if r.valid_until.at() <= now {
                return Err(ServiceError::State("the new validUntil has passed already; ask for a new renewal".into()));
            }
            rec.valid_until = r.valid_until;
            rec.updated_at = Stamp::of(now);
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
                // A refusal of the cap leaves the renewal unused (transaction rolled back).
                self.check_person_cap(tx, &rec)?;
                n = self.catalogue.match_catalogue_tx(tx, &mut rec, now)?;
            }
            tx.put_intent(&rec, rec.status == Status::Active)?;
            Ok((rec, n))
        })?;
        tracing::info!(intent = %rec.id, delivered = n, "intent renewed");
        self.base.outbox().wake();
        Ok(rec.into_intent(now))
    }

    /// Deletes expired pending renewals; returns how many went (for the periodic sweep).
    pub fn sweep_renewals(&self) -> Result<u64> {
        let now = self.now();
        self.base.write(|tx| -> Result<u64> {
            let mut n = 0;
            for (k, r) in tx.records::<RenewalRecord>(Ns::Renewal)? {
                if r.expires_at.at() <= now {
                    tx.remove_record(Ns::Renewal, &k)?;
                    n += 1;
                }
            }
            Ok(n)
        })
    }
}
