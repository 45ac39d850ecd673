//! [`Stamp`]: the one type of every stored instant (of intent records, accounts, web
//! sessions, one-time links, throttle counters, OAuth records, seller profiles and
//! confirmation marks), in one encoding — whole microseconds since the Unix epoch, UTC,
//! one JSON integer (store schema 5 to 7 converted the older RFC 3339 strings and unix
//! seconds).
//!
//! A stored value that is not such an integer, or lies outside the years 1–9999, does
//! not decode: reading the record is then an error that names it (the store's
//! `StoreError::Corrupt`), never a default such as 1970.

use crate::clock;
use serde::{de::Error as _, Deserialize, Deserializer, Serialize, Serializer};
use time::OffsetDateTime;

/// An instant as isto stores it: whole microseconds since the Unix epoch, UTC (see the
/// module docs). Ordered like the instants it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Stamp(OffsetDateTime);

impl Stamp {
    /// `t` rounded down to its microsecond (also before 1970), in UTC.
    pub fn of(t: OffsetDateTime) -> Self {
        let m = super::micros(t);
        // A microsecond of an `OffsetDateTime` is itself one: the conversion back holds.
        Self(at_micros(m).unwrap_or(t))
    }

    /// The instant `m` microseconds after the Unix epoch; `None` outside what
    /// `time::OffsetDateTime` holds (years −9999…9999).
    pub fn from_micros(m: i64) -> Option<Self> {
        at_micros(m).map(Self)
    }

    /// The instant of an RFC 3339 time (any offset).
    ///
    /// # Errors
    /// The message of [`clock::parse_rfc3339`].
    pub fn parse(s: &str) -> Result<Self, String> {
        clock::parse_rfc3339(s).map(Self::of)
    }

    /// Microseconds since the Unix epoch (negative before 1970): the stored integer.
    pub fn micros(self) -> i64 {
        super::micros(self.0)
    }

    /// The instant.
    pub fn at(self) -> OffsetDateTime {
        self.0
    }

    /// RFC 3339 UTC with whole seconds (`2026-12-01T10:00:00Z`), as PROTOCOL.md §2 shows
    /// intent times.
    pub fn rfc3339(self) -> String {
        clock::rfc3339(self.0)
    }
}

/// The instant `d` later (earlier when negative), to the microsecond; held at the
/// first or last instant `time::OffsetDateTime` can hold rather than overflowing.
impl std::ops::Add<time::Duration> for Stamp {
    type Output = Self;

    fn add(self, d: time::Duration) -> Self {
        Self::of(self.0.saturating_add(d))
    }
}

/// How long after `other` this instant is (negative when before).
impl std::ops::Sub for Stamp {
    type Output = time::Duration;

    fn sub(self, other: Self) -> time::Duration {
        self.0 - other.0
    }
}

impl From<OffsetDateTime> for Stamp {
    fn from(t: OffsetDateTime) -> Self {
        Self::of(t)
    }
}

fn at_micros(m: i64) -> Option<OffsetDateTime> {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(m) * 1000).ok()
}

impl Serialize for Stamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(self.micros())
    }
}

impl<'de> Deserialize<'de> for Stamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let m = i64::deserialize(d)?;
        Self::from_micros(m).ok_or_else(|| D::Error::custom(format!("time {m} µs is out of range")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_is_one_integer_of_microseconds_and_nothing_else_reads_as_one() {
        let t = clock::parse_rfc3339("2026-12-01T10:00:00Z").unwrap() + time::Duration::nanoseconds(1_234_567);
        let s = Stamp::of(t);
        assert_eq!(s.micros(), 1_796_119_200_001_234);
        assert_eq!(serde_json::to_string(&s).unwrap(), "1796119200001234");
        assert_eq!(serde_json::from_str::<Stamp>("1796119200001234").unwrap(), s);
        assert_eq!(s.rfc3339(), "2026-12-01T10:00:00Z");
        let before_1970 = Stamp::of(OffsetDateTime::UNIX_EPOCH - time::Duration::nanoseconds(1));
        assert_eq!(before_1970.micros(), -1, "rounded down");
        let later = s + time::Duration::seconds(3600);
        assert_eq!((later.micros() - s.micros(), later - s), (3_600_000_000, time::Duration::hours(1)));
        assert_eq!((s + time::Duration::nanoseconds(-1)).micros(), s.micros() - 1, "to the microsecond, down");
        for bad in ["\"2026-12-01T10:00:00Z\"", "null", "1.5", "\"\"", &i64::MAX.to_string()] {
            let e = serde_json::from_str::<Stamp>(bad).unwrap_err().to_string();
            assert!(
                e.contains("expected i64") || e.contains("out of range") || e.contains("invalid type"),
                "{bad}: {e}"
            );
        }
    }
}
