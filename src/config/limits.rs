//! `[limits]`: connection, MCP session and per-client request bounds (issue 9 points 1–2).

use super::ConfigError;
use serde::{Deserialize, Serialize};
use std::ops::RangeInclusive;

/// `[limits]`: how long and how many connections and MCP sessions `isto serve` keeps, and
/// how many requests a client may send (issue 9 points 1–2).
///
/// A rate is a sustained rate (`*_requests_per_minute`: one more request allowed every
/// 60/n seconds) with a `*_burst` of requests allowed at once (GCRA, the generic cell rate
/// algorithm of `governor`); a client over it gets HTTP 429 with `Retry-After`.
///
/// Read from the file as it is (a key not given keeps its default), then checked by
/// [`limits`]; `check-config` shows it as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Seconds a connection has to send a complete request head, and an idle HTTP/1
    /// keep-alive connection to start the next one (default 10; 1..=300).
    pub header_read_timeout_secs: u64,
    /// Seconds without a byte read or written after which a connection is closed
    /// (default 60; 1..=3600). Streams stay open: rmcp sends an SSE keep-alive every 15 s.
    pub idle_timeout_secs: u64,
    /// Seconds a request has to send its whole body once its head is in, however the
    /// bytes are spaced (default 15; 1..=300): a body trickled a byte at a time cannot
    /// hold a connection slot for long.
    pub body_read_timeout_secs: u64,
    /// Connections served at once (default 1024; 1..=65536); at the cap a new one
    /// replaces the longest-waiting connection without a request in flight, or waits
    /// for a slot when all are busy (`app::serve_http`). Size the file limit
    /// (`LimitNOFILE`) above it: `isto serve` raises its soft open-file limit to the hard
    /// one, and serves fewer connections, with a warning, when the hard limit is lower
    /// than this plus 256 (`app::listener::nofile`).
    pub max_connections: usize,
    /// Connections one client address (IPv6: its /64; behind a trusted proxy the client
    /// `X-Forwarded-For` names) holds at once, its open streams and requests in flight
    /// included (default 32; 1..=65536); over it a new connection from it replaces one of
    /// its own without a request in flight, or is answered 429. As the slots not busy
    /// with a request run out, an address that holds some gets no more than there are
    /// such slots (`app::listener`).
    pub max_connections_per_client: usize,
    /// Seconds an event stream (`text/event-stream`: an MCP `GET` stream, a streamed
    /// reply) may go without an event — keep-alive comments do not count — before it is
    /// ended; the client reconnects when it wants more (default 300; 10..=86400; more
    /// than `elicitation_wait_secs`, during which a publish's stream waits for an answer).
    pub stream_idle_secs: u64,
    /// Seconds an MCP session lives without a request (default 60; 5..=3600).
    pub mcp_session_idle_secs: u64,
    /// MCP sessions held per endpoint (`/mcp`, `/mcp/buyer`, `/mcp/seller`); over it the
    /// least recently used is closed (default 256; 1..=100000).
    pub max_mcp_sessions: usize,
    /// MCP sessions held per client address (IPv6: per /64) on each endpoint; over it
    /// that client's own least recently used session is closed (default 32; 1..=100000).
    pub max_mcp_sessions_per_client: usize,
    /// Requests per minute per client address to `/mcp`, `/mcp/buyer`, `/mcp/seller`
    /// (default 1200, i.e. 20/s; 1..=1000000).
    pub mcp_requests_per_minute: u32,
    /// Burst of [`Self::mcp_requests_per_minute`] (default 120; 1..=100000).
    pub mcp_burst: u32,
    /// Requests per minute per credential (the account and client of a bearer token) to
    /// `/mcp/buyer` and `/mcp/seller` (default 600, i.e. 10/s; 1..=1000000).
    pub credential_requests_per_minute: u32,
    /// Burst of [`Self::credential_requests_per_minute`] (default 60; 1..=100000).
    pub credential_burst: u32,
    /// Requests per minute per client address to the pages (and every path that is not
    /// MCP, OAuth or a health check) (default 300, i.e. 5/s; 1..=1000000).
    pub page_requests_per_minute: u32,
    /// Burst of [`Self::page_requests_per_minute`] (default 60; 1..=100000).
    pub page_burst: u32,
    /// Requests per minute per client address to the OAuth endpoints (`/oauth/*`:
    /// authorize, token, register, revoke; `/.well-known/oauth-*` metadata) (default
    /// 300, i.e. 5/s; 1..=1000000).
    pub oauth_requests_per_minute: u32,
    /// Burst of [`Self::oauth_requests_per_minute`] (default 60; 1..=100000).
    pub oauth_burst: u32,
    /// Seconds after a refresh token's rotation during which presenting it again (a lost
    /// response, a parallel retry) answers the same new pair instead of revoking its
    /// authorization (PROTOCOL.md §7; default 30; 0..=300, 0: no grace, every reuse
    /// revokes).
    pub refresh_grace_secs: i64,
    /// Seconds a 2025-11-25 `/mcp` publish waits for the client's answer to its
    /// URL-mode `elicitation/create` (PROTOCOL.md §4 item 1) before it answers the
    /// ordinary result, the draft kept (default 120; 1..=600).
    pub elicitation_wait_secs: u64,
    /// Seconds a `requestState` of a 2026-07-28 `/mcp` publish stays valid after the
    /// `InputRequiredResult` that carried it (never past the draft's lapse); a retry
    /// after it is refused (MCP 2026-07-28 multi round-trip requests: a short expiry
    /// against replay; PROTOCOL.md §4 item 1) (default 300; 10..=3600).
    pub request_state_secs: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_read_timeout_secs: 10,
            idle_timeout_secs: 60,
            body_read_timeout_secs: 15,
            max_connections: 1024,
            max_connections_per_client: 32,
            stream_idle_secs: 300,
            mcp_session_idle_secs: 60,
            max_mcp_sessions: 256,
            max_mcp_sessions_per_client: 32,
            mcp_requests_per_minute: 1200,
            mcp_burst: 120,
            credential_requests_per_minute: 600,
            credential_burst: 60,
            page_requests_per_minute: 300,
            page_burst: 60,
            oauth_requests_per_minute: 300,
            oauth_burst: 60,
            refresh_grace_secs: 30,
            elicitation_wait_secs: 120,
            request_state_secs: 300,
        }
    }
}

/// `[limits]` checked against its ranges.
pub(super) fn limits(f: &Limits) -> Result<Limits, ConfigError> {
    let l = Limits {
        header_read_timeout_secs: keyed!("limits", f, header_read_timeout_secs, 1..=300)?,
        idle_timeout_secs: keyed!("limits", f, idle_timeout_secs, 1..=3600)?,
        body_read_timeout_secs: keyed!("limits", f, body_read_timeout_secs, 1..=300)?,
        max_connections: keyed!("limits", f, max_connections, 1..=65536)?,
        max_connections_per_client: keyed!("limits", f, max_connections_per_client, 1..=65536)?,
        stream_idle_secs: keyed!("limits", f, stream_idle_secs, 10..=86_400)?,
        mcp_session_idle_secs: keyed!("limits", f, mcp_session_idle_secs, 5..=3600)?,
        max_mcp_sessions: keyed!("limits", f, max_mcp_sessions, 1..=100_000)?,
        max_mcp_sessions_per_client: keyed!("limits", f, max_mcp_sessions_per_client, 1..=100_000)?,
        mcp_requests_per_minute: keyed!("limits", f, mcp_requests_per_minute, PER_MINUTE)?,
        mcp_burst: keyed!("limits", f, mcp_burst, BURST)?,
        credential_requests_per_minute: keyed!("limits", f, credential_requests_per_minute, PER_MINUTE)?,
        credential_burst: keyed!("limits", f, credential_burst, BURST)?,
        page_requests_per_minute: keyed!("limits", f, page_requests_per_minute, PER_MINUTE)?,
        page_burst: keyed!("limits", f, page_burst, BURST)?,
        oauth_requests_per_minute: keyed!("limits", f, oauth_requests_per_minute, PER_MINUTE)?,
        oauth_burst: keyed!("limits", f, oauth_burst, BURST)?,
        refresh_grace_secs: keyed!("limits", f, refresh_grace_secs, 0..=300)?,
        elicitation_wait_secs: keyed!("limits", f, elicitation_wait_secs, 1..=600)?,
        request_state_secs: keyed!("limits", f, request_state_secs, 10..=3600)?,
    };
    if l.stream_idle_secs <= l.elicitation_wait_secs {
        return Err(ConfigError::Invalid {
            key: "limits.stream_idle_secs",
            message: format!(
                "must be more than limits.elicitation_wait_secs ({}): a publish's stream waits that long for an answer",
                l.elicitation_wait_secs
            ),
        });
    }
    Ok(l)
}

impl Limits {
    /// The `check-config` warnings for connection limits that are allowed but refuse
    /// ordinary clients: an MCP client holds an event stream (`GET /mcp`) beside its
    /// POSTs, so fewer than 2 connections per client refuses its next call; a per-client
    /// cap at or above `max_connections` lets one address take every slot.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.max_connections_per_client < 2 {
            w.push(format!(
                "limits.max_connections_per_client = {}: an MCP client holding its event stream (GET /mcp) \
                 is refused its next POST; 2 is the least, 8 or more leaves room for a browser",
                self.max_connections_per_client
            ));
        }
        if self.max_connections_per_client >= self.max_connections {
            w.push(format!(
                "limits.max_connections_per_client = {} is not below limits.max_connections = {}: \
                 one address may take every connection",
                self.max_connections_per_client, self.max_connections
            ));
        }
        w
    }
}

/// The range of a `*_requests_per_minute` key.
const PER_MINUTE: RangeInclusive<u32> = 1..=1_000_000;

/// The range of a `*_burst` key.
const BURST: RangeInclusive<u32> = 1..=100_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_checked_against_their_ranges() {
        let d = limits(&Limits::default()).unwrap();
        assert_eq!(d, Limits::default());
        let f = Limits { max_connections: 0, ..Default::default() };
        let e = limits(&f).unwrap_err().to_string();
        assert!(e.contains("limits.max_connections") && e.contains("1..=65536"), "{e}");
        let f = Limits { header_read_timeout_secs: 5, idle_timeout_secs: 120, ..Default::default() };
        let l = limits(&f).unwrap();
        assert_eq!((l.header_read_timeout_secs, l.idle_timeout_secs, l.max_connections), (5, 120, 1024));
    }

    #[test]
    fn rate_limits_are_checked_against_their_ranges() {
        let f = Limits { mcp_requests_per_minute: 0, ..Default::default() };
        let e = limits(&f).unwrap_err().to_string();
        assert!(e.contains("limits.mcp_requests_per_minute") && e.contains("1..=1000000"), "{e}");
        let f = Limits { oauth_burst: 100_001, ..Default::default() };
        let e = limits(&f).unwrap_err().to_string();
        assert!(e.contains("limits.oauth_burst") && e.contains("1..=100000"), "{e}");
        let f = Limits { max_mcp_sessions_per_client: 0, ..Default::default() };
        let e = limits(&f).unwrap_err().to_string();
        assert!(e.contains("limits.max_mcp_sessions_per_client"), "{e}");
        let f = Limits { max_connections_per_client: 0, ..Default::default() };
        let e = limits(&f).unwrap_err().to_string();
        assert!(e.contains("limits.max_connections_per_client") && e.contains("1..=65536"), "{e}");
        let f = Limits { page_requests_per_minute: 60, credential_burst: 5, ..Default::default() };
        let l = limits(&f).unwrap();
        assert_eq!((l.page_requests_per_minute, l.page_burst, l.credential_burst), (60, 60, 5));
        assert_eq!((l.mcp_requests_per_minute, l.max_mcp_sessions_per_client), (1200, 32));
    }

    #[test]
    fn the_request_state_lifetime_is_a_few_minutes_at_most_an_hour() {
        assert_eq!(limits(&Limits::default()).unwrap().request_state_secs, 300);
        for bad in [0, 9, 3601] {
            let f = Limits { request_state_secs: bad, ..Default::default() };
            let e = limits(&f).unwrap_err().to_string();
            assert!(e.contains("limits.request_state_secs") && e.contains("10..=3600"), "{bad}: {e}");
        }
        let f = Limits { request_state_secs: 60, ..Default::default() };
        assert_eq!(limits(&f).unwrap().request_state_secs, 60);
    }

    #[test]
    fn per_client_caps_that_refuse_ordinary_clients_are_warned_about() {
        assert!(Limits::default().warnings().is_empty());
        let one = Limits { max_connections_per_client: 1, ..Limits::default() };
        assert!(one.warnings()[0].contains("max_connections_per_client = 1"), "{:?}", one.warnings());
        let all = Limits { max_connections_per_client: 2000, max_connections: 1024, ..Limits::default() };
        assert!(all.warnings()[0].contains("not below limits.max_connections = 1024"), "{:?}", all.warnings());
    }

    #[test]
    fn the_stream_idle_time_is_checked_against_its_range_and_the_elicitation_wait() {
        let l = limits(&Limits::default()).unwrap();
        assert_eq!((l.stream_idle_secs, l.max_connections_per_client), (300, 32));
        let f = Limits { stream_idle_secs: 5, ..Default::default() };
        let e = limits(&f).unwrap_err().to_string();
        assert!(e.contains("limits.stream_idle_secs") && e.contains("10..=86400"), "{e}");
        let f = Limits { stream_idle_secs: 120, ..Default::default() };
        let e = limits(&f).unwrap_err().to_string();
        assert!(e.contains("limits.stream_idle_secs") && e.contains("elicitation_wait_secs (120)"), "{e}");
        let f = Limits { stream_idle_secs: 60, elicitation_wait_secs: 30, ..Default::default() };
        assert_eq!(limits(&f).unwrap().stream_idle_secs, 60);
    }
}
