//! The search collector of the offer index: the top `limit` offer ids by score, then
//! (when asked) publication time, then id — deterministic whatever the segment layout.

use super::*;

/// One search hit: `key` is the id (across segments) or the id's term ordinal in the
/// segment's id column (inside a segment, where ordinals sort as the ids do). Orders
/// worst last: lower score, then (when asked) older, then larger id.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Hit<K> {
    /// BM25 score.
    pub(super) score: Score,
    /// Publication time (Unix seconds), for the newest-first tie break.
    pub(super) published: i64,
    /// The id or its term ordinal.
    pub(super) key: K,
    /// Where the document is (for its stored offer); not part of the order (one live
    /// document per id).
    pub(super) address: DocAddress,
}

impl<K: Ord> Eq for Hit<K> {}

impl<K: Ord> Ord for Hit<K> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(other.published.cmp(&self.published))
            .then_with(|| self.key.cmp(&other.key))
    }
}

impl<K: Ord> PartialOrd for Hit<K> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Top `limit` hits by score descending, then (when `newest_first`) publication time
/// descending, then id ascending — deterministic whatever the segment layout.
pub(super) struct TopIds {
    /// How many hits at most.
    pub(super) limit: usize,
    /// Whether equal scores order newest first.
    pub(super) newest_first: bool,
    /// When given (Unix nanoseconds), only documents whose `valid_until` lies after it
    /// are collected: offers past `validUntil` never take a place among the `limit`.
    pub(super) current_at: Option<i64>,
}

/// The per-segment part of [`TopIds`].
pub(super) struct TopIdsSegment {
    limit: usize,
    segment: SegmentOrdinal,
    ids: StrColumn,
    published: Option<Column<i64>>,
    /// The `valid_until` column and the instant a collected offer must be valid after.
    current: Option<(Column<i64>, i64)>,
    heap: BinaryHeap<Hit<u64>>,
}

fn id_column(seg: &SegmentReader) -> tantivy::Result<StrColumn> {
    seg.fast_fields()
        .str("id")?
        .ok_or_else(|| tantivy::TantivyError::SchemaError("the offer index has no id fast field".into()))
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

impl Collector for TopIds {
    type Fruit = Vec<Hit<String>>;
    type Child = TopIdsSegment;

    fn for_segment(&self, segment: SegmentOrdinal, seg: &SegmentReader) -> tantivy::Result<TopIdsSegment> {
        let published = if self.newest_first { Some(seg.fast_fields().i64("published")?) } else { None };
        let current = match self.current_at {
            Some(at) => Some((seg.fast_fields().i64("valid_until")?, at)),
            None => None,
        };
        Ok(TopIdsSegment {
            limit: self.limit,
            segment,
            ids: id_column(seg)?,
            published,
            current,
            heap: BinaryHeap::with_capacity(self.limit.min(1024) + 1),
        })
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(&self, fruits: Vec<std::io::Result<Vec<Hit<String>>>>) -> tantivy::Result<Vec<Hit<String>>> {
        let mut all = Vec::new();
        for f in fruits {
            all.extend(f?);
        }
        all.sort();
        all.truncate(self.limit);
        Ok(all)
    }
}

impl SegmentCollector for TopIdsSegment {
    type Fruit = std::io::Result<Vec<Hit<String>>>;

    fn collect(&mut self, doc: DocId, score: Score) {
        if let Some((valid_until, at)) = &self.current {
            if valid_until.first(doc).unwrap_or(i64::MAX) <= *at {
                return;
            }
        }
        let Some(ord) = self.ids.ords().first(doc) else { return };
        let published = self.published.as_ref().and_then(|c| c.first(doc)).unwrap_or(0);
        let hit = Hit { score, published, key: ord, address: DocAddress::new(self.segment, doc) };
        if self.heap.len() < self.limit {
            self.heap.push(hit);
        } else if self.heap.peek().is_some_and(|worst| hit < *worst) {
            self.heap.pop();
            self.heap.push(hit);
        }
    }

    fn harvest(self) -> Self::Fruit {
        let mut hits = self.heap.into_vec();
        hits.sort_by_key(|h| h.key);
        let ords: Vec<u64> = hits.iter().map(|h| h.key).collect();
        let ids = ids_of(&self.ids, &ords)?;
        Ok(hits
            .into_iter()
            .zip(ids)
            .map(|(h, id)| Hit { score: h.score, published: h.published, key: id, address: h.address })
            .collect())
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
        let mut all = Vec::new();
        for f in fruits {
            all.extend(f?);
        }
        Ok(all)
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
