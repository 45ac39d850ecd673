//! `[limits]`: connection, MCP session and per-client request bounds.

use super::ConfigError;
use std::ops::RangeInclusive;

numeric_section! {
    /// `[limits]`: how long and how many connections and MCP sessions `isto serve` keeps, and
    /// how many requests a client may send, checked by [`limits`].
    ///
    /// A rate is a sustained rate (`*_requests_per_minute`: one more request allowed every
    /// 60/n seconds) with a `*_burst` of requests allowed at once (GCRA, the generic cell rate
    /// algorithm of `governor`); a client over it gets HTTP 429 with `Retry-After`.
    pub struct Limits in "limits" {
        /// Seconds a connection has to send a complete request head, and an idle HTTP/1
        /// keep-alive connection to start the next one (default 10; 1..=300).
        header_read_timeout_secs: u64 = 10, 1..=300;
        /// Seconds without a byte read or written after which a connection is closed
        /// (default 60; 1..=3600). Streams stay open: rmcp sends an SSE keep-alive every 15 s.
        idle_timeout_secs: u64 = 60, 1..=3600;
        /// Seconds a request has to send its whole body once its head is in, however the
        /// bytes are spaced (default 15; 1..=300): a body trickled a byte at a time cannot
        /// hold a connection slot for long.
        body_read_timeout_secs: u64 = 15, 1..=300;
        /// Connections served at once (default 1024; 1..=65536); at the cap a new one
        /// replaces the longest-waiting connection without a request in flight, or waits
        /// for a slot. Fewer are served, with a warning, when the hard open-file limit is
        /// lower than this plus 256 (`app::listener::nofile`).
        max_connections: usize = 1024, 1..=65536;
        /// Connections one client address (IPv6: its /64) holds at once, streams and
        /// requests in flight included (default 32; 1..=65536); over it a new connection
        /// replaces one of its own without a request in flight, or is answered 429
        /// (`app::listener`).
        max_connections_per_client: usize = 32, 1..=65536;
        /// Seconds an event stream may go without an event (keep-alive comments do not
        /// count) before it is ended (default 300; 10..=86400; more than
        /// `elicitation_wait_secs`, during which a publish's stream waits for an answer).
        stream_idle_secs: u64 = 300, 10..=86_400;
        /// Seconds an MCP session lives without a request (default 60; 5..=3600).
        mcp_session_idle_secs: u64 = 60, 5..=3600;
        /// MCP sessions held per endpoint; over it the least recently used is closed
        /// (default 256; 1..=100000).
        max_mcp_sessions: usize = 256, 1..=100_000;
        /// MCP sessions held per client address (IPv6: per /64) on each endpoint; over it
        /// that client's own least recently used session is closed (default 32; 1..=100000).
        max_mcp_sessions_per_client: usize = 32, 1..=100_000;
        /// Requests per minute per client address to `/mcp`, `/mcp/buyer`, `/mcp/seller`
        /// (default 1200, i.e. 20/s; 1..=1000000).
        mcp_requests_per_minute: u32 = 1200, PER_MINUTE;
        /// Burst of [`Self::mcp_requests_per_minute`] (default 120; 1..=100000).
        mcp_burst: u32 = 120, BURST;
        /// Requests per minute per credential (the account and client of a bearer token) to
        /// `/mcp/buyer` and `/mcp/seller` (default 600, i.e. 10/s; 1..=1000000).
        credential_requests_per_minute: u32 = 600, PER_MINUTE;
        /// Burst of [`Self::credential_requests_per_minute`] (default 60; 1..=100000).
        credential_burst: u32 = 60, BURST;
        /// Requests per minute per client address to the pages and every other path but
        /// MCP, OAuth and health checks (default 300, i.e. 5/s; 1..=1000000).
        page_requests_per_minute: u32 = 300, PER_MINUTE;
        /// Burst of [`Self::page_requests_per_minute`] (default 60; 1..=100000).
        page_burst: u32 = 60, BURST;
        /// Requests per minute per client address to `/oauth/*` and `/.well-known/oauth-*`
        /// (default 300, i.e. 5/s; 1..=1000000).
        oauth_requests_per_minute: u32 = 300, PER_MINUTE;
        /// Burst of [`Self::oauth_requests_per_minute`] (default 60; 1..=100000).
        oauth_burst: u32 = 60, BURST;
        /// Seconds after a refresh token's rotation during which presenting it again (a lost
        /// response) answers the same new pair instead of revoking its authorization
        /// (PROTOCOL.md §7; default 30; 0..=300, 0: every reuse revokes).
        refresh_grace_secs: i64 = 30, 0..=300;
        /// Seconds a 2025-11-25 `/mcp` publish waits for the answer to its URL-mode
        /// `elicitation/create` (PROTOCOL.md §4 item 1; default 120; 1..=600).
        elicitation_wait_secs: u64 = 120, 1..=600;
        /// Seconds a `requestState` of a 2026-07-28 `/mcp` publish stays valid after the
        /// `InputRequiredResult` that carried it (never past the draft's lapse): a short
        /// expiry against replay (PROTOCOL.md §4 item 1; default 300; 10..=3600).
        request_state_secs: u64 = 300, 10..=3600;
    }
}

/// `[limits]` checked against its ranges ([`Limits::checked`]) and the stream idle time
/// against the elicitation wait.
pub(super) fn limits(f: &Limits) -> Result<Limits, ConfigError> {
    let l = f.checked()?;
    if l.stream_idle_secs <= l.elicitation_wait_secs {
        return Err(ConfigError::invalid(
            "limits.stream_idle_secs",
            format!(
                "must be more than limits.elicitation_wait_secs ({}): a publish's stream waits that long for an answer",
                l.elicitation_wait_secs
            ),
        ));
    }
    Ok(l)
}

impl Limits {
    /// The `check-config` warnings for connection limits that are allowed but refuse
    /// ordinary clients.
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
