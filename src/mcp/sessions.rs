//! [`BoundedSessions`]: rmcp's local session manager with a cap on live sessions, per
//! endpoint and per client address (issue 9 point 1).
//! rmcp closes a session's worker after its idle lifetime (`SessionConfig::keep_alive`)
//! but keeps its handle in the map and has no cap; this wrapper records each session's
//! last use, forgets sessions idle past their lifetime, and over the cap closes the least
//! recently used session before creating a new one (its client gets 404 and, as the MCP
//! transport specifies, starts a new session).
//!
//! The per-client cap: rmcp's `create_session` is told nothing about the request, but the
//! `initialize` message that rmcp hands to `initialize_session` right after carries the
//! request's `http::request::Parts` in its extensions, and with them the
//! [`ClientAddr`] that the app's middleware put there. There the session is tied to its
//! client's key ([`ClientAddr::key`]: IPv4, or IPv6 cut to the /64), and when that client
//! holds more than `max_per_client` sessions its own least recently used ones are closed —
//! never another client's.

use crate::net::ClientAddr;
use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, GetExtensions, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, LocalSessionManagerError};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId, SessionManager};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A [`LocalSessionManager`] holding at most `max` sessions, at most `max_per_client` of
/// them for one client address, each for at most `idle` without a request.
#[derive(Debug)]
pub struct BoundedSessions {
    inner: LocalSessionManager,
    max: usize,
    max_per_client: usize,
    idle: Duration,
    last_use: Mutex<HashMap<SessionId, Held>>,
}

/// What is known of a held session: its last use and, once initialized, its client's key.
#[derive(Debug, Clone, Copy)]
struct Held {
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
            last_use: Mutex::new(HashMap::new()),
        }
    }

    /// The number of sessions held (created and neither closed nor forgotten).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no session is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Held>> {
        self.last_use.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn touch(&self, id: &SessionId) {
        if let Some(h) = self.lock().get_mut(id) {
            h.last_use = Instant::now();
        }
    }

    /// Ties session `id` to `client` and answers that client's sessions to close so that
    /// it holds at most `max_per_client`: its least recently used ones, never `id`.
    /// Removes them from the map.
    fn bind_client(&self, id: &SessionId, client: Option<IpAddr>) -> Vec<SessionId> {
        let mut map = self.lock();
        let Some(held) = map.get_mut(id) else {
            return Vec::new();
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
        let gone: Vec<SessionId> = own.into_iter().take(excess).map(|(_, other)| other).collect();
        for other in &gone {
            map.remove(other);
        }
        gone
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
    /// lifetime, then the least recently used while at the cap. Removes them from the map.
    fn to_close(&self) -> Vec<SessionId> {
        let mut map = self.lock();
        let now = Instant::now();
        let mut gone: Vec<SessionId> =
            map.iter().filter(|(_, h)| now.duration_since(h.last_use) >= self.idle).map(|(id, _)| id.clone()).collect();
        for id in &gone {
            map.remove(id);
        }
        while map.len() >= self.max {
            let Some(oldest) = map.iter().min_by_key(|(_, h)| h.last_use).map(|(id, _)| id.clone()) else {
                break;
            };
            map.remove(&oldest);
            gone.push(oldest);
        }
        gone
    }
}

impl SessionManager for BoundedSessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let gone = self.to_close();
        self.close_all(gone, "cap").await;
        let (id, transport) = self.inner.create_session().await?;
        self.lock().insert(id.clone(), Held { last_use: Instant::now(), client: None });
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        match client_of(&message) {
            Some(client) => {
                let gone = self.bind_client(id, client.key());
                self.close_all(gone, "per-client cap").await;
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

/// The [`ClientAddr`] of the HTTP request that carried `message`: rmcp puts the request's
/// `http::request::Parts` into a request's extensions, the app's middleware the address
/// into the parts' extensions. `None` when either is missing (not over the app's router).
fn client_of(message: &ClientJsonRpcMessage) -> Option<ClientAddr> {
    let ClientJsonRpcMessage::Request(req) = message else {
        return None;
    };
    req.request.extensions().get::<http::request::Parts>().and_then(|p| p.extensions.get::<ClientAddr>()).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

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
                let gone = m.bind_client(&id, client);
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

    #[tokio::test]
    async fn sessions_idle_past_their_lifetime_are_forgotten() {
        let m = BoundedSessions::new(100, 100, Duration::from_millis(50));
        for _ in 0..5 {
            let _ = m.create_session().await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(80)).await;
        let _ = m.create_session().await.unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(m.inner.sessions.read().await.len(), 1);
    }
}
