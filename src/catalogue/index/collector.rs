//! The search collector of the offer index: the top `limit` offers by score, then
//! (when asked) publication time, then price, then id — deterministic whatever the
//! segment layout. Ids are compared as their term ordinals in a segment's id column
//! (which sort as the ids do); an id is read from the column's dictionary (a block
//! decompression each) only for hits of different segments that tie on everything
//! else ([`merge_hits`]).
//!
//! It lets tantivy prune: each segment is collected with `Weight::for_each_pruning`,
//! told after each hit the lowest score that can still enter the top `limit`, so a
//! union of term queries skips the blocks of documents that cannot (block-max WAND).
//! That score carries over from segment to segment ([`TopIds::search`], largest segment
//! first): a segment collected after a full one prunes from its first document, not
//! once its own `limit` hits are in.
//! Its filters (category, area, `validUntil`, deleted documents) are fast-field checks
//! on the documents it is given.

use super::*;
use tantivy::query::Weight;

/// One search hit: `key` is the id's term ordinal in the id column of the hit's segment
/// (`address.segment_ord`; inside a segment ordinals sort as the ids do), or the id
/// itself. Orders worst last: lower score, then (when asked) older, then dearer, then
/// larger key.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Hit<K> {
    /// BM25 score.
    pub(super) score: Score,
    /// Publication time (Unix seconds), for the newest-first tie break.
    pub(super) published: i64,
    /// The price in the default currency, for the cheaper-first tie break.
    pub(super) price: f64,
    /// The id or its term ordinal.
    pub(super) key: K,
    /// Where the document is (for its stored offer); not part of the order (one live
    /// document per id).
    pub(super) address: DocAddress,
}

impl<K: Ord> Eq for Hit<K> {}

impl<K> Hit<K> {
    /// The order of [`Hit`] without the key: score, then publication time, then price.
    fn rank_cmp(&self, other: &Self) -> std::cmp::Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(other.published.cmp(&self.published))
            .then(self.price.total_cmp(&other.price))
    }
}

impl<K: Ord> Ord for Hit<K> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.rank_cmp(other).then_with(|| self.key.cmp(&other.key))
    }
}

impl<K: Ord> PartialOrd for Hit<K> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The category and area filter of a search, checked on fast fields.
#[derive(Debug, Default)]
pub(super) struct AreaFilter {
    /// The offer's category must be this one.
    pub(super) category: Option<String>,
    /// (country, regions) as indexed ([`code`]): the offer's area must lie in it
    /// ([`gazetteer::contains`]: the same country; when regions are given, at least one
    /// region, all of them among these).
    pub(super) area: Option<(String, BTreeSet<String>)>,
}

/// The term ordinal of `value` in a segment's string column: Ok(None) when the segment
/// has no column or no document with that value.
fn ord_of(col: Option<&StrColumn>, value: &str) -> std::io::Result<Option<u64>> {
    match col {
        Some(c) => c.dictionary().term_ord(value.as_bytes()),
        None => Ok(None),
    }
}

/// [`AreaFilter`] prepared for one segment (term ordinals of its columns).
pub(super) struct SegmentFilter {
    category: Option<(StrColumn, u64)>,
    country: Option<(StrColumn, u64)>,
    /// The region column and the ordinals of the wanted regions, sorted.
    regions: Option<(StrColumn, Vec<u64>)>,
}

impl SegmentFilter {
    /// The filter for `seg`, None when no document of the segment can pass it.
    fn new(f: &AreaFilter, seg: &SegmentReader) -> tantivy::Result<Option<Self>> {
        let ff = seg.fast_fields();
        let mut out = SegmentFilter { category: None, country: None, regions: None };
        if let Some(c) = &f.category {
            let col = ff.str("category")?;
            let Some(ord) = ord_of(col.as_ref(), c)? else { return Ok(None) };
            out.category = col.map(|col| (col, ord));
        }
        if let Some((country, regions)) = &f.area {
            let col = ff.str("country")?;
            let Some(ord) = ord_of(col.as_ref(), country)? else { return Ok(None) };
            out.country = col.map(|col| (col, ord));
            if !regions.is_empty() {
                let col = ff.str("region")?;
                let mut ords = Vec::new();
                for r in regions {
                    ords.extend(ord_of(col.as_ref(), r)?);
                }
                ords.sort_unstable();
                match col {
                    Some(col) if !ords.is_empty() => out.regions = Some((col, ords)),
                    _ => return Ok(None),
                }
            }
        }
        Ok(Some(out))
    }

    fn passes(&self, doc: DocId) -> bool {
        let is = |c: &Option<(StrColumn, u64)>| c.as_ref().is_none_or(|(col, ord)| col.ords().first(doc) == Some(*ord));
        if !is(&self.category) || !is(&self.country) {
            return false;
        }
        match &self.regions {
            None => true,
            Some((col, wanted)) => {
                let mut any = false;
                for ord in col.term_ords(doc) {
                    if wanted.binary_search(&ord).is_err() {
                        return false;
                    }
                    any = true;
                }
                any
            }
        }
    }
}

/// Top `limit` hits in the order of [`Hit`] (see the module docs).
pub(super) struct TopIds {
    /// How many hits at most.
    pub(super) limit: usize,
    /// Whether equal scores order newest first.
    pub(super) newest_first: bool,
    /// When given (Unix nanoseconds), only documents whose `valid_until` lies after it.
    pub(super) current_at: Option<i64>,
    /// The category and area filter.
    pub(super) filter: AreaFilter,
}

/// The per-segment part of [`TopIds`].
pub(super) struct TopIdsSegment {
    limit: usize,
    /// The filter of this segment; None when no document of it can pass.
    filter: Option<SegmentFilter>,
    segment: SegmentOrdinal,
    ids: StrColumn,
    published: Option<Column<i64>>,
    price: Column<f64>,
    /// The `valid_until` column and the instant a collected offer must be valid after.
    current: Option<(Column<i64>, i64)>,
    heap: BinaryHeap<Hit<u64>>,
    /// Whether the segment's documents come in ascending price order (the index is
    /// sorted by `price`) and equal scores go by price (not newest first): then a
    /// document that ties the worst kept score can be skipped once the documents reach
    /// a price above the worst kept's ([`Self::pruning_threshold`]).
    by_price: bool,
}

fn id_column(seg: &SegmentReader) -> tantivy::Result<StrColumn> {
    seg.fast_fields()
        .str("id")?
        .ok_or_else(|| tantivy::TantivyError::SchemaError("the offer index has no id fast field".into()))
}

/// The id of term ordinal `ord` of an id column.
fn id_of(ids: &StrColumn, ord: u64) -> std::io::Result<String> {
    ids_of(ids, &[ord])?
        .pop()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "offer index: id ordinal out of range"))
}

/// The id columns of a search's segments, each opened once, by segment ordinal: turns a
/// [`Hit`]'s key (an ordinal in its segment's column) back into the offer id.
pub(super) struct IdColumns(Vec<(SegmentOrdinal, StrColumn)>);

impl IdColumns {
    /// The id columns of every segment of `searcher`.
    ///
    /// # Errors
    /// A segment without the id column.
    #[cfg(any(test, feature = "testkit"))]
    pub(super) fn of(searcher: &Searcher) -> tantivy::Result<Self> {
        let segments = searcher.segment_readers().iter().enumerate();
        Ok(Self(segments.map(|(i, seg)| Ok((i as SegmentOrdinal, id_column(seg)?))).collect::<tantivy::Result<_>>()?))
    }

    /// The offer id of `hit`.
    ///
    /// # Errors
    /// A hit of a segment not held here, or an id column that cannot be read.
    pub(super) fn id(&self, hit: &Hit<u64>) -> std::io::Result<String> {
        let seg = hit.address.segment_ord;
        let (_, col) = self.0.iter().find(|(o, _)| *o == seg).ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidData, "offer index: hit of an unknown segment")
        })?;
        id_of(col, hit.key)
    }
}

/// The ids of sorted, distinct term ordinals of an id column, in the same order.
fn ids_of(ids: &StrColumn, ords: &[u64]) -> std::io::Result<Vec<String>> {
    let mut out = Vec::with_capacity(ords.len());
    ids.dictionary().sorted_ords_to_term_cb(ords, |b| out.push(String::from_utf8_lossy(b).into_owned()))?;
    if out.len() != ords.len() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "offer index: id ordinal out of range"));
    }
    Ok(out)
}

/// The hits of one segment and the segment's id column.
pub(super) type SegmentHits = (StrColumn, Vec<Hit<u64>>);

/// The best `limit` of the segments' hits in the order of [`Hit`], each keyed by its
/// id's ordinal in its segment. Hits that tie on score, publication time and price are
/// ordered by id: by ordinal inside one segment, by the id read from the dictionary
/// when the tie spans segments (rare: then only those hits' ids are read).
///
/// # Errors
/// An id column that cannot be read.
pub(super) fn merge_hits(segments: Vec<SegmentHits>, limit: usize) -> std::io::Result<Vec<Hit<u64>>> {
    let mut columns = Vec::with_capacity(segments.len());
    let mut all: Vec<Hit<u64>> = Vec::new();
    for (col, hits) in segments {
        if let Some(h) = hits.first() {
            columns.push((h.address.segment_ord, col));
        }
        all.extend(hits);
    }
    let columns = IdColumns(columns);
    let ties = |a: &Hit<u64>, b: &Hit<u64>| {
        a.score.total_cmp(&b.score).is_eq() && a.published == b.published && a.price.total_cmp(&b.price).is_eq()
    };
    all.sort_by(|a, b| a.cmp(b).then(a.address.segment_ord.cmp(&b.address.segment_ord)));
    let mut start = 0;
    while start < all.len().min(limit) {
        let end = start + all[start..].iter().take_while(|h| ties(h, &all[start])).count();
        let group = &mut all[start..end];
        if group.iter().any(|h| h.address.segment_ord != group[0].address.segment_ord) {
            let mut by_id =
                group.iter().map(|h| Ok((columns.id(h)?, h.clone()))).collect::<std::io::Result<Vec<_>>>()?;
            by_id.sort_by(|a, b| a.0.cmp(&b.0));
            for (slot, (_, h)) in group.iter_mut().zip(by_id) {
                *slot = h;
            }
        }
        start = end;
    }
    all.truncate(limit);
    Ok(all)
}

impl TopIds {
    /// The best `limit` hits of `weight` (scoring enabled) in `searcher`'s segments,
    /// merged ([`merge_hits`]). The segments are collected largest first, each starting at
    /// the score just under the `limit`-th best kept in those before it: the best `limit`
    /// of all segments score at least that much, and equal scores still come in.
    pub(super) fn search(&self, searcher: &Searcher, weight: &dyn Weight) -> tantivy::Result<Vec<Hit<u64>>> {
        let by_price = !self.newest_first && searcher.index().settings().sort_by_field == price_order();
        let segments = searcher.segment_readers();
        let mut order: Vec<usize> = (0..segments.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(segments[i].num_docs()));
        let mut floor = Score::MIN;
        let mut fruits = Vec::with_capacity(order.len());
        for i in order {
            let (hits, reached) = self.collect_segment(weight, (i as SegmentOrdinal, by_price), &segments[i], floor)?;
            floor = floor.max(reached);
            fruits.push(hits);
        }
        Ok(merge_hits(fruits, self.limit)?)
    }

    fn for_segment(
        &self,
        segment: SegmentOrdinal,
        by_price: bool,
        seg: &SegmentReader,
    ) -> tantivy::Result<TopIdsSegment> {
        let published = if self.newest_first { Some(seg.fast_fields().i64("published")?) } else { None };
        let current = match self.current_at {
            Some(at) => Some((seg.fast_fields().i64("valid_until")?, at)),
            None => None,
        };
        Ok(TopIdsSegment {
            limit: self.limit,
            filter: SegmentFilter::new(&self.filter, seg)?,
            segment,
            ids: id_column(seg)?,
            published,
            price: seg.fast_fields().f64("price")?,
            current,
            heap: BinaryHeap::with_capacity(self.limit.min(1024) + 1),
            by_price,
        })
    }

    /// Collects one segment (its ordinal, and whether it is in price order) with pruning,
    /// from `floor` on: tantivy is told after each hit the lowest score that can still
    /// enter the top `limit` ([`TopIdsSegment::pruning_threshold`]). Returns the hits and
    /// the score just under the worst kept at the end (equal scores of later segments
    /// still meet the tie break).
    fn collect_segment(
        &self,
        weight: &dyn Weight,
        (segment_ord, by_price): (SegmentOrdinal, bool),
        reader: &SegmentReader,
        floor: Score,
    ) -> tantivy::Result<(SegmentHits, Score)> {
        let mut child = self.for_segment(segment_ord, by_price, reader)?;
        if child.filter.is_none() {
            return Ok((child.harvest(), Score::MIN));
        }
        let alive = reader.alive_bitset();
        weight.for_each_pruning(floor, reader, &mut |doc, score| {
            if alive.is_none_or(|a| a.is_alive(doc)) {
                child.collect(doc, score);
            }
            child.pruning_threshold(doc).max(floor)
        })?;
        let reached = child.threshold();
        Ok((child.harvest(), reached))
    }
}

/// A BM25 score on a grid of 2^-15 of its value (the low 8 bits of the mantissa cleared,
/// rounding down): block-max WAND adds a document's term scores in an order that depends
/// on what it skipped, so the same score may come out a unit in the last place apart;
/// on the grid such scores are (almost always) equal again and meet the tie break.
/// Monotone, so the pruning threshold stays valid.
pub(super) fn on_grid(score: Score) -> Score {
    if score > 0.0 && score.is_finite() {
        Score::from_bits(score.to_bits() & !0xFF)
    } else {
        score
    }
}

impl TopIdsSegment {
    /// The score a document must exceed to be offered: just under the worst kept score
    /// once `limit` hits are kept, else the lowest score.
    fn threshold(&self) -> Score {
        match self.worst() {
            Some(worst) => worst.score.next_down(),
            None => Score::MIN,
        }
    }

    /// The worst kept hit once `limit` hits are kept.
    fn worst(&self) -> Option<&Hit<u64>> {
        self.heap.peek().filter(|_| self.heap.len() >= self.limit)
    }

    /// The score a document after `doc` must exceed to be offered. As [`Self::threshold`],
    /// except in a segment in price order once `doc` costs more than the worst kept: every
    /// later document costs at least as much, so one that ties the worst kept score on the
    /// grid ([`on_grid`]) loses the tie break, and the threshold is the top of the worst
    /// score's grid cell. Offers with the same words score the same: this lets block-max
    /// WAND skip them instead of offering each (a third of a search's time).
    fn pruning_threshold(&self, doc: DocId) -> Score {
        match self.worst() {
            Some(w)
                if self.by_price
                    && w.score > 0.0
                    && w.score.is_finite()
                    && self.price.first(doc).is_some_and(|p| p.total_cmp(&w.price).is_gt()) =>
            {
                Score::from_bits(w.score.to_bits() | 0xFF)
            }
            _ => self.threshold(),
        }
    }
}

impl SegmentCollector for TopIdsSegment {
    type Fruit = SegmentHits;

    /// Reads a document's columns only as far as it may still enter: once `limit` hits are
    /// kept, a document that ties the worst kept on score (the common case: offers with
    /// the same words score the same) and loses on publication time or price is
    /// dropped before its validity and its id are read.
    fn collect(&mut self, doc: DocId, score: Score) {
        let score = on_grid(score);
        let worst = self.worst();
        if worst.is_some_and(|w| score < w.score) {
            return;
        }
        let published = self.published.as_ref().and_then(|c| c.first(doc)).unwrap_or(0);
        let price = self.price.first(doc).unwrap_or(f64::MAX);
        let probe = Hit { score, published, price, key: 0, address: DocAddress::new(self.segment, doc) };
        if worst.is_some_and(|w| probe.rank_cmp(w).is_gt()) {
            return;
        }
        if !self.filter.as_ref().is_some_and(|f| f.passes(doc)) {
            return;
        }
        if let Some((valid_until, at)) = &self.current {
            if valid_until.first(doc).unwrap_or(i64::MAX) <= *at {
                return;
            }
        }
        let Some(key) = self.ids.ords().first(doc) else { return };
        let hit = Hit { key, ..probe };
        if self.heap.len() < self.limit {
            self.heap.push(hit);
        } else if self.heap.peek().is_some_and(|worst| hit < *worst) {
            self.heap.pop();
            self.heap.push(hit);
        }
    }

    fn harvest(self) -> Self::Fruit {
        (self.ids, self.heap.into_vec())
    }
}

/// Every matching offer id, unscored.
pub(super) struct AllIds;

/// The per-segment part of [`AllIds`].
pub(super) struct AllIdsSegment {
    ids: StrColumn,
    ords: Vec<u64>,
}

impl Collector for AllIds {
    type Fruit = Vec<String>;
    type Child = AllIdsSegment;

    fn for_segment(&self, _: SegmentOrdinal, seg: &SegmentReader) -> tantivy::Result<AllIdsSegment> {
        Ok(AllIdsSegment { ids: id_column(seg)?, ords: Vec::new() })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<std::io::Result<Vec<String>>>) -> tantivy::Result<Vec<String>> {
        Ok(fruits.into_iter().collect::<std::io::Result<Vec<_>>>()?.concat())
    }
}

impl SegmentCollector for AllIdsSegment {
    type Fruit = std::io::Result<Vec<String>>;

    fn collect(&mut self, doc: DocId, _: Score) {
        if let Some(ord) = self.ids.ords().first(doc) {
            self.ords.push(ord);
        }
    }

    fn collect_block(&mut self, docs: &[DocId]) {
        let ords = self.ids.ords();
        self.ords.extend(docs.iter().filter_map(|&d| ords.first(d)));
    }

    fn harvest(mut self) -> Self::Fruit {
        self.ords.sort_unstable();
        self.ords.dedup();
        ids_of(&self.ids, &self.ords)
    }
}
