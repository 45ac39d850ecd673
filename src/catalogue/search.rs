//! The ordinary catalogue search of `intent_search_offers` (PROTOCOL.md §3): full text,
//! case- and diacritics-insensitive, sk/cs/en, best first. A scan over the stored
//! offers; a full-text index can replace it without changing the ranking.

use crate::gazetteer::{self, AreaObject};
use crate::holder::{Holder, HolderError, OfferRecord};
use crate::matching;
use crate::protocol::Offer;
use crate::store::Reads;
use serde_json::Value;
use std::collections::HashSet;

/// Computes the term sets of single fields with [`matching::offer_terms`] (the same
/// folding and synonyms as matching) on an otherwise empty offer, swapping each field in
/// and out so that nothing is copied.
struct FieldTerms {
    probe: Offer,
}

impl FieldTerms {
    fn new() -> Self {
        let probe = Offer {
            id: String::new(),
            source: crate::protocol::OfferSource { kind: String::new(), seller_id: String::new(), url: None },
            in_reply_to: None,
            title: String::new(),
            description: String::new(),
            category: String::new(),
            attributes: serde_json::Map::new(),
            price: crate::protocol::Money { amount: 0.0, currency: String::new() },
            area: AreaObject { country: String::new(), regions: Vec::new(), place: None },
            seller: crate::protocol::SellerPublic { id: String::new(), name: String::new(), url: None },
            published_at: String::new(),
            valid_until: None,
            extensions: Value::Null,
        };
        Self { probe }
    }

    fn of(&mut self, text: &mut String) -> HashSet<String> {
        std::mem::swap(&mut self.probe.title, text);
        let set = matching::offer_terms(&self.probe);
        std::mem::swap(&mut self.probe.title, text);
        set
    }
}

/// Relevance of `offer` for the statement terms `terms` (from
/// [`matching::statement_terms`]): 3 per term found in the title, 2 per term found in an
/// attribute value, 1 per term found in the description (each with inflection, see
/// [`matching::term_hit`]).
pub fn score(terms: &[String], offer: &Offer) -> u32 {
    score_with(&mut FieldTerms::new(), terms, &mut offer.clone())
}

fn score_with(fields: &mut FieldTerms, terms: &[String], offer: &mut Offer) -> u32 {
    if terms.is_empty() {
        return 0;
    }
    let hits = |set: &HashSet<String>| terms.iter().filter(|t| matching::term_hit(t, set)).count() as u32;
    let title = hits(&fields.of(&mut offer.title));
    let description = hits(&fields.of(&mut offer.description));
    let mut values = offer.attributes.values().filter_map(Value::as_str).collect::<Vec<_>>().join(" ");
    let attributes = hits(&fields.of(&mut values));
    3 * title + 2 * attributes + description
}

/// Searches the catalogue: current offers (active, not past `validUntil`) in `category`
/// (when given) whose area lies in `area` (when given), scored by [`score`]; when the
/// statement has terms (place names and function words do not count), offers scoring 0
/// are dropped. Best first: score descending, then price (in the holder's currency)
/// ascending, then id. At most `limit` offers.
///
/// # Errors
/// Storage errors.
pub fn search(
    holder: &Holder,
    statement: &str,
    area: Option<&AreaObject>,
    category: Option<&str>,
    limit: usize,
) -> Result<Vec<Offer>, HolderError> {
    if limit == 0 {
        return Ok(Vec::new());
    }
    let now = holder.clock.now();
    let terms = matching::statement_terms(statement);
    let records: Vec<OfferRecord> = holder.store.read(|rx| rx.all_offers())?;
    let mut hits: Vec<(u32, f64, Offer)> = Vec::new();
    let mut fields = FieldTerms::new();
    for rec in records {
        let mut o = rec.offer;
        let current = rec.active
            && o.valid_until.as_deref().is_none_or(|v| crate::clock::parse_rfc3339(v).is_ok_and(|t| t > now));
        if !current
            || category.is_some_and(|c| o.category != c)
            || area.is_some_and(|a| !gazetteer::contains(a, &o.area))
        {
            continue;
        }
        let s = score_with(&mut fields, &terms, &mut o);
        if s == 0 && !terms.is_empty() {
            continue;
        }
        let price = holder.settings.to_default_currency(o.price.amount, &o.price.currency).unwrap_or(f64::INFINITY);
        hits.push((s, price, o));
    }
    hits.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.total_cmp(&b.1)).then_with(|| a.2.id.cmp(&b.2.id)));
    hits.truncate(limit);
    Ok(hits.into_iter().map(|(_, _, o)| o).collect())
}
