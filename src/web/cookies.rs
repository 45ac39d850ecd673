//! The cookies of the pages, read and written here and nowhere else: the session cookie
//! (its values looked up as [`SessionTokens`]) and the pre-session cookie of the
//! sign-in and sign-up forms ([`PreSession`]). Parsing follows RFC 6265 §5.4 loosely.

use crate::accounts::{self, SessionTokens, Signed, SESSION_TTL_SECS};
use crate::base::Base;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::Response;

/// Name of the session cookie.
pub const SESSION_COOKIE: &str = "isto_session";

/// The `name=value` pairs of every `Cookie` header of the request, each pair trimmed.
fn cookie_pairs(headers: &HeaderMap) -> impl Iterator<Item = (&str, &str)> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
}

/// The values of every `isto_session` cookie in the request (there may be several).
pub(super) fn session_tokens(headers: &HeaderMap) -> SessionTokens {
    let values = cookie_pairs(headers).filter(|(name, _)| name.trim() == SESSION_COOKIE);
    SessionTokens::new(values.map(|(_, value)| value.trim().trim_matches('"').to_owned()))
}

/// The request's valid session ([`accounts::signed_in`]). Reads the store.
pub(super) fn signed_in(base: &Base, headers: &HeaderMap) -> Option<Signed> {
    accounts::signed_in(base, &session_tokens(headers))
}

/// The signed-in account `(id, role)` of the request ([`signed_in`]). Reads the store.
pub(super) fn current(base: &Base, headers: &HeaderMap) -> Option<(String, String)> {
    signed_in(base, headers).map(|s| (s.account.id, s.account.role))
}

/// A `Set-Cookie` value of the pages' cookies: `name=value`, `Path=/`, `Max-Age`
/// (seconds), `HttpOnly`, `SameSite=Lax`, and `Secure` on an https public URL.
fn set_cookie(base: &Base, name: &str, value: &str, max_age: i64) -> String {
    let secure = if base.settings().public_url.is_https() { "; Secure" } else { "" };
    format!("{name}={value}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Lax{secure}")
}

/// The `Set-Cookie` value that stores a session token.
pub(super) fn session_cookie(base: &Base, token: &str) -> String {
    set_cookie(base, SESSION_COOKIE, token, SESSION_TTL_SECS)
}

/// The `Set-Cookie` value that deletes the session cookie.
pub(super) fn clear_cookie(base: &Base) -> String {
    set_cookie(base, SESSION_COOKIE, "", 0)
}

/// The pre-session cookie on https (`__Host-`: Secure, Path=/, no Domain).
const PRE_SESSION_COOKIE_HTTPS: &str = "__Host-isto_pre";
/// The pre-session cookie on plain http (a loopback or development holder).
const PRE_SESSION_COOKIE_HTTP: &str = "isto_pre";
/// Lifetime of the pre-session cookie, seconds: as long as a form's CSRF token.
const PRE_SESSION_TTL_SECS: i64 = 7200;

/// The pre-session cookie of the sign-in and sign-up forms: their CSRF tokens are bound
/// to the hash of its random value, so only the browser that fetched a form can post it.
pub(super) struct PreSession {
    /// What the forms' CSRF tokens are bound to (`token_hash("pre-session", value)`).
    pub(super) binding: String,
    /// The `Set-Cookie` to send when the request had no such cookie yet.
    set_cookie: Option<HeaderValue>,
}

impl PreSession {
    fn cookie_name(base: &Base) -> &'static str {
        if base.settings().public_url.is_https() {
            PRE_SESSION_COOKIE_HTTPS
        } else {
            PRE_SESSION_COOKIE_HTTP
        }
    }

    /// The binding of the request's pre-session cookie, if it has a well-formed one.
    pub(super) fn of(base: &Base, headers: &HeaderMap) -> Option<String> {
        let name = Self::cookie_name(base);
        cookie_pairs(headers)
            .find(|(n, v)| {
                *n == name
                    && (16..=64).contains(&v.len())
                    && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            })
            .map(|(_, v)| crate::crypto::token_hash("pre-session", v))
    }

    /// The request's pre-session, or a new one with its cookie (for a form's GET).
    pub(super) fn for_form(base: &Base, headers: &HeaderMap) -> Self {
        if let Some(binding) = Self::of(base, headers) {
            return Self { binding, set_cookie: None };
        }
        let value = crate::crypto::new_token(crate::crypto::TOKEN_BYTES);
        let cookie = set_cookie(base, Self::cookie_name(base), value.expose(), PRE_SESSION_TTL_SECS);
        Self {
            binding: crate::crypto::token_hash("pre-session", value.expose()),
            set_cookie: HeaderValue::from_str(&cookie).ok(),
        }
    }

    /// `res` with the new cookie, if any.
    pub(super) fn set_on(self, mut res: Response) -> Response {
        if let Some(c) = self.set_cookie {
            res.headers_mut().append(header::SET_COOKIE, c);
        }
        res
    }
}
