//! The engine's term dictionary: the statement terms of the indexed intents, interned
//! with reference counts, and the lookup of the terms an offer's text hits (exactly, or
//! by stem as [`crate::matching::term_hit`] accepts).

use super::*;

/// One interned term: its text, length in characters and how many intents use it.
#[derive(Debug)]
struct TermInfo {
    text: Box<str>,
    chars: u32,
    refs: u32,
}

/// Interned statement terms of the indexed intents, with the stem map of
/// [`crate::matching::term_hit`].
#[derive(Debug, Default)]
pub(super) struct Terms {
    ids: HashMap<Box<str>, u32>,
    info: Vec<Option<TermInfo>>,
    /// Stem → ids of the terms with that stem.
    stems: HashMap<Box<str>, Vec<u32>>,
    free: Vec<u32>,
    /// Longest stem ever added, in characters (an upper bound for prefix lookups).
    max_stem_chars: usize,
}

impl Terms {
    pub(super) fn acquire(&mut self, term: &str) -> u32 {
        if let Some(&id) = self.ids.get(term) {
            if let Some(info) = self.info[id as usize].as_mut() {
                info.refs += 1;
            }
            return id;
        }
        let info = TermInfo { text: term.into(), chars: term.chars().count() as u32, refs: 1 };
        let id = match self.free.pop() {
            Some(id) => {
                self.info[id as usize] = Some(info);
                id
            }
            None => {
                self.info.push(Some(info));
                (self.info.len() - 1) as u32
            }
        };
        self.ids.insert(term.into(), id);
        if let Some(s) = crate::matching::stem(term) {
            self.max_stem_chars = self.max_stem_chars.max(s.chars().count());
            self.stems.entry(s.into()).or_default().push(id);
        }
        id
    }

    /// How many stored intents use term `id` (0 for a free id).
    pub(super) fn refs(&self, id: u32) -> u32 {
        self.info.get(id as usize).and_then(Option::as_ref).map_or(0, |i| i.refs)
    }

    /// The term ids a text intent is posted under (see the engine's module docs): its rarest
    /// required designation, or its `n − need + 1` rarest terms, whichever has the fewer
    /// postings now. `terms`/`term_ids` are parallel; `required ⊆ terms`.
    pub(super) fn signature(&self, terms: &[String], required: &[String], term_ids: &[u32], need: u32) -> Box<[u32]> {
        let refs = |id: u32| u64::from(self.refs(id));
        let mut by_refs: Vec<u32> = term_ids.to_vec();
        by_refs.sort_unstable_by_key(|&id| (refs(id), id));
        let size = term_ids.len().saturating_sub(need as usize) + 1;
        by_refs.truncate(size.min(by_refs.len()));
        let prefix_cost: u64 = by_refs.iter().map(|&id| refs(id)).sum();
        let rarest_required = required
            .iter()
            .filter_map(|r| terms.iter().position(|t| t == r).map(|i| term_ids[i]))
            .min_by_key(|&id| (refs(id), id));
        match rarest_required {
            Some(id) if refs(id) < prefix_cost => Box::new([id]),
            _ => by_refs.into_boxed_slice(),
        }
    }

    pub(super) fn release(&mut self, id: u32) {
        let Some(slot) = self.info.get_mut(id as usize) else { return };
        let Some(info) = slot.as_mut() else { return };
        info.refs -= 1;
        if info.refs > 0 {
            return;
        }
        let Some(info) = slot.take() else { return };
        self.ids.remove(&info.text);
        if let Some(s) = crate::matching::stem(&info.text) {
            if let Some(list) = self.stems.get_mut(s.as_str()) {
                list.retain(|&t| t != id);
                if list.is_empty() {
                    self.stems.remove(s.as_str());
                }
            }
        }
        self.free.push(id);
    }

    /// The dictionary terms an offer's terms hit (see [`OfferHits`]).
    pub(super) fn hits(&self, offer_terms: &HashSet<String>) -> OfferHits {
        let mut all = Vec::new();
        let mut exact = Vec::new();
        for u in offer_terms {
            if let Some(&id) = self.ids.get(u.as_str()) {
                exact.push(id);
            }
            if self.stems.is_empty() {
                continue;
            }
            let ulen = u.chars().count();
            // A term `t` whose stem is a prefix of `u` hits when `len(u) ≤ len(t) + 3`; its
            // stem has `max(4, len(t) − 2)` characters, so only the prefixes of `u` of
            // `max(4, len(u) − 5)..=max_stem_chars` characters can be such a stem.
            let shortest = ulen.saturating_sub(5).max(4);
            for (n, (pos, c)) in u.char_indices().enumerate() {
                let n = n + 1;
                if n > self.max_stem_chars {
                    break;
                }
                if n < shortest {
                    continue;
                }
                let Some(list) = self.stems.get(&u[..pos + c.len_utf8()]) else { continue };
                for &id in list {
                    if let Some(info) = &self.info[id as usize] {
                        if ulen <= info.chars as usize + 3 {
                            all.push(id);
                        }
                    }
                }
            }
        }
        exact.sort_unstable();
        exact.dedup();
        all.extend_from_slice(&exact);
        all.sort_unstable();
        all.dedup();
        OfferHits { all, exact }
    }
}

/// The dictionary terms an offer's text hits, sorted and distinct: `all` those `t` for
/// which [`crate::matching::term_hit`]`(t, offer_terms)` holds, `exact` those among the
/// offer's terms themselves (what a required designation must be).
#[derive(Debug, Default)]
pub(super) struct OfferHits {
    pub(super) all: Vec<u32>,
    pub(super) exact: Vec<u32>,
}
