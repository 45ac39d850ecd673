//! The account pages driven through the router (`oneshot`) over a real holder: a store
//! file in a temporary directory, an ephemeral key ring and a manual clock.

use super::accounts::safe_next;
use super::routes;
use super::tests::{cookie_header, get_request, holder, outbox, post_request, send, Resp};
use crate::accounts::*;
use crate::base::Base;
use crate::clock::ManualClock;
use crate::config::PublicUrl;
use crate::mail::MailContent;
use crate::store::{Ns, Reads, StoreError};
use axum::body::Body;
use axum::http::{header, HeaderMap, Request, StatusCode};
use axum::Router;
use std::sync::Arc;

const EMAIL: &str = "Person.One@Buyer.example";
const PASSWORD: &str = "correct horse battery";

struct Env {
    _dir: tempfile::TempDir,
    base: Arc<Base>,
    clock: Arc<ManualClock>,
    app: Router,
}

fn env_with(public_url: &str) -> Env {
    let (dir, holder, clock) = holder(|s| {
        s.default_language = "en".into();
        s.public_url = PublicUrl::parse(public_url).unwrap();
    });
    let base = holder.base.clone();
    let app = routes(holder.clone(), crate::oauth::Server::new(base.clone()));
    Env { _dir: dir, base, clock, app }
}

fn env() -> Env {
    env_with("https://holder.example")
}

impl Env {
    async fn send(&self, req: Request<Body>) -> Resp {
        send(&self.app, req).await
    }

    async fn get(&self, path: &str, cookie: Option<&str>) -> Resp {
        self.send(get_request(path, &cookie_header(cookie))).await
    }

    async fn post(&self, path: &str, fields: &[(&str, &str)], cookie: Option<&str>) -> Resp {
        self.send(post_request(path, fields, &cookie_header(cookie))).await
    }

    fn mails(&self) -> Vec<MailContent> {
        outbox(&self.base)
    }

    /// The token after `marker` in the newest mail that has it.
    fn token_from_outbox(&self, marker: &str) -> String {
        for m in self.mails().iter().rev() {
            if let Some(i) = m.text.find(marker) {
                return m.text[i + marker.len()..].split_whitespace().next().unwrap().to_owned();
            }
        }
        panic!("no mail with {marker}");
    }

    fn current(&self, cookie: &str) -> Option<(String, String)> {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, cookie.parse().unwrap());
        super::cookies::current(&self.base, &h)
    }

    /// Signs up through the pages (form, e-mail, Confirm) and returns the cookie.
    async fn sign_up(&self, email: &str, password: &str, next: &str) -> (Resp, String) {
        let page = self.get(&format!("/signup?next={}", urlencode(next)), None).await;
        assert_eq!(page.status, StatusCode::OK);
        let csrf = page.csrf_for("/signup");
        let r = self
            .post(
                "/signup",
                &[
                    ("csrf", &csrf),
                    ("email", email),
                    ("password", password),
                    ("accept", "yes"),
                    ("lang", "en"),
                    ("next", next),
                ],
                page.pre_cookie().as_deref(),
            )
            .await;
        assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/signup/sent"));
        let token = self.token_from_outbox("/signup/confirm/");
        let page = self.get(&format!("/signup/confirm/{token}"), None).await;
        assert_eq!(page.status, StatusCode::OK);
        let csrf = page.csrf_for(&format!("/signup/confirm/{token}"));
        let r = self.post(&format!("/signup/confirm/{token}"), &[("csrf", &csrf)], None).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
        let cookie = r.cookie().unwrap();
        (r, cookie)
    }

    async fn signin(&self, email: &str, password: &str, next: &str) -> Resp {
        let page = self.get("/signin", None).await;
        let csrf = page.csrf_for("/signin");
        let fields = [("csrf", csrf.as_str()), ("email", email), ("password", password), ("next", next)];
        self.post("/signin", &fields, page.pre_cookie().as_deref()).await
    }

    /// A password sign-in sent from client address `peer` (as the app's middleware gives it).
    async fn signin_from(&self, peer: &str, email: &str, password: &str) -> Resp {
        let page = self.get("/signin", None).await;
        let csrf = page.csrf_for("/signin");
        let fields = [("csrf", csrf.as_str()), ("email", email), ("password", password), ("next", "/me")];
        let mut req = post_request("/signin", fields, &[(header::COOKIE, &page.pre_cookie().unwrap())]);
        let addr: std::net::SocketAddr = peer.parse().unwrap();
        req.extensions_mut().insert(crate::net::ClientAddr(Some(addr.ip())));
        self.send(req).await
    }

    async fn request_link(&self, email: &str, next: &str) -> Resp {
        let page = self.get("/signin", None).await;
        let csrf = page.csrf_for("/signin/link");
        let fields = [("csrf", csrf.as_str()), ("email", email), ("next", next)];
        self.post("/signin/link", &fields, page.pre_cookie().as_deref()).await
    }

    /// Uses the newest sign-in link in the outbox; returns the POST's response.
    async fn use_link(&self) -> Resp {
        let token = self.token_from_outbox("/signin/link/");
        let page = self.get(&format!("/signin/link/{token}"), None).await;
        assert_eq!(page.status, StatusCode::OK);
        assert!(page.cookie().is_none(), "a GET never signs in");
        let csrf = page.csrf_for(&format!("/signin/link/{token}"));
        self.post(&format!("/signin/link/{token}"), &[("csrf", &csrf)], None).await
    }

    fn stored(&self, email: &str) -> Account {
        account_by_email(&self.base, email).unwrap().unwrap()
    }
}

/// `body` with the forms' CSRF token values blanked (they are bound to each browser's
/// pre-session cookie, so two browsers' pages differ there and only there).
fn without_csrf(body: &str) -> String {
    let marker = "name=\"csrf\" value=\"";
    let mut out = String::new();
    let mut rest = body;
    while let Some(at) = rest.find(marker) {
        out.push_str(&rest[..at + marker.len()]);
        rest = &rest[at + marker.len()..];
        rest = &rest[rest.find('"').unwrap_or(rest.len())..];
    }
    out.push_str(rest);
    out
}

fn urlencode(s: &str) -> String {
    serde_urlencoded::to_string([("x", s)]).unwrap()[2..].to_owned()
}

fn assert_page_headers(r: &Resp) {
    assert_eq!(r.header(header::CACHE_CONTROL), "no-store");
    assert_eq!(r.header(header::X_FRAME_OPTIONS), "DENY");
    assert_eq!(r.header(header::REFERRER_POLICY), "no-referrer");
    assert!(r.header(header::CONTENT_SECURITY_POLICY).contains("default-src 'none'"));
}

#[tokio::test]
async fn signup_is_double_opt_in_and_sets_a_secure_cookie() {
    let e = env();
    let page = e.get("/signup", None).await;
    assert_page_headers(&page);
    assert!(page.body.contains(&e.base.consent().get("en").body.lines().next().unwrap().trim().to_owned()));
    // The checkbox is required.
    let csrf = page.csrf_for("/signup");
    let pre = page.pre_cookie();
    let pre = pre.as_deref();
    let r = e.post("/signup", &[("csrf", &csrf), ("email", EMAIL), ("lang", "en")], pre).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    // Too short a password is refused before anything is sent.
    let r =
        e.post("/signup", &[("csrf", &csrf), ("email", EMAIL), ("password", "short"), ("accept", "yes")], pre).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(e.mails().is_empty());
    // No CSRF token: 403.
    let r = e.post("/signup", &[("email", EMAIL), ("accept", "yes")], pre).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);

    let csrf = page.csrf_for("/signup");
    let next = "/oauth/authorize?client_id=c&state=s";
    let r = e
        .post(
            "/signup",
            &[
                ("csrf", &csrf),
                ("email", EMAIL),
                ("password", PASSWORD),
                ("accept", "yes"),
                ("lang", "en"),
                ("next", next),
            ],
            pre,
        )
        .await;
    assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/signup/sent"));
    let mails = e.mails();
    assert_eq!(mails.len(), 1);
    assert_eq!(mails[0].to, "Person.One@buyer.example");
    assert!(mails[0].unsubscribe_url.ends_with("/account/mail"));
    let token = e.token_from_outbox("/signup/confirm/");
    assert!(account_by_email(&e.base, EMAIL).unwrap().is_none(), "no account before the confirmation");

    // GET shows a Confirm button and creates nothing (mail scanners follow links).
    for _ in 0..2 {
        let page = e.get(&format!("/signup/confirm/{token}"), None).await;
        assert_eq!(page.status, StatusCode::OK);
        assert!(page.cookie().is_none());
    }
    assert!(account_by_email(&e.base, EMAIL).unwrap().is_none());
    let page = e.get(&format!("/signup/confirm/{token}"), None).await;
    let csrf = page.csrf_for(&format!("/signup/confirm/{token}"));
    let r = e.post(&format!("/signup/confirm/{token}"), &[("csrf", &csrf)], None).await;
    assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, next));
    assert_page_headers(&r);
    let set = r.header(header::SET_COOKIE);
    assert!(set.starts_with("isto_session="), "{set}");
    for attr in ["HttpOnly", "SameSite=Lax", "Secure", "Path=/", "Max-Age=1209600"] {
        assert!(set.split("; ").any(|a| a == attr), "{attr} missing in {set}");
    }
    let cookie = r.cookie().unwrap();

    let a = e.stored(EMAIL);
    assert_eq!(a.role, ROLE_BUYER);
    assert!(a.id.starts_with("acc_"));
    assert_eq!(a.consent_version.as_deref(), Some(e.base.consent().get("en").version.as_str()));
    assert!(a.password_hash.as_deref().unwrap().starts_with("$argon2id$v=19$m=19456,t=2,p=1$"));
    assert_eq!(a.email(e.base.keys()).unwrap().expose(), "Person.One@buyer.example");
    assert!(!a.email.ct.contains("Person"), "the address is sealed at rest");
    assert_eq!(e.current(&cookie), Some((a.id.clone(), "buyer".to_owned())));
    assert_eq!(
        super::cookies::current(&e.base, &{
            let mut h = HeaderMap::new();
            h.insert(header::COOKIE, format!("other=1; {cookie}").parse().unwrap());
            h
        }),
        Some((a.id.clone(), "buyer".to_owned()))
    );

    // Only hashes of the tokens are stored.
    let session_token = cookie.split_once('=').unwrap().1.to_owned();
    let keys: Vec<String> = e
        .base
        .store()
        .read(|rx| -> Result<_, StoreError> {
            let mut k: Vec<String> = rx.records::<serde_json::Value>(Ns::Session)?.into_iter().map(|r| r.0).collect();
            k.extend(rx.records::<serde_json::Value>(Ns::SignInLink)?.into_iter().map(|r| r.0));
            Ok(k)
        })
        .unwrap();
    assert!(keys.iter().all(|k| !k.contains(&session_token) && !k.contains(&token)));

    // The link is single use.
    let r = e.post(&format!("/signup/confirm/{token}"), &[("csrf", &csrf)], None).await;
    assert_eq!(r.status, StatusCode::GONE);

    // Signing up again with the address (any case) sends a sign-in link instead; the
    // page says the same as for a new address.
    let page = e.get("/signup", None).await;
    let csrf = page.csrf_for("/signup");
    let fields = [("csrf", csrf.as_str()), ("email", "person.one@buyer.example"), ("accept", "yes")];
    let r = e.post("/signup", &fields, page.pre_cookie().as_deref()).await;
    assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/signup/sent"));
    let last = e.mails().pop().unwrap();
    assert!(last.subject.starts_with("You already have an account"), "{}", last.subject);
    assert!(last.text.contains("/signin/link/"));
    assert_eq!(accounts(&e.base).unwrap().len(), 1);
}

#[tokio::test]
async fn cookie_is_not_secure_on_http_and_signup_without_password() {
    let e = env_with("http://127.0.0.1:8080");
    let (r, cookie) = e.sign_up(EMAIL, "", "/me").await;
    let set = r.header(header::SET_COOKIE);
    assert!(set.contains("HttpOnly") && set.contains("SameSite=Lax"));
    assert!(!set.contains("Secure"), "{set}");
    assert_eq!(r.location(), "/me");
    assert!(e.stored(EMAIL).password_hash.is_none());
    assert!(e.current(&cookie).is_some());
}

#[tokio::test]
async fn password_signin_without_enumeration_and_safe_next() {
    let e = env();
    let (_, _) = e.sign_up(EMAIL, PASSWORD, "/me").await;
    let id = e.stored(EMAIL).id;

    let wrong = e.signin(EMAIL, "not the password", "/me").await;
    let unknown = e.signin("nobody@buyer.example", PASSWORD, "/me").await;
    for r in [&wrong, &unknown] {
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
        assert!(r.body.contains("Wrong e-mail address or password."));
        assert!(r.cookie().is_none());
    }
    let strip = |r: &Resp, email: &str| {
        let b = r.body.replace(email, "EMAIL");
        let mut parts = b.split("name=\"csrf\" value=\"");
        let first = parts.next().unwrap().to_owned();
        first + &parts.map(|p| p.split_once('"').unwrap().1).collect::<String>()
    };
    assert_eq!(strip(&wrong, "Person.One@buyer.example"), strip(&unknown, "nobody@buyer.example"));

    let ok = e.signin("person.one@BUYER.example", PASSWORD, "//evil.example/x").await;
    assert_eq!((ok.status, ok.location()), (StatusCode::SEE_OTHER, "/me"), "{}", ok.body);
    assert_eq!(e.current(&ok.cookie().unwrap()), Some((id.clone(), "buyer".into())));

    // Relative next is kept; absolute URLs, backslashes and protocol-relative ones are not.
    assert_eq!(safe_next("/oauth/authorize?a=b&c=%2F"), "/oauth/authorize?a=b&c=%2F");
    for bad in ["https://evil.example", "//evil.example", "/\\evil.example", "evil", "", "/a b", "/é"] {
        assert_eq!(safe_next(bad), "/me", "{bad}");
    }
}

#[tokio::test]
async fn successful_signin_rehashes_weaker_parameters() {
    let e = env();
    let id = create_seller(&e.base, "seller@dealer.example", "Dealer").unwrap();
    let weak = password::hash_with(PASSWORD, password::HashParams::new(1024, 1, 1, None).unwrap()).unwrap();
    e.base
        .store()
        .write(|tx| -> Result<(), StoreError> {
            let mut a: Account = tx.record(Ns::Account, &id)?.unwrap();
            a.password_hash = Some(weak.clone());
            tx.put_record(Ns::Account, &id, &a)
        })
        .unwrap();
    assert!(password::needs_rehash(&weak));
    let r = e.signin("seller@dealer.example", PASSWORD, "/seller").await;
    assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/seller"));
    let now = account(&e.base, &id).unwrap().unwrap().password_hash.unwrap();
    assert_ne!(now, weak);
    assert!(now.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{now}");
    assert!(password::verify(PASSWORD, &now));
    assert_eq!(e.current(&r.cookie().unwrap()).unwrap().1, "seller");
}

#[tokio::test]
async fn signin_link_is_single_use_and_expires() {
    let e = env();
    let id = create_seller(&e.base, "seller@dealer.example", "Dealer").unwrap();
    assert!(matches!(create_seller(&e.base, "SELLER@dealer.example", "Again"), Err(AccountError::Exists)));

    // Unknown address: the same answer, nothing sent.
    let r = e.request_link("nobody@dealer.example", "/x").await;
    assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/signin/sent"));
    assert!(e.mails().is_empty());
    let r = e.request_link("seller@dealer.example", "https://evil.example").await;
    assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/signin/sent"));
    assert_eq!(e.mails().len(), 1);
    let sent = e.get("/signin/sent", None).await;
    assert!(sent.body.contains("If an account exists"));

    let token = e.token_from_outbox("/signin/link/");
    let r = e.use_link().await;
    assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/me"), "a refused next falls back to /me");
    assert_eq!(e.current(&r.cookie().unwrap()), Some((id.clone(), "seller".into())));
    // Used once: gone for GET and POST.
    assert_eq!(e.get(&format!("/signin/link/{token}"), None).await.status, StatusCode::GONE);
    let csrf = e.base.keys().csrf_token("signin-link", &token, e.base.clock().now().unix_timestamp());
    let again = e.post(&format!("/signin/link/{token}"), &[("csrf", &csrf)], None).await;
    assert_eq!(again.status, StatusCode::GONE);
    assert!(again.cookie().is_none());

    // A new link with a next, unused for 16 minutes: expired.
    e.request_link("seller@dealer.example", "/seller/intents").await;
    let token = e.token_from_outbox("/signin/link/");
    let page = e.get(&format!("/signin/link/{token}"), None).await;
    let csrf = page.csrf_for(&format!("/signin/link/{token}"));
    e.clock.advance(time::Duration::minutes(16));
    assert_eq!(e.get(&format!("/signin/link/{token}"), None).await.status, StatusCode::GONE);
    let r = e.post(&format!("/signin/link/{token}"), &[("csrf", &csrf)], None).await;
    assert_eq!(r.status, StatusCode::GONE);
    assert!(r.cookie().is_none());

    // Within 15 minutes it works and keeps its next.
    e.request_link("seller@dealer.example", "/seller/intents").await;
    let r = e.use_link().await;
    assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/seller/intents"));

    // Five mails per address per hour.
    for _ in 0..2 {
        e.request_link("seller@dealer.example", "/").await;
    }
    let r = e.request_link("seller@dealer.example", "/").await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
}

/// Sign-in throttling is per client address and per e-mail address, never site-wide:
/// failures spread over many client addresses block none of them, one client address
/// is limited, and a good sign-in from a fresh address works throughout.
#[tokio::test]
async fn failures_are_limited_per_client_address_never_globally() {
    use super::client_limits::FAILURES_PER_CLIENT_PER_MINUTE;
    let e = env();
    e.sign_up(EMAIL, PASSWORD, "/me").await;
    // Many clients, one wrong attempt each (each at another unknown e-mail address).
    for i in 0..(FAILURES_PER_CLIENT_PER_MINUTE + 5) {
        let r = e.signin_from(&format!("198.51.100.{i}:4000"), &format!("x{i}@buyer.example"), "wrong password!").await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
    }
    // One client, many wrong attempts (spread over e-mail addresses to stay under the
    // per-account limit): limited after its share, with the same words for any address.
    let attacker = "203.0.113.7:5000";
    for i in 0..FAILURES_PER_CLIENT_PER_MINUTE {
        let r = e.signin_from(attacker, &format!("y{}@buyer.example", i / 4), "wrong password!").await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
    }
    let known = e.signin_from("[2001:db8:7::1]:1", EMAIL, PASSWORD).await;
    assert_eq!(known.status, StatusCode::SEE_OTHER, "a fresh address signs in");
    let blocked = e.signin_from("203.0.113.7:5001", EMAIL, PASSWORD).await;
    let unknown = e.signin_from(attacker, "nobody@buyer.example", PASSWORD).await;
    assert_eq!((blocked.status, unknown.status), (StatusCode::TOO_MANY_REQUESTS, StatusCode::TOO_MANY_REQUESTS));
    assert_eq!((blocked.header(header::RETRY_AFTER), unknown.header(header::RETRY_AFTER)), ("60", "60"));
    assert_eq!(
        without_csrf(&blocked.body).replace(EMAIL, "_"),
        without_csrf(&unknown.body).replace("nobody@buyer.example", "_"),
        "no enumeration"
    );
    // The per-account limit still holds across client addresses.
    for i in 0..5 {
        e.signin_from(&format!("192.0.2.{i}:1"), EMAIL, "wrong password!").await;
    }
    let r = e.signin_from("192.0.2.99:1", EMAIL, PASSWORD).await;
    assert_eq!((r.status, r.header(header::RETRY_AFTER)), (StatusCode::TOO_MANY_REQUESTS, "900"));
    // A new minute frees the client address (not the account).
    e.clock.advance(time::Duration::minutes(1));
    let r = e.signin_from(attacker, "nobody@buyer.example", "wrong password!").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

/// Sign-in link requests are limited per client address (counted whether or not the
/// address has an account), never site-wide.
#[tokio::test]
async fn link_requests_are_limited_per_client_address() {
    use super::client_limits::MAILS_PER_CLIENT_PER_MINUTE;
    let e = env();
    let request = |peer: &'static str, email: String| {
        let e = &e;
        async move {
            let page = e.get("/signin", None).await;
            let csrf = page.csrf_for("/signin/link");
            let fields = [("csrf", csrf.as_str()), ("email", email.as_str()), ("next", "/")];
            let mut req = post_request("/signin/link", fields, &[(header::COOKIE, &page.pre_cookie().unwrap())]);
            let addr: std::net::SocketAddr = peer.parse().unwrap();
            req.extensions_mut().insert(crate::net::ClientAddr(Some(addr.ip())));
            e.send(req).await
        }
    };
    for i in 0..MAILS_PER_CLIENT_PER_MINUTE {
        let r = request("203.0.113.8:1", format!("n{i}@buyer.example")).await;
        assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/signin/sent"));
    }
    let r = request("203.0.113.8:2", "other@buyer.example".into()).await;
    assert_eq!((r.status, r.header(header::RETRY_AFTER)), (StatusCode::TOO_MANY_REQUESTS, "60"));
    let r = request("198.51.100.1:1", "other@buyer.example".into()).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "another client address is not blocked");
}

#[tokio::test]
async fn five_failures_throttle_the_address() {
    let e = env();
    e.sign_up(EMAIL, PASSWORD, "/me").await;
    for _ in 0..5 {
        assert_eq!(e.signin(EMAIL, "wrong password!", "/me").await.status, StatusCode::BAD_REQUEST);
    }
    let r = e.signin(EMAIL, PASSWORD, "/me").await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(r.header(header::RETRY_AFTER), "900");
    assert!(r.body.contains("sign in with a link"));
    assert!(r.cookie().is_none());
    // Other addresses are not affected, and the throttle is the same for unknown ones.
    for _ in 0..5 {
        e.signin("nobody@buyer.example", PASSWORD, "/me").await;
    }
    assert_eq!(e.signin("nobody@buyer.example", PASSWORD, "/me").await.status, StatusCode::TOO_MANY_REQUESTS);
    // After the window the right password works again.
    e.clock.advance(time::Duration::minutes(16));
    let r = e.signin(EMAIL, PASSWORD, "/me").await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    e.clock.advance(time::Duration::minutes(61));
    assert!(sweep(&e.base).unwrap() > 0, "stale counters are swept");
    assert!(e.current(&r.cookie().unwrap()).is_some(), "sessions last 14 days");
    e.clock.advance(time::Duration::days(14));
    assert!(e.current(&r.cookie().unwrap()).is_none());
    assert!(sweep(&e.base).unwrap() > 0, "expired sessions are swept");
}

#[tokio::test]
async fn disabling_ends_sessions_at_once_and_signout_clears() {
    let e = env();
    let id = create_seller(&e.base, "seller@dealer.example", "Dealer").unwrap();
    e.request_link("seller@dealer.example", "/").await;
    let cookie = e.use_link().await.cookie().unwrap();
    assert!(e.current(&cookie).is_some());
    set_disabled(&e.base, &id, true).unwrap();
    assert_eq!(e.current(&cookie), None);
    // No link is sent to a disabled account.
    let before = e.mails().len();
    e.request_link("seller@dealer.example", "/").await;
    assert_eq!(e.mails().len(), before);
    set_disabled(&e.base, &id, false).unwrap();
    assert_eq!(e.current(&cookie), None, "its sessions were deleted");
    assert!(matches!(set_disabled(&e.base, "acc_none", true), Err(AccountError::NotFound)));

    // Sign out: the form on the sign-in page, CSRF bound to the session.
    e.request_link("seller@dealer.example", "/").await;
    let cookie = e.use_link().await.cookie().unwrap();
    let page = e.get("/signin", Some(&cookie)).await;
    assert!(page.body.contains("You are signed in."));
    let csrf = page.csrf_for("/signout");
    let forged = e.post("/signout", &[("csrf", "1.x")], Some(&cookie)).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    assert!(e.current(&cookie).is_some());
    let r = e.post("/signout", &[("csrf", &csrf)], Some(&cookie)).await;
    assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/"));
    let set = r.header(header::SET_COOKIE);
    assert!(set.starts_with("isto_session=;") && set.contains("Max-Age=0"), "{set}");
    assert_eq!(e.current(&cookie), None);
    let key = session_key(cookie.split_once('=').unwrap().1);
    assert!(!session_exists(&e.base, &key));
}

#[tokio::test]
async fn a_seller_sets_a_password_after_a_link_signin() {
    let e = env();
    create_seller(&e.base, "seller@dealer.example", "Dealer").unwrap();
    // Not signed in: to the sign-in page, coming back here.
    let r = e.get("/account/password", None).await;
    assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/signin?next=%2Faccount%2Fpassword"));
    e.request_link("seller@dealer.example", "/account/password").await;
    let cookie = e.use_link().await.cookie().unwrap();
    let page = e.get("/account/password", Some(&cookie)).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(!page.body.contains("name=\"current\""), "a link session needs no current password");
    let csrf = page.csrf_for("/account/password");
    let r = e
        .post("/account/password", &[("csrf", &csrf), ("password", PASSWORD), ("repeat", "other")], Some(&cookie))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = e
        .post("/account/password", &[("csrf", &csrf), ("password", PASSWORD), ("repeat", PASSWORD)], Some(&cookie))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(e.current(&cookie).is_some(), "this session stays");
    let r = e.signin("seller@dealer.example", PASSWORD, "/seller").await;
    assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/seller"));
    // A password session must give the current password to change it.
    let cookie = r.cookie().unwrap();
    let page = e.get("/account/password", Some(&cookie)).await;
    assert!(page.body.contains("name=\"current\""));
}

#[tokio::test]
async fn pages_answer_in_the_browsers_language_and_mail_info_changes_nothing() {
    let e = env();
    let r = e.send(get_request("/signin", &[(header::ACCEPT_LANGUAGE, "sk-SK,sk;q=0.9")])).await;
    assert!(r.body.contains("lang=\"sk\"") && r.body.contains("Prihlásenie"));
    let r = e.post("/account/mail", &[("List-Unsubscribe", "One-Click")], None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(e.get("/signin?next=//evil.example", None).await.body.contains("value=\"/me\""));
}

/// Whether the store holds a session under `key`.
fn session_exists(h: &Base, key: &str) -> bool {
    h.store().read(|rx| rx.record::<SessionRecord>(Ns::Session, key)).ok().flatten().is_some()
}

/// Login CSRF: the sign-in and sign-up forms' CSRF tokens are bound to
/// a pre-session cookie set by the form's GET; a token fetched by another party, posted
/// from a browser without that cookie (`Origin: null` or not), is refused.
#[tokio::test]
async fn signin_and_signup_tokens_are_bound_to_a_pre_session_cookie() {
    let e = env();
    e.sign_up(EMAIL, PASSWORD, "/me").await;
    let post_with = |path: &'static str, fields: Vec<(&'static str, String)>, cookie: Option<String>, null: bool| {
        let mut headers = cookie_header(cookie.as_deref());
        if null {
            headers.push((header::ORIGIN, "null"));
        }
        post_request(path, fields, &headers)
    };
    // The attacker's fetch: a token and the cookie it is bound to.
    let theirs = e.get("/signin", None).await;
    let set = theirs.header(header::SET_COOKIE).to_owned();
    for attr in ["__Host-isto_pre=", "Path=/", "HttpOnly", "SameSite=Lax", "Secure"] {
        assert!(set.contains(attr), "{attr} in {set}");
    }
    assert!(!set.contains("Domain"), "{set}");
    let (their_cookie, their_token) = (theirs.pre_cookie().unwrap(), theirs.csrf_for("/signin"));
    // A GET with the cookie keeps it.
    assert!(e.get("/signin", Some(&their_cookie)).await.pre_cookie().is_none());
    let victim_cookie = e.get("/signin", None).await.pre_cookie().unwrap();
    assert_ne!(victim_cookie, their_cookie);
    let signin = |csrf: &str| {
        vec![
            ("csrf", csrf.to_owned()),
            ("email", EMAIL.to_owned()),
            ("password", PASSWORD.to_owned()),
            ("next", "/me".to_owned()),
        ]
    };
    for (cookie, null) in
        [(None, true), (None, false), (Some(victim_cookie.clone()), true), (Some(victim_cookie), false)]
    {
        let r = e.send(post_with("/signin", signin(&their_token), cookie.clone(), null)).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{cookie:?} null={null}");
        assert!(r.cookie().is_none(), "no session");
    }
    let link = vec![("csrf", theirs.csrf_for("/signin/link")), ("email", EMAIL.to_owned()), ("next", "/me".to_owned())];
    assert_eq!(e.send(post_with("/signin/link", link, None, true)).await.status, StatusCode::FORBIDDEN);
    // With the cookie the token was bound to, `Origin: null` or not, it signs in.
    let r = e.send(post_with("/signin", signin(&their_token), Some(their_cookie.clone()), true)).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert!(e.current(&r.cookie().unwrap()).is_some());
    // Sign-up alike.
    let form = e.get("/signup", None).await;
    let fields = || {
        vec![
            ("csrf", form.csrf_for("/signup")),
            ("email", "someone.else@buyer.example".to_owned()),
            ("accept", "yes".to_owned()),
            ("lang", "en".to_owned()),
            ("next", "/me".to_owned()),
        ]
    };
    assert_eq!(e.send(post_with("/signup", fields(), None, true)).await.status, StatusCode::FORBIDDEN);
    assert_eq!(e.send(post_with("/signup", fields(), Some(their_cookie), false)).await.status, StatusCode::FORBIDDEN);
    let r = e.send(post_with("/signup", fields(), form.pre_cookie(), true)).await;
    assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/signup/sent"), "{}", r.body);
    // On plain http the cookie cannot be __Host- (that needs Secure).
    let plain = env_with("http://127.0.0.1:8080");
    let set = plain.get("/signin", None).await.header(header::SET_COOKIE).to_owned();
    assert!(set.starts_with("isto_pre=") && set.contains("HttpOnly") && !set.contains("Secure"), "{set}");
}
