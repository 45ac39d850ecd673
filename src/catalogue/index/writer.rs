//! Writing the offer index: updates go into one long-lived tantivy writer and are
//! committed in the background, near real time.
//!
//! [`OfferIndex::apply`] queues its offers and returns: the catalogue write it follows
//! waits neither for the index nor for a commit in progress. A background thread (the
//! refresher) turns queued offers into documents, adds them to the pending writer, and
//! commits at most [`REFRESH_LAG`] after the first update not yet committed; searches
//! read the last commit and never wait. Reads that decide a delivery add what is queued
//! and commit what is pending first ([`OfferIndex::flush`]).
//!
//! One thread at a time has the writer (the refresher, or a flush, a rebuild, the drop):
//! it takes the writer and the queue out of the shared state ([`Writing::check_out`]), so
//! that updates queue while it works, and puts the writer back when done.
//!
//! Memory is bounded: tantivy's writer holds at most its heap budget, an update waits
//! while [`QUEUE_OFFERS`] offers are queued, and a series commits at the latest at
//! [`COMMIT_DOCS`] pending updates. The writer ends [`WRITER_IDLE`] after its last commit
//! with nothing pending, and the small segments are then merged when there are more
//! than [`MAX_SEGMENTS`].
//!
//! When an update or a commit fails, the writer is dropped uncommitted: the index stays
//! at its last commit, whose generation then lags the store's (later commits keep it
//! until a rebuild), so its owner rebuilds it at the next start. A crash does the same.
//! A panic aborts the process (`panic = "abort"`), so a writer checked out is never left
//! busy.

use super::*;
use std::sync::atomic::Ordering;
use std::sync::Condvar;
use std::time::{Duration, Instant};

/// A series of updates commits at the latest when this many offers (added or removed)
/// are pending.
pub(super) const COMMIT_DOCS: usize = 50_000;
/// The refresher commits at once, not [`REFRESH_LAG`] after the first update, when this
/// many offers are pending and no update is queued: in a long import that the index
/// keeps up with, a segment is written while the import goes on, so that the commit at
/// its end writes only the last few thousand offers.
pub(super) const EARLY_COMMIT_DOCS: usize = 5_000;
/// An update waits while this many offers are queued and not yet in the writer (about
/// 3 KB each).
pub(super) const QUEUE_OFFERS: usize = 5_000;
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

/// An update queued by [`OfferIndex::apply`]: offers new to the index (added without a
/// delete), offers to add or replace, ids to remove, the generation they bring the index
/// to, and when it was applied.
struct Update {
    added: Vec<Offer>,
    upserts: Vec<Offer>,
    removed: Vec<String>,
    generation: u64,
    at: Instant,
}

impl Update {
    /// The offers and ids it holds.
    fn len(&self) -> usize {
        self.added.len() + self.upserts.len() + self.removed.len()
    }
}

/// What the refresher and the updaters share, under [`Writing::state`].
#[derive(Default)]
pub(super) struct State {
    /// The live writer, while no thread has it checked out.
    pending: Option<Pending>,
    /// Whether a thread has the writer checked out ([`Writing::check_out`]).
    busy: bool,
    /// Updates not yet added to the writer, oldest first.
    queue: Vec<Update>,
    /// The offers and ids in `queue`.
    queued: usize,
    /// The first failure of the refresher since the last flush, which returns it.
    failed: Option<IndexError>,
    /// The refresher thread, once started.
    refresher: Option<std::thread::JoinHandle<()>>,
    /// Set when the index is dropped: the refresher ends.
    closed: bool,
}

/// The writing side of the index, shared with its refresher thread.
pub(super) struct Writing {
    pub(super) index: Index,
    reader: IndexReader,
    f: Fields,
    /// The exchange rates into the default currency, for the indexed price.
    rates: BTreeMap<String, f64>,
    /// The fingerprint of the exchange rates (see [`OfferIndex::open_priced`]).
    prices: String,
    state: Mutex<State>,
    /// Signalled when an update is queued, the writer is put back, or the index closes.
    changed: Condvar,
    /// The generation of the last commit.
    pub(super) generation: Mutex<Option<u64>>,
    /// Set when updates were dropped uncommitted (a failed update or commit): later
    /// commits then keep the generation of the last good one, so that the index lags
    /// the store and is rebuilt at the next start, however many updates follow. A
    /// rebuild clears it.
    lost: std::sync::atomic::AtomicBool,
}

impl Writing {
    /// The writing side of `index` of the fields `f`, pricing offers with `rates` (their
    /// fingerprint `prices`, see [`OfferIndex::open_priced`]), last committed at
    /// `generation`.
    pub(super) fn new(
        index: Index,
        reader: IndexReader,
        f: Fields,
        rates: BTreeMap<String, f64>,
        prices: String,
        generation: Option<u64>,
    ) -> Self {
        Self {
            index,
            reader,
            f,
            rates,
            prices,
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            generation: Mutex::new(generation),
            lost: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'a>(&self, st: std::sync::MutexGuard<'a, State>) -> std::sync::MutexGuard<'a, State> {
        self.changed.wait(st).unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the writer and the queued updates: waits while another thread has them.
    /// The caller must [`Self::check_in`] whatever its step ends with.
    fn check_out(&self) -> (Option<Pending>, Vec<Update>) {
        let mut st = self.lock();
        while st.busy {
            st = self.wait(st);
        }
        self.take(&mut st)
    }

    /// [`Self::check_out`] under the lock, once the writer is free.
    fn take(&self, st: &mut State) -> (Option<Pending>, Vec<Update>) {
        st.busy = true;
        st.queued = 0;
        // Updates waiting for room in the queue may go on.
        self.changed.notify_all();
        (st.pending.take(), std::mem::take(&mut st.queue))
    }

    /// Ends a check-out: puts back the writer the step ended with (`None` once it ended).
    /// On a failure, puts back none, marks what the writer held as lost (see
    /// [`Self::lost`]), logs the failure and keeps the first one for the next flush.
    fn check_in(&self, done: Result<Option<Pending>, IndexError>) {
        let mut st = self.lock();
        st.busy = false;
        match done {
            Ok(p) => st.pending = p,
            Err(e) => {
                tracing::error!(error = %e, "offer index update failed; it is rebuilt at the next start");
                self.lost.store(true, Ordering::SeqCst);
                st.failed.get_or_insert(e);
            }
        }
        drop(st);
        self.changed.notify_all();
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

    /// Adds the queued `updates` to the writer in order (new offers; replaced ones: delete
    /// by id term, then add; removed ones), committing whenever [`COMMIT_DOCS`] are
    /// pending. On failure the writer is dropped.
    fn add(&self, mut slot: Option<Pending>, updates: Vec<Update>) -> Result<Option<Pending>, IndexError> {
        for u in updates {
            let mut p = self.pending(slot.take(), u.generation, u.added.len() + u.upserts.len())?;
            // A delete costs tantivy a term query at the next commit, for each segment:
            // an offer never indexed needs none.
            let added = u.added.iter().map(|o| (o, false));
            for (o, replaces) in added.chain(u.upserts.iter().map(|o| (o, true))) {
                if replaces {
                    p.writer.delete_term(Term::from_field_text(self.f.id, &o.id));
                }
                if let Some(d) = self.document(o)? {
                    p.writer.add_document(d)?;
                }
            }
            for id in &u.removed {
                p.writer.delete_term(Term::from_field_text(self.f.id, id));
            }
            p.generation = u.generation;
            p.docs += u.len();
            p.since.get_or_insert(u.at);
            if p.docs >= COMMIT_DOCS {
                p = self.commit(p)?;
            }
            slot = Some(p);
        }
        Ok(slot)
    }

    /// The index document of an offer; `None`, with a warning naming the offer, when its
    /// `publishedAt` does not read: such an offer is left out of the index rather than
    /// ranked as if published in 1970.
    fn document(&self, o: &Offer) -> Result<Option<TantivyDocument>, IndexError> {
        let published = match published_secs(o) {
            Ok(p) => p,
            Err(why) => {
                tracing::warn!(error = %why, "offer not indexed");
                return Ok(None);
            }
        };
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
        let attrs: Vec<&str> = o.attributes.values().filter_map(Value::as_str).collect();
        d.add_text(f.text, analysis::text_value(&o.title, &attrs, &o.description));
        d.add_i64(f.published, published);
        d.add_text(f.offer, serde_json::to_value(o)?.to_string());
        d.add_i64(f.valid_until, valid_until_nanos(o.valid_until.as_deref()));
        let price = self.rates.get(&o.price.currency).map(|r| o.price.amount * r).filter(|p| p.is_finite());
        d.add_f64(f.price, price.unwrap_or(f64::MAX));
        Ok(Some(d))
    }

    /// Commits `p`'s updates with its generation and shows them to searches; the writer
    /// lives on. Called with the writer checked out. On failure the writer is dropped.
    fn commit(&self, mut p: Pending) -> Result<Pending, IndexError> {
        let mut last = self.generation.lock().unwrap_or_else(PoisonError::into_inner);
        let generation = if self.lost.load(Ordering::SeqCst) { last.unwrap_or(0) } else { p.generation };
        let payload =
            serde_json::json!({"generation": generation, "analysis": analysis_fingerprint(), "prices": self.prices})
                .to_string();
        let mut prepared = p.writer.prepare_commit()?;
        prepared.set_payload(&payload);
        prepared.commit()?;
        self.reader.reload()?;
        *last = Some(generation);
        drop(last);
        p.docs = 0;
        p.since = None;
        p.committed = Instant::now();
        self.merge_small(&mut p.writer);
        Ok(p)
    }

    /// Ends the writer: commits what is pending, waits for the merges it started, shows
    /// the merged segments to searches and compacts the small ones. Called with the writer
    /// checked out.
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
    /// largest, so a series of one-offer commits stays cheap. Called with the writer checked
    /// out, after it ended.
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

    /// The refresher: adds queued updates to the writer, commits pending updates
    /// [`REFRESH_LAG`] after the first of them, and ends a writer [`WRITER_IDLE`] after
    /// its last commit with nothing pending. Returns when the index closes.
    fn refresh(&self) {
        let mut st = self.lock();
        while !st.closed {
            if st.busy {
                st = self.wait(st);
                continue;
            }
            let wait = if st.queue.is_empty() {
                st.pending.as_ref().map(|p| match p.since {
                    Some(since) => (since + REFRESH_LAG).saturating_duration_since(Instant::now()),
                    None => (p.committed + WRITER_IDLE).saturating_duration_since(Instant::now()),
                })
            } else {
                Some(Duration::ZERO)
            };
            match wait {
                None => st = self.wait(st),
                Some(d) if !d.is_zero() => {
                    st = self.changed.wait_timeout(st, d).unwrap_or_else(PoisonError::into_inner).0;
                }
                Some(_) => {
                    let (p, updates) = self.take(&mut st);
                    drop(st);
                    self.check_in(self.refresh_step(p, updates));
                    st = self.lock();
                }
            }
        }
    }

    /// One step of the refresher with the writer checked out: adds the queued updates,
    /// then commits when the first pending one is [`REFRESH_LAG`] old or
    /// [`EARLY_COMMIT_DOCS`] are pending with nothing queued, or ends an idle writer.
    /// Returns the writer to put back.
    fn refresh_step(&self, p: Option<Pending>, updates: Vec<Update>) -> Result<Option<Pending>, IndexError> {
        let queued = !updates.is_empty();
        let Some(p) = self.add(p, updates)? else { return Ok(None) };
        let caught_up = || p.docs >= EARLY_COMMIT_DOCS && self.lock().queue.is_empty();
        match p.since {
            Some(since) if since.elapsed() >= REFRESH_LAG || caught_up() => self.commit(p).map(Some),
            Some(_) => Ok(Some(p)),
            None if !queued && p.committed.elapsed() >= WRITER_IDLE => self.end(p).map(|()| None),
            None => Ok(Some(p)),
        }
    }
}

impl OfferIndex {
    /// Replaces the whole index with `offers` (active offers only) and commits with
    /// `generation` (with any pending or queued updates, which the rebuild replaces),
    /// then ends the writer. Returns the number of offers indexed (an offer whose
    /// `publishedAt` does not read is left out, with a warning naming it).
    ///
    /// # Errors
    /// tantivy errors (also another process holding the index's writer lock); the index
    /// is then left as it was at its last commit.
    pub fn rebuild(&self, offers: impl Iterator<Item = Offer>, generation: u64) -> Result<u64, IndexError> {
        let w = &self.writing;
        let (slot, _replaced) = w.check_out();
        let done = (|| {
            let mut p = w.pending(slot, generation, usize::MAX)?;
            p.writer.delete_all_documents()?;
            let mut n = 0u64;
            for o in offers {
                if let Some(d) = w.document(&o)? {
                    p.writer.add_document(d)?;
                    n += 1;
                }
            }
            p.generation = generation;
            p.since = Some(Instant::now());
            // Every offer is in this commit: it may claim the store's generation again,
            // and earlier failures' losses go with it.
            w.lost.store(false, Ordering::SeqCst);
            w.end(p)?;
            w.lock().failed = None;
            Ok(n)
        })();
        // The caller gets the failure (it is not kept for a flush).
        if done.is_err() {
            w.lost.store(true, Ordering::SeqCst);
        }
        w.check_in(Ok(None));
        done
    }

    /// Queues offers new to the index (`added`: ids never indexed, added without a
    /// delete; they go in before `upserts`, so an offer added and then replaced in one
    /// update must be in both, in that order), offers to add or replace (`upserts`:
    /// delete by id term, then add) and ids to remove, bringing the index to
    /// `generation`, and returns: the refresher adds them to the writer and commits
    /// within [`REFRESH_LAG`] (see the module docs), or [`Self::flush`] at once. `added`
    /// and `upserts` must be active offers (an offer that became inactive belongs in
    /// `removed`). Waits while [`QUEUE_OFFERS`] offers are queued
    /// (the refresher makes room as it takes them; without a refresher, a full queue is
    /// added and committed here).
    /// A failure to add them (tantivy errors, also another process holding the index's
    /// writer lock) is logged by the refresher, or returned by the next flush; the index
    /// then stays at its last commit, whose generation lags.
    pub fn apply(&self, added: Vec<Offer>, upserts: Vec<Offer>, removed: Vec<String>, generation: u64) {
        let w = &self.writing;
        let mut st = w.lock();
        while st.queued >= QUEUE_OFFERS && st.refresher.is_some() && !st.closed {
            st = w.wait(st);
        }
        let u = Update { added, upserts, removed, generation, at: Instant::now() };
        st.queued += u.len();
        st.queue.push(u);
        if st.refresher.is_none() {
            let shared = Arc::clone(w);
            let spawned = std::thread::Builder::new().name("isto-index-refresh".into()).spawn(move || shared.refresh());
            match spawned {
                Ok(h) => st.refresher = Some(h),
                Err(e) => tracing::error!(error = %e, "offer index refresher not started"),
            }
        }
        // Without a refresher (its thread did not start) nothing makes room: a full
        // queue is added (and committed) here.
        let full = st.refresher.is_none() && st.queued >= QUEUE_OFFERS;
        drop(st);
        w.changed.notify_all();
        if full {
            self.settle();
        }
    }

    /// Adds the queued updates and commits the pending ones, if any, and shows them to
    /// searches (see the module docs). The writer lives on until it is idle.
    ///
    /// # Errors
    /// The first tantivy error since the last flush (the refresher's, or this flush's);
    /// the queued and pending updates are then dropped and the index stays at its last
    /// commit (whose generation lags).
    pub fn flush(&self) -> Result<(), IndexError> {
        let w = &self.writing;
        let (slot, updates) = w.check_out();
        w.check_in(w.add(slot, updates).and_then(|slot| match slot {
            Some(p) if p.since.is_some() => w.commit(p).map(Some),
            other => Ok(other),
        }));
        match w.lock().failed.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// [`Self::flush`] before a read that must see every update: the read sees the last
    /// commit, and a failure was logged where it happened.
    pub(in crate::catalogue) fn settle(&self) {
        let _ = self.flush();
    }
}

impl Drop for OfferIndex {
    /// Stops the refresher, adds the queued updates, commits the pending ones and ends
    /// the writer (an index dropped with them uncommitted would lag the store and be
    /// rebuilt at the next start).
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
        let (slot, updates) = w.check_out();
        w.check_in(w.add(slot, updates).and_then(|slot| slot.map_or(Ok(()), |p| w.end(p))).map(|()| None));
    }
}
