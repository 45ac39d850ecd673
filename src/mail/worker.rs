//! The outbox worker: sends due mail, retries with back-off. It only sends: the digests
//! it sends are queued by the domain's scheduler (`crate::schedule`), which wakes it.
//!
//! A job is deleted only after the transport accepted it. A crash between the server's
//! acceptance and the deletion sends that message again on restart, with the same
//! `Message-ID`, which receiving systems use to drop duplicates. The outbox never starts
//! sending a message that a withdrawal removed; one whose sending had begun may still
//! arrive. No lock is held across a send, and every SMTP conversation is bounded in time
//! ([`super::Transport::with_timeout`]).
//!
//! Up to [`MAX_IN_FLIGHT`] messages are sent at once, each in its own conversation: a
//! server that stalls one holds up only that message, until its timeout.

use super::{build_message, MailContent, MailJob, Outbox, Transport};
use crate::store::Reads as _;
use std::collections::HashSet;
use std::time::Duration;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Longest pause between two passes, also the retry granularity.
const TICK: Duration = Duration::from_secs(5);

/// How many messages may be in flight at once (docs/choices.md: "Mail in flight").
pub const MAX_IN_FLIGHT: usize = 4;

/// Default of `mail.retry_base_secs`: a failed attempt `n` is retried after `base × 2^n`
/// seconds, at most an hour.
pub const RETRY_BASE_SECS: u64 = 30;

/// A send that took this long (milliseconds) is logged as a warning.
const SLOW_SEND_MS: u64 = 10_000;

/// Longest delay between two attempts, seconds.
const RETRY_MAX_SECS: i64 = 3600;

/// How one attempt ended.
enum Outcome {
    /// Accepted by the transport and removed.
    Sent,
    /// Refused for good and dropped (counted, see `Tx::drop_mail`).
    Dropped,
    /// Failed; the job's next attempt is scheduled.
    Retry,
    /// Cancelled by a withdrawal before it started.
    Cancelled,
    /// Left as it was (a store failure): not tried again before the next tick.
    Untouched,
}

/// The worker's bookkeeping across passes.
struct Slots {
    /// Running attempts.
    set: JoinSet<(u64, Outcome)>,
    /// Their job numbers.
    in_flight: HashSet<u64>,
    /// Jobs found at start-up and not tried yet: due whatever their saved back-off.
    first_round: HashSet<u64>,
    /// Jobs not to try again before the next tick (unreadable, store failures).
    paused: HashSet<u64>,
    /// Jobs whose sealed content cannot be opened (logged once).
    unreadable: HashSet<u64>,
}

/// Runs until `stop` is cancelled: outbox → transport. A stop does not wait for an SMTP
/// server: the attempts in flight are dropped and their jobs sent after the restart.
pub async fn run(outbox: Outbox, transport: Transport, stop: CancellationToken) {
    let mut slots = Slots {
        set: JoinSet::new(),
        in_flight: HashSet::new(),
        first_round: match outbox.store.read(|rx| rx.outbox::<MailJob>()) {
            Ok(jobs) => jobs.into_iter().map(|(seq, _)| seq).collect(),
            Err(_) => HashSet::new(),
        },
        paused: HashSet::new(),
        unreadable: HashSet::new(),
    };
    loop {
        let next_due = fill(&outbox, &transport, &mut slots);
        let pause = next_due.map_or(TICK, |secs| Duration::from_secs(secs.clamp(1, TICK.as_secs())));
        tokio::select! {
            _ = stop.cancelled() => return,
            Some(done) = slots.set.join_next(), if !slots.set.is_empty() => {
                match done {
                    Ok((seq, outcome)) => {
                        slots.in_flight.remove(&seq);
                        if matches!(outcome, Outcome::Untouched) {
                            slots.paused.insert(seq);
                        }
                    }
                    Err(e) => {
                        // A panicked attempt: its number is unknown here; clear the ones
                        // no longer running on the next tick.
                        tracing::error!(error = %e, "mail task failed");
                    }
                }
            }
            _ = outbox.woken() => slots.paused.clear(),
            _ = tokio::time::sleep(pause) => slots.paused.clear(),
        }
        if slots.set.is_empty() {
            slots.in_flight.clear();
        }
    }
}

/// Starts attempts for due jobs while slots are free; returns in how many seconds the
/// earliest job not yet due comes due (`None`: none waits).
fn fill(outbox: &Outbox, transport: &Transport, slots: &mut Slots) -> Option<u64> {
    if slots.set.len() >= MAX_IN_FLIGHT {
        return None;
    }
    // With several replicas on one database only the leading one sends (each mail once).
    if !outbox.store.leading() {
        return None;
    }
    let now = outbox.clock.now().unix_timestamp();
    let jobs: Vec<(u64, MailJob)> = match outbox.store.read(|rx| rx.outbox()) {
        Ok(j) => j,
        Err(e) => {
            tracing::error!(error = %e, "reading the outbox failed");
            return None;
        }
    };
    let mut next_due: Option<u64> = None;
    for (seq, job) in jobs {
        if slots.in_flight.contains(&seq) || slots.paused.contains(&seq) || slots.unreadable.contains(&seq) {
            continue;
        }
        if job.next_attempt > now && !slots.first_round.contains(&seq) {
            let wait = u64::try_from(job.next_attempt - now).unwrap_or(u64::MAX);
            next_due = Some(next_due.map_or(wait, |w| w.min(wait)));
            continue;
        }
        if slots.set.len() >= MAX_IN_FLIGHT {
            // Due but no slot: try again as soon as one frees.
            continue;
        }
        let content: Option<MailContent> =
            outbox.keys.open(&job.sealed).ok().and_then(|b| serde_json::from_slice(&b).ok());
        let Some(content) = content else {
            tracing::error!(seq, "outbox job cannot be opened (key missing?); left in place");
            slots.unreadable.insert(seq);
            continue;
        };
        slots.first_round.remove(&seq);
        slots.in_flight.insert(seq);
        let (o, t) = (outbox.clone(), transport.clone());
        slots.set.spawn(async move { (seq, attempt(&o, &t, seq, job, content).await) });
    }
    next_due
}

/// One attempt at job `seq`: the "still queued" check, the send, then the job removed,
/// dropped or rescheduled.
async fn attempt(outbox: &Outbox, transport: &Transport, seq: u64, job: MailJob, content: MailContent) -> Outcome {
    // The send lock is held for this check only (see Outbox::send_lock).
    let still_queued = {
        let _check = outbox.send_lock.lock().await;
        outbox.store.read(|rx| rx.has_mail(seq))
    };
    match still_queued {
        Ok(true) => {}
        Ok(false) => return Outcome::Cancelled, // withdrawn meanwhile
        Err(e) => {
            tracing::error!(seq, error = %e, "reading the outbox failed");
            return Outcome::Untouched;
        }
    }
    let intent = job.intent_id.as_deref().unwrap_or("-");
    let (host, port, tls) = match transport.smtp() {
        Some(s) => (s.host.as_str(), s.port, s.tls.as_str()),
        None => ("-", 0, "-"),
    };
    let started = std::time::Instant::now();
    let result = match build_message(&outbox.from, &content, job.message_id.as_deref()) {
        Ok(m) => transport.send(m).await,
        Err(e) => Err(e),
    };
    let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    match result {
        Ok(()) => {
            if let Err(e) = outbox.store.write(|tx| tx.remove_mail(seq)) {
                tracing::error!(seq, error = %e, "sent mail could not be removed from the outbox");
            }
            if ms >= SLOW_SEND_MS {
                tracing::warn!(seq, intent, smtp_host = host, smtp_port = port, tls, ms, "mail sent, slowly");
            } else {
                tracing::info!(seq, intent, smtp_host = host, smtp_port = port, tls, ms, "mail sent");
            }
            Outcome::Sent
        }
        Err(e) if e.is_permanent() => {
            // Retrying cannot help: drop the job, counted (the intent then expires unconfirmed).
            tracing::error!(seq, intent, smtp_host = host, smtp_port = port, tls, phase = e.phase().as_str(), ms, error = %e, "mail refused for good; dropped");
            if let Err(e) = outbox.store.write(|tx| tx.drop_mail(seq)) {
                tracing::error!(seq, error = %e, "outbox update failed");
                return Outcome::Untouched;
            }
            Outcome::Dropped
        }
        Err(e) => {
            let attempts = job.attempts.saturating_add(1);
            let base = i64::try_from(outbox.retry_base_secs).unwrap_or(RETRY_MAX_SECS);
            let delay = base.saturating_mul(1 << attempts.min(7)).min(RETRY_MAX_SECS);
            tracing::warn!(seq, intent, smtp_host = host, smtp_port = port, tls, phase = e.phase().as_str(), ms, attempts, retry_in_secs = delay, error = %e, "mail not sent; will retry");
            let next_attempt = outbox.clock.now().unix_timestamp() + delay;
            // The job as stored now: a key rotation may have re-sealed it meanwhile, and
            // writing the copy read before the send back would restore the old ciphertext.
            let still_there = |tx: &mut crate::store::Tx<'_>| -> Result<(), crate::store::StoreError> {
                if let Some(mut j) = tx.mail::<MailJob>(seq)? {
                    j.attempts = attempts;
                    j.next_attempt = next_attempt;
                    tx.update_mail(seq, &j)?;
                }
                Ok(())
            };
            if let Err(e) = outbox.store.write(still_there) {
                tracing::error!(seq, error = %e, "outbox update failed");
                return Outcome::Untouched;
            }
            Outcome::Retry
        }
    }
}
