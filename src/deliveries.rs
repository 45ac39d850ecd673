//! Deliveries (PROTOCOL.md §4.5, §6): recording matches of offers to intents (once per
//! pair, in strictly increasing delivery times), listing them, matching the queued
//! seller replies on a tick of their own ([`replies`]: [`match_queued_replies`], run by
//! the [`ReplyTicker`]), and queueing the match digests that the mail worker sends
//! ([`queue_due_digests`]; both run by the domain's scheduler, `crate::schedule`).
//! Every fallible function here fails with storage or key errors
//! ([`ServiceError::Store`](crate::base::ServiceError), `Crypto`); its own `# Errors`
//! names anything else.

use crate::base::{Base, Result, Writes};
use crate::clock;
use crate::crypto;
use crate::matching::{self, IntentView};
use crate::protocol::{Delivery, Status};
use crate::records::{micros, offer_valid, Cadence, DeliveryTarget, IntentRecord, OfferRecord, SellerRecord, Stamp};
use crate::store::{DeliveryLog, Reads, StoreError, Tx};
use serde_json::Value;
use std::collections::HashSet;
use time::OffsetDateTime;

pub mod replies;

pub use replies::{match_queued_replies, ReplyTicker};

/// Deliveries of an intent after `since` (exclusive), oldest first, at most `limit`,
/// and the cursor for the next call (PROTOCOL.md §3 intent_list_matches).
pub fn list(
    base: &Base,
    id: &str,
    since: Option<OffsetDateTime>,
    limit: usize,
) -> Result<(Vec<Delivery>, Option<String>)> {
    let after = since.map(micros).unwrap_or(0);
    base.store().read(|rx| -> Result<_> {
        let out = with_offers(rx, id, rx.deliveries(id, after, limit)?)?;
        let next = out.last().map(|d| d.delivered_at.clone());
        Ok((out, next))
    })
}

/// Writes the match explanations in words into `deliveries` of `intent`
/// ([`matching::explain::annotate`], the intents' way to it).
pub fn explain(intent: &crate::protocol::Intent, deliveries: &mut [Delivery]) {
    matching::explain::annotate(intent, deliveries);
}

/// Matches `offers` against one intent and records new deliveries (once per pair),
/// scheduling its digest. Returns the number of new deliveries. The intent's delivery
/// bookkeeping row is written whatever the outcome (with no new delivery, unchanged), so
/// that a match and a miss make the same writes: a seller reply's handling must not
/// depend on the hidden limit (PROTOCOL.md §3, `deliveries::replies`). A catalogue import,
/// which matches many intents at once, calls [`record_hits_in`] itself and writes only
/// the rows that change.
pub fn match_intent_tx(
    base: &Base,
    tx: &mut Writes<'_, '_>,
    rec: &mut IntentRecord,
    offers: &[OfferRecord],
    disabled: &HashSet<String>,
    now: OffsetDateTime,
) -> Result<u64> {
    let hidden = base.hidden_limit(rec)?;
    let view = IntentView {
        category: &rec.category,
        criteria: &rec.criteria,
        area: &rec.area,
        budget: rec.budget.as_ref(),
        hidden_limit: hidden,
        statement: &rec.statement,
    };
    let params = base.params();
    let mut hits = Vec::new();
    for o in offers {
        let valid = offer_valid(o, disabled, now);
        if let Some(hit) = matching::check(&view, &o.offer, valid, params) {
            hits.push((o.offer.id.as_str(), hit));
        }
    }
    let mut target = rec.delivery_target();
    let mut log = tx.delivery_log()?;
    let n = record_hits_in(base, &mut log, &mut target, &hits, now)?;
    if n == 0 {
        log.put_matches(&target.id, target.match_count, target.last_delivered)?;
    }
    (rec.match_count, rec.last_delivered) = (target.match_count, target.last_delivered);
    Ok(n)
}

/// Records deliveries of `hits` (offer id, §6 hit) to one intent, once per pair, in
/// strictly increasing delivery times (the highest score first, then the newest offer),
/// and schedules its digest, into the delivery
/// tables `log` of a write transaction (opened once for a batch of intents in a
/// catalogue import). Returns how many were new. When some were, the intent's delivery
/// bookkeeping (`match_count`, `last_delivered` of `rec`) is updated and written to its
/// own row ([`DeliveryLog::put_matches`]), not to the record, which the caller writes only
/// when something else of it changed.
pub fn record_hits_in(
    base: &Base,
    log: &mut DeliveryLog<'_>,
    rec: &mut DeliveryTarget,
    hits: &[(&str, matching::Hit)],
    now: OffsetDateTime,
) -> Result<u64> {
    let mut n = 0;
    let mut m = micros(now).max(rec.last_delivered + 1);
    // Best first, then newest first (ids sort by creation): an intent that goes live with
    // more matches than a digest carries gets the best and freshest in its first digest
    // and first page, not the offers imported first.
    let mut hits: Vec<_> = hits.iter().collect();
    hits.sort_unstable_by(|(a, x), (b, y)| y.score.total_cmp(&x.score).then_with(|| b.cmp(a)));
    for (offer_id, hit) in hits {
        if log.put(&rec.id, offer_id, m, &hit.to_bytes())? {
            n += 1;
            rec.last_delivered = m;
            m += 1; // distinct, ordered delivery times
        }
    }
    if n > 0 {
        rec.match_count += n;
        log.put_matches(&rec.id, rec.match_count, rec.last_delivered)?;
        // Paused: no digest is scheduled; the matches wait for another cadence.
        if let Some(due) = rec.next_digest_at(now, base.settings().digest_min_interval_secs) {
            log.schedule_digest(&rec.id, due)?;
        }
    }
    Ok(n)
}

/// Sets the delivery cadence of `rec` and reschedules its digest in the same transaction:
/// none while paused; otherwise, when matches wait that no digest carried yet, at
/// [`Cadence::next_digest_at`] (the timer counts from the last digest sent: a new cadence
/// does not reset it). The caller writes `rec`.
pub fn set_cadence_tx(
    base: &Base,
    tx: &mut Tx<'_>,
    rec: &mut IntentRecord,
    cadence: Cadence,
    now: OffsetDateTime,
) -> Result<()> {
    rec.cadence = cadence;
    let waiting = !tx.deliveries(&rec.id, rec.digest_cursor, 1)?.is_empty();
    let due = rec.next_digest_at(now, base.settings().digest_min_interval_secs).filter(|_| waiting);
    tx.set_digest_due(&rec.id, due)?;
    Ok(())
}

/// Sends what is due: builds digests for intents whose digest time has come (first
/// one at once, later ones after the spacing of the intent's cadence, see
/// [`Cadence::next_digest_at`]; none while paused) into the outbox. Returns the
/// number of digests queued.
pub fn queue_due_digests(base: &Base) -> Result<u64> {
    let now = base.now();
    let due: Vec<(String, i64)> = base.store().read(|rx| rx.digests_due())?;
    let mut queued = 0;
    for (id, at) in due {
        if at > now.unix_timestamp() {
            continue;
        }
        let manage = crypto::new_intent_token(&id);
        let url_base = base.settings().public_url.base.clone();
        let sent = base.write(|tx| -> Result<bool> {
            tx.set_digest_due(&id, None)?;
            let Some(mut rec) = tx.intent::<IntentRecord>(&id)? else { return Ok(false) };
            if rec.effective_status(now) != Status::Active {
                return Ok(false);
            }
            // The person's cadence decides: paused, nothing goes out (the matches wait);
            // before its spacing since the last digest is over, the digest waits for it.
            let min = base.settings().digest_min_interval_secs;
            match rec.next_digest_at(now, min) {
                None => return Ok(false),
                Some(later) if later > now.unix_timestamp() => {
                    tx.set_digest_due(&id, Some(later))?;
                    return Ok(false);
                }
                Some(_) => {}
            }
            let Some(contact) = &rec.contact else { return Ok(false) };
            let rows = tx.deliveries(&id, rec.digest_cursor, 50)?;
            if rows.is_empty() {
                return Ok(false);
            }
            let mut offers = Vec::new();
            for (_, oid, _) in &rows {
                if let Some(o) = tx.offer::<OfferRecord>(oid)? {
                    offers.push(o.offer);
                }
            }
            let email = base.keys().open_str(contact)?;
            let content = crate::messages::digest(
                base.settings(),
                email.expose(),
                &rec.to_intent(now),
                rec.cadence,
                &offers,
                &format!("{url_base}/results/{}", manage.expose()),
                &format!("{url_base}/withdraw/{}", manage.expose()),
                &format!("{url_base}/unsubscribe/{}", manage.expose()),
            );
            tx.put_token(&crypto::token_key("manage", manage.expose()), &id)?;
            base.enqueue(tx, Some(&id), &content)?;
            rec.digest_cursor = rows.last().map(|r| r.0).unwrap_or(rec.digest_cursor);
            rec.last_digest_at = Some(Stamp::of(now));
            if rows.len() == 50 {
                // More wait: the next digest after this cadence's spacing.
                tx.set_digest_due(&id, rec.next_digest_at(now, min))?;
            }
            tx.put_intent(&rec, true)?;
            Ok(true)
        })?;
        if sent {
            queued += 1;
            tracing::info!(intent = %id, "digest queued");
        }
    }
    Ok(queued)
}

/// Turns intent `intent`'s delivery rows `(µs, offer id, stored extensions)` into
/// Deliveries with their offers (rows whose offer is gone are skipped).
///
/// # Errors
/// Storage errors; [`StoreError::Corrupt`] naming the delivery (intent and offer id)
/// when its stored time lies outside what a time holds, or its extensions do not read
/// ([`extensions`]): the list fails rather than show a made-up time such as 1970.
pub fn with_offers(rx: &impl Reads, intent: &str, rows: Vec<(i64, String, Vec<u8>)>) -> Result<Vec<Delivery>> {
    let mut out = Vec::with_capacity(rows.len());
    for (m, offer_id, ext) in rows {
        let corrupt = |why: String| StoreError::Corrupt(format!("delivery {intent}/{offer_id}"), why);
        let at = Stamp::from_micros(m).ok_or_else(|| corrupt(format!("its time {m} µs is out of range")))?;
        let extensions = extensions(&ext).ok_or_else(|| corrupt("its extensions do not read".into()))?;
        if let Some(o) = rx.offer::<OfferRecord>(&offer_id)? {
            out.push(Delivery { offer: o.offer, delivered_at: clock::rfc3339_micros(at.at()), extensions });
        }
    }
    Ok(out)
}

/// A delivery's extensions from their stored form: a [`matching::Hit`] in its 4 bytes
/// ([`matching::Hit::to_bytes`]), or JSON (the form of the rows written before it, kept
/// as they are); `None` when neither reads.
fn extensions(stored: &[u8]) -> Option<Value> {
    match matching::Hit::from_bytes(stored) {
        Some(hit) => serde_json::to_value(hit).ok(),
        None => serde_json::from_slice(stored).ok(),
    }
}

/// Ids of disabled sellers: their offers never match (PROTOCOL.md §6).
pub fn disabled_sellers(tx: &Tx<'_>) -> Result<HashSet<String>> {
    Ok(tx.all_sellers::<SellerRecord>()?.into_iter().filter(|s| s.disabled).map(|s| s.id).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::ServiceError;
    use serde_json::json;

    fn offer(id: &str) -> OfferRecord {
        serde_json::from_value(json!({
            "offer": {
                "id": id,
                "source": {"kind": "feed", "sellerId": "sel_a"},
                "title": "Škoda Octavia",
                "description": "",
                "category": "vehicles",
                "attributes": {},
                "price": {"amount": 9000, "currency": "EUR"},
                "area": {"country": "SK", "regions": ["SK-KI"]},
                "seller": {"id": "sel_a", "name": "A"},
                "publishedAt": "2026-12-01T10:00:00Z",
                "extensions": {}
            },
            "active": true
        }))
        .unwrap()
    }

    /// When an intent goes live with many matches, the digest (the first 50) and the
    /// first page of matches show the best, then the newest offers: delivery times follow
    /// the score, then the offer id (ids sort by creation) newest first.
    #[test]
    fn matches_are_delivered_best_first_then_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let b = crate::base::test_base(dir.path());
        let mut rec = crate::base::tests::active("int_a").delivery_target();
        let hit = |score| matching::Hit::new(score, false, true);
        let hits = [("off_1", hit(0.5)), ("off_3", hit(1.0)), ("off_2", hit(0.5)), ("off_4", hit(0.25))];
        let now = b.now();
        let n = b.store().write(|tx| record_hits_in(&b, &mut tx.delivery_log()?, &mut rec, &hits, now)).unwrap();
        assert_eq!(n, 4);
        let rows = b.store().read(|rx| rx.deliveries("int_a", 0, 10)).unwrap();
        let order: Vec<&str> = rows.iter().map(|(_, o, _)| o.as_str()).collect();
        assert_eq!(order, ["off_3", "off_2", "off_1", "off_4"]);
    }

    /// A hit is stored in 4 bytes and reads back as the JSON it always was; a row stored
    /// as JSON before still reads; other bytes do not.
    #[test]
    fn a_hit_is_stored_in_4_bytes_and_reads_as_its_json() {
        let hit = matching::Hit::new(0.8333, true, true);
        assert_eq!(hit.to_bytes().len(), 4);
        let want = json!({"score": 0.833, "reasons": ["category", "criteria", "area", "price", "text"]});
        assert_eq!(extensions(&hit.to_bytes()), Some(want.clone()));
        assert_eq!(serde_json::to_value(hit).unwrap(), want);
        for (score, criteria, text) in [(0.0, false, false), (1.0, false, true), (0.25, true, false)] {
            let h = matching::Hit::new(score, criteria, text);
            assert_eq!(matching::Hit::from_bytes(&h.to_bytes()), Some(h));
        }
        let old = br#"{"score":0.5,"reasons":["category","area","price"]}"#;
        assert_eq!(extensions(old), Some(json!({"score": 0.5, "reasons": ["category", "area", "price"]})));
        assert_eq!(extensions(&[1, 0, 0]), None, "short");
        assert_eq!(extensions(&[1, 0, 0, 4]), None, "unknown flags");
    }

    /// Recording deliveries writes the intent's bookkeeping row, not its record: the
    /// stored record keeps its count, every read of the intent shows the row's, the next
    /// deliveries continue after the newest delivery time, and removing the intent
    /// removes the row (no dangling row for a restore to refuse).
    #[test]
    fn deliveries_update_the_bookkeeping_row_not_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let b = crate::base::test_base(dir.path());
        b.write(|w| w.put_intent(&crate::base::tests::active("int_a"), true)).unwrap();
        let hit = |score| matching::Hit::new(score, false, true);
        let now = b.now();
        let record = |hits: &[(&str, matching::Hit)]| {
            let mut rec: DeliveryTarget = b.store().read(|rx| rx.intent("int_a")).unwrap().unwrap();
            b.store().write(|tx| record_hits_in(&b, &mut tx.delivery_log()?, &mut rec, hits, now)).unwrap()
        };
        assert_eq!(record(&[("off_1", hit(1.0)), ("off_2", hit(0.5))]), 2);
        let raw: Value = b.store().read(|rx| rx.intent("int_a")).unwrap().unwrap();
        assert_eq!((raw["match_count"].as_u64(), raw["last_delivered"].as_i64()), (Some(0), Some(0)), "{raw}");
        let rec: IntentRecord = b.store().read(|rx| rx.intent("int_a")).unwrap().unwrap();
        assert_eq!((rec.match_count, rec.last_delivered), (2, micros(now) + 1));
        assert_eq!(rec.to_intent(now).extensions["matchCount"], 2);
        let listed: Vec<IntentRecord> = b.store().read(|rx| rx.all_intents()).unwrap();
        assert_eq!(listed.iter().map(|r| r.match_count).collect::<Vec<_>>(), [2]);
        // An import reads the active intent's target row: what the record gives.
        let (row, whole) = b
            .store()
            .write(|tx| {
                let log = tx.delivery_log()?;
                Ok::<_, crate::store::StoreError>((log.target::<DeliveryTarget>("int_a")?, log.intent("int_a")?))
            })
            .unwrap();
        assert_eq!(row, Some(rec.delivery_target()));
        assert_eq!(row, whole);

        // One known, one new: only the new one counts, and it is strictly later.
        assert_eq!(record(&[("off_2", hit(0.5)), ("off_3", hit(0.5))]), 1);
        let rec: IntentRecord = b.store().read(|rx| rx.intent("int_a")).unwrap().unwrap();
        assert_eq!((rec.match_count, rec.last_delivered), (3, micros(now) + 2));
        let times: Vec<i64> = b.store().read(|rx| rx.deliveries("int_a", 0, 10)).unwrap().iter().map(|r| r.0).collect();
        assert_eq!(times, [micros(now), micros(now) + 1, micros(now) + 2]);

        b.write(|w| w.remove_intent("int_a")).unwrap();
        assert_eq!(b.store().read(|rx| rx.dangling_refs(5)).unwrap(), []);
    }

    /// A delivery whose stored time lies outside what a time holds is an error that
    /// names it, in the tool's list and the results page's: never a delivery "at 1970".
    #[test]
    fn a_delivery_with_an_unreadable_time_is_an_error_naming_it_not_1970() {
        let dir = tempfile::tempdir().unwrap();
        let b = crate::base::test_base(dir.path());
        let good = micros(b.now());
        b.store()
            .write(|tx| -> Result<()> {
                tx.put_offer("off_a", &offer("off_a"), None)?;
                tx.put_offer("off_b", &offer("off_b"), None)?;
                tx.put_delivery("int_a", "off_a", good, b"{}")?;
                tx.put_delivery("int_b", "off_a", good, b"{}")?;
                tx.put_delivery("int_b", "off_b", i64::MAX, b"{}")?;
                Ok(())
            })
            .unwrap();
        let (listed, next) = list(&b, "int_a", None, 10).unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(next.as_deref(), Some("2026-12-01T10:00:00.000000Z"));

        let e = list(&b, "int_b", None, 10).unwrap_err();
        assert!(
            matches!(&e, ServiceError::Store(StoreError::Corrupt(k, m)) if k == "delivery int_b/off_b" && m.contains("out of range")),
            "{e}"
        );
        let e = b.store().read(|rx| with_offers(rx, "int_b", rx.latest_deliveries("int_b", 100)?)).unwrap_err();
        assert!(matches!(&e, ServiceError::Store(StoreError::Corrupt(k, _)) if k == "delivery int_b/off_b"), "{e}");
    }
}
