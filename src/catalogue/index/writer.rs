//! Writing the offer index: a series of updates goes into one tantivy writer and one
//! commit.
//!
//! [`OfferIndex::apply`] adds its documents to the pending writer (made by the first
//! update of a series) and commits only when [`COMMIT_DOCS`] updates are pending; every
//! read of the index ([`OfferIndex::search`], the candidates of an intent,
//! [`OfferIndex::generation`], [`OfferIndex::num_docs`]) commits what is pending first
//! ([`OfferIndex::flush`]), so a read always sees every update applied before it. A
//! commit ends the writer (its indexing threads and the directory's writer lock) after
//! the merges it started; dropping the index commits what is pending. An import of many
//! batches thus pays one commit, one reader reload and one segment per 64 MiB of
//! documents instead of one per batch (each commit wrote and synced a segment and built
//! its term dictionaries again, and the merges that followed copied them again).
//!
//! When an update or a commit fails, the writer is dropped uncommitted: the index stays
//! at its last commit, whose generation (the commit payload) then lags the store's, so
//! its owner rebuilds it at the next start.

use super::*;

/// A series of updates commits at the latest when this many offers (added or removed)
/// are pending.
pub(super) const COMMIT_DOCS: usize = 50_000;
/// A series whose first update has fewer offers gets a writer of
/// [`SMALL_WRITER_HEAP_BYTES`].
const SMALL_SERIES: usize = 100;
/// The budget of a small series' writer (tantivy's least).
const SMALL_WRITER_HEAP_BYTES: usize = 15_000_000;

/// The writer of the updates not yet committed.
pub(super) struct Pending {
    writer: IndexWriter,
    /// The generation the pending updates bring the index to.
    generation: u64,
    /// Offers added or removed since the last commit.
    docs: usize,
}

impl OfferIndex {
    /// Replaces the whole index with `offers` (active offers only) and commits with
    /// `generation` (with any pending updates, which the rebuild replaces). Returns the
    /// number of offers indexed (an offer whose `publishedAt` does not read is left out,
    /// with a warning naming it).
    ///
    /// # Errors
    /// tantivy errors (also another process holding the index's writer lock); the index
    /// is then left as it was at its last commit.
    pub fn rebuild(&self, offers: impl Iterator<Item = Offer>, generation: u64) -> Result<u64, IndexError> {
        let mut slot = self.writing.lock().unwrap_or_else(PoisonError::into_inner);
        let mut p = self.pending(slot.take(), generation, usize::MAX)?;
        p.writer.delete_all_documents()?;
        let mut n = 0u64;
        for o in offers {
            if let Some(d) = self.document(&o)? {
                p.writer.add_document(d)?;
                n += 1;
            }
        }
        p.generation = generation;
        self.commit(p)?;
        Ok(n)
    }

    /// Adds or replaces offers (delete by id term, then add) and removes the `removed`
    /// ids, bringing the index to `generation`. `upserts` must be active offers (an offer
    /// that became inactive belongs in `removed`). The change is committed with the
    /// series it belongs to (see the module docs): at the latest by the next read.
    ///
    /// # Errors
    /// tantivy errors (also another process holding the index's writer lock); the index
    /// is then left as it was at its last commit.
    pub fn apply(&self, upserts: &[Offer], removed: &[String], generation: u64) -> Result<(), IndexError> {
        let mut slot = self.writing.lock().unwrap_or_else(PoisonError::into_inner);
        let mut p = self.pending(slot.take(), generation, upserts.len())?;
        for o in upserts {
            p.writer.delete_term(Term::from_field_text(self.f.id, &o.id));
            if let Some(d) = self.document(o)? {
                p.writer.add_document(d)?;
            }
        }
        for id in removed {
            p.writer.delete_term(Term::from_field_text(self.f.id, id));
        }
        p.generation = generation;
        p.docs += upserts.len() + removed.len();
        if p.docs >= COMMIT_DOCS {
            return self.commit(p);
        }
        *slot = Some(p);
        Ok(())
    }

    /// Commits the pending updates, if any (see the module docs).
    ///
    /// # Errors
    /// tantivy errors; the pending updates are then dropped and the index stays at its
    /// last commit (whose generation lags).
    pub fn flush(&self) -> Result<(), IndexError> {
        let mut slot = self.writing.lock().unwrap_or_else(PoisonError::into_inner);
        match slot.take() {
            Some(p) => self.commit(p),
            None => Ok(()),
        }
    }

    /// [`Self::flush`] before a read: a failure is logged (the read sees the last commit).
    pub(super) fn settle(&self) {
        if let Err(e) = self.flush() {
            tracing::error!(error = %e, "offer index update failed; it is rebuilt at the next start");
        }
    }

    /// The pending writer, or a new one for a series whose first update has `first`
    /// offers: a small one (a single arriving offer) gets a small budget, whose smaller
    /// term hash table is quicker to make and to write out.
    fn pending(&self, slot: Option<Pending>, generation: u64, first: usize) -> Result<Pending, IndexError> {
        match slot {
            Some(p) => Ok(p),
            None => {
                let heap = if first >= SMALL_SERIES { WRITER_HEAP_BYTES } else { SMALL_WRITER_HEAP_BYTES };
                let writer = self.index.writer_with_num_threads(WRITER_THREADS, heap)?;
                Ok(Pending { writer, generation, docs: 0 })
            }
        }
    }

    /// Commits `p` with its generation; then waits for the merges the commit started and
    /// ends the writer (its threads and memory), and shows the merged segments to
    /// searches. Called with the `writing` lock held.
    fn commit(&self, p: Pending) -> Result<(), IndexError> {
        let Pending { mut writer, generation, .. } = p;
        let payload =
            serde_json::json!({"generation": generation, "analysis": analysis_fingerprint(), "prices": self.prices})
                .to_string();
        let mut prepared = writer.prepare_commit()?;
        prepared.set_payload(&payload);
        prepared.commit()?;
        self.reader.reload()?;
        *self.generation.lock().unwrap_or_else(PoisonError::into_inner) = Some(generation);
        // Committed: a failed merge leaves the committed segments as they are.
        match writer.wait_merging_threads() {
            Ok(()) => self.reader.reload()?,
            Err(e) => tracing::warn!(error = %e, "offer index merge failed; the index keeps its segments"),
        }
        if let Err(e) = self.compact() {
            tracing::warn!(error = %e, "offer index merge failed; the index keeps its segments");
        }
        Ok(())
    }

    /// When there are more than [`MAX_SEGMENTS`] segments, merges the small ones into one
    /// (each segment costs every search a visit): all but the largest segments of at
    /// least a quarter of the largest one's size (at most `MAX_SEGMENTS - 1` kept).
    /// Merging only the small ones keeps a series of small commits (one offer each)
    /// cheap: a large segment is copied again only when the small ones have grown to a
    /// quarter of the largest (merging all but the largest copied the second largest on
    /// every few commits), and merging all the small ones at once leaves room for the
    /// next few commits. Called with the `writing` lock held, after a commit.
    fn compact(&self) -> Result<(), IndexError> {
        let mut metas = self.index.searchable_segment_metas()?;
        if metas.len() <= MAX_SEGMENTS {
            return Ok(());
        }
        metas.sort_by_key(|m| std::cmp::Reverse(m.num_docs()));
        let largest = metas.first().map_or(0, |m| m.num_docs());
        let keep =
            metas.iter().take(MAX_SEGMENTS - 1).take_while(|m| m.num_docs().saturating_mul(4) >= largest).count();
        let ids: Vec<_> = metas.iter().skip(keep.max(1)).map(|m| m.id()).collect();
        // A merge indexes nothing: the least budget, one thread.
        let mut w: IndexWriter = self.index.writer_with_num_threads(1, SMALL_WRITER_HEAP_BYTES)?;
        w.merge(&ids).wait()?;
        w.wait_merging_threads()?;
        self.reader.reload()?;
        Ok(())
    }
}

impl Drop for OfferIndex {
    /// Commits the pending updates (an index dropped with them uncommitted would lag the
    /// store and be rebuilt at the next start).
    fn drop(&mut self) {
        self.settle();
    }
}
