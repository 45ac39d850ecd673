//! The catalogue search of the offer index (PROTOCOL.md §3 `intent_search_offers`).
//!
//! **A search is a handful of plain term lookups** (the language work is done at index
//! time, see [`super::analysis`]): each statement word looks up one term
//! ([`lookup_term`]: its stem form, which finds its inflected forms, or itself) in the
//! one searchable field `text` (title, attributes and description weighted by
//! repetition), each phrase its own term. The query is a union of those term queries,
//! scored with BM25, so tantivy's block-max WAND prunes
//! the offers that cannot enter the top `limit` ([`collector::TopIds`]); the category,
//! area and validity filters are fast-field checks on the collected documents, not
//! clauses that would turn the pruning off.
//!
//! **Bounds per search, not per word** (a statement chosen by one client must not cost
//! more than a few ordinary searches): at most [`MAX_WORDS`] statement words take part
//! (in statement order; the rest are ignored), at most [`MAX_RANKING_TERMS`] phrases and
//! as many rank-only place names; each one is one term, so a search looks up at most
//! `MAX_WORDS + 2 × MAX_RANKING_TERMS` terms and never walks a term dictionary.

use super::analysis::{letter_phrases, lookup_term};
use super::collector::{AreaFilter, Hit, TopIds};
use super::*;
use tantivy::query::{AllQuery, EnableScoring};
use tantivy::schema::document::{DeserializeError, DocumentDeserialize, DocumentDeserializer};

/// At most this many statement words take part in a search.
pub(super) const MAX_WORDS: usize = 12;
/// At most this many phrases, and this many rank-only place names, rank a search.
pub(super) const MAX_RANKING_TERMS: usize = 8;
/// A phrase (`model_3`, `c_max`) ranks with this share of a word, on top of its words.
const PHRASE_SHARE: Score = 1.0;
/// Place names (with an area filter) only rank, with this share of a word.
const RANK_ONLY_SHARE: Score = 0.25;

/// Statement terms of a catalogue search.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Analysed {
    /// Terms of which an offer must contain at least one (with inflection).
    pub(super) words: Vec<String>,
    /// Word + designation phrases (`model_3`, `byt_3+kk`, see
    /// [`matching::TermKind::Phrase`]) and one-letter phrases (`c_max`, `tridy_c`, see
    /// [`letter_phrases`]): rank only, with [`PHRASE_SHARE`].
    pub(super) phrases: Vec<String>,
    /// Terms that only rank: place names when an area filter is given.
    pub(super) rank_only: Vec<String>,
}

/// Splits a search statement into terms with [`matching::statement_analysis`] (the same
/// analysis as matching): its words and designations must match; its phrases rank;
/// place names count as words only when there are no other words and no area filter
/// (then "Košice" finds offers that mention Košice), and otherwise only rank. At most
/// [`MAX_WORDS`] words, [`MAX_RANKING_TERMS`] phrases and as many place names, the
/// first in the statement.
pub(super) fn analyse(statement: &str, has_area: bool) -> Analysed {
    let st = matching::statement_analysis(statement);
    let mut words: Vec<String> = st.terms.into_iter().filter(|t| !is_stop_word(t)).collect();
    let places = gazetteer::place_tokens();
    let mut seen: HashSet<String> = words.iter().cloned().collect();
    let mut place_terms = Vec::new();
    let all = matching::analyse(statement);
    for t in &all {
        if t.kind != matching::TermKind::Word || is_stop_word(&t.text) || !seen.insert(t.text.clone()) {
            continue;
        }
        if t.text.chars().count() >= 2 && places.contains(&t.text) {
            place_terms.push(t.text.clone());
        }
    }
    if words.is_empty() && !has_area {
        words = std::mem::take(&mut place_terms);
    }
    let mut phrases = st.phrases;
    for p in letter_phrases(&all) {
        if !phrases.contains(&p) {
            phrases.push(p);
        }
    }
    // Bounds per search: the first words, phrases and place names only.
    words.truncate(MAX_WORDS);
    phrases.truncate(MAX_RANKING_TERMS);
    place_terms.truncate(MAX_RANKING_TERMS);
    Analysed { words, phrases, rank_only: place_terms }
}

/// The stored fields of an offer document, each a string (`id`, `offer`), read from the
/// document store as they are: a [`TantivyDocument`] would first build its value tree
/// and then be copied from (a tenth of a search's CPU went to the two).
struct StoredStrings(Vec<(Field, String)>);

impl DocumentDeserialize for StoredStrings {
    fn deserialize<'de, D: DocumentDeserializer<'de>>(mut doc: D) -> Result<Self, DeserializeError> {
        let mut fields = Vec::with_capacity(doc.size_hint());
        while let Some(field) = doc.next_field::<String>()? {
            fields.push(field);
        }
        Ok(Self(fields))
    }
}

impl OfferIndex {
    #[cfg(any(test, feature = "testkit"))]
    /// The ids and scores of [`Self::search_offers`]' hits, current or not (tests, benches).
    pub fn search(
        &self,
        statement: &str,
        area: Option<&AreaObject>,
        category: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, f32)>, IndexError> {
        let searcher = self.reader.searcher();
        let hits = self.top(&searcher, statement, area, category, limit, None)?;
        let ids = super::collector::IdColumns::of(&searcher)?;
        hits.into_iter().map(|h| Ok((ids.id(&h)?, h.score))).collect()
    }

    /// The answer of `intent_search_offers` (PROTOCOL.md §3) from the index alone: the
    /// stored public offers (each the JSON text of `serde_json::to_value(&offer)`) of the
    /// best `limit` hits among the offers current at `now`, best first; offers past
    /// `validUntil` are dropped while collecting, so they never take the place of a
    /// current offer.
    ///
    /// An offer must contain at least one statement word ([`analyse`]) in its title,
    /// attribute values or description, exactly or inflected (see [`super::analysis`]).
    /// The score is BM25 per word over the three, weighted title 3, attributes 2 and
    /// description 1 by repetition ([`super::analysis::text_tokens`]). `category` and `area` filter (as [`gazetteer::contains`]). With no words, the
    /// offers of the filter come newest first; with no words and no filter, nothing.
    /// Order: score descending, then (without words) newest first, then cheaper first
    /// ([`Self::open_priced`]), then id. Searches the last commit (see
    /// [`super::REFRESH_LAG`]).
    ///
    /// # Errors
    /// tantivy errors; a hit without its stored offer (an index written without it).
    pub fn search_offers(
        &self,
        statement: &str,
        area: Option<&AreaObject>,
        category: Option<&str>,
        limit: usize,
        now: OffsetDateTime,
    ) -> Result<Vec<String>, IndexError> {
        let searcher = self.reader.searcher();
        let hits = self.top(&searcher, statement, area, category, limit, Some(nanos(now)))?;
        let mut out = Vec::with_capacity(hits.len());
        for h in &hits {
            let StoredStrings(fields) = searcher.doc(h.address)?;
            let json = fields
                .into_iter()
                .find_map(|(f, s)| (f == self.f.offer).then_some(s))
                .ok_or_else(|| tantivy::TantivyError::SchemaError("an offer index hit has no stored offer".into()))?;
            out.push(json);
        }
        Ok(out)
    }

    #[cfg(any(test, feature = "testkit"))]
    /// The floor of the search benchmark: a plain tantivy BM25 top-`limit` OR query of the
    /// statement's folded words in the searchable field (each as the one term that
    /// indexes it, [`lookup_term`]), no filter, no stored offer read. Returns the number
    /// of hits.
    ///
    /// # Errors
    /// tantivy errors.
    #[doc(hidden)]
    pub fn floor_search(&self, statement: &str, limit: usize) -> Result<usize, IndexError> {
        let searcher = self.reader.searcher();
        let mut clauses: Vec<Clause> = Vec::new();
        for t in matching::text_terms(statement).filter(|t| !is_stop_word(t)) {
            let q = TermQuery::new(Term::from_field_text(self.f.text, &lookup_term(&t)), IndexRecordOption::WithFreqs);
            clauses.push((Occur::Should, Box::new(q)));
        }
        let top = tantivy::collector::TopDocs::with_limit(limit.max(1)).order_by_score();
        Ok(searcher.search(&BooleanQuery::new(clauses), &top)?.len())
    }

    /// The best `limit` hits of `statement` (see [`Self::search_offers`]); with `current_at`
    /// (Unix nanoseconds), only offers whose `validUntil` lies after it.
    pub(super) fn top(
        &self,
        searcher: &Searcher,
        statement: &str,
        area: Option<&AreaObject>,
        category: Option<&str>,
        limit: usize,
        current_at: Option<i64>,
    ) -> Result<Vec<Hit<u64>>, IndexError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let terms = analyse(statement, area.is_some());
        if terms.words.is_empty() && area.is_none() && category.is_none() {
            return Ok(Vec::new());
        }
        let ranking = self.ranking_clauses(&terms);
        let query: Box<dyn Query> = if terms.words.is_empty() {
            // The filter's offers (newest first), ranked by the place names they mention.
            let mut clauses: Vec<Clause> = vec![(Occur::Must, Box::new(ConstScoreQuery::new(Box::new(AllQuery), 0.0)))];
            clauses.extend(ranking.1);
            Box::new(BooleanQuery::new(clauses))
        } else if ranking.1.is_empty() {
            // The common case: one union of term queries, pruned by block-max WAND.
            Box::new(BooleanQuery::new(ranking.0))
        } else {
            let mut clauses: Vec<Clause> = vec![(Occur::Must, Box::new(BooleanQuery::new(ranking.0)))];
            clauses.extend(ranking.1);
            Box::new(BooleanQuery::new(clauses))
        };
        let filter = AreaFilter {
            category: category.map(str::to_owned),
            area: area.map(|a| (code(&a.country), a.regions.iter().map(|r| code(r)).collect())),
        };
        let collector = TopIds { limit, newest_first: terms.words.is_empty(), current_at, filter };
        let weight = query.weight(EnableScoring::enabled_from_searcher(searcher))?;
        Ok(collector.search(searcher, weight.as_ref())?)
    }

    /// The term clauses of a search: (the words' and phrases' clauses, which select and
    /// rank; the rank-only place names' clauses). One term per word or phrase.
    fn ranking_clauses(&self, terms: &Analysed) -> (Vec<Clause>, Vec<Clause>) {
        let mut select: Vec<Clause> = Vec::new();
        let mut rank_only: Vec<Clause> = Vec::new();
        let add = |out: &mut Vec<Clause>, term: &str, share: Score| {
            let q = TermQuery::new(Term::from_field_text(self.f.text, term), IndexRecordOption::WithFreqs);
            out.push((Occur::Should, Box::new(BoostQuery::new(Box::new(q), share))));
        };
        if !terms.words.is_empty() {
            for w in &terms.words {
                add(&mut select, &lookup_term(w), 1.0);
            }
            for p in &terms.phrases {
                add(&mut select, p, PHRASE_SHARE);
            }
        }
        for t in &terms.rank_only {
            add(&mut rank_only, t, RANK_ONLY_SHARE);
        }
        (select, rank_only)
    }

    /// The terms one search of `statement` looks up (tests: the bound per search).
    #[cfg(test)]
    pub(super) fn lookups(&self, statement: &str, has_area: bool) -> usize {
        let (a, b) = self.ranking_clauses(&analyse(statement, has_area));
        a.len() + b.len()
    }
}
