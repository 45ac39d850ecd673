//! Login CSRF through the attacker's own one-time link (round 3, point 7): the attacker
//! requests a sign-in link (or signs up) for an account of their own, opens the link page
//! and takes its CSRF token, then makes a victim's browser post it from a sandboxed
//! frame (`Origin: null`, which the app lets through to the token check) — which would
//! sign the victim into the attacker's account. The link POSTs refuse an opaque origin
//! (`Sec-Fetch-Site` other than `same-origin`, or without it `Origin: null`: 403, nothing
//! used up, no session); the same POST from the holder's own page works, including a
//! browser's `Origin: null` with `Sec-Fetch-Site: same-origin`.

use crate::kit::{Fx, BASE};
use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};

/// A link page's button POST, as a browser sends it with `origin`.
fn press(f: &Fx, path: &str, origin: &str) -> crate::kit::Resp {
    press_from(f, path, origin, None)
}

/// [`press`] with the browser's `Sec-Fetch-Site` (Fetch Metadata), if any.
fn press_from(f: &Fx, path: &str, origin: &str, site: Option<&str>) -> crate::kit::Resp {
    let page = f.get(path, None);
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let csrf = page.csrf_for(path);
    let req = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header(header::ACCEPT_LANGUAGE, "en")
        .header(header::ORIGIN, origin)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    let req = match site {
        Some(s) => req.header("sec-fetch-site", s),
        None => req,
    };
    f.send(req.body(Body::from(serde_urlencoded::to_string([("csrf", csrf.as_str())]).unwrap())).unwrap())
}

fn refused(r: &crate::kit::Resp) {
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert!(r.cookie().is_none(), "no session from a refused link POST");
}

#[test]
fn the_attackers_own_sign_in_link_cannot_be_posted_from_an_opaque_origin() {
    let f = Fx::new();
    f.buyer("mallory@example.org");
    let page = f.get("/signin", None);
    let csrf = page.csrf_for("/signin/link");
    let fields = [("csrf", csrf.as_str()), ("email", "mallory@example.org"), ("next", "/me")];
    let r = f.post("/signin/link", &fields, page.pre_cookie().as_deref());
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let path = format!("/signin/link/{}", f.token_from_outbox("/signin/link/"));

    refused(&press(&f, &path, "null"));
    refused(&press(&f, &path, " NULL "));
    // A sandboxed frame in a current browser: `Origin: null`, `Sec-Fetch-Site: cross-site`.
    refused(&press_from(&f, &path, "null", Some("cross-site")));
    refused(&press_from(&f, &path, "null", Some("same-site")));
    // The refusal used nothing up: the holder's own page still signs in — a current
    // browser posts it with `Origin: null` (the pages' `Referrer-Policy: no-referrer`) and
    // `Sec-Fetch-Site: same-origin`.
    let r = press_from(&f, &path, "null", Some("same-origin"));
    assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/me"), "{}", r.body);
    assert!(r.cookie().is_some());
}

#[test]
fn the_attackers_own_sign_up_link_cannot_be_posted_from_an_opaque_origin() {
    let f = Fx::new();
    let page = f.get("/signup?next=/me", None);
    let csrf = page.csrf_for("/signup");
    let fields =
        [("csrf", csrf.as_str()), ("email", "mallory@example.org"), ("accept", "yes"), ("lang", "en"), ("next", "/me")];
    let r = f.post("/signup", &fields, page.pre_cookie().as_deref());
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let path = format!("/signup/confirm/{}", f.token_from_outbox("/signup/confirm/"));

    refused(&press(&f, &path, "null"));
    refused(&press_from(&f, &path, "null", Some("cross-site")));
    let account = isto::accounts::account_by_email(&f.holder.base, "mallory@example.org").unwrap();
    assert!(account.is_none(), "no account from a refused confirmation");
    let r = press(&f, &path, BASE);
    assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/me"), "{}", r.body);
    assert!(r.cookie().is_some());
}
