//! Known people, for the reserved share of the confirmation-mail quota
//! (`quotas.confirmation_mails_reserved_percent`): a consent for an address that
//! confirmed an intent before, holds an active intent, or has an account may use the
//! whole of `quotas.confirmation_mails_per_hour`; any other stops short of the reserved
//! share ([`crate::base::quota::Rule::MailsUnconfirmed`]), so that a flood of consents
//! for new addresses never shuts out the people who use the holder. Nothing of this is
//! shown: the consent page answers the same whichever share a consent was counted in.
//!
//! A confirmation leaves a mark: namespace `Confirmed`, keyed by the person key
//! ([`crate::base::person`], never the address), holding a [`Stamp`]. It counts for
//! [`MARK_LIFETIME`] and is then purged ([`purge_marks`]); a mark whose time does not
//! read is an error naming it when asked for (never taken as lapsed nor as 1970), and
//! the purge leaves it with a warning. When the sweep erases a person's contact
//! (PROTOCOL.md §4.6) and they hold no other active intent, their mark goes too
//! ([`forget_if_inactive`]).

use super::Intents;
use crate::base::Result;
use crate::records::Stamp;
use crate::store::{Ns, Reads};
use time::OffsetDateTime;

/// How long a `Confirmed` mark lasts after the person's last confirmation: 365 days, a
/// year of the holder's use (a person who buys a car, a flat, a bike confirms rarely).
pub const MARK_LIFETIME: time::Duration = time::Duration::days(365);

/// Whether a mark written at `confirmed` still counts at `now`: younger than
/// [`MARK_LIFETIME`].
fn alive(confirmed: Stamp, now: OffsetDateTime) -> bool {
    now - confirmed.at() < MARK_LIFETIME
}

impl Intents {
    /// Whether `email` belongs to a known person (see the module docs). One read.
    ///
    /// # Errors
    /// Storage errors; [`crate::store::StoreError::Corrupt`] naming the person's mark
    /// when its time does not read.
    pub(super) fn known_person(&self, email: &str) -> Result<bool> {
        let person = self.base.person_key(email);
        let account = crate::accounts::email_key(self.base.keys(), email);
        let now = self.now();
        Ok(self.base.store().read(|rx| -> crate::store::Result<bool> {
            Ok(rx.record::<Stamp>(Ns::Confirmed, &person)?.is_some_and(|t| alive(t, now))
                || rx.person_active(&person, i64::MIN, "", 1)? > 0
                || rx.record::<String>(Ns::AccountEmail, &account)?.is_some())
        })?)
    }
}

/// Deletes in `tx` the marks past [`MARK_LIFETIME`] at `now`; how many. A mark that does
/// not decode is left with a warning naming it.
pub(super) fn purge_marks(tx: &mut crate::base::Writes<'_, '_>, now: OffsetDateTime) -> Result<u64> {
    let mut n = 0;
    for (person, confirmed) in tx.readable_records::<Stamp>(Ns::Confirmed)?.0 {
        if !alive(confirmed, now) {
            tx.remove_record(Ns::Confirmed, &person)?;
            n += 1;
        }
    }
    Ok(n)
}

/// Deletes in `tx` the mark of `person` when they hold no active intent other than
/// `except` (an intent id): called where the sweep erases the contact of `except`.
pub(super) fn forget_if_inactive(tx: &mut crate::base::Writes<'_, '_>, person: &str, except: &str) -> Result<()> {
    if tx.person_active(person, i64::MIN, except, 1)? == 0 {
        tx.remove_record(Ns::Confirmed, person)?;
    }
    Ok(())
}
