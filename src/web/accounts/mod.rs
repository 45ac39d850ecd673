//! The sign-in, sign-up, sign-out and password pages (PROTOCOL.md §1 "sign-in page", §7).
//!
//! A GET never changes state (mail scanners follow the links in e-mails: the link pages
//! show a button whose POST acts). Every form carries a CSRF token bound to its purpose.
//! The sign-in and sign-up forms, shown before there is a session, bind theirs to a
//! pre-session cookie set by the form's GET ([`PreSession`]), so a token fetched by
//! another party (login CSRF) is refused. The one-time link pages bind theirs to the
//! link token, which whoever holds the link can fetch — an attacker with a link of their
//! own, to sign a victim's browser into the attacker's account —, so their POSTs also
//! refuse an opaque origin ([`opaque_origin`]). Answers never tell whether an address
//! has an account: a wrong password and an unknown address get the same words (and an
//! unknown address is checked against a dummy hash, so the answer takes as long).
//!
//! Limits: per address in the store ([`crate::accounts`]); per client address in memory
//! ([`super::client_limits`]); and a bound on concurrent argon2 hashes (19 MiB each).
//! The pages call the accounts service for every store read and write and hash
//! passwords themselves, off the async threads.

mod manage;

use super::account_pages::{self as pages, SigninPage};
use super::client_limits::{ClientKey, ClientLimits};
use super::cookies::{self, PreSession};
use super::i18n::{self, AccountText as Ui};
use super::{call, Fail, FormFields};
use crate::accounts::{self, password, LinkKind, MailOutcome, Signed, SignupRequest};
use crate::base::Base;
use crate::net::ClientAddr;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use manage::{mail_info, password_page, password_submit, signout};
use maud::Markup;
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;
// Passwords taken out of a form live in buffers wiped on drop.
use zeroize::Zeroizing;

/// Where a sign-in goes when `next` is absent or refused.
pub const DEFAULT_NEXT: &str = "/me";

const CSRF_SIGNIN: &str = "signin";
const CSRF_LINK_REQUEST: &str = "signin-link-request";
const CSRF_LINK: &str = "signin-link";
const CSRF_SIGNUP: &str = "signup";
const CSRF_SIGNUP_CONFIRM: &str = "signup-confirm";
const CSRF_SIGNOUT: &str = "signout";
const CSRF_PASSWORD: &str = "password";

/// Whether a one-time link POST comes from an opaque origin (a sandboxed frame, a `data:`
/// page). A browser posts isto's own form with `Origin: null` as well (the pages send
/// `Referrer-Policy: no-referrer`); Fetch Metadata tells the two apart. Without
/// `Sec-Fetch-Site` (an older browser) `Origin: null` is refused; with it, anything but
/// `same-origin` is.
fn opaque_origin(headers: &HeaderMap) -> bool {
    match headers.get("sec-fetch-site") {
        Some(site) => !site.as_bytes().trim_ascii().eq_ignore_ascii_case(b"same-origin"),
        None => headers.get(header::ORIGIN).is_some_and(|o| o.as_bytes().trim_ascii().eq_ignore_ascii_case(b"null")),
    }
}

/// The request's client address, put in by the app's middleware.
type Peer = Option<Extension<ClientAddr>>;

/// The counting key of a request's client address ([`ClientAddr::key`]).
fn peer_key(peer: &Peer) -> ClientKey {
    peer.as_ref().and_then(|Extension(c)| c.key())
}

struct Web {
    app: AppState,
    /// Permits for concurrent argon2 hashes.
    hashing: Arc<Semaphore>,
    /// Failed attempts and e-mails per client address (bounded, in memory).
    limits: Mutex<ClientLimits>,
}

type Shared = Arc<Web>;

impl Web {
    /// Runs `f` on the per-client counters, with the current unix time.
    fn with_limits<T>(&self, f: impl FnOnce(&mut ClientLimits, i64) -> T) -> T {
        let now = super::now_unix(&self.app);
        let mut l = self.limits.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut l, now)
    }

    fn csrf(&self, purpose: &str, binding: &str) -> String {
        self.app.base.keys().csrf_token(purpose, binding, super::now_unix(&self.app))
    }

    fn csrf_ok(&self, token: &str, purpose: &str, binding: &str) -> bool {
        super::csrf_ok(&self.app, token, purpose, binding)
    }
}

/// Routes of the account pages (each handler documents its own); the sign-in pages take
/// `?next=/relative/path`.
pub(super) fn routes(app: AppState) -> Router {
    // Made now, the first unknown address waits for nothing the others do not.
    let _ = password::dummy_hash();
    let permits = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).clamp(2, 16);
    let state = Arc::new(Web { app, hashing: Arc::new(Semaphore::new(permits)), limits: Mutex::default() });
    Router::new()
        .route("/signin", get(signin_page).post(signin_submit))
        .route("/signin/link", post(link_request))
        .route("/signin/sent", get(sent::<false>))
        .route("/signin/link/{token}", get(link_page::<false>).post(link_submit::<false>))
        .route("/signup", get(signup_page).post(signup_submit))
        .route("/signup/sent", get(sent::<true>))
        .route("/signup/confirm/{token}", get(link_page::<true>).post(link_submit::<true>))
        .route("/signout", post(signout))
        .route("/account/password", get(password_page).post(password_submit))
        .route("/account/mail", get(mail_info).post(mail_info))
        .with_state(state)
}

/// The CSRF token for a sign-out form on another page (e.g. `/me`): `POST /signout`
/// with field `csrf`. `None` when the request has no valid session. Reads the store.
pub(super) fn signout_csrf(base: &Base, headers: &HeaderMap) -> Option<String> {
    let s = cookies::signed_in(base, headers)?;
    Some(base.keys().csrf_token(CSRF_SIGNOUT, &s.key, base.clock().now().unix_timestamp()))
}

// ---------------------------------------------------------------------------
// plumbing

/// `next` if it is a relative path on this site (`/…`, not `//…`, visible ASCII, no
/// backslash), else [`DEFAULT_NEXT`]: never an open redirect.
pub fn safe_next(next: &str) -> String {
    let ok = next.starts_with('/')
        && !next.starts_with("//")
        && next.len() <= 4096
        && next.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b'\\');
    if ok {
        next.to_owned()
    } else {
        DEFAULT_NEXT.to_owned()
    }
}

fn next_from_query(q: Option<&str>) -> String {
    safe_next(&FormFields::parse(q.unwrap_or_default().as_bytes()).next)
}

fn page_ui(w: &Web, headers: &HeaderMap) -> &'static Ui {
    super::browser_ui(&w.app, headers).account
}

fn page(w: &Web, ui: &Ui, status: StatusCode, title: &str, body: Markup) -> Response {
    super::page(&w.app, i18n::ui(ui.lang), status, title, body)
}

fn internal_page(w: &Web, ui: &Ui) -> Response {
    page(w, ui, StatusCode::INTERNAL_SERVER_ERROR, ui.error_title, pages::message(ui.error_body, true))
}

fn csrf_page(w: &Web, ui: &Ui) -> Response {
    page(w, ui, StatusCode::FORBIDDEN, ui.csrf_title, pages::message(ui.csrf_body, true))
}

/// Runs an argon2 computation on a blocking thread, at most `hashing` permits at once.
async fn hashing<T, F>(w: &Shared, f: F) -> Result<T, Fail>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let Ok(permit) = Arc::clone(&w.hashing).acquire_owned().await else { return Err(Fail::Internal) };
    let done = tokio::task::spawn_blocking(move || {
        let out = f();
        drop(permit);
        out
    });
    done.await.map_err(|e| {
        tracing::error!(error = %e, "account page: hashing task failed");
        Fail::Internal
    })
}

/// The request's valid session, read on a blocking thread.
async fn session_of(w: &Shared, headers: &HeaderMap) -> Option<Signed> {
    let tokens = cookies::session_tokens(headers);
    call(&w.app, "session", move |x| Ok::<_, accounts::AccountError>(accounts::signed_in(&x.base, &tokens)))
        .await
        .ok()
        .flatten()
}

/// 303 to `to` with `cookie` (a `Set-Cookie` value).
fn redirect_with_cookie(w: &Web, ui: &Ui, to: &str, cookie: &str) -> Response {
    let Ok(cookie) = HeaderValue::from_str(cookie) else { return internal_page(w, ui) };
    let mut res = Redirect::to(to).into_response();
    res.headers_mut().append(header::SET_COOKIE, cookie);
    res
}

/// 303 to `next` with the new session cookie.
fn signed_in_redirect(w: &Web, ui: &Ui, token: &str, next: &str) -> Response {
    redirect_with_cookie(w, ui, &safe_next(next), &cookies::session_cookie(&w.app.base, token))
}

fn too_many(mut res: Response, retry_after_secs: u32) -> Response {
    *res.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
    res
}

// ---------------------------------------------------------------------------
// sign-in

/// The sign-in page with the values and errors of `st`, its forms' CSRF tokens bound to
/// the pre-session `pre`.
fn signin_render(
    w: &Web,
    ui: &Ui,
    status: StatusCode,
    next: &str,
    st: SigninPage<'_>,
    signed: Option<&Signed>,
    pre: &str,
) -> Response {
    let signout = signed.map(|s| w.csrf(CSRF_SIGNOUT, &s.key));
    let csrf_password = w.csrf(CSRF_SIGNIN, pre);
    let csrf_link = w.csrf(CSRF_LINK_REQUEST, pre);
    let p =
        SigninPage { csrf_password: &csrf_password, csrf_link: &csrf_link, next, signed_in: signout.as_deref(), ..st };
    page(w, ui, status, ui.signin_title, pages::signin(ui, &p))
}

/// `GET /signin?next=…`: the password form and the link form.
async fn signin_page(State(w): State<Shared>, headers: HeaderMap, RawQuery(q): RawQuery) -> Response {
    let ui = page_ui(&w, &headers);
    let next = next_from_query(q.as_deref());
    let signed = session_of(&w, &headers).await;
    let pre = PreSession::for_form(&w.app.base, &headers);
    let res = signin_render(&w, ui, StatusCode::OK, &next, SigninPage::default(), signed.as_ref(), &pre.binding);
    pre.set_on(res)
}

/// `POST /signin` (csrf, email, password, next): on success a new session and 303 to
/// `next`; otherwise the form again with "wrong e-mail or password" (400), or 429 when
/// the e-mail address (5 per 15 min) or the client address (30 per minute) is over its
/// limit of failed attempts.
async fn signin_submit(State(w): State<Shared>, headers: HeaderMap, peer: Peer, body: Bytes) -> Response {
    let ui = page_ui(&w, &headers);
    let client = peer_key(&peer);
    let form = FormFields::parse(&body);
    let next = safe_next(&form.next);
    let Some(pre) = PreSession::of(&w.app.base, &headers).filter(|p| w.csrf_ok(&form.csrf, CSRF_SIGNIN, p)) else {
        return csrf_page(&w, ui);
    };
    let failed = |w: &Web, email: &str| {
        let st = SigninPage { email, error: Some(ui.signin_failed), ..Default::default() };
        signin_render(w, ui, StatusCode::BAD_REQUEST, &next, st, None, &pre)
    };
    if w.with_limits(|l, now| l.too_many_failures(client, now)) {
        let st = SigninPage { email: &form.email, error: Some(ui.busy), ..Default::default() };
        return too_many(signin_render(&w, ui, StatusCode::OK, &next, st, None, &pre), 60);
    }
    let Ok(email) = crate::protocol::input::validate_email(&form.email) else { return failed(&w, &form.email) };
    if form.password.is_empty() || form.password.chars().count() > password::MAX_LEN {
        return failed(&w, &email);
    }
    let hash = accounts::email_key(w.app.base.keys(), &email);
    let h2 = hash.clone();
    let account = match call(&w.app, "begin_login", move |x| accounts::begin_login(&x.base, &h2)).await {
        Ok(Some(a)) => a,
        Ok(None) => {
            let st = SigninPage { email: &email, error: Some(ui.login_throttled), ..Default::default() };
            return too_many(signin_render(&w, ui, StatusCode::OK, &next, st, None, &pre), 900);
        }
        Err(_) => return internal_page(&w, ui),
    };
    let stored = account.as_ref().and_then(|a| a.password_hash.clone());
    let pw = Zeroizing::new(form.password);
    let checked = hashing(&w, move || {
        let phc = stored.as_deref().unwrap_or_else(|| password::dummy_hash());
        let ok = password::verify(&pw, phc) && stored.is_some();
        let rehash = if ok && password::needs_rehash(phc) { password::hash(&pw).ok() } else { None };
        (ok, stored, rehash)
    })
    .await;
    let (ok, stored, rehash) = match checked {
        Ok(v) => v,
        Err(_) => return internal_page(&w, ui),
    };
    let (Some(account), true, Some(verified)) = (account, ok, stored) else {
        w.with_limits(|l, now| l.count_failure(client, now));
        return failed(&w, &email);
    };
    let id = account.id.clone();
    let done =
        call(&w.app, "finish_login", move |x| accounts::finish_login(&x.base, &id, &hash, &verified, rehash)).await;
    match done {
        Ok(Some(token)) => {
            tracing::info!(account = %account.id, "signed in with password");
            signed_in_redirect(&w, ui, token.expose(), &next)
        }
        Ok(None) => failed(&w, &email),
        Err(_) => internal_page(&w, ui),
    }
}

/// `POST /signin/link` (csrf, email, next): queues a one-time link if the address has an
/// account; 303 to `/signin/sent` either way.
async fn link_request(State(w): State<Shared>, headers: HeaderMap, peer: Peer, body: Bytes) -> Response {
    let ui = page_ui(&w, &headers);
    let client = peer_key(&peer);
    let form = FormFields::parse(&body);
    let next = safe_next(&form.next);
    let Some(pre) = PreSession::of(&w.app.base, &headers).filter(|p| w.csrf_ok(&form.csrf, CSRF_LINK_REQUEST, p))
    else {
        return csrf_page(&w, ui);
    };
    let with_error = |w: &Web, status: StatusCode, msg: &'static str| {
        let st = SigninPage { email: &form.email, link_error: Some(msg), ..Default::default() };
        signin_render(w, ui, status, &next, st, None, &pre)
    };
    if w.with_limits(|l, now| l.too_many_mails(client, now)) {
        return too_many(with_error(&w, StatusCode::OK, ui.mail_busy), 60);
    }
    // Every request counts, whether or not a mail goes out (no enumeration).
    w.with_limits(|l, now| l.count_mail(client, now));
    let (email, n, lang) = (form.email.clone(), next.clone(), ui.lang);
    match call(&w.app, "request_signin_link", move |x| accounts::request_signin_link(&x.base, &email, &n, lang)).await {
        Ok(MailOutcome::Queued | MailOutcome::Nothing) => Redirect::to("/signin/sent").into_response(),
        Ok(MailOutcome::Throttled) => too_many(with_error(&w, StatusCode::OK, ui.mail_throttled), 3600),
        Err(Fail::Input) => with_error(&w, StatusCode::BAD_REQUEST, ui.email_invalid),
        Err(_) => internal_page(&w, ui),
    }
}

/// `GET /signin/sent` and `GET /signup/sent` (`SIGNUP`): "check your e-mail", the same
/// words whether or not the address has an account.
async fn sent<const SIGNUP: bool>(State(w): State<Shared>, headers: HeaderMap) -> Response {
    let ui = page_ui(&w, &headers);
    let text = if SIGNUP { ui.signup_sent_body } else { ui.link_sent_body };
    page(&w, ui, StatusCode::OK, ui.sent_title, pages::sent(ui, text))
}

/// The pages of a one-time link: the sign-in link (`/signin/link/{token}`) or, with
/// `signup`, the sign-up confirmation (`/signup/confirm/{token}`).
#[derive(Clone, Copy)]
struct OneTime {
    kind: LinkKind,
    /// Its URL without the token.
    path: &'static str,
    csrf: &'static str,
    /// Operation names of viewing and of using it.
    ops: [&'static str; 2],
    /// Uses the link: the new session's cookie token and `next`.
    take: fn(&Base, &str) -> accounts::LinkUse,
}

impl OneTime {
    fn of(signup: bool) -> Self {
        if signup {
            let ops = ["signup_view", "confirm_signup"];
            Self {
                kind: LinkKind::Signup,
                path: "/signup/confirm",
                csrf: CSRF_SIGNUP_CONFIRM,
                ops,
                take: accounts::confirm_signup,
            }
        } else {
            let ops = ["signin_link_view", "use_signin_link"];
            Self { kind: LinkKind::Signin, path: "/signin/link", csrf: CSRF_LINK, ops, take: accounts::use_signin_link }
        }
    }

    /// 410: the link is unknown, used or expired; with the way to ask again.
    fn gone(self, w: &Web, ui: &Ui) -> Response {
        let (text, again, again_title) = match self.kind {
            LinkKind::Signin => (ui.link_gone_body, "/signin", ui.signin_title),
            LinkKind::Signup => (ui.signup_gone_body, "/signup", ui.signup_title),
        };
        page(w, ui, StatusCode::GONE, ui.gone_title, pages::message_link(text, false, again, again_title))
    }
}

/// `GET /signin/link/{token}` and `GET /signup/confirm/{token}` (`SIGNUP`): a Sign in or
/// Confirm button; never signs in nor creates the account.
async fn link_page<const SIGNUP: bool>(
    State(w): State<Shared>,
    headers: HeaderMap,
    Path(token): Path<String>,
) -> Response {
    let ui = page_ui(&w, &headers);
    let link = OneTime::of(SIGNUP);
    let t = token.clone();
    match call(&w.app, link.ops[0], move |x| accounts::link_usable(&x.base, link.kind, &t)).await {
        Ok(true) => {
            let (title, text, button) = match link.kind {
                LinkKind::Signin => (ui.link_title, ui.link_body, ui.signin_button),
                LinkKind::Signup => (ui.confirm_title, ui.confirm_body, ui.confirm_button),
            };
            let action = format!("{}/{token}", link.path);
            page(&w, ui, StatusCode::OK, title, pages::button_page(text, &action, &w.csrf(link.csrf, &token), button))
        }
        Ok(false) | Err(Fail::Input) => link.gone(&w, ui),
        Err(_) => internal_page(&w, ui),
    }
}

/// `POST /signin/link/{token}` and `POST /signup/confirm/{token}` (`SIGNUP`) (csrf): uses
/// the link (a confirmation creates the account), starts a session, 303 to its `next`.
async fn link_submit<const SIGNUP: bool>(
    State(w): State<Shared>,
    headers: HeaderMap,
    Path(token): Path<String>,
    body: Bytes,
) -> Response {
    let ui = page_ui(&w, &headers);
    let link = OneTime::of(SIGNUP);
    let form = FormFields::parse(&body);
    if opaque_origin(&headers) || !w.csrf_ok(&form.csrf, link.csrf, &token) {
        return csrf_page(&w, ui);
    }
    match call(&w.app, link.ops[1], move |x| (link.take)(&x.base, &token)).await {
        Ok(Some((session, next))) => {
            if link.kind == LinkKind::Signin {
                tracing::info!("signed in with a one-time link");
            }
            signed_in_redirect(&w, ui, session.expose(), &next)
        }
        Ok(None) | Err(Fail::Input) => link.gone(&w, ui),
        Err(_) => internal_page(&w, ui),
    }
}

// ---------------------------------------------------------------------------
// sign-up

#[allow(clippy::too_many_arguments)]
fn signup_render(
    w: &Web,
    ui: &Ui,
    status: StatusCode,
    next: &str,
    email: &str,
    error: Option<(&str, &str)>,
    pre: &str,
) -> Response {
    let text = w.app.base.consent().get(ui.lang);
    let csrf = w.csrf(CSRF_SIGNUP, pre);
    let p = pages::SignupPage { csrf: &csrf, next, email, text_language: &text.language, text: &text.body, error };
    page(w, ui, status, ui.signup_title, pages::signup(ui, &p))
}

/// `GET /signup?next=…`: e-mail, optional password, the consent text and its checkbox.
async fn signup_page(State(w): State<Shared>, headers: HeaderMap, RawQuery(q): RawQuery) -> Response {
    let ui = page_ui(&w, &headers);
    let next = next_from_query(q.as_deref());
    let pre = PreSession::for_form(&w.app.base, &headers);
    let res = signup_render(&w, ui, StatusCode::OK, &next, "", None, &pre.binding);
    pre.set_on(res)
}

/// `POST /signup` (csrf, email, password, accept, lang, next): queues the confirmation
/// e-mail (or, for an address with an account, a sign-in link); 303 to `/signup/sent`
/// either way.
async fn signup_submit(State(w): State<Shared>, headers: HeaderMap, peer: Peer, body: Bytes) -> Response {
    let ui = page_ui(&w, &headers);
    let client = peer_key(&peer);
    let form = FormFields::parse(&body);
    let next = safe_next(&form.next);
    let Some(pre) = PreSession::of(&w.app.base, &headers).filter(|p| w.csrf_ok(&form.csrf, CSRF_SIGNUP, p)) else {
        return csrf_page(&w, ui);
    };
    let again = |w: &Web, status: StatusCode, msg: &str, field: &str| {
        signup_render(w, ui, status, &next, &form.email, Some((msg, field)), &pre)
    };
    if form.accept != "yes" {
        return again(&w, StatusCode::BAD_REQUEST, ui.accept_required, "accept");
    }
    let Ok(email) = crate::protocol::input::validate_email(&form.email) else {
        return again(&w, StatusCode::BAD_REQUEST, ui.email_invalid, "email");
    };
    if !form.password.is_empty() && password::check_length(&form.password).is_err() {
        return again(&w, StatusCode::BAD_REQUEST, ui.password_invalid, "password");
    }
    if w.with_limits(|l, now| l.too_many_mails(client, now)) {
        return too_many(again(&w, StatusCode::OK, ui.mail_busy, "email"), 60);
    }
    // Every request counts, whether or not a mail goes out (no enumeration).
    w.with_limits(|l, now| l.count_mail(client, now));
    // The consent text the person read (sent back by the form) and the e-mail language.
    let lang = i18n::language(&form.lang).unwrap_or(ui.lang);
    // Hash before looking the address up, so that the answer takes as long either way.
    let password_hash = if form.password.is_empty() {
        None
    } else {
        let pw = Zeroizing::new(form.password.clone());
        match hashing(&w, move || password::hash(&pw)).await {
            Ok(Ok(h)) => Some(h),
            Ok(Err(e)) => {
                tracing::error!(error = %e, "sign-up: password hashing failed");
                return internal_page(&w, ui);
            }
            Err(_) => return internal_page(&w, ui),
        }
    };
    let req = SignupRequest { email, password_hash, lang: lang.to_owned(), next: next.clone() };
    match call(&w.app, "request_signup", move |x| accounts::request_signup(&x.base, req)).await {
        Ok(MailOutcome::Queued | MailOutcome::Nothing) => Redirect::to("/signup/sent").into_response(),
        Ok(MailOutcome::Throttled) => too_many(again(&w, StatusCode::OK, ui.mail_throttled, "email"), 3600),
        Err(Fail::Input) => again(&w, StatusCode::BAD_REQUEST, ui.email_invalid, "email"),
        Err(_) => internal_page(&w, ui),
    }
}
