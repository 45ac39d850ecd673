//! A standing-intent matching engine (a percolator: the intents are the stored queries,
//! offers are the incoming documents) for PROTOCOL.md §6 "when offers arrive, so new
//! offers reach standing intents".
//!
//! [`Engine::match_offer_indexed`] finds the active intents an offer matches without
//! scanning them all, and returns exactly what [`super::check`] (the oracle) returns over
//! all intents: the index only narrows the candidates.
//!
//! # Index
//! Intents are kept in compact `u32` slots. Each intent sits in one *bucket* per area
//! cell it covers: `(category, country, region)` for each of its regions, or
//! `(category, country, whole country)`. An offer visits at most two buckets (its first
//! region's and its country's whole-country bucket): an intent that contains all of the
//! offer's regions contains the first one. Inside a bucket an intent is in exactly one
//! of three groups:
//!
//! * **text** — intents whose statement has terms and whose minimum-should-match ratio
//!   needs at least `k ≥ 1` of them. `k` is derived with the oracle's own float
//!   expression (`found / n + 1e-9 ≥ min_should_match`). Terms are interned in a term
//!   dictionary, and the stem of each term (see [`super::stem`]) maps back to the terms
//!   that carry it; each bucket holds a posting list `term → slots`. For an offer the
//!   engine first finds the *dictionary* terms the offer hits — an exact lookup for
//!   every offer term `u`, and a lookup of every prefix of `u` of at least 4 characters
//!   in the stem map, keeping term `t` when `len(u) ≤ len(t) + 3` — exactly
//!   [`super::term_hit`]'s rule, but once per distinct term instead of once per intent.
//!   An intent is posted only under a *signature* of its terms (prefix filtering, as in
//!   set-similarity joins), so that the common words of real titles (`prodej`, `bytu`,
//!   `skoda`) do not make every offer walk long lists: either its rarest required
//!   designation (a match must contain every designation exactly, so it hits that term),
//!   or its `n − k + 1` rarest terms (an offer that hits `k` of the `n` terms hits at
//!   least one of any `n − k + 1`), whichever has the shorter lists when it is inserted
//!   ("rarest" by the dictionary's reference counts then; any choice is exact, a good
//!   one is fast). The postings of the hit terms give the candidates; each candidate's
//!   `found` — the oracle's count, since an intent's terms are distinct — is then
//!   counted over all its terms against the offer's hit terms, so `found ≥ k` is exact.
//! * **criteria** — intents without a text rule (no terms, or `k = 0`) that have a
//!   criteria constraint on a plain, non-numeric string or an any-of list of them (e.g.
//!   `make`, `model`): indexed by `(attribute, folded value)`; only an offer whose
//!   attribute folds to that value can meet the constraint.
//! * **rest** — the other intents without a text rule: ordered by price ceiling, so an
//!   offer visits only those whose ceiling admits its price (plus those without one).
//!
//! Candidates are filtered by the precomputed ceiling (the oracle's
//! `ceiling · (1 + 1e-9)`), the criteria constraints and the model designations
//! ([`super::StatementTerms::required`]), exactly as [`super::check`] does. Removal
//! updates the lists in place (swap-remove) and frees the slot for reuse; the term
//! dictionary is reference counted.

use super::{
    ceiling, check, constraint_holds, offer_terms, statement_analysis, Hit, IntentView, Params, StatementTerms,
};
use crate::gazetteer::{self, AreaObject};
use crate::protocol::{Budget, Offer};
use crate::text;
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{PoisonError, RwLock};

mod hot;
mod terms;
use hot::{Hot, HAS_CEILING, HAS_CRITERIA, INLINE};
use terms::{OfferHits, Terms};

/// Synthetic intents and offers for the engine's tests and the benches (feature `testkit`).
#[cfg(any(test, feature = "testkit"))]
#[doc(hidden)]
pub mod synth;

/// An active intent as the engine stores it (hidden limit already opened by the caller).
#[derive(Debug, Clone, PartialEq)]
pub struct EngineIntent {
    /// The intent id (`int_…`).
    pub id: String,
    /// Its category key.
    pub category: String,
    /// Its criteria without `category`.
    pub criteria: Map<String, Value>,
    /// Its normalised area.
    pub area: AreaObject,
    /// Its visible budget.
    pub budget: Option<Budget>,
    /// The opened hidden limit, in the budget's currency (or the holder default).
    pub hidden_limit: Option<f64>,
    /// The statement.
    pub statement: String,
}

impl EngineIntent {
    /// The oracle's view of this intent.
    pub fn view(&self) -> IntentView<'_> {
        IntentView {
            category: &self.category,
            criteria: &self.criteria,
            area: &self.area,
            budget: self.budget.as_ref(),
            hidden_limit: self.hidden_limit,
            statement: &self.statement,
        }
    }
}

/// The standing-intent matching engine. `Send + Sync`: readers match in parallel, writers
/// (`upsert`, `remove`) take a write lock.
pub struct Engine {
    params: Params,
    inner: RwLock<Inner>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("params", &self.params).field("len", &self.len()).finish()
    }
}

impl Engine {
    /// An empty engine.
    pub fn new(params: Params) -> Self {
        Self { params, inner: RwLock::new(Inner::default()) }
    }

    /// The parameters the engine matches with.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Inserts an intent, or replaces the stored one with the same id.
    pub fn upsert(&self, intent: EngineIntent) {
        let mut inner = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        inner.remove(&intent.id);
        inner.insert(intent, &self.params);
    }

    /// Removes an intent (no-op for an unknown id).
    pub fn remove(&self, id: &str) {
        self.inner.write().unwrap_or_else(PoisonError::into_inner).remove(id);
    }

    /// Number of stored intents.
    pub fn len(&self) -> usize {
        self.inner.read().unwrap_or_else(PoisonError::into_inner).ids.len()
    }

    /// Whether no intent is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[cfg(any(test, feature = "testkit"))]
    /// Active intents that `offer` matches, with the oracle's [`Hit`]; sorted by intent id.
    /// Equal to `check(intent, offer, offer_valid, params)` over every stored intent: the
    /// index narrows the candidates and [`check`] decides each one (tests and benches).
    pub fn match_offer(&self, offer: &Offer, offer_valid: bool) -> Vec<(String, Hit)> {
        self.run(offer, offer_valid, true)
    }

    #[cfg(any(test, feature = "testkit"))]
    /// How much index work `offer` costs (benches): the dictionary terms it hits, the
    /// posting entries those terms list in its buckets, and the candidate slots that pass
    /// the index (category, area bucket, count bound, price) before the exact checks.
    pub fn probe(&self, offer: &Offer) -> Probe {
        let inner = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        let Candidates { slots, hit_terms } = inner.candidates(offer, &self.params);
        let hits = hit_terms.unwrap_or_default().all;
        let postings = inner
            .offer_buckets(offer)
            .iter()
            .map(|b| hits.iter().map(|t| b.text.get(t).map_or(0, Vec::len)).sum::<usize>())
            .sum();
        Probe { hit_terms: hits.len(), postings, candidates: slots.len() }
    }

    /// Active intents that `offer` matches, with the oracle's [`Hit`], sorted by intent id:
    /// what [`check`] gives over every stored intent (asserted by the tests), but the
    /// survivors' [`Hit`]s are derived from the index — the offer's terms are folded once
    /// per offer instead of once per matching intent inside `check` — with the oracle's
    /// own functions ([`constraint_holds`], [`gazetteer::contains`], [`ceiling`]) and the
    /// exact count of terms that [`super::term_hit`] finds.
    pub fn match_offer_indexed(&self, offer: &Offer, offer_valid: bool) -> Vec<(String, Hit)> {
        self.run(offer, offer_valid, false)
    }

    fn run(&self, offer: &Offer, offer_valid: bool, by_oracle: bool) -> Vec<(String, Hit)> {
        if !offer_valid {
            return Vec::new();
        }
        let inner = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        let p = &self.params;
        let Candidates { slots, mut hit_terms } = inner.candidates(offer, p);
        // The buckets settle the area unless the offer lies in several regions: an offer
        // without a region only visits whole-country buckets, one with a region also the
        // bucket of that region, and both imply `gazetteer::contains`.
        let area_settled = offer.area.regions.len() <= 1;
        let mut hits: Vec<(&str, Hit)> = Vec::new();
        for (slot, found) in slots {
            let hot = &inner.hot[slot as usize];
            let Some(entry) = inner.slots[slot as usize].as_ref() else { continue };
            let intent = &entry.intent;
            // Exact pre-checks with the oracle's functions (category, the area's country
            // and first region, and the price were settled by the index).
            if hot.criteria()
                && !intent.criteria.iter().all(|(k, want)| constraint_holds(want, offer.attributes.get(k)))
            {
                continue;
            }
            let hit = if by_oracle {
                check(&intent.view(), offer, true, p)
            } else {
                if !area_settled && !gazetteer::contains(&intent.area, &offer.area) {
                    continue;
                }
                if !entry.required.is_empty() && p.min_should_match > 1e-9 {
                    let hits = hit_terms.get_or_insert_with(|| inner.terms.hits(&offer_terms(offer)));
                    if !entry.required.iter().all(|t| hits.exact.binary_search(t).is_ok()) {
                        continue;
                    }
                }
                let n = hot.terms as usize;
                let score = if n == 0 {
                    1.0
                } else {
                    let found = if found != UNCOUNTED {
                        found as usize
                    } else {
                        let hits = hit_terms.get_or_insert_with(|| inner.terms.hits(&offer_terms(offer)));
                        entry.terms.iter().filter(|t| hits.all.binary_search(t).is_ok()).count()
                    };
                    found as f64 / n as f64
                };
                if score + 1e-9 < p.min_should_match {
                    continue;
                }
                // The oracle's hit (matching::check).
                Some(Hit::new(score, !intent.criteria.is_empty(), n > 0))
            };
            if let Some(hit) = hit {
                hits.push((&intent.id, hit));
            }
        }
        // Sort small keys (the first 16 bytes of the id, then the id) rather than the hits.
        let mut order: Vec<([u8; 16], u32)> = hits
            .iter()
            .enumerate()
            .map(|(i, (id, _))| {
                let mut key = [0u8; 16];
                let n = id.len().min(16);
                key[..n].copy_from_slice(&id.as_bytes()[..n]);
                (key, i as u32)
            })
            .collect();
        order.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| hits[a.1 as usize].0.cmp(hits[b.1 as usize].0)));
        let mut hits: Vec<Option<(&str, Hit)>> = hits.into_iter().map(Some).collect();
        order.into_iter().filter_map(|(_, i)| hits[i as usize].take()).map(|(id, hit)| (id.to_owned(), hit)).collect()
    }
}

#[cfg(any(test, feature = "testkit"))]
/// The index work of one offer ([`Engine::probe`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// Dictionary terms the offer's text hits (exactly or by stem).
    pub hit_terms: usize,
    /// Posting entries listed under those terms in the offer's buckets.
    pub postings: usize,
    /// Slots that pass the index before the exact checks.
    pub candidates: usize,
}

/// Candidate slots of an offer with the number of their statement terms the offer hits
/// ([`UNCOUNTED`] outside the text group), and the offer's hit dictionary terms when
/// computed.
struct Candidates {
    slots: Vec<(u32, u32)>,
    hit_terms: Option<OfferHits>,
}

/// Found-term count of a candidate that was not counted (criteria and rest groups).
const UNCOUNTED: u32 = u32::MAX;

/// Criteria attributes preferred as the index key of an intent without a text rule (the
/// more selective first).
const CRITERIA_KEYS: &[&str] =
    &["model", "make", "type", "disposition", "body", "transmission", "fuel", "color", "transaction"];

/// Where an intent sits inside each of its buckets.
#[derive(Debug)]
enum Group {
    /// Never matches (its text rule cannot pass): not indexed.
    Never,
    /// Text group, posted under these term ids (its signature, a subset of
    /// `Entry::terms`).
    Text(Box<[u32]>),
    /// Criteria group: attribute and folded values (any of).
    Criteria(Box<str>, Vec<Box<str>>),
    /// Rest group without a (comparable) ceiling.
    Unbounded,
    /// Rest group ordered by ceiling key.
    ByCeiling(u64),
}

#[derive(Debug)]
struct Entry {
    intent: EngineIntent,
    /// Interned ids of the statement's terms (empty for [`Group::Never`]).
    terms: Vec<u32>,
    /// Interned ids of the statement's designations an offer must contain exactly
    /// ([`super::StatementTerms::required`], a subset of `terms`).
    required: Vec<u32>,
    buckets: Vec<u32>,
    group: Group,
}

#[derive(Debug, Default)]
struct Bucket {
    /// Term id → slots (text group).
    text: HashMap<u32, Vec<u32>>,
    /// Attribute → folded value → slots (criteria group).
    criteria: HashMap<Box<str>, HashMap<Box<str>, Vec<u32>>>,
    /// Rest group without a comparable ceiling.
    unbounded: Vec<u32>,
    /// Rest group with a ceiling, ordered by `(ceiling key, slot)`.
    by_ceiling: BTreeSet<(u64, u32)>,
}

impl Bucket {
    /// Posts `slot` in the lists of its `group` (`add`), or takes it out of them (an
    /// emptied list or attribute is dropped).
    fn update(&mut self, group: &Group, slot: u32, add: bool) {
        // Edits one list; whether it still holds a slot.
        let edit = |list: &mut Vec<u32>| {
            if add {
                list.push(slot);
            } else {
                remove_from(list, slot);
            }
            !list.is_empty()
        };
        match group {
            Group::Never => {}
            Group::Text(sig) => {
                for &t in sig.iter() {
                    if !edit(self.text.entry(t).or_default()) {
                        self.text.remove(&t);
                    }
                }
            }
            Group::Criteria(attr, keys) => {
                let by_value = self.criteria.entry(attr.clone()).or_default();
                for key in keys {
                    if !edit(by_value.entry(key.clone()).or_default()) {
                        by_value.remove(key);
                    }
                }
                if by_value.is_empty() {
                    self.criteria.remove(attr);
                }
            }
            Group::Unbounded => {
                edit(&mut self.unbounded);
            }
            Group::ByCeiling(c) if add => {
                self.by_ceiling.insert((*c, slot));
            }
            Group::ByCeiling(c) => {
                self.by_ceiling.remove(&(*c, slot));
            }
        }
    }
}

type BucketKey = (String, String, Option<String>);

#[derive(Debug, Default)]
struct Inner {
    ids: HashMap<String, u32>,
    slots: Vec<Option<Entry>>,
    hot: Vec<Hot>,
    free: Vec<u32>,
    terms: Terms,
    bucket_ids: HashMap<BucketKey, u32>,
    buckets: Vec<Bucket>,
}

thread_local! {
    /// Per-thread hit counters by slot (all zero between calls).
    static COUNTS: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
}

/// `contains` compares countries trimmed and ASCII-case-insensitively.
fn country_key(c: &str) -> String {
    c.trim().to_ascii_uppercase()
}

/// `contains` compares regions ASCII-case-insensitively (untrimmed).
fn region_key(r: &str) -> String {
    r.to_ascii_uppercase()
}

/// Order-preserving map of a non-NaN f64 to u64 (`-0.0` and `0.0` map alike).
fn ord_key(x: f64) -> u64 {
    let b = (x + 0.0).to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | (1 << 63)
    }
}

/// The least number of found terms out of `n` that passes the oracle's text rule
/// (`found / n + 1e-9 ≥ min_should_match`, score 1 when `n = 0`); `None` when none does.
pub fn min_hits(n: usize, min_should_match: f64) -> Option<u32> {
    if n == 0 {
        return ((1.0 + 1e-9).partial_cmp(&min_should_match) != Some(std::cmp::Ordering::Less)).then_some(0);
    }
    (0..=n)
        .find(|&f| ((f as f64 / n as f64) + 1e-9).partial_cmp(&min_should_match) != Some(std::cmp::Ordering::Less))
        .map(|f| f as u32)
}

/// Folded keys of a constraint that only a string attribute equal to one of them (after
/// folding and trimming) can meet; `None` when the constraint is not of that kind
/// (numbers and numeric strings also meet numbers, ranges compare numbers).
fn string_keys(want: &Value) -> Option<Vec<Box<str>>> {
    let key = |s: &str| -> Option<Box<str>> {
        if s.trim().parse::<f64>().is_ok() {
            return None;
        }
        Some(text::fold(s).trim().into())
    };
    let mut keys: Vec<Box<str>> = match want {
        Value::String(s) => vec![key(s)?],
        Value::Array(options) => {
            let mut keys = Vec::new();
            for o in options {
                match o {
                    Value::String(s) => keys.push(key(s)?),
                    Value::Number(_) => return None,
                    // Never equal to anything (the oracle's scalar_eq): contributes no key.
                    Value::Bool(_) | Value::Null | Value::Array(_) | Value::Object(_) => {}
                }
            }
            keys
        }
        // Never met: indexed under no key, so never visited.
        Value::Bool(_) | Value::Null => Vec::new(),
        Value::Number(_) | Value::Object(_) => return None,
    };
    keys.sort_unstable();
    keys.dedup();
    Some(keys)
}

fn remove_from(list: &mut Vec<u32>, slot: u32) {
    if let Some(i) = list.iter().position(|&s| s == slot) {
        list.swap_remove(i);
    }
}

impl Inner {
    fn bucket_id(&mut self, key: BucketKey) -> u32 {
        let next = self.buckets.len() as u32;
        let id = *self.bucket_ids.entry(key).or_insert(next);
        if id == next {
            self.buckets.push(Bucket::default());
        }
        id
    }

    fn insert(&mut self, intent: EngineIntent, params: &Params) {
        let StatementTerms { terms, required, .. } = statement_analysis(&intent.statement);
        let need = min_hits(terms.len(), params.min_should_match);
        let ceil = ceiling(&intent.view(), params).map(|c| c * (1.0 + 1e-9));
        let term_ids: Vec<u32> = match need {
            None => Vec::new(),
            Some(_) => terms.iter().map(|t| self.terms.acquire(t)).collect(),
        };
        let group = match need {
            None => Group::Never,
            Some(need) if need > 0 => Group::Text(self.terms.signature(&terms, &required, &term_ids, need)),
            Some(_) => {
                let best = intent
                    .criteria
                    .iter()
                    .filter_map(|(k, v)| {
                        let keys = string_keys(v)?;
                        let rank = CRITERIA_KEYS.iter().position(|c| c == k).unwrap_or(CRITERIA_KEYS.len());
                        Some(((rank, keys.len()), k, keys))
                    })
                    .min_by(|a, b| a.0.cmp(&b.0));
                match (best, ceil) {
                    (Some((_, k, keys)), _) => Group::Criteria(k.as_str().into(), keys),
                    (None, Some(c)) if !c.is_nan() => Group::ByCeiling(ord_key(c)),
                    (None, _) => Group::Unbounded,
                }
            }
        };
        let bucket_keys: Vec<BucketKey> = if matches!(group, Group::Never) {
            Vec::new()
        } else {
            let country = country_key(&intent.area.country);
            if intent.area.regions.is_empty() {
                vec![(intent.category.clone(), country, None)]
            } else {
                let mut regions: Vec<String> = intent.area.regions.iter().map(|r| region_key(r)).collect();
                regions.sort_unstable();
                regions.dedup();
                regions.into_iter().map(|r| (intent.category.clone(), country.clone(), Some(r))).collect()
            }
        };
        let buckets: Vec<u32> = bucket_keys.into_iter().map(|k| self.bucket_id(k)).collect();
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(None);
                self.hot.push(Hot::VACANT);
                (self.slots.len() - 1) as u32
            }
        };
        for &b in &buckets {
            self.buckets[b as usize].update(&group, slot, true);
        }
        let unposted: Vec<u32> = match &group {
            Group::Text(sig) => term_ids.iter().copied().filter(|t| !sig.contains(t)).collect(),
            _ => Vec::new(),
        };
        let required: Vec<u32> = required
            .iter()
            .filter_map(|r| terms.iter().position(|t| t == r).and_then(|i| term_ids.get(i)))
            .copied()
            .collect();
        let mut hot = Hot {
            ceil: ceil.unwrap_or(0.0),
            need: need.unwrap_or(u32::MAX),
            terms: terms.len() as u32,
            unposted: unposted.len() as u32,
            flags: if intent.criteria.is_empty() { 0 } else { HAS_CRITERIA }
                | if ceil.is_some() { HAS_CEILING } else { 0 },
            ..Hot::VACANT
        };
        if !term_ids.is_empty() && term_ids.len() <= INLINE {
            hot.inline = term_ids.len() as u8;
            hot.ids[..term_ids.len()].copy_from_slice(&term_ids);
            for (i, t) in term_ids.iter().enumerate() {
                if required.contains(t) {
                    hot.required |= 1 << i;
                }
            }
        }
        self.hot[slot as usize] = hot;
        self.ids.insert(intent.id.clone(), slot);
        self.slots[slot as usize] = Some(Entry { intent, terms: term_ids, required, buckets, group });
    }

    fn remove(&mut self, id: &str) {
        let Some(slot) = self.ids.remove(id) else { return };
        let Some(entry) = self.slots[slot as usize].take() else { return };
        for &b in &entry.buckets {
            self.buckets[b as usize].update(&entry.group, slot, false);
        }
        for &t in &entry.terms {
            self.terms.release(t);
        }
        self.hot[slot as usize] = Hot::VACANT;
        self.free.push(slot);
    }

    /// The buckets an offer visits: its country's whole-country bucket and its first
    /// region's, those that exist.
    fn offer_buckets(&self, offer: &Offer) -> Vec<&Bucket> {
        let country = country_key(&offer.area.country);
        let mut buckets: Vec<&Bucket> = Vec::with_capacity(2);
        let mut key: BucketKey = (offer.category.clone(), country, None);
        if let Some(&b) = self.bucket_ids.get(&key) {
            buckets.push(&self.buckets[b as usize]);
        }
        if let Some(r) = offer.area.regions.first() {
            key.2 = Some(region_key(r));
            if let Some(&b) = self.bucket_ids.get(&key) {
                buckets.push(&self.buckets[b as usize]);
            }
        }
        buckets
    }

    /// Slots that pass category, area bucket, text count and price: a superset of the
    /// matches, sorted and distinct.
    fn candidates(&self, offer: &Offer, p: &Params) -> Candidates {
        let buckets = self.offer_buckets(offer);
        let mut out = Vec::new();
        let mut hit_terms = None;
        if buckets.is_empty() {
            return Candidates { slots: out, hit_terms };
        }
        let price = p.rates.get(&offer.price.currency).map(|r| offer.price.amount * r);
        let ok = |slot: u32| self.hot[slot as usize].price_ok(price);

        // Text group: count hit terms per slot.
        if buckets.iter().any(|b| !b.text.is_empty()) {
            let offer_hits = self.terms.hits(&offer_terms(offer));
            let hits = &offer_hits.all;
            // Designations are required only while the text rule is on.
            let text_rule = p.min_should_match > 1e-9;
            if !hits.is_empty() {
                COUNTS.with(|counts| {
                    let mut counts = counts.borrow_mut();
                    if counts.len() < self.slots.len() {
                        counts.resize(self.slots.len(), 0);
                    }
                    let mut touched = Vec::new();
                    for b in &buckets {
                        for t in hits {
                            for &slot in b.text.get(t).map(Vec::as_slice).unwrap_or_default() {
                                let c = &mut counts[slot as usize];
                                if *c == 0 {
                                    touched.push(slot);
                                }
                                *c += 1;
                            }
                        }
                    }
                    for slot in touched {
                        let c = std::mem::take(&mut counts[slot as usize]);
                        let hot = &self.hot[slot as usize];
                        if c + hot.unposted < hot.need || !hot.price_ok(price) {
                            continue;
                        }
                        let found = match hot.found(&offer_hits) {
                            Some(Some(found)) => found,
                            // A required designation is missing (run checks the others).
                            Some(None) if text_rule => continue,
                            _ if hot.unposted == 0 => c,
                            _ => {
                                let Some(entry) = self.slots[slot as usize].as_ref() else { continue };
                                entry.terms.iter().filter(|t| hits.binary_search(t).is_ok()).count() as u32
                            }
                        };
                        if found >= hot.need {
                            out.push((slot, found));
                        }
                    }
                });
            }
            hit_terms = Some(offer_hits);
        }

        for b in &buckets {
            // Criteria group: only offer string attributes can meet a string constraint.
            if !b.criteria.is_empty() {
                for (k, v) in &offer.attributes {
                    let Value::String(s) = v else { continue };
                    let Some(by_value) = b.criteria.get(k.as_str()) else { continue };
                    if let Some(list) = by_value.get(text::fold(s).trim()) {
                        out.extend(list.iter().copied().filter(|&s| ok(s)).map(|s| (s, UNCOUNTED)));
                    }
                }
            }
            // Rest group.
            out.extend(b.unbounded.iter().copied().filter(|&s| ok(s)).map(|s| (s, UNCOUNTED)));
            match price {
                None => {}
                Some(x) if x.is_nan() => out.extend(b.by_ceiling.iter().map(|&(_, s)| (s, UNCOUNTED))),
                Some(x) => out.extend(
                    b.by_ceiling.range((ord_key(x), 0)..).map(|&(_, s)| s).filter(|&s| ok(s)).map(|s| (s, UNCOUNTED)),
                ),
            }
        }
        // Each slot is in one group of one of the visited buckets: already distinct.
        out.sort_unstable_by_key(|&(s, _)| s);
        debug_assert!(out.windows(2).all(|w| w[0].0 != w[1].0));
        Candidates { slots: out, hit_terms }
    }
}

#[cfg(test)]
mod tests;
