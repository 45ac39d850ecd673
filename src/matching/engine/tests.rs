use super::synth::{self, Synth};
use super::*;
use crate::gazetteer;
use crate::matching::tests::{offer as car, offer_in as offer};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

impl Engine {
    /// Whether an intent with this id is stored.
    pub(crate) fn contains(&self, id: &str) -> bool {
        self.inner.read().unwrap_or_else(PoisonError::into_inner).ids.contains_key(id)
    }
}

fn intent(
    id: &str,
    category: &str,
    statement: &str,
    area: &str,
    budget: Option<(f64, &str)>,
    hidden: Option<f64>,
    criteria: Value,
) -> EngineIntent {
    EngineIntent {
        id: id.into(),
        category: category.into(),
        criteria: criteria.as_object().cloned().unwrap_or_default(),
        area: gazetteer::resolve(area).unwrap(),
        budget: budget.map(|(max, cur)| Budget { max: Some(max), min: None, currency: cur.into() }),
        hidden_limit: hidden,
        statement: statement.into(),
    }
}

/// The oracle over all intents, in the engine's output form.
fn brute(intents: &[EngineIntent], offer: &Offer, valid: bool, params: &Params) -> Vec<(String, Hit)> {
    let mut v: Vec<(String, Hit)> =
        intents.iter().filter_map(|i| check(&i.view(), offer, valid, params).map(|h| (i.id.clone(), h))).collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

fn engine_with(msm: f64, intents: &[EngineIntent]) -> Engine {
    let e = Engine::new(synth::params(msm));
    for i in intents {
        e.upsert(i.clone());
    }
    e
}

/// Matches `offer` and checks the result against the oracle.
fn matched(e: &Engine, intents: &[EngineIntent], offer: &Offer) -> Vec<String> {
    let got = e.match_offer(offer, true);
    assert_eq!(got, brute(intents, offer, true, e.params()), "offer {offer:?}");
    assert_eq!(e.match_offer_indexed(offer, true), got, "offer {offer:?}");
    got.into_iter().map(|(id, _)| id).collect()
}

#[test]
fn engine_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Engine>();
}

#[test]
fn min_hits_follows_the_oracle_rule() {
    assert_eq!(min_hits(0, 0.5), Some(0));
    assert_eq!(min_hits(0, 1.0), Some(0));
    assert_eq!(min_hits(0, 1.1), None);
    assert_eq!(min_hits(4, 0.0), Some(0));
    assert_eq!(min_hits(4, 0.5), Some(2));
    assert_eq!(min_hits(3, 0.5), Some(2));
    assert_eq!(min_hits(3, 1.0 / 3.0), Some(1));
    assert_eq!(min_hits(3, 2.0 / 3.0), Some(2));
    assert_eq!(min_hits(3, 1.0), Some(3));
    assert_eq!(min_hits(3, 1.0 + 1e-10), Some(3), "within the tolerance");
    assert_eq!(min_hits(3, 1.01), None);
    assert_eq!(min_hits(10, 0.7), Some(7));
    assert_eq!(min_hits(3, f64::NAN), Some(0), "NaN never fails the oracle's comparison");
}

#[test]
fn category_and_validity() {
    let intents = vec![
        intent("int_a", "vehicles", "skoda octavia", "SK", None, None, json!({})),
        intent("int_b", "property", "byt", "SK", None, None, json!({})),
    ];
    let e = engine_with(0.5, &intents);
    let o = car("Škoda Octavia", 1000.0, "EUR", "Bratislava", json!({}));
    assert_eq!(matched(&e, &intents, &o), ["int_a"]);
    assert!(e.match_offer(&o, false).is_empty());
    let flat =
        offer("property", "Predaj 3-izbový byt", 1000.0, "EUR", gazetteer::resolve("Košice").unwrap(), json!({}));
    assert_eq!(matched(&e, &intents, &flat), ["int_b"]);
}

#[test]
fn region_and_whole_country_intents() {
    let intents = vec![
        intent("int_ba", "vehicles", "octavia", "SK-BL", None, None, json!({})),
        intent("int_sk", "vehicles", "octavia", "SK", None, None, json!({})),
        intent("int_cz", "vehicles", "octavia", "CZ", None, None, json!({})),
        intent("int_two", "vehicles", "octavia", "SK-KI", None, None, json!({})),
    ];
    let mut two = intents.clone();
    two[3].area = AreaObject { country: "SK".into(), regions: vec!["SK-KI".into(), "SK-PV".into()], place: None };
    for msm in [0.0, 1.0] {
        let e = engine_with(msm, &two);
        let o = |place: &str| car("Škoda Octavia", 1000.0, "EUR", place, json!({}));
        assert_eq!(matched(&e, &two, &o("Bratislava")), ["int_ba", "int_sk"]);
        assert_eq!(matched(&e, &two, &o("Košice")), ["int_sk", "int_two"]);
        assert_eq!(matched(&e, &two, &o("SK-PV")), ["int_sk", "int_two"]);
        assert_eq!(matched(&e, &two, &o("Brno")), ["int_cz"]);
        let noregion = AreaObject { country: "sk".into(), regions: vec![], place: None };
        let o2 = offer("vehicles", "Octavia", 1.0, "EUR", noregion, json!({}));
        assert_eq!(matched(&e, &two, &o2), ["int_sk"], "an offer without a region: whole-country intents only");
        let lower = AreaObject { country: " SK".into(), regions: vec!["sk-bl".into()], place: None };
        let o3 = offer("vehicles", "Octavia", 1.0, "EUR", lower, json!({}));
        assert_eq!(matched(&e, &two, &o3), ["int_ba", "int_sk"], "codes compare case-insensitively");
        let both = AreaObject { country: "SK".into(), regions: vec!["SK-KI".into(), "SK-PV".into()], place: None };
        let o4 = offer("vehicles", "Octavia", 1.0, "EUR", both, json!({}));
        assert_eq!(matched(&e, &two, &o4), ["int_sk", "int_two"]);
    }
}

#[test]
fn hidden_limit_then_budget_then_none() {
    let intents = vec![
        intent("int_hidden", "vehicles", "octavia", "SK", Some((20000.0, "EUR")), Some(12000.0), json!({})),
        intent("int_budget", "vehicles", "octavia", "SK", Some((20000.0, "EUR")), None, json!({})),
        intent("int_none", "vehicles", "octavia", "SK", None, None, json!({})),
        intent("int_czk", "vehicles", "octavia", "SK", Some((400000.0, "CZK")), None, json!({})),
        intent("int_hidden_only", "vehicles", "octavia", "SK", None, Some(9000.0), json!({})),
        intent("int_usd", "vehicles", "octavia", "SK", Some((99999.0, "USD")), None, json!({})),
    ];
    for msm in [0.0, 1.0] {
        let e = engine_with(msm, &intents);
        let o = |price: f64, cur: &str| car("Škoda Octavia", price, cur, "Trnava", json!({}));
        assert_eq!(
            matched(&e, &intents, &o(8000.0, "EUR")),
            ["int_budget", "int_czk", "int_hidden", "int_hidden_only", "int_none"]
        );
        assert_eq!(matched(&e, &intents, &o(12000.0, "EUR")), ["int_budget", "int_czk", "int_hidden", "int_none"]);
        assert_eq!(matched(&e, &intents, &o(15000.0, "EUR")), ["int_budget", "int_czk", "int_none"]);
        assert_eq!(matched(&e, &intents, &o(375_000.0, "CZK")), ["int_budget", "int_czk", "int_none"], "15 000 EUR");
        assert_eq!(matched(&e, &intents, &o(20000.0, "EUR")), ["int_budget", "int_none"]);
        assert_eq!(matched(&e, &intents, &o(25000.0, "EUR")), ["int_none"]);
        assert_eq!(matched(&e, &intents, &o(100.0, "GBP")), ["int_none"], "an unconvertible price meets no ceiling");
    }
}

#[test]
fn criteria_ranges_and_any_of() {
    let intents = vec![
        intent(
            "int_year",
            "vehicles",
            "auto",
            "CZ",
            None,
            None,
            json!({"year": {"min": 2016}, "mileageKm": {"max": 150000}}),
        ),
        intent("int_fuel", "vehicles", "auto", "CZ", None, None, json!({"fuel": ["diesel", "Hybrid"]})),
        intent("int_make", "vehicles", "", "CZ", None, None, json!({"make": "ŠKODA", "model": "octavia"})),
        intent("int_yearstr", "vehicles", "", "CZ", None, None, json!({"year": "2018"})),
        intent("int_never", "vehicles", "", "CZ", None, None, json!({"make": null})),
    ];
    for msm in [0.0, 0.5] {
        let e = engine_with(msm, &intents);
        let o = |attrs: Value| car("Škoda Octavia auto", 5000.0, "EUR", "Praha", attrs);
        let a = o(json!({"year": 2018, "mileageKm": 120000, "fuel": "hybrid", "make": "Skoda", "model": "Octavia"}));
        assert_eq!(matched(&e, &intents, &a), ["int_fuel", "int_make", "int_year", "int_yearstr"]);
        let b = o(json!({"year": "2015", "mileageKm": 120000, "fuel": "petrol", "make": "skoda "}));
        assert_eq!(matched(&e, &intents, &b), Vec::<String>::new());
        let c = o(json!({"year": 2016, "mileageKm": 150000, "fuel": "Diesel", "model": "OCTAVIA", "make": "škoda"}));
        assert_eq!(matched(&e, &intents, &c), ["int_fuel", "int_make", "int_year"]);
        let d = o(json!({"year": "2018"}));
        assert_eq!(matched(&e, &intents, &d), ["int_yearstr"]);
    }
}

#[test]
fn inflected_terms_and_thresholds() {
    let intents = vec![
        intent(
            "int_sk",
            "vehicles",
            "Hľadám Škodu Octaviu combi, diesel, do 12 000 EUR, Bratislavský kraj",
            "SK",
            None,
            None,
            json!({}),
        ),
        intent("int_cs", "vehicles", "Sháním Octavii kombi s tažným", "SK", None, None, json!({})),
        intent("int_short", "vehicles", "BMW X5", "SK", None, None, json!({})),
        intent("int_empty", "vehicles", "Kúpim do 10 000 EUR", "SK", None, None, json!({})),
    ];
    let o = car("Škoda Octavia 2.0 TDI Combi", 9000.0, "EUR", "Bratislava", json!({}));
    let bmw = car("BMW X5 xDrive", 9000.0, "EUR", "Bratislava", json!({}));
    let bmws = car("BMWs X50", 9000.0, "EUR", "Bratislava", json!({}));
    let e = engine_with(1.0, &intents);
    assert_eq!(matched(&e, &intents, &o), ["int_empty", "int_sk"]);
    assert_eq!(e.match_offer(&o, true)[1].1.score, 1.0);
    assert_eq!(matched(&e, &intents, &bmw), ["int_empty", "int_short"]);
    assert_eq!(matched(&e, &intents, &bmws), ["int_empty"], "short terms match only exactly");
    let e = engine_with(0.5, &intents);
    assert_eq!(matched(&e, &intents, &o), ["int_cs", "int_empty", "int_sk"]);
    let e = engine_with(0.0, &intents);
    assert_eq!(matched(&e, &intents, &bmws).len(), 4);
}

#[test]
fn upsert_replaces_and_remove_removes() {
    let mut intents = vec![
        intent("int_a", "vehicles", "octavia", "SK-BL", None, None, json!({})),
        intent("int_b", "vehicles", "fabia", "SK", None, Some(5000.0), json!({})),
    ];
    let e = engine_with(0.5, &intents);
    assert_eq!(e.len(), 2);
    let octavia = car("Škoda Octavia", 4000.0, "EUR", "Bratislava", json!({}));
    let fabia = car("Škoda Fabia", 4000.0, "EUR", "Košice", json!({}));
    assert_eq!(matched(&e, &intents, &octavia), ["int_a"]);
    intents[0] = intent("int_a", "vehicles", "fabia", "SK-KI", None, None, json!({}));
    e.upsert(intents[0].clone());
    assert_eq!(e.len(), 2);
    assert_eq!(matched(&e, &intents, &octavia), Vec::<String>::new());
    assert_eq!(matched(&e, &intents, &fabia), ["int_a", "int_b"]);
    e.remove("int_b");
    e.remove("int_unknown");
    intents.remove(1);
    assert_eq!(e.len(), 1);
    assert_eq!(matched(&e, &intents, &fabia), ["int_a"]);
    e.remove("int_a");
    assert!(e.is_empty());
    assert!(e.match_offer(&fabia, true).is_empty());
    // Slots and terms are reused cleanly.
    let again = intent("int_c", "vehicles", "fabiu", "SK", None, None, json!({}));
    e.upsert(again.clone());
    assert_eq!(matched(&e, &[again], &fabia), ["int_c"]);
}

/// Compares the engine with the oracle for every offer; returns the number of matches.
fn compare(e: &Engine, intents: &[EngineIntent], offers: &[Offer]) -> usize {
    let mut total = 0;
    for o in offers {
        let want = brute(intents, o, true, e.params());
        let got = e.match_offer(o, true);
        if got != want {
            let params = e.params();
            let missing: Vec<_> = want.iter().filter(|w| !got.contains(w)).collect();
            let extra: Vec<_> = got.iter().filter(|g| !want.contains(g)).collect();
            let show = |id: &str| intents.iter().find(|i| i.id == id).cloned();
            panic!(
                "offer {o:#?}\nmissing {missing:?} {:#?}\nextra {extra:?}\n{:?}",
                missing.first().and_then(|m| show(&m.0)),
                params.min_should_match
            );
        }
        assert_eq!(e.match_offer_indexed(o, true), got, "indexed hits, offer {o:#?}");
        total += got.len();
    }
    total
}

#[test]
fn agrees_with_the_oracle_on_generated_data() {
    let mut configs: Vec<(u64, f64)> = Vec::new();
    for seed in [1, 2, 3] {
        for msm in [0.0, 0.5, 1.0] {
            configs.push((seed, msm));
        }
    }
    configs.extend([(4, 0.34), (5, 0.75), (6, 1e-12)]);
    for (seed, msm) in configs {
        let mut g = Synth::new(seed);
        let mut intents: Vec<EngineIntent> = (0..2000).map(|_| g.intent()).collect();
        let offers: Vec<Offer> = (0..500).map(|_| g.offer()).collect();
        let e = engine_with(msm, &intents);
        assert_eq!(e.len(), intents.len());
        let total = compare(&e, &intents, &offers);
        assert!(total > 50, "seed {seed} msm {msm}: only {total} matches, the data is too sparse");
        let invalid = &offers[0];
        assert!(e.match_offer(invalid, false).is_empty());
        assert!(e.match_offer_indexed(invalid, false).is_empty());

        // Random removes, replacing upserts and new intents.
        let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);
        for _ in 0..300 {
            let i = rng.random_range(0..intents.len());
            e.remove(&intents.swap_remove(i).id);
        }
        for _ in 0..300 {
            let i = rng.random_range(0..intents.len());
            let mut fresh = g.intent();
            fresh.id = intents[i].id.clone();
            e.upsert(fresh.clone());
            intents[i] = fresh;
        }
        for _ in 0..200 {
            let fresh = g.intent();
            e.upsert(fresh.clone());
            intents.push(fresh);
        }
        assert_eq!(e.len(), intents.len());
        let offers: Vec<Offer> = (0..200).map(|_| g.offer()).collect();
        compare(&e, &intents, &offers);
        eprintln!("seed {seed} msm {msm}: {total} matches over 500 offers");
    }
}

/// Statements shaped like real listing titles (`Škoda Octavia 2.0 TDI combi`, `Prodej
/// byt 2+kk, 62 m²`): few, frequent words and designations, so intents are posted under
/// signatures much smaller than their terms. The engine still equals the oracle, also
/// after removals and replacements that change which terms are rare.
#[test]
fn title_statements_posted_by_signature_agree_with_the_oracle() {
    for (seed, msm) in [(21, 0.5), (22, 0.34), (23, 0.75), (24, 1.0), (25, 1e-12)] {
        let mut g = Synth::new(seed);
        let fresh = |g: &mut Synth| {
            let mut i = g.intent();
            let o = g.offer();
            i.category = o.category;
            // One in ten also carries the ad's description (longer statements).
            i.statement = if o.id.ends_with('7') { format!("{} {}", o.title, o.description) } else { o.title };
            i.criteria.clear();
            i
        };
        let mut intents: Vec<EngineIntent> = (0..3000).map(|_| fresh(&mut g)).collect();
        let offers: Vec<Offer> = (0..400).map(|_| g.offer()).collect();
        let e = engine_with(msm, &intents);
        let total = compare(&e, &intents, &offers);
        assert!(total > 100, "seed {seed} msm {msm}: only {total} matches, the data is too sparse");
        let mut rng = StdRng::seed_from_u64(seed);
        for _ in 0..1000 {
            let i = rng.random_range(0..intents.len());
            e.remove(&intents.swap_remove(i).id);
        }
        for _ in 0..500 {
            let i = rng.random_range(0..intents.len());
            let mut f = fresh(&mut g);
            f.id = intents[i].id.clone();
            e.upsert(f.clone());
            intents[i] = f;
        }
        let offers: Vec<Offer> = (0..200).map(|_| g.offer()).collect();
        compare(&e, &intents, &offers);
    }
}

#[test]
fn designations_and_long_inflections_checked_in_place_agree_with_the_oracle() {
    // Statements of up to INLINE terms are counted and their designations checked from the
    // slot's cache line, longer ones from the entry; a long offer word hits a term's stem
    // only up to 3 characters beyond the term (the shortest prefix looked up).
    let long = "Predám Škoda Octavia 2.0 combi elegance navigácia panoráma xenóny ťažné kožené sedačky";
    let intents = vec![
        intent("int_short", "vehicles", "Škoda Octavia 2.0 combi", "SK", None, None, json!({})),
        intent("int_long", "vehicles", long, "SK", None, None, json!({})),
        intent("int_stem", "vehicles", "automobilový nosič", "SK", None, None, json!({})),
    ];
    assert!(statement_analysis(long).terms.len() > INLINE, "int_long is read from its entry");
    let at = |title: &str| car(title, 9000.0, "EUR", "Bratislava", json!({}));
    let e = engine_with(0.5, &intents);
    let no_designation = at("Škoda Octavia 1.6 combi elegance navigácia panoráma xenóny ťažné kožené sedačky");
    assert!(matched(&e, &intents, &no_designation).is_empty(), "2.0 is required in both statements");
    let both = at("Škoda Octavia 2.0 combi elegance navigácia panoráma xenóny");
    assert_eq!(matched(&e, &intents, &both), ["int_long", "int_short"]);
    assert_eq!(matched(&e, &intents, &at("automobilových nosičov")), ["int_stem"]);
    let e = engine_with(1.0, &intents);
    // `automobilovy` (12 characters, stem of 10): a word of 15 still hits, one of 18 not.
    assert_eq!(matched(&e, &intents, &at("automobilovymia nosic")), ["int_stem"]);
    assert!(matched(&e, &intents, &at("automobilovejsiemu nosic")).is_empty());
}
