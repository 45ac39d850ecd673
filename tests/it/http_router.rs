//! The whole router driven in-process (axum's `oneshot` pattern) over a real redb file:
//! DNS-rebinding protection derived from the public URL (a holder behind a reverse proxy
//! at https://holder.example), and GET requests that never change state.

// Fixture helpers outside #[test] functions unwrap too: a failed set-up is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use axum::body::Body;
use axum::http::{Request, StatusCode};
use isto::clock::SystemClock;
use isto::config::{PublicUrl, Settings};
use isto::crypto::KeyRing;
use isto::state::AppState;
use isto::store::Store;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

fn holder(public: &str) -> (tempfile::TempDir, AppState) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Settings::defaults();
    s.data_dir = dir.path().to_owned();
    s.public_url = PublicUrl::parse(public).unwrap();
    let store = Store::open(&dir.path().join("isto.redb")).unwrap();
    (dir, AppState::new(s, store, KeyRing::ephemeral(), Arc::new(SystemClock)))
}

fn initialize(host: &str, origin: Option<&str>) -> Request<Body> {
    let mut b = Request::post("/mcp")
        .header("host", host)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(o) = origin {
        b = b.header("origin", o);
    }
    b.body(Body::from(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
    ))
    .unwrap()
}

async fn status(h: &AppState, req: Request<Body>) -> StatusCode {
    let app = isto::app::router(h.clone(), CancellationToken::new());
    app.oneshot(req).await.unwrap().status()
}

#[tokio::test(flavor = "multi_thread")]
async fn behind_a_reverse_proxy_the_public_host_is_allowed_and_foreign_ones_are_not() {
    let (_d, h) = holder("https://holder.example");
    assert_eq!(status(&h, initialize("holder.example", Some("https://holder.example"))).await, StatusCode::OK);
    assert_eq!(
        status(&h, initialize("holder.example", None)).await,
        StatusCode::OK,
        "non-browser clients send no Origin"
    );
    assert_eq!(status(&h, initialize("holder.example:443", None)).await, StatusCode::OK);
    assert_eq!(status(&h, initialize("evil.example", None)).await, StatusCode::FORBIDDEN, "foreign Host");
    assert_eq!(
        status(&h, initialize("holder.example", Some("https://evil.example"))).await,
        StatusCode::FORBIDDEN,
        "foreign Origin"
    );
    assert_eq!(
        status(&h, initialize("holder.example", Some("http://holder.example"))).await,
        StatusCode::FORBIDDEN,
        "same host, other scheme"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn loopback_holder_rejects_rebinding() {
    let (_d, h) = holder("http://127.0.0.1:8080");
    assert_eq!(status(&h, initialize("127.0.0.1:8080", Some("http://127.0.0.1:8080"))).await, StatusCode::OK);
    assert_eq!(
        status(&h, initialize("evil.example.com", Some("http://evil.example.com"))).await,
        StatusCode::FORBIDDEN
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn health_and_unknown_tokens() {
    let (_d, h) = holder("http://127.0.0.1:8080");
    let get = |p: &str| Request::get(p).header("host", "127.0.0.1:8080").body(Body::empty()).unwrap();
    assert_eq!(status(&h, get("/healthz")).await, StatusCode::OK);
    assert_eq!(status(&h, get("/consent/not-a-real-token-at-all")).await, StatusCode::NOT_FOUND);
    assert_eq!(status(&h, get("/confirm/not-a-real-token-at-all")).await, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread")]
async fn page_posts_from_another_site_are_refused() {
    let (_d, h) = holder("https://holder.example");
    let post = |origin: &str| {
        Request::post("/consent/some-token-some-token")
            .header("host", "holder.example")
            .header("origin", origin)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from("email=a%40b.example&accept=yes&csrf=x"))
            .unwrap()
    };
    assert_eq!(status(&h, post("https://evil.example")).await, StatusCode::FORBIDDEN);
    // The holder's own origin reaches the page (which then refuses the unknown token).
    assert_eq!(status(&h, post("https://holder.example")).await, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread")]
async fn buyer_and_seller_endpoints_need_a_bearer_token() {
    let (_d, h) = holder("https://holder.example");
    for (path, scope) in [("/mcp/buyer", "intents"), ("/mcp/seller", "offers")] {
        let mut req = initialize("holder.example", None);
        *req.uri_mut() = path.parse().unwrap();
        let app = isto::app::router(h.clone(), CancellationToken::new());
        let res = app.oneshot(req).await.unwrap();
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{path}");
        let www = res.headers().get("www-authenticate").unwrap().to_str().unwrap().to_owned();
        assert!(
            www.contains(&format!(
                "resource_metadata=\"https://holder.example/.well-known/oauth-protected-resource{path}\""
            )),
            "{www}"
        );
        assert!(www.contains(scope), "{www}");
    }
    // The public endpoint still answers without a token.
    assert_eq!(status(&h, initialize("holder.example", None)).await, StatusCode::OK);
}
