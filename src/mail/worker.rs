//! The outbox worker: queues due digests, sends due mail, retries with back-off.
//!
//! A job is deleted only after the transport accepted it, so a crash or an SMTP outage
//! delays mail but loses none. A crash in the milliseconds between the server's
//! acceptance and the deletion sends that message again on restart, with the same
//! `Message-ID` (fixed when queued), which receiving systems use to drop duplicates. The
//! outbox never sends a message that a withdrawal removed.

use super::{build_message, MailContent, MailJob, Transport};
use crate::holder::Holder;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Longest pause between two passes, also the retry granularity.
const TICK: Duration = Duration::from_secs(5);

/// Runs until `stop` is cancelled: digests → outbox → transport.
pub async fn run(holder: Arc<Holder>, transport: Transport, stop: CancellationToken) {
    let mut first_pass = true;
    loop {
        let h = holder.clone();
        match tokio::task::spawn_blocking(move || h.queue_due_digests()).await {
            Ok(Err(e)) => tracing::error!(error = %e, "queueing digests failed"),
            Err(e) => tracing::error!(error = %e, "digest task panicked"),
            Ok(Ok(_)) => {}
        }
        send_due(&holder, &transport, first_pass).await;
        first_pass = false;
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = holder.wake.notified() => {}
            _ = tokio::time::sleep(TICK) => {}
        }
    }
}

/// Sends every job whose time has come (with `first_pass`, every job: after a restart a
/// saved back-off is not waited out); returns how many were sent.
pub async fn send_due(holder: &Holder, transport: &Transport, first_pass: bool) -> usize {
    let now = holder.clock.now().unix_timestamp();
    let jobs: Vec<(u64, MailJob)> = match holder.store.read(|rx| rx.outbox()) {
        Ok(j) => j,
        Err(e) => {
            tracing::error!(error = %e, "reading the outbox failed");
            return 0;
        }
    };
    let mut sent = 0;
    for (seq, job) in jobs.into_iter().filter(|(_, j)| j.next_attempt <= now || first_pass) {
        let content: Option<MailContent> =
            holder.keys.open(&job.sealed).ok().and_then(|b| serde_json::from_slice(&b).ok());
        let Some(content) = content else {
            tracing::error!(seq, "outbox job cannot be opened (key missing?); left in place");
            continue;
        };
        // No withdrawal can slip between this check and the send (see Holder::send_lock).
        let _in_flight = holder.send_lock.lock().await;
        match holder.store.read(|rx| rx.has_mail(seq)) {
            Ok(true) => {}
            Ok(false) => continue, // cancelled by a withdrawal meanwhile
            Err(e) => {
                tracing::error!(seq, error = %e, "reading the outbox failed");
                continue;
            }
        }
        let result = match build_message(&holder.settings.mail_from, &content, job.message_id.as_deref()) {
            Ok(m) => transport.send(m).await,
            Err(e) => Err(e),
        };
        match result {
            Ok(()) => {
                sent += 1;
                if let Err(e) = holder.store.write(|tx| tx.remove_mail(seq)) {
                    tracing::error!(seq, error = %e, "sent mail could not be removed from the outbox");
                }
                tracing::info!(seq, intent = job.intent_id.as_deref().unwrap_or("-"), "mail sent");
            }
            Err(e) if e.is_permanent() => {
                // Retrying cannot help: drop the job (the intent then expires unconfirmed).
                tracing::error!(seq, intent = job.intent_id.as_deref().unwrap_or("-"), error = %e, "mail refused for good; dropped");
                if let Err(e) = holder.store.write(|tx| tx.remove_mail(seq)) {
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
                if let Err(e) = holder.store.write(still_there) {
                    tracing::error!(seq, error = %e, "outbox update failed");
                }
            }
        }
    }
    sent
}
