//! The person index (v3): which active intents each person holds, so that the
//! per-person cap (PROTOCOL.md §3 "Limits") is counted inside the intent write without
//! reading intent records. A person is an opaque key the services compute
//! (`base::person`); the store only keeps it. Its two tables (`person_active`,
//! `intent_person`: see `schema`) are written only by [`Tx::set_intent_person`] (from the
//! one intent write).

use super::schema::{INTENT_PERSON, PERSON_ACTIVE};
use super::{Result, Tables, Tx};
use std::ops::Bound;

/// Upper bound of intent ids in a range (ids are ASCII).
const ID_END: &str = "\u{10ffff}";

pub(super) fn count<R: Tables + ?Sized>(
    r: &R,
    person: &str,
    after_micros: i64,
    except: &str,
    limit: usize,
) -> Result<usize> {
    let rows = r.table(PERSON_ACTIVE)?;
    let mut n = 0;
    if limit == 0 {
        return Ok(0);
    }
    let bounds = (Bound::Included((person, "")), Bound::Included((person, ID_END)));
    rows.scan(bounds, false, |(_, id), until| {
        if id != except && until > after_micros {
            n += 1;
        }
        Ok(n < limit)
    })?;
    Ok(n)
}

impl Tx<'_> {
    /// Sets the person-index row of intent `id`: `Some((person key, validUntil µs))` for
    /// an intent in the active set with a person key, `None` to remove it (left the set,
    /// no person key, deleted). Replaces a row under another person key.
    pub fn set_intent_person(&mut self, id: &str, entry: Option<(&str, i64)>) -> Result<()> {
        let mut by_id = self.open(INTENT_PERSON)?;
        let mut rows = self.open(PERSON_ACTIVE)?;
        let old = by_id.get(id)?;
        if let Some(old) = old.as_deref().filter(|o| entry.is_none_or(|(p, _)| p != *o)) {
            rows.remove((old, id))?;
        }
        if let Some((person, until)) = entry {
            rows.insert((person, id), until)?;
        }
        match entry.map(|(p, _)| p) {
            Some(p) if old.as_deref() != Some(p) => by_id.insert(id, p).map(drop)?,
            None if old.is_some() => by_id.remove(id).map(drop)?,
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Reads, StoreError};

    #[test]
    fn the_index_follows_every_change_and_counts_only_current_rows() {
        for (backend, s, _d) in crate::store::testpg::both() {
            eprintln!("backend: {backend}");
            s.write(|tx| {
                tx.set_intent_person("int_a", Some(("per_x", 100)))?;
                tx.set_intent_person("int_b", Some(("per_x", 200)))?;
                tx.set_intent_person("int_c", Some(("per_y", 300)))?;
                Ok::<_, StoreError>(())
            })
            .unwrap();
            let count =
                |p: &str, after: i64, except: &str| s.read(|rx| rx.person_active(p, after, except, 10)).unwrap();
            assert_eq!(count("per_x", 0, ""), 2);
            assert_eq!(count("per_x", 100, ""), 1, "validUntil at or before `after` no longer counts");
            assert_eq!(count("per_x", 0, "int_a"), 1, "the intent itself is left out");
            assert_eq!(count("per_", 0, ""), 0, "a prefix of a key is another person");
            assert_eq!(s.read(|rx| rx.person_active("per_x", 0, "", 1)).unwrap(), 1, "bounded by the limit");
            assert_eq!(s.read(|rx| rx.intent_person("int_b")).unwrap(), Some(("per_x".into(), 200)));

            // Moving to another person, leaving, and a no-op removal.
            s.write(|tx| {
                tx.set_intent_person("int_b", Some(("per_y", 250)))?;
                tx.set_intent_person("int_a", None)?;
                tx.set_intent_person("int_z", None)
            })
            .unwrap();
            assert_eq!(count("per_x", 0, ""), 0);
            assert_eq!(count("per_y", 0, ""), 2);
            assert_eq!(s.read(|rx| rx.intent_person("int_a")).unwrap(), None);
            assert_eq!(s.read(|rx| rx.intent_person("int_b")).unwrap(), Some(("per_y".into(), 250)));
        }
    }
}
