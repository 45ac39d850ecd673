//! Outbound HTTP (infrastructure): the one place isto fetches from the network. A
//! [`Fetcher`] gets the OAuth client ID metadata documents
//! (draft-ietf-oauth-client-id-metadata-document) from public addresses only
//! ([`is_forbidden`]: no SSRF); a [`Probe`] is the client of `isto check URL` alone.

use reqwest::header;
use serde_json::Value;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;
use url::Url;

/// Why a fetch gave no usable document. Callers answer every kind with one generic
/// message (the kind is for the operator's log): a client must not learn whether an
/// address is refused, a port closed or a server slow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// No HTTP client could be built.
    #[error("no HTTP client")]
    Unavailable,
    /// The URL is not `https` (nor loopback `http` where allowed), or has no host.
    #[error("URL not allowed")]
    Url,
    /// The name resolves to (or the URL names) an address isto never connects to
    /// ([`is_forbidden`]), or to nothing.
    #[error("address not allowed")]
    Address,
    /// The request or the body took longer than the timeout.
    #[error("timed out")]
    Timeout,
    /// Connecting, sending or reading failed.
    #[error("could not be fetched")]
    Failed,
    /// The server answered a status other than 200 (redirects are not followed).
    #[error("answered HTTP {0}")]
    Status(u16),
    /// The body is longer than the limit.
    #[error("larger than the limit")]
    TooLarge,
    /// The body is not JSON.
    #[error("not JSON")]
    NotJson,
}

/// A bounded JSON fetcher that connects only to public addresses.
#[derive(Debug, Clone)]
pub struct Fetcher {
    timeout: Duration,
    max_bytes: usize,
    allow_loopback: bool,
}

impl Fetcher {
    /// A fetcher with `timeout` for the whole fetch (resolution, connection, body) and
    /// bodies of at most `max_bytes`. With `allow_loopback` (a development set-up whose
    /// public URL is plain `http`) `http://` URLs naming loopback addresses are fetched
    /// too (never `https://` ones).
    pub fn new(timeout: Duration, max_bytes: usize, allow_loopback: bool) -> Self {
        Self { timeout, max_bytes, allow_loopback }
    }

    /// GET `url` with `Accept: application/json`: status 200, at most `max_bytes` of
    /// JSON, no redirects, no proxy. The host name is resolved here and the connection
    /// made to the checked address only (no second lookup a DNS answer could change).
    /// Returns the document and its `Cache-Control` lifetime in seconds (`Some(0)` for
    /// `no-store`/`no-cache`, `None` without `max-age`).
    ///
    /// # Errors
    /// [`FetchError`].
    pub async fn get_json(&self, url: Url) -> Result<(Value, Option<i64>), FetchError> {
        tokio::time::timeout(self.timeout, self.fetch(url)).await.unwrap_or(Err(FetchError::Timeout))
    }

    async fn fetch(&self, url: Url) -> Result<(Value, Option<i64>), FetchError> {
        let https = url.scheme() == "https";
        let dev_http = self.allow_loopback && url.scheme() == "http";
        if !(https || dev_http) {
            return Err(FetchError::Url);
        }
        let port = url.port_or_known_default().ok_or(FetchError::Url)?;
        let addr = match url.host().ok_or(FetchError::Url)? {
            url::Host::Ipv4(ip) => self.vet(&[SocketAddr::new(IpAddr::V4(ip), port)], dev_http)?,
            url::Host::Ipv6(ip) => self.vet(&[SocketAddr::new(IpAddr::V6(ip), port)], dev_http)?,
            url::Host::Domain(name) => {
                let found: Vec<SocketAddr> =
                    tokio::net::lookup_host((name, port)).await.map_err(|_| FetchError::Address)?.collect();
                self.vet(&found, dev_http)?
            }
        };
        if !https && !addr.ip().is_loopback() {
            return Err(FetchError::Url);
        }
        let mut builder = client_builder(self.timeout, concat!("isto/", env!("CARGO_PKG_VERSION")));
        if let Some(name) = url.domain() {
            builder = builder.resolve(name, addr);
        }
        let http = builder.build().map_err(|_| FetchError::Unavailable)?;
        let describe = |e: reqwest::Error| if e.is_timeout() { FetchError::Timeout } else { FetchError::Failed };
        let mut res = http.get(url).header(header::ACCEPT, "application/json").send().await.map_err(describe)?;
        if res.status() != reqwest::StatusCode::OK {
            return Err(FetchError::Status(res.status().as_u16()));
        }
        if res.content_length().is_some_and(|n| n > self.max_bytes as u64) {
            return Err(FetchError::TooLarge);
        }
        let max_age = res.headers().get(header::CACHE_CONTROL).and_then(|v| v.to_str().ok()).and_then(max_age);
        let mut body = Vec::new();
        while let Some(chunk) = res.chunk().await.map_err(describe)? {
            if body.len() + chunk.len() > self.max_bytes {
                return Err(FetchError::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        let doc = serde_json::from_slice(&body).map_err(|_| FetchError::NotJson)?;
        Ok((doc, max_age))
    }

    /// The address to connect to: the first one, when every address the name has is
    /// allowed (a name with any forbidden address is refused whole, so that a DNS
    /// answer mixing public and internal addresses cannot steer the connection).
    /// Loopback is allowed only for a development `http://` URL (`dev_http`): an
    /// `https://` URL never reaches a loopback address, whatever the set-up.
    fn vet(&self, addrs: &[SocketAddr], dev_http: bool) -> Result<SocketAddr, FetchError> {
        let allowed = |a: &SocketAddr| !is_forbidden(a.ip()) || (dev_http && a.ip().is_loopback());
        match addrs.first() {
            Some(first) if addrs.iter().all(allowed) => Ok(*first),
            _ => Err(FetchError::Address),
        }
    }
}

/// A client with no redirects and no proxy, `timeout` for each request and each
/// connection, sending `agent` as its `User-Agent`.
fn client_builder(timeout: Duration, agent: &'static str) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .connect_timeout(timeout)
        .no_proxy()
        .user_agent(agent)
}

/// One answer of a [`Probe`]: the status, the headers (names lower-case, values that
/// are not visible ASCII dropped) and at most the probe's byte limit of the body.
#[derive(Debug, Clone)]
pub struct ProbeResponse {
    /// The HTTP status code.
    pub status: u16,
    /// The response headers, names lower-case, in the order received.
    pub headers: Vec<(String, String)>,
    /// The body, cut at the probe's limit (then `truncated`).
    pub body: Vec<u8>,
    /// Whether the body was longer than the limit (the rest was not read).
    pub truncated: bool,
}

impl ProbeResponse {
    /// The first value of header `name` (lower-case), if any.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// Why a [`Probe`] request gave no answer at all (an HTTP error status is an answer).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    /// The URL is not `http`/`https` or has no host, or a header is not valid.
    #[error("URL or header not allowed")]
    Url,
    /// No HTTP client could be built.
    #[error("no HTTP client")]
    Unavailable,
    /// The request or the body took longer than the timeout.
    #[error("timed out")]
    Timeout,
    /// The probe's overall deadline ([`Probe::with_deadline`]) has passed: no request
    /// is sent any more.
    #[error("the overall time limit is spent")]
    Deadline,
    /// Connecting, sending or reading failed (the cause, for the operator).
    #[error("connection failed: {0}")]
    Failed(String),
}

/// An HTTP client for an address the operator names on the command line (`isto check
/// URL`): `http` or `https` to any address, loopback included — the operator chooses
/// the URL, no remote party does, so the SSRF guard of [`Fetcher`] does not apply —,
/// no redirects, no proxy, every request bounded by a timeout (the whole exchange,
/// body included) and every body by a byte limit. Unlike [`Fetcher`] it answers every
/// status with its headers and body, for a checker to judge.
#[derive(Debug, Clone)]
pub struct Probe {
    http: reqwest::Client,
    timeout: Duration,
    max_bytes: usize,
    deadline: Option<tokio::time::Instant>,
}

impl Probe {
    /// A probe whose requests last at most `timeout` each and read at most `max_bytes`
    /// of each body.
    ///
    /// # Errors
    /// [`ProbeError::Unavailable`] when the TLS client cannot be built.
    pub fn new(timeout: Duration, max_bytes: usize) -> Result<Self, ProbeError> {
        let http = client_builder(timeout, concat!("isto-check/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|_| ProbeError::Unavailable)?;
        Ok(Self { http, timeout, max_bytes, deadline: None })
    }

    /// The same probe with an overall deadline: each request lasts at most until
    /// `at` (and the per-request timeout); after it, [`ProbeError::Deadline`] without
    /// sending.
    #[must_use]
    pub fn with_deadline(mut self, at: tokio::time::Instant) -> Self {
        self.deadline = Some(at);
        self
    }

    /// Sends `method` to `url` with `headers` and `body`, and reads the answer: the body
    /// until it ends, the limit is reached (then `truncated`), or — for a
    /// `text/event-stream` answer — until `stop_sse` says the events read so far are
    /// enough (an SSE stream a server keeps open ends there).
    ///
    /// # Errors
    /// [`ProbeError`]: bad URL or header, timeout, connection failure.
    pub async fn send(
        &self,
        method: &str,
        url: &Url,
        headers: &[(&str, &str)],
        body: Option<Vec<u8>>,
        stop_sse: &(dyn Fn(&[u8]) -> bool + Sync),
    ) -> Result<ProbeResponse, ProbeError> {
        let left = self.deadline.map(|at| at.saturating_duration_since(tokio::time::Instant::now()));
        if left.is_some_and(|l| l.is_zero()) {
            return Err(ProbeError::Deadline);
        }
        let (limit, error) = match left {
            Some(l) if l < self.timeout => (l, ProbeError::Deadline),
            _ => (self.timeout, ProbeError::Timeout),
        };
        if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
            return Err(ProbeError::Url);
        }
        let method = reqwest::Method::from_bytes(method.as_bytes()).map_err(|_| ProbeError::Url)?;
        let mut req = self.http.request(method, url.clone());
        for (n, v) in headers {
            let name = header::HeaderName::from_bytes(n.as_bytes()).map_err(|_| ProbeError::Url)?;
            let value = header::HeaderValue::from_str(v).map_err(|_| ProbeError::Url)?;
            req = req.header(name, value);
        }
        if let Some(b) = body {
            req = req.body(b);
        }
        tokio::time::timeout(limit, self.read(req, stop_sse)).await.unwrap_or(Err(error))
    }

    /// Sends `req` and reads the answer as [`Probe::send`] says.
    async fn read(
        &self,
        req: reqwest::RequestBuilder,
        stop_sse: &(dyn Fn(&[u8]) -> bool + Sync),
    ) -> Result<ProbeResponse, ProbeError> {
        let describe = |e: reqwest::Error| {
            if e.is_timeout() {
                ProbeError::Timeout
            } else {
                // The cause chain names what failed (refused, DNS, TLS), never a body.
                let chain = std::iter::successors(Some(&e as &dyn std::error::Error), |s| s.source());
                ProbeError::Failed(chain.map(ToString::to_string).collect::<Vec<_>>().join(": "))
            }
        };
        let mut res = req.send().await.map_err(describe)?;
        let status = res.status().as_u16();
        let headers: Vec<(String, String)> = res
            .headers()
            .iter()
            .filter_map(|(n, v)| v.to_str().ok().map(|v| (n.as_str().to_owned(), v.to_owned())))
            .collect();
        let sse = headers.iter().any(|(n, v)| n == "content-type" && v.starts_with("text/event-stream"));
        let mut body = Vec::new();
        let mut truncated = false;
        while let Some(chunk) = res.chunk().await.map_err(describe)? {
            if body.len() + chunk.len() > self.max_bytes {
                let room = self.max_bytes - body.len();
                body.extend_from_slice(&chunk[..room]);
                truncated = true;
                break;
            }
            body.extend_from_slice(&chunk);
            if sse && stop_sse(&body) {
                break;
            }
        }
        Ok(ProbeResponse { status, headers, body, truncated })
    }
}

/// Whether isto must never connect to `ip`: loopback, unspecified, private (RFC 1918,
/// RFC 4193 unique local), link-local (incl. 169.254.169.254 metadata services),
/// CGNAT (RFC 6598), benchmarking (RFC 2544), documentation (RFC 5737, RFC 3849), IETF
/// protocol assignments, multicast, broadcast and reserved ranges, site-local, and every
/// IPv6 form that embeds an IPv4 address (mapped, compatible, NAT64, 6to4, Teredo).
pub fn is_forbidden(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => {
            let s = v6.segments();
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
                || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
                || (s[0] & 0xffc0) == 0xfec0 // site-local fec0::/10
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation 2001:db8::/32
                || (s[0] == 0x2001 && s[1] == 0) // Teredo 2001::/32
                || s[0] == 0x2002 // 6to4 2002::/16
                || (s[0] == 0x0064 && s[1] == 0xff9b) // NAT64 64:ff9b::/96 (and /48)
                || s[..5] == [0, 0, 0, 0, 0] // IPv4-mapped ::ffff:0:0/96 and -compatible ::/96
                || (s[0] == 0x0100 && s[1..4] == [0, 0, 0]) // discard-only 100::/64
        }
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || a == 0 // "this network" 0.0.0.0/8
        || a >= 240 // reserved 240.0.0.0/4
        || (a == 100 && (b & 0xc0) == 64) // CGNAT 100.64.0.0/10
        || (a == 198 && (b & 0xfe) == 18) // benchmarking 198.18.0.0/15
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments 192.0.0.0/24
        || (a == 192 && b == 0 && c == 2) // TEST-NET-1
        || (a == 198 && b == 51 && c == 100) // TEST-NET-2
        || (a == 203 && b == 0 && c == 113) // TEST-NET-3
        || (a == 192 && b == 88 && c == 99) // 6to4 relay anycast
}

/// The lifetime a `Cache-Control` value allows (RFC 9111 §5.2.2): `Some(0)` for
/// `no-store` or `no-cache`, the `max-age` seconds, or `None`.
fn max_age(v: &str) -> Option<i64> {
    let mut age = None;
    for d in v.split(',').map(|d| d.trim().to_ascii_lowercase()) {
        if d == "no-store" || d == "no-cache" {
            return Some(0);
        }
        if let Some(n) = d.strip_prefix("max-age=") {
            age = n.trim_matches('"').parse::<i64>().ok().map(|n| n.max(0));
        }
    }
    age
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_addresses() {
        for a in [
            "127.0.0.1",
            "127.8.9.10",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "0.1.2.3",
            "255.255.255.255",
            "224.0.0.1",
            "240.0.0.1",
            "100.64.0.1",
            "100.127.255.255",
            "198.18.0.1",
            "192.0.0.8",
            "192.0.2.1",
            "198.51.100.7",
            "203.0.113.9",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "2001::1",
            "2002:7f00:1::",
            "64:ff9b::7f00:1",
            "::ffff:127.0.0.1",
            "::ffff:8.8.8.8",
            "::127.0.0.1",
            "100::1",
        ] {
            assert!(is_forbidden(a.parse().unwrap()), "{a} must be forbidden");
        }
        for a in
            ["8.8.8.8", "1.1.1.1", "100.128.0.1", "172.32.0.1", "192.169.0.1", "2a00:1450:4001::1", "2606:4700::1111"]
        {
            assert!(!is_forbidden(a.parse().unwrap()), "{a} is public");
        }
    }

    /// A listener on loopback that counts connections; URLs that name it, literally or
    /// through a name, in every spelling, are refused before any connection.
    #[tokio::test]
    async fn internal_addresses_are_never_connected() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let h = hits.clone();
        tokio::spawn(async move {
            while let Ok((_s, _)) = listener.accept().await {
                h.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        });
        let f = Fetcher::new(Duration::from_secs(2), 1024, false);
        for u in [
            format!("https://127.0.0.1:{port}/c.json"),
            format!("https://localhost:{port}/c.json"),
            format!("https://[::1]:{port}/c.json"),
            format!("https://[::ffff:127.0.0.1]:{port}/c.json"),
            format!("https://0.0.0.0:{port}/c.json"),
            format!("https://127.1:{port}/c.json"),
            format!("https://2130706433:{port}/c.json"),
            format!("https://169.254.169.254:{port}/latest"),
            format!("https://10.0.0.1:{port}/c.json"),
            format!("http://127.0.0.1:{port}/c.json"),
            format!("ftp://127.0.0.1:{port}/c.json"),
        ] {
            let r = f.get_json(Url::parse(&u).unwrap()).await;
            assert!(matches!(r, Err(FetchError::Address | FetchError::Url)), "{u}: {r:?}");
        }
        // Development mode allows loopback http only: still no private address.
        let dev = Fetcher::new(Duration::from_secs(2), 1024, true);
        for u in [
            format!("http://10.0.0.1:{port}/c.json"),
            format!("http://[::ffff:127.0.0.1]:{port}/c.json"),
            format!("https://127.0.0.1:{port}/c.json"),
            format!("https://localhost:{port}/c.json"),
            format!("https://[::1]:{port}/c.json"),
        ] {
            let r = dev.get_json(Url::parse(&u).unwrap()).await;
            assert!(matches!(r, Err(FetchError::Address)), "{u}: {r:?}");
        }
        // A connection of our own, then wait until the listener counted it: it accepts in
        // order, so any connection the fetcher had made would be counted by then too.
        let _ours = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let t0 = std::time::Instant::now();
        while hits.load(std::sync::atomic::Ordering::SeqCst) == 0 {
            assert!(t0.elapsed() < Duration::from_secs(5), "the listener never counted our connection");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1, "no connection was made but ours");
    }

    #[test]
    fn cache_control_lifetimes() {
        assert_eq!(max_age("max-age=600"), Some(600));
        assert_eq!(max_age("public, max-age=\"60\""), Some(60));
        assert_eq!(max_age("max-age=600, no-store"), Some(0));
        assert_eq!(max_age("No-Cache"), Some(0));
        assert_eq!(max_age("max-age=-5"), Some(0));
        assert_eq!(max_age("private"), None);
    }
}
