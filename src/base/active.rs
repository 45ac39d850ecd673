//! The active set in memory: every intent record in the store's active set, kept in
//! step by [`super::Base::write`] (applied after each commit, like the matching engine),
//! so that the calls that read many active intents — the demand summaries
//! (`crate::demand`) and the sellers' open intents (`crate::sellers`) — filter records
//! in memory instead of reading and decoding every one from the store (166 ms at 20 000
//! active intents in redb). Each change bumps a generation, which
//! [`ActiveSet::derived`] values follow; the times a filter needs ([`Times`]) are taken
//! once, when a record enters the set.
//!
//! Memory: one decoded record per active intent (about 1–2 KB each with its sealed
//! fields), beside the matching engine's view of the same intents.

use crate::protocol::Status;
use crate::records::IntentRecord;
use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use time::{Date, Duration, OffsetDateTime};

/// A derived value with the generation and time it was computed at.
type Derived = (u64, OffsetDateTime, Arc<dyn Any + Send + Sync>);

/// The times of a record of the set, and the facets a scan filters on first, taken when
/// it entered (a change of the record puts it again). Kept beside the record, so that a
/// scan of 20 000 intents reads the record only of those that pass (the demand cell of
/// one area: reading every record cost a few cache misses each, 5 ms in all).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Times {
    /// `validUntil`, in unix nanoseconds ([`nanos`]): compared as an integer in a scan.
    pub valid_until: i128,
    /// `updatedAt`: the last change.
    pub updated_at: OffsetDateTime,
    /// When it became active (`confirmedAt`, else `createdAt`), in unix nanoseconds.
    pub became_active: i128,
    /// Whether the status is `active`.
    active: bool,
    /// Whether its visibility is pseudonymous (open to sellers).
    pub pseudonymous: bool,
    /// The budget's visible `max` (`None`: no budget or no max).
    pub budget_max: Option<f64>,
    /// The budget's currency as [`code_key`] writes it (`None`: no budget, or a longer
    /// code: read the record).
    pub currency: Option<u64>,
    /// The category's key when it is one of the protocol's (`None`: read the record).
    pub category: Option<&'static str>,
    /// The area's only region as [`code_key`] writes it, when it has exactly one of at
    /// most 8 bytes (`None`: the whole country, several regions or a longer code: read
    /// the record).
    pub region: Option<u64>,
    /// `buyBy` as a date (`None`: none, or not a readable full-date).
    pub buy_by: Option<Date>,
    /// The person key ([`IntentRecord::person`]) as a 64-bit hash ([`person_hash`];
    /// `None`: no key), so that a count of distinct people compares integers.
    pub person: Option<u64>,
}

/// A person key as 64 bits (SipHash-1-3 with fixed keys). Two people whose keys collide
/// count as one, and so can only withhold a cell under k, never show one (person keys
/// are keyed digests, so a collision cannot be aimed).
pub fn person_hash(key: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    key.hash(&mut h);
    h.finish()
}

/// `code` upper case in 8 bytes, zero-padded, as one integer (little-endian); `None`
/// when longer (a region or a currency code).
pub fn code_key(code: &str) -> Option<u64> {
    let mut key = [0u8; 8];
    key.get_mut(..code.len())?.copy_from_slice(code.as_bytes());
    key.make_ascii_uppercase();
    Some(u64::from_le_bytes(key))
}

/// An instant in unix nanoseconds, as [`Times`] keeps its times.
pub fn nanos(at: OffsetDateTime) -> i128 {
    at.unix_timestamp_nanos()
}

impl Times {
    fn of(rec: &IntentRecord) -> Self {
        let region = match rec.area.regions.as_slice() {
            [one] => code_key(one),
            _ => None,
        };
        Self {
            valid_until: nanos(rec.valid_until.at()),
            updated_at: rec.updated_at.at(),
            became_active: nanos(rec.confirmed_at.unwrap_or(rec.created_at).at()),
            active: rec.status == Status::Active,
            pseudonymous: rec.visibility == crate::protocol::Visibility::Pseudonymous,
            budget_max: rec.budget.as_ref().and_then(|b| b.max),
            currency: rec.budget.as_ref().and_then(|b| code_key(&b.currency)),
            category: crate::protocol::category(&rec.category).map(|c| c.key),
            region,
            buy_by: rec.buy_by.as_deref().and_then(|d| crate::clock::parse_date(d).ok()),
            person: rec.person.as_deref().map(person_hash),
        }
    }

    /// Whether the record (whose times these are) is active at `now` (unix nanoseconds,
    /// [`nanos`]): exactly `rec.effective_status(now) == Status::Active`, without parsing
    /// or reading it.
    pub fn active_at(&self, now: i128) -> bool {
        self.active && now <= self.valid_until
    }

    /// Whether `rec` (whose facets these are) is of `category`.
    pub fn is_of(&self, rec: &IntentRecord, category: &str) -> bool {
        self.category_of(rec) == category
    }

    /// The category of `rec` (whose facets these are), read from it only when it is
    /// not one of the protocol's.
    pub fn category_of<'r>(&self, rec: &'r IntentRecord) -> &'r str {
        self.category.unwrap_or(&rec.category)
    }
}

/// A record of the set with its parsed times.
type Entry = (Arc<IntentRecord>, Times);

/// The records of the set under a read lock ([`ActiveSet::read`]).
#[derive(Clone, Copy)]
pub struct Records<'a>(&'a HashMap<String, Entry>);

impl<'a> Records<'a> {
    /// Every record with its times, in no particular order.
    pub fn iter(self) -> impl Iterator<Item = (&'a Arc<IntentRecord>, &'a Times)> {
        self.0.values().map(|(r, t)| (r, t))
    }
}

/// The records of the store's active set (see the module docs).
#[derive(Default)]
pub struct ActiveSet {
    records: RwLock<(u64, HashMap<String, Entry>)>,
    derived: Mutex<HashMap<String, Derived>>,
}

impl std::fmt::Debug for ActiveSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActiveSet").field("generation", &self.generation()).field("len", &self.len()).finish()
    }
}

impl ActiveSet {
    /// Puts (or replaces) a record of the active set.
    pub(super) fn put(&self, rec: IntentRecord) {
        let mut g = self.records.write().unwrap_or_else(PoisonError::into_inner);
        g.0 += 1;
        let times = Times::of(&rec);
        g.1.insert(rec.id.clone(), (Arc::new(rec), times));
    }

    /// Removes an intent from the set (no-op when absent, but the generation moves).
    pub(super) fn remove(&self, id: &str) {
        let mut g = self.records.write().unwrap_or_else(PoisonError::into_inner);
        if g.1.remove(id).is_some() {
            g.0 += 1;
        }
    }

    /// How many times the set has changed since start.
    pub fn generation(&self) -> u64 {
        self.records.read().unwrap_or_else(PoisonError::into_inner).0
    }

    /// Records in the set (in the store's active set: effective status still to check).
    pub fn len(&self) -> usize {
        self.records.read().unwrap_or_else(PoisonError::into_inner).1.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Runs `f` on the records and their times under one read lock (writers wait for it:
    /// keep `f` cheap), so that `f` may hold references into the set while it decides
    /// which records to keep (cloning an `Arc` touches the record's memory).
    pub fn read<T>(&self, f: impl FnOnce(Records<'_>) -> T) -> T {
        let g = self.records.read().unwrap_or_else(PoisonError::into_inner);
        f(Records(&g.1))
    }

    /// Calls `each` with every record and its times, under one read lock, and returns
    /// the generation the records belong to.
    pub fn scan(&self, mut each: impl FnMut(&IntentRecord, &Times)) -> u64 {
        let g = self.records.read().unwrap_or_else(PoisonError::into_inner);
        for (r, t) in g.1.values() {
            each(r, t);
        }
        g.0
    }

    /// The value derived under `key` (computed by `compute`, given `now`): the kept one
    /// when it was computed for the current generation no longer than `max_age` before
    /// `now` (and not after it: a clock set back recomputes), else computed again (not
    /// under any lock: two callers may both compute) and kept. Returns it with the time
    /// it was computed at.
    ///
    /// # Errors
    /// What `compute` returns (nothing is kept then).
    pub fn derived<T: Any + Send + Sync, E>(
        &self,
        key: &str,
        now: OffsetDateTime,
        max_age: Duration,
        compute: impl FnOnce() -> Result<T, E>,
    ) -> Result<(Arc<T>, OffsetDateTime), E> {
        let generation = self.generation();
        let kept = self.derived.lock().unwrap_or_else(PoisonError::into_inner).get(key).cloned();
        if let Some((g, at, v)) = kept {
            if g == generation && at <= now && now - at <= max_age {
                if let Ok(v) = v.downcast::<T>() {
                    return Ok((v, at));
                }
            }
        }
        let v = Arc::new(compute()?);
        let any: Arc<dyn Any + Send + Sync> = v.clone();
        self.derived.lock().unwrap_or_else(PoisonError::into_inner).insert(key.to_owned(), (generation, now, any));
        Ok((v, now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_values_last_for_one_generation_and_max_age() {
        let set = ActiveSet::default();
        let t0 = crate::clock::parse_rfc3339("2026-12-01T10:00:00Z").unwrap();
        let mut runs = 0;
        let mut get = |now: OffsetDateTime| {
            set.derived("k", now, Duration::seconds(10), || {
                runs += 1;
                Ok::<_, ()>(runs)
            })
            .unwrap()
        };
        assert_eq!(*get(t0).0, 1);
        assert_eq!(get(t0 + Duration::seconds(10)), (Arc::new(1), t0), "kept within max_age");
        assert_eq!(*get(t0 + Duration::seconds(11)).0, 2, "too old");
        assert_eq!(*get(t0).0, 3, "a clock set back recomputes");
        set.put(super::super::tests::active("int_1"));
        assert_eq!((set.generation(), set.len()), (1, 1));
        let rec = super::super::tests::active("int_1");
        set.scan(|_, t| {
            let until = OffsetDateTime::from_unix_timestamp_nanos(t.valid_until).unwrap();
            for at in [t0, until, until + Duration::nanoseconds(1)] {
                assert_eq!(t.active_at(nanos(at)), rec.effective_status(at) == Status::Active, "{at}");
            }
        });
        let (v, _) = set.derived("k", t0, Duration::seconds(10), || Ok::<_, ()>(9)).unwrap();
        assert_eq!(*v, 9, "a change of the set recomputes");
        set.remove("nope");
        assert_eq!(set.generation(), 1, "removing an absent id changes nothing");
        set.remove("int_1");
        assert_eq!((set.generation(), set.len()), (2, 0));
    }
}
