//! Which replica runs the background work ("Background work"): with several `isto serve`
//! processes on one PostgreSQL database, sweeps, the purge, digests, reply matching and
//! the outbox's sending run only on the replica that holds the session-level advisory
//! lock [`LEADER_LOCK`] (`pg_try_advisory_lock`), on a connection of its own kept open
//! while it leads. When that replica's connection ends — the process killed, its host
//! gone, the database restarted — PostgreSQL ends the session and releases the lock, and
//! another replica takes it at its next try (one per [`LEAD_RETRY`]): the work moves
//! within about a second of the database noticing (TCP keepalives,
//! [`super::pg::KEEPALIVE_IDLE`], for a host that vanished without closing). On redb
//! there is one process per store, which always leads.

use super::pg::{Conn, Pool};
use super::{Result, Store};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The session-level advisory lock of the leading replica: "isto-ld" in ASCII (not
/// [`super::WRITER_LOCK`], which every write takes for its transaction).
pub const LEADER_LOCK: i64 = 0x0069_7374_6f2d_6c64;

/// At most one try to take the lead per this interval on a replica that does not lead.
pub const LEAD_RETRY: Duration = Duration::from_secs(1);

/// The lead as this replica sees it.
#[derive(Default)]
pub(super) struct Lead {
    state: Mutex<LeadState>,
}

#[derive(Default)]
struct LeadState {
    /// The connection the lock is tried (and, once taken, held) on.
    conn: Option<Conn>,
    /// Whether the lock is held on `conn`.
    held: bool,
    /// When the lock was last tried.
    last_try: Option<Instant>,
}

impl Lead {
    /// Whether this replica leads now: the lock held on a connection still open, or
    /// taken just now (tried at most once per [`LEAD_RETRY`]).
    pub(super) fn leading(&self, pool: &Pool) -> bool {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if st.conn.as_ref().is_some_and(Conn::is_closed) {
            if st.held {
                tracing::warn!("the connection holding the lead of background work ended: another replica may take it");
            }
            st.conn = None;
            st.held = false;
        }
        if st.held {
            return true;
        }
        if st.last_try.is_some_and(|t| t.elapsed() < LEAD_RETRY) {
            return false;
        }
        st.last_try = Some(Instant::now());
        match Self::try_take(&mut st, pool) {
            Ok(true) => {
                st.held = true;
                tracing::info!("this replica leads the background work (sweeps, digests, mail)");
                true
            }
            Ok(false) => false,
            Err(e) => {
                tracing::debug!(error = %e, "trying to take the lead of background work failed");
                st.conn = None;
                false
            }
        }
    }

    fn try_take(st: &mut LeadState, pool: &Pool) -> Result<bool> {
        if st.conn.is_none() {
            st.conn = Some(pool.connect_with(pool.kept_alive())?);
        }
        let Some(conn) = st.conn.as_ref() else { return Ok(false) };
        let rows = conn.query("SELECT pg_try_advisory_lock($1)", &[&LEADER_LOCK])?;
        Ok(rows.first().map(|r| r.try_get::<_, bool>(0)).transpose()?.unwrap_or(false))
    }
}

impl Store {
    /// Whether this process runs the background work (see the module docs): always on
    /// redb; on PostgreSQL while it holds [`LEADER_LOCK`]. Blocking on PostgreSQL when
    /// a try is due (one connect and one round trip, at most once per [`LEAD_RETRY`]).
    pub fn leading(&self) -> bool {
        match &self.pg {
            None => true,
            Some(pool) => pool.lead.leading(pool),
        }
    }
}
