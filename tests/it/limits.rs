//! Connection limits of `app::serve_http` on a real socket (127.0.0.1:0): a connection
//! that never finishes its request head is closed after the header timeout, held
//! half-open connections do not keep a normal request from being answered, and at the
//! connection cap the longest-waiting connection without a request in flight makes room
//! (loopback is a trusted proxy, as by default: the connection limits per address of
//! `conn_limits.rs` hold each request, not each connection).

use axum::routing::get;
use axum::Router;
use isto::app::serve_http;
use isto::config::Limits;
use isto::net::TrustedProxies;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use crate::kit::net::{until_accepted, Started};

async fn start(limits: Limits) -> (SocketAddr, CancellationToken, tokio::task::JoinHandle<()>) {
    let (addr, stop, task, _) = start_counting(limits).await;
    (addr, stop, task)
}

/// [`start`], with the requests that reached the router counted.
async fn start_counting(limits: Limits) -> (SocketAddr, CancellationToken, tokio::task::JoinHandle<()>, Started) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .route("/echo", axum::routing::post(|body: axum::body::Bytes| async move { format!("{} bytes", body.len()) }))
        .route(
            "/slow",
            get(|| async {
                // The slow handler under test: busy for 800 ms.
                tokio::time::sleep(Duration::from_millis(800)).await;
                "slow"
            }),
        );
    let started = Started::default();
    let task = tokio::spawn(serve_http(listener, started.layer(app), limits, TrustedProxies::loopback(), stop.clone()));
    (addr, stop, task, started)
}

/// Reads until the peer closes (Ok(bytes)) or `within` passes (Err).
async fn read_to_close(tcp: &mut TcpStream, within: Duration) -> Result<Vec<u8>, ()> {
    let mut out = Vec::new();
    tokio::time::timeout(within, async {
        let mut buf = [0u8; 1024];
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .map_err(|_| ())?;
    Ok(out)
}

async fn get_root(addr: SocketAddr) -> String {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
    let body = read_to_close(&mut tcp, Duration::from_secs(5)).await.expect("answered within 5 s");
    String::from_utf8_lossy(&body).into_owned()
}

fn limits(header: u64, idle: u64, max: usize) -> Limits {
    Limits { header_read_timeout_secs: header, idle_timeout_secs: idle, max_connections: max, ..Limits::default() }
}

#[tokio::test]
async fn half_a_request_line_is_closed_after_the_header_timeout() {
    let (addr, stop, task) = start(limits(1, 30, 16)).await;
    let mut half = TcpStream::connect(addr).await.unwrap();
    half.write_all(b"GET /ind").await.unwrap();
    let t = Instant::now();
    read_to_close(&mut half, Duration::from_secs(5)).await.expect("closed within 5 s");
    assert!(t.elapsed() >= Duration::from_millis(900), "closed too early: {:?}", t.elapsed());
    // A connection that sends nothing at all is closed too.
    let mut silent = TcpStream::connect(addr).await.unwrap();
    read_to_close(&mut silent, Duration::from_secs(5)).await.expect("silent connection closed within 5 s");
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap();
}

#[tokio::test]
async fn a_trickled_request_body_is_cut_off_after_the_body_timeout() {
    let (addr, stop, task) = start(Limits { body_read_timeout_secs: 1, ..limits(10, 30, 16) }).await;
    let slow = TcpStream::connect(addr).await.unwrap();
    let (mut rx, mut tx) = slow.into_split();
    tx.write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n").await.unwrap();
    let t = Instant::now();
    // One byte every 200 ms, all along: each byte comes well within the body timeout
    // (1 s) of the one before, but the whole body never does.
    let trickle = tokio::spawn(async move {
        for _ in 0..25 {
            if tx.write_all(b"a").await.is_err() {
                break;
            }
            // The trickle under test: one byte every 200 ms.
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    let mut answer = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(4), rx.read_to_end(&mut answer)).await;
    let took = t.elapsed();
    trickle.abort();
    assert!(closed.is_ok(), "a body trickled for {took:?} was not cut off");
    let answer = String::from_utf8_lossy(&answer).into_owned();
    assert!(took >= Duration::from_millis(900), "cut off too early: {took:?}");
    assert!(took < Duration::from_millis(2500), "cut off after {took:?}, not 1 s after the head");
    assert!(!answer.contains("1000 bytes"), "{answer}");
    // Answered 408 whatever the handler made of its read error (not a 400, 413 or 500
    // that would feed the operator's 5xx alerts).
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("did not arrive in time"), "{answer}");
    // A body sent at once is served.
    let mut quick = TcpStream::connect(addr).await.unwrap();
    quick
        .write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 3\r\n\r\nabc")
        .await
        .unwrap();
    let body = read_to_close(&mut quick, Duration::from_secs(5)).await.unwrap();
    assert!(String::from_utf8_lossy(&body).contains("3 bytes"));
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(10), task).await.unwrap().unwrap();
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed() {
    let (addr, stop, task) = start(limits(30, 1, 16)).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let reply = read_to_close(&mut tcp, Duration::from_secs(5)).await.expect("closed within 5 s when idle");
    assert!(String::from_utf8_lossy(&reply).starts_with("HTTP/1.1 200"), "{reply:?}");
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap();
}

#[tokio::test]
async fn half_open_connections_do_not_starve_a_normal_request() {
    let (addr, stop, task) = start(limits(30, 60, 8)).await;
    let mut held = Vec::new();
    for _ in 0..6 {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(b"GET / HT").await.unwrap();
        held.push(tcp);
    }
    let reply = get_root(addr).await;
    assert!(reply.starts_with("HTTP/1.1 200") && reply.ends_with("ok"), "{reply}");
    drop(held);
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap();
}

#[tokio::test]
async fn over_the_cap_a_connection_waits_for_a_slot() {
    // Two slots, both busy with a request (a slow handler) of two addresses (one address
    // never gets the last free slot): a connection from a third waits until one of them
    // finishes, then is answered.
    let (addr, stop, task, started) = start_counting(limits(1, 60, 2)).await;
    let mut held = Vec::new();
    for from in ["127.0.0.3", "127.0.0.4"] {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
        let mut tcp = socket.connect(addr).await.unwrap();
        tcp.write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
        held.push(tcp);
    }
    started.wait(2, "both slow requests in flight").await;
    let t = Instant::now();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
    let mut other = socket.connect(addr).await.unwrap();
    other.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
    let reply = read_to_close(&mut other, Duration::from_secs(5)).await.expect("answered within 5 s");
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(t.elapsed() >= Duration::from_millis(500), "answered before a slot was free: {:?}", t.elapsed());
    for mut tcp in held {
        let slow = read_to_close(&mut tcp, Duration::from_secs(5)).await.expect("the slow requests finish");
        assert!(String::from_utf8_lossy(&slow).ends_with("slow"), "a busy connection is never evicted");
    }
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap();
}

#[tokio::test]
async fn at_the_cap_the_oldest_half_open_connection_makes_room() {
    // Two slots held by half-open connections (header timeout 30 s): a new client is
    // answered at once, and the older half-open connection is the one closed.
    let (addr, stop, task) = start(limits(30, 60, 2)).await;
    let mut older = TcpStream::connect(addr).await.unwrap();
    older.write_all(b"GET / HT").await.unwrap();
    until_accepted(addr, older.local_addr().unwrap()).await;
    // Accepted (and so aged) strictly after the older one.
    let mut newer = TcpStream::connect(addr).await.unwrap();
    newer.write_all(b"GET / HT").await.unwrap();
    until_accepted(addr, newer.local_addr().unwrap()).await;
    let t = Instant::now();
    let reply = get_root(addr).await;
    assert!(reply.starts_with("HTTP/1.1 200") && reply.ends_with("ok"), "{reply}");
    assert!(t.elapsed() < Duration::from_secs(2), "answered after {:?}", t.elapsed());
    read_to_close(&mut older, Duration::from_secs(2)).await.expect("the oldest half-open connection is closed");
    // The newer one is still open: it can finish its request.
    newer.write_all(b"TP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
    let late = read_to_close(&mut newer, Duration::from_secs(5)).await.expect("answered");
    assert!(String::from_utf8_lossy(&late).starts_with("HTTP/1.1 200"), "{late:?}");
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap();
}

#[tokio::test]
async fn at_the_cap_a_half_open_connection_goes_before_an_idle_keep_alive_one() {
    let (addr, stop, task) = start(limits(30, 60, 2)).await;
    // An idle keep-alive connection (served one request, waits for the next) is older
    // than the half-open one, yet the half-open one goes first.
    let mut kept = TcpStream::connect(addr).await.unwrap();
    kept.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let mut buf = [0u8; 512];
    let n = tokio::time::timeout(Duration::from_secs(5), kept.read(&mut buf)).await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    let mut half = TcpStream::connect(addr).await.unwrap();
    half.write_all(b"GET / HT").await.unwrap();
    // Half-open goes first whatever its age (the eviction order of `serve_http`).
    until_accepted(addr, half.local_addr().unwrap()).await;
    let reply = get_root(addr).await;
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    read_to_close(&mut half, Duration::from_secs(2)).await.expect("the half-open connection is closed");
    kept.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
    let again = read_to_close(&mut kept, Duration::from_secs(5)).await.expect("the keep-alive one is still served");
    assert!(String::from_utf8_lossy(&again).starts_with("HTTP/1.1 200"), "{again:?}");
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap();
}

/// An MCP `initialize` on `/mcp` of `f`; the session id it gets.
fn initialize(f: &crate::kit::Fx) -> String {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (status, sid, _) = f.rpc(&f.app, "/mcp", None, &[], body);
    assert_eq!(status, axum::http::StatusCode::OK);
    sid.expect("a session id")
}

/// `tools/list` in session `sid`: the status.
fn tools_list(f: &crate::kit::Fx, sid: &str) -> axum::http::StatusCode {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    f.rpc(&f.app, "/mcp", Some(sid), &[], body).0
}

#[test]
fn many_initialize_calls_keep_at_most_the_cap_of_sessions() {
    let f = crate::kit::Fx::with(crate::kit::Opts { max_mcp_sessions: Some(3), ..Default::default() });
    let client = initialize(&f);
    assert_eq!(tools_list(&f, &client), axum::http::StatusCode::OK);
    let mut flood = Vec::new();
    for _ in 0..2 {
        flood.push(initialize(&f));
    }
    // The client keeps using its session: it is the most recently used, so the flood's
    // oldest session goes first.
    assert_eq!(tools_list(&f, &client), axum::http::StatusCode::OK);
    flood.push(initialize(&f));
    assert_eq!(tools_list(&f, &flood[0]), axum::http::StatusCode::NOT_FOUND, "the least recently used is closed");
    assert_eq!(tools_list(&f, &client), axum::http::StatusCode::OK, "a client in use keeps its session");
    for _ in 0..40 {
        flood.push(initialize(&f));
    }
    let live = flood.iter().filter(|s| tools_list(&f, s) == axum::http::StatusCode::OK).count();
    assert!(live <= 3, "{live} sessions live over a cap of 3");
    // A normal client is still served: a new session works from initialize to a call.
    let again = initialize(&f);
    assert_eq!(tools_list(&f, &again), axum::http::StatusCode::OK);
}

/// An MCP `initialize` on `/mcp` of `f` from the client at `peer` (the socket peer, as
/// `serve_http` gives it): the answer.
fn initialize_from(f: &crate::kit::Fx, peer: [u8; 4]) -> crate::kit::Resp {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let host = f.holder.base.settings().public_url.allowed_hosts().into_iter().next().unwrap();
    let req = axum::http::Request::post("/mcp")
        .header("host", host)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .extension(axum::extract::ConnectInfo(SocketAddr::from((peer, 40000))))
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    crate::kit::send(&f.rt, &f.app, req)
}

/// At the session cap, with every session a young one of another client, a new client's
/// `initialize` is refused because of load: 503 with `Retry-After` and a JSON-RPC error
/// naming the reason, never 500 (RFC 9110 §15.6.4).
#[test]
fn a_session_refused_at_the_cap_is_answered_503_with_retry_after() {
    let f = crate::kit::Fx::with(crate::kit::Opts { max_mcp_sessions: Some(2), ..Default::default() });
    for peer in [[192, 0, 2, 1], [192, 0, 2, 2]] {
        let r = initialize_from(&f, peer);
        assert_eq!(r.status, axum::http::StatusCode::OK, "{}", r.body);
    }
    let r = initialize_from(&f, [192, 0, 2, 3]);
    assert_eq!(r.status, axum::http::StatusCode::SERVICE_UNAVAILABLE, "{}", r.body);
    let wait: u64 = r.headers[axum::http::header::RETRY_AFTER].to_str().unwrap().parse().unwrap();
    assert!((1..=10).contains(&wait), "Retry-After: {wait}");
    assert!(r.headers.get("mcp-session-id").is_none());
    let msg: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!((&msg["jsonrpc"], &msg["id"], &msg["error"]["code"]), (&"2.0".into(), &7.into(), &(-32000).into()));
    let text = msg["error"]["message"].as_str().unwrap();
    assert!(text.contains("MCP session cap reached") && text.contains("retry later"), "{text}");
    assert_eq!(msg["error"]["data"]["retryAfterSeconds"], wait);
    // A client already holding a session makes room by closing its own, as before.
    let r = initialize_from(&f, [192, 0, 2, 2]);
    assert_eq!(r.status, axum::http::StatusCode::OK, "{}", r.body);
}

/// `isto serve` on a port already in use says so and leaves nothing behind: the data
/// directory, the key and the store are created only once the port is held.
#[test]
fn serve_on_a_port_in_use_fails_before_creating_anything() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_isto"))
        .args(["serve", "--listen", &addr.to_string(), "--data-dir"])
        .arg(&data)
        .env_remove("ISTO_CONFIG")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains(&format!("cannot listen on {addr}")), "{err}");
    assert!(!data.exists(), "the data directory was created");
}
