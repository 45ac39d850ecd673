//! The group commit of one redb handle (see [`super::Store::sync`]): every write
//! transaction is numbered under redb's write lock; a write is acknowledged once a
//! durable commit covers its number — the shared empty durable commit of
//! [`Handle::sync_through`], or a write committed with immediate durability
//! ([`super::Store::write_durable`], [`Handle::durable_through`]).

use super::Result;
use redb::Database;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

/// A committed write that is not yet known to be durable: pass it to [`super::Store::sync`]
/// before acknowledging the write.
#[must_use = "a write is durable only after Store::sync"]
pub struct Pending {
    /// The redb handle it was committed on (`None`: PostgreSQL, durable at commit).
    pub(super) handle: Option<Arc<Handle>>,
    pub(super) seq: u64,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending").field("seq", &self.seq).finish()
    }
}

/// An open database with its group-commit state (see [`super::Store::sync`]).
pub(super) struct Handle {
    pub(super) db: Database,
    group: Mutex<Group>,
    /// Signalled when a durable commit ends.
    synced: Condvar,
}

/// The group-commit counters of one handle.
#[derive(Default)]
pub(super) struct Group {
    /// The number of the last write transaction committed (not yet durable perhaps).
    pub(super) committed: u64,
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
    pub(super) fn new(db: Database) -> Self {
        Self { db, group: Mutex::new(Group::default()), synced: Condvar::new() }
    }

    pub(super) fn lock_group(&self) -> MutexGuard<'_, Group> {
        self.group.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The number of the write about to commit (called under redb's write lock).
    pub(super) fn next_seq(&self) -> u64 {
        let mut g = self.lock_group();
        g.committed += 1;
        g.committed
    }

    /// Blocks until the write numbered `seq` is durable, making a durable commit when
    /// none is under way.
    pub(super) fn sync_through(&self, seq: u64) -> Result<()> {
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

    /// Notes that a commit with immediate durability made every write numbered up to
    /// `seq` durable, and wakes the callers waiting in [`Handle::sync_through`].
    pub(super) fn durable_through(&self, seq: u64) {
        let mut g = self.lock_group();
        g.durable = g.durable.max(seq);
        drop(g);
        self.synced.notify_all();
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
