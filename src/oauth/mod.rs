//! isto's own OAuth 2.1 authorization server and the protected-resource side of
//! `/mcp/buyer` and `/mcp/seller` (PROTOCOL.md §1, §7). No external identity provider:
//! people sign in on the holder's pages (`crate::web`, over the accounts service).
//!
//! * Metadata (`metadata`): RFC 8414 and RFC 9728 for `/mcp/buyer` and `/mcp/seller`.
//! * Clients ([`clients`]): RFC 7591 dynamic registration and client ID metadata
//!   documents; redirect URI rules; client secrets under a keyed hash.
//! * `/oauth/authorize` ([`authorize`]): authorization code with PKCE S256 only, RFC 8707
//!   `resource`, RFC 9207 `iss`; the consent page is `crate::web`'s.
//! * `/oauth/token` and `/oauth/revoke` (`token`): single-use codes, access tokens bound
//!   to one resource, refresh tokens rotated with reuse detection; RFC 7009.
//! * [`admit`]: the resource server's check.
//!
//! HTTP is the faces' (`crate::web` routes the endpoints above; `crate::mcp` gates its
//! endpoints with [`admit`]): this module takes bodies as bytes and header values and
//! gives the RFC JSON documents, or an [`OAuthError`] that says all of the refusal.
//!
//! Codes, tokens and client secrets are random values stored only as hashes in the
//! `records` table (namespaces `Client`, `AuthCode`, `Token`, `TokenFamily`,
//! `AuthDecision`). A token is valid while its record is unexpired and its family exists
//! and is not revoked, so revoking a family is one write. Nothing here logs a token,
//! code, verifier, secret or request body.
//!
//! Every stored time is a [`Stamp`]; one that does not read is [`StoreError::Corrupt`]
//! naming the record (by the token's hash), never an expired token, and the purge leaves
//! it with a warning. What clients see (`expires_in`, `client_id_issued_at`) stays whole
//! seconds.
//!
//! Errors: a fallible item here fails with storage errors (and key errors where it opens
//! a sealed value) unless its `# Errors` says more.

pub mod authorize;
mod clients;
mod error;
mod form;
mod metadata;
mod purge;
mod token;

use crate::base::Base;
use crate::crypto::token_hash;
use crate::policy::{self, Action, Credential, Denied, Refusal};
use crate::records::Stamp;
use crate::store::{Ns, Reads, StoreError};
use std::sync::Arc;

pub use clients::{register_client, ClientRecord};
pub use error::{Challenge, OAuthError};
pub use form::Params;
#[cfg(test)]
pub(crate) use purge::sweep;
pub use purge::{purge_tx, revoke_account, OAuthPurged, CLIENT_GRANT_WINDOW_SECS, CLIENT_UNUSED_SECS};
pub use token::{grant_token, revoke_token};

pub use crate::policy::{Resource, SCOPES, SCOPE_DEMAND, SCOPE_INTENTS, SCOPE_OFFERS};

/// Lifetime of an authorization code, seconds.
pub const CODE_TTL_SECS: i64 = 60;
/// Lifetime of an access token, seconds.
pub const ACCESS_TTL_SECS: i64 = 3600;
/// Lifetime of a refresh token, seconds (each rotation starts a new 30 days).
pub const REFRESH_TTL_SECS: i64 = 30 * 86400;

/// A verified access token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The account the token acts for.
    pub account_id: String,
    /// `"buyer"` or `"seller"` (the role when the person authorized).
    pub role: String,
    /// The client the token was issued to.
    pub client_id: String,
    /// Granted scopes.
    pub scopes: Vec<String>,
    /// The resource (absolute URL) the token is bound to.
    pub resource: String,
}

impl Grant {
    /// What the access policy sees of this token: its account, role and scopes, and the
    /// resource of `base_url` (the public URL) it is bound to.
    pub fn token(&self, base_url: &str) -> policy::Token<'_> {
        policy::Token {
            account_id: &self.account_id,
            role: &self.role,
            scopes: &self.scopes,
            resource: Resource::exactly(base_url, &self.resource),
        }
    }

    /// The credential of a request that carried `grant` (none: no token).
    pub fn credential<'a>(grant: Option<&'a Self>, base_url: &str) -> Credential<'a> {
        grant.map_or(Credential::None, |g| Credential::Token(g.token(base_url)))
    }
}

/// The authorization server's shared state, built once and shared by the web face's
/// OAuth routes and its authorization page, so both see the same cached clients.
pub struct Server {
    base: Arc<Base>,
    cimd: clients::Cimd,
}

impl Server {
    /// The server over `base` (loopback `http://` metadata documents only when the
    /// holder is not served over HTTPS).
    pub fn new(base: Arc<Base>) -> Arc<Self> {
        let allow_loopback_http = !base.settings().public_url.is_https();
        Arc::new(Self { base, cimd: clients::Cimd::new(allow_loopback_http) })
    }
}

type Shared = Arc<Server>;

/// Runs a short store operation off the async threads, in the request's span. Storage
/// failures are logged here, once, by operation name only ([`error::Internal::logged`]).
async fn blocking<T, F>(ctx: &Shared, op: &'static str, f: F) -> Result<T, error::Internal>
where
    T: Send + 'static,
    F: FnOnce(&Base) -> Result<T, StoreError> + Send + 'static,
{
    let base = Arc::clone(&ctx.base);
    let span = tracing::Span::current();
    let joined = tokio::task::spawn_blocking(move || span.in_scope(|| f(&base))).await;
    joined.map_err(|e| error::Internal::logged(op, &e))?.map_err(|e| error::Internal::logged(op, &e))
}

/// The holder's clock, as stored times are held.
fn now_stamp(base: &Base) -> Stamp {
    Stamp::of(base.clock().now())
}

/// Checks `Authorization: Bearer <token>` (`authorization`: the header's value) for the
/// endpoint `resource` (its absolute URL) and `scope` (empty: any scope), as
/// [`admit`] does for what the access policy asks at the gate (tests).
#[cfg(any(test, feature = "testkit"))]
pub fn check_bearer(
    base: &Base,
    authorization: Option<&str>,
    resource: &str,
    scope: &str,
) -> Result<Grant, OAuthError> {
    let Some(resource) = Resource::exactly(&base.settings().public_url.base, resource) else {
        return Err(OAuthError::bad("invalid_target", "not an endpoint of this holder"));
    };
    let scope = Some(scope).filter(|s| !s.is_empty());
    bearer_check(base, authorization, resource, |r| Action::Reach(r, scope))
}

/// The bearer check at the gate of `resource`'s endpoint (`authorization`: the
/// `Authorization` header's value): the token must be genuine (known, unrevoked,
/// unexpired) and then allowed by [`policy::authorize`] for what the access policy asks
/// there ([`Action::connect`]: scope `intents` on `/mcp/buyer`, any scope on
/// `/mcp/seller`). One short store read.
///
/// # Errors
/// The refusal to answer ([`error::bearer_denied`]): 401 with the RFC 6750 challenge
/// (plus `error="invalid_token"` when a token was sent but is not genuine or bound to
/// another resource), 403 `insufficient_scope` (MCP step-up), 500 when the store fails.
pub fn admit(base: &Base, authorization: Option<&str>, resource: Resource) -> Result<Grant, OAuthError> {
    bearer_check(base, authorization, resource, Action::connect)
}

/// The bearer challenge of an access-policy refusal `denied` at `resource`'s endpoint
/// for the request's `grant` ([`error::bearer_denied`]; e.g. the MCP step-up of a
/// `tools/call` the token's scopes do not cover).
pub fn refuse(base: &Base, resource: Resource, grant: Option<&Grant>, denied: &Denied) -> OAuthError {
    let url_base = &base.settings().public_url.base;
    let token_scopes = grant.map(|g| g.scopes.as_slice()).unwrap_or_default();
    error::bearer_denied(&resource.metadata_url(url_base), &resource.scopes().join(" "), token_scopes, denied)
}

fn bearer_check<'a>(
    base: &Base,
    authorization: Option<&str>,
    resource: Resource,
    action: impl FnOnce(Resource) -> Action<'a>,
) -> Result<Grant, OAuthError> {
    let url_base = &base.settings().public_url.base;
    let (metadata_url, all_scopes) = (resource.metadata_url(url_base), resource.scopes().join(" "));
    let invalid = |why: &str| error::bearer_challenge(&metadata_url, &all_scopes, Some(("invalid_token", why)));
    let grant = match authorization {
        None => None,
        Some(raw) => Some(genuine_token(base, raw).map_err(|e| match e {
            // No bearer token: the plain 401 challenge without error code (RFC 6750
            // §3.1), so that the client starts the authorization flow.
            TokenProblem::Malformed => refuse(base, resource, None, &Denied::MissingCredentials),
            TokenProblem::Unknown => invalid("the access token is unknown or revoked"),
            TokenProblem::Expired => invalid("the access token expired"),
            TokenProblem::Store(e) => error::Internal::logged("bearer check", &e).into(),
        })?),
    };
    let who = Grant::credential(grant.as_ref(), url_base);
    match (policy::authorize(&who, action(resource), policy::no_lookup).map_err(Refusal::denied), grant) {
        (Ok(_), Some(g)) => Ok(g),
        (Ok(_), None) => Err(refuse(base, resource, None, &Denied::MissingCredentials)),
        (Err(d), g) => Err(refuse(base, resource, g.as_ref(), &d)),
    }
}

/// Why a presented access token is not genuine.
enum TokenProblem {
    /// The header is not `Bearer <token>` (another scheme, an empty or split token).
    Malformed,
    /// Unknown, revoked, or not an access token.
    Unknown,
    /// Past its lifetime.
    Expired,
    /// The store failed.
    Store(StoreError),
}

/// The grant of the `Authorization` header's (`raw`) bearer token, if the token is genuine.
fn genuine_token(base: &Base, raw: &str) -> Result<Grant, TokenProblem> {
    let token = Some(raw).and_then(|v| {
        let (scheme, rest) = v.trim().split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim()).filter(|t| !t.is_empty() && !t.contains(' '))
    });
    let token = token.ok_or(TokenProblem::Malformed)?;
    let hash = token_hash(token::KIND_ACCESS, token);
    let found = base.store().read(|rx| -> Result<_, StoreError> {
        let Some(t) = rx.record::<token::TokenRecord>(Ns::Token, &hash)? else { return Ok(None) };
        let family = rx.record::<token::FamilyRecord>(Ns::TokenFamily, &t.family)?;
        Ok(Some((t, family)))
    });
    let (t, family) = found.map_err(TokenProblem::Store)?.ok_or(TokenProblem::Unknown)?;
    if t.kind != token::TokenKind::Access || family.as_ref().is_none_or(|f| f.revoked) {
        return Err(TokenProblem::Unknown);
    }
    if now_stamp(base) >= t.expires_at {
        return Err(TokenProblem::Expired);
    }
    Ok(Grant { account_id: t.account_id, role: t.role, client_id: t.client_id, scopes: t.scopes, resource: t.resource })
}
