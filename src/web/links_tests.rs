//! Leaked, used and ended links (the pages behind consent, confirmation and results
//! tokens): no indexing and no budget, a used confirmation link that shows only its
//! outcome, a cadence change from a results link that a stranger holds confirmed by
//! e-mail (unsubscribe still one click), the way forward from an expired or used link in
//! every language, and the same person's double submit of the consent form.

use super::tests::{env, token_of, url_in, Env, Resp, EMAIL, EMAIL2};
use crate::clock::Clock;
use crate::protocol::Status;
use crate::records::Cadence;
use axum::http::{header, StatusCode};
use serde_json::json;

/// Consents on `consent_url` for `email` (303 expected); answers the consent token.
async fn consent(e: &Env, consent_url: &str, email: &str) -> String {
    let token = token_of(consent_url);
    let page = e.get(&format!("/consent/{token}")).await;
    let r = e.post(&format!("/consent/{token}"), &[("email", email), ("accept", "yes"), ("csrf", &page.csrf())]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    token
}

/// An active intent (published, consented, confirmed): its code, confirmation and
/// manage tokens.
async fn active(e: &Env) -> (String, String, String) {
    let p = e.publish_octavia();
    consent(e, &p.consent_url, EMAIL).await;
    let text = e.mails()[0].text.clone();
    let (confirm, manage) = (token_of(&url_in(&text, "/confirm/")), token_of(&url_in(&text, "/withdraw/")));
    let page = e.get(&format!("/confirm/{confirm}")).await;
    let r = e.post(&format!("/confirm/{confirm}"), &[("csrf", &page.csrf())]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    (p.intent_code, confirm, manage)
}

fn cadence_of(e: &Env, code: &str) -> Cadence {
    let rec = e.holder.intents.intent_by_code(code, None).unwrap();
    rec.cadence
}

/// No budget (15 000 EUR on the Octavia) and no hidden limit (13 500) on a page.
fn assert_no_budget(r: &Resp) {
    for s in ["15\u{a0}000", "15 000", "15000", "13\u{a0}500", "13 500", "13500"] {
        assert!(!r.body.contains(s), "the page shows {s:?}:\n{}", r.body);
    }
}

#[tokio::test]
async fn token_pages_are_not_indexed_and_show_no_budget() {
    let e = env();
    let p = e.publish_octavia();
    let token = token_of(&p.consent_url);
    let page = e.get(&format!("/consent/{token}")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert_no_budget(&page);
    let mut paths = vec![format!("/consent/{token}")];
    consent(&e, &p.consent_url, EMAIL).await;
    let text = e.mails()[0].text.clone();
    let (confirm, manage) = (token_of(&url_in(&text, "/confirm/")), token_of(&url_in(&text, "/withdraw/")));
    let confirm_page = e.get(&format!("/confirm/{confirm}")).await;
    assert!(confirm_page.has_form(), "{}", confirm_page.body);
    paths.extend([
        format!("/consent/{token}/sent"),
        format!("/confirm/{confirm}"),
        format!("/results/{manage}"),
        format!("/withdraw/{manage}"),
        format!("/unsubscribe/{manage}"),
        "/confirm/unknown-token".into(),
    ]);
    for path in &paths {
        let r = e.get(path).await;
        assert_eq!(r.header(header::HeaderName::from_static("x-robots-tag")), "noindex, nofollow", "{path}");
        assert_no_budget(&r);
    }
    // The home page may be indexed.
    assert_eq!(e.get("/").await.header(header::HeaderName::from_static("x-robots-tag")), "");
}

#[tokio::test]
async fn a_used_confirmation_link_shows_only_its_outcome() {
    let e = env();
    let (code, confirm, _) = active(&e).await;
    for path in [format!("/confirm/{confirm}"), format!("/confirm/{confirm}/done")] {
        let r = e.get(&path).await;
        assert_eq!(r.status, StatusCode::OK, "{path}");
        assert!(r.body.contains("aktívny"), "{path}:\n{}", r.body);
        assert!(!r.has_form() && !r.body.contains("csrf"), "{path} offers a form:\n{}", r.body);
        assert!(r.body.contains("stránku výsledkov"), "{path}: where to manage it now:\n{}", r.body);
    }
    // The cadence form that page used to carry is gone with its address.
    let csrf = e.holder.base.keys().csrf_token("cadence", &confirm, e.clock.now().unix_timestamp());
    let r = e.post(&format!("/confirm/{confirm}/cadence"), &[("csrf", &csrf), ("cadence", "pause")]).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(cadence_of(&e, &code), Cadence::AsTheyCome);
}

#[tokio::test]
async fn a_stranger_with_the_results_link_changes_the_cadence_only_through_the_persons_mail() {
    let e = env();
    let (code, _, manage) = active(&e).await;
    let results = format!("/results/{manage}");
    let action = format!("{results}/cadence");
    for value in ["pause", "weekly"] {
        let page = e.get(&results).await;
        let r = e.post(&action, &[("csrf", &page.csrf()), ("cadence", value)]).await;
        assert_eq!(
            (r.status, r.header(header::LOCATION)),
            (StatusCode::SEE_OTHER, format!("{results}?sent=cadence").as_str())
        );
        assert_eq!(cadence_of(&e, &code), Cadence::AsTheyCome, "{value}: changed without the person");
    }
    let notice = e.get(&format!("{results}?sent=cadence")).await;
    assert!(notice.body.contains("Poslali sme vám e-mail na potvrdenie tejto zmeny"), "{}", notice.body);
    // The person got one e-mail per request, each with its own link.
    let asks: Vec<_> = e.mails().into_iter().filter(|m| m.subject.starts_with("Potvrďte zmenu")).collect();
    assert_eq!(asks.len(), 2);
    assert!(asks.iter().all(|m| m.to == EMAIL));
    assert!(asks[0].text.contains("pozastavené") || asks[0].text.contains("pozastav"), "{}", asks[0].text);
    let link = url_in(&asks[0].text, "/cadence/pause");
    let path = link.trim_start_matches("http://127.0.0.1:8080").to_owned();
    let (action_pause, query) = path.split_once('?').unwrap();
    let proof = query.strip_prefix("k=").unwrap().to_owned();
    // The link's GET is a button; it changes nothing.
    let page = e.get(&path).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.body.contains(&format!("action=\"{action_pause}\"")), "{}", page.body);
    assert_eq!(cadence_of(&e, &code), Cadence::AsTheyCome);
    // A forged proof, another cadence's proof, or none: 403 with the way back.
    let weekly = format!("/results/{manage}/cadence/weekly");
    for (to, csrf) in [(action_pause, "1.forged"), (weekly.as_str(), proof.as_str()), (action_pause, "")] {
        let r = e.post(to, &[("csrf", csrf)]).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{to} {csrf}");
        assert!(r.body.contains(&format!("href=\"{results}\"")), "{}", r.body);
    }
    // The results page's own CSRF token is no proof.
    let own = e.get(&results).await.csrf();
    assert_eq!(e.post(action_pause, &[("csrf", &own)]).await.status, StatusCode::FORBIDDEN);
    assert_eq!(cadence_of(&e, &code), Cadence::AsTheyCome);
    // The person's POST from the e-mail's page makes the change.
    let r = e.post(action_pause, &[("csrf", &page.csrf())]).await;
    assert_eq!(
        (r.status, r.header(header::LOCATION)),
        (StatusCode::SEE_OTHER, format!("{results}?saved=cadence").as_str())
    );
    assert_eq!(cadence_of(&e, &code), Cadence::Pause);
    // After two hours the link has expired.
    let weekly_link = url_in(&asks[1].text, "/cadence/weekly");
    e.clock.advance(time::Duration::hours(3));
    let late = e.get(weekly_link.trim_start_matches("http://127.0.0.1:8080")).await;
    assert_eq!(late.status, StatusCode::FORBIDDEN);
    assert!(!late.has_form());
    assert_eq!(cadence_of(&e, &code), Cadence::Pause);
    // Stopping mail entirely stays one click: RFC 8058 unsubscribe without any token.
    let r = e.post(&format!("/unsubscribe/{manage}"), &[("List-Unsubscribe", "One-Click")]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(e.holder.intents.get_by_code(&code, None).unwrap().status, Status::Withdrawn);
}

/// The way forward's words and links in `lang`.
fn assert_way_forward(r: &Resp, lang: &str) {
    let ui = super::i18n::ui(lang);
    assert!(r.body.contains(&format!("<html lang=\"{lang}\">")), "{}", r.body);
    assert!(r.body.contains(ui.links.forward_heading), "{lang}: no heading:\n{}", r.body);
    assert!(r.body.contains(&format!("<a href=\"/\">{}</a>", ui.links.start_again_link)), "{lang}:\n{}", r.body);
    assert!(r.body.contains(&format!("<a href=\"/me\">{}</a>", ui.mine.title)), "{lang}:\n{}", r.body);
}

#[tokio::test]
async fn expired_and_used_links_show_a_way_forward_in_every_language() {
    for (lang, statement) in [
        ("sk", "Hľadám Škoda Octavia combi, diesel, do Bratislavy"),
        ("cs", "Hledám ojetou Škodu Octavia kombi s dieselovým motorem"),
        ("en", "I am looking for a used Skoda Octavia estate with a diesel engine"),
    ] {
        let e = env();
        let args = json!({"statement": statement, "criteria": {"category": "vehicles"}, "area": "SK"});
        // A consent link used by someone else.
        let p = e.publish(args.clone());
        assert_eq!(p.intent.language, lang);
        let token = consent(&e, &p.consent_url, EMAIL).await;
        let csrf = e.holder.base.keys().csrf_token("consent", &token, e.clock.now().unix_timestamp());
        let r = e.post(&format!("/consent/{token}"), &[("email", EMAIL2), ("accept", "yes"), ("csrf", &csrf)]).await;
        assert_eq!(r.status, StatusCode::CONFLICT, "{lang}");
        assert_way_forward(&r, lang);
        assert_way_forward(&e.get(&format!("/consent/{token}")).await, lang);
        // The confirmation link after 72 hours unconfirmed.
        let confirm = token_of(&url_in(&e.mails()[0].text, "/confirm/"));
        // An expired consent link (a second draft, 25 hours later).
        let lapsed = e.publish(args);
        e.clock.advance(time::Duration::hours(73));
        let r = e.get(&format!("/confirm/{confirm}")).await;
        assert_eq!(r.status, StatusCode::GONE, "{lang}: {}", r.body);
        assert_way_forward(&r, lang);
        let r = e.get(&lapsed.consent_url.replace("http://127.0.0.1:8080", "")).await;
        assert_eq!(r.status, StatusCode::GONE, "{lang}");
        assert_way_forward(&r, lang);
    }
    // A link no longer known at all (a purged draft) is the 404 page, with the same way.
    let e = env();
    assert_way_forward(&e.get("/consent/purged-long-ago").await, "sk");
}

#[tokio::test]
async fn the_same_persons_double_submit_of_the_consent_form_succeeds_twice() {
    let e = env();
    let p = e.publish_octavia();
    let token = token_of(&p.consent_url);
    let path = format!("/consent/{token}");
    let csrf = e.get(&path).await.csrf();
    let sent = format!("/consent/{token}/sent");
    for email in [EMAIL, EMAIL, &EMAIL.to_uppercase()] {
        let r = e.post(&path, &[("email", email), ("accept", "yes"), ("csrf", &csrf), ("lang", "sk")]).await;
        assert_eq!(
            (r.status, r.header(header::LOCATION)),
            (StatusCode::SEE_OTHER, sent.as_str()),
            "{email}: {}",
            r.body
        );
    }
    assert_eq!(e.get(&sent).await.status, StatusCode::OK);
    assert_eq!(e.mails().len(), 1, "one confirmation e-mail");
    // Someone else is still refused, and learns nothing about the address.
    let r = e.post(&path, &[("email", EMAIL2), ("accept", "yes"), ("csrf", &csrf)]).await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert!(!r.body.contains(EMAIL));
    // Still so once the intent is active.
    active_from(&e).await;
    let r = e.post(&path, &[("email", EMAIL), ("accept", "yes"), ("csrf", &csrf)]).await;
    assert_eq!((r.status, r.header(header::LOCATION)), (StatusCode::SEE_OTHER, sent.as_str()));
}

/// Confirms the (only) queued confirmation e-mail's intent.
async fn active_from(e: &Env) {
    let confirm = token_of(&url_in(&e.mails()[0].text, "/confirm/"));
    let page = e.get(&format!("/confirm/{confirm}")).await;
    let r = e.post(&format!("/confirm/{confirm}"), &[("csrf", &page.csrf())]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
}
