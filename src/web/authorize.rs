//! The OAuth authorization page (RFC 6749 §4.1.1 as profiled by OAuth 2.1 and MCP):
//! `GET /oauth/authorize` shows the consent page ("Allow access?"); `POST
//! /oauth/authorize` (Allow/Deny, CSRF token) answers the client.
//!
//! The authorization server ([`crate::oauth::authorize`]) validates the request and
//! issues the code (see its module docs for the order of checks); this page adds the
//! person. Refusals go back to the client only when someone is signed in: before that
//! every refusal is a page, so that the holder never sends a browser to a registered URI
//! for a mere link (an open redirect for whoever registers a client). Nobody signed in →
//! 303 to `/signin?next=<this request>`; a wrong-role account → a 403 page.

use super::i18n::AuthorizeText;
use super::{now_unix, page, pages, Page};
use crate::base::Base;
use crate::crypto::token_hash;
use crate::oauth::authorize::{self, AuthzRequest, Refusal, PARAMS};
use crate::oauth::{Params, Resource, Server};
use crate::policy::{self, Action, Credential, Denied};
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use maud::{html, Markup};
use std::sync::Arc;

const CSRF_PURPOSE: &str = "oauth-authorize";

/// Who is signed in on the holder's pages; tests sign people in with their own.
pub(super) trait People: Send + Sync + 'static {
    /// The signed-in account's id and role (`"buyer"` | `"seller"`), if any.
    fn current(&self, base: &Base, headers: &HeaderMap) -> Option<(String, String)>;
}

/// The accounts service's sessions.
pub(super) struct Sessions;

impl People for Sessions {
    fn current(&self, base: &Base, headers: &HeaderMap) -> Option<(String, String)> {
        super::cookies::current(base, headers)
    }
}

struct Ctx {
    app: AppState,
    server: Arc<Server>,
    people: Arc<dyn People>,
}

type Shared = Arc<Ctx>;

/// `GET|POST /oauth/authorize` (body limit and headers: [`super::routes`]).
pub(super) fn routes(app: AppState, server: Arc<Server>, people: Arc<dyn People>) -> Router {
    let ctx = Arc::new(Ctx { app, server, people });
    Router::new().route("/oauth/authorize", get(consent_page).post(decide)).with_state(ctx)
}

/// 303 to `target`, or 400 when it cannot be a `Location`.
fn see_other(target: &str, unusable: &'static str) -> Response {
    match HeaderValue::from_str(target) {
        Ok(v) => (StatusCode::SEE_OTHER, [(header::LOCATION, v)]).into_response(),
        Err(_) => (StatusCode::BAD_REQUEST, unusable).into_response(),
    }
}

/// 303 to the client's redirect URI.
fn to_client(url: &str) -> Response {
    see_other(url, "The redirect_uri cannot be used in an HTTP redirect.\n")
}

/// The answer to a refused request; `signed_in`: whether someone is signed in (only
/// then may a refusal go back to the client).
fn refusal(ctx: &Ctx, headers: &HeaderMap, r: Refusal, signed_in: bool) -> Response {
    let u = super::browser_ui(&ctx.app, headers);
    let t = u.authorize;
    match r {
        Refusal::Page(why) => page(&ctx.app, u, StatusCode::BAD_REQUEST, t.error_title, pages::message(&why, true)),
        Refusal::Redirect { error, description, .. } if !signed_in => {
            let why = format!("{} {error}: {description}.", t.cannot_answer);
            page(&ctx.app, u, StatusCode::BAD_REQUEST, t.error_title, pages::message(&why, true))
        }
        Refusal::Redirect { to, state, error, description } => {
            to_client(&authorize::error_url(&ctx.server, &to, state.as_deref(), error, &description))
        }
        Refusal::Internal => {
            page(&ctx.app, u, StatusCode::INTERNAL_SERVER_ERROR, t.error_title, pages::message(t.internal, true))
        }
    }
}

/// 303 to the sign-in page, coming back to this authorization request.
fn signin(p: &Params) -> Response {
    let query = serde_urlencoded::to_string(p.pairs(&PARAMS)).unwrap_or_default();
    super::to_signin(&format!("/oauth/authorize?{query}"))
}

/// The signed-in person, checked against the resource's role. `Err` is the response
/// (sign-in redirect, or the wrong-account page).
#[allow(clippy::result_large_err)] // the Err is the response to send, as callers want it
fn person(ctx: &Ctx, headers: &HeaderMap, p: &Params, r: &AuthzRequest) -> Result<String, Response> {
    let current = ctx.people.current(&ctx.app.base, headers);
    let decision =
        policy::authorize(&Credential::session(current.as_ref()), Action::Authorize(r.resource), policy::no_lookup)
            .map_err(policy::Refusal::denied);
    if let Err(denied) = decision {
        if denied == Denied::MissingCredentials {
            return Err(signin(p));
        }
        let u = super::browser_ui(&ctx.app, headers);
        let t = u.authorize;
        let why = if r.resource == Resource::Buyer { t.wrong_role_buyer } else { t.wrong_role_seller };
        let (to, state) = (&r.redirect_uri, r.state.as_deref());
        let back = authorize::error_url(&ctx.server, to, state, "access_denied", "wrong account role");
        let body = pages::message_link(why, true, &back, t.back);
        return Err(page(&ctx.app, u, StatusCode::FORBIDDEN, t.wrong_role_title, body));
    }
    Ok(current.map(|(id, _)| id).unwrap_or_default())
}

/// The value the consent form's CSRF token is bound to: the person and every parameter
/// that decides what the code grants.
fn binding(r: &AuthzRequest, account_id: &str) -> String {
    let sent = if r.redirect_uri_sent { "1" } else { "0" };
    let fields = [
        account_id,
        &r.client.client_id,
        &r.redirect_uri,
        sent,
        r.state.as_deref().unwrap_or(""),
        &r.code_challenge,
        &r.scopes.join(" "),
        r.resource.path(),
    ];
    token_hash("oauth-authorize", &fields.join("\u{0}"))
}

/// The validated request and the signed-in person who may answer it. `Err` is the
/// response: the refusal, the sign-in redirect or the wrong-account page.
async fn checked(ctx: &Ctx, headers: &HeaderMap, p: &Params) -> Result<(AuthzRequest, String), Response> {
    let r = match authorize::validate(&ctx.server, p).await {
        Ok(r) => r,
        Err(f) => return Err(refusal(ctx, headers, f, ctx.people.current(&ctx.app.base, headers).is_some())),
    };
    let account_id = person(ctx, headers, p, &r)?;
    Ok((r, account_id))
}

/// `GET /oauth/authorize`: the consent page.
async fn consent_page(State(ctx): State<Shared>, headers: HeaderMap, RawQuery(query): RawQuery) -> Page {
    let p = Params::parse(query.unwrap_or_default().as_bytes());
    let (r, account_id) = checked(&ctx, &headers, &p).await?;
    let csrf = ctx.app.base.keys().csrf_token(CSRF_PURPOSE, &binding(&r, &account_id), now_unix(&ctx.app));
    let u = super::browser_ui(&ctx.app, &headers);
    Ok(page(&ctx.app, u, StatusCode::OK, u.authorize.title, consent(&ctx, u.authorize, &p, &r, &csrf)))
}

/// `POST /oauth/authorize`: `decision=allow|deny` with the request's parameters and the
/// CSRF token. Allow → 303 to `redirect_uri?code=…&state=…&iss=…`; Deny →
/// `error=access_denied`.
async fn decide(State(ctx): State<Shared>, headers: HeaderMap, body: Bytes) -> Page {
    let p = Params::parse(&body);
    let (r, account_id) = checked(&ctx, &headers, &p).await?;
    let u = super::browser_ui(&ctx.app, &headers);
    let t = u.authorize;
    let now = now_unix(&ctx.app);
    let csrf =
        p.get("csrf").filter(|c| ctx.app.base.keys().csrf_valid(c, CSRF_PURPOSE, &binding(&r, &account_id), now));
    // A missing or stale token, or an unknown decision: the page of an expired form.
    let (Some(csrf), Some(decision @ ("allow" | "deny"))) = (csrf, p.get("decision")) else {
        return Ok(page(&ctx.app, u, StatusCode::BAD_REQUEST, t.error_title, pages::message(t.expired, true)));
    };
    if decision == "deny" {
        let state = r.state.as_deref();
        let denied = authorize::error_url(&ctx.server, &r.redirect_uri, state, "access_denied", "the person declined");
        return Ok(to_client(&denied));
    }
    Ok(match authorize::allow(&ctx.server, &r, account_id, csrf).await {
        Ok(Some(url)) => to_client(&url),
        Ok(None) => page(&ctx.app, u, StatusCode::BAD_REQUEST, t.error_title, pages::message(t.answered, true)),
        Err(_) => refusal(&ctx, &headers, Refusal::Internal, true),
    })
}

/// The consent page body: who asks, for what, where the answer goes, Allow and Deny.
fn consent(ctx: &Ctx, t: &AuthorizeText, p: &Params, r: &AuthzRequest, csrf: &str) -> Markup {
    let name = r.client.client_name.clone().unwrap_or_else(|| authorize::destination(&r.client.client_id));
    let holder = &ctx.app.base.settings().holder_name;
    html! {
        p { strong { (name) } " " (t.asks) " " strong { (holder) } "." }
        @if r.client.metadata_document {
            p.hint { (t.identified_by) " " code.url { (r.client.client_id) } }
        } @else {
            p.hint { (t.self_named) }
        }
        h2 { (t.can) }
        ul {
            @for s in &r.scopes {
                li { (t.scope(s)) }
            }
        }
        p { (t.returns_to) " " strong { (authorize::destination(&r.redirect_uri)) } }
        form.card method="post" action="/oauth/authorize" {
            input type="hidden" name="csrf" value=(csrf);
            @for (k, v) in p.pairs(&PARAMS) {
                input type="hidden" name=(k) value=(v);
            }
            button type="submit" name="decision" value="allow" { (t.allow) }
            " "
            button type="submit" name="decision" value="deny" { (t.deny) }
        }
    }
}
