//! `isto admin purge [--dry-run] [--json]`: [`crate::intents::Intents::purge`], which
//! `isto serve` runs every minute, and the counts per kind.
//!
//! Socket op: `{"op":"purge","dryRun":bool}` → `{"ok":true,"dryRun":bool,"purged":Purged}`
//! (see [`Purged`]).

use super::Request;
use crate::cli::out::{print_json_or, print_line};
use crate::config::Settings;
use crate::intents::Purged;
use crate::state::AppState;
use serde_json::{json, Value};

/// Runs the purge on `holder` (failures as [`super::socket::internal_failure`]).
pub(crate) fn answer(holder: &AppState, dry_run: bool, detail: bool) -> Value {
    match holder.intents.purge(dry_run) {
        Ok(p) => json!({"ok": true, "dryRun": dry_run, "purged": p}),
        Err(e) => super::socket::internal_failure("purge", &e, detail),
    }
}

/// The human report: one line per kind, then the total.
pub fn report(p: &Purged, dry_run: bool) -> String {
    let (o, a) = (&p.oauth, &p.accounts);
    let rows = [
        ("lapsed drafts", p.drafts),
        ("their codes and consent links", p.draft_tokens),
        ("unused OAuth clients", o.clients),
        ("expired OAuth codes", o.codes),
        ("expired OAuth tokens", o.tokens),
        ("expired OAuth authorizations", o.families),
        ("expired sign-in links", a.sign_in_links),
        ("expired sessions", a.sessions),
        ("stale sign-in throttles", a.throttles),
        ("lapsed marks of known people", p.confirmed_marks),
    ];
    let head = if dry_run { "would remove (dry run, nothing removed):" } else { "removed:" };
    let mut out = head.to_owned();
    for (what, n) in rows {
        out.push_str(&format!("\n  {n:>8}  {what}"));
    }
    out.push_str(&format!("\n  {:>8}  records in all", p.total()));
    out
}

/// Runs `isto admin purge`, printing the counts (JSON with `json`: the [`Purged`] object).
///
/// # Errors
/// No store; the server's or the store's failure; the store held by another process.
pub fn purge_command(settings: &Settings, dry_run: bool, json_output: bool) -> anyhow::Result<Purged> {
    let req = Request::Purge { dry_run };
    let (answer, _) = super::via_server_or_store(settings, &req, |holder, _| answer(holder, dry_run, true))?;
    let purged: Purged = super::answer_field(answer, "purged")?;
    print_json_or(json_output, &purged, || print_line(report(&purged, dry_run)))?;
    Ok(purged)
}
