//! Outbound HTTP (infrastructure): the one place isto fetches from the network — today
//! the OAuth client ID metadata documents (draft-ietf-oauth-client-id-metadata-document).
//! A [`Fetcher`] follows no redirects, uses no proxy, bounds the whole request by a
//! timeout and the body by a byte limit, and answers only what the caller may show
//! ([`FetchError`] never carries the remote body).

use reqwest::header;
use serde_json::Value;
use std::time::Duration;
use url::Url;

/// Why a fetch gave no usable document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// No HTTP client could be built at start.
    #[error("no HTTP client")]
    Unavailable,
    /// The request or the body took longer than the timeout.
    #[error("timed out")]
    Timeout,
    /// Connecting, sending or reading failed.
    #[error("could not be fetched")]
    Failed,
    /// The server answered a status other than 200.
    #[error("answered HTTP {0}")]
    Status(u16),
    /// The body is longer than the limit.
    #[error("larger than the limit")]
    TooLarge,
    /// The body is not JSON.
    #[error("not JSON")]
    NotJson,
}

/// A bounded JSON fetcher.
#[derive(Debug)]
pub struct Fetcher {
    http: Option<reqwest::Client>,
    max_bytes: usize,
}

impl Fetcher {
    /// A fetcher with `timeout` for connect and whole request, and bodies of at most
    /// `max_bytes`.
    pub fn new(timeout: Duration, max_bytes: usize) -> Self {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .connect_timeout(timeout)
            .no_proxy()
            .user_agent(concat!("isto/", env!("CARGO_PKG_VERSION")))
            .build();
        let http = match http {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::error!(error = %e, "outbound: no HTTP client; nothing can be fetched");
                None
            }
        };
        Self { http, max_bytes }
    }

    /// GET `url` with `Accept: application/json`: status 200, at most `max_bytes` of
    /// JSON. Returns the document and its `Cache-Control` lifetime in seconds (`Some(0)`
    /// for `no-store`/`no-cache`, `None` without `max-age`).
    ///
    /// # Errors
    /// [`FetchError`].
    pub async fn get_json(&self, url: Url) -> Result<(Value, Option<i64>), FetchError> {
        let http = self.http.as_ref().ok_or(FetchError::Unavailable)?;
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
    use super::max_age;

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
