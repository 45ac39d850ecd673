//! The pages driven through the router (axum's `oneshot` pattern) over a real holder: a
//! store file in a temporary directory, an ephemeral key ring and a manual clock.

use super::routes;
use crate::clock::{self, Clock, ManualClock};
use crate::config::Settings;
use crate::crypto::KeyRing;
use crate::gazetteer::AreaObject;
use crate::intents::PublishResult;
use crate::mail::{MailContent, MailJob};
use crate::protocol::{Money, Status};
use crate::records::OfferInput;
use crate::state::AppState;
use crate::store::{Store, StoreError};
use axum::body::Body;
use axum::http::{header, HeaderMap, Method, Request, StatusCode};
use axum::Router;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use tower::ServiceExt;

pub(super) const STATEMENT: &str = "Hľadám Škoda Octavia, diesel";
pub(super) const EMAIL: &str = "buyer.one@buyer.example";
pub(super) const EMAIL2: &str = "someone.else@buyer.example";

pub(super) struct Env {
    _dir: tempfile::TempDir,
    pub(super) holder: AppState,
    pub(super) clock: Arc<ManualClock>,
    app: Router,
}

pub(super) fn env() -> Env {
    let (dir, holder, clock) = holder(|_| {});
    let app = routes(holder.clone(), crate::oauth::Server::new(holder.base.clone()));
    Env { _dir: dir, holder, clock, app }
}

/// A real holder for the pages' tests: a store file in a temporary directory (kept while
/// the `TempDir` lives), an ephemeral key ring, a manual clock at 2026-12-01T10:00:00Z,
/// and the default settings named "Test holder", changed by `change`.
pub(super) fn holder(change: impl FnOnce(&mut Settings)) -> (tempfile::TempDir, AppState, Arc<ManualClock>) {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = Settings::defaults();
    settings.data_dir = dir.path().to_owned();
    settings.holder_name = "Test holder".into();
    change(&mut settings);
    let store = Store::open(&dir.path().join(crate::store::FILE_NAME)).unwrap();
    let clock = Arc::new(ManualClock::new(clock::parse_rfc3339("2026-12-01T10:00:00Z").unwrap()));
    let holder = AppState::new(settings, store, KeyRing::ephemeral(), clock.clone());
    (dir, holder, clock)
}

/// `method path` with `headers` and `body`.
fn request(method: Method, path: &str, headers: &[(header::HeaderName, &str)], body: Body) -> Request<Body> {
    let mut b = Request::builder().method(method).uri(path);
    for (name, value) in headers {
        b = b.header(name, *value);
    }
    b.body(body).unwrap()
}

/// `GET path` with `headers`.
pub(super) fn get_request(path: &str, headers: &[(header::HeaderName, &str)]) -> Request<Body> {
    request(Method::GET, path, headers, Body::empty())
}

/// `POST path` of the url-encoded `fields`, with `headers`.
pub(super) fn post_request(
    path: &str,
    fields: impl serde::Serialize,
    headers: &[(header::HeaderName, &str)],
) -> Request<Body> {
    let form = [(header::CONTENT_TYPE, "application/x-www-form-urlencoded")];
    let all: Vec<_> = form.iter().chain(headers).cloned().collect();
    request(Method::POST, path, &all, Body::from(serde_urlencoded::to_string(fields).unwrap()))
}

/// The `Cookie` header of `cookie`, if any (for [`get_request`] and [`post_request`]).
pub(super) fn cookie_header(cookie: Option<&str>) -> Vec<(header::HeaderName, &str)> {
    cookie.map(|c| (header::COOKIE, c)).into_iter().collect()
}

/// Sends `req` through `app` and reads the whole answer.
pub(super) async fn send(app: &Router, req: Request<Body>) -> Resp {
    let res = app.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let body = axum::body::to_bytes(res.into_body(), usize::MAX).await.unwrap();
    Resp { status, headers, body: String::from_utf8(body.to_vec()).unwrap() }
}

impl Env {
    pub(super) fn publish(&self, args: Value) -> PublishResult {
        let p = self.holder.intents.parse_publish(&args).unwrap();
        self.holder.intents.publish_draft(p).unwrap()
    }

    pub(super) fn publish_octavia(&self) -> PublishResult {
        self.publish(json!({
            "statement": STATEMENT,
            "criteria": {"category": "vehicles", "make": "Škoda", "model": "Octavia", "year": {"min": 2016}},
            "area": "Bratislava",
            "budget": {"max": 15000, "currency": "EUR"},
            "hiddenLimit": 13500,
            "buyBy": "2027-03-01",
        }))
    }

    pub(super) fn status(&self, p: &PublishResult) -> Status {
        self.holder.intents.get_by_code(&p.intent_code, None).unwrap().status
    }

    pub(super) async fn get(&self, path: &str) -> Resp {
        self.send(get_request(path, &[])).await
    }

    pub(super) async fn post(&self, path: &str, fields: &[(&str, &str)]) -> Resp {
        self.send(post_request(path, fields, &[])).await
    }

    pub(super) async fn send(&self, req: Request<Body>) -> Resp {
        send(&self.app, req).await
    }

    /// The (only) queued mail, opened.
    pub(super) fn mails(&self) -> Vec<MailContent> {
        outbox(&self.holder.base)
    }
}

/// The queued mails of `base`, opened.
pub(super) fn outbox(base: &crate::base::Base) -> Vec<MailContent> {
    use crate::store::Reads as _;
    let jobs: Vec<(u64, MailJob)> = base.store().read(|rx| -> Result<_, StoreError> { rx.outbox() }).unwrap();
    jobs.iter().map(|(_, j)| serde_json::from_slice(&base.keys().open(&j.sealed).unwrap()).unwrap()).collect()
}

#[derive(Debug)]
pub(super) struct Resp {
    pub(super) status: StatusCode,
    pub(super) headers: HeaderMap,
    pub(super) body: String,
}

impl Resp {
    pub(super) fn header(&self, name: header::HeaderName) -> &str {
        self.headers.get(name).map(|v| v.to_str().unwrap()).unwrap_or_default()
    }

    pub(super) fn location(&self) -> &str {
        self.header(header::LOCATION)
    }

    pub(super) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|_| panic!("not JSON: {}", self.body))
    }

    pub(super) fn csrf(&self) -> String {
        self.csrf_after(0)
    }

    /// The CSRF token of the form posting to `action`.
    pub(super) fn csrf_for(&self, action: &str) -> String {
        let at = self
            .body
            .find(&format!("action=\"{action}\""))
            .unwrap_or_else(|| panic!("no form for {action} in:\n{}", self.body));
        self.csrf_after(at)
    }

    /// The value of the first CSRF field at or after byte `from` of the body.
    fn csrf_after(&self, from: usize) -> String {
        let marker = "name=\"csrf\" value=\"";
        let found = self.body[from..].find(marker).unwrap_or_else(|| panic!("no csrf field in:\n{}", self.body));
        self.body[from + found + marker.len()..].split('"').next().unwrap().to_owned()
    }

    pub(super) fn has_form(&self) -> bool {
        self.body.contains("<form")
    }

    /// The `name=value` of the first cookie set whose `Set-Cookie` value does (`pre`) or
    /// does not contain the pre-session cookie's name.
    fn set_cookie(&self, pre: bool) -> Option<String> {
        let mut all = self.headers.get_all(header::SET_COOKIE).iter().map(|v| v.to_str().unwrap());
        let v = all.find(|v| v.contains("isto_pre=") == pre)?;
        Some(v.split(';').next().unwrap().to_owned())
    }

    /// The `name=value` of the session cookie set, if any.
    pub(super) fn cookie(&self) -> Option<String> {
        self.set_cookie(false)
    }

    /// The `name=value` of the pre-session cookie a sign-in or sign-up form's GET sets
    /// (the forms' CSRF tokens are bound to it), if any.
    pub(super) fn pre_cookie(&self) -> Option<String> {
        self.set_cookie(true)
    }

    /// The query parameters of the Location header.
    pub(super) fn location_params(&self) -> Vec<(String, String)> {
        let q = self.location().split_once('?').map(|(_, q)| q).unwrap_or_default();
        serde_urlencoded::from_str(q).unwrap()
    }

    pub(super) fn location_param(&self, name: &str) -> Option<String> {
        self.location_params().into_iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }
}

/// The last path segment of a URL (the token).
pub(super) fn token_of(url: &str) -> String {
    url.rsplit('/').next().unwrap().to_owned()
}

/// The URL in `text` that contains `part`.
pub(super) fn url_in(text: &str, part: &str) -> String {
    text.split_whitespace().find(|w| w.contains(part)).unwrap_or_else(|| panic!("no {part} URL in:\n{text}")).to_owned()
}

pub(super) fn assert_page_headers(r: &Resp) {
    assert_eq!(r.header(header::CACHE_CONTROL), "no-store");
    assert_eq!(r.header(header::X_FRAME_OPTIONS), "DENY");
    assert_eq!(
        r.header(header::CONTENT_SECURITY_POLICY),
        "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'"
    );
    assert_eq!(r.header(header::REFERRER_POLICY), "no-referrer");
}

/// No page may show the e-mail, the hidden limit, or a token other than its own.
pub(super) fn assert_private(r: &Resp, secrets: &[&str]) {
    for s in secrets {
        assert!(!r.body.contains(s), "page contains {s:?}:\n{}", r.body);
    }
    for limit in ["13500", "13 500", "13\u{a0}500", "13.500", "13,500"] {
        assert!(!r.body.contains(limit), "page shows the hidden limit:\n{}", r.body);
    }
}

fn octavia_offer() -> OfferInput {
    let mut attributes = Map::new();
    attributes.insert("make".into(), json!("Škoda"));
    attributes.insert("model".into(), json!("Octavia"));
    attributes.insert("year".into(), json!(2018));
    attributes.insert("fuel".into(), json!("diesel"));
    OfferInput {
        reference: Some("oct-1".into()),
        title: "Škoda Octavia 2.0 TDI Combi".into(),
        description: "Diesel, kombi, servisná knižka.".into(),
        category: "vehicles".into(),
        attributes,
        price: Money { amount: 13000.0, currency: "EUR".into() },
        area: AreaObject { country: "SK".into(), regions: vec!["SK-BL".into()], place: Some("Bratislava".into()) },
        seller_name: "Autá Test s.r.o.".into(),
        seller_url: Some("https://dealer.example/".into()),
        url: Some("https://dealer.example/oct-1".into()),
        valid_until: None,
    }
}

#[tokio::test]
async fn home_page_names_the_holder_and_the_mcp_endpoint() {
    let e = env();
    let r = e.get("/").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_page_headers(&r);
    assert!(r.body.contains("Test holder"));
    assert!(r.body.contains("http://127.0.0.1:8080/mcp"));
    assert!(r.body.contains("<html lang=\"sk\">"));
}

impl Env {
    /// `GET path` with an `Accept-Language` header.
    pub(super) async fn get_in(&self, path: &str, accept_language: &str) -> Resp {
        self.send(get_request(path, &[(header::ACCEPT_LANGUAGE, accept_language)])).await
    }
}

/// The home page's words and links in `lang`.
fn assert_home_in(r: &Resp, lang: &str, words: &str) {
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_page_headers(r);
    assert!(r.body.contains(&format!("<html lang=\"{lang}\">")), "{lang}:\n{}", r.body);
    assert!(r.body.contains(words), "{lang}: no {words:?} in:\n{}", r.body);
    let ui = super::i18n::ui(lang);
    for (href, text) in
        [("/signin", ui.account.signin_title), ("/signup", ui.account.signup_title), ("/me", ui.mine.title)]
    {
        assert!(r.body.contains(&format!("<a href=\"{href}\">{text}</a>")), "{lang}: no link {href} in:\n{}", r.body);
    }
    assert!(r.body.contains("<code class=\"url\">http://127.0.0.1:8080/mcp</code>"), "{}", r.body);
    for (code, name) in super::i18n::LANGUAGE_NAMES {
        let link = format!("<a href=\"/?lang={code}\" lang=\"{code}\" hreflang=\"{code}\"");
        let at = r.body.find(&link).unwrap_or_else(|| panic!("{lang}: no switcher link {code} in:\n{}", r.body));
        let tag = r.body[at..].split('>').next().unwrap();
        assert_eq!(tag.contains("aria-current=\"page\""), code == lang, "{lang}: {tag}");
        assert!(r.body[at..].contains(&format!(">{name}</a>")));
    }
    assert!(r.header(header::SET_COOKIE).is_empty(), "the home page sets nothing");
}

#[tokio::test]
async fn home_page_speaks_the_browsers_language() {
    let e = env();
    assert_home_in(&e.get_in("/", "sk").await, "sk", "držiteľ dopytov Isto Intents");
    assert_home_in(&e.get_in("/", "cs-CZ,cs;q=0.9,en;q=0.5").await, "cs", "držitel poptávek Isto Intents");
    assert_home_in(&e.get_in("/", "en-GB,en;q=0.8").await, "en", "an Isto Intents intent holder");
    // Neither language acceptable: the holder's default.
    assert_home_in(&e.get_in("/", "de").await, "sk", "držiteľ dopytov");
    // What never leaves the holder is said, in every language.
    for (lang, words) in [
        ("sk", "Kontakt ani skrytý cenový limit nikdy neopustia"),
        ("cs", "Kontakt ani skrytý cenový limit nikdy neopustí"),
        ("en", "contact and hidden price limit never leave"),
    ] {
        assert!(e.get_in("/", lang).await.body.contains(words), "{lang}");
    }
}

#[tokio::test]
async fn the_language_switcher_chooses_the_language_of_the_home_page() {
    let e = env();
    assert_home_in(&e.get_in("/?lang=cs", "en").await, "cs", "držitel poptávek");
    assert_home_in(&e.get_in("/?lang=en", "sk").await, "en", "intent holder");
    assert_home_in(&e.get_in("/?lang=sk", "cs").await, "sk", "držiteľ dopytov");
    // An unknown choice leaves it to Accept-Language.
    assert_home_in(&e.get_in("/?lang=de", "cs").await, "cs", "držitel poptávek");
    // The choice is not remembered: a GET changes nothing.
    assert_home_in(&e.get_in("/", "en").await, "en", "intent holder");
}

#[tokio::test]
async fn unknown_page_addresses_get_a_404_page_in_the_layout_and_the_language() {
    let e = env();
    for (path, accept, lang, title, body) in [
        ("/no/such/page", "en", "en", "Page not found", "There is no page at this address."),
        ("/me/nothing-here", "cs", "cs", "Stránka nenalezena", "Na této adrese není žádná stránka."),
        ("/hladam?x=1", "sk", "sk", "Stránka sa nenašla", "Na tejto adrese nie je žiadna stránka."),
        ("/nope?lang=en", "cs", "en", "Page not found", "There is no page at this address."),
    ] {
        let r = e.get_in(path, accept).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}");
        assert_page_headers(&r);
        assert_eq!(r.header(header::CONTENT_TYPE), "text/html; charset=utf-8", "{path}");
        assert!(r.body.contains(&format!("<html lang=\"{lang}\">")), "{path}:\n{}", r.body);
        assert!(r.body.contains(&super::stylesheet_href()), "{path}: the layout's stylesheet");
        assert!(r.body.contains("<header class=\"site\"><a href=\"/\">Test holder</a></header>"), "{}", r.body);
        assert!(r.body.contains(&format!("<h1>{title}</h1>")), "{path}:\n{}", r.body);
        assert!(r.body.contains(body), "{path}:\n{}", r.body);
        let home = format!("<a href=\"/\">{}</a>", super::i18n::ui(lang).home_link);
        assert!(r.body.contains(&home), "{path}: no link home in:\n{}", r.body);
        assert!(r.body.contains("noindex"), "{path}");
    }
    // A POST to an address that is no page gets the same page.
    let r = e.post("/no/such/form", &[("a", "b")]).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert!(r.body.contains("<h1>Stránka sa nenašla</h1>"), "{}", r.body);
    // The machine endpoints' spaces keep their plain empty 404.
    for path in ["/oauth/nope", "/.well-known/nope", "/assets/nope.css", "/mcpx", "/healthz/x"] {
        let r = e.get_in(path, "en").await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}");
        assert!(r.body.is_empty(), "{path}: {}", r.body);
    }
    // A known route with another method is still 405, not the 404 page.
    assert_eq!(e.post("/", &[("a", "b")]).await.status, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn an_unknown_token_page_links_home() {
    let e = env();
    let r = e.get_in("/results/not-a-real-token-at-all", "en").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert!(r.body.contains("<a href=\"/\">Na úvodnú stránku</a>"), "{}", r.body);
}

#[tokio::test]
async fn consent_confirm_results_and_one_click_withdraw() {
    let e = env();
    e.holder.catalogue.import_offers(vec![octavia_offer()]).unwrap();
    let p = e.publish_octavia();
    let token = token_of(&p.consent_url);
    let consent = format!("/consent/{token}");

    // The consent page: statement, public details, "a limit is set", never its value.
    let page = e.get(&consent).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert_page_headers(&page);
    assert!(page.body.contains("<html lang=\"sk\">"));
    assert!(page.body.contains("<meta name=\"viewport\""));
    assert!(page.body.contains("<meta name=\"referrer\" content=\"no-referrer\">"));
    assert!(page.body.contains(STATEMENT), "{}", page.body);
    assert!(page.body.contains("limit"), "no limit sentence");
    assert!(page.body.contains("Bratislavský kraj"), "region name missing");
    // No budget on a page behind a link (links leak through scanners and shared inboxes).
    assert!(!page.body.contains("15\u{a0}000"), "budget shown behind a token");
    assert!(page.body.contains("≥ 2016"), "criteria table missing");
    let pos = |s: &str| page.body.find(s).unwrap_or_else(|| panic!("{s} missing"));
    assert!(pos(">Značka<") < pos(">Model<") && pos(">Model<") < pos(">Rok výroby<"), "criteria out of order");
    assert!(page.body.contains(&e.holder.base.consent().get("sk").body.lines().next().unwrap()[..40]));
    for needle in [
        "type=\"email\" name=\"email\" required autocomplete=\"email\"",
        "type=\"checkbox\" name=\"accept\" value=\"yes\" required",
        "name=\"lang\" value=\"sk\"",
        &format!("action=\"/consent/{token}\""),
    ] {
        assert!(page.body.contains(needle), "consent form lacks {needle}:\n{}", page.body);
    }
    assert_private(&page, &[&p.intent_code]);
    let csrf = page.csrf();

    // Without or with a wrong CSRF token: 403, nothing recorded.
    let r = e.post(&consent, &[("email", EMAIL), ("accept", "yes"), ("lang", "sk")]).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert!(r.body.contains("načítajte stránku znova"), "{}", r.body);
    let other = e.holder.base.keys().csrf_token("confirm", &token, e.clock.now().unix_timestamp());
    let r = e.post(&consent, &[("email", EMAIL), ("accept", "yes"), ("csrf", &other)]).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(e.status(&p), Status::AwaitingConsent);

    // Without the checkbox: 400, the page names it, the e-mail is not echoed.
    let r = e.post(&consent, &[("email", EMAIL), ("csrf", &csrf), ("lang", "sk")]).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.body.contains("role=\"alert\""));
    assert!(r.body.contains("„Súhlasím s textom vyššie“"), "{}", r.body);
    assert_private(&r, &[EMAIL]);
    // A malformed address: 400 with the message.
    let r = e.post(&consent, &[("email", "not-an-address"), ("accept", "yes"), ("csrf", &csrf)]).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.body.contains("meno@example.com"), "{}", r.body);
    assert!(!r.body.contains("not-an-address"));
    assert_eq!(e.status(&p), Status::AwaitingConsent);

    // Consent: 303 to the "check your e-mail" page, which does not show the address.
    let r = e.post(&consent, &[("email", EMAIL), ("accept", "yes"), ("csrf", &csrf), ("lang", "sk")]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_page_headers(&r);
    assert_eq!(r.header(header::LOCATION), format!("/consent/{token}/sent"));
    assert_eq!(e.status(&p), Status::AwaitingEmailConfirmation);
    let sent = e.get(&format!("/consent/{token}/sent")).await;
    assert_eq!(sent.status, StatusCode::OK);
    assert!(sent.body.contains("Skontrolujte si e-mail"));
    assert_private(&sent, &[EMAIL, &p.intent_code]);

    // First come: the same form with another address is refused.
    let r = e.post(&consent, &[("email", EMAIL2), ("accept", "yes"), ("csrf", &csrf), ("lang", "sk")]).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert_private(&r, &[EMAIL, EMAIL2]);
    // And the consent page no longer has a form.
    let r = e.get(&consent).await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert!(!r.has_form());
    assert_private(&r, &[EMAIL, EMAIL2, &p.intent_code]);
    assert_eq!(e.status(&p), Status::AwaitingEmailConfirmation);

    // The confirmation e-mail carries the /confirm/ and /withdraw/ links.
    let mails = e.mails();
    assert_eq!(mails.len(), 1);
    assert_eq!(mails[0].to, EMAIL);
    let confirm_token = token_of(&url_in(&mails[0].text, "/confirm/"));
    let manage_token = token_of(&url_in(&mails[0].text, "/withdraw/"));
    let confirm = format!("/confirm/{confirm_token}");

    // GET never confirms (mail scanners follow links).
    let page = e.get(&confirm).await;
    assert_eq!(page.status, StatusCode::OK);
    assert_page_headers(&page);
    assert!(page.body.contains(STATEMENT));
    assert!(page.body.contains("Potvrdiť"));
    assert!(page.body.contains(&format!("action=\"/confirm/{confirm_token}\"")));
    assert_private(&page, &[EMAIL, &token, &manage_token, &p.intent_code]);
    e.get(&confirm).await;
    assert_eq!(e.status(&p), Status::AwaitingEmailConfirmation);

    // POST without CSRF: 403; with: 303 to the done page, active, the offer delivered.
    let r = e.post(&confirm, &[]).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(e.status(&p), Status::AwaitingEmailConfirmation);
    let r = e.post(&confirm, &[("csrf", &page.csrf())]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(r.header(header::LOCATION), format!("/confirm/{confirm_token}/done"));
    assert_eq!(e.status(&p), Status::Active);
    let done = e.get(&format!("/confirm/{confirm_token}/done")).await;
    assert_eq!(done.status, StatusCode::OK);
    assert!(done.body.contains("Váš dopyt je aktívny"));
    // Confirming again is harmless; the page then says it is active, without a button.
    let r = e.post(&confirm, &[("csrf", &page.csrf())]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    let again = e.get(&confirm).await;
    assert_eq!(again.status, StatusCode::OK);
    assert!(again.body.contains("Tento dopyt je už aktívny"));
    // No Confirm form any more, and no other form: a used link shows only its outcome.
    assert!(!again.has_form(), "{}", again.body);
    assert!(!done.has_form(), "{}", done.body);

    // The results page of the manage link: the delivered offer and the withdraw link.
    let results = e.get(&format!("/results/{manage_token}")).await;
    assert_eq!(results.status, StatusCode::OK);
    assert_page_headers(&results);
    assert!(results.body.contains("href=\"https://dealer.example/oct-1\""), "{}", results.body);
    assert!(results.body.contains("Škoda Octavia 2.0 TDI Combi"));
    assert!(results.body.contains("13\u{a0}000\u{a0}EUR"));
    assert!(results.body.contains("Autá Test s.r.o."));
    assert!(results.body.contains(&format!("href=\"/withdraw/{manage_token}\"")));
    assert!(results.body.contains("aktívny"));
    assert_private(&results, &[EMAIL, &token, &confirm_token, &p.intent_code]);

    // The unsubscribe link's GET shows the Withdraw form and changes nothing.
    let unsub = format!("/unsubscribe/{manage_token}");
    let r = e.get(&unsub).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body.contains(&format!("action=\"/withdraw/{manage_token}\"")));
    assert!(r.has_form());
    assert_eq!(e.status(&p), Status::Active);

    // RFC 8058 one-click: a POST without CSRF withdraws at once.
    let r = e.post(&unsub, &[("List-Unsubscribe", "One-Click")]).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(e.status(&p), Status::Withdrawn);
    let r = e.get(&format!("/withdraw/{manage_token}")).await;
    assert!(r.body.contains("Dopyt je zrušený"));
    assert!(!r.has_form());
    // Confirming a withdrawn intent: 410.
    let r = e.post(&confirm, &[("csrf", &page.csrf())]).await;
    assert_eq!(r.status, StatusCode::GONE);
    assert_eq!(e.status(&p), Status::Withdrawn);
}

#[tokio::test]
async fn withdraw_form_needs_csrf_and_redirects_to_done() {
    let e = env();
    let p = e.publish(
        json!({"statement": "I am looking for a used Skoda Octavia estate with a diesel engine", "area": "SK"}),
    );
    let token = token_of(&p.consent_url);
    let page = e.get(&format!("/consent/{token}")).await;
    assert!(page.body.contains("<html lang=\"en\">"), "{}", page.body);
    assert!(!page.body.contains("A hidden price limit is set"));
    assert!(page.body.contains("Slovakia"));
    let r = e
        .post(
            &format!("/consent/{token}"),
            &[("email", EMAIL), ("accept", "yes"), ("csrf", &page.csrf()), ("lang", "en")],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    let manage = token_of(&url_in(&e.mails()[0].text, "/withdraw/"));
    let path = format!("/withdraw/{manage}");

    let page = e.get(&path).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("Withdraw"));
    assert_eq!(e.status(&p), Status::AwaitingEmailConfirmation);
    let r = e.post(&path, &[("csrf", "1.forged")]).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert!(r.body.contains("The form expired, reload the page"));
    assert_eq!(e.status(&p), Status::AwaitingEmailConfirmation);
    let r = e.post(&path, &[("csrf", &page.csrf())]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_eq!(r.header(header::LOCATION), format!("/withdraw/{manage}/done"));
    assert_eq!(e.status(&p), Status::Withdrawn);
    let done = e.get(&format!("/withdraw/{manage}/done")).await;
    assert_eq!(done.status, StatusCode::OK);
    assert!(done.body.contains("Your request is withdrawn"));
    // Withdrawal cancelled the queued confirmation e-mail.
    assert!(e.mails().is_empty());
}

#[tokio::test]
async fn expired_draft_says_so_and_refuses_consent() {
    let e = env();
    let p = e.publish_octavia();
    let token = token_of(&p.consent_url);
    e.clock.advance(time::Duration::hours(25));
    let page = e.get(&format!("/consent/{token}")).await;
    assert_eq!(page.status, StatusCode::GONE);
    assert!(page.body.contains("vypršala"), "{}", page.body);
    assert!(!page.has_form());
    // Even with a valid CSRF token (the page no longer offers one), consent is refused.
    let csrf = e.holder.base.keys().csrf_token("consent", &token, e.clock.now().unix_timestamp());
    let r = e.post(&format!("/consent/{token}"), &[("email", EMAIL), ("accept", "yes"), ("csrf", &csrf)]).await;
    assert_eq!(r.status, StatusCode::GONE);
    assert_eq!(e.status(&p), Status::Expired);
    assert!(e.mails().is_empty());
}

#[tokio::test]
async fn stale_csrf_token_is_refused() {
    let e = env();
    let p = e.publish_octavia();
    let token = token_of(&p.consent_url);
    let page = e.get(&format!("/consent/{token}")).await;
    e.clock.advance(time::Duration::hours(3));
    let r = e.post(&format!("/consent/{token}"), &[("email", EMAIL), ("accept", "yes"), ("csrf", &page.csrf())]).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(e.status(&p), Status::AwaitingConsent);
}

#[tokio::test]
async fn unknown_tokens_are_404_pages() {
    let e = env();
    for path in [
        "/consent/nope",
        "/consent/nope/sent",
        "/confirm/nope",
        "/confirm/nope/done",
        "/results/nope",
        "/withdraw/nope",
        "/withdraw/nope/done",
        "/unsubscribe/nope",
    ] {
        let r = e.get(path).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}");
        assert_page_headers(&r);
        assert!(r.body.contains("Stránka sa nenašla"), "{path}");
    }
    for path in ["/consent/nope", "/confirm/nope", "/withdraw/nope", "/unsubscribe/nope"] {
        let r = e.post(path, &[("csrf", "x")]).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}");
    }
    // The consent token does not open the other pages.
    let p = e.publish_octavia();
    let token = token_of(&p.consent_url);
    for path in [format!("/confirm/{token}"), format!("/results/{token}"), format!("/withdraw/{token}")] {
        assert_eq!(e.get(&path).await.status, StatusCode::NOT_FOUND, "{path}");
    }
    // Nor does the intentCode.
    assert_eq!(e.get(&format!("/consent/{}", p.intent_code)).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn stylesheet_is_served_with_cache_headers() {
    let e = env();
    let page = e.get("/").await;
    let at = page.body.find("/assets/style.css?v=").unwrap();
    let href = page.body[at..].split('"').next().unwrap().to_owned();
    let r = e.get(&href).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header(header::CONTENT_TYPE), "text/css; charset=utf-8");
    assert!(r.header(header::CACHE_CONTROL).contains("immutable"));
    assert!(r.body.contains("color-scheme"));
    let etag = r.header(header::ETAG).to_owned();
    assert!(etag.starts_with('"'));
    let r = e.send(get_request("/assets/style.css", &[(header::IF_NONE_MATCH, &etag)])).await;
    assert_eq!(r.status, StatusCode::NOT_MODIFIED);
    assert!(r.body.is_empty());
    let r = e.get("/assets/style.css").await;
    assert_eq!(r.header(header::CACHE_CONTROL), "public, max-age=3600");
}

#[tokio::test]
async fn account_pages_link_the_same_stylesheet_as_the_holders_other_pages() {
    let e = env();
    let home = e.get("/").await;
    let href = super::stylesheet_href();
    assert!(home.body.contains(&href), "{href}");
    let signup = send(&super::accounts::routes(e.holder.clone()), get_request("/signup", &[])).await;
    assert!(signup.body.contains(&href));
}
