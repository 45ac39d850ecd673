//! Match explanations in words: why a delivered offer was sent, in the intent's language
//! (`sk`, `cs`, anything else English) — the criteria it meets (`make Škoda, model
//! Octavia, fuel diesel`), its area, "within your price limit" and whether its text
//! matches the statement's words.
//!
//! **Privacy.** The price phrase is pass/fail only and depends only on whether the
//! intent has a ceiling at all (a visible `budget.max` or [`Intent::has_hidden_limit`]),
//! never on the limit's value nor on the distance between price and limit: an offer
//! 1 EUR under the limit and one 5000 EUR under get the same words. Nothing here
//! receives the hidden limit's value. A delivered offer passed the price rule when it
//! was delivered (PROTOCOL.md §6), and the words say so without re-checking it against
//! the limit as it is now (a re-check would tell the limit's later value).
//!
//! The words are written when shown, from the intent as it is now and the offer: the
//! criteria listed are those of the intent's current criteria that the offer meets
//! ([`super::constraint_holds`]).

use super::{constraint_holds, offer_terms, statement_analysis, term_hit};
use crate::gazetteer::{self, region_name, AreaObject};
use crate::protocol::{Delivery, Intent, Offer, CATEGORIES};
use crate::text::format_amount;
use serde_json::{Map, Value};

// `Words` (from `assets/i18n/explain/<lang>.toml`, by build.rs) and
// `pub fn words_of(lang: &str) -> &'static Words` (`sk`, `cs`; anything else is English).
include!(concat!(env!("OUT_DIR"), "/explain.rs"));

/// The words of a language tag: `sk`, `cs` (also `cz`), else English
/// ([`gazetteer::language`]).
fn words(lang: &str) -> &'static Words {
    words_of(["en", "sk", "cs"][gazetteer::language(lang)])
}

/// The heading before the reasons in `lang`: `Why this offer:`, `Prečo táto ponuka:`,
/// `Proč tato nabídka:`.
pub fn heading(lang: &str) -> &'static str {
    words(lang).heading
}

/// Why one offer was delivered, in words of one language. See the module docs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explanation {
    /// The criteria met, one phrase each, in the categories' attribute order: `make
    /// Škoda`, `year 2018`, `mileage 120 000 km`.
    pub criteria: Vec<String>,
    /// The offer's area: `in your area: Bratislava (Bratislava Region)`.
    pub area: String,
    /// `within your price limit` when the intent has a price ceiling (visible or
    /// hidden); `None` without one.
    pub price: Option<String>,
    /// `matches the words of your request` when the statement has terms and the offer
    /// contains at least one of them.
    pub text: Option<String>,
}

impl Explanation {
    /// The reasons as phrases, in order: the criteria joined by `, ` (when any), the
    /// area, the price phrase and the text phrase (when present). This is
    /// `extensions.reasons` of a delivery.
    pub fn phrases(&self) -> Vec<String> {
        let mut out = Vec::with_capacity(4);
        if !self.criteria.is_empty() {
            out.push(self.criteria.join(", "));
        }
        out.push(self.area.clone());
        out.extend(self.price.clone());
        out.extend(self.text.clone());
        out
    }

    /// One line: the phrases joined by `; `, e.g. `make Škoda, model Octavia; in your
    /// area: Bratislava (Bratislava Region); within your price limit`.
    pub fn line(&self) -> String {
        self.phrases().join("; ")
    }
}

/// Explains why `offer` was delivered to `intent`, in `intent.language`. Never fails: an
/// unknown criteria key is shown by its key, an unknown region by its code.
pub fn explain(intent: &Intent, offer: &Offer) -> Explanation {
    let w = words(&intent.language);
    // In the categories' attribute order (make, model, …, year, mileage), unknown keys last.
    let rank =
        |k: &str| CATEGORIES.iter().flat_map(|c| c.attributes).position(|(a, _, _)| *a == k).unwrap_or(usize::MAX);
    let mut keys: Vec<(&String, &Value)> = intent.criteria.iter().filter(|(k, _)| k.as_str() != "category").collect();
    keys.sort_by_key(|(k, _)| rank(k));
    let criteria = keys
        .into_iter()
        .filter_map(|(k, want)| {
            let have = offer.attributes.get(k)?;
            constraint_holds(want, Some(have)).then(|| criterion(w, k, want, have))
        })
        .collect();
    let place = area_words(w, &intent.language, &offer.area);
    let area = if gazetteer::contains(&intent.area, &offer.area) {
        format!("{} {place}", w.in_area)
    } else {
        format!("{} {place}", w.place)
    };
    let ceiling = intent.has_hidden_limit || intent.budget.as_ref().is_some_and(|b| b.max.is_some());
    let price = ceiling.then(|| w.price.to_owned());
    let analysis = statement_analysis(&intent.statement);
    let text = (!analysis.terms.is_empty() && {
        let have = offer_terms(offer);
        analysis.terms.iter().any(|t| term_hit(t, &have))
    })
    .then(|| w.text.to_owned());
    Explanation { criteria, area, price, text }
}

/// Writes the explanations into each delivery's `extensions`: `reasons` becomes the
/// phrases in words ([`Explanation::phrases`]; the seed's `[string]`), and the machine
/// codes stored at delivery (`category`, `criteria`, `area`, `price`, `text`;
/// [`super::Hit::reasons`]) move to `reasonCodes`. `score` stays. Deliveries already
/// annotated keep their codes.
pub fn annotate(intent: &Intent, deliveries: &mut [Delivery]) {
    for d in deliveries {
        let phrases = explain(intent, &d.offer).phrases();
        if !d.extensions.is_object() {
            d.extensions = Value::Object(Map::new());
        }
        let Value::Object(ext) = &mut d.extensions else { continue };
        if !ext.contains_key("reasonCodes") {
            let codes = ext.remove("reasons").unwrap_or_else(|| Value::Array(Vec::new()));
            ext.insert("reasonCodes".into(), codes);
        }
        ext.insert("reasons".into(), Value::Array(phrases.into_iter().map(Value::String).collect()));
    }
}

/// One criterion met: its label and the value that meets it. A string or a list of
/// options shows the person's own spelling of the option met (`make Škoda` for an
/// offer's `SKODA`); a number or range shows the offer's value (`year 2018`,
/// `mileage 120 000 km`).
fn criterion(w: &Words, key: &str, want: &Value, have: &Value) -> String {
    let label = w.labels.iter().find(|(k, _)| *k == key).map_or(key, |(_, l)| *l);
    let value = match want {
        Value::String(s) => s.clone(),
        Value::Array(options) => options
            .iter()
            .find(|o| constraint_holds(o, Some(have)))
            .map_or_else(|| scalar(key, have), |o| scalar(key, o)),
        _ => scalar(key, have),
    };
    format!("{label} {value}")
}

/// A value in words: strings as they are, numbers with their unit (`120 000 km`,
/// `110 kW`, `75 m²`); years, counts and floors without grouping.
fn scalar(key: &str, v: &Value) -> String {
    let n = match v {
        Value::String(s) => return s.clone(),
        Value::Number(n) => n.as_f64().unwrap_or_default(),
        other => return other.to_string(),
    };
    let plain = || if n.fract() == 0.0 { format!("{}", n as i64) } else { n.to_string() };
    match key {
        "mileageKm" => format!("{}\u{a0}km", format_amount(n)),
        "powerKw" => format!("{}\u{a0}kW", plain()),
        "floorAreaM2" | "landAreaM2" => format!("{}\u{a0}m²", format_amount(n)),
        _ => plain(),
    }
}

/// An offer's area in words: `Bratislava (Bratislava Region)`, `Bratislava Region`,
/// `Slovakia`.
fn area_words(w: &Words, lang: &str, area: &AreaObject) -> String {
    let regions: Vec<&str> = area.regions.iter().map(|r| region_name(r, lang).unwrap_or(r.as_str())).collect();
    let scope = if regions.is_empty() {
        match area.country.to_ascii_uppercase().as_str() {
            "SK" => w.countries[0].to_owned(),
            "CZ" => w.countries[1].to_owned(),
            other => other.to_owned(),
        }
    } else {
        regions.join(", ")
    };
    match &area.place {
        Some(p) if !regions.contains(&p.as_str()) => format!("{p} ({scope})"),
        _ => scope,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Budget, Status, Visibility};
    use serde_json::json;

    fn intent(lang: &str, criteria: Value, area: &str, budget: Option<Budget>, hidden: bool) -> Intent {
        Intent {
            id: "int_1".into(),
            status: Status::Active,
            statement: "Hľadám Škodu Octaviu combi, diesel".into(),
            category: "vehicles".into(),
            criteria: criteria.as_object().cloned().unwrap_or_default(),
            area: gazetteer::resolve(area).unwrap(),
            budget,
            has_hidden_limit: hidden,
            buy_by: None,
            valid_until: "2027-01-01T00:00:00Z".into(),
            visibility: Visibility::Private,
            language: lang.into(),
            created_at: "2026-12-01T00:00:00Z".into(),
            updated_at: "2026-12-01T00:00:00Z".into(),
            extensions: json!({}),
        }
    }

    fn crit() -> Value {
        json!({"make": "Škoda", "model": "Octavia", "fuel": ["diesel", "hybrid"], "year": {"min": 2016}, "mileageKm": {"max": 200000}})
    }

    fn octavia(price: f64) -> Offer {
        crate::matching::tests::offer(
            "Škoda Octavia Combi 2.0 TDI",
            price,
            "EUR",
            "Bratislava",
            json!({"make": "SKODA", "model": "octavia", "fuel": "Diesel", "year": 2018, "mileageKm": 120000}),
        )
    }

    #[test]
    fn english_words() {
        let i = intent("en", crit(), "SK-BL", None, true);
        let e = explain(&i, &octavia(11_000.0));
        assert_eq!(
            e.phrases(),
            [
                "make Škoda, model Octavia, fuel diesel, year 2018, mileage 120\u{a0}000\u{a0}km",
                "in your area: Bratislava (Bratislava Region)",
                "within your price limit",
                "matches the words of your request",
            ]
        );
        assert_eq!(heading("en"), "Why this offer:");
        assert!(e.line().starts_with("make Škoda, model Octavia"), "{}", e.line());
    }

    #[test]
    fn slovak_words() {
        let i = intent("sk", crit(), "SK", None, true);
        let e = explain(&i, &octavia(11_000.0));
        assert_eq!(e.criteria[0], "značka Škoda");
        assert_eq!(e.criteria[3], "rok výroby 2018");
        assert_eq!(e.criteria[4], "najazdené 120\u{a0}000\u{a0}km");
        assert_eq!(e.area, "vo vašej oblasti: Bratislava (Bratislavský kraj)");
        assert_eq!(e.price.as_deref(), Some("v rámci vášho cenového limitu"));
        assert_eq!(e.text.as_deref(), Some("zodpovedá slovám vášho dopytu"));
        assert_eq!(heading("sk"), "Prečo táto ponuka:");
    }

    #[test]
    fn czech_words() {
        let budget = Budget { min: None, max: Some(15_000.0), currency: "EUR".into() };
        let i = intent("cs", crit(), "SK-BL", Some(budget), false);
        let e = explain(&i, &octavia(14_999.0));
        assert_eq!(e.criteria[4], "najeto 120\u{a0}000\u{a0}km");
        assert_eq!(e.area, "ve vaší oblasti: Bratislava (Bratislavský kraj)");
        assert_eq!(e.price.as_deref(), Some("v rámci vašeho cenového limitu"));
        assert_eq!(e.text.as_deref(), Some("odpovídá slovům vaší poptávky"));
        assert_eq!(heading("cs-CZ"), "Proč tato nabídka:");
    }

    #[test]
    fn the_price_phrase_is_pass_fail_and_never_a_number() {
        let i = intent("en", crit(), "SK", None, true);
        let near = explain(&i, &octavia(11_999.0));
        let far = explain(&i, &octavia(1.0));
        assert_eq!(near, far, "1 EUR under or far under: the same words");
        for p in near.phrases().iter().skip(1) {
            assert!(!p.chars().any(|c| c.is_ascii_digit()), "no number outside the criteria: {p}");
        }
        // A visible budget.max is a limit too; budget.min alone or nothing is none.
        let visible = Budget { min: None, max: Some(20_000.0), currency: "EUR".into() };
        assert!(explain(&intent("en", crit(), "SK", Some(visible), false), &octavia(1.0)).price.is_some());
        let min_only = Budget { min: Some(5_000.0), max: None, currency: "EUR".into() };
        assert_eq!(explain(&intent("en", crit(), "SK", Some(min_only), false), &octavia(9_000.0)).price, None);
        assert_eq!(explain(&intent("en", json!({}), "SK", None, false), &octavia(9_000.0)).price, None);
    }

    #[test]
    fn criteria_and_area_follow_the_intent_as_it_is() {
        // Only the criteria met are listed; no criteria, no criteria phrase.
        let i = intent("en", json!({"make": "Škoda", "year": {"min": 2020}}), "SK", None, false);
        let e = explain(&i, &octavia(1.0));
        assert_eq!(e.criteria, ["make Škoda"]);
        let none = explain(&intent("en", json!({}), "SK", None, false), &octavia(1.0));
        assert!(none.criteria.is_empty());
        assert_eq!(none.phrases()[0], "in your area: Bratislava (Bratislava Region)");
        // An offer outside the intent's (changed) area is only located.
        let cz = explain(&intent("en", json!({}), "CZ", None, false), &octavia(1.0));
        assert_eq!(cz.area, "located in Bratislava (Bratislava Region)");
        // A region-wide offer: the region's name; a country-wide one: the country's.
        let mut o = octavia(1.0);
        o.area = gazetteer::resolve("SK-KI").unwrap();
        assert_eq!(explain(&i, &o).area, "in your area: Košice Region");
        o.area = gazetteer::resolve("SK").unwrap();
        assert_eq!(explain(&intent("sk", json!({}), "SK", None, false), &o).area, "vo vašej oblasti: Slovensko");
        // Words that do not occur in the offer: no text phrase.
        let mut other = octavia(1.0);
        other.title = "Auto".into();
        other.attributes = Map::new();
        assert_eq!(explain(&intent("en", json!({}), "SK", None, false), &other).text, None);
    }

    #[test]
    fn annotate_moves_the_codes_and_writes_words() {
        let i = intent("en", crit(), "SK", None, true);
        let mut ds = vec![Delivery {
            offer: octavia(1.0),
            delivered_at: "2026-12-01T00:00:00.000000Z".into(),
            extensions: json!({"score": 1.0, "reasons": ["category", "criteria", "area", "price", "text"]}),
        }];
        annotate(&i, &mut ds);
        let ext = &ds[0].extensions;
        assert_eq!(ext["reasonCodes"], json!(["category", "criteria", "area", "price", "text"]));
        assert_eq!(ext["score"], json!(1.0));
        assert_eq!(ext["reasons"][2], json!("within your price limit"));
        // Annotating twice keeps the codes.
        annotate(&i, &mut ds);
        assert_eq!(ds[0].extensions["reasonCodes"][0], json!("category"));
    }
}
