//! The e-mails the holder sends a buyer about an intent, one function each: the double
//! opt-in confirmation (PROTOCOL.md §4.3), the confirmation of a cadence change asked
//! for on the results page, and the match digest (§4.5), in the intent's
//! language (sk, cs, en). Account e-mails are in `crate::accounts`.

use crate::config::Settings;
use crate::mail::MailContent;
use crate::protocol::{Intent, Offer};
use crate::records::Cadence;
use crate::text::format_amount;

struct Strings {
    confirm_subject: &'static str,
    confirm_intro: &'static str,
    confirm_action: &'static str,
    ignore: &'static str,
    withdraw: &'static str,
    digest_subject: &'static str,
    digest_intro: &'static str,
    all_results: &'static str,
    aggregator: &'static str,
    cadence_now: &'static str,
    cadence_after_confirm: &'static str,
    cadence_change: &'static str,
    cadence_ask_subject: &'static str,
    cadence_ask: &'static str,
    cadence_ask_action: &'static str,
    cadence_ask_ignore: &'static str,
}

fn strings(lang: &str) -> &'static Strings {
    match lang {
        "sk" => &Strings {
            confirm_subject: "Potvrďte svoj dopyt",
            confirm_intro: "Dostali sme váš súhlas so zverejnením tohto dopytu:",
            confirm_action: "Dopyt aktivujete tlačidlom Potvrdiť na tejto stránke:",
            ignore: "Ak ste o nič nežiadali, tento e-mail ignorujte; bez potvrdenia sa nič nestane.",
            withdraw: "Dopyt kedykoľvek zrušíte tu:",
            digest_subject: "Nové ponuky pre váš dopyt",
            digest_intro: "Našli sme nové ponuky, ktoré zodpovedajú vášmu dopytu:",
            all_results: "Všetky výsledky:",
            aggregator: "Ponuky pochádzajú od trhového agregátora a nemusia byť úplné.",
            cadence_now: "E-maily o tomto dopyte chodia:",
            cadence_after_confirm: "Po potvrdení budú e-maily o tomto dopyte chodiť:",
            cadence_change:
                "Ako často chodia (priebežne, denne, týždenne alebo pozastaviť), zmeníte na stránke výsledkov:",
            cadence_ask_subject: "Potvrďte zmenu e-mailov o dopyte",
            cadence_ask: "Na stránke výsledkov tohto dopytu niekto (asi vy) požiadal, aby e-maily o ňom chodili:",
            cadence_ask_action: "Zmenu potvrdíte tlačidlom na tejto stránke (odkaz platí 2 hodiny):",
            cadence_ask_ignore: "Ak ste to neboli vy, tento e-mail ignorujte; nič sa nezmení.",
        },
        "cs" => &Strings {
            confirm_subject: "Potvrďte svou poptávku",
            confirm_intro: "Obdrželi jsme váš souhlas se zveřejněním této poptávky:",
            confirm_action: "Poptávku aktivujete tlačítkem Potvrdit na této stránce:",
            ignore: "Pokud jste o nic nežádali, tento e-mail ignorujte; bez potvrzení se nic nestane.",
            withdraw: "Poptávku kdykoli zrušíte zde:",
            digest_subject: "Nové nabídky pro vaši poptávku",
            digest_intro: "Našli jsme nové nabídky, které odpovídají vaší poptávce:",
            all_results: "Všechny výsledky:",
            aggregator: "Nabídky pocházejí od tržního agregátoru a nemusí být úplné.",
            cadence_now: "E-maily o této poptávce chodí:",
            cadence_after_confirm: "Po potvrzení budou e-maily o této poptávce chodit:",
            cadence_change: "Jak často chodí (průběžně, denně, týdně nebo pozastavit), změníte na stránce výsledků:",
            cadence_ask_subject: "Potvrďte změnu e-mailů o poptávce",
            cadence_ask: "Na stránce výsledků této poptávky někdo (asi vy) požádal, aby e-maily o ní chodily:",
            cadence_ask_action: "Změnu potvrdíte tlačítkem na této stránce (odkaz platí 2 hodiny):",
            cadence_ask_ignore: "Pokud jste to nebyli vy, tento e-mail ignorujte; nic se nezmění.",
        },
        _ => &Strings {
            confirm_subject: "Confirm your request",
            confirm_intro: "We received your consent to publish this request:",
            confirm_action: "Activate it with the Confirm button on this page:",
            ignore: "If you did not ask for anything, ignore this e-mail; nothing happens without confirmation.",
            withdraw: "Withdraw it at any time here:",
            digest_subject: "New offers for your request",
            digest_intro: "We found new offers that match your request:",
            all_results: "All results:",
            aggregator: "Offers come from a market aggregator and may be incomplete.",
            cadence_now: "E-mails about this request come:",
            cadence_after_confirm: "Once confirmed, e-mails about this request come:",
            cadence_change: "Change how often (as they come, daily, weekly, or pause) on the results page:",
            cadence_ask_subject: "Confirm the change to e-mails about your request",
            cadence_ask: "On this request's results page someone (probably you) asked that e-mails about it come:",
            cadence_ask_action: "Confirm the change with the button on this page (the link works for 2 hours):",
            cadence_ask_ignore: "If that was not you, ignore this e-mail; nothing changes.",
        },
    }
}

fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

/// The cadence paragraph of every e-mail about an intent (issue 13 point 2): the
/// current cadence in words ([`Cadence::label`]) and the results page link where the
/// person changes it (a page with a form: following the link changes nothing).
fn cadence_paragraph(s: &Strings, lead: &str, lang: &str, cadence: Cadence, results_url: &str) -> String {
    format!("{lead} {label}.\n{change}\n{results_url}", label = cadence.label(lang), change = s.cadence_change)
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
/// confirmation page link (which shows a Confirm button; GET never confirms), the
/// cadence the intent will have once active with the results page link to change it
/// (issue 13 point 2), and the withdraw link.
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
    let s = strings(&intent.language);
    let body = format!(
        "{action}\n{confirm_url}\n\n{ignore}\n\n{cadence}\n\n{withdraw}\n{withdraw_url}",
        action = s.confirm_action,
        ignore = s.ignore,
        cadence = cadence_paragraph(s, s.cadence_after_confirm, &intent.language, cadence, results_url),
        withdraw = s.withdraw,
    );
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
    let s = strings(&intent.language);
    let lead = format!("{} {}.", s.cadence_ask, cadence.label(&intent.language));
    let body = format!("{}\n{confirm_url}\n\n{}", s.cadence_ask_action, s.cadence_ask_ignore);
    let subject = format!("{}: {}", s.cadence_ask_subject, short(&intent.statement, 50));
    intent_mail(settings, to, intent, subject, &lead, &body, unsubscribe_url)
}

/// The match digest (PROTOCOL.md §4.5): new offers with price, place and link, the
/// results page, the current cadence with the link to change it (issue 13 point 2) and
/// the withdraw link.
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
    let s = strings(&intent.language);
    let mut list = String::new();
    for o in offers {
        let place = o.area.place.clone().unwrap_or_else(|| o.area.regions.join(", "));
        list.push_str(&format!("* {} — {} {} — {}\n", o.title, format_amount(o.price.amount), o.price.currency, place));
        if let Some(u) = &o.source.url {
            list.push_str(&format!("  {u}\n"));
        }
        list.push_str(&why_line(intent, o));
    }
    let body = format!(
        "{list}\n{all}\n{results_url}\n\n{aggregator}\n\n{cadence}\n\n{withdraw}\n{withdraw_url}",
        all = s.all_results,
        aggregator = s.aggregator,
        cadence = cadence_paragraph(s, s.cadence_now, &intent.language, cadence, results_url),
        withdraw = s.withdraw,
    );
    let subject = format!("{} ({}): {}", s.digest_subject, offers.len(), short(&intent.statement, 50));
    intent_mail(settings, to, intent, subject, s.digest_intro, &body, unsubscribe_url)
}

/// The digest line under an offer saying why it was sent (issue 13 point 3), in the
/// intent's language: `  Why this offer: make Škoda, model Octavia; in your area:
/// Bratislava (Bratislava Region); within your price limit` (see
/// [`crate::matching::explain`]: pass/fail only about the price, never the limit).
fn why_line(intent: &Intent, offer: &Offer) -> String {
    let e = crate::matching::explain::explain(intent, offer);
    format!("  {} {}\n", crate::matching::explain::heading(&intent.language), e.line())
}
