//! The connections each client address holds (`limits.max_connections_per_client`).
//!
//! A client is counted under [`ClientKey`] (IPv4 address, IPv6 /64), as the rate limiter
//! counts it. A connection from a peer that is not a trusted proxy holds one for its
//! peer from its accept to its close (idle and half-open ones too); a request that comes
//! through a trusted proxy holds one for the client `X-Forwarded-For` names (or the proxy
//! itself without the header) from its head to the end of its response, a stream's
//! included; so does every request beyond the first in flight on one HTTP/2 connection.
//!
//! A client gets one more hold only while it holds fewer than the cap and — when it holds
//! any — fewer than the slots not busy with a request: as the free slots run out, each
//! address is held to fewer, and the last free slot only ever goes to an address that
//! holds none.

use crate::net::ClientKey;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// The holds of every client address, the cap, and the slots busy with a request.
#[derive(Debug)]
pub(super) struct Holds {
    map: Mutex<HashMap<ClientKey, usize>>,
    /// Most holds one address may have (`limits.max_connections_per_client`).
    cap: usize,
    /// Connection slots in all (`limits.max_connections`).
    slots: usize,
    /// Connections with a request in flight.
    busy: AtomicUsize,
}

/// One hold of a client address; released when dropped.
#[derive(Debug)]
pub(super) struct Hold {
    holds: Arc<Holds>,
    key: ClientKey,
}

impl Drop for Hold {
    fn drop(&mut self) {
        let mut map = self.holds.lock();
        if let Some(n) = map.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                map.remove(&self.key);
            }
        }
    }
}

impl Holds {
    /// No holds yet: at most `cap` per address, `slots` connections in all.
    pub(super) fn new(cap: usize, slots: usize) -> Arc<Self> {
        Arc::new(Self { map: Mutex::new(HashMap::new()), cap: cap.max(1), slots, busy: AtomicUsize::new(0) })
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<ClientKey, usize>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One more hold for `key`, or None when it holds the cap already, or holds some
    /// and at least as many as the slots not busy with a request (see the module docs).
    pub(super) fn take(self: &Arc<Self>, key: ClientKey) -> Option<Hold> {
        let mut map = self.lock();
        let held = map.get(&key).copied().unwrap_or(0);
        let room = self.slots.saturating_sub(self.busy.load(Ordering::Acquire));
        if held >= self.cap || (held > 0 && held >= room) {
            return None;
        }
        *map.entry(key).or_insert(0) += 1;
        Some(Hold { holds: self.clone(), key })
    }

    /// One more hold for `key` whatever it holds: for a connection that replaces one of
    /// the same address's own, which was just told to close.
    pub(super) fn force(self: &Arc<Self>, key: ClientKey) -> Hold {
        *self.lock().entry(key).or_insert(0) += 1;
        Hold { holds: self.clone(), key }
    }

    /// Holds of `key` now.
    #[cfg(test)]
    pub(super) fn held(&self, key: ClientKey) -> usize {
        self.lock().get(&key).copied().unwrap_or(0)
    }

    /// A connection got its first request in flight.
    pub(super) fn busy(&self) {
        self.busy.fetch_add(1, Ordering::AcqRel);
    }

    /// A connection finished its last request in flight.
    pub(super) fn idle(&self) {
        let _ = self.busy.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| Some(n.saturating_sub(1)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> ClientKey {
        Some(s.parse().unwrap())
    }

    #[test]
    fn an_address_holds_at_most_the_cap_and_others_are_not_affected() {
        let h = Holds::new(3, 100);
        let a: Vec<Hold> = (0..3).map(|_| h.take(key("192.0.2.1")).unwrap()).collect();
        assert!(h.take(key("192.0.2.1")).is_none(), "a fourth hold over a cap of 3");
        assert!(h.take(key("192.0.2.2")).is_some(), "another address is not affected");
        drop(a);
        assert_eq!(h.held(key("192.0.2.1")), 0, "every hold released");
        assert!(h.take(key("192.0.2.1")).is_some());
    }

    #[test]
    fn the_last_free_slots_go_to_an_address_that_holds_none() {
        let h = Holds::new(32, 10);
        for _ in 0..7 {
            h.busy();
        }
        // Three slots not busy: an address holding three gets no fourth, one holding
        // two gets a third, a new one gets its first.
        let a: Vec<Hold> = (0..3).map(|_| h.take(key("192.0.2.1")).unwrap()).collect();
        assert!(h.take(key("192.0.2.1")).is_none(), "as many holds as free slots");
        let b = h.take(key("192.0.2.2")).unwrap();
        h.busy();
        h.busy();
        h.busy();
        // Every slot busy: only an address without any hold gets one.
        assert!(h.take(key("192.0.2.2")).is_none());
        assert!(h.take(key("192.0.2.3")).is_some());
        h.idle();
        h.idle();
        assert!(h.take(key("192.0.2.2")).is_some(), "room again once requests finish");
        drop((a, b));
    }

    #[test]
    fn a_forced_hold_counts_and_is_released() {
        let h = Holds::new(1, 10);
        let first = h.take(key("2001:db8::")).unwrap();
        let forced = h.force(key("2001:db8::"));
        assert_eq!(h.held(key("2001:db8::")), 2);
        drop(first);
        drop(forced);
        assert_eq!(h.held(key("2001:db8::")), 0);
    }
}
