//! The passes over many intents: the start-up backfill of person keys and the expiry
//! sweep (both under one write transaction, reading intents by id through
//! [`readable`], which skips — and logs — a record that does not decode).

use super::{known, purge, Intents};
use crate::base::{sweep_due, Result, ServiceError};
use crate::protocol::Status;
use crate::records::{IntentRecord, Stamp};
use crate::store::{Reads, StoreError};

impl Intents {
    /// Gives every intent in the active set a person key and its person-index row when
    /// it has none (intents stored before person keys), so that demand and the cap count
    /// people. Run at start; such intents stay active even over the cap. An intent whose
    /// address cannot be opened is left without one (logged). Returns how many intents
    /// were written.
    pub fn backfill_people(&self) -> Result<usize> {
        self.base.write(|w| -> Result<usize> {
            let mut n = 0;
            for id in w.active_ids()? {
                let Some(mut rec) = readable(&**w, &id)? else { continue };
                let mut changed = false;
                if rec.person.is_none() {
                    rec.person = match self.person_of(&**w, &rec, None) {
                        Ok(p) => p,
                        Err(e) if e.is_internal() && !matches!(e, ServiceError::Crypto(_)) => return Err(e),
                        Err(e) => {
                            tracing::warn!(intent = %id, error = %e, "no person key for an active intent");
                            None
                        }
                    };
                    changed = rec.person.is_some();
                }
                let want = rec.person.as_deref().map(|p| (p.to_owned(), rec.valid_until.micros()));
                if !changed && w.intent_person(&id)? == want {
                    continue;
                }
                w.put_person(&rec)?;
                n += 1;
            }
            Ok(n)
        })
    }

    /// Persists what time already means: expired drafts of signed-in buyers, unconfirmed
    /// and past-validity intents become `expired`; contact is erased
    /// `contact_retention_days` after an intent ended (PROTOCOL.md §4.6). Returns how many
    /// records changed. A lapsed consent-link draft is left for [`Intents::purge`]. Reads
    /// only the intents the expiry index names as due ([`crate::base::sweep_due`]).
    pub fn sweep(&self) -> Result<u64> {
        let now = self.now();
        let retention = time::Duration::days(i64::from(self.base.settings().contact_retention_days));
        let ended_before = now.checked_sub(retention).map_or(i64::MIN, crate::records::micros);
        self.base.write(|tx| -> Result<u64> {
            let mut changed = 0;
            for id in tx.intents_due(crate::records::micros(now), ended_before)? {
                let Some(mut rec) = readable(&**tx, &id)? else { continue };
                if purge::lapsed_draft(&rec, now) {
                    continue;
                }
                let eff = rec.effective_status(now);
                let mut dirty = false;
                if eff != rec.status {
                    rec.status = eff;
                    rec.ended_at = Some(Stamp::of(now));
                    dirty = true;
                    tx.set_digest_due(&rec.id, None)?;
                }
                if rec.status.is_final()
                    && rec.contact.is_some()
                    && rec.ended_at.is_some_and(|e| e.at() + retention < now)
                {
                    rec.contact = None;
                    if let Some(person) = &rec.person {
                        known::forget_if_inactive(tx, person, &rec.id)?;
                    }
                    dirty = true;
                }
                if dirty {
                    rec.updated_at = Stamp::of(now);
                    tx.put_intent(&rec, rec.status == Status::Active)?;
                    changed += 1;
                } else {
                    // Not due after all (due within this microsecond, or entered as due
                    // by a migration): record its real times.
                    tx.set_intent_due(&rec.id, sweep_due(&rec))?;
                }
            }
            Ok(changed)
        })
    }
}

/// Intent `id` for a pass over many (the sweep, the purge, the backfill): a record that
/// does not decode is skipped with a warning naming it ([`StoreError::Corrupt`]), so
/// that nothing is erased on the strength of a value that could not be read, and one
/// damaged record stops neither the pass nor the others.
///
/// # Errors
/// Other storage errors.
pub(crate) fn readable<R: Reads + ?Sized>(r: &R, id: &str) -> Result<Option<IntentRecord>> {
    match r.intent(id) {
        Ok(rec) => Ok(rec),
        Err(e @ StoreError::Corrupt(..)) => {
            tracing::warn!(error = %e, "intent record skipped: it does not decode");
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}
