//! The one intent write ([`Base::write`] with [`Writes::put_intent`]) and the rule that
//! keeps the matching engine (and the active set in memory) in step with the store.
//!
//! **The engine follows the durable store.** A write transaction commits without an
//! fsync and the engine takes the staged changes right after that commit, under the
//! intent-write lock (so a concurrent import never sees the engine behind the store);
//! the shared durable commit comes after the lock is released (group commit, see
//! [`Store::sync`]). When that durable commit fails — an I/O error: redb then latches
//! the file and the store reopens it, restoring the last durable commit — the writes of
//! the batch may be gone from the store although the engine has them. So the failed
//! write marks the engine stale and rebuilds it and the active set from the store
//! ([`Base::resync`]); until a rebuild succeeds every intent write first tries it again
//! and fails without writing, so nothing is matched against intents the store does not
//! hold. The caller gets the durable commit's error either way.
//!
//! **True group commit** ([`Base::write_batched`], the hot intent writes: drafts on
//! `/mcp` and publishes on `/mcp/buyer`): concurrent writes run in one transaction with
//! one durable commit; a failed durable commit fails every write of the batch and
//! rebuilds the engine as above.

use super::{person_entry, sweep_due, Base, Result, ServiceError};
use crate::matching::engine::EngineIntent;
use crate::protocol::Status;
use crate::records::{DeliveryTarget, IntentRecord};
use crate::store::{IntentRow, IntentWrite, Reads as _, StoreError, Tx};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::Arc;
use std::sync::{Mutex, PoisonError};

/// An intent record read from the store takes its delivery bookkeeping (`match_count`,
/// `last_delivered`) from the row `deliveries::record_hits_in` writes, so that
/// recording deliveries does not rewrite the record.
impl IntentRow for IntentRecord {
    const MATCHES: bool = true;
    fn set_matches(&mut self, (count, newest): (u64, i64)) {
        (self.match_count, self.last_delivered) = (count, newest);
    }
}

/// [`DeliveryTarget`] (what recording deliveries reads of a record) likewise.
impl IntentRow for DeliveryTarget {
    const MATCHES: bool = true;
    fn set_matches(&mut self, (count, newest): (u64, i64)) {
        (self.match_count, self.last_delivered) = (count, newest);
    }
}

/// An intent record is stored with its [`DeliveryTarget`] beside it while it is active,
/// which a catalogue import reads instead of the record.
impl IntentWrite for IntentRecord {
    type Target = DeliveryTarget;
    fn target(&self) -> Option<DeliveryTarget> {
        Some(self.delivery_target())
    }
}

/// A change of the engine staged by [`Writes::put_intent`].
enum EngineOp {
    /// Into the engine and the active set.
    Upsert(Box<EngineIntent>, Box<IntentRecord>),
    /// Out of both.
    Remove(String),
    /// A changed record of the active set that the engine does not need.
    Record(Box<IntentRecord>),
}

/// A write transaction in which intents may be written: derefs to the store's
/// [`Tx`]; intents are written only with [`Writes::put_intent`].
pub struct Writes<'t, 'a> {
    tx: &'t mut Tx<'a>,
    base: &'t Base,
    ops: Vec<EngineOp>,
}

impl<'a> std::ops::Deref for Writes<'_, 'a> {
    type Target = Tx<'a>;
    fn deref(&self) -> &Self::Target {
        self.tx
    }
}

impl std::ops::DerefMut for Writes<'_, '_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.tx
    }
}

impl Writes<'_, '_> {
    /// Deletes an intent record with its active-set and expiry-index rows, and stages
    /// its removal from the engine (the purge of lapsed drafts; tokens pointing to it
    /// are removed by the caller, [`Tx::remove_tokens_of`]).
    pub fn remove_intent(&mut self, id: &str) -> Result<()> {
        self.tx.remove_intent(self.base.key()?, id)?;
        self.ops.push(EngineOp::Remove(id.to_owned()));
        Ok(())
    }

    /// Stores an intent record, keeps the active set, the expiry index and the person
    /// index in step, and stages the engine change that [`Base::write`] applies after
    /// the commit.
    ///
    /// **The per-person cap** (PROTOCOL.md §3 "Limits") is checked here, inside the one
    /// intent write, so it holds whatever path makes an intent active and however many
    /// calls race: when `rec` goes into the active set with a person key
    /// ([`IntentRecord::person`]) and a validUntil in the future, and was not counted
    /// for that person already (not in the set, or expired there), the person's other
    /// current intents must be fewer than `quotas.active_intents_per_person`.
    ///
    /// # Errors
    /// [`ServiceError::PersonCap`] (the caller's transaction then fails: nothing is
    /// written); storage errors; key errors opening the hidden limit.
    pub fn put_intent(&mut self, rec: &IntentRecord, active: bool) -> Result<()> {
        self.check_person_cap(rec, active)?;
        self.tx.put_intent(self.base.key()?, &rec.id, rec, active, sweep_due(rec))?;
        self.tx.set_intent_person(&rec.id, person_entry(rec, active))?;
        if active {
            self.ops.push(EngineOp::Upsert(Box::new(self.base.engine_intent(rec)?), Box::new(rec.clone())));
        } else {
            self.ops.push(EngineOp::Remove(rec.id.clone()));
        }
        Ok(())
    }

    /// Stores `rec`, a new draft (its id just made: nothing of it is stored, active or in
    /// the engine): what [`Writes::put_intent`] writes for it, without the lookups and
    /// engine change a new inactive intent cannot need ([`Tx::put_new_intent`]; a
    /// publish's write, its tokens through [`Tx::put_token`]).
    pub(crate) fn put_new_draft(&mut self, rec: &IntentRecord) -> Result<()> {
        debug_assert_eq!(rec.status, Status::AwaitingConsent, "put_new_draft of a record that is not a draft");
        self.tx.put_new_intent(self.base.key()?, &rec.id, rec, sweep_due(rec))?;
        Ok(())
    }

    /// Whether `person` already holds the most active intents one person may, not
    /// counting intent `except` (the one about to become active, if any).
    pub fn person_at_cap(&self, person: &str, except: &str) -> Result<bool> {
        let limit = self.base.settings.quotas.active_intents_per_person as usize;
        let now = crate::records::micros(self.base.now());
        Ok(self.tx.person_active(person, now, except, limit)? >= limit)
    }

    /// [`ServiceError::PersonCap`] when [`Writes::put_intent`] would push `rec`'s person
    /// over the cap (see there).
    fn check_person_cap(&self, rec: &IntentRecord, active: bool) -> Result<()> {
        let Some(person) = rec.person.as_deref().filter(|_| active) else { return Ok(()) };
        let now = crate::records::micros(self.base.now());
        if rec.valid_until.micros() <= now {
            return Ok(()); // not current: nothing to count
        }
        let counted = self.tx.intent_person(&rec.id)?.is_some_and(|(p, until)| p == person && until > now);
        if !counted && self.person_at_cap(person, &rec.id)? {
            return Err(ServiceError::PersonCap { limit: self.base.settings.quotas.active_intents_per_person });
        }
        Ok(())
    }

    /// Stores `rec` — an intent in the active set whose only change is its person key —
    /// with its person-index row, without the per-person cap and without touching the
    /// engine: the start-up backfill of intents that were active before person keys
    /// existed (they stay active, even over the cap; `Intents::backfill_people`).
    pub fn put_person(&mut self, rec: &IntentRecord) -> Result<()> {
        self.tx.put_intent(self.base.key()?, &rec.id, rec, true, sweep_due(rec))?;
        self.tx.set_intent_person(&rec.id, person_entry(rec, true))?;
        self.ops.push(EngineOp::Record(Box::new(rec.clone())));
        Ok(())
    }
}

/// One intent write waiting for a batch ([`Base::write_batched`]): runs its closure
/// (again, when the batch it was in is run again without a write that failed) and hands
/// its outcome to its caller.
trait Job: Send {
    /// Runs the write in `w`, keeping its output.
    fn run(&mut self, w: &mut Writes<'_, '_>) -> Result<()>;
    /// Sends the kept output (when `failed` is `None`) or `failed` to the caller.
    fn finish(self: Box<Self>, failed: Option<ServiceError>);
}

/// Where a job's outcome goes: to a caller blocked on its thread
/// ([`Base::write_batched`]) or to an awaiting task ([`Base::write_batched_async`]).
enum ReplyTo<T> {
    Thread(SyncSender<Result<T>>),
    Task(tokio::sync::oneshot::Sender<Result<T>>),
}

/// A [`Job`] of a closure `F` with output `T`.
struct Typed<T, F> {
    f: F,
    out: Option<T>,
    reply: ReplyTo<T>,
}

impl<T: Send, F: FnMut(&mut Writes<'_, '_>) -> Result<T> + Send> Job for Typed<T, F> {
    fn run(&mut self, w: &mut Writes<'_, '_>) -> Result<()> {
        self.out = Some((self.f)(w)?);
        Ok(())
    }

    fn finish(mut self: Box<Self>, failed: Option<ServiceError>) {
        let out = match failed {
            Some(e) => Err(e),
            None => self.out.take().ok_or(ServiceError::Store(StoreError::Unavailable)),
        };
        // The caller waits for it unless it is gone (a panic, a dropped task): nothing
        // to tell then.
        match self.reply {
            ReplyTo::Thread(tx) => drop(tx.send(out)),
            ReplyTo::Task(tx) => drop(tx.send(out)),
        }
    }
}

/// A queued job and its caller's receiver.
fn job<T: Send + 'static>(
    f: impl FnMut(&mut Writes<'_, '_>) -> Result<T> + Send + 'static,
) -> (Box<dyn Job>, Receiver<Result<T>>) {
    let (reply, rx) = sync_channel(1);
    (Box::new(Typed { f, out: None, reply: ReplyTo::Thread(reply) }), rx)
}

/// A queued job and its awaiting task's receiver.
fn task_job<T: Send + 'static>(
    f: impl FnMut(&mut Writes<'_, '_>) -> Result<T> + Send + 'static,
) -> (Box<dyn Job>, tokio::sync::oneshot::Receiver<Result<T>>) {
    let (reply, rx) = tokio::sync::oneshot::channel();
    (Box::new(Typed { f, out: None, reply: ReplyTo::Task(reply) }), rx)
}

/// The most writes [`Base::run_batches`] takes into one transaction (the calls waiting
/// are bounded by the connection limits; a blocking caller of [`Base::write_batched`]
/// takes the whole queue, which holds its own write).
const MAX_BATCH: usize = 256;

/// The intent writes waiting for the next batch, and what the batches did.
#[derive(Default)]
pub(super) struct Batches {
    queue: Mutex<Vec<Box<dyn Job>>>,
    /// A blocking thread runs batches for awaiting tasks ([`Base::run_batches`]); set
    /// and cleared with `queue` locked.
    runner: AtomicBool,
    /// Batches committed.
    batches: AtomicU64,
    /// Writes committed in them.
    writes: AtomicU64,
    /// The most writes one batch held.
    largest: AtomicU64,
}

/// What the intent-write batches did since start ([`Base::batch_stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchStats {
    /// Batches committed (each one durable commit).
    pub batches: u64,
    /// Writes committed in them (a write refused by its own rule is not counted).
    pub writes: u64,
    /// The most writes one batch held.
    pub largest: u64,
}

/// Why a batch's transaction did not commit.
enum BatchFailed {
    /// The job at this index failed: the others run again without it.
    Job(usize, ServiceError),
    /// The store failed (beginning or committing the transaction).
    Store(StoreError),
}

impl From<StoreError> for BatchFailed {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

impl Base {
    /// The store's intent key (see [`crate::store::IntentKey`]).
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when another base took it (see `engine_failure`).
    fn key(&self) -> Result<&crate::store::IntentKey> {
        self.intent_key.as_ref().ok_or(ServiceError::Store(StoreError::Unavailable))
    }

    /// Makes the matching engine and the active set equal to the store's active intents:
    /// every record of the store's active set into the set, the effectively active ones
    /// into the engine, and whatever the set or engine held that the store no longer
    /// has out of both. At start-up (from empty) and after a failed durable commit
    /// ([`Base::resync`]). Readers see each intent's old or new entry, never a gap.
    /// Returns the number of intents in the engine.
    ///
    /// # Errors
    /// Storage errors reading the store ([`StoreError::Unavailable`] while the store
    /// has failed and is not reopened yet: its reads may show commits the reopen
    /// drops); key errors opening a hidden limit (nothing is changed then).
    pub(super) fn reload_engine(&self) -> Result<usize> {
        let now = self.now();
        let recs: Vec<IntentRecord> = self.store.read(|rx| -> Result<Vec<IntentRecord>> {
            let mut out = Vec::new();
            for id in rx.active_ids()? {
                if let Some(r) = rx.intent::<IntentRecord>(&id)? {
                    out.push(r);
                }
            }
            Ok(out)
        })?;
        // A failed file not reopened yet still shows the commits its recovery drops.
        if self.store.failed() {
            return Err(StoreError::Unavailable.into());
        }
        let mut staged = Vec::with_capacity(recs.len());
        for rec in recs {
            let engine = (rec.effective_status(now) == Status::Active).then(|| self.engine_intent(&rec)).transpose()?;
            staged.push((rec.id.clone(), Some(rec), engine));
        }
        let kept: HashSet<String> = staged.iter().map(|(id, _, _)| id.clone()).collect();
        self.active.scan(|r, _| {
            if !kept.contains(&r.id) {
                staged.push((r.id.clone(), None, None));
            }
        });
        let n = staged.iter().filter(|(_, _, engine)| engine.is_some()).count();
        for (id, rec, engine) in staged {
            self.apply(&id, rec, engine);
        }
        Ok(n)
    }

    /// Brings the engine and the active set in step with the store for the intents `ids`,
    /// which another replica wrote (the change feed): each one read again from the store
    /// — into the set while in the store's active set, into the engine while effectively
    /// active, out of both otherwise. Under the intent-write lock, so a write of this
    /// replica never interleaves with it.
    ///
    /// # Errors
    /// Storage errors; key errors opening a hidden limit (that intent then stays as it
    /// was, and the error is returned after the others are done).
    pub fn refresh_intents(&self, ids: &[String]) -> Result<()> {
        let _serial = self.intent_writes.lock().unwrap_or_else(PoisonError::into_inner);
        let now = self.now();
        let recs = self.store.read(|rx| -> Result<Vec<(String, Option<IntentRecord>)>> {
            let mut out = Vec::with_capacity(ids.len());
            for id in ids {
                let rec = if rx.in_active_set(id)? { rx.intent::<IntentRecord>(id)? } else { None };
                out.push((id.clone(), rec));
            }
            Ok(out)
        })?;
        let mut failed = None;
        for (id, rec) in recs {
            let engine = match &rec {
                Some(r) if r.effective_status(now) == Status::Active => match self.engine_intent(r) {
                    Ok(i) => Some(i),
                    Err(e) => {
                        failed = Some(e);
                        continue;
                    }
                },
                _ => None,
            };
            self.apply(&id, rec, engine);
        }
        failed.map_or(Ok(()), Err)
    }

    /// Puts intent `id` into the active set as `rec` and into the engine as `engine`, or
    /// takes it out of either when `None`.
    fn apply(&self, id: &str, rec: Option<IntentRecord>, engine: Option<EngineIntent>) {
        match engine {
            Some(i) => self.engine.upsert(i),
            None => self.engine.remove(id),
        }
        match rec {
            Some(rec) => self.active.put(rec),
            None => self.active.remove(id),
        }
    }

    /// Rebuilds the engine and the active set from the store under the intent-write
    /// lock (a replica that missed part of the change feed). Returns the intents in the
    /// engine.
    ///
    /// # Errors
    /// As [`Base::reload_engine`].
    pub fn rebuild_engine(&self) -> Result<usize> {
        let _serial = self.intent_writes.lock().unwrap_or_else(PoisonError::into_inner);
        self.reload_engine()
    }

    /// Rebuilds the engine from the store after a failed durable commit (see the module
    /// docs), under the intent-write lock; on failure the engine stays marked stale and
    /// the next intent write tries again. Whether the engine is in step afterwards.
    pub(super) fn resync(&self) -> bool {
        let _serial = self.intent_writes.lock().unwrap_or_else(PoisonError::into_inner);
        self.resync_locked().is_ok()
    }

    /// [`Base::resync`] with the intent-write lock held.
    fn resync_locked(&self) -> Result<()> {
        self.engine_stale.store(true, Ordering::SeqCst);
        match self.reload_engine() {
            Ok(n) => {
                self.engine_stale.store(false, Ordering::SeqCst);
                tracing::warn!(intents = n, "matching engine rebuilt from the store after a failed durable commit");
                Ok(())
            }
            Err(e) => {
                tracing::error!(error = %e, "matching engine out of step with the store; intent writes fail until it is rebuilt");
                Err(e)
            }
        }
    }

    /// Whether the engine waits for a rebuild after a failed durable commit (intent
    /// writes fail until then).
    pub fn engine_stale(&self) -> bool {
        self.engine_stale.load(Ordering::SeqCst)
    }

    /// One write transaction in which intents may be written (the only way to write
    /// one): runs `f`, commits, then applies the staged engine changes, and returns once
    /// the write is durable ([`crate::store::Store::sync`]: concurrent writes share one fsync). When
    /// `f` fails or the commit fails, nothing is stored and the engine is unchanged.
    /// When the durable commit fails, the engine is rebuilt from the store (see the
    /// module docs) and the durable commit's error is returned (the write may be lost).
    ///
    /// # Errors
    /// What `f` returns; storage errors of the commit or the durable commit;
    /// [`StoreError::Unavailable`] (or the store's own error) while the engine waits for
    /// a rebuild that cannot read the store yet.
    pub fn write<T, E: From<StoreError>>(&self, f: impl FnOnce(&mut Writes<'_, '_>) -> Result<T, E>) -> Result<T, E> {
        self.write_then(f, |_| ())
    }

    /// [`Base::write`], and `then` on `f`'s result once it is committed, before any other
    /// intent write may begin (and before the durable sync): a catalogue write hands its
    /// offers to the search index there, so that an intent that becomes active in a later
    /// write finds them among its candidates (the batch's own matching ran before it was
    /// active). `then` runs under the intent-write lock: it must not write intents.
    ///
    /// # Errors
    /// As [`Base::write`]; `then` runs only when the commit succeeded.
    pub fn write_then<T, E: From<StoreError>>(
        &self,
        f: impl FnOnce(&mut Writes<'_, '_>) -> Result<T, E>,
        then: impl FnOnce(&mut T),
    ) -> Result<T, E> {
        let serial = self.intent_writes.lock().unwrap_or_else(PoisonError::into_inner);
        if self.engine_stale.load(Ordering::SeqCst) {
            self.resync_locked().map_err(|e| match e {
                ServiceError::Store(e) => E::from(e),
                _ => E::from(StoreError::Unavailable),
            })?;
        }
        let mut staged = Vec::new();
        let (mut out, pending) = self.store.write_unsynced(|tx| {
            let mut w = Writes { tx, base: self, ops: Vec::new() };
            let r = f(&mut w);
            staged = std::mem::take(&mut w.ops);
            r
        })?;
        self.apply_ops(staged);
        then(&mut out);
        // Durable before it returns, but waited for outside the lock, so that concurrent
        // intent writes share one fsync (group commit, see `Store::sync`).
        drop(serial);
        if let Err(e) = self.store.sync::<StoreError>(pending) {
            self.resync();
            return Err(E::from(e));
        }
        Ok(out)
    }

    /// Applies the engine changes a committed write staged, in order.
    fn apply_ops(&self, ops: Vec<EngineOp>) {
        for op in ops {
            match op {
                EngineOp::Upsert(i, rec) => self.apply(&rec.id.clone(), Some(*rec), Some(*i)),
                EngineOp::Remove(id) => self.apply(&id, None, None),
                EngineOp::Record(rec) => self.active.put(*rec),
            }
        }
    }

    /// [`Base::write`] as one of a batch (true group commit; see the module docs): the
    /// intent writes that arrive while another batch holds the intent-write lock wait
    /// in a queue, and the next caller to take the lock runs all of them, in arrival
    /// order, in one write transaction with one durable commit
    /// ([`crate::store::Store::write_durable`]), applies their engine changes and sends
    /// each caller its own outcome; a caller returns once its write is durable. Each
    /// write sees the ones before it in its batch, so the per-person cap holds as with
    /// one write at a time. A write whose closure fails leaves nothing: the batch's
    /// transaction is dropped and the others run again without it (from the second
    /// failure on, those before it commit on their own and those after it form the next
    /// transaction) — so `f` may run up to three times and must only write through `w`
    /// (tokens and ids are made before). On PostgreSQL, where a commit is durable by itself, this is
    /// [`Base::write`].
    ///
    /// # Errors
    /// What `f` returns; storage errors of the batch's commit (every write of the batch
    /// fails with it and the engine is rebuilt from the store); as [`Base::write`] while
    /// the engine waits for a rebuild.
    pub fn write_batched<T: Send + 'static>(
        &self,
        mut f: impl FnMut(&mut Writes<'_, '_>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        if self.store.durable_at_commit() {
            return self.write(|w| f(w));
        }
        let (job, rx) = job(f);
        self.batches.queue.lock().unwrap_or_else(PoisonError::into_inner).push(job);
        let serial = self.intent_writes.lock().unwrap_or_else(PoisonError::into_inner);
        // A batch sends every outcome before it lets the lock go: no outcome yet means
        // this write is still queued, and this caller runs the next batch.
        match rx.try_recv() {
            Ok(out) => return out,
            Err(TryRecvError::Disconnected) => return Err(StoreError::Unavailable.into()),
            Err(TryRecvError::Empty) => {}
        }
        let jobs = std::mem::take(&mut *self.batches.queue.lock().unwrap_or_else(PoisonError::into_inner));
        self.run_batch(jobs);
        drop(serial);
        rx.try_recv().unwrap_or(Err(ServiceError::Store(StoreError::Unavailable)))
    }

    /// [`Base::write_batched`] for a caller in an async task (the public
    /// `intent_publish_intent`): the write joins the same queue, and the task awaits its
    /// outcome instead of holding a thread. When no blocking thread is running batches
    /// for tasks, one starts ([`Base::run_batches`]) and runs them until the queue is
    /// empty: under load one thread commits batch after batch, and a call costs no
    /// hand-over of its own between threads. Batches, outcomes and errors as there; a
    /// caller blocked in [`Base::write_batched`] may run the queued writes of tasks, and
    /// the runner theirs. On PostgreSQL, [`Base::write`] on a blocking thread.
    ///
    /// # Errors
    /// As [`Base::write_batched`].
    pub async fn write_batched_async<T: Send + 'static>(
        self: &Arc<Self>,
        mut f: impl FnMut(&mut Writes<'_, '_>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let gone = || Err(ServiceError::Store(StoreError::Unavailable));
        if self.store.durable_at_commit() {
            let me = self.clone();
            return tokio::task::spawn_blocking(move || me.write(|w| f(w))).await.unwrap_or_else(|_| gone());
        }
        let (job, rx) = task_job(f);
        let start = {
            let mut q = self.batches.queue.lock().unwrap_or_else(PoisonError::into_inner);
            q.push(job);
            !self.batches.runner.swap(true, Ordering::Relaxed)
        };
        if start {
            let me = self.clone();
            drop(tokio::task::spawn_blocking(move || me.run_batches()));
        }
        rx.await.unwrap_or_else(|_| gone())
    }

    /// Runs batches of the queued intent writes, one after another, until the queue is
    /// empty (the thread [`Base::write_batched_async`] starts): at most [`MAX_BATCH`]
    /// writes each, oldest first, so that however many calls wait, one transaction stays
    /// bounded.
    fn run_batches(&self) {
        loop {
            // Calls that have arrived but not yet queued their write (on isto's other
            // threads, or this core's) get the processor first, once: the batch then
            // takes their writes too, and one durable commit serves more of them.
            std::thread::yield_now();
            let serial = self.intent_writes.lock().unwrap_or_else(PoisonError::into_inner);
            let jobs: Vec<_> = {
                let mut q = self.batches.queue.lock().unwrap_or_else(PoisonError::into_inner);
                if q.is_empty() {
                    self.batches.runner.store(false, Ordering::Relaxed);
                    return;
                }
                let n = q.len().min(MAX_BATCH);
                q.drain(..n).collect()
            };
            self.run_batch(jobs);
            drop(serial);
        }
    }

    /// Runs `jobs` as one batch (see [`Base::write_batched`]), with the intent-write lock
    /// held, and sends every job its outcome.
    fn run_batch(&self, mut jobs: Vec<Box<dyn Job>>) {
        if self.engine_stale.load(Ordering::SeqCst) {
            if let Err(e) = self.resync_locked() {
                let e = match e {
                    ServiceError::Store(e) => e,
                    _ => StoreError::Unavailable,
                };
                return fail_all(jobs, e);
            }
        }
        // The first failed job is dropped and the others run again, in one transaction;
        // after a second failure the jobs before it commit on their own and those after
        // it wait here for the next transaction: so every job runs at most three times,
        // however many of a batch fail (a failure costs a re-run of what came before it).
        let mut later: Vec<Box<dyn Job>> = Vec::new();
        let mut rerun = true;
        loop {
            if jobs.is_empty() {
                if later.is_empty() {
                    return;
                }
                jobs = std::mem::take(&mut later);
            }
            let mut committing = false;
            let out = self.store.write_durable(|tx| -> Result<Vec<Vec<EngineOp>>, BatchFailed> {
                let mut staged = Vec::with_capacity(jobs.len());
                for (i, job) in jobs.iter_mut().enumerate() {
                    let mut w = Writes { tx, base: self, ops: Vec::new() };
                    match job.run(&mut w) {
                        Ok(()) => staged.push(w.ops),
                        Err(e) => return Err(BatchFailed::Job(i, e)),
                    }
                }
                committing = true;
                Ok(staged)
            });
            match out {
                Ok(staged) => {
                    let n = jobs.len() as u64;
                    self.batches.batches.fetch_add(1, Ordering::Relaxed);
                    self.batches.writes.fetch_add(n, Ordering::Relaxed);
                    self.batches.largest.fetch_max(n, Ordering::Relaxed);
                    // Durable: every caller learns so (it reads its outcome only after this
                    // batch lets the lock go). Should applying the changes fail half-way
                    // (a panic), the engine stays marked stale and is rebuilt from the store
                    // before the next intent write.
                    std::mem::take(&mut jobs).into_iter().for_each(|j| j.finish(None));
                    self.engine_stale.store(true, Ordering::SeqCst);
                    staged.into_iter().for_each(|ops| self.apply_ops(ops));
                    self.engine_stale.store(false, Ordering::SeqCst);
                }
                Err(BatchFailed::Job(i, e)) if std::mem::take(&mut rerun) => jobs.remove(i).finish(Some(e)),
                Err(BatchFailed::Job(i, e)) => {
                    let mut tail = jobs.split_off(i);
                    tail.remove(0).finish(Some(e));
                    tail.append(&mut later);
                    later = tail;
                }
                Err(BatchFailed::Store(e)) => {
                    // A failed durable commit may also lose the earlier writes of
                    // `Base::write` that are not durable yet: the engine follows the store.
                    if committing {
                        let _ = self.resync_locked();
                    }
                    jobs.append(&mut later);
                    return fail_all(jobs, e);
                }
            }
        }
    }

    /// What the intent-write batches did since start (for `/readyz` and the tests).
    pub fn batch_stats(&self) -> BatchStats {
        let b = &self.batches;
        BatchStats {
            batches: b.batches.load(Ordering::Relaxed),
            writes: b.writes.load(Ordering::Relaxed),
            largest: b.largest.load(Ordering::Relaxed),
        }
    }

    /// As [`Base::write`], but rolled back at the end whatever `f` returns: what a write
    /// would do, without doing it (`isto admin purge --dry-run`). The engine is not
    /// touched.
    ///
    /// # Errors
    /// What `f` returns; storage errors.
    pub fn rehearse<T, E: From<StoreError>>(
        &self,
        f: impl FnOnce(&mut Writes<'_, '_>) -> Result<T, E>,
    ) -> Result<T, E> {
        let _serial = self.intent_writes.lock().unwrap_or_else(PoisonError::into_inner);
        self.store.rehearse(|tx| {
            let mut w = Writes { tx, base: self, ops: Vec::new() };
            f(&mut w)
        })
    }
}

/// Fails every job of a batch with the store's error `e` (the first gets `e` itself,
/// the others [`StoreError::shared`]: their writes were in the same failed commit).
fn fail_all(jobs: Vec<Box<dyn Job>>, e: StoreError) {
    let others = e.shared();
    let mut first = Some(e);
    for j in jobs {
        let e = first.take().unwrap_or_else(|| others.shared());
        j.finish(Some(e.into()));
    }
}

#[cfg(test)]
mod tests;
