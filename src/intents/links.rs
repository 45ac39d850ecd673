//! What a link that a stranger could hold may do (scanners and shared inboxes publish
//! links): a consent link already used answers only its own person's repeated
//! submission with success ([`Intents::consent_repeated`]); a cadence change on the
//! results page applies at once only for the person signed in, otherwise it is asked
//! for by e-mail ([`cadence_proof_purpose`]). Withdrawal and the RFC 8058 unsubscribe
//! stay one click.

use super::Intents;
use crate::base::quota::{Exceeded, Key, Rule};
use crate::base::{open_contact, Result, ServiceError};
use crate::crypto;
use crate::protocol::Status;
use crate::records::{Cadence, IntentRecord};
use crate::store::{Ns, Reads};

/// What became of a cadence change asked for on the results page.
#[derive(Debug, Clone, PartialEq)]
pub enum CadenceRequest {
    /// Made (the person is signed in, or the cadence was already this one).
    Applied,
    /// An e-mail asking the person to confirm the change was queued; nothing changed.
    Mailed,
    /// Mails to this address, or the holder's mails, are used up for the hour
    /// (`quotas.consents_per_address_per_hour`, `quotas.confirmation_mails_per_hour`);
    /// nothing queued.
    Throttled(Exceeded),
}

/// The CSRF purpose of the proof in a cadence e-mail's link: a token made by
/// [`crate::crypto::KeyRing::csrf_token`] for this purpose, bound to the manage token,
/// valid for two hours. No page issues one; only the e-mail to the person carries it.
pub fn cadence_proof_purpose(cadence: Cadence) -> String {
    format!("cadence-mail:{}", cadence.key())
}

impl Intents {
    /// Asks for `cadence` through the manage token `token` (the results page POST):
    /// applied at once when `account` (the signed-in account, if any) is the intent's
    /// owner or its person (the same mailbox); otherwise a confirmation e-mail with a
    /// link to `/results/{token}/cadence/{cadence}?k=PROOF` goes to the intent's
    /// address (counted like a confirmation e-mail: per address and holder-wide).
    ///
    /// # Errors
    /// [`ServiceError::NotFound`]; [`ServiceError::State`] once the intent has ended or
    /// before consent; storage and key errors.
    pub fn request_cadence_by_manage(
        &self,
        token: &str,
        cadence: Cadence,
        account: Option<&str>,
    ) -> Result<CadenceRequest> {
        let rec = self.by_token("manage", token)?;
        let now = self.now();
        super::cadence_changeable(rec.effective_status(now))?;
        if rec.cadence == cadence || account.map(|a| self.is_persons(&rec, a)).transpose()? == Some(true) {
            return self.set_cadence_id(&rec.id, cadence).map(|_| CadenceRequest::Applied);
        }
        let contact = open_contact(self.base.keys(), &rec)?
            .ok_or_else(|| ServiceError::State("state: the intent has no address to ask".into()))?;
        let email = contact.expose();
        let secs = now.unix_timestamp();
        let q = &self.base.quotas();
        let address = Key::Address(crypto::token_hash("address", &crate::base::person::normalise_email(email)));
        if let Err(e) = q.take(Rule::ConsentsPerAddress, &address, secs) {
            return Ok(CadenceRequest::Throttled(e));
        }
        if let Err(e) = q.take(Rule::MailsGlobal, &Key::Global, secs) {
            q.refund(Rule::ConsentsPerAddress, &address, secs);
            return Ok(CadenceRequest::Throttled(e));
        }
        let base = &self.base.settings().public_url.base;
        let proof = self.base.keys().csrf_token(&cadence_proof_purpose(cadence), token, secs);
        let content = crate::messages::cadence_change(
            self.base.settings(),
            email,
            &rec.to_intent(now),
            cadence,
            &format!("{base}/results/{token}/cadence/{}?k={proof}", cadence.key()),
            &format!("{base}/unsubscribe/{token}"),
        );
        self.base.write(|tx| self.base.enqueue(tx, Some(&rec.id), &content)).inspect_err(|_| {
            q.refund(Rule::ConsentsPerAddress, &address, secs);
            q.refund(Rule::MailsGlobal, &Key::Global, secs);
        })?;
        tracing::info!(intent = %rec.id, cadence = cadence.key(), "cadence change asked for; confirmation e-mail queued");
        self.base.outbox().wake();
        Ok(CadenceRequest::Mailed)
    }

    /// Whether `email` is the address that consented on the consent link `token` (the
    /// intent awaiting its confirmation or active): the same person submitting the form
    /// again (a double click, the back button), who gets the success page again. Records
    /// and queues nothing, and counts against no quota.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`]; storage and key errors. A malformed address is
    /// simply not the same (`false`).
    pub fn consent_repeated(&self, token: &str, email: &str) -> Result<bool> {
        let Ok(email) = crate::protocol::input::validate_email(email) else { return Ok(false) };
        let rec = self.by_token("consent", token)?;
        if !matches!(rec.effective_status(self.now()), Status::AwaitingEmailConfirmation | Status::Active) {
            return Ok(false);
        }
        Ok(open_contact(self.base.keys(), &rec)?.is_some_and(|c| c.expose().eq_ignore_ascii_case(&email)))
    }

    /// Whether `account` is the owner of `rec` or the same person (its address's person
    /// key is the intent's).
    fn is_persons(&self, rec: &IntentRecord, account: &str) -> Result<bool> {
        if rec.owner.as_deref() == Some(account) {
            return Ok(true);
        }
        let Some(person) = &rec.person else { return Ok(false) };
        let Some(a) = self.base.store().read(|rx| rx.record::<crate::accounts::Account>(Ns::Account, account))? else {
            return Ok(false);
        };
        Ok(self.base.person_key(self.base.keys().open_str(&a.email)?.expose()) == *person)
    }
}
