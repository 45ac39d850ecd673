//! Time as a parameter (STYLE.md habit 4): production uses [`SystemClock`]; tests use
//! `ManualClock` (feature `testkit`) and advance it instead of sleeping.

use time::OffsetDateTime;

/// A source of the current UTC time.
pub trait Clock: Send + Sync + 'static {
    /// The current instant, UTC.
    fn now(&self) -> OffsetDateTime;
}

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[allow(
        clippy::disallowed_methods,
        reason = "the one place that reads the wall clock; everything else asks a Clock"
    )]
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }
}

#[cfg(any(test, feature = "testkit"))]
/// A clock the tests set and advance; starts at the given instant.
#[derive(Debug)]
pub struct ManualClock {
    unix_nanos: std::sync::atomic::AtomicI64,
}

#[cfg(any(test, feature = "testkit"))]
impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: OffsetDateTime) -> Self {
        Self { unix_nanos: std::sync::atomic::AtomicI64::new(start.unix_timestamp_nanos() as i64) }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: time::Duration) {
        self.unix_nanos.fetch_add(by.whole_nanoseconds() as i64, std::sync::atomic::Ordering::SeqCst);
    }
}

#[cfg(any(test, feature = "testkit"))]
impl Clock for ManualClock {
    fn now(&self) -> OffsetDateTime {
        let n = self.unix_nanos.load(std::sync::atomic::Ordering::SeqCst);
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(n)).unwrap_or(OffsetDateTime::UNIX_EPOCH)
    }
}

/// Formats `t` as an RFC 3339 UTC string with whole seconds: `2026-12-01T10:00:00Z`.
pub fn rfc3339(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    let (year, month, day) = t.to_calendar_date();
    // `time` holds years up to 9999: four digits from 0 on.
    let Ok(year) = u32::try_from(year) else { return rfc3339_formatted(t) };
    // Every intent in every answer has three of these: written digit by digit into one
    // allocation rather than through two `format!`s.
    let mut s = String::with_capacity(20);
    let mut push = |n: u32, width: u32, then: char| {
        for place in (0..width).rev() {
            s.push(char::from(b'0' + (n / 10u32.pow(place) % 10) as u8));
        }
        s.push(then);
    };
    push(year, 4, '-');
    push(u32::from(u8::from(month)), 2, '-');
    push(u32::from(day), 2, 'T');
    push(u32::from(t.hour()), 2, ':');
    push(u32::from(t.minute()), 2, ':');
    push(u32::from(t.second()), 2, 'Z');
    s
}

/// [`rfc3339`] by `format!`: for the years before 0 (a sign).
fn rfc3339_formatted(t: OffsetDateTime) -> String {
    format!("{}T{:02}:{:02}:{:02}Z", date_string(t.date()), t.hour(), t.minute(), t.second())
}

/// Formats `t` with microseconds (`2026-12-01T10:00:00.123456Z`): used for `deliveredAt`
/// so that `since` cursors are exact.
pub fn rfc3339_micros(t: OffsetDateTime) -> String {
    format!("{}.{:06}Z", rfc3339(t).trim_end_matches('Z'), t.microsecond())
}

/// Parses an RFC 3339 time (any offset) into UTC.
///
/// # Errors
/// A message naming the expected shape when `s` is not RFC 3339.
pub fn parse_rfc3339(s: &str) -> Result<OffsetDateTime, String> {
    // Length cap before parsing: the longest RFC 3339 time is far shorter than 64.
    if s.len() > 64 {
        return Err("must be an RFC 3339 time such as 2026-12-01T10:00:00Z (at most 64 characters)".to_owned());
    }
    OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .map(|t| t.to_offset(time::UtcOffset::UTC))
        .map_err(|_| "must be an RFC 3339 time such as 2026-12-01T10:00:00Z".to_owned())
}

/// Parses an RFC 3339 full-date (`2027-01-31`).
///
/// # Errors
/// A message naming the expected shape.
pub fn parse_date(s: &str) -> Result<time::Date, String> {
    // Length cap before parsing: a full-date with a six-digit year is 13 characters.
    if s.len() > 16 {
        return Err("must be an RFC 3339 full-date such as 2027-01-31 (at most 16 characters)".to_owned());
    }
    time::Date::parse(s, time::macros::format_description!("[year]-[month]-[day]"))
        .map_err(|_| "must be an RFC 3339 full-date such as 2027-01-31".to_owned())
}

/// Formats a date as `YYYY-MM-DD`.
pub fn date_string(d: time::Date) -> String {
    format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day())
}

/// CPU time the calling thread has used so far (POSIX `clock_gettime(2)` of
/// `CLOCK_THREAD_CPUTIME_ID`: nanoseconds on the CPU, the scheduler's count that
/// `/proc/thread-self/schedstat` shows too). Differences measure what a call cost in
/// CPU, whatever else the machine runs. One system call per reading and no allocation
/// (every MCP tool call reads it twice; reading the schedstat file cost a file read and a
/// text parse each, about 2.5 % of a get's CPU under load). The clock cannot fail for
/// the calling thread; a time out of range (never seen) reads as zero.
pub fn thread_cpu() -> std::time::Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    std::time::Duration::new(u64::try_from(t.tv_sec).unwrap_or(0), u32::try_from(t.tv_nsec).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_times_are_refused_before_parsing() {
        assert!(parse_rfc3339(&"2".repeat(250_000)).unwrap_err().contains("at most 64 characters"));
        assert!(parse_date(&"2".repeat(250_000)).unwrap_err().contains("at most 16 characters"));
        assert!(parse_rfc3339("2026-12-01T10:00:00Z").is_ok());
        assert!(parse_date("2027-01-31").is_ok());
    }

    #[test]
    fn formats_and_parses() {
        let t = parse_rfc3339("2026-12-01T10:00:00+01:00").unwrap();
        assert_eq!(rfc3339(t), "2026-12-01T09:00:00Z");
        assert_eq!(rfc3339_micros(t), "2026-12-01T09:00:00.000000Z");
        assert_eq!(parse_rfc3339("yesterday").unwrap_err(), "must be an RFC 3339 time such as 2026-12-01T10:00:00Z");
        assert_eq!(date_string(parse_date("2027-01-31").unwrap()), "2027-01-31");
    }

    #[test]
    fn whole_second_times_are_written_as_format_writes_them() {
        for text in [
            "2026-12-01T09:05:07Z",
            "0000-01-01T00:00:00Z",
            "0999-02-28T23:59:59Z",
            "9999-12-31T23:59:59Z",
            "1970-01-01T00:00:00Z",
        ] {
            let t = parse_rfc3339(text).unwrap();
            assert_eq!(rfc3339(t), text);
            assert_eq!(rfc3339(t), rfc3339_formatted(t));
        }
        let t = parse_rfc3339("2026-12-01T09:05:07.999999+02:30").unwrap();
        assert_eq!(rfc3339(t), "2026-12-01T06:35:07Z");
        // Before year 0 the formatted text, with its sign, as before.
        let before = time::Date::from_calendar_date(-44, time::Month::March, 15).unwrap().midnight().assume_utc();
        assert_eq!(rfc3339(before), "-044-03-15T00:00:00Z");
    }

    #[test]
    fn thread_cpu_counts_the_calling_threads_time() {
        let start = thread_cpu();
        // Busy until 20 ms of CPU show (or a minute passed: then the assertion fails).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut spin = 0u64;
        while thread_cpu().saturating_sub(start) < std::time::Duration::from_millis(20) {
            assert!(std::time::Instant::now() < deadline, "thread_cpu did not advance");
            spin = std::hint::black_box(spin.wrapping_add(1));
        }
        // Another thread reads its own counter: it has not spun.
        let busy = thread_cpu();
        let other = std::thread::spawn(thread_cpu).join().unwrap();
        assert!(other < busy.saturating_sub(start), "{other:?} vs {busy:?}");
    }

    #[test]
    fn manual_clock_advances() {
        let c = ManualClock::new(parse_rfc3339("2026-12-01T10:00:00Z").unwrap());
        c.advance(time::Duration::hours(25));
        assert_eq!(rfc3339(c.now()), "2026-12-02T11:00:00Z");
    }
}
