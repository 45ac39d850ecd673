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
use crate::records::IntentRecord;
use crate::store::{DeliveryLog, Reads as _, StoreError, Tx};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::Arc;
use std::sync::{Mutex, PoisonError};

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

    /// Stores `rec` — an active intent whose only change is its delivery bookkeeping
    /// (`match_count`, `last_delivered`: `deliveries::record_hits_in`) — without the
    /// per-person cap, the person index or the engine, which that change does not
    /// concern (a catalogue import touches most standing intents in each batch; opening
    /// each one's hidden limit and indexing it again cost more than its deliveries),
    /// and without rewriting its active-set and expiry-index rows, which do not change
    /// ([`DeliveryLog::put_intent_delivered`], through the batch's open tables `log`).
    pub fn put_delivered(&mut self, log: &mut DeliveryLog<'_>, rec: &IntentRecord) -> Result<()> {
        log.put_intent_delivered(self.base.key()?, &rec.id, rec)?;
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
        let serial = self.intent_writes.lock().unwrap_or_else(PoisonError::into_inner);
        if self.engine_stale.load(Ordering::SeqCst) {
            self.resync_locked().map_err(|e| match e {
                ServiceError::Store(e) => E::from(e),
                _ => E::from(StoreError::Unavailable),
            })?;
        }
        let mut staged = Vec::new();
        let (out, pending) = self.store.write_unsynced(|tx| {
            let mut w = Writes { tx, base: self, ops: Vec::new() };
            let r = f(&mut w);
            staged = std::mem::take(&mut w.ops);
            r
        })?;
        self.apply_ops(staged);
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
    /// empty (the thread [`Base::write_batched_async`] starts).
    fn run_batches(&self) {
        loop {
            let serial = self.intent_writes.lock().unwrap_or_else(PoisonError::into_inner);
            let jobs = {
                let mut q = self.batches.queue.lock().unwrap_or_else(PoisonError::into_inner);
                if q.is_empty() {
                    self.batches.runner.store(false, Ordering::Relaxed);
                    return;
                }
                std::mem::take(&mut *q)
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
mod tests {
    use super::*;
    use crate::base::tests::active;
    use crate::clock::{parse_rfc3339, ManualClock};
    use crate::config::Settings;
    use crate::crypto::KeyRing;
    use crate::store::faults::{open_faulty, Faults};
    use std::sync::Arc;

    /// A base over a store whose file fails on demand.
    fn faulty_base(dir: &std::path::Path) -> (Base, Faults) {
        let mut s = Settings::defaults();
        s.data_dir = dir.to_owned();
        let (store, faults) = open_faulty(&dir.join(crate::store::FILE_NAME)).unwrap();
        let clock = Arc::new(ManualClock::new(parse_rfc3339("2026-12-01T10:00:00Z").unwrap()));
        (Base::new(s, Arc::new(store), Arc::new(KeyRing::ephemeral()), clock), faults)
    }

    /// The ids of the store's active set, and whether engine and active set hold exactly
    /// those (every test record is effectively active while in the set).
    fn in_step(b: &Base, ids: &[&str]) -> Vec<String> {
        let stored = b.store.read(|rx| rx.active_ids()).unwrap();
        assert_eq!(b.engine.len(), stored.len(), "engine {:?} vs store {stored:?}", b.engine);
        assert_eq!(b.active.len(), stored.len(), "active set vs store {stored:?}");
        for id in ids {
            let s = stored.iter().any(|i| i == id);
            assert_eq!(b.engine.contains(id), s, "{id}: engine vs store {stored:?}");
        }
        stored
    }

    #[test]
    fn a_failed_durable_commit_leaves_the_engine_as_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let (b, faults) = faulty_base(dir.path());
        b.write(|w| w.put_intent(&active("int_a"), true)).unwrap();

        // An activation whose transaction commits but whose durable commit fails: the
        // store reopens at its last durable commit, without it; so must the engine.
        faults.fail_next_write();
        let e = b.write(|w| w.put_intent(&active("int_b"), true)).unwrap_err();
        assert!(!faults.armed(), "the injected failure came");
        assert!(matches!(e, ServiceError::Store(StoreError::Db(_))), "{e}");
        assert_eq!(in_step(&b, &["int_a", "int_b"]), vec!["int_a"], "the failed batch is gone from the store");
        assert!(!b.engine_stale());

        // A withdrawal whose durable commit fails within a second of that reopen: the
        // store reopens again only after a second, so the engine waits for that.
        let withdrawn = IntentRecord { status: Status::Withdrawn, ..active("int_a") };
        faults.fail_next_write();
        let e = b.write(|w| w.put_intent(&withdrawn, false)).unwrap_err();
        assert!(matches!(e, ServiceError::Store(StoreError::Db(_))), "{e}");

        // Writes work again once the store has reopened (at most one reopen a second),
        // and the engine is rebuilt before the first of them.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            match b.write(|w| w.put_intent(&active("int_c"), true)) {
                Ok(()) => break,
                Err(ServiceError::Store(e @ (StoreError::Unavailable | StoreError::Db(_)))) => {
                    assert!(b.engine_stale(), "a write refused for the rebuild: {e}");
                    assert!(std::time::Instant::now() < deadline, "the store never came back: {e}");
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                Err(e) => panic!("{e}"),
            }
        }
        let stored = in_step(&b, &["int_a", "int_b", "int_c"]);
        assert!(stored.contains(&"int_c".to_owned()) && stored.contains(&"int_a".to_owned()), "{stored:?}");
        assert!(!b.engine_stale());
    }

    /// A queued job writing `rec` (active) and a token for it; its receiver.
    fn put_job(rec: IntentRecord) -> (Box<dyn Job>, Receiver<Result<()>>) {
        job(move |w| {
            w.put_token(&format!("hash_{}", rec.id), &rec.id)?;
            w.put_intent(&rec, true)
        })
    }

    /// An active intent of person `per_x`.
    fn of(id: &str) -> IntentRecord {
        IntentRecord { person: Some("per_x".into()), ..active(id) }
    }

    /// A base whose cap is one active intent per person, and `per_x` holding it (`int_x`).
    fn person_at_cap(dir: &std::path::Path) -> Base {
        let mut b = crate::base::test_base(dir);
        b.settings.quotas.active_intents_per_person = 1;
        b.write(|w| w.put_intent(&of("int_x"), true)).unwrap();
        b
    }

    /// Runs `jobs` as one batch, as the caller holding the intent-write lock does.
    fn batch(b: &Base, jobs: Vec<Box<dyn Job>>) {
        let _serial = b.intent_writes.lock().unwrap();
        b.run_batch(jobs);
    }

    #[test]
    fn a_failed_durable_commit_of_a_batch_leaves_the_engine_as_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let (b, faults) = faulty_base(dir.path());
        b.write_batched(|w| w.put_intent(&active("int_a"), true)).unwrap();
        assert_eq!(b.batch_stats(), BatchStats { batches: 1, writes: 1, largest: 1 });

        // Two writes in one transaction whose commit fails: both fail, neither is in the
        // store (reopened at its last durable commit) nor in the engine.
        let (jobs, rxs): (Vec<_>, Vec<_>) = ["int_b", "int_c"].map(|id| put_job(active(id))).into_iter().unzip();
        faults.fail_next_write();
        batch(&b, jobs);
        assert!(!faults.armed(), "the injected failure came");
        for rx in rxs {
            let e = rx.try_recv().unwrap().unwrap_err();
            assert!(matches!(e, ServiceError::Store(StoreError::Db(_))), "{e}");
        }
        assert_eq!(in_step(&b, &["int_a", "int_b", "int_c"]), vec!["int_a"], "the failed batch is gone");
        assert!(b.store.read(|rx| rx.token("hash_int_b")).unwrap().is_none());
        assert!(!b.engine_stale());
        assert_eq!(b.batch_stats(), BatchStats { batches: 1, writes: 1, largest: 1 }, "a failed batch is not counted");

        // The next batch commits.
        let (jobs, rxs): (Vec<_>, Vec<_>) = ["int_d", "int_e"].map(|id| put_job(active(id))).into_iter().unzip();
        batch(&b, jobs);
        rxs.iter().for_each(|rx| rx.try_recv().unwrap().unwrap());
        assert_eq!(in_step(&b, &["int_a", "int_d", "int_e"]), vec!["int_a", "int_d", "int_e"]);
        assert_eq!(b.batch_stats(), BatchStats { batches: 2, writes: 3, largest: 2 });
    }

    #[test]
    fn a_failing_write_leaves_nothing_and_keeps_the_others_of_its_batch() {
        let dir = tempfile::tempdir().unwrap();
        let b = person_at_cap(dir.path());
        // The middle one writes its token, then is refused at the cap.
        let (jobs, rxs): (Vec<_>, Vec<_>) =
            [active("int_a"), of("int_b"), active("int_c")].map(put_job).into_iter().unzip();
        batch(&b, jobs);
        let outs: Vec<_> = rxs.iter().map(|rx| rx.try_recv().unwrap()).collect();
        assert!(outs[0].is_ok() && outs[2].is_ok(), "{outs:?}");
        assert!(matches!(outs[1], Err(ServiceError::PersonCap { limit: 1 })), "{outs:?}");
        assert_eq!(in_step(&b, &["int_a", "int_b", "int_c", "int_x"]), vec!["int_a", "int_c", "int_x"]);
        let tokens = ["int_a", "int_b", "int_c"].map(|id| b.store.read(|rx| rx.token(&format!("hash_{id}"))).unwrap());
        assert_eq!(
            tokens,
            [Some("int_a".to_owned()), None, Some("int_c".to_owned())],
            "the refused write left no token"
        );
        assert!(b.store.read(|rx| rx.intent::<IntentRecord>("int_b")).unwrap().is_none());
        assert_eq!(b.batch_stats(), BatchStats { batches: 1, writes: 2, largest: 2 }, "one commit for both");
    }

    #[test]
    fn many_refused_writes_in_one_batch_run_each_write_at_most_three_times() {
        let dir = tempfile::tempdir().unwrap();
        let b = person_at_cap(dir.path());
        // Every odd write is refused at the cap: re-running the whole batch after each
        // refusal would run the first write six times.
        let runs: Vec<Arc<std::sync::atomic::AtomicUsize>> = (0..10).map(|_| Arc::default()).collect();
        let (jobs, rxs): (Vec<_>, Vec<_>) = (0..10)
            .map(|i| {
                let id = format!("int_{i}");
                let rec = if i % 2 == 1 { of(&id) } else { active(&id) };
                let n = runs[i].clone();
                job(move |w| {
                    n.fetch_add(1, Ordering::SeqCst);
                    w.put_intent(&rec, true)
                })
            })
            .unzip();
        batch(&b, jobs);
        for (i, rx) in rxs.iter().enumerate() {
            let out = rx.try_recv().unwrap();
            if i % 2 == 1 {
                assert!(matches!(out, Err(ServiceError::PersonCap { limit: 1 })), "{i}: {out:?}");
            } else {
                assert!(out.is_ok(), "{i}: {out:?}");
            }
            let stored = b.store.read(|rx| rx.intent::<IntentRecord>(&format!("int_{i}"))).unwrap();
            assert_eq!(stored.is_some(), i % 2 == 0, "int_{i}");
        }
        let most = runs.iter().map(|n| n.load(Ordering::SeqCst)).max().unwrap();
        assert!(most <= 3, "a write ran {most} times");
    }

    #[test]
    fn one_batch_of_one_persons_writes_stops_exactly_at_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let mut b = crate::base::test_base(dir.path());
        b.settings.quotas.active_intents_per_person = 3;
        let ids: Vec<String> = (0..7).map(|i| format!("int_{i}")).collect();
        let (jobs, rxs): (Vec<_>, Vec<_>) =
            ids.iter().map(|id| put_job(IntentRecord { person: Some("per_x".into()), ..active(id) })).unzip();
        let commits = b.store.commits().unwrap();
        batch(&b, jobs);
        let outs: Vec<_> = rxs.iter().map(|rx| rx.try_recv().unwrap()).collect();
        assert!(outs[..3].iter().all(Result::is_ok), "{outs:?}");
        assert!(outs[3..].iter().all(|o| matches!(o, Err(ServiceError::PersonCap { limit: 3 }))), "{outs:?}");
        assert_eq!(b.store.read(|rx| rx.person_active("per_x", 0, "", 10)).unwrap(), 3);
        assert_eq!(in_step(&b, &["int_0", "int_3"]), vec!["int_0", "int_1", "int_2"]);
        assert_eq!(b.store.commits().unwrap() - commits, 1, "one durable commit for the batch");
        assert_eq!(b.batch_stats(), BatchStats { batches: 1, writes: 3, largest: 3 });
    }

    #[test]
    fn concurrent_batched_writes_each_return_their_own_outcome() {
        let dir = tempfile::tempdir().unwrap();
        let b = Arc::new(crate::base::test_base(dir.path()));
        let outs: Vec<Result<String>> = std::thread::scope(|s| {
            let calls: Vec<_> = (0..16)
                .map(|i| {
                    let b = b.clone();
                    s.spawn(move || {
                        let id = format!("int_{i:02}");
                        b.write_batched(move |w| {
                            w.put_intent(&active(&id), true)?;
                            Ok(id.clone())
                        })
                    })
                })
                .collect();
            calls.into_iter().map(|c| c.join().unwrap()).collect()
        });
        let got: Vec<String> = outs.into_iter().map(Result::unwrap).collect();
        let want: Vec<String> = (0..16).map(|i| format!("int_{i:02}")).collect();
        assert_eq!(got, want, "each caller its own outcome");
        assert_eq!(in_step(&b, &[]), want);
        let st = b.batch_stats();
        assert_eq!(st.writes, 16, "{st:?}");
        assert!(st.batches <= 16 && st.largest >= 1, "{st:?}");
    }

    #[test]
    fn awaited_and_blocking_writes_share_batches_and_each_get_their_own_outcome() {
        let dir = tempfile::tempdir().unwrap();
        let b = Arc::new(crate::base::test_base(dir.path()));
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let put = |id: String| {
            move |w: &mut Writes<'_, '_>| -> Result<String> {
                w.put_intent(&active(&id), true)?;
                Ok(id.clone())
            }
        };
        let blocking: Vec<_> = (0..4)
            .map(|i| {
                let b = b.clone();
                std::thread::spawn(move || b.write_batched(put(format!("int_t{i}"))))
            })
            .collect();
        let tasks: Vec<_> = (0..16)
            .map(|i| {
                let b = b.clone();
                rt.spawn(async move { b.write_batched_async(put(format!("int_a{i:02}"))).await })
            })
            .collect();
        let awaited: Vec<String> = rt.block_on(async {
            let mut out = Vec::new();
            for t in tasks {
                out.push(t.await.unwrap().unwrap());
            }
            out
        });
        let threads: Vec<String> = blocking.into_iter().map(|t| t.join().unwrap().unwrap()).collect();
        assert_eq!(awaited, (0..16).map(|i| format!("int_a{i:02}")).collect::<Vec<_>>(), "each task its own outcome");
        assert_eq!(threads, (0..4).map(|i| format!("int_t{i}")).collect::<Vec<_>>(), "each thread its own outcome");
        assert_eq!(in_step(&b, &[]).len(), 20);
        let st = b.batch_stats();
        assert_eq!(st.writes, 20, "{st:?}");
        // The runner thread is gone once the queue is empty.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while b.batches.runner.load(Ordering::Relaxed) {
            assert!(std::time::Instant::now() < deadline, "the batch runner never stopped");
            std::thread::yield_now();
        }
        assert!(b.batches.queue.lock().unwrap().is_empty());
        // A refused write fails alone, the awaiting caller gets the error.
        let refused = rt.block_on(b.write_batched_async(|_w| -> Result<()> { Err(ServiceError::NotFound) }));
        assert!(matches!(refused, Err(ServiceError::NotFound)), "{refused:?}");
    }

    #[test]
    fn writes_queued_behind_a_running_batch_run_as_the_next_batch() {
        let dir = tempfile::tempdir().unwrap();
        let b = Arc::new(crate::base::test_base(dir.path()));
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let (started, running) = std::sync::mpsc::channel::<()>();
        let outs: Vec<Result<String>> = std::thread::scope(|s| {
            let first = {
                let b = b.clone();
                let mut hold = Some((started, wait));
                s.spawn(move || {
                    b.write_batched(move |w| {
                        // The first run holds its batch open until the others queue.
                        if let Some((started, wait)) = hold.take() {
                            started.send(()).unwrap();
                            wait.recv().unwrap();
                        }
                        w.put_intent(&active("int_a"), true)?;
                        Ok("int_a".to_owned())
                    })
                })
            };
            running.recv_timeout(std::time::Duration::from_secs(10)).expect("the first batch never ran");
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            let later: Vec<_> = ["int_b", "int_c"]
                .map(|id| {
                    let b = b.clone();
                    s.spawn(move || {
                        b.write_batched(move |w| {
                            w.put_intent(&active(id), true)?;
                            Ok(id.to_owned())
                        })
                    })
                })
                .into();
            while b.batches.queue.lock().unwrap().len() < 2 {
                assert!(std::time::Instant::now() < deadline, "the later writes never queued");
                std::thread::yield_now();
            }
            go.send(()).unwrap();
            std::iter::once(first).chain(later).map(|c| c.join().unwrap()).collect()
        });
        let got: Vec<String> = outs.into_iter().map(Result::unwrap).collect();
        assert_eq!(got, ["int_a", "int_b", "int_c"], "each caller its own outcome");
        assert_eq!(in_step(&b, &[]), got);
        assert_eq!(b.batch_stats(), BatchStats { batches: 2, writes: 3, largest: 2 }, "the queued two in one batch");
    }

    #[test]
    fn the_base_holds_the_stores_only_intent_key() {
        let dir = tempfile::tempdir().unwrap();
        let b = crate::base::test_base(dir.path());
        assert!(b.store.intent_key().is_none(), "the base took it at assembly");
        assert!(b.engine_failure().is_none());
        // A second base over the same store cannot write intents, and says why.
        let settings = b.settings.clone();
        let other = Base::new(settings, b.store.clone(), b.keys.clone(), b.clock.clone());
        assert!(other.engine_failure().is_some_and(|e| e.contains("intent key")));
        let e = other.write(|w| w.put_intent(&active("int_a"), true)).unwrap_err();
        assert!(matches!(e, ServiceError::Store(StoreError::Unavailable)), "{e}");
        assert!(b.store.read(|rx| rx.active_ids()).unwrap().is_empty());
    }
}
