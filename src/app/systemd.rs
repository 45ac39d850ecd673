//! The systemd service protocol: `sd_notify(3)` messages to the service manager for
//! `Type=notify` units. The one place that uses `sd-notify`.
//!
//! Without `NOTIFY_SOCKET` in the environment (not started by systemd) every function
//! here does nothing. A message that cannot be sent is logged at debug level and
//! otherwise ignored: the service manager then times the start out, which is what it
//! should do. `STATUS=` texts carry counts and phases only — never a path, a contact, a
//! statement or a limit (they are shown by `systemctl status` to any local user).

use sd_notify::NotifyState;
use std::time::Duration;

/// Sends `states` as one datagram to `$NOTIFY_SOCKET`, if set.
fn send(states: &[NotifyState<'_>]) {
    if let Err(e) = sd_notify::notify(states) {
        tracing::debug!(error = %e, "sd_notify failed");
    }
}

/// `STATUS=status`: a one-line phase shown by `systemctl status`.
pub fn status(status: &str) {
    send(&[NotifyState::Status(status)]);
}

/// `READY=1` with `STATUS=status`: the holder listens and answers (for `Type=notify`,
/// systemd starts the units ordered after isto only now).
pub fn ready(status: &str) {
    send(&[NotifyState::Ready, NotifyState::Status(status)]);
}

/// `STOPPING=1` with `STATUS=shutting down`: the graceful shutdown began.
pub fn stopping() {
    send(&[NotifyState::Stopping, NotifyState::Status("shutting down")]);
}

/// `STATUS=failed to start: reason`: a start that failed, for `systemctl status` (the
/// reason is a short fixed phrase for the error's kind, not its text, which may hold a
/// path; the journal has the whole message).
pub fn failed(reason: &str) {
    let text = format!("failed to start: {reason}");
    send(&[NotifyState::Status(&text)]);
}

/// The interval between `WATCHDOG=1` pings for a watchdog timeout of `timeout`: half of
/// it (as `sd_watchdog_enabled(3)` advises), at least 1 ms.
pub fn watchdog_interval(timeout: Duration) -> Duration {
    (timeout / 2).max(Duration::from_millis(1))
}

/// When the unit sets `WatchdogSec=` (systemd passes `WATCHDOG_USEC`, and `WATCHDOG_PID`
/// names this process), spawns a task on the current runtime that sends `WATCHDOG=1`
/// every [`watchdog_interval`] until the runtime ends; returns the interval. A runtime
/// so stuck that this task cannot run is then restarted by systemd. `None` (and no
/// task) without a watchdog or outside a runtime.
pub fn spawn_watchdog() -> Option<Duration> {
    let every = watchdog_interval(sd_notify::watchdog_enabled()?);
    let rt = tokio::runtime::Handle::try_current().ok()?;
    rt.spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            send(&[NotifyState::Watchdog]);
        }
    });
    Some(every)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watchdog_pings_at_half_the_timeout() {
        assert_eq!(watchdog_interval(Duration::from_secs(30)), Duration::from_secs(15));
        assert_eq!(watchdog_interval(Duration::from_micros(1)), Duration::from_millis(1));
    }
}
