//! The HTTP face of the authorization server ([`crate::oauth`]): its machine endpoints,
//! their CORS and body limit, and the one conversion of an [`OAuthError`] into a
//! response — used here and by the MCP endpoints' bearer gate (`crate::mcp::service`).
//! The consent page `GET|POST /oauth/authorize` is [`super::authorize`]'s.

use crate::net::ClientAddr;
use crate::oauth::{self, Challenge, OAuthError, Resource, Server};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde_json::Value;
use std::sync::Arc;

/// Largest body accepted by the registration, token and revocation endpoints.
const BODY_LIMIT: usize = 16 * 1024;

type Shared = Arc<Server>;

/// A machine endpoint's answer: `Err` is the refusal, answered as [`OAuthError`] says.
type Answer = Result<Response, OAuthError>;

/// The authorization server and protected-resource routes:
/// `GET /.well-known/oauth-authorization-server`,
/// `GET /.well-known/oauth-protected-resource[/mcp/buyer|/mcp/seller]`,
/// `POST /oauth/register`, `POST /oauth/token`, `POST /oauth/revoke` (the page
/// `GET|POST /oauth/authorize` is routed by [`super::routes`]).
///
/// The machine endpoints (metadata, register, token, revoke) answer CORS requests from any
/// origin (browser-based MCP clients), so the app's same-origin POST check must let
/// `/oauth/register`, `/oauth/token` and `/oauth/revoke` through.
pub fn routes(ctx: Arc<Server>) -> Router {
    let api = Router::new()
        .route("/.well-known/oauth-authorization-server", get(authorization_server).options(preflight))
        .route("/.well-known/oauth-protected-resource", get(resource::<false>).options(preflight))
        .route("/.well-known/oauth-protected-resource/mcp/buyer", get(resource::<false>).options(preflight))
        .route("/.well-known/oauth-protected-resource/mcp/seller", get(resource::<true>).options(preflight))
        .route("/oauth/register", post(register).options(preflight))
        .route("/oauth/token", post(token).options(preflight))
        .route("/oauth/revoke", post(revoke).options(preflight))
        // Metadata a client may probe for that this holder does not publish (path-suffixed
        // variants, OpenID discovery): a JSON 404 that a browser-based client can read,
        // with the CORS headers of the rest.
        .route("/.well-known/oauth-authorization-server/{*rest}", get(no_metadata).options(preflight))
        .route("/.well-known/oauth-protected-resource/{*rest}", get(no_metadata).options(preflight))
        .route("/.well-known/openid-configuration", get(no_metadata).options(preflight))
        .route("/.well-known/openid-configuration/{*rest}", get(no_metadata).options(preflight))
        .layer(axum::middleware::map_response(cors_headers));
    api.layer(DefaultBodyLimit::max(BODY_LIMIT)).with_state(ctx)
}

/// An OAuth refusal as HTTP, as [`OAuthError`] describes it.
impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let mut res = (self.status, Json(self.body())).into_response();
        let h = res.headers_mut();
        match &self.challenge {
            Challenge::None => {}
            Challenge::Basic => {
                h.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"isto\""));
            }
            Challenge::Bearer(v) => {
                if let Ok(v) = HeaderValue::from_str(v) {
                    h.insert(header::WWW_AUTHENTICATE, v);
                }
            }
        }
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        if !matches!(self.challenge, Challenge::Bearer(_)) {
            h.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
        }
        if let Some(secs) = self.retry_after {
            h.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        res
    }
}

/// The `Authorization` header's value, if the request has one in visible ASCII.
fn authorization(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok())
}

/// A JSON answer that must not be cached (tokens, credentials).
fn no_store(status: StatusCode, body: impl serde::Serialize) -> Response {
    (status, [(header::CACHE_CONTROL, "no-store"), (header::PRAGMA, "no-cache")], Json(body)).into_response()
}

/// A public metadata document, cached for 5 minutes.
pub(super) fn cached_json(v: Value) -> Response {
    ([(header::CACHE_CONTROL, "public, max-age=300")], Json(v)).into_response()
}

/// `GET /.well-known/oauth-authorization-server`.
async fn authorization_server(State(ctx): State<Shared>) -> Response {
    cached_json(ctx.authorization_server_document())
}

/// `GET /.well-known/oauth-protected-resource[/mcp/buyer]`, or `…/mcp/seller` (`SELLER`).
async fn resource<const SELLER: bool>(State(ctx): State<Shared>) -> Response {
    cached_json(ctx.resource_document(if SELLER { Resource::Seller } else { Resource::Buyer }))
}

/// `POST /oauth/register` ([`oauth::register_client`]): `201` with the registration.
async fn register(State(ctx): State<Shared>, client_addr: Option<Extension<ClientAddr>>, body: Bytes) -> Answer {
    Ok(no_store(StatusCode::CREATED, oauth::register_client(&ctx, client_addr.map(|Extension(c)| c), &body).await?))
}

/// `POST /oauth/token` ([`oauth::grant_token`]): `200` with the tokens.
async fn token(State(ctx): State<Shared>, headers: HeaderMap, body: Bytes) -> Answer {
    Ok(no_store(StatusCode::OK, oauth::grant_token(&ctx, authorization(&headers), &body).await?))
}

/// `POST /oauth/revoke` ([`oauth::revoke_token`]): `200` with no body.
async fn revoke(State(ctx): State<Shared>, headers: HeaderMap, body: Bytes) -> Answer {
    oauth::revoke_token(&ctx, authorization(&headers), &body).await?;
    Ok((StatusCode::OK, [(header::CACHE_CONTROL, "no-store")]).into_response())
}

/// CORS for the machine endpoints: any origin, no cookies.
async fn cors_headers(mut res: Response) -> Response {
    let h = res.headers_mut();
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    h.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static("WWW-Authenticate"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    res
}

/// A discovery document this holder does not publish: 404 with a JSON error body.
async fn no_metadata() -> Response {
    let body = serde_json::json!({"error": "not_found", "error_description": "no such metadata document on this holder; see /.well-known/oauth-authorization-server and /.well-known/oauth-protected-resource/mcp/buyer"});
    (StatusCode::NOT_FOUND, Json(body)).into_response()
}

/// `OPTIONS`: the CORS preflight answer.
async fn preflight() -> Response {
    (
        StatusCode::NO_CONTENT,
        [
            (header::ACCESS_CONTROL_ALLOW_METHODS, "GET, POST, OPTIONS"),
            (header::ACCESS_CONTROL_ALLOW_HEADERS, "Authorization, Content-Type, MCP-Protocol-Version"),
            (header::ACCESS_CONTROL_MAX_AGE, "86400"),
        ],
    )
        .into_response()
}
