//! The page templates (maud): the layout and one function per page body.
//!
//! Templates get only what they may show: the public [`Intent`] view, the page's own URL
//! token and a CSRF token. No JavaScript, no inline styles (the CSP allows only the
//! stylesheet).

use super::i18n::Ui;
use crate::gazetteer::{region_name, AreaObject};
use crate::protocol::{Budget, Delivery, Intent};
use crate::records::Cadence;
use crate::text::format_amount;
use maud::{html, Markup, DOCTYPE};
use serde_json::{Map, Value};

/// The one layout of every page around `body`: the title is `<title> – <holder>` (the
/// holder's name alone on the home page) and the `h1`; `index: false` adds `robots:
/// noindex, nofollow`.
pub fn layout(ui: &Ui, holder_name: &str, title: &str, index: bool, body: Markup) -> Markup {
    let stylesheet = super::stylesheet_href();
    html! {
        (DOCTYPE)
        html lang=(ui.lang) {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="no-referrer";
                @if !index {
                    meta name="robots" content="noindex, nofollow";
                }
                title {
                    @if title == holder_name { (title) } @else { (title) " – " (holder_name) }
                }
                link rel="stylesheet" href=(&stylesheet);
            }
            body {
                a.skip href="#main" { (ui.skip) }
                header.site {
                    a href="/" { (holder_name) }
                }
                main #main {
                    h1 { (title) }
                    (body)
                }
            }
        }
    }
}

/// Home page body: what the holder is, the links for people, the MCP endpoint URL for
/// assistants (as text to copy), and the language switcher.
pub fn home(ui: &Ui, mcp_url: &str) -> Markup {
    html! {
        p { (ui.home_intro) }
        section aria-labelledby="people-heading" {
            h2 #people-heading { (ui.home_people_heading) }
            p { (ui.home_people) }
            ul.links {
                li { a href="/signin" { (ui.account.signin_title) } }
                li { a href="/signup" { (ui.account.signup_title) } }
                li { a href="/me" { (ui.mine.title) } }
            }
        }
        section aria-labelledby="assistants-heading" {
            h2 #assistants-heading { (ui.home_assistants_heading) }
            p { (ui.home_mcp) }
            p { code.url { (mcp_url) } }
        }
        (language_switcher(ui))
    }
}

/// The language switcher: one `/?lang=xx` link per page language, named in its own
/// language.
fn language_switcher(ui: &Ui) -> Markup {
    html! {
        nav.languages aria-label=(ui.language_nav) {
            ul {
                @for (code, name) in super::i18n::LANGUAGE_NAMES {
                    li {
                        a href={ "/?lang=" (code) } lang=(code) hreflang=(code)
                            aria-current=[(code == ui.lang).then_some("page")] { (name) }
                    }
                }
            }
        }
    }
}

/// A wide data table in its own scroll box, so that a phone-wide page never scrolls
/// sideways (WCAG 2.1 SC 1.4.10), reachable with Tab so keyboard users can scroll it:
/// `caption` (id `caption_id`), one column header per `columns`, and `rows` (`tr`s).
pub fn data_table(
    caption_id: &str,
    caption: Markup,
    columns: impl IntoIterator<Item = impl maud::Render>,
    rows: Markup,
) -> Markup {
    html! {
        div.table-scroll role="region" aria-labelledby=(caption_id) tabindex="0" {
            table.criteria {
                caption id=(caption_id) { (caption) }
                thead { tr { @for c in columns { th scope="col" { (c) } } } }
                tbody { (rows) }
            }
        }
    }
}

/// A one-paragraph message page body (done pages, refusals, errors).
pub fn message(text: &str, alert: bool) -> Markup {
    html! { p.notice role=[alert.then_some("alert")] { (text) } }
}

/// A POST form (`form.card`) to `action` with the CSRF token `csrf` and one submit
/// button named `label` (`button.danger` when `danger`): the pages' one-button forms.
pub fn button_form(action: &str, csrf: &str, label: &str, danger: bool) -> Markup {
    html! {
        form.card method="post" action=(action) {
            input type="hidden" name="csrf" value=(csrf);
            @if danger { button.danger type="submit" { (label) } } @else { button type="submit" { (label) } }
        }
    }
}

/// A message with one link under it (to `href`, named `link`).
pub fn message_link(text: &str, alert: bool, href: &str, link: &str) -> Markup {
    html! {
        (message(text, alert))
        p { a href=(href) { (link) } }
    }
}

/// The way forward from a link that has ended or was used: how to start again, with
/// links to the home page and to the signed-in person's requests.
pub fn way_forward(ui: &Ui) -> Markup {
    html! {
        section.forward aria-labelledby="forward-heading" {
            h2 #forward-heading { (ui.links.forward_heading) }
            p { (ui.links.start_again) }
            ul.links {
                li { a href="/" { (ui.links.start_again_link) } }
                li { a href="/me" { (ui.mine.title) } }
            }
        }
    }
}

/// The page of a cadence e-mail's link: the cadence asked for, and the button that
/// makes the change (POST to `action` with the e-mail's proof as its CSRF token).
pub fn cadence_confirm(ui: &Ui, intent: &Intent, label: &str, action: &str, proof: &str) -> Markup {
    html! {
        p { (ui.links.cadence_confirm_intro) " " strong { (label) } }
        (statement(ui, intent))
        (button_form(action, proof, ui.links.cadence_confirm_button, false))
    }
}

/// A message followed by the statement of the intent it is about.
pub fn message_with_statement(ui: &Ui, text: &str, intent: &Intent) -> Markup {
    html! {
        (message(text, false))
        (statement(ui, intent))
    }
}

/// The buyer's statement, quoted (it may be in another language than the page).
pub fn statement(ui: &Ui, intent: &Intent) -> Markup {
    html! {
        figure.statement {
            figcaption { (ui.statement) }
            blockquote lang=(intent.language) { p { (intent.statement) } }
        }
    }
}

/// Everything public about an intent: statement, category, area, the visible budget
/// (only with `budget`: never on a page behind a link, which may have leaked), dates,
/// criteria table, and — when set — the sentence that a hidden limit exists.
pub fn intent_details(ui: &Ui, intent: &Intent, budget: bool) -> Markup {
    let criteria = ordered_criteria(&intent.category, &intent.criteria);
    html! {
        (statement(ui, intent))
        dl.facts {
            dt { (ui.category) }
            dd { (ui.category_name(&intent.category)) }
            dt { (ui.area) }
            dd { (area_text(ui, &intent.area)) }
            @if let Some(b) = intent.budget.as_ref().filter(|_| budget) {
                dt { (ui.budget) }
                dd { (budget_text(ui, b)) }
            }
            @if let Some(d) = &intent.buy_by {
                dt { (ui.buy_by) }
                dd { (date(ui, d)) }
            }
            dt { (ui.valid_until) }
            dd { (date(ui, &intent.valid_until)) }
        }
        @if !criteria.is_empty() {
            table.criteria {
                caption { (ui.criteria) }
                thead { tr { th scope="col" { (ui.criterion) } th scope="col" { (ui.value) } } }
                tbody {
                    @for (k, v) in &criteria {
                        tr { th scope="row" { (ui.attribute_label(k)) } td { (criterion_value(Some(ui), v)) } }
                    }
                }
            }
        }
        @if intent.has_hidden_limit {
            p.limit { (ui.hidden_limit) }
        }
    }
}

/// Statement and status (results and withdraw pages).
pub fn intent_status(ui: &Ui, intent: &Intent) -> Markup {
    html! {
        (statement(ui, intent))
        dl.facts {
            dt { (ui.status) }
            dd { (ui.status_name(intent.status)) }
            dt { (ui.valid_until) }
            dd { (date(ui, &intent.valid_until)) }
        }
    }
}

/// What the consent form needs besides the intent.
pub struct ConsentForm<'a> {
    /// The page's own consent token (form action).
    pub token: &'a str,
    /// CSRF token for purpose `consent`.
    pub csrf: &'a str,
    /// Language of the consent text shown (sent back as `lang`).
    pub text_language: &'a str,
    /// The consent text (paragraphs separated by blank lines).
    pub text: &'a str,
    /// An error to show above the form, and whether it is about the e-mail field
    /// (otherwise the checkbox).
    pub error: Option<(&'a str, bool)>,
}

/// The consent page body (PROTOCOL.md §4.2).
pub fn consent(ui: &Ui, intent: &Intent, f: &ConsentForm<'_>) -> Markup {
    let email_error = f.error.is_some_and(|(_, email)| email);
    let accept_error = f.error.is_some_and(|(_, email)| !email);
    html! {
        p { (ui.consent_intro) }
        (intent_details(ui, intent, false))
        section.consent-text aria-labelledby="consent-heading" lang=(f.text_language) {
            h2 #consent-heading { (ui.consent_text) }
            @for para in paragraphs(f.text) {
                p { (para) }
            }
        }
        form.card method="post" action=(format!("/consent/{}", f.token)) {
            @if let Some((msg, _)) = f.error {
                p.error #form-error role="alert" { (msg) }
            }
            input type="hidden" name="csrf" value=(f.csrf);
            input type="hidden" name="lang" value=(f.text_language);
            div.field {
                label for="email" { (ui.email_label) }
                input #email type="email" name="email" required autocomplete="email" inputmode="email"
                    maxlength="254" spellcheck="false" autocapitalize="off"
                    aria-describedby=(if email_error { "email-hint form-error" } else { "email-hint" })
                    aria-invalid=[email_error.then_some("true")];
                p.hint #email-hint { (ui.email_hint) }
            }
            div.check {
                input #accept type="checkbox" name="accept" value="yes" required
                    aria-describedby=[accept_error.then_some("form-error")]
                    aria-invalid=[accept_error.then_some("true")];
                label for="accept" { (ui.accept_label) }
            }
            button type="submit" { (ui.consent_button) }
        }
        p.hint { (ui.consent_ignore) }
    }
}

/// The confirmation page body with its Confirm form (a GET shows it, only the POST
/// confirms).
pub fn confirm(ui: &Ui, intent: &Intent, token: &str, csrf: &str) -> Markup {
    html! {
        p { (ui.confirm_intro) }
        (intent_details(ui, intent, false))
        (button_form(&format!("/confirm/{token}"), csrf, ui.confirm_button, false))
    }
}

/// The withdraw page body with its Withdraw form (also the GET of the unsubscribe link).
pub fn withdraw(ui: &Ui, intent: &Intent, token: &str, csrf: &str) -> Markup {
    html! {
        p { (ui.withdraw_intro) }
        (intent_status(ui, intent))
        (button_form(&format!("/withdraw/{token}"), csrf, ui.withdraw_button, true))
    }
}

/// The delivered offers (newest first, as given) with the aggregator's note: the
/// results page and the signed-in buyer's intent page.
pub fn offer_list(ui: &Ui, deliveries: &[Delivery]) -> Markup {
    html! {
        h2 { (ui.delivered_offers) " (" (deliveries.len()) ")" }
        @if deliveries.is_empty() {
            p { (ui.no_offers) }
        } @else {
            ol.offers {
                @for d in deliveries {
                    @let o = &d.offer;
                    li {
                        h3 {
                            @match o.source.url.as_deref().filter(|u| is_web_url(u)) {
                                Some(u) => a href=(u) rel="noopener noreferrer nofollow" { (o.title) },
                                None => (o.title),
                            }
                        }
                        dl.meta {
                            dt { (ui.price) }
                            dd.price { (format_amount(o.price.amount)) "\u{a0}" (o.price.currency) }
                            dt { (ui.place) }
                            dd { (place_text(ui, &o.area)) }
                            dt { (ui.seller) }
                            dd { (o.seller.name) }
                            dt { (ui.delivered) }
                            dd { (date(ui, &d.delivered_at)) }
                        }
                        (why(ui, d))
                    }
                }
            }
        }
        p.hint { (ui.aggregator) }
    }
}

/// The delivery cadence form: the current cadence, then a POST form with one radio
/// button per [`Cadence`] (field `cadence`) and Save; after a save, a status notice.
pub struct CadenceForm<'a> {
    /// Where the form posts (`/results/{token}/cadence`, `/confirm/{token}/cadence`).
    pub action: &'a str,
    /// CSRF token for purpose `cadence`, bound to the page's URL token.
    pub csrf: &'a str,
    /// The intent's cadence now.
    pub current: Cadence,
    /// Whether the page follows a save (shows the notice).
    pub saved: bool,
}

/// The delivery cadence section of the results page and the page after confirming:
/// see [`CadenceForm`].
pub fn cadence_form(ui: &Ui, f: &CadenceForm<'_>) -> Markup {
    let t = ui.cadence;
    html! {
        section #cadence aria-labelledby="cadence-legend" {
            @if f.saved {
                p.notice #cadence-current role="status" { (t.saved) " " strong { (f.current.label(ui.lang)) } "." }
            } @else {
                p #cadence-current { (t.current) " " strong { (f.current.label(ui.lang)) } }
            }
            form.card method="post" action=(f.action) {
                input type="hidden" name="csrf" value=(f.csrf);
                fieldset.cadence aria-describedby="cadence-hint" {
                    legend #cadence-legend { (t.legend) }
                    @for c in Cadence::ALL {
                        @let id = format!("cadence-{}", c.key());
                        div.check {
                            input #(id) type="radio" name="cadence" value=(c.key()) checked[c == f.current];
                            label for=(id) { (c.label(ui.lang)) }
                        }
                    }
                    p.hint #cadence-hint { (t.pause_hint) }
                }
                button type="submit" { (t.save) }
            }
        }
    }
}

/// The code holder's results page body: the intent, the delivery cadence form (while
/// the intent has not ended), its deliveries (newest first) and the withdraw link.
pub fn results(ui: &Ui, intent: &Intent, deliveries: &[Delivery], token: &str, cadence: &CadenceForm<'_>) -> Markup {
    html! {
        (intent_status(ui, intent))
        @if !intent.status.is_final() {
            (cadence_form(ui, cadence))
        }
        (offer_list(ui, deliveries))
        @if !intent.status.is_final() {
            p { a href=(format!("/withdraw/{token}")) { (ui.withdraw_link) } }
        }
    }
}

/// Only http(s) URLs become links (a feed could carry `javascript:` or `data:`).
fn is_web_url(u: &str) -> bool {
    let l = u.trim_start().to_ascii_lowercase();
    l.starts_with("https://") || l.starts_with("http://")
}

/// Why a delivered offer was sent: the phrases of its `extensions.reasons` (written by
/// `matching::explain::annotate`) in one paragraph; nothing without words.
fn why(ui: &Ui, d: &Delivery) -> Markup {
    let reasons = d.extensions.get("reasonCodes").and_then(|_| d.extensions["reasons"].as_array());
    let words: Vec<&str> = reasons.map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    html! {
        @if !words.is_empty() {
            p.why {
                strong { (crate::matching::explain::heading(ui.lang)) }
                " " (words.join("; "))
            }
        }
    }
}

/// Paragraphs of a plain text: blocks separated by blank lines, lines joined.
pub fn paragraphs(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    lines.split(|l| l.is_empty()).filter(|block| !block.is_empty()).map(|block| block.join(" ")).collect()
}

/// An area as words: regions by name, the whole country by name, a town first.
pub fn area_text(ui: &Ui, area: &AreaObject) -> String {
    let regions: Vec<&str> = area.regions.iter().map(|r| region_name(r, ui.lang).unwrap_or(r.as_str())).collect();
    let scope = if regions.is_empty() { ui.country_name(&area.country).to_owned() } else { regions.join(", ") };
    match &area.place {
        Some(p) => format!("{p} ({scope})"),
        None => scope,
    }
}

/// An offer's place: its town, else its region, else its country.
fn place_text(ui: &Ui, area: &AreaObject) -> String {
    area.place.clone().unwrap_or_else(|| area_text(ui, area))
}

/// The visible budget: `8 000 – 12 000 EUR`, `up to 12 000 EUR`, `from 8 000 EUR`.
pub fn budget_text(ui: &Ui, b: &Budget) -> String {
    let cur = &b.currency;
    match (b.min, b.max) {
        (Some(min), Some(max)) => format!("{}\u{a0}– {}\u{a0}{cur}", format_amount(min), format_amount(max)),
        (None, Some(max)) => format!("{} {}\u{a0}{cur}", ui.up_to, format_amount(max)),
        (Some(min), None) => format!("{} {}\u{a0}{cur}", ui.from, format_amount(min)),
        (None, None) => cur.clone(),
    }
}

/// An intent's criteria but `category`, in the category's attribute order (make before
/// model), unknown keys last.
pub fn ordered_criteria<'a>(category: &str, criteria: &'a Map<String, Value>) -> Vec<(&'a String, &'a Value)> {
    let order = crate::protocol::category(category).map(|c| c.attributes).unwrap_or(&[]);
    let mut items: Vec<(&String, &Value)> = criteria.iter().filter(|(k, _)| k.as_str() != "category").collect();
    items.sort_by_key(|(k, _)| order.iter().position(|(a, _, _)| a == k).unwrap_or(usize::MAX));
    items
}

/// A criteria value: strings as given, arrays joined, ranges as `a – b`, `≥ a`, `≤ b`;
/// numbers as [`number`] writes them in `ui`'s language, or as JSON writes them with
/// `None` (the sellers' list).
pub fn criterion_value(ui: Option<&Ui>, v: &Value) -> String {
    let num = |n: &serde_json::Number| ui.map_or_else(|| n.to_string(), |ui| number(ui, n));
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => num(n),
        Value::Bool(b) => b.to_string(),
        Value::Null => String::new(),
        Value::Array(a) => a.iter().map(|x| criterion_value(ui, x)).collect::<Vec<_>>().join(", "),
        Value::Object(o) => {
            let side = |k: &str| o.get(k).and_then(Value::as_number).map(&num);
            match (side("min"), side("max")) {
                (Some(a), Some(b)) => format!("{a}\u{a0}– {b}"),
                (Some(a), None) => format!("≥ {a}"),
                (None, Some(b)) => format!("≤ {b}"),
                (None, None) => Value::Object(o.clone()).to_string(),
            }
        }
    }
}

/// A number: years and small counts plain, large whole numbers grouped (`150 000`),
/// decimals with a comma in Slovak and Czech.
fn number(ui: &Ui, n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return if i.abs() >= 10_000 { format_amount(i as f64) } else { i.to_string() };
    }
    let f = n.as_f64().unwrap_or_default();
    if f.fract() == 0.0 && f.abs() < 1e15 {
        return if f.abs() >= 10_000.0 { format_amount(f) } else { format!("{f:.0}") };
    }
    let s = f.to_string();
    if ui.lang == "en" {
        s
    } else {
        s.replace('.', ",")
    }
}

/// A date or time as a date: `1. 12. 2026` in Slovak and Czech, `2026-12-01` in English
/// (in a `<time>` element with the machine-readable value).
pub fn date(ui: &Ui, s: &str) -> Markup {
    let d = crate::clock::parse_rfc3339(s).map(|t| t.date()).or_else(|_| crate::clock::parse_date(s));
    let shown = match d {
        Ok(d) if ui.lang == "en" => crate::clock::date_string(d),
        Ok(d) => format!("{}.\u{a0}{}.\u{a0}{}", d.day(), u8::from(d.month()), d.year()),
        Err(_) => s.to_owned(),
    };
    html! { time datetime=(s) { (shown) } }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::i18n::ui;
    use serde_json::json;

    #[test]
    fn paragraphs_split_on_blank_lines() {
        assert_eq!(paragraphs("a\nb\n\n\nc\r\n"), vec!["a b".to_owned(), "c".to_owned()]);
        assert!(paragraphs("").is_empty());
    }

    #[test]
    fn values_and_budgets_read_naturally() {
        let sk = ui("sk");
        assert_eq!(criterion_value(Some(sk), &json!({"min": 2016})), "≥ 2016");
        assert_eq!(criterion_value(Some(sk), &json!({"max": 150000})), "≤ 150\u{a0}000");
        assert_eq!(criterion_value(Some(sk), &json!(["diesel", "hybrid"])), "diesel, hybrid");
        assert_eq!(criterion_value(Some(sk), &json!(1.5)), "1,5");
        let b = Budget { max: Some(12000.0), min: None, currency: "EUR".into() };
        assert_eq!(budget_text(sk, &b), "do 12\u{a0}000\u{a0}EUR");
        assert_eq!(
            date(sk, "2026-12-01T10:00:00Z").into_string(),
            "<time datetime=\"2026-12-01T10:00:00Z\">1.\u{a0}12.\u{a0}2026</time>"
        );
    }

    #[test]
    fn areas_use_region_and_country_names() {
        let cs = ui("cs");
        let a = AreaObject { country: "CZ".into(), regions: vec!["CZ-64".into()], place: Some("Brno".into()) };
        assert_eq!(area_text(cs, &a), "Brno (Jihomoravský kraj)");
        let whole = AreaObject { country: "SK".into(), regions: vec![], place: None };
        assert_eq!(area_text(ui("en"), &whole), "Slovakia");
    }

    #[test]
    fn only_web_urls_are_links() {
        assert!(is_web_url("https://dealer.example/1"));
        assert!(!is_web_url("javascript:alert(1)"));
        assert!(!is_web_url("data:text/html,x"));
    }
}
