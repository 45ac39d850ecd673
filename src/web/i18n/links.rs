//! The texts of the pages behind links that may have leaked or ended (consent,
//! confirmation and results links): the way forward from an expired or used link, and
//! the cadence change confirmed by e-mail; for sk, cs and en (the texts:
//! `assets/i18n/<lang>.toml`, section `[links]`).

/// Texts of used, expired and leaked links.
#[derive(Debug)]
pub struct LinkText {
    /// Heading of the way forward from an ended or used link.
    pub forward_heading: &'static str,
    /// How to start again (a new consent link comes from the assistant).
    pub start_again: &'static str,
    /// Link text to the home page, which says how to start.
    pub start_again_link: &'static str,
    /// A used confirmation link: where the person manages the request now.
    pub confirm_used: &'static str,
    /// Results page notice: the change waits for the person's confirmation by e-mail.
    pub cadence_mailed: &'static str,
    /// The cadence e-mail link's page: title.
    pub cadence_confirm_title: &'static str,
    /// The cadence e-mail link's page: before the cadence asked for.
    pub cadence_confirm_intro: &'static str,
    /// The cadence e-mail link's page: the button.
    pub cadence_confirm_button: &'static str,
    /// The cadence e-mail link is forged or older than two hours.
    pub cadence_link_expired: &'static str,
}
