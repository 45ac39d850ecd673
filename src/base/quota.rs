//! Hourly quotas on unauthenticated writes: drafts and OAuth client registrations per
//! client address; recorded consents per client address and per client network (IPv4 /24,
//! IPv6 /48: [`crate::net::network_key`]); confirmation e-mails per target address and
//! for the whole holder.
//!
//! The holder-wide count has two limits: [`Rule::MailsGlobal`]
//! (`quotas.confirmation_mails_per_hour`) for consents of a known person (an address that
//! confirmed before, or has an account) and the lower [`Rule::MailsUnconfirmed`] (that
//! limit less `quotas.confirmation_mails_reserved_percent`) for everyone else. Both count
//! in one window, so a flood of unknown addresses stops at the lower limit and leaves the
//! reserved share to the people who use the holder.
//!
//! Counted in memory (see docs/choices.md): each counter is a sliding window of the
//! last 60 minutes in one-minute buckets (248 bytes per key, whatever the limit), kept
//! in a map of at most [`MAX_KEYS`] keys per rule, evicted by [`make_room`]: forgetting a
//! count only ever lets a client through, never blocks one. A restart forgets every
//! count, which an outside caller cannot cause.
//!
//! [`Quotas::take`] checks and counts in one step under one lock, so concurrent callers
//! cannot both slip under a limit; [`Quotas::refund`] gives a unit back when the write it
//! was taken for did not happen, so nothing is counted that was not written.

use crate::config;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Most keys one rule tracks at once.
pub const MAX_KEYS: usize = 10_000;

/// Seconds in a quota window.
const WINDOW_SECS: i64 = 3600;
/// One-minute buckets in a window.
const BUCKETS: usize = 60;

/// A quota rule (`[quotas]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// `quotas.drafts_per_client_per_hour`.
    DraftsPerClient,
    /// `quotas.consents_per_client_per_hour`.
    ConsentsPerClient,
    /// `quotas.consents_per_network_per_hour`.
    ConsentsPerNetwork,
    /// `quotas.consents_per_address_per_hour`.
    ConsentsPerAddress,
    /// `quotas.confirmation_mails_per_hour`: the whole holder, for a known person.
    MailsGlobal,
    /// `quotas.confirmation_mails_per_hour` less `quotas.confirmation_mails_reserved_percent`:
    /// the whole holder, for an address that never confirmed (same window as
    /// [`Rule::MailsGlobal`]).
    MailsUnconfirmed,
    /// `quotas.registrations_per_client_per_hour`.
    RegistrationsPerClient,
}

impl Rule {
    /// The setting that holds the rule's limit (`quotas.…`), the rule's label in
    /// `isto_quota_refusals_total` ([`crate::telemetry`]) and what was counted, in words
    /// ("drafts from this address").
    fn facts(self) -> (&'static str, crate::telemetry::QuotaRule, &'static str) {
        use crate::telemetry::QuotaRule as Q;
        match self {
            Self::DraftsPerClient => {
                ("quotas.drafts_per_client_per_hour", Q::DraftsPerClient, "drafts from this address")
            }
            Self::ConsentsPerClient => {
                ("quotas.consents_per_client_per_hour", Q::ConsentsPerClient, "consents from this address")
            }
            Self::ConsentsPerNetwork => {
                ("quotas.consents_per_network_per_hour", Q::ConsentsPerNetwork, "consents from this network")
            }
            Self::ConsentsPerAddress => (
                "quotas.consents_per_address_per_hour",
                Q::ConsentsPerAddress,
                "confirmation e-mails to this e-mail address",
            ),
            Self::MailsGlobal => (
                "quotas.confirmation_mails_per_hour",
                Q::ConfirmationMails,
                "confirmation e-mails from this holder (all addresses together)",
            ),
            Self::MailsUnconfirmed => (
                "quotas.confirmation_mails_per_hour less quotas.confirmation_mails_reserved_percent",
                Q::ConfirmationMailsUnconfirmed,
                "confirmation e-mails from this holder to addresses that never confirmed (all addresses together)",
            ),
            Self::RegistrationsPerClient => (
                "quotas.registrations_per_client_per_hour",
                Q::RegistrationsPerClient,
                "client registrations from this address",
            ),
        }
    }

    /// The setting that holds the rule's limit (`quotas.…`).
    pub fn setting(self) -> &'static str {
        self.facts().0
    }
}

/// A refused write: the rule, its limit and when a unit frees up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exceeded {
    /// The rule.
    pub rule: Rule,
    /// Its limit per hour.
    pub limit: u32,
    /// Seconds until the oldest counted unit leaves the window (at least 1).
    pub retry_after_secs: u64,
    /// Unix seconds at which to retry (now + `retry_after_secs`).
    pub retry_at: i64,
}

impl std::fmt::Display for Exceeded {
    /// "too many drafts from this address in the last hour (quotas.drafts_per_client_per_hour
    /// = 60); try again after 2026-12-01T10:17:00Z (in 1020 s)".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = time::OffsetDateTime::from_unix_timestamp(self.retry_at)
            .map(crate::clock::rfc3339)
            .unwrap_or_else(|_| format!("unix time {}", self.retry_at));
        write!(
            f,
            "too many {} in the last hour ({} = {}); try again after {at} (in {} s)",
            self.rule.facts().2,
            self.rule.setting(),
            self.limit,
            self.retry_after_secs
        )
    }
}

/// The last hour of one key, in one-minute buckets.
#[derive(Debug, Clone, Copy)]
struct Window {
    /// The unix minute of the newest bucket.
    minute: i64,
    /// Counts per unix minute, at `minute % 60`.
    counts: [u32; BUCKETS],
}

impl Window {
    fn new(minute: i64) -> Self {
        Self { minute, counts: [0; BUCKETS] }
    }

    /// Moves the window to `minute`, clearing the buckets that left it.
    fn advance(&mut self, minute: i64) {
        if minute <= self.minute {
            return;
        }
        if minute - self.minute >= BUCKETS as i64 {
            self.counts = [0; BUCKETS];
        } else {
            for m in self.minute + 1..=minute {
                self.counts[m.rem_euclid(BUCKETS as i64) as usize] = 0;
            }
        }
        self.minute = minute;
    }

    fn total(&self) -> u64 {
        self.counts.iter().map(|&c| u64::from(c)).sum()
    }

    /// Seconds from `now` until the total drops below `limit` (oldest minutes leave first).
    fn retry_after(&self, limit: u32, now: i64) -> u64 {
        let mut total = self.total();
        let oldest = self.minute - (BUCKETS as i64 - 1);
        for m in oldest..=self.minute {
            total = total.saturating_sub(u64::from(self.counts[m.rem_euclid(BUCKETS as i64) as usize]));
            if total < u64::from(limit) {
                // Minute m's units leave the window when minute m + 60 begins.
                return ((m + BUCKETS as i64) * 60 - now).max(1) as u64;
            }
        }
        WINDOW_SECS as u64
    }
}

/// Makes room for one more key in `map`, bounded to `max` keys: when full, the entries
/// that `live` says are spent (it may also age them) go first, then, if all are live, a
/// quarter of the entries (arbitrary ones), so that a flood of fresh keys costs amortised
/// constant time per key and the map never grows past `max`. Forgetting a key only
/// forgets its count. Used by the quotas here and the sign-in throttle of the pages.
pub fn make_room<K: Hash + Eq + Clone, V>(map: &mut HashMap<K, V>, max: usize, mut live: impl FnMut(&mut V) -> bool) {
    if map.len() < max {
        return;
    }
    map.retain(|_, v| live(v));
    if map.len() >= max {
        let excess = map.len() - max * 3 / 4;
        let victims: Vec<K> = map.keys().take(excess).cloned().collect();
        for k in victims {
            map.remove(&k);
        }
    }
}

/// One rule's windows per key, bounded to [`MAX_KEYS`] keys.
#[derive(Debug, Default)]
struct Counter {
    map: HashMap<Key, Window>,
}

impl Counter {
    fn window(&mut self, key: &Key, minute: i64) -> &mut Window {
        if !self.map.contains_key(key) {
            make_room(&mut self.map, MAX_KEYS, |w| {
                w.advance(minute);
                w.total() > 0
            });
        }
        let w = self.map.entry(key.clone()).or_insert_with(|| Window::new(minute));
        w.advance(minute);
        w
    }

    fn take(&mut self, key: &Key, limit: u32, now: i64) -> Result<(), u64> {
        let w = self.window(key, now.div_euclid(60));
        if w.total() >= u64::from(limit) {
            return Err(w.retry_after(limit, now));
        }
        let i = w.minute.rem_euclid(BUCKETS as i64) as usize;
        w.counts[i] = w.counts[i].saturating_add(1);
        Ok(())
    }

    fn refund(&mut self, key: &Key, now: i64) {
        let minute = now.div_euclid(60);
        let Some(w) = self.map.get_mut(key) else { return };
        w.advance(minute);
        // The newest non-empty minute: the unit was taken moments ago.
        for back in 0..BUCKETS as i64 {
            let i = (w.minute - back).rem_euclid(BUCKETS as i64) as usize;
            if w.counts[i] > 0 {
                w.counts[i] -= 1;
                return;
            }
        }
    }
}

pub use crate::net::ClientKey;

/// What a unit was taken under, to [`Quotas::refund`] it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Key {
    /// A client address.
    Client(ClientKey),
    /// A client network ([`crate::net::network_key`] of a client address).
    Network(ClientKey),
    /// A target e-mail address, as its keyed hash (never the address itself).
    Address(String),
    /// The holder as a whole.
    Global,
}

impl Key {
    /// The [`Key::Network`] of a client address ([`crate::net::network_key`]: its IPv4
    /// /24 or IPv6 /48).
    pub fn network_of(client: ClientKey) -> Self {
        Self::Network(crate::net::network_key(client))
    }
}

/// The quota counters of one holder (see the module docs).
#[derive(Debug)]
pub struct Quotas {
    limits: config::Quotas,
    /// Drafts, consents, networks, registrations, addresses and the holder as a whole
    /// (see [`Quotas::counter`]).
    counters: [Mutex<Counter>; 6],
}

impl Quotas {
    /// Counters for the limits of `[quotas]`.
    pub fn new(limits: config::Quotas) -> Self {
        Self { limits, counters: Default::default() }
    }

    /// The limit of `rule` per hour.
    pub fn limit(&self, rule: Rule) -> u32 {
        let l = &self.limits;
        match rule {
            Rule::DraftsPerClient => l.drafts_per_client_per_hour,
            Rule::ConsentsPerClient => l.consents_per_client_per_hour,
            Rule::ConsentsPerNetwork => l.consents_per_network_per_hour,
            Rule::ConsentsPerAddress => l.consents_per_address_per_hour,
            Rule::MailsGlobal => l.confirmation_mails_per_hour,
            Rule::MailsUnconfirmed => {
                let all = u64::from(l.confirmation_mails_per_hour);
                let reserved = all * u64::from(l.confirmation_mails_reserved_percent.min(90)) / 100;
                u32::try_from(all - reserved).unwrap_or(u32::MAX)
            }
            Rule::RegistrationsPerClient => l.registrations_per_client_per_hour,
        }
    }

    /// Counts one unit of `rule` for `key` at `now` (unix seconds) unless the last hour
    /// already holds the limit.
    ///
    /// # Errors
    /// [`Exceeded`] naming the rule and when to retry; nothing is counted. A `key` that
    /// does not fit the rule (an address for a per-client rule) is refused as exceeded
    /// at once: a caller's mistake must not open a hole.
    pub fn take(&self, rule: Rule, key: &Key, now: i64) -> Result<(), Exceeded> {
        let limit = self.limit(rule);
        let taken = match self.counter(rule, key) {
            Some(mut c) => c.take(key, limit, now),
            None => Err(WINDOW_SECS as u64),
        };
        if taken.is_err() {
            crate::telemetry::quota_refused(rule.facts().1);
        }
        taken.map_err(|retry_after_secs| Exceeded {
            rule,
            limit,
            retry_after_secs,
            retry_at: now.saturating_add(retry_after_secs as i64),
        })
    }

    /// Gives back the unit of `rule` taken for `key` moments ago (the write it was taken
    /// for did not happen).
    pub fn refund(&self, rule: Rule, key: &Key, now: i64) {
        if let Some(mut c) = self.counter(rule, key) {
            c.refund(key, now);
        }
    }

    /// The counter of `rule`, locked, when `key` fits it (not an address for a per-client
    /// rule). A poisoned lock is taken over: the counts stay usable.
    fn counter(&self, rule: Rule, key: &Key) -> Option<MutexGuard<'_, Counter>> {
        let i = match (rule, key) {
            (Rule::DraftsPerClient, Key::Client(_)) => 0,
            (Rule::ConsentsPerClient, Key::Client(_)) => 1,
            (Rule::ConsentsPerNetwork, Key::Network(_)) => 2,
            (Rule::RegistrationsPerClient, Key::Client(_)) => 3,
            (Rule::ConsentsPerAddress, Key::Address(_)) => 4,
            (Rule::MailsGlobal | Rule::MailsUnconfirmed, Key::Global) => 5,
            _ => return None,
        };
        Some(self.counters[i].lock().unwrap_or_else(PoisonError::into_inner))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

    fn quotas(drafts: u32) -> Quotas {
        Quotas::new(config::Quotas { drafts_per_client_per_hour: drafts, ..config::Quotas::default() })
    }

    fn client(s: &str) -> Key {
        Key::Client(Some(s.parse().unwrap()))
    }

    #[test]
    fn a_client_stops_at_its_limit_and_others_do_not() {
        let q = quotas(3);
        let (a, b) = (client("192.0.2.1"), client("192.0.2.2"));
        let t0 = 1_800_000_000; // a minute boundary
        for i in 0..3 {
            q.take(Rule::DraftsPerClient, &a, t0 + i * 10).unwrap();
        }
        let e = q.take(Rule::DraftsPerClient, &a, t0 + 100).unwrap_err();
        assert_eq!(e.rule, Rule::DraftsPerClient);
        // All three fell in minute t0: they leave the window an hour later.
        assert_eq!(e.retry_after_secs, 3600 - 100);
        assert_eq!(e.retry_at, t0 + 3600);
        let text = e.to_string();
        assert!(text.starts_with("too many drafts from this address in the last hour"), "{text}");
        assert!(text.contains("quotas.drafts_per_client_per_hour = 3") && text.contains("try again after"), "{text}");
        q.take(Rule::DraftsPerClient, &b, t0 + 100).unwrap();
        // Other rules count apart.
        q.take(Rule::RegistrationsPerClient, &a, t0 + 100).unwrap();
        // An hour after the first minute, the window has room again.
        for _ in 0..3 {
            q.take(Rule::DraftsPerClient, &a, t0 + 3600).unwrap();
        }
        let e = q.take(Rule::DraftsPerClient, &a, t0 + 3601).unwrap_err();
        assert_eq!((e.rule, e.limit), (Rule::DraftsPerClient, 3));
    }

    #[test]
    fn the_window_slides_minute_by_minute() {
        let q = quotas(2);
        let a = client("192.0.2.1");
        let t0 = 1_800_000_000;
        q.take(Rule::DraftsPerClient, &a, t0).unwrap();
        q.take(Rule::DraftsPerClient, &a, t0 + 30 * 60).unwrap();
        let e = q.take(Rule::DraftsPerClient, &a, t0 + 40 * 60).unwrap_err();
        assert_eq!(e.retry_at, t0 + 3600, "the first unit leaves first");
        q.take(Rule::DraftsPerClient, &a, t0 + 3600).unwrap();
        let e = q.take(Rule::DraftsPerClient, &a, t0 + 3600).unwrap_err();
        assert_eq!(e.retry_at, t0 + 90 * 60);
    }

    #[test]
    fn a_refund_gives_the_unit_back() {
        let q = quotas(1);
        let a = client("192.0.2.1");
        q.take(Rule::DraftsPerClient, &a, 100).unwrap();
        q.refund(Rule::DraftsPerClient, &a, 101);
        q.take(Rule::DraftsPerClient, &a, 102).unwrap();
        let e = q.take(Rule::DraftsPerClient, &a, 103).unwrap_err();
        assert_eq!(
            (e.rule, e.limit, e.retry_at),
            (Rule::DraftsPerClient, 1, 61 * 60),
            "minute 1's unit leaves at minute 61"
        );
        // A key of the wrong kind never passes: refused for a whole window.
        let e = q.take(Rule::DraftsPerClient, &Key::Global, 103).unwrap_err();
        assert_eq!((e.rule, e.retry_after_secs), (Rule::DraftsPerClient, WINDOW_SECS as u64));
    }

    #[test]
    fn global_and_address_rules() {
        let q = Quotas::new(config::Quotas {
            confirmation_mails_per_hour: 2,
            consents_per_address_per_hour: 1,
            ..config::Quotas::default()
        });
        q.take(Rule::MailsGlobal, &Key::Global, 0).unwrap();
        q.take(Rule::MailsGlobal, &Key::Global, 0).unwrap();
        let e = q.take(Rule::MailsGlobal, &Key::Global, 0).unwrap_err();
        assert!(e.to_string().contains("all addresses together"), "{e}");
        q.take(Rule::ConsentsPerAddress, &Key::Address("h1".into()), 0).unwrap();
        let e = q.take(Rule::ConsentsPerAddress, &Key::Address("h1".into()), 0).unwrap_err();
        assert_eq!((e.rule, e.limit), (Rule::ConsentsPerAddress, 1));
        q.take(Rule::ConsentsPerAddress, &Key::Address("h2".into()), 0).unwrap();
    }

    #[test]
    fn unknown_addresses_stop_short_of_the_reserved_share_known_ones_reach_the_ceiling() {
        let q = Quotas::new(config::Quotas {
            confirmation_mails_per_hour: 10,
            confirmation_mails_reserved_percent: 30,
            ..config::Quotas::default()
        });
        assert_eq!(q.limit(Rule::MailsUnconfirmed), 7);
        for _ in 0..7 {
            q.take(Rule::MailsUnconfirmed, &Key::Global, 0).unwrap();
        }
        let e = q.take(Rule::MailsUnconfirmed, &Key::Global, 0).unwrap_err();
        assert_eq!((e.rule, e.limit), (Rule::MailsUnconfirmed, 7));
        assert!(e.to_string().contains("addresses that never confirmed"), "{e}");
        for _ in 0..3 {
            q.take(Rule::MailsGlobal, &Key::Global, 0).unwrap();
        }
        assert_eq!(q.take(Rule::MailsGlobal, &Key::Global, 0).unwrap_err().limit, 10, "the one ceiling holds");
        // One window: a refund of either gives the unit back to both.
        q.refund(Rule::MailsUnconfirmed, &Key::Global, 0);
        q.take(Rule::MailsGlobal, &Key::Global, 0).unwrap();
        // The network rule counts networks, and only them.
        let n = Key::Network(crate::net::network_key(Some("192.0.2.9".parse().unwrap())));
        let e = q.take(Rule::ConsentsPerNetwork, &client("192.0.2.9"), 0).unwrap_err();
        assert_eq!(
            (e.rule, e.retry_after_secs),
            (Rule::ConsentsPerNetwork, WINDOW_SECS as u64),
            "a key of the wrong kind"
        );
        q.take(Rule::ConsentsPerNetwork, &n, 0).unwrap();
    }

    #[test]
    fn the_map_is_bounded() {
        let q = quotas(1);
        for i in 0..(MAX_KEYS as u32 * 2) {
            let k = Key::Client(Some(IpAddr::from(std::net::Ipv4Addr::from(i))));
            q.take(Rule::DraftsPerClient, &k, 60).unwrap();
        }
        assert!(q.counters[0].lock().unwrap().map.len() <= MAX_KEYS);
    }
}
