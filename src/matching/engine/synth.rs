//! Synthetic SK/CZ car and property intents and offers for the engine's oracle tests and
//! the `matching` bench: makes, models, fuels, years, mileages, dispositions, regions of
//! [`crate::gazetteer::all_regions`], statements in sk/cs/en with inflected forms,
//! criteria, budgets and hidden limits in EUR and CZK. Deterministic for a seed.

use super::{EngineIntent, Params};
use crate::gazetteer::{self, AreaObject};
use crate::protocol::{Budget, Money, Offer, OfferSource, SellerPublic};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Map, Value};

/// Makes with their models and a popularity weight.
const MAKES: &[(&str, u32, &[&str])] = &[
    ("Škoda", 30, &["Octavia", "Fabia", "Superb", "Kodiaq", "Karoq", "Scala", "Kamiq", "Rapid", "Enyaq"]),
    ("Volkswagen", 15, &["Golf", "Passat", "Polo", "Tiguan", "Touran", "T-Roc", "Arteon"]),
    ("Toyota", 7, &["Corolla", "Yaris", "RAV4", "Auris", "C-HR"]),
    ("Hyundai", 7, &["i30", "Tucson", "Kona", "i20", "Santa Fe"]),
    ("Kia", 6, &["Ceed", "Sportage", "Niro", "Picanto"]),
    ("Ford", 6, &["Focus", "Mondeo", "Kuga", "Fiesta"]),
    ("Renault", 4, &["Clio", "Megane", "Captur"]),
    ("Dacia", 4, &["Duster", "Sandero", "Logan"]),
    ("BMW", 4, &["X1", "X3", "X5"]),
    ("Audi", 4, &["A3", "A4", "A6", "Q5"]),
    ("Peugeot", 3, &["208", "308", "3008"]),
    ("Opel", 4, &["Astra", "Insignia", "Corsa"]),
    ("Mazda", 2, &["CX-5", "Mazda3"]),
    ("Volvo", 2, &["XC60", "V60", "XC90"]),
    ("Mercedes-Benz", 2, &["C", "E", "GLC"]),
];

const FUELS: &[&str] = &["diesel", "petrol", "hybrid", "electric", "lpg"];
const BODIES: &[&str] = &["combi", "sedan", "hatchback", "suv", "mpv"];
const COLORS: &[&str] = &["biela", "čierna", "sivá", "modrá", "červená", "strieborná"];

const CAR_VERBS: [&[&str]; 3] = [
    &["Hľadám", "Kúpim", "Chcem kúpiť", "Zháňam", "Hľadám ojazdenú"],
    &["Hledám", "Koupím", "Sháním", "Poptávám", "Chci koupit"],
    &["Looking for a", "Want to buy a", "Need a", "Buying a used"],
];
const CAR_EXTRAS: [&[&str]; 3] = [
    &[
        "combi",
        "kombi",
        "diesel",
        "naftu",
        "benzín",
        "automat",
        "4x4",
        "ťažné zariadenie",
        "navigácia",
        "nehavarované",
        "servisná knižka",
        "prvý majiteľ",
        "xenóny",
        "panoramatická strecha",
        "vyhrievané sedadlá",
        "biela",
        "čierna",
        "s DSG",
        "hybrid",
        "nízky nájazd",
        "auto",
    ],
    &[
        "kombi",
        "nafta",
        "benzín",
        "automat",
        "4x4",
        "tažné zařízení",
        "navigace",
        "nehavarované",
        "servisní knížka",
        "první majitel",
        "xenony",
        "panoramatická střecha",
        "vyhřívaná sedadla",
        "bílá",
        "černá",
        "hybrid",
        "nízký nájezd",
        "auto",
    ],
    &[
        "estate",
        "diesel",
        "petrol",
        "automatic",
        "tow bar",
        "navigation",
        "low mileage",
        "service history",
        "one owner",
        "heated seats",
        "white",
        "black",
        "hybrid",
        "car",
    ],
];
const PROP_VERBS: [&[&str]; 3] = [
    &["Hľadám", "Kúpim", "Chcem kúpiť", "Zháňam"],
    &["Hledám", "Koupím", "Sháním", "Poptávám"],
    &["Looking for a", "Want to buy a", "Need a"],
];
const PROP_TYPES: [&[&str]; 3] = [
    &["byt", "rodinný dom", "dom", "pozemok", "chatu", "garsónku", "mezonet"],
    &["byt", "rodinný dům", "dům", "pozemek", "chatu", "garsonku", "mezonet"],
    &["flat", "family house", "house", "plot", "cottage", "studio", "apartment"],
];
const PROP_EXTRAS: [&[&str]; 3] = [
    &[
        "s balkónom",
        "s výťahom",
        "novostavba",
        "po rekonštrukcii",
        "pivnica",
        "parkovanie",
        "terasa",
        "záhrada",
        "tehlový",
        "garáž",
        "loggia",
        "pri škole",
        "tichá lokalita",
    ],
    &[
        "s balkonem",
        "výtah",
        "novostavba",
        "po rekonstrukci",
        "sklep",
        "parkování",
        "terasa",
        "zahrada",
        "cihlový",
        "garáž",
        "lodžie",
        "u školy",
        "klidná lokalita",
    ],
    &[
        "balcony",
        "lift",
        "new build",
        "renovated",
        "cellar",
        "parking",
        "terrace",
        "garden",
        "brick",
        "garage",
        "loggia",
        "quiet area",
    ],
];
const DISPOSITIONS: &[&str] = &["1+kk", "2+kk", "2+1", "3+kk", "3+1", "4+kk", "4+1"];

/// A deterministic generator of intents and offers.
#[derive(Debug)]
pub struct Synth {
    rng: StdRng,
    regions: Vec<(&'static str, &'static str)>,
    next_intent: u64,
    next_offer: u64,
}

/// Holder parameters of the synthetic data: EUR default, CZK at 0.04 EUR.
pub fn params(min_should_match: f64) -> Params {
    Params {
        min_should_match,
        default_currency: "EUR".into(),
        rates: [("EUR".to_owned(), 1.0), ("CZK".to_owned(), 0.04)].into_iter().collect(),
    }
}

impl Synth {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            rng: StdRng::seed_from_u64(seed),
            regions: gazetteer::all_regions().collect(),
            next_intent: 0,
            next_offer: 0,
        }
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.rng.random_range(0..xs.len())]
    }

    fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    fn make(&mut self) -> (&'static str, &'static [&'static str]) {
        let total: u32 = MAKES.iter().map(|m| m.1).sum();
        let mut x = self.rng.random_range(0..total);
        // `x < total`, so the walk stops at the latest on the last make.
        let mut chosen = MAKES[0];
        for &m in MAKES {
            chosen = m;
            if x < m.1 {
                break;
            }
            x -= m.1;
        }
        (chosen.0, chosen.2)
    }

    /// Slovak/Czech inflection of a name as a buyer writes it (`Octavia` → `Octaviu`,
    /// `Octavii`; `Golf` → `Golfa`, `Golfu`).
    fn inflect(&mut self, word: &str, lang: usize) -> String {
        if lang == 2 || word.chars().count() < 3 || word.chars().any(|c| c.is_ascii_digit()) {
            return word.to_owned();
        }
        if let Some(stem) = word.strip_suffix("ia") {
            return if lang == 0 { format!("{stem}iu") } else { format!("{stem}ii") };
        }
        if let Some(stem) = word.strip_suffix('a') {
            return format!("{stem}u");
        }
        if word.ends_with(|c: char| c.is_ascii_lowercase() && !"aeiouy".contains(c)) {
            let suffix = self.pick(&["", "", "a", "u", "om"]);
            return format!("{word}{suffix}");
        }
        word.to_owned()
    }

    fn region(&mut self, country: &str) -> &'static str {
        loop {
            let (code, c) = self.regions[self.rng.random_range(0..self.regions.len())];
            if c == country {
                return code;
            }
        }
    }

    fn country(&mut self) -> &'static str {
        if self.chance(0.45) {
            "SK"
        } else {
            "CZ"
        }
    }

    fn intent_area(&mut self) -> AreaObject {
        let country = self.country();
        let x: f64 = self.rng.random();
        let mut regions: Vec<String> = if x < 0.15 {
            Vec::new()
        } else if x < 0.85 {
            vec![self.region(country).to_owned()]
        } else {
            let n = self.rng.random_range(2..=3);
            (0..n).map(|_| self.region(country).to_owned()).collect()
        };
        regions.sort();
        regions.dedup();
        // Rarely not normalised: lower-case codes, padded country.
        let country =
            if self.chance(0.02) { format!(" {} ", country.to_ascii_lowercase()) } else { country.to_owned() };
        if self.chance(0.02) {
            regions.iter_mut().for_each(|r| *r = r.to_ascii_lowercase());
        }
        AreaObject { country, regions, place: None }
    }

    fn budget(&mut self, property: bool, country: &str) -> (Option<Budget>, Option<f64>) {
        let czk = country.trim().eq_ignore_ascii_case("CZ") && self.chance(0.7);
        let eur_max = if property {
            self.rng.random_range(60_000.0..600_000.0_f64)
        } else {
            self.rng.random_range(2_000.0..60_000.0_f64)
        };
        let (max, currency) = if czk {
            ((eur_max * 25.0 / 1000.0).round() * 1000.0, "CZK")
        } else {
            ((eur_max / 500.0).round() * 500.0, "EUR")
        };
        let x: f64 = self.rng.random();
        if x < 0.12 {
            (None, None)
        } else if x < 0.17 {
            // Hidden limit alone, in the holder default (EUR).
            (None, Some((eur_max * 0.9).round()))
        } else {
            let min = self.chance(0.2).then(|| (max * 0.5).round());
            let hidden = self.chance(0.25).then(|| (max * self.rng.random_range(0.7..0.97)).round());
            let currency = if self.chance(0.01) { "USD" } else { currency };
            (Some(Budget { max: self.chance(0.95).then_some(max), min, currency: currency.into() }), hidden)
        }
    }

    fn extras(&mut self, list: &[&'static str], max: usize) -> Vec<&'static str> {
        let n = self.rng.random_range(0..=max);
        (0..n).map(|_| self.pick(list)).collect()
    }

    /// A new intent `int_…` (ids increase).
    pub fn intent(&mut self) -> EngineIntent {
        self.next_intent += 1;
        let id = format!("int_{:026}", self.next_intent);
        let area = self.intent_area();
        let lang = self.rng.random_range(0..3usize);
        let property = self.chance(0.3);
        let (budget, hidden_limit) = self.budget(property, &area.country);
        let mut criteria = Map::new();
        let statement = if property {
            let verb = self.pick(PROP_VERBS[lang]);
            let ty = self.pick(PROP_TYPES[lang]);
            let disp = if self.chance(0.5) { format!(" {}", self.pick(DISPOSITIONS)) } else { String::new() };
            let extras = self.extras(PROP_EXTRAS[lang], 3).join(", ");
            if self.chance(0.35) {
                let options = [
                    ("type", json!("byt")),
                    ("rooms", json!({"min": 2, "max": 3})),
                    ("floorAreaM2", json!({"min": 50})),
                    ("disposition", json!(["2+kk", "2+1"])),
                    ("transaction", json!("predaj")),
                    ("rooms", json!(3)),
                    ("type", json!(["dom", "dum", "Dům"])),
                ];
                let (k, v) = options[self.rng.random_range(0..options.len())].clone();
                criteria.insert(k.into(), v);
            }
            if self.chance(0.02) {
                format!("{verb} do 200 000 EUR")
            } else {
                format!("{verb} {ty}{disp} {extras}")
            }
        } else {
            let (make, models) = self.make();
            let model = self.pick(models);
            let verb = self.pick(CAR_VERBS[lang]);
            let extras = self.extras(CAR_EXTRAS[lang], 3).join(", ");
            let make_s = if self.chance(0.8) { self.inflect(make, lang) } else { String::new() };
            let model_s = if self.chance(0.85) { self.inflect(model, lang) } else { String::new() };
            let place = if self.chance(0.3) {
                let r = area.regions.first().cloned().unwrap_or_else(|| "SK-BL".into());
                let name = gazetteer::region_name(&r, ["sk", "cs", "en"][lang]).unwrap_or("Bratislava");
                format!(", {name}")
            } else {
                String::new()
            };
            if self.chance(0.4) {
                let mut c: Vec<(&str, Value)> = Vec::new();
                match self.rng.random_range(0..10) {
                    0..=2 => c.push(("make", json!(make))),
                    3..=4 => {
                        c.push(("make", json!(if self.chance(0.3) { make.to_uppercase() } else { make.to_owned() })));
                        c.push(("model", json!(model)));
                    }
                    5 => c.push(("fuel", json!(["diesel", "hybrid"]))),
                    6 => c.push(("year", json!({"min": self.rng.random_range(2010..2022)}))),
                    7 => c.push(("mileageKm", json!({"max": self.rng.random_range(80..250) * 1000}))),
                    8 => c.push(("transmission", json!("automatic"))),
                    _ => c.push(("year", if self.chance(0.5) { json!(2018) } else { json!("2018") })),
                }
                if self.chance(0.2) {
                    c.push(("year", json!({"min": 2015, "max": 2021})));
                }
                criteria.extend(c.into_iter().map(|(k, v)| (k.to_owned(), v)));
            }
            if self.chance(0.02) {
                format!("{verb} do 10 000 EUR")
            } else {
                format!("{verb} {make_s} {model_s} {extras}{place}")
            }
        };
        EngineIntent {
            id,
            category: if property { "property" } else { "vehicles" }.into(),
            criteria,
            area,
            budget,
            hidden_limit,
            statement,
        }
    }

    /// An offer's area in `country` (`SK`, `CZ`): mostly one region, rarely none or a
    /// lower-case code.
    pub fn offer_area(&mut self, country: &str) -> AreaObject {
        let regions = if self.chance(0.04) {
            Vec::new()
        } else if self.chance(0.02) {
            vec![self.region(country).to_ascii_lowercase()]
        } else {
            vec![self.region(country).to_owned()]
        };
        AreaObject { country: country.into(), regions, place: None }
    }

    /// A new offer `off_…` shaped like an SK/CZ car or property ad.
    pub fn offer(&mut self) -> Offer {
        self.next_offer += 1;
        let id = format!("off_{:026}", self.next_offer);
        let country = self.country();
        let area = self.offer_area(country);
        let lang = if country == "SK" { 0 } else { 1 };
        let lang = if self.chance(0.15) { 2 } else { lang };
        let property = self.chance(0.3);
        let mut attrs = Map::new();
        let (title, description, eur) = if property {
            let rooms: u32 = self.rng.random_range(1..=5);
            let area_m2: u32 = 25 + rooms * self.rng.random_range(12..25);
            let ty = self.pick(&["byt", "byt", "byt", "dom", "dum", "pozemok"]);
            let disp = self.pick(DISPOSITIONS);
            attrs.insert("type".into(), json!(ty));
            attrs.insert("transaction".into(), json!(if lang == 1 { "prodej" } else { "predaj" }));
            attrs.insert("disposition".into(), json!(disp));
            attrs.insert("rooms".into(), if self.chance(0.1) { json!(rooms.to_string()) } else { json!(rooms) });
            attrs.insert("floorAreaM2".into(), json!(area_m2));
            let extras = self.extras(PROP_EXTRAS[lang], 5).join(", ");
            let ty_word = self.pick(PROP_TYPES[lang]);
            let title = match lang {
                0 => format!("Predaj {rooms}-izbový {ty_word}, {area_m2} m²"),
                1 => format!("Prodej {ty_word} {disp}, {area_m2} m²"),
                _ => format!("{ty_word} for sale, {rooms} rooms, {area_m2} m²"),
            };
            let eur = self.rng.random_range(50_000.0..650_000.0_f64);
            (title, extras, eur)
        } else {
            let (make, models) = self.make();
            let model = self.pick(models);
            let fuel = self.pick(FUELS);
            let body = self.pick(BODIES);
            let year: u32 = self.rng.random_range(2005..=2025);
            let km: u32 = (2026 - year) * self.rng.random_range(5..25) * 1000;
            attrs.insert("make".into(), json!(if self.chance(0.1) { make.to_uppercase() } else { make.to_owned() }));
            attrs.insert("model".into(), json!(model));
            attrs.insert("fuel".into(), json!(fuel));
            attrs.insert("body".into(), json!(body));
            if self.chance(0.9) {
                attrs.insert("year".into(), if self.chance(0.1) { json!(year.to_string()) } else { json!(year) });
            }
            attrs.insert("mileageKm".into(), json!(km));
            attrs.insert("transmission".into(), json!(if self.chance(0.3) { "automatic" } else { "manual" }));
            attrs.insert("color".into(), json!(self.pick(COLORS)));
            let engine = match fuel {
                "diesel" => self.pick(&["2.0 TDI", "1.6 TDI", "1.5 dCi", "2.0 HDi", "2.2 CRDi"]),
                "petrol" => self.pick(&["1.0 TSI", "1.5 TSI", "1.4 TFSI", "1.2"]),
                _ => "",
            };
            let title = format!("{make} {model} {engine} {}", if self.chance(0.5) { body } else { "" });
            let extras = self.extras(CAR_EXTRAS[lang], 6).join(", ");
            let description = match lang {
                0 => format!("Predám {make} {model}, rok {year}, {km} km, {extras}."),
                1 => format!("Prodám {make} {model}, rok výroby {year}, najeto {km} km, {extras}."),
                _ => format!("For sale: {make} {model}, {year}, {km} km, {extras}."),
            };
            let eur = 30_000.0 * 0.85_f64.powi((2026 - year) as i32) * self.rng.random_range(0.6..1.6);
            (title, description, eur)
        };
        let currency = if country == "CZ" && self.chance(0.7) { "CZK" } else { "EUR" };
        let amount =
            if currency == "CZK" { (eur * 25.0 / 1000.0).round() * 1000.0 } else { (eur / 100.0).round() * 100.0 };
        let currency = if self.chance(0.01) { "USD" } else { currency };
        Offer {
            id,
            source: OfferSource { kind: "catalogue".into(), seller_id: "sel_1".into(), url: None },
            in_reply_to: None,
            title,
            description,
            category: if property { "property" } else { "vehicles" }.into(),
            attributes: attrs,
            price: Money { amount, currency: currency.into() },
            area,
            seller: SellerPublic { id: "sel_1".into(), name: "Synth".into(), url: None },
            published_at: "2026-11-30T00:00:00Z".into(),
            valid_until: None,
            extensions: json!({}),
        }
    }
}
