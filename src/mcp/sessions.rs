//! [`BoundedSessions`]: rmcp's local session manager with a cap on live sessions, per
//! endpoint and per client address. rmcp closes a session's worker after its idle
//! lifetime (`SessionConfig::keep_alive`) but keeps its handle and has no cap; this
//! wrapper records each session's last use, forgets sessions idle past their lifetime,
//! and at the cap closes one session before creating a new one (its client gets 404 and,
//! as the MCP transport specifies, starts a new session): see [`BoundedSessions::victim`]
//! — a flood from a few addresses closes its own sessions, not everyone else's, and
//! never a session younger than [`YOUNG`] of another client. When none may be closed,
//! the new session is held one over the cap until its `initialize` names its client
//! ([`BoundedSessions::bind_client`]), else refused: [`refusal_answer`] answers that
//! `initialize` with HTTP 503 and `Retry-After` (rmcp alone would answer 500).
//!
//! The per-client cap: rmcp's `create_session` is told nothing about the request, but the
//! `initialize` message handed to `initialize_session` right after carries the request's
//! `http::request::Parts`, and with them the [`ClientAddr`] the app's middleware put
//! there: the session is tied to [`ClientAddr::key`] (IPv4, or IPv6 cut to the /64), and
//! that client's own least recently used sessions over `max_per_client` are closed.

use crate::net::ClientAddr;
use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, GetExtensions, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, LocalSessionManagerError};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId, SessionManager};
use serde_json::Value;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Age under which a session is never closed to make room for another client's: long
/// enough for a client's handshake (`initialize`, `notifications/initialized`, a first
/// call), so that a flood of new sessions cannot close each new one before it is used.
pub const YOUNG: Duration = Duration::from_secs(10);

/// A [`LocalSessionManager`] holding at most `max` sessions, at most `max_per_client` of
/// them for one client address, each for at most `idle` without a request.
#[derive(Debug)]
pub struct BoundedSessions {
    inner: LocalSessionManager,
    max: usize,
    max_per_client: usize,
    idle: Duration,
    /// Age under which the cap never closes a session ([`YOUNG`], at most `idle`).
    young: Duration,
    last_use: Mutex<HashMap<SessionId, Held>>,
}

/// What is known of a held session: its last use and, once initialized, its client's key.
#[derive(Debug, Clone, Copy)]
struct Held {
    created: Instant,
    last_use: Instant,
    /// `None` before `initialize_session` and when the request had no [`ClientAddr`];
    /// `Some(None)` for a request without a peer address (one shared key, as
    /// [`ClientAddr`] says).
    client: Option<Option<IpAddr>>,
}

impl BoundedSessions {
    /// At most `max` (≥ 1) sessions, at most `max_per_client` (≥ 1) of them for one
    /// client address, each closed after `idle` without a request.
    pub fn new(max: usize, max_per_client: usize, idle: Duration) -> Self {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(idle);
        Self {
            inner,
            max: max.max(1),
            max_per_client: max_per_client.max(1),
            idle,
            young: YOUNG.min(idle),
            last_use: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Held>> {
        self.last_use.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn touch(&self, id: &SessionId) {
        if let Some(h) = self.lock().get_mut(id) {
            h.last_use = Instant::now();
        }
    }

    /// Ties session `id` to `client` and answers the sessions to close: that client's
    /// least recently used ones so that it holds at most `max_per_client`, never `id`;
    /// then, while over the cap, its own least recently used one, else [`Self::victim`],
    /// else `id` itself — the new session is refused then, and the second value is how
    /// long until the first of the sessions held stops being young ([`Self::wait`]); the
    /// same when `id` was closed at the cap before this call. Removes them from the map.
    fn bind_client(&self, id: &SessionId, client: Option<IpAddr>) -> (Vec<SessionId>, Option<Duration>) {
        let mut map = self.lock();
        let Some(held) = map.get_mut(id) else {
            // Closed at the cap before its client was known (another new session took
            // its place): refused as well.
            return (Vec::new(), Some(self.wait(&map, Instant::now())));
        };
        held.client = Some(client);
        held.last_use = Instant::now();
        let mut own: Vec<(Instant, SessionId)> = map
            .iter()
            .filter(|(other, h)| *other != id && h.client == Some(client))
            .map(|(other, h)| (h.last_use, other.clone()))
            .collect();
        // `id` counts as one: the others may keep `max_per_client - 1`.
        let excess = (own.len() + 1).saturating_sub(self.max_per_client);
        own.sort_unstable_by_key(|(t, _)| *t);
        let mut gone: Vec<SessionId> = own.iter().take(excess).map(|(_, other)| other.clone()).collect();
        for other in &gone {
            map.remove(other);
        }
        let mut own = own.into_iter().skip(excess).map(|(_, other)| other);
        while map.len() > self.max {
            let now = Instant::now();
            let Some(next) = own.next().or_else(|| self.victim(&map, now)) else {
                map.remove(id);
                gone.push(id.clone());
                return (gone, Some(self.wait(&map, now)));
            };
            map.remove(&next);
            gone.push(next);
        }
        (gone, None)
    }

    /// How long until the first session of `map` stops being young at `now` (zero when
    /// one is not young; [`Self::young`] when there is none).
    fn wait(&self, map: &HashMap<SessionId, Held>, now: Instant) -> Duration {
        let wait = map.values().map(|h| self.young.saturating_sub(now.duration_since(h.created))).min();
        wait.unwrap_or(self.young)
    }

    /// The same with another age under which sessions are spared (tests).
    #[cfg(test)]
    fn with_young(mut self, young: Duration) -> Self {
        self.young = young;
        self
    }

    /// The number of sessions held for `client` (tests).
    #[cfg(test)]
    fn held_by(&self, client: Option<IpAddr>) -> usize {
        self.lock().values().filter(|h| h.client == Some(client)).count()
    }

    /// Closes `ids` in rmcp (their workers stop; their clients get 404).
    async fn close_all(&self, ids: Vec<SessionId>, why: &str) {
        for id in ids {
            if let Err(e) = self.inner.close_session(&id).await {
                tracing::warn!(error = %e, "closing an MCP session over the {why} failed");
            }
        }
    }

    /// The sessions to close before one more is created: those idle past their
    /// lifetime, then while at the cap a [`Self::victim`], if there is one (else the new
    /// session waits one over the cap for [`Self::bind_client`]). Removes them from the
    /// map.
    fn to_close(&self) -> Vec<SessionId> {
        let mut map = self.lock();
        let now = Instant::now();
        let mut gone: Vec<SessionId> =
            map.iter().filter(|(_, h)| now.duration_since(h.last_use) >= self.idle).map(|(id, _)| id.clone()).collect();
        for id in &gone {
            map.remove(id);
        }
        while map.len() >= self.max {
            let Some(victim) = self.victim(&map, now) else { break };
            map.remove(&victim);
            gone.push(victim);
        }
        gone
    }

    /// The session to close at the cap: the least recently used of
    /// those not tied to a client; else, of the client key holding the most sessions
    /// (ties: the key whose candidate was used least recently), its least recently used
    /// session that is not young; a key with only young ones is passed over.
    fn victim(&self, map: &HashMap<SessionId, Held>, now: Instant) -> Option<SessionId> {
        if let Some((id, _)) = map.iter().filter(|(_, h)| h.client.is_none()).min_by_key(|(_, h)| h.last_use) {
            return Some(id.clone());
        }
        // Per client key: how many sessions it holds, and its least recently used old one.
        type Candidate<'m> = (usize, Option<(Instant, &'m SessionId)>);
        let mut keys: HashMap<Option<IpAddr>, Candidate<'_>> = HashMap::new();
        for (id, h) in map {
            let Some(client) = h.client else { continue };
            let e = keys.entry(client).or_insert((0, None));
            e.0 += 1;
            if now.duration_since(h.created) >= self.young && e.1.is_none_or(|(t, _)| h.last_use < t) {
                e.1 = Some((h.last_use, id));
            }
        }
        keys.into_values()
            .filter_map(|(n, old)| old.map(|(t, id)| (n, t, id)))
            .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))
            .map(|(_, _, id)| id.clone())
    }
}

impl SessionManager for BoundedSessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let gone = self.to_close();
        self.close_all(gone, "cap").await;
        let (id, transport) = self.inner.create_session().await?;
        let now = Instant::now();
        self.lock().insert(id.clone(), Held { created: now, last_use: now, client: None });
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let parts = parts_of(&message);
        match parts.and_then(|p| p.extensions.get::<ClientAddr>()).copied() {
            Some(client) => {
                let (gone, refused) = self.bind_client(id, client.key());
                self.close_all(gone, "per-client cap").await;
                if let Some(wait) = refused {
                    tracing::warn!("MCP session refused: at the cap and every other client's session is young");
                    if let (Some(slot), ClientJsonRpcMessage::Request(req)) =
                        (parts.and_then(|p| p.extensions.get::<Refused>()), &message)
                    {
                        slot.set(&req.id, wait);
                    }
                    let e = std::io::Error::other(REFUSED);
                    return Err(rmcp::transport::streamable_http_server::session::local::SessionError::Io(e).into());
                }
            }
            None => self.touch(id),
        }
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.lock().contains_key(id) && self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.lock().remove(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.touch(id);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.resume(id, last_event_id).await
    }
}

/// The `http::request::Parts` of the HTTP request that carried `message` (rmcp puts them
/// into a request's extensions), with what the app's middleware put into their
/// extensions ([`ClientAddr`], [`Refused`]). `None` for a notification or a response.
fn parts_of(message: &ClientJsonRpcMessage) -> Option<&http::request::Parts> {
    let ClientJsonRpcMessage::Request(req) = message else {
        return None;
    };
    req.request.extensions().get::<http::request::Parts>()
}

/// The reason a new session is refused at the cap (the JSON-RPC error's message).
const REFUSED: &str =
    "MCP session cap reached (limits.max_mcp_sessions) and no other client's session may be closed yet; retry later";

/// JSON-RPC error code of [`refusal_answer`]'s answer: the implementation-defined server
/// error range (JSON-RPC 2.0 §5.1, -32000 to -32099).
const REFUSED_CODE: i64 = -32000;

/// The slot where [`BoundedSessions::initialize_session`] tells [`refusal_answer`] that
/// it refused the session of the request's `initialize`: that request's JSON-RPC id and
/// how long until a session may be made (put into the request's extensions by
/// [`refusal_answer`]; rmcp hands them on with the request's parts).
#[derive(Debug, Clone, Default)]
pub struct Refused(Arc<OnceLock<(Value, Duration)>>);

impl Refused {
    fn set(&self, id: &rmcp::model::RequestId, wait: Duration) {
        let id = serde_json::to_value(id).unwrap_or(Value::Null);
        let _ = self.0.set((id, wait));
    }
}

/// The slot of a request that may create a session — a POST without `Mcp-Session-Id` —
/// put into its extensions for [`BoundedSessions::initialize_session`]; None for every
/// other request. [`refusal_answer`] reads it when the answer is back.
pub(crate) fn refusal_slot(req: &mut Request) -> Option<Refused> {
    if req.method() != Method::POST || req.headers().contains_key("mcp-session-id") {
        return None;
    }
    let slot = Refused::default();
    req.extensions_mut().insert(slot.clone());
    Some(slot)
}

/// The answer to a request whose session was refused at the cap ([`BoundedSessions`]):
/// HTTP 503 and `Retry-After` (RFC 9110 §15.6.4, §10.2.3: whole seconds until the first
/// session held stops being young, at least 1), and a JSON-RPC error (code -32000,
/// [`REFUSED`], `data.retryAfterSeconds`) for the `initialize`'s id, where rmcp would
/// answer 500: a refusal because of load is no server fault. Any other answer (no
/// [`refusal_slot`], or one left empty) is `res` unchanged.
pub(crate) fn refusal_answer(res: Response, slot: Option<&Refused>) -> Response {
    let Some((id, wait)) = slot.and_then(|s| s.0.get()) else { return res };
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let secs = secs.max(1);
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id,
        "error": {"code": REFUSED_CODE, "message": REFUSED, "data": {"retryAfterSeconds": secs}}});
    let mut res = (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response();
    res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    impl BoundedSessions {
        /// The number of sessions held (created and neither closed nor forgotten).
        fn len(&self) -> usize {
            self.lock().len()
        }
    }

    #[tokio::test]
    async fn creating_over_the_cap_closes_the_least_recently_used() {
        let m = BoundedSessions::new(3, 3, Duration::from_secs(60));
        let mut ids = Vec::new();
        for _ in 0..10 {
            let (id, _transport) = m.create_session().await.unwrap();
            ids.push(id);
            assert!(m.len() <= 3);
            assert!(m.inner.sessions.read().await.len() <= 3, "rmcp's map is bounded too");
        }
        assert_eq!(m.len(), 3);
        assert!(!m.has_session(&ids[0]).await.unwrap());
        assert!(m.has_session(&ids[9]).await.unwrap());
        m.close_session(&ids[9]).await.unwrap();
        assert_eq!(m.len(), 2);
    }

    #[tokio::test]
    async fn a_client_over_its_cap_loses_its_own_oldest_session_only() {
        let m = BoundedSessions::new(100, 2, Duration::from_secs(60));
        let (a, b) = (Some("192.0.2.1".parse().unwrap()), Some("192.0.2.2".parse().unwrap()));
        let open = |client| {
            let m = &m;
            async move {
                let (id, _transport) = m.create_session().await.unwrap();
                let (gone, _) = m.bind_client(&id, client);
                let closed = gone.clone();
                m.close_all(gone, "per-client cap").await;
                (id, closed)
            }
        };
        let (b1, _) = open(b).await;
        let (a1, none) = open(a).await;
        assert!(none.is_empty());
        let (a2, none) = open(a).await;
        assert!(none.is_empty());
        m.touch(&a1); // a1 is now more recently used than a2
        let (a3, closed) = open(a).await;
        assert_eq!(closed, vec![a2.clone()], "the client's own least recently used");
        assert!(!m.has_session(&a2).await.unwrap());
        for id in [&a1, &a3, &b1] {
            assert!(m.has_session(id).await.unwrap());
        }
        assert_eq!((m.held_by(a), m.held_by(b)), (2, 1));
        // Many more from a: b keeps its session, a never holds more than 2.
        for _ in 0..20 {
            open(a).await;
            assert_eq!(m.held_by(a), 2);
        }
        assert!(m.has_session(&b1).await.unwrap());
        assert_eq!(m.len(), 3);
        assert!(m.inner.sessions.read().await.len() <= 3, "rmcp's map is bounded too");
    }

    /// Opens a session for `client` as a request would (create, then initialize's
    /// binding, closing what it asks); `None` when refused.
    async fn open_for(m: &BoundedSessions, client: Option<IpAddr>) -> Option<SessionId> {
        let (id, _transport) = m.create_session().await.unwrap();
        let (gone, refused) = m.bind_client(&id, client);
        m.close_all(gone, "per-client cap").await;
        refused.is_none().then_some(id)
    }

    #[tokio::test]
    async fn a_flood_from_nine_addresses_closes_its_own_sessions_not_another_clients() {
        let m = BoundedSessions::new(64, 32, Duration::from_secs(600)).with_young(Duration::from_millis(20));
        let other = Some("203.0.113.5".parse().unwrap());
        let kept = open_for(&m, other).await.unwrap();
        tokio::time::sleep(Duration::from_millis(40)).await; // the time under test: no longer young
        let (mut opened, mut refused) = (0, 0);
        for a in 0..9u8 {
            let flood = Some(IpAddr::from([198, 51, 100, a]));
            for _ in 0..32 {
                match open_for(&m, flood).await {
                    Some(_) => opened += 1,
                    None => refused += 1,
                }
                assert!(m.len() <= 64);
            }
            // Let this address's sessions age, so that the next ones find old sessions.
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        assert!(opened >= 64, "the flood got its sessions ({opened} opened, {refused} refused)");
        assert!(m.has_session(&kept).await.unwrap(), "the other client's session survived the flood");
        assert_eq!(m.held_by(other), 1);
        assert!(m.inner.sessions.read().await.len() <= 64, "rmcp's map is bounded too");
    }

    #[tokio::test]
    async fn a_young_session_is_never_closed_for_another_client() {
        let m = BoundedSessions::new(3, 3, Duration::from_secs(600)).with_young(Duration::from_millis(200));
        let ip = |n: u8| Some(IpAddr::from([192, 0, 2, n]));
        let old1 = open_for(&m, ip(1)).await.unwrap();
        let old2 = open_for(&m, ip(2)).await.unwrap();
        // The time under test: both age past `young` (200 ms).
        tokio::time::sleep(Duration::from_millis(250)).await;
        m.touch(&old1); // old2 is the least recently used
        let young = open_for(&m, ip(3)).await.unwrap();
        // At the cap: one key each; the old ones may go, least recently used first.
        let new = open_for(&m, ip(4)).await.unwrap();
        assert!(!m.has_session(&old2).await.unwrap());
        assert!(m.has_session(&young).await.unwrap() && m.has_session(&old1).await.unwrap());
        let newer = open_for(&m, ip(5)).await.unwrap();
        assert!(!m.has_session(&old1).await.unwrap());
        // Now every session is young: the next one is refused, none is closed.
        assert!(open_for(&m, ip(6)).await.is_none());
        for id in [&young, &new, &newer] {
            assert!(m.has_session(id).await.unwrap());
        }
        assert_eq!(m.len(), 3);
        assert!(m.inner.sessions.read().await.len() <= 3, "rmcp's map is bounded too");
        // A client over the cap closes its own young session rather than be refused.
        let again = open_for(&m, ip(5)).await.unwrap();
        assert!(!m.has_session(&newer).await.unwrap() && m.has_session(&again).await.unwrap());
        assert!(m.has_session(&young).await.unwrap() && m.has_session(&new).await.unwrap());
    }

    #[tokio::test]
    async fn a_new_session_closed_before_its_initialize_is_refused_not_lost() {
        let m = BoundedSessions::new(1, 1, Duration::from_secs(600));
        let (first, _t1) = m.create_session().await.unwrap();
        // A second creation closes the first, not yet tied to a client.
        let (second, _t2) = m.create_session().await.unwrap();
        assert!(!m.has_session(&first).await.unwrap());
        let (gone, refused) = m.bind_client(&first, Some(IpAddr::from([192, 0, 2, 1])));
        assert!(gone.is_empty());
        let wait = refused.expect("the closed session's initialize is refused");
        assert!(wait > Duration::ZERO && wait <= YOUNG, "{wait:?}");
        assert_eq!(m.bind_client(&second, Some(IpAddr::from([192, 0, 2, 2]))), (Vec::new(), None));
    }

    #[tokio::test]
    async fn sessions_idle_past_their_lifetime_are_forgotten() {
        let m = BoundedSessions::new(100, 100, Duration::from_millis(50));
        for _ in 0..5 {
            let _ = m.create_session().await.unwrap();
        }
        // The time under test: past their lifetime (50 ms).
        tokio::time::sleep(Duration::from_millis(80)).await;
        let _ = m.create_session().await.unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(m.inner.sessions.read().await.len(), 1);
    }
}
