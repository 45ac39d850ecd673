//! OAuth failures as typed values, each decided here and nowhere else: RFC 6749 §5.2
//! errors, RFC 6750 §3 bearer challenges (including every [`Denied`] of the access
//! policy), and a generic `server_error` whose cause is logged once ([`Internal::logged`])
//! and never answered. The web face builds the HTTP response from an [`OAuthError`].

use crate::policy::Denied;
use http::StatusCode;
use serde_json::{json, Value};

/// What a client is told of an internal failure.
const INTERNAL_DESCRIPTION: &str = "internal error; try again later";

/// An internal failure whose cause is logged: answered `500 server_error` with a generic
/// description.
#[derive(Debug, Clone, Copy)]
pub struct Internal;

impl Internal {
    /// Logs `cause` (a storage or task failure: never a token, code or secret) under the
    /// operation's name, once, and gives the marker to answer with.
    pub fn logged(op: &'static str, cause: &dyn std::fmt::Display) -> Self {
        tracing::error!(op, error = %cause, "oauth: internal failure");
        Self
    }
}

/// The authentication challenge of an [`OAuthError`]: the `WWW-Authenticate` value a
/// face sends with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Challenge {
    /// No challenge.
    None,
    /// `Basic realm="isto"`: the client tried HTTP Basic and failed (RFC 6749 §5.2).
    Basic,
    /// `Bearer resource_metadata="…", …` (RFC 6750 §3, RFC 9728 §5.1): the whole header
    /// value. A bearer challenge is answered without `Pragma: no-cache`.
    Bearer(String),
}

/// An OAuth failure as a face answers it: an RFC 6749 §5.2 / RFC 7591 §3.2.2 error, or an
/// RFC 6750 §3 bearer challenge. The response carries [`OAuthError::body`],
/// `Cache-Control: no-store` (and `Pragma: no-cache` but with a bearer challenge), the
/// challenge as `WWW-Authenticate` and `retry_after` as `Retry-After`.
#[derive(Debug, Clone)]
pub struct OAuthError {
    /// HTTP status (400, 401, 403, 429, 500).
    pub status: StatusCode,
    /// The error code (`invalid_request`, `invalid_grant`, …).
    pub error: &'static str,
    /// Human text; never contains a secret.
    pub description: String,
    /// The `WWW-Authenticate` challenge, if any.
    pub challenge: Challenge,
    /// Seconds for a `Retry-After` header (a used-up quota, answered 429).
    pub retry_after: Option<u64>,
}

impl OAuthError {
    /// An error with a status.
    pub fn new(status: StatusCode, error: &'static str, description: impl Into<String>) -> Self {
        Self { status, error, description: description.into(), challenge: Challenge::None, retry_after: None }
    }

    /// The JSON body: `{"error": …, "error_description": …}`.
    pub fn body(&self) -> Value {
        json!({"error": self.error, "error_description": self.description})
    }

    /// `429 temporarily_unavailable` with `Retry-After` for a used-up quota (RFC 7591
    /// §3.2.2 leaves room for further codes); the description names the rule and when.
    pub fn quota(e: &crate::base::quota::Exceeded) -> Self {
        Self {
            retry_after: Some(e.retry_after_secs),
            ..Self::new(StatusCode::TOO_MANY_REQUESTS, "temporarily_unavailable", e.to_string())
        }
    }

    /// A 400 error.
    pub fn bad(error: &'static str, description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, error, description)
    }

    /// `401 invalid_client`.
    pub fn invalid_client(basic: bool) -> Self {
        let challenge = if basic { Challenge::Basic } else { Challenge::None };
        Self { challenge, ..Self::new(StatusCode::UNAUTHORIZED, "invalid_client", "client authentication failed") }
    }
}

impl From<Internal> for OAuthError {
    fn from(_: Internal) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "server_error", INTERNAL_DESCRIPTION)
    }
}

/// Quotes a value for an auth-param (RFC 9110 §11.2): `"` and `\` escaped, control
/// characters dropped.
fn quoted(v: &str) -> String {
    let clean: String = v.chars().filter(|c| !c.is_control()).collect();
    format!("\"{}\"", clean.replace('\\', "\\\\").replace('"', "\\\""))
}

/// A bearer challenge (RFC 6750 §3, RFC 9728 §5.1):
/// `WWW-Authenticate: Bearer resource_metadata="…", scope="…"[, error="…", error_description="…"]`
/// and the same error as JSON in the body (without an error code: `unauthorized`); 403
/// for `insufficient_scope`, else 401.
pub fn bearer_challenge(metadata_url: &str, scope: &str, error: Option<(&'static str, &str)>) -> OAuthError {
    let status = match error {
        Some(("insufficient_scope", _)) => StatusCode::FORBIDDEN,
        _ => StatusCode::UNAUTHORIZED,
    };
    let mut v = format!("Bearer resource_metadata={}", quoted(metadata_url));
    if !scope.is_empty() {
        v.push_str(&format!(", scope={}", quoted(scope)));
    }
    if let Some((code, why)) = error {
        v.push_str(&format!(", error={}, error_description={}", quoted(code), quoted(why)));
    }
    let (code, why) = error.unwrap_or(("unauthorized", "this endpoint needs an OAuth access token"));
    OAuthError { challenge: Challenge::Bearer(v), ..OAuthError::new(status, code, why) }
}

/// The bearer challenge of an access-policy refusal at an MCP endpoint: missing
/// credentials → 401 with the challenge alone (`scope` = `all_scopes`); another resource
/// → 401 `invalid_token`; missing scope → 403 `insufficient_scope` with `scope` = the
/// token's scopes plus those needed (MCP step-up); the seller rules → 403 naming the rule.
pub fn bearer_denied(metadata_url: &str, all_scopes: &str, token_scopes: &[String], denied: &Denied) -> OAuthError {
    match denied {
        Denied::MissingCredentials => bearer_challenge(metadata_url, all_scopes, None),
        Denied::WrongResource => bearer_challenge(
            metadata_url,
            all_scopes,
            Some(("invalid_token", "the access token is for another resource")),
        ),
        Denied::InsufficientScope { any_of } => {
            let mut wanted = token_scopes.to_vec();
            wanted.extend(any_of.iter().cloned());
            let why = "the access token lacks the scope this call needs";
            bearer_challenge(metadata_url, &wanted.join(" "), Some(("insufficient_scope", why)))
        }
        Denied::NotSeller | Denied::NotBuyer | Denied::SellerDisabled | Denied::NotOffered => {
            bearer_challenge(metadata_url, all_scopes, Some(("insufficient_scope", &denied.to_string())))
        }
    }
}
