//! Every HTML page of the holder (PROTOCOL.md §1 "Web pages", §4, §7): the home page,
//! the 404 page and the stylesheet (here); the pages of an intent's links
//! ([`intent_pages`]); the account pages ([`accounts`]), the OAuth authorization page
//! ([`authorize`]), the signed-in buyer's pages (`mine`) and the sellers' pages; and the
//! HTTP side of the authorization server ([`oauth`]) and of the sessions ([`cookies`]).
//!
//! One web layer: one layout ([`pages::layout`]), one table of texts and one language
//! negotiation ([`i18n`]), one security-header layer ([`security_headers`], applied
//! once in [`routes`]), one way to call a service off the async threads with one page
//! error ([`call`], [`Fail`]).
//!
//! Server-rendered with maud, no JavaScript. A GET never changes state (mail scanners
//! follow links); every state change is a POST carrying a CSRF token bound to the
//! form's purpose and the page's URL token — except the one-click unsubscribe POST
//! (the unguessable token is the authority).
//!
//! Privacy: pages show only the public [`crate::protocol::Intent`] view and no token
//! other than the page's own. Errors are logged once, by operation name only: never a
//! path, token, e-mail or form body.

mod account_pages;
#[cfg(test)]
mod account_tests;
mod accounts;
mod authorize;
#[cfg(test)]
mod authorize_tests;
mod client_limits;
mod cookies;
mod demand_page;
mod i18n;
mod intent_pages;
mod links;
#[cfg(test)]
mod links_tests;
mod mine;
pub mod oauth;
mod pages;
mod seller_pages;
#[cfg(test)]
mod tests;
mod wellknown;

pub use cookies::SESSION_COOKIE;

use crate::accounts::AccountError;
use crate::base::ServiceError;
use crate::intents::{ConfirmOutcome, ConsentOutcome};
use crate::policy::{self, Action, Credential, Denied, Refusal};
use crate::protocol::{Intent, Status};
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, RawQuery, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;
use i18n::{page_lang, ui, Ui};
use intent_pages::{
    confirm_done, confirm_page, confirm_submit, consent_page, consent_sent, consent_submit, results_page,
    unsubscribe_one_click, withdraw_page, withdraw_submit,
};
use maud::Markup;
use rust_embed::RustEmbed;
use serde::Deserialize;
use std::sync::{Arc, OnceLock};

type Shared = AppState;

/// What a page handler answers: `Err` is an answer that ended it early (the error page,
/// the CSRF page, a redirect to the sign-in page), sent as it is.
type Page = Result<Response, Response>;

/// Largest form body accepted by any page (the consent form is well under 1 KiB).
const FORM_LIMIT: usize = 16 * 1024;

/// CSRF purposes (the binding is the page's URL token).
const CSRF_CONSENT: &str = "consent";
const CSRF_CONFIRM: &str = "confirm";
const CSRF_WITHDRAW: &str = "withdraw";
const CSRF_CADENCE: &str = "cadence";

/// The pages' Content-Security-Policy: the stylesheet only, forms to this site only.
const CSP: &str = "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'";
/// The authorization page's: without `form-action`, because the Allow answer redirects
/// to the client's own URI.
const CSP_AUTHORIZE: &str = "default-src 'none'; style-src 'self'; frame-ancestors 'none'";

/// Routes of every page (PROTOCOL.md §1 "Web pages"; each handler documents its own).
/// Every page gets the body limit and [`security_headers`]; the stylesheet and the
/// well-known files do not. Any request that matches no route goes to [`unknown_path`].
pub fn routes(holder: AppState, oauth: Arc<crate::oauth::Server>) -> Router {
    pages_with(holder, oauth, Arc::new(authorize::Sessions))
}

/// [`routes`] with `people` telling the authorization page who is signed in.
fn pages_with(holder: AppState, oauth: Arc<crate::oauth::Server>, people: Arc<dyn authorize::People>) -> Router {
    let mine = mine::routes(holder.clone());
    let accounts = accounts::routes(holder.clone());
    let authorize = authorize::routes(holder.clone(), oauth, people);
    let pages = Router::new()
        .route("/", get(home))
        .route("/consent/{token}", get(consent_page).post(consent_submit))
        .route("/consent/{token}/sent", get(consent_sent))
        .route("/confirm/{token}", get(confirm_page).post(confirm_submit))
        .route("/confirm/{token}/done", get(confirm_done))
        .route("/results/{token}", get(results_page))
        .route("/results/{token}/cadence", post(links::results_cadence))
        .route("/results/{token}/cadence/{cadence}", get(links::cadence_mail_page).post(links::cadence_mail_submit))
        .route("/withdraw/{token}", get(withdraw_page).post(withdraw_submit))
        .route("/withdraw/{token}/done", get(withdraw_page))
        .route("/unsubscribe/{token}", get(withdraw_page).post(unsubscribe_one_click))
        .merge(demand_page::routes())
        .merge(seller_pages::routes())
        .with_state(holder.clone())
        .merge(mine)
        .merge(accounts)
        .merge(authorize)
        .layer(DefaultBodyLimit::max(FORM_LIMIT))
        .layer(axum::middleware::from_fn(security_headers));
    let not_found = Router::new().fallback(unknown_path).with_state(holder.clone());
    Router::new()
        .route("/assets/style.css", get(stylesheet))
        .merge(wellknown::routes().with_state(holder))
        .merge(pages)
        .merge(not_found)
}

/// The security and privacy headers of every page response (redirects and errors too):
/// `Cache-Control: no-store`, `X-Frame-Options: DENY`, the CSP (the authorization
/// page's leaves out `form-action`), `Referrer-Policy: no-referrer` (tokens are in the
/// URLs), `X-Content-Type-Options: nosniff`, and on every page but the home page
/// `X-Robots-Tag: noindex, nofollow` (pages behind tokens leak through scanners and
/// shared inboxes; search engines must not list them).
pub async fn security_headers(req: Request, next: Next) -> Response {
    let csp = if req.uri().path() == "/oauth/authorize" { CSP_AUTHORIZE } else { CSP };
    let home = req.uri().path() == "/";
    let mut res = next.run(req).await;
    set_page_headers(res.headers_mut(), csp);
    if home {
        res.headers_mut().remove(ROBOTS);
    }
    res
}

/// `X-Robots-Tag` (not in `http`'s list of headers).
const ROBOTS: &str = "x-robots-tag";

/// Puts the headers of [`security_headers`] with `csp` on a page response.
fn set_page_headers(h: &mut HeaderMap, csp: &'static str) {
    h.insert(ROBOTS, HeaderValue::from_static("noindex, nofollow"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(csp));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
}

// ---------------------------------------------------------------------------
// the stylesheet

#[derive(RustEmbed)]
#[folder = "assets/web/"]
struct Assets;

/// The stylesheet and its version (first 8 bytes of its SHA-256, hex).
struct Stylesheet {
    body: Bytes,
    version: String,
}

fn stylesheet_file() -> &'static Stylesheet {
    static CSS: OnceLock<Stylesheet> = OnceLock::new();
    CSS.get_or_init(|| match Assets::get("style.css") {
        Some(f) => {
            let version = f.metadata.sha256_hash().iter().take(8).map(|b| format!("{b:02x}")).collect();
            Stylesheet { body: Bytes::from(f.data.into_owned()), version }
        }
        None => Stylesheet { body: Bytes::new(), version: "0".into() },
    })
}

/// The stylesheet URL pages link to: versioned, so it can be cached for long.
fn stylesheet_href() -> String {
    format!("/assets/style.css?v={}", stylesheet_file().version)
}

/// `GET /assets/style.css`: cached for a year (immutable) when requested with the
/// current `?v=`, for an hour otherwise; `ETag` and `If-None-Match` → 304.
async fn stylesheet(RawQuery(query): RawQuery, headers: HeaderMap) -> Response {
    let css = stylesheet_file();
    let etag = format!("\"{}\"", css.version);
    let current = query.as_deref().is_some_and(|q| q.split('&').any(|p| p == format!("v={}", css.version)));
    let cache = if current { "public, max-age=31536000, immutable" } else { "public, max-age=3600" };
    let common = [
        (header::CACHE_CONTROL, cache.to_owned()),
        (header::ETAG, etag.clone()),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
    ];
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    if fresh {
        return (StatusCode::NOT_MODIFIED, common).into_response();
    }
    (StatusCode::OK, [(header::CONTENT_TYPE, "text/css; charset=utf-8".to_owned())], common, css.body.clone())
        .into_response()
}

// ---------------------------------------------------------------------------
// page plumbing

/// Renders a page body in the layout with `status` (never indexed).
fn page(h: &AppState, ui: &Ui, status: StatusCode, title: &str, body: Markup) -> Response {
    let doc = pages::layout(ui, &h.base.settings().holder_name, title, false, body);
    (status, doc).into_response()
}

/// Why a page request could not be answered as asked: the one page error.
enum Fail {
    /// Unknown token (one indistinguishable answer).
    NotFound,
    /// Bad input (an e-mail address or a password rule).
    Input,
    /// Not possible in the intent's state.
    State,
    /// The person already holds this many active intents, the most one may
    /// (`quotas.active_intents_per_person`, PROTOCOL.md §3 "Limits").
    PersonCap(u32),
    /// Storage, keys or a failed task: logged already, answered generically.
    Internal,
}

/// A service error as a page sees it.
trait PageError: std::fmt::Display + Send + 'static {
    /// The page answer it calls for.
    fn fail(&self) -> Fail;
}

impl PageError for ServiceError {
    fn fail(&self) -> Fail {
        match self {
            ServiceError::NotFound => Fail::NotFound,
            ServiceError::Input(_) => Fail::Input,
            ServiceError::PersonCap { limit } => Fail::PersonCap(*limit),
            e if e.is_internal() => Fail::Internal,
            _ => Fail::State,
        }
    }
}

/// After the session was checked, any failure of the sellers' list is the holder's.
impl PageError for crate::sellers::SellerError {
    fn fail(&self) -> Fail {
        Fail::Internal
    }
}

impl PageError for AccountError {
    fn fail(&self) -> Fail {
        match self {
            AccountError::Input(_) => Fail::Input,
            _ => Fail::Internal,
        }
    }
}

/// Runs a blocking service operation off the async threads, for every page. Failures
/// are logged here, once, by operation name only (bad input is the person's and is not
/// logged).
async fn call<T, E, F>(h: &Shared, op: &'static str, f: F) -> Result<T, Fail>
where
    T: Send + 'static,
    E: PageError,
    F: FnOnce(&AppState) -> Result<T, E> + Send + 'static,
{
    let holder = h.clone();
    let span = tracing::Span::current();
    match tokio::task::spawn_blocking(move || span.in_scope(|| f(&holder))).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => {
            let fail = e.fail();
            match fail {
                Fail::Internal => tracing::error!(op, error = %e, "web page: operation failed"),
                Fail::State => tracing::warn!(op, error = %e, "web page: operation refused in this state"),
                Fail::PersonCap(limit) => tracing::info!(op, limit, "web page: refused at the per-person cap"),
                Fail::NotFound | Fail::Input => {}
            }
            Err(fail)
        }
        Err(e) => {
            tracing::error!(op, error = %e, "web page: blocking task failed");
            Err(Fail::Internal)
        }
    }
}

/// The signed-in account's id when the access policy lets its session do `action`
/// (one short store read).
fn page_access(h: &AppState, headers: &HeaderMap, action: Action<'_>) -> Result<String, Denied> {
    let current = cookies::current(&h.base, headers);
    policy::authorize(&Credential::session(current.as_ref()), action, policy::no_lookup)
        .map_err(Refusal::denied)
        .map(|p| p.account_id().unwrap_or_default().to_owned())
}

/// The texts of a page not about an intent: in the browser's language
/// ([`i18n::request_lang`]), else the holder's default.
fn browser_ui(h: &AppState, headers: &HeaderMap) -> &'static Ui {
    ui(i18n::request_lang(headers, &h.base.settings().default_language))
}

/// The intent behind a results, withdraw or unsubscribe link (its `manage` token) and the
/// language its pages are shown in; the error page when the link is unknown or the store
/// fails.
async fn managed(h: &Shared, token: &str) -> Result<(Intent, &'static Ui), Response> {
    let intent = by_token(h, "manage_view", token, |x, t| x.intents.manage_view(t)).await?;
    let ui = intent_ui(h, &intent);
    Ok((intent, ui))
}

/// What `f` reads for a link's `token` (the intent behind it, or a view of it), off the
/// async threads ([`call`] as `op`); the error page in the holder's default language
/// when the link is unknown or the store fails.
async fn by_token<T, F>(h: &Shared, op: &'static str, token: &str, f: F) -> Result<T, Response>
where
    T: Send + 'static,
    F: FnOnce(&AppState, &str) -> Result<T, ServiceError> + Send + 'static,
{
    let t = token.to_owned();
    let default_ui = ui(page_lang(None, &h.base.settings().default_language));
    call(h, op, move |x| f(x, &t)).await.map_err(|fail| fail_page(h, default_ui, fail))
}

/// The page language of an intent.
fn intent_ui(h: &AppState, intent: &Intent) -> &'static Ui {
    ui(page_lang(Some(&intent.language), &h.base.settings().default_language))
}

/// The error page of a [`Fail`].
fn fail_page(h: &AppState, ui: &Ui, fail: Fail) -> Response {
    match fail {
        Fail::NotFound => {
            let text = pages::message_link(ui.not_found_body, false, "/", ui.home_link);
            forward_page(h, ui, StatusCode::NOT_FOUND, ui.not_found_title, text)
        }
        Fail::Input => page(h, ui, StatusCode::BAD_REQUEST, ui.error_title, pages::message(ui.email_invalid, true)),
        Fail::State => page(h, ui, StatusCode::CONFLICT, ui.closed_title, pages::message(ui.closed_body, false)),
        // The person already holds `limit` active intents (PROTOCOL.md §3 "Limits"): how
        // many, and the way out (withdraw one).
        Fail::PersonCap(limit) => {
            let body = ui.person_cap_body.replace("{n}", &limit.to_string());
            page(h, ui, StatusCode::CONFLICT, ui.person_cap_title, pages::message(&body, false))
        }
        Fail::Internal => {
            page(h, ui, StatusCode::INTERNAL_SERVER_ERROR, ui.error_title, pages::message(ui.error_body, true))
        }
    }
}

/// 403: the CSRF token is missing, forged or older than two hours.
fn csrf_page(h: &AppState, ui: &Ui) -> Response {
    page(h, ui, StatusCode::FORBIDDEN, ui.csrf_title, pages::message(ui.csrf_body, true))
}

/// A page of a link that has ended or was used: `text`, then the way forward
/// ([`pages::way_forward`]).
fn forward_page(h: &AppState, ui: &Ui, status: StatusCode, title: &str, text: Markup) -> Response {
    page(h, ui, status, title, maud::html! { (text) (pages::way_forward(ui)) })
}

/// 410: expired or withdrawn, with the way forward.
fn closed_page(h: &AppState, ui: &Ui, intent: &Intent) -> Response {
    let text = pages::message_with_statement(ui, ui.closed_body, intent);
    forward_page(h, ui, StatusCode::GONE, ui.closed_title, text)
}

/// 409: consent was already given on this link (first come, seed §5.3), with the way
/// forward.
fn taken_page(h: &AppState, ui: &Ui) -> Response {
    forward_page(h, ui, StatusCode::CONFLICT, ui.taken_title, pages::message(ui.taken_body, false))
}

fn now_unix(h: &AppState) -> i64 {
    h.base.clock().now().unix_timestamp()
}

fn csrf_ok(h: &AppState, token: &str, purpose: &str, binding: &str) -> bool {
    h.base.keys().csrf_valid(token, purpose, binding, now_unix(h))
}

/// The fields of every page's form; missing fields are empty (and then fail the CSRF or
/// accept check), so a malformed body is answered by the same pages. No `Debug`: it
/// holds passwords.
#[derive(Default, Deserialize)]
#[serde(default)]
struct FormFields {
    /// The CSRF token (or a cadence e-mail's proof).
    csrf: String,
    email: String,
    accept: String,
    lang: String,
    /// The cadence forms' choice: one of the [`crate::records::Cadence`] keys.
    cadence: String,
    password: String,
    current: String,
    repeat: String,
    next: String,
}

impl FormFields {
    fn parse(body: &[u8]) -> Self {
        serde_urlencoded::from_bytes(body).unwrap_or_default()
    }
}

// ---------------------------------------------------------------------------
// home

/// 303 to the sign-in page, which comes back to `next` (a path on this site; the query
/// is [`account_pages::next_query`]'s).
fn to_signin(next: &str) -> Response {
    Redirect::to(&format!("/signin{}", account_pages::next_query(next))).into_response()
}

/// The language of a page not about an intent whose query may choose it: `?lang=`
/// when it names one of [`i18n::LANGUAGES`] ([`i18n::query_lang`], the language switcher),
/// else [`browser_ui`]'s.
fn chosen_lang(h: &AppState, headers: &HeaderMap, query: Option<&str>) -> &'static str {
    i18n::query_lang(query).unwrap_or_else(|| browser_ui(h, headers).lang)
}

/// `GET /`: the home page ([`pages::home`]) in the language of [`chosen_lang`].
async fn home(State(h): State<Shared>, headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    let ui = ui(chosen_lang(&h, &headers, query.as_deref()));
    let mcp = format!("{}/mcp", h.base.settings().public_url.base);
    let name = &h.base.settings().holder_name;
    let doc = pages::layout(ui, name, name, true, pages::home(ui, &mcp));
    doc.into_response()
}

/// Whether a path that matched no route is in the space of the machine endpoints (MCP,
/// OAuth, well-known files, assets, health), which keep axum's plain empty 404, rather
/// than a page address.
fn machine_path(path: &str) -> bool {
    path.starts_with("/mcp")
        || ["/oauth", "/.well-known", "/assets", "/healthz", "/readyz"]
            .iter()
            .any(|p| path.strip_prefix(p).is_some_and(|rest| rest.is_empty() || rest.starts_with('/')))
}

/// Any request that matched no route: for a page address the 404 page with the pages'
/// headers; for [`machine_path`]s the plain empty 404.
async fn unknown_path(State(h): State<Shared>, uri: axum::http::Uri, headers: HeaderMap) -> Response {
    if machine_path(uri.path()) {
        return StatusCode::NOT_FOUND.into_response();
    }
    let ui = ui(chosen_lang(&h, &headers, uri.query()));
    let mut res = page(
        &h,
        ui,
        StatusCode::NOT_FOUND,
        ui.not_found_title,
        pages::message_link(ui.no_such_page, false, "/", ui.home_link),
    );
    set_page_headers(res.headers_mut(), CSP);
    res
}
