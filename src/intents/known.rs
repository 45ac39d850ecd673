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
//!
//! A mark lasts [`MARK_LIFETIME`] (365 days) from the person's last confirmation: past
//! it the mark no longer counts, and [`Intents::purge`] deletes it
//! ([`purge_marks`]). When the sweep erases a person's contact (PROTOCOL.md §4.6,
//! `contact_retention_days` after an intent ended) and that person holds no other
//! active intent, their mark goes in the same transaction ([`forget_if_inactive`]).

use super::Intents;
use crate::base::Result;
use crate::store::{Ns, Reads};

/// How long a `Confirmed` mark lasts after the person's last confirmation: 365 days, a
/// year of the holder's use (a person who buys a car, a flat, a bike confirms rarely).
pub const MARK_LIFETIME: time::Duration = time::Duration::days(365);

/// Whether a mark written at `confirmed` (unix seconds) still counts at `now` (unix
/// seconds): younger than [`MARK_LIFETIME`].
fn alive(confirmed: i64, now: i64) -> bool {
    now.saturating_sub(confirmed) < MARK_LIFETIME.whole_seconds()
}

impl Intents {
    /// Whether `email` belongs to a known person (see the module docs). One read.
    ///
    /// # Errors
    /// Storage errors.
    pub(super) fn known_person(&self, email: &str) -> Result<bool> {
        let person = self.base.person_key(email);
        let account = crate::accounts::email_key(self.base.keys(), email);
        let now = self.now().unix_timestamp();
        Ok(self.base.store().read(|rx| -> crate::store::Result<bool> {
            Ok(rx.record::<i64>(Ns::Confirmed, &person)?.is_some_and(|t| alive(t, now))
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

/// Deletes in `tx` the marks past [`MARK_LIFETIME`] at `now` (unix seconds), or that do
/// not decode; how many. One pass over the marks (one small row per person).
///
/// # Errors
/// Storage errors.
pub(super) fn purge_marks(tx: &mut crate::base::Writes<'_, '_>, now: i64) -> Result<u64> {
    let mut n = 0;
    for (person, raw) in tx.records::<serde_json::Value>(Ns::Confirmed)? {
        if raw.as_i64().is_none_or(|t| !alive(t, now)) {
            tx.remove_record(Ns::Confirmed, &person)?;
            n += 1;
        }
    }
    Ok(n)
}

/// Deletes in `tx` the mark of `person` when they hold no active intent other than
/// `except` (an intent id): called where the sweep erases the contact of `except`.
///
/// # Errors
/// Storage errors.
pub(super) fn forget_if_inactive(tx: &mut crate::base::Writes<'_, '_>, person: &str, except: &str) -> Result<()> {
    if tx.person_active(person, i64::MIN, except, 1)? == 0 {
        tx.remove_record(Ns::Confirmed, person)?;
    }
    Ok(())
}
