//! The OAuth authorization page and the OAuth routes driven through the router
//! (`oneshot`) over a real holder: a store file in a temporary directory, an ephemeral
//! key ring and a manual clock. A test [`People`] signs in whoever carries a
//! `test_session` cookie.

use super::authorize::People;
use super::tests::{cookie_header, get_request, holder, post_request, send, Resp};
use crate::base::Base;
use crate::clock::ManualClock;
use crate::config::Settings;
use crate::oauth::{check_bearer, revoke_account, sweep, Grant, Server};
use crate::store::{Ns, Reads, StoreError};
use axum::body::Body;
use axum::http::{header, HeaderMap, Method, Request, StatusCode};
use axum::response::IntoResponse;
use axum::Router;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const BASE: &str = "http://127.0.0.1:8080";
const BUYER_COOKIE: &str = "test_session=buyer";
const SELLER_COOKIE: &str = "test_session=seller";
const REDIRECT: &str = "https://client.example/callback";

fn buyer() -> String {
    format!("{BASE}/mcp/buyer")
}

fn seller() -> String {
    format!("{BASE}/mcp/seller")
}

struct TestPeople;

impl People for TestPeople {
    fn current(&self, _base: &Base, headers: &HeaderMap) -> Option<(String, String)> {
        let c = headers.get(header::COOKIE)?.to_str().ok()?;
        if c.contains(BUYER_COOKIE) {
            Some(("acc_buyer".into(), "buyer".into()))
        } else if c.contains(SELLER_COOKIE) {
            Some(("acc_seller".into(), "seller".into()))
        } else {
            None
        }
    }
}

struct Env {
    _dir: tempfile::TempDir,
    base: Arc<Base>,
    clock: Arc<ManualClock>,
    app: Router,
}

fn env() -> Env {
    env_with(|_| {})
}

/// [`env`] with settings changed by `change`.
fn env_with(change: impl FnOnce(&mut Settings)) -> Env {
    let (dir, holder, clock) = holder(|s| {
        s.default_language = "en".into();
        assert_eq!(s.public_url.base, BASE);
        change(s);
    });
    let base = holder.base.clone();
    let server = Server::new(base.clone());
    let app = super::pages_with(holder, server.clone(), Arc::new(TestPeople)).merge(super::oauth::routes(server));
    Env { _dir: dir, base, clock, app }
}

fn pkce() -> (String, String) {
    let verifier = crate::crypto::new_token(32).expose().to_owned();
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

/// The `Authorization` header's value of a bearer `token`.
fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// An authorization request's fields: `client`, `redirect`, the PKCE S256 `challenge`,
/// then `extra`.
fn authz<'a>(
    client: &'a str,
    redirect: &'a str,
    challenge: &'a str,
    extra: &[(&'a str, &'a str)],
) -> Vec<(&'a str, &'a str)> {
    let mut f = vec![
        ("response_type", "code"),
        ("client_id", client),
        ("redirect_uri", redirect),
        ("code_challenge", challenge),
        ("code_challenge_method", "S256"),
    ];
    f.extend_from_slice(extra);
    f
}

fn authorize_query(fields: &[(&str, &str)]) -> String {
    format!("/oauth/authorize?{}", serde_urlencoded::to_string(fields).unwrap())
}

/// Tokens from one successful flow.
struct Tokens {
    access: String,
    refresh: String,
}

impl Env {
    async fn send(&self, req: Request<Body>) -> Resp {
        send(&self.app, req).await
    }

    async fn get(&self, path: &str, cookie: Option<&str>) -> Resp {
        self.send(get_request(path, &cookie_header(cookie))).await
    }

    async fn post_form(&self, path: &str, fields: &[(&str, &str)], cookie: Option<&str>, basic: Option<&str>) -> Resp {
        let mut headers = cookie_header(cookie);
        let basic = basic.map(|a| format!("Basic {}", STANDARD.encode(a)));
        headers.extend(basic.as_deref().map(|b| (header::AUTHORIZATION, b)));
        self.send(post_request(path, fields, &headers)).await
    }

    async fn post_json(&self, path: &str, v: &Value) -> Resp {
        self.send(
            Request::builder()
                .method(Method::POST)
                .uri(path)
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(v.to_string()))
                .unwrap(),
        )
        .await
    }

    async fn register(&self, redirect_uris: &[&str]) -> String {
        let r = self
            .post_json(
                "/oauth/register",
                &json!({"redirect_uris": redirect_uris, "client_name": "Test agent", "token_endpoint_auth_method": "none",
                        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        r.json()["client_id"].as_str().unwrap().to_owned()
    }

    /// GET the consent page and POST `decision`; returns the POST's answer.
    async fn consent(&self, fields: &[(&str, &str)], cookie: &str, decision: &str) -> Resp {
        let page = self.get(&authorize_query(fields), Some(cookie)).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        let csrf = page.csrf();
        let mut form: Vec<(&str, &str)> = fields.to_vec();
        form.push(("csrf", &csrf));
        form.push(("decision", decision));
        self.post_form("/oauth/authorize", &form, Some(cookie), None).await
    }

    /// A code for `client_id` (buyer resource unless given), asserting the redirect.
    async fn code(&self, client_id: &str, redirect: &str, challenge: &str, resource: &str, cookie: &str) -> String {
        let fields = authz(client_id, redirect, challenge, &[("state", "st-1"), ("resource", resource)]);
        let r = self.consent(&fields, cookie, "allow").await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
        assert!(r.header(header::LOCATION).starts_with(&format!("{redirect}?")), "{}", r.header(header::LOCATION));
        assert_eq!(r.location_param("state").as_deref(), Some("st-1"));
        assert_eq!(r.location_param("iss").as_deref(), Some(BASE));
        r.location_param("code").unwrap()
    }

    async fn exchange(&self, client_id: &str, code: &str, redirect: &str, verifier: &str) -> Resp {
        self.post_form(
            "/oauth/token",
            &[
                ("grant_type", "authorization_code"),
                ("client_id", client_id),
                ("code", code),
                ("redirect_uri", redirect),
                ("code_verifier", verifier),
            ],
            None,
            None,
        )
        .await
    }

    async fn refresh(&self, client_id: &str, refresh: &str) -> Resp {
        self.refresh_with(client_id, refresh, &[]).await
    }

    /// A refresh grant with `extra` fields.
    async fn refresh_with(&self, client_id: &str, refresh: &str, extra: &[(&str, &str)]) -> Resp {
        let mut fields = vec![("grant_type", "refresh_token"), ("client_id", client_id), ("refresh_token", refresh)];
        fields.extend_from_slice(extra);
        self.post_form("/oauth/token", &fields, None, None).await
    }

    /// Register, authorize (buyer) and exchange: a client id and its tokens.
    async fn buyer_tokens(&self) -> (String, Tokens) {
        let client = self.register(&[REDIRECT]).await;
        let (verifier, challenge) = pkce();
        let code = self.code(&client, REDIRECT, &challenge, &buyer(), BUYER_COOKIE).await;
        let r = self.exchange(&client, &code, REDIRECT, &verifier).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        let j = r.json();
        (
            client,
            Tokens {
                access: j["access_token"].as_str().unwrap().into(),
                refresh: j["refresh_token"].as_str().unwrap().into(),
            },
        )
    }

    /// The bearer check, its refusal as the faces answer it.
    #[allow(clippy::result_large_err)] // the Err is the response the faces send
    fn check(&self, token: &str, resource: &str, scope: &str) -> Result<Grant, axum::response::Response> {
        check_bearer(&self.base, Some(&bearer(token)), resource, scope).map_err(IntoResponse::into_response)
    }
}

fn www_auth(res: &axum::response::Response) -> String {
    res.headers().get(header::WWW_AUTHENTICATE).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
}

/// Asserts that the bearer check refused the token as unknown or revoked: 401
/// `invalid_token` (RFC 6750 §3.1), not a scope or resource refusal.
#[track_caller]
fn assert_revoked(checked: Result<Grant, axum::response::Response>, why: &str) {
    let Err(res) = checked else { panic!("the token still works: {why}") };
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{why}");
    let w = www_auth(&res);
    assert!(w.contains(r#"error_description="the access token is unknown or revoked""#), "{why}: {w}");
}

#[tokio::test]
async fn metadata_documents() {
    let e = env();
    let r = e.get("/.well-known/oauth-authorization-server", None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header(header::ACCESS_CONTROL_ALLOW_ORIGIN), "*");
    let m = r.json();
    assert_eq!(m["issuer"], BASE);
    assert_eq!(m["authorization_endpoint"], format!("{BASE}/oauth/authorize"));
    assert_eq!(m["token_endpoint"], format!("{BASE}/oauth/token"));
    assert_eq!(m["registration_endpoint"], format!("{BASE}/oauth/register"));
    assert_eq!(m["revocation_endpoint"], format!("{BASE}/oauth/revoke"));
    assert_eq!(m["response_types_supported"], json!(["code"]));
    assert_eq!(m["grant_types_supported"], json!(["authorization_code", "refresh_token"]));
    assert_eq!(m["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(m["scopes_supported"], json!(["intents", "offers", "demand"]));
    assert_eq!(m["client_id_metadata_document_supported"], true);
    assert!(m["token_endpoint_auth_methods_supported"].as_array().unwrap().contains(&json!("none")));
    assert!(m["revocation_endpoint_auth_methods_supported"].is_array());

    let b = e.get("/.well-known/oauth-protected-resource/mcp/buyer", None).await.json();
    assert_eq!(b["resource"], buyer());
    assert_eq!(b["authorization_servers"], json!([BASE]));
    assert_eq!(b["scopes_supported"], json!(["intents"]));
    assert_eq!(b["bearer_methods_supported"], json!(["header"]));
    assert!(b["resource_name"].as_str().unwrap().contains("Test holder"));
    let s = e.get("/.well-known/oauth-protected-resource/mcp/seller", None).await.json();
    assert_eq!(s["resource"], seller());
    assert_eq!(s["scopes_supported"], json!(["offers", "demand"]));
    assert_eq!(e.get("/.well-known/oauth-protected-resource", None).await.json(), b);
    // Documents this holder does not publish: a JSON 404 a browser-based client can read.
    for path in [
        "/.well-known/oauth-authorization-server/mcp/buyer",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/openid-configuration",
        "/.well-known/openid-configuration/mcp/buyer",
    ] {
        let r = e.get(path, None).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(r.header(header::ACCESS_CONTROL_ALLOW_ORIGIN), "*", "{path}");
        assert_eq!(r.json()["error"], "not_found", "{path}");
    }

    let pre = e.send(Request::builder().method(Method::OPTIONS).uri("/oauth/token").body(Body::empty()).unwrap()).await;
    assert_eq!(pre.status, StatusCode::NO_CONTENT);
    assert!(pre.header(header::ACCESS_CONTROL_ALLOW_HEADERS).contains("Authorization"));
}

#[tokio::test]
async fn registration_validates_redirect_uris_and_metadata() {
    let e = env();
    let ok = e
        .post_json(
            "/oauth/register",
            &json!({"redirect_uris": ["https://a.example/cb", "http://127.0.0.1/cb"], "client_name": "Agent",
                    "token_endpoint_auth_method": "none", "scope": "intents openid", "unknown_field": 1}),
        )
        .await;
    assert_eq!(ok.status, StatusCode::CREATED, "{}", ok.body);
    assert_eq!(ok.header(header::CACHE_CONTROL), "no-store");
    let j = ok.json();
    assert!(j["client_id"].as_str().unwrap().starts_with("cli_"));
    assert!(j["client_id_issued_at"].is_i64());
    assert!(j.get("client_secret").is_none());
    assert_eq!(j["redirect_uris"], json!(["https://a.example/cb", "http://127.0.0.1/cb"]));
    assert_eq!(j["grant_types"], json!(["authorization_code", "refresh_token"]));
    assert_eq!(j["response_types"], json!(["code"]));
    assert_eq!(j["client_name"], "Agent");
    assert_eq!(j["scope"], "intents");

    // Without token_endpoint_auth_method the RFC 7591 default (client_secret_basic) applies.
    let conf = e.post_json("/oauth/register", &json!({"redirect_uris": ["https://a.example/cb"]})).await;
    assert_eq!(conf.status, StatusCode::CREATED);
    let c = conf.json();
    assert_eq!(c["token_endpoint_auth_method"], "client_secret_basic");
    assert!(c["client_secret"].as_str().unwrap().len() >= 40);
    assert_eq!(c["client_secret_expires_at"], 0);

    for (body, code) in [
        (json!({"redirect_uris": ["http://evil.example/cb"]}), "invalid_redirect_uri"),
        (json!({"redirect_uris": ["https://a.example/cb#frag"]}), "invalid_redirect_uri"),
        (json!({"redirect_uris": ["javascript:alert(1)"]}), "invalid_redirect_uri"),
        (json!({"redirect_uris": ["/relative"]}), "invalid_redirect_uri"),
        (json!({"redirect_uris": []}), "invalid_redirect_uri"),
        (json!({"client_name": "no uris"}), "invalid_redirect_uri"),
        (json!({"redirect_uris": vec!["https://a.example/cb"; 11]}), "invalid_redirect_uri"),
        (
            json!({"redirect_uris": ["https://a.example/cb"], "grant_types": ["client_credentials"]}),
            "invalid_client_metadata",
        ),
        (json!({"redirect_uris": ["https://a.example/cb"], "response_types": ["token"]}), "invalid_client_metadata"),
        (
            json!({"redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "private_key_jwt"}),
            "invalid_client_metadata",
        ),
        (json!(["not an object"]), "invalid_client_metadata"),
    ] {
        let r = e.post_json("/oauth/register", &body).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {}", r.body);
        assert_eq!(r.json()["error"], code, "{body}");
    }
    let big = "x".repeat(20 * 1024);
    let r =
        e.post_json("/oauth/register", &json!({"redirect_uris": ["https://a.example/cb"], "client_name": big})).await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE);
    // A name that would show other text than it holds: refused, naming the field and the
    // character; nothing is stored.
    let before = e.base.store().read(|rx| rx.records::<Value>(Ns::Client)).unwrap().len();
    for (name, code) in [
        ("Good app \u{202E}moc.live", "U+202E"),
        ("\u{2066}Agent\u{2069}", "U+2066"),
        ("Agent\u{200F}", "U+200F"),
        ("Agent\nsecond line", "U+000A"),
        ("Age\u{200B}nt", "U+200B"),
        ("\u{FEFF}Agent", "U+FEFF"),
        ("\u{3164}", "U+3164"),
        ("\u{115F}", "U+115F"),
        ("\u{2800}", "U+2800"),
        ("Agent\u{034F}", "U+034F"),
        ("   ", "blank"),
    ] {
        let r = e
            .post_json("/oauth/register", &json!({"redirect_uris": ["https://a.example/cb"], "client_name": name}))
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{name:?}");
        assert_eq!(r.json()["error"], "invalid_client_metadata");
        let why = r.json()["error_description"].as_str().unwrap().to_owned();
        assert!(why.contains("client_name") && why.contains(code), "{why}");
    }
    let r = e
        .post_json("/oauth/register", &json!({"redirect_uris": ["https://a.example/cb"], "software_id": "x\u{202D}y"}))
        .await;
    assert_eq!(r.json()["error"], "invalid_client_metadata");
    assert_eq!(e.base.store().read(|rx| rx.records::<Value>(Ns::Client)).unwrap().len(), before);
    // Letters of any script, and a plain name around spaces, are kept.
    let r = e
        .post_json(
            "/oauth/register",
            &json!({"redirect_uris": ["https://a.example/cb"], "client_name": "  Agent Žltý عربي  "}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.json()["client_name"], "Agent Žltý عربي");
}

#[tokio::test]
async fn full_code_flow_and_bearer_checks() {
    let e = env();
    let (client, t) = e.buyer_tokens().await;
    let g = e.check(&t.access, &buyer(), "intents").unwrap();
    assert_eq!(
        (g.account_id.as_str(), g.role.as_str(), g.client_id.as_str(), g.resource.as_str()),
        ("acc_buyer", "buyer", client.as_str(), buyer().as_str())
    );
    assert_eq!(g.scopes, vec!["intents"]);

    // The same token is refused by the seller endpoint.
    let res = e.check(&t.access, &seller(), "offers").unwrap_err();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let w = www_auth(&res);
    assert!(w.starts_with("Bearer "), "{w}");
    assert!(
        w.contains(&format!("resource_metadata=\"{BASE}/.well-known/oauth-protected-resource/mcp/seller\"")),
        "{w}"
    );
    assert!(w.contains("error=\"invalid_token\""), "{w}");
    assert!(w.contains("scope=\"offers demand\""), "{w}");

    // No token: 401 with the challenge and no error.
    let res = check_bearer(&e.base, None, &buyer(), "intents").unwrap_err().into_response();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        www_auth(&res),
        format!(
            "Bearer resource_metadata=\"{BASE}/.well-known/oauth-protected-resource/mcp/buyer\", scope=\"intents\""
        )
    );
    // A made-up token.
    let res = e.check("not-a-token", &buyer(), "intents").unwrap_err();
    assert!(www_auth(&res).contains("invalid_token"));
    // Scope the token lacks: 403 insufficient_scope.
    let res = e.check(&t.access, &buyer(), "offers").unwrap_err();
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let w = www_auth(&res);
    assert!(w.contains("error=\"insufficient_scope\"") && w.contains("scope=\"intents offers\""), "{w}");
}

#[tokio::test]
async fn seller_flow_scopes_and_roles() {
    let e = env();
    let client = e.register(&[REDIRECT]).await;
    let (verifier, challenge) = pkce();
    let seller_url = seller();
    let fields = authz(
        client.as_str(),
        REDIRECT,
        challenge.as_str(),
        &[("resource", seller_url.as_str()), ("scope", "offers intents")],
    );
    // A buyer account cannot authorize the seller endpoint.
    let wrong = e.get(&authorize_query(&fields), Some(BUYER_COOKIE)).await;
    assert_eq!(wrong.status, StatusCode::FORBIDDEN);
    assert!(wrong.body.contains("error=access_denied"), "{}", wrong.body);
    assert!(!wrong.body.contains("name=\"csrf\""));

    let r = e.consent(&fields, SELLER_COOKIE, "allow").await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    let code = r.location_param("code").unwrap();
    let tok = e.exchange(&client, &code, REDIRECT, &verifier).await.json();
    assert_eq!(tok["scope"], "offers");
    let access = tok["access_token"].as_str().unwrap();
    let g = e.check(access, &seller(), "offers").unwrap();
    assert_eq!(g.role, "seller");
    let res = e.check(access, &seller(), "demand").unwrap_err();
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert!(www_auth(&res).contains("scope=\"offers demand\""));
    assert_eq!(e.check(access, &buyer(), "intents").unwrap_err().status(), StatusCode::UNAUTHORIZED);

    // A seller account cannot authorize the buyer endpoint (missing resource = buyer).
    let buyer_fields = authz(client.as_str(), REDIRECT, challenge.as_str(), &[]);
    assert_eq!(e.get(&authorize_query(&buyer_fields), Some(SELLER_COOKIE)).await.status, StatusCode::FORBIDDEN);
    // Only foreign scopes: invalid_scope back to the client.
    let mut bad_scope = buyer_fields.to_vec();
    bad_scope.push(("scope", "demand"));
    let r = e.get(&authorize_query(&bad_scope), Some(BUYER_COOKIE)).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_eq!(r.location_param("error").as_deref(), Some("invalid_scope"));
    // An unknown resource: invalid_target.
    let mut bad_target = buyer_fields.to_vec();
    bad_target.push(("resource", "https://elsewhere.example/mcp"));
    let r = e.get(&authorize_query(&bad_target), Some(BUYER_COOKIE)).await;
    assert_eq!(r.location_param("error").as_deref(), Some("invalid_target"));
}

#[tokio::test]
async fn sign_in_first_and_deny_and_csrf() {
    let e = env();
    let client = e.register(&[REDIRECT]).await;
    let (_, challenge) = pkce();
    let buyer_url = buyer();
    let fields =
        authz(client.as_str(), REDIRECT, challenge.as_str(), &[("state", "s&x"), ("resource", buyer_url.as_str())]);
    let r = e.get(&authorize_query(&fields), None).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    let loc = r.header(header::LOCATION);
    assert!(loc.starts_with("/signin?next=%2Foauth%2Fauthorize%3F"), "{loc}");
    let next: Vec<(String, String)> = serde_urlencoded::from_str(loc.split_once('?').unwrap().1).unwrap();
    let back = e.get(&next[0].1, Some(BUYER_COOKIE)).await;
    assert_eq!(back.status, StatusCode::OK, "{}", back.body);
    assert!(back.body.contains("Test agent") && back.body.contains("client.example"));
    assert_eq!(back.header(header::X_FRAME_OPTIONS), "DENY");
    assert_eq!(back.header(header::CACHE_CONTROL), "no-store");

    let denied = e.consent(&fields, BUYER_COOKIE, "deny").await;
    assert_eq!(denied.status, StatusCode::SEE_OTHER);
    assert_eq!(denied.location_param("error").as_deref(), Some("access_denied"));
    assert_eq!(denied.location_param("state").as_deref(), Some("s&x"));
    assert!(denied.location_param("code").is_none());

    // A forged or missing CSRF token issues nothing.
    let mut form = fields.to_vec();
    form.push(("csrf", "1.forged"));
    form.push(("decision", "allow"));
    let r = e.post_form("/oauth/authorize", &form, Some(BUYER_COOKIE), None).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.header(header::LOCATION).is_empty());
    // A CSRF token of another person does not fit.
    let page = e.get(&authorize_query(&fields), Some(BUYER_COOKIE)).await;
    let mut form = fields.to_vec();
    let csrf = page.csrf();
    form.push(("csrf", &csrf));
    form.push(("decision", "allow"));
    form[5] = ("state", "changed");
    assert_eq!(e.post_form("/oauth/authorize", &form, Some(BUYER_COOKIE), None).await.status, StatusCode::BAD_REQUEST);
}

/// Before anyone signed in the holder never redirects to the client,
/// whatever is wrong; signed in, a refusal after a trusted client and redirect URI goes
/// back with `error`, `state` and `iss` (RFC 9207), as every authorization response does.
#[tokio::test]
async fn no_redirect_to_the_client_before_sign_in_and_iss_in_every_answer() {
    let e = env();
    let client = e.register(&[REDIRECT]).await;
    let (_, challenge) = pkce();
    let good = authz(client.as_str(), REDIRECT, challenge.as_str(), &[("state", "st")]);
    let changes: [(&str, &[(&str, &str)]); 5] = [
        ("", &[("scope", "demand")]),
        ("", &[("resource", "https://elsewhere.example/mcp")]),
        ("response_type", &[("response_type", "token")]),
        ("code_challenge", &[]),
        ("code_challenge_method", &[("code_challenge_method", "plain")]),
    ];
    for (drop, extra) in changes {
        let mut f: Vec<(&str, &str)> = good.iter().copied().filter(|(k, _)| *k != drop).collect();
        f.extend_from_slice(extra);
        let f = &f;
        let r = e.get(&authorize_query(f), None).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{f:?}");
        assert!(r.header(header::LOCATION).is_empty(), "{f:?}");
        assert!(r.body.contains("Authorization request refused"), "{f:?}");
        assert!(!r.body.contains("client.example/callback?"), "no link to the client either: {f:?}");
        // The POST of the same request, nobody signed in: a page as well.
        let r = e.post_form("/oauth/authorize", f, None, None).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{f:?}");
        assert!(r.header(header::LOCATION).is_empty());
        // Signed in: back to the client, with state and iss.
        let r = e.get(&authorize_query(f), Some(BUYER_COOKIE)).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{f:?}");
        assert!(r.header(header::LOCATION).starts_with(&format!("{REDIRECT}?")));
        assert!(r.location_param("error").is_some());
        assert_eq!(r.location_param("state").as_deref(), Some("st"));
        assert_eq!(r.location_param("iss").as_deref(), Some(BASE));
    }
    // A valid request with nobody signed in: to the holder's sign-in page only.
    let r = e.get(&authorize_query(&good), None).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert!(r.header(header::LOCATION).starts_with("/signin?"));
    // Deny and Allow carry iss; so does the wrong-role page's link back.
    let denied = e.consent(&good, BUYER_COOKIE, "deny").await;
    assert_eq!(denied.location_param("iss").as_deref(), Some(BASE));
    assert_eq!(denied.location_param("error").as_deref(), Some("access_denied"));
    let allowed = e.consent(&good, BUYER_COOKIE, "allow").await;
    assert_eq!(allowed.location_param("iss").as_deref(), Some(BASE));
    assert!(allowed.location_param("code").is_some());
    let wrong_role = e.get(&authorize_query(&good), Some(SELLER_COOKIE)).await;
    assert_eq!(wrong_role.status, StatusCode::FORBIDDEN);
    let iss = serde_urlencoded::to_string([("iss", BASE)]).unwrap();
    assert!(wrong_role.body.contains(&iss.replace('&', "&amp;")), "{}", wrong_role.body);
}

/// The Allow form is single-use — posted twice (one after the other
/// or at once), one code is minted; the second post gets a page and no code.
#[tokio::test]
async fn the_allow_form_mints_one_code_however_often_it_is_posted() {
    let e = env();
    let client = e.register(&[REDIRECT]).await;
    let (verifier, challenge) = pkce();
    let fields = authz(client.as_str(), REDIRECT, challenge.as_str(), &[("state", "one")]);
    let page = e.get(&authorize_query(&fields), Some(BUYER_COOKIE)).await;
    let csrf = page.csrf();
    let mut form = fields.to_vec();
    form.push(("csrf", &csrf));
    form.push(("decision", "allow"));
    let codes = || e.base.store().read(|rx| rx.records::<Value>(Ns::AuthCode)).unwrap().len();
    let first = e.post_form("/oauth/authorize", &form, Some(BUYER_COOKIE), None).await;
    assert_eq!(first.status, StatusCode::SEE_OTHER);
    let code = first.location_param("code").unwrap();
    let second = e.post_form("/oauth/authorize", &form, Some(BUYER_COOKIE), None).await;
    assert_eq!(second.status, StatusCode::BAD_REQUEST);
    assert!(second.header(header::LOCATION).is_empty());
    assert!(second.body.contains("already answered"), "{}", second.body);
    assert_eq!(codes(), 1);
    assert_eq!(e.exchange(&client, &code, REDIRECT, &verifier).await.status, StatusCode::OK);
    // Three posts of a fresh form at once: one code.
    e.clock.advance(time::Duration::seconds(1));
    let page = e.get(&authorize_query(&fields), Some(BUYER_COOKIE)).await;
    let csrf = page.csrf();
    let mut form = fields.to_vec();
    form.push(("csrf", &csrf));
    form.push(("decision", "allow"));
    let post = || e.post_form("/oauth/authorize", &form, Some(BUYER_COOKIE), None);
    let (a, b, c) = tokio::join!(post(), post(), post());
    let minted = [a, b, c].iter().filter(|r| r.location_param("code").is_some()).count();
    assert_eq!(minted, 1);
    assert_eq!(codes(), 2);
    // Answered forms are forgotten once their token could no longer be posted.
    e.clock.advance(time::Duration::seconds(7261 + 86400));
    sweep(&e.base).unwrap();
    assert_eq!(e.base.store().read(|rx| rx.records::<Value>(Ns::AuthDecision)).unwrap().len(), 0);
}

#[tokio::test]
async fn pkce_is_required_and_s256_only() {
    let e = env();
    let client = e.register(&[REDIRECT]).await;
    let (verifier, challenge) = pkce();
    let base = [("response_type", "code"), ("client_id", client.as_str()), ("redirect_uri", REDIRECT), ("state", "k")];
    for extra in [
        vec![],
        vec![("code_challenge", verifier.as_str()), ("code_challenge_method", "plain")],
        vec![("code_challenge", challenge.as_str())],
        vec![("code_challenge", "short"), ("code_challenge_method", "S256")],
    ] {
        let mut f = base.to_vec();
        f.extend(extra);
        let r = e.get(&authorize_query(&f), Some(BUYER_COOKIE)).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
        assert_eq!(r.location_param("error").as_deref(), Some("invalid_request"));
        assert_eq!(r.location_param("state").as_deref(), Some("k"));
        assert!(r.location_param("code").is_none());
    }
    // The token request needs the right verifier; a wrong one burns the code.
    let code = e.code(&client, REDIRECT, &challenge, &buyer(), BUYER_COOKIE).await;
    let r = e
        .post_form(
            "/oauth/token",
            &[
                ("grant_type", "authorization_code"),
                ("client_id", &client),
                ("code", &code),
                ("redirect_uri", REDIRECT),
            ],
            None,
            None,
        )
        .await;
    assert_eq!(r.json()["error"], "invalid_request");
    let (other_verifier, _) = pkce();
    let r = e.exchange(&client, &code, REDIRECT, &other_verifier).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.json()["error"], "invalid_grant");
    assert_eq!(r.header(header::CACHE_CONTROL), "no-store");
    assert_eq!(e.exchange(&client, &code, REDIRECT, &verifier).await.json()["error"], "invalid_grant");
}

#[tokio::test]
async fn unregistered_redirect_uri_is_never_followed() {
    let e = env();
    let client = e.register(&[REDIRECT]).await;
    let (_, challenge) = pkce();
    for (cid, uri) in [
        (client.as_str(), "https://evil.example/callback"),
        (client.as_str(), "https://client.example/callback/extra"),
        (client.as_str(), "https://client.example:8443/callback"),
        ("cli_unknown", REDIRECT),
    ] {
        let f = authz(cid, uri, challenge.as_str(), &[]);
        for cookie in [None, Some(BUYER_COOKIE)] {
            let r = e.get(&authorize_query(&f), cookie).await;
            assert_eq!(r.status, StatusCode::BAD_REQUEST, "{uri}");
            assert!(r.header(header::LOCATION).is_empty());
            assert!(r.body.contains("Authorization request refused"));
        }
    }
    // At the token endpoint the redirect_uri must be the authorization request's.
    let (verifier, challenge) = pkce();
    let code = e.code(&client, REDIRECT, &challenge, &buyer(), BUYER_COOKIE).await;
    let r = e.exchange(&client, &code, "https://client.example/other", &verifier).await;
    assert_eq!(r.json()["error"], "invalid_grant");
}

#[tokio::test]
async fn loopback_redirect_any_port() {
    let e = env();
    let client = e.register(&["http://127.0.0.1/callback", "http://[::1]:1234/cb"]).await;
    let (verifier, challenge) = pkce();
    let uri = "http://127.0.0.1:49152/callback";
    let code = e.code(&client, uri, &challenge, &buyer(), BUYER_COOKIE).await;
    assert_eq!(e.exchange(&client, &code, uri, &verifier).await.status, StatusCode::OK);
    let (_, challenge) = pkce();
    let code6 = e.code(&client, "http://[::1]:5555/cb", &challenge, &buyer(), BUYER_COOKIE).await;
    assert!(!code6.is_empty());
    // Another path, or another loopback name, is not the registered URI.
    for bad in ["http://127.0.0.1:49152/other", "http://localhost:49152/callback"] {
        let f = authz(client.as_str(), bad, challenge.as_str(), &[]);
        assert_eq!(e.get(&authorize_query(&f), Some(BUYER_COOKIE)).await.status, StatusCode::BAD_REQUEST, "{bad}");
    }
}

#[tokio::test]
async fn replayed_code_is_refused_and_revokes_its_tokens() {
    let e = env();
    let client = e.register(&[REDIRECT]).await;
    let (verifier, challenge) = pkce();
    let code = e.code(&client, REDIRECT, &challenge, &buyer(), BUYER_COOKIE).await;
    let first = e.exchange(&client, &code, REDIRECT, &verifier).await.json();
    let access = first["access_token"].as_str().unwrap();
    let refresh = first["refresh_token"].as_str().unwrap();
    assert!(e.check(access, &buyer(), "intents").is_ok());
    let again = e.exchange(&client, &code, REDIRECT, &verifier).await;
    assert_eq!(again.status, StatusCode::BAD_REQUEST);
    assert_eq!(again.json()["error"], "invalid_grant");
    let res = e.check(access, &buyer(), "intents").unwrap_err();
    assert!(www_auth(&res).contains("invalid_token"));
    assert_eq!(e.refresh(&client, refresh).await.json()["error"], "invalid_grant");
}

#[tokio::test]
async fn codes_expire_after_a_minute() {
    let e = env();
    let client = e.register(&[REDIRECT]).await;
    let (verifier, challenge) = pkce();
    let code = e.code(&client, REDIRECT, &challenge, &buyer(), BUYER_COOKIE).await;
    e.clock.advance(time::Duration::seconds(61));
    let r = e.exchange(&client, &code, REDIRECT, &verifier).await;
    assert_eq!(r.json()["error"], "invalid_grant");
    assert!(r.json()["error_description"].as_str().unwrap().contains("expired"));
}

#[tokio::test]
async fn access_tokens_expire_after_an_hour_and_refresh_rotates() {
    let e = env();
    let (client, t) = e.buyer_tokens().await;
    e.clock.advance(time::Duration::seconds(3601));
    let res = e.check(&t.access, &buyer(), "intents").unwrap_err();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    assert!(www_auth(&res).contains("invalid_token"));

    let r = e.refresh(&client, &t.refresh).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.header(header::CACHE_CONTROL), "no-store");
    let j = r.json();
    assert_eq!(j["token_type"], "Bearer");
    assert_eq!(j["expires_in"], 3600);
    assert_eq!(j["scope"], "intents");
    let access2 = j["access_token"].as_str().unwrap().to_owned();
    let refresh2 = j["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(refresh2, t.refresh);
    assert!(e.check(&access2, &buyer(), "intents").is_ok());
    // The rotated token again, after the grace window: reuse → the whole family is revoked.
    e.clock.advance(time::Duration::seconds(31));
    let reuse = e.refresh(&client, &t.refresh).await;
    assert_eq!(reuse.json()["error"], "invalid_grant");
    assert_revoked(e.check(&access2, &buyer(), "intents"), "the reuse revoked the family");
    assert_eq!(e.refresh(&client, &refresh2).await.json()["error"], "invalid_grant");
}

/// The access and refresh token of a token response.
fn pair(r: &Resp) -> (String, String) {
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let j = r.json();
    (j["access_token"].as_str().unwrap().to_owned(), j["refresh_token"].as_str().unwrap().to_owned())
}

#[tokio::test]
async fn a_refresh_token_presented_again_within_the_grace_window_gets_the_same_pair() {
    let e = env();
    assert_eq!(e.base.settings().limits.refresh_grace_secs, 30);
    let (client, t) = e.buyer_tokens().await;
    // Five parallel refreshes with the same token: one rotation, five equal answers.
    let r = || e.refresh(&client, &t.refresh);
    let (a, b, c, d, f) = tokio::join!(r(), r(), r(), r(), r());
    let answers = [a, b, c, d, f];
    let first = pair(&answers[0]);
    for a in &answers {
        assert_eq!(pair(a), first);
    }
    assert_ne!(first.1, t.refresh);
    // A lost response: the old token again 29 s later gets the same pair, with the
    // access token's remaining lifetime.
    e.clock.advance(time::Duration::seconds(29));
    let again = e.refresh(&client, &t.refresh).await;
    assert_eq!(pair(&again), first);
    assert_eq!(again.json()["expires_in"], 3600 - 29);
    assert_eq!(again.json()["scope"], "intents");
    assert!(e.check(&first.0, &buyer(), "intents").is_ok());
    // Nothing but hashes is stored: no token value in any record.
    let records = e.base.store().read(|rx| rx.records::<Value>(Ns::Token)).unwrap();
    for v in [&first.0, &first.1, &t.refresh] {
        assert!(!records.iter().any(|(k, r)| k.contains(v.as_str()) || r.to_string().contains(v.as_str())));
    }
    // The new pair works and rotates on; its predecessor's window is over at 31 s.
    e.clock.advance(time::Duration::seconds(2));
    let reuse = e.refresh(&client, &t.refresh).await;
    assert_eq!(reuse.json()["error"], "invalid_grant");
    assert_revoked(e.check(&first.0, &buyer(), "intents"), "reuse after the window revokes the family");
    assert_eq!(e.refresh(&client, &first.1).await.json()["error"], "invalid_grant");

    // Within the window, once the new refresh token was itself used, the old one is a
    // reuse: it revokes.
    let (client, t) = e.buyer_tokens().await;
    let next = pair(&e.refresh(&client, &t.refresh).await);
    let after = pair(&e.refresh(&client, &next.1).await);
    let stale = e.refresh(&client, &t.refresh).await;
    assert_eq!(stale.json()["error"], "invalid_grant");
    assert_revoked(e.check(&after.0, &buyer(), "intents"), "a stale reuse revokes the family");
    // Another client presenting the token within the window gets nothing.
    let (client, t) = e.buyer_tokens().await;
    let other = e.register(&[REDIRECT]).await;
    let p = pair(&e.refresh(&client, &t.refresh).await);
    assert_eq!(e.refresh(&other, &t.refresh).await.json()["error"], "invalid_grant");
    assert!(e.check(&p.0, &buyer(), "intents").is_ok());
}

#[tokio::test]
async fn refresh_grace_zero_revokes_at_once() {
    let e = env_with(|s| s.limits.refresh_grace_secs = 0);
    let (client, t) = e.buyer_tokens().await;
    let p = pair(&e.refresh(&client, &t.refresh).await);
    assert_eq!(e.refresh(&client, &t.refresh).await.json()["error"], "invalid_grant");
    assert_revoked(e.check(&p.0, &buyer(), "intents"), "grace zero: the first reuse revokes");
}

#[tokio::test]
async fn refresh_is_bound_to_client_resource_and_scope() {
    let e = env();
    let (client, t) = e.buyer_tokens().await;
    let other = e.register(&[REDIRECT]).await;
    assert_eq!(e.refresh(&other, &t.refresh).await.json()["error"], "invalid_grant");
    let r = e.refresh_with(&client, &t.refresh, &[("scope", "offers")]).await;
    assert_eq!(r.json()["error"], "invalid_scope");
    let seller_url = seller();
    let r = e.refresh_with(&client, &t.refresh, &[("resource", &seller_url)]).await;
    assert_eq!(r.json()["error"], "invalid_target");
    // None of the refusals used the token up.
    assert_eq!(e.refresh(&client, &t.refresh).await.status, StatusCode::OK);
    let r = e.post_form("/oauth/token", &[("grant_type", "password"), ("client_id", &client)], None, None).await;
    assert_eq!(r.json()["error"], "unsupported_grant_type");
    let r = e.refresh("cli_nobody", &t.refresh).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert_eq!(r.json()["error"], "invalid_client");
}

#[tokio::test]
async fn revocation() {
    let e = env();
    let (client, t) = e.buyer_tokens().await;
    let r = e.post_form("/oauth/revoke", &[("token", "unknown"), ("client_id", &client)], None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    let r = e.post_form("/oauth/revoke", &[("client_id", &client)], None, None).await;
    assert_eq!(r.json()["error"], "invalid_request");
    // Another client cannot revoke this client's token.
    let other = e.register(&[REDIRECT]).await;
    let r = e.post_form("/oauth/revoke", &[("token", &t.access), ("client_id", &other)], None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(e.check(&t.access, &buyer(), "intents").is_ok());
    // Revoking the access token ends it alone.
    let r = e
        .post_form(
            "/oauth/revoke",
            &[("token", &t.access), ("token_type_hint", "access_token"), ("client_id", &client)],
            None,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_revoked(e.check(&t.access, &buyer(), "intents"), "the revoked access token");
    let fresh = e.refresh(&client, &t.refresh).await.json();
    let access2 = fresh["access_token"].as_str().unwrap();
    let refresh2 = fresh["refresh_token"].as_str().unwrap();
    // Revoking the refresh token ends the family.
    let r = e.post_form("/oauth/revoke", &[("token", refresh2), ("client_id", &client)], None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_revoked(e.check(access2, &buyer(), "intents"), "revoking the refresh token ends the family");
    assert_eq!(e.refresh(&client, refresh2).await.json()["error"], "invalid_grant");
}

#[tokio::test]
async fn confidential_client_authenticates() {
    let e = env();
    let reg = e
        .post_json(
            "/oauth/register",
            &json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_basic"}),
        )
        .await
        .json();
    let id = reg["client_id"].as_str().unwrap();
    let secret = reg["client_secret"].as_str().unwrap();
    let (verifier, challenge) = pkce();
    let code = e.code(id, REDIRECT, &challenge, &buyer(), BUYER_COOKIE).await;
    let fields = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", verifier.as_str()),
    ];
    let mut no_secret = fields.to_vec();
    no_secret.push(("client_id", id));
    let r = e.post_form("/oauth/token", &no_secret, None, None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert_eq!(r.json()["error"], "invalid_client");
    let r = e.post_form("/oauth/token", &fields, None, Some(&format!("{id}:wrong"))).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.header(header::WWW_AUTHENTICATE).starts_with("Basic"));
    let r = e.post_form("/oauth/token", &fields, None, Some(&format!("{id}:{secret}"))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let refresh = r.json()["refresh_token"].as_str().unwrap().to_owned();
    let r = e
        .post_form(
            "/oauth/token",
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", &refresh),
                ("client_id", id),
                ("client_secret", secret),
            ],
            None,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

#[tokio::test]
async fn revoke_account_and_sweep() {
    let e = env();
    let (client, t) = e.buyer_tokens().await;
    let (_, t2) = e.buyer_tokens().await;
    assert_eq!(revoke_account(&e.base, "acc_buyer").unwrap(), 2);
    assert_revoked(e.check(&t.access, &buyer(), "intents"), "the account's tokens are revoked");
    assert_revoked(e.check(&t2.access, &buyer(), "intents"), "the account's tokens are revoked");
    assert_eq!(e.refresh(&client, &t.refresh).await.json()["error"], "invalid_grant");
    assert_eq!(revoke_account(&e.base, "acc_buyer").unwrap(), 0);

    let before: Vec<(String, Value)> =
        e.base.store().read(|rx| -> Result<_, StoreError> { rx.records(Ns::Token) }).unwrap();
    assert_eq!(before.len(), 4);
    assert_eq!(sweep(&e.base).unwrap(), 0);
    e.clock.advance(time::Duration::days(31));
    assert!(sweep(&e.base).unwrap() >= 8);
    for ns in [Ns::Token, Ns::TokenFamily, Ns::AuthCode] {
        let left: Vec<(String, Value)> = e.base.store().read(|rx| -> Result<_, StoreError> { rx.records(ns) }).unwrap();
        assert!(left.is_empty(), "{ns:?}: {left:?}");
    }
}

#[tokio::test]
async fn only_hashes_are_stored() {
    let e = env();
    let reg = e.post_json("/oauth/register", &json!({"redirect_uris": [REDIRECT]})).await.json();
    let secret = reg["client_secret"].as_str().unwrap().to_owned();
    let (verifier, challenge) = pkce();
    let client = e.register(&[REDIRECT]).await;
    let code = e.code(&client, REDIRECT, &challenge, &buyer(), BUYER_COOKIE).await;
    let t = e.exchange(&client, &code, REDIRECT, &verifier).await.json();
    let mut dump = String::new();
    for ns in [Ns::Client, Ns::AuthCode, Ns::Token, Ns::TokenFamily, Ns::AuthDecision] {
        let rows: Vec<(String, Value)> = e.base.store().read(|rx| -> Result<_, StoreError> { rx.records(ns) }).unwrap();
        dump.push_str(&serde_json::to_string(&rows).unwrap());
    }
    for s in
        [secret.as_str(), &code, &verifier, t["access_token"].as_str().unwrap(), t["refresh_token"].as_str().unwrap()]
    {
        assert!(!dump.contains(s), "a secret is stored in clear");
    }
    // The client secret under a keyed hash (HMAC with the holder's key).
    let id = reg["client_id"].as_str().unwrap();
    let c = e.base.store().read(|rx| rx.record::<crate::oauth::ClientRecord>(Ns::Client, id)).unwrap().unwrap();
    assert!(c.client_secret_hash.unwrap().starts_with("hmac1:"));
}

#[tokio::test]
async fn a_client_secret_stored_unkeyed_still_authenticates_and_is_rewritten_keyed() {
    let e = env();
    let reg = e.post_json("/oauth/register", &json!({"redirect_uris": [REDIRECT]})).await.json();
    let (id, secret) = (reg["client_id"].as_str().unwrap(), reg["client_secret"].as_str().unwrap());
    let e = &e;
    let read = || e.base.store().read(|rx| rx.record::<crate::oauth::ClientRecord>(Ns::Client, id)).unwrap().unwrap();
    let mut c = read();
    c.client_secret_hash = Some(crate::crypto::token_hash("oauth-client-secret", secret));
    e.base.store().write(|tx| tx.put_record(Ns::Client, id, &c)).unwrap();
    let ask = |basic: String| async move {
        let fields = [("grant_type", "refresh_token"), ("refresh_token", "nope")];
        e.post_form("/oauth/token", &fields, None, Some(&basic)).await
    };
    assert_eq!(ask(format!("{id}:wrong")).await.json()["error"], "invalid_client");
    assert_eq!(ask(format!("{id}:{secret}")).await.json()["error"], "invalid_grant", "authenticated");
    assert!(read().client_secret_hash.unwrap().starts_with("hmac1:"), "rewritten keyed");
    assert_eq!(ask(format!("{id}:{secret}")).await.json()["error"], "invalid_grant");
    assert_eq!(ask(format!("{id}:wrong")).await.json()["error"], "invalid_client");
}

/// A confidential client whose stored record has lost its secret hash is not taken for
/// a public client: the token endpoint answers `server_error`, with or without a secret.
#[tokio::test]
async fn a_confidential_client_without_a_stored_secret_is_refused_not_public() {
    let e = env();
    let reg = e.post_json("/oauth/register", &json!({"redirect_uris": [REDIRECT]})).await.json();
    let (id, secret) = (reg["client_id"].as_str().unwrap(), reg["client_secret"].as_str().unwrap());
    let mut c = e.base.store().read(|rx| rx.record::<crate::oauth::ClientRecord>(Ns::Client, id)).unwrap().unwrap();
    assert_eq!(c.token_endpoint_auth_method, "client_secret_basic");
    c.client_secret_hash = None;
    e.base.store().write(|tx| tx.put_record(Ns::Client, id, &c)).unwrap();
    let refresh = [("grant_type", "refresh_token"), ("refresh_token", "nope"), ("client_id", id)];
    let r = e.post_form("/oauth/token", &refresh, None, None).await;
    assert_eq!((r.status, r.json()["error"].as_str()), (StatusCode::INTERNAL_SERVER_ERROR, Some("server_error")));
    let r = e.post_form("/oauth/token", &refresh[..2], None, Some(&format!("{id}:{secret}"))).await;
    assert_eq!((r.status, r.json()["error"].as_str()), (StatusCode::INTERNAL_SERVER_ERROR, Some("server_error")));
}

/// A client ID metadata document served by a real HTTP server on 127.0.0.1.
#[tokio::test]
async fn client_id_metadata_document() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let client_id = format!("http://127.0.0.1:{port}/client.json");
    let fetches = Arc::new(AtomicUsize::new(0));
    let doc = json!({
        "client_id": client_id,
        "client_name": "Document agent",
        "redirect_uris": ["http://127.0.0.1/cb"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    let served = {
        let (doc, fetches) = (doc.clone(), fetches.clone());
        axum::Router::new()
            .route(
                "/client.json",
                axum::routing::get(move || {
                    let (doc, fetches) = (doc.clone(), fetches.clone());
                    async move {
                        fetches.fetch_add(1, Ordering::SeqCst);
                        axum::Json(doc)
                    }
                }),
            )
            .route(
                "/wrong.json",
                axum::routing::get(|| async {
                    axum::Json(
                        json!({"client_id": "https://other.example/c", "redirect_uris": ["http://127.0.0.1/cb"]}),
                    )
                }),
            )
            .route("/big.json", axum::routing::get(|| async { "x".repeat(70 * 1024) }))
            .route("/moved.json", axum::routing::get(|| async { axum::response::Redirect::temporary("/client.json") }))
    };
    tokio::spawn(async move { axum::serve(listener, served).await.unwrap() });

    let e = env();
    let (verifier, challenge) = pkce();
    let redirect = "http://127.0.0.1:40000/cb";
    let buyer_url = buyer();
    let fields = authz(client_id.as_str(), redirect, challenge.as_str(), &[("resource", buyer_url.as_str())]);
    let page = e.get(&authorize_query(&fields), Some(BUYER_COOKIE)).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.body.contains("Document agent"));
    assert!(page.body.contains(&client_id));
    let code = e.code(&client_id, redirect, &challenge, &buyer(), BUYER_COOKIE).await;
    let t = e.exchange(&client_id, &code, redirect, &verifier).await;
    assert_eq!(t.status, StatusCode::OK, "{}", t.body);
    let g = e.check(t.json()["access_token"].as_str().unwrap(), &buyer(), "intents").unwrap();
    assert_eq!(g.client_id, client_id);
    assert_eq!(fetches.load(Ordering::SeqCst), 1, "the document is cached");
    // After the cache lifetime it is fetched again.
    e.clock.advance(time::Duration::seconds(3601));
    assert_eq!(e.get(&authorize_query(&fields), Some(BUYER_COOKIE)).await.status, StatusCode::OK);
    assert_eq!(fetches.load(Ordering::SeqCst), 2);
    // Unregistered redirect URIs are refused as for registered clients.
    let mut bad = fields.to_vec();
    bad[2] = ("redirect_uri", "https://evil.example/cb");
    assert_eq!(e.get(&authorize_query(&bad), Some(BUYER_COOKIE)).await.status, StatusCode::BAD_REQUEST);
    // Documents whose client_id is not their URL, too large, redirected, or missing.
    for path in ["wrong.json", "big.json", "moved.json", "missing.json"] {
        let id = format!("http://127.0.0.1:{port}/{path}");
        let mut f = fields.to_vec();
        f[1] = ("client_id", &id);
        let r = e.get(&authorize_query(&f), Some(BUYER_COOKIE)).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{path}");
        assert!(r.header(header::LOCATION).is_empty());
    }
    // A non-loopback http document URL is not a metadata document (nor a registered id).
    let mut f = fields.to_vec();
    f[1] = ("client_id", "http://example.com/client.json");
    assert_eq!(e.get(&authorize_query(&f), Some(BUYER_COOKIE)).await.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn the_authorization_page_gets_the_page_headers_with_its_own_csp() {
    let e = env();
    let r = e.get("/oauth/authorize", None).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.body.contains("The request has no client_id."), "{}", r.body);
    assert_eq!(r.header(header::CACHE_CONTROL), "no-store");
    assert_eq!(r.header(header::X_FRAME_OPTIONS), "DENY");
    assert_eq!(r.header(header::REFERRER_POLICY), "no-referrer");
    assert_eq!(r.header(header::X_CONTENT_TYPE_OPTIONS), "nosniff");
    // The Allow answer redirects to the client: no form-action here, unlike other pages.
    assert_eq!(
        r.header(header::CONTENT_SECURITY_POLICY),
        "default-src 'none'; style-src 'self'; frame-ancestors 'none'"
    );
    let signin = e.get("/signin", None).await;
    assert!(signin.header(header::CONTENT_SECURITY_POLICY).contains("form-action 'self'"));
    // The one layout: skip link, versioned stylesheet, the holder's name in the header.
    assert!(r.body.contains(&super::stylesheet_href()));
    assert!(r.body.contains("href=\"#main\""));
    // The machine endpoints keep their own headers.
    let meta = e.get("/.well-known/oauth-authorization-server", None).await;
    assert_eq!(meta.header(header::ACCESS_CONTROL_ALLOW_ORIGIN), "*");
    assert!(meta.header(header::CONTENT_SECURITY_POLICY).is_empty());
}
