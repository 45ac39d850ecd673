//! Known people, for the reserved share of the confirmation-mail quota
//! (`quotas.confirmation_mails_reserved_percent`): a consent for an e-mail address that
//! confirmed an intent before, or that has an account, may use the whole of
//! `quotas.confirmation_mails_per_hour`; any other stops short of the reserved share
//! ([`crate::base::quota::Rule::MailsUnconfirmed`]), so that a flood of consents for
//! new addresses never shuts out the people who use the holder.
//!
//! A confirmation leaves a mark in the store: namespace `Confirmed`, keyed by the
//! person key ([`crate::base::person`]: a keyed hash of the folded address, never the
//! address), holding the unix second of the last confirmation. A person who holds an
//! active intent (the person index) counts as known too, for intents confirmed before
//! the marks existed. Nothing of this is shown to anyone: the consent page answers the
//! same whichever share a consent was counted in, until the share is used up.

use super::Intents;
use crate::base::Result;
use crate::store::{Ns, Reads};

impl Intents {
    /// Whether `email` belongs to a known person (see the module docs). One read.
    ///
    /// # Errors
    /// Storage errors.
    pub(super) fn known_person(&self, email: &str) -> Result<bool> {
        let person = self.base.person_key(email);
        let account = crate::accounts::email_key(&self.base.keys, email);
        Ok(self.base.store.read(|rx| -> crate::store::Result<bool> {
            Ok(rx.record::<i64>(Ns::Confirmed, &person)?.is_some()
                || rx.person_active(&person, i64::MIN, "", 1)? > 0
                || rx.record::<String>(Ns::AccountEmail, &account)?.is_some())
        })?)
    }
}

/// Marks `person` as known (a confirmation at `now`, unix seconds) in `tx`.
///
/// # Errors
/// Storage errors.
pub(super) fn mark_confirmed(tx: &mut crate::base::Writes<'_, '_>, person: &str, now: i64) -> Result<()> {
    tx.put_record(Ns::Confirmed, person, &now)?;
    Ok(())
}
