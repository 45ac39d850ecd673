//! Fixtures shared by the integration tests that drive the pages in-process: a holder
//! over a real redb file in a temp dir with a [`ManualClock`], the router under test,
//! and form-posting helpers (axum's `oneshot` pattern).
#![allow(dead_code)]

use axum::body::Body;
use axum::http::{header, HeaderMap, Method, Request, StatusCode};
use axum::Router;
use isto::clock::ManualClock;
use isto::mail::{MailContent, MailJob};
use isto::state::AppState;
use std::sync::Arc;
use tower::ServiceExt as _;

/// The clock's start.
pub const START: &str = "2026-12-01T10:00:00Z";

pub struct Fx {
    pub dir: tempfile::TempDir,
    pub clock: Arc<ManualClock>,
    pub holder: AppState,
    pub app: Router,
    pub rt: tokio::runtime::Runtime,
}

pub struct Resp {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Resp {
    pub fn location(&self) -> &str {
        self.headers.get(header::LOCATION).map(|v| v.to_str().unwrap()).unwrap_or_default()
    }

    pub fn cookie(&self) -> Option<String> {
        let v = self.headers.get(header::SET_COOKIE)?.to_str().unwrap();
        Some(v.split(';').next().unwrap().to_owned())
    }

    /// The CSRF token of the form posting to `action`.
    pub fn csrf_for(&self, action: &str) -> String {
        let at = self
            .body
            .find(&format!("action=\"{action}\""))
            .unwrap_or_else(|| panic!("no form for {action} in:\n{}", self.body));
        let marker = "name=\"csrf\" value=\"";
        let from = at + self.body[at..].find(marker).unwrap() + marker.len();
        self.body[from..].split('"').next().unwrap().to_owned()
    }
}

/// A fixture whose router is `app(holder)`; the holder comes from the test's `open_holder`.
pub fn fixture_with(
    app: fn(&AppState) -> Router,
    open_holder: fn(&std::path::Path, Arc<ManualClock>) -> AppState,
) -> Fx {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(isto::clock::parse_rfc3339(START).unwrap()));
    let holder = open_holder(dir.path(), clock.clone());
    let app = app(&holder);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    Fx { dir, clock, holder, app, rt }
}

impl Fx {
    pub fn send(&self, req: Request<Body>) -> Resp {
        self.rt.block_on(async {
            let res = self.app.clone().oneshot(req).await.unwrap();
            let status = res.status();
            let headers = res.headers().clone();
            let body = axum::body::to_bytes(res.into_body(), usize::MAX).await.unwrap();
            Resp { status, headers, body: String::from_utf8(body.to_vec()).unwrap() }
        })
    }

    pub fn get(&self, path: &str, cookie: Option<&str>) -> Resp {
        let mut b = Request::builder().method(Method::GET).uri(path).header(header::ACCEPT_LANGUAGE, "en");
        if let Some(c) = cookie {
            b = b.header(header::COOKIE, c);
        }
        self.send(b.body(Body::empty()).unwrap())
    }

    pub fn post(&self, path: &str, fields: &[(&str, &str)], cookie: Option<&str>) -> Resp {
        let mut b = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header(header::ACCEPT_LANGUAGE, "en")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        if let Some(c) = cookie {
            b = b.header(header::COOKIE, c);
        }
        self.send(b.body(Body::from(serde_urlencoded::to_string(fields).unwrap())).unwrap())
    }

    pub fn mails(&self) -> Vec<MailContent> {
        let jobs: Vec<(u64, MailJob)> = self.holder.base.store.read(|rx| rx.outbox()).unwrap();
        jobs.iter()
            .map(|(_, j)| serde_json::from_slice(&self.holder.base.keys.open(&j.sealed).unwrap()).unwrap())
            .collect()
    }

    pub fn token_from_outbox(&self, marker: &str) -> String {
        for m in self.mails().iter().rev() {
            if let Some(i) = m.text.find(marker) {
                return m.text[i + marker.len()..].split_whitespace().next().unwrap().to_owned();
            }
        }
        panic!("no mail with {marker}");
    }
}
