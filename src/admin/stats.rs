//! `isto admin stats [--json]`: counts of what the holder keeps, and nothing else — no
//! statement, address, code, token, name or limit, only numbers under fixed names and
//! the category and status keys. One read transaction that scans every intent and offer.
//!
//! Socket op: `{"op":"stats"}` → `{"ok":true,"stats":Stats}` (see [`Stats`]).

use super::Request;
use crate::cli::out::{print_json_or, print_line};
use crate::config::Settings;
use crate::records::{IntentRecord, OfferRecord, SellerRecord};
use crate::state::AppState;
use crate::store::{Ns, Reads as _, StoreError};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The counts, as `--json` prints them:
///
/// ```json
/// {"at": "2026-12-02T10:00:00Z",
///  "intents": {"total": 3, "byStatus": {"active": 2, "withdrawn": 1},
///              "byCategory": {"vehicles": {"active": 2, "withdrawn": 1}}},
///  "sellers": {"total": 4, "disabled": 1},
///  "offers": {"total": 120, "active": 118, "byCategory": {"vehicles": {"active": 118, "withdrawn": 2}}},
///  "deliveries": 40,
///  "outbox": {"depth": 0, "oldestAgeSecs": 0, "dropped": 0},
///  "accounts": 5}
/// ```
///
/// Statuses are the effective ones at `at` (PROTOCOL.md §2: an active intent past its
/// validUntil counts as expired); a status or category with no intent is left out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    /// When the counts were taken, RFC 3339.
    pub at: String,
    /// Intents.
    pub intents: IntentCounts,
    /// Sellers (catalogue feeds and registered sellers).
    pub sellers: SellerCounts,
    /// Offers (catalogue and replies).
    pub offers: OfferCounts,
    /// Deliveries recorded (offer matched to an intent).
    pub deliveries: u64,
    /// The mail queue.
    pub outbox: OutboxCounts,
    /// People's accounts (buyers and sellers).
    pub accounts: u64,
}

/// Intents by status and by category and status.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IntentCounts {
    /// Every intent stored.
    pub total: u64,
    /// By effective status (`awaiting_consent`, `active`, …).
    pub by_status: BTreeMap<String, u64>,
    /// By category key, then by effective status.
    pub by_category: BTreeMap<String, BTreeMap<String, u64>>,
}

/// Sellers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SellerCounts {
    /// Every seller stored.
    pub total: u64,
    /// Those disabled (`isto admin seller disable`).
    pub disabled: u64,
}

/// Offers by category.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OfferCounts {
    /// Every offer stored.
    pub total: u64,
    /// Those not withdrawn.
    pub active: u64,
    /// By category key: `{"active": n, "withdrawn": n}`.
    pub by_category: BTreeMap<String, BTreeMap<String, u64>>,
}

/// The outbox.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutboxCounts {
    /// Messages queued.
    pub depth: u64,
    /// Age of the oldest, seconds (0 when none).
    pub oldest_age_secs: u64,
    /// Messages given up on since the store was made.
    pub dropped: u64,
}

/// Counts `holder`'s store (blocking).
///
/// # Errors
/// Storage errors; a record that does not decode.
pub fn collect(holder: &AppState) -> Result<Stats, StoreError> {
    let base = &holder.base;
    let now = base.clock().now();
    let mut stats = Stats { at: crate::clock::rfc3339(now), ..Stats::default() };
    base.store().read(|rx| -> Result<(), StoreError> {
        let counts = rx.counts()?;
        stats.deliveries = counts.deliveries;
        rx.each_intent(|r: IntentRecord| {
            let status = r.effective_status(now).as_str().to_owned();
            stats.intents.total += 1;
            *stats.intents.by_status.entry(status.clone()).or_default() += 1;
            *stats.intents.by_category.entry(r.content.category).or_default().entry(status).or_default() += 1;
        })?;
        rx.each_offer(|o: OfferRecord| {
            stats.offers.total += 1;
            stats.offers.active += u64::from(o.active);
            let state = if o.active { "active" } else { "withdrawn" };
            *stats.offers.by_category.entry(o.offer.category).or_default().entry(state.to_owned()).or_default() += 1;
        })?;
        let sellers: Vec<SellerRecord> = rx.all_sellers()?;
        stats.sellers.total = sellers.len() as u64;
        stats.sellers.disabled = sellers.iter().filter(|s| s.disabled).count() as u64;
        stats.accounts = rx.count_records(Ns::Account)?;
        Ok(())
    })?;
    let backlog = base.outbox().backlog()?;
    stats.outbox =
        OutboxCounts { depth: backlog.jobs, oldest_age_secs: backlog.oldest_age_secs, dropped: backlog.dropped };
    Ok(stats)
}

/// Answers the op on `holder` (failures as [`super::socket::internal_failure`]).
pub(crate) fn answer(holder: &AppState, detail: bool) -> Value {
    match collect(holder) {
        Ok(s) => json!({"ok": true, "stats": s}),
        Err(e) => super::socket::internal_failure("stats", &e, detail),
    }
}

/// The human report: one line per count, its parts indented under it.
pub fn report(s: &Stats) -> String {
    fn line(out: &mut Vec<String>, indent: usize, what: &str, n: u64) {
        out.push(format!("{:<40}{n:>10}", format!("{:indent$}{what}", "")));
    }
    fn by_category(out: &mut Vec<String>, map: &BTreeMap<String, BTreeMap<String, u64>>) {
        for (category, by) in map {
            let parts: Vec<String> = by.iter().map(|(k, v)| format!("{k} {v}")).collect();
            out.push(format!("    {category}: {}", parts.join(", ")));
        }
    }
    let mut out = vec![format!("holder counts at {}", s.at)];
    line(&mut out, 0, "intents", s.intents.total);
    for (status, n) in &s.intents.by_status {
        line(&mut out, 2, status, *n);
    }
    by_category(&mut out, &s.intents.by_category);
    line(&mut out, 0, "offers", s.offers.total);
    line(&mut out, 2, "active", s.offers.active);
    by_category(&mut out, &s.offers.by_category);
    line(&mut out, 0, "sellers", s.sellers.total);
    line(&mut out, 2, "disabled", s.sellers.disabled);
    line(&mut out, 0, "deliveries", s.deliveries);
    line(&mut out, 0, "e-mails queued", s.outbox.depth);
    line(&mut out, 2, "seconds the oldest has waited", s.outbox.oldest_age_secs);
    line(&mut out, 0, "e-mails given up on", s.outbox.dropped);
    line(&mut out, 0, "accounts", s.accounts);
    out.join("\n")
}

/// Runs `isto admin stats`, printing [`report`] (JSON with `json_output`), a spinner on
/// a terminal meanwhile.
///
/// # Errors
/// No store; the server's or the store's failure; the store held by another process.
pub fn stats_command(settings: &Settings, json_output: bool) -> anyhow::Result<Stats> {
    let spinner = super::spinner(json_output, "counting", "{spinner} {msg}");
    let answered = super::via_server_or_store(settings, &Request::Stats, |holder, _| answer(holder, true));
    spinner.finish_and_clear();
    let (answer, _) = answered?;
    let stats: Stats = super::answer_field(answer, "stats")?;
    print_json_or(json_output, &stats, || print_line(report(&stats)))?;
    Ok(stats)
}
