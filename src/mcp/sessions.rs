//! [`BoundedSessions`]: rmcp's local session manager with a cap on live sessions.
//! rmcp closes a session's worker after its idle lifetime (`SessionConfig::keep_alive`)
//! but keeps its handle in the map and has no cap; this wrapper records each session's
//! last use, forgets sessions idle past their lifetime, and over the cap closes the least
//! recently used session before creating a new one (its client gets 404 and, as the MCP
//! transport specifies, starts a new session).

use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, LocalSessionManagerError};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId, SessionManager};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A [`LocalSessionManager`] holding at most `max` sessions, each for at most `idle`
/// without a request.
#[derive(Debug)]
pub struct BoundedSessions {
    inner: LocalSessionManager,
    max: usize,
    idle: Duration,
    last_use: Mutex<HashMap<SessionId, Instant>>,
}

impl BoundedSessions {
    /// At most `max` (≥ 1) sessions, each closed after `idle` without a request.
    pub fn new(max: usize, idle: Duration) -> Self {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(idle);
        Self { inner, max: max.max(1), idle, last_use: Mutex::new(HashMap::new()) }
    }

    /// The number of sessions held (created and neither closed nor forgotten).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no session is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Instant>> {
        self.last_use.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn touch(&self, id: &SessionId) {
        if let Some(t) = self.lock().get_mut(id) {
            *t = Instant::now();
        }
    }

    /// The sessions to close before one more is created: those idle past their
    /// lifetime, then the least recently used while at the cap. Removes them from the map.
    fn to_close(&self) -> Vec<SessionId> {
        let mut map = self.lock();
        let now = Instant::now();
        let mut gone: Vec<SessionId> =
            map.iter().filter(|(_, t)| now.duration_since(**t) >= self.idle).map(|(id, _)| id.clone()).collect();
        for id in &gone {
            map.remove(id);
        }
        while map.len() >= self.max {
            let Some(oldest) = map.iter().min_by_key(|(_, t)| **t).map(|(id, _)| id.clone()) else {
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
        for id in self.to_close() {
            if let Err(e) = self.inner.close_session(&id).await {
                tracing::warn!(error = %e, "closing an MCP session over the cap failed");
            }
        }
        let (id, transport) = self.inner.create_session().await?;
        self.lock().insert(id.clone(), Instant::now());
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn creating_over_the_cap_closes_the_least_recently_used() {
        let m = BoundedSessions::new(3, Duration::from_secs(60));
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
    async fn sessions_idle_past_their_lifetime_are_forgotten() {
        let m = BoundedSessions::new(100, Duration::from_millis(50));
        for _ in 0..5 {
            let _ = m.create_session().await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(80)).await;
        let _ = m.create_session().await.unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(m.inner.sessions.read().await.len(), 1);
    }
}
