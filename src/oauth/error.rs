//! The outward shapes of OAuth failures, each built here and nowhere else: RFC 6749 §5.2
//! error JSON (token, registration and revocation endpoints), RFC 6750 §3 bearer
//! challenges (the MCP endpoints, including every [`Denied`] of the access policy), and
//! a generic `server_error` for internal failures, whose cause is logged once, by
//! [`Internal::logged`], inside the request's span and never in the response.

use crate::policy::Denied;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

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

impl IntoResponse for Internal {
    fn into_response(self) -> Response {
        OAuthError::from(self).into_response()
    }
}

/// An RFC 6749 §5.2 / RFC 7591 §3.2.2 error response.
#[derive(Debug, Clone)]
pub struct OAuthError {
    /// HTTP status (400, 401, 500).
    pub status: StatusCode,
    /// The error code (`invalid_request`, `invalid_grant`, …).
    pub error: &'static str,
    /// Human text; never contains a secret.
    pub description: String,
    /// Whether to add `WWW-Authenticate: Basic` (client tried HTTP Basic and failed).
    pub basic: bool,
    /// Seconds for a `Retry-After` header (a used-up quota, answered 429).
    pub retry_after: Option<u64>,
}

impl OAuthError {
    /// An error with a status.
    pub fn new(status: StatusCode, error: &'static str, description: impl Into<String>) -> Self {
        Self { status, error, description: description.into(), basic: false, retry_after: None }
    }

    /// `429 temporarily_unavailable` with `Retry-After` for a used-up quota (issue 9
    /// point 3): RFC 7591 §3.2.2 leaves room for further codes, and this RFC 6749 one
    /// says "try again later"; the description names the rule and when.
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
        Self { basic, ..Self::new(StatusCode::UNAUTHORIZED, "invalid_client", "client authentication failed") }
    }
}

impl From<Internal> for OAuthError {
    fn from(_: Internal) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "server_error", INTERNAL_DESCRIPTION)
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let body = json!({"error": self.error, "error_description": self.description});
        let mut res = (self.status, axum::Json(body)).into_response();
        let h = res.headers_mut();
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        h.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
        if self.basic {
            h.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"isto\""));
        }
        if let Some(secs) = self.retry_after {
            h.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        res
    }
}

/// Quotes a value for an auth-param (RFC 9110 §11.2): `"` and `\` escaped.
fn quoted(v: &str) -> String {
    let mut s = String::with_capacity(v.len() + 2);
    s.push('"');
    for c in v.chars() {
        if c == '"' || c == '\\' {
            s.push('\\');
        }
        if !c.is_control() {
            s.push(c);
        }
    }
    s.push('"');
    s
}

/// A bearer challenge response (RFC 6750 §3, RFC 9728 §5.1):
/// `WWW-Authenticate: Bearer resource_metadata="…", scope="…"[, error="…", error_description="…"]`
/// and the same error as JSON in the body.
pub fn bearer_challenge(status: StatusCode, metadata_url: &str, scope: &str, error: Option<(&str, &str)>) -> Response {
    let mut v = format!("Bearer resource_metadata={}", quoted(metadata_url));
    if !scope.is_empty() {
        v.push_str(&format!(", scope={}", quoted(scope)));
    }
    if let Some((code, why)) = error {
        v.push_str(&format!(", error={}, error_description={}", quoted(code), quoted(why)));
    }
    let body = match error {
        Some((code, why)) => json!({"error": code, "error_description": why}),
        None => json!({"error": "unauthorized", "error_description": "this endpoint needs an OAuth access token"}),
    };
    let mut res = (status, axum::Json(body)).into_response();
    let h = res.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&v) {
        h.insert(header::WWW_AUTHENTICATE, v);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

/// The bearer challenge of an access-policy refusal at an MCP endpoint:
/// [`Denied::MissingCredentials`] → 401 with the challenge alone (`scope` = every scope
/// of the resource, `all_scopes`); [`Denied::WrongResource`] → 401 `invalid_token`;
/// [`Denied::InsufficientScope`] → 403 `insufficient_scope` with `scope` = the token's
/// scopes plus the ones needed (MCP step-up); the seller rules (not asked at the door)
/// → 403 `insufficient_scope` naming the rule.
pub fn bearer_denied(metadata_url: &str, all_scopes: &str, token_scopes: &[String], denied: &Denied) -> Response {
    match denied {
        Denied::MissingCredentials => bearer_challenge(StatusCode::UNAUTHORIZED, metadata_url, all_scopes, None),
        Denied::WrongResource => bearer_challenge(
            StatusCode::UNAUTHORIZED,
            metadata_url,
            all_scopes,
            Some(("invalid_token", "the access token is for another resource")),
        ),
        Denied::InsufficientScope { any_of } => {
            let mut wanted = token_scopes.to_vec();
            wanted.extend(any_of.iter().cloned());
            bearer_challenge(
                StatusCode::FORBIDDEN,
                metadata_url,
                &wanted.join(" "),
                Some(("insufficient_scope", "the access token lacks the scope this call needs")),
            )
        }
        Denied::NotSeller | Denied::NotBuyer | Denied::SellerDisabled | Denied::NotOffered => bearer_challenge(
            StatusCode::FORBIDDEN,
            metadata_url,
            all_scopes,
            Some(("insufficient_scope", &denied.to_string())),
        ),
    }
}
