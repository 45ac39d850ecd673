//! The PostgreSQL backend's connections: a small pool of `tokio-postgres` clients, their
//! transactions and the SQL migrations that create the store's tables.
//!
//! The store's API is synchronous and is called from blocking threads and, at start-up
//! and in admin commands, from async code too. So the connections run on the pool's own
//! runtime (one worker thread), and a call waits for its query with a small park-based
//! executor: the client's futures only talk to the connection task through channels, so
//! waiting works on any thread — no nested-runtime panic on a tokio worker.
//!
//! - A read is one `REPEATABLE READ, READ ONLY` transaction: one snapshot.
//! - A write is one `READ COMMITTED` transaction that first takes the transaction-level
//!   advisory lock [`WRITER_LOCK`] (`pg_advisory_xact_lock`): writers are serialized as
//!   redb serializes them, across every process on the database, so every rule that
//!   relies on one writer holds (the first-come consent race, the per-person cap, the
//!   quotas, handles). Each statement of a write sees every write committed before the
//!   lock was granted (not `REPEATABLE READ`: its snapshot would be taken by the lock's
//!   own statement, before the lock is granted).
//! - A commit returns when PostgreSQL has made it durable (`synchronous_commit`), so
//!   there is no group commit to wait for.

use super::reads::{RxTxn, TxTxn};
use super::{schema, Result, Rx, StoreError, Tx};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};
use tokio_postgres::types::ToSql;
use tokio_postgres::{AsyncMessage, Client, NoTls, Statement};

/// The advisory-lock key every write transaction takes (`pg_advisory_xact_lock`):
/// "isto" in ASCII, the store's single-writer lock on its database.
pub const WRITER_LOCK: i64 = 0x6973_746f;

/// The longest a call waits for a free connection, or for a new one to connect, before
/// it fails with [`StoreError::Unavailable`] (a lost database fails fast, no hang).
const CONNECT_WAIT: Duration = Duration::from_secs(10);

/// Idle time of a connection held open outside the pool (the lead's lock, a `LISTEN`)
/// before TCP keepalives probe it (then every 2 s, 3 probes): one to a database host that
/// vanished ends after about 11 s (the lead is lost, the follower listens again).
pub(super) const KEEPALIVE_IDLE: Duration = Duration::from_secs(5);

/// Default number of connections (`store.pool_size`).
pub const DEFAULT_POOL_SIZE: u32 = 8;

/// The numbered SQL migrations, in order, recorded in `schema_migrations`: each is run
/// once, in the open's transaction. The store's typed migrations (`schema`, version in
/// `meta`) then run over the tables these create.
pub(super) const SQL_MIGRATIONS: &[(i32, &str)] = &[(1, "tables"), (2, "change feed")];

/// Connection settings of a PostgreSQL store (`[store] url`, `pool_size`).
#[derive(Clone)]
pub struct PgSettings {
    /// A `postgres://` URL or `key=value` settings (`host=/run/postgresql dbname=isto`).
    pub url: String,
    /// Most connections the pool opens.
    pub pool_size: u32,
}

impl std::fmt::Debug for PgSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgSettings").field("url", &redacted(&self.url)).field("pool_size", &self.pool_size).finish()
    }
}

/// `url` with any password replaced by `***` (for logs, errors and `check-config`): the
/// `user:password@` of a URL and a `password=` setting.
pub fn redacted(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        let (auth, tail) = match rest.find('@') {
            Some(at) if !rest[..at].contains('/') => (&rest[..at], &rest[at..]),
            _ => return url.to_owned(),
        };
        let user = auth.split_once(':').map_or(auth, |(u, _)| u);
        let shown = if auth.contains(':') { format!("{user}:***") } else { user.to_owned() };
        let tail = match tail.split_once('?') {
            Some((path, query)) => format!("{path}?{}", hide_password_setting(query.split('&'), "&")),
            None => tail.to_owned(),
        };
        return format!("{scheme}://{shown}{tail}");
    }
    hide_password_setting(url.split_whitespace(), " ")
}

/// `settings` (`key=value` each) joined by `sep`, a `password=` one as `password=***`.
fn hide_password_setting<'a>(settings: impl Iterator<Item = &'a str>, sep: &str) -> String {
    settings.map(|kv| if kv.starts_with("password=") { "password=***" } else { kv }).collect::<Vec<_>>().join(sep)
}

/// Checks `url` as connection settings (for the config's load), without connecting.
///
/// # Errors
/// The parser's reason (never the password: the message names only the rule).
pub fn check_url(url: &str) -> std::result::Result<(), String> {
    url.parse::<tokio_postgres::Config>().map(|_| ()).map_err(|e| format!("not PostgreSQL connection settings: {e}"))
}

/// Wakes the thread that waits in [`block_on`].
struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs `f` to completion on this thread (see the module docs).
fn block_on<F: Future>(f: F) -> F::Output {
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

/// One connection, with its prepared statements.
pub(super) struct Conn {
    client: Client,
    statements: RefCell<HashMap<String, Statement>>,
    /// A read transaction's `BEGIN` not sent yet ([`Lease::begin_read`]): it goes out
    /// with the transaction's first statement, in the same round trip.
    deferred_begin: Cell<bool>,
}

impl Conn {
    /// Runs one statement (prepared once per connection) and returns its rows; a
    /// deferred [`BEGIN_READ`] is pipelined before it (sent together, answered in order).
    pub(super) fn query(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<tokio_postgres::Row>> {
        let cached = self.statements.borrow().get(sql).cloned();
        let stmt = match cached {
            Some(s) => s,
            None => {
                let s = block_on(self.client.prepare(sql))?;
                self.statements.borrow_mut().insert(sql.to_owned(), s.clone());
                s
            }
        };
        if self.deferred_begin.take() {
            let (begun, rows) = block_on(async {
                tokio::join!(self.client.batch_execute(BEGIN_READ), self.client.query(&stmt, params))
            });
            begun?;
            return Ok(rows?);
        }
        Ok(block_on(self.client.query(&stmt, params))?)
    }

    /// Whether the database ended this connection.
    pub(super) fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    /// Runs SQL statements without parameters or results (after a deferred
    /// [`BEGIN_READ`], in the same round trip).
    pub(super) fn batch(&self, sql: &str) -> Result<()> {
        if self.deferred_begin.take() {
            return Ok(block_on(self.client.batch_execute(&format!("{BEGIN_READ}; {sql}")))?);
        }
        Ok(block_on(self.client.batch_execute(sql))?)
    }
}

/// A connection listening on a channel ([`Pool::listen`]); dropping it closes the
/// connection.
pub(super) struct Listening {
    _client: Client,
    rx: tokio::sync::mpsc::UnboundedReceiver<()>,
}

impl Listening {
    /// Waits for the next notification; those that arrived meanwhile count as one.
    /// `false` once the connection has ended (nothing more will arrive).
    pub(super) async fn next(&mut self) -> bool {
        let got = self.rx.recv().await.is_some();
        while self.rx.try_recv().is_ok() {}
        got
    }
}

/// The pool: idle connections, how many are open, and the runtime they run on.
pub(super) struct Pool {
    config: tokio_postgres::Config,
    size: u32,
    idle: Mutex<(Vec<Conn>, u32)>,
    freed: Condvar,
    runtime: Option<tokio::runtime::Runtime>,
    /// Write transactions committed through this pool (see `Store::commits`).
    pub(super) commits: std::sync::atomic::AtomicU64,
    /// The counters of [`PoolStats`] (`errors`: its `connection_errors`).
    waits: AtomicU64,
    wait_timeouts: AtomicU64,
    errors: AtomicU64,
    /// Whether this replica leads the background work (see `lead`).
    pub(super) lead: super::lead::Lead,
    /// The change feed as this replica applied it (see `changes`).
    pub(super) feed: super::changes::FeedState,
}

/// The pool's state and counters, for `/readyz` and `/metrics`: what
/// [`crate::store::Store::pool_stats`] returns on PostgreSQL. Counts since the store was
/// opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Most connections the pool opens (`store.pool_size`).
    pub size: u32,
    /// Connections lent to a transaction now.
    pub in_use: u32,
    /// Open connections waiting in the pool for the next transaction.
    pub idle: u32,
    /// Calls that found every connection in use and waited for one.
    pub waits: u64,
    /// Calls that waited the pool's whole wait (10 s) in vain and failed with
    /// [`StoreError::Unavailable`].
    pub wait_timeouts: u64,
    /// Connections that could not be opened, or were found closed by the database (a
    /// restart, a lost network, `pg_terminate_backend`).
    pub connection_errors: u64,
}

impl Drop for Pool {
    fn drop(&mut self) {
        // Never blocks, also when the store is dropped inside async code.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// A connection lent to one transaction; back to the pool when dropped, unless the
/// transaction did not end cleanly or the connection closed.
pub(super) struct Lease {
    pool: Arc<Pool>,
    conn: Option<Conn>,
    clean: bool,
}

impl Lease {
    /// The connection (a lease holds one until dropped: never [`StoreError::Unavailable`]).
    pub(super) fn conn(&self) -> Result<&Conn> {
        self.conn.as_ref().ok_or(StoreError::Unavailable)
    }

    /// Begins a write transaction ([`Pool::begin_write`]: the writer lock with it).
    pub(super) fn begin_write(&mut self) -> Result<()> {
        self.clean = false;
        self.conn()?.batch(&Pool::begin_write())
    }

    /// Begins a read transaction ([`BEGIN_READ`]) with its first statement: one round
    /// trip less per read; a read that runs no statement sends neither it nor its end.
    pub(super) fn begin_read(&mut self) -> Result<()> {
        self.clean = false;
        self.conn()?.deferred_begin.set(true);
        Ok(())
    }

    /// Ends the transaction: `COMMIT` when `commit`, else `ROLLBACK`. The connection goes
    /// back to the pool only after a clean end.
    ///
    /// # Errors
    /// The database's error (a failed commit wrote nothing).
    pub(super) fn end(&mut self, commit: bool) -> Result<()> {
        let conn = self.conn()?;
        // A read that sent no statement began no transaction: nothing to end.
        if !conn.deferred_begin.take() {
            conn.batch(if commit { "COMMIT" } else { "ROLLBACK" })?;
            if commit {
                self.pool.commits.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.clean = true;
        Ok(())
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let pool = self.pool.clone();
        let mut g = pool.idle.lock().unwrap_or_else(PoisonError::into_inner);
        match self.conn.take() {
            Some(c) if self.clean && !c.client.is_closed() => g.0.push(c),
            Some(c) => {
                if c.client.is_closed() {
                    pool.errors.fetch_add(1, Ordering::Relaxed);
                }
                g.1 = g.1.saturating_sub(1);
            }
            None => g.1 = g.1.saturating_sub(1),
        }
        drop(g);
        pool.freed.notify_one();
    }
}

impl Pool {
    /// A pool for `settings`; connects once to check them.
    ///
    /// # Errors
    /// [`StoreError::NotAStore`] for settings that do not parse; the database's error
    /// when the first connection fails.
    pub(super) fn new(settings: &PgSettings) -> Result<Arc<Self>> {
        let mut config: tokio_postgres::Config = settings
            .url
            .parse()
            .map_err(|e| StoreError::NotAStore(format!("store.url is not PostgreSQL connection settings: {e}")))?;
        config.connect_timeout(CONNECT_WAIT);
        if config.get_application_name().is_none() {
            config.application_name("isto");
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("isto-pg")
            .enable_all()
            .build()
            .map_err(|e| StoreError::from(redb::Error::Io(e)))?;
        let pool = Arc::new(Self {
            config,
            size: settings.pool_size.max(1),
            idle: Mutex::new((Vec::new(), 0)),
            freed: Condvar::new(),
            runtime: Some(runtime),
            commits: AtomicU64::new(0),
            waits: AtomicU64::new(0),
            wait_timeouts: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            lead: Default::default(),
            feed: Default::default(),
        });
        drop(pool.lease()?);
        Ok(pool)
    }

    /// The pool's settings with TCP keepalives (see [`KEEPALIVE_IDLE`]).
    pub(super) fn kept_alive(&self) -> tokio_postgres::Config {
        let mut config = self.config.clone();
        config
            .keepalives(true)
            .keepalives_idle(KEEPALIVE_IDLE)
            .keepalives_interval(Duration::from_secs(2))
            .keepalives_retries(3);
        config
    }

    /// A connection outside the pool's count that has run `LISTEN channel` (with
    /// keepalives): each notification on `channel` reaches the returned [`Listening`],
    /// until the connection ends.
    pub(super) fn listen(&self, channel: &'static str) -> Result<Listening> {
        let config = self.kept_alive();
        self.on_runtime(async move {
            let (client, mut connection) = config.connect(NoTls).await?;
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            // The connection runs by being polled for its messages: notifications go to
            // the receiver; the task (and with it the sender) ends with the connection.
            tokio::spawn(async move {
                loop {
                    match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                        Some(Ok(AsyncMessage::Notification(_))) => {
                            if tx.send(()).is_err() {
                                break;
                            }
                        }
                        Some(Ok(_)) => {}
                        Some(Err(e)) => {
                            tracing::debug!(error = %e, "store: the listening PostgreSQL connection ended");
                            break;
                        }
                        None => break,
                    }
                }
            });
            client.batch_execute(&format!("LISTEN {channel}")).await?;
            Ok(Listening { _client: client, rx })
        })
    }

    /// A new connection with `config` (counted by the caller, if at all).
    pub(super) fn connect_with(&self, config: tokio_postgres::Config) -> Result<Conn> {
        let client = self.on_runtime(async move {
            let (client, connection) = config.connect(NoTls).await?;
            tokio::spawn(async move {
                if let Err(e) = connection.await {
                    tracing::debug!(error = %e, "store: a PostgreSQL connection ended");
                }
            });
            Ok(client)
        })?;
        Ok(Conn { client, statements: RefCell::new(HashMap::new()), deferred_begin: Cell::new(false) })
    }

    /// Runs the connecting `task` on the pool's runtime and waits for it; a failure
    /// counts as a connection error ([`PoolStats::connection_errors`]).
    fn on_runtime<T: Send + 'static>(
        &self,
        task: impl Future<Output = std::result::Result<T, tokio_postgres::Error>> + Send + 'static,
    ) -> Result<T> {
        let rt = self.runtime.as_ref().ok_or(StoreError::Unavailable)?;
        let out = block_on(rt.spawn(task)).map_err(|_| StoreError::Unavailable)?;
        Ok(out.inspect_err(|_| {
            self.errors.fetch_add(1, Ordering::Relaxed);
        })?)
    }

    /// A connection for one transaction: an idle one, a new one while fewer than the
    /// pool's size are open, else the first one freed within [`CONNECT_WAIT`].
    pub(super) fn lease(self: &Arc<Self>) -> Result<Lease> {
        let deadline = Instant::now() + CONNECT_WAIT;
        let mut g = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        let mut waited = false;
        loop {
            if let Some(c) = g.0.pop() {
                if c.client.is_closed() {
                    self.errors.fetch_add(1, Ordering::Relaxed);
                    g.1 = g.1.saturating_sub(1);
                    continue;
                }
                return Ok(Lease { pool: self.clone(), conn: Some(c), clean: true });
            }
            if g.1 < self.size {
                g.1 += 1;
                drop(g);
                return match self.connect_with(self.config.clone()) {
                    Ok(c) => Ok(Lease { pool: self.clone(), conn: Some(c), clean: true }),
                    Err(e) => {
                        let mut g = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
                        g.1 = g.1.saturating_sub(1);
                        Err(e)
                    }
                };
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                self.wait_timeouts.fetch_add(1, Ordering::Relaxed);
                return Err(StoreError::Unavailable);
            }
            if !waited {
                waited = true;
                self.waits.fetch_add(1, Ordering::Relaxed);
            }
            g = self.freed.wait_timeout(g, left).unwrap_or_else(PoisonError::into_inner).0;
        }
    }

    /// The pool's state and counters now (see [`PoolStats`]).
    pub(super) fn stats(&self) -> PoolStats {
        let g = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        let idle = u32::try_from(g.0.len()).unwrap_or(u32::MAX);
        PoolStats {
            size: self.size,
            in_use: g.1.saturating_sub(idle),
            idle,
            waits: self.waits.load(Ordering::Relaxed),
            wait_timeouts: self.wait_timeouts.load(Ordering::Relaxed),
            connection_errors: self.errors.load(Ordering::Relaxed),
        }
    }

    /// The statements that begin a write transaction (see the module docs).
    pub(super) fn begin_write() -> String {
        format!("BEGIN ISOLATION LEVEL READ COMMITTED; SELECT pg_advisory_xact_lock({WRITER_LOCK})")
    }
}

/// The begin of a read transaction.
pub(super) const BEGIN_READ: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY";

/// Brings the SQL layout to the last of [`SQL_MIGRATIONS`] inside the write
/// transaction on `conn`, then creates every store table of `tables` that is missing
/// (one added to the layout after the database was made: the store's typed migrations
/// that add a table create none on PostgreSQL). Returns whether the database was new (no
/// isto table at all) and the tables created for an existing one.
///
/// # Errors
/// [`StoreError::NotAStore`] when the database has isto's table names without
/// `schema_migrations` (another program's tables); [`StoreError::TooNew`]-like refusal
/// ([`StoreError::NotAStore`]) when it records a migration this build does not know.
pub(super) fn migrate_sql(conn: &Conn, tables: &[&str]) -> Result<(bool, Vec<String>)> {
    let new = if missing(conn, &["schema_migrations"])?.is_empty() {
        false
    } else {
        // A failed look-up is an error, not "no such table".
        let absent = missing(conn, tables)?;
        if let Some(t) = tables.iter().find(|t| !absent.iter().any(|a| a == *t)) {
            return Err(StoreError::NotAStore(format!(
                "the PostgreSQL database has a table {t:?} but no schema_migrations table: another program's \
                 tables; give isto a database of its own"
            )));
        }
        conn.batch(
            "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, \
             applied_at timestamptz NOT NULL DEFAULT now())",
        )?;
        true
    };
    let done: Vec<i32> =
        conn.query("SELECT version FROM schema_migrations ORDER BY version", &[])?.iter().map(|r| r.get(0)).collect();
    let known = SQL_MIGRATIONS.last().map_or(0, |m| m.0);
    if let Some(v) = done.iter().find(|v| **v > known) {
        return Err(StoreError::NotAStore(format!(
            "the PostgreSQL database records SQL migration {v}, newer than this isto knows ({known}): upgrade isto"
        )));
    }
    for (n, name) in SQL_MIGRATIONS {
        if done.contains(n) {
            continue;
        }
        // Migration 1's tables are the store's, created below with any added since.
        if *n == 2 {
            conn.batch(super::changes::FEED_TABLES)?;
        }
        conn.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", &[n, name])?;
        tracing::info!(migration = n, name, "store: SQL migration run");
    }
    let created = missing(conn, tables)?;
    let sql: String =
        created.iter().map(|t| format!("CREATE TABLE \"{t}\" (k bytea PRIMARY KEY, v bytea NOT NULL);")).collect();
    if !created.is_empty() {
        conn.batch(&sql)?;
        tracing::info!(tables = created.len(), "store: tables created");
    }
    Ok((new, created))
}

/// The tables of `tables` the database lacks, in their order (one query).
fn missing(conn: &Conn, tables: &[&str]) -> Result<Vec<String>> {
    let rows = conn.query(
        "SELECT t FROM unnest($1::text[]) WITH ORDINALITY AS n(t, i) WHERE to_regclass(quote_ident(t)) IS NULL \
         ORDER BY i",
        &[&tables],
    )?;
    rows.iter().map(|r| r.try_get::<_, String>(0).map_err(StoreError::from)).collect()
}

/// Connects to the database of `settings` and brings it to the current layout: the SQL
/// migrations, then the store's typed migrations (`schema::prepare`), in one write
/// transaction under the writer lock (so concurrent starts migrate once).
///
/// # Errors
/// As [`Pool::new`], [`migrate_sql`] and `schema::prepare`.
pub(super) fn open(settings: &PgSettings) -> Result<Arc<Pool>> {
    let pool = Pool::new(settings)?;
    write(&pool, true, |tx| {
        let TxTxn::Pg(conn) = tx.txn else { return Err(StoreError::Unavailable) };
        let (new, _) = migrate_sql(conn, &super::table_names())?;
        schema::prepare(tx, new)?;
        // The engine and the index load after this: they stand at this version.
        let version = super::changes::version_on(conn)?;
        pool.feed.applied.store(version, std::sync::atomic::Ordering::SeqCst);
        Ok::<_, StoreError>(())
    })?;
    Ok(pool)
}

/// [`super::migrate_at`] on PostgreSQL: the SQL migrations and the typed ones in one
/// write transaction, committed when `commit`, else rolled back (PostgreSQL's DDL is
/// transactional, so a dry run leaves the database as it was).
///
/// # Errors
/// As [`open`].
pub(super) fn migrate(settings: &PgSettings, commit: bool) -> Result<schema::Migrated> {
    let pool = Pool::new(settings)?;
    write(&pool, commit, |tx| {
        let TxTxn::Pg(conn) = tx.txn else { return Err(StoreError::Unavailable) };
        let (new, created) = migrate_sql(conn, &super::table_names())?;
        schema::migrate_in(tx, &|t| !new && !created.iter().any(|c| c == t), new, commit)
    })
}

/// Runs `f` in one read transaction (one snapshot).
pub(super) fn read<T, E: From<StoreError>>(
    pool: &Arc<Pool>,
    f: impl FnOnce(&Rx) -> std::result::Result<T, E>,
) -> std::result::Result<T, E> {
    let mut lease = pool.lease()?;
    lease.begin_read()?;
    let rx = Rx { txn: RxTxn::Pg(lease) };
    let out = f(&rx);
    if let RxTxn::Pg(mut lease) = rx.txn {
        lease.end(false)?;
    }
    out
}

/// Runs `f` in one write transaction holding the writer lock; commits when `f` returns
/// `Ok` and `commit`, else rolls back (also when the commit fails: nothing is written).
pub(super) fn write<T, E: From<StoreError>>(
    pool: &Arc<Pool>,
    commit: bool,
    f: impl FnOnce(&mut Tx<'_>) -> std::result::Result<T, E>,
) -> std::result::Result<T, E> {
    let mut lease = pool.lease()?;
    lease.begin_write()?;
    let out = f(&mut Tx { txn: TxTxn::Pg(lease.conn()?) });
    lease.end(out.is_ok() && commit)?;
    out
}

/// Runs `sql` once on a new connection of `settings` (the test cluster's `CREATE
/// DATABASE`).
#[cfg(any(test, feature = "testkit"))]
pub(super) fn execute_once(settings: &PgSettings, sql: &str) -> Result<()> {
    let pool = Pool::new(settings)?;
    let lease = pool.lease()?;
    lease.conn()?.batch(sql)
}

/// One round trip to the database (for `/readyz`).
pub(super) fn ping(pool: &Arc<Pool>) -> Result<()> {
    let mut lease = pool.lease()?;
    lease.conn()?.batch("SELECT 1")?;
    lease.clean = true;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden_in_every_form() {
        assert_eq!(redacted("postgres://isto:s3cret@db.example/isto"), "postgres://isto:***@db.example/isto");
        assert_eq!(redacted("postgres://isto@db/isto?password=s3cret&x=1"), "postgres://isto@db/isto?password=***&x=1");
        assert_eq!(
            redacted("host=/run/postgresql user=isto password=s3cret"),
            "host=/run/postgresql user=isto password=***"
        );
        assert_eq!(redacted("host=/run/postgresql dbname=isto"), "host=/run/postgresql dbname=isto");
        assert!(check_url("host=/run/postgresql dbname=isto").is_ok());
        let e = check_url("postgres://isto:s3cret@db:notaport/isto").unwrap_err();
        assert!(!e.contains("s3cret"), "{e}");
    }

    /// A read's `BEGIN` goes out with its first statement: that statement and the next
    /// run in the read's `REPEATABLE READ, READ ONLY` transaction (one transaction id);
    /// a read that runs none, or a plain batch first, leaves the connection clean.
    #[test]
    fn a_reads_statements_run_in_its_deferred_transaction() {
        let pool = Arc::new(Pool::new(&super::super::testpg::database()).unwrap());
        let setting = |c: &Conn, name: &str| -> String {
            c.query(&format!("SELECT current_setting('{name}')"), &[]).unwrap()[0].get(0)
        };
        let txid = |c: &Conn| -> i64 { c.query("SELECT txid_current()::bigint", &[]).unwrap()[0].get(0) };
        for _ in 0..3 {
            read(&pool, |rx| -> Result<()> {
                let RxTxn::Pg(lease) = &rx.txn else { panic!("a PostgreSQL read") };
                let c = lease.conn()?;
                assert_eq!(setting(c, "transaction_isolation"), "repeatable read");
                assert_eq!(setting(c, "transaction_read_only"), "on");
                assert_eq!(txid(c), txid(c), "one transaction");
                Ok(())
            })
            .unwrap();
            read(&pool, |_| -> Result<()> { Ok(()) }).unwrap();
            read(&pool, |rx| -> Result<()> {
                let RxTxn::Pg(lease) = &rx.txn else { panic!("a PostgreSQL read") };
                lease.conn()?.batch("SELECT 1")?;
                assert_eq!(setting(lease.conn()?, "transaction_read_only"), "on");
                Ok(())
            })
            .unwrap();
        }
        // Every read ended its transaction: the connections went back to the pool.
        assert_eq!(pool.stats().in_use, 0);
        let fresh = pool.lease().unwrap();
        assert_eq!(setting(fresh.conn().unwrap(), "transaction_read_only"), "off", "no transaction left open");
    }
}
