//! Issue 9 points 1–2 through the production router: rate limits per client address
//! (429 with `Retry-After`, `/healthz` never limited) and the per-client cap on MCP
//! sessions. A client address is given to the router as `isto serve` does, through
//! `ConnectInfo` on each request (one router value per simulated client).

use crate::kit::{unlimited, Fx, Opts};
use axum::extract::ConnectInfo;
use axum::http::{header, StatusCode};
use axum::Router;
use isto::config::Limits;
use serde_json::json;

/// The kit's router as seen from client `peer` (`ip:port`).
fn from(f: &Fx, peer: &str) -> Router {
    f.app.clone().layer(axum::Extension(ConnectInfo(peer.parse::<std::net::SocketAddr>().unwrap())))
}

/// An MCP `initialize` on `/mcp` through `app`: the status and the session id.
fn initialize(f: &Fx, app: &Router) -> (StatusCode, Option<String>) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (status, sid, _) = f.rpc(app, "/mcp", None, &[], body);
    (status, sid)
}

/// `tools/list` in session `sid` through `app`: the status.
fn tools_list(f: &Fx, app: &Router, sid: &str) -> StatusCode {
    f.rpc(app, "/mcp", Some(sid), &[], json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).0
}

fn get(f: &Fx, app: &Router, path: &str) -> crate::kit::Resp {
    crate::kit::send(&f.rt, app, axum::http::Request::get(path).body(axum::body::Body::empty()).unwrap())
}

#[test]
fn a_client_over_its_session_cap_loses_its_own_oldest_session() {
    let limits = Limits { max_mcp_sessions_per_client: 2, ..unlimited() };
    let f = Fx::with(Opts { limits: Some(limits), ..Opts::default() });
    let (a, b) = (from(&f, "192.0.2.1:4000"), from(&f, "192.0.2.2:4000"));
    let open = |app: &Router| {
        let (status, sid) = initialize(&f, app);
        assert_eq!(status, StatusCode::OK);
        sid.expect("a session id")
    };
    let b1 = open(&b);
    let a1 = open(&a);
    let a2 = open(&a);
    assert_eq!(tools_list(&f, &a, &a1), StatusCode::OK, "a1 is now the more recently used");
    let a3 = open(&a);
    assert_eq!(tools_list(&f, &a, &a2), StatusCode::NOT_FOUND, "a's least recently used is closed");
    assert_eq!(tools_list(&f, &a, &a1), StatusCode::OK);
    assert_eq!(tools_list(&f, &a, &a3), StatusCode::OK);
    // A flood of sessions from a never closes b's.
    let mut flood = Vec::new();
    for _ in 0..20 {
        flood.push(open(&a));
    }
    assert_eq!(tools_list(&f, &b, &b1), StatusCode::OK, "another client's session is never closed");
    let live = flood.iter().filter(|s| tools_list(&f, &a, s) == StatusCode::OK).count();
    assert!(live <= 2, "{live} of a's sessions live over a cap of 2");
    // The same /64 is one client: a session from its neighbour counts against it.
    let (v6a, v6b) = (from(&f, "[2001:db8:1:2::1]:1"), from(&f, "[2001:db8:1:2::2]:1"));
    let first = open(&v6a);
    open(&v6b);
    open(&v6b);
    assert_eq!(tools_list(&f, &v6a, &first), StatusCode::NOT_FOUND);
}

#[test]
fn over_its_rate_a_client_gets_429_with_retry_after_and_others_are_served() {
    // One request a minute after a burst of 3: no refill during the test.
    let limits =
        Limits { page_requests_per_minute: 1, page_burst: 3, mcp_requests_per_minute: 1, mcp_burst: 2, ..unlimited() };
    let f = Fx::with(Opts { limits: Some(limits), ..Opts::default() });
    let a = from(&f, "192.0.2.1:4000");
    for _ in 0..3 {
        assert_eq!(get(&f, &a, "/").status, StatusCode::OK);
    }
    let r = get(&f, &a, "/");
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "{}", r.body);
    let after: u64 = r.headers[header::RETRY_AFTER].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&after), "Retry-After: {after}");
    assert!(r.body.contains(&format!("wait {after} s")), "{}", r.body);
    assert!(r.headers.get("x-request-id").is_some(), "a 429 is traced like any answer");
    // Every page path shares the bucket; /healthz never counts.
    assert_eq!(get(&f, &a, "/assets/style.css").status, StatusCode::TOO_MANY_REQUESTS);
    for _ in 0..20 {
        assert_eq!(get(&f, &a, "/healthz").status, StatusCode::OK);
    }
    // Another address; and the same address on the MCP endpoint (its own bucket).
    assert_eq!(get(&f, &from(&f, "192.0.2.2:4000"), "/").status, StatusCode::OK);
    assert_eq!(initialize(&f, &a).0, StatusCode::OK);
    assert_eq!(initialize(&f, &a).0, StatusCode::OK);
    let (status, sid) = initialize(&f, &a);
    assert_eq!((status, sid), (StatusCode::TOO_MANY_REQUESTS, None), "a 429 creates no session");
}
