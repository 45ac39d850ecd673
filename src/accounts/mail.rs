//! The account e-mails: a one-time sign-in link, the sign-up confirmation, and "you
//! already have an account" (a sign-in link sent instead of a confirmation, so the
//! sign-up page never tells whether an address has an account).
//!
//! Their `List-Unsubscribe` points at `/account/mail`, which only explains that these
//! messages are sent on request.

use crate::base::Base;
use crate::mail::MailContent;

/// An account e-mail to `to`: `subject` and the holder's name, then `intro`, the link
/// `url`, how long it works (`validity`), what to do when nobody asked, the signature.
fn account_mail(base: &Base, lang: &str, to: &str, url: &str, texts: [&str; 3]) -> MailContent {
    let [subject, intro, validity] = texts;
    let (ignore, holder) = (crate::mail::texts(lang).account.ignore, &base.settings().holder_name);
    MailContent {
        to: to.to_owned(),
        subject: format!("{subject} – {holder}"),
        text: format!("{intro}\n{url}\n\n{validity}\n\n{ignore}\n\n-- \n{holder}\n"),
        unsubscribe_url: format!("{}/account/mail", base.settings().public_url.base),
    }
}

/// A one-time sign-in link; with `exists`, worded as the answer to a sign-up for an
/// address that already has an account.
pub fn signin_link(base: &Base, lang: &str, to: &str, url: &str, exists: bool) -> MailContent {
    let s = crate::mail::texts(lang).account;
    let (subject, intro) = if exists { (s.exists_subject, s.exists_intro) } else { (s.signin_subject, s.signin_intro) };
    account_mail(base, lang, to, url, [subject, intro, s.signin_validity])
}

/// The sign-up confirmation (double opt-in): the page behind the link has a Confirm
/// button; the GET never creates the account.
pub fn signup_confirmation(base: &Base, lang: &str, to: &str, url: &str) -> MailContent {
    let s = crate::mail::texts(lang).account;
    account_mail(base, lang, to, url, [s.signup_subject, s.signup_intro, s.signup_validity])
}
