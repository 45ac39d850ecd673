//! What a statement's words tell: its category and its language.

use crate::text;

/// A word list (folded prefixes for [`classify`], lowercase words for
/// [`detect_language`]): a constant, as splitting a string on every call was most of
/// the cost of classifying a statement.
type Words = &'static [&'static str];

/// Word prefixes of vehicle statements (folded: no diacritics, lowercase).
#[rustfmt::skip]
const VEHICLE: Words = &[
    "auto", "auta", "autom", "car", "cars", "vozidl", "vuz", "voz", "skoda", "octavi", "fabi", "superb",
    "kodiaq", "karoq", "bmw", "audi", "volkswagen", "vw", "passat", "golf", "toyota", "ford", "hyundai", "kia",
    "renault", "peugeot", "opel", "mercedes", "volvo", "dacia", "seat", "mazda", "nissan", "honda", "suzuki",
    "citroen", "fiat", "tesla", "combi", "kombi", "sedan", "suv", "diesel", "nafta", "tdi", "motorka",
    "motocykel", "dodavk", "van", "pickup",
];

/// Word prefixes of property statements (folded).
#[rustfmt::skip]
const PROPERTY: Words = &[
    "byt", "bytu", "flat", "apartment", "apartman", "dom", "domu", "dum", "house", "pozemok", "pozemek",
    "land", "izbovy", "izb", "garsonk", "garson", "nehnutel", "nemovit", "chata", "chalupa", "kancelar",
    "office", "1+kk", "2+kk", "3+kk", "4+kk", "2+1", "3+1", "4+1", "rodinny", "property", "real",
];

/// Common English words of a statement.
#[rustfmt::skip]
const EN: Words = &[
    "the", "a", "for", "with", "up", "to", "looking", "want", "used", "buy", "and", "in", "or", "of",
];

/// Common Czech words of a statement.
#[rustfmt::skip]
const CS: Words = &[
    "hledám", "koupím", "poptávám", "nebo", "jsem", "chci", "ojetý", "ojeté", "ojetou", "který", "kterou",
    "až", "nejlépe", "kč", "korun", "auto", "byt",
];

/// Common Slovak words of a statement.
#[rustfmt::skip]
const SK: Words = &[
    "hľadám", "kúpim", "alebo", "som", "chcem", "ktorý", "ktorú", "najlepšie", "rokov", "eur", "izbový",
];

/// Guesses the category of a statement from its words (used when criteria has none).
pub fn classify(statement: &str) -> Option<&'static str> {
    let folded = text::fold(statement);
    let toks: Vec<&str> =
        folded.split(|c: char| !(c.is_alphanumeric() || c == '+')).filter(|t| !t.is_empty()).collect();
    let hit = |keys: &[&str]| toks.iter().filter(|t| keys.iter().any(|k| t.starts_with(k))).count();
    let (v, p) = (hit(VEHICLE), hit(PROPERTY));
    match (v, p) {
        (0, 0) => None,
        (v, p) if v >= p => Some("vehicles"),
        _ => Some("property"),
    }
}

/// Detects the statement's language among sk, cs and en; `fallback` when unsure.
pub fn detect_language(statement: &str, fallback: &str) -> String {
    let lower = statement.to_lowercase();
    if lower.chars().any(|c| matches!(c, 'ř' | 'ů' | 'ě')) {
        return "cs".into();
    }
    if lower.chars().any(|c| matches!(c, 'ľ' | 'ĺ' | 'ŕ' | 'ô' | 'ä')) {
        return "sk".into();
    }
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphabetic()).filter(|w| !w.is_empty()).collect();
    let count = |keys: &[&str]| words.iter().filter(|w| keys.contains(w)).count();
    let (en, cs, sk) = (count(EN), count(CS), count(SK));
    if en > cs && en > sk {
        "en".into()
    } else if cs > sk {
        "cs".into()
    } else if sk > cs {
        "sk".into()
    } else {
        fallback.into()
    }
}
