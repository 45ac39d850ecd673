//! Intents: the records, the active set (the matching scan set), the expiry index
//! the sweep reads instead of decoding every intent, and what an import reads of an
//! active intent (`intent_targets`).
//!
//! Every intent write goes through [`Tx::put_intent`], which keeps these in step
//! (a new draft's through [`Tx::put_new_intent`], which writes the rows `put_intent`
//! would for an id that has none).

use super::schema::{ACTIVE, INTENTS, INTENT_DUE, INTENT_ERASURE, INTENT_EXPIRY, INTENT_MATCHES, INTENT_TARGETS};
use super::table::Table;
use super::{encode, Result, Tables, Tx};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::BTreeSet;
use std::ops::Bound;

/// The right to write intent records: [`Tx::put_intent`], [`Tx::put_new_intent`] and [`Tx::remove_intent`]
/// take it. Only [`super::Store::intent_key`] makes one, once per open store (and, in test builds,
/// `IntentKey::for_tests`), so the compiler holds every intent write to the one holder
/// of the key: `base::Base`, whose `Base::write` keeps the rules of an intent write (the
/// active set, the expiry and person indexes, the per-person cap, the matching engine).
#[derive(Debug)]
pub struct IntentKey {
    pub(super) _only_from_the_store: (),
}

impl IntentKey {
    /// A key for tests that write intent records directly (as an older isto left them,
    /// say); only in test builds and with the `testkit` feature, never in `isto serve`.
    #[cfg(any(test, feature = "testkit"))]
    #[doc(hidden)]
    pub fn for_tests() -> Self {
        Self { _only_from_the_store: () }
    }
}

/// When the sweep must next look at an intent, in unix µs (floored). The caller of
/// [`Tx::put_intent`] computes it from the record (the store does not read records).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IntentDue {
    /// When the intent's effective status next changes by itself (a draft's, an
    /// unconfirmed intent's or an active intent's deadline); `None` when it never does.
    pub status_change: Option<i64>,
    /// When the intent ended, while it still holds a contact (the sweep erases it a
    /// retention period later); `None` otherwise.
    pub contact_ended: Option<i64>,
}

/// A type read from the `intents` table (every intent read: [`super::Reads::intent`],
/// `all_intents`, `each_intent`, [`super::DeliveryLog::intent`]). An intent's delivery
/// bookkeeping — how many deliveries it had and the delivery time of the newest (unix
/// µs) — lives in its own row (`intent_matches`, written by
/// [`super::DeliveryLog::put_matches`]), not in the record, so that recording deliveries
/// does not rewrite the record: a catalogue import delivers to thousands of intents per
/// batch. A type that shows the bookkeeping takes it from that row on every read; a
/// record without a row keeps what it holds.
pub trait IntentRow: DeserializeOwned {
    /// Whether the type takes the bookkeeping (only then is the row looked up). No
    /// default: a type with a count of its own must say whether it takes the row's.
    const MATCHES: bool;
    /// Takes the bookkeeping `(deliveries, newest delivery µs)` of the record just read.
    fn set_matches(&mut self, _matches: (u64, i64)) {}
}

impl IntentRow for serde_json::Value {
    const MATCHES: bool = false;
}

/// A type written to the `intents` table ([`Tx::put_intent`]): what recording deliveries
/// reads of it, stored beside it while it is active (`intent_targets`), so that a
/// catalogue import, which reads every intent it delivers to, reads a small row
/// ([`super::DeliveryLog::target`]) instead of the record.
pub trait IntentWrite: Serialize {
    /// The fields that reading reads back as a [`IntentRow`] type (the record's id among
    /// them); `()` for a type without them.
    type Target: Serialize;
    /// The row's fields (`None`: no row; such reads decode the record).
    fn target(&self) -> Option<Self::Target>;
}

impl IntentWrite for serde_json::Value {
    type Target = ();
    fn target(&self) -> Option<()> {
        None
    }
}

/// The intent record `id` of the open `intents` table (or another table of intent rows
/// keyed by id: `intent_targets`), with its bookkeeping from the open `intent_matches`
/// table `matches` when `T` takes it ([`IntentRow`]).
pub(super) fn intent_at<T: IntentRow>(
    intents: &Table<'_, &'static str, &'static [u8]>,
    matches: Option<&Table<'_, &'static str, (u64, i64)>>,
    id: &str,
) -> Result<Option<T>> {
    let row = match matches.filter(|_| T::MATCHES) {
        Some(m) => intents.get_with(m, id)?,
        None => intents.get(id)?.map(|b| (b, None)),
    };
    let Some((bytes, m)) = row else { return Ok(None) };
    let mut rec: T = super::decode(id, &bytes)?;
    if let Some(m) = m {
        rec.set_matches(m);
    }
    Ok(Some(rec))
}

/// Every intent record of `r`, in id order, to `visit` (each with its bookkeeping when
/// `T` takes it), decoding one at a time. The bookkeeping rows are read alongside, in
/// the same key order, [`MATCHES_CHUNK`] at a time (not one lookup per intent: one query
/// per intent on PostgreSQL).
pub(super) fn each<T: IntentRow, R: Tables + ?Sized>(r: &R, mut visit: impl FnMut(T)) -> Result<()> {
    let mut matches = if T::MATCHES { Some(Ahead::new(r.table(INTENT_MATCHES)?)) } else { None };
    r.table(INTENTS)?.each(|id, v| {
        let mut rec: T = super::decode(&id, &v)?;
        if let Some(m) = matches.as_mut().map(|a| a.take(&id)).transpose()?.flatten() {
            rec.set_matches(m);
        }
        visit(rec);
        Ok(true)
    })
}

/// Bookkeeping rows fetched ahead per range query by [`each`].
const MATCHES_CHUNK: usize = 512;

/// The bookkeeping rows of a walk over the intents in id order: a window of the table
/// moved forward as the walk goes.
struct Ahead<'t> {
    table: Table<'t, &'static str, (u64, i64)>,
    rows: std::collections::VecDeque<(String, (u64, i64))>,
    /// The last key fetched (`None`: nothing yet); `done` once the table is read to its end.
    last: Option<String>,
    done: bool,
}

impl<'t> Ahead<'t> {
    fn new(table: Table<'t, &'static str, (u64, i64)>) -> Self {
        Self { table, rows: Default::default(), last: None, done: false }
    }

    /// The row of `id`, given ids asked for in increasing order.
    fn take(&mut self, id: &str) -> Result<Option<(u64, i64)>> {
        loop {
            while self.rows.front().is_some_and(|(k, _)| k.as_str() < id) {
                self.rows.pop_front();
            }
            if !self.rows.is_empty() || self.done {
                break;
            }
            let from = self.last.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
            let rows = self.table.range((from, Bound::Unbounded), false, MATCHES_CHUNK)?;
            self.done = rows.len() < MATCHES_CHUNK;
            if let Some((k, _)) = rows.last() {
                self.last = Some(k.clone());
            }
            self.rows.extend(rows);
        }
        Ok(self.rows.front().filter(|(k, _)| k == id).map(|(_, m)| *m))
    }
}

pub(super) fn due<R: Tables + ?Sized>(r: &R, now_micros: i64, ended_before_micros: i64) -> Result<Vec<String>> {
    let mut ids = BTreeSet::new();
    for (table, until) in [(INTENT_EXPIRY, now_micros), (INTENT_ERASURE, ended_before_micros)] {
        let t = r.table(table)?;
        // Every key at or before `until`: strictly before `(until + 1, "")`.
        let hi = match until.checked_add(1) {
            Some(end) => Bound::Excluded((end, "")),
            None => Bound::Unbounded,
        };
        t.scan((Bound::Unbounded, hi), false, |(_, id), ()| {
            ids.insert(id);
            Ok(true)
        })?;
    }
    Ok(ids.into_iter().collect())
}

impl Tx<'_> {
    /// Inserts or replaces an intent record; keeps the `active` set and the record's
    /// `intent_targets` row ([`IntentWrite`]) in step with `active` and the expiry index
    /// with `due` (see [`IntentDue`]). The one function
    /// every intent write goes through (the delivery bookkeeping is not the record's:
    /// [`super::DeliveryLog::put_matches`]).
    pub fn put_intent<T: IntentWrite>(
        &mut self,
        _key: &IntentKey,
        id: &str,
        record: &T,
        active: bool,
        due: IntentDue,
    ) -> Result<()> {
        let bytes = encode("intents", record)?;
        self.open(INTENTS)?.insert(id, bytes.as_slice())?;
        let mut targets = self.open(INTENT_TARGETS)?;
        match record.target().filter(|_| active) {
            Some(t) => targets.insert(id, encode("intent_targets", &t)?.as_slice()).map(drop),
            None => targets.remove(id).map(drop),
        }?;
        drop(targets);
        let mut a = self.open(ACTIVE)?;
        if active { a.insert(id, ()).map(drop) } else { a.remove(id).map(drop) }?;
        self.note_change(super::ChangeKind::Intent, id)?;
        self.set_intent_due(id, due)
    }

    /// Stores the record of a new intent `id` that is not active — a draft whose id was
    /// just made, so that none of its rows exist — with its expiry-index rows for `due`:
    /// the rows [`Tx::put_intent`] would write, without looking up or removing rows a new
    /// id cannot have (a publish's write; its tokens: [`Tx::put_token`]).
    pub(crate) fn put_new_intent<T: Serialize>(
        &mut self,
        _key: &IntentKey,
        id: &str,
        record: &T,
        due: IntentDue,
    ) -> Result<()> {
        let bytes = encode("intents", record)?;
        let mut intents = self.open(INTENTS)?;
        debug_assert!(intents.get(id)?.is_none(), "put_new_intent of an intent that exists");
        intents.insert(id, bytes.as_slice())?;
        drop(intents);
        self.note_change(super::ChangeKind::Intent, id)?;
        self.move_due(id, IntentDue::default(), due)
    }

    /// Deletes an intent record, its active-set row, its expiry-index rows and its
    /// person-index row (its tokens: [`Tx::remove_tokens_of`]).
    pub fn remove_intent(&mut self, _key: &IntentKey, id: &str) -> Result<()> {
        self.open(INTENTS)?.remove(id)?;
        self.open(INTENT_MATCHES)?.remove(id)?;
        self.open(INTENT_TARGETS)?.remove(id)?;
        self.open(ACTIVE)?.remove(id)?;
        self.note_change(super::ChangeKind::Intent, id)?;
        self.set_intent_person(id, None)?;
        self.set_intent_due(id, IntentDue::default())
    }

    /// Replaces the expiry-index rows of an intent whose record is unchanged (the sweep,
    /// after looking at an intent that was not due after all); record writes go through
    /// [`Tx::put_intent`].
    pub fn set_intent_due(&mut self, id: &str, due: IntentDue) -> Result<()> {
        let (status_change, contact_ended) = self.open(INTENT_DUE)?.get(id)?.unwrap_or((None, None));
        self.move_due(id, IntentDue { status_change, contact_ended }, due)
    }

    /// Moves the expiry-index rows of `id` from `old` (what its `intent_due` row holds)
    /// to `new`, and that row with them.
    fn move_due(&mut self, id: &str, old: IntentDue, new: IntentDue) -> Result<()> {
        if old == new {
            return Ok(());
        }
        let pairs = [
            (INTENT_EXPIRY, old.status_change, new.status_change),
            (INTENT_ERASURE, old.contact_ended, new.contact_ended),
        ];
        for (table, old, new) in pairs {
            if old == new {
                continue;
            }
            let mut t = self.open(table)?;
            if let Some(at) = old {
                t.remove((at, id))?;
            }
            if let Some(at) = new {
                t.insert((at, id), ())?;
            }
        }
        let mut by_id = self.open(INTENT_DUE)?;
        if new == IntentDue::default() {
            by_id.remove(id).map(drop)
        } else {
            by_id.insert(id, (new.status_change, new.contact_ended)).map(drop)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Reads, StoreError};
    use super::*;
    use serde_json::json;

    fn due(status_change: Option<i64>, contact_ended: Option<i64>) -> IntentDue {
        IntentDue { status_change, contact_ended }
    }

    #[test]
    fn the_expiry_index_follows_every_write() {
        for (backend, s, _d) in crate::store::testpg::both() {
            eprintln!("backend: {backend}");
            s.write(|tx| {
                tx.put_intent(&crate::store::IntentKey::for_tests(), "int_a", &json!({}), false, due(Some(100), None))?;
                tx.put_intent(&crate::store::IntentKey::for_tests(), "int_b", &json!({}), true, due(Some(200), None))?;
                tx.put_intent(&crate::store::IntentKey::for_tests(), "int_c", &json!({}), false, due(None, Some(50)))?;
                tx.put_intent(&crate::store::IntentKey::for_tests(), "int_d", &json!({}), false, IntentDue::default())?;
                Ok::<_, StoreError>(())
            })
            .unwrap();
            let ids = |now, ended| s.read(|rx| rx.intents_due(now, ended)).unwrap();
            assert_eq!(ids(99, 49), Vec::<String>::new());
            assert_eq!(ids(100, 49), vec!["int_a"], "at the time itself");
            assert_eq!(ids(200, 49), vec!["int_a", "int_b"]);
            assert_eq!(ids(200, 50), vec!["int_a", "int_b", "int_c"]);
            assert_eq!(ids(i64::MAX, i64::MAX), vec!["int_a", "int_b", "int_c"]);
            // A rewrite moves the rows; an ended intent without contact leaves the index.
            s.write(|tx| {
                tx.put_intent(&crate::store::IntentKey::for_tests(), "int_a", &json!({}), true, due(Some(300), None))?;
                tx.put_intent(&crate::store::IntentKey::for_tests(), "int_b", &json!({}), false, due(None, Some(250)))?;
                tx.put_intent(&crate::store::IntentKey::for_tests(), "int_c", &json!({}), false, IntentDue::default())
            })
            .unwrap();
            assert_eq!(ids(299, 249), Vec::<String>::new());
            assert_eq!(ids(300, 250), vec!["int_a", "int_b"]);
            assert_eq!(s.read(|rx| rx.intent_due("int_b")).unwrap(), Some(due(None, Some(250))));
            assert_eq!(s.read(|rx| rx.intent_due("int_c")).unwrap(), None);
            assert_eq!(s.read(|rx| rx.active_ids()).unwrap(), vec!["int_a"]);
        }
    }

    #[test]
    fn a_new_intent_has_the_rows_of_put_intent_and_its_tokens() {
        for (backend, s, _d) in crate::store::testpg::both() {
            eprintln!("backend: {backend}");
            let key = crate::store::IntentKey::for_tests();
            s.write(|tx| {
                tx.put_intent(&key, "int_a", &json!({"n": 1}), false, due(Some(100), None))?;
                tx.put_token("code:a", "int_a")?;
                tx.put_new_intent(&key, "int_b", &json!({"n": 2}), due(Some(100), None))?;
                tx.put_token("code:b", "int_b")?;
                tx.put_token("consent:b", "int_b")?;
                tx.put_new_intent(&key, "int_c", &json!({"n": 3}), due(None, Some(50)))?;
                tx.put_new_intent(&key, "int_d", &json!({"n": 4}), IntentDue::default())
            })
            .unwrap();
            assert_eq!(s.read(|rx| rx.intents_due(100, 50)).unwrap(), vec!["int_a", "int_b", "int_c"]);
            assert_eq!(s.read(|rx| rx.intents_due(99, 49)).unwrap(), Vec::<String>::new());
            assert_eq!(s.read(|rx| rx.intent_due("int_b")).unwrap(), Some(due(Some(100), None)));
            assert_eq!(s.read(|rx| rx.intent_due("int_c")).unwrap(), Some(due(None, Some(50))));
            assert_eq!(s.read(|rx| rx.intent_due("int_d")).unwrap(), None);
            assert_eq!(s.read(|rx| rx.intent::<serde_json::Value>("int_b")).unwrap(), Some(json!({"n": 2})));
            for (token, id) in [("code:a", "int_a"), ("code:b", "int_b"), ("consent:b", "int_b")] {
                assert_eq!(s.read(|rx| rx.token(token)).unwrap().as_deref(), Some(id));
            }
            assert_eq!(s.read(|rx| rx.active_ids()).unwrap(), Vec::<String>::new(), "a new intent is not active");
        }
    }

    /// A read type that takes the bookkeeping row ([`IntentRow`]).
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Counted {
        n: u64,
        #[serde(default)]
        matches: Option<(u64, i64)>,
    }

    impl IntentRow for Counted {
        const MATCHES: bool = true;
        fn set_matches(&mut self, m: (u64, i64)) {
            self.matches = Some(m);
        }
    }

    /// Every intent read takes the bookkeeping row when its type does (in one query on
    /// PostgreSQL), a type that does not ignores it, a record without a row keeps its
    /// own, and removing the intent removes the row.
    #[test]
    fn intent_reads_take_the_bookkeeping_row() {
        for (backend, s, _d) in crate::store::testpg::both() {
            eprintln!("backend: {backend}");
            let key = crate::store::IntentKey::for_tests();
            s.write(|tx| {
                tx.put_intent(&key, "int_a", &json!({"n": 1}), true, IntentDue::default())?;
                tx.put_intent(&key, "int_b", &json!({"n": 2}), true, IntentDue::default())?;
                tx.delivery_log()?.put_matches("int_a", 3, 77)
            })
            .unwrap();
            let a = Counted { n: 1, matches: Some((3, 77)) };
            let b = Counted { n: 2, matches: None };
            assert_eq!(s.read(|rx| rx.intent::<Counted>("int_a")).unwrap(), Some(a));
            assert_eq!(s.read(|rx| rx.intent::<Counted>("int_b")).unwrap(), Some(b));
            assert_eq!(s.read(|rx| rx.intent::<Counted>("int_c")).unwrap(), None);
            let all: Vec<Counted> = s.read(|rx| rx.all_intents()).unwrap();
            assert_eq!(all.iter().map(|c| c.matches).collect::<Vec<_>>(), [Some((3, 77)), None]);
            let in_log = s.write(|tx| tx.delivery_log()?.intent::<Counted>("int_a")).unwrap();
            assert_eq!(in_log.and_then(|c| c.matches), Some((3, 77)));
            assert_eq!(s.read(|rx| rx.intent::<serde_json::Value>("int_a")).unwrap(), Some(json!({"n": 1})));
            s.write(|tx| tx.remove_intent(&key, "int_a")).unwrap();
            assert_eq!(s.read(|rx| rx.dangling_refs(5)).unwrap(), []);

            // A walk over more rows than one chunk (800 > 512): each intent gets its own.
            s.write(|tx| {
                for i in 0..1_200u64 {
                    let id = format!("int_x{i:04}");
                    tx.put_new_intent(&key, &id, &json!({"n": i + 10}), IntentDue::default())?;
                    if i % 3 != 1 {
                        tx.delivery_log()?.put_matches(&id, i + 10, 0)?;
                    }
                }
                Ok::<_, StoreError>(())
            })
            .unwrap();
            let all: Vec<Counted> = s.read(|rx| rx.all_intents()).unwrap();
            assert_eq!(all.len(), 1_201);
            for c in &all {
                let want = (c.n >= 10 && (c.n - 10) % 3 != 1).then_some((c.n, 0));
                assert_eq!(c.matches, want, "intent {}", c.n);
            }
        }
    }

    /// A record type with a target row ([`IntentWrite`]): `n` and a text the row leaves out.
    #[derive(serde::Serialize)]
    struct Targeted {
        n: u64,
        text: &'static str,
    }

    impl IntentWrite for Targeted {
        type Target = serde_json::Value;
        fn target(&self) -> Option<serde_json::Value> {
            Some(json!({"n": self.n}))
        }
    }

    /// An active intent's target row is written with its record and read in its place
    /// (with the bookkeeping); an inactive write removes it and the record is read; a
    /// record type without one leaves none; removing the intent removes it.
    #[test]
    fn an_active_intents_target_row_follows_its_record() {
        for (backend, s, _d) in crate::store::testpg::both() {
            eprintln!("backend: {backend}");
            let key = crate::store::IntentKey::for_tests();
            let target = |s: &super::super::Store| s.write(|tx| tx.delivery_log()?.target::<Counted>("int_a")).unwrap();
            let put = |n: u64, active: bool| {
                let rec = Targeted { n, text: "long" };
                s.write(|tx| tx.put_intent(&key, "int_a", &rec, active, IntentDue::default())).unwrap();
            };
            put(1, true);
            s.write(|tx| tx.delivery_log()?.put_matches("int_a", 3, 77)).unwrap();
            assert_eq!(target(&s), Some(Counted { n: 1, matches: Some((3, 77)) }));
            let raw = s.write(|tx| tx.delivery_log()?.target::<serde_json::Value>("int_a")).unwrap();
            assert_eq!(raw, Some(json!({"n": 1})), "the row, not the record");
            put(2, false);
            let raw = s.write(|tx| tx.delivery_log()?.target::<serde_json::Value>("int_a")).unwrap();
            assert_eq!(raw, Some(json!({"n": 2, "text": "long"})), "inactive: the record");
            put(4, true);
            s.write(|tx| tx.put_intent(&key, "int_a", &json!({"n": 5}), true, IntentDue::default())).unwrap();
            assert_eq!(target(&s), Some(Counted { n: 5, matches: Some((3, 77)) }), "no row for a type without one");
            put(6, true);
            s.write(|tx| tx.remove_intent(&key, "int_a")).unwrap();
            assert_eq!(target(&s), None);
            assert_eq!(s.read(|rx| rx.dangling_refs(5)).unwrap(), []);
        }
    }

    #[test]
    fn an_intent_due_in_both_tables_is_listed_once() {
        for (backend, s, _d) in crate::store::testpg::both() {
            eprintln!("backend: {backend}");
            s.write(|tx| {
                tx.put_intent(
                    &crate::store::IntentKey::for_tests(),
                    "int_a",
                    &json!({}),
                    false,
                    due(Some(10), Some(10)),
                )
            })
            .unwrap();
            assert_eq!(s.read(|rx| rx.intents_due(10, 10)).unwrap(), vec!["int_a"]);
        }
    }
}
