//! Probes for the connection tests over real sockets (`app::serve_http` in-process):
//! wait for the state a step needs instead of sleeping — a request reached the router
//! ([`Started`]), or the server accepted a connection ([`until_accepted`], from the
//! kernel's view in `/proc/net/tcp`).

use axum::Router;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Counts the requests that reached the router: its head was read and the listener
/// admitted it (in flight), whether or not its body has arrived.
#[derive(Clone, Default)]
pub struct Started(Arc<AtomicUsize>);

impl Started {
    /// `app` with every request counted before its handler runs (before the body is read).
    pub fn layer(&self, app: Router) -> Router {
        let n = self.0.clone();
        app.layer(axum::middleware::from_fn(move |req: axum::extract::Request, next: axum::middleware::Next| {
            n.fetch_add(1, Ordering::SeqCst);
            next.run(req)
        }))
    }

    /// Waits (at most 5 s) until `n` requests have reached the router.
    pub async fn wait(&self, n: usize, what: &str) {
        let t0 = Instant::now();
        while self.0.load(Ordering::SeqCst) < n {
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "{what}: {} of {n} requests in 5 s",
                self.0.load(Ordering::SeqCst)
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// `/proc/net/tcp` rows of 127.0.0.1/127.0.0.x sockets: (local port, remote port, state, rx queue).
fn tcp_rows() -> Vec<(u16, u16, u8, u64)> {
    let text = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let hex_port = |a: &str| a.rsplit(':').next().and_then(|p| u16::from_str_radix(p, 16).ok());
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let state = u8::from_str_radix(f.get(3)?, 16).ok()?;
            let rx = u64::from_str_radix(f.get(4)?.split(':').nth(1)?, 16).ok()?;
            Some((hex_port(f.get(1)?)?, hex_port(f.get(2)?)?, state, rx))
        })
        .collect()
}

/// Waits (at most 5 s) until the server listening on `server` has accepted the
/// connection `client` (the client side's local address): the server side of it is
/// established and the listener's queue of connections not yet accepted is empty
/// (for a listening socket `/proc/net/tcp` shows that queue as `rx_queue`).
pub async fn until_accepted(server: SocketAddr, client: SocketAddr) {
    const ESTABLISHED: u8 = 0x01;
    const LISTEN: u8 = 0x0A;
    let t0 = Instant::now();
    loop {
        let rows = tcp_rows();
        let ours = rows.iter().any(|&(l, r, st, _)| l == server.port() && r == client.port() && st == ESTABLISHED);
        let queued = rows.iter().find(|&&(l, _, st, _)| l == server.port() && st == LISTEN).map(|r| r.3);
        if ours && queued == Some(0) {
            return;
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "connection {client} not accepted in 5 s (queue {queued:?})");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
