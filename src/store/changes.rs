//! The change feed of several replicas on one PostgreSQL database ("Local state"). Each
//! `isto serve` keeps the matching engine, the active set, the offer index and the key
//! ring in memory; a write made through another replica must reach them. So every write
//! transaction that changes an intent, an offer or the key record also appends a row to
//! `isto_changes` (`seq`, `kind`, `id`) and signals `pg_notify('isto_changes', '')` at
//! its commit. Writers are serialized by [`super::WRITER_LOCK`] and take their `seq`
//! under it, so the rows follow the commit order and a snapshot sees a prefix of them:
//! `seq` is the feed's version.
//!
//! A replica remembers the version it has applied ([`Store::feed_applied`]); its
//! follower holds a connection that runs `LISTEN isto_changes` ([`Store::listen_changes`])
//! and reads [`Store::changes_since`] as soon as a notification arrives, and every few
//! hundred milliseconds besides (the fallback while that connection is lost: a
//! notification is never queued for a connection that is not listening); it brings what
//! changed up to date from the store, and notes the new version
//! ([`Store::note_applied`]). Rows older than the leader's pruning horizon are deleted
//! ([`Store::prune_changes`]); a replica whose version is older than the horizon gets
//! [`Changes::Gap`] and rebuilds everything from the store. On redb there is one process
//! and no feed: every call here answers `None` or does nothing.

use super::pg::Conn;
use super::reads::{RxTxn, TxTxn};
use super::schema::ACTIVE;
use super::{pg, Result, Rx, Store, Tables as _, Tx};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The SQL of the feed's tables (SQL migration 2).
pub(super) const FEED_TABLES: &str = "CREATE TABLE isto_changes (seq bigserial PRIMARY KEY, kind text NOT NULL, \
     id text NOT NULL, at timestamptz NOT NULL DEFAULT now()); \
     CREATE TABLE isto_change_horizon (one integer PRIMARY KEY CHECK (one = 1), through bigint NOT NULL); \
     INSERT INTO isto_change_horizon VALUES (1, 0)";

/// The channel of the feed's notifications (`LISTEN isto_changes`).
pub const FEED_CHANNEL: &str = "isto_changes";

/// Most rows one [`Store::changes_since`] returns (the follower asks again for more).
pub const FEED_PAGE: i64 = 5000;

/// What a row of the feed says changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChangeKind {
    /// An intent record (its id): the engine and the active set follow it.
    Intent,
    /// An offer record (its id): the offer index follows it.
    Offer,
    /// The key record (`isto admin keys rotate`): the key ring is read again.
    Keys,
}

/// Each kind with its name in the feed's `kind` column.
const KINDS: [(ChangeKind, &str); 3] =
    [(ChangeKind::Intent, "intent"), (ChangeKind::Offer, "offer"), (ChangeKind::Keys, "keys")];

impl ChangeKind {
    fn as_str(self) -> &'static str {
        KINDS.iter().find(|k| k.0 == self).map_or("", |k| k.1)
    }

    fn parse(s: &str) -> Option<Self> {
        KINDS.iter().find(|k| k.1 == s).map(|k| k.0)
    }
}

/// What changed since a version ([`Store::changes_since`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Changes {
    /// The changes after the version asked for, in commit order.
    Since {
        /// The version after these changes.
        version: i64,
        /// What changed (kind and id), oldest first; an id may appear more than once.
        changed: Vec<(ChangeKind, String)>,
        /// Whether more changes follow ([`FEED_PAGE`] rows were returned).
        more: bool,
    },
    /// Changes after the version asked for were pruned: rebuild everything from the
    /// store, then stand at `version`.
    Gap {
        /// The feed's version now.
        version: i64,
    },
}

/// The feed as this replica has applied it.
#[derive(Debug)]
pub(super) struct FeedState {
    /// The version applied.
    pub(super) applied: AtomicI64,
    /// When the follower last found nothing newer than what it applied.
    in_step_at: Mutex<Instant>,
    /// Notifications the follower received ([`Store::note_notified`]).
    notified: AtomicU64,
}

impl Default for FeedState {
    fn default() -> Self {
        Self { applied: AtomicI64::new(0), in_step_at: Mutex::new(Instant::now()), notified: AtomicU64::new(0) }
    }
}

/// A connection listening for the feed's notifications ([`Store::listen_changes`]).
pub struct ChangeListener(pg::Listening);

impl ChangeListener {
    /// Waits until a write transaction that added rows to the feed has committed (the
    /// notifications that arrived meanwhile count as one); `false` once the connection
    /// has ended (the database restarted, the network lost): listen again.
    pub async fn notified(&mut self) -> bool {
        self.0.next().await
    }
}

/// The feed's version on `conn` (its highest `seq`, or the pruning horizon).
pub(super) fn version_on(conn: &Conn) -> Result<i64> {
    let rows = conn.query(
        "SELECT greatest((SELECT coalesce(max(seq), 0) FROM isto_changes), \
         (SELECT through FROM isto_change_horizon))",
        &[],
    )?;
    Ok(rows.first().map(|r| r.try_get::<_, Option<i64>>(0)).transpose()?.flatten().unwrap_or(0))
}

impl Tx<'_> {
    /// Appends `(kind, id)` to the change feed (PostgreSQL; nothing on redb), and has
    /// the database notify listeners at the commit.
    pub(super) fn note_change(&self, kind: ChangeKind, id: &str) -> Result<()> {
        if let TxTxn::Pg(conn) = self.txn {
            conn.query("INSERT INTO isto_changes (kind, id) VALUES ($1, $2)", &[&kind.as_str(), &id])?;
            conn.query("SELECT pg_notify($1, '')", &[&FEED_CHANNEL])?;
        }
        Ok(())
    }
}

impl Rx {
    /// Whether intent `id` is in the store's active set.
    pub fn in_active_set(&self, id: &str) -> Result<bool> {
        Ok(self.table(ACTIVE)?.get(id)?.is_some())
    }
}

impl Store {
    /// Runs `f` on a connection in a read transaction (PostgreSQL); `None` on redb.
    fn on_pg<T>(&self, f: impl FnOnce(&Conn) -> Result<T>) -> Result<Option<T>> {
        let Some(pool) = &self.pg else { return Ok(None) };
        pg::read(pool, |rx: &Rx| match &rx.txn {
            RxTxn::Pg(lease) => f(lease.conn()?).map(Some),
            RxTxn::Redb(_) => Ok(None),
        })
    }

    /// The feed's version now (`None` on redb).
    pub fn change_version(&self) -> Result<Option<i64>> {
        self.on_pg(version_on)
    }

    /// The changes after `version`, from one snapshot (`None` on redb; see [`Changes`]).
    pub fn changes_since(&self, version: i64) -> Result<Option<Changes>> {
        self.on_pg(|conn| {
            let through: i64 = conn
                .query("SELECT through FROM isto_change_horizon", &[])?
                .first()
                .map(|r| r.try_get(0))
                .transpose()?
                .unwrap_or(0);
            if version < through {
                return Ok(Changes::Gap { version: version_on(conn)? });
            }
            let rows = conn.query(
                "SELECT seq, kind, id FROM isto_changes WHERE seq > $1 ORDER BY seq LIMIT $2",
                &[&version, &FEED_PAGE],
            )?;
            let mut changed = Vec::with_capacity(rows.len());
            let mut last = version;
            for r in &rows {
                last = r.try_get(0)?;
                let kind: String = r.try_get(1)?;
                if let Some(k) = ChangeKind::parse(&kind) {
                    changed.push((k, r.try_get(2)?));
                }
            }
            let more = i64::try_from(rows.len()).unwrap_or(i64::MAX) >= FEED_PAGE;
            Ok(Changes::Since { version: last, changed, more })
        })
    }

    /// Deletes the feed's rows older than `keep` and moves the horizon past them: a
    /// replica that had not applied them rebuilds ([`Changes::Gap`]). The leader's
    /// sweep calls it. Returns the rows deleted (0 on redb).
    pub fn prune_changes(&self, keep: Duration) -> Result<u64> {
        let Some(pool) = &self.pg else { return Ok(0) };
        pg::write(pool, true, |tx| {
            let TxTxn::Pg(conn) = tx.txn else { return Ok(0) };
            let rows = conn.query(
                "WITH gone AS (DELETE FROM isto_changes WHERE at < now() - make_interval(secs => $1) RETURNING seq) \
                 UPDATE isto_change_horizon SET through = greatest(through, (SELECT coalesce(max(seq), 0) FROM gone)) \
                 RETURNING (SELECT count(*) FROM gone)",
                &[&keep.as_secs_f64()],
            )?;
            Ok(rows.first().map(|r| r.try_get::<_, i64>(0)).transpose()?.map_or(0, |n| u64::try_from(n).unwrap_or(0)))
        })
    }

    /// A connection that listens for the feed's notifications (`None` on redb). Blocking
    /// (one connect and one round trip).
    pub fn listen_changes(&self) -> Result<Option<ChangeListener>> {
        let Some(pool) = &self.pg else { return Ok(None) };
        Ok(Some(ChangeListener(pool.listen(FEED_CHANNEL)?)))
    }

    /// Counts one notification the follower received (see [`Self::feed_notified`]).
    pub fn note_notified(&self) {
        if let Some(p) = &self.pg {
            p.feed.notified.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Notifications of the feed this replica's follower received since the store was
    /// opened (0 on redb): each started a read of the feed at once.
    pub fn feed_notified(&self) -> u64 {
        self.pg.as_ref().map_or(0, |p| p.feed.notified.load(Ordering::Relaxed))
    }

    /// The feed's version this replica has applied (0 on redb).
    pub fn feed_applied(&self) -> i64 {
        self.pg.as_ref().map_or(0, |p| p.feed.applied.load(Ordering::SeqCst))
    }

    /// Notes that this replica has applied the feed up to `version`; `in_step` when the
    /// follower found nothing newer.
    pub fn note_applied(&self, version: i64, in_step: bool) {
        if let Some(p) = &self.pg {
            p.feed.applied.fetch_max(version, Ordering::SeqCst);
            if in_step {
                *p.feed.in_step_at.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
            }
        }
    }

    /// How far this replica is behind the feed: `None` on redb; else the versions (the
    /// feed's now, the one applied) and how long ago the follower was last in step.
    pub fn feed_lag(&self) -> Result<Option<(i64, i64, Duration)>> {
        let Some(pool) = &self.pg else { return Ok(None) };
        let Some(now) = self.change_version()? else { return Ok(None) };
        let applied = pool.feed.applied.load(Ordering::SeqCst);
        let since = pool.feed.in_step_at.lock().unwrap_or_else(PoisonError::into_inner).elapsed();
        Ok(Some((now, applied, since)))
    }
}
