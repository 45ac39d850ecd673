//! Every UI string of the holder's pages, per language (Slovak, Czech, English): one
//! [`Ui`] table per language ([`ui`]), with the texts of the account pages
//! ([`AccountText`]), the OAuth authorization page ([`AuthorizeText`]), the signed-in
//! buyer's pages ([`MineText`]) and the sellers' pages ([`DemandText`],
//! [`SellerText`]) as parts of it; and the one language negotiation of the pages.
//!
//! The texts are data (`assets/i18n/<lang>.toml`): build.rs writes each as a Rust
//! static of these structs, so the compiler checks that every key the code reads is in
//! every language.
//!
//! A page about an intent is in the intent's language ([`page_lang`]); any other page
//! is in the browser's ([`request_lang`]); either falls back to the holder's default,
//! else to English.

use axum::http::{header, HeaderMap};

pub use crate::protocol::consent::LANGUAGES;

/// One of [`LANGUAGES`] equal to `s`, if any (a form's `lang` field).
pub fn language(s: &str) -> Option<&'static str> {
    LANGUAGES.into_iter().find(|l| *l == s)
}

/// The one of [`LANGUAGES`] that is the primary subtag of a BCP 47 tag or language
/// range (`cs-CZ` → `cs`; RFC 4647 §3.4 lookup), if any.
fn known(tag: &str) -> Option<&'static str> {
    let primary = tag.trim().split(['-', '_']).next().unwrap_or_default().trim().to_ascii_lowercase();
    LANGUAGES.into_iter().find(|l| *l == primary)
}

/// The page language for an intent language (a BCP 47 tag) and the holder's default:
/// the tag's primary subtag when it is `sk`, `cs` or `en`, else the default when that
/// is one of them, else `en`.
pub fn page_lang(intent_lang: Option<&str>, default: &str) -> &'static str {
    intent_lang.and_then(known).or_else(|| known(default)).unwrap_or("en")
}

/// Content negotiation of the page language (RFC 9110 §12.5.4): of the
/// `Accept-Language` ranges that name one of [`LANGUAGES`] (by primary subtag), the one
/// with the highest `q` (default 1; the first one on a tie); `*` stands for the
/// holder's default; `q=0` refuses a range, and an item with a malformed `q` is ignored.
/// Without an acceptable range: the holder's default when it is one of [`LANGUAGES`],
/// else `en`.
pub fn negotiate(accept_language: Option<&str>, default: &str) -> &'static str {
    let fallback = known(default).unwrap_or("en");
    let mut best: Option<(f32, &'static str)> = None;
    for item in accept_language.unwrap_or_default().split(',') {
        let mut parts = item.split(';');
        let range = parts.next().unwrap_or_default().trim();
        let mut q = Some(1.0_f32);
        for p in parts {
            let p = p.trim();
            if let Some(v) = p.strip_prefix("q=").or_else(|| p.strip_prefix("Q=")) {
                q = v.trim().parse::<f32>().ok().filter(|q| (0.0..=1.0).contains(q));
            }
        }
        let Some(q) = q.filter(|q| *q > 0.0) else { continue };
        let lang = if range == "*" { Some(fallback) } else { known(range) };
        if let Some(lang) = lang {
            if best.is_none_or(|(b, _)| q > b) {
                best = Some((q, lang));
            }
        }
    }
    best.map_or(fallback, |(_, l)| l)
}

/// The page language of a request: [`negotiate`] over its `Accept-Language` header.
pub fn request_lang(headers: &HeaderMap, default: &str) -> &'static str {
    negotiate(headers.get(header::ACCEPT_LANGUAGE).and_then(|v| v.to_str().ok()), default)
}

/// The language a page's query chooses (`?lang=sk|cs|en`, the home page's switcher):
/// the first `lang` parameter when it is one of [`LANGUAGES`], else none.
pub fn query_lang(query: Option<&str>) -> Option<&'static str> {
    query?.split('&').find_map(|p| p.strip_prefix("lang=")).and_then(language)
}

/// The name of each of [`LANGUAGES`] in that language (the language switcher's links).
pub const LANGUAGE_NAMES: [(&str, &str); 3] = [("sk", "Slovenčina"), ("cs", "Čeština"), ("en", "English")];

// `Ui` and its parts (from `assets/i18n/<lang>.toml`, by build.rs) and
// `pub fn ui(lang: &str) -> &'static Ui` (`sk`, `cs`; anything else is English).
include!(concat!(env!("OUT_DIR"), "/i18n.rs"));

impl Ui {
    /// The name of a status (`statuses` follows [`Status::ALL`](crate::protocol::Status::ALL),
    /// the declaration order, as [`Status::as_str`](crate::protocol::Status::as_str) does).
    pub fn status_name(&self, s: crate::protocol::Status) -> &'static str {
        self.statuses[s as usize]
    }

    /// The name of a category key (the key itself when unknown; `categories` follows
    /// [`crate::protocol::CATEGORIES`]).
    pub fn category_name<'a>(&self, key: &'a str) -> &'a str {
        let i = crate::protocol::CATEGORIES.iter().position(|c| c.key == key);
        i.and_then(|i| self.categories.get(i).copied()).unwrap_or(key)
    }

    /// The name of a country code (the code itself when unknown).
    pub fn country_name<'a>(&self, code: &'a str) -> &'a str {
        match code.to_ascii_uppercase().as_str() {
            "SK" => self.countries[0],
            "CZ" => self.countries[1],
            _ => code,
        }
    }

    /// The label of a criteria key (the key itself when unknown).
    pub fn attribute_label<'a>(&self, key: &'a str) -> &'a str {
        self.attributes.iter().find(|(k, _)| *k == key).map(|(_, v)| *v).unwrap_or(key)
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn each_status_is_named_by_its_own_entry() {
        use crate::protocol::Status;
        let names: Vec<&str> = Status::ALL.iter().map(|s| ui("en").status_name(*s)).collect();
        assert_eq!(names, ["waiting for consent", "waiting for e-mail confirmation", "active", "expired", "withdrawn"]);
        assert_eq!(ui("sk").status_name(Status::Withdrawn), ui("sk").statuses[4]);
    }

    #[test]
    fn the_query_chooses_a_known_language_only() {
        assert_eq!(query_lang(Some("lang=cs")), Some("cs"));
        assert_eq!(query_lang(Some("x=1&lang=en")), Some("en"));
        assert_eq!(query_lang(Some("lang=de")), None);
        assert_eq!(query_lang(Some("lang=")), None);
        assert_eq!(query_lang(Some("language=sk")), None);
        assert_eq!(query_lang(None), None);
    }

    #[test]
    fn language_from_accept_language_then_default() {
        let mut h = HeaderMap::new();
        assert_eq!(request_lang(&h, "sk"), "sk");
        assert_eq!(request_lang(&h, "de"), "en");
        h.insert(header::ACCEPT_LANGUAGE, HeaderValue::from_static("de-DE, cs;q=0.8, en;q=0.5"));
        assert_eq!(request_lang(&h, "sk"), "cs");
        h.insert(header::ACCEPT_LANGUAGE, HeaderValue::from_static("en-GB"));
        assert_eq!(request_lang(&h, "sk"), "en");
        h.insert(header::ACCEPT_LANGUAGE, HeaderValue::from_static("cs;q=0, en;q=0.1"));
        assert_eq!(request_lang(&h, "sk"), "en");
    }

    #[test]
    fn negotiation_follows_q_values() {
        // The highest q wins, whatever the order; the first one on a tie.
        assert_eq!(negotiate(Some("en;q=0.5, cs;q=0.8"), "sk"), "cs");
        assert_eq!(negotiate(Some("cs, en"), "sk"), "cs");
        assert_eq!(negotiate(Some("en-US;q=0.9, sk-SK"), "cs"), "sk");
        // `*` is the holder's default; q=0 refuses; a malformed q is ignored.
        assert_eq!(negotiate(Some("*, en;q=0.5"), "sk"), "sk");
        assert_eq!(negotiate(Some("sk;q=0, de"), "cs"), "cs");
        assert_eq!(negotiate(Some("sk;q=abc, en;q=0.2"), "cs"), "en");
        assert_eq!(negotiate(Some("sk;q=1.5"), "cs"), "cs");
        // Nothing known or nothing sent: the default, else English.
        assert_eq!(negotiate(Some("de, fr;q=0.5"), "cs"), "cs");
        assert_eq!(negotiate(None, "de"), "en");
        assert_eq!(negotiate(Some(""), "en"), "en");
    }

    #[test]
    fn page_language_falls_back_to_the_default() {
        assert_eq!(page_lang(Some("cs"), "sk"), "cs");
        assert_eq!(page_lang(Some("cs-CZ"), "sk"), "cs");
        assert_eq!(page_lang(Some("de"), "sk"), "sk");
        assert_eq!(page_lang(None, "en"), "en");
        assert_eq!(page_lang(Some("de"), "fr"), "en");
    }

    #[test]
    fn every_language_names_every_attribute() {
        for c in crate::protocol::CATEGORIES {
            for (key, _, _) in c.attributes {
                for l in LANGUAGES {
                    assert_ne!(ui(l).attribute_label(key), *key, "{l} has no label for {key}");
                }
            }
        }
    }
}
