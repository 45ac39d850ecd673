//! The matching rules of PROTOCOL.md §6, in their simple form: one intent against one
//! offer. This is the oracle a scaled engine must agree with.
//!
//! An offer matches an active intent when: same category; every criteria constraint is
//! met by the offer's attributes (a missing attribute fails); the offer's region lies in
//! the intent's area; the price converted to the holder's currency is ≤ the ceiling (the
//! hidden limit when set, else budget.max, else none); the offer is valid; and the
//! statement's relevance passes the minimum-should-match ratio, and the offer contains
//! the statement's model designations (`3` of "Model 3", `3+kk`; see [`analyse`]) unless
//! that ratio is 0.

pub mod engine;
pub mod explain;

use crate::gazetteer;
use crate::protocol::{Budget, Offer};
use crate::text;
use serde_json::{Map, Value};
use std::collections::HashSet;

/// What matching needs to know about an intent (the hidden limit already opened).
#[derive(Debug, Clone)]
pub struct IntentView<'a> {
    /// The intent's category.
    pub category: &'a str,
    /// Its criteria without `category`.
    pub criteria: &'a Map<String, Value>,
    /// Its area.
    pub area: &'a gazetteer::AreaObject,
    /// Its visible budget.
    pub budget: Option<&'a Budget>,
    /// The opened hidden limit, in the budget's currency (or the holder default).
    pub hidden_limit: Option<f64>,
    /// The statement.
    pub statement: &'a str,
}

/// Holder parameters of matching (`[matching]` and `[currency]` settings).
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Share of statement terms the offer text must contain, 0..=1.
    pub min_should_match: f64,
    /// The holder's default currency.
    pub default_currency: String,
    /// Value of one unit of a currency in the default currency.
    pub rates: std::collections::BTreeMap<String, f64>,
}

/// A successful match: score in 0..=1 and what matched. Serialized as a delivery's
/// extensions (`{"score", "reasons"}`, PROTOCOL.md §2), which buyers see: a field added
/// here is stored with every delivery and shown. Stored in the delivery log in 4 bytes
/// ([`Hit::to_bytes`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// Share of statement terms found (1.0 when the statement has no terms left),
    /// rounded to 3 decimals.
    pub score: f64,
    /// Whether the intent has criteria (all of which held).
    pub criteria: bool,
    /// Whether the statement has terms (enough of which were found).
    pub text: bool,
}

/// The first byte of [`Hit::to_bytes`] (a JSON text never starts with it).
const HIT_BYTES_TAG: u8 = 1;

impl Hit {
    /// The hit of a match at `score` (rounded to 3 decimals), with or without `criteria`
    /// and statement `terms`.
    pub fn new(score: f64, criteria: bool, terms: bool) -> Self {
        Hit { score: (score * 1000.0).round() / 1000.0, criteria, text: terms }
    }

    /// What matched, in this order: `category`, `criteria` (when the intent has
    /// criteria), `area`, `price`, `text` (when the statement has terms).
    pub fn reasons(&self) -> Vec<&'static str> {
        let mut reasons = vec!["category"];
        if self.criteria {
            reasons.push("criteria");
        }
        reasons.extend(["area", "price"]);
        if self.text {
            reasons.push("text");
        }
        reasons
    }

    /// The stored form of the hit: `01`, the score in thousandths (16 bits, big-endian),
    /// then the flags (bit 0 `criteria`, bit 1 `text`).
    pub fn to_bytes(&self) -> [u8; 4] {
        let milli = (self.score.clamp(0.0, 1.0) * 1000.0).round() as u16;
        let [hi, lo] = milli.to_be_bytes();
        [HIT_BYTES_TAG, hi, lo, u8::from(self.criteria) | u8::from(self.text) << 1]
    }

    /// The hit of its stored form ([`Hit::to_bytes`]); `None` for other bytes.
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        match *b {
            [HIT_BYTES_TAG, hi, lo, flags] if flags < 4 => {
                let score = f64::from(u16::from_be_bytes([hi, lo])) / 1000.0;
                Some(Hit { score, criteria: flags & 1 != 0, text: flags & 2 != 0 })
            }
            _ => None,
        }
    }
}

impl serde::Serialize for Hit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut st = s.serialize_struct("Hit", 2)?;
        st.serialize_field("score", &self.score)?;
        st.serialize_field("reasons", &self.reasons())?;
        st.end()
    }
}

/// Words that never count as statement terms: sk/cs/en function words and buying words.
#[rustfmt::skip]
const STOP: &[&str] = &[
    // en
    "a", "an", "the", "and", "or", "for", "with", "without", "up", "to", "of", "in", "on", "at", "by", "from", "my",
    "i", "we", "want", "wanted", "looking", "buy", "buying", "need", "used", "new", "around", "about", "max", "maximum",
    "min", "minimum", "within", "month", "months", "year", "years", "week", "weeks", "eur", "czk", "euro", "euros",
    "price", "budget", "good", "condition", "preferably", "ideally", "please", "some", "any", "region", "area", "near",
    "city", "less", "than", "more", "under", "over", "km", "is", "be", "it", "that", "this", "like", "would", "should",
    "can", "me", "us", "our",
    // sk
    "hladam", "kupim", "chcem", "potrebujem", "do", "od", "na", "v", "vo", "s", "so", "z", "zo", "k", "ku", "pre",
    "alebo", "aj", "a", "som", "je", "sa", "si", "mesiac", "mesiace", "mesiacov", "rok", "roky", "rokov", "cena",
    "cenou", "max", "najlepsie", "idealne", "pouzite", "pouzity", "pouzitu", "kraj", "kraji", "okolie", "okoli",
    "tyzdne", "eur", "stav", "stave", "dobrom", "dobry", "ktory", "ktora", "ktore", "mi", "by", "bol", "bolo",
    // cs
    "hledam", "koupim", "chci", "potrebuji", "poptavam", "nebo", "i", "jsem", "ze", "pro", "mesicu", "mesice", "let",
    "roku", "nejlepe", "idealne", "ojety", "ojete", "ojetou", "ojeteho", "kraji", "okoli", "tydnu", "kc", "korun",
    "stavu", "dobrem", "dobry", "ktery", "ktera", "ktere", "mi", "by", "byl", "bylo", "az", "cca", "tis",
];

/// Synonym folding of domain words so that statements and ads in sk/cs/en meet.
pub fn canonical(term: &str) -> &str {
    match term {
        "nafta" | "naftovy" | "naftovou" | "dieselovy" | "tdi" | "crdi" | "hdi" | "dci" | "cdti" => "diesel",
        "benzin" | "benzinovy" | "benzinovou" | "petrol" | "gasoline" | "tsi" | "tfsi" => "petrol",
        "kombi" | "combi" | "estate" | "wagon" | "variant" | "touring" | "avant" => "combi",
        "elektro" | "elektromobil" | "ev" => "electric",
        "hybrid" | "hybridni" | "hybridny" => "hybrid",
        "automat" | "automaticka" | "automaticka-prevodovka" | "dsg" => "automatic",
        "byt" | "bytu" | "flat" | "apartment" | "apartman" => "byt",
        "dom" | "dum" | "domu" | "house" => "dom",
        other => other,
    }
}

/// What a token of [`analyse`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TermKind {
    /// A word without digits (`octavia`, `byt`), synonyms folded by [`canonical`].
    Word,
    /// A model designation or disposition with digits (`3`, `308`, `x5`, `a4`, `i30`,
    /// `3+kk`, `2+1`, `2.0`): matched exactly, never by stem.
    Designation,
    /// A designation that is also a calendar year (4 digits, 1950–2039) right after a
    /// word (`Peugeot 2008`): ranks in search, not required in matching.
    YearLike,
    /// A number that is a quantity (`150000 km`, `do 12000`, `12 000 EUR`, `150kW`,
    /// `rok 2015`): indexed in offer text, never a statement term.
    Quantity,
    /// A word and the designation right after it, joined by `_` (`model_3`, `golf_7`,
    /// `byt_3+kk`): the phrase of a make or model with its designation.
    Phrase,
}

/// One token of [`analyse`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// The folded token.
    pub text: String,
    /// What it is.
    pub kind: TermKind,
}

/// The longest mixed letter-and-digit token that is a designation (`x5`, `i30`, `3+kk`,
/// `308gt`); longer ones (`ab12cd34`, a listing reference) are ordinary words.
pub const MAX_DESIGNATION_CHARS: usize = 5;

/// Units after a number that make it a quantity (folded).
const UNITS: &[&str] = &[
    "km", "tis", "tisic", "tisice", "eur", "euro", "eura", "czk", "kc", "korun", "m2", "m", "kw", "hp", "ps", "k",
    "let", "rokov", "roku", "rok", "years", "year", "mesicu", "mesiacov", "months", "ks", "kusu", "mil", "milion",
];
/// Words before a number that make it a quantity (folded).
#[rustfmt::skip]
const QUANTITY_WORDS: &[&str] = &[
    "do", "od", "max", "maximum", "min", "minimum", "az", "pod", "nad", "under", "over", "below", "above", "up", "to",
    "around", "cca", "about", "rv", "r", "rok", "roku", "vyroby", "year", "from", "until", "najeto", "najazdene",
    "mileage", "price", "cena", "budget", "less", "than", "more", "after", "before", "po", "pred", "za",
];

/// The one text analysis of search and matching: folds `input` ([`text::fold`]), splits
/// it into alphanumeric tokens — keeping `3+kk`, `2+1` (a `+` between alphanumerics with
/// a digit) and decimals `2.0` (a `.` or `,` between digits) whole — and classifies each
/// token ([`TermKind`]); after each designation that follows a word it adds their
/// [`TermKind::Phrase`].
pub fn analyse(input: &str) -> Vec<Term> {
    let folded = text::fold(input);
    // Tokens as slices of `folded` (one with a decimal comma joined is owned, its `,` a `.`).
    let mut raw: Vec<std::borrow::Cow<'_, str>> = Vec::new();
    fn token(t: &str, comma: bool) -> std::borrow::Cow<'_, str> {
        if comma {
            t.replace(',', ".").into()
        } else {
            t.into()
        }
    }
    let (mut start, mut comma) = (None, false);
    let mut chars = folded.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c.is_alphanumeric() {
            start.get_or_insert(i);
            continue;
        }
        let next = chars.peek().map(|&(_, n)| n);
        let cur = start.map_or("", |s| &folded[s..i]);
        let joins = !cur.is_empty()
            && match c {
                '+' => {
                    next.is_some_and(char::is_alphanumeric)
                        && (cur.chars().any(|p| p.is_ascii_digit()) || next.is_some_and(|n| n.is_ascii_digit()))
                }
                '.' | ',' => {
                    cur.ends_with(|p: char| p.is_ascii_digit())
                        && next.is_some_and(|n| n.is_ascii_digit())
                        && !cur.contains(['.', ','])
                }
                _ => false,
            };
        if joins {
            comma |= c == ',';
        } else if let Some(s) = start.take() {
            raw.push(token(&folded[s..i], std::mem::take(&mut comma)));
        }
    }
    if let Some(s) = start {
        raw.push(token(&folded[s..], comma));
    }
    let numeric = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '.');
    let group = |t: &str| t.len() == 3 && t.chars().all(|c| c.is_ascii_digit());
    let mut out = Vec::with_capacity(raw.len() + 4);
    for (i, t) in raw.iter().enumerate() {
        if !t.chars().any(|c| c.is_ascii_digit()) {
            out.push(Term { text: canonical(t).to_owned(), kind: TermKind::Word });
            continue;
        }
        let prev = i.checked_sub(1).map(|j| &*raw[j]);
        let next = raw.get(i + 1).map(|n| &**n);
        let prev_word = prev.is_some_and(|p| {
            !p.chars().any(|c| c.is_ascii_digit()) && !QUANTITY_WORDS.contains(&p) && !STOP.contains(&p)
        });
        let kind = if numeric(t) {
            let digits = t.chars().filter(char::is_ascii_digit).count();
            let year = t.len() == 4 && t.parse::<u32>().is_ok_and(|y| (1950..=2039).contains(&y));
            if next.is_some_and(|n| UNITS.contains(&n) || group(n))
                || prev.is_some_and(|p| QUANTITY_WORDS.contains(&p) || (numeric(p) && group(t)))
                || digits >= 5
            {
                TermKind::Quantity
            } else if year {
                if prev_word {
                    TermKind::YearLike
                } else {
                    TermKind::Quantity
                }
            } else {
                TermKind::Designation
            }
        } else {
            let lead = t.chars().take_while(|c| c.is_ascii_digit() || *c == '.').count();
            if lead > 0 && UNITS.contains(&&t[lead..]) {
                TermKind::Quantity
            } else if t.chars().count() > MAX_DESIGNATION_CHARS {
                // A reference code, VIN part or other identifier, not a model name:
                // an ordinary term, never required.
                out.push(Term { text: t.to_string(), kind: TermKind::Word });
                continue;
            } else {
                TermKind::Designation
            }
        };
        out.push(Term { text: t.to_string(), kind });
        if matches!(kind, TermKind::Designation | TermKind::YearLike) && prev_word {
            if let Some(p) = prev.filter(|p| p.chars().count() >= 2) {
                out.push(Term { text: format!("{}_{t}", canonical(p)), kind: TermKind::Phrase });
            }
        }
    }
    out
}

/// The analysis of a statement ([`analyse`]): the terms that count in matching, the
/// designations an offer must contain, and the phrases that rank in search.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatementTerms {
    /// Words (without stop words, place names and tokens under 2 characters) and
    /// designations, distinct, in order: what [`check`]'s ratio counts.
    pub terms: Vec<String>,
    /// The designations (not year-like): an offer must contain each exactly.
    pub required: Vec<String>,
    /// The word + designation phrases (`model_3`): rank in search only.
    pub phrases: Vec<String>,
}

/// The statement's terms, required designations and phrases (see [`StatementTerms`]);
/// quantities (`do 12 000 EUR`, `150000 km`) are not terms.
pub fn statement_analysis(statement: &str) -> StatementTerms {
    let places = gazetteer::place_tokens();
    let mut seen = HashSet::new();
    let mut out = StatementTerms::default();
    for t in analyse(statement) {
        match t.kind {
            TermKind::Word => {
                if t.text.chars().count() < 2 || STOP.contains(&t.text.as_str()) || places.contains(&t.text) {
                    continue;
                }
            }
            TermKind::Designation => {
                if !out.required.contains(&t.text) {
                    out.required.push(t.text.clone());
                }
            }
            TermKind::YearLike => {}
            TermKind::Quantity => continue,
            TermKind::Phrase => {
                if !out.phrases.contains(&t.text) {
                    out.phrases.push(t.text);
                }
                continue;
            }
        }
        if seen.insert(t.text.clone()) {
            out.terms.push(t.text);
        }
    }
    out
}

#[cfg(any(test, feature = "testkit"))]
/// The statement's terms: [`StatementTerms::terms`] of [`statement_analysis`] (tests,
/// benches).
pub fn statement_terms(statement: &str) -> Vec<String> {
    statement_analysis(statement).terms
}

/// The terms of a piece of offer text: every token of [`analyse`].
pub fn text_terms(text: &str) -> impl Iterator<Item = String> {
    analyse(text).into_iter().map(|t| t.text)
}

/// The searchable terms of an offer: title, description and attribute values.
pub fn offer_terms(offer: &Offer) -> HashSet<String> {
    let mut s: HashSet<String> = text_terms(&offer.title).collect();
    s.extend(text_terms(&offer.description));
    for v in offer.attributes.values() {
        if let Value::String(x) = v {
            s.extend(text_terms(x));
        }
    }
    s
}

/// The stem under which `term` also matches longer inflected forms: all but the last
/// 2 characters, at least 4 (`"octaviu"` → `"octav"`); `None` for terms under 5
/// characters and for designations and phrases (a digit, `+` or `_`), which match only
/// exactly.
pub fn stem(term: &str) -> Option<String> {
    if term.chars().any(|c| c.is_ascii_digit() || c == '_' || c == '+') {
        return None;
    }
    let n = term.chars().count();
    (n >= 5).then(|| term.chars().take(n.saturating_sub(2).max(4)).collect())
}

/// Whether `term` occurs in `terms`, allowing Slovak/Czech inflection: a shared prefix of
/// at least 4 characters covering all but the last 2 characters of the shorter word.
pub fn term_hit(term: &str, terms: &HashSet<String>) -> bool {
    if terms.contains(term) {
        return true;
    }
    let Some(stem) = stem(term) else { return false };
    let n = term.chars().count();
    terms.iter().any(|t| t.starts_with(&stem) && t.chars().count() <= n + 3)
}

fn scalar_eq(want: &Value, have: &Value) -> bool {
    match (want, have) {
        (Value::String(a), Value::String(b)) => text::fold(a).trim() == text::fold(b).trim(),
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::String(a), Value::Number(b)) | (Value::Number(b), Value::String(a)) => {
            a.trim().parse::<f64>().ok() == b.as_f64()
        }
        _ => false,
    }
}

/// Whether one criteria constraint holds for an attribute value (PROTOCOL.md §2
/// criteria): string equal after folding, number equal, array = any of, `{min, max}`
/// inclusive. A missing attribute fails.
pub fn constraint_holds(want: &Value, have: Option<&Value>) -> bool {
    let Some(have) = have else { return false };
    match want {
        Value::Array(options) => options.iter().any(|o| scalar_eq(o, have)),
        Value::Object(range) => {
            let Some(x) = have.as_f64().or_else(|| have.as_str().and_then(|s| s.trim().parse().ok())) else {
                return false;
            };
            range.get("min").and_then(Value::as_f64).is_none_or(|lo| x >= lo)
                && range.get("max").and_then(Value::as_f64).is_none_or(|hi| x <= hi)
        }
        scalar => scalar_eq(scalar, have),
    }
}

/// The price ceiling in the default currency: the hidden limit when set, else
/// budget.max; `None` = no ceiling.
pub fn ceiling(intent: &IntentView<'_>, p: &Params) -> Option<f64> {
    let currency = intent.budget.map_or(p.default_currency.as_str(), |b| b.currency.as_str());
    let amount = intent.hidden_limit.or_else(|| intent.budget.and_then(|b| b.max))?;
    // An unknown currency cannot be compared: treat the ceiling as unmet (0).
    Some(p.rates.get(currency).map(|r| amount * r).unwrap_or(0.0))
}

/// Checks one offer against one intent (PROTOCOL.md §6). `offer_valid` says whether the
/// offer is current and its seller enabled.
pub fn check(intent: &IntentView<'_>, offer: &Offer, offer_valid: bool, p: &Params) -> Option<Hit> {
    if !offer_valid || offer.category != intent.category {
        return None;
    }
    for (k, want) in intent.criteria {
        if !constraint_holds(want, offer.attributes.get(k)) {
            return None;
        }
    }
    if !gazetteer::contains(intent.area, &offer.area) {
        return None;
    }
    if let Some(ceiling) = ceiling(intent, p) {
        let price = p.rates.get(&offer.price.currency).map(|r| offer.price.amount * r)?;
        // A small tolerance absorbs floating-point conversion noise.
        if price > ceiling * (1.0 + 1e-9) {
            return None;
        }
    }
    let StatementTerms { terms, required, .. } = statement_analysis(intent.statement);
    let score = if terms.is_empty() {
        1.0
    } else {
        let have = offer_terms(offer);
        // A model designation of the statement (`3` of "Model 3") must be in the offer,
        // unless the holder switched the text rule off (ratio 0).
        if p.min_should_match > 1e-9 && !required.iter().all(|t| have.contains(t)) {
            return None;
        }
        let found = terms.iter().filter(|t| term_hit(t, &have)).count();
        found as f64 / terms.len() as f64
    };
    if score + 1e-9 < p.min_should_match {
        return None;
    }
    Some(Hit::new(score, !intent.criteria.is_empty(), !terms.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gazetteer::AreaObject;
    use crate::protocol::{Money, OfferSource, SellerPublic};
    use serde_json::json;

    /// An offer of seller `sel_1` in `category` at `area`, published 2026-11-30 (the
    /// matching tests' offer).
    pub(super) fn offer_in(
        category: &str,
        title: &str,
        price: f64,
        cur: &str,
        area: AreaObject,
        attrs: Value,
    ) -> Offer {
        Offer {
            id: "off_1".into(),
            source: OfferSource { kind: "catalogue".into(), seller_id: "sel_1".into(), url: None },
            in_reply_to: None,
            title: title.into(),
            description: String::new(),
            category: category.into(),
            attributes: attrs.as_object().cloned().unwrap_or_default(),
            price: Money { amount: price, currency: cur.into() },
            area,
            seller: SellerPublic { id: "sel_1".into(), name: "S".into(), url: None },
            published_at: "2026-11-30T00:00:00Z".into(),
            valid_until: None,
            extensions: json!({}),
        }
    }

    /// A vehicle [`offer_in`] at `region` (a place or region name).
    pub(super) fn offer(title: &str, price: f64, cur: &str, region: &str, attrs: Value) -> Offer {
        offer_in("vehicles", title, price, cur, gazetteer::resolve(region).unwrap(), attrs)
    }

    fn params(min_should_match: f64) -> Params {
        let rates = [("EUR".to_owned(), 1.0), ("CZK".to_owned(), 0.04)].into_iter().collect();
        Params { min_should_match, default_currency: "EUR".into(), rates }
    }

    #[test]
    fn hidden_limit_beats_budget_and_converts() {
        let crit = json!({"make": "Škoda"}).as_object().cloned().unwrap();
        let area = gazetteer::resolve("CZ").unwrap();
        let budget = Budget { max: Some(20000.0), min: None, currency: "EUR".into() };
        let p = params(0.5);
        let iv = IntentView {
            category: "vehicles",
            criteria: &crit,
            area: &area,
            budget: Some(&budget),
            hidden_limit: Some(12000.0),
            statement: "skoda octavia",
        };
        let cheap = offer("Škoda Octavia 2.0 TDI", 250_000.0, "CZK", "Brno", json!({"make": "SKODA"}));
        let dear = offer("Škoda Octavia 2.0 TDI", 350_000.0, "CZK", "Brno", json!({"make": "skoda"}));
        assert!(check(&iv, &cheap, true, &p).is_some());
        assert!(check(&iv, &dear, true, &p).is_none(), "14 000 EUR is above the hidden 12 000");
        assert!(check(&iv, &cheap, false, &p).is_none());
        let nomake = offer("Škoda Octavia", 1000.0, "EUR", "Brno", json!({}));
        assert!(check(&iv, &nomake, true, &p).is_none(), "missing attribute fails");
        let sk = offer("Škoda Octavia", 1000.0, "EUR", "Bratislava", json!({"make": "Škoda"}));
        assert!(check(&iv, &sk, true, &p).is_none(), "outside the area");
    }

    #[test]
    fn designations_are_kept_and_quantities_are_not_terms() {
        let t = statement_analysis("Hľadám Teslu Model 3 do 40 000 EUR, max 150000 km");
        assert_eq!(t.terms, ["teslu", "model", "3"], "{t:?}");
        assert_eq!(t.required, ["3"]);
        assert_eq!(t.phrases, ["model_3"]);
        let t = statement_analysis("byt 3+kk Brno, 2+1 nebo BMW X5 a Peugeot 308, 12 000 EUR");
        assert_eq!(t.required, ["3+kk", "2+1", "x5", "308"], "{t:?}");
        assert!(t.phrases.contains(&"byt_3+kk".to_owned()) && t.phrases.contains(&"bmw_x5".to_owned()));
        assert!(!t.terms.iter().any(|x| x == "12" || x == "000"), "{t:?}");
        // A year right after a model ranks but is not required; after "od" it is a quantity.
        let t = statement_analysis("Peugeot 2008 od 2019, 150kW");
        assert_eq!(t.terms, ["peugeot", "2008"], "{t:?}");
        assert!(t.required.is_empty());
        // Offer text and statements share the analysis: decimals stay whole.
        let have: Vec<String> = text_terms("Tesla Model 3, 2.0 TDI").collect();
        assert_eq!(have, ["tesla", "model", "3", "model_3", "2.0", "diesel"]);
        assert_eq!(stem("model_3"), None);
        assert_eq!(stem("xdrive20"), None);
        // A long code with digits (a reference, a tag) is a word: counted, never required.
        let t = statement_analysis("Hledám Škoda Octavia combi k7q2xw9p");
        assert!(t.required.is_empty(), "{t:?}");
        assert!(t.terms.contains(&"k7q2xw9p".to_owned()), "{t:?}");
    }

    #[test]
    fn model_designation_is_required_when_the_text_rule_is_on() {
        let crit = Map::new();
        let area = gazetteer::resolve("CZ").unwrap();
        let iv = IntentView {
            category: "vehicles",
            criteria: &crit,
            area: &area,
            budget: None,
            hidden_limit: None,
            statement: "tesla model 3",
        };
        let s = offer("Tesla Model S P85", 1000.0, "EUR", "Brno", json!({}));
        let three = offer("Tesla Model 3 Long Range", 1000.0, "EUR", "Brno", json!({}));
        let p = params(0.5);
        assert!(check(&iv, &s, true, &p).is_none(), "Model S is not a Model 3");
        assert!(check(&iv, &three, true, &p).is_some());
        let off = params(0.0);
        assert!(check(&iv, &s, true, &off).is_some(), "ratio 0: the text rule is off");
    }

    #[test]
    fn constraints_and_text() {
        assert!(constraint_holds(&json!({"min": 2016}), Some(&json!(2018))));
        assert!(!constraint_holds(&json!({"max": 150000}), Some(&json!(150001))));
        assert!(constraint_holds(&json!(["diesel", "hybrid"]), Some(&json!("Hybrid"))));
        assert!(!constraint_holds(&json!("diesel"), None));
        let t = statement_terms("Hľadám ojetú Škodu Octaviu combi, diesel, do 12 000 EUR, Bratislavský kraj");
        assert!(t.contains(&"octaviu".to_owned()) && t.contains(&"diesel".to_owned()), "{t:?}");
        assert!(!t.iter().any(|x| x == "12" || x == "eur" || x == "bratislavsky"), "{t:?}");
        let have: HashSet<String> = ["octavia", "skoda", "combi"].iter().map(|s| s.to_string()).collect();
        assert!(term_hit("octaviu", &have));
        assert!(!term_hit("fabia", &have));
    }
}
