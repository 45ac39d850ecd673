//! The authorization endpoint (RFC 6749 §4.1.1 as profiled by OAuth 2.1 and MCP):
//! `GET /oauth/authorize` validates the request and shows the consent page; `POST
//! /oauth/authorize` (Allow/Deny, CSRF token) answers the client.
//!
//! Order of checks: client_id and redirect_uri first — until both are trusted, every
//! refusal is an HTML page on the holder (never a redirect to an unchecked URI); after
//! that, refusals go back to the client as `error=…&state=…&iss=…`. Then the person:
//! nobody signed in → 303 to `/signin?next=<this request>`; a buyer account may
//! authorize only `/mcp/buyer` and a seller account only `/mcp/seller`.
//!
//! A missing `resource` means `<public>/mcp/buyer` (clients that predate RFC 8707 are
//! buyer agents); a missing `scope` means the client's registered scopes for that
//! resource, or all of the resource's; scopes of the other resource are dropped, and
//! nothing left is `invalid_scope`. Pages have no JavaScript; the CSP leaves out
//! `form-action` because the Allow answer redirects to the client's own URI.

use super::clients::{self, ClientRecord};
use super::error::Internal;
use super::form::Params;
use super::token::{issue_code, CodeRecord};
use super::{blocking, now_unix, Resource, Shared, SCOPE_DEMAND, SCOPE_INTENTS, SCOPE_OFFERS};
use crate::crypto::token_hash;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::{html, Markup, DOCTYPE};

/// The request parameters, in the order they are written back into URLs.
const PARAMS: [&str; 8] = [
    "response_type",
    "client_id",
    "redirect_uri",
    "scope",
    "state",
    "code_challenge",
    "code_challenge_method",
    "resource",
];

/// CSRF purpose of the consent form.
const CSRF_PURPOSE: &str = "oauth-authorize";

const CSP: &str = "default-src 'none'; style-src 'self'; frame-ancestors 'none'";

/// Security headers of every authorization page response (redirects and errors too).
pub async fn page_headers(mut res: Response) -> Response {
    let h = res.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    res
}

/// A validated authorization request.
struct AuthzRequest {
    client: ClientRecord,
    /// The redirect URI to answer to (the requested one, port included).
    redirect_uri: String,
    redirect_uri_sent: bool,
    state: Option<String>,
    code_challenge: String,
    scopes: Vec<String>,
    resource: Resource,
}

/// Why a request is refused.
enum Refusal {
    /// Before the redirect URI is trusted: an HTML page on the holder.
    Page(String),
    /// Back to the client.
    Redirect { to: String, state: Option<String>, error: &'static str, description: String },
    /// Storage failure (logged).
    Internal,
}

impl From<Internal> for Refusal {
    fn from(_: Internal) -> Self {
        Self::Internal
    }
}

fn is_b64url(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

async fn validate(ctx: &Shared, p: &Params) -> Result<AuthzRequest, Refusal> {
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
    if challenge.len() != 43 || !is_b64url(challenge) {
        return Err(back("invalid_request", "code_challenge must be a base64url SHA-256 (43 characters)"));
    }
    let base = &ctx.base.settings.public_url.base;
    let resource = match p.get("resource") {
        None => Resource::Buyer,
        Some(r) => match Resource::from_url(base, r) {
            Some(r) => r,
            None => return Err(back("invalid_target", "resource must be this holder's /mcp/buyer or /mcp/seller")),
        },
    };
    let pick = |asked: &str| -> Vec<String> {
        resource.scopes().iter().filter(|s| asked.split(' ').any(|a| a == **s)).map(|s| (*s).to_owned()).collect()
    };
    let scopes = match p.get("scope") {
        Some(asked) => pick(asked),
        None => {
            let registered = client.scope.as_deref().map(pick).unwrap_or_default();
            if registered.is_empty() {
                resource.scopes().iter().map(|s| (*s).to_owned()).collect()
            } else {
                registered
            }
        }
    };
    if scopes.is_empty() {
        let want = resource.scopes().join(" ");
        return Err(back("invalid_scope", &format!("this resource's scopes are: {want}")));
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

/// `redirect_uri` + `params` (query appended as is: the URI was matched exactly).
fn redirect(uri: &str, params: &[(&str, &str)]) -> Response {
    let sep = if uri.contains('?') { '&' } else { '?' };
    let query = serde_urlencoded::to_string(params).unwrap_or_default();
    let target = format!("{uri}{sep}{query}");
    match HeaderValue::from_str(&target) {
        Ok(v) => (StatusCode::SEE_OTHER, [(header::LOCATION, v)]).into_response(),
        Err(_) => (StatusCode::BAD_REQUEST, "The redirect_uri cannot be used in an HTTP redirect.\n").into_response(),
    }
}

/// An error response to the client (RFC 6749 §4.1.2.1, with RFC 9207 `iss`).
fn redirect_error(ctx: &Shared, to: &str, state: Option<&str>, error: &str, description: &str) -> Response {
    let iss = ctx.base.settings.public_url.base.as_str();
    let mut params = vec![("error", error), ("error_description", description)];
    if let Some(s) = state {
        params.push(("state", s));
    }
    params.push(("iss", iss));
    redirect(to, &params)
}

fn refusal(ctx: &Shared, r: Refusal) -> Response {
    let t = text(&ctx.base.settings.default_language);
    match r {
        Refusal::Page(why) => {
            html_page(ctx, t, StatusCode::BAD_REQUEST, t.error_title, html! { p.notice role="alert" { (why) } })
        }
        Refusal::Redirect { to, state, error, description } => {
            redirect_error(ctx, &to, state.as_deref(), error, &description)
        }
        Refusal::Internal => html_page(
            ctx,
            t,
            StatusCode::INTERNAL_SERVER_ERROR,
            t.error_title,
            html! { p.notice role="alert" { (t.internal) } },
        ),
    }
}

/// 303 to the sign-in page, coming back to this authorization request.
fn signin(p: &Params) -> Response {
    let query = serde_urlencoded::to_string(p.pairs(&PARAMS)).unwrap_or_default();
    let next = serde_urlencoded::to_string([("next", format!("/oauth/authorize?{query}"))]).unwrap_or_default();
    match HeaderValue::from_str(&format!("/signin?{next}")) {
        Ok(v) => (StatusCode::SEE_OTHER, [(header::LOCATION, v)]).into_response(),
        Err(_) => (StatusCode::BAD_REQUEST, "Bad request\n").into_response(),
    }
}

/// The signed-in person, checked against the resource's role. `Err` is the response
/// (sign-in redirect, or the wrong-account page).
#[allow(clippy::result_large_err)] // the Err is the response to send, as callers want it
fn person(ctx: &Shared, headers: &HeaderMap, p: &Params, r: &AuthzRequest) -> Result<String, Response> {
    let Some((account_id, role)) = ctx.people.current(headers) else { return Err(signin(p)) };
    if role != r.resource.role() {
        let t = text(&ctx.base.settings.default_language);
        let why = if r.resource == Resource::Buyer { t.wrong_role_buyer } else { t.wrong_role_seller };
        let iss = ctx.base.settings.public_url.base.as_str();
        let mut params = vec![("error", "access_denied"), ("error_description", "wrong account role")];
        if let Some(s) = r.state.as_deref() {
            params.push(("state", s));
        }
        params.push(("iss", iss));
        let sep = if r.redirect_uri.contains('?') { '&' } else { '?' };
        let back = format!("{}{sep}{}", r.redirect_uri, serde_urlencoded::to_string(&params).unwrap_or_default());
        let body = html! {
            p.notice role="alert" { (why) }
            p { a href=(back) { (t.back) } }
        };
        return Err(html_page(ctx, t, StatusCode::FORBIDDEN, t.wrong_role_title, body));
    }
    Ok(account_id)
}

/// `GET /oauth/authorize`: the consent page.
pub async fn page(State(ctx): State<Shared>, headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    let p = Params::parse(query.unwrap_or_default().as_bytes());
    let r = match validate(&ctx, &p).await {
        Ok(r) => r,
        Err(f) => return refusal(&ctx, f),
    };
    let account_id = match person(&ctx, &headers, &p, &r) {
        Ok(a) => a,
        Err(res) => return res,
    };
    let csrf = ctx.base.keys.csrf_token(CSRF_PURPOSE, &binding(&r, &account_id), now_unix(&ctx.base));
    let t = text(&ctx.base.settings.default_language);
    html_page(&ctx, t, StatusCode::OK, t.title, consent(&ctx, t, &p, &r, &csrf))
}

/// `POST /oauth/authorize`: `decision=allow|deny` with the request's parameters and the
/// CSRF token. Allow → 303 to `redirect_uri?code=…&state=…&iss=…`; Deny →
/// `error=access_denied`.
pub async fn decide(State(ctx): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let p = Params::parse(&body);
    let r = match validate(&ctx, &p).await {
        Ok(r) => r,
        Err(f) => return refusal(&ctx, f),
    };
    let account_id = match person(&ctx, &headers, &p, &r) {
        Ok(a) => a,
        Err(res) => return res,
    };
    let t = text(&ctx.base.settings.default_language);
    let now = now_unix(&ctx.base);
    let csrf_ok =
        p.get("csrf").is_some_and(|c| ctx.base.keys.csrf_valid(c, CSRF_PURPOSE, &binding(&r, &account_id), now));
    if !csrf_ok {
        return html_page(
            &ctx,
            t,
            StatusCode::BAD_REQUEST,
            t.error_title,
            html! { p.notice role="alert" { (t.expired) } },
        );
    }
    match p.get("decision") {
        Some("allow") => {}
        Some("deny") => {
            return redirect_error(&ctx, &r.redirect_uri, r.state.as_deref(), "access_denied", "the person declined");
        }
        _ => {
            return html_page(
                &ctx,
                t,
                StatusCode::BAD_REQUEST,
                t.error_title,
                html! { p.notice role="alert" { (t.expired) } },
            )
        }
    }
    let role = r.resource.role().to_owned();
    let record = CodeRecord {
        client_id: r.client.client_id.clone(),
        redirect_uri: r.redirect_uri.clone(),
        redirect_uri_sent: r.redirect_uri_sent,
        code_challenge: r.code_challenge.clone(),
        scopes: r.scopes.clone(),
        resource: r.resource.url(&ctx.base.settings.public_url.base),
        account_id,
        role,
        expires_at: 0,
        family: None,
    };
    let code = match blocking(&ctx, "oauth issue code", move |h| issue_code(h, record)).await {
        Ok(c) => c,
        Err(e) => return refusal(&ctx, e.into()),
    };
    tracing::info!(client_id = %r.client.client_id, resource = r.resource.path(), "oauth: authorization code issued");
    let iss = ctx.base.settings.public_url.base.as_str();
    let mut params = vec![("code", code.expose())];
    if let Some(s) = r.state.as_deref() {
        params.push(("state", s));
    }
    params.push(("iss", iss));
    redirect(&r.redirect_uri, &params)
}

/// Where the answer goes, as a person reads it: the host, or the scheme of a native app.
fn destination(uri: &str) -> String {
    match url::Url::parse(uri) {
        Ok(u) => match u.host_str() {
            Some(h) if u.scheme() == "http" || u.scheme() == "https" => h.to_owned(),
            _ => format!("{}:", u.scheme()),
        },
        Err(_) => uri.to_owned(),
    }
}

fn consent(ctx: &Shared, t: &Text, p: &Params, r: &AuthzRequest, csrf: &str) -> Markup {
    let name = r.client.client_name.clone().unwrap_or_else(|| destination(&r.client.client_id));
    let holder = &ctx.base.settings.holder_name;
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
        p { (t.returns_to) " " strong { (destination(&r.redirect_uri)) } }
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

fn html_page(ctx: &Shared, t: &Text, status: StatusCode, title: &str, body: Markup) -> Response {
    let holder = &ctx.base.settings.holder_name;
    let doc = html! {
        (DOCTYPE)
        html lang=(t.lang) {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="no-referrer";
                meta name="robots" content="noindex, nofollow";
                title { (title) " – " (holder) }
                link rel="stylesheet" href="/assets/style.css";
            }
            body {
                header.site { a href="/" { (holder) } }
                main #main {
                    h1 { (title) }
                    (body)
                }
            }
        }
    };
    (status, doc).into_response()
}

/// The page texts of one language.
struct Text {
    lang: &'static str,
    title: &'static str,
    asks: &'static str,
    identified_by: &'static str,
    self_named: &'static str,
    can: &'static str,
    returns_to: &'static str,
    allow: &'static str,
    deny: &'static str,
    error_title: &'static str,
    internal: &'static str,
    expired: &'static str,
    wrong_role_title: &'static str,
    wrong_role_buyer: &'static str,
    wrong_role_seller: &'static str,
    back: &'static str,
    intents: &'static str,
    offers: &'static str,
    demand: &'static str,
}

impl Text {
    fn scope(&self, s: &str) -> &'static str {
        match s {
            SCOPE_INTENTS => self.intents,
            SCOPE_OFFERS => self.offers,
            SCOPE_DEMAND => self.demand,
            _ => "",
        }
    }
}

const EN: Text = Text {
    lang: "en",
    title: "Allow access?",
    asks: "asks to act for you at",
    identified_by: "The application identifies itself by",
    self_named: "The application chose this name itself; the holder has not checked who runs it.",
    can: "It will be able to:",
    returns_to: "Your answer goes back to",
    allow: "Allow",
    deny: "Deny",
    error_title: "Authorization request refused",
    internal: "Something went wrong on our side. Please try again later.",
    expired: "This form has expired or did not come from this page. Start again from the application.",
    wrong_role_title: "Wrong account",
    wrong_role_buyer: "This application asks for buyer access, but you are signed in with a seller account.",
    wrong_role_seller: "This application asks for seller access, but you are signed in with a buyer account.",
    back: "Return to the application",
    intents: "publish, read, change and withdraw your purchase intents and see their matching offers",
    offers: "see open pseudonymous intents and send offers in reply",
    demand: "read aggregated demand summaries",
};

const SK: Text = Text {
    lang: "sk",
    title: "Povoliť prístup?",
    asks: "žiada o oprávnenie konať vo vašom mene na stránke",
    identified_by: "Aplikácia sa identifikuje adresou",
    self_named: "Tento názov si aplikácia zvolila sama; prevádzkovateľ neoveril, kto ju prevádzkuje.",
    can: "Bude môcť:",
    returns_to: "Vaša odpoveď sa vráti na",
    allow: "Povoliť",
    deny: "Zamietnuť",
    error_title: "Žiadosť o prístup bola odmietnutá",
    internal: "Na našej strane sa niečo pokazilo. Skúste to prosím neskôr.",
    expired: "Platnosť formulára vypršala alebo nepochádza z tejto stránky. Začnite znova v aplikácii.",
    wrong_role_title: "Nesprávny účet",
    wrong_role_buyer: "Aplikácia žiada prístup kupujúceho, ale ste prihlásený účtom predajcu.",
    wrong_role_seller: "Aplikácia žiada prístup predajcu, ale ste prihlásený účtom kupujúceho.",
    back: "Späť do aplikácie",
    intents: "zverejňovať, čítať, meniť a sťahovať vaše nákupné zámery a vidieť k nim ponuky",
    offers: "vidieť otvorené pseudonymné zámery a posielať na ne ponuky",
    demand: "čítať súhrny dopytu",
};

const CS: Text = Text {
    lang: "cs",
    title: "Povolit přístup?",
    asks: "žádá o oprávnění jednat vaším jménem na stránce",
    identified_by: "Aplikace se identifikuje adresou",
    self_named: "Tento název si aplikace zvolila sama; provozovatel neověřil, kdo ji provozuje.",
    can: "Bude moci:",
    returns_to: "Vaše odpověď se vrátí na",
    allow: "Povolit",
    deny: "Zamítnout",
    error_title: "Žádost o přístup byla odmítnuta",
    internal: "Na naší straně se něco pokazilo. Zkuste to prosím později.",
    expired: "Platnost formuláře vypršela nebo nepochází z této stránky. Začněte znovu v aplikaci.",
    wrong_role_title: "Nesprávný účet",
    wrong_role_buyer: "Aplikace žádá přístup kupujícího, ale jste přihlášeni účtem prodejce.",
    wrong_role_seller: "Aplikace žádá přístup prodejce, ale jste přihlášeni účtem kupujícího.",
    back: "Zpět do aplikace",
    intents: "zveřejňovat, číst, měnit a stahovat vaše nákupní záměry a vidět k nim nabídky",
    offers: "vidět otevřené pseudonymní záměry a posílat na ně nabídky",
    demand: "číst souhrny poptávky",
};

/// The texts for the holder's default language (sk, cs, otherwise en).
fn text(lang: &str) -> &'static Text {
    match lang {
        "sk" => &SK,
        "cs" => &CS,
        _ => &EN,
    }
}
