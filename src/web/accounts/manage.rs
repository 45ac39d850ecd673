//! The signed-in person's own account: signing out, changing the password, and the
//! e-mail information page.

use super::*;

/// 303 to `/` deleting the session cookie.
fn signed_out(w: &Web, ui: &Ui) -> Response {
    redirect_with_cookie(w, ui, "/", &cookies::clear_cookie(&w.app.base))
}

/// `POST /signout` (csrf bound to the session): ends the session, deletes the cookie and
/// 303s to `/`. Without a valid session it only deletes the cookie.
pub(super) async fn signout(State(w): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let ui = page_ui(&w, &headers);
    let form = FormFields::parse(&body);
    let Some(s) = session_of(&w, &headers).await else { return signed_out(&w, ui) };
    if !w.csrf_ok(&form.csrf, CSRF_SIGNOUT, &s.key) {
        return csrf_page(&w, ui);
    }
    match call(&w.app, "signout", move |x| accounts::end_session(&x.base, &s.key)).await {
        Ok(()) => signed_out(&w, ui),
        Err(_) => internal_page(&w, ui),
    }
}

/// Whether changing the password asks for the current one: only when there is one and
/// the session began with it (a session from an e-mail link proves the mailbox, which is
/// how a forgotten password is replaced).
fn asks_current(s: &Signed) -> bool {
    s.account.password_hash.is_some() && s.session.method == "password"
}

/// `GET /account/password`: set or change the password (signed in only).
pub(super) async fn password_page(State(w): State<Shared>, headers: HeaderMap) -> Response {
    let ui = page_ui(&w, &headers);
    let Some(s) = session_of(&w, &headers).await else { return super::super::to_signin("/account/password") };
    let csrf = w.csrf(CSRF_PASSWORD, &s.key);
    page(&w, ui, StatusCode::OK, ui.password_title, pages::password(ui, &csrf, asks_current(&s), None))
}

/// `POST /account/password` (csrf, [current], password, repeat): stores the new hash and
/// ends the account's other sessions.
pub(super) async fn password_submit(State(w): State<Shared>, headers: HeaderMap, peer: Peer, body: Bytes) -> Response {
    let ui = page_ui(&w, &headers);
    let client = peer_key(&peer);
    let form = FormFields::parse(&body);
    let Some(s) = session_of(&w, &headers).await else { return super::super::to_signin("/account/password") };
    if !w.csrf_ok(&form.csrf, CSRF_PASSWORD, &s.key) {
        return csrf_page(&w, ui);
    }
    let ask = asks_current(&s);
    let again = |w: &Web, status: StatusCode, msg: &str| {
        let csrf = w.csrf(CSRF_PASSWORD, &s.key);
        page(w, ui, status, ui.password_title, pages::password(ui, &csrf, ask, Some(msg)))
    };
    if form.password != form.repeat {
        return again(&w, StatusCode::BAD_REQUEST, ui.password_mismatch);
    }
    if password::check_length(&form.password).is_err() {
        return again(&w, StatusCode::BAD_REQUEST, ui.password_invalid);
    }
    if ask {
        // The current password is checked like a sign-in: counted per address.
        let hash = s.account.email_hash.clone();
        match call(&w.app, "begin_login", move |x| accounts::begin_login(&x.base, &hash)).await {
            Ok(Some(_)) => {}
            Ok(None) => return too_many(again(&w, StatusCode::OK, ui.login_throttled), 900),
            Err(_) => return internal_page(&w, ui),
        }
        let stored = s.account.password_hash.clone().unwrap_or_default();
        let current = Zeroizing::new(form.current.clone());
        match hashing(&w, move || password::verify(&current, &stored)).await {
            Ok(true) => {}
            Ok(false) => {
                w.with_limits(|l, now| l.count_failure(client, now));
                return again(&w, StatusCode::BAD_REQUEST, ui.password_wrong_current);
            }
            Err(_) => return internal_page(&w, ui),
        }
    }
    let (signed, new) = (s.clone(), Zeroizing::new(form.password.clone()));
    let Ok(permit) = Arc::clone(&w.hashing).acquire_owned().await else { return internal_page(&w, ui) };
    let saved = call(&w.app, "set_password", move |x| {
        let out = accounts::change_password(&x.base, &signed, &new, Some(&signed.key));
        drop(permit);
        out
    })
    .await;
    match saved {
        Ok(()) => {
            let body = pages::message_link(ui.password_saved, false, DEFAULT_NEXT, ui.continue_link);
            page(&w, ui, StatusCode::OK, ui.password_title, body)
        }
        Err(Fail::Input) => again(&w, StatusCode::BAD_REQUEST, ui.password_invalid),
        Err(_) => internal_page(&w, ui),
    }
}

/// `GET|POST /account/mail`: the `List-Unsubscribe` target of account e-mails, which go
/// out only on request: a one-click POST (RFC 8058) changes nothing.
pub(super) async fn mail_info(State(w): State<Shared>, headers: HeaderMap) -> Response {
    let ui = page_ui(&w, &headers);
    page(&w, ui, StatusCode::OK, ui.mail_info_title, pages::message(ui.mail_info_body, false))
}
