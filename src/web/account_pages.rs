//! Page bodies (maud) of the sign-in, sign-up and password pages; the layout around
//! them is the holder's one ([`super::pages::layout`]). No JavaScript, no inline
//! styles. Templates get only what they may show: never a password, an e-mail address
//! other than the one the person just typed, or a token other than the page's own.

use super::i18n::AccountText as Ui;
use super::pages::{button_form, paragraphs};
pub use super::pages::{message, message_link};
use maud::{html, Markup};

/// `?next=…` for links between the pages (empty for the default).
pub fn next_query(next: &str) -> String {
    if next == super::accounts::DEFAULT_NEXT {
        String::new()
    } else {
        format!("?{}", serde_urlencoded::to_string([("next", next)]).unwrap_or_default())
    }
}

/// What the sign-in page shows.
#[derive(Default)]
pub struct SigninPage<'a> {
    /// CSRF token of the password form.
    pub csrf_password: &'a str,
    /// CSRF token of the link form.
    pub csrf_link: &'a str,
    /// Where to go after signing in (checked).
    pub next: &'a str,
    /// The address typed (re-shown after an error).
    pub email: &'a str,
    /// An error above the password form.
    pub error: Option<&'a str>,
    /// An error above the link form.
    pub link_error: Option<&'a str>,
    /// Set when already signed in: the sign-out form's CSRF token.
    pub signed_in: Option<&'a str>,
}

fn email_field(ui: &Ui, id: &str, value: &str, hint: Option<(&str, &str)>, invalid: bool) -> Markup {
    let error = format!("{id}-error");
    let ids: Vec<&str> = [hint.map(|(hid, _)| hid), invalid.then_some(error.as_str())].into_iter().flatten().collect();
    let described = (!ids.is_empty()).then(|| ids.join(" "));
    html! {
        div.field {
            label for=(id) { (ui.email_label) }
            input id=(id) type="email" name="email" required autocomplete="username" inputmode="email"
                maxlength="254" spellcheck="false" autocapitalize="off" value=(value)
                aria-describedby=[described]
                aria-invalid=[invalid.then_some("true")];
            @if let Some((hid, text)) = hint {
                p.hint id=(hid) { (text) }
            }
        }
    }
}

/// `type="password"` field.
fn password_field(id: &str, name: &str, label: &str, autocomplete: &str, required: bool, hint: Option<&str>) -> Markup {
    let hint_id = format!("{id}-hint");
    html! {
        div.field {
            label for=(id) { (label) }
            input id=(id) type="password" name=(name) autocomplete=(autocomplete) maxlength="200"
                required[required] aria-describedby=[hint.map(|_| hint_id.as_str())];
            @if let Some(h) = hint {
                p.hint id=(hint_id) { (h) }
            }
        }
    }
}

/// The sign-in page body: the password form and the "send me a sign-in link" form.
pub fn signin(ui: &Ui, p: &SigninPage<'_>) -> Markup {
    html! {
        @if let Some(csrf) = p.signed_in {
            p.notice { (ui.signed_in) " " a href=(p.next) { (ui.continue_link) } }
            (button_form("/signout", csrf, ui.signout_button, false))
        }
        p { (ui.signin_intro) }
        form.card method="post" action="/signin" {
            @if let Some(e) = p.error {
                p.error #signin-error role="alert" { (e) }
            }
            input type="hidden" name="csrf" value=(p.csrf_password);
            input type="hidden" name="next" value=(p.next);
            (email_field(ui, "email", p.email, None, false))
            (password_field("password", "password", ui.password_label, "current-password", true, None))
            button type="submit" { (ui.signin_button) }
        }
        h2 { (ui.link_heading) }
        p { (ui.link_intro) }
        form.card method="post" action="/signin/link" {
            @if let Some(e) = p.link_error {
                p.error #link-email-error role="alert" { (e) }
            }
            input type="hidden" name="csrf" value=(p.csrf_link);
            input type="hidden" name="next" value=(p.next);
            (email_field(ui, "link-email", p.email, None, p.link_error.is_some()))
            button type="submit" { (ui.link_button) }
        }
        p { (ui.no_account) " " a href=(format!("/signup{}", next_query(p.next))) { (ui.signup_link) } }
    }
}

/// "Check your e-mail" (the same words whether or not anything was sent).
pub fn sent(ui: &Ui, body: &str) -> Markup {
    html! {
        (message(body, false))
        p.hint { (ui.sent_spam) }
    }
}

/// A page with one POST button for the page's own link token (a GET never acts).
pub fn button_page(intro: &str, action: &str, csrf: &str, button: &str) -> Markup {
    html! {
        p { (intro) }
        (button_form(action, csrf, button, false))
    }
}

/// What the sign-up page shows.
pub struct SignupPage<'a> {
    pub csrf: &'a str,
    pub next: &'a str,
    pub email: &'a str,
    /// Language and version-carrying text of the consent shown.
    pub text_language: &'a str,
    pub text: &'a str,
    /// An error above the form, and which field it is about (`email`, `password`, `accept`).
    pub error: Option<(&'a str, &'a str)>,
}

/// The sign-up page body: e-mail, optional password, the consent text and its checkbox.
pub fn signup(ui: &Ui, p: &SignupPage<'_>) -> Markup {
    let about = |field: &str| p.error.is_some_and(|(_, f)| f == field);
    html! {
        p { (ui.signup_intro) }
        section.consent-text aria-labelledby="consent-heading" lang=(p.text_language) {
            h2 #consent-heading { (ui.consent_text) }
            @for para in paragraphs(p.text) {
                p { (para) }
            }
        }
        form.card method="post" action="/signup" {
            @if let Some((msg, _)) = p.error {
                p.error #email-error role="alert" { (msg) }
            }
            input type="hidden" name="csrf" value=(p.csrf);
            input type="hidden" name="lang" value=(p.text_language);
            input type="hidden" name="next" value=(p.next);
            (email_field(ui, "email", p.email, Some(("email-hint", ui.signup_email_hint)), about("email")))
            (password_field("password", "password", ui.password_optional_label, "new-password", false, Some(ui.password_optional_hint)))
            div.check {
                input #accept type="checkbox" name="accept" value="yes" required
                    aria-describedby=[about("accept").then_some("email-error")]
                    aria-invalid=[about("accept").then_some("true")];
                label for="accept" { (ui.accept_label) }
            }
            button type="submit" { (ui.signup_button) }
        }
        p { (ui.have_account) " " a href=(format!("/signin{}", next_query(p.next))) { (ui.signin_link) } }
    }
}

/// The password page body.
pub fn password(ui: &Ui, csrf: &str, ask_current: bool, error: Option<&str>) -> Markup {
    html! {
        p { (ui.password_intro) }
        form.card method="post" action="/account/password" {
            @if let Some(e) = error {
                p.error role="alert" { (e) }
            }
            input type="hidden" name="csrf" value=(csrf);
            @if ask_current {
                (password_field("current", "current", ui.password_current_label, "current-password", true, None))
            }
            (password_field("password", "password", ui.password_new_label, "new-password", true, Some(ui.password_new_hint)))
            (password_field("repeat", "repeat", ui.password_repeat_label, "new-password", true, None))
            button type="submit" { (ui.password_save) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stylesheet_version_is_the_files_hash() {
        let href = super::super::stylesheet_href();
        assert!(href.starts_with("/assets/style.css?v=") && href.len() == "/assets/style.css?v=".len() + 16);
    }

    #[test]
    fn paragraphs_split_on_blank_lines() {
        assert_eq!(paragraphs("a\nb\n\n\nc\r\n"), vec!["a b".to_owned(), "c".to_owned()]);
    }
}
