//! "My intents" for signed-in buyers and the renewal page (PROTOCOL.md §1 "Web pages",
//! §3 intent_update_intent: "renewing validUntil requires the buyer's fresh action").
//!
//! * `GET /me`: the account's intents (statement, status, validUntil, offers delivered)
//!   with Withdraw and Renew buttons and a link to each intent's offers. Not signed in:
//!   303 to `/signin?next=/me`.
//! * `GET /me/intents/{id}`: one intent and its delivered offers (owner only; any other
//!   id is the same 404).
//! * `POST /me/intents/{id}/withdraw` (csrf): withdraws at once; 303 to `/me`.
//! * `POST /me/intents/{id}/cadence` (csrf, cadence): the delivery cadence; 303 to
//!   `/me/intents/{id}?saved=cadence`.
//! * `POST /me/intents/{id}/renew` (csrf): creates a pending renewal (+ the holder's
//!   default validity, capped at its maximum); 303 to `/renew/{token}`.
//! * `GET /renew/{token}`: the intent and the new validUntil with a Confirm button; never
//!   changes state. `POST /renew/{token}` (csrf) applies it; 303 to `/me/intents/{id}`.
//!   Both need the owning account signed in (otherwise 303 to the sign-in page, which
//!   comes back here): the renewal URL that an agent received is not enough to renew.
//!
//! Forms carry CSRF tokens bound to the account and the intent (or the renewal token).

use super::i18n::{MineText, Ui};
use super::{call, csrf_ok, csrf_page, fail_page, now_unix, page, page_access, pages, Fail, FormFields, Page, Shared};
use crate::base::ServiceError;
use crate::policy::Action;
use crate::protocol::{Intent, Status};
use crate::records::Cadence;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;
use maud::{html, Markup};

const CSRF_ME_WITHDRAW: &str = "me-withdraw";
const CSRF_ME_RENEW: &str = "me-renew";
const CSRF_ME_CADENCE: &str = "me-cadence";
const CSRF_RENEW: &str = "renew";

/// Routes of the signed-in buyer's pages (see the module docs).
pub(super) fn routes(holder: AppState) -> Router {
    Router::new()
        .route("/me", get(me_page))
        .route("/me/intents/{id}", get(intent_page))
        .route("/me/intents/{id}/withdraw", post(withdraw_submit))
        .route("/me/intents/{id}/renew", post(renew_request))
        .route("/me/intents/{id}/cadence", post(cadence_submit))
        .route("/renew/{token}", get(renew_page).post(renew_submit))
        .with_state(holder)
}

// ---------------------------------------------------------------------------
// plumbing

/// The page's strings, in the browser's language.
fn texts(h: &AppState, headers: &HeaderMap) -> (&'static Ui, &'static MineText) {
    let ui = super::browser_ui(h, headers);
    (ui, ui.mine)
}

/// 303 to the sign-in page, which returns to `next` (a path on this site).
fn signin_redirect(next: &str) -> Response {
    Redirect::to(&format!("/signin?next={next}")).into_response()
}

/// The signed-in account's id and what `f` reads for it, off the async threads (one
/// short store read for the session). `Err` is the response: 303 to the sign-in page,
/// coming back to `next`, when nobody is signed in as a buyer; else the error page.
async fn owned<T, F>(
    h: &Shared,
    headers: &HeaderMap,
    ui: &Ui,
    op: &'static str,
    next: &str,
    f: F,
) -> Result<(String, T), Response>
where
    T: Send + 'static,
    F: FnOnce(&AppState, &str) -> Result<T, ServiceError> + Send + 'static,
{
    let hd = headers.clone();
    let got = call(h, op, move |x| -> Result<_, ServiceError> {
        let Ok(account) = page_access(x, &hd, Action::OwnPages) else { return Ok(None) };
        let v = f(x, &account)?;
        Ok(Some((account, v)))
    })
    .await;
    match got {
        Ok(Some(v)) => Ok(v),
        Ok(None) => Err(signin_redirect(next)),
        Err(f) => Err(fail_page(h, ui, f)),
    }
}

/// The signed-in account of a form POST whose CSRF token (`csrf`, of `purpose`, bound to
/// the account and `what`) is valid. `Err` is the response: the sign-in redirect back to
/// `next`, the error page or the CSRF page.
async fn form_account(
    h: &Shared,
    headers: &HeaderMap,
    ui: &Ui,
    (csrf, purpose, what): (&str, &str, &str),
    next: &str,
) -> Result<String, Response> {
    let (account, ()) = owned(h, headers, ui, "session", next, |_, _| Ok(())).await?;
    if !csrf_ok(h, csrf, purpose, &binding(&account, what)) {
        return Err(csrf_page(h, ui));
    }
    Ok(account)
}

fn binding(account: &str, what: &str) -> String {
    format!("{account}\n{what}")
}

fn csrf(h: &AppState, purpose: &str, account: &str, what: &str) -> String {
    h.base.keys().csrf_token(purpose, &binding(account, what), now_unix(h))
}

/// 409 with a message (a renewal that cannot be made or confirmed).
fn refused(h: &AppState, ui: &Ui, text: &str) -> Response {
    page(h, ui, StatusCode::CONFLICT, ui.closed_title, pages::message(text, true))
}

/// The Withdraw and Renew buttons of an intent.
fn actions(h: &AppState, ui: &Ui, m: &MineText, account: &str, i: &Intent) -> Markup {
    html! {
        @if matches!(i.status, Status::Active | Status::Expired) {
            form method="post" action=(format!("/me/intents/{}/renew", i.id)) {
                input type="hidden" name="csrf" value=(csrf(h, CSRF_ME_RENEW, account, &i.id));
                button type="submit" { (m.renew_button) }
            }
        }
        @if !i.status.is_final() {
            form method="post" action=(format!("/me/intents/{}/withdraw", i.id)) {
                input type="hidden" name="csrf" value=(csrf(h, CSRF_ME_WITHDRAW, account, &i.id));
                button.danger type="submit" { (ui.withdraw_button) }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// my intents

/// `GET /me`.
async fn me_page(State(h): State<Shared>, headers: HeaderMap) -> Page {
    let (ui, m) = texts(&h, &headers);
    let hd = headers.clone();
    let (account, (intents, signout)) = owned(&h, &headers, ui, "my_intents", "/me", move |x, account| {
        Ok((x.intents.owned_intents(account)?, super::accounts::signout_csrf(&x.base, &hd)))
    })
    .await?;
    let body = html! {
        p { (m.intro) }
        @if intents.is_empty() {
            p.notice { (m.none) }
        } @else {
            @let columns = [ui.statement, ui.status, ui.valid_until, m.offers, m.actions];
            (pages::data_table("my-intents-caption", html! { (m.title) }, columns, html! {
                @for i in &intents {
                    tr {
                        th scope="row" {
                            span lang=(i.language) { (i.statement) }
                            br;
                            a href=(format!("/me/intents/{}", i.id)) { (m.show_offers) }
                        }
                        td { (ui.status_name(i.status)) }
                        td { (pages::date(ui, &i.valid_until)) }
                        td { (i.extensions.get("matchCount").and_then(serde_json::Value::as_u64).unwrap_or(0)) }
                        td { (actions(&h, ui, m, &account, i)) }
                    }
                }
            }))
        }
        p.hint { (ui.aggregator) }
        @if let Some(c) = signout {
            (pages::button_form("/signout", &c, m.signout, false))
        }
    };
    Ok(page(&h, ui, StatusCode::OK, m.title, body))
}

/// `GET /me/intents/{id}`: one owned intent and its delivered offers.
async fn intent_page(
    State(h): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Page {
    let (ui, m) = texts(&h, &headers);
    let (account, mut view) =
        owned(&h, &headers, ui, "my_intent", "/me", move |x, account| x.intents.owned_results(account, &id)).await?;
    // The explanations in the page's language (the person's browser chose it here).
    let words = Intent { language: ui.lang.to_owned(), ..view.intent.clone() };
    crate::matching::explain::annotate(&words, &mut view.deliveries);
    let body = html! {
        (pages::intent_details(ui, &view.intent, true))
        dl.facts {
            dt { (ui.status) }
            dd { (ui.status_name(view.intent.status)) }
        }
        @if !view.intent.status.is_final() {
            (pages::cadence_form(ui, &pages::CadenceForm {
                action: &format!("/me/intents/{}/cadence", view.intent.id),
                csrf: &csrf(&h, CSRF_ME_CADENCE, &account, &view.intent.id),
                current: view.cadence,
                saved: super::intent_pages::cadence_saved(query.as_deref()),
            }))
        }
        (actions(&h, ui, m, &account, &view.intent))
        (pages::offer_list(ui, &view.deliveries))
        p { a href="/me" { (m.back) } }
    };
    Ok(page(&h, ui, StatusCode::OK, ui.results_title, body))
}

/// `POST /me/intents/{id}/withdraw` (csrf): at once; 303 to `/me`.
async fn withdraw_submit(State(h): State<Shared>, Path(id): Path<String>, headers: HeaderMap, body: Bytes) -> Page {
    let (ui, _) = texts(&h, &headers);
    let form = FormFields::parse(&body);
    let account = form_account(&h, &headers, ui, (&form.csrf, CSRF_ME_WITHDRAW, &id), "/me").await?;
    Ok(match call(&h, "withdraw_owned", move |x| x.intents.withdraw_owned(&account, &id)).await {
        Ok(()) => Redirect::to("/me").into_response(),
        Err(f) => fail_page(&h, ui, f),
    })
}

/// `POST /me/intents/{id}/cadence` (csrf, cadence): as the results page's form; 303 to
/// the intent's page with `?saved=cadence`; 400 naming the field for an unknown value.
async fn cadence_submit(State(h): State<Shared>, Path(id): Path<String>, headers: HeaderMap, body: Bytes) -> Page {
    let (ui, _) = texts(&h, &headers);
    let form = FormFields::parse(&body);
    let account = form_account(&h, &headers, ui, (&form.csrf, CSRF_ME_CADENCE, &id), "/me").await?;
    let back = format!("/me/intents/{id}");
    let Some(cadence) = Cadence::parse(form.cadence.trim()) else {
        return Ok(super::intent_pages::cadence_invalid_page(&h, ui, &back));
    };
    Ok(match call(&h, "set_cadence_owned", move |x| x.intents.set_cadence_owned(&account, &id, cadence)).await {
        Ok(_) => Redirect::to(&format!("{back}?saved=cadence")).into_response(),
        Err(f) => fail_page(&h, ui, f),
    })
}

/// `POST /me/intents/{id}/renew` (csrf): a pending renewal; 303 to its page.
async fn renew_request(State(h): State<Shared>, Path(id): Path<String>, headers: HeaderMap, body: Bytes) -> Page {
    let (ui, m) = texts(&h, &headers);
    let form = FormFields::parse(&body);
    let account = form_account(&h, &headers, ui, (&form.csrf, CSRF_ME_RENEW, &id), "/me").await?;
    Ok(match call(&h, "request_renewal", move |x| x.intents.request_renewal(&account, &id)).await {
        Ok(r) => Redirect::to(&format!("/renew/{}", r.token)).into_response(),
        Err(Fail::State) => refused(&h, ui, m.renew_refused),
        Err(f) => fail_page(&h, ui, f),
    })
}

// ---------------------------------------------------------------------------
// renewal (the person's fresh action)

/// `GET /renew/{token}`: the intent, the new validUntil and a Confirm button.
async fn renew_page(State(h): State<Shared>, Path(token): Path<String>, headers: HeaderMap) -> Page {
    let (ui, m) = texts(&h, &headers);
    let (t, next) = (token.clone(), format!("/renew/{token}"));
    let (account, view) =
        owned(&h, &headers, ui, "renewal_view", &next, move |x, a| x.intents.renewal_view(a, &t)).await?;
    if !view.open {
        let body = html! {
            (pages::message(m.renew_closed, false))
            (pages::intent_status(ui, &view.intent))
            p { a href="/me" { (m.back) } }
        };
        return Ok(page(&h, ui, StatusCode::GONE, m.renew_title, body));
    }
    let body = html! {
        p { (m.renew_intro) }
        (pages::intent_status(ui, &view.intent))
        dl.facts {
            dt { (m.new_valid_until) }
            dd { (pages::date(ui, &view.valid_until)) }
        }
        (pages::button_form(&next, &csrf(&h, CSRF_RENEW, &account, &token), ui.confirm_button, false))
        p { a href="/me" { (m.back) } }
    };
    Ok(page(&h, ui, StatusCode::OK, m.renew_title, body))
}

/// `POST /renew/{token}` (csrf): applies the renewal; 303 to the intent's page.
async fn renew_submit(State(h): State<Shared>, Path(token): Path<String>, headers: HeaderMap, body: Bytes) -> Page {
    let (ui, m) = texts(&h, &headers);
    let form = FormFields::parse(&body);
    let next = format!("/renew/{token}");
    let account = form_account(&h, &headers, ui, (&form.csrf, CSRF_RENEW, &token), &next).await?;
    Ok(match call(&h, "renew", move |x| x.intents.renew(&account, &token)).await {
        Ok(intent) => Redirect::to(&format!("/me/intents/{}", intent.id)).into_response(),
        Err(Fail::State) => refused(&h, ui, m.renew_closed),
        // Fail::PersonCap: the person-cap page (fail_page), the renewal left usable.
        Err(f) => fail_page(&h, ui, f),
    })
}
