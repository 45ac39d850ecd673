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
//! Text analysis ([`analysis`]) comes from [`matching::analyse`], so that the statement
//! terms of matching meet the indexed terms: the field `text` holds every term of
//! [`matching::text_terms`], so that [`OfferIndex::candidates_for_intent_min`] is a true
//! superset of the text rule of [`matching::check`] ([`candidates`]). Change
//! [`INDEX_VERSION`] when the analysis changes. Writing ([`writer`]) is near real time:
//! a search sees an update within [`REFRESH_LAG`].

mod analysis;
mod candidates;
mod collector;
mod search;
mod writer;

use crate::gazetteer::{self, AreaObject};
use crate::matching;
use crate::protocol::Offer;
use analysis::{analysis_fingerprint, IstoTokenizer};
pub use analysis::{is_stop_word, TEXT_ANALYZER};
use collector::AllIds;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::{Column, StrColumn};
use tantivy::directory::MmapDirectory;
use tantivy::query::{BooleanQuery, BoostQuery, ConstScoreQuery, Occur, Query, TermQuery, TermSetQuery};
use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions, FAST, STORED, STRING,
};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{
    DocAddress, DocId, Index, IndexReader, IndexSettings, IndexWriter, ReloadPolicy, Score, Searcher, SegmentOrdinal,
    SegmentReader, TantivyDocument, TantivyError, Term,
};
use time::OffsetDateTime;
pub use writer::REFRESH_LAG;

/// Version of the schema and analysis; part of the analyzer names (so a schema written
/// by another version does not compare equal and is recreated) and of the commit payload.
/// 6: the fast fields' dictionaries are written without zstd (tantivy without its
/// `columnar-zstd-compression` feature, which could not read a version 5 index: the new
/// analyzer names make such an index another schema, wiped and rebuilt at open).
/// 7: one searchable field `text` instead of three and their three stem fields (see
/// [`analysis`]).
/// 8: segments in ascending price order ([`settings`]), the id no longer stored (it is
/// read from its fast field).
/// 9: no field `terms`: the candidates of an intent are found in `text` ([`candidates`]).
/// 10: a word with a stem is indexed as its stem forms only, not also as itself
/// ([`analysis`]).
pub const INDEX_VERSION: u32 = 10;
/// Memory budget of the index writer's one indexing thread: it writes a segment when
/// the budget is full (about 80 000 offers), so an import of 100 000 offers leaves 2
/// segments and no merge (a search visits each segment).
const WRITER_HEAP_BYTES: usize = 128 << 20;
/// Indexing threads of the writer (see [`WRITER_HEAP_BYTES`]).
const WRITER_THREADS: usize = 1;
/// When an update leaves more segments than this, they are merged into one.
const MAX_SEGMENTS: usize = 4;

/// Index failures: tantivy errors and I/O on the index directory.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// tantivy reported an error.
    #[error("offer index: {0}")]
    Tantivy(#[from] tantivy::TantivyError),
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
pub(super) struct Fields {
    id: Field,
    category: Field,
    country: Field,
    region: Field,
    /// The title, attributes and description, weighted 3/2/1, with their stem forms
    /// (one value, [`analysis::text_value`]).
    text: Field,
    published: Field,
    /// The public offer's JSON text (stored, not indexed).
    offer: Field,
    /// `validUntil` in Unix nanoseconds ([`valid_until_nanos`]).
    valid_until: Field,
    /// The price in the default currency (the tie break of equal scores), `f64::MAX`
    /// without a rate.
    price: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let text = |analyzer: &str, record: IndexRecordOption, norms: bool| {
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default().set_tokenizer(analyzer).set_index_option(record).set_fieldnorms(norms),
        )
    };
    let f = Fields {
        id: b.add_text_field("id", STRING | FAST),
        category: b.add_text_field("category", STRING | FAST),
        country: b.add_text_field("country", STRING | FAST),
        region: b.add_text_field("region", STRING | FAST),
        text: b.add_text_field("text", text(TEXT_ANALYZER, IndexRecordOption::WithFreqs, true)),
        published: b.add_i64_field("published", NumericOptions::default().set_fast()),
        offer: b.add_text_field("offer", STORED),
        valid_until: b.add_i64_field("valid_until", NumericOptions::default().set_fast()),
        price: b.add_f64_field("price", NumericOptions::default().set_fast()),
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

/// Settings of a new index: the document store (read for every search hit) uncompressed
/// in 4 KiB blocks: reading a hit's offer costs about a third of what tantivy's default
/// LZ4 blocks of 16 KiB cost, for about 1 KB per offer on disk. Each segment's documents
/// are in ascending price order ([`price_order`]).
fn settings() -> IndexSettings {
    IndexSettings {
        docstore_compression: tantivy::store::Compressor::None,
        docstore_blocksize: 4096,
        sort_by_field: price_order(),
        ..IndexSettings::default()
    }
}

/// The documents of a segment cheapest first: among equal scores a later document is
/// never cheaper, so the search collector lets tantivy skip the offers that tie the
/// worst kept once they cost more ([`collector`]). tantivy keeps the order through merges.
fn price_order() -> Option<tantivy::IndexSortByField> {
    Some(tantivy::IndexSortByField { field: "price".into(), order: tantivy::Order::Asc })
}

/// A region or country code as indexed: trimmed, upper case.
fn code(s: &str) -> String {
    s.trim().to_ascii_uppercase()
}

/// The offer index: derived from the store, never a second source of truth. Its tantivy
/// writer lives only while a series of updates runs (see [`writer`]), so that its
/// threads and the directory's writer lock are not held between catalogue imports.
pub struct OfferIndex {
    reader: IndexReader,
    /// The writer side, shared with the background refresher (see [`writer`]).
    writing: Arc<writer::Writing>,
    f: Fields,
    /// The `region` terms of one searcher generation, read once per commit.
    regions: Mutex<Option<(u64, Arc<BTreeSet<String>>)>>,
}

impl std::fmt::Debug for OfferIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OfferIndex").field("generation", &self.generation()).field("docs", &self.num_docs()).finish()
    }
}

impl OfferIndex {
    /// Opens or creates the index in `dir` (DATA_DIR/index), or in RAM when `dir` is None
    /// (tests). A directory of another schema, or one that cannot be opened, is wiped and
    /// recreated (its owner rebuilds it when [`Self::generation`] is not the store's).
    ///
    /// # Errors
    /// I/O on the directory, tantivy errors.
    pub fn open(dir: Option<&Path>) -> Result<Self, IndexError> {
        Self::open_priced(dir, &BTreeMap::new())
    }

    /// As [`Self::open`], with the holder's exchange rates into its default currency
    /// (`[currency] rates`, the default currency at 1): the indexed price that orders
    /// equal scores (cheaper first; an offer in a currency without a rate last). An index
    /// committed with other rates reports no generation, so its owner rebuilds it.
    ///
    /// # Errors
    /// I/O on the directory, tantivy errors.
    pub fn open_priced(dir: Option<&Path>, rates: &BTreeMap<String, f64>) -> Result<Self, IndexError> {
        let (schema, f) = schema();
        let index = match dir {
            None => Index::builder().schema(schema).settings(settings()).create_in_ram()?,
            Some(dir) => open_dir(dir, &schema)?,
        };
        index.tokenizers().register(TEXT_ANALYZER, TextAnalyzer::from(IstoTokenizer));
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
        let prices = rates.iter().map(|(c, r)| format!("{c}={r}")).collect::<Vec<_>>().join(";");
        let generation = stored_generation(&index, &prices)?;
        let writing = Arc::new(writer::Writing::new(index, reader.clone(), f, rates.clone(), prices, generation));
        Ok(Self { reader, writing, f, regions: Mutex::new(None) })
    }

    /// The generation stored with the last commit (commit payload), None for a fresh
    /// index (or one written with other analysis, see [`INDEX_VERSION`]).
    pub fn generation(&self) -> Option<u64> {
        self.settle();
        *self.writing.generation.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Number of offers in the index (as of the last commit).
    pub fn num_docs(&self) -> u64 {
        self.settle();
        self.reader.searcher().num_docs()
    }

    #[cfg(any(test, feature = "testkit"))]
    /// Number of segments a search visits (the benchmark prints it).
    #[doc(hidden)]
    pub fn num_segments(&self) -> usize {
        self.settle();
        self.reader.searcher().segment_readers().len()
    }
}

/// The unix seconds of an offer's `publishedAt` (RFC 3339; the index's tie-break
/// order).
///
/// # Errors
/// `offer <id>: publishedAt …` and what does not read.
pub(super) fn published_secs(o: &Offer) -> Result<i64, String> {
    crate::clock::parse_rfc3339(&o.published_at)
        .map(|t| t.unix_timestamp())
        .map_err(|why| format!("offer {}: publishedAt {why}", o.id))
}

fn open_dir(dir: &Path, schema: &Schema) -> Result<Index, IndexError> {
    std::fs::create_dir_all(dir)?;
    let mmap = MmapDirectory::open(dir).map_err(TantivyError::from)?;
    if Index::exists(&mmap).map_err(TantivyError::from)? {
        match Index::open(mmap) {
            Ok(index) if index.schema() == *schema && *index.settings() == settings() => return Ok(index),
            Ok(_) => tracing::warn!(dir = %dir.display(), "offer index has another schema or settings; recreating it"),
            Err(e) => tracing::warn!(dir = %dir.display(), error = %e, "offer index unreadable; recreating it"),
        }
        wipe(dir)?;
    }
    Ok(Index::create(MmapDirectory::open(dir).map_err(TantivyError::from)?, schema.clone(), settings())?)
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
/// other analysis or other exchange rates (`prices`).
fn stored_generation(index: &Index, prices: &str) -> Result<Option<u64>, IndexError> {
    let Some(payload) = index.load_metas()?.payload else { return Ok(None) };
    let Ok(v) = serde_json::from_str::<Value>(&payload) else { return Ok(None) };
    if v.get("analysis").and_then(Value::as_str) != Some(analysis_fingerprint())
        || v.get("prices").and_then(Value::as_str) != Some(prices)
    {
        return Ok(None);
    }
    Ok(v.get("generation").and_then(Value::as_u64))
}

#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod tests_gen;
