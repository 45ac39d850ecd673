//! The store as rows of text: a logical export from one read transaction
//! ([`Store::export`]) and its way back into a new store file ([`restore_file`]), for
//! `isto admin backup` and `isto admin restore`.
//!
//! Generic over the tables: every table of [`schema::TABLES`] is exported in that
//! order, and an export refuses a store file that holds a table the list does not name
//! ([`StoreError::Backup`]): it fails loudly instead of missing a table.
//!
//! One row is one line of JSON (no newline inside), `{"t":TABLE,"k":KEY,"v":VALUE}`:
//! - keys and values of type `&str`, `i64`, `u64` are JSON strings and numbers, tuples
//!   are arrays (`[1733000000000000,"int_…"]`), `Option` is `null` or the value, a `()`
//!   value has no `"v"`;
//! - a byte value (every JSON record of the store) that is one line of JSON is written
//!   as that JSON verbatim, byte for byte; any other byte value as `"b":BASE64` (standard
//!   alphabet, padded) instead of `"v"`.
//!
//! Reading a row back gives exactly the bytes that were stored. [`Store::rewrite_values`]
//! walks the byte values of every table the same generic way (`isto admin keys rotate`).

use super::column::{json_of, Column};
use super::reads::{RxTxn, TxTxn};
use super::schema::{self, TABLES};
use super::{Result, Rx, Store, StoreError, Tables as _, Tx, SCHEMA_VERSION};
use redb::{Database, MultimapTableHandle, TableDefinition, TableHandle};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;

/// What an export starts with, as of its read transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The schema version recorded in the store ([`SCHEMA_VERSION`] for a store this
    /// isto opened).
    pub schema_version: u64,
    /// Every table of the layout with its row count, in export order.
    pub tables: Vec<(&'static str, u64)>,
}

impl Snapshot {
    /// Rows in all tables.
    pub fn rows(&self) -> u64 {
        self.tables.iter().map(|(_, n)| n).sum()
    }
}

/// One step of an export, handed to [`Store::export`]'s callback.
#[derive(Debug)]
pub enum Export<'a> {
    /// First, once.
    Begin(&'a Snapshot),
    /// Then every row: its table and its line (see the module docs; no newline).
    Row {
        /// The table's name.
        table: &'a str,
        /// The row as one line of JSON.
        line: &'a str,
    },
}

/// The names of every table an export writes, in order.
pub fn table_names() -> Vec<&'static str> {
    TABLES.iter().map(|t| t.name()).collect()
}

/// Where a [`Store::rewrite_values`] pass stands. `Cursor::default()` is the start; a
/// cursor may be kept and sent back (it holds a key, never a value).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct Cursor {
    /// Index of the table in [`table_names`]; past the end when the pass is done.
    pub table: usize,
    /// The last key done in that table, as JSON (the `"k"` of an export row; `None`: none
    /// yet).
    pub after: Option<String>,
}

impl Cursor {
    /// Whether the pass has gone through every table.
    pub fn done(&self) -> bool {
        self.table >= TABLES.len()
    }
}

/// What [`Store::rewrite_values`] asks about each value: given the table's name and the
/// stored bytes, the new bytes (`None`: leave it).
pub type Rewrite<'a, E> = dyn FnMut(&str, &[u8]) -> Result<Option<Vec<u8>>, E> + 'a;

/// What one [`Store::rewrite_values`] batch did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rewritten {
    /// Rows looked at.
    pub seen: u64,
    /// Rows given new bytes.
    pub changed: u64,
}

impl Store {
    /// Exports the whole store from one read transaction (a consistent snapshot while
    /// writes go on): `on` gets [`Export::Begin`], then every row, table by table in
    /// [`table_names`] order, keys in order. Returns the snapshot it began with.
    ///
    /// # Errors
    /// `on`'s error (the export stops there); [`StoreError::Backup`] when the file holds
    /// a table the layout's list does not name (nothing is exported).
    pub fn export<E: From<StoreError>>(&self, mut on: impl FnMut(Export<'_>) -> Result<(), E>) -> Result<Snapshot, E> {
        self.read(|rx| {
            let snapshot = snapshot(rx)?;
            on(Export::Begin(&snapshot))?;
            let mut failed: Option<E> = None;
            for t in TABLES {
                let table = t.name();
                t.dump(rx, &mut |line| match on(Export::Row { table, line }) {
                    Ok(()) => true,
                    Err(e) => {
                        failed = Some(e);
                        false
                    }
                })?;
                if let Some(e) = failed {
                    return Err(e);
                }
            }
            Ok(snapshot)
        })
    }

    /// One batch of a pass over every byte value of every table (tables in
    /// [`table_names`] order, keys in order), in one write transaction: from `cursor`,
    /// up to `limit` rows are read and handed to `f` (table name, the stored bytes);
    /// when `f` returns new bytes they replace the value in the same transaction, so a
    /// row written meanwhile is read as it is now, never overwritten with an older
    /// copy. `cursor` moves past the rows done (only when the transaction commits).
    /// Tables whose values are not bytes are skipped.
    ///
    /// # Errors
    /// `f`'s error (nothing of the batch is written); storage errors.
    pub fn rewrite_values<E: From<StoreError>>(
        &self,
        cursor: &mut Cursor,
        limit: usize,
        f: &mut Rewrite<'_, E>,
    ) -> Result<Rewritten, E> {
        let mut next = cursor.clone();
        let mut failed: Option<E> = None;
        let mut call = |table: &str, bytes: &[u8]| match f(table, bytes) {
            Ok(v) => Ok(v),
            Err(e) => {
                failed = Some(e);
                Err(StoreError::Backup("stopped by the caller".to_owned()))
            }
        };
        let out = self.write(|tx| -> Result<Rewritten> {
            let mut done = Rewritten::default();
            while !next.done() && (done.seen as usize) < limit {
                let t = TABLES[next.table];
                let left = limit - done.seen as usize;
                let (batch, last, more) = t.rewrite(tx, next.after.as_deref(), left, &mut call)?;
                done.seen += batch.seen;
                done.changed += batch.changed;
                if more {
                    next.after = last;
                } else {
                    next = Cursor { table: next.table + 1, after: None };
                }
            }
            Ok(done)
        });
        if let Some(e) = failed {
            return Err(e);
        }
        *cursor = next;
        Ok(out?)
    }
}

/// Whether another process holds the store file at `path` (`isto serve`, usually): its
/// lock file ([`super::Store::hold_file`]), or the file itself, which this opens and
/// closes again; false for a missing or unreadable file.
pub fn in_use(path: &Path) -> bool {
    super::open::locked_elsewhere(path) || matches!(Database::open(path), Err(redb::DatabaseError::DatabaseAlreadyOpen))
}

/// The snapshot of `txn`; refuses a file with a table that is not in [`TABLES`].
fn snapshot(rx: &Rx) -> Result<Snapshot> {
    if let RxTxn::Redb(txn) = &rx.txn {
        redb_tables_listed(txn)?;
    }
    let mut tables = Vec::with_capacity(TABLES.len());
    for t in TABLES {
        tables.push((t.name(), t.count(rx)?));
    }
    Ok(Snapshot { schema_version: schema::read_version(rx)?.unwrap_or(SCHEMA_VERSION), tables })
}

/// Refuses a redb file with a table that [`TABLES`] does not name (on PostgreSQL the SQL
/// migrations make exactly the listed tables).
fn redb_tables_listed(txn: &redb::ReadTransaction) -> Result<()> {
    let listed = table_names();
    for h in txn.list_tables()? {
        if !listed.contains(&h.name()) {
            return Err(StoreError::Backup(format!(
                "the store holds table {:?}, which the store's table list (store::schema::TABLES) does not name, \
                 so a backup would miss it; refusing",
                h.name()
            )));
        }
    }
    if let Some(h) = txn.list_multimap_tables()?.next() {
        return Err(StoreError::Backup(format!(
            "the store holds multimap table {:?}, which a backup cannot export; refusing",
            h.name()
        )));
    }
    Ok(())
}

/// Writes the rows of `lines` (as [`Store::export`] made them, in any order) into a new
/// store file at `path`, in one write transaction: on any error the file holds nothing
/// (the caller removes it). `path` must not exist or be an empty file. The file is not
/// migrated here: open it with [`Store::open`] afterwards. Returns the rows written per
/// table.
///
/// # Errors
/// `lines`' error; [`StoreError::Backup`] for a line that is not a row, names an
/// unknown table, or whose key or value does not fit the table (naming the line number,
/// never a key or value); storage errors.
pub fn restore_file<E: From<StoreError>>(
    path: &Path,
    lines: impl Iterator<Item = Result<String, E>>,
) -> Result<BTreeMap<&'static str, u64>, E> {
    let db = Database::create(path).map_err(StoreError::from)?;
    let txn = db.begin_write().map_err(StoreError::from)?;
    let counts = load_rows(&Tx { txn: TxTxn::Redb(&txn) }, lines)?;
    txn.commit().map_err(StoreError::from)?;
    Ok(counts)
}

/// Inserts the rows of `lines` (see [`restore_file`], and its errors) in the write
/// transaction `tx`; the rows per table. The caller commits.
pub(super) fn load_rows<E: From<StoreError>>(
    tx: &Tx<'_>,
    lines: impl Iterator<Item = Result<String, E>>,
) -> Result<BTreeMap<&'static str, u64>, E> {
    let mut counts: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut lines = lines.enumerate();
    let mut failed: Option<E> = None;
    let mut next = || -> Option<(usize, String)> {
        match lines.next()? {
            (n, Ok(line)) => Some((n + 1, line)),
            (_, Err(e)) => {
                failed = Some(e);
                None
            }
        }
    };
    let mut pending = next();
    while let Some((n, line)) = pending.take() {
        let name = parse_row(n, &line)?.t;
        let Some(t) = TABLES.iter().find(|t| t.name() == name) else {
            return Err(StoreError::Backup(format!("row {n}: unknown table {name:?}")).into());
        };
        let (rows, rest) = t.load(tx, (n, line), &mut next)?;
        *counts.entry(t.name()).or_default() += rows;
        pending = rest;
    }
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(counts)
}

/// A row as read back.
#[derive(Deserialize)]
struct RowIn<'a> {
    t: String,
    #[serde(borrow)]
    k: &'a RawValue,
    #[serde(borrow, default)]
    v: Option<&'a RawValue>,
    #[serde(default)]
    b: Option<String>,
}

fn parse_row(n: usize, line: &str) -> Result<RowIn<'_>> {
    serde_json::from_str(line).map_err(|e| StoreError::Backup(format!("row {n} is not a store row: {e}")))
}

/// A table of the layout, whatever its key and value types (see [`TABLES`]).
pub(super) trait AnyTable: Sync {
    /// The table's name.
    fn name(&self) -> &str;
    /// Its rows in `rx`.
    fn count(&self, rx: &Rx) -> Result<u64>;
    /// Its rows in the write transaction `tx` (on redb, opening a missing table creates it).
    fn count_in(&self, tx: &Tx<'_>) -> Result<u64>;
    /// Opens it in `tx`, which on redb creates it when missing.
    fn create(&self, tx: &Tx<'_>) -> Result<()>;
    /// Removes every row in `tx`.
    fn clear(&self, tx: &Tx<'_>) -> Result<()>;
    /// Every row as a line, in key order, until `row` answers false.
    fn dump(&self, rx: &Rx, row: &mut dyn FnMut(&str) -> bool) -> Result<()>;
    /// Inserts `first` and the rows after it while they are of this table; returns how
    /// many and the first row of another table (`None`: `next` ended).
    fn load(
        &self,
        tx: &Tx<'_>,
        first: (usize, String),
        next: &mut dyn FnMut() -> Option<(usize, String)>,
    ) -> Result<(u64, Option<(usize, String)>)>;
    /// Up to `limit` rows after the key `after` (JSON) through `f`, writing the new
    /// bytes it gives; returns what was done, the last key seen (JSON) and whether rows
    /// may follow. A table whose values are not bytes has nothing to do.
    fn rewrite(
        &self,
        tx: &Tx<'_>,
        after: Option<&str>,
        limit: usize,
        f: &mut Rewrite<'_, StoreError>,
    ) -> Result<(Rewritten, Option<String>, bool)>;
}

impl<K: Column + redb::Key, V: Column> AnyTable for TableDefinition<'static, K, V> {
    fn name(&self) -> &str {
        TableHandle::name(self)
    }

    fn count(&self, rx: &Rx) -> Result<u64> {
        rx.table(*self)?.len()
    }

    fn count_in(&self, tx: &Tx<'_>) -> Result<u64> {
        tx.open(*self)?.len()
    }

    fn create(&self, tx: &Tx<'_>) -> Result<()> {
        tx.open(*self).map(drop)
    }

    fn clear(&self, tx: &Tx<'_>) -> Result<()> {
        let mut table = tx.open(*self)?;
        for (k, _) in table.all()? {
            table.remove(K::stored(&k))?;
        }
        Ok(())
    }

    fn dump(&self, rx: &Rx, row: &mut dyn FnMut(&str) -> bool) -> Result<()> {
        let head = format!("{{\"t\":{}", json_of(AnyTable::name(self)));
        let mut line = String::new();
        rx.table(*self)?.each(|k, v| {
            line.clear();
            line.push_str(&head);
            K::write(&K::stored(&k), "k", &mut line);
            V::write(&V::stored(&v), "v", &mut line);
            line.push('}');
            Ok(row(&line))
        })
    }

    fn load(
        &self,
        tx: &Tx<'_>,
        first: (usize, String),
        next: &mut dyn FnMut() -> Option<(usize, String)>,
    ) -> Result<(u64, Option<(usize, String)>)> {
        let mut table = tx.open(*self)?;
        let mut rows = 0u64;
        let mut current = Some(first);
        while let Some((n, line)) = current.take() {
            let row = parse_row(n, &line)?;
            if row.t != AnyTable::name(self) {
                return Ok((rows, Some((n, line))));
            }
            let bad = |what: &str| StoreError::Backup(format!("row {n}: the {what} does not fit table {:?}", row.t));
            let k = K::read(Some(row.k), None).ok_or_else(|| bad("key"))?;
            let v = V::read(row.v, row.b.as_deref()).ok_or_else(|| bad("value"))?;
            if table.insert(K::stored(&k), V::stored(&v))? {
                return Err(StoreError::Backup(format!("row {n}: a key of table {:?} appears twice", row.t)));
            }
            rows += 1;
            current = next();
        }
        Ok((rows, None))
    }

    fn rewrite(
        &self,
        tx: &Tx<'_>,
        after: Option<&str>,
        limit: usize,
        f: &mut Rewrite<'_, StoreError>,
    ) -> Result<(Rewritten, Option<String>, bool)> {
        if V::owned_of_bytes(Vec::new()).is_none() {
            return Ok((Rewritten::default(), None, false));
        }
        let name = AnyTable::name(self).to_owned();
        let bad_cursor = || StoreError::Backup(format!("the cursor's key does not fit table {name:?}"));
        let start: Option<K::Owned> = match after {
            Some(json) => {
                let raw = RawValue::from_string(json.to_owned()).map_err(|_| bad_cursor())?;
                Some(K::read(Some(&raw), None).ok_or_else(bad_cursor)?)
            }
            None => None,
        };
        let mut done = Rewritten::default();
        let mut changes: Vec<(K::Owned, V::Owned)> = Vec::new();
        let mut last: Option<String> = None;
        let mut more = false;
        let mut table = tx.open(*self)?;
        let lo = match &start {
            Some(k) => Bound::Excluded(K::stored(k)),
            None => Bound::Unbounded,
        };
        table.scan((lo, Bound::Unbounded), false, |k, v| {
            if done.seen as usize >= limit {
                more = true;
                return Ok(false);
            }
            done.seen += 1;
            let key_json = json_of(&k);
            if let Some(bytes) = V::bytes_of(&V::stored(&v)) {
                if let Some(new) = f(&name, bytes)? {
                    let val = V::owned_of_bytes(new).ok_or_else(bad_cursor)?;
                    changes.push((k, val));
                }
            }
            last = Some(key_json);
            Ok(true)
        })?;
        for (k, v) in &changes {
            table.insert(K::stored(k), V::stored(v))?;
        }
        done.changed = changes.len() as u64;
        Ok((done, last, more))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::{IntentDue, Ns, Reads as _};
    use super::*;
    use redb::ReadableDatabase as _;

    /// Every row of every table of `store`, as lines (through an export); also used by
    /// the PostgreSQL store's tests.
    pub(in crate::store) fn lines_of(store: &Store) -> (Snapshot, Vec<String>) {
        let mut lines = Vec::new();
        let snap = store
            .export(|step| -> Result<()> {
                if let Export::Row { line, .. } = step {
                    assert!(!line.contains('\n'));
                    lines.push(line.to_owned());
                }
                Ok(())
            })
            .unwrap();
        (snap, lines)
    }

    fn filled(path: &Path) -> Store {
        let s = Store::open(path).unwrap();
        s.write(|tx| {
            let due = IntentDue { status_change: Some(5), contact_ended: Some(-7) };
            tx.put_intent(
                &crate::store::IntentKey::for_tests(),
                "int_a",
                &serde_json::json!({"x": 1, "s": "ľ\n\"q\""}),
                true,
                due,
            )?;
            tx.put_intent(
                &crate::store::IntentKey::for_tests(),
                "int_b",
                &serde_json::json!({"x": 2}),
                false,
                IntentDue::default(),
            )?;
            tx.put_token("code:ab", "int_a")?;
            tx.put_offer("off_a", &serde_json::json!({"p": 1.5}), Some(("sel_a", "ref 1")))?;
            tx.put_seller("sel_a", "acme", &serde_json::json!({"n": "Acme"}))?;
            tx.put_delivery("int_a", "off_a", 1_733_000_000_000_000, br#"{"score":0.5}"#)?;
            tx.enqueue_mail(&serde_json::json!({"to": {"kid": "k", "nonce": "n", "ct": "c"}}))?;
            tx.put_record(Ns::Client, "c1", &serde_json::json!([1, 2]))?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        s
    }

    #[test]
    fn an_export_restores_to_the_same_rows_byte_for_byte() {
        let d = tempfile::tempdir().unwrap();
        let src = filled(&d.path().join("a.redb"));
        let (snap, lines) = lines_of(&src);
        assert_eq!(snap.schema_version, SCHEMA_VERSION);
        assert_eq!(snap.rows(), lines.len() as u64);
        assert_eq!(snap.tables.iter().map(|(t, _)| *t).collect::<Vec<_>>(), table_names());
        let counts =
            restore_file(&d.path().join("b.redb"), lines.clone().into_iter().map(Ok::<_, StoreError>)).unwrap();
        assert_eq!(counts.values().sum::<u64>(), lines.len() as u64);
        let back = Store::open(&d.path().join("b.redb")).unwrap();
        let (snap2, lines2) = lines_of(&back);
        assert_eq!(lines2, lines);
        assert_eq!(snap2, snap);
        let v: serde_json::Value = back.read(|rx| rx.intent("int_a")).unwrap().unwrap();
        assert_eq!(v["s"], "ľ\n\"q\"");
        assert_eq!(back.read(|rx| rx.active_ids()).unwrap(), vec!["int_a"]);
        assert_eq!(back.read(|rx| rx.intent_due("int_a")).unwrap().unwrap().contact_ended, Some(-7));
    }

    #[test]
    fn bytes_that_are_not_one_line_of_json_go_as_base64_and_come_back() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.redb");
        drop(Store::open(&p).unwrap());
        {
            let db = Database::create(&p).unwrap();
            let txn = db.begin_write().unwrap();
            {
                let mut t = txn.open_table(schema::INTENTS).unwrap();
                t.insert("pretty", b"{\n \"a\": 1\n}".as_slice()).unwrap();
                t.insert("binary", [0u8, 255, 10].as_slice()).unwrap();
                t.insert("null", b"null".as_slice()).unwrap();
                t.insert("spaced", b" 1".as_slice()).unwrap();
            }
            txn.commit().unwrap();
        }
        let s = Store::open(&p).unwrap();
        let (_, lines) = lines_of(&s);
        assert_eq!(lines.iter().filter(|l| l.contains("\"b\":")).count(), 4, "{lines:?}");
        drop(s);
        let q = d.path().join("b.redb");
        restore_file(&q, lines.into_iter().map(Ok::<_, StoreError>)).unwrap();
        let db = Database::open(&q).unwrap();
        let txn = db.begin_read().unwrap();
        let t = txn.open_table(schema::INTENTS).unwrap();
        assert_eq!(t.get("pretty").unwrap().unwrap().value(), b"{\n \"a\": 1\n}");
        assert_eq!(t.get("binary").unwrap().unwrap().value(), [0u8, 255, 10]);
        assert_eq!(t.get("null").unwrap().unwrap().value(), b"null");
    }

    #[test]
    fn a_table_missing_from_the_list_makes_the_export_fail_loudly() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.redb");
        drop(Store::open(&p).unwrap());
        {
            let db = Database::create(&p).unwrap();
            let txn = db.begin_write().unwrap();
            let extra: TableDefinition<&str, u64> = TableDefinition::new("person_counts");
            txn.open_table(extra).unwrap().insert("x", 1).unwrap();
            txn.commit().unwrap();
        }
        let s = Store::open(&p).unwrap();
        let e = s.export(|_| Ok::<_, StoreError>(())).unwrap_err();
        assert!(matches!(e, StoreError::Backup(_)), "{e}");
        assert!(e.to_string().contains("\"person_counts\""), "{e}");
    }

    #[test]
    fn bad_rows_are_refused_by_line_number_and_nothing_is_kept() {
        let d = tempfile::tempdir().unwrap();
        let ok = r#"{"t":"tokens","k":"code:a","v":"int_a"}"#.to_owned();
        for (bad, says) in [
            (r#"{"t":"nosuch","k":"a","v":"b"}"#, "unknown table"),
            (r#"{"t":"tokens","k":1,"v":"b"}"#, "key does not fit"),
            (r#"{"t":"active","k":"a","v":1}"#, "value does not fit"),
            (r#"{"t":"tokens","k":"code:a","v":"int_b"}"#, "appears twice"),
            ("not json", "not a store row"),
        ] {
            let p = d.path().join(format!("{}.redb", says.replace(' ', "_")));
            let e = restore_file(&p, [ok.clone(), bad.to_owned()].into_iter().map(Ok::<_, StoreError>)).unwrap_err();
            assert!(e.to_string().contains(says) && e.to_string().contains("row 2"), "{says}: {e}");
            let db = Database::open(&p).unwrap();
            let txn = db.begin_read().unwrap();
            let e = txn.open_table(schema::TOKENS).unwrap_err();
            assert!(matches!(e, redb::TableError::TableDoesNotExist(_)), "nothing committed: {e}");
        }
    }

    #[test]
    fn in_use_sees_an_open_store() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.redb");
        let s = Store::open(&p).unwrap();
        assert!(in_use(&p));
        drop(s);
        assert!(!in_use(&p));
        assert!(!in_use(&d.path().join("none.redb")));
    }
}
