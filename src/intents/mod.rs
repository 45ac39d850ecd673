//! The intents service: the consent-link flow (seed §5, PROTOCOL.md §4) — publish a
//! draft, consent, double opt-in confirmation, get / list matches / withdraw by code or
//! manage token — and the expiry sweep. Signed-in buyers' operations are in [`buyer`].
//! Transport-free: the MCP tools, web pages and admin commands all call these functions.
//!
//! Every state change is one write transaction through [`Base::write`]. Statuses are
//! computed at read time ([`IntentRecord::effective_status`]): a GET never writes, and
//! a sweep later persists what expiry already means.
//!
//! Errors: a fallible item here fails with storage errors (and key errors where it opens
//! a sealed value) unless its `# Errors` says more.

use crate::base::quota::{ClientKey, Exceeded, Key, Rule};
use crate::base::{open_contact, Base, Result, ServiceError, Writes};
use crate::catalogue::Catalogue;
use crate::clock;
use crate::crypto;
use crate::deliveries::{self, with_offers};
use crate::mail::MailJob;
use crate::protocol::input::{validate_email, ListMatches};
use crate::protocol::{Delivery, Intent, Status};
use crate::records::{Cadence, ConsentRecord, IntentRecord, Stamp};
use crate::store::{Ns, Reads};
use serde::Serialize;
use std::sync::Arc;
use time::OffsetDateTime;

pub mod buyer;
mod content;
mod known;
mod links;
mod passes;
mod purge;
pub use content::{Change, IntentChanges, PublishInput};
pub use links::{cadence_proof_purpose, CadenceRequest};
pub(crate) use passes::readable;
pub use purge::Purged;
#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod sweep_tests;

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
    /// How often the digest may go out.
    pub cadence: Cadence,
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
    /// A quota (`[quotas]`) is used up; nothing recorded.
    Throttled(Exceeded),
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

/// The intents service: the shared handles and the catalogue it matches new active
/// intents against. Its quotas are the base's ([`Base::quotas`]). A clone shares them.
#[derive(Clone, Debug)]
pub struct Intents {
    /// The shared handles.
    pub base: Arc<Base>,
    /// The catalogue (offer index) for intents that become active.
    pub catalogue: Arc<Catalogue>,
}

#[cfg(any(test, feature = "testkit"))]
/// Confirmation e-mails one address may receive per hour by default
/// (`quotas.consents_per_address_per_hour`).
pub const CONSENTS_PER_ADDRESS_PER_HOUR: usize = 5;

/// `result`, logged as published (its id and category only).
fn published(result: PublishResult) -> PublishResult {
    tracing::info!(intent = %result.intent.id, category = %result.intent.category, "draft published");
    result
}

/// [`ServiceError::State`] unless an intent in `status` may change its cadence: awaiting
/// its e-mail confirmation or active.
fn cadence_changeable(status: Status) -> Result<()> {
    match status {
        Status::Active | Status::AwaitingEmailConfirmation => Ok(()),
        s => {
            Err(ServiceError::State(format!("state: the cadence cannot be changed while the intent is {}", s.as_str())))
        }
    }
}

impl Intents {
    /// The service over `base`, matching against `catalogue`.
    pub fn new(base: Arc<Base>, catalogue: Arc<Catalogue>) -> Self {
        Self { base, catalogue }
    }

    fn now(&self) -> OffsetDateTime {
        self.base.now()
    }

    /// A new `awaiting_consent` record of `p` (hidden limit sealed), lapsing at
    /// `draft_expires`, owned by `owner` when published on `/mcp/buyer`.
    fn new_record(
        &self,
        id: String,
        p: PublishInput,
        now: OffsetDateTime,
        draft_expires: OffsetDateTime,
        owner: Option<&str>,
    ) -> Result<IntentRecord> {
        Ok(IntentRecord {
            hidden_limit: p.hidden_limit.map(|h| self.base.seal_hidden_limit(h)).transpose()?,
            owner: owner.map(str::to_owned),
            ..IntentRecord::draft(id, p.content, Stamp::of(now), Stamp::of(draft_expires))
        })
    }

    /// [`Intents::publish_draft`] for an unauthenticated caller at `client` (the public
    /// `/mcp`): counted against `quotas.drafts_per_client_per_hour` first.
    ///
    /// # Errors
    /// [`ServiceError::Quota`] naming the rule and when to retry (nothing is stored);
    /// storage errors (the draft is not counted).
    pub fn publish_draft_from(&self, p: PublishInput, client: ClientKey) -> Result<PublishResult> {
        let (key, now) = self.take_draft_quota(client)?;
        self.publish_draft(p).inspect_err(|_| self.base.quotas().refund(Rule::DraftsPerClient, &key, now))
    }

    /// [`Intents::publish_draft_from`] in an async task: the draft is made in the task
    /// and its write awaited ([`Base::write_batched_async`]). The same outcome and errors.
    pub async fn publish_draft_from_async(&self, p: PublishInput, client: ClientKey) -> Result<PublishResult> {
        let (key, now) = self.take_draft_quota(client)?;
        let out = async {
            let (result, write) = self.new_draft(p)?;
            self.base.write_batched_async(write).await?;
            Ok(published(result))
        };
        out.await.inspect_err(|_| self.base.quotas().refund(Rule::DraftsPerClient, &key, now))
    }

    /// Counts a draft of `client` against `quotas.drafts_per_client_per_hour`: the key
    /// and the time (unix s) to refund it with.
    fn take_draft_quota(&self, client: ClientKey) -> Result<(Key, i64)> {
        let now = self.now().unix_timestamp();
        let key = Key::Client(client);
        self.base.quotas().take(Rule::DraftsPerClient, &key, now).map_err(|e| {
            tracing::info!(rule = e.rule.setting(), "draft refused: quota used up");
            ServiceError::Quota(e)
        })?;
        Ok((key, now))
    }

    /// Stores a draft (seed §5.1–5.2): status `awaiting_consent`, not matched, expiring
    /// after the draft TTL; returns the intentCode and consentUrl (each a fresh 160-bit
    /// token, stored only as a hash). Not counted against a quota: the public face calls
    /// [`Intents::publish_draft_from`].
    pub fn publish_draft(&self, p: PublishInput) -> Result<PublishResult> {
        let (result, write) = self.new_draft(p)?;
        // One of a batch of concurrent intent writes, with one durable commit.
        self.base.write_batched(write)?;
        Ok(published(result))
    }

    /// A new draft of `p` (see [`Intents::publish_draft`]): the answer, and the write
    /// that stores it (the record and its two token hashes; it may run up to three times
    /// in a batch).
    fn new_draft(
        &self,
        p: PublishInput,
    ) -> Result<(PublishResult, impl FnMut(&mut Writes<'_, '_>) -> Result<()> + Send + 'static)> {
        let now = self.now();
        let id = crypto::new_id("int_");
        let code = crypto::new_intent_token(&id);
        let consent = crypto::new_intent_token(&id);
        let expires = now + time::Duration::seconds(self.base.settings().draft_ttl_secs as i64);
        let rec = self.new_record(id, p, now, expires, None)?;
        let (code_key, consent_key) =
            (crypto::token_key("code", code.expose()), crypto::token_key("consent", consent.expose()));
        let result = PublishResult {
            intent: rec.to_intent(now),
            consent_url: format!("{}/consent/{}", self.base.settings().public_url.base, consent.expose()),
            intent_code: code.0,
            expires_at: clock::rfc3339(expires),
        };
        let write = move |tx: &mut Writes<'_, '_>| -> Result<()> {
            tx.put_new_draft(&rec)?;
            tx.put_token(&code_key, &rec.id)?;
            tx.put_token(&consent_key, &rec.id)?;
            Ok(())
        };
        Ok((result, write))
    }

    pub(crate) fn by_token(&self, kind: &str, token: &str) -> Result<IntentRecord> {
        if token.is_empty() || token.len() > 200 {
            return Err(ServiceError::NotFound);
        }
        let key = crypto::token_key(kind, token);
        self.base.store().read(|rx| -> Result<IntentRecord> {
            let id = rx.token(&key)?.ok_or(ServiceError::NotFound)?;
            rx.intent(&id)?.ok_or(ServiceError::NotFound)
        })
    }

    /// Resolves an intentCode (and optional id that must match) to its intent
    /// (seed §5.4).
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] for an unknown code or a mismatching id.
    pub fn intent_by_code(&self, code: &str, id: Option<&str>) -> Result<IntentRecord> {
        let rec = self.by_token("code", code)?;
        if id.is_some_and(|i| i != rec.id) {
            return Err(ServiceError::NotFound);
        }
        Ok(rec)
    }

    /// The public view of the code's intent (`intent_get_intent` on `/mcp`).
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn get_by_code(&self, code: &str, id: Option<&str>) -> Result<Intent> {
        Ok(self.intent_by_code(code, id)?.into_intent(self.now()))
    }

    /// Withdraws in one transaction: status `withdrawn`, out of the active set, pending
    /// digest and queued mail for it cancelled (PROTOCOL.md §3: no delivery, e-mail or
    /// listing after it returns). Idempotent. Call it on a blocking thread.
    pub(crate) fn withdraw_id(&self, id: &str) -> Result<()> {
        let now = self.now();
        let _in_flight = self.base.outbox().send_lock.blocking_lock();
        self.base.write(|tx| -> Result<()> {
            let mut rec: IntentRecord = tx.intent(id)?.ok_or(ServiceError::NotFound)?;
            if rec.status == Status::Withdrawn {
                return Ok(());
            }
            rec.status = Status::Withdrawn;
            rec.ended_at = Some(Stamp::of(now));
            rec.updated_at = Stamp::of(now);
            tx.put_intent(&rec, false)?;
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
    /// [`ServiceError::NotFound`].
    pub fn withdraw_by_code(&self, code: &str, id: Option<&str>) -> Result<()> {
        let rec = self.intent_by_code(code, id)?;
        self.withdraw_id(&rec.id)
    }

    /// `intent_list_matches` on `/mcp` (seed §5.6): pull, by code.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn list_matches_by_code(&self, q: &ListMatches) -> Result<(Vec<Delivery>, Option<String>)> {
        let code = q.intent_code.as_deref().ok_or(ServiceError::NotFound)?;
        self.matches_of(&self.intent_by_code(code, q.intent.as_deref())?, q)
    }

    /// The deliveries of `rec` after `q.since` (at most `q.limit`), explained, and the
    /// next cursor: with no new deliveries it stays where the caller was.
    fn matches_of(&self, rec: &IntentRecord, q: &ListMatches) -> Result<(Vec<Delivery>, Option<String>)> {
        let (mut matches, next) = deliveries::list(&self.base, &rec.id, q.since, q.limit)?;
        deliveries::explain(&rec.to_intent(self.now()), &mut matches);
        Ok((matches, next.or_else(|| q.since.map(clock::rfc3339_micros))))
    }

    /// What the consent page shows for a consent token.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn consent_view(&self, token: &str) -> Result<ConsentView> {
        let rec = self.by_token("consent", token)?;
        let now = self.now();
        Ok(ConsentView { open: rec.effective_status(now) == Status::AwaitingConsent, intent: rec.to_intent(now) })
    }

    #[cfg(any(test, feature = "testkit"))]
    /// [`Intents::give_consent_from`] with no client address (tests).
    ///
    /// # Errors
    /// As [`Intents::give_consent_from`].
    pub fn give_consent(&self, token: &str, email: &str, language: &str) -> Result<ConsentOutcome> {
        self.give_consent_from(token, email, language, None)
    }

    /// Records consent (PROTOCOL.md §4.2): first come, atomically; seals the e-mail,
    /// moves the intent to `awaiting_email_confirmation` and queues the confirmation
    /// e-mail (double opt-in) in the same transaction. Under the quotas: a recorded
    /// consent — and so a queued confirmation e-mail — counts against
    /// `quotas.consents_per_client_per_hour` (its client address),
    /// `quotas.consents_per_network_per_hour` (its client's /24 or /48),
    /// `quotas.consents_per_address_per_hour` (its e-mail address) and
    /// `quotas.confirmation_mails_per_hour` (the holder; for an address that is not a
    /// known person, less the reserved share: [`known`]); a submission that records
    /// nothing (taken, repeated, closed) counts against none. Over a quota the outcome is
    /// [`ConsentOutcome::Throttled`] and nothing is recorded.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`]; [`ServiceError::Input`] for a bad e-mail address. The
    /// per-person cap is not applied here but by [`Intents::confirm`], so that the answer
    /// never tells a stranger whether an address is at the cap.
    pub fn give_consent_from(
        &self,
        token: &str,
        email: &str,
        language: &str,
        client: ClientKey,
    ) -> Result<ConsentOutcome> {
        let email = validate_email(email)?;
        let rec = self.by_token("consent", token)?;
        let now = self.now();
        let secs = now.unix_timestamp();
        let q = &self.base.quotas();
        let global = if self.known_person(&email)? { Rule::MailsGlobal } else { Rule::MailsUnconfirmed };
        let network = Key::network_of(client);
        let client = Key::Client(client);
        // One mailbox, one quota: `a+1@x` and `A+2@x` share it (the folding of person keys).
        let address = Key::Address(crypto::token_hash("address", &crate::base::person::normalise_email(&email)));
        let units = [
            (Rule::ConsentsPerClient, &client),
            (Rule::ConsentsPerNetwork, &network),
            (Rule::ConsentsPerAddress, &address),
            (global, &Key::Global),
        ];
        let mut taken = Vec::new();
        for (rule, key) in units {
            if let Err(e) = q.take(rule, key, secs) {
                for (r, k) in taken {
                    q.refund(r, k, secs);
                }
                tracing::info!(rule = e.rule.setting(), "consent refused: quota used up");
                return Ok(ConsentOutcome::Throttled(e));
            }
            taken.push((rule, key));
        }
        let refund = || {
            for (r, k) in units {
                q.refund(r, k, secs);
            }
        };
        let text = self.base.consent().get(language);
        let confirm = crypto::new_intent_token(&rec.id);
        let manage = crypto::new_intent_token(&rec.id);
        let base = &self.base.settings().public_url.base;
        let content = crate::messages::confirmation(
            self.base.settings(),
            &email,
            &rec.to_intent(now),
            rec.cadence,
            &format!("{base}/confirm/{}", confirm.expose()),
            &format!("{base}/results/{}", manage.expose()),
            &format!("{base}/withdraw/{}", manage.expose()),
            &format!("{base}/unsubscribe/{}", manage.expose()),
        );
        let outcome = self.base.write(|tx| -> Result<ConsentOutcome> {
            let mut rec: IntentRecord = tx.intent(&rec.id)?.ok_or(ServiceError::NotFound)?;
            match rec.effective_status(now) {
                Status::AwaitingConsent => {}
                Status::AwaitingEmailConfirmation | Status::Active => {
                    // The same person submitting again (double click, reload) is not a
                    // takeover: answer as before, queue nothing new.
                    let same =
                        open_contact(self.base.keys(), &rec)?.is_some_and(|c| c.expose().eq_ignore_ascii_case(&email));
                    return Ok(if same { ConsentOutcome::Repeated } else { ConsentOutcome::Taken });
                }
                _ => return Ok(ConsentOutcome::Closed),
            }
            // The per-person cap is applied at confirmation (see the docs above).
            rec.person = self.person_of(&**tx, &rec, Some(&email))?;
            rec.status = Status::AwaitingEmailConfirmation;
            rec.contact = Some(self.base.keys().seal_str(&email)?);
            rec.consent = Some(ConsentRecord {
                at: Stamp::of(now),
                text_version: text.version.clone(),
                language: text.language.clone(),
            });
            rec.confirm_expires_at =
                Some(Stamp::of(now + time::Duration::seconds(self.base.settings().confirm_ttl_secs as i64)));
            rec.updated_at = Stamp::of(now);
            tx.put_intent(&rec, false)?;
            tx.put_token(&crypto::token_key("confirm", confirm.expose()), &rec.id)?;
            tx.put_token(&crypto::token_key("manage", manage.expose()), &rec.id)?;
            self.base.enqueue(tx, Some(&rec.id), &content)?;
            Ok(ConsentOutcome::Recorded)
        });
        let outcome = outcome.inspect_err(|_| refund())?;
        if outcome != ConsentOutcome::Recorded {
            refund();
        } else {
            tracing::info!(intent = %rec.id, "consent recorded; confirmation e-mail queued");
            self.base.outbox().wake();
        }
        Ok(outcome)
    }

    /// The intent behind a confirmation token (for the page; never changes state).
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn confirm_view(&self, token: &str) -> Result<Intent> {
        Ok(self.by_token("confirm", token)?.into_intent(self.now()))
    }

    /// Confirms the e-mail (POST only): `awaiting_email_confirmation → active`, then
    /// matches the catalogue for the intent, all in one transaction (PROTOCOL.md §4.3).
    ///
    /// # Errors
    /// [`ServiceError::NotFound`]; [`ServiceError::PersonCap`] when the person already
    /// holds the most active intents one person may (the intent stays awaiting
    /// confirmation; the link works again once one is withdrawn or ended); storage
    /// errors.
    pub fn confirm(&self, token: &str) -> Result<ConfirmOutcome> {
        let rec = self.by_token("confirm", token)?;
        let now = self.now();
        let out = self.base.write(|tx| -> Result<(ConfirmOutcome, u64)> {
            let mut rec: IntentRecord = tx.intent(&rec.id)?.ok_or(ServiceError::NotFound)?;
            match rec.effective_status(now) {
                Status::AwaitingEmailConfirmation => {}
                Status::Active => return Ok((ConfirmOutcome::AlreadyActive, 0)),
                _ => return Ok((ConfirmOutcome::Closed, 0)),
            }
            if rec.person.is_none() {
                // Consent given before person keys existed.
                rec.person = self.person_of(&**tx, &rec, None)?;
            }
            self.check_person_cap(tx, &rec)?;
            rec.status = Status::Active;
            rec.confirmed_at = Some(Stamp::of(now));
            rec.updated_at = Stamp::of(now);
            let n = self.catalogue.match_catalogue_tx(tx, &mut rec, now)?;
            tx.put_intent(&rec, true)?;
            if let Some(person) = &rec.person {
                // The person is known from now on (see `known`).
                tx.put_record(Ns::Confirmed, person, &Stamp::of(now))?;
            }
            Ok((ConfirmOutcome::Activated, n))
        })?;
        if out.0 == ConfirmOutcome::Activated {
            tracing::info!(intent = %rec.id, delivered = out.1, "intent confirmed and active");
            self.base.outbox().wake();
        }
        Ok(out.0)
    }

    /// The results page of a manage token (from an e-mail): the intent and its
    /// deliveries, newest first (at most 100).
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn results_view(&self, token: &str) -> Result<ResultsView> {
        self.results_of(&self.by_token("manage", token)?)
    }

    /// The results view of `rec`: the intent and its newest 100 deliveries.
    fn results_of(&self, rec: &IntentRecord) -> Result<ResultsView> {
        let deliveries = self.base.store().read(|rx| with_offers(rx, &rec.id, rx.latest_deliveries(&rec.id, 100)?))?;
        Ok(ResultsView { intent: rec.to_intent(self.now()), deliveries, cadence: rec.cadence })
    }

    /// The intent behind a manage token (withdraw pages), without its deliveries.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn manage_view(&self, token: &str) -> Result<Intent> {
        Ok(self.by_token("manage", token)?.into_intent(self.now()))
    }

    /// Sets the delivery cadence through a manage token (a cadence e-mail's link), see
    /// [`Intents::set_cadence_id`].
    ///
    /// # Errors
    /// As [`Intents::set_cadence_id`].
    pub fn set_cadence_by_manage(&self, token: &str, cadence: Cadence) -> Result<Intent> {
        let rec = self.by_token("manage", token)?;
        self.set_cadence_id(&rec.id, cadence)
    }

    /// Sets how often the match digest may go out in one transaction, rescheduling the
    /// pending digest ([`deliveries::set_cadence_tx`]). Possible while the intent is
    /// awaiting its e-mail confirmation or active; the cadence it has changes nothing.
    /// Returns the intent as it is now.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`]; [`ServiceError::State`] once the intent has ended
    /// (expired or withdrawn) or before consent; storage errors.
    pub(crate) fn set_cadence_id(&self, id: &str, cadence: Cadence) -> Result<Intent> {
        let now = self.now();
        let changed = self.base.write(|tx| -> Result<Option<IntentRecord>> {
            let mut rec: IntentRecord = tx.intent(id)?.ok_or(ServiceError::NotFound)?;
            cadence_changeable(rec.effective_status(now))?;
            if rec.cadence == cadence {
                return Ok(None);
            }
            deliveries::set_cadence_tx(&self.base, tx, &mut rec, cadence, now)?;
            rec.updated_at = Stamp::of(now);
            let active = rec.effective_status(now) == Status::Active;
            tx.put_intent(&rec, active)?;
            Ok(Some(rec))
        })?;
        match changed {
            Some(rec) => {
                tracing::info!(intent = %id, cadence = cadence.key(), "delivery cadence changed");
                // A resumed or shortened cadence may make a digest due now.
                self.base.outbox().wake();
                Ok(rec.to_intent(now))
            }
            None => self.by_id(id),
        }
    }

    /// The public view of intent `id`.
    fn by_id(&self, id: &str) -> Result<Intent> {
        let rec: IntentRecord = self.base.store().read(|rx| rx.intent(id))?.ok_or(ServiceError::NotFound)?;
        Ok(rec.into_intent(self.now()))
    }

    /// Withdraws through a manage token (withdraw page POST, RFC 8058 one-click).
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn withdraw_by_manage(&self, token: &str) -> Result<()> {
        let rec = self.by_token("manage", token)?;
        self.withdraw_id(&rec.id)
    }

    /// The person key of `rec` (`base::person`): the owner account's address (the account
    /// still existing), else `email` (the address being consented with), else the
    /// intent's sealed contact; `None` without any. Opens a sealed address: called when
    /// an intent gets its person key, never to count.
    pub(crate) fn person_of<R: Reads>(
        &self,
        rx: &R,
        rec: &IntentRecord,
        email: Option<&str>,
    ) -> Result<Option<String>> {
        if let Some(owner) = &rec.owner {
            if let Some(a) = rx.record::<crate::accounts::Account>(Ns::Account, owner)? {
                return Ok(Some(self.base.person_key(self.base.keys().open_str(&a.email)?.expose())));
            }
        }
        if let Some(e) = email {
            return Ok(Some(self.base.person_key(e)));
        }
        Ok(open_contact(self.base.keys(), rec)?.map(|c| self.base.person_key(c.expose())))
    }

    /// The refusal of the per-person cap in force.
    fn person_cap(&self) -> ServiceError {
        ServiceError::PersonCap { limit: self.base.settings().quotas.active_intents_per_person }
    }

    /// [`ServiceError::PersonCap`] when `rec` (about to become active) would be one too
    /// many for its person — checked before the work of the activation (matching);
    /// [`crate::base::Writes::put_intent`] checks the same again.
    fn check_person_cap(&self, tx: &crate::base::Writes<'_, '_>, rec: &IntentRecord) -> Result<()> {
        match &rec.person {
            Some(p) if tx.person_at_cap(p, &rec.id)? => Err(self.person_cap()),
            _ => Ok(()),
        }
    }
}
