//! Request parameters (RFC 6749 §3.1: a parameter sent without a value is as if omitted,
//! and none may be repeated) and HTTP Basic client credentials (RFC 6749 §2.3.1).

use super::error::OAuthError;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use std::collections::HashMap;

/// Decoded `application/x-www-form-urlencoded` parameters (query or body).
#[derive(Default)]
pub struct Params {
    map: HashMap<String, String>,
    repeated: Vec<String>,
}

impl Params {
    /// Parses a query string or form body. Never fails: undecodable input gives no
    /// parameters (and the missing-parameter errors that follow).
    pub fn parse(raw: &[u8]) -> Self {
        let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(raw).unwrap_or_default();
        let mut p = Self::default();
        for (k, v) in pairs {
            if v.is_empty() {
                continue;
            }
            if p.map.contains_key(&k) {
                if !p.repeated.contains(&k) {
                    p.repeated.push(k);
                }
                continue;
            }
            p.map.insert(k, v);
        }
        p
    }

    /// A parameter's value.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.map.get(name).map(String::as_str)
    }

    /// Whether `name` was sent more than once.
    pub fn is_repeated(&self, name: &str) -> bool {
        self.repeated.iter().any(|r| r == name)
    }

    /// The first repeated parameter among `names`.
    pub fn first_repeated<'a>(&self, names: &[&'a str]) -> Option<&'a str> {
        names.iter().copied().find(|n| self.is_repeated(n))
    }

    /// The parameters again as pairs (for rebuilding a URL), in `names` order.
    pub fn pairs(&self, names: &[&str]) -> Vec<(String, String)> {
        names.iter().filter_map(|n| self.get(n).map(|v| ((*n).to_owned(), v.to_owned()))).collect()
    }
}

/// Client credentials from a token or revocation request.
#[derive(Default)]
pub struct Credentials {
    /// The client id (Basic user name or `client_id`).
    pub client_id: Option<String>,
    /// The secret (Basic password or `client_secret`).
    pub secret: Option<String>,
    /// Whether HTTP Basic was used.
    pub basic: bool,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").field("client_id", &self.client_id).field("basic", &self.basic).finish()
    }
}

/// Reads client credentials from `Authorization: Basic` (`authorization`: the header's
/// value, if the request had one) or the body. Using both methods, or sending a
/// different client_id beside Basic, is `invalid_request`.
///
/// # Errors
/// [`OAuthError`] `invalid_request`, or `invalid_client` for a malformed Basic header.
pub fn credentials(authorization: Option<&str>, params: &Params) -> Result<Credentials, OAuthError> {
    let form_id = params.get("client_id").map(str::to_owned);
    let form_secret = params.get("client_secret").map(str::to_owned);
    let basic = authorization.and_then(|v| {
        let (scheme, rest) = v.trim().split_once(' ')?;
        scheme.eq_ignore_ascii_case("basic").then(|| rest.trim().to_owned())
    });
    let Some(b) = basic else {
        return Ok(Credentials { client_id: form_id, secret: form_secret, basic: false });
    };
    let decoded = B64.decode(b).ok().and_then(|d| String::from_utf8(d).ok()).ok_or(OAuthError::invalid_client(true))?;
    let (id, secret) = decoded.split_once(':').ok_or(OAuthError::invalid_client(true))?;
    let (id, secret) = (
        percent_decode(id).ok_or(OAuthError::invalid_client(true))?,
        percent_decode(secret).ok_or(OAuthError::invalid_client(true))?,
    );
    if form_secret.is_some() {
        return Err(OAuthError::bad("invalid_request", "use one client authentication method, not two"));
    }
    if form_id.as_ref().is_some_and(|f| *f != id) {
        return Err(OAuthError::bad("invalid_request", "client_id differs from the Basic credentials"));
    }
    Ok(Credentials { client_id: Some(id), secret: Some(secret), basic: true })
}

/// `application/x-www-form-urlencoded` decoding of one component (`+` is a space).
pub fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let h = s.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(h, 16).ok()?);
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_drop_empty_and_flag_repeats() {
        let p = Params::parse(b"a=1&b=&a=2&c=x%20y");
        assert_eq!(p.get("a"), Some("1"));
        assert_eq!(p.get("b"), None);
        assert!(p.is_repeated("a"));
        assert_eq!(p.get("c"), Some("x y"));
        assert_eq!(percent_decode("a%3Ab+c").as_deref(), Some("a:b c"));
        assert_eq!(percent_decode("%zz"), None);
    }
}
