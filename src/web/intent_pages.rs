//! The pages of an intent's links (PROTOCOL.md §4): the consent page and its form, the
//! e-mail confirmation, the results page of a manage link, the withdraw page and the
//! RFC 8058 one-click unsubscribe.

use super::*;
use crate::intents::ConsentView;

// ---------------------------------------------------------------------------
// consent (PROTOCOL.md §4.2)

/// Renders the consent page (open drafts) with an optional error and status.
pub(super) fn consent_form_page(
    h: &AppState,
    ui: &Ui,
    intent: &Intent,
    token: &str,
    status: StatusCode,
    error: Option<(&str, bool)>,
) -> Response {
    let text = h.base.consent().get(ui.lang);
    let csrf = h.base.keys().csrf_token(CSRF_CONSENT, token, now_unix(h));
    let form = pages::ConsentForm { token, csrf: &csrf, text_language: &text.language, text: &text.body, error };
    page(h, ui, status, ui.consent_title, pages::consent(ui, intent, &form))
}

/// The consent link when consent can no longer be given: already used (409) or
/// expired/withdrawn (410).
pub(super) fn consent_closed(h: &AppState, ui: &Ui, intent: &Intent) -> Response {
    match intent.status {
        Status::AwaitingEmailConfirmation | Status::Active => taken_page(h, ui),
        _ => closed_page(h, ui, intent),
    }
}

/// The consent link's view and the language of its pages; the error page when the link
/// is unknown or the store fails.
async fn consent_view(h: &Shared, token: &str) -> Result<(ConsentView, &'static Ui), Response> {
    let view = by_token(h, "consent_view", token, |x, t| x.intents.consent_view(t)).await?;
    let ui = intent_ui(h, &view.intent);
    Ok((view, ui))
}

/// `GET /consent/{token}`.
pub(super) async fn consent_page(State(h): State<Shared>, Path(token): Path<String>) -> Page {
    let (view, ui) = consent_view(&h, &token).await?;
    Ok(if view.open {
        consent_form_page(&h, ui, &view.intent, &token, StatusCode::OK, None)
    } else {
        consent_closed(&h, ui, &view.intent)
    })
}

/// `POST /consent/{token}` (email, accept, csrf, lang): CSRF, the checkbox, then
/// [`Holder::give_consent`]; 303 to `/consent/{token}/sent` when recorded.
pub(super) async fn consent_submit(
    State(h): State<Shared>,
    Path(token): Path<String>,
    client: Option<axum::Extension<crate::net::ClientAddr>>,
    body: Bytes,
) -> Page {
    let form = FormFields::parse(&body);
    let (view, ui) = consent_view(&h, &token).await?;
    if !csrf_ok(&h, &form.csrf, CSRF_CONSENT, &token) {
        return Ok(csrf_page(&h, ui));
    }
    if !view.open {
        // The same person submitting again (a double click, the back button): the
        // success page again, not "already taken".
        if matches!(view.intent.status, Status::AwaitingEmailConfirmation | Status::Active) {
            let (t, email) = (token.clone(), form.email.clone());
            if let Ok(true) = call(&h, "consent_view", move |x| x.intents.consent_repeated(&t, &email)).await {
                return Ok(Redirect::to(&format!("/consent/{token}/sent")).into_response());
            }
        }
        return Ok(consent_closed(&h, ui, &view.intent));
    }
    if form.accept != "yes" {
        let error = Some((ui.accept_required, false));
        return Ok(consent_form_page(&h, ui, &view.intent, &token, StatusCode::BAD_REQUEST, error));
    }
    // The language of the consent text the person read (sent back by the form).
    let lang = i18n::language(&form.lang).unwrap_or(ui.lang);
    let (t, email) = (token.clone(), form.email);
    let client = client.and_then(|axum::Extension(c)| c.key());
    Ok(match call(&h, "give_consent", move |x| x.intents.give_consent_from(&t, &email, lang, client)).await {
        Ok(ConsentOutcome::Recorded | ConsentOutcome::Repeated) => {
            Redirect::to(&format!("/consent/{token}/sent")).into_response()
        }
        Ok(ConsentOutcome::Taken) => taken_page(&h, ui),
        Ok(ConsentOutcome::Throttled(e)) => throttled_page(&h, ui, &e),
        Ok(ConsentOutcome::Closed) => closed_page(&h, ui, &view.intent),
        Err(Fail::Input) => {
            consent_form_page(&h, ui, &view.intent, &token, StatusCode::BAD_REQUEST, Some((ui.email_invalid, true)))
        }
        Err(f) => fail_page(&h, ui, f),
    })
}

/// The 429 page of a used-up consent quota, with `Retry-After`: the rule, and when to try
/// again (minutes, and the time in UTC).
pub(super) fn throttled_page(h: &Shared, ui: &'static Ui, e: &crate::base::quota::Exceeded) -> Response {
    use crate::base::quota::Rule;
    let why = match e.rule {
        Rule::ConsentsPerAddress => ui.throttled_body,
        Rule::MailsGlobal | Rule::MailsUnconfirmed => ui.throttled_global_body,
        _ => ui.throttled_client_body,
    };
    let minutes = e.retry_after_secs.div_ceil(60).to_string();
    let at = time::OffsetDateTime::from_unix_timestamp(e.retry_at)
        .map(|t| format!("{:02}:{:02} UTC", t.hour(), t.minute()))
        .unwrap_or_default();
    let when = ui.throttled_retry.replace("{minutes}", &minutes).replace("{time}", &at);
    let body = maud::html! {
        (pages::message(why, false))
        p.hint { (when) }
    };
    let mut res = page(h, ui, StatusCode::TOO_MANY_REQUESTS, ui.throttled_title, body);
    res.headers_mut().insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from(e.retry_after_secs));
    res
}

/// `GET /consent/{token}/sent`: "check your e-mail" (never the address itself).
pub(super) async fn consent_sent(State(h): State<Shared>, Path(token): Path<String>) -> Page {
    let (view, ui) = consent_view(&h, &token).await?;
    Ok(match view.intent.status {
        Status::AwaitingEmailConfirmation | Status::Active => {
            let body = maud::html! {
                (pages::message(ui.sent_body, false))
                p.hint { (ui.sent_spam) }
                (pages::statement(ui, &view.intent))
            };
            page(&h, ui, StatusCode::OK, ui.sent_title, body)
        }
        _ if view.open => consent_form_page(&h, ui, &view.intent, &token, StatusCode::OK, None),
        _ => consent_closed(&h, ui, &view.intent),
    })
}

// ---------------------------------------------------------------------------
// e-mail confirmation (PROTOCOL.md §4.3)

/// The confirmation page for an intent in any state (GET and the done page).
pub(super) fn confirm_state_page(h: &AppState, ui: &Ui, intent: &Intent, token: &str) -> Response {
    match intent.status {
        Status::AwaitingEmailConfirmation => {
            let csrf = h.base.keys().csrf_token(CSRF_CONFIRM, token, now_unix(h));
            page(h, ui, StatusCode::OK, ui.confirm_title, pages::confirm(ui, intent, token, &csrf))
        }
        Status::Active => used_confirm_page(h, ui, intent, ui.already_active),
        _ => closed_page(h, ui, intent),
    }
}

/// The page of an active intent behind a used confirmation token: only `text` with the
/// statement and the way forward, no form and no CSRF token (a used link may have
/// leaked).
pub(super) fn used_confirm_page(h: &AppState, ui: &Ui, intent: &Intent, text: &str) -> Response {
    let body = maud::html! {
        (pages::message_with_statement(ui, text, intent))
        p.hint { (ui.links.confirm_used) }
    };
    page(h, ui, StatusCode::OK, ui.active_title, body)
}

/// Whether a page's query says that the cadence was just saved (`saved=cadence`).
pub(super) fn cadence_saved(query: Option<&str>) -> bool {
    query.is_some_and(|q| q.split('&').any(|p| p == "saved=cadence"))
}

/// `GET /confirm/{token}`: a Confirm button; once used, only its outcome; never
/// changes state.
pub(super) async fn confirm_page(State(h): State<Shared>, Path(token): Path<String>) -> Page {
    let intent = by_token(&h, "confirm_view", &token, |x, t| x.intents.confirm_view(t)).await?;
    Ok(confirm_state_page(&h, intent_ui(&h, &intent), &intent, &token))
}

/// `POST /confirm/{token}` (csrf): [`Holder::confirm`]; 303 to `/confirm/{token}/done`.
pub(super) async fn confirm_submit(State(h): State<Shared>, Path(token): Path<String>, body: Bytes) -> Page {
    let form = FormFields::parse(&body);
    let intent = by_token(&h, "confirm_view", &token, |x, t| x.intents.confirm_view(t)).await?;
    let ui = intent_ui(&h, &intent);
    if !csrf_ok(&h, &form.csrf, CSRF_CONFIRM, &token) {
        return Ok(csrf_page(&h, ui));
    }
    let t = token.clone();
    Ok(match call(&h, "confirm", move |x| x.intents.confirm(&t)).await {
        Ok(ConfirmOutcome::Activated | ConfirmOutcome::AlreadyActive) => {
            Redirect::to(&format!("/confirm/{token}/done")).into_response()
        }
        Ok(ConfirmOutcome::Closed) => closed_page(&h, ui, &intent),
        Err(f) => fail_page(&h, ui, f),
    })
}

/// `GET /confirm/{token}/done`: "your request is active" (only the outcome).
pub(super) async fn confirm_done(State(h): State<Shared>, Path(token): Path<String>) -> Page {
    let intent = by_token(&h, "confirm_view", &token, |x, t| x.intents.confirm_view(t)).await?;
    let ui = intent_ui(&h, &intent);
    Ok(if intent.status == Status::Active {
        used_confirm_page(&h, ui, &intent, ui.active_body)
    } else {
        confirm_state_page(&h, ui, &intent, &token)
    })
}

// ---------------------------------------------------------------------------
// results and withdrawal (manage token; PROTOCOL.md §4.4)

/// `GET /results/{token}`: the intent, the delivery cadence form (`?saved=cadence` and
/// `?sent=cadence` show their notices), its deliveries and the withdraw link.
pub(super) async fn results_page(
    State(h): State<Shared>,
    Path(token): Path<String>,
    RawQuery(query): RawQuery,
) -> Page {
    let mut v = by_token(&h, "results_view", &token, |x, t| x.intents.results_view(t)).await?;
    crate::matching::explain::annotate(&v.intent, &mut v.deliveries);
    let ui = intent_ui(&h, &v.intent);
    let csrf = h.base.keys().csrf_token(CSRF_CADENCE, &token, now_unix(&h));
    let action = format!("/results/{token}/cadence");
    let form =
        pages::CadenceForm { action: &action, csrf: &csrf, current: v.cadence, saved: cadence_saved(query.as_deref()) };
    let mailed = query.as_deref().is_some_and(|q| q.split('&').any(|p| p == "sent=cadence"));
    let body = maud::html! {
        @if mailed { p.notice role="status" { (ui.links.cadence_mailed) } }
        (pages::results(ui, &v.intent, &v.deliveries, &token, &form))
    };
    Ok(page(&h, ui, StatusCode::OK, ui.results_title, body))
}

/// 400: the `cadence` field is missing or not one of the four values: the message
/// naming the field, and a link `back` to the page of the form.
pub(super) fn cadence_invalid_page(h: &AppState, ui: &Ui, back: &str) -> Response {
    let body = pages::message_link(ui.cadence.invalid, true, back, ui.cadence.back);
    page(h, ui, StatusCode::BAD_REQUEST, ui.error_title, body)
}

/// The withdraw page for an intent in any state.
pub(super) fn withdraw_state_page(h: &AppState, ui: &Ui, intent: &Intent, token: &str) -> Response {
    let (title, body) = match intent.status {
        Status::Withdrawn => (ui.withdrawn_title, pages::message_with_statement(ui, ui.withdrawn_body, intent)),
        Status::Expired => (ui.withdraw_title, pages::message_with_statement(ui, ui.ended, intent)),
        _ => {
            let csrf = h.base.keys().csrf_token(CSRF_WITHDRAW, token, now_unix(h));
            (ui.withdraw_title, pages::withdraw(ui, intent, token, &csrf))
        }
    };
    page(h, ui, StatusCode::OK, title, body)
}

/// `GET /withdraw/{token}` and `GET /unsubscribe/{token}`: a Withdraw button; never
/// changes state. Also `GET /withdraw/{token}/done`, which then says "withdrawn".
pub(super) async fn withdraw_page(State(h): State<Shared>, Path(token): Path<String>) -> Page {
    let (intent, ui) = managed(&h, &token).await?;
    Ok(withdraw_state_page(&h, ui, &intent, &token))
}

/// `POST /withdraw/{token}` (csrf): withdraws; 303 to `/withdraw/{token}/done`.
pub(super) async fn withdraw_submit(State(h): State<Shared>, Path(token): Path<String>, body: Bytes) -> Page {
    let form = FormFields::parse(&body);
    let (_, ui) = managed(&h, &token).await?;
    if !csrf_ok(&h, &form.csrf, CSRF_WITHDRAW, &token) {
        return Ok(csrf_page(&h, ui));
    }
    let t = token.clone();
    Ok(match call(&h, "withdraw_by_manage", move |x| x.intents.withdraw_by_manage(&t)).await {
        Ok(()) => Redirect::to(&format!("/withdraw/{token}/done")).into_response(),
        Err(f) => fail_page(&h, ui, f),
    })
}

/// `POST /unsubscribe/{token}`: RFC 8058 one-click (`List-Unsubscribe=One-Click`). No
/// CSRF token: mail clients cannot send one, and the unguessable token is the
/// authority. Any body is accepted (some clients send multipart); 200 with a short page.
pub(super) async fn unsubscribe_one_click(State(h): State<Shared>, Path(token): Path<String>) -> Page {
    let (_, ui) = managed(&h, &token).await?;
    let t = token.clone();
    Ok(match call(&h, "withdraw_by_manage", move |x| x.intents.withdraw_by_manage(&t)).await {
        Ok(()) => page(&h, ui, StatusCode::OK, ui.withdrawn_title, pages::message(ui.unsubscribed, false)),
        Err(f) => fail_page(&h, ui, f),
    })
}
