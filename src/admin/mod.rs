//! Admin commands that work whether or not `isto serve` runs.
//!
//! The store allows one process per file. With a server running, commands go through its
//! admin socket ([`serve_socket`]: `DATA_DIR/admin.sock`, mode 0600, peers with the
//! server's uid or root, checked with `SO_PEERCRED`); without one they open the store
//! directly. A socket file that nothing answers is stale and ignored; a store held by
//! another process while no socket answers means `isto serve` runs without its socket,
//! and the command says so. `init` needs no server.
//!
//! The socket speaks newline-delimited JSON, one typed [`Request`] (tagged by `"op"`,
//! the names of every earlier version) per line, one answer line per request:
//!
//! - `{"op":"ping"}` → `{"ok":true,"version":"0.1.0"}`
//! - `{"op":"import","rows":[<row>, ...]}` → `{"ok":true,"counts":{"created":n,
//!   "updated":n,"delivered":n}}`. Rows are JSON as [`crate::catalogue::parse_json_row`]
//!   accepts them (CSV files are turned into such rows by the client), at most
//!   [`MAX_ROWS`] per request. The server validates every row again; one bad row refuses
//!   the batch (`{"ok":false,"error":"rows[3]: price.currency is required"}`) and nothing
//!   of it is stored. A batch is one transaction.
//! - `seller_*`, `purge`, `migrate`, `stats`, `backup` (many answer lines) and `keys_*`:
//!   the commands of the same names, each op's shapes in its module's docs (`restore`
//!   and `keys export` never use the socket).
//! - anything else → `{"ok":false,"error":"..."}`: an unknown op is named, with the
//!   known ones.

mod backup;
mod command;
mod keys;
mod migrate;
mod purge;
mod request;
mod sellers;
mod socket;
mod stats;

pub use backup::{backup, keys_export, restore, verify as verify_backup};
pub use command::run as command;
pub use keys::{keys_retire, keys_rotate, keys_status, StatusReport};
pub use migrate::migrate_command;
pub use purge::{purge_command, report as purge_report};
pub use request::Request;
pub use sellers::{seller_command, table as seller_table};
pub use socket::{serve_socket, AdminSocket, MAX_ROWS, VERSION};
pub use stats::{collect as collect_stats, report as stats_report, stats_command, Stats};

use crate::catalogue::{self, parse_json_row, RowError, RowReader};
use crate::cli::out::{print_json_or, print_line};
use crate::clock::SystemClock;
use crate::config::Settings;
use crate::crypto::KeyRing;
use crate::records::{ImportCounts, OfferInput};
use crate::state::AppState;
use crate::store::{Store, StoreError};
use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use serde_json::Value;
use socket::{Client, Connect};
use std::io::IsTerminal as _;
use std::path::Path;
use std::sync::Arc;

/// Rows per import batch (one transaction, one socket request). Intent writes wait
/// behind a batch's transaction: about 35 ms for 500 rows against 20 000 standing intents,
/// 60 ms for 1 000; per row, 1 000 cost 8 % less than 500 (the pages of the delivery
/// rows each batch writes are shared by more rows; docs/choices.md "Import batches of
/// 1 000 rows").
pub const BATCH_ROWS: usize = 1000;
/// Bad rows printed to stderr; the rest are counted.
pub const SHOWN_ERRORS: usize = 50;
/// Bad rows kept in [`ImportReport::errors`]; the rest are counted in `rejected`.
pub const REPORTED_ERRORS: usize = 1000;

/// How an import reached the store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Route {
    /// Through the running server's admin socket.
    Socket,
    /// The store opened by this process (the default).
    #[default]
    Direct,
}

/// The outcome of `isto admin import`, printed as JSON with `--json`.
///
/// Shape: `{"rows": 5, "imported": {"created": 3, "updated": 0, "delivered": 1},
/// "rejected": 2, "errors": [{"line": 4, "message": "price.currency is required"}],
/// "via": "direct"}`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ImportReport {
    /// Data rows read (blank lines not counted).
    pub rows: u64,
    /// What the store did with the good rows.
    pub imported: ImportCounts,
    /// Rows refused by validation.
    pub rejected: u64,
    /// The first [`REPORTED_ERRORS`] refusals, in file order.
    pub errors: Vec<RowError>,
    /// Socket or direct.
    pub via: Route,
    /// With `--full`: offers withdrawn because the feed no longer has them; `None`
    /// without `--full` or when rows were rejected (a bad row never takes its offer down).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub withdrawn: Option<u64>,
}

/// Exit status of `isto admin offers import` when some rows were rejected (the good
/// rows are stored).
pub const IMPORT_REJECTED: u8 = 1;
/// Exit status of `isto admin offers import` when the import did not run or stopped (rows
/// of batches stored before a stop stay stored); clap's usage errors exit 2 too.
pub const IMPORT_FAILED: u8 = 2;

impl ImportReport {
    /// The exit status: [`IMPORT_REJECTED`] when any row was rejected, else 0.
    pub fn exit_code(&self) -> u8 {
        if self.rejected > 0 {
            IMPORT_REJECTED
        } else {
            0
        }
    }

    /// The human summary line.
    pub fn summary(&self) -> String {
        let c = &self.imported;
        let mut line = format!(
            "imported {} offers ({} new, {} updated), {} deliveries to standing intents; {} rows rejected",
            c.created + c.updated,
            c.created,
            c.updated,
            c.delivered,
            self.rejected
        );
        if let Some(w) = self.withdrawn {
            line.push_str(&format!("; {w} offers no longer in the feed withdrawn"));
        }
        line
    }
}

/// Where good rows go: the server's socket or the store opened here.
enum To {
    Socket(Client),
    Direct(Box<AppState>),
}

/// The rows of the batch being filled (each as read and as validated) and where they go.
struct Sink {
    to: To,
    rows: Vec<(Value, OfferInput)>,
    run: Option<String>,
}

impl Sink {
    fn open(settings: &Settings, run: Option<String>) -> anyhow::Result<Self> {
        let to = match Client::connect(&settings.admin_socket_path())? {
            Connect::Ready(client) => To::Socket(client),
            other => To::Direct(Box::new(open_holder(settings, &other)?)),
        };
        Ok(Self { to, rows: Vec::new(), run })
    }

    /// Ends a full-feed run: withdraws what the feed no longer has.
    fn finish_full(&mut self) -> anyhow::Result<u64> {
        match (&mut self.to, &self.run) {
            (To::Socket(client), Some(run)) => client.finish_full(run),
            (To::Direct(holder), Some(run)) => Ok(holder.catalogue.withdraw_vanished(run)?.len() as u64),
            (_, None) => Ok(0),
        }
    }

    /// After a direct import: brings the data directory's offer index in step with the
    /// store, so that the next `isto serve` starts without rebuilding it. A failure is
    /// only logged: the server rebuilds a lagging index itself.
    fn catch_up_index(&self) {
        if let To::Direct(holder) = &self.to {
            match holder.catalogue.offer_index() {
                Ok(i) => tracing::debug!(offers = i.num_docs(), "offer index in step with the store"),
                Err(e) => tracing::warn!(error = %e, "offer index not brought in step; isto serve rebuilds it"),
            }
        }
    }

    fn flush(&mut self, total: &mut ImportCounts) -> anyhow::Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let (values, inputs): (Vec<Value>, Vec<OfferInput>) = std::mem::take(&mut self.rows).into_iter().unzip();
        let counts = match &mut self.to {
            To::Socket(client) => client.import(&values, self.run.as_deref())?,
            To::Direct(holder) => holder.catalogue.import_offers_run(inputs, self.run.as_deref())?,
        };
        total.created += counts.created;
        total.updated += counts.updated;
        total.delivered += counts.delivered;
        Ok(())
    }
}

/// The error of a store that does not open (not held by another process), naming the
/// path and, when permission was denied, the user to run as.
pub(crate) fn open_failed(path: &Path, e: StoreError) -> anyhow::Error {
    let hint = if e.is_permission_denied() {
        "; run as the data directory's owner (e.g. `sudo -u isto isto admin …`)"
    } else {
        ""
    };
    anyhow::anyhow!("cannot open the store {}: {e}{hint}", path.display())
}

/// Opens the store in this process, for a command that found no server on the admin
/// socket.
///
/// # Errors
/// Another process holds the store (the message names the likely holders and what to
/// do); any other failure as [`open_failed`].
fn open_offline(settings: &Settings) -> anyhow::Result<Store> {
    let path = settings.store_path();
    Store::open_at(&settings.store_location()).map_err(|e| {
        if !e.is_already_open() {
            return open_failed(&path, e);
        }
        anyhow::anyhow!(
            "the store {} is held by another isto process: another admin command working without a server (a \
             backup, a key rotation, an import…), or `isto serve` without a working admin socket at {}. Wait for \
             that command to finish, or stop that process, then run this command again",
            path.display(),
            settings.admin_socket_path().display()
        )
    })
}

/// What to do when the store to work on is missing.
const NO_STORE: &str = "run `isto admin init` (or start `isto serve`) first";

/// Checks that the redb store file exists (a PostgreSQL store is the database's).
///
/// # Errors
/// `no store at PATH: {what}`.
fn require_store(settings: &Settings, what: &str) -> anyhow::Result<()> {
    if settings.store_postgres.is_none() && !settings.store_path().exists() {
        anyhow::bail!("no store at {}: {what}", settings.store_path().display());
    }
    Ok(())
}

/// Checks that the sealing key file exists.
///
/// # Errors
/// `the sealing key PATH is missing: restore it from {from} …`.
fn require_key(settings: &Settings, from: &str) -> anyhow::Result<()> {
    let key_path = settings.key_path();
    if !key_path.exists() {
        anyhow::bail!(
            "the sealing key {} is missing: restore it from {from} (without it sealed data cannot be read)",
            key_path.display()
        );
    }
    Ok(())
}

/// Sends `req` to the running server's admin socket, or, when no server runs, opens the
/// store here and answers it with `local` (the same function the socket runs). Returns
/// the answer and whether it went through the socket.
///
/// # Errors
/// No store yet, the socket's failure, or the store held by another process.
fn via_server_or_store(
    settings: &Settings,
    req: &Request,
    local: impl FnOnce(&AppState, &Request) -> Value,
) -> anyhow::Result<(Value, bool)> {
    match Client::connect(&settings.admin_socket_path())? {
        Connect::Ready(mut client) => Ok((client.request(req)?, true)),
        other => {
            require_store(settings, NO_STORE)?;
            let holder = open_holder(settings, &other)?;
            Ok((local(&holder, req), false))
        }
    }
}

/// `answer` itself when its `"ok"` is true.
///
/// # Errors
/// Its `"error"` as the message ("unexpected answer" when it has none).
fn ok_or_bail(answer: Value) -> anyhow::Result<Value> {
    if answer.get("ok") == Some(&Value::Bool(true)) {
        return Ok(answer);
    }
    anyhow::bail!("{}", answer.get("error").and_then(Value::as_str).unwrap_or("unexpected answer"))
}

/// The member `name` of an `ok` answer.
///
/// # Errors
/// As [`ok_or_bail`]; a member not of the shape of `T`.
fn answer_field<T: serde::de::DeserializeOwned>(answer: Value, name: &str) -> anyhow::Result<T> {
    let mut answer = ok_or_bail(answer)?;
    Ok(serde_json::from_value(answer[name].take())?)
}

/// Opens store and keys in this process (no server answers), creating a new data directory.
fn open_holder(settings: &Settings, socket: &Connect) -> anyhow::Result<AppState> {
    let store_path = settings.store_path();
    let key_path = settings.key_path();
    let postgres = settings.store_postgres.is_some();
    // On PostgreSQL the store is the database: the data directory is new without its key.
    let fresh = if postgres { !key_path.exists() } else { !store_path.exists() };
    if fresh {
        eprintln!("note: no store at {}: creating a new data directory", settings.store_name());
        std::fs::create_dir_all(&settings.data_dir)
            .with_context(|| format!("cannot create the data directory {}", settings.data_dir.display()))?;
        crate::crypto::set_mode(&settings.data_dir, 0o700)?;
    } else {
        require_key(settings, "your backup")?;
    }
    let store = match Store::open_at(&settings.store_location()) {
        Ok(s) => s,
        Err(e) if e.is_already_open() => {
            let sock = settings.admin_socket_path();
            let why = match socket {
                Connect::Absent => format!("{} is missing", sock.display()),
                _ => format!("{} does not answer", sock.display()),
            };
            anyhow::bail!(
                "the store {} is in use by another process: `isto serve` is running without its admin socket ({why}). \
                 Restart `isto serve` so that it creates the socket again, or stop it, then import again",
                store_path.display()
            );
        }
        Err(e) => return Err(open_failed(&store_path, e)),
    };
    if !postgres {
        crate::crypto::set_mode(&store_path, 0o600)?;
    }
    let (keys, _) = KeyRing::load_or_create(&key_path)?;
    // As `isto serve` does: a ring that is not this store's refuses the command before it
    // writes; and the store records its keys, so the next start reads one row instead of
    // counting every sealed value.
    crate::state::check_keys(&store, &keys, &key_path).map_err(|e| anyhow::anyhow!("{e}; nothing was done"))?;
    let index = Some(settings.data_dir.join("index"));
    Ok(AppState::with_index_dir(settings.clone(), store, keys, Arc::new(SystemClock), index))
}

/// A progress bar of `total` steps (`None`: a spinner) on stderr drawn with the indicatif
/// `template`, hidden with `json_output` or when stderr is not a terminal.
fn progress(json_output: bool, total: Option<u64>, template: &str) -> ProgressBar {
    if json_output || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}

/// A spinner with `message` on stderr while a command waits, drawn with `template`
/// (hidden as [`progress`]).
fn spinner(json_output: bool, message: &'static str, template: &str) -> ProgressBar {
    let bar = progress(json_output, None, template);
    bar.set_message(message);
    bar.enable_steady_tick(std::time::Duration::from_millis(100));
    bar
}

/// Imports a catalogue file (JSON Lines or CSV, see [`crate::catalogue`]) in batches of
/// [`BATCH_ROWS`], through the admin socket or into the store opened here. Every row is
/// validated here first; each bad row is printed to stderr as `line N: message` (the
/// first [`SHOWN_ERRORS`]), good rows are stored. Prints a progress bar on a terminal,
/// then [`ImportReport::summary`] (or, with `json_output`, the report as JSON). With
/// `full` the file is the whole feed of the sellers it names: afterwards their active
/// offers that the file did not contain are withdrawn — only when no row was rejected.
///
/// # Errors
/// The file cannot be opened or has a bad CSV header (nothing imported); the store held
/// by another process; a read error or a refused batch mid-file (earlier batches stay
/// stored; the message says how many).
pub fn import(settings: &Settings, file: &Path, full: bool, json_output: bool) -> anyhow::Result<ImportReport> {
    let currencies: Vec<String> = settings.rates.keys().cloned().collect();
    let mut reader = catalogue::read_file(file, &currencies)?;
    let run = full.then(|| crate::crypto::new_id("run_"));
    let mut sink = Sink::open(settings, run)?;
    let bar =
        progress(json_output, Some(reader.total_bytes()), "{wide_bar} {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}");
    let via = if matches!(sink.to, To::Socket(_)) { Route::Socket } else { Route::Direct };
    let mut report = ImportReport { via, ..ImportReport::default() };
    let outcome = import_rows(&mut reader, &mut sink, &currencies, &bar, json_output, &mut report);
    bar.finish_and_clear();
    let mut outcome = outcome.and_then(|()| reader.finish().map_err(anyhow::Error::from));
    if full && outcome.is_ok() {
        if report.rejected == 0 {
            outcome = sink.finish_full().map(|n| report.withdrawn = Some(n));
        } else if !json_output {
            eprintln!(
                "--full: {} rows were rejected, so no offer was withdrawn; fix the rows and import again",
                report.rejected
            );
        }
    }
    if let Err(e) = outcome {
        let stored = report.imported.created + report.imported.updated;
        return Err(
            e.context(format!("import of {} stopped; {stored} offers of earlier batches are stored", file.display()))
        );
    }
    sink.catch_up_index();
    tracing::info!(
        rows = report.rows,
        created = report.imported.created,
        updated = report.imported.updated,
        delivered = report.imported.delivered,
        rejected = report.rejected,
        via = ?report.via,
        "catalogue import finished"
    );
    print_json_or(json_output, &report, || {
        if report.rejected > SHOWN_ERRORS as u64 {
            eprintln!("… and {} more rows rejected", report.rejected - SHOWN_ERRORS as u64);
        }
        print_line(report.summary())
    })?;
    Ok(report)
}

fn import_rows(
    reader: &mut RowReader,
    sink: &mut Sink,
    currencies: &[String],
    bar: &ProgressBar,
    json_output: bool,
    report: &mut ImportReport,
) -> anyhow::Result<()> {
    while let Some(item) = reader.next_raw() {
        report.rows += 1;
        let checked = item.and_then(|raw| match parse_json_row(&raw.value, currencies) {
            Ok(input) => Ok((raw.value, input)),
            Err(e) => Err(RowError { line: raw.line, message: e.0 }),
        });
        match checked {
            Ok((value, input)) => {
                sink.rows.push((value, input));
                if sink.rows.len() >= BATCH_ROWS {
                    sink.flush(&mut report.imported)?;
                }
            }
            Err(e) => {
                report.rejected += 1;
                if !json_output && report.rejected <= SHOWN_ERRORS as u64 {
                    bar.suspend(|| eprintln!("{e}"));
                }
                if report.errors.len() < REPORTED_ERRORS {
                    report.errors.push(e);
                }
            }
        }
        bar.set_position(reader.bytes_read());
    }
    sink.flush(&mut report.imported)
}

/// What `isto admin init` did, printed as JSON (camelCase members) with `--json`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitReport {
    /// The data directory.
    pub data_dir: String,
    /// Whether this run created it.
    pub data_dir_created: bool,
    /// The sealing key file.
    pub key_path: String,
    /// Whether this run created the key (back it up).
    pub key_created: bool,
    /// The store file.
    pub store: String,
    /// `created`, `exists` (and opens) or `in_use` (by a running `isto serve`).
    pub store_state: &'static str,
    /// The `--config` path, when given.
    pub config: Option<String>,
    /// Whether the skeleton was written there (false: it existed).
    pub config_written: bool,
}

/// `isto admin init`: creates the data directory (0700 when created here), the sealing
/// key, the store, and — when `config_path` is given and no file is there — the config
/// skeleton ([`crate::config::SKELETON`]). Never overwrites; safe to run again. Prints
/// each step, or with `json_output` only the [`InitReport`].
///
/// # Errors
/// I/O errors naming the path; a store written by a newer isto.
pub fn init(settings: &Settings, config_path: Option<&Path>, json_output: bool) -> anyhow::Result<InitReport> {
    let say = |line: String| if json_output { Ok(()) } else { print_line(line) };
    let dir = &settings.data_dir;
    let data_dir_created = !dir.exists();
    if data_dir_created {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create the data directory {}", dir.display()))?;
        crate::crypto::set_mode(dir, 0o700).with_context(|| format!("cannot restrict {}", dir.display()))?;
        say(format!("created the data directory {}", dir.display()))?;
    } else {
        say(format!("data directory {} exists", dir.display()))?;
    }
    let key_path = settings.key_path();
    let (_, key_created) = KeyRing::load_or_create(&key_path)?;
    if key_created {
        say(format!("created the sealing key {}", key_path.display()))?;
    } else {
        say(format!("the sealing key {} exists", key_path.display()))?;
    }
    say("  back it up and keep the copy safe: without it, contact data and hidden limits in the store cannot be read"
        .to_owned())?;
    let store_path = settings.store_path();
    let existed = store_path.exists();
    let store_state = match Store::open_at(&settings.store_location()) {
        Ok(_) if settings.store_postgres.is_some() => {
            say(format!("the store {} opens", settings.store_name()))?;
            "exists"
        }
        Ok(_) if existed => {
            say(format!("the store {} exists and opens", store_path.display()))?;
            "exists"
        }
        Ok(_) => {
            crate::crypto::set_mode(&store_path, 0o600)?;
            say(format!("created the store {}", store_path.display()))?;
            "created"
        }
        Err(e) if e.is_already_open() => {
            say(format!("the store {} is in use by a running `isto serve`", store_path.display()))?;
            "in_use"
        }
        Err(e) => return Err(open_failed(&store_path, e)),
    };
    let mut config_written = false;
    if let Some(p) = config_path {
        if p.exists() {
            say(format!("the config file {} exists; left unchanged", p.display()))?;
        } else {
            if let Some(parent) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
            }
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(p)
                .with_context(|| format!("cannot write {}", p.display()))?;
            std::io::Write::write_all(&mut f, crate::config::SKELETON.as_bytes())
                .with_context(|| format!("cannot write {}", p.display()))?;
            config_written = true;
            say(format!("wrote a commented config skeleton to {}", p.display()))?;
        }
    }
    let report = InitReport {
        data_dir: dir.display().to_string(),
        data_dir_created,
        key_path: key_path.display().to_string(),
        key_created,
        store: store_path.display().to_string(),
        store_state,
        config: config_path.map(|p| p.display().to_string()),
        config_written,
    };
    if json_output {
        print_line(serde_json::to_string(&report)?)?;
    }
    Ok(report)
}

/// `isto admin registry-entry`: prints this holder's entry for the Isto Intents
/// Registry ([`crate::metadata::registry_entry`]), with the `isto check --json` report in
/// the file `check_result` when given; indented, or on one line with `json_output`.
///
/// # Errors
/// The check result file unreadable or not a JSON object.
pub fn registry_entry(settings: &Settings, check_result: Option<&Path>, json_output: bool) -> anyhow::Result<Value> {
    let check = check_result.map(|p| read_check_report(p, &settings.public_url.base)).transpose()?;
    let consent = crate::protocol::consent::ConsentTexts::load(&settings.consent_dir());
    let doc = crate::metadata::document(settings, &consent);
    let entry = crate::metadata::registry_entry(&doc, &settings.public_url.base, check);
    print_json_or(json_output, &entry, || print_line(serde_json::to_string_pretty(&entry)?))?;
    Ok(entry)
}

/// Largest `--check-result` file read, bytes (a report is a few KB).
const MAX_CHECK_REPORT_BYTES: u64 = 1024 * 1024;

/// Reads an `isto check --json` report for the registry entry: at most
/// [`MAX_CHECK_REPORT_BYTES`], with a non-empty `checks` array (each with a string `id`
/// and `status`) and a `holder` on this holder's origin, whose user name and password
/// are dropped. Failed checks are kept (the registry shows them), with a note.
fn read_check_report(p: &Path, public_url: &str) -> anyhow::Result<Value> {
    use std::io::Read as _;
    let file = std::fs::File::open(p).with_context(|| format!("reading {}", p.display()))?;
    let mut text = String::new();
    file.take(MAX_CHECK_REPORT_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("reading {} (give the output of `isto check --json`)", p.display()))?;
    if text.len() as u64 > MAX_CHECK_REPORT_BYTES {
        anyhow::bail!(
            "{} is over {} bytes; an `isto check --json` report is a few KB",
            p.display(),
            MAX_CHECK_REPORT_BYTES
        );
    }
    let mut v: Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not JSON (give the output of `isto check --json`)", p.display()))?;
    let checks_ok = v.get("checks").and_then(Value::as_array).is_some_and(|c| {
        !c.is_empty()
            && c.iter()
                .all(|x| x.get("id").is_some_and(Value::is_string) && x.get("status").is_some_and(Value::is_string))
    });
    if !v.is_object() || !checks_ok {
        anyhow::bail!(
            "{} is not an `isto check --json` report (\"checks\" must be a non-empty array of checks with \"id\" and \"status\")",
            p.display()
        );
    }
    let holder = v.get("holder").and_then(Value::as_str).and_then(|h| url::Url::parse(h).ok());
    let ours = url::Url::parse(public_url).ok();
    let Some(mut holder) = holder else {
        anyhow::bail!("{}: \"holder\" is not the URL of a checked holder", p.display());
    };
    if ours.as_ref().map(url::Url::origin) != Some(holder.origin()) {
        anyhow::bail!(
            "{} is a report of {}, not of this holder ({public_url}): run `isto check {public_url}/mcp --json`",
            p.display(),
            holder.origin().ascii_serialization()
        );
    }
    let _ = holder.set_username("");
    let _ = holder.set_password(None);
    v["holder"] = Value::String(holder.to_string());
    if v.get("ok") != Some(&Value::Bool(true)) {
        eprintln!("note: the report has failed checks; the entry carries them as they are");
    }
    Ok(v)
}

#[cfg(test)]
mod tests;
