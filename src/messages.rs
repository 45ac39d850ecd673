//! The e-mails the holder sends a buyer about an intent, one function each: the double
//! opt-in confirmation (PROTOCOL.md §4.3), the confirmation of a cadence change asked
//! for on the results page, and the match digest (§4.5), in the intent's
//! language (sk, cs, en). Account e-mails are in `crate::accounts`.

use crate::config::Settings;
use crate::mail::{IntentMailText, MailContent};
use crate::protocol::{Intent, Offer};
use crate::records::Cadence;
use crate::text::format_amount;

fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

/// The closing paragraphs of the confirmation and the digest: `lead`, the cadence in
/// words and the results page link to change it, then the withdraw link.
fn cadence_and_withdraw(s: &IntentMailText, lead: &str, lang: &str, cadence: Cadence, urls: [&str; 2]) -> String {
    let [results_url, withdraw_url] = urls;
    let label = cadence.label(lang);
    format!("{lead} {label}.\n{}\n{results_url}\n\n{}\n{withdraw_url}", s.cadence_change, s.withdraw)
}

/// An e-mail to `to` about `intent`: `lead`, the statement in quotes, `body` and the
/// holder's signature (`-- ` and `holder_name`), as plain text.
fn intent_mail(
    settings: &Settings,
    to: &str,
    intent: &Intent,
    subject: String,
    lead: &str,
    body: &str,
    unsubscribe_url: &str,
) -> MailContent {
    let (statement, holder) = (&intent.statement, &settings.holder_name);
    MailContent {
        to: to.to_owned(),
        subject,
        text: format!("{lead}\n\n  \u{201e}{statement}\u{201c}\n\n{body}\n\n-- \n{holder}\n"),
        unsubscribe_url: unsubscribe_url.to_owned(),
    }
}

/// The double opt-in confirmation e-mail (PROTOCOL.md §4.3): the statement, the
/// confirmation page link (which shows a Confirm button; GET never confirms), the cadence
/// the intent will have once active with the results page link to change it, and the
/// withdraw link.
#[allow(clippy::too_many_arguments)]
pub fn confirmation(
    settings: &Settings,
    to: &str,
    intent: &Intent,
    cadence: Cadence,
    confirm_url: &str,
    results_url: &str,
    withdraw_url: &str,
    unsubscribe_url: &str,
) -> MailContent {
    let s = crate::mail::texts(&intent.language).intent;
    let closing =
        cadence_and_withdraw(s, s.cadence_after_confirm, &intent.language, cadence, [results_url, withdraw_url]);
    let body = format!("{}\n{confirm_url}\n\n{}\n\n{closing}", s.confirm_action, s.ignore);
    let subject = format!("{}: {}", s.confirm_subject, short(&intent.statement, 60));
    intent_mail(settings, to, intent, subject, s.confirm_intro, &body, unsubscribe_url)
}

/// The e-mail that asks the person to confirm a cadence change asked for on the results
/// page by someone who is not signed in as them (a results link may have leaked): the
/// statement, the cadence asked for in words ([`Cadence::label`]), the link to the page
/// with the button that makes the change (`confirm_url`, carrying a two-hour proof; its
/// GET changes nothing), and what to do when it was not them (nothing).
pub fn cadence_change(
    settings: &Settings,
    to: &str,
    intent: &Intent,
    cadence: Cadence,
    confirm_url: &str,
    unsubscribe_url: &str,
) -> MailContent {
    let s = crate::mail::texts(&intent.language).intent;
    let lead = format!("{} {}.", s.cadence_ask, cadence.label(&intent.language));
    let body = format!("{}\n{confirm_url}\n\n{}", s.cadence_ask_action, s.cadence_ask_ignore);
    let subject = format!("{}: {}", s.cadence_ask_subject, short(&intent.statement, 50));
    intent_mail(settings, to, intent, subject, &lead, &body, unsubscribe_url)
}

/// The match digest (PROTOCOL.md §4.5): new offers with price, place and link, the
/// results page, the current cadence with the link to change it and the withdraw link.
#[allow(clippy::too_many_arguments)]
pub fn digest(
    settings: &Settings,
    to: &str,
    intent: &Intent,
    cadence: Cadence,
    offers: &[Offer],
    results_url: &str,
    withdraw_url: &str,
    unsubscribe_url: &str,
) -> MailContent {
    let s = crate::mail::texts(&intent.language).intent;
    let mut list = String::new();
    for o in offers {
        let place = o.area.place.clone().unwrap_or_else(|| o.area.regions.join(", "));
        list.push_str(&format!("* {} — {} {} — {}\n", o.title, format_amount(o.price.amount), o.price.currency, place));
        if let Some(u) = &o.source.url {
            list.push_str(&format!("  {u}\n"));
        }
        list.push_str(&why_line(intent, o));
    }
    let closing = cadence_and_withdraw(s, s.cadence_now, &intent.language, cadence, [results_url, withdraw_url]);
    let body = format!("{list}\n{}\n{results_url}\n\n{}\n\n{closing}", s.all_results, s.aggregator);
    let subject = format!("{} ({}): {}", s.digest_subject, offers.len(), short(&intent.statement, 50));
    intent_mail(settings, to, intent, subject, s.digest_intro, &body, unsubscribe_url)
}

/// The digest line under an offer saying why it was sent, in the intent's language
/// ([`crate::matching::explain`]: never the limit).
fn why_line(intent: &Intent, offer: &Offer) -> String {
    let e = crate::matching::explain::explain(intent, offer);
    format!("  {} {}\n", crate::matching::explain::heading(&intent.language), e.line())
}
