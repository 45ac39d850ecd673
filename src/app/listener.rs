//! The hand-written accept loop of `isto serve` and its connection policy (also
//! against slow bodies and streams): the listening socket, the connection cap and
//! the eviction of waiting connections, the connections each client address may hold
//! ([`holds`]), the request body's total deadline and the event streams' idle end
//! ([`body`]), the idle and header timeouts ([`io`]), and the open-file limit raised at
//! start ([`nofile`]).

use super::SHUTDOWN_CONNECTIONS;
use crate::config::Limits;
use crate::net::{ClientAddr, TrustedProxies};
use axum::extract::Request;
use axum::Router;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio_util::sync::CancellationToken;

pub mod body;
mod holds;
mod io;
pub mod nofile;

use body::{CountedBody, DeadlineBody};
use holds::{Hold, Holds};
use io::{Activity, Watched};

/// Length of the kernel's queue of connections not yet accepted (`listen(2)` backlog,
/// capped at `net.core.somaxconn`): larger than `TcpListener::bind`'s 128, so that a
/// burst is queued rather than having its SYNs dropped and retried a second later.
pub const LISTEN_BACKLOG: u32 = 1024;

/// How many waiting connections [`serve_http`] closes at once when every slot is taken:
/// one per 128 slots, from one to eight.
fn evict_batch(max_connections: usize) -> usize {
    (max_connections / 128).clamp(1, 8)
}

/// How many connections told to close may have handed their slot on before their task
/// has closed them (eight batches): a flood drains the kernel's queue without waiting
/// for each closing task to be scheduled, and the descriptors held beyond
/// `max_connections` stay bounded (within [`nofile::RESERVE_MAX`]).
fn closing_max(max_connections: usize) -> usize {
    evict_batch(max_connections) * 8
}

/// A listening socket on `addr` (`SO_REUSEADDR`, as `TcpListener::bind` sets it) with a
/// queue of [`LISTEN_BACKLOG`].
///
/// # Errors
/// Creating, binding or listening failed (address in use, no permission).
pub fn listen(addr: std::net::SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// The client a request comes from: the socket `peer`, or the client named by the
/// `X-Forwarded-For` lines of `headers` when the peer is a trusted proxy (see
/// [`crate::net`]). Only the last 8 lines are read: a proxy that appends a line of its own
/// (HAProxy's `option forwardfor`) puts the address it saw last, after any lines the
/// client wrote, so the lines the client can add never push it out.
pub fn client_of(
    trusted: &TrustedProxies,
    peer: Option<std::net::SocketAddr>,
    headers: &http::HeaderMap,
) -> ClientAddr {
    let mut last: Vec<&str> =
        headers.get_all("x-forwarded-for").iter().rev().take(8).filter_map(|v| v.to_str().ok()).collect();
    last.reverse();
    let forwarded = last.join(",");
    ClientAddr::resolve(peer, Some(forwarded.as_str()).filter(|f| !f.is_empty()), trusted)
}

/// The body of the answer to a connection over its address's connections.
const REFUSED_BODY: &str = "Too many connections at once from this address: close one and try again.\n";

/// Everything the accept loop and the connection tasks of [`serve_http`] share.
struct Shared {
    app: Router,
    builder: hyper_util::server::conn::auto::Builder<hyper_util::rt::TokioExecutor>,
    trusted: TrustedProxies,
    open: Connections,
    holds: Arc<Holds>,
    limits: Limits,
    stop: CancellationToken,
}

/// Serves `app` on `listener` until `stop` is cancelled, within `limits`: at most
/// `max_connections` connections at once, each closed when it has not sent a complete
/// request head within `header_read_timeout_secs` (also between keep-alive requests, and
/// before its first byte) or when no byte went either way for `idle_timeout_secs`. When
/// every slot is taken, the connections waiting longest without a request in flight are
/// closed to make room ([`Connections::evict`], as nginx reuses idle connections); only
/// when every slot is busy with a request does a new connection wait for one (holding one
/// descriptor; further ones wait in the kernel's accept queue). Per client address
/// (`trusted` decides who that is, as for the rate limits) at most
/// `max_connections_per_client` connections ([`holds`], [`admit`], [`admit_request`]);
/// request bodies and event streams are bounded in time ([`body`]). On `stop`, accepting
/// ends, idle connections are closed, requests in flight finish, and after
/// [`SHUTDOWN_CONNECTIONS`] (8 s) those still open are dropped.
pub async fn serve_http(
    listener: tokio::net::TcpListener,
    app: Router,
    limits: Limits,
    trusted: TrustedProxies,
    stop: CancellationToken,
) {
    use hyper_util::rt::{TokioExecutor, TokioTimer};
    let header = Duration::from_secs(limits.header_read_timeout_secs);
    // HTTP/1.1 only: HTTP/2 is the TLS-terminating proxy's (isto serves plain HTTP behind
    // it). Cleartext HTTP/2 let a client that never opens its flow-control window keep a
    // request in flight, its connection busy and answering PINGs, for ever.
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new()).http1_only();
    builder.http1().timer(TokioTimer::new()).header_read_timeout(header);
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let shared = Arc::new(Shared {
        app,
        builder,
        trusted,
        open: Connections::new(closing_max(limits.max_connections)),
        holds: Holds::new(limits.max_connections_per_client, limits.max_connections),
        limits,
        stop: stop.clone(),
    });
    let batch = evict_batch(limits.max_connections);
    loop {
        let (tcp, peer) = tokio::select! {
            _ = stop.cancelled() => break,
            r = listener.accept() => match r {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors or a connection reset before accept: wait a
                    // little rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let direct = !shared.trusted.contains(peer.ip());
        let (hold, key) = if direct {
            let key = ClientAddr::resolve(Some(peer), None, &shared.trusted).key();
            match admit(&shared, key) {
                Some(hold) => (Some(hold), Some(key)),
                None => {
                    refuse(tcp);
                    continue;
                }
            }
        } else {
            (None, None)
        };
        let permit = match slots.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(TryAcquireError::Closed) => break,
            Err(TryAcquireError::NoPermits) => {
                // A few at once: under a flood the kernel's queue holds many more, and
                // each of them would otherwise wait for one closing connection's task.
                shared.open.evict(batch, None);
                tokio::select! {
                    _ = stop.cancelled() => break,
                    p = slots.clone().acquire_owned() => match p {
                        Ok(p) => p,
                        Err(_) => break,
                    },
                }
            }
        };
        // Without TCP_NODELAY a streamed MCP reply waits ~40 ms for a delayed ACK.
        let _ = tcp.set_nodelay(true);
        // Registered here, not in its task: a connection accepted but not yet scheduled
        // is seen (and weighed by its accept time) by the next eviction.
        let (io, activity) = Watched::new(tcp);
        let (id, conn) = shared.open.add(activity.clone(), key, permit);
        tokio::spawn(connection(shared.clone(), Accepted { io, activity, id, conn, peer, _hold: hold }));
    }
    drop(listener);
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(SHUTDOWN_CONNECTIONS, slots.acquire_many(all)).await;
}

/// A hold for a new connection from `key` (a peer that is not a trusted proxy): taken
/// when the address is under its limit, else when one of its own connections without a
/// request in flight could be told to close for it; None: refuse the connection.
fn admit(shared: &Shared, key: crate::net::ClientKey) -> Option<Hold> {
    shared.holds.take(key).or_else(|| (shared.open.evict(1, Some(key)) > 0).then(|| shared.holds.force(key)))
}

/// Answers a connection refused at accept with a 429 (when its socket takes
/// it at once) and closes it; what it already sent is read first, so that the close is
/// not a reset that could discard the answer.
fn refuse(tcp: tokio::net::TcpStream) {
    tracing::debug!("connection refused: its address holds its share of connections");
    crate::telemetry::rate_limited(crate::telemetry::RateScope::Connections);
    let mut buf = [0u8; 4096];
    let _ = tcp.try_read(&mut buf);
    let raw = format!(
        "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nConnection: close\r\nCache-Control: no-store\r\n\
         Content-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\r\n{REFUSED_BODY}",
        REFUSED_BODY.len()
    );
    let _ = tcp.try_write(raw.as_bytes());
}

/// An accepted connection, as [`serve_http`] hands it to its task.
struct Accepted {
    io: Watched,
    activity: Arc<Activity>,
    id: u64,
    conn: Arc<Conn>,
    peer: std::net::SocketAddr,
    _hold: Option<Hold>,
}

/// Serves one connection until it ends, is evicted, times out or `stop` closes it.
async fn connection(shared: Arc<Shared>, accepted: Accepted) {
    use hyper_util::rt::TokioIo;
    use hyper_util::service::TowerToHyperService;
    let header = Duration::from_secs(shared.limits.header_read_timeout_secs);
    let idle = Duration::from_secs(shared.limits.idle_timeout_secs);
    let Accepted { io, activity, id, conn, peer, _hold: hold } = accepted;
    let inner = TowerToHyperService::new(shared.app.clone());
    let (s, counted) = (shared.clone(), conn.clone());
    let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
        let admitted = admit_request(&s, &counted, peer, req.headers());
        let body_limit = Duration::from_secs(s.limits.body_read_timeout_secs);
        let stream_idle = Duration::from_secs(s.limits.stream_idle_secs);
        let was_late = Arc::new(AtomicBool::new(false));
        let call = admitted.map(|guard| {
            let mut req = req.map(|b| DeadlineBody::new(b, body_limit, was_late.clone()));
            // The peer address feeds the per-client limits (`axum::extract::ConnectInfo`),
            // set per request: layering the router per connection rebuilt every route.
            req.extensions_mut().insert(axum::extract::ConnectInfo(peer));
            (guard, hyper::service::Service::call(&inner, req))
        });
        async move {
            let Some((guard, call)) = call else {
                return Ok::<_, std::convert::Infallible>(refused_response());
            };
            let mut res = call.await?;
            if was_late.load(Ordering::Acquire) {
                res = body::late_response();
            }
            let idle = body::is_event_stream(res.headers()).then_some(stream_idle);
            Ok(res.map(|b| CountedBody::new(b, Some(guard), idle)))
        }
    });
    let served = shared.builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(served);
    let mut tick = tokio::time::interval(Duration::from_millis(250).max(header.min(idle) / 8));
    let mut closing = false;
    loop {
        tokio::select! {
            _ = served.as_mut() => break,
            _ = shared.stop.cancelled(), if !closing => {
                closing = true;
                served.as_mut().graceful_shutdown();
            }
            _ = conn.evict.cancelled() => {
                tracing::debug!("connection closed to make room for a new one");
                break;
            }
            _ = tick.tick() => {
                if activity.silent_for() >= idle || (!activity.read_any() && activity.age() >= header) {
                    break;
                }
            }
        }
    }
    shared.open.remove(id);
    drop(hold);
}

/// Admits a request whose head just arrived on `conn`: its in-flight guard, with a hold
/// for its client unless the connection's own hold covers it (a peer that is not a
/// trusted proxy, the connection's first request in flight); None when the client holds
/// its share already ([`holds`]).
fn admit_request(
    shared: &Shared,
    conn: &Arc<Conn>,
    peer: std::net::SocketAddr,
    headers: &http::HeaderMap,
) -> Option<InFlight> {
    let covered = conn.key.is_some() && conn.in_flight.load(Ordering::Acquire) == 0;
    let hold = if covered {
        None
    } else {
        let client = client_of(&shared.trusted, Some(peer), headers);
        match shared.holds.take(client.key()) {
            Some(h) => Some(h),
            None => {
                tracing::debug!("request refused: its client holds its share of connections");
                crate::telemetry::rate_limited(crate::telemetry::RateScope::Connections);
                return None;
            }
        }
    };
    Some(InFlight::enter(conn.clone(), shared.holds.clone(), hold))
}

/// The 429 of a request over its client's connections (`Connection: close`).
fn refused_response() -> http::Response<CountedBody<Option<InFlight>>> {
    let mut res = super::rate::too_many_requests(Duration::from_secs(1), "at once from this address (connections)");
    res.headers_mut().insert(http::header::CONNECTION, http::HeaderValue::from_static("close"));
    res.map(|b| CountedBody::new(b, None, None))
}

/// One open connection as the accept loop sees it.
#[derive(Debug)]
struct Conn {
    /// Requests whose head was read and whose response body is not yet finished.
    in_flight: AtomicUsize,
    served: AtomicBool,
    waiting_since: Mutex<Instant>,
    /// The client address it is held for (a peer that is not a trusted proxy).
    key: Option<crate::net::ClientKey>,
    evict: CancellationToken,
    /// Its connection slot, until it closes, or is told to close and hands it on (then
    /// None while it is still open: it counts in [`Connections`]' `closing`).
    slot: Mutex<Option<OwnedSemaphorePermit>>,
}

/// The open connections of [`serve_http`], for eviction when every slot is taken, and
/// how many of them were told to close and handed their slot on ([`closing_max`]).
#[derive(Debug)]
struct Connections {
    next: AtomicU64,
    map: Mutex<std::collections::HashMap<u64, Arc<Conn>>>,
    closing: AtomicUsize,
    closing_max: usize,
}

impl Connections {
    fn new(closing_max: usize) -> Self {
        Self { next: AtomicU64::new(0), map: Mutex::default(), closing: AtomicUsize::new(0), closing_max }
    }

    fn lock(&self) -> MutexGuard<'_, std::collections::HashMap<u64, Arc<Conn>>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn add(
        &self,
        activity: Arc<Activity>,
        key: Option<crate::net::ClientKey>,
        slot: OwnedSemaphorePermit,
    ) -> (u64, Arc<Conn>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn {
            in_flight: AtomicUsize::new(0),
            served: AtomicBool::new(false),
            waiting_since: Mutex::new(activity.opened),
            key,
            evict: CancellationToken::new(),
            slot: Mutex::new(Some(slot)),
        });
        self.lock().insert(id, conn.clone());
        (id, conn)
    }

    /// Forgets connection `id` as it closes, and frees its slot.
    fn remove(&self, id: u64) {
        let Some(conn) = self.lock().remove(&id) else { return };
        if conn.slot.lock().unwrap_or_else(PoisonError::into_inner).take().is_none() {
            self.closing.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Signals up to `n` connections waiting longest without a request in flight to
    /// close (only those held for client `of`, when given): those that never completed a
    /// request head before idle keep-alive ones, then the earliest wait. Returns how many
    /// were signalled. Each signalled one hands its slot on at once while fewer than
    /// `closing_max` are closing so: the accept loop need not wait for its task.
    fn evict(&self, n: usize, of: Option<crate::net::ClientKey>) -> usize {
        let map = self.lock();
        let mut idle: Vec<((bool, Instant), &Arc<Conn>)> = map
            .values()
            .filter(|c| of.is_none() || c.key == of)
            .filter(|c| c.in_flight.load(Ordering::Acquire) == 0 && !c.evict.is_cancelled())
            .map(|c| {
                let since = *c.waiting_since.lock().unwrap_or_else(PoisonError::into_inner);
                ((c.served.load(Ordering::Relaxed), since), c)
            })
            .collect();
        let n = n.min(idle.len());
        if n > 0 && n < idle.len() {
            idle.select_nth_unstable_by_key(n - 1, |(key, _)| *key);
        }
        for (_, c) in idle.iter().take(n) {
            c.evict.cancel();
            if self.closing.load(Ordering::Acquire) < self.closing_max
                && c.slot.lock().unwrap_or_else(PoisonError::into_inner).take().is_some()
            {
                self.closing.fetch_add(1, Ordering::AcqRel);
            }
        }
        n
    }
}

/// A request in flight on a [`Conn`], from its complete head to the end of its response
/// body (dropped with the body), with its client's hold when it needs one of its own.
#[derive(Debug)]
struct InFlight {
    conn: Arc<Conn>,
    holds: Arc<Holds>,
    _hold: Option<Hold>,
}

impl InFlight {
    fn enter(conn: Arc<Conn>, holds: Arc<Holds>, hold: Option<Hold>) -> Self {
        if conn.in_flight.fetch_add(1, Ordering::AcqRel) == 0 {
            holds.busy();
        }
        conn.served.store(true, Ordering::Relaxed);
        Self { conn, holds, _hold: hold }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        *self.conn.waiting_since.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
        if self.conn.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.holds.idle();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A slot of a pool of its own (the eviction tests do not count slots).
    fn slot() -> OwnedSemaphorePermit {
        Arc::new(Semaphore::new(1)).try_acquire_owned().unwrap()
    }

    /// Whether `c` handed its slot on while still open.
    fn handed_on(c: &Conn) -> bool {
        c.slot.lock().unwrap().is_none()
    }

    #[test]
    fn the_batch_grows_with_the_cap_up_to_eight() {
        assert_eq!([1, 2, 127, 128, 256, 1024, 65536].map(evict_batch), [1, 1, 1, 1, 2, 8, 8]);
    }

    #[test]
    fn half_open_before_idle_oldest_first_never_busy() {
        let open = Connections::new(8);
        let conn = |served: bool, in_flight: usize| {
            let (_, c) = open.add(Watched::activity(), None, slot());
            c.served.store(served, Ordering::Relaxed);
            c.in_flight.store(in_flight, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(2));
            c
        };
        let busy_half = conn(false, 1);
        let idle_old = conn(true, 0);
        let half_old = conn(false, 0);
        let half_new = conn(false, 0);
        let busy = conn(true, 1);
        assert_eq!(open.evict(1, None), 1);
        assert!(half_old.evict.is_cancelled() && !half_new.evict.is_cancelled());
        assert_eq!(open.evict(1, None), 1);
        assert!(half_new.evict.is_cancelled() && !idle_old.evict.is_cancelled());
        assert_eq!(open.evict(8, None), 1, "only the idle keep-alive one is left to close");
        assert!(idle_old.evict.is_cancelled());
        assert_eq!(open.evict(8, None), 0, "a connection with a request in flight is never closed");
        assert!(!busy.evict.is_cancelled() && !busy_half.evict.is_cancelled());
    }

    #[test]
    fn a_connection_told_to_close_hands_its_slot_on_at_once_up_to_the_bound() {
        let slots = Arc::new(Semaphore::new(3));
        let open = Connections::new(2);
        let conns: Vec<(u64, Arc<Conn>)> =
            (0..3).map(|_| open.add(Watched::activity(), None, slots.clone().try_acquire_owned().unwrap())).collect();
        assert_eq!(slots.available_permits(), 0);
        assert_eq!(open.evict(3, None), 3);
        assert_eq!(slots.available_permits(), 2, "two slots handed on before their tasks end; the third waits");
        let (handed, kept): (Vec<_>, Vec<_>) = conns.iter().partition(|(_, c)| handed_on(c));
        assert_eq!((handed.len(), kept.len()), (2, 1));
        open.remove(kept[0].0);
        assert_eq!(slots.available_permits(), 3, "the one that kept its slot frees it as it closes");
        open.remove(handed[0].0);
        assert_eq!(open.closing.load(Ordering::Acquire), 1, "a handed-on one that closed leaves the bound");
        let (_, late) = open.add(Watched::activity(), None, slots.clone().try_acquire_owned().unwrap());
        assert_eq!(open.evict(1, None), 1);
        assert!(handed_on(&late), "room under the bound again");
        assert_eq!(slots.available_permits(), 3);
    }

    #[test]
    fn an_address_makes_room_only_among_its_own_connections() {
        let open = Connections::new(8);
        let a: crate::net::ClientKey = Some("192.0.2.1".parse().unwrap());
        let b: crate::net::ClientKey = Some("192.0.2.2".parse().unwrap());
        let (_, other) = open.add(Watched::activity(), Some(b), slot());
        std::thread::sleep(Duration::from_millis(2));
        let (_, own_busy) = open.add(Watched::activity(), Some(a), slot());
        own_busy.in_flight.store(1, Ordering::Relaxed);
        assert_eq!(open.evict(1, Some(a)), 0, "its only connection is busy: nothing to close");
        let (_, own_idle) = open.add(Watched::activity(), Some(a), slot());
        assert_eq!(open.evict(1, Some(a)), 1);
        assert!(own_idle.evict.is_cancelled() && !other.evict.is_cancelled() && !own_busy.evict.is_cancelled());
    }
}
