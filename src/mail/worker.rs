//! The outbox worker: queues due digests, sends due mail, retries with back-off.
//!
//! A job is deleted only after the transport accepted it, so a crash or an SMTP outage
//! delays mail but loses none. A crash in the milliseconds between the server's
//! acceptance and the deletion sends that message again on restart, with the same
//! `Message-ID` (fixed when queued), which receiving systems use to drop duplicates. The
//! outbox never starts sending a message that a withdrawal removed; a message whose
//! sending had begun when the withdrawal came may still arrive. No lock is held across a
//! send, and every SMTP conversation is bounded in time ([`super::SMTP_SEND_TIMEOUT`]).

use super::{build_message, MailContent, MailJob, Outbox, Transport};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Longest pause between two passes, also the retry granularity.
const TICK: Duration = Duration::from_secs(5);

/// What the worker asks, before each pass, to queue the digests that are due (the
/// deliveries service implements it).
pub trait DigestScheduler: Send + Sync + 'static {
    /// Queues due digests into the outbox; returns how many, or the (logged) failure.
    ///
    /// # Errors
    /// The failure's description (no personal data).
    fn queue_due(&self) -> Result<u64, String>;
}

/// Runs until `stop` is cancelled: digests → outbox → transport.
pub async fn run(outbox: Outbox, digests: Arc<dyn DigestScheduler>, transport: Transport, stop: CancellationToken) {
    let mut first_pass = true;
    loop {
        let d = digests.clone();
        match tokio::task::spawn_blocking(move || d.queue_due()).await {
            Ok(Err(e)) => tracing::error!(error = %e, "queueing digests failed"),
            Err(e) => tracing::error!(error = %e, "digest task panicked"),
            Ok(Ok(_)) => {}
        }
        // A stop does not wait for an SMTP server: an interrupted send stays queued and is
        // sent again (same Message-ID) after the restart.
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = send_due(&outbox, &transport, first_pass) => {}
        }
        first_pass = false;
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = outbox.woken() => {}
            _ = tokio::time::sleep(TICK) => {}
        }
    }
}

/// Sends every job whose time has come (with `first_pass`, every job: after a restart a
/// saved back-off is not waited out); returns how many were sent.
pub async fn send_due(outbox: &Outbox, transport: &Transport, first_pass: bool) -> usize {
    let now = outbox.clock.now().unix_timestamp();
    let jobs: Vec<(u64, MailJob)> = match outbox.store.read(|rx| rx.outbox()) {
        Ok(j) => j,
        Err(e) => {
            tracing::error!(error = %e, "reading the outbox failed");
            return 0;
        }
    };
    let mut sent = 0;
    for (seq, job) in jobs.into_iter().filter(|(_, j)| j.next_attempt <= now || first_pass) {
        let content: Option<MailContent> =
            outbox.keys.open(&job.sealed).ok().and_then(|b| serde_json::from_slice(&b).ok());
        let Some(content) = content else {
            tracing::error!(seq, "outbox job cannot be opened (key missing?); left in place");
            continue;
        };
        // The send lock is held for this check only, never across the SMTP conversation:
        // a withdrawal waits at most for this read, and once it has returned no send of
        // its intent's mail starts (see Outbox::send_lock).
        let still_queued = {
            let _check = outbox.send_lock.lock().await;
            outbox.store.read(|rx| rx.has_mail(seq))
        };
        match still_queued {
            Ok(true) => {}
            Ok(false) => continue, // cancelled by a withdrawal meanwhile
            Err(e) => {
                tracing::error!(seq, error = %e, "reading the outbox failed");
                continue;
            }
        }
        let result = match build_message(&outbox.from, &content, job.message_id.as_deref()) {
            Ok(m) => transport.send(m).await,
            Err(e) => Err(e),
        };
        match result {
            Ok(()) => {
                sent += 1;
                if let Err(e) = outbox.store.write(|tx| tx.remove_mail(seq)) {
                    tracing::error!(seq, error = %e, "sent mail could not be removed from the outbox");
                }
                tracing::info!(seq, intent = job.intent_id.as_deref().unwrap_or("-"), "mail sent");
            }
            Err(e) if e.is_permanent() => {
                // Retrying cannot help: drop the job (the intent then expires unconfirmed).
                tracing::error!(seq, intent = job.intent_id.as_deref().unwrap_or("-"), error = %e, "mail refused for good; dropped");
                if let Err(e) = outbox.store.write(|tx| tx.remove_mail(seq)) {
                    tracing::error!(seq, error = %e, "outbox update failed");
                }
            }
            Err(e) => {
                let attempts = job.attempts.saturating_add(1);
                let delay = 30i64.saturating_mul(1 << attempts.min(7)).min(3600);
                tracing::warn!(seq, attempts, retry_in_secs = delay, error = %e, "mail not sent; will retry");
                let mut j = job.clone();
                j.attempts = attempts;
                j.next_attempt = now + delay;
                let still_there = |tx: &mut crate::store::Tx<'_>| -> Result<(), crate::store::StoreError> {
                    if tx.has_mail(seq)? {
                        tx.update_mail(seq, &j)?;
                    }
                    Ok(())
                };
                if let Err(e) = outbox.store.write(still_there) {
                    tracing::error!(seq, error = %e, "outbox update failed");
                }
            }
        }
    }
    sent
}
