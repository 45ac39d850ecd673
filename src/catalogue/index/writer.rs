//! Writing the offer index: updates go into one long-lived tantivy writer and are
//! committed in the background, near real time.
//!
//! [`OfferIndex::apply`] adds its documents to the pending writer and returns: the
//! catalogue write it follows does not wait for the index. A background thread (the
//! refresher) commits the pending updates at most [`REFRESH_LAG`] after the first of
//! them; searches read the last commit and never wait. Reads that decide a delivery
//! commit what is pending first ([`OfferIndex::flush`]).
//!
//! Memory is bounded: tantivy's writer holds at most its heap budget, its document queue
//! is bounded, and a series commits at the latest at [`COMMIT_DOCS`] pending updates.
//! The writer ends [`WRITER_IDLE`] after its last commit with nothing pending, and the
//! small segments are then merged when there are more than [`MAX_SEGMENTS`].
//!
//! When an update or a commit fails, the writer is dropped uncommitted: the index stays
//! at its last commit, whose generation then lags the store's, so its owner rebuilds it
//! at the next start. A crash does the same.

use super::*;
use std::sync::Condvar;
use std::time::{Duration, Instant};

/// A series of updates commits at the latest when this many offers (added or removed)
/// are pending.
pub(super) const COMMIT_DOCS: usize = 50_000;
/// The longest an update waits for its commit: a search sees an offer at most this long
/// after its catalogue write returned (plus the commit's own time, a few ms to tens of
/// ms; the documented bound is one second).
pub const REFRESH_LAG: Duration = Duration::from_millis(500);
/// A writer with nothing pending ends this long after its last commit.
pub(super) const WRITER_IDLE: Duration = Duration::from_secs(2);
/// A series whose first update has fewer offers gets a writer of
/// [`SMALL_WRITER_HEAP_BYTES`].
const SMALL_SERIES: usize = 100;
/// The budget of a small series' writer (tantivy's least).
const SMALL_WRITER_HEAP_BYTES: usize = 15_000_000;

/// The live writer and its updates not yet committed.
pub(super) struct Pending {
    writer: IndexWriter,
    /// The generation the pending updates bring the index to.
    generation: u64,
    /// Offers added or removed since the last commit.
    docs: usize,
    /// When the first update not yet committed was applied (`None`: nothing pending).
    since: Option<Instant>,
    /// When the writer last committed (or was made).
    committed: Instant,
}

/// What the refresher and the updaters share, under [`Writing::state`].
#[derive(Default)]
pub(super) struct State {
    pending: Option<Pending>,
    /// The refresher thread, once started.
    refresher: Option<std::thread::JoinHandle<()>>,
    /// Set when the index is dropped: the refresher ends.
    closed: bool,
}

/// The writing side of the index, shared with its refresher thread.
pub(super) struct Writing {
    pub(super) index: Index,
    reader: IndexReader,
    /// The fingerprint of the exchange rates (see [`OfferIndex::open_priced`]).
    prices: String,
    state: Mutex<State>,
    /// Signalled when an update is pending or the index closes.
    changed: Condvar,
    /// The generation of the last commit.
    pub(super) generation: Mutex<Option<u64>>,
}

impl Writing {
    pub(super) fn new(index: Index, reader: IndexReader, prices: String, generation: Option<u64>) -> Self {
        Self {
            index,
            reader,
            prices,
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            generation: Mutex::new(generation),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The live writer, or a new one for a series whose first update has `first`
    /// offers: a small one (a single arriving offer) gets a small budget, whose smaller
    /// term hash table is quicker to make and to write out.
    fn pending(&self, slot: Option<Pending>, generation: u64, first: usize) -> Result<Pending, IndexError> {
        match slot {
            Some(p) => Ok(p),
            None => {
                let heap = if first >= SMALL_SERIES { WRITER_HEAP_BYTES } else { SMALL_WRITER_HEAP_BYTES };
                let writer = self.index.writer_with_num_threads(WRITER_THREADS, heap)?;
                Ok(Pending { writer, generation, docs: 0, since: None, committed: Instant::now() })
            }
        }
    }

    /// Commits `p`'s updates with its generation and shows them to searches; the writer
    /// lives on. Called with the state lock held. On failure the writer is dropped.
    fn commit(&self, mut p: Pending) -> Result<Pending, IndexError> {
        let payload =
            serde_json::json!({"generation": p.generation, "analysis": analysis_fingerprint(), "prices": self.prices})
                .to_string();
        let mut prepared = p.writer.prepare_commit()?;
        prepared.set_payload(&payload);
        prepared.commit()?;
        self.reader.reload()?;
        *self.generation.lock().unwrap_or_else(PoisonError::into_inner) = Some(p.generation);
        p.docs = 0;
        p.since = None;
        p.committed = Instant::now();
        self.merge_small(&mut p.writer);
        Ok(p)
    }

    /// Ends the writer: commits what is pending, waits for the merges it started, shows
    /// the merged segments to searches and compacts the small ones. Called with the
    /// state lock held.
    fn end(&self, p: Pending) -> Result<(), IndexError> {
        let p = if p.since.is_some() { self.commit(p)? } else { p };
        match p.writer.wait_merging_threads() {
            Ok(()) => self.reader.reload()?,
            Err(e) => tracing::warn!(error = %e, "offer index merge failed; the index keeps its segments"),
        }
        if let Err(e) = self.compact() {
            tracing::warn!(error = %e, "offer index merge failed; the index keeps its segments");
        }
        Ok(())
    }

    /// The segments [`Self::compact`] merges: all but the largest segments of at least a
    /// quarter of the largest one's size (at most `MAX_SEGMENTS - 1` kept), when there
    /// are more than [`MAX_SEGMENTS`]; none otherwise.
    fn small_segments(&self) -> Result<Vec<tantivy::index::SegmentId>, IndexError> {
        let mut metas = self.index.searchable_segment_metas()?;
        if metas.len() <= MAX_SEGMENTS {
            return Ok(Vec::new());
        }
        metas.sort_by_key(|m| std::cmp::Reverse(m.num_docs()));
        let largest = metas.first().map_or(0, |m| m.num_docs());
        let keep =
            metas.iter().take(MAX_SEGMENTS - 1).take_while(|m| m.num_docs().saturating_mul(4) >= largest).count();
        Ok(metas.iter().skip(keep.max(1)).map(|m| m.id()).collect())
    }

    /// While the writer lives: starts the merge of the small segments in its merge
    /// thread (not waited for; a later commit or the writer's end shows its result).
    fn merge_small(&self, writer: &mut IndexWriter) {
        match self.small_segments() {
            // A merge of segments already being merged fails; the next commit tries again.
            Ok(ids) if ids.len() > 1 => drop(writer.merge(&ids)),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "offer index merge failed; the index keeps its segments"),
        }
    }

    /// When there are more than [`MAX_SEGMENTS`] segments, merges the small ones into one
    /// (each segment costs every search a visit), see [`Self::small_segments`]: a large
    /// segment is copied again only when the small ones have grown to a quarter of the
    /// largest, so a series of one-offer commits stays cheap. Called with the state lock
    /// held, after the writer ended.
    fn compact(&self) -> Result<(), IndexError> {
        let ids = self.small_segments()?;
        if ids.is_empty() {
            return Ok(());
        }
        // A merge indexes nothing: the least budget, one thread.
        let mut w: IndexWriter = self.index.writer_with_num_threads(1, SMALL_WRITER_HEAP_BYTES)?;
        w.merge(&ids).wait()?;
        w.wait_merging_threads()?;
        self.reader.reload()?;
        Ok(())
    }

    /// The refresher: commits pending updates [`REFRESH_LAG`] after the first of them,
    /// and ends a writer [`WRITER_IDLE`] after its last commit with nothing pending.
    /// Returns when the index closes.
    fn refresh(&self) {
        let mut st = self.lock();
        while !st.closed {
            let wait = st.pending.as_ref().map(|p| match p.since {
                Some(since) => (since + REFRESH_LAG).saturating_duration_since(Instant::now()),
                None => (p.committed + WRITER_IDLE).saturating_duration_since(Instant::now()),
            });
            match wait {
                None => st = self.changed.wait(st).unwrap_or_else(PoisonError::into_inner),
                Some(d) if !d.is_zero() => {
                    st = self.changed.wait_timeout(st, d).unwrap_or_else(PoisonError::into_inner).0;
                }
                Some(_) => {
                    let Some(p) = st.pending.take() else { continue };
                    let done = if p.since.is_some() { self.commit(p).map(Some) } else { self.end(p).map(|()| None) };
                    match done {
                        Ok(p) => st.pending = p,
                        Err(e) => {
                            tracing::error!(error = %e, "offer index update failed; it is rebuilt at the next start")
                        }
                    }
                }
            }
        }
    }
}

impl OfferIndex {
    /// Replaces the whole index with `offers` (active offers only) and commits with
    /// `generation` (with any pending updates, which the rebuild replaces), then ends
    /// the writer. Returns the number of offers indexed (an offer whose `publishedAt`
    /// does not read is left out, with a warning naming it).
    ///
    /// # Errors
    /// tantivy errors (also another process holding the index's writer lock); the index
    /// is then left as it was at its last commit.
    pub fn rebuild(&self, offers: impl Iterator<Item = Offer>, generation: u64) -> Result<u64, IndexError> {
        let w = &self.writing;
        let mut st = w.lock();
        let mut p = w.pending(st.pending.take(), generation, usize::MAX)?;
        p.writer.delete_all_documents()?;
        let mut n = 0u64;
        for o in offers {
            if let Some(d) = self.document(&o)? {
                p.writer.add_document(d)?;
                n += 1;
            }
        }
        p.generation = generation;
        p.since = Some(Instant::now());
        w.end(p)?;
        Ok(n)
    }

    /// Adds or replaces offers (delete by id term, then add) and removes the `removed`
    /// ids, bringing the index to `generation`. `upserts` must be active offers (an offer
    /// that became inactive belongs in `removed`). The change is committed in the
    /// background within [`REFRESH_LAG`] (see the module docs), or at once by
    /// [`Self::flush`].
    ///
    /// # Errors
    /// tantivy errors (also another process holding the index's writer lock); the index
    /// is then left as it was at its last commit.
    pub fn apply(&self, upserts: &[Offer], removed: &[String], generation: u64) -> Result<(), IndexError> {
        let w = &self.writing;
        let mut st = w.lock();
        let mut p = w.pending(st.pending.take(), generation, upserts.len())?;
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
        p.since.get_or_insert_with(Instant::now);
        if p.docs >= COMMIT_DOCS {
            p = w.commit(p)?;
        }
        st.pending = Some(p);
        if st.refresher.is_none() {
            let shared = Arc::clone(w);
            let spawned = std::thread::Builder::new().name("isto-index-refresh".into()).spawn(move || shared.refresh());
            match spawned {
                Ok(h) => st.refresher = Some(h),
                // Without the refresher, the next read that settles commits.
                Err(e) => tracing::error!(error = %e, "offer index refresher not started"),
            }
        }
        w.changed.notify_all();
        Ok(())
    }

    /// Commits the pending updates, if any, and shows them to searches (see the module
    /// docs). The writer lives on until it is idle.
    ///
    /// # Errors
    /// tantivy errors; the pending updates are then dropped and the index stays at its
    /// last commit (whose generation lags).
    pub fn flush(&self) -> Result<(), IndexError> {
        let w = &self.writing;
        let mut st = w.lock();
        match st.pending.take() {
            Some(p) if p.since.is_some() => st.pending = Some(w.commit(p)?),
            other => st.pending = other,
        }
        Ok(())
    }

    /// [`Self::flush`] before a read that must see every update: a failure is logged
    /// (the read sees the last commit).
    pub(in crate::catalogue) fn settle(&self) {
        if let Err(e) = self.flush() {
            tracing::error!(error = %e, "offer index update failed; it is rebuilt at the next start");
        }
    }
}

impl Drop for OfferIndex {
    /// Stops the refresher, commits the pending updates and ends the writer (an index
    /// dropped with them uncommitted would lag the store and be rebuilt at the next
    /// start).
    fn drop(&mut self) {
        let w = &self.writing;
        let refresher = {
            let mut st = w.lock();
            st.closed = true;
            st.refresher.take()
        };
        w.changed.notify_all();
        if let Some(h) = refresher {
            if h.join().is_err() {
                tracing::error!("offer index refresher panicked");
            }
        }
        let pending = w.lock().pending.take();
        if let Some(p) = pending {
            if let Err(e) = w.end(p) {
                tracing::error!(error = %e, "offer index update failed; it is rebuilt at the next start");
            }
        }
    }
}
