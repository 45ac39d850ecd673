//! The delivery cadence behind a results link, which a stranger may hold (scanners and
//! shared inboxes publish links): the change is made at once for the person signed in (the intent's owner, or an
//! account of the same mailbox); for anyone else an e-mail goes to the intent's address,
//! whose link makes it. Stopping mail entirely stays one click: the withdraw page and the
//! RFC 8058 unsubscribe are not gated.

use super::intent_pages::throttled_page;
use super::{call, csrf_ok, csrf_page, fail_page, managed, page, pages, Fail, FormFields, Page, Shared, CSRF_CADENCE};
use crate::intents::{cadence_proof_purpose, CadenceRequest};
use crate::records::Cadence;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};

/// `POST /results/{token}/cadence` (csrf, cadence): checks the token (404), the CSRF
/// token (403), that the intent has not ended (410) and the `cadence` field (400, nothing
/// changed); then [`crate::intents::Intents::request_cadence_by_manage`]: 303 to
/// `?saved=cadence` when made, to `?sent=cadence` when it waits for the e-mail; 429 when
/// that e-mail's quota is used up.
pub(super) async fn results_cadence(
    State(h): State<Shared>,
    Path(token): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Page {
    let form = FormFields::parse(&body);
    let (intent, ui) = managed(&h, &token).await?;
    if !csrf_ok(&h, &form.csrf, CSRF_CADENCE, &token) {
        return Ok(csrf_page(&h, ui));
    }
    if intent.status.is_final() {
        return Ok(super::closed_page(&h, ui, &intent));
    }
    let back = format!("/results/{token}");
    let Some(cadence) = Cadence::parse(form.cadence.trim()) else {
        return Ok(super::intent_pages::cadence_invalid_page(&h, ui, &back));
    };
    let account = super::cookies::current(&h.base, &headers).map(|(id, _)| id);
    let t = token.clone();
    let asked =
        call(&h, "set_cadence", move |x| x.intents.request_cadence_by_manage(&t, cadence, account.as_deref())).await;
    Ok(match asked {
        Ok(CadenceRequest::Applied) => Redirect::to(&format!("{back}?saved=cadence")).into_response(),
        Ok(CadenceRequest::Mailed) => Redirect::to(&format!("{back}?sent=cadence")).into_response(),
        Ok(CadenceRequest::Throttled(e)) => throttled_page(&h, ui, &e),
        Err(Fail::State) => super::closed_page(&h, ui, &intent),
        Err(f) => fail_page(&h, ui, f),
    })
}

/// The proof of a cadence e-mail's link (`k=` in its query).
fn proof_of(query: Option<&str>) -> String {
    query
        .and_then(|q| q.split('&').find_map(|p| p.strip_prefix("k=")))
        .map(|k| k.replace("%2E", ".").replace("%2e", "."))
        .unwrap_or_default()
}

/// The intent behind a results link, its page language and the cadence a cadence
/// e-mail asked for (`value`), when `proof` is that e-mail's and the intent has not
/// ended. `Err` is the response: 404, 403 for a forged or expired proof, or 410.
async fn mailed_cadence(
    h: &Shared,
    token: &str,
    value: &str,
    proof: &str,
) -> Result<(crate::protocol::Intent, &'static super::Ui, Cadence), Response> {
    let (intent, ui) = managed(h, token).await?;
    let Some(cadence) = Cadence::parse(value).filter(|c| csrf_ok(h, proof, &cadence_proof_purpose(*c), token)) else {
        return Err(expired_link_page(h, ui, token));
    };
    if intent.status.is_final() {
        return Err(super::closed_page(h, ui, &intent));
    }
    Ok((intent, ui, cadence))
}

/// `GET /results/{token}/cadence/{cadence}?k=PROOF`: the button that makes the change
/// the e-mail asked about ([`mailed_cadence`] checks the link). Changes nothing.
pub(super) async fn cadence_mail_page(
    State(h): State<Shared>,
    Path((token, value)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Page {
    let proof = proof_of(query.as_deref());
    let (intent, ui, cadence) = mailed_cadence(&h, &token, &value, &proof).await?;
    let action = format!("/results/{token}/cadence/{}", cadence.key());
    let body = pages::cadence_confirm(ui, &intent, cadence.label(ui.lang), &action, &proof);
    Ok(page(&h, ui, StatusCode::OK, ui.links.cadence_confirm_title, body))
}

/// `POST /results/{token}/cadence/{cadence}` (csrf = the e-mail's proof): the change
/// ([`crate::intents::Intents::set_cadence_by_manage`]); 303 to `?saved=cadence`.
pub(super) async fn cadence_mail_submit(
    State(h): State<Shared>,
    Path((token, value)): Path<(String, String)>,
    body: Bytes,
) -> Page {
    let form = FormFields::parse(&body);
    let (intent, ui, cadence) = mailed_cadence(&h, &token, &value, &form.csrf).await?;
    let t = token.clone();
    Ok(match call(&h, "set_cadence", move |x| x.intents.set_cadence_by_manage(&t, cadence)).await {
        Ok(_) => Redirect::to(&format!("/results/{token}?saved=cadence")).into_response(),
        Err(Fail::State) => super::closed_page(&h, ui, &intent),
        Err(f) => fail_page(&h, ui, f),
    })
}

/// 403: a cadence e-mail's link that is forged or older than two hours: what happened
/// and the way forward (the results page, where a new one is asked for).
fn expired_link_page(h: &Shared, ui: &super::Ui, token: &str) -> Response {
    let body = pages::message_link(ui.links.cadence_link_expired, true, &format!("/results/{token}"), ui.cadence.back);
    page(h, ui, StatusCode::FORBIDDEN, ui.csrf_title, body)
}
