//! `isto admin migrate [--dry-run] [--json]`: brings a stopped holder's store to this
//! binary's schema version and runs the one-time start-up passes
//! ([`crate::state::PASSES`]), as `isto serve` does at start; `--dry-run` runs the
//! migrations in a transaction that is rolled back. A store written by a newer isto is
//! refused ([`crate::store::StoreError::TooNew`]).
//!
//! With `isto serve` running the server migrated the store at start: the command asks
//! the admin socket for its versions and exits 0. Socket op: `{"op":"migrate"}` →
//! `{"ok":true,"isto":"0.1.0","schema":4,"passesPending":["person_keys"]}`. A server too
//! old to report its passes leaves their state unknown (`"done": null`), never done.

use super::Request;
use crate::cli::out::{print_json_or, print_line};
use crate::config::Settings;
use crate::state::{Pass, PASSES};
use crate::store::{Migrated, MigrationInfo, StoreError, TableChange, ISTO_VERSION, SCHEMA_VERSION};
use anyhow::Context as _;
use serde::Serialize;
use serde_json::{json, Value};

/// How the spinners of the migration are drawn: what runs, and for how long.
const SPINNER: &str = "{spinner} {msg} {elapsed}";

/// The server's answer to `migrate`: its versions and the start-up passes its store does
/// not record as done (none, unless one failed at start).
pub(crate) fn answer(holder: &crate::state::AppState) -> Value {
    match crate::state::pending_passes(holder.base.store()) {
        Ok(p) => json!({"ok": true, "isto": ISTO_VERSION, "schema": SCHEMA_VERSION,
                        "passesPending": p.iter().map(|p| p.name).collect::<Vec<_>>()}),
        Err(e) => super::socket::internal_failure("reading the store", &e, false),
    }
}

/// Where the answer of `isto admin migrate` comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MigrateVia {
    /// A running `isto serve` (its admin socket): it migrated the store at start.
    Server,
    /// A running process holds the store but its admin socket does not answer.
    Held,
    /// The store file opened by this process.
    #[default]
    Store,
}

/// One start-up pass in a [`MigrateReport`].
///
/// JSON: `{"name": "person_keys", "description": "…", "done": false}` (`"done": null`:
/// unknown).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PassState {
    /// [`Pass::name`].
    pub name: String,
    /// [`Pass::description`].
    pub description: String,
    /// Whether the store records it as done (before the command in a dry run); `None`
    /// when unknown.
    pub done: Option<bool>,
}

/// The outcome of `isto admin migrate`, printed as JSON (camelCase members) with
/// `--json`; with a server, `storeSchema` is the server's and `pending` and `tables` are
/// empty.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrateReport {
    /// Where the answer comes from.
    pub via: MigrateVia,
    /// Whether this was a dry run (nothing changed).
    pub dry_run: bool,
    /// This binary's version.
    pub isto: String,
    /// This binary's schema version ([`SCHEMA_VERSION`]).
    pub binary_schema: u64,
    /// The store's schema version before the command (`None`: unknown or none).
    pub store_schema: Option<u64>,
    /// The isto version recorded as the store's last writer, when one is.
    pub writer: Option<String>,
    /// The migrations run (or that a dry run would run).
    pub pending: Vec<MigrationInfo>,
    /// Tables whose rows changed (or would change), before and after.
    pub tables: Vec<TableChange>,
    /// Whether the migrations were committed.
    pub migrated: bool,
    /// The start-up passes and whether each is done.
    pub passes: Vec<PassState>,
    /// The running server's versions (`via: server`).
    pub server: Option<Value>,
}

/// Runs `isto admin migrate` (see the module docs), printing the report (JSON with
/// `json_output`).
///
/// # Errors
/// No store; a store written by a newer isto; the sealing key missing (without
/// `dry_run`); a migration's or the socket's failure.
pub fn migrate_command(settings: &Settings, dry_run: bool, json_output: bool) -> anyhow::Result<MigrateReport> {
    let report = migrate(settings, dry_run, json_output)?;
    print_json_or(json_output, &report, || print_line(human(&report, &settings.store_name())))?;
    Ok(report)
}

fn base_report(via: MigrateVia, dry_run: bool) -> MigrateReport {
    MigrateReport { via, dry_run, isto: ISTO_VERSION.into(), binary_schema: SCHEMA_VERSION, ..Default::default() }
}

fn pass_states(done: impl Fn(&Pass) -> Option<bool>) -> Vec<PassState> {
    PASSES.iter().map(|p| PassState { name: p.name.into(), description: p.description.into(), done: done(p) }).collect()
}

fn migrate(settings: &Settings, dry_run: bool, json_output: bool) -> anyhow::Result<MigrateReport> {
    let sock = settings.admin_socket_path();
    if let super::Connect::Ready(mut client) = super::Client::connect(&sock)? {
        let a = super::ok_or_bail(client.request(&Request::Migrate)?)?;
        return Ok(server_report(&a, dry_run));
    }
    let path = settings.store_path();
    let on_redb = settings.store_postgres.is_none();
    if on_redb && !path.exists() {
        anyhow::bail!(
            "no store at {}: nothing to migrate (`isto admin init` or `isto serve` creates one at schema version \
             {SCHEMA_VERSION}); check --data-dir",
            path.display()
        );
    }
    if !dry_run {
        super::require_key(settings, "your backup")?;
    }
    let what = if dry_run { "rehearsing the migrations" } else { "migrating the store" };
    let bar = super::spinner(json_output, what, SPINNER);
    let m: Result<Migrated, StoreError> = crate::store::migrate_at(&settings.store_location(), !dry_run);
    bar.finish_and_clear();
    let m = match m {
        Ok(m) => m,
        Err(e) if e.is_already_open() => return Ok(base_report(MigrateVia::Held, dry_run)),
        Err(e) if e.is_permission_denied() => return Err(super::open_failed(&path, e)),
        Err(e) => return Err(e).with_context(|| format!("cannot migrate the store {}", settings.store_name())),
    };
    let mut r = base_report(MigrateVia::Store, dry_run);
    r.store_schema = m.stored;
    r.writer = m.writer.clone();
    r.pending = m.pending.clone();
    r.tables = m.tables.clone();
    r.migrated = m.committed;
    r.passes = pass_states(|p| Some(m.passes_done.iter().any(|n| n == p.name)));
    if !dry_run && r.passes.iter().any(|p| p.done != Some(true)) {
        let bar = super::spinner(json_output, "running the start-up passes", SPINNER);
        let ran = run_passes(settings);
        bar.finish_and_clear();
        let store = ran?;
        let pending = crate::state::pending_passes(&store)?;
        r.passes = pass_states(|p| Some(!pending.contains(p)));
    }
    Ok(r)
}

/// The report of a running server's answer `a` to `migrate`: its versions and start-up
/// passes (unknown without `passesPending`).
fn server_report(a: &Value, dry_run: bool) -> MigrateReport {
    let pending: Option<Vec<String>> = a.get("passesPending").and_then(|p| serde_json::from_value(p.clone()).ok());
    let mut r = base_report(MigrateVia::Server, dry_run);
    r.store_schema = a["schema"].as_u64();
    r.writer = a["isto"].as_str().map(str::to_owned);
    r.passes = pass_states(|p| pending.as_ref().map(|pending| !pending.iter().any(|n| n == p.name)));
    r.server = Some(json!({"isto": a["isto"], "schema": a["schema"]}));
    r
}

/// Opens the holder here, which runs the pending start-up passes, and returns its store.
fn run_passes(settings: &Settings) -> anyhow::Result<std::sync::Arc<crate::store::Store>> {
    let path = settings.store_path();
    let store = crate::store::Store::open_at(&settings.store_location()).map_err(|e| super::open_failed(&path, e))?;
    let (keys, _) = crate::crypto::KeyRing::load_or_create(&settings.key_path())?;
    let holder =
        crate::state::AppState::new(settings.clone(), store, keys, std::sync::Arc::new(crate::clock::SystemClock));
    Ok(holder.base.store().clone())
}

/// The human report.
pub fn human(r: &MigrateReport, store_path: &str) -> String {
    let mut out = String::new();
    let writer = |w: &Option<String>| w.as_deref().map(|w| format!(" (last written by isto {w})")).unwrap_or_default();
    match r.via {
        MigrateVia::Server => {
            out.push_str(&format!(
                "isto serve is running (isto {}, schema version {}) and migrated the store at start; nothing to do.\n",
                r.writer.as_deref().unwrap_or("?"),
                r.store_schema.map_or("?".into(), |v| v.to_string())
            ));
            out.push_str(&format!("this binary: isto {}, schema version {}", r.isto, r.binary_schema));
            if r.store_schema.is_some_and(|v| v != r.binary_schema) || r.writer.as_deref() != Some(&r.isto) {
                out.push_str(
                    "\nthe running server is another version than this binary: to upgrade, stop it, back up, \
                     run `isto admin migrate` with the new binary, then start it",
                );
            }
            let pending: Vec<&str> =
                r.passes.iter().filter(|p| p.done == Some(false)).map(|p| p.name.as_str()).collect();
            if r.passes.iter().any(|p| p.done.is_none()) {
                out.push_str("\nstart-up passes: unknown (the running server does not report them; see its log)");
            } else if !pending.is_empty() {
                out.push_str(&format!(
                    "\nstart-up passes not recorded as done (they run at the next start; see the server log): {}",
                    pending.join(", ")
                ));
            }
            return out;
        }
        MigrateVia::Held => {
            return format!(
                "the store {store_path} is held by a running process (isto serve, whose admin socket does not \
                 answer): it migrated the store at its start; nothing to do.\nthis binary: isto {}, schema version {}",
                r.isto, r.binary_schema
            );
        }
        MigrateVia::Store => {}
    }
    out.push_str(&format!("store: {store_path}\n"));
    out.push_str(&format!(
        "store schema version: {}{}\n",
        r.store_schema.map_or("none (initialised now)".into(), |v| v.to_string()),
        writer(&r.writer)
    ));
    out.push_str(&format!("this binary: isto {}, schema version {}\n", r.isto, r.binary_schema));
    out.push_str(if r.pending.is_empty() { "pending migrations: none\n" } else { "pending migrations:\n" });
    for m in &r.pending {
        out.push_str(&format!("  {:>3}  {}: {}\n", m.number, m.name, m.description));
    }
    let head = if r.dry_run { "would change (dry run, rolled back):" } else { "changed:" };
    out.push_str(&format!("{head}{}\n", if r.tables.is_empty() { " no table" } else { "" }));
    for t in &r.tables {
        let before = t.before.map_or("(new table)".into(), |n| n.to_string());
        out.push_str(&format!("  {:<16} {before:>12} -> {} rows\n", t.table, t.after));
    }
    let pending: Vec<&PassState> = r.passes.iter().filter(|p| p.done != Some(true)).collect();
    out.push_str(match (pending.is_empty(), r.dry_run) {
        (true, _) => "start-up passes: all done\n",
        (false, true) => "start-up passes to run (not rehearsed):\n",
        (false, false) => "start-up passes that failed:\n",
    });
    for p in pending {
        out.push_str(&format!("       {}: {}\n", p.name, p.description));
    }
    if r.dry_run {
        out.push_str("dry run: nothing was changed; run `isto admin migrate` to apply");
    } else if r.pending.is_empty() {
        out.push_str(&format!("the store is at schema version {}; start `isto serve`", r.binary_schema));
    } else {
        out.push_str(&format!("migrated to schema version {}; start `isto serve`", r.binary_schema));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_older_server_without_passes_pending_leaves_the_passes_unknown_not_done() {
        let old = json!({"ok": true, "isto": "0.0.9", "schema": 4});
        let r = server_report(&old, false);
        assert_eq!((r.via, r.store_schema, r.writer.as_deref()), (MigrateVia::Server, Some(4), Some("0.0.9")));
        assert_eq!(r.passes.len(), PASSES.len());
        assert!(r.passes.iter().all(|p| p.done.is_none()), "{:?}", r.passes);
        assert!(serde_json::to_value(&r).unwrap()["passes"].as_array().unwrap().iter().all(|p| p["done"].is_null()));
        let text = human(&r, "isto.redb");
        assert!(
            text.ends_with("\nstart-up passes: unknown (the running server does not report them; see its log)"),
            "{text}"
        );
        // A current server names what is pending; the rest is done.
        let first = PASSES[0].name;
        let now = json!({"ok": true, "isto": ISTO_VERSION, "schema": SCHEMA_VERSION, "passesPending": [first]});
        let r = server_report(&now, false);
        assert!(r.passes.iter().all(|p| p.done == Some(p.name != first)), "{:?}", r.passes);
        let text = human(&r, "isto.redb");
        assert!(text.ends_with(&format!("(they run at the next start; see the server log): {first}")), "{text}");
        let none = json!({"ok": true, "isto": ISTO_VERSION, "schema": SCHEMA_VERSION, "passesPending": []});
        assert!(server_report(&none, true).passes.iter().all(|p| p.done == Some(true)));
    }
}
