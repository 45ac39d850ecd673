//! Per-client-address counters of the account pages (in memory, bounded).
//!
//! Failed password attempts and account e-mails are counted per client address
//! ([`crate::net::ClientAddr`]) in fixed one-minute windows; no site-wide ceiling. The
//! map holds at most [`MAX_CLIENTS`] addresses; when full, counters of past windows are
//! dropped first, then a quarter of the entries (amortised constant time per address
//! under a flood). A request without a peer address counts under one shared key.

use std::collections::HashMap;

/// Failed password attempts per client address per minute before password sign-in
/// pauses for that address (links keep working).
pub(super) const FAILURES_PER_CLIENT_PER_MINUTE: u32 = 30;
/// Requests for account e-mails (sign-in links, sign-up confirmations) per client
/// address per minute, counted whether or not a mail goes out (no enumeration).
pub(super) const MAILS_PER_CLIENT_PER_MINUTE: u32 = 20;
/// Most client addresses tracked at once.
pub(super) const MAX_CLIENTS: usize = 10_000;

pub(super) use crate::net::ClientKey;

#[derive(Debug, Clone, Copy, Default)]
struct Counter {
    /// Unix minute of the window these counts belong to.
    minute: i64,
    failures: u32,
    mails: u32,
}

/// Counters per client key (see the module docs).
#[derive(Debug, Default)]
pub(super) struct ClientLimits {
    map: HashMap<ClientKey, Counter>,
}

impl ClientLimits {
    /// This minute's counter of `key`, made (evicting if full) when absent or stale.
    fn counter(&mut self, key: ClientKey, now_unix: i64) -> &mut Counter {
        let minute = now_unix.div_euclid(60);
        if !self.map.contains_key(&key) {
            crate::base::quota::make_room(&mut self.map, MAX_CLIENTS, |c| c.minute == minute);
        }
        let c = self.map.entry(key).or_default();
        if c.minute != minute {
            *c = Counter { minute, failures: 0, mails: 0 };
        }
        c
    }

    /// Whether `key` has used up this minute's failed password attempts.
    pub(super) fn too_many_failures(&mut self, key: ClientKey, now_unix: i64) -> bool {
        self.counter(key, now_unix).failures >= FAILURES_PER_CLIENT_PER_MINUTE
    }

    /// Counts one failed password attempt of `key`.
    pub(super) fn count_failure(&mut self, key: ClientKey, now_unix: i64) {
        let c = self.counter(key, now_unix);
        c.failures = c.failures.saturating_add(1);
    }

    /// Whether `key` has used up this minute's account e-mails.
    pub(super) fn too_many_mails(&mut self, key: ClientKey, now_unix: i64) -> bool {
        self.counter(key, now_unix).mails >= MAILS_PER_CLIENT_PER_MINUTE
    }

    /// Counts one account e-mail asked for by `key`.
    pub(super) fn count_mail(&mut self, key: ClientKey, now_unix: i64) {
        let c = self.counter(key, now_unix);
        c.mails = c.mails.saturating_add(1);
    }

    /// How many client keys are tracked.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

    fn key(s: &str) -> ClientKey {
        crate::net::ClientAddr(Some(s.parse().unwrap())).key()
    }

    #[test]
    fn limits_are_per_client_and_per_minute() {
        let mut l = ClientLimits::default();
        let a = key("192.0.2.1");
        let b = key("192.0.2.2");
        for _ in 0..FAILURES_PER_CLIENT_PER_MINUTE {
            assert!(!l.too_many_failures(a, 60));
            l.count_failure(a, 60);
        }
        assert!(l.too_many_failures(a, 119));
        assert!(!l.too_many_failures(b, 119), "another address is not blocked");
        assert!(!l.too_many_failures(a, 120), "a new minute starts afresh");
        for _ in 0..MAILS_PER_CLIENT_PER_MINUTE {
            l.count_mail(b, 120);
        }
        assert!(l.too_many_mails(b, 120));
        assert!(!l.too_many_mails(a, 120));
    }

    #[test]
    fn the_map_is_bounded() {
        let mut l = ClientLimits::default();
        for i in 0..(MAX_CLIENTS as u32 + 500) {
            let k = Some(IpAddr::from(std::net::Ipv4Addr::from(i)));
            l.count_failure(k, 60 * i64::from(i / 1000));
        }
        assert!(l.len() <= MAX_CLIENTS);
        // A flood of fresh addresses in one minute evicts, and never grows the map.
        let mut l = ClientLimits::default();
        for i in 0..(MAX_CLIENTS as u32 * 2) {
            l.count_failure(Some(IpAddr::from(std::net::Ipv4Addr::from(i))), 60);
            assert!(l.len() <= MAX_CLIENTS);
        }
        let fresh = Some(IpAddr::from(std::net::Ipv4Addr::from(u32::MAX)));
        l.count_failure(fresh, 60);
        assert!(!l.too_many_failures(fresh, 60));
    }
}
