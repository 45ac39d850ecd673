//! `[limits]`: connection, MCP session and per-client request bounds (issue 9 points 1–2).

use super::{ranged, ConfigError};
use serde::Deserialize;

/// `[limits]`: connection and MCP session bounds.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileLimits {
    pub(super) header_read_timeout_secs: Option<u64>,
    pub(super) idle_timeout_secs: Option<u64>,
    pub(super) max_connections: Option<usize>,
    pub(super) mcp_session_idle_secs: Option<u64>,
    pub(super) max_mcp_sessions: Option<usize>,
}

/// `[limits]`: how long and how many connections and MCP sessions `isto serve` keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Seconds a connection has to send a complete request head, and an idle HTTP/1
    /// keep-alive connection to start the next one (default 10; 1..=300).
    pub header_read_timeout_secs: u64,
    /// Seconds without a byte read or written after which a connection is closed
    /// (default 60; 1..=3600). Streams stay open: rmcp sends an SSE keep-alive every 15 s.
    pub idle_timeout_secs: u64,
    /// Connections served at once (default 1024; 1..=65536); at the cap a new one
    /// replaces the longest-waiting connection without a request in flight, or waits
    /// for a slot when all are busy (`app::serve_http`). Size the file limit
    /// (`LimitNOFILE`) above it.
    pub max_connections: usize,
    /// Seconds an MCP session lives without a request (default 60; 5..=3600).
    pub mcp_session_idle_secs: u64,
    /// MCP sessions held per endpoint (`/mcp`, `/mcp/buyer`, `/mcp/seller`); over it the
    /// least recently used is closed (default 256; 1..=100000).
    pub max_mcp_sessions: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_read_timeout_secs: 10,
            idle_timeout_secs: 60,
            max_connections: 1024,
            mcp_session_idle_secs: 60,
            max_mcp_sessions: 256,
        }
    }
}

/// `[limits]` checked against its ranges, defaults for the keys not given.
pub(super) fn limits(f: &FileLimits) -> Result<Limits, ConfigError> {
    let d = Limits::default();
    Ok(Limits {
        header_read_timeout_secs: ranged(
            f.header_read_timeout_secs,
            d.header_read_timeout_secs,
            1..=300,
            "limits.header_read_timeout_secs",
            "1..=300",
        )?,
        idle_timeout_secs: ranged(
            f.idle_timeout_secs,
            d.idle_timeout_secs,
            1..=3600,
            "limits.idle_timeout_secs",
            "1..=3600",
        )?,
        max_connections: ranged(
            f.max_connections,
            d.max_connections,
            1..=65536,
            "limits.max_connections",
            "1..=65536",
        )?,
        mcp_session_idle_secs: ranged(
            f.mcp_session_idle_secs,
            d.mcp_session_idle_secs,
            5..=3600,
            "limits.mcp_session_idle_secs",
            "5..=3600",
        )?,
        max_mcp_sessions: ranged(
            f.max_mcp_sessions,
            d.max_mcp_sessions,
            1..=100_000,
            "limits.max_mcp_sessions",
            "1..=100000",
        )?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_checked_against_their_ranges() {
        let d = limits(&FileLimits::default()).unwrap();
        assert_eq!(d, Limits::default());
        let f = FileLimits { max_connections: Some(0), ..Default::default() };
        let e = limits(&f).unwrap_err().to_string();
        assert!(e.contains("limits.max_connections") && e.contains("1..=65536"), "{e}");
        let f = FileLimits { header_read_timeout_secs: Some(5), idle_timeout_secs: Some(120), ..Default::default() };
        let l = limits(&f).unwrap();
        assert_eq!((l.header_read_timeout_secs, l.idle_timeout_secs, l.max_connections), (5, 120, 1024));
    }
}
