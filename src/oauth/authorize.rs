//! The authorization endpoint's logic (RFC 6749 §4.1.1 as profiled by OAuth 2.1 and
//! MCP): request validation, the client's answer URLs and code issuance. The page that
//! asks the person (`GET|POST /oauth/authorize`) is `crate::web`'s; it calls these with
//! the parsed [`Params`].
//!
//! Order of checks: client_id and redirect_uri first — until both are trusted, every
//! refusal is shown on the holder (never a redirect to an unchecked URI); after that,
//! refusals go back to the client as `error=…&state=…&iss=…`. Then the person (the
//! page's part): nobody signed in → the sign-in page; a buyer account may authorize only
//! `/mcp/buyer` and a seller account only `/mcp/seller`.
//!
//! A missing `resource` means `<public>/mcp/buyer` (clients that predate RFC 8707 are
//! buyer agents); a missing `scope` means the client's registered scopes for that
//! resource, or all of the resource's; scopes of the other resource are dropped, and
//! nothing left is `invalid_scope`.

use super::clients::{self, ClientRecord};
use super::error::Internal;
use super::form::Params;
use super::token::{issue_code, CodeRecord};
use super::{blocking, Resource, Shared};
use crate::crypto::token_hash;

/// The request parameters, in the order they are written back into URLs.
pub const PARAMS: [&str; 8] = [
    "response_type",
    "client_id",
    "redirect_uri",
    "scope",
    "state",
    "code_challenge",
    "code_challenge_method",
    "resource",
];

/// A validated authorization request.
#[derive(Debug, Clone)]
pub struct AuthzRequest {
    /// The client asking (registered, or read from its metadata document).
    pub client: ClientRecord,
    /// The redirect URI to answer to (the requested one, port included).
    pub redirect_uri: String,
    /// Whether the request named the redirect URI (else the client's only one is used;
    /// the token request must then omit it too).
    pub redirect_uri_sent: bool,
    /// The client's `state`, sent back as is.
    pub state: Option<String>,
    /// The PKCE S256 challenge (43 base64url characters).
    pub code_challenge: String,
    /// The scopes the code will grant (non-empty, all of `resource`).
    pub scopes: Vec<String>,
    /// The MCP endpoint the code is for.
    pub resource: Resource,
}

/// Why a request is refused.
#[derive(Debug)]
pub enum Refusal {
    /// Before the redirect URI is trusted: to be shown on a page of the holder (the
    /// sentence says which parameter is wrong), never a redirect.
    Page(String),
    /// Back to the client.
    Redirect {
        /// The trusted redirect URI.
        to: String,
        /// The client's `state`.
        state: Option<String>,
        /// The RFC 6749 §4.1.2.1 error code.
        error: &'static str,
        /// `error_description`.
        description: String,
    },
    /// Storage failure (logged).
    Internal,
}

impl From<Internal> for Refusal {
    fn from(_: Internal) -> Self {
        Self::Internal
    }
}

/// Checks an authorization request (the query of `GET /oauth/authorize`, or the form
/// the consent page posts back) in the order of the module docs.
///
/// # Errors
/// [`Refusal`]: a page sentence before the redirect URI is trusted, an error for the
/// client after, or an internal failure (logged).
pub async fn validate(ctx: &Shared, p: &Params) -> Result<AuthzRequest, Refusal> {
    if let Some(name) = p.first_repeated(&["client_id", "redirect_uri"]) {
        return Err(Refusal::Page(format!("{name} was sent more than once.")));
    }
    let Some(client_id) = p.get("client_id") else {
        return Err(Refusal::Page("The request has no client_id.".to_owned()));
    };
    let client = match clients::find(ctx, client_id).await? {
        Ok(c) => c,
        Err(why) => return Err(Refusal::Page(format!("The application is not known to this holder: {why}."))),
    };
    let (redirect_uri, redirect_uri_sent) = match p.get("redirect_uri") {
        Some(r) if client.redirect_uri_for(r).is_some() => (r.to_owned(), true),
        Some(_) => {
            return Err(Refusal::Page("The redirect_uri is not one the application registered.".to_owned()));
        }
        None => match client.redirect_uris.as_slice() {
            [only] => (only.clone(), false),
            _ => return Err(Refusal::Page("The request has no redirect_uri.".to_owned())),
        },
    };
    let state = p.get("state").map(str::to_owned);
    let back = |error: &'static str, description: &str| Refusal::Redirect {
        to: redirect_uri.clone(),
        state: state.clone(),
        error,
        description: description.to_owned(),
    };
    if p.is_repeated("resource") {
        return Err(back("invalid_target", "give one resource"));
    }
    if let Some(name) = p.first_repeated(&PARAMS) {
        return Err(back("invalid_request", &format!("{name} was sent more than once")));
    }
    match p.get("response_type") {
        Some("code") => {}
        None => return Err(back("invalid_request", "response_type is required")),
        Some(_) => return Err(back("unsupported_response_type", "only response_type=code is supported")),
    }
    if !client.allows_grant("authorization_code") || !client.response_types.iter().any(|r| r == "code") {
        return Err(back("unauthorized_client", "the client is not registered for the authorization code grant"));
    }
    let Some(challenge) = p.get("code_challenge") else {
        return Err(back("invalid_request", "code_challenge is required (PKCE with S256)"));
    };
    match p.get("code_challenge_method") {
        Some("S256") => {}
        None => return Err(back("invalid_request", "code_challenge_method=S256 is required")),
        Some(_) => return Err(back("invalid_request", "only code_challenge_method=S256 is supported")),
    }
    if challenge.len() != 43 || !challenge.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return Err(back("invalid_request", "code_challenge must be a base64url SHA-256 (43 characters)"));
    }
    let base = &ctx.base.settings().public_url.base;
    let resource = match p.get("resource").map(|r| Resource::from_url(base, r)) {
        None => Resource::Buyer,
        Some(Some(r)) => r,
        Some(None) => return Err(back("invalid_target", "resource must be this holder's /mcp/buyer or /mcp/seller")),
    };
    let pick = |asked: &str| -> Vec<String> {
        resource.scopes().iter().filter(|s| asked.split(' ').any(|a| a == **s)).map(|s| (*s).to_owned()).collect()
    };
    let all = resource.scopes().join(" ");
    let scopes = match p.get("scope") {
        Some(asked) => pick(asked),
        None => Some(pick(client.scope.as_deref().unwrap_or_default()))
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| pick(&all)),
    };
    if scopes.is_empty() {
        return Err(back("invalid_scope", &format!("this resource's scopes are: {all}")));
    }
    Ok(AuthzRequest {
        client,
        redirect_uri,
        redirect_uri_sent,
        state,
        code_challenge: challenge.to_owned(),
        scopes,
        resource,
    })
}

/// `uri` + `params` (query appended as is: the URI was matched exactly).
pub fn answer_url(uri: &str, params: &[(&str, &str)]) -> String {
    let sep = if uri.contains('?') { '&' } else { '?' };
    let query = serde_urlencoded::to_string(params).unwrap_or_default();
    format!("{uri}{sep}{query}")
}

/// An error answer to the client (RFC 6749 §4.1.2.1, with RFC 9207 `iss`): the URL to
/// redirect to.
pub fn error_url(ctx: &Shared, to: &str, state: Option<&str>, error: &str, description: &str) -> String {
    answer_with_iss(ctx, to, vec![("error", error), ("error_description", description)], state)
}

/// [`answer_url`] of `params`, then `state` (when the request had one) and `iss` (RFC 9207).
fn answer_with_iss<'a>(ctx: &'a Shared, to: &str, mut params: Vec<(&str, &'a str)>, state: Option<&'a str>) -> String {
    if let Some(s) = state {
        params.push(("state", s));
    }
    params.push(("iss", ctx.base.settings().public_url.base.as_str()));
    answer_url(to, &params)
}

/// The person allowed `r` on the consent form whose CSRF token is `form_token`: stores
/// a single-use code for `account_id` and returns the URL that carries it to the client
/// (`redirect_uri?code=…&state=…&iss=…`), or `Ok(None)` when that form was already
/// answered.
///
/// # Errors
/// [`Internal`] when the store fails (logged).
pub async fn allow(
    ctx: &Shared,
    r: &AuthzRequest,
    account_id: String,
    form_token: &str,
) -> Result<Option<String>, Internal> {
    let record = CodeRecord {
        client_id: r.client.client_id.clone(),
        redirect_uri: r.redirect_uri.clone(),
        redirect_uri_sent: r.redirect_uri_sent,
        code_challenge: r.code_challenge.clone(),
        scopes: r.scopes.clone(),
        resource: r.resource.url(&ctx.base.settings().public_url.base),
        account_id,
        role: r.resource.role().to_owned(),
        // `issue_code` sets the code's end from the time it stores it.
        expires_at: super::now_stamp(&ctx.base),
        family: None,
    };
    let decision = token_hash("oauth-consent-form", form_token);
    let code = blocking(ctx, "oauth issue code", move |h| issue_code(h, record, &decision)).await?;
    let Some(code) = code else {
        tracing::info!(client_id = %r.client.client_id, "oauth: consent form posted again; no second code");
        return Ok(None);
    };
    tracing::info!(client_id = %r.client.client_id, resource = r.resource.path(), "oauth: authorization code issued");
    Ok(Some(answer_with_iss(ctx, &r.redirect_uri, vec![("code", code.expose())], r.state.as_deref())))
}

/// Where the answer goes, as a person reads it: the host, or the scheme of a native app.
pub fn destination(uri: &str) -> String {
    match url::Url::parse(uri) {
        Ok(u) => match u.host_str() {
            Some(h) if u.scheme() == "http" || u.scheme() == "https" => h.to_owned(),
            _ => format!("{}:", u.scheme()),
        },
        Err(_) => uri.to_owned(),
    }
}
