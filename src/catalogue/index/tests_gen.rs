//! Tests of the offer index on generated catalogues: candidates as a superset of
//! matching, the bound per search, answers independent of the segment layout, timing.

use super::tests::{area_of, index_of};
use super::*;
use crate::protocol::{Money, OfferSource, SellerPublic};
use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, SeedableRng};
use serde_json::json;
use std::collections::BTreeMap;

const MAKES: &[(&str, &[&str], &[&str])] = &[
    // (make, inflected/alias forms of the make, models)
    (
        "Škoda",
        &["škodu", "škodovku", "škodovka", "škody", "skoda"],
        &["Octavia", "Fabia", "Superb", "Kodiaq", "Karoq", "Scala", "Kamiq", "Rapid"],
    ),
    (
        "Volkswagen",
        &["volkswagen", "vw", "volkswagenu", "folcvagen"],
        &["Golf", "Passat", "Polo", "Tiguan", "Touran", "Arteon"],
    ),
    ("Toyota", &["toyotu", "toyoty", "toyota"], &["Corolla", "Yaris", "RAV4", "Auris", "C-HR"]),
    ("Hyundai", &["hyundai", "hyundaie"], &["i30", "Tucson", "Kona", "i20"]),
    ("Kia", &["kiu", "kia"], &["Ceed", "Sportage", "Rio", "Niro"]),
    ("Ford", &["ford", "forda", "fordku"], &["Focus", "Mondeo", "Kuga", "Fiesta"]),
    ("Renault", &["renault"], &["Clio", "Megane", "Captur"]),
    ("Peugeot", &["peugeot"], &["308", "3008", "208"]),
    ("Dacia", &["daciu", "dacia"], &["Duster", "Sandero", "Logan"]),
    ("BMW", &["bmw", "bmwčko"], &["320d", "X3", "520d"]),
];
const ENGINES: &[&str] = &[
    "1.0 TSI 81kW",
    "1.5 TSI 110kW",
    "2.0 TDI 110kW",
    "1.6 TDI 85kW",
    "2.0 TDI 140kW",
    "1.6 HDi 88kW",
    "1.8 Hybrid 90kW",
    "1.4 TSI 92kW",
    "1.5 dCi 85kW",
    "1.6 CRDi 100kW",
    "2.0 TFSI 140kW",
    "1.2 benzín 55kW",
];
const BODIES: &[&str] = &["Combi", "Kombi", "Sedan", "Hatchback", "Liftback", "SUV", "Variant", "Scout", "RS"];
const DESC: &[&str] = &[
    "Predám vozidlo v dobrom stave, servisná knižka, prvý majiteľ, STK a EK platná.",
    "Prodám vůz po prvním majiteli, garážované, nehavarované, pravidelný servis u dealera.",
    "Klimatizácia, tempomat, vyhrievané sedadlá, parkovacie senzory vpredu aj vzadu, ťažné zariadenie.",
    "Auto je nehavarované, nefajčiarske, nové letné pneumatiky, zimné na diskoch.",
    "Možnosť financovania na splátky a leasingu, výmena možná, dohoda istá.",
    "Najeto málo km, kupováno v ČR, servisní knížka, dva klíče, navigace, tažné zařízení.",
    "Škodovka v top stave, rodinné auto, veľmi úsporná, spotreba okolo 5 l.",
    "Octavii predávam kvôli kúpe väčšieho auta. Pekná, čistá, bez korózie.",
    "Spolehlivý vůz, nová STK, rozvody měněny, olej vyměněn, výborný stav.",
    "Fabiu som kúpil nový v autorizovanom servise, garážovaná, bez škrabancov.",
    "Vozidlo je možné obhliadnuť v Košiciach, Žiline alebo Bratislave po dohode.",
    "Electric or hybrid, automatic gearbox, full service history, one owner.",
];
const FUELS: &[&str] = &["diesel", "benzín", "hybrid", "elektro", "LPG"];
const COLORS: &[&str] = &["biela", "čierna", "strieborná", "modrá", "červená", "šedá metalíza"];
const WORDS: &[&str] = &[
    "rodinné",
    "auto",
    "vozidlo",
    "spoľahlivé",
    "úsporné",
    "klimatizáciou",
    "tažné",
    "navigaci",
    "kombi",
    "combi",
    "nafta",
    "naftu",
    "benzín",
    "automat",
    "automatom",
    "hybrid",
    "elektromobil",
    "SUV",
    "sedan",
    "garážované",
    "nehavarované",
    "family",
    "car",
    "estate",
    "diesel",
    "4x4",
    "xenony",
    "panorama",
];
const PICK: &[&str] = &["Hľadám", "Kúpim", "Hledám", "Koupím", "Sháním", "Looking for", "Chcem", "Potrebujem"];

fn inflect(rng: &mut StdRng, word: &str) -> String {
    let w = word.to_lowercase();
    let forms: Vec<String> = if w.ends_with('a') {
        let s = &w[..w.len() - 1];
        vec![w.clone(), format!("{s}u"), format!("{s}y"), format!("{s}i"), format!("{s}e"), format!("{s}ou")]
    } else if w.chars().last().is_some_and(|c| c.is_alphabetic()) {
        vec![w.clone(), format!("{w}a"), format!("{w}u"), format!("{w}om"), format!("{w}y")]
    } else {
        vec![w.clone()]
    };
    forms.choose(rng).unwrap().clone()
}

fn regions() -> Vec<(&'static str, &'static str)> {
    gazetteer::all_regions().collect()
}

fn gen_offer(rng: &mut StdRng, i: usize, regions: &[(&str, &str)]) -> Offer {
    let (make, _, models) = MAKES.choose(rng).unwrap();
    let model = models.choose(rng).unwrap();
    let body = BODIES.choose(rng).unwrap();
    let engine = ENGINES.choose(rng).unwrap();
    let title = format!("{make} {model} {body} {engine}");
    let mut description = String::new();
    while description.chars().count() < 260 {
        description.push_str(DESC.choose(rng).unwrap());
        description.push(' ');
        if rng.random_bool(0.3) {
            description.push_str(&format!("{} {} ", inflect(rng, make), inflect(rng, model)));
        }
    }
    let year = rng.random_range(2005..=2025);
    let mut attrs = json!({"make": make, "model": model, "body": body, "fuel": FUELS.choose(rng).unwrap(),
        "transmission": if rng.random_bool(0.3) { "automat" } else { "manuál" },
        "year": year, "mileageKm": rng.random_range(5..400) * 1000, "powerKw": rng.random_range(40..200),
        "color": COLORS.choose(rng).unwrap()});
    if rng.random_bool(0.1) {
        attrs.as_object_mut().unwrap().remove("model");
    }
    let area = if rng.random_bool(0.05) {
        area_of(if rng.random_bool(0.5) { "SK" } else { "CZ" })
    } else {
        area_of(regions.choose(rng).unwrap().0)
    };
    let (amount, currency) = if area.country == "CZ" {
        (rng.random_range(40..900) as f64 * 1000.0, "CZK")
    } else {
        (rng.random_range(1500..40000) as f64, "EUR")
    };
    Offer {
        id: format!("off_{i:07}"),
        source: OfferSource { kind: "catalogue".into(), seller_id: format!("sel_{}", i % 50), url: None },
        in_reply_to: None,
        title,
        description,
        category: if rng.random_bool(0.95) { "vehicles".into() } else { "property".into() },
        attributes: attrs.as_object().cloned().unwrap(),
        price: Money { amount, currency: currency.into() },
        area,
        seller: SellerPublic { id: format!("sel_{}", i % 50), name: "Auto".into(), url: None },
        published_at: format!("2026-{:02}-{:02}T10:00:00Z", rng.random_range(1..=12), rng.random_range(1..=28)),
        valid_until: None,
        extensions: json!({}),
    }
}

struct GenIntent {
    statement: String,
    criteria: serde_json::Map<String, Value>,
    area: AreaObject,
    min_should_match: f64,
}

fn gen_statement(rng: &mut StdRng) -> String {
    let (make, forms, models) = MAKES.choose(rng).unwrap();
    let mut s = String::from(*PICK.choose(rng).unwrap());
    if rng.random_bool(0.7) {
        s.push(' ');
        s.push_str(if rng.random_bool(0.5) { forms.choose(rng).unwrap() } else { make });
    }
    if rng.random_bool(0.8) {
        s.push(' ');
        let model = models.choose(rng).unwrap();
        s.push_str(&inflect(rng, model));
    }
    for _ in 0..rng.random_range(0..3) {
        s.push(' ');
        s.push_str(WORDS.choose(rng).unwrap());
    }
    if rng.random_bool(0.4) {
        s.push_str(&format!(" do {} EUR", rng.random_range(3..40) * 1000));
    }
    if rng.random_bool(0.3) {
        s.push_str(&format!(
            ", {}",
            ["Bratislavský kraj", "Košice", "Praha", "okolie Žiliny", "Brno"].choose(rng).unwrap()
        ));
    }
    s
}

fn gen_intent(rng: &mut StdRng, regions: &[(&str, &str)]) -> GenIntent {
    let statement = gen_statement(rng);
    let country = if rng.random_bool(0.5) { "SK" } else { "CZ" };
    let mut area = AreaObject { country: country.into(), regions: Vec::new(), place: None };
    if rng.random_bool(0.7) {
        let of_country: Vec<&str> = regions.iter().filter(|r| r.1 == country).map(|r| r.0).collect();
        for _ in 0..rng.random_range(1..=3) {
            let r = of_country.choose(rng).unwrap().to_string();
            if !area.regions.contains(&r) {
                area.regions.push(r);
            }
        }
    }
    let mut criteria = serde_json::Map::new();
    match rng.random_range(0..5) {
        0 => {
            criteria.insert("year".into(), json!({"min": rng.random_range(2005..2020)}));
        }
        1 => {
            criteria.insert("fuel".into(), json!(["diesel", "hybrid"]));
        }
        _ => {}
    }
    let min_should_match = *[0.34, 0.5, 0.5, 1.0].choose(rng).unwrap();
    GenIntent { statement, criteria, area, min_should_match }
}

fn rates() -> BTreeMap<String, f64> {
    [("EUR".to_owned(), 1.0), ("CZK".to_owned(), 0.04)].into_iter().collect()
}

#[test]
fn candidates_are_a_superset_of_matching() {
    let env = |k: &str, d: u64| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    let mut rng = StdRng::seed_from_u64(env("ISTO_PROPERTY_SEED", 17));
    let regions = regions();
    let offers: Vec<Offer> =
        (0..env("ISTO_PROPERTY_OFFERS", 300) as usize).map(|i| gen_offer(&mut rng, i, &regions)).collect();
    let ix = index_of(offers.clone());
    let rates = rates();
    let (mut matched, mut candidates, mut narrowed, mut in_area) = (0usize, 0usize, 0usize, 0usize);
    for n in 0..env("ISTO_PROPERTY_INTENTS", 100) {
        let g = gen_intent(&mut rng, &regions);
        let p = Params { min_should_match: g.min_should_match, default_currency: "EUR".into(), rates: rates.clone() };
        let iv = matching::IntentView {
            category: "vehicles",
            criteria: &g.criteria,
            area: &g.area,
            budget: None,
            hidden_limit: None,
            statement: &g.statement,
        };
        let terms = matching::statement_terms(&g.statement);
        let got: HashSet<String> = ix.candidates_for_intent("vehicles", &g.area, &terms).unwrap().into_iter().collect();
        candidates += got.len();
        let narrow: HashSet<String> = ix
            .candidates_for_intent_min("vehicles", &g.area, &terms, g.min_should_match)
            .unwrap()
            .into_iter()
            .collect();
        assert!(narrow.is_subset(&got));
        narrowed += narrow.len();
        in_area += ix.candidates_for_intent("vehicles", &g.area, &[]).unwrap().len();
        for o in &offers {
            if matching::check(&iv, o, true, &p).is_some() {
                matched += 1;
                assert!(
                    got.contains(&o.id) && narrow.contains(&o.id),
                    "intent {n} {:?} ({terms:?}, area {:?}) matches {} {:?} but is no candidate",
                    g.statement,
                    g.area,
                    o.id,
                    o.title
                );
            }
        }
    }
    eprintln!(
        "superset: {matched} matches, {narrowed} candidates with min_should_match, {candidates} with one term, \
         {in_area} offers in category and area"
    );
    assert!(matched >= 100, "the generated data must match often enough to test something: {matched}");
    assert!(candidates < in_area, "terms narrow the candidates: {candidates} vs {in_area}");
}

/// What one statement may make a search do is bounded per search, not per word: the
/// first [`search::MAX_WORDS`] words and [`search::MAX_RANKING_TERMS`] phrases, each one
/// plain term lookup per searchable field — however many inflected forms the index holds.
#[test]
fn a_search_uses_a_bounded_number_of_words_and_lookups() {
    // 4-character stems with case endings: each word would expand on its own.
    let endings = ["a", "u", "y", "e", "ou", "om", "ami", "ach", "ov", "iam"];
    let stems = ["skod", "octa", "fabi", "auto", "diesl", "kombi", "toyo", "vozi", "servi", "klima"];
    let words: Vec<String> = stems.iter().flat_map(|s| endings.iter().map(move |e| format!("{s}{e}"))).collect();
    let statement = words.join(" ");
    let a = search::analyse(&statement, false);
    assert_eq!(a.words.len(), search::MAX_WORDS, "{:?}", a.words);
    assert_eq!(a.words[0], matching::statement_terms("skoda")[0], "the first words, in order");
    let phrases = (0..40).map(|i| format!("model {i}")).collect::<Vec<_>>().join(" ");
    assert!(search::analyse(&phrases, false).phrases.len() <= search::MAX_RANKING_TERMS);
    // An index where every stem has a hundred forms.
    let ix = index_of(
        (0..100)
            .map(|i| {
                let e = format!("{}{}", (b'a' + (i / 10) as u8) as char, (b'a' + (i % 10) as u8) as char);
                let text: Vec<String> = stems.iter().map(|s| format!("{s}{e}")).collect();
                let text = text.join(" ");
                super::tests::offer(&format!("o{i}"), &text, &text, json!({ "note": text }), "Košice")
            })
            .collect(),
    );
    assert_eq!(ix.lookups(&statement, false), search::MAX_WORDS, "one lookup per word");
    let crafted = format!("{statement} {phrases} c-max s-max a-b x-y Košice Praha Brno Žilina Nitra Trnava");
    let bound = search::MAX_WORDS + 2 * search::MAX_RANKING_TERMS;
    assert!(ix.lookups(&crafted, true) <= bound, "{} lookups", ix.lookups(&crafted, true));
    // The lookups still find the inflected forms: every offer holds a form of "skodou".
    assert_eq!(ix.search("skodou", None, None, 1000).unwrap().len(), 100);
}

/// The same hits in the same order, scores equal up to the rounding of a sum taken in
/// another order (block-max WAND adds a document's term scores in its own order); two
/// hits may trade places only when their scores are that close.
fn assert_same_hits(a: &[(String, f32)], b: &[(String, f32)], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: {a:?} vs {b:?}");
    let close = |x: f32, y: f32| (x - y).abs() <= 1e-4 * x.abs().max(1.0);
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(close(x.1, y.1), "{what}: score {i}: {a:?} vs {b:?}");
        let exact = x.0 == y.0 && x.1 == y.1;
        assert!(exact || (x.1 - y.1).abs() <= 1e-4 * x.1.abs().max(1.0), "{what}: hit {i}: {a:?} vs {b:?}");
    }
}

/// The answer does not depend on how the index is split into segments (one segment, or
/// several from a series of updates): the same ids, order and scores — the pruning's
/// threshold lets equal scores meet the tie break in every segment. (BM25's statistics
/// count deleted documents until their segment is merged, so an index with deletions may
/// score a little differently; that is tantivy's.)
#[test]
fn answers_do_not_depend_on_the_segment_layout() {
    let mut rng = StdRng::seed_from_u64(12);
    let regions = regions();
    let offers: Vec<Offer> = (0..900).map(|i| gen_offer(&mut rng, i, &regions)).collect();
    let one = OfferIndex::open(None).unwrap();
    one.rebuild(offers.iter().cloned(), 1).unwrap();
    let many = OfferIndex::open(None).unwrap();
    many.rebuild(std::iter::empty(), 1).unwrap();
    for (g, chunk) in offers.chunks(450).enumerate() {
        many.apply(Vec::new(), chunk.to_vec(), Vec::new(), 2 + g as u64);
        // A read between updates commits each one: a segment each.
        many.flush().unwrap();
    }
    assert_eq!(many.num_docs(), one.num_docs());
    let segments = many.reader.searcher().segment_readers().len();
    assert!(segments > 1 && segments <= MAX_SEGMENTS, "{segments} segments");
    let statements: Vec<String> = (0..150).map(|_| gen_statement(&mut rng)).collect();
    let kosice = gazetteer::resolve("Košice").unwrap();
    let mut nonempty = 0;
    for s in &statements {
        for (area, category, limit) in [(None, None, 10), (Some(&kosice), Some("vehicles"), 10), (None, None, 3)] {
            let a = one.search(s, area, category, limit).unwrap();
            let b = many.search(s, area, category, limit).unwrap();
            assert_same_hits(&a, &b, s);
            nonempty += usize::from(!a.is_empty());
        }
    }
    assert!(nonempty > 200, "the generated statements must find offers: {nonempty}");
}

/// The pruned top `limit` is the top `limit` of every match: the same as the first
/// `limit` of a search with a limit larger than the matches.
#[test]
fn pruned_top_hits_are_the_first_of_all_hits() {
    let mut rng = StdRng::seed_from_u64(21);
    let regions = regions();
    let ix = index_of((0..2000).map(|i| gen_offer(&mut rng, i, &regions)).collect());
    let mut checked = 0;
    for _ in 0..100 {
        let s = gen_statement(&mut rng);
        let all = ix.search(&s, None, None, 100_000).unwrap();
        for limit in [1, 5, 20] {
            let top = ix.search(&s, None, None, limit).unwrap();
            assert_same_hits(&top, &all[..limit.min(all.len())], &format!("{s} limit {limit}"));
            checked += usize::from(all.len() > limit);
        }
    }
    assert!(checked > 100, "pruning must have had something to prune: {checked}");
}

/// Offers with the same words score the same. Over many such offers, at few prices (so
/// equal prices too), ids in no order, in several segments: the pruned top `limit` is
/// exactly (ids and order) the first `limit` of all hits, and those go by score, then
/// price, then id. The pruning that skips ties once the documents cost more than the
/// worst kept (`collector`, segments in price order) never skips one that belongs.
#[test]
fn pruned_ties_go_by_price_then_id_in_every_segment() {
    let mut rng = StdRng::seed_from_u64(33);
    let regions = regions();
    let titles = ["Škoda Fabia kombi", "Škoda Fabia", "Fabia combi", "Octavia"];
    let prices = [900.0, 1000.0, 1000.0, 5000.0, 7000.0];
    let mut order: Vec<usize> = (0..600).collect();
    order.shuffle(&mut rng);
    let offers: Vec<Offer> = order
        .into_iter()
        .map(|i| {
            let mut o = gen_offer(&mut rng, i, &regions);
            o.title = (*titles.choose(&mut rng).unwrap()).into();
            o.description = String::new();
            o.attributes = serde_json::Map::new();
            o.price = Money { amount: *prices.choose(&mut rng).unwrap(), currency: "EUR".into() };
            o
        })
        .collect();
    let price: BTreeMap<&str, f64> = offers.iter().map(|o| (o.id.as_str(), o.price.amount)).collect();
    let ix = OfferIndex::open_priced(None, &BTreeMap::from([("EUR".to_owned(), 1.0)])).unwrap();
    ix.rebuild(std::iter::empty(), 1).unwrap();
    for (g, chunk) in offers.chunks(200).enumerate() {
        ix.apply(Vec::new(), chunk.to_vec(), Vec::new(), 2 + g as u64);
        ix.flush().unwrap();
    }
    assert!(ix.reader.searcher().segment_readers().len() > 1);
    for s in ["fabia", "škoda fabia", "fabia kombi", "octavia fabia"] {
        let all = ix.search(s, None, None, 100_000).unwrap();
        assert!(all.len() > 100, "{s}: {} hits", all.len());
        for w in all.windows(2) {
            let key = |h: &(String, f32)| {
                (
                    std::cmp::Reverse(super::collector::on_grid(h.1).to_bits()),
                    price[h.0.as_str()].to_bits(),
                    h.0.clone(),
                )
            };
            assert!(key(&w[0]) < key(&w[1]), "{s}: {:?} before {:?}", w[0], w[1]);
        }
        for limit in [1, 5, 20, 50] {
            let top = ix.search(s, None, None, limit).unwrap();
            assert_eq!(top, all[..limit], "{s} limit {limit}");
        }
    }
}

use matching::Params;
