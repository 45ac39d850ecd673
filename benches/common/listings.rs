//! The real listings of `../shared/data` (cars and flats from sauto, bazos, sreality,
//! idnes and nehnutelnosti), read by every benchmark that uses them: [`listings`] (all
//! of them, `cargo bench --bench matching`) and [`sauto`] (the sauto cars, imported by
//! `holder` and `mcp_load`). A source file that is absent gives no listings.

use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// The folder of the listings: `ISTO_BENCH_DATA`, else `../shared/data` beside the
/// crate.
pub fn data_dir() -> PathBuf {
    std::env::var_os("ISTO_BENCH_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data"))
}

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
    /// What a sauto listing has besides (`None` for the other sources).
    pub sauto: Option<SautoCar>,
}

/// The fields of a sauto listing that the other sources lack.
#[derive(Clone)]
pub struct SautoCar {
    /// sauto's `listing_id`.
    pub id: String,
    /// Year of make.
    pub year: Option<u64>,
    /// Mileage, km.
    pub mileage_km: Option<u64>,
    /// The listing's page.
    pub url: String,
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

/// The sauto cars of `dir` (`vehicles_cz_sauto.csv`) with a title, in file order; empty
/// when it is absent.
pub fn sauto(dir: &Path) -> Vec<Listing> {
    let number = |s: &str| s.replace(' ', "").parse::<u64>().ok();
    csv_rows(&dir.join("vehicles_cz_sauto.csv"), |r, col| {
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
            sauto: Some(SautoCar {
                id: field(r, col("listing_id")).to_owned(),
                year: number(field(r, col("year"))),
                mileage_km: number(field(r, col("mileage_km"))),
                url: field(r, col("url")).to_owned(),
            }),
        })
    })
}

/// Every listing of `dir` (`../shared/data`) with a title; empty when it is absent.
pub fn listings(dir: &Path) -> Vec<Listing> {
    let mut out = Vec::new();
    out.extend(sauto(dir));
    for v in jsonl(&dir.join("vehicles_cz_bazos_ads.jsonl")) {
        let Some(title) = text(v.get("title")) else { continue };
        let description = text(v.get("description")).unwrap_or_default();
        let price = num(v.get("price_czk")).map(|p| (p, "CZK"));
        out.push(Listing { category: "vehicles", title, description, price, attributes: Map::new(), sauto: None });
    }
    for v in jsonl(&dir.join("vehicles_cz_bazos_texts.jsonl")) {
        let Some(body) = text(v.get("text")) else { continue };
        let title = text(v.get("title")).unwrap_or_else(|| first_sentence(&body));
        if title.is_empty() {
            continue;
        }
        let price = num(v.get("price_czk")).map(|p| (p, "CZK"));
        out.push(Listing {
            category: "vehicles",
            title,
            description: body,
            price,
            attributes: Map::new(),
            sauto: None,
        });
    }
    out.extend(csv_rows(&dir.join("property_cz_sreality_flats.csv"), |r, col| {
        let title = field(r, col("name")).to_owned();
        (!title.is_empty()).then(|| Listing {
            category: "property",
            title,
            description: field(r, col("locality_slug")).replace('-', " "),
            price: czk(field(r, col("price_czk"))),
            attributes: Map::new(),
            sauto: None,
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
            sauto: None,
        })
    }));
    for v in jsonl(&dir.join("property_sk_nehnutelnosti.jsonl")) {
        let Some(title) = text(v.get("title")) else { continue };
        let description = text(v.get("description")).unwrap_or_default();
        let price = num(v.get("price_eur")).map(|p| (p, "EUR"));
        out.push(Listing { category: "property", title, description, price, attributes: Map::new(), sauto: None });
    }
    out
}
