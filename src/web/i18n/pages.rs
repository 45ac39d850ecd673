//! The texts of the OAuth authorization page, the signed-in buyer's pages, the demand
//! heat map and the sellers' pages, for sk, cs and en (the texts: `assets/i18n/<lang>.toml`).

/// The texts of the OAuth authorization (consent) page.
#[derive(Debug)]
pub struct AuthorizeText {
    /// Title.
    pub title: &'static str,
    /// Asks.
    pub asks: &'static str,
    /// Identified by.
    pub identified_by: &'static str,
    /// Self named.
    pub self_named: &'static str,
    /// Can.
    pub can: &'static str,
    /// Returns to.
    pub returns_to: &'static str,
    /// Allow.
    pub allow: &'static str,
    /// Deny.
    pub deny: &'static str,
    /// Error title.
    pub error_title: &'static str,
    /// Internal.
    pub internal: &'static str,
    /// Expired.
    pub expired: &'static str,
    /// The Allow form was already answered (it is single-use).
    pub answered: &'static str,
    /// Lead of a refused request shown before anyone signed in (the reason follows).
    pub cannot_answer: &'static str,
    /// Wrong role title.
    pub wrong_role_title: &'static str,
    /// Wrong role buyer.
    pub wrong_role_buyer: &'static str,
    /// Wrong role seller.
    pub wrong_role_seller: &'static str,
    /// Back.
    pub back: &'static str,
    /// Intents.
    pub intents: &'static str,
    /// Offers.
    pub offers: &'static str,
    /// Demand.
    pub demand: &'static str,
}

impl AuthorizeText {
    /// What a scope lets the client do, as a person reads it (empty for an unknown one).
    pub fn scope(&self, s: &str) -> &'static str {
        match s {
            crate::oauth::SCOPE_INTENTS => self.intents,
            crate::oauth::SCOPE_OFFERS => self.offers,
            crate::oauth::SCOPE_DEMAND => self.demand,
            _ => "",
        }
    }
}

// ---------------------------------------------------------------------------
// the signed-in buyer's pages (`/me`, `/renew`)

/// The signed-in buyer's pages' texts (`/me`, renewals).
#[derive(Debug)]
pub struct MineText {
    /// Title.
    pub title: &'static str,
    /// Intro.
    pub intro: &'static str,
    /// None.
    pub none: &'static str,
    /// Offers.
    pub offers: &'static str,
    /// Actions.
    pub actions: &'static str,
    /// Show offers.
    pub show_offers: &'static str,
    /// Renew button.
    pub renew_button: &'static str,
    /// Back.
    pub back: &'static str,
    /// Renew title.
    pub renew_title: &'static str,
    /// Renew intro.
    pub renew_intro: &'static str,
    /// New valid until.
    pub new_valid_until: &'static str,
    /// Renew closed.
    pub renew_closed: &'static str,
    /// Renew refused.
    pub renew_refused: &'static str,
    /// Signout.
    pub signout: &'static str,
}

// ---------------------------------------------------------------------------
// the sellers' demand heat map (`/seller/demand`)

/// The sellers' demand heat map's texts.
#[derive(Debug)]
pub struct DemandText {
    /// Title.
    pub title: &'static str,
    /// Intro.
    pub intro: &'static str,
    /// Rule before k.
    pub rule_before_k: &'static str,
    /// Rule after k.
    pub rule_after_k: &'static str,
    /// As of.
    pub as_of: &'static str,
    /// Sellers only title.
    pub sellers_only_title: &'static str,
    /// Sellers only.
    pub sellers_only: &'static str,
    /// Unknown category.
    pub unknown_category: &'static str,
    /// Category.
    pub category: &'static str,
    /// Buy by.
    pub buy_by: &'static str,
    /// All.
    pub all: &'static str,
    /// Region.
    pub region: &'static str,
    /// Budget.
    pub budget: &'static str,
    /// No budget.
    pub no_budget: &'static str,
    /// Withheld.
    pub withheld: &'static str,
    /// Brackets.
    pub brackets: &'static str,
    /// Svg title.
    pub svg_title: &'static str,
    /// Bands.
    pub bands: [&'static str; 5],
    /// Vehicles.
    pub vehicles: &'static str,
    /// Property.
    pub property: &'static str,
}

// ---------------------------------------------------------------------------
// the sellers' open-intents page (`/seller/intents`)

/// The sellers' open-intents page's texts.
#[derive(Debug)]
pub struct SellerText {
    /// Title.
    pub title: &'static str,
    /// Intro.
    pub intro: &'static str,
    /// Reply.
    pub reply: &'static str,
    /// None.
    pub none: &'static str,
    /// Buyer.
    pub buyer: &'static str,
    /// No profile.
    pub no_profile: &'static str,
    /// Sellers only title.
    pub sellers_only_title: &'static str,
    /// Sellers only.
    pub sellers_only: &'static str,
    /// More.
    pub more: &'static str,
    /// The column of the seller's handle for each request (its `inReplyTo`).
    pub handle: &'static str,
}

/// The delivery cadence form's texts (issue 13 point 2: the results page and the page
/// after confirming). The cadences' own names are [`crate::records::Cadence::label`],
/// shared with the e-mails.
#[derive(Debug)]
pub struct CadenceText {
    /// The form's legend (a question).
    pub legend: &'static str,
    /// The sentence before the current cadence ("E-mails come: …").
    pub current: &'static str,
    /// What pause means for the matches found meanwhile.
    pub pause_hint: &'static str,
    /// The Save button.
    pub save: &'static str,
    /// The notice after saving (before the cadence chosen).
    pub saved: &'static str,
    /// 400: the `cadence` field is missing or not one of the four values; names the field.
    pub invalid: &'static str,
    /// Link back to the page with the form.
    pub back: &'static str,
}
