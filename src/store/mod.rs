//! Storage: all tables in one redb file (`DATA_DIR/isto.redb`).
//!
//! redb commits with immediate durability by default, so a write that a tool call
//! acknowledges is on disk when the call returns. Records are JSON values; secrets appear
//! only as hashes ([`crate::crypto::token_hash`]) or sealed ([`crate::crypto::Sealed`]).
//! redb allows one process per file, hence the admin socket (`crate::admin`).
//!
//! Layout (redb types never leave this module):
//! - this file: [`Store`] (open, [`Store::read`], [`Store::write`]), the transactions
//!   [`Rx`] and [`Tx`], the read surface [`Reads`] and [`StoreError`];
//! - `schema`: every table definition, [`SCHEMA_VERSION`] and the numbered migrations
//!   run at open;
//! - one module per entity, each owning its tables' keys and writes: `intents` (with the
//!   active set and the expiry index, [`IntentDue`]), `tokens`, `offers` (with feed
//!   references and the catalogue generation), `sellers`, `deliveries` (with digest due
//!   times), `outbox` and `records` (namespaced small records, [`Ns`]).

mod deliveries;
mod intents;
mod offers;
mod outbox;
mod records;
mod schema;
mod sellers;
mod tokens;

pub use intents::IntentDue;
pub use records::Ns;
#[cfg(test)]
pub(crate) use schema::rewind_to_version_1;
pub use schema::{FILE_NAME, SCHEMA_VERSION};

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde::{de::DeserializeOwned, Serialize};
use std::path::Path;

/// A failure reported by the database engine (I/O, corruption, a second process holding
/// the file). Opaque: match on [`StoreError`] and its methods instead.
#[derive(Debug)]
pub struct DbError(redb::Error);

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for DbError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database engine reported an error (I/O, corruption, a second process holding
    /// the file: see [`StoreError::is_already_open`]).
    #[error("store: {0}")]
    Db(DbError),
    /// A record does not decode: `(key, cause)`.
    #[error("store record {0} is corrupt: {1}")]
    Corrupt(String, String),
    /// A record does not encode (nothing is written): `(table or namespace, cause)`.
    #[error("store: a {0} record does not encode: {1}")]
    Encode(String, String),
    /// The file was written by a newer isto (schema version above [`SCHEMA_VERSION`]).
    #[error(
        "store schema version {found} is newer than this isto knows ({SCHEMA_VERSION}); \
         upgrade isto, or restore a backup of the data directory written by this version"
    )]
    TooNew {
        /// The version found in the file.
        found: u64,
    },
}

impl StoreError {
    /// Whether another process (usually `isto serve`) holds the store file.
    pub fn is_already_open(&self) -> bool {
        matches!(self, Self::Db(DbError(redb::Error::DatabaseAlreadyOpen)))
    }
}

impl From<redb::Error> for StoreError {
    fn from(e: redb::Error) -> Self {
        Self::Db(DbError(e))
    }
}

macro_rules! from_redb {
    ($($t:ty),*) => {$(impl From<$t> for StoreError { fn from(e: $t) -> Self { Self::Db(DbError(e.into())) } })*};
}
from_redb!(redb::DatabaseError, redb::TransactionError, redb::TableError, redb::StorageError, redb::CommitError);

/// Result alias.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Decodes the JSON record stored under `key`.
fn decode<T: DeserializeOwned>(key: &str, b: &[u8]) -> Result<T> {
    serde_json::from_slice(b).map_err(|e| StoreError::Corrupt(key.to_owned(), e.to_string()))
}

/// Encodes a record for `table` (a table or namespace name, never a key: keys may be
/// hashes or folded addresses, which errors must not carry).
fn encode<T: Serialize>(table: &str, v: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(v).map_err(|e| StoreError::Encode(table.to_owned(), e.to_string()))
}

/// The open store.
pub struct Store {
    db: Database,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Store")
    }
}

impl Store {
    /// Opens or creates the store at `path`. A new file gets every table and
    /// [`SCHEMA_VERSION`]; an older one is migrated (all pending migrations and the new
    /// version in one write transaction, see `schema`).
    ///
    /// # Errors
    /// [`StoreError::Db`] (for example when `isto serve` already holds the file:
    /// [`StoreError::is_already_open`]), [`StoreError::TooNew`], and a migration's error.
    pub fn open(path: &Path) -> Result<Self> {
        let db = Database::create(path)?;
        let txn = db.begin_write()?;
        schema::prepare(&txn)?;
        txn.commit()?;
        Ok(Self { db })
    }

    /// Runs `f` in one write transaction and commits (durably) when it returns `Ok`;
    /// on `Err` nothing is written.
    ///
    /// # Errors
    /// `f`'s error, or a storage error converted into `E`.
    pub fn write<T, E: From<StoreError>>(&self, f: impl FnOnce(&mut Tx<'_>) -> Result<T, E>) -> Result<T, E> {
        let txn = self.db.begin_write().map_err(StoreError::from)?;
        let mut tx = Tx { txn: &txn };
        let out = f(&mut tx)?;
        txn.commit().map_err(StoreError::from)?;
        Ok(out)
    }

    /// Runs `f` in one write transaction and rolls it back whatever `f` returns: `f`
    /// sees its own writes, nobody else ever does (a dry run of a write).
    ///
    /// # Errors
    /// `f`'s error, or a storage error converted into `E`.
    pub fn rehearse<T, E: From<StoreError>>(&self, f: impl FnOnce(&mut Tx<'_>) -> Result<T, E>) -> Result<T, E> {
        let txn = self.db.begin_write().map_err(StoreError::from)?;
        let mut tx = Tx { txn: &txn };
        let out = f(&mut tx);
        txn.abort().map_err(StoreError::from)?;
        out
    }

    /// Runs `f` in one read transaction (a consistent snapshot).
    ///
    /// # Errors
    /// `f`'s error, or a storage error converted into `E`.
    pub fn read<T, E: From<StoreError>>(&self, f: impl FnOnce(&Rx) -> Result<T, E>) -> Result<T, E> {
        let txn = self.db.begin_read().map_err(StoreError::from)?;
        f(&Rx { txn })
    }
}

/// A read transaction.
pub struct Rx {
    txn: redb::ReadTransaction,
}

/// A write transaction (reads see its own writes).
pub struct Tx<'a> {
    txn: &'a redb::WriteTransaction,
}

mod sealed {
    /// Opening a table for reading, in a read or a write transaction. Sealed: only
    /// [`super::Rx`] and [`super::Tx`] implement it, and only `store` calls it.
    pub trait Tables {
        /// The table `def`, readable.
        fn table<K: redb::Key + 'static, V: redb::Value + 'static>(
            &self,
            def: redb::TableDefinition<'_, K, V>,
        ) -> super::Result<impl redb::ReadableTable<K, V> + '_>;
    }
}
use sealed::Tables;

impl Tables for Rx {
    fn table<K: redb::Key + 'static, V: redb::Value + 'static>(
        &self,
        def: TableDefinition<'_, K, V>,
    ) -> Result<impl ReadableTable<K, V> + '_> {
        Ok(self.txn.open_table(def)?)
    }
}

impl Tables for Tx<'_> {
    fn table<K: redb::Key + 'static, V: redb::Value + 'static>(
        &self,
        def: TableDefinition<'_, K, V>,
    ) -> Result<impl ReadableTable<K, V> + '_> {
        Ok(self.txn.open_table(def)?)
    }
}

/// A JSON record from a `&str → &[u8]` table.
fn get_json<T: DeserializeOwned, R: Tables + ?Sized>(
    r: &R,
    def: TableDefinition<&str, &[u8]>,
    key: &str,
) -> Result<Option<T>> {
    let t = r.table(def)?;
    let v = t.get(key)?;
    v.map(|g| decode(key, g.value())).transpose()
}

/// A string from a `&str → &str` table.
fn get_str<R: Tables + ?Sized>(r: &R, def: TableDefinition<&str, &str>, key: &str) -> Result<Option<String>> {
    let t = r.table(def)?;
    let v = t.get(key)?;
    Ok(v.map(|g| g.value().to_owned()))
}

/// Up to `limit` `(key, record)` of a `&str → &[u8]` table in `[from, to)`, in key order,
/// or newest first when `rev`.
fn range_json<T: DeserializeOwned, R: Tables + ?Sized>(
    r: &R,
    def: TableDefinition<&str, &[u8]>,
    (from, to): (&str, &str),
    limit: usize,
    rev: bool,
) -> Result<Vec<(String, T)>> {
    let t = r.table(def)?;
    let rows = t.range(from..to)?;
    let rows: Box<dyn Iterator<Item = _>> = if rev { Box::new(rows.rev()) } else { Box::new(rows) };
    let mut out = Vec::new();
    for row in rows.take(limit) {
        let (k, v) = row?;
        let key = k.value().to_owned();
        let val = decode(&key, v.value())?;
        out.push((key, val));
    }
    Ok(out)
}

/// Every record of a `&str → &[u8]` table, in key order.
fn all_json<T: DeserializeOwned, R: Tables + ?Sized>(r: &R, def: TableDefinition<&str, &[u8]>) -> Result<Vec<T>> {
    Ok(range_json(r, def, ("", "\u{10ffff}"), usize::MAX, false)?.into_iter().map(|(_, v)| v).collect())
}

/// A counter kept as a decimal string in `meta` (0 when absent or unreadable).
fn meta_counter<R: Tables + ?Sized>(r: &R, key: &str) -> Result<u64> {
    Ok(get_str(r, schema::META, key)?.and_then(|v| v.parse().ok()).unwrap_or(0))
}

/// Reads shared by [`Rx`] and [`Tx`]. Each method is its entity module's read.
pub trait Reads: Tables {
    /// The intent record with this id.
    ///
    /// # Errors
    /// Storage errors; [`StoreError::Corrupt`].
    fn intent<T: DeserializeOwned>(&self, id: &str) -> Result<Option<T>> {
        intents::get(self, id)
    }

    /// Every intent record (for admin listings; sweeps use [`Reads::intents_due`]).
    ///
    /// # Errors
    /// Storage errors; [`StoreError::Corrupt`].
    fn all_intents<T: DeserializeOwned>(&self) -> Result<Vec<T>> {
        intents::all(self)
    }

    /// Ids of active intents.
    ///
    /// # Errors
    /// Storage errors.
    fn active_ids(&self) -> Result<Vec<String>> {
        intents::active_ids(self)
    }

    /// Ids of the intents the sweep must look at, in id order, each once: those whose
    /// status-change time is at or before `now_micros`, and those that ended (still
    /// holding a contact) at or before `ended_before_micros` (both unix µs; see
    /// [`IntentDue`]).
    ///
    /// # Errors
    /// Storage errors.
    fn intents_due(&self, now_micros: i64, ended_before_micros: i64) -> Result<Vec<String>> {
        intents::due(self, now_micros, ended_before_micros)
    }

    /// The sweep times recorded for an intent (`None` when it has none).
    ///
    /// # Errors
    /// Storage errors.
    fn intent_due(&self, id: &str) -> Result<Option<IntentDue>> {
        intents::due_of(self, id)
    }

    /// The intent id a token hash points to.
    ///
    /// # Errors
    /// Storage errors.
    fn token(&self, hash: &str) -> Result<Option<String>> {
        tokens::get(self, hash)
    }

    /// The offer record with this id.
    ///
    /// # Errors
    /// Storage errors; [`StoreError::Corrupt`].
    fn offer<T: DeserializeOwned>(&self, id: &str) -> Result<Option<T>> {
        offers::get(self, id)
    }

    /// Every offer record.
    ///
    /// # Errors
    /// Storage errors; [`StoreError::Corrupt`].
    fn all_offers<T: DeserializeOwned>(&self) -> Result<Vec<T>> {
        offers::all(self)
    }

    /// The offer id stored for a feed's `(seller id, ref)`.
    ///
    /// # Errors
    /// Storage errors.
    fn offer_by_ref(&self, seller_id: &str, reference: &str) -> Result<Option<String>> {
        offers::by_ref(self, seller_id, reference)
    }

    /// The seller record with this id.
    ///
    /// # Errors
    /// Storage errors; [`StoreError::Corrupt`].
    fn seller<T: DeserializeOwned>(&self, id: &str) -> Result<Option<T>> {
        sellers::get(self, id)
    }

    /// Every seller record.
    ///
    /// # Errors
    /// Storage errors; [`StoreError::Corrupt`].
    fn all_sellers<T: DeserializeOwned>(&self) -> Result<Vec<T>> {
        sellers::all(self)
    }

    /// The seller id registered under a folded name.
    ///
    /// # Errors
    /// Storage errors.
    fn seller_by_name(&self, folded: &str) -> Result<Option<String>> {
        sellers::by_name(self, folded)
    }

    /// When `(intent, offer)` was delivered (unix µs), if it was.
    ///
    /// # Errors
    /// Storage errors.
    fn delivered_at(&self, intent: &str, offer: &str) -> Result<Option<i64>> {
        deliveries::delivered_at(self, intent, offer)
    }

    /// Deliveries of `intent` strictly after `after_micros`, oldest first, at most
    /// `limit`: `(delivered µs, offer id, extensions JSON)`.
    ///
    /// # Errors
    /// Storage errors; [`StoreError::Corrupt`].
    fn deliveries<T: DeserializeOwned>(
        &self,
        intent: &str,
        after_micros: i64,
        limit: usize,
    ) -> Result<Vec<(i64, String, T)>> {
        deliveries::after(self, intent, after_micros, limit)
    }

    /// The newest `limit` deliveries of `intent`, newest first.
    ///
    /// # Errors
    /// Storage errors; [`StoreError::Corrupt`].
    fn latest_deliveries<T: DeserializeOwned>(&self, intent: &str, limit: usize) -> Result<Vec<(i64, String, T)>> {
        deliveries::latest(self, intent, limit)
    }

    /// When an intent's pending digest is due (unix seconds), if one is pending.
    ///
    /// # Errors
    /// Storage errors.
    fn digest_due_at(&self, intent: &str) -> Result<Option<i64>> {
        deliveries::digest_due_at(self, intent)
    }

    /// Intents whose digest is pending: `(id, due unix seconds)`.
    ///
    /// # Errors
    /// Storage errors.
    fn digests_due(&self) -> Result<Vec<(String, i64)>> {
        deliveries::digests_due(self)
    }

    /// A record of a namespace.
    ///
    /// # Errors
    /// Storage errors; [`StoreError::Corrupt`].
    fn record<T: DeserializeOwned>(&self, ns: Ns, key: &str) -> Result<Option<T>> {
        records::get(self, ns, key)
    }

    /// Every record of a namespace, `(key without prefix, value)`, in key order.
    ///
    /// # Errors
    /// Storage errors; [`StoreError::Corrupt`].
    fn records<T: DeserializeOwned>(&self, ns: Ns) -> Result<Vec<(String, T)>> {
        records::all(self, ns)
    }
}

impl Reads for Rx {}
impl Reads for Tx<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_version_and_reopen() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.redb");
        {
            let s = Store::open(&p).unwrap();
            s.write(|tx| tx.put_intent("int_a", &serde_json::json!({"x": 1}), true, IntentDue::default())).unwrap();
        }
        let s = Store::open(&p).unwrap();
        let v: Option<serde_json::Value> = s.read(|rx| rx.intent("int_a")).unwrap();
        assert_eq!(v.unwrap()["x"], 1);
        assert_eq!(s.read(|rx| rx.active_ids()).unwrap(), vec!["int_a"]);
    }

    #[test]
    fn failed_write_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(&d.path().join("s.redb")).unwrap();
        let r: Result<(), StoreError> = s.write(|tx| {
            tx.put_token("code:x", "int_a")?;
            Err(StoreError::Corrupt("test".into(), "abort".into()))
        });
        assert!(r.is_err());
        assert_eq!(s.read(|rx| rx.token("code:x")).unwrap(), None);
    }

    #[test]
    fn a_second_open_is_already_open() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.redb");
        let _s = Store::open(&p).unwrap();
        let e = Store::open(&p).unwrap_err();
        assert!(e.is_already_open(), "{e}");
        assert!(!StoreError::Corrupt("k".into(), "x".into()).is_already_open());
    }

    #[test]
    fn a_record_that_does_not_encode_is_an_error_and_writes_nothing() {
        use std::collections::HashMap;
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(&d.path().join("s.redb")).unwrap();
        // JSON object keys must be strings: a map keyed by tuples does not encode.
        let bad: HashMap<(i32, i32), i32> = HashMap::from([((1, 2), 3)]);
        let e = s.write(|tx| tx.put_record(Ns::Client, "a", &bad)).unwrap_err();
        assert!(matches!(e, StoreError::Encode(ref t, _) if t == "records/client"), "{e}");
        assert!(!e.to_string().contains("a\""), "{e}");
        assert_eq!(s.read(|rx| rx.record::<serde_json::Value>(Ns::Client, "a")).unwrap(), None);
        let e = s.write(|tx| tx.put_intent("int_a", &bad, true, IntentDue::default())).unwrap_err();
        assert!(matches!(e, StoreError::Encode(ref t, _) if t == "intents"), "{e}");
        assert_eq!(s.read(|rx| rx.active_ids()).unwrap(), Vec::<String>::new());
        assert!(s.write(|tx| tx.enqueue_mail(&bad)).is_err());
        assert!(s.write(|tx| tx.put_offer("off_a", &bad, None)).is_err());
        assert!(s.write(|tx| tx.put_seller("sel_a", "a", &bad)).is_err());
        assert!(s.write(|tx| tx.put_delivery("int_a", "off_a", 1, &bad)).is_err());
    }
}
