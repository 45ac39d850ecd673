//! The account e-mails: a one-time sign-in link, the sign-up confirmation, and "you
//! already have an account" (a sign-in link sent instead of a confirmation, so the
//! sign-up page never tells whether an address has an account).
//!
//! Every message carries the `List-Unsubscribe` header the outbox adds; for account
//! mail it points at `/account/mail`, which only explains that these messages are sent
//! on request (a one-click POST there changes nothing).

use crate::base::Base;
use crate::mail::MailContent;

struct Strings {
    signin_subject: &'static str,
    signin_intro: &'static str,
    exists_subject: &'static str,
    exists_intro: &'static str,
    signin_validity: &'static str,
    signup_subject: &'static str,
    signup_intro: &'static str,
    signup_validity: &'static str,
    ignore: &'static str,
}

fn strings(lang: &str) -> &'static Strings {
    match lang {
        "sk" => &Strings {
            signin_subject: "Váš prihlasovací odkaz",
            signin_intro: "Niekto (dúfame, že vy) požiadal o prihlásenie s touto adresou. Prihlásite sa tlačidlom Prihlásiť sa na tejto stránke:",
            exists_subject: "Už máte účet",
            exists_intro: "Niekto (dúfame, že vy) chcel vytvoriť účet s touto adresou, ale účet už máte. Prihlásite sa tlačidlom Prihlásiť sa na tejto stránke:",
            signin_validity: "Odkaz platí 15 minút a dá sa použiť raz.",
            signup_subject: "Potvrďte vytvorenie účtu",
            signup_intro: "Niekto (dúfame, že vy) požiadal o vytvorenie účtu s touto adresou. Účet vytvoríte tlačidlom Potvrdiť na tejto stránke:",
            signup_validity: "Odkaz platí 72 hodín.",
            ignore: "Ak ste o nič nežiadali, tento e-mail ignorujte; bez odkazu sa nič nestane.",
        },
        "cs" => &Strings {
            signin_subject: "Váš přihlašovací odkaz",
            signin_intro: "Někdo (doufáme, že vy) požádal o přihlášení s touto adresou. Přihlásíte se tlačítkem Přihlásit se na této stránce:",
            exists_subject: "Už máte účet",
            exists_intro: "Někdo (doufáme, že vy) chtěl vytvořit účet s touto adresou, ale účet již máte. Přihlásíte se tlačítkem Přihlásit se na této stránce:",
            signin_validity: "Odkaz platí 15 minut a lze jej použít jednou.",
            signup_subject: "Potvrďte vytvoření účtu",
            signup_intro: "Někdo (doufáme, že vy) požádal o vytvoření účtu s touto adresou. Účet vytvoříte tlačítkem Potvrdit na této stránce:",
            signup_validity: "Odkaz platí 72 hodin.",
            ignore: "Pokud jste o nic nežádali, tento e-mail ignorujte; bez odkazu se nic nestane.",
        },
        _ => &Strings {
            signin_subject: "Your sign-in link",
            signin_intro: "Someone (hopefully you) asked to sign in with this address. Sign in with the Sign in button on this page:",
            exists_subject: "You already have an account",
            exists_intro: "Someone (hopefully you) tried to create an account with this address, but you already have one. Sign in with the Sign in button on this page:",
            signin_validity: "The link works once, within 15 minutes.",
            signup_subject: "Confirm your new account",
            signup_intro: "Someone (hopefully you) asked to create an account with this address. Create it with the Confirm button on this page:",
            signup_validity: "The link works for 72 hours.",
            ignore: "If you did not ask for anything, ignore this e-mail; nothing happens without the link.",
        },
    }
}

fn info_url(base: &Base) -> String {
    format!("{}/account/mail", base.settings().public_url.base)
}

/// A one-time sign-in link; with `exists`, worded as the answer to a sign-up for an
/// address that already has an account.
pub fn signin_link(base: &Base, lang: &str, to: &str, url: &str, exists: bool) -> MailContent {
    let s = strings(lang);
    let (subject, intro) = if exists { (s.exists_subject, s.exists_intro) } else { (s.signin_subject, s.signin_intro) };
    MailContent {
        to: to.to_owned(),
        subject: format!("{subject} – {}", base.settings().holder_name),
        text: format!(
            "{intro}\n{url}\n\n{validity}\n\n{ignore}\n\n-- \n{holder}\n",
            validity = s.signin_validity,
            ignore = s.ignore,
            holder = base.settings().holder_name,
        ),
        unsubscribe_url: info_url(base),
    }
}

/// The sign-up confirmation (double opt-in): the page behind the link has a Confirm
/// button; the GET never creates the account.
pub fn signup_confirmation(base: &Base, lang: &str, to: &str, url: &str) -> MailContent {
    let s = strings(lang);
    MailContent {
        to: to.to_owned(),
        subject: format!("{} – {}", s.signup_subject, base.settings().holder_name),
        text: format!(
            "{intro}\n{url}\n\n{validity}\n\n{ignore}\n\n-- \n{holder}\n",
            intro = s.signup_intro,
            validity = s.signup_validity,
            ignore = s.ignore,
            holder = base.settings().holder_name,
        ),
        unsubscribe_url: info_url(base),
    }
}
