//! Storage: all tables in one redb file (`DATA_DIR/isto.redb`).
//!
//! A write that a tool call acknowledges is on disk when the call returns: each write
//! transaction commits without an fsync, and [`Store::sync`] then waits for one durable
//! commit that covers it, shared by every write committed meanwhile (group commit);
//! [`Store::write_durable`] commits its transaction durably itself, for a caller that
//! gathers many writes into one (the intent-write batches of `base::write`, true group
//! commit), and counts as that durable commit for every write before it (`group`).
//!
//! Records are JSON values; secrets appear only as hashes ([`crate::crypto::token_hash`])
//! or sealed ([`crate::crypto::Sealed`]). redb allows one process per file, hence the
//! admin socket (`crate::admin`).
//!
//! An I/O failure (a full disk, most often) latches redb: every later call on that handle
//! fails with "previous I/O error" until the file is closed and opened again. The store
//! therefore notes every I/O-class failure, and the next call after it (at most one
//! attempt per [`REOPEN_INTERVAL`]) waits for the calls in flight to end, closes the file
//! and opens it again — redb's recovery restores the last commit — so a write that failed
//! for lack of space succeeds again once space returns, without a restart.
//! [`Store::writable`] reports the outcome of the last write for `/readyz`.
//!
//! Errors: every fallible item of this module can fail with a storage error
//! ([`StoreError::Db`], redb's or PostgreSQL's; [`StoreError::Unavailable`] while the redb
//! file is reopened or no PostgreSQL connection is free in time); one that decodes a
//! stored record or counter also with [`StoreError::Corrupt`] naming it, one that encodes
//! a record with [`StoreError::Encode`] (nothing is written). An item's own `# Errors`
//! names only what it may return besides.
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

mod account_times;
mod changes;
mod column;
mod deliveries;
mod dump;
mod error;
#[cfg(test)]
pub(crate) mod faults;
mod group;
mod intent_times;
mod intents;
mod keymeta;
mod lead;
mod location;
mod offers;
mod open;
mod outbox;
mod people;
mod pg;
#[cfg(test)]
mod pg_tests;
mod reads;
mod records;
mod replies;
mod schema;
mod sellers;
mod stats;
mod table;
#[cfg(any(test, feature = "testkit"))]
pub mod testpg;
mod tokens;

pub use changes::{ChangeKind, ChangeListener, Changes, FEED_CHANNEL, FEED_PAGE};
pub use deliveries::DeliveryLog;
pub use dump::{in_use, restore_file, table_names, Cursor, Export, Rewritten, Snapshot};
pub use error::{DbError, Result, StoreError};
use group::Handle;
pub use group::Pending;
pub use intents::{IntentDue, IntentKey, IntentRow, IntentWrite};
pub use keymeta::{key_record, KeyRecord};
pub use lead::{LEADER_LOCK, LEAD_RETRY};
pub use location::Location;
pub use offers::OfferRows;
pub use pg::{check_url, redacted, PgSettings, PoolStats, DEFAULT_POOL_SIZE, WRITER_LOCK};
use reads::{meta_counter, Tables, TxTxn};
pub use reads::{Reads, Rx, Tx};
pub use records::Ns;
pub use replies::PendingReply;
#[cfg(test)]
pub(crate) use schema::tests::rewind_to_version_1;
pub use schema::{
    migrate_at, migrate_file, migrations, Migrated, MigrationInfo, TableChange, FILE_NAME, ISTO_VERSION, SCHEMA_VERSION,
};
pub use stats::{Counts, Dangling};

use redb::{Database, ReadableDatabase};
use serde::{de::DeserializeOwned, Serialize};
use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

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

/// Default size of the store's page cache, MiB (`store.cache_mib`): the tables' upper
/// pages, the hot records, and half of it for the pages a write transaction changes
/// (redb's write buffer; pages beyond it are written out and read again before the
/// commit); other pages are read again through the operating system's page cache
/// (redb's own 1 GiB default let the idle process grow with the store). Each cached
/// 4 KiB page takes a 5 KiB allocation, so a full cache holds about 1.6× this in memory,
/// given back after a quiet spell ([`Store::release_cache`]; docs/choices.md, "The
/// store's page cache is 16 MiB").
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
    /// The lock file held for the store's life ([`Store::hold_file`]).
    held: std::sync::OnceLock<std::fs::File>,
    /// The PostgreSQL backend's pool; `None` on redb (the fields above serve redb only).
    pg: Option<Arc<pg::Pool>>,
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

    /// As [`Store::open`] (errors too), with a page cache of at most `cache_mib` MiB
    /// (`store.cache_mib`): memory and read speed only, never durability.
    pub fn open_cached(path: &Path, cache_mib: u64) -> Result<Self> {
        let file: PathBuf = path.to_owned();
        let bytes = usize::try_from(cache_mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX);
        if !open::existing(path)? {
            open::initialise(path, bytes)?;
        }
        let open = move |first: bool| {
            // An `isto serve` holds the lock file even while its file is closed for a moment.
            if first && open::locked_elsewhere(&file) {
                return Err(redb::DatabaseError::DatabaseAlreadyOpen);
            }
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
        schema::prepare(&mut Tx { txn: TxTxn::Redb(&txn) }, new)?;
        txn.commit()?;
        Ok(Self::assemble(open, path, Some(Arc::new(Handle::new(db))), None))
    }

    /// A store over the redb handle `db` (reopened with `open`) or the PostgreSQL `pg`.
    fn assemble(open: Opener, path: Option<PathBuf>, db: Option<Arc<Handle>>, pg: Option<Arc<pg::Pool>>) -> Self {
        let state = State { db, broken: false, reopening: false, last_attempt: None, failing: false, last_write: None };
        Self {
            open,
            path,
            state: Mutex::new(state),
            reopened: Condvar::new(),
            probe: Mutex::new(()),
            intent_key_taken: std::sync::atomic::AtomicBool::new(false),
            held: std::sync::OnceLock::new(),
            pg,
        }
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
        if let Some(pool) = &self.pg {
            return pg::write(pool, true, f).map(|out| (out, Pending { handle: None, seq: 0 }));
        }
        let (out, io_failed) = self.on_handle(|db| {
            let mut txn = db.begin_write().map_err(StoreError::from)?;
            // Made durable by the next durable commit, see `Store::sync`.
            txn.set_durability(redb::Durability::None).map_err(|e| StoreError::from(redb::Error::from(e)))?;
            let mut tx = Tx { txn: TxTxn::Redb(&txn) };
            let out = f(&mut tx)?;
            // Numbered under redb's write lock, so the numbers follow the commit order.
            let seq = db.next_seq();
            txn.commit().map_err(StoreError::from)?;
            Ok((out, Pending { handle: Some(db.clone()), seq }))
        })?;
        if out.is_err() {
            self.note(io_failed, io_failed.then_some(false));
        }
        out
    }

    /// Runs `f` in one write transaction committed with immediate durability when it
    /// returns `Ok` (on `Err` nothing is written): durable when this returns, and so is
    /// every write committed before it (the shared durable commit of [`Store::sync`] has
    /// nothing left to do for them). One commit where [`Store::write`] makes two; for a
    /// caller that gathers many writes into one transaction (the intent-write batches
    /// of `base::write`). On PostgreSQL as [`Store::write`] (a commit is durable).
    ///
    /// # Errors
    /// As [`Store::write`]; a failed commit may lose every write not yet durable.
    pub fn write_durable<T, E: From<StoreError>>(&self, f: impl FnOnce(&mut Tx<'_>) -> Result<T, E>) -> Result<T, E> {
        if let Some(pool) = &self.pg {
            return pg::write(pool, true, f);
        }
        let (out, io_failed) = self.on_handle(|db| {
            let txn = db.begin_write().map_err(StoreError::from)?;
            let out = f(&mut Tx { txn: TxTxn::Redb(&txn) })?;
            let seq = db.next_seq();
            txn.commit().map_err(StoreError::from)?;
            db.durable_through(seq);
            Ok(out)
        })?;
        self.note(io_failed, Some(out.is_ok()).filter(|ok| *ok || io_failed));
        out
    }

    /// Whether a commit is durable by itself (PostgreSQL), so that batching writes saves
    /// nothing.
    pub fn durable_at_commit(&self) -> bool {
        self.pg.is_some()
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
        let Some(handle) = pending.handle else { return Ok(()) };
        let before = IO_FAILURES.with(Cell::get);
        let out = handle.sync_through(pending.seq);
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
        if let Some(pool) = &self.pg {
            return pg::write(pool, false, f);
        }
        let (out, io_failed) = self.on_handle(|db| {
            let txn = db.begin_write().map_err(StoreError::from)?;
            let mut tx = Tx { txn: TxTxn::Redb(&txn) };
            let out = f(&mut tx);
            txn.abort().map_err(StoreError::from)?;
            out
        })?;
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
        if let Some(pool) = &self.pg {
            return pg::read(pool, f);
        }
        let (out, io_failed) = self.on_handle(|db| {
            let txn = db.begin_read().map_err(StoreError::from)?;
            f(&Rx { txn: reads::RxTxn::Redb(txn) })
        })?;
        self.note(io_failed, None);
        out
    }

    /// Whether the store takes writes (`/readyz`): the outcome of the last write when it
    /// ended less than `fresh` ago and no I/O failure was seen since; otherwise a probe —
    /// one small write transaction (a counter in `meta` that nothing reads), which also
    /// reopens a failed store when a reopen is due. The probe never waits for another
    /// write transaction (an import, say): then the last write's outcome is the answer.
    /// Concurrent callers probe once. And whatever the writes did, less than
    /// [`MIN_FREE_BYTES`] free on the file system is not writable. Changes nothing a user
    /// can see.
    pub fn writable(&self, fresh: Duration) -> Writable {
        if let Some(pool) = &self.pg {
            // The database's own disk is its operator's: a round trip says it answers.
            let ok = pg::ping(pool).is_ok();
            return Writable { ok, probed: true, busy: false, age_secs: Some(0), free_bytes: None };
        }
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
        let probe = self.on_handle(|db| -> Result<bool> {
            let txn = match db.try_begin_write() {
                Ok(txn) => txn,
                Err(redb::TransactionError::WouldBlock) => return Ok(false),
                Err(e) => return Err(e.into()),
            };
            Tx { txn: TxTxn::Redb(&txn) }.bump_write_probe()?;
            txn.commit()?;
            Ok(true)
        });
        let Ok((out, io_failed)) = probe else { return Some(false) };
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

    /// The one [`IntentKey`] of this store: the first call gets it, every later one `None`
    /// (the services' base takes it when it is assembled; see [`IntentKey`] for why).
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

    /// Runs `f` on the handle lent for one call ([`Store::lend`]); its outcome, and whether
    /// an I/O-class failure was converted meanwhile (the lease ends before this returns).
    fn on_handle<T>(&self, f: impl FnOnce(&Arc<Handle>) -> T) -> Result<(T, bool)> {
        let lease = self.lend()?;
        let before = IO_FAILURES.with(Cell::get);
        let out = f(&lease.db);
        let io_failed = IO_FAILURES.with(Cell::get) != before;
        drop(lease);
        Ok((out, io_failed))
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
                st = self.reopen(st, "after an I/O failure").0;
                continue;
            }
            return st.db.clone().ok_or(StoreError::Unavailable);
        }
    }

    /// Closes the handle once no call uses it and opens the file again (`why`, for the
    /// log: after an I/O failure, or to give the page cache back); calls arriving
    /// meanwhile wait (see [`Store::current`]). Whether a new handle is in place; when the
    /// open failed, the next call tries again.
    fn reopen<'s>(&'s self, mut st: MutexGuard<'s, State>, why: &str) -> (MutexGuard<'s, State>, bool) {
        st.reopening = true;
        st.last_attempt = Some(Instant::now());
        let old = st.db.take();
        drop(st);
        let outcome = self.close_and_open(old);
        let mut st = self.lock_state();
        let reopened = match outcome {
            Ok(db) => {
                st.db = Some(Arc::new(Handle::new(db)));
                st.broken = false;
                tracing::info!("store file reopened {why}");
                true
            }
            Err(ReopenFailed::Busy(old)) => {
                st.db = Some(old);
                tracing::debug!("store reopen postponed: calls on the handle still running");
                false
            }
            Err(ReopenFailed::Open(e)) => {
                st.broken = true;
                tracing::debug!(error = %e, "store reopen failed; trying again at the next call");
                false
            }
        };
        st.reopening = false;
        self.reopened.notify_all();
        (st, reopened)
    }

    /// Takes the lock file beside the store file (`isto.redb.lock`, flock) for the
    /// store's whole life, as `isto serve` does: while it is held, no other process opens
    /// the store file ([`Store::open`] answers [`StoreError::is_already_open`],
    /// [`in_use`] true), even while this one closes and opens it again
    /// ([`Store::release_cache`]). Returns whether it is held: not on PostgreSQL, for a
    /// store without a path, or when the lock file cannot be made.
    pub fn hold_file(&self) -> bool {
        let Some(path) = self.path.as_deref().filter(|_| self.pg.is_none()) else { return false };
        if self.held.get().is_none() {
            if let Some(f) = open::lock_file(path) {
                let _ = self.held.set(f);
            }
        }
        self.held.get().is_some()
    }

    /// Gives the page cache's memory back (`store.cache_mib`, about 1.5× that in the
    /// allocator): closes the redb file, which makes any commit not yet durable durable,
    /// and opens it again ([`Store::reopen`]), when no call is using it; calls arriving
    /// meanwhile wait. `isto serve` calls it once the holder has been quiet for a while
    /// (`app::tasks`, docs/choices.md "The page cache is given back when quiet"). Returns
    /// whether it did: not without [`Store::hold_file`] (so not on PostgreSQL either),
    /// while a call or a write waiting for its sync holds the file, after an I/O failure
    /// (the next call's reopen does it) or when the open failed (logged; the next call
    /// tries again, as after an I/O failure).
    pub fn release_cache(&self) -> bool {
        let st = self.lock_state();
        // A call clones the handle only under this lock: alone now, alone until closed.
        let unused = st.db.as_ref().is_some_and(|h| Arc::strong_count(h) == 1);
        if self.held.get().is_none() || st.reopening || st.broken || !unused {
            return false;
        }
        let (st, reopened) = self.reopen(st, "to give its page cache back");
        if st.broken {
            tracing::error!("opening the store file again failed; calls fail until the next one opens it");
        }
        reopened
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

#[cfg(test)]
mod tests;
