//! Rate limits per client address and per credential: HTTP 429 with `Retry-After` (RFC
//! 6585 §4, RFC 9110 §10.2.3) for a client that sends more than its `[limits]` allow. The
//! one place that uses `governor` (GCRA, the generic cell rate algorithm: a sustained
//! rate with a burst).
//!
//! Three [`Bucket`]s per client address ([`ClientAddr::key`]: IPv4, or IPv6 cut to its
//! /64) and one per credential (the account and the client of a bearer token's grant,
//! never the token) on `/mcp/buyer` and `/mcp/seller`.
//!
//! Memory: each limiter tracks at most [`MAX_KEYS`] keys, forgetting those whose bucket
//! has refilled every [`SWEEP_EVERY`]; a new key that finds it full shares one overflow
//! bucket ([`Capped`]): a flood of fresh addresses cannot grow the state past the cap,
//! and the clients already tracked keep their own buckets.

use crate::config::Limits;
use crate::net::{Charge, ClientAddr};
use crate::telemetry::RateScope;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, MonotonicClock, Reference as _};
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::{DashMapStateStore, ShrinkableKeyedStateStore};
use governor::state::StateStore;
use governor::{Quota, RateLimiter};
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Most keys (client addresses or credentials) one limiter tracks. About 64 bytes a key:
/// a few MiB at most.
pub const MAX_KEYS: usize = 100_000;

/// How often the limiters forget the keys whose bucket has refilled.
pub const SWEEP_EVERY: Duration = Duration::from_secs(10);

/// The share of one core that one client address may keep busy with MCP calls: a call
/// is charged, beyond its request's cell, one more cell of the address's MCP bucket for
/// each further cell time (`RateLimits::mcp_cell_cpu`) of CPU time it used, so that at the
/// sustained rate (`[limits] mcp_requests_per_minute`) an address's calls use at most
/// this share (its burst aside), however costly each one.
pub const MCP_CPU_SHARE: f64 = 0.5;

/// The per-address buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bucket {
    /// `/mcp`, `/mcp/buyer`, `/mcp/seller` (and anything under them): `[limits] mcp_*`.
    Mcp,
    /// `/oauth/*` and `/.well-known/oauth-*`: `[limits] oauth_*`.
    OAuth,
    /// The pages, the stylesheet, `/.well-known/isto-intents` and unknown paths:
    /// `[limits] page_*`.
    Pages,
}

impl Bucket {
    /// The bucket of a request for `path`; `None` for the health checks, never limited.
    pub fn of(path: &str) -> Option<Self> {
        match path {
            "/healthz" | "/readyz" => None,
            p if p == "/mcp" || p.starts_with("/mcp/") => Some(Self::Mcp),
            p if p.starts_with("/oauth/") || p.starts_with("/.well-known/oauth-") => Some(Self::OAuth),
            _ => Some(Self::Pages),
        }
    }
}

/// A key of a [`Capped`] store: a tracked key's own bucket, or the shared overflow bucket.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Slot<K> {
    Own(K),
    Overflow,
}

/// governor's DashMap state store holding at most `max` keys of their own (about: two
/// requests racing for the last place may both get it).
#[derive(Debug)]
struct Capped<K: Hash + Eq + Clone> {
    map: DashMapStateStore<Slot<K>>,
    max: usize,
}

impl<K: Hash + Eq + Clone> StateStore for Capped<K> {
    type Key = K;

    fn measure_and_replace<T, F, E>(&self, key: &K, f: F) -> Result<T, E>
    where
        F: Fn(Option<Nanos>) -> Result<(T, Nanos), E>,
    {
        let own = Slot::Own(key.clone());
        if self.map.contains_key(&own) || self.map.len() < self.max {
            StateStore::measure_and_replace(&self.map, &own, f)
        } else {
            StateStore::measure_and_replace(&self.map, &Slot::Overflow, f)
        }
    }
}

impl<K: Hash + Eq + Clone> ShrinkableKeyedStateStore<K> for Capped<K> {
    fn retain_recent(&self, drop_below: Nanos) {
        ShrinkableKeyedStateStore::<Slot<K>>::retain_recent(&self.map, drop_below);
    }

    fn shrink_to_fit(&self) {
        self.map.shrink_to_fit();
    }

    fn len(&self) -> usize {
        self.map.len()
    }

    fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// One keyed limiter with its cap and the time of its last forced sweep.
#[derive(Debug)]
struct Keyed<K: Hash + Eq + Clone, C: Clock> {
    limiter: RateLimiter<K, Capped<K>, C, NoOpMiddleware<C::Instant>>,
    max_keys: usize,
    last_sweep: Mutex<Instant>,
}

impl<K: Hash + Eq + Clone, C: Clock> Keyed<K, C> {
    fn new(per_minute: u32, burst: u32, max_keys: usize, clock: C) -> Self {
        let max_keys = max_keys.max(1);
        let state = Capped { map: DashMapStateStore::default(), max: max_keys };
        Self {
            limiter: RateLimiter::new(quota(per_minute, burst), state, clock),
            max_keys,
            last_sweep: Mutex::new(Instant::now()),
        }
    }

    /// Counts one request of `key`: `Err(wait)` when it is over its rate, with the time
    /// until one more request is allowed.
    fn check(&self, key: &K) -> Result<(), Duration> {
        let res = self.limiter.check_key(key).map_err(|not| not.wait_time_from(self.limiter.clock().now()));
        if self.limiter.len() >= self.max_keys {
            // Full: make room now rather than at the next sweep, at most once a second.
            if let Ok(mut last) = self.last_sweep.try_lock() {
                if last.elapsed() >= Duration::from_secs(1) {
                    *last = Instant::now();
                    self.limiter.retain_recent();
                }
            }
        }
        res
    }

    fn sweep(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }
}

/// `per_minute` requests a minute (one every 60/`per_minute` s) with a burst of `burst`;
/// zeros read as one (the settings' ranges exclude them).
fn quota(per_minute: u32, burst: u32) -> Quota {
    let period = Duration::from_secs(60) / per_minute.max(1);
    let burst = NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN);
    Quota::with_period(period).unwrap_or_else(|| Quota::per_second(NonZeroU32::MAX)).allow_burst(burst)
}

/// Cells owed per client key, with when they were last charged.
type Owed<C> = HashMap<Option<IpAddr>, (u32, <C as Clock>::Instant)>;

/// The limiters of `isto serve` (see the module docs). `C` is governor's clock: the
/// monotonic clock, or a fake one in tests.
#[derive(Debug)]
pub struct RateLimits<C: Clock = MonotonicClock> {
    mcp: Keyed<Option<IpAddr>, C>,
    oauth: Keyed<Option<IpAddr>, C>,
    pages: Keyed<Option<IpAddr>, C>,
    credential: Keyed<u64, C>,
    /// The CPU time one cell of the MCP bucket pays for: [`MCP_CPU_SHARE`] of a core over
    /// the time one cell takes to refill (25 ms at the default 1200 a minute).
    mcp_cell_cpu: Duration,
    /// The most cells one call is charged beyond its request (the MCP burst).
    mcp_burst: u32,
    /// The time one MCP cell takes to refill.
    mcp_period: Duration,
    /// [`Self::charge_mcp_cpu`]'s debts; at most `max_keys` keys.
    owed: Mutex<Owed<C>>,
    /// Entries of `owed` (read without its lock on every request).
    owing: AtomicUsize,
    max_keys: usize,
    /// Hashes a credential's account and client into its key (seeded per process).
    hasher: std::hash::RandomState,
}

impl RateLimits<MonotonicClock> {
    /// The limiters of `limits`, at most [`MAX_KEYS`] keys each.
    pub fn new(limits: &Limits) -> Self {
        Self::with_clock(limits, MAX_KEYS, MonotonicClock)
    }
}

impl<C: Clock + Clone> RateLimits<C> {
    /// The limiters of `limits` on `clock`, at most `max_keys` keys each.
    pub fn with_clock(limits: &Limits, max_keys: usize, clock: C) -> Self {
        let keyed = |per_minute, burst| Keyed::new(per_minute, burst, max_keys, clock.clone());
        Self {
            mcp: keyed(limits.mcp_requests_per_minute, limits.mcp_burst),
            oauth: keyed(limits.oauth_requests_per_minute, limits.oauth_burst),
            pages: keyed(limits.page_requests_per_minute, limits.page_burst),
            credential: Keyed::new(
                limits.credential_requests_per_minute,
                limits.credential_burst,
                max_keys,
                clock.clone(),
            ),
            mcp_cell_cpu: Duration::from_secs(60).mul_f64(MCP_CPU_SHARE) / limits.mcp_requests_per_minute.max(1),
            mcp_burst: limits.mcp_burst,
            mcp_period: Duration::from_secs(60) / limits.mcp_requests_per_minute.max(1),
            owed: Mutex::new(HashMap::new()),
            owing: AtomicUsize::new(0),
            max_keys,
            hasher: std::hash::RandomState::new(),
        }
    }

    /// Charges an MCP call of client `key` that used `cpu` of CPU time: the cells it owes
    /// (`cpu` over the cell time of [`MCP_CPU_SHARE`], rounded up) beyond the one its
    /// request took, at most the burst, are taken from the address's MCP bucket while it
    /// has any; the rest is owed: the address's MCP requests wait (429) until that many
    /// cells have refilled. Returns the cells charged (taken and owed).
    pub fn charge_mcp_cpu(&self, key: Option<IpAddr>, cpu: Duration) -> u32 {
        let cell = self.mcp_cell_cpu.as_nanos().max(1);
        let owed = cpu.as_nanos().div_ceil(cell).saturating_sub(1);
        let owed = u32::try_from(owed).unwrap_or(u32::MAX).min(self.mcp_burst);
        // All the cells in one step while the bucket has them (the usual case); one at a
        // time when it has fewer, so as many as it has are still taken.
        let all = std::num::NonZeroU32::new(owed)
            .is_some_and(|n| matches!(self.mcp.limiter.check_key_n(&key, n), Ok(Ok(()))));
        let mut taken = if all { owed } else { 0 };
        while taken < owed && self.mcp.limiter.check_key(&key).is_ok() {
            taken += 1;
        }
        if taken < owed {
            let now = self.mcp.limiter.clock().now();
            let mut map = self.owed.lock().unwrap_or_else(PoisonError::into_inner);
            if map.len() < self.max_keys || map.contains_key(&key) {
                let before = map.get(&key).map_or(0, |d| d.0);
                map.insert(key, (before.saturating_add(owed - taken).min(self.mcp_burst), now));
                self.owing.store(map.len(), Ordering::Relaxed);
            }
        }
        owed
    }

    /// Pays what client `key` owes from its MCP bucket, as far as the bucket has
    /// refilled: `Err(wait)` while something is still owed, with the time until it is
    /// paid.
    fn owed_wait(&self, key: Option<IpAddr>) -> Result<(), Duration> {
        if self.owing.load(Ordering::Relaxed) == 0 {
            return Ok(());
        }
        let mut map = self.owed.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(debt) = map.get_mut(&key) else { return Ok(()) };
        while debt.0 > 0 && self.mcp.limiter.check_key(&key).is_ok() {
            debt.0 -= 1;
        }
        if debt.0 > 0 {
            return Err(self.mcp_period * debt.0);
        }
        map.remove(&key);
        self.owing.store(map.len(), Ordering::Relaxed);
        Ok(())
    }

    fn bucket(&self, bucket: Bucket) -> &Keyed<Option<IpAddr>, C> {
        match bucket {
            Bucket::Mcp => &self.mcp,
            Bucket::OAuth => &self.oauth,
            Bucket::Pages => &self.pages,
        }
    }

    /// Counts one request of client `key` ([`ClientAddr::key`]) in `bucket`: `Err(wait)`
    /// when the client is over its rate, with the time until it may send again.
    pub fn check(&self, bucket: Bucket, key: Option<IpAddr>) -> Result<(), Duration> {
        if bucket == Bucket::Mcp {
            self.owed_wait(key)?;
        }
        self.bucket(bucket).check(&key)
    }

    /// Counts one request of the credential of `account_id` and `client_id` (an OAuth
    /// grant): `Err(wait)` as [`Self::check`].
    pub fn check_credential(&self, account_id: &str, client_id: &str) -> Result<(), Duration> {
        let key = self.hasher.hash_one((account_id, client_id));
        self.credential.check(&key)
    }

    /// Forgets the keys whose bucket has refilled and shrinks the maps.
    pub fn sweep(&self) {
        for k in [&self.mcp, &self.oauth, &self.pages] {
            k.sweep();
        }
        self.credential.sweep();
        let now = self.mcp.limiter.clock().now();
        let mut map = self.owed.lock().unwrap_or_else(PoisonError::into_inner);
        // A debt left unpaid for as long as it and a full burst take to refill is gone:
        // its client has stayed away at least that long.
        let (period, burst) = (self.mcp_period, self.mcp_burst);
        map.retain(|_, (cells, at)| now.duration_since(*at) < Nanos::from(period * cells.saturating_add(burst)));
        map.shrink_to_fit();
        self.owing.store(map.len(), Ordering::Relaxed);
    }
}

/// Sweeps `limits` every [`SWEEP_EVERY`] until `stop` is cancelled or the limits are
/// dropped (the router that held them is gone).
pub async fn sweeper(limits: Weak<RateLimits>, stop: CancellationToken) {
    let mut tick = tokio::time::interval(SWEEP_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        let Some(l) = limits.upgrade() else { return };
        l.sweep();
    }
}

/// The 429 answer: `Retry-After` in whole seconds (rounded up, at least 1), no caching,
/// and a body that says what to do. CORS-readable, for browser-based OAuth and MCP
/// clients.
pub fn too_many_requests(wait: Duration, by: &str) -> Response {
    let secs = (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1);
    let body = format!(
        "Too many requests {by}: wait {secs} s (the Retry-After header) and try again. \
         Other clients are not affected.\n"
    );
    let mut res = (StatusCode::TOO_MANY_REQUESTS, body).into_response();
    let h = res.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
        h.insert(header::RETRY_AFTER, v);
    }
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    h.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static("Retry-After"));
    res
}

/// The per-address check (the app's front layer runs it): the 429 answer when the
/// request's address is over its path's rate, else None (and the request is counted).
pub fn refuse_client(limits: &RateLimits, req: &Request) -> Option<Response> {
    let bucket = Bucket::of(req.uri().path())?;
    let key = req.extensions().get::<ClientAddr>().copied().unwrap_or(ClientAddr(None)).key();
    let wait = limits.check(bucket, key).err()?;
    crate::telemetry::rate_limited(match bucket {
        Bucket::Mcp => RateScope::Mcp,
        Bucket::OAuth => RateScope::OAuth,
        Bucket::Pages => RateScope::Pages,
    });
    Some(too_many_requests(wait, "from this address"))
}

/// The [`Charge`] of an MCP request (path under `/mcp`): CPU time charged to the
/// request's client address ([`RateLimits::charge_mcp_cpu`]); `None` for other paths.
pub fn mcp_charge(limits: &Arc<RateLimits>, req: &Request) -> Option<Charge> {
    if Bucket::of(req.uri().path()) != Some(Bucket::Mcp) {
        return None;
    }
    let key = req.extensions().get::<ClientAddr>().copied().unwrap_or(ClientAddr(None)).key();
    let limits = limits.clone();
    Some(Charge::new(move |cpu| {
        limits.charge_mcp_cpu(key, cpu);
    }))
}

/// The per-credential middleware of `/mcp/buyer` and `/mcp/seller`: runs after the bearer
/// check, which put the token's [`crate::oauth::Grant`] into the extensions; its account
/// and client are counted (a request without a grant passes: the bearer check answered
/// it already).
pub async fn per_credential(State(limits): State<Arc<RateLimits>>, req: Request, next: Next) -> Response {
    if let Some(grant) = req.extensions().get::<crate::oauth::Grant>() {
        if let Err(wait) = limits.check_credential(&grant.account_id, &grant.client_id) {
            crate::telemetry::rate_limited(RateScope::Credential);
            return too_many_requests(wait, "with this token");
        }
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::extract::ConnectInfo;
    use axum::routing::get;
    use axum::Router;
    use governor::clock::FakeRelativeClock;
    use tower::ServiceExt as _;

    impl<K: Hash + Eq + Clone, C: Clock> Keyed<K, C> {
        fn len(&self) -> usize {
            self.limiter.len()
        }
    }

    impl<C: Clock + Clone> RateLimits<C> {
        fn mcp_cell_cpu(&self) -> Duration {
            self.mcp_cell_cpu
        }

        /// Keys tracked in `bucket` (the overflow bucket included).
        pub fn tracked(&self, bucket: Bucket) -> usize {
            self.bucket(bucket).len()
        }

        /// Credentials tracked (the overflow bucket included).
        pub fn tracked_credentials(&self) -> usize {
            self.credential.len()
        }
    }

    /// The per-address middleware: the request's [`ClientAddr`] (put there by the app's
    /// `client_addr` middleware, which must run first; a request without one counts under the
    /// shared key of unknown peers) counted in its path's [`Bucket`]; over the rate, 429.
    pub async fn per_client(State(limits): State<Arc<RateLimits>>, req: Request, next: Next) -> Response {
        match refuse_client(&limits, &req) {
            Some(refused) => refused,
            None => next.run(req).await,
        }
    }

    fn limits(per_minute: u32, burst: u32) -> Limits {
        Limits {
            mcp_requests_per_minute: per_minute,
            mcp_burst: burst,
            oauth_requests_per_minute: per_minute,
            oauth_burst: burst,
            page_requests_per_minute: per_minute,
            page_burst: burst,
            credential_requests_per_minute: per_minute,
            credential_burst: burst,
            ..Limits::default()
        }
    }

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn paths_fall_into_their_buckets_and_health_is_never_limited() {
        assert_eq!(Bucket::of("/mcp"), Some(Bucket::Mcp));
        assert_eq!(Bucket::of("/mcp/buyer"), Some(Bucket::Mcp));
        assert_eq!(Bucket::of("/mcp/seller"), Some(Bucket::Mcp));
        assert_eq!(Bucket::of("/oauth/token"), Some(Bucket::OAuth));
        assert_eq!(Bucket::of("/oauth/authorize"), Some(Bucket::OAuth));
        assert_eq!(Bucket::of("/.well-known/oauth-protected-resource/mcp/buyer"), Some(Bucket::OAuth));
        assert_eq!(Bucket::of("/.well-known/isto-intents"), Some(Bucket::Pages));
        assert_eq!(Bucket::of("/consent/abc"), Some(Bucket::Pages));
        assert_eq!(Bucket::of("/mcpx"), Some(Bucket::Pages));
        assert_eq!(Bucket::of("/healthz"), None);
        assert_eq!(Bucket::of("/readyz"), None);
    }

    #[test]
    fn over_the_burst_a_client_waits_and_others_are_not_affected() {
        let clock = FakeRelativeClock::default();
        // 60 a minute (one a second), a burst of 3.
        let l = RateLimits::with_clock(&limits(60, 3), 100, clock.clone());
        let a = ip("192.0.2.1");
        for _ in 0..3 {
            assert_eq!(l.check(Bucket::Mcp, a), Ok(()));
        }
        let wait = l.check(Bucket::Mcp, a).unwrap_err();
        assert!(wait > Duration::ZERO && wait <= Duration::from_secs(1), "{wait:?}");
        // Another address, another bucket, a credential: unaffected.
        assert_eq!(l.check(Bucket::Mcp, ip("192.0.2.2")), Ok(()));
        assert_eq!(l.check(Bucket::Pages, a), Ok(()));
        assert_eq!(l.check(Bucket::OAuth, a), Ok(()));
        // The same /64 is the same client; the next /64 is another.
        let v6 = |s: &str| ClientAddr(ip(s)).key();
        for _ in 0..3 {
            assert_eq!(l.check(Bucket::Pages, v6("2001:db8:0:1::1")), Ok(()));
        }
        assert_eq!(l.check(Bucket::Pages, v6("2001:db8:0:1::ffff")), Err(wait), "the /64 shares one bucket");
        assert_eq!(l.check(Bucket::Pages, v6("2001:db8:0:2::1")), Ok(()));
        // After the wait the client is served again, one request a second.
        clock.advance(wait);
        assert_eq!(l.check(Bucket::Mcp, a), Ok(()));
        assert_eq!(l.check(Bucket::Mcp, a), Err(Duration::from_secs(1)), "one request a second");
        clock.advance(Duration::from_secs(3));
        for _ in 0..3 {
            assert_eq!(l.check(Bucket::Mcp, a), Ok(()));
        }
    }

    /// One address calling costly tools as fast as it is let through keeps at most
    /// [`MCP_CPU_SHARE`] of a core busy (its burst aside); cheap calls pay one cell.
    #[test]
    fn costly_calls_cannot_take_more_than_half_a_core() {
        let clock = FakeRelativeClock::default();
        let l = RateLimits::with_clock(&limits(1200, 120), 100, clock.clone());
        assert_eq!(l.mcp_cell_cpu(), Duration::from_millis(25));
        let a = ip("192.0.2.9");
        assert_eq!(l.charge_mcp_cpu(a, Duration::from_millis(20)), 0, "a cheap call pays its request only");
        assert_eq!(l.charge_mcp_cpu(a, Duration::from_millis(26)), 1);
        // What the bucket lacks is owed: the address waits until it has refilled.
        let b = ip("192.0.2.11");
        assert_eq!(l.charge_mcp_cpu(b, Duration::from_secs(4)), 120, "at most the burst");
        assert_eq!(l.charge_mcp_cpu(b, Duration::from_secs(1)), 39);
        let wait = l.check(Bucket::Mcp, b).unwrap_err();
        assert_eq!(wait, Duration::from_millis(50) * 39, "{wait:?}");
        clock.advance(wait);
        assert_eq!(
            l.check(Bucket::Mcp, b),
            Err(Duration::from_millis(50)),
            "paid; the request itself needs one more cell"
        );
        clock.advance(Duration::from_millis(50));
        assert_eq!(l.check(Bucket::Mcp, b), Ok(()));
        let (cost, window) = (Duration::from_millis(100), Duration::from_secs(60));
        let mut used = Duration::ZERO;
        let mut elapsed = Duration::ZERO;
        while elapsed < window {
            // Four threads' worth of calls: whenever the bucket lets one through.
            if l.check(Bucket::Mcp, a).is_ok() {
                l.charge_mcp_cpu(a, cost);
                used += cost;
            } else {
                clock.advance(Duration::from_millis(5));
                elapsed += Duration::from_millis(5);
            }
        }
        let burst = l.mcp_cell_cpu() * 120;
        let most = window.mul_f64(MCP_CPU_SHARE) + burst + cost;
        assert!(used <= most, "{used:?} of CPU in {window:?} (at most {most:?})");
        assert!(used >= window.mul_f64(MCP_CPU_SHARE) / 2, "still served: {used:?}");
        // Another address is not affected.
        assert_eq!(l.check(Bucket::Mcp, ip("192.0.2.10")), Ok(()));
    }

    #[test]
    fn credentials_have_their_own_buckets() {
        let clock = FakeRelativeClock::default();
        let l = RateLimits::with_clock(&limits(60, 2), 100, clock);
        assert_eq!(l.check_credential("acct-1", "client-a"), Ok(()));
        assert_eq!(l.check_credential("acct-1", "client-a"), Ok(()));
        assert_eq!(
            l.check_credential("acct-1", "client-a"),
            Err(Duration::from_secs(1)),
            "one a second after the burst"
        );
        assert_eq!(l.check_credential("acct-1", "client-b"), Ok(()), "another client of the account");
        assert_eq!(l.check_credential("acct-2", "client-a"), Ok(()), "another account");
        // No ambiguity between the parts of the key.
        assert_eq!(l.check_credential("acct-1client-a", ""), Ok(()));
        assert_eq!(l.tracked_credentials(), 4);
    }

    #[test]
    fn a_flood_of_fresh_addresses_stays_under_the_cap() {
        let clock = FakeRelativeClock::default();
        let l = RateLimits::with_clock(&limits(60, 5), 1_000, clock.clone());
        let known = ip("198.51.100.7");
        assert_eq!(l.check(Bucket::Mcp, known), Ok(()));
        // 50 000 fresh IPv4 addresses, well within a second of fake time.
        for i in 0..50_000u32 {
            let a = Some(IpAddr::from(std::net::Ipv4Addr::from(0x0A00_0000 + i)));
            let _ = l.check(Bucket::Mcp, a);
            assert!(l.tracked(Bucket::Mcp) <= 1_001, "{} keys after {i}", l.tracked(Bucket::Mcp));
        }
        // The client tracked before the flood keeps its own bucket.
        for _ in 0..4 {
            assert_eq!(l.check(Bucket::Mcp, known), Ok(()));
        }
        assert_eq!(l.check(Bucket::Mcp, known), Err(Duration::from_secs(1)), "its burst of five is used up");
        // Once the buckets have refilled the sweep forgets them all.
        clock.advance(Duration::from_secs(10));
        l.sweep();
        assert_eq!(l.tracked(Bucket::Mcp), 0);
        // And a fresh client gets a bucket of its own again.
        assert_eq!(l.check(Bucket::Mcp, ip("203.0.113.1")), Ok(()));
        assert_eq!(l.tracked(Bucket::Mcp), 1);
    }

    #[test]
    fn retry_after_is_whole_seconds_rounded_up() {
        let r = too_many_requests(Duration::from_millis(1500), "from this address");
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(r.headers()[header::RETRY_AFTER], "2");
        assert_eq!(too_many_requests(Duration::ZERO, "x").headers()[header::RETRY_AFTER], "1");
        assert_eq!(too_many_requests(Duration::from_secs(3), "x").headers()[header::RETRY_AFTER], "3");
    }

    /// A router with the per-client middleware over `limits`, with `/healthz`, `/mcp`
    /// and a page; requests from `peer`.
    async fn get_from(app: &Router, path: &str, peer: &str) -> Response {
        let mut req = axum::http::Request::get(path).body(Body::empty()).unwrap();
        req.extensions_mut().insert(ClientAddr(Some(peer.parse().unwrap())));
        req.extensions_mut().insert(ConnectInfo(format!("{peer}:1000").parse::<std::net::SocketAddr>().unwrap()));
        app.clone().oneshot(req).await.unwrap()
    }

    fn app(l: Limits) -> Router {
        let limits = Arc::new(RateLimits::new(&l));
        Router::new()
            .route("/healthz", get(|| async { "ok" }))
            .route("/mcp", get(|| async { "mcp" }))
            .route("/page", get(|| async { "page" }))
            .layer(axum::middleware::from_fn_with_state(limits, per_client))
    }

    #[tokio::test]
    async fn the_middleware_answers_429_with_retry_after_and_never_limits_healthz() {
        let app = app(limits(60, 2));
        for _ in 0..2 {
            assert_eq!(get_from(&app, "/mcp", "192.0.2.1").await.status(), StatusCode::OK);
        }
        let res = get_from(&app, "/mcp", "192.0.2.1").await;
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(res.headers()[header::RETRY_AFTER], "1");
        let body = axum::body::to_bytes(res.into_body(), 1024).await.unwrap();
        let body = String::from_utf8(body.to_vec()).unwrap();
        assert!(body.contains("wait 1 s") && body.contains("Retry-After"), "{body}");
        // Another address; another bucket of the same address.
        assert_eq!(get_from(&app, "/mcp", "192.0.2.2").await.status(), StatusCode::OK);
        assert_eq!(get_from(&app, "/page", "192.0.2.1").await.status(), StatusCode::OK);
        // The health check, far over any burst.
        for _ in 0..50 {
            assert_eq!(get_from(&app, "/healthz", "192.0.2.1").await.status(), StatusCode::OK);
        }
    }

    #[tokio::test]
    async fn the_sweeper_stops_with_its_token_or_its_limits() {
        let l = Arc::new(RateLimits::new(&Limits::default()));
        let stop = CancellationToken::new();
        let task = tokio::spawn(sweeper(Arc::downgrade(&l), stop.clone()));
        stop.cancel();
        tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap();
        let task = tokio::spawn(sweeper(Arc::downgrade(&l), CancellationToken::new()));
        // The first tick is immediate: the task finds the limits gone and ends.
        drop(l);
        tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap();
    }
}
