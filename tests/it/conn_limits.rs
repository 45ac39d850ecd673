//! Connections per client address and event streams without events, on `app::serve_http`
//! over real sockets from several loopback source addresses (127.0.0.x): an address
//! holds at most `max_connections_per_client` connections (directly, or through a trusted
//! proxy by its `X-Forwarded-For`), its own idle connection makes room for its new one,
//! other addresses are served; an event stream of keep-alives alone is ended after
//! `stream_idle_secs`, one with events is not.

use axum::routing::{get, post};
use axum::Router;
use isto::app::serve_http;
use isto::config::Limits;
use isto::net::TrustedProxies;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use crate::kit::net::Started;

/// A body of `chunk` every `every`, forever, as an event stream.
fn stream_of(chunk: &'static str, every: Duration) -> axum::response::Response {
    struct Ticks(tokio::time::Interval, &'static str);
    impl futures_core::Stream for Ticks {
        type Item = Result<axum::body::Bytes, std::io::Error>;
        fn poll_next(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Self::Item>> {
            let chunk = self.1;
            self.0.poll_tick(cx).map(|_| Some(Ok(axum::body::Bytes::from_static(chunk.as_bytes()))))
        }
    }
    axum::response::Response::builder()
        .header("content-type", "text/event-stream")
        .body(axum::body::Body::from_stream(Ticks(tokio::time::interval(every), chunk)))
        .unwrap()
}

async fn start(
    limits: Limits,
    trusted: TrustedProxies,
) -> (SocketAddr, CancellationToken, tokio::task::JoinHandle<()>) {
    let (addr, stop, task, _) = start_counting(limits, trusted).await;
    (addr, stop, task)
}

/// [`start`], with the requests that reached the router counted.
async fn start_counting(
    limits: Limits,
    trusted: TrustedProxies,
) -> (SocketAddr, CancellationToken, tokio::task::JoinHandle<()>, Started) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .route("/echo", post(|body: axum::body::Bytes| async move { format!("{} bytes", body.len()) }))
        .route("/keepalives", get(|| async { stream_of(":\n\n", Duration::from_millis(100)) }))
        .route("/events", get(|| async { stream_of("data: tick\n\n", Duration::from_millis(200)) }));
    let started = Started::default();
    let task = tokio::spawn(serve_http(listener, started.layer(app), limits, trusted, stop.clone()));
    (addr, stop, task, started)
}

/// A connection to `addr` from source address `from` (127.0.0.x).
async fn connect_from(from: &str, addr: SocketAddr) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    socket.connect(addr).await.unwrap()
}

/// Reads until the peer closes or `within` passes: what was read, and whether it closed.
async fn read_for(tcp: &mut TcpStream, within: Duration) -> (String, bool) {
    let mut out = Vec::new();
    let closed = tokio::time::timeout(within, async {
        let mut buf = [0u8; 2048];
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .is_ok();
    (String::from_utf8_lossy(&out).into_owned(), closed)
}

/// A request in flight from `from` with `xff`: a POST whose body never comes.
async fn held_request(from: &str, addr: SocketAddr, xff: Option<&str>) -> TcpStream {
    let mut tcp = connect_from(from, addr).await;
    let xff = xff.map(|x| format!("X-Forwarded-For: {x}\r\n")).unwrap_or_default();
    tcp.write_all(format!("POST /echo HTTP/1.1\r\nHost: x\r\n{xff}Content-Length: 1000\r\n\r\na").as_bytes())
        .await
        .unwrap();
    tcp
}

/// `GET /` from `from` with `xff` on a fresh connection: the answer (closed within 3 s).
async fn get_root(from: &str, addr: SocketAddr, xff: Option<&str>) -> String {
    let mut tcp = connect_from(from, addr).await;
    let xff = xff.map(|x| format!("X-Forwarded-For: {x}\r\n")).unwrap_or_default();
    let _ = tcp.write_all(format!("GET / HTTP/1.1\r\nHost: x\r\n{xff}Connection: close\r\n\r\n").as_bytes()).await;
    let (answer, closed) = read_for(&mut tcp, Duration::from_secs(3)).await;
    assert!(closed, "not answered within 3 s: {answer:?}");
    answer
}

/// `isto_rate_limited_total{scope="connections"}` now (the metrics are process-wide:
/// other tests may only add to it).
fn connection_refusals() -> f64 {
    crate::kit::metric("isto_rate_limited_total{scope=\"connections\"}")
}

fn limits(per_client: usize) -> Limits {
    Limits {
        header_read_timeout_secs: 30,
        idle_timeout_secs: 60,
        body_read_timeout_secs: 60,
        max_connections: 64,
        max_connections_per_client: per_client,
        ..Limits::default()
    }
}

#[tokio::test]
async fn an_address_holds_at_most_its_cap_of_connections_others_are_served() {
    let (addr, stop, task, started) = start_counting(limits(2), TrustedProxies::none()).await;
    let held = [held_request("127.0.0.2", addr, None).await, held_request("127.0.0.2", addr, None).await];
    started.wait(2, "both held requests in flight").await;
    // Both of its connections are busy: a third is answered 429 and closed at once.
    let (t, refused_before) = (Instant::now(), connection_refusals());
    let third = get_root("127.0.0.2", addr, None).await;
    assert!(third.starts_with("HTTP/1.1 429"), "a third connection from one address: {third:?}");
    assert!(connection_refusals() > refused_before, "the refusal is counted in the metrics");
    assert!(third.contains("Retry-After: 1") && third.contains("Too many connections"), "{third}");
    assert!(t.elapsed() < Duration::from_secs(1), "refused after {:?}", t.elapsed());
    // Another address is served.
    let other = get_root("127.0.0.3", addr, None).await;
    assert!(other.starts_with("HTTP/1.1 200") && other.ends_with("ok"), "{other}");
    // One of them ends: the address gets a connection again.
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let again = get_root("127.0.0.2", addr, None).await;
        if again.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(Instant::now() < deadline, "the address stayed refused after closing its connections: {again}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(10), task).await.unwrap().unwrap();
}

#[tokio::test]
async fn an_address_at_its_cap_makes_room_among_its_own_idle_connections() {
    let (addr, stop, task, started) = start_counting(limits(2), TrustedProxies::none()).await;
    let _busy = held_request("127.0.0.2", addr, None).await;
    started.wait(1, "the busy request in flight").await;
    // An idle keep-alive connection of the same address (one request served).
    let mut idle = connect_from("127.0.0.2", addr).await;
    idle.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let mut buf = [0u8; 512];
    let n = tokio::time::timeout(Duration::from_secs(5), idle.read(&mut buf)).await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    // A new connection of that address is served; its idle one was closed for it.
    let reply = get_root("127.0.0.2", addr, None).await;
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    let (_, closed) = read_for(&mut idle, Duration::from_secs(2)).await;
    assert!(closed, "the address's own idle connection was closed to make room");
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(10), task).await.unwrap().unwrap();
}

#[tokio::test]
async fn behind_a_trusted_proxy_the_forwarded_client_is_held_to_its_cap() {
    let (addr, stop, task, started) = start_counting(limits(2), TrustedProxies::loopback()).await;
    let client = Some("192.0.2.7");
    let _held = [held_request("127.0.0.1", addr, client).await, held_request("127.0.0.1", addr, client).await];
    started.wait(2, "both held requests in flight").await;
    let refused_before = connection_refusals();
    let third = get_root("127.0.0.1", addr, client).await;
    assert!(third.starts_with("HTTP/1.1 429"), "a third request of one forwarded client: {third:?}");
    assert!(connection_refusals() > refused_before, "the refusal is counted in the metrics");
    assert!(third.to_ascii_lowercase().contains("connection: close"), "{third}");
    // The proxy itself and other clients through it are served.
    let other = get_root("127.0.0.1", addr, Some("192.0.2.8")).await;
    assert!(other.starts_with("HTTP/1.1 200"), "{other}");
    let proxy = get_root("127.0.0.1", addr, None).await;
    assert!(proxy.starts_with("HTTP/1.1 200"), "{proxy}");
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(10), task).await.unwrap().unwrap();
}

#[tokio::test]
async fn an_event_stream_of_keep_alives_is_ended_after_the_stream_idle_time() {
    let (addr, stop, task) = start(Limits { stream_idle_secs: 1, ..limits(8) }, TrustedProxies::none()).await;
    let mut quiet = connect_from("127.0.0.2", addr).await;
    quiet.write_all(b"GET /keepalives HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let mut busy = connect_from("127.0.0.2", addr).await;
    busy.write_all(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    // Keep-alives every 100 ms keep the connection from idling out, but carry no event:
    // the stream ends (its last chunk) after about 1 s.
    let t = Instant::now();
    let mut seen = Vec::new();
    let ended = tokio::time::timeout(Duration::from_secs(4), async {
        let mut buf = [0u8; 1024];
        loop {
            let n = quiet.read(&mut buf).await.unwrap();
            seen.extend_from_slice(&buf[..n]);
            if n == 0 || seen.ends_with(b"0\r\n\r\n") {
                return;
            }
        }
    })
    .await;
    let took = t.elapsed();
    let text = String::from_utf8_lossy(&seen).into_owned();
    assert!(ended.is_ok(), "a stream of keep-alives still open after {took:?}: {text:?}");
    assert!(took >= Duration::from_millis(900) && took < Duration::from_millis(2500), "ended after {took:?}");
    assert!(text.starts_with("HTTP/1.1 200") && text.contains(":\n\n"), "{text}");
    // The stream with an event every 200 ms is still going.
    let (events, closed) = read_for(&mut busy, Duration::from_millis(500)).await;
    assert!(!closed && events.contains("data: tick"), "{events:?}");
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(10), task).await.unwrap().unwrap();
}

/// Cleartext HTTP/2 is not served (HTTP/2 is the TLS proxy's): a client's connection
/// preface gets no HTTP/2 SETTINGS frame and the connection is closed within 3 s — so a
/// client that never opens its flow-control window cannot keep a request in flight.
#[tokio::test]
async fn cleartext_http2_is_not_served() {
    let (addr, stop, task) = start(limits(4), TrustedProxies::none()).await;
    let mut tcp = connect_from("127.0.0.2", addr).await;
    // The preface, then an empty SETTINGS frame (RFC 9113 §3.4).
    let mut preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    preface.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
    tcp.write_all(&preface).await.unwrap();
    let (answer, closed) = read_for(&mut tcp, Duration::from_secs(3)).await;
    assert!(closed, "an HTTP/2 preface kept its connection open: {answer:?}");
    // A SETTINGS frame starts with a 3-byte length and type 4; an HTTP/1 answer with its
    // status line.
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 "), "answered as HTTP/2: {answer:?}");
    // Plain HTTP/1.1 from the same address is served.
    let ok = get_root("127.0.0.2", addr, None).await;
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    stop.cancel();
    task.await.unwrap();
}
