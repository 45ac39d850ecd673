//! The catalogue service: imports of offer rows (PROTOCOL.md §6: new offers reach
//! standing intents), withdrawal of vanished offers, and the full-text offer index kept
//! in step with the store (rebuilt when its generation lags).
//!
//! Errors: a fallible item here fails with storage errors (and key errors where it opens
//! a sealed value) unless its `# Errors` says more.

use super::index::{IndexError, OfferIndex};
use crate::base::{Base, Result, ServiceError, Writes};
use crate::clock;
use crate::crypto;
use crate::deliveries::{disabled_sellers, match_intent_tx, record_hits_in};
use crate::matching;
use crate::protocol::Offer;
use crate::records::{offer_valid, DeliveryTarget, ImportCounts, IntentRecord, OfferInput, OfferRecord, SellerRecord};
use crate::store::{OfferRows, Reads, Tx};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use time::OffsetDateTime;

/// An index failure as a service error: internal (logged, answered generically).
impl From<IndexError> for ServiceError {
    fn from(e: IndexError) -> Self {
        ServiceError::Index(e.to_string())
    }
}

/// Whether the full-text offer index reflects the store (`/readyz`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexStatus {
    /// The index's generation is the store's catalogue generation, or `updating`.
    pub in_step: bool,
    /// A catalogue write and its index update are running.
    pub updating: bool,
    /// The index is being opened (and rebuilt when it lags) in another thread: not in
    /// step until that ends; the generation and offers are then `None` and 0.
    pub opening: bool,
    /// The generation of the index's last commit (`None`: never committed).
    pub index_generation: Option<u64>,
    /// The store's catalogue generation.
    pub store_generation: u64,
    /// Offers in the index.
    pub offers: u64,
}

/// The catalogue: the shared handles plus the offer index.
pub struct Catalogue {
    /// The shared handles.
    pub base: Arc<Base>,
    /// The full-text offer index, built on first use (see [`Catalogue::offer_index`]).
    pub(super) index: Mutex<Option<Arc<OfferIndex>>>,
    /// Where the index lives (`None`: in memory).
    index_dir: Option<PathBuf>,
    /// Set while [`Catalogue::offer_index`] opens the index (under the `index` lock).
    pub(super) opening: AtomicBool,
    /// Held across a catalogue write and its index update, so the index applies
    /// catalogue changes in commit order.
    lock: Mutex<()>,
}

impl std::fmt::Debug for Catalogue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Catalogue")
    }
}

impl Catalogue {
    /// The catalogue over `base`, with its index in `index_dir` (`DATA_DIR/index`) or in
    /// memory; the index is opened and caught up at first use.
    pub fn new(base: Arc<Base>, index_dir: Option<PathBuf>) -> Self {
        Self { base, index: Mutex::new(None), index_dir, opening: AtomicBool::new(false), lock: Mutex::new(()) }
    }

    /// The full-text offer index, opened (and rebuilt from the store when its generation
    /// lags) on first use.
    ///
    /// # Errors
    /// Index or storage errors (internal).
    pub fn offer_index(&self) -> Result<Arc<OfferIndex>> {
        let mut slot = self.index.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = slot.as_ref() {
            return Ok(i.clone());
        }
        self.opening.store(true, Ordering::Release);
        let opened = self.open_index();
        self.opening.store(false, Ordering::Release);
        let idx = Arc::new(opened?);
        *slot = Some(idx.clone());
        Ok(idx)
    }

    /// Whether the offer index is open and free to search, without waiting: a search that
    /// would open (or wait for) it must not run in an async task (see
    /// `crate::mcp::call_blocking`).
    pub fn index_is_open(&self) -> bool {
        self.index.try_lock().is_ok_and(|slot| slot.is_some())
    }

    /// Opens the index and rebuilds it from the store when its generation lags.
    fn open_index(&self) -> Result<OfferIndex> {
        let idx = OfferIndex::open_priced(self.index_dir.as_deref(), &self.base.settings().rates)?;
        if idx.generation() != Some(self.base.store().read(|rx| rx.offers_generation())?) {
            let n = self.rebuild(&idx)?;
            tracing::info!(offers = n, "offer index rebuilt from the store");
        }
        Ok(idx)
    }

    /// Whether the offer index is in step with the store (opening it first, unless another
    /// thread is opening it). Compared under the catalogue lock when it is free, so a
    /// write in progress is not mistaken for a lag; when it is held, `updating` says so.
    ///
    /// # Errors
    /// Index or storage errors (internal).
    pub fn index_status(&self) -> Result<IndexStatus> {
        if self.opening.load(Ordering::Acquire) {
            let store_generation = self.base.store().read(|rx| rx.offers_generation())?;
            return Ok(IndexStatus { opening: true, store_generation, ..IndexStatus::default() });
        }
        let idx = self.offer_index()?;
        let held = match self.lock.try_lock() {
            Ok(g) => Some(g),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        };
        let updating = held.is_none();
        let store_generation = self.base.store().read(|rx| rx.offers_generation())?;
        let index_generation = idx.generation();
        drop(held);
        Ok(IndexStatus {
            in_step: updating || index_generation == Some(store_generation),
            updating,
            opening: false,
            index_generation,
            store_generation,
            offers: idx.num_docs(),
        })
    }

    /// Brings the offer index in step with the store for the offers `ids`, which another
    /// replica wrote (the change feed): each read again — indexed while an active
    /// catalogue offer, removed otherwise — at the store's catalogue generation read in
    /// the same snapshot, under the catalogue lock. Nothing when the index is not open.
    pub fn refresh_offers(&self, ids: &[String]) -> Result<()> {
        let _catalogue = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let (generation, recs) = self.base.store().read(|rx| -> Result<(u64, Vec<Option<OfferRecord>>)> {
            let recs = ids.iter().map(|id| rx.offer::<OfferRecord>(id)).collect::<Result<_, _>>()?;
            Ok((rx.offers_generation()?, recs))
        })?;
        let mut upserts = Vec::new();
        let mut removed = Vec::new();
        for (id, rec) in ids.iter().zip(recs) {
            match rec {
                Some(o) if indexed(&o) => upserts.push(o.offer),
                _ => removed.push(id.clone()),
            }
        }
        self.index_apply(Vec::new(), upserts, removed, generation);
        Ok(())
    }

    /// Rebuilds the open offer index from the store (a replica that missed part of the
    /// change feed); nothing when it is not open yet.
    ///
    /// # Errors
    /// Index or storage errors.
    pub fn rebuild_index(&self) -> Result<()> {
        let _catalogue = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = self.index.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(idx) = slot.as_ref() else { return Ok(()) };
        self.rebuild(idx).map(drop)
    }

    /// Replaces the contents of `idx` with the offers the store holds that it holds
    /// ([`indexed`]), at the store's catalogue generation read in the same snapshot; the
    /// number indexed.
    fn rebuild(&self, idx: &OfferIndex) -> Result<u64> {
        let (generation, offers) = self
            .base
            .store()
            .read(|rx| -> Result<(u64, Vec<OfferRecord>)> { Ok((rx.offers_generation()?, rx.all_offers()?)) })?;
        Ok(idx.rebuild(offers.into_iter().filter(indexed).map(|o| o.offer), generation)?)
    }

    /// Applies committed catalogue changes to the index when it is open (otherwise it
    /// is rebuilt at first use).
    fn index_apply(&self, added: Vec<Offer>, upserts: Vec<Offer>, removed: Vec<String>, generation: u64) {
        let slot = self.index.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = slot.as_ref() {
            i.apply(added, upserts, removed, generation);
        }
    }

    /// Matches the catalogue against one intent inside a write transaction: candidate
    /// offers from the index (a superset of the matches), then the exact §6 check.
    pub fn match_catalogue_tx(
        &self,
        tx: &mut Writes<'_, '_>,
        rec: &mut IntentRecord,
        now: OffsetDateTime,
    ) -> Result<u64> {
        let terms = matching::statement_analysis(&rec.statement).terms;
        let min = self.base.settings().min_should_match;
        let ids = self.offer_index()?.candidates_for_intent_min(&rec.category, &rec.area, &terms, min)?;
        let mut offers = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(o) = tx.offer::<OfferRecord>(&id)? {
                offers.push(o);
            }
        }
        let sellers = disabled_sellers(tx)?;
        match_intent_tx(&self.base, tx, rec, &offers, &sellers, now)
    }

    #[cfg(any(test, feature = "testkit"))]
    /// [`Catalogue::import_offers_run`] without a run, then waits until searches see the
    /// batch (one index commit): a one-off import whose caller searches next (tests).
    ///
    /// # Errors
    /// Storage errors; nothing of the batch is stored then. An index failure after the
    /// store write is logged (the index is rebuilt at the next start).
    pub fn import_offers(&self, rows: Vec<OfferInput>) -> Result<ImportCounts> {
        let counts = self.import_offers_run(rows, None)?;
        self.sync_index();
        Ok(counts)
    }

    /// Commits the offer index's pending updates, if it is open, so that the next search
    /// sees every catalogue write made before this call (otherwise they show within
    /// [`super::index::REFRESH_LAG`]). A failure is logged: the index is rebuilt at the
    /// next start.
    pub fn sync_index(&self) {
        let open = self.index.lock().unwrap_or_else(PoisonError::into_inner).clone();
        if let Some(i) = open {
            i.settle();
        }
    }

    /// Stores a batch of catalogue rows in one transaction (new offers get ids; rows
    /// whose (seller, ref) exists update that offer in place) and matches them against
    /// every active intent (PROTOCOL.md §6: new offers reach standing intents), marking
    /// every stored offer with the full-feed run `run` (for
    /// [`Catalogue::withdraw_vanished`]). A search sees the batch within
    /// [`super::index::REFRESH_LAG`].
    ///
    /// # Errors
    /// Storage errors; nothing of the batch is stored then.
    pub fn import_offers_run(&self, rows: Vec<OfferInput>, run: Option<&str>) -> Result<ImportCounts> {
        let now = self.base.now();
        let _catalogue = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        // The offers go to the index as the batch commits, before another write can
        // make an intent active (`Base::write_then`).
        let hand_over = |b: &mut Batch| {
            self.index_apply(std::mem::take(&mut b.added), std::mem::take(&mut b.upserts), Vec::new(), b.generation);
        };
        let Batch { counts, .. } = self.base.write_then(|tx| self.write_batch(tx, rows, run, now), hand_over)?;
        drop(_catalogue);
        crate::telemetry::offers_imported(counts.created, counts.updated, 0);
        if counts.delivered > 0 {
            self.base.outbox().wake();
        }
        Ok(counts)
    }

    /// [`Catalogue::import_offers_run`]'s transaction: stores `rows`, matches them
    /// against the standing intents and logs the deliveries; the offers for the index.
    fn write_batch(
        &self,
        tx: &mut Writes<'_, '_>,
        rows: Vec<OfferInput>,
        run: Option<&str>,
        now: OffsetDateTime,
    ) -> Result<Batch> {
        let mut counts = ImportCounts::default();
        // Standing intents: from the engine, on a second thread while this one writes
        // the rows (a new seller is never disabled); the status is checked again below.
        let disabled = disabled_sellers(tx)?;
        let engine = |o: &OfferRecord| self.base.engine_matches(&o.offer, offer_valid(o, &disabled, now));
        // Per row in order: whether it replaced an offer (else its id is new to the index).
        let mut replaced = Vec::with_capacity(rows.len());
        let (changed, matches) = std::thread::scope(|scope| -> Result<_> {
            let mut matcher = Matcher::new(scope, &engine, rows.len());
            // A feed's rows mostly share a few sellers: each is read (or added) once.
            let mut sellers: HashMap<String, SellerRecord> = HashMap::new();
            let mut offers = tx.offer_rows()?;
            for row in rows {
                let (rec, updated) = store_row(tx, &mut offers, &mut sellers, row, run, now)?;
                if updated {
                    counts.updated += 1;
                } else {
                    counts.created += 1;
                }
                replaced.push(updated);
                matcher.push(rec);
            }
            Ok(matcher.finish())
        })?;
        let mut by_intent: std::collections::BTreeMap<String, Vec<(&str, matching::Hit)>> = Default::default();
        for (o, hits) in changed.iter().zip(matches) {
            for (intent, hit) in hits {
                by_intent.entry(intent).or_default().push((o.offer.id.as_str(), hit));
            }
        }
        // The delivery tables (and the intents') are opened once for the batch. An
        // offer made here and not updated later in the batch was never delivered.
        let mut log = tx.delivery_log()?;
        let again: HashSet<&str> =
            changed.iter().zip(&replaced).filter(|r| *r.1).map(|r| r.0.offer.id.as_str()).collect();
        let made = changed.iter().zip(&replaced).filter(|r| !*r.1 && !again.contains(r.0.offer.id.as_str()));
        log.new_offers(made.map(|r| r.0.offer.id.clone()).collect());
        for (id, hits) in by_intent {
            // Its small row, or its record without the texts and sealed fields.
            let Some(mut rec) = log.target::<DeliveryTarget>(&id)? else { continue };
            if !rec.active_at(now) {
                continue;
            }
            counts.delivered += record_hits_in(&self.base, &mut log, &mut rec, &hits, now)?;
        }
        let generation = tx.bump_offers_generation()?;
        // New offers go in before replaced ones: an offer added and then updated in the
        // batch is in both, in that order.
        let (mut added, mut upserts) = (Vec::new(), Vec::new());
        for (o, updated) in changed.into_iter().zip(replaced) {
            if updated { &mut upserts } else { &mut added }.push(o.offer);
        }
        Ok(Batch { counts, added, upserts, generation })
    }

    /// Ends a full-feed import (`isto admin offers import --full`): every active
    /// catalogue offer of a seller that appears in run `run` but was not written by it
    /// vanished from the feed and is withdrawn (it no longer matches or shows in search).
    /// Sellers absent from the feed keep their offers. Returns the ids withdrawn, once
    /// searches no longer show them.
    ///
    /// # Errors
    /// Storage errors; nothing is withdrawn then.
    pub fn withdraw_vanished(&self, run: &str) -> Result<Vec<String>> {
        let _catalogue = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let hand_over = |(gone, generation): &mut (Vec<String>, u64)| {
            self.index_apply(Vec::new(), Vec::new(), gone.clone(), *generation);
        };
        let (gone, _) = self.base.write_then(
            |tx| -> Result<(Vec<String>, u64)> {
                let offers: Vec<OfferRecord> = tx.all_offers()?;
                let sellers: std::collections::HashSet<String> = offers
                    .iter()
                    .filter(|o| o.import_run.as_deref() == Some(run))
                    .map(|o| o.offer.source.seller_id.clone())
                    .collect();
                let mut gone = Vec::new();
                for mut o in offers {
                    if indexed(&o)
                        && sellers.contains(&o.offer.source.seller_id)
                        && o.import_run.as_deref() != Some(run)
                    {
                        o.active = false;
                        tx.put_offer(&o.offer.id.clone(), &o, None)?;
                        gone.push(o.offer.id);
                    }
                }
                let generation = tx.bump_offers_generation()?;
                Ok((gone, generation))
            },
            hand_over,
        )?;
        self.sync_index();
        Ok(gone)
    }
}

/// An offer's standing intents and their hits ([`Base::engine_matches`]).
type Matches = Vec<(String, matching::Hit)>;

/// A numbered chunk of offers, with their matches once matched.
type Chunk = (usize, Vec<OfferRecord>, Vec<Matches>);

/// The chunks waiting to be matched, shared by the threads that match them.
type Queue = Arc<Mutex<std::sync::mpsc::Receiver<Chunk>>>;

/// What an import batch's transaction hands on: its counts, and for the offer index the
/// offers it made (`added`) and replaced (`upserts`), at catalogue `generation`.
struct Batch {
    counts: ImportCounts,
    added: Vec<Offer>,
    upserts: Vec<Offer>,
    generation: u64,
}

/// Offers of an import batch with their matches ([`Base::engine_matches`] through
/// `engine`), in the order pushed. A batch of [`Matcher::SPLIT`] rows or more is matched
/// [`Matcher::CHUNK`] offers at a time on a second thread while the importing thread
/// stores the next rows, and by both threads once the rows are stored (matching was a
/// quarter of that thread's time, issue 24); a smaller batch, or one whose thread did not
/// start, here.
struct Matcher<'s, 'e, E: Fn(&OfferRecord) -> Matches + Sync> {
    engine: &'e E,
    /// Matched here: the offers and their matches.
    inline: (Vec<OfferRecord>, Vec<Matches>),
    /// On the second thread: the chunk being filled, the number of chunks sent, and the
    /// queue with its sending end and the thread.
    chunk: Vec<OfferRecord>,
    sent: usize,
    worker: Option<(Queue, std::sync::mpsc::Sender<Chunk>, std::thread::ScopedJoinHandle<'s, Vec<Chunk>>)>,
}

impl<'s, 'e: 's, E: Fn(&OfferRecord) -> Matches + Sync> Matcher<'s, 'e, E> {
    /// Rows from which a batch is matched on a second thread.
    const SPLIT: usize = 128;
    /// Offers handed to the matching thread at a time.
    const CHUNK: usize = 64;

    fn new<'env>(scope: &'s std::thread::Scope<'s, 'env>, engine: &'e E, rows: usize) -> Self {
        let mut m = Self { engine, inline: Default::default(), chunk: Vec::new(), sent: 0, worker: None };
        if rows >= Self::SPLIT {
            let (send, recv) = std::sync::mpsc::channel();
            let queue: Queue = Arc::new(Mutex::new(recv));
            let theirs = queue.clone();
            let work = move || std::iter::from_fn(|| Self::next(&theirs, engine)).collect();
            let thread = std::thread::Builder::new().name("isto-match".into()).spawn_scoped(scope, work);
            m.worker = thread.ok().map(|h| (queue, send, h));
        }
        m
    }

    /// The next chunk of `queue`, matched (`None`: the queue is closed and empty).
    fn next(queue: &Queue, engine: &E) -> Option<Chunk> {
        let (i, offers, _) = queue.lock().unwrap_or_else(PoisonError::into_inner).recv().ok()?;
        let matches = offers.iter().map(engine).collect();
        Some((i, offers, matches))
    }

    fn push(&mut self, o: OfferRecord) {
        let Some((_, send, _)) = &self.worker else {
            self.inline.1.push((self.engine)(&o));
            self.inline.0.push(o);
            return;
        };
        self.chunk.push(o);
        if self.chunk.len() == Self::CHUNK {
            // The queue lives as long as the matcher.
            let _ = send.send((self.sent, std::mem::take(&mut self.chunk), Vec::new()));
            self.sent += 1;
        }
    }

    /// The offers pushed and their matches, in order.
    fn finish(mut self) -> (Vec<OfferRecord>, Vec<Matches>) {
        let Some((queue, send, thread)) = self.worker.take() else { return self.inline };
        let _ = send.send((self.sent, std::mem::take(&mut self.chunk), Vec::new()));
        drop(send);
        // What is left is matched here too, beside the second thread.
        let mut chunks: Vec<Chunk> = std::iter::from_fn(|| Self::next(&queue, self.engine)).collect();
        chunks.extend(thread.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        chunks.sort_unstable_by_key(|c| c.0);
        let (mut offers, mut matches) = (Vec::new(), Vec::new());
        for (_, o, m) in chunks {
            offers.extend(o);
            matches.extend(m);
        }
        (offers, matches)
    }
}

/// Whether the index holds `o`: an active catalogue offer.
fn indexed(o: &OfferRecord) -> bool {
    o.active && o.offer.source.kind == "catalogue"
}

/// Stores one catalogue row: a new offer, or the offer of its (seller, ref) updated in
/// place (its id and `publishedAt` kept), its seller read (or added) once per batch
/// through `sellers`. Returns the record and whether it updated an offer.
fn store_row(
    tx: &mut Tx<'_>,
    offers: &mut OfferRows<'_>,
    sellers: &mut HashMap<String, SellerRecord>,
    row: OfferInput,
    run: Option<&str>,
    now: OffsetDateTime,
) -> Result<(OfferRecord, bool)> {
    if !sellers.contains_key(&row.seller_name) {
        let s = ensure_seller(tx, &row.seller_name, row.seller_url.as_deref())?;
        sellers.insert(row.seller_name.clone(), s);
    }
    let seller = sellers[&row.seller_name].clone();
    let existing = row.reference.as_deref().map(|r| offers.by_ref(&seller.id, r)).transpose()?.flatten();
    let (id, published_at) = match &existing {
        Some(id) => {
            let old: Option<OfferRecord> = offers.offer(id)?;
            (id.clone(), old.map(|o| o.offer.published_at).unwrap_or_else(|| clock::rfc3339(now)))
        }
        None => (crypto::new_id("off_"), clock::rfc3339(now)),
    };
    let reference = row.reference.clone();
    let offer = super::offer_of(row, id.clone(), "catalogue", seller, None, published_at);
    let rec = OfferRecord { offer, active: true, import_run: run.map(str::to_owned) };
    offers.put(&id, &rec, reference.as_deref().map(|r| (rec.offer.source.seller_id.as_str(), r)))?;
    Ok((rec, existing.is_some()))
}

fn ensure_seller(tx: &mut Tx<'_>, name: &str, url: Option<&str>) -> Result<SellerRecord> {
    let folded = crate::text::fold(name.trim());
    if let Some(id) = tx.seller_by_name(&folded)? {
        if let Some(s) = tx.seller::<SellerRecord>(&id)? {
            return Ok(s);
        }
    }
    let s = SellerRecord {
        id: crypto::new_id("sel_"),
        name: name.trim().to_owned(),
        url: url.map(str::to_owned),
        disabled: false,
    };
    tx.put_seller(&s.id, &folded, &s)?;
    Ok(s)
}
