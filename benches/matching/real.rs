//! The realistic case: intents whose statements are the real listings' titles in
//! `../shared/data` (cars and flats from sauto, bazos, sreality, idnes and
//! nehnutelnosti), and arriving offers that are real listings (title, description,
//! price), instead of the dense two-word generator. Area, budget and hidden limit come
//! from the `testkit` generator; criteria are left out (a title says what it says).

use isto::matching::engine::synth::Synth;
use isto::matching::engine::EngineIntent;
use isto::protocol::Offer;
use serde_json::{json, Map, Value};
use std::path::Path;

/// One real listing: its category (`vehicles` or `property`), title, description, price
/// and string attributes.
#[derive(Clone)]
pub struct Listing {
    pub category: &'static str,
    pub title: String,
    pub description: String,
    /// Price and currency (`CZK`, `EUR`), when the listing has one.
    pub price: Option<(f64, &'static str)>,
    /// Make and model where the source has them.
    pub attributes: Map<String, Value>,
}

fn num(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().replace(' ', "").parse().ok(),
        _ => None,
    }
    .filter(|x: &f64| *x > 0.0)
}

fn text(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
}

fn jsonl(path: &Path) -> Vec<Value> {
    let Ok(s) = std::fs::read_to_string(path) else { return Vec::new() };
    s.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

type Col<'a> = &'a dyn Fn(&str) -> usize;

fn csv_rows(path: &Path, row: impl Fn(&csv::StringRecord, Col<'_>) -> Option<Listing>) -> Vec<Listing> {
    let Ok(mut r) = csv::Reader::from_path(path) else { return Vec::new() };
    let Ok(headers) = r.headers().cloned() else { return Vec::new() };
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap_or(usize::MAX);
    r.records().filter_map(Result::ok).filter_map(|rec| row(&rec, &col)).collect()
}

fn field(rec: &csv::StringRecord, i: usize) -> &str {
    rec.get(i).unwrap_or("").trim()
}

fn czk(s: &str) -> Option<(f64, &'static str)> {
    s.parse::<f64>().ok().filter(|p| *p > 0.0).map(|p| (p, "CZK"))
}

/// The first sentence of an ad text (most bazos texts have no title): up to the first
/// `. ` or line break, at most 90 characters.
fn first_sentence(s: &str) -> String {
    let end = s.find('\n').unwrap_or(s.len()).min(s.find(". ").unwrap_or(s.len()));
    s[..end].chars().take(90).collect::<String>().trim().to_owned()
}

/// Every listing of `dir` (`../shared/data`) with a title; empty when it is absent.
pub fn listings(dir: &Path) -> Vec<Listing> {
    let mut out = Vec::new();
    out.extend(csv_rows(&dir.join("vehicles_cz_sauto.csv"), |r, col| {
        let title = field(r, col("title")).to_owned();
        let mut attributes = Map::new();
        attributes.insert("make".into(), json!(field(r, col("make_slug"))));
        attributes.insert("model".into(), json!(field(r, col("model_slug"))));
        (!title.is_empty()).then(|| Listing {
            category: "vehicles",
            description: field(r, col("summary_raw")).to_owned(),
            price: czk(field(r, col("price_czk"))),
            title,
            attributes,
        })
    }));
    for v in jsonl(&dir.join("vehicles_cz_bazos_ads.jsonl")) {
        let Some(title) = text(v.get("title")) else { continue };
        let description = text(v.get("description")).unwrap_or_default();
        let price = num(v.get("price_czk")).map(|p| (p, "CZK"));
        out.push(Listing { category: "vehicles", title, description, price, attributes: Map::new() });
    }
    for v in jsonl(&dir.join("vehicles_cz_bazos_texts.jsonl")) {
        let Some(body) = text(v.get("text")) else { continue };
        let title = text(v.get("title")).unwrap_or_else(|| first_sentence(&body));
        if title.is_empty() {
            continue;
        }
        let price = num(v.get("price_czk")).map(|p| (p, "CZK"));
        out.push(Listing { category: "vehicles", title, description: body, price, attributes: Map::new() });
    }
    out.extend(csv_rows(&dir.join("property_cz_sreality_flats.csv"), |r, col| {
        let title = field(r, col("name")).to_owned();
        (!title.is_empty()).then(|| Listing {
            category: "property",
            title,
            description: field(r, col("locality_slug")).replace('-', " "),
            price: czk(field(r, col("price_czk"))),
            attributes: Map::new(),
        })
    }));
    out.extend(csv_rows(&dir.join("property_cz_idnes_flats.csv"), |r, col| {
        let title = field(r, col("title")).to_owned();
        (!title.is_empty()).then(|| Listing {
            category: "property",
            title,
            description: field(r, col("location")).to_owned(),
            price: czk(field(r, col("price_czk"))),
            attributes: Map::new(),
        })
    }));
    for v in jsonl(&dir.join("property_sk_nehnutelnosti.jsonl")) {
        let Some(title) = text(v.get("title")) else { continue };
        let description = text(v.get("description")).unwrap_or_default();
        let price = num(v.get("price_eur")).map(|p| (p, "EUR"));
        out.push(Listing { category: "property", title, description, price, attributes: Map::new() });
    }
    out
}

/// `n` intents: the generator's area, budget and hidden limit, the statement a real
/// title of the generator's category (drawn with a stride), no criteria.
pub fn intents(seed: u64, n: usize, all: &[Listing]) -> Vec<EngineIntent> {
    let cars: Vec<&str> = all.iter().filter(|l| l.category == "vehicles").map(|l| l.title.as_str()).collect();
    let flats: Vec<&str> = all.iter().filter(|l| l.category == "property").map(|l| l.title.as_str()).collect();
    let mut g = Synth::new(seed);
    (0..n)
        .map(|i| {
            let mut intent = g.intent();
            let pool = if intent.category == "vehicles" { &cars } else { &flats };
            intent.statement = pool[i.wrapping_mul(7919) % pool.len()].to_owned();
            intent.criteria.clear();
            intent
        })
        .collect()
}

/// `n` arriving offers: real priced listings (drawn with a stride), placed by the
/// generator in the listing's country (CZK listings in CZ, EUR ones in SK).
pub fn offers(seed: u64, n: usize, all: &[Listing]) -> Vec<Offer> {
    let priced: Vec<&Listing> = all.iter().filter(|l| l.price.is_some()).collect();
    let mut g = Synth::new(seed);
    (0..n)
        .map(|i| {
            let l = priced[i.wrapping_mul(104_729) % priced.len()];
            let mut o = g.offer();
            let (amount, currency) = l.price.unwrap_or((1.0, "EUR"));
            o.category = l.category.into();
            o.title = l.title.clone();
            o.description = l.description.clone();
            o.attributes = l.attributes.clone();
            o.price.amount = amount;
            o.price.currency = currency.into();
            let country = if currency == "CZK" { "CZ" } else { "SK" };
            if o.area.country != country {
                o.area = g.offer_area(country);
            }
            o
        })
        .collect()
}
