//! Every HTML page of the holder (PROTOCOL.md §1 "Web pages", §4, §7): the consent
//! page, the e-mail confirmation page, the results page of a manage link, the withdraw
//! page and the RFC 8058 one-click unsubscribe, the home page, the 404 page of an
//! address that is no page and the one stylesheet (here); the account pages ([`accounts`]), the OAuth authorization page
//! ([`authorize`]), the signed-in buyer's pages (`mine`) and the sellers' pages.
//!
//! One web layer: one layout ([`pages::layout`]), one table of texts and one language
//! negotiation ([`i18n`]), one security-header layer ([`security_headers`], applied
//! once in [`routes`]), one way to call a service off the async threads with one page
//! error ([`call`], [`Fail`]).
//!
//! Server-rendered with maud, no JavaScript. A GET never changes state (mail scanners
//! follow links); every state change is a POST carrying a CSRF token bound to the
//! form's purpose and the page's URL token — except the one-click unsubscribe POST,
//! which mail clients send without one (the unguessable token is the authority).
//!
//! Privacy: pages show only the public [`crate::protocol::Intent`] view (never contact
//! data or a hidden limit's value) and no token other than the page's own. Responses
//! carry `Cache-Control: no-store`, `Referrer-Policy: no-referrer` (tokens are in the
//! URLs), a strict CSP and `X-Frame-Options: DENY`. Errors are logged once, by
//! operation name only: never a path, token, e-mail or form body.

mod account_pages;
#[cfg(test)]
mod account_tests;
mod accounts;
mod authorize;
#[cfg(test)]
mod authorize_tests;
mod client_limits;
mod demand_page;
mod i18n;
mod links;
#[cfg(test)]
mod links_tests;
mod mine;
mod pages;
mod seller_pages;
#[cfg(test)]
mod tests;
pub mod wellknown;

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
use i18n::{page_lang, ui, Ui, LANGUAGES};
use maud::Markup;
use rust_embed::RustEmbed;
use serde::Deserialize;
use std::sync::{Arc, OnceLock};

type Shared = AppState;

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

/// Routes of every page (PROTOCOL.md §1 "Web pages"):
///
/// `GET /`, `GET|POST /consent/{token}`, `GET /consent/{token}/sent`,
/// `GET|POST /confirm/{token}`, `GET /confirm/{token}/done`, `GET /results/{token}`,
/// `POST /results/{token}/cadence` and `GET|POST /results/{token}/cadence/{cadence}`
/// (the delivery cadence, confirmed by e-mail unless signed in: [`links`]),
/// `GET|POST /withdraw/{token}`, `GET /withdraw/{token}/done`,
/// `GET|POST /unsubscribe/{token}` (POST = RFC 8058 one-click, no CSRF),
/// `GET /assets/style.css`, the well-known files ([`wellknown`]), the signed-in buyer's
/// and the sellers' pages, the account pages ([`accounts`]) and
/// `GET|POST /oauth/authorize` ([`authorize`], over the authorization server
/// `oauth`, which `crate::oauth::routes` shares for its token endpoint).
///
/// Every page gets the body limit and [`security_headers`]; the stylesheet and the
/// well-known files do not. Any request that matches no route goes to
/// [`unknown_path`] (the 404 page, or the plain 404 of the machine endpoints' spaces).
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
        .route("/withdraw/{token}/done", get(withdraw_done))
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
#[folder = "assets/"]
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

impl Fail {
    /// An internal failure: its cause (storage, keys, a failed task; never personal
    /// data) is logged here, once, under the operation's name.
    fn internal(op: &'static str, cause: &dyn std::fmt::Display) -> Self {
        tracing::error!(op, error = %cause, "web page: holder operation failed");
        Self::Internal
    }
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

impl PageError for AccountError {
    fn fail(&self) -> Fail {
        match self {
            AccountError::Input(_) => Fail::Input,
            _ => Fail::Internal,
        }
    }
}

/// Runs a blocking service operation (store I/O) off the async threads, for every page.
/// Failures are logged here, once, by operation name only (internal ones as errors,
/// refusals in the intent's state as warnings; bad input is the person's and is not
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
/// (`accounts::current` reads the session: one short store read).
fn page_access(h: &AppState, headers: &HeaderMap, action: Action<'_>) -> Result<String, Denied> {
    let current = crate::accounts::current(&h.base, headers);
    policy::authorize(&Credential::session(current.as_ref()), action, policy::no_lookup)
        .map_err(Refusal::denied)
        .map(|p| p.account_id().unwrap_or_default().to_owned())
}

/// The holder's default page language (for pages without an intent).
fn default_ui(h: &AppState) -> &'static Ui {
    ui(page_lang(None, &h.base.settings().default_language))
}

/// The page language of a page not about an intent: the browser's (`Accept-Language`,
/// [`i18n::request_lang`]), else the holder's default.
fn browser_lang(h: &AppState, headers: &HeaderMap) -> &'static str {
    i18n::request_lang(headers, &h.base.settings().default_language)
}

/// The page language of an intent.
/// The intent behind a results, withdraw or unsubscribe link (its `manage` token) and the
/// language its pages are shown in; the error page when the link is unknown or the store
/// fails.
async fn managed(h: &Shared, token: &str) -> Result<(Intent, &'static Ui), Response> {
    let t = token.to_owned();
    match call(h, "manage_view", move |x| x.intents.manage_view(&t)).await {
        Ok(intent) => {
            let ui = intent_ui(h, &intent);
            Ok((intent, ui))
        }
        Err(f) => Err(fail_page(h, default_ui(h), f)),
    }
}

fn intent_ui(h: &AppState, intent: &Intent) -> &'static Ui {
    ui(page_lang(Some(&intent.language), &h.base.settings().default_language))
}

/// The error page of a [`Fail`].
fn fail_page(h: &AppState, ui: &Ui, fail: Fail) -> Response {
    match fail {
        Fail::NotFound => {
            let body = maud::html! {
                (pages::message(ui.not_found_body, false))
                p { a href="/" { (ui.home_link) } }
                (pages::way_forward(ui))
            };
            page(h, ui, StatusCode::NOT_FOUND, ui.not_found_title, body)
        }
        Fail::Input => page(h, ui, StatusCode::BAD_REQUEST, ui.error_title, pages::message(ui.email_invalid, true)),
        Fail::State => page(h, ui, StatusCode::CONFLICT, ui.closed_title, pages::message(ui.closed_body, false)),
        Fail::PersonCap(limit) => person_cap_page(h, ui, limit),
        Fail::Internal => {
            page(h, ui, StatusCode::INTERNAL_SERVER_ERROR, ui.error_title, pages::message(ui.error_body, true))
        }
    }
}

/// 409: the person already holds `limit` active intents (PROTOCOL.md §3 "Limits"):
/// how many, and the way out (withdraw one). It names no address and no intent.
fn person_cap_page(h: &AppState, ui: &Ui, limit: u32) -> Response {
    let body = ui.person_cap_body.replace("{n}", &limit.to_string());
    page(h, ui, StatusCode::CONFLICT, ui.person_cap_title, pages::message(&body, false))
}

/// 403: the CSRF token is missing, forged or older than two hours.
fn csrf_page(h: &AppState, ui: &Ui) -> Response {
    page(h, ui, StatusCode::FORBIDDEN, ui.csrf_title, pages::message(ui.csrf_body, true))
}

/// 410: expired or withdrawn, with the way forward ([`pages::way_forward`]).
fn closed_page(h: &AppState, ui: &Ui, intent: &Intent) -> Response {
    let body = maud::html! {
        (pages::message_with_statement(ui, ui.closed_body, intent))
        (pages::way_forward(ui))
    };
    page(h, ui, StatusCode::GONE, ui.closed_title, body)
}

/// 409: consent was already given on this link (first come, seed §5.3), with the way
/// forward.
fn taken_page(h: &AppState, ui: &Ui) -> Response {
    let body = maud::html! {
        (pages::message(ui.taken_body, false))
        (pages::way_forward(ui))
    };
    page(h, ui, StatusCode::CONFLICT, ui.taken_title, body)
}

fn now_unix(h: &AppState) -> i64 {
    h.base.clock().now().unix_timestamp()
}

fn csrf_ok(h: &AppState, token: &str, purpose: &str, binding: &str) -> bool {
    h.base.keys().csrf_valid(token, purpose, binding, now_unix(h))
}

/// The fields of the pages' forms; missing fields are empty (and then fail the CSRF or
/// accept check), so a malformed body is answered by the same pages.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FormFields {
    csrf: String,
    email: String,
    accept: String,
    lang: String,
}

impl FormFields {
    fn parse(body: &[u8]) -> Self {
        serde_urlencoded::from_bytes(body).unwrap_or_default()
    }
}

// ---------------------------------------------------------------------------
// home

/// The language of a page not about an intent whose query may choose it: `?lang=`
/// when it names one of [`LANGUAGES`] ([`i18n::query_lang`], the language switcher),
/// else [`browser_lang`].
fn chosen_lang(h: &AppState, headers: &HeaderMap, query: Option<&str>) -> &'static str {
    i18n::query_lang(query).unwrap_or_else(|| browser_lang(h, headers))
}

/// `GET /` (issue 13 point 4): what this holder is, links to sign in, sign up and "my
/// intents", the MCP endpoint (`public_url` + `/mcp`) for assistants, in the language
/// of [`chosen_lang`] with a switcher (`/?lang=sk|cs|en`; a GET that only chooses).
async fn home(State(h): State<Shared>, headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    let ui = ui(chosen_lang(&h, &headers, query.as_deref()));
    let mcp = format!("{}/mcp", h.base.settings().public_url.base);
    let name = &h.base.settings().holder_name;
    let links = pages::HomeLinks { signin: "/signin", signup: "/signup", mine: "/me" };
    let doc = pages::layout(ui, name, name, true, pages::home(ui, &mcp, &links));
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

/// Any request that matched no route: for a page address the 404 page in the one layout
/// and the [`chosen_lang`] language (what happened, a link home) with the pages'
/// headers; for [`machine_path`]s the plain empty 404 they always had.
async fn unknown_path(State(h): State<Shared>, uri: axum::http::Uri, headers: HeaderMap) -> Response {
    if machine_path(uri.path()) {
        return StatusCode::NOT_FOUND.into_response();
    }
    let ui = ui(chosen_lang(&h, &headers, uri.query()));
    let mut res = page(&h, ui, StatusCode::NOT_FOUND, ui.not_found_title, pages::no_such_page(ui));
    set_page_headers(res.headers_mut(), CSP);
    res
}

// ---------------------------------------------------------------------------
// consent (PROTOCOL.md §4.2)

/// Renders the consent page (open drafts) with an optional error and status.
fn consent_form_page(
    h: &AppState,
    ui: &Ui,
    intent: &Intent,
    token: &str,
    status: StatusCode,
    error: Option<(&str, bool)>,
) -> Response {
    let text = h.base.consent().get(ui.lang);
    let csrf = h.base.keys().csrf_token(CSRF_CONSENT, token, now_unix(h));
    let form = pages::ConsentForm { token, csrf: &csrf, text_language: &text.language, text: &text.body, error };
    page(h, ui, status, ui.consent_title, pages::consent(ui, intent, &form))
}

/// The consent link when consent can no longer be given: already used (409) or
/// expired/withdrawn (410).
fn consent_closed(h: &AppState, ui: &Ui, intent: &Intent) -> Response {
    match intent.status {
        Status::AwaitingEmailConfirmation | Status::Active => taken_page(h, ui),
        _ => closed_page(h, ui, intent),
    }
}

/// `GET /consent/{token}`.
async fn consent_page(State(h): State<Shared>, Path(token): Path<String>) -> Response {
    let t = token.clone();
    let view = match call(&h, "consent_view", move |x| x.intents.consent_view(&t)).await {
        Ok(v) => v,
        Err(f) => return fail_page(&h, default_ui(&h), f),
    };
    let ui = intent_ui(&h, &view.intent);
    if view.open {
        consent_form_page(&h, ui, &view.intent, &token, StatusCode::OK, None)
    } else {
        consent_closed(&h, ui, &view.intent)
    }
}

/// `POST /consent/{token}` (email, accept, csrf, lang): CSRF, the checkbox, then
/// [`Holder::give_consent`]; 303 to `/consent/{token}/sent` when recorded.
async fn consent_submit(
    State(h): State<Shared>,
    Path(token): Path<String>,
    client: Option<axum::Extension<crate::net::ClientAddr>>,
    body: Bytes,
) -> Response {
    let form = FormFields::parse(&body);
    let t = token.clone();
    let view = match call(&h, "consent_view", move |x| x.intents.consent_view(&t)).await {
        Ok(v) => v,
        Err(f) => return fail_page(&h, default_ui(&h), f),
    };
    let ui = intent_ui(&h, &view.intent);
    if !csrf_ok(&h, &form.csrf, CSRF_CONSENT, &token) {
        return csrf_page(&h, ui);
    }
    if !view.open {
        // The same person submitting again (a double click, the back button): the
        // success page again, not "already taken".
        if matches!(view.intent.status, Status::AwaitingEmailConfirmation | Status::Active) {
            let (t, email) = (token.clone(), form.email.clone());
            if let Ok(true) = call(&h, "consent_view", move |x| x.intents.consent_repeated(&t, &email)).await {
                return Redirect::to(&format!("/consent/{token}/sent")).into_response();
            }
        }
        return consent_closed(&h, ui, &view.intent);
    }
    if form.accept != "yes" {
        return consent_form_page(
            &h,
            ui,
            &view.intent,
            &token,
            StatusCode::BAD_REQUEST,
            Some((ui.accept_required, false)),
        );
    }
    // The language of the consent text the person read (sent back by the form).
    let lang = LANGUAGES.into_iter().find(|l| *l == form.lang).unwrap_or(ui.lang);
    let (t, email) = (token.clone(), form.email);
    let client = client.and_then(|axum::Extension(c)| c.key());
    match call(&h, "give_consent", move |x| x.intents.give_consent_from(&t, &email, lang, client)).await {
        Ok(ConsentOutcome::Recorded | ConsentOutcome::Repeated) => {
            Redirect::to(&format!("/consent/{token}/sent")).into_response()
        }
        Ok(ConsentOutcome::Taken) => taken_page(&h, ui),
        Ok(ConsentOutcome::Throttled(e)) => throttled_page(&h, ui, &e),
        Ok(ConsentOutcome::Closed) => closed_page(&h, ui, &view.intent),
        Err(Fail::Input) => {
            consent_form_page(&h, ui, &view.intent, &token, StatusCode::BAD_REQUEST, Some((ui.email_invalid, true)))
        }
        Err(f) => fail_page(&h, ui, f),
    }
}

/// The 429 page of a used-up consent quota (issue 9 point 3), with `Retry-After`: the
/// rule in the page's language, and when to try again (minutes, and the time in UTC).
fn throttled_page(h: &Shared, ui: &'static Ui, e: &crate::base::quota::Exceeded) -> Response {
    use crate::base::quota::Rule;
    let why = match e.rule {
        Rule::ConsentsPerAddress => ui.throttled_body,
        Rule::MailsGlobal | Rule::MailsUnconfirmed => ui.throttled_global_body,
        _ => ui.throttled_client_body,
    };
    let minutes = e.retry_after_secs.div_ceil(60).to_string();
    let at = time::OffsetDateTime::from_unix_timestamp(e.retry_at)
        .map(|t| format!("{:02}:{:02} UTC", t.hour(), t.minute()))
        .unwrap_or_default();
    let when = ui.throttled_retry.replace("{minutes}", &minutes).replace("{time}", &at);
    let body = maud::html! {
        (pages::message(why, false))
        p.hint { (when) }
    };
    let mut res = page(h, ui, StatusCode::TOO_MANY_REQUESTS, ui.throttled_title, body);
    res.headers_mut().insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from(e.retry_after_secs));
    res
}

/// `GET /consent/{token}/sent`: "check your e-mail" (never the address itself).
async fn consent_sent(State(h): State<Shared>, Path(token): Path<String>) -> Response {
    let t = token.clone();
    let view = match call(&h, "consent_view", move |x| x.intents.consent_view(&t)).await {
        Ok(v) => v,
        Err(f) => return fail_page(&h, default_ui(&h), f),
    };
    let ui = intent_ui(&h, &view.intent);
    match view.intent.status {
        Status::AwaitingEmailConfirmation | Status::Active => {
            let body = maud::html! {
                (pages::message(ui.sent_body, false))
                p.hint { (ui.sent_spam) }
                (pages::statement(ui, &view.intent))
            };
            page(&h, ui, StatusCode::OK, ui.sent_title, body)
        }
        _ if view.open => consent_form_page(&h, ui, &view.intent, &token, StatusCode::OK, None),
        _ => consent_closed(&h, ui, &view.intent),
    }
}

// ---------------------------------------------------------------------------
// e-mail confirmation (PROTOCOL.md §4.3)

/// The confirmation page for an intent in any state (GET and the done page).
fn confirm_state_page(h: &AppState, ui: &Ui, intent: &Intent, token: &str) -> Response {
    match intent.status {
        Status::AwaitingEmailConfirmation => {
            let csrf = h.base.keys().csrf_token(CSRF_CONFIRM, token, now_unix(h));
            page(h, ui, StatusCode::OK, ui.confirm_title, pages::confirm(ui, intent, token, &csrf))
        }
        Status::Active => used_confirm_page(h, ui, intent, ui.already_active),
        _ => closed_page(h, ui, intent),
    }
}

/// The page of an active intent behind a used confirmation token (after confirming, or
/// the link opened again): only its outcome — `text` with the statement and where the
/// person manages the request now —, no form and no CSRF token (a used link may have
/// leaked).
fn used_confirm_page(h: &AppState, ui: &Ui, intent: &Intent, text: &str) -> Response {
    let body = maud::html! {
        (pages::message_with_statement(ui, text, intent))
        p.hint { (ui.links.confirm_used) }
    };
    page(h, ui, StatusCode::OK, ui.active_title, body)
}

/// Whether a page's query says that the cadence was just saved (`saved=cadence`, the
/// redirect after the cadence POST; a GET that only shows a notice).
fn cadence_saved(query: Option<&str>) -> bool {
    query.is_some_and(|q| q.split('&').any(|p| p == "saved=cadence"))
}

/// `GET /confirm/{token}`: a Confirm button; once used, only its outcome; never
/// changes state.
async fn confirm_page(State(h): State<Shared>, Path(token): Path<String>) -> Response {
    let t = token.clone();
    match call(&h, "confirm_view", move |x| x.intents.confirm_view(&t)).await {
        Ok(intent) => confirm_state_page(&h, intent_ui(&h, &intent), &intent, &token),
        Err(f) => fail_page(&h, default_ui(&h), f),
    }
}

/// `POST /confirm/{token}` (csrf): [`Holder::confirm`]; 303 to `/confirm/{token}/done`.
async fn confirm_submit(State(h): State<Shared>, Path(token): Path<String>, body: Bytes) -> Response {
    let form = FormFields::parse(&body);
    let t = token.clone();
    let intent = match call(&h, "confirm_view", move |x| x.intents.confirm_view(&t)).await {
        Ok(i) => i,
        Err(f) => return fail_page(&h, default_ui(&h), f),
    };
    let ui = intent_ui(&h, &intent);
    if !csrf_ok(&h, &form.csrf, CSRF_CONFIRM, &token) {
        return csrf_page(&h, ui);
    }
    let t = token.clone();
    match call(&h, "confirm", move |x| x.intents.confirm(&t)).await {
        Ok(ConfirmOutcome::Activated | ConfirmOutcome::AlreadyActive) => {
            Redirect::to(&format!("/confirm/{token}/done")).into_response()
        }
        Ok(ConfirmOutcome::Closed) => closed_page(&h, ui, &intent),
        Err(f) => fail_page(&h, ui, f),
    }
}

/// `GET /confirm/{token}/done`: "your request is active" (only the outcome, as every
/// page of a used confirmation link).
async fn confirm_done(State(h): State<Shared>, Path(token): Path<String>) -> Response {
    let t = token.clone();
    match call(&h, "confirm_view", move |x| x.intents.confirm_view(&t)).await {
        Ok(intent) if intent.status == Status::Active => {
            let ui = intent_ui(&h, &intent);
            used_confirm_page(&h, ui, &intent, ui.active_body)
        }
        Ok(intent) => confirm_state_page(&h, intent_ui(&h, &intent), &intent, &token),
        Err(f) => fail_page(&h, default_ui(&h), f),
    }
}

// ---------------------------------------------------------------------------
// results and withdrawal (manage token; PROTOCOL.md §4.4)

/// `GET /results/{token}`: the intent, the delivery cadence form (issue 13 point 2;
/// `?saved=cadence` after a save shows the notice, `?sent=cadence` after a change that
/// waits for its confirmation by e-mail says so), its deliveries and the withdraw link.
async fn results_page(State(h): State<Shared>, Path(token): Path<String>, RawQuery(query): RawQuery) -> Response {
    let t = token.clone();
    match call(&h, "results_view", move |x| x.intents.results_view(&t)).await {
        Ok(v) => {
            let mut v = v;
            crate::matching::explain::annotate(&v.intent, &mut v.deliveries);
            let ui = intent_ui(&h, &v.intent);
            let csrf = h.base.keys().csrf_token(CSRF_CADENCE, &token, now_unix(&h));
            let action = format!("/results/{token}/cadence");
            let form = pages::CadenceForm {
                action: &action,
                csrf: &csrf,
                current: v.cadence,
                saved: cadence_saved(query.as_deref()),
            };
            let mailed = query.as_deref().is_some_and(|q| q.split('&').any(|p| p == "sent=cadence"));
            let body = maud::html! {
                @if mailed { p.notice role="status" { (ui.links.cadence_mailed) } }
                (pages::results(ui, &v.intent, &v.deliveries, &token, Some(&form)))
            };
            page(&h, ui, StatusCode::OK, ui.results_title, body)
        }
        Err(f) => fail_page(&h, default_ui(&h), f),
    }
}

/// 400: the `cadence` field is missing or not one of the four values: the message
/// naming the field, and a link `back` to the page of the form.
fn cadence_invalid_page(h: &AppState, ui: &Ui, back: &str) -> Response {
    let body = maud::html! {
        (pages::message(ui.cadence.invalid, true))
        p { a href=(back) { (ui.cadence.back) } }
    };
    page(h, ui, StatusCode::BAD_REQUEST, ui.error_title, body)
}

/// The withdraw page for an intent in any state.
fn withdraw_state_page(h: &AppState, ui: &Ui, intent: &Intent, token: &str) -> Response {
    match intent.status {
        Status::Withdrawn => page(
            h,
            ui,
            StatusCode::OK,
            ui.withdrawn_title,
            pages::message_with_statement(ui, ui.withdrawn_body, intent),
        ),
        Status::Expired => {
            page(h, ui, StatusCode::OK, ui.withdraw_title, pages::message_with_statement(ui, ui.ended, intent))
        }
        _ => {
            let csrf = h.base.keys().csrf_token(CSRF_WITHDRAW, token, now_unix(h));
            page(h, ui, StatusCode::OK, ui.withdraw_title, pages::withdraw(ui, intent, token, &csrf))
        }
    }
}

/// `GET /withdraw/{token}` and `GET /unsubscribe/{token}`: a Withdraw button; never
/// changes state.
async fn withdraw_page(State(h): State<Shared>, Path(token): Path<String>) -> Response {
    match managed(&h, &token).await {
        Ok((intent, ui)) => withdraw_state_page(&h, ui, &intent, &token),
        Err(page) => page,
    }
}

/// `POST /withdraw/{token}` (csrf): [`Holder::withdraw_by_manage`]; 303 to
/// `/withdraw/{token}/done`.
async fn withdraw_submit(State(h): State<Shared>, Path(token): Path<String>, body: Bytes) -> Response {
    let form = FormFields::parse(&body);
    let (_, ui) = match managed(&h, &token).await {
        Ok(found) => found,
        Err(page) => return page,
    };
    if !csrf_ok(&h, &form.csrf, CSRF_WITHDRAW, &token) {
        return csrf_page(&h, ui);
    }
    let t = token.clone();
    match call(&h, "withdraw_by_manage", move |x| x.intents.withdraw_by_manage(&t)).await {
        Ok(()) => Redirect::to(&format!("/withdraw/{token}/done")).into_response(),
        Err(f) => fail_page(&h, ui, f),
    }
}

/// `GET /withdraw/{token}/done`: "withdrawn".
async fn withdraw_done(State(h): State<Shared>, Path(token): Path<String>) -> Response {
    withdraw_page(State(h), Path(token)).await
}

/// `POST /unsubscribe/{token}`: RFC 8058 one-click (`List-Unsubscribe=One-Click`). No
/// CSRF token: mail clients cannot send one, and the unguessable token is the
/// authority. Any body is accepted (some clients send multipart); 200 with a short page.
async fn unsubscribe_one_click(State(h): State<Shared>, Path(token): Path<String>) -> Response {
    let (_, ui) = match managed(&h, &token).await {
        Ok(found) => found,
        Err(page) => return page,
    };
    let t = token.clone();
    match call(&h, "withdraw_by_manage", move |x| x.intents.withdraw_by_manage(&t)).await {
        Ok(()) => page(&h, ui, StatusCode::OK, ui.withdrawn_title, pages::message(ui.unsubscribed, false)),
        Err(f) => fail_page(&h, ui, f),
    }
}
