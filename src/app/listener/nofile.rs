//! The open-file limit (`RLIMIT_NOFILE`, POSIX `setrlimit(2)`), raised at start
//! ([`raise_and_fit`]). Each connection is a descriptor; out of descriptors, `accept`
//! fails and the connection cap, the eviction of waiting connections and the per-address
//! limits never get to act. One of the two places that use `rustix` (with
//! [`crate::clock::thread_cpu`]).

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};

/// Most descriptors kept back for everything but connections (the store, the offer index,
/// logs, the admin and metrics sockets, SMTP and outbound fetches, the connection waiting
/// for a slot); with a small limit, half of it.
pub const RESERVE_MAX: u64 = 256;

/// The soft limit used when the hard one is unlimited: the kernel's default `nr_open`
/// (a soft limit above `fs.nr_open` is refused).
const UNLIMITED_TARGET: u64 = 1 << 20;

/// Raises the soft open-file limit to the hard limit (logging both), then answers how
/// many connections to serve: `max_connections`, or fewer (logged as a warning) when the
/// limit minus the descriptors kept back ([`connections_within`]) is smaller.
pub fn raise_and_fit(max_connections: usize) -> usize {
    let before = getrlimit(Resource::Nofile);
    let target = before.maximum.unwrap_or(UNLIMITED_TARGET);
    if before.current.is_some_and(|soft| soft < target) {
        match setrlimit(Resource::Nofile, Rlimit { current: Some(target), maximum: before.maximum }) {
            Ok(()) => tracing::info!(
                from = before.current.unwrap_or(0),
                to = target,
                "raised the soft open-file limit to the hard limit"
            ),
            Err(e) => tracing::warn!(
                soft = before.current.unwrap_or(0),
                hard = target,
                error = %e,
                "cannot raise the soft open-file limit to the hard limit"
            ),
        }
    }
    let soft = getrlimit(Resource::Nofile).current;
    let fitted = connections_within(soft, max_connections);
    if fitted < max_connections {
        let limit = soft.unwrap_or(0);
        tracing::warn!(
            open_file_limit = limit,
            max_connections,
            serving = fitted,
            needed = max_connections as u64 + RESERVE_MAX,
            "the open-file limit is too low for limits.max_connections: serving fewer connections at once; \
             raise LimitNOFILE (or ulimit -n) to at least `needed`, or lower limits.max_connections"
        );
    }
    fitted
}

/// How many of `max_connections` fit under an open-file limit of `limit` (None:
/// unlimited): the limit minus what is kept back ([`RESERVE_MAX`], or half a smaller
/// limit), at least one.
pub fn connections_within(limit: Option<u64>, max_connections: usize) -> usize {
    let Some(limit) = limit else {
        return max_connections;
    };
    let room = limit - (limit / 2).min(RESERVE_MAX);
    let room = usize::try_from(room).unwrap_or(usize::MAX).max(1);
    max_connections.min(room)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_fit_under_the_limit_with_room_kept_back() {
        assert_eq!(connections_within(None, 1024), 1024);
        assert_eq!(connections_within(Some(4096), 1024), 1024);
        assert_eq!(connections_within(Some(1280), 1024), 1024);
        assert_eq!(connections_within(Some(1279), 1024), 1023);
        assert_eq!(connections_within(Some(1024), 1024), 768);
        assert_eq!(connections_within(Some(256), 1024), 128);
        assert_eq!(connections_within(Some(1), 1024), 1);
        assert_eq!(connections_within(Some(0), 1024), 1);
    }
}
