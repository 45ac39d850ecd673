//! The outbox: the durable mail queue, by sequence number (never reused).

use super::schema::OUTBOX;
use super::{decode, encode, Result, Rx, Tables, Tx};
use serde::{de::DeserializeOwned, Serialize};

/// Key of the last sequence number handed out, in `meta`.
const SEQ: &str = "outbox_seq";

/// Key of the count of messages dropped after a permanent (5xx) refusal, in `meta`.
pub(super) const DROPPED: &str = "mail_dropped";

impl Tx<'_> {
    /// Appends a job to the outbox; returns its sequence number.
    pub fn enqueue_mail<T: Serialize>(&mut self, job: &T) -> Result<u64> {
        let bytes = encode("outbox", job)?;
        // Sequence numbers are never reused (a counter in `meta`, not the last key), so a
        // worker holding a job number can never touch a later job by mistake.
        let mut t = self.open(OUTBOX)?;
        let next = self.bump_counter(SEQ, t.last()?.map_or(0, |(k, _)| k))?;
        t.insert(next, bytes.as_slice())?;
        Ok(next)
    }

    /// Replaces an outbox job (after a failed attempt).
    pub fn update_mail<T: Serialize>(&mut self, seq: u64, job: &T) -> Result<()> {
        let bytes = encode("outbox", job)?;
        self.open(OUTBOX)?.insert(seq, bytes.as_slice())?;
        Ok(())
    }

    /// Removes an outbox job (sent, or cancelled by a withdrawal).
    pub fn remove_mail(&mut self, seq: u64) -> Result<()> {
        self.open(OUTBOX)?.remove(seq)?;
        Ok(())
    }

    /// Removes an outbox job that the SMTP server refused for good (5xx) and counts it in
    /// the same transaction ("5xx dropped and recorded"; read it with
    /// [`super::Reads::mail_dropped`]). A job already gone is not counted.
    pub fn drop_mail(&mut self, seq: u64) -> Result<()> {
        if self.open(OUTBOX)?.remove(seq)?.is_some() {
            self.bump_counter(DROPPED, 0)?;
        }
        Ok(())
    }
}

impl Rx {
    /// How many jobs the outbox holds, and the oldest (lowest sequence number) with its
    /// number: the backlog `/readyz` reports.
    pub fn outbox_backlog<T: DeserializeOwned>(&self) -> Result<(u64, Option<(u64, T)>)> {
        let n = self.table(OUTBOX)?.len()?;
        let first = match self.table(OUTBOX)?.first()? {
            Some((k, v)) => Some((k, decode(&k.to_string(), &v)?)),
            None => None,
        };
        Ok((n, first))
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn outbox_numbers_are_never_reused() {
        for (backend, s, _d) in crate::store::testpg::both() {
            eprintln!("backend: {backend}");
            let a = s.write(|tx| tx.enqueue_mail(&1)).unwrap();
            s.write(|tx| tx.remove_mail(a)).unwrap();
            let b = s.write(|tx| tx.enqueue_mail(&2)).unwrap();
            assert!(b > a, "{b} after {a}");
        }
    }

    #[test]
    fn outbox_backlog_counts_jobs_and_names_the_oldest() {
        for (backend, s, _d) in crate::store::testpg::both() {
            eprintln!("backend: {backend}");
            assert_eq!(s.read(|rx| rx.outbox_backlog::<i32>()).unwrap(), (0, None));
            let a = s.write(|tx| tx.enqueue_mail(&7)).unwrap();
            s.write(|tx| tx.enqueue_mail(&8)).unwrap();
            assert_eq!(s.read(|rx| rx.outbox_backlog::<i32>()).unwrap(), (2, Some((a, 7))));
            s.write(|tx| tx.remove_mail(a)).unwrap();
            assert_eq!(s.read(|rx| rx.outbox_backlog::<i32>()).unwrap(), (1, Some((a + 1, 8))));
        }
    }

    #[test]
    fn outbox_jobs_in_order_updated_and_removed() {
        use super::super::Reads as _;
        for (backend, s, _d) in crate::store::testpg::both() {
            eprintln!("backend: {backend}");
            let (a, b) =
                s.write(|tx| Ok::<_, super::super::StoreError>((tx.enqueue_mail(&1)?, tx.enqueue_mail(&2)?))).unwrap();
            s.write(|tx| tx.update_mail(a, &3)).unwrap();
            assert_eq!(s.read(|rx| rx.outbox::<i32>()).unwrap(), vec![(a, 3), (b, 2)]);
            assert!(s.read(|rx| rx.has_mail(b)).unwrap());
            s.write(|tx| tx.remove_mail(b)).unwrap();
            assert!(!s.write(|tx| tx.has_mail(b)).unwrap());
            assert_eq!(s.write(|tx| tx.outbox::<i32>()).unwrap(), vec![(a, 3)]);
        }
    }

    #[test]
    fn dropped_mail_is_counted_once_with_its_removal() {
        use super::super::Reads as _;
        for (backend, s, _d) in crate::store::testpg::both() {
            eprintln!("backend: {backend}");
            assert_eq!(s.read(|rx| rx.mail_dropped()).unwrap(), 0);
            let (a, b) =
                s.write(|tx| Ok::<_, super::super::StoreError>((tx.enqueue_mail(&1)?, tx.enqueue_mail(&2)?))).unwrap();
            assert_eq!(s.read(|rx| rx.outbox_backlog::<i32>().map(|b| b.0)).unwrap(), 2);
            s.write(|tx| tx.drop_mail(a)).unwrap();
            // A second drop of the same job (already gone) is not counted again.
            s.write(|tx| tx.drop_mail(a)).unwrap();
            assert_eq!(s.read(|rx| rx.mail_dropped()).unwrap(), 1);
            assert_eq!(s.read(|rx| rx.outbox_backlog::<i32>().map(|b| b.0)).unwrap(), 1);
            s.write(|tx| tx.remove_mail(b)).unwrap();
            assert_eq!(s.write(|tx| tx.mail_dropped()).unwrap(), 1, "a sent or cancelled job is not a drop");
            assert_eq!(s.read(|rx| rx.outbox_backlog::<i32>().map(|b| b.0)).unwrap(), 0);
        }
    }
}
