//! The realistic case: intents whose statements are the real listings' titles in
//! `../shared/data` (read by `common/listings.rs`), and arriving offers that are real
//! listings (title, description, price), instead of the dense two-word generator. Area,
//! budget and hidden limit come from the `testkit` generator; criteria are left out (a
//! title says what it says).

use crate::listings::Listing;
use isto::matching::engine::synth::Synth;
use isto::matching::engine::EngineIntent;
use isto::protocol::Offer;

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
