//! Storage: all tables in one redb file (`DATA_DIR/isto.redb`).
//!
//! A write that a tool call acknowledges is on disk when the call returns: each write
//! transaction commits without an fsync, and [`Store::sync`] then waits for one durable
//! commit that covers it, shared by every write committed meanwhile (group commit). Records are JSON values; secrets appear
//! only as hashes ([`crate::crypto::token_hash`]) or sealed ([`crate::crypto::Sealed`]).
//! redb allows one process per file, hence the admin socket (`crate::admin`).
//!
//! An I/O failure (a full disk, most often) latches redb: every later call on that
//! handle fails with "previous I/O error" until the file is closed and opened again. The
//! store therefore notes every I/O-class failure, and the next call after it (at most one
//! attempt per [`REOPEN_INTERVAL`]) waits for the calls in flight to end, closes the file
//! and opens it again — redb's recovery restores the last commit — so a write that
//! failed for lack of space succeeds again once space returns, without a restart (issue 9
//! point 7). [`Store::writable`] reports the outcome of the last write for `/readyz`.
//!
//! Layout (redb types never leave this module):
//! - this file: [`Store`] (open, [`Store::read`], [`Store::write`]), the transactions
//!   [`Rx`] and [`Tx`], the read surface [`Reads`] and [`StoreError`];
//! - `schema`: every table definition, [`SCHEMA_VERSION`] and the numbered migrations
//!   run at open;
//! - `dump`: the logical export of every table from one read transaction and its
//!   restore into a new file ([`Store::export`], [`restore_file`]), for backups;
//! - one module per entity, each owning its tables' keys and writes: `intents` (with the
//!   active set and the expiry index, [`IntentDue`]), `people` (the person index: each
//!   person's active intents, for the per-person cap), `tokens`, `offers` (with feed
//!   references and the catalogue generation), `sellers`, `deliveries` (with digest due
//!   times), `outbox`, `replies` (the queue of seller replies waiting to be matched) and
//!   `records` (namespaced small records, [`Ns`]).

mod deliveries;
mod dump;
#[cfg(test)]
pub(crate) mod faults;
mod intents;
mod keymeta;
mod offers;
mod open;
mod outbox;
mod people;
mod records;
mod replies;
mod schema;
mod sellers;
mod stats;
mod tokens;

pub use dump::{in_use, restore_file, table_names, Cursor, Export, Rewritten, Snapshot};
pub use intents::{IntentDue, IntentKey};
pub use keymeta::{key_record, KeyRecord};
pub use records::Ns;
pub use replies::PendingReply;
#[cfg(test)]
pub(crate) use schema::rewind_to_version_1;
pub use schema::{
    migrate_file, migrations, Migrated, MigrationInfo, TableChange, FILE_NAME, ISTO_VERSION, SCHEMA_VERSION,
};
pub use stats::{Counts, Dangling};

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde::{de::DeserializeOwned, Serialize};
use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

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
    /// The store is being (or could not be) opened again after an I/O failure; the
    /// call may be retried (see [`REOPEN_INTERVAL`]).
    #[error("store: unavailable after an I/O failure (reopening the file)")]
    Unavailable,
    /// A backup's rows or the store's tables do not fit a backup (the message says
    /// which row or table; never a key or value): see `dump`.
    #[error("backup: {0}")]
    Backup(String),
    /// The file is not an isto store (empty, not a regular file, not a redb database,
    /// or a redb database without isto's schema version): the reason and what to do.
    /// It is never initialised. The caller names the file.
    #[error("not an isto store: {0}")]
    NotAStore(String),
    /// The file was written by a newer isto (schema version above [`SCHEMA_VERSION`]).
    /// The message names the file's version and writer, this build's, and what to do.
    #[error(
        "the store was written by {} at store schema version {found}, which is newer than this isto \
         {ISTO_VERSION} knows ({SCHEMA_VERSION}): upgrade isto again (install {} or later), or restore a \
         backup made by this version (`isto admin restore FILE --force`, with the newer isto stopped)",
        writer.as_deref().map_or_else(|| "a newer isto".to_owned(), |w| format!("isto {w}")),
        writer.as_deref().map_or_else(|| "the version that wrote it".to_owned(), |w| format!("isto {w}"))
    )]
    TooNew {
        /// The version found in the file.
        found: u64,
        /// The isto version recorded as its last writer, when the file has one.
        writer: Option<String>,
    },
}

impl StoreError {
    /// Whether another process (usually `isto serve`) holds the store file.
    pub fn is_already_open(&self) -> bool {
        matches!(self, Self::Db(DbError(redb::Error::DatabaseAlreadyOpen)))
    }

    /// Whether the file could not be opened for want of permission (the process is not
    /// the data directory's owner, say).
    pub fn is_permission_denied(&self) -> bool {
        let mut e: Option<&(dyn std::error::Error + 'static)> = Some(self);
        while let Some(x) = e {
            if x.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::PermissionDenied) {
                return true;
            }
            e = x.source();
        }
        self.to_string().contains("Permission denied")
    }
}

impl From<redb::Error> for StoreError {
    fn from(e: redb::Error) -> Self {
        if is_io_class(&e) {
            IO_FAILURES.with(|n| n.set(n.get().wrapping_add(1)));
            LAST_IO_FAILURE.with(|m| *m.borrow_mut() = Some(e.to_string()));
        }
        Self::Db(DbError(e))
    }
}

/// Whether a redb error means the handle is (or may be) latched after an I/O failure
/// and must be closed and opened again.
fn is_io_class(e: &redb::Error) -> bool {
    matches!(e, redb::Error::Io(_) | redb::Error::PreviousIo | redb::Error::DatabaseClosed | redb::Error::Backend(_))
}

macro_rules! from_redb {
    ($($t:ty),*) => {$(impl From<$t> for StoreError { fn from(e: $t) -> Self { redb::Error::from(e).into() } })*};
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

/// At most one attempt per this interval to close and reopen a store that failed with an
/// I/O error (a reopen runs redb's recovery, which reads the whole file).
pub const REOPEN_INTERVAL: Duration = Duration::from_secs(1);
/// Longest wait of a reopen for the calls still running on the failed handle; then the
/// reopen gives up until the next attempt.
const DRAIN_WAIT: Duration = Duration::from_secs(5);
/// Longest wait of a call for a reopen in progress before it fails with
/// [`StoreError::Unavailable`].
const REOPEN_WAIT: Duration = Duration::from_secs(10);

thread_local! {
    /// I/O-class redb errors converted on this thread (see [`is_io_class`]): a call
    /// compares the count before and after, since its closure's error type hides the cause.
    static IO_FAILURES: Cell<u64> = const { Cell::new(0) };
    /// The handle each store has lent to the outermost call running on this thread (by
    /// store address): a nested call (a read inside a write's closure) uses it, so it
    /// never waits for a reopen that waits for the outer call.
    static LENT: RefCell<Vec<(usize, Arc<Handle>)>> = const { RefCell::new(Vec::new()) };
    /// The text of the last of those errors (the engine's, e.g. "No space left on
    /// device": never a key or a value), for the one log line of an episode.
    static LAST_IO_FAILURE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Less free space than this on the store's file system (for unprivileged users) and
/// [`Store::writable`] says no, whatever the last write did: a small write may still fit
/// in pages the file already has while a real one no longer does.
pub const MIN_FREE_BYTES: u64 = 1024 * 1024;

/// Default size of the store's page cache, MiB (`store.cache_mib`; issue 12 point 3).
/// redb's own default is 1 GiB: the cache then kept every page the process had read
/// (the whole catalogue after a rebuild of the offer index, every offer a search had
/// shown), so the idle process grew with the store. 16 MiB holds the tables' upper pages
/// and the hot records; other pages are read again from the file, through the operating
/// system's page cache.
pub const DEFAULT_CACHE_MIB: u64 = 16;

/// Opens the database file: `true` the first time, `false` to reopen it after an I/O
/// failure (a missing file is an error then, not a new store).
type Opener = Box<dyn Fn(bool) -> std::result::Result<Database, redb::DatabaseError> + Send + Sync>;

/// The open store: one redb file, reopened after an I/O failure (see the module docs).
pub struct Store {
    open: Opener,
    /// The file (for the free-space check; `None` in tests over a fake disk).
    path: Option<PathBuf>,
    state: Mutex<State>,
    /// Signalled when a reopen ends.
    reopened: Condvar,
    /// Held by [`Store::writable`]'s probe, so concurrent readiness checks probe once.
    probe: Mutex<()>,
    /// Whether [`Store::intent_key`] has handed out the key.
    intent_key_taken: std::sync::atomic::AtomicBool,
}

/// What [`Store`] knows of its handle.
struct State {
    /// The handle; `None` when a reopen failed (or one is in progress).
    db: Option<Arc<Handle>>,
    /// An I/O-class failure was seen on `db`: reopen before the next call.
    broken: bool,
    /// A reopen is in progress (calls wait for it, up to [`REOPEN_WAIT`]).
    reopening: bool,
    /// When the last reopen was tried.
    last_attempt: Option<Instant>,
    /// An I/O failure episode is open: from the first failure (logged once) until a
    /// write commits again (logged once).
    failing: bool,
    /// When the last write ended and whether it committed (writes refused by their own
    /// closure for other reasons are not counted).
    last_write: Option<(Instant, bool)>,
}

/// Whether the store takes writes, as [`Store::writable`] found it (for `/readyz`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Writable {
    /// The last write (or the probe) committed, and no I/O failure was seen since.
    pub ok: bool,
    /// Whether this answer comes from a probe write made just now.
    pub probed: bool,
    /// Another write transaction was running, so the probe did not wait for it: the
    /// answer is the last write's outcome, however old (`ok` when there was none).
    pub busy: bool,
    /// Seconds since the write the answer is based on (`None`: no write yet).
    pub age_secs: Option<u64>,
    /// Bytes free for isto on the store's file system (`None`: unknown); below
    /// [`MIN_FREE_BYTES`] `ok` is false.
    pub free_bytes: Option<u64>,
}

/// A committed write that is not yet known to be durable: pass it to [`Store::sync`]
/// before acknowledging the write.
#[must_use = "a write is durable only after Store::sync"]
pub struct Pending {
    handle: Arc<Handle>,
    seq: u64,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending").field("seq", &self.seq).finish()
    }
}

/// A handle lent to one call (see [`Store::lend`]).
struct Lease {
    db: Arc<Handle>,
    /// The store's address, when this is the outermost call on this thread.
    outer: Option<usize>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(key) = self.outer {
            LENT.with(|l| l.borrow_mut().retain(|(k, _)| *k != key));
        }
    }
}

/// An open database with its group-commit state (see [`Store::sync`]).
struct Handle {
    db: Database,
    group: Mutex<Group>,
    /// Signalled when a durable commit ends.
    synced: Condvar,
}

/// The group-commit counters of one handle.
#[derive(Default)]
struct Group {
    /// The number of the last write transaction committed (not yet durable perhaps).
    committed: u64,
    /// Every write numbered up to this one is durable.
    durable: u64,
    /// A durable commit is under way.
    flushing: bool,
}

impl std::ops::Deref for Handle {
    type Target = Database;
    fn deref(&self) -> &Database {
        &self.db
    }
}

impl Handle {
    fn new(db: Database) -> Self {
        Self { db, group: Mutex::new(Group::default()), synced: Condvar::new() }
    }

    fn lock_group(&self) -> MutexGuard<'_, Group> {
        self.group.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The number of the write about to commit (called under redb's write lock).
    fn next_seq(&self) -> u64 {
        let mut g = self.lock_group();
        g.committed += 1;
        g.committed
    }

    /// Blocks until the write numbered `seq` is durable, making a durable commit when
    /// none is under way.
    fn sync_through(&self, seq: u64) -> Result<()> {
        let mut g = self.lock_group();
        loop {
            if g.durable >= seq {
                return Ok(());
            }
            if !g.flushing {
                g.flushing = true;
                drop(g);
                let flushed = self.durable_commit();
                g = self.lock_group();
                g.flushing = false;
                if let Ok(through) = flushed {
                    g.durable = g.durable.max(through);
                }
                self.synced.notify_all();
                flushed?;
                continue;
            }
            g = self.synced.wait(g).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// One empty write transaction with immediate durability: every commit before it is
    /// durable when it returns. The number of the last write it covers.
    fn durable_commit(&self) -> Result<u64> {
        let txn = self.db.begin_write()?;
        // Under redb's write lock: every numbered write has committed or failed.
        let through = self.lock_group().committed;
        txn.commit()?;
        Ok(through)
    }
}

/// Why a reopen did not give a new handle.
enum ReopenFailed {
    /// Calls on the old handle did not end within [`DRAIN_WAIT`]: it is kept.
    Busy(Arc<Handle>),
    /// Opening the file failed (the disk is still full, say).
    Open(redb::DatabaseError),
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Store")
    }
}

impl Store {
    /// Opens or creates the store at `path`. A missing file is made anew with every
    /// table and [`SCHEMA_VERSION`]; an older one is migrated (all pending migrations and
    /// the new version in one write transaction, see `schema`); a file that is not an
    /// isto store is refused, never initialised (see `open`).
    ///
    /// # Errors
    /// [`StoreError::Db`] (for example when `isto serve` already holds the file:
    /// [`StoreError::is_already_open`]), [`StoreError::NotAStore`],
    /// [`StoreError::TooNew`], and a migration's error.
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_cached(path, DEFAULT_CACHE_MIB)
    }

    /// As [`Store::open`], with a page cache of at most `cache_mib` MiB (`store.cache_mib`).
    /// The cache size changes memory and read speed only, never durability.
    ///
    /// # Errors
    /// As [`Store::open`].
    pub fn open_cached(path: &Path, cache_mib: u64) -> Result<Self> {
        let file: PathBuf = path.to_owned();
        let bytes = usize::try_from(cache_mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX);
        if !open::existing(path)? {
            open::initialise(path, bytes)?;
        }
        let open = move |first: bool| {
            let mut b = Database::builder();
            b.set_cache_size(bytes);
            open::repair_logged(&mut b, &file, if first { "start" } else { "reopen" })
        };
        Self::open_with(Box::new(open), Some(path.to_owned()), false)
    }

    /// Opens the store with `open` (also used to reopen it after an I/O failure). A
    /// file without isto's schema version is initialised only when `new` (a store the
    /// caller has just made), else refused ([`StoreError::NotAStore`]).
    fn open_with(open: Opener, path: Option<PathBuf>, new: bool) -> Result<Self> {
        let db = open(true).map_err(open::not_redb)?;
        let txn = db.begin_write()?;
        schema::prepare(&txn, new)?;
        txn.commit()?;
        let state = State {
            db: Some(Arc::new(Handle::new(db))),
            broken: false,
            reopening: false,
            last_attempt: None,
            failing: false,
            last_write: None,
        };
        Ok(Self {
            open,
            path,
            state: Mutex::new(state),
            reopened: Condvar::new(),
            probe: Mutex::new(()),
            intent_key_taken: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Runs `f` in one write transaction and commits (durably) when it returns `Ok`;
    /// on `Err` nothing is written.
    ///
    /// # Errors
    /// `f`'s error, or a storage error converted into `E` ([`StoreError::Unavailable`]
    /// while the file is reopened after an I/O failure).
    pub fn write<T, E: From<StoreError>>(&self, f: impl FnOnce(&mut Tx<'_>) -> Result<T, E>) -> Result<T, E> {
        let (out, pending) = self.write_unsynced(f)?;
        self.sync(pending)?;
        Ok(out)
    }

    /// As [`Store::write`], but returns once the transaction is committed and visible,
    /// before it is durable: the caller must pass the [`Pending`] to [`Store::sync`]
    /// before it acknowledges the write (typically after releasing its own locks, so
    /// that the writes of many callers share one fsync: group commit).
    ///
    /// # Errors
    /// As [`Store::write`].
    pub fn write_unsynced<T, E: From<StoreError>>(
        &self,
        f: impl FnOnce(&mut Tx<'_>) -> Result<T, E>,
    ) -> Result<(T, Pending), E> {
        let lease = self.lend()?;
        let before = IO_FAILURES.with(Cell::get);
        let out = (|| {
            let mut txn = lease.db.begin_write().map_err(StoreError::from)?;
            // Made durable by the next durable commit, see `Store::sync`.
            txn.set_durability(redb::Durability::None).map_err(|e| StoreError::from(redb::Error::from(e)))?;
            let mut tx = Tx { txn: &txn };
            let out = f(&mut tx)?;
            // Numbered under redb's write lock, so the numbers follow the commit order.
            let seq = lease.db.next_seq();
            txn.commit().map_err(StoreError::from)?;
            Ok((out, Pending { handle: lease.db.clone(), seq }))
        })();
        let io_failed = IO_FAILURES.with(Cell::get) != before;
        drop(lease);
        if out.is_err() {
            self.note(io_failed, io_failed.then_some(false));
        }
        out
    }

    /// Waits until the write of `pending` is durable (group commit): when no durable
    /// commit covering it is under way, this call makes one (an empty write
    /// transaction with immediate durability, which persists every commit before it)
    /// for all the writes committed so far; otherwise it waits for the one under way
    /// and, when that did not cover it, for the next. So an acknowledged write is on
    /// disk, and concurrent writers share one fsync.
    ///
    /// # Errors
    /// A storage error of the durable commit (the write may then be lost at a crash).
    pub fn sync<E: From<StoreError>>(&self, pending: Pending) -> Result<(), E> {
        let before = IO_FAILURES.with(Cell::get);
        let out = pending.handle.sync_through(pending.seq);
        let io_failed = IO_FAILURES.with(Cell::get) != before;
        self.note(io_failed, Some(out.is_ok()).filter(|ok| *ok || io_failed));
        out.map_err(E::from)
    }

    /// Runs `f` in one write transaction and rolls it back whatever `f` returns: `f`
    /// sees its own writes, nobody else ever does (a dry run of a write).
    ///
    /// # Errors
    /// `f`'s error, or a storage error converted into `E` ([`StoreError::Unavailable`]
    /// while the file is reopened after an I/O failure).
    pub fn rehearse<T, E: From<StoreError>>(&self, f: impl FnOnce(&mut Tx<'_>) -> Result<T, E>) -> Result<T, E> {
        let lease = self.lend()?;
        let before = IO_FAILURES.with(Cell::get);
        let out = (|| {
            let txn = lease.db.begin_write().map_err(StoreError::from)?;
            let mut tx = Tx { txn: &txn };
            let out = f(&mut tx);
            txn.abort().map_err(StoreError::from)?;
            out
        })();
        let io_failed = IO_FAILURES.with(Cell::get) != before;
        drop(lease);
        // Neither a committed nor a failed write: only an I/O failure is noted.
        self.note(io_failed, None);
        out
    }

    /// Runs `f` in one read transaction (a consistent snapshot).
    ///
    /// # Errors
    /// `f`'s error, or a storage error converted into `E` ([`StoreError::Unavailable`]
    /// while the file is reopened after an I/O failure).
    pub fn read<T, E: From<StoreError>>(&self, f: impl FnOnce(&Rx) -> Result<T, E>) -> Result<T, E> {
        let lease = self.lend()?;
        let before = IO_FAILURES.with(Cell::get);
        let out = (|| {
            let txn = lease.db.begin_read().map_err(StoreError::from)?;
            f(&Rx { txn })
        })();
        let io_failed = IO_FAILURES.with(Cell::get) != before;
        drop(lease);
        self.note(io_failed, None);
        out
    }

    /// Whether the store takes writes (issue 9 point 7, `/readyz`): the outcome of the
    /// last write when it ended less than `fresh` ago and no I/O failure was seen since;
    /// otherwise a probe — one small write transaction (a counter in `meta` that nothing
    /// reads), which also reopens a failed store when a reopen is due. The probe never
    /// waits for another write transaction (an import, say): then the last write's
    /// outcome is the answer. Concurrent callers probe once. And whatever the writes did,
    /// less than [`MIN_FREE_BYTES`] free on the file system is not writable. Changes
    /// nothing a user can see.
    pub fn writable(&self, fresh: Duration) -> Writable {
        let free_bytes = self.path.as_deref().and_then(|p| fs4::available_space(p).ok());
        let roomy = free_bytes.is_none_or(|f| f >= MIN_FREE_BYTES);
        // Without room, no probe: it would prove only that a small write still fits.
        let mut w = self.last_write_or_probe(if roomy { fresh } else { Duration::MAX }, roomy);
        w.free_bytes = free_bytes;
        w.ok &= roomy;
        w
    }

    fn last_write_or_probe(&self, fresh: Duration, may_probe: bool) -> Writable {
        let last = |st: &State, busy: bool| Writable {
            ok: st.last_write.is_none_or(|(_, ok)| ok) && !st.broken,
            probed: false,
            busy,
            age_secs: st.last_write.map(|(at, _)| at.elapsed().as_secs()),
            free_bytes: None,
        };
        let recent = |st: &State| {
            st.last_write.is_some_and(|(at, _)| !st.broken && at.elapsed() < fresh).then(|| last(st, false))
        };
        if let Some(w) = recent(&self.lock_state()) {
            return w;
        }
        if !may_probe {
            return last(&self.lock_state(), false);
        }
        let _probe = self.probe.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(w) = recent(&self.lock_state()) {
            return w;
        }
        match self.probe_write() {
            Some(ok) => Writable { ok, probed: true, busy: false, age_secs: Some(0), free_bytes: None },
            None => last(&self.lock_state(), true),
        }
    }

    /// One probe write: `Some(committed)`, or `None` when another write transaction is
    /// running (the probe does not wait for it).
    fn probe_write(&self) -> Option<bool> {
        let Ok(lease) = self.lend() else { return Some(false) };
        let before = IO_FAILURES.with(Cell::get);
        let out = (|| -> Result<bool> {
            let txn = match lease.db.try_begin_write() {
                Ok(txn) => txn,
                Err(redb::TransactionError::WouldBlock) => return Ok(false),
                Err(e) => return Err(e.into()),
            };
            Tx { txn: &txn }.bump_write_probe()?;
            txn.commit()?;
            Ok(true)
        })();
        let io_failed = IO_FAILURES.with(Cell::get) != before;
        drop(lease);
        match out {
            Ok(false) => None,
            Ok(true) => {
                self.note(false, Some(true));
                Some(true)
            }
            Err(_) => {
                self.note(io_failed, io_failed.then_some(false));
                Some(false)
            }
        }
    }

    fn lock_state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The one key to this store's intent writes ([`Tx::put_intent`],
    /// [`Tx::remove_intent`]): the first call gets it, every later one `None`. The
    /// services' base takes it when it is assembled, so no other code can write an
    /// intent record past its rules (the active set, the expiry and person indexes, the
    /// per-person cap, the matching engine).
    pub fn intent_key(&self) -> Option<IntentKey> {
        (!self.intent_key_taken.swap(true, std::sync::atomic::Ordering::SeqCst))
            .then_some(IntentKey { _only_from_the_store: () })
    }

    /// Whether an I/O failure was seen and the file has not been reopened since: reads
    /// may then still see commits that were never made durable and that the reopen
    /// (redb's recovery) will drop. `base` rebuilds its engine only from a store that
    /// is not failed.
    pub fn failed(&self) -> bool {
        self.lock_state().broken
    }

    /// The handle for one call: the one already lent to an outer call on this thread, or
    /// the current one (reopened first when it failed and a reopen is due).
    fn lend(&self) -> Result<Lease> {
        let key = std::ptr::from_ref(self) as usize;
        let lent = LENT.with(|l| l.borrow().iter().find(|(k, _)| *k == key).map(|(_, db)| db.clone()));
        if let Some(db) = lent {
            return Ok(Lease { db, outer: None });
        }
        let db = self.current()?;
        LENT.with(|l| l.borrow_mut().push((key, db.clone())));
        Ok(Lease { db, outer: Some(key) })
    }

    fn current(&self) -> Result<Arc<Handle>> {
        let deadline = Instant::now() + REOPEN_WAIT;
        let mut st = self.lock_state();
        loop {
            if st.reopening {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(StoreError::Unavailable);
                }
                st = self.reopened.wait_timeout(st, left).unwrap_or_else(PoisonError::into_inner).0;
                continue;
            }
            if st.broken && st.last_attempt.is_none_or(|t| t.elapsed() >= REOPEN_INTERVAL) {
                st = self.reopen(st);
                continue;
            }
            return st.db.clone().ok_or(StoreError::Unavailable);
        }
    }

    /// Closes the failed handle once no call uses it and opens the file again; calls
    /// arriving meanwhile wait (see [`Store::current`]).
    fn reopen<'s>(&'s self, mut st: MutexGuard<'s, State>) -> MutexGuard<'s, State> {
        st.reopening = true;
        st.last_attempt = Some(Instant::now());
        let old = st.db.take();
        drop(st);
        let outcome = self.close_and_open(old);
        let mut st = self.lock_state();
        match outcome {
            Ok(db) => {
                st.db = Some(Arc::new(Handle::new(db)));
                st.broken = false;
                tracing::info!("store file reopened after an I/O failure");
            }
            Err(ReopenFailed::Busy(old)) => {
                st.db = Some(old);
                tracing::debug!("store reopen postponed: calls on the failed handle still running");
            }
            Err(ReopenFailed::Open(e)) => {
                tracing::debug!(error = %e, "store reopen failed; trying again at the next call");
            }
        }
        st.reopening = false;
        self.reopened.notify_all();
        st
    }

    fn close_and_open(&self, old: Option<Arc<Handle>>) -> std::result::Result<Database, ReopenFailed> {
        if let Some(mut old) = old {
            let since = Instant::now();
            loop {
                match Arc::try_unwrap(old) {
                    Ok(Handle { db, .. }) => {
                        // After an I/O failure redb leaves recovery to the next open and
                        // reports the failure again here; the file is released either way.
                        let _ = db.close();
                        break;
                    }
                    Err(still) if since.elapsed() >= DRAIN_WAIT => return Err(ReopenFailed::Busy(still)),
                    Err(still) => {
                        old = still;
                        std::thread::sleep(Duration::from_millis(2));
                    }
                }
            }
        }
        (self.open)(false).map_err(ReopenFailed::Open)
    }

    /// Records a call's outcome: `io_failed` opens an episode (logged once) and marks the
    /// handle for a reopen; `committed` is a write's outcome (`Some(true)` committed,
    /// `Some(false)` failed for I/O), and a commit closes the episode (logged once).
    fn note(&self, io_failed: bool, committed: Option<bool>) {
        if !io_failed && committed.is_none() {
            return;
        }
        let mut st = self.lock_state();
        if let Some(ok) = committed {
            st.last_write = Some((Instant::now(), ok));
        }
        if io_failed {
            st.broken = true;
            if !st.failing {
                st.failing = true;
                let cause = LAST_IO_FAILURE.with(|m| m.borrow().clone()).unwrap_or_default();
                tracing::error!(error = %cause, "store I/O failure (is the disk full?): calls fail until the file is reopened, tried at the next call");
            }
        } else if committed == Some(true) && st.failing {
            st.failing = false;
            tracing::info!("store writes succeed again after the I/O failure");
        }
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

/// Key of the write-probe counter in `meta` (see [`Store::writable`]; nothing reads it).
const WRITE_PROBE: &str = "write_probe";

/// Prefix in `meta` of the one-time start-up passes recorded as done
/// (`pass:<name>` → the isto version that ran it; see `crate::state`).
const PASS_PREFIX: &str = "pass:";

impl Tx<'_> {
    /// Records the one-time start-up pass `name` (a snake_case name from
    /// `crate::state::PASSES`) as done, by this isto version; later starts skip it.
    ///
    /// # Errors
    /// Storage errors.
    pub fn record_pass(&mut self, name: &str) -> Result<()> {
        self.txn.open_table(schema::META)?.insert(format!("{PASS_PREFIX}{name}").as_str(), ISTO_VERSION)?;
        Ok(())
    }

    /// Forgets that the start-up pass `name` ran, so the next start runs it again (as
    /// on a store written before the pass was recorded). Returns whether it was recorded.
    ///
    /// # Errors
    /// Storage errors.
    pub fn forget_pass(&mut self, name: &str) -> Result<bool> {
        Ok(self.txn.open_table(schema::META)?.remove(format!("{PASS_PREFIX}{name}").as_str())?.is_some())
    }

    /// Bumps the write-probe counter: the smallest write that goes through a commit.
    fn bump_write_probe(&mut self) -> Result<()> {
        let n = meta_counter(&*self, WRITE_PROBE)?.wrapping_add(1);
        self.txn.open_table(schema::META)?.insert(WRITE_PROBE, n.to_string().as_str())?;
        Ok(())
    }
}

/// Reads shared by [`Rx`] and [`Tx`]. Each method is its entity module's read.
pub trait Reads: Tables {
    /// The isto version that ran the one-time start-up pass `name`, when it is
    /// recorded as done ([`Tx::record_pass`]).
    ///
    /// # Errors
    /// Storage errors.
    fn pass_done(&self, name: &str) -> Result<Option<String>> {
        get_str(self, schema::META, &format!("{PASS_PREFIX}{name}"))
    }

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

    /// The person-index row of an intent: its person key and the validUntil (unix µs)
    /// recorded with it; `None` when it has none (not in the active set, or no person
    /// key). See [`Tx::set_intent_person`].
    ///
    /// # Errors
    /// Storage errors.
    fn intent_person(&self, id: &str) -> Result<Option<(String, i64)>> {
        people::entry_of(self, id)
    }

    /// How many intents of `person` in the active set are valid after `after_micros`
    /// (validUntil strictly later; unix µs), leaving out intent `except` — at most
    /// `limit` (the scan stops there). The per-person cap's count.
    ///
    /// # Errors
    /// Storage errors.
    fn person_active(&self, person: &str, after_micros: i64, except: &str, limit: usize) -> Result<usize> {
        people::count(self, person, after_micros, except, limit)
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

    /// How many messages were dropped after a permanent SMTP refusal (5xx) since the
    /// store was created (issue 9 point 5: "5xx dropped and recorded"); counted with the
    /// removal in one transaction ([`Tx::drop_mail`]).
    ///
    /// # Errors
    /// Storage errors.
    fn mail_dropped(&self) -> Result<u64> {
        outbox::dropped(self)
    }

    /// The first `limit` queued seller replies, oldest first: `(sequence, intent id,
    /// reply offer id)` (see [`Tx::queue_reply`]).
    ///
    /// # Errors
    /// Storage errors.
    fn pending_replies(&self, limit: usize) -> Result<Vec<PendingReply>> {
        replies::first(self, limit)
    }

    /// How many seller replies wait to be matched.
    ///
    /// # Errors
    /// Storage errors.
    fn pending_reply_count(&self) -> Result<u64> {
        replies::len(self)
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
    use redb::backends::FileBackend;
    use redb::{BackendError, StorageBackend};
    use std::ops::Bound;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A file backend that refuses every write and resize while `full` is set, as a full
    /// disk does (ENOSPC).
    #[derive(Debug)]
    struct FullDisk {
        file: FileBackend,
        full: Arc<AtomicBool>,
    }

    impl FullDisk {
        fn check(&self) -> std::io::Result<()> {
            if self.full.load(Ordering::SeqCst) {
                Err(std::io::Error::from_raw_os_error(28))
            } else {
                Ok(())
            }
        }
    }

    impl StorageBackend for FullDisk {
        fn len(&self) -> std::io::Result<u64> {
            self.file.len()
        }
        fn read(&self, offset: u64, out: &mut [u8]) -> std::io::Result<()> {
            self.file.read(offset, out)
        }
        fn set_len(&self, len: u64) -> std::io::Result<()> {
            self.check()?;
            self.file.set_len(len)
        }
        fn sync_data(&self) -> std::io::Result<()> {
            self.file.sync_data()
        }
        fn write(&self, offset: u64, data: &[u8]) -> std::io::Result<()> {
            self.check()?;
            self.file.write(offset, data)
        }
        fn close(&self) -> std::io::Result<()> {
            self.file.close()
        }
        fn try_lock_range(&self, s: Bound<u64>, e: Bound<u64>) -> Result<bool, BackendError> {
            self.file.try_lock_range(s, e)
        }
        fn try_lock_shared_range(&self, s: Bound<u64>, e: Bound<u64>) -> Result<bool, BackendError> {
            self.file.try_lock_shared_range(s, e)
        }
        fn lock_range(&self, s: Bound<u64>, e: Bound<u64>) -> Result<(), BackendError> {
            self.file.lock_range(s, e)
        }
        fn lock_shared_range(&self, s: Bound<u64>, e: Bound<u64>) -> Result<(), BackendError> {
            self.file.lock_shared_range(s, e)
        }
        fn unlock_range(&self, s: Bound<u64>, e: Bound<u64>) -> Result<(), BackendError> {
            self.file.unlock_range(s, e)
        }
        fn query_lock_range(&self, s: Bound<u64>, e: Bound<u64>) -> Result<bool, BackendError> {
            self.file.query_lock_range(s, e)
        }
    }

    /// A store at `path` on a disk that is full while the returned flag is set.
    fn on_a_disk_that_fills(path: &Path) -> (Store, Arc<AtomicBool>) {
        let full = Arc::new(AtomicBool::new(false));
        let (path, flag) = (path.to_owned(), full.clone());
        let store = Store::open_with(
            Box::new(move |_| {
                let file =
                    std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path)?;
                Database::builder().create_with_backend(FullDisk { file: FileBackend::new(file)?, full: flag.clone() })
            }),
            None,
            true,
        )
        .unwrap();
        (store, full)
    }

    fn put(s: &Store, id: &str, size: usize) -> Result<()> {
        s.write(|tx| {
            tx.put_intent(
                &crate::store::IntentKey::for_tests(),
                id,
                &serde_json::json!({"pad": "x".repeat(size)}),
                true,
                IntentDue::default(),
            )
        })
    }

    fn has(s: &Store, id: &str) -> bool {
        s.read(|rx| rx.intent::<serde_json::Value>(id)).unwrap().is_some()
    }

    #[test]
    fn a_write_that_failed_for_lack_of_space_succeeds_once_space_returns() {
        let d = tempfile::tempdir().unwrap();
        let (s, full) = on_a_disk_that_fills(&d.path().join("s.redb"));
        put(&s, "int_a", 100).unwrap();
        assert!(s.writable(Duration::from_secs(60)).ok);

        full.store(true, Ordering::SeqCst);
        let e = put(&s, "int_b", 20_000).unwrap_err();
        assert!(matches!(e, StoreError::Db(_)), "{e}");
        // Every write fails while the disk is full, reopened or not.
        std::thread::sleep(REOPEN_INTERVAL);
        assert!(put(&s, "int_b", 10).is_err());
        let w = s.writable(Duration::from_secs(60));
        assert!(!w.ok, "{w:?}");

        full.store(false, Ordering::SeqCst);
        std::thread::sleep(REOPEN_INTERVAL);
        put(&s, "int_b", 20_000).unwrap();
        assert!(has(&s, "int_a") && has(&s, "int_b"), "committed data survives the reopen");
        assert_eq!(s.read(|rx| rx.active_ids()).unwrap(), vec!["int_a", "int_b"]);
        let w = s.writable(Duration::from_secs(60));
        assert!(w.ok && !w.probed, "{w:?}");
    }

    #[test]
    fn concurrent_calls_fail_together_and_recover_together_without_deadlock() {
        let d = tempfile::tempdir().unwrap();
        let (s, full) = on_a_disk_that_fills(&d.path().join("s.redb"));
        let s = Arc::new(s);
        put(&s, "int_0", 10).unwrap();
        full.store(true, Ordering::SeqCst);
        let failing: Vec<_> = (0..4)
            .map(|i| {
                let s = s.clone();
                std::thread::spawn(move || put(&s, &format!("int_f{i}"), 5_000).is_err())
            })
            .collect();
        for t in failing {
            assert!(t.join().unwrap(), "a write on a full disk must fail");
        }
        full.store(false, Ordering::SeqCst);
        std::thread::sleep(REOPEN_INTERVAL);
        let started = Instant::now();
        let workers: Vec<_> = (0..4)
            .map(|i| {
                let s = s.clone();
                std::thread::spawn(move || {
                    for j in 0..10 {
                        let id = format!("int_{i}_{j}");
                        // A read nested in a write's closure uses the outer call's handle.
                        s.write(|tx| {
                            let seen = s.read(|rx| rx.intent::<serde_json::Value>("int_0"))?;
                            assert!(seen.is_some());
                            tx.put_intent(
                                &crate::store::IntentKey::for_tests(),
                                &id,
                                &serde_json::json!({"i": i}),
                                true,
                                IntentDue::default(),
                            )
                        })
                        .unwrap();
                        assert!(has(&s, &id));
                    }
                })
            })
            .collect();
        for t in workers {
            t.join().unwrap();
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
        assert_eq!(s.read(|rx| rx.active_ids()).unwrap().len(), 41);
        assert!(!has(&s, "int_f0"), "a failed write leaves nothing");
    }

    #[test]
    fn writable_reports_the_last_write_or_probes_without_visible_change() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(&d.path().join("s.redb")).unwrap();
        // No write yet: a probe.
        let w = s.writable(Duration::from_secs(60));
        assert!(w.ok && w.probed, "{w:?}");
        // The probe counts as the last write.
        let w = s.writable(Duration::from_secs(60));
        assert!(w.ok && !w.probed, "{w:?}");
        // Stale: probed again.
        assert!(s.writable(Duration::ZERO).probed);
        // A write refused by its own closure says nothing about the disk.
        let _: Result<()> = s.write(|_| Err(StoreError::Corrupt("k".into(), "refused".into())));
        assert!(s.writable(Duration::from_secs(60)).ok);
        assert_eq!(s.read(|rx| rx.all_intents::<serde_json::Value>()).unwrap().len(), 0);
        assert_eq!(s.read(|rx| rx.outbox::<serde_json::Value>()).unwrap().len(), 0);
    }

    #[test]
    fn the_probe_never_waits_for_a_running_write() {
        let d = tempfile::tempdir().unwrap();
        let s = Arc::new(Store::open(&d.path().join("s.redb")).unwrap());
        put(&s, "int_a", 10).unwrap();
        let (started_tx, started) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let long = {
            let s = s.clone();
            std::thread::spawn(move || {
                s.write(|tx| {
                    started_tx.send(()).unwrap();
                    released.recv().unwrap();
                    tx.put_token("code:x", "int_a")
                })
            })
        };
        started.recv().unwrap();
        let t = Instant::now();
        let w = s.writable(Duration::ZERO);
        assert!(w.ok && w.busy && !w.probed, "{w:?}");
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        release.send(()).unwrap();
        long.join().unwrap().unwrap();
        assert!(!s.writable(Duration::ZERO).busy);
    }

    #[test]
    fn schema_version_and_reopen() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.redb");
        {
            let s = Store::open(&p).unwrap();
            s.write(|tx| {
                tx.put_intent(
                    &crate::store::IntentKey::for_tests(),
                    "int_a",
                    &serde_json::json!({"x": 1}),
                    true,
                    IntentDue::default(),
                )
            })
            .unwrap();
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
        let e = s
            .write(|tx| tx.put_intent(&crate::store::IntentKey::for_tests(), "int_a", &bad, true, IntentDue::default()))
            .unwrap_err();
        assert!(matches!(e, StoreError::Encode(ref t, _) if t == "intents"), "{e}");
        assert_eq!(s.read(|rx| rx.active_ids()).unwrap(), Vec::<String>::new());
        assert!(s.write(|tx| tx.enqueue_mail(&bad)).is_err());
        assert!(s.write(|tx| tx.put_offer("off_a", &bad, None)).is_err());
        assert!(s.write(|tx| tx.put_seller("sel_a", "a", &bad)).is_err());
        assert!(s.write(|tx| tx.put_delivery("int_a", "off_a", 1, &bad)).is_err());
    }
}
