//! The full-text offer index (tantivy): the ordinary catalogue search of
//! `intent_search_offers` (PROTOCOL.md §3) and the candidate offers of an intent that
//! becomes active (PROTOCOL.md §6).
//!
//! The index is derived from the store and never a second source of truth: it holds
//! the active catalogue offers (with each one's public JSON and `validUntil`, so that a
//! search is answered without reading the store, see [`OfferIndex::search_offers`]), and
//! the generation stored with each commit says which state of the store it reflects. A
//! missing, stale or unreadable index, or one of another schema, is rebuilt from the store.
//!
//! Text analysis: every text field is tokenized with exactly the token stream of
//! [`matching::text_terms`] (case and diacritics folded as in [`crate::text::fold`],
//! split on non-alphanumerics, domain synonyms folded by [`matching::canonical`]), so that
//! the statement terms of [`matching::statement_terms`] meet the indexed terms. The
//! searchable fields `title`, `attrs` and `description` (analyzer [`ANALYZER`]) also drop
//! sk/cs/en stop words; the `terms` field (analyzer [`TERMS_ANALYZER`]) keeps every token,
//! so that [`OfferIndex::candidates_for_intent`] is a true superset of the text rule of
//! [`matching::check`]. Change [`INDEX_VERSION`] when the analysis changes: an index
//! written with other analysis reports no generation and is rebuilt by its owner.

mod analysis;
mod collector;
mod plans;

use crate::gazetteer::{self, AreaObject};
use crate::matching;
use crate::protocol::Offer;
use analysis::{analysis_fingerprint, IstoTokenizer};
pub use analysis::{is_stop_word, ANALYZER, TERMS_ANALYZER};
use collector::{AllIds, TopIds};
use plans::{PlanCache, WordPlan, MAX_FORMS_PER_SEARCH, MAX_RANKING_TERMS, MAX_WORDS};
use serde_json::Value;
use std::collections::{BTreeSet, BinaryHeap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::{Column, StrColumn};
use tantivy::directory::MmapDirectory;
use tantivy::query::{
    BooleanQuery, BoostQuery, ConstScoreQuery, DisjunctionMaxQuery, Occur, Query, TermQuery, TermSetQuery,
};
use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions, Value as _, FAST, STORED, STRING,
};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{
    DocAddress, DocId, Index, IndexReader, IndexSettings, IndexWriter, ReloadPolicy, Score, Searcher, SegmentOrdinal,
    SegmentReader, TantivyDocument, Term,
};
use time::OffsetDateTime;

/// Version of the schema and analysis; part of the analyzer names (so a schema written
/// by another version does not compare equal and is recreated) and of the commit payload.
pub const INDEX_VERSION: u32 = 3;
/// Memory budget of the index writer (split over its indexing threads, one per core up
/// to 4). The writer exists only while a rebuild or an update runs (see [`OfferIndex`]).
const WRITER_HEAP_BYTES: usize = 64 << 20;
/// Field weights of the catalogue search (as the scan search: title 3, attributes 2,
/// description 1).
const TITLE_BOOST: Score = 3.0;
const ATTRS_BOOST: Score = 2.0;
const DESCRIPTION_BOOST: Score = 1.0;
/// An inflected form (shared stem, see [`matching::stem`]) scores this share of what an
/// exact hit of the same rarity scores.
const INFLECTED_SHARE: Score = 0.8;
/// A word + designation phrase (`model_3`) ranks with this share of a word, on top of
/// its two terms.
const PHRASE_SHARE: Score = 1.0;
/// Place names (with an area filter) only rank, with this share of a word.
const RANK_ONLY_SHARE: Score = 0.25;

/// Index failures: tantivy errors and I/O on the index directory.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// tantivy reported an error.
    #[error("offer index: {0}")]
    Tantivy(#[from] tantivy::TantivyError),
    /// The index directory could not be opened.
    #[error("offer index directory: {0}")]
    Directory(#[from] tantivy::directory::error::OpenDirectoryError),
    /// The index files could not be read.
    #[error("offer index: {0}")]
    Read(#[from] tantivy::directory::error::OpenReadError),
    /// I/O on the index directory.
    #[error("offer index: {0}")]
    Io(#[from] std::io::Error),
    /// An offer could not be written as, or read back from, its stored JSON.
    #[error("offer index: stored offer: {0}")]
    Json(#[from] serde_json::Error),
}

/// One clause of a boolean query.
type Clause = (Occur, Box<dyn Query>);

/// The fields of the schema.
#[derive(Debug, Clone, Copy)]
struct Fields {
    id: Field,
    category: Field,
    country: Field,
    region: Field,
    title: Field,
    attrs: Field,
    description: Field,
    terms: Field,
    published: Field,
    /// The public offer as `intent_search_offers` answers it: the JSON text of
    /// `serde_json::to_value(&offer)` (stored, not indexed).
    offer: Field,
    /// `validUntil` in Unix nanoseconds (fast field): `i64::MAX` without one,
    /// `i64::MIN` when it does not parse (never current, as the store's check).
    valid_until: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let text = |analyzer: &str, record: IndexRecordOption, norms: bool| {
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default().set_tokenizer(analyzer).set_index_option(record).set_fieldnorms(norms),
        )
    };
    let searchable = || text(ANALYZER, IndexRecordOption::WithFreqs, true);
    let f = Fields {
        id: b.add_text_field("id", STRING | STORED | FAST),
        category: b.add_text_field("category", STRING),
        country: b.add_text_field("country", STRING),
        region: b.add_text_field("region", STRING),
        title: b.add_text_field("title", searchable()),
        attrs: b.add_text_field("attrs", searchable()),
        description: b.add_text_field("description", searchable()),
        terms: b.add_text_field("terms", text(TERMS_ANALYZER, IndexRecordOption::Basic, false)),
        published: b.add_i64_field("published", NumericOptions::default().set_fast()),
        offer: b.add_text_field("offer", STORED),
        valid_until: b.add_i64_field("valid_until", NumericOptions::default().set_fast()),
    };
    (b.build(), f)
}

/// `validUntil` as indexed (Unix nanoseconds): `i64::MAX` when there is none (always
/// current), `i64::MIN` when it does not parse as RFC 3339 (never current: the store's
/// check `parse_rfc3339(v).is_ok_and(|t| t > now)` fails for it).
fn valid_until_nanos(valid_until: Option<&str>) -> i64 {
    match valid_until {
        None => i64::MAX,
        Some(v) => match crate::clock::parse_rfc3339(v) {
            Ok(t) => nanos(t),
            Err(_) => i64::MIN,
        },
    }
}

/// Unix nanoseconds of `t`, saturated to the range of `i64` (years 1677 to 2262).
fn nanos(t: OffsetDateTime) -> i64 {
    let n = t.unix_timestamp_nanos();
    i64::try_from(n).unwrap_or(if n < 0 { i64::MIN } else { i64::MAX })
}

/// Settings of a new index: the document store (the stored offers' JSON, read for every
/// search hit) uncompressed in 4 KiB blocks. Reading a hit's offer is then a copy and a
/// decode, about a third of what LZ4 blocks of 16 KiB (tantivy's default) cost; the
/// store takes about the offers' JSON size on disk (~1 KB per offer).
fn settings() -> IndexSettings {
    IndexSettings {
        docstore_compression: tantivy::store::Compressor::None,
        docstore_blocksize: 4096,
        ..IndexSettings::default()
    }
}

/// A region or country code as indexed: trimmed, upper case.
fn code(s: &str) -> String {
    s.trim().to_ascii_uppercase()
}

/// The offer index: derived from the store, never a second source of truth.
///
/// Its tantivy `IndexWriter` is made for each [`OfferIndex::rebuild`] and
/// [`OfferIndex::apply`] and ended after the commit and the merges it started (issue 12
/// point 3): held for the process lifetime it kept its indexing, merge and segment
/// updater threads (7 on 2 cores) and the directory's writer lock, for updates that come
/// only with catalogue imports and withdrawals. Making one costs about a millisecond
/// beside the commit's fsyncs.
pub struct OfferIndex {
    index: Index,
    reader: IndexReader,
    /// Serialises the writers (tantivy allows one per index).
    writing: Mutex<()>,
    f: Fields,
    generation: Mutex<Option<u64>>,
    /// The `region` terms of one searcher generation (for the area filter's exclusions):
    /// read once per index commit instead of once per search.
    regions: Mutex<Option<(u64, Arc<BTreeSet<String>>)>>,
    /// The [`WordPlan`]s of (field, word) pairs for one searcher generation, a
    /// segmented LRU (see [`plans`]); emptied when the reader has reloaded.
    plans: Mutex<PlanCache>,
}

impl std::fmt::Debug for OfferIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OfferIndex").field("generation", &self.generation()).field("docs", &self.num_docs()).finish()
    }
}

/// Statement terms of a catalogue search.
#[derive(Debug, Default, PartialEq)]
struct Analysed {
    /// Terms of which an offer must contain at least one (with inflection).
    words: Vec<String>,
    /// Word + designation phrases (`model_3`, `byt_3+kk`, see
    /// [`matching::TermKind::Phrase`]): rank only, with [`PHRASE_SHARE`].
    phrases: Vec<String>,
    /// Terms that only rank: place names when an area filter is given.
    rank_only: Vec<String>,
}

/// Splits a search statement into terms with [`matching::statement_analysis`] (the same
/// analysis as matching): its words and model designations (without stop words) must
/// match; its phrases rank; place names count as words only when there are no other
/// words and no area filter (then "Košice" finds offers that mention Košice), and
/// otherwise only rank. Quantities (`do 12 000 EUR`, `150000 km`) are ignored. At most
/// [`MAX_WORDS`] words, [`MAX_RANKING_TERMS`] phrases and as many place names, the
/// first in the statement.
fn analyse(statement: &str, has_area: bool) -> Analysed {
    let st = matching::statement_analysis(statement);
    let mut words: Vec<String> = st.terms.into_iter().filter(|t| !is_stop_word(t)).collect();
    let places = gazetteer::place_tokens();
    let mut seen: HashSet<String> = words.iter().cloned().collect();
    let mut place_terms = Vec::new();
    for t in matching::analyse(statement) {
        if t.kind != matching::TermKind::Word || is_stop_word(&t.text) || !seen.insert(t.text.clone()) {
            continue;
        }
        if t.text.chars().count() >= 2 && places.contains(&t.text) {
            place_terms.push(t.text);
        }
    }
    if words.is_empty() && !has_area {
        words = std::mem::take(&mut place_terms);
    }
    // Bounds per search (see [`plans`]): the first words, phrases and place names only.
    let mut phrases = st.phrases;
    words.truncate(MAX_WORDS);
    phrases.truncate(MAX_RANKING_TERMS);
    place_terms.truncate(MAX_RANKING_TERMS);
    Analysed { words, phrases, rank_only: place_terms }
}

/// BM25's inverse document frequency (as tantivy computes it).
fn idf(doc_freq: u64, docs: u64) -> Score {
    let (df, n) = (doc_freq.min(docs) as Score, docs as Score);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

impl OfferIndex {
    /// Opens or creates the index in `dir` (DATA_DIR/index), or in RAM when `dir` is None
    /// (tests). A directory whose schema does not match (older isto) or that cannot be
    /// opened is wiped and recreated (the index is derived; its owner rebuilds it when
    /// [`Self::generation`] is not the store's).
    ///
    /// # Errors
    /// I/O on the directory, tantivy errors.
    pub fn open(dir: Option<&Path>) -> Result<Self, IndexError> {
        let (schema, f) = schema();
        let index = match dir {
            None => Index::builder().schema(schema).settings(settings()).create_in_ram()?,
            Some(dir) => open_dir(dir, &schema)?,
        };
        index.tokenizers().register(ANALYZER, TextAnalyzer::from(IstoTokenizer { drop_stop_words: true }));
        index.tokenizers().register(TERMS_ANALYZER, TextAnalyzer::from(IstoTokenizer { drop_stop_words: false }));
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
        let generation = stored_generation(&index)?;
        Ok(Self {
            index,
            reader,
            writing: Mutex::new(()),
            f,
            generation: Mutex::new(generation),
            regions: Mutex::new(None),
            plans: Mutex::new(PlanCache::new()),
        })
    }

    /// The generation stored with the last commit (commit payload), None for a fresh
    /// index (or one written with other analysis, see [`INDEX_VERSION`]).
    pub fn generation(&self) -> Option<u64> {
        *self.generation.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Number of offers in the index (as of the last commit).
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Replaces the whole index with `offers` (active offers only) and commits with
    /// `generation`. Returns the number of offers indexed.
    ///
    /// # Errors
    /// tantivy errors (also another process holding the index's writer lock); the index
    /// is then left as it was.
    pub fn rebuild(&self, offers: impl Iterator<Item = Offer>, generation: u64) -> Result<u64, IndexError> {
        self.write(generation, |w| {
            w.delete_all_documents()?;
            let mut n = 0u64;
            for o in offers {
                w.add_document(self.document(&o)?)?;
                n += 1;
            }
            Ok(n)
        })
    }

    /// Adds or replaces offers (delete by id term, then add) and removes the `removed`
    /// ids; commits with `generation`. `upserts` must be active offers (an offer that
    /// became inactive belongs in `removed`).
    ///
    /// # Errors
    /// tantivy errors (also another process holding the index's writer lock); the index
    /// is then left as it was.
    pub fn apply(&self, upserts: &[Offer], removed: &[String], generation: u64) -> Result<(), IndexError> {
        self.write(generation, |w| {
            for o in upserts {
                w.delete_term(Term::from_field_text(self.f.id, &o.id));
                w.add_document(self.document(o)?)?;
            }
            for id in removed {
                w.delete_term(Term::from_field_text(self.f.id, id));
            }
            Ok(())
        })
    }

    /// Runs `f` on a new writer and commits with `generation`; then waits for the merges
    /// the commit started and ends the writer (its threads and memory), and shows the
    /// merged segments to searches. When `f` or the commit fails, the writer is dropped
    /// uncommitted: the index stays as it was.
    fn write<T>(
        &self,
        generation: u64,
        f: impl FnOnce(&mut IndexWriter) -> Result<T, IndexError>,
    ) -> Result<T, IndexError> {
        let _one = self.writing.lock().unwrap_or_else(PoisonError::into_inner);
        let mut w: IndexWriter = self.index.writer(WRITER_HEAP_BYTES)?;
        let out = f(&mut w)?;
        let payload = serde_json::json!({"generation": generation, "analysis": analysis_fingerprint()}).to_string();
        let mut prepared = w.prepare_commit()?;
        prepared.set_payload(&payload);
        prepared.commit()?;
        self.reader.reload()?;
        *self.generation.lock().unwrap_or_else(PoisonError::into_inner) = Some(generation);
        // Committed: a failed merge leaves the committed segments as they are.
        match w.wait_merging_threads() {
            Ok(()) => self.reader.reload()?,
            Err(e) => tracing::warn!(error = %e, "offer index merge failed; the index keeps its segments"),
        }
        Ok(out)
    }

    /// The index document of an offer: its searchable and filter fields, the public
    /// offer's JSON and `validUntil`.
    fn document(&self, o: &Offer) -> Result<TantivyDocument, IndexError> {
        let f = &self.f;
        let mut d = TantivyDocument::new();
        d.add_text(f.id, &o.id);
        d.add_text(f.category, &o.category);
        let country = code(&o.area.country);
        if !country.is_empty() {
            d.add_text(f.country, &country);
        }
        for r in &o.area.regions {
            let r = code(r);
            if !r.is_empty() {
                d.add_text(f.region, &r);
            }
        }
        d.add_text(f.title, &o.title);
        d.add_text(f.description, &o.description);
        d.add_text(f.terms, &o.title);
        d.add_text(f.terms, &o.description);
        for v in o.attributes.values() {
            if let Value::String(s) = v {
                d.add_text(f.attrs, s);
                d.add_text(f.terms, s);
            }
        }
        let published = crate::clock::parse_rfc3339(&o.published_at).map(|t| t.unix_timestamp()).unwrap_or(0);
        d.add_i64(f.published, published);
        d.add_text(f.offer, serde_json::to_value(o)?.to_string());
        d.add_i64(f.valid_until, valid_until_nanos(o.valid_until.as_deref()));
        Ok(d)
    }

    /// Full-text search (PROTOCOL.md §3 intent_search_offers): offer ids, best first, with
    /// scores.
    ///
    /// Terms come from [`analyse`]: an offer must contain at least one statement word in
    /// its title, attribute values or description, exactly or inflected (a term that
    /// shares the word's [`matching::stem`] and is at most 3 characters longer). The score
    /// is BM25 per word and field, weighted title 3, attributes 2, description 1, summed
    /// over words; an inflected form scores 0.8 of an exact hit. Place names (with an
    /// area filter) and word + designation phrases only rank; quantities are ignored. `category` and `area` filter (the offer's area
    /// must lie in `area`, as [`gazetteer::contains`]). With no words, the offers of the
    /// filter come newest first; with no words and no filter, nothing. Order: score
    /// descending, then (without words) newest first, then id.
    ///
    /// # Errors
    /// tantivy errors.
    pub fn search(
        &self,
        statement: &str,
        area: Option<&AreaObject>,
        category: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, f32)>, IndexError> {
        let searcher = self.reader.searcher();
        let hits = self.top(&searcher, statement, area, category, limit, None)?;
        Ok(hits.into_iter().map(|h| (h.key, h.score)).collect())
    }

    /// The answer of `intent_search_offers` (PROTOCOL.md §3) from the index alone: the
    /// public offers (each the JSON text of `serde_json::to_value(&offer)`, as stored by
    /// [`Self::rebuild`] / [`Self::apply`]) of the best `limit` hits of [`Self::search`]
    /// among the offers current at `now` (no `validUntil`, or `validUntil` after `now`).
    /// Offers past `validUntil` are dropped while collecting, so they never take the place
    /// of a current offer. Best first.
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
            let doc: TantivyDocument = searcher.doc(h.address)?;
            let json = doc
                .get_first(self.f.offer)
                .and_then(|v| v.as_str())
                .ok_or_else(|| tantivy::TantivyError::SchemaError("an offer index hit has no stored offer".into()))?;
            out.push(json.to_owned());
        }
        Ok(out)
    }

    /// The best `limit` hits of `statement` (see [`Self::search`]); with `current_at`
    /// (Unix nanoseconds), only offers whose `validUntil` lies after it.
    fn top(
        &self,
        searcher: &Searcher,
        statement: &str,
        area: Option<&AreaObject>,
        category: Option<&str>,
        limit: usize,
        current_at: Option<i64>,
    ) -> Result<Vec<collector::Hit<String>>, IndexError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let terms = analyse(statement, area.is_some());
        let filter = self.filter(searcher, category, area)?;
        if terms.words.is_empty() && filter.is_none() {
            return Ok(Vec::new());
        }
        let mut clauses: Vec<Clause> = Vec::new();
        if !terms.words.is_empty() {
            let mut any: Vec<Clause> = Vec::new();
            let mut forms_left = MAX_FORMS_PER_SEARCH;
            for w in &terms.words {
                for q in self.word_queries(searcher, w, &mut forms_left)? {
                    any.push((Occur::Should, q));
                }
            }
            if any.is_empty() {
                return Ok(Vec::new());
            }
            clauses.push((Occur::Must, Box::new(BooleanQuery::new(any))));
        }
        if let Some(filter) = filter {
            clauses.push((Occur::Must, Box::new(ConstScoreQuery::new(filter, 0.0))));
        }
        for t in &terms.phrases {
            for (field, boost) in self.searchable() {
                let q = TermQuery::new(Term::from_field_text(field, t), IndexRecordOption::WithFreqs);
                clauses.push((Occur::Should, Box::new(BoostQuery::new(Box::new(q), boost * PHRASE_SHARE))));
            }
        }
        for t in &terms.rank_only {
            for (field, boost) in self.searchable() {
                let q = TermQuery::new(Term::from_field_text(field, t), IndexRecordOption::WithFreqs);
                clauses.push((Occur::Should, Box::new(BoostQuery::new(Box::new(q), boost * RANK_ONLY_SHARE))));
            }
        }
        let collector = TopIds { limit, newest_first: terms.words.is_empty(), current_at };
        Ok(searcher.search(&BooleanQuery::new(clauses), &collector)?)
    }

    fn searchable(&self) -> [(Field, Score); 3] {
        [(self.f.title, TITLE_BOOST), (self.f.attrs, ATTRS_BOOST), (self.f.description, DESCRIPTION_BOOST)]
    }

    /// One query per field in which `word` (or an inflected form) occurs: BM25 of the
    /// exact term, or of the inflected forms together (constant score from their joint
    /// rarity), whichever is higher; weighted by the field. Takes at most `forms_left`
    /// inflected forms (the search's budget, see [`plans`]) and counts them off it.
    fn word_queries(
        &self,
        searcher: &Searcher,
        word: &str,
        forms_left: &mut usize,
    ) -> Result<Vec<Box<dyn Query>>, IndexError> {
        let docs = searcher.num_docs().max(1);
        let mut out: Vec<Box<dyn Query>> = Vec::new();
        for (field, boost) in self.searchable() {
            let plan = self.word_plan(searcher, field, word)?;
            let mut any: Vec<Box<dyn Query>> = Vec::new();
            if plan.exact_df > 0 {
                let exact_term = Term::from_field_text(field, word);
                any.push(Box::new(TermQuery::new(exact_term, IndexRecordOption::WithFreqs)));
            }
            let forms = &plan.forms[..plan.forms.len().min(*forms_left)];
            *forms_left -= forms.len();
            if !forms.is_empty() {
                let forms_df = forms.iter().map(|f| f.1).sum();
                let set = Box::new(TermSetQuery::new(forms.iter().map(|f| f.0.clone())));
                any.push(Box::new(ConstScoreQuery::new(set, INFLECTED_SHARE * idf(forms_df, docs))));
            }
            let q: Box<dyn Query> = if any.len() > 1 {
                Box::new(DisjunctionMaxQuery::new(any))
            } else if let Some(one) = any.pop() {
                one
            } else {
                continue;
            };
            out.push(Box::new(BoostQuery::new(q, boost)));
        }
        Ok(out)
    }

    /// The [`WordPlan`] of `word` in `field` for `searcher`, from the cache of its
    /// generation or computed (and cached).
    fn word_plan(&self, searcher: &Searcher, field: Field, word: &str) -> Result<Arc<WordPlan>, IndexError> {
        let id = searcher.generation().generation_id();
        if let Some(p) = self.plans.lock().unwrap_or_else(PoisonError::into_inner).get(id, field, word) {
            return Ok(p);
        }
        let plan = Arc::new(WordPlan::read(searcher, field, word)?);
        self.plans.lock().unwrap_or_else(PoisonError::into_inner).put(id, field, word, plan.clone());
        Ok(plan)
    }

    /// Empties the [`WordPlan`] cache (tests: the uncached answer).
    #[cfg(test)]
    fn forget_plans(&self) {
        self.plans.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }

    /// Whether the [`WordPlan`] of `word` in the title field is cached (tests).
    #[cfg(test)]
    fn plan_cached(&self, word: &str) -> bool {
        self.plans.lock().unwrap_or_else(PoisonError::into_inner).holds(self.f.title, word)
    }

    /// The category and area filter, None when neither is given.
    fn filter(
        &self,
        searcher: &Searcher,
        category: Option<&str>,
        area: Option<&AreaObject>,
    ) -> Result<Option<Box<dyn Query>>, IndexError> {
        let mut must: Vec<Clause> = Vec::new();
        if let Some(c) = category {
            must.push((Occur::Must, self.term(self.f.category, c)));
        }
        if let Some(a) = area {
            must.extend(self.area_clauses(searcher, a)?);
        }
        Ok((!must.is_empty()).then(|| Box::new(BooleanQuery::new(must)) as Box<dyn Query>))
    }

    /// Clauses that hold exactly when the offer's area lies in `area`
    /// ([`gazetteer::contains`]): the same country, and when `area.regions` is not empty,
    /// at least one region, all of them in `area.regions`.
    fn area_clauses(&self, searcher: &Searcher, area: &AreaObject) -> Result<Vec<Clause>, IndexError> {
        let mut out: Vec<Clause> = vec![(Occur::Must, self.term(self.f.country, &code(&area.country)))];
        if area.regions.is_empty() {
            return Ok(out);
        }
        let wanted: BTreeSet<String> = area.regions.iter().map(|r| code(r)).collect();
        let any: Vec<Clause> = wanted.iter().map(|r| (Occur::Should, self.term(self.f.region, r))).collect();
        out.push((Occur::Must, Box::new(BooleanQuery::new(any))));
        for other in self.region_terms(searcher)?.iter() {
            if !wanted.contains(other) {
                out.push((Occur::MustNot, self.term(self.f.region, other)));
            }
        }
        Ok(out)
    }

    /// Every `region` term of `searcher`'s index state, cached per searcher generation.
    fn region_terms(&self, searcher: &Searcher) -> Result<Arc<BTreeSet<String>>, IndexError> {
        let id = searcher.generation().generation_id();
        if let Some((g, set)) = self.regions.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
            if *g == id {
                return Ok(set.clone());
            }
        }
        let set = Arc::new(all_terms(searcher, self.f.region)?);
        *self.regions.lock().unwrap_or_else(PoisonError::into_inner) = Some((id, set.clone()));
        Ok(set)
    }

    fn term(&self, field: Field, text: &str) -> Box<dyn Query> {
        Box::new(TermQuery::new(Term::from_field_text(field, text), IndexRecordOption::Basic))
    }

    /// A superset of the offers that can match an intent (PROTOCOL.md §6), used when an
    /// intent becomes active: offers of `category` whose area lies in `area` (as
    /// [`gazetteer::contains`]: same country; any region when `area.regions` is empty,
    /// else each of the offer's regions in it) and, when `terms` is non-empty, that contain
    /// at least one term `t` exactly or (when [`matching::stem`] of `t` is `Some(s)`) a
    /// term that starts with `s` and is at most `len(t) + 3` characters long — the text
    /// rule of [`matching::term_hit`].
    ///
    /// Pass the intent's [`matching::statement_terms`] when its minimum-should-match ratio
    /// requires at least one hit (`min_should_match > 1e-9`, see [`matching::check`]),
    /// else no terms; [`Self::candidates_for_intent_min`] narrows further. Returns offer
    /// ids (sorted, no limit).
    ///
    /// # Errors
    /// tantivy errors.
    pub fn candidates_for_intent(
        &self,
        category: &str,
        area: &AreaObject,
        terms: &[String],
    ) -> Result<Vec<String>, IndexError> {
        self.candidates(category, area, terms, usize::from(!terms.is_empty()))
    }

    /// Like [`Self::candidates_for_intent`], but an offer must contain as many of `terms`
    /// (each counted as [`matching::term_hit`] counts it) as the ratio `min_should_match`
    /// requires in [`matching::check`] (`hits / terms + 1e-9 >= min_should_match`): the
    /// text rule exactly, so still a superset of the matches. `terms` are the intent's
    /// [`matching::statement_terms`] (whatever the ratio).
    ///
    /// # Errors
    /// tantivy errors.
    pub fn candidates_for_intent_min(
        &self,
        category: &str,
        area: &AreaObject,
        terms: &[String],
        min_should_match: f64,
    ) -> Result<Vec<String>, IndexError> {
        let n = terms.len();
        match (0..=n).find(|&k| n == 0 || k as f64 / n as f64 + 1e-9 >= min_should_match) {
            Some(k) => self.candidates(category, area, terms, k),
            None => Ok(Vec::new()),
        }
    }

    fn candidates(
        &self,
        category: &str,
        area: &AreaObject,
        terms: &[String],
        min_hits: usize,
    ) -> Result<Vec<String>, IndexError> {
        let searcher = self.reader.searcher();
        let mut clauses = vec![(Occur::Must, self.term(self.f.category, category))];
        clauses.extend(self.area_clauses(&searcher, area)?);
        let forms = |t: &String| -> Result<BTreeSet<String>, IndexError> {
            let mut set = expansions(&searcher, self.f.terms, t, usize::MAX, usize::MAX)?;
            set.insert(t.clone());
            Ok(set)
        };
        let term_set = |set: BTreeSet<String>| -> Box<dyn Query> {
            Box::new(TermSetQuery::new(set.iter().map(|t| Term::from_field_text(self.f.terms, t)).collect::<Vec<_>>()))
        };
        if min_hits == 1 {
            let mut all = BTreeSet::new();
            for t in terms {
                all.extend(forms(t)?);
            }
            clauses.push((Occur::Must, term_set(all)));
        } else if min_hits > 1 {
            let mut each: Vec<Clause> = Vec::new();
            for t in terms {
                each.push((Occur::Should, term_set(forms(t)?)));
            }
            clauses.push((Occur::Must, Box::new(BooleanQuery::with_minimum_required_clauses(each, min_hits))));
        }
        let mut ids = searcher.search(&BooleanQuery::new(clauses), &AllIds)?;
        ids.sort_unstable();
        Ok(ids)
    }
}

fn open_dir(dir: &Path, schema: &Schema) -> Result<Index, IndexError> {
    std::fs::create_dir_all(dir)?;
    let mmap = MmapDirectory::open(dir)?;
    if Index::exists(&mmap)? {
        match Index::open(mmap) {
            Ok(index) if index.schema() == *schema => return Ok(index),
            Ok(_) => tracing::warn!(dir = %dir.display(), "offer index has another schema; recreating it"),
            Err(e) => tracing::warn!(dir = %dir.display(), error = %e, "offer index unreadable; recreating it"),
        }
        wipe(dir)?;
    }
    Ok(Index::create(MmapDirectory::open(dir)?, schema.clone(), settings())?)
}

/// Removes everything inside `dir` (the index's own directory).
fn wipe(dir: &Path) -> Result<(), IndexError> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            std::fs::remove_dir_all(&path)?;
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}

/// The generation of the last commit, None when there is none or it was written with
/// other analysis.
fn stored_generation(index: &Index) -> Result<Option<u64>, IndexError> {
    let Some(payload) = index.load_metas()?.payload else { return Ok(None) };
    let Ok(v) = serde_json::from_str::<Value>(&payload) else { return Ok(None) };
    if v.get("analysis").and_then(Value::as_str) != Some(analysis_fingerprint()) {
        return Ok(None);
    }
    Ok(v.get("generation").and_then(Value::as_u64))
}

/// Every term of `field` in the index (for the small `region` field).
fn all_terms(searcher: &Searcher, field: Field) -> Result<BTreeSet<String>, IndexError> {
    let mut out = BTreeSet::new();
    for seg in searcher.segment_readers() {
        let inv = seg.inverted_index(field)?;
        let mut s = inv.terms().stream()?;
        while s.advance() {
            if let Ok(t) = std::str::from_utf8(s.key()) {
                out.insert(t.to_owned());
            }
        }
    }
    Ok(out)
}

/// The terms of `field` that [`matching::term_hit`] accepts for `term` by its stem: they
/// start with [`matching::stem`]`(term)` and are at most 3 characters longer than `term`
/// (`term` itself included when indexed). Empty for terms without a stem. At most `cap`,
/// visiting at most `max_scanned` dictionary terms per segment.
fn expansions(
    searcher: &Searcher,
    field: Field,
    term: &str,
    cap: usize,
    max_scanned: usize,
) -> Result<BTreeSet<String>, IndexError> {
    let mut out = BTreeSet::new();
    let Some(stem) = matching::stem(term) else { return Ok(out) };
    let max_chars = term.chars().count() + 3;
    for seg in searcher.segment_readers() {
        let inv = seg.inverted_index(field)?;
        let mut s = inv.terms().range().ge(stem.as_bytes()).into_stream()?;
        let mut scanned = 0usize;
        while scanned < max_scanned && s.advance() {
            scanned += 1;
            let key = s.key();
            if !key.starts_with(stem.as_bytes()) {
                break;
            }
            if let Ok(t) = std::str::from_utf8(key) {
                if t.chars().count() <= max_chars && !out.contains(t) {
                    out.insert(t.to_owned());
                    if out.len() >= cap {
                        return Ok(out);
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Test support: writes in `path` (created, must hold no index) an index of the schema
/// of INDEX_VERSION 2 (no stored offer, no `validUntil`) with one document and a commit
/// payload claiming `generation` (and, when `current_analysis`, today's analysis
/// fingerprint): what an older isto left on disk.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) fn write_version_2_index(path: &Path, generation: u64, current_analysis: bool) {
    let mut b = Schema::builder();
    let text = |analyzer: &str, record: IndexRecordOption, norms: bool| {
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default().set_tokenizer(analyzer).set_index_option(record).set_fieldnorms(norms),
        )
    };
    let searchable = || text(ANALYZER, IndexRecordOption::WithFreqs, true);
    let id = b.add_text_field("id", STRING | STORED | FAST);
    b.add_text_field("category", STRING);
    b.add_text_field("country", STRING);
    b.add_text_field("region", STRING);
    let title = b.add_text_field("title", searchable());
    b.add_text_field("attrs", searchable());
    b.add_text_field("description", searchable());
    b.add_text_field("terms", text(TERMS_ANALYZER, IndexRecordOption::Basic, false));
    let published = b.add_i64_field("published", NumericOptions::default().set_fast());
    std::fs::create_dir_all(path).unwrap();
    let old = Index::create_in_dir(path, b.build()).unwrap();
    old.tokenizers().register(ANALYZER, TextAnalyzer::from(IstoTokenizer { drop_stop_words: true }));
    old.tokenizers().register(TERMS_ANALYZER, TextAnalyzer::from(IstoTokenizer { drop_stop_words: false }));
    let mut w: IndexWriter = old.writer(15_000_000).unwrap();
    let mut d = TantivyDocument::new();
    d.add_text(id, "o1");
    d.add_text(title, "Škoda Octavia");
    d.add_i64(published, 0);
    w.add_document(d).unwrap();
    let mut payload = serde_json::json!({ "generation": generation });
    if current_analysis {
        payload["analysis"] = Value::String(analysis_fingerprint().to_owned());
    }
    let mut prepared = w.prepare_commit().unwrap();
    prepared.set_payload(&payload.to_string());
    prepared.commit().unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Money, OfferSource, SellerPublic};
    use rand::rngs::StdRng;
    use rand::seq::IndexedRandom;
    use rand::{Rng, SeedableRng};
    use serde_json::json;
    use std::collections::BTreeMap;

    fn area_of(code: &str) -> AreaObject {
        let country = gazetteer::region_country(code).unwrap_or(code);
        let regions = if code.contains('-') { vec![code.to_owned()] } else { Vec::new() };
        AreaObject { country: country.to_owned(), regions, place: None }
    }

    fn offer(id: &str, title: &str, description: &str, attrs: Value, area: &str) -> Offer {
        Offer {
            id: id.into(),
            source: OfferSource { kind: "catalogue".into(), seller_id: "sel_1".into(), url: None },
            in_reply_to: None,
            title: title.into(),
            description: description.into(),
            category: "vehicles".into(),
            attributes: attrs.as_object().cloned().unwrap_or_default(),
            price: Money { amount: 10000.0, currency: "EUR".into() },
            area: gazetteer::resolve(area).unwrap(),
            seller: SellerPublic { id: "sel_1".into(), name: "Auto Kováč".into(), url: None },
            published_at: "2026-11-30T00:00:00Z".into(),
            valid_until: None,
            extensions: json!({}),
        }
    }

    fn index_of(offers: Vec<Offer>) -> OfferIndex {
        let ix = OfferIndex::open(None).unwrap();
        assert_eq!(ix.generation(), None);
        assert_eq!(ix.rebuild(offers.into_iter(), 1).unwrap(), ix.num_docs());
        ix
    }

    fn ids(ix: &OfferIndex, statement: &str, area: Option<&AreaObject>, category: Option<&str>) -> Vec<String> {
        ix.search(statement, area, category, 100).unwrap().into_iter().map(|(id, _)| id).collect()
    }

    fn sample() -> OfferIndex {
        index_of(vec![
            offer("o1", "Škoda Octavia Combi 2.0 TDI", "", json!({"make": "Škoda", "model": "Octavia"}), "Košice"),
            offer(
                "o2",
                "Volkswagen Passat",
                "Lepšie ako Škoda, garážované.",
                json!({"make": "Volkswagen"}),
                "Bratislava",
            ),
            offer("o3", "Škoda Fabia", "", json!({"make": "Škoda"}), "Bratislava"),
            offer(
                "o4",
                "Toyota Corolla",
                "Auto stojí v Košice, do 5000 km od servisu.",
                json!({"make": "Toyota"}),
                "Žilina",
            ),
            offer("o5", "Sedan", "", json!({"make": "Škoda"}), "Brno"),
        ])
    }

    #[test]
    fn folds_case_and_diacritics() {
        let ix = sample();
        let got = ids(&ix, "skoda", None, None);
        assert_eq!(got.len(), 4, "{got:?}");
        assert!(!got.contains(&"o4".to_owned()));
        assert_eq!(ids(&ix, "KOSICE", None, None), vec!["o4"], "a place name alone searches the text");
        assert_eq!(ids(&ix, "ŠKODU OCTAVIU", None, None)[0], "o1", "inflected forms find Octavia");
        assert_eq!(ids(&ix, "nafta", None, None), vec!["o1"], "synonyms fold: nafta = TDI = diesel");
    }

    #[test]
    fn stop_words_do_not_match() {
        let ix = sample();
        for s in ["a", "do", "the", "A DO THE", "ale že", "aj s"] {
            assert!(ids(&ix, s, None, None).is_empty(), "{s}");
        }
        assert_eq!(analyse("do a the", false), Analysed::default());
        // A stop word next to a real word changes nothing.
        assert_eq!(ids(&ix, "corolla do", None, None), vec!["o4"]);
    }

    #[test]
    fn ranks_title_then_attributes_then_description() {
        let ix = index_of(vec![
            offer("d", "Combi", "Superb v top stave", json!({}), "SK"),
            offer("a", "Combi", "", json!({"model": "Superb"}), "SK"),
            offer("t", "Superb", "", json!({}), "SK"),
        ]);
        assert_eq!(ids(&ix, "superb", None, None), vec!["t", "a", "d"]);
        let s = ix.search("superb", None, None, 10).unwrap();
        assert!(s[0].1 > s[1].1 && s[1].1 > s[2].1, "{s:?}");
        // More words found rank higher; an inflected form counts as a hit.
        let ix = index_of(vec![
            offer("x1", "Škoda Superb", "", json!({}), "SK"),
            offer("x2", "Škoda Octavia", "", json!({}), "SK"),
            offer("x3", "Octavia", "", json!({}), "SK"),
        ]);
        let got = ids(&ix, "škoda octaviu", None, None);
        assert_eq!(got[0], "x2", "{got:?}");
        assert_eq!(got.len(), 3);
    }

    #[test]
    fn equal_scores_go_by_id() {
        let ix =
            index_of(["c", "a", "d", "b"].iter().map(|id| offer(id, "Škoda Fabia", "", json!({}), "Košice")).collect());
        assert_eq!(ids(&ix, "fabia", None, None), vec!["a", "b", "c", "d"]);
        assert_eq!(ix.search("fabia", None, None, 2).unwrap().into_iter().map(|h| h.0).collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    fn filters_area_category_and_limit() {
        let ix = sample();
        let kosice = gazetteer::resolve("Košice").unwrap();
        assert_eq!(ids(&ix, "skoda", Some(&kosice), None), vec!["o1"]);
        let sk = gazetteer::resolve("SK").unwrap();
        assert_eq!(ids(&ix, "skoda", Some(&sk), None).len(), 3, "o5 lies in Brno");
        let two = AreaObject { country: "sk".into(), regions: vec!["sk-ki".into(), "SK-BL".into()], place: None };
        let mut got = ids(&ix, "skoda", Some(&two), None);
        got.sort();
        assert_eq!(got, vec!["o1", "o2", "o3"]);
        assert!(ids(&ix, "skoda", None, Some("property")).is_empty());
        assert_eq!(ids(&ix, "skoda", None, Some("vehicles")).len(), 4);
        assert_eq!(ix.search("skoda", None, Some("vehicles"), 2).unwrap().len(), 2);
        assert!(ix.search("skoda", None, None, 0).unwrap().is_empty());
        assert!(ids(&ix, "zzz", None, None).is_empty());
        // No words: the filter's offers (newest first, then id); no words and no filter: nothing.
        let mut kos = ids(&ix, "kosice", Some(&kosice), None);
        kos.sort();
        assert_eq!(kos, vec!["o1"]);
        assert_eq!(ids(&ix, "", None, Some("vehicles")), vec!["o1", "o2", "o3", "o4", "o5"]);
        assert!(ids(&ix, "", None, None).is_empty());
        // A whole-country offer matches only a whole-country area.
        let ix = index_of(vec![offer("c", "Škoda Fabia", "", json!({}), "SK")]);
        assert_eq!(ids(&ix, "fabia", Some(&sk), None), vec!["c"]);
        assert!(ids(&ix, "fabia", Some(&kosice), None).is_empty());
    }

    #[test]
    fn apply_replaces_and_removes() {
        let ix = sample();
        let mut o1 = offer("o1", "Hyundai i30", "", json!({"make": "Hyundai"}), "Košice");
        o1.published_at = "2026-12-01T00:00:00Z".into();
        let new = offer("o6", "Kia Ceed", "", json!({"make": "Kia"}), "Košice");
        ix.apply(&[o1, new], &["o3".to_owned(), "nope".to_owned()], 2).unwrap();
        assert_eq!(ix.generation(), Some(2));
        assert_eq!(ix.num_docs(), 5);
        assert!(!ids(&ix, "octavia", None, None).contains(&"o1".to_owned()), "the old title is gone");
        assert_eq!(ids(&ix, "hyundai", None, None), vec!["o1"]);
        assert_eq!(ids(&ix, "ceed", None, None), vec!["o6"]);
        assert!(ids(&ix, "fabia", None, None).is_empty(), "o3 was removed");
        // The same id twice in one batch: the last one wins.
        let a = offer("o7", "Dacia Duster", "", json!({}), "SK");
        let b = offer("o7", "Dacia Sandero", "", json!({}), "SK");
        ix.apply(&[a, b], &[], 3).unwrap();
        assert!(ids(&ix, "duster", None, None).is_empty());
        assert_eq!(ids(&ix, "sandero", None, None), vec!["o7"]);
        // Newest first without words.
        let kosice = gazetteer::resolve("Košice").unwrap();
        assert_eq!(ids(&ix, "", Some(&kosice), None), vec!["o1", "o6"]);
    }

    #[test]
    fn rebuild_replaces_everything() {
        let ix = sample();
        assert_eq!(ix.generation(), Some(1));
        let n = ix.rebuild(vec![offer("z", "Škoda Kodiaq", "", json!({}), "SK")].into_iter(), 7).unwrap();
        assert_eq!((n, ix.num_docs(), ix.generation()), (1, 1, Some(7)));
        assert!(ids(&ix, "octavia", None, None).is_empty());
        assert_eq!(ids(&ix, "kodiaq", None, None), vec!["z"]);
    }

    #[test]
    fn no_writer_outlives_a_rebuild_or_an_update() {
        let dir = tempfile::tempdir().unwrap();
        let ix = OfferIndex::open(Some(&dir.path().join("index"))).unwrap();
        let free = |ix: &OfferIndex| ix.index.writer::<TantivyDocument>(15_000_000).map(drop).is_ok();
        assert!(free(&ix), "opening takes no writer (nor its lock and threads)");
        ix.rebuild(vec![offer("o1", "Škoda Octavia", "", json!({}), "Košice")].into_iter(), 1).unwrap();
        assert!(free(&ix), "the rebuild's writer ended with it");
        for g in 2..12 {
            let o = offer(&format!("o{g}"), "Škoda Fabia", "", json!({}), "Košice");
            ix.apply(&[o], &[], g).unwrap();
        }
        assert!(free(&ix), "each update's writer ended with it");
        assert_eq!((ix.num_docs(), ix.generation()), (11, Some(11)));
        assert_eq!(ids(&ix, "fabia", None, None).len(), 10);
        // While another writer holds the index, an update fails and changes nothing.
        let held = ix.index.writer::<TantivyDocument>(15_000_000).unwrap();
        assert!(ix.apply(&[], &["o1".to_owned()], 12).is_err());
        drop(held);
        assert_eq!((ix.num_docs(), ix.generation()), (11, Some(11)));
    }

    #[test]
    fn directory_index_reopens_with_its_generation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index");
        {
            let ix = OfferIndex::open(Some(&path)).unwrap();
            assert_eq!(ix.generation(), None);
            ix.rebuild(vec![offer("o1", "Škoda Octavia", "", json!({}), "Košice")].into_iter(), 41).unwrap();
            ix.apply(&[offer("o2", "Škoda Fabia", "", json!({}), "Košice")], &[], 42).unwrap();
        }
        let ix = OfferIndex::open(Some(&path)).unwrap();
        assert_eq!(ix.generation(), Some(42));
        assert_eq!(ix.num_docs(), 2);
        assert_eq!(ids(&ix, "octaviu", None, None), vec!["o1"]);
        drop(ix);
        // An index with another schema is wiped and recreated.
        std::fs::remove_dir_all(&path).unwrap();
        std::fs::create_dir_all(&path).unwrap();
        {
            let mut b = Schema::builder();
            b.add_text_field("id", STRING | STORED);
            let other = Index::create_in_dir(&path, b.build()).unwrap();
            let mut w: IndexWriter = other.writer(15_000_000).unwrap();
            w.commit().unwrap();
        }
        let ix = OfferIndex::open(Some(&path)).unwrap();
        assert_eq!((ix.generation(), ix.num_docs()), (None, 0));
        ix.rebuild(vec![offer("o1", "Škoda Octavia", "", json!({}), "Košice")].into_iter(), 1).unwrap();
        assert_eq!(ids(&ix, "octavia", None, None), vec!["o1"]);
    }

    fn at(t: &str) -> OffsetDateTime {
        crate::clock::parse_rfc3339(t).unwrap()
    }

    #[test]
    fn search_offers_answers_stored_current_offers() {
        let mut offers: Vec<Offer> = Vec::new();
        // The best hits by id ("a…" sort first at equal scores) are past validUntil or
        // have one that does not parse; enough current offers come after them.
        for (id, until) in [
            ("a1", Some("2026-11-01T00:00:00Z")),
            ("a2", Some("2026-12-01T10:00:00Z")),
            ("a3", Some("garbage")),
            ("a4", Some("2026-11-30T23:59:59.999Z")),
            ("b1", None),
            ("b2", Some("2026-12-01T10:00:00.001Z")),
            ("b3", Some("2030-01-01T00:00:00Z")),
            ("b4", None),
        ] {
            let mut o = offer(id, "Škoda Fabia", "", json!({"make": "Škoda", "year": 2019, "km": 12.5}), "Košice");
            o.valid_until = until.map(str::to_owned);
            offers.push(o);
        }
        let ix = index_of(offers.clone());
        let now = at("2026-12-01T10:00:00Z");
        let got = ix.search_offers("fabia", None, None, 3, now).unwrap();
        let want: Vec<String> = offers[4..7].iter().map(|o| serde_json::to_value(o).unwrap().to_string()).collect();
        assert_eq!(got, want, "the stored JSON is to_value(&offer), byte for byte; expired offers take no place");
        let all = ix.search_offers("fabia", None, None, 100, now).unwrap();
        assert_eq!(all.len(), 4);
        let back: Offer = serde_json::from_str(&all[3]).unwrap();
        assert_eq!(back, offers[7]);
        // Without a clock (`search`), every indexed offer is a hit; a later clock drops more.
        assert_eq!(ids(&ix, "fabia", None, None).len(), 8);
        assert_eq!(ix.search_offers("fabia", None, None, 100, at("2027-01-01T00:00:00Z")).unwrap().len(), 3);
        // Filters and the newest-first order without words apply as in `search`.
        let kosice = gazetteer::resolve("Košice").unwrap();
        assert_eq!(ix.search_offers("", Some(&kosice), None, 100, now).unwrap().len(), 4);
        assert!(ix.search_offers("fabia", None, Some("property"), 100, now).unwrap().is_empty());
        assert!(ix.search_offers("fabia", None, None, 0, now).unwrap().is_empty());
        // A withdrawn offer (removed by apply) is gone from the answer at once.
        ix.apply(&[], &["b1".to_owned()], 2).unwrap();
        let got: Vec<Offer> = ix
            .search_offers("fabia", None, None, 100, now)
            .unwrap()
            .iter()
            .map(|j| serde_json::from_str(j).unwrap())
            .collect();
        assert_eq!(got.iter().map(|o| o.id.as_str()).collect::<Vec<_>>(), ["b2", "b3", "b4"]);
    }

    #[test]
    fn valid_until_is_indexed_in_nanoseconds() {
        assert_eq!(valid_until_nanos(None), i64::MAX);
        assert_eq!(valid_until_nanos(Some("not a time")), i64::MIN);
        assert_eq!(valid_until_nanos(Some("1970-01-01T00:00:01.5Z")), 1_500_000_000);
        assert_eq!(valid_until_nanos(Some("9999-12-31T23:59:59Z")), i64::MAX, "saturates");
        assert_eq!(valid_until_nanos(Some("1000-01-01T00:00:00Z")), i64::MIN, "saturates");
    }

    #[test]
    fn an_index_of_the_previous_schema_is_recreated_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index");
        // Even a payload that claims the current analysis and a generation.
        write_version_2_index(&path, 9, true);
        let ix = OfferIndex::open(Some(&path)).unwrap();
        assert_eq!((ix.generation(), ix.num_docs()), (None, 0), "recreated: its owner rebuilds it");
        ix.rebuild(vec![offer("o1", "Škoda Octavia", "", json!({}), "Košice")].into_iter(), 9).unwrap();
        let got = ix.search_offers("octavia", None, None, 10, at("2026-12-01T00:00:00Z")).unwrap();
        assert_eq!(got.len(), 1);
        assert!(got[0].contains("\"title\":\"Škoda Octavia\""), "{got:?}");
    }

    #[test]
    fn candidates_follow_category_area_and_terms() {
        let ix = sample();
        let sk = gazetteer::resolve("SK").unwrap();
        let t = |s: &str| matching::statement_terms(s);
        assert_eq!(ix.candidates_for_intent("vehicles", &sk, &[]).unwrap(), vec!["o1", "o2", "o3", "o4"]);
        assert_eq!(ix.candidates_for_intent("vehicles", &sk, &t("Hľadám Octaviu")).unwrap(), vec!["o1"]);
        // Stop words of the search fields still count here (the text rule of matching keeps them).
        assert_eq!(ix.candidates_for_intent("vehicles", &sk, &t("ako nová")).unwrap(), vec!["o2"]);
        assert!(ix.candidates_for_intent("property", &sk, &[]).unwrap().is_empty());
        let cz = gazetteer::resolve("Jihomoravský kraj").unwrap();
        assert_eq!(ix.candidates_for_intent("vehicles", &cz, &t("skoda")).unwrap(), vec!["o5"]);
    }

    // ---- generated offers and intents (property test and timing) ----

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
            let p = Params { min_should_match: g.min_should_match, default_currency: "EUR", rates: &rates };
            let iv = matching::IntentView {
                category: "vehicles",
                criteria: &g.criteria,
                area: &g.area,
                budget: None,
                hidden_limit: None,
                statement: &g.statement,
            };
            let terms = matching::statement_terms(&g.statement);
            let got: HashSet<String> =
                ix.candidates_for_intent("vehicles", &g.area, &terms).unwrap().into_iter().collect();
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

    /// One client's unique words cannot flush the plan cache: plans used twice stay
    /// (protected segment) while thousands of words used once come and go (probation).
    #[test]
    fn unique_words_do_not_flush_the_plan_cache() {
        let mut rng = StdRng::seed_from_u64(3);
        let regions = regions();
        let ix = index_of((0..300).map(|i| gen_offer(&mut rng, i, &regions)).collect());
        let popular = ["octavia", "fabia", "passat", "corolla"];
        for _ in 0..2 {
            for w in popular {
                ix.search(w, None, None, 10).unwrap();
            }
        }
        // 6 000 unique words (3 fields each: 18 000 plans), 12 to a statement.
        for i in 0..500 {
            let statement: Vec<String> = (0..12).map(|j| format!("zq{}x{j}", i * 12 + j)).collect();
            ix.search(&statement.join(" "), None, None, 10).unwrap();
        }
        for w in popular {
            assert!(ix.plan_cached(w), "{w}: flushed by words used once");
        }
        assert!(!ix.plan_cached("zq0x0"), "the first unique words made room for later ones");
    }

    /// What one statement may make a search do is bounded per search, not per word.
    #[test]
    fn a_search_uses_a_bounded_number_of_words_and_forms() {
        // 4-character stems with case endings: each word would expand on its own.
        let endings = ["a", "u", "y", "e", "ou", "om", "ami", "ach", "ov", "iam"];
        let stems = ["skod", "octa", "fabi", "auto", "diesl", "kombi", "toyo", "vozi", "servi", "klima"];
        let words: Vec<String> = stems.iter().flat_map(|s| endings.iter().map(move |e| format!("{s}{e}"))).collect();
        let statement = words.join(" ");
        let a = analyse(&statement, false);
        assert_eq!(a.words.len(), plans::MAX_WORDS, "{:?}", a.words);
        assert_eq!(a.words[0], matching::statement_terms("skoda")[0], "the first words, in order");
        let phrases = (0..40).map(|i| format!("model {i}")).collect::<Vec<_>>().join(" ");
        assert!(analyse(&phrases, false).phrases.len() <= plans::MAX_RANKING_TERMS);
        // The forms one search takes over all its words and fields: an index where every
        // stem has a hundred forms.
        let ix = index_of(
            (0..100)
                .map(|i| {
                    let e = format!("{}{}", (b'a' + (i / 10) as u8) as char, (b'a' + (i % 10) as u8) as char);
                    let text: Vec<String> = stems.iter().map(|s| format!("{s}{e}")).collect();
                    let text = text.join(" ");
                    offer(&format!("o{i}"), &text, &text, json!({ "note": text }), "Košice")
                })
                .collect(),
        );
        let searcher = ix.reader.searcher();
        let mut left = plans::MAX_FORMS_PER_SEARCH;
        let mut queries = 0;
        for w in &a.words {
            queries += ix.word_queries(&searcher, w, &mut left).unwrap().len();
        }
        assert!(queries > 0);
        let total: usize = a
            .words
            .iter()
            .flat_map(|w| ix.searchable().map(|(f, _)| ix.word_plan(&searcher, f, w).unwrap().forms.len()))
            .sum();
        assert!(total > plans::MAX_FORMS_PER_SEARCH, "the statement asks for more forms than a search takes: {total}");
        assert_eq!(left, 0, "the budget was used up, and not exceeded");
    }

    /// The cached [`WordPlan`]s give the answers of the uncached search (same ids, same
    /// order, same scores), also after the index changed under a warm cache.
    #[test]
    fn cached_word_plans_answer_as_the_plain_search() {
        let mut rng = StdRng::seed_from_u64(12);
        let regions = regions();
        let offers: Vec<Offer> = (0..600).map(|i| gen_offer(&mut rng, i, &regions)).collect();
        let ix = OfferIndex::open(None).unwrap();
        ix.rebuild(offers.into_iter(), 1).unwrap();
        let statements: Vec<String> = (0..150).map(|_| gen_statement(&mut rng)).collect();
        let kosice = gazetteer::resolve("Košice").unwrap();
        let compare = |ix: &OfferIndex| {
            let mut nonempty = 0;
            for s in &statements {
                for (area, category) in [(None, None), (Some(&kosice), Some("vehicles"))] {
                    let cached = ix.search(s, area, category, 10).unwrap();
                    let again = ix.search(s, area, category, 10).unwrap();
                    ix.forget_plans();
                    let plain = ix.search(s, area, category, 10).unwrap();
                    assert_eq!(cached, plain, "{s}");
                    assert_eq!(again, plain, "{s}");
                    nonempty += usize::from(!plain.is_empty());
                }
            }
            nonempty
        };
        // Warm the cache with every statement, then compare.
        for s in &statements {
            ix.search(s, None, None, 10).unwrap();
        }
        assert!(compare(&ix) > 100, "the generated statements must find offers");
        // New offers (other document frequencies) under a cache warm with every statement.
        for s in &statements {
            ix.search(s, None, None, 10).unwrap();
        }
        let upserts: Vec<Offer> = (600..900).map(|i| gen_offer(&mut rng, i, &regions)).collect();
        ix.apply(&upserts, &["off_0000001".to_owned()], 2).unwrap();
        assert!(compare(&ix) > 100);
    }

    use matching::Params;
}
