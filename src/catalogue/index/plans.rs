//! What one catalogue search may cost, and the cache of word plans.
//!
//! **Bounds per search, not per word** (a statement chosen by one client must not cost
//! more than a few ordinary searches): at most [`MAX_WORDS`] statement words take part
//! (in statement order; the rest are ignored), at most [`MAX_RANKING_TERMS`] phrases and
//! as many rank-only place names, and at most [`MAX_FORMS_PER_SEARCH`] inflected forms
//! over all words and fields (each word and field takes up to [`MAX_EXPANSIONS`] of
//! what is left, in statement order). Finding a word's forms walks the term dictionary
//! from its stem: at most [`MAX_SCANNED`] terms per field and segment. An ordinary
//! statement (a make, a model, a few words) stays far inside every bound, so its answer
//! is unchanged.
//!
//! **The plan cache** keeps each (field, word)'s [`WordPlan`] for one searcher
//! generation, as a segmented LRU: a plan enters a probation LRU of [`PROBATION`]
//! plans, and moves to a protected LRU of [`PROTECTED`] plans when it is used again.
//! Words used once — a client sending unique words — only ever replace each other in
//! probation; the words searched repeatedly stay protected.

use super::{expansions, IndexError};
use lru::LruCache;
use std::num::NonZeroUsize;
use std::sync::Arc;
use tantivy::schema::Field;
use tantivy::{Searcher, Term};

/// At most this many inflected forms per statement word and field in a search.
pub(super) const MAX_EXPANSIONS: usize = 64;
/// At most this many statement words take part in a search.
pub(super) const MAX_WORDS: usize = 12;
/// At most this many phrases, and this many rank-only place names, rank a search.
pub(super) const MAX_RANKING_TERMS: usize = 8;
/// At most this many inflected forms in one search, over all its words and fields.
pub(super) const MAX_FORMS_PER_SEARCH: usize = 192;
/// At most this many dictionary terms are visited per field and segment to find the
/// inflected forms of one word.
pub(super) const MAX_SCANNED: usize = 1024;
/// Plans used once (the probation segment).
pub(super) const PROBATION: usize = 1024;
/// Plans used at least twice (the protected segment).
pub(super) const PROTECTED: usize = 4096;

/// What the query of one word in one field needs from the term dictionaries, fixed for
/// one searcher generation: the exact term's document frequency and the inflected forms
/// ([`expansions`] without the word, at most [`MAX_EXPANSIONS`]) with theirs.
#[derive(Debug)]
pub(super) struct WordPlan {
    pub(super) exact_df: u64,
    pub(super) forms: Vec<(Term, u64)>,
}

impl WordPlan {
    /// Reads the plan of `word` in `field` from `searcher`'s term dictionaries.
    pub(super) fn read(searcher: &Searcher, field: Field, word: &str) -> Result<Self, IndexError> {
        let exact_df = searcher.doc_freq(&Term::from_field_text(field, word))?;
        let mut forms = expansions(searcher, field, word, MAX_EXPANSIONS, MAX_SCANNED)?;
        forms.remove(word);
        let mut out = Vec::with_capacity(forms.len());
        for t in forms {
            let term = Term::from_field_text(field, &t);
            let df = searcher.doc_freq(&term)?;
            out.push((term, df));
        }
        Ok(Self { exact_df, forms: out })
    }
}

type Key = (Field, String);

/// The segmented LRU of [`WordPlan`]s of one searcher generation (see the module docs).
pub(super) struct PlanCache {
    generation: u64,
    probation: LruCache<Key, Arc<WordPlan>>,
    protected: LruCache<Key, Arc<WordPlan>>,
}

impl PlanCache {
    pub(super) fn new() -> Self {
        let cap = |n: usize| NonZeroUsize::new(n).unwrap_or(NonZeroUsize::MIN);
        Self {
            generation: u64::MAX,
            probation: LruCache::new(cap(PROBATION)),
            protected: LruCache::new(cap(PROTECTED)),
        }
    }

    /// Empties the cache when `generation` is not the one it holds.
    fn at(&mut self, generation: u64) {
        if self.generation != generation {
            self.generation = generation;
            self.probation.clear();
            self.protected.clear();
        }
    }

    /// The plan of (field, word) for `generation`; a plan found in probation moves to
    /// the protected segment.
    pub(super) fn get(&mut self, generation: u64, field: Field, word: &str) -> Option<Arc<WordPlan>> {
        self.at(generation);
        let key = (field, word.to_owned());
        if let Some(p) = self.protected.get(&key) {
            return Some(p.clone());
        }
        let p = self.probation.pop(&key)?;
        self.protected.put(key, p.clone());
        Some(p)
    }

    /// Keeps a plan of `generation` (in probation).
    pub(super) fn put(&mut self, generation: u64, field: Field, word: &str, plan: Arc<WordPlan>) {
        self.at(generation);
        self.probation.put((field, word.to_owned()), plan);
    }

    /// Empties the cache (tests: the uncached answer).
    #[cfg(test)]
    pub(super) fn clear(&mut self) {
        self.probation.clear();
        self.protected.clear();
    }

    /// Whether a plan of (field, word) is kept, without touching its recency (tests).
    #[cfg(test)]
    pub(super) fn holds(&self, field: Field, word: &str) -> bool {
        let key = (field, word.to_owned());
        self.protected.contains(&key) || self.probation.contains(&key)
    }
}
