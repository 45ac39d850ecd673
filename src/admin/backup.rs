//! `isto admin backup`, `isto admin restore` and `isto admin keys export` (issue 11
//! point 1).
//!
//! A backup is a logical export of the whole store from one read transaction
//! ([`crate::store::Store::export`]): zstd-compressed JSON Lines (`.isto-backup`).
//! Line 1 is the [`Header`]; then one line per stored row, table by table
//! (`{"t":TABLE,"k":KEY,"v":VALUE}`, see `store::dump`); the last line is the
//! [`Trailer`] `{"end":{…}}` with the row counts and the SHA-256 (hex) of every byte of
//! the uncompressed lines before it. Sealed values (contacts, hidden limits, outbox
//! bodies) stay sealed; the sealing keys are not in a backup — `isto admin keys export`
//! writes them to a file of their own.
//!
//! With `isto serve` running the export runs in the server (the store allows one
//! process per file) and streams through the admin socket: `{"op":"backup"}` → the
//! header line, every row line, then `{"ok":true,"rows":N}` (or `{"ok":false,
//! "error":"…"}` at any point). Without a server the store is opened here. Either way
//! this process writes the file: a temp file beside `--out` (mode 0600), compressed as
//! the lines arrive, synced, re-read and checked (every count and the checksum), then
//! renamed over `--out` and the directory synced.
//!
//! Restore reads the file twice: a full check first, then into a new store file beside
//! `isto.redb` (`isto.redb.restoring`) in one write transaction while every sealed value
//! is opened with the data directory's key ring; only when all of that succeeded (and
//! the file opens as a store, migrated when it is older) is it renamed to `isto.redb`.
//! zstd is used here only (ARCHITECTURE.md, crates).

mod lines;
mod paths;
mod records;

pub use lines::MAX_LINE;

use super::socket::{Client, Connect};
use crate::clock::{rfc3339, Clock, SystemClock};
use crate::config::Settings;
use crate::crypto::{each_sealed, KeyRing, Sealed};
use crate::state::AppState;
use crate::store::{Export, Snapshot, Store, SCHEMA_VERSION};
use anyhow::{bail, Context as _};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};

/// The `format` of a backup's header.
pub const FORMAT: &str = "isto-backup";
/// The backup format version this isto writes and the newest it reads.
pub const FORMAT_VERSION: u64 = 1;
/// The `format` of a key ring export.
pub const KEYS_FORMAT: &str = "isto-keys";
/// The socket op of a backup.
pub(crate) const OP: &str = "backup";
/// zstd level (3: zstd's default, fast with a good ratio).
const LEVEL: i32 = 3;
/// What a backup says about the keys, on screen and in `--json`.
pub const KEYS_NOTE: &str = "sealed values (contacts, hidden limits, outbox mail) stay sealed in the backup and \
     the sealing keys are NOT in it: keep `isto admin keys export` output apart from the backups, or the backup \
     cannot be read";
/// The warning of `isto admin keys export`.
pub const KEYS_WARNING: &str = "this file holds the sealing keys: with it, anyone who has a backup can read every \
     contact address and hidden limit in it. Keep it offline or encrypted, apart from the backups";

/// A backup's first line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    /// [`FORMAT`].
    pub format: String,
    /// The format version ([`FORMAT_VERSION`] when written by this isto).
    pub version: u64,
    /// The isto version that wrote it.
    pub isto: String,
    /// The store's schema version (`crate::store::SCHEMA_VERSION` of the writer).
    pub schema: u64,
    /// When the export's read transaction began (RFC 3339, UTC).
    pub created: String,
    /// Rows per table (every table of the layout, by name; rows are in the file table
    /// by table in the store's order).
    pub tables: BTreeMap<String, u64>,
    /// Rows in all tables.
    pub rows: u64,
    /// Whether the sealing keys are in the file: always false.
    pub keys_included: bool,
}

/// The body of a backup's last line, `{"end": Trailer}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Trailer {
    /// Rows written.
    pub rows: u64,
    /// Rows per table.
    pub tables: BTreeMap<String, u64>,
    /// Sealed values per key id (the keys a restore needs).
    pub sealed: BTreeMap<String, u64>,
    /// SHA-256 (hex) of the uncompressed bytes of every line before this one, newlines
    /// included.
    pub sha256: String,
}

#[derive(Serialize, Deserialize)]
struct End {
    end: Trailer,
}

/// What `isto admin backup` reports (`--json` prints it).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackupReport {
    /// The backup file.
    pub file: PathBuf,
    /// Its size in bytes (compressed).
    pub bytes: u64,
    /// SHA-256 (hex) of the file as written (compare copies with `sha256sum`).
    pub file_sha256: String,
    /// The header.
    pub header: Header,
    /// The trailer.
    pub trailer: Trailer,
    /// `"socket"` (the running server exported) or `"direct"`.
    pub via: super::Route,
    /// Always false: see [`KEYS_NOTE`].
    pub keys_included: bool,
    /// [`KEYS_NOTE`].
    pub note: &'static str,
}

/// A checked backup file.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verified {
    /// The header.
    pub header: Header,
    /// The trailer (its counts and checksum matched).
    pub trailer: Trailer,
    /// Compressed size, bytes.
    pub bytes: u64,
    /// SHA-256 (hex) of the compressed file.
    pub file_sha256: String,
}

/// What `isto admin restore` reports.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RestoreReport {
    /// The backup file.
    pub file: PathBuf,
    /// The store written.
    pub store: PathBuf,
    /// Rows restored.
    pub rows: u64,
    /// Rows per table.
    pub tables: BTreeMap<String, u64>,
    /// The backup's schema version.
    pub schema_from: u64,
    /// The store's schema version now (migrated when the backup was older).
    pub schema: u64,
    /// Sealed values opened with the key ring (all of them).
    pub sealed_opened: u64,
    /// Whether a store was replaced (`--force`).
    pub replaced: bool,
    /// Key ids of old sealing keys `--keys` added to an existing key ring (empty when
    /// none were added or the ring was installed whole).
    pub keys_added: Vec<String>,
}

/// What `isto admin keys export` reports.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeysReport {
    /// The file written.
    pub file: PathBuf,
    /// Key ids, the current (sealing) key first.
    pub kids: Vec<String>,
    /// [`KEYS_WARNING`].
    pub warning: &'static str,
}

/// The export's first line for `snapshot`, made at `now`.
fn header_of(snapshot: &Snapshot, clock: &dyn Clock) -> Header {
    Header {
        format: FORMAT.to_owned(),
        version: FORMAT_VERSION,
        isto: super::VERSION.to_owned(),
        schema: snapshot.schema_version,
        created: rfc3339(clock.now()),
        tables: snapshot.tables.iter().map(|(t, n)| ((*t).to_owned(), *n)).collect(),
        rows: snapshot.rows(),
        keys_included: false,
    }
}

/// Exports `store` as lines (header, then rows; no newline), each handed to `emit`.
fn export_lines(
    store: &Store,
    clock: &dyn Clock,
    mut emit: impl FnMut(&str) -> anyhow::Result<()>,
) -> anyhow::Result<Snapshot> {
    store.export(|step| -> anyhow::Result<()> {
        match step {
            Export::Begin(s) => emit(&serde_json::to_string(&header_of(s, clock))?),
            Export::Row { line, .. } => emit(line),
        }
    })
}

/// The server's side of [`OP`]: streams the export to `write` (see the module docs).
/// Lines are sent in chunks of about 64 KiB through a bounded channel, so a slow client
/// slows the export down instead of filling memory; a client that goes away stops it.
/// A server stopping (`stop` cancelled) ends the stream at once; the client then sees
/// the connection close before the end line and writes nothing.
pub(crate) async fn serve(
    holder: &AppState,
    write: &mut (impl tokio::io::AsyncWrite + Unpin),
    stop: &tokio_util::sync::CancellationToken,
) -> std::io::Result<()> {
    use tokio::io::AsyncWriteExt as _;
    const CHUNK: usize = 64 << 10;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<String>(16);
    let h = holder.clone();
    let job = tokio::task::spawn_blocking(move || {
        let mut buf = String::with_capacity(CHUNK + 1024);
        let out = export_lines(h.base.store(), h.base.clock().as_ref(), |line| {
            buf.push_str(line);
            buf.push('\n');
            if buf.len() >= CHUNK {
                tx.blocking_send(std::mem::take(&mut buf)).map_err(|_| anyhow::anyhow!("the client went away"))?;
            }
            Ok(())
        });
        let end = match out {
            Ok(s) => {
                tracing::info!(rows = s.rows(), "admin backup: exported");
                json!({"ok": true, "rows": s.rows()})
            }
            Err(e) => {
                tracing::error!(error = %e, "admin backup: export failed");
                json!({"ok": false, "error": format!("backup failed: {e}")})
            }
        };
        buf.push_str(&end.to_string());
        buf.push('\n');
        let _ = tx.blocking_send(buf);
    });
    let mut written = Ok(());
    loop {
        let chunk = tokio::select! {
            () = stop.cancelled() => {
                tracing::warn!("admin backup: stopped with the server before the export ended");
                written = Err(std::io::Error::other("the server is stopping"));
                break;
            }
            chunk = rx.recv() => chunk,
        };
        let Some(chunk) = chunk else { break };
        if let Err(e) = write.write_all(chunk.as_bytes()).await {
            written = Err(e);
            break;
        }
    }
    drop(rx);
    if job.await.is_err() {
        tracing::error!("admin backup: export task failed");
    }
    written
}

/// A row as the backup layer reads it: its table and value (the key stays opaque).
#[derive(Deserialize)]
struct RowView {
    t: String,
    #[serde(default)]
    v: Option<Value>,
}

/// Counts rows per table and sealed values per key id, and hashes, line by line.
#[derive(Default)]
struct Tally {
    sha: Sha256,
    rows: u64,
    tables: BTreeMap<String, u64>,
    sealed: BTreeMap<String, u64>,
}

impl Tally {
    fn hash(&mut self, line: &str) {
        self.sha.update(line.as_bytes());
        self.sha.update(b"\n");
    }

    /// Counts one row line (its number `n` for errors); `each` sees its sealed values.
    fn row(
        &mut self,
        n: u64,
        line: &str,
        each: &mut dyn FnMut(&str, Sealed) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let row: RowView =
            serde_json::from_str(line).with_context(|| format!("the backup is damaged: line {n} is not a row"))?;
        self.rows += 1;
        *self.tables.entry(row.t.clone()).or_default() += 1;
        if let Some(v) = &row.v {
            each_sealed(v, &mut |s| {
                *self.sealed.entry(s.kid.clone()).or_default() += 1;
                each(&row.t, s)
            })?;
        }
        Ok(())
    }

    fn digest(&self) -> String {
        hex(&self.sha.clone().finalize())
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Parses and checks a header line.
fn parse_header(line: &str) -> anyhow::Result<Header> {
    let v: Value = serde_json::from_str(line).context("the first line is not JSON: not an isto backup")?;
    if v.get("format").and_then(Value::as_str) != Some(FORMAT) {
        bail!("the first line has no \"format\":\"{FORMAT}\": not an isto backup");
    }
    let version = v.get("version").and_then(Value::as_u64).context("the header has no format version")?;
    if version > FORMAT_VERSION {
        bail!(
            "the backup has format version {version}, newer than this isto reads ({FORMAT_VERSION}): \
             restore it with the isto version that wrote it ({}) or a newer one",
            v.get("isto").and_then(Value::as_str).unwrap_or("unknown")
        );
    }
    let h: Header = serde_json::from_value(v).context("the header does not have the fields of format version 1")?;
    if h.schema > SCHEMA_VERSION {
        bail!(
            "the backup holds a store of schema version {}, newer than this isto knows ({SCHEMA_VERSION}): \
             restore it with a newer isto than this one ({}) (the backup was made by isto {})",
            h.schema,
            super::VERSION,
            h.isto
        );
    }
    Ok(h)
}

/// Reads a backup file line by line, checking as it goes: the header first, then each
/// row (handed to `on_row` with its line number), then the trailer against every count
/// and the checksum. Nothing may follow the trailer.
fn read_backup(
    path: &Path,
    mut on_header: impl FnMut(&Header) -> anyhow::Result<()>,
    mut on_row: impl FnMut(u64, &str) -> anyhow::Result<()>,
    on_sealed: &mut dyn FnMut(&str, Sealed) -> anyhow::Result<()>,
) -> anyhow::Result<Verified> {
    let file = std::fs::File::open(path).with_context(|| format!("cannot open the backup {}", path.display()))?;
    let bytes = file.metadata()?.len();
    let hashing = HashingReader { inner: file, sha: Sha256::new() };
    let decoder = zstd::stream::read::Decoder::new(hashing).context("cannot start decompressing")?;
    let mut reader = std::io::BufReader::with_capacity(256 << 10, decoder);
    let corrupt =
        |n: u64| format!("the backup {} is damaged or truncated (decompression failed at line {n})", path.display());
    let mut line = String::new();
    let mut n = 0u64;
    let mut tally = Tally::default();
    let what = path.display().to_string();
    let mut next = |line: &mut String, n: &mut u64| -> anyhow::Result<bool> {
        *n += 1;
        lines::next_line(&mut reader, line, *n, &what)
    };
    if !next(&mut line, &mut n)? {
        bail!("the backup {} is empty", path.display());
    }
    let header =
        parse_header(&line).with_context(|| format!("{} is not a backup this isto restores", path.display()))?;
    on_header(&header)?;
    tally.hash(&line);
    let trailer = loop {
        if !next(&mut line, &mut n)? {
            bail!("the backup {} is truncated: it ends without its trailer line", path.display());
        }
        if line.starts_with("{\"end\":") {
            let end: End = serde_json::from_str(&line)
                .with_context(|| format!("the backup is damaged: line {n} is a malformed trailer"))?;
            break end.end;
        }
        tally.hash(&line);
        tally.row(n, &line, on_sealed)?;
        on_row(n, &line)?;
    };
    if next(&mut line, &mut n)? {
        bail!("the backup {} has lines after its trailer", path.display());
    }
    let mut decoder = reader.into_inner();
    // Read to the end, so the whole file is hashed (and the frame's end checked).
    std::io::copy(&mut decoder, &mut std::io::sink()).with_context(|| corrupt(n))?;
    let file_sha256 = hex(&decoder.get_ref().get_ref().sha.clone().finalize());
    let digest = tally.digest();
    if digest != trailer.sha256 {
        bail!(
            "the backup {} fails its checksum: SHA-256 of its lines is {digest}, its trailer says {}; \
             the file is damaged, use another copy",
            path.display(),
            trailer.sha256
        );
    }
    let tables: BTreeMap<String, u64> = tally.tables.clone();
    let nonzero = |m: &BTreeMap<String, u64>| m.iter().filter(|(_, n)| **n > 0).map(|(k, n)| (k.clone(), *n)).collect();
    let (want_h, want_t): (BTreeMap<String, u64>, BTreeMap<String, u64>) =
        (nonzero(&header.tables), nonzero(&trailer.tables));
    if tally.rows != header.rows || tally.rows != trailer.rows || tables != want_h || tables != want_t {
        bail!(
            "the backup {} is inconsistent: it holds {} rows, its header says {} and its trailer {}",
            path.display(),
            tally.rows,
            header.rows,
            trailer.rows
        );
    }
    if tally.sealed != trailer.sealed {
        bail!("the backup {} is inconsistent: its sealed values differ from its trailer's count", path.display());
    }
    Ok(Verified { header, trailer, bytes, file_sha256 })
}

/// A reader that hashes what it reads.
struct HashingReader<R> {
    inner: R,
    sha: Sha256,
}

impl<R: std::io::Read> std::io::Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.sha.update(&buf[..n]);
        Ok(n)
    }
}

/// A writer that hashes what it writes.
struct HashingWriter<W> {
    inner: W,
    sha: Sha256,
    bytes: u64,
}

impl<W: std::io::Write> std::io::Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.sha.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Checks a backup file without restoring it (`isto admin backup --verify FILE`).
///
/// # Errors
/// The file cannot be read, is not a backup, is of a newer format or schema, is damaged
/// (decompression, checksum, counts), each with a message naming the file and the cause.
pub fn verify(path: &Path) -> anyhow::Result<Verified> {
    read_backup(path, |_| Ok(()), |_, _| Ok(()), &mut |_, _| Ok(()))
}

/// The temp file of an atomic write of `target`: beside it, hidden.
fn temp_beside(target: &Path, what: &str) -> anyhow::Result<PathBuf> {
    let name = target
        .file_name()
        .and_then(|n| n.to_str())
        .with_context(|| format!("{} has no file name", target.display()))?;
    Ok(target.with_file_name(format!(".{name}.{what}-{}", std::process::id())))
}

/// The directory of `path` (`.` for a bare name).
fn dir_of(path: &Path) -> &Path {
    path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// Creates `path` for writing, mode 0600, failing when it exists.
fn create_private(path: &Path) -> anyhow::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))
}

/// Checks `--out` of `isto admin backup` and `isto admin keys export` before anything is
/// written: an existing name of any kind (file, symlink, dangling symlink) needs `force`;
/// a directory is refused; the directory it goes in must exist; and the file must not be
/// inside the data directory, `force` or not (resolved: the parent canonicalised, every
/// symlink followed), because writing there can replace the live store or the sealing
/// keys and a copy there is lost with the directory (issue 11, hardening).
///
/// # Errors
/// Each refusal above, naming the path and what to do.
fn check_out(settings: &Settings, out: &Path, force: bool) -> anyhow::Result<()> {
    let name = out.file_name().with_context(|| format!("{} has no file name; --out names a file", out.display()))?;
    let parent = dir_of(out);
    let real_parent = std::fs::canonicalize(parent).with_context(|| {
        format!("the directory {} of --out does not exist or cannot be read: create it first", parent.display())
    })?;
    if !real_parent.is_dir() {
        bail!("{} is not a directory; --out names a file in an existing directory", parent.display());
    }
    let at = real_parent.join(name);
    let mut places = vec![at.clone()];
    if let Some(target) = resolve_links(&at) {
        places.push(target);
    }
    if let Ok(data) = std::fs::canonicalize(&settings.data_dir) {
        if let Some(p) = places.iter().find(|p| p.starts_with(&data)) {
            bail!(
                "{} is inside the data directory {} ({}): writing there can replace the live store or the keys, \
                 and a copy there is lost with the directory; write it to a file outside the data directory \
                 (--force does not change this)",
                out.display(),
                data.display(),
                p.display()
            );
        }
    }
    paths::refuse_special(out)?;
    if std::fs::symlink_metadata(out).is_ok() {
        if out.is_dir() {
            bail!("{} is a directory; --out names the file to write", out.display());
        }
        if !force {
            bail!("{} exists; choose another file or add --force to replace it", out.display());
        }
    }
    Ok(())
}

/// Where the symlink `path` finally points (followed at most 40 times, resolved even
/// when the last target does not exist); `None` when `path` is no symlink.
fn resolve_links(path: &Path) -> Option<PathBuf> {
    let mut at = path.to_owned();
    let mut followed = false;
    for _ in 0..40 {
        let Ok(target) = std::fs::read_link(&at) else { break };
        followed = true;
        let joined = if target.is_absolute() { target } else { dir_of(&at).join(target) };
        let name = joined.file_name().map(ToOwned::to_owned);
        let parent = std::fs::canonicalize(dir_of(&joined)).unwrap_or_else(|_| dir_of(&joined).to_owned());
        at = match name {
            Some(n) => parent.join(n),
            None => parent,
        };
    }
    followed.then_some(at)
}

/// Syncs a directory (so a rename in it is durable).
fn sync_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::File::open(dir).and_then(|d| d.sync_all()).with_context(|| format!("cannot sync {}", dir.display()))
}

/// Removes a temp file when dropped, unless disarmed.
struct TempFile(Option<PathBuf>);

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// The compressed, hashed file being written.
struct Writer {
    enc: zstd::stream::write::Encoder<'static, HashingWriter<std::io::BufWriter<std::fs::File>>>,
    tally: Tally,
    header: Option<Header>,
    bar: ProgressBar,
    json_output: bool,
}

impl Writer {
    fn line(&mut self, line: &str) -> anyhow::Result<()> {
        if line.len() > MAX_LINE {
            bail!(
                "row {} of the export is longer than {MAX_LINE} bytes, the longest line a restore reads; \
                 no backup was written",
                self.tally.rows + 1
            );
        }
        self.enc.write_all(line.as_bytes())?;
        self.enc.write_all(b"\n")?;
        self.tally.hash(line);
        Ok(())
    }

    /// One line from the source: the header first, then rows.
    fn take(&mut self, line: &str) -> anyhow::Result<()> {
        match &self.header {
            None => {
                let h = parse_header(line).context("the export did not start with a backup header")?;
                self.bar.set_length(h.rows);
                if !self.json_output {
                    self.bar.suspend(|| eprintln!("exporting {} rows (schema version {})", h.rows, h.schema));
                }
                self.header = Some(h);
                self.line(line)
            }
            Some(_) => {
                let n = self.tally.rows + 2;
                self.tally.row(n, line, &mut |_, _| Ok(()))?;
                self.line(line)?;
                self.bar.inc(1);
                Ok(())
            }
        }
    }
}

/// Runs `isto admin backup --out FILE`: see the module docs. Prints a progress bar on a
/// terminal, then the summary and [`KEYS_NOTE`] (or, with `json_output`, the
/// [`BackupReport`] as JSON). `force` replaces an existing `out`.
///
/// # Errors
/// `out` exists (without `force`); no store; the server's or the store's failure; a
/// write or sync failure; the written file fails its check. On any error `out` is as it
/// was and the temp file is removed.
pub fn backup(settings: &Settings, out: &Path, force: bool, json_output: bool) -> anyhow::Result<BackupReport> {
    check_out(settings, out, force)?;
    let tmp = temp_beside(out, "partial")?;
    let file = create_private(&tmp)?;
    let guard = TempFile(Some(tmp.clone()));
    let enc = zstd::stream::write::Encoder::new(
        HashingWriter { inner: std::io::BufWriter::with_capacity(256 << 10, file), sha: Sha256::new(), bytes: 0 },
        LEVEL,
    )?;
    let mut enc = enc;
    // zstd's own checksum of the frame too, checked while decompressing.
    enc.include_checksum(true)?;
    let bar = if json_output || !std::io::stderr().is_terminal() {
        ProgressBar::hidden()
    } else {
        let b = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{wide_bar} {pos}/{len} rows {per_sec} ETA {eta}") {
            b.set_style(style);
        }
        b
    };
    let mut w = Writer { enc, tally: Tally::default(), header: None, bar, json_output };
    let via = export_into(settings, &mut w)?;
    w.bar.finish_and_clear();
    let Writer { mut enc, tally, header, .. } = w;
    let header = header.context("the export ended before its header")?;
    let trailer = Trailer {
        rows: tally.rows,
        tables: header.tables.clone(),
        sealed: tally.sealed.clone(),
        sha256: tally.digest(),
    };
    let counted: BTreeMap<String, u64> = tally.tables.clone();
    let listed: BTreeMap<String, u64> =
        header.tables.iter().filter(|(_, n)| **n > 0).map(|(k, n)| (k.clone(), *n)).collect();
    if tally.rows != header.rows || counted != listed {
        bail!("the export is incomplete: {} rows arrived, its header announced {}", tally.rows, header.rows);
    }
    enc.write_all(serde_json::to_string(&End { end: trailer.clone() })?.as_bytes())?;
    enc.write_all(b"\n")?;
    let hashing = enc.finish().context("cannot finish compressing")?;
    let file = hashing.inner.into_inner().map_err(|e| e.into_error()).context("cannot write the backup")?;
    file.sync_all().with_context(|| format!("cannot sync {}", tmp.display()))?;
    drop(file);
    let checked = verify(&tmp).context("the backup just written does not read back; nothing was replaced")?;
    if checked.file_sha256 != hex(&hashing.sha.finalize()) || checked.trailer != trailer {
        bail!("the backup just written reads back differently; nothing was replaced");
    }
    paths::refuse_special(out)?;
    std::fs::rename(&tmp, out).with_context(|| format!("cannot rename {} to {}", tmp.display(), out.display()))?;
    let mut guard = guard;
    guard.0 = None;
    sync_dir(dir_of(out))?;
    let report = BackupReport {
        file: out.to_owned(),
        bytes: checked.bytes,
        file_sha256: checked.file_sha256,
        header,
        trailer,
        via,
        keys_included: false,
        note: KEYS_NOTE,
    };
    tracing::info!(rows = report.trailer.rows, bytes = report.bytes, via = ?report.via, "backup written");
    if json_output {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "wrote {} ({} rows, {} bytes, schema version {}), checked: SHA-256 {}",
            out.display(),
            report.trailer.rows,
            report.bytes,
            report.header.schema,
            report.file_sha256
        );
        println!("note: {KEYS_NOTE}");
    }
    Ok(report)
}

/// Feeds the export (through the server's socket, or from the store opened here) into `w`.
fn export_into(settings: &Settings, w: &mut Writer) -> anyhow::Result<super::Route> {
    match Client::connect(&settings.admin_socket_path())? {
        Connect::Ready(mut client) => {
            let mut ended = None;
            let streamed = client.stream(&json!({"op": OP}), &mut |line| {
                if line.starts_with("{\"t\":") {
                    w.take(line)?;
                    return Ok(true);
                }
                let v: Value = serde_json::from_str(line).context("the server sent a line that is not JSON")?;
                if v.get("format").is_some() {
                    w.take(line)?;
                    return Ok(true);
                }
                ended = Some(v);
                Ok(false)
            });
            if let Err(e) = streamed {
                if e.downcast_ref::<super::socket::Closed>().is_some() {
                    bail!(
                        "the server closed the admin socket during the backup (it stopped or crashed; see its log): \
                         start `isto serve` again and run the backup again; no backup file was written"
                    );
                }
                return Err(e);
            }
            let end = ended.context("the server ended the backup stream early")?;
            if end.get("ok") != Some(&Value::Bool(true)) {
                bail!("{}", end.get("error").and_then(Value::as_str).unwrap_or("the server refused the backup"));
            }
            Ok(super::Route::Socket)
        }
        other => {
            let store = open_store(settings, &other)?;
            export_lines(&store, &SystemClock, |line| w.take(line))?;
            Ok(super::Route::Direct)
        }
    }
}

/// Opens the store here for a backup (no server answers): it must exist.
fn open_store(settings: &Settings, socket: &Connect) -> anyhow::Result<Store> {
    let path = settings.store_path();
    if !path.exists() {
        bail!("no store at {}: nothing to back up", path.display());
    }
    Store::open(&path).map_err(|e| {
        if e.is_already_open() {
            let _ = socket;
            anyhow::anyhow!("{}", super::held_by_another(&path, &settings.admin_socket_path()))
        } else {
            super::open_failed(&path, e)
        }
    })
}

/// The key files of the data directory: the current key first, then the older ones.
fn key_files(settings: &Settings) -> anyhow::Result<Vec<PathBuf>> {
    let current = settings.key_path();
    if !current.exists() {
        bail!("no sealing key at {}", current.display());
    }
    let mut out = vec![current.clone()];
    let name = current.file_name().and_then(|n| n.to_str()).unwrap_or("sealing.key");
    let prefix = format!("{name}.");
    let mut old: Vec<PathBuf> = std::fs::read_dir(dir_of(&current))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&prefix)))
        .collect();
    old.sort();
    out.extend(old);
    // The sellers' intent handles' key: without it every handle changes.
    let handle = KeyRing::handle_key_path(&current);
    if handle.exists() {
        out.push(handle);
    }
    // The MAC root: without it every person key, pseudonym and keyed hash changes.
    let mac = KeyRing::mac_key_path(&current);
    if mac.exists() {
        out.push(mac);
    }
    Ok(out)
}

/// The key ring export's shape: `{"format":"isto-keys","version":1,"keys":[{"file":
/// "sealing.key","hex":"…"}, …]}` (the current key first, then the older ones and the
/// handle key `handle.key`; `file` is the name in `DATA_DIR/keys`).
#[derive(Serialize, Deserialize)]
struct KeysFile {
    format: String,
    version: u64,
    warning: String,
    keys: Vec<KeyEntry>,
}

#[derive(Serialize, Deserialize)]
struct KeyEntry {
    file: String,
    hex: String,
}

/// Runs `isto admin keys export --out FILE`: writes every key of the data directory's
/// key ring to `out` (mode 0600, atomically), after printing [`KEYS_WARNING`]. Refuses
/// an existing `out` without `force`. Works whether or not `isto serve` runs (it reads
/// only the key files).
///
/// # Errors
/// No key; `out` exists; I/O errors naming the path.
pub fn keys_export(settings: &Settings, out: &Path, force: bool, json_output: bool) -> anyhow::Result<KeysReport> {
    check_out(settings, out, force)?;
    // Opening the ring checks every key and gives the ids (and writes mac.key into a
    // data directory made before it existed, so the export holds it).
    if !settings.key_path().exists() {
        bail!("no sealing key at {}", settings.key_path().display());
    }
    let (ring, _) = KeyRing::load_or_create(&settings.key_path())?;
    let kids = ring.kids();
    let files = key_files(settings)?;
    let mut keys = Vec::new();
    for p in &files {
        let text = zeroize::Zeroizing::new(
            std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?,
        );
        let file = p.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        keys.push(KeyEntry { file, hex: text.trim().to_owned() });
    }
    let body = zeroize::Zeroizing::new(serde_json::to_string_pretty(&KeysFile {
        format: KEYS_FORMAT.to_owned(),
        version: 1,
        warning: KEYS_WARNING.to_owned(),
        keys,
    })?);
    if !json_output {
        eprintln!("WARNING: {KEYS_WARNING}");
    }
    let tmp = temp_beside(out, "partial")?;
    let mut f = create_private(&tmp)?;
    let guard = TempFile(Some(tmp.clone()));
    f.write_all(body.as_bytes())
        .and_then(|()| f.sync_all())
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    drop(f);
    paths::refuse_special(out)?;
    std::fs::rename(&tmp, out).with_context(|| format!("cannot rename {} to {}", tmp.display(), out.display()))?;
    let mut guard = guard;
    guard.0 = None;
    sync_dir(dir_of(out))?;
    let report = KeysReport { file: out.to_owned(), kids, warning: KEYS_WARNING };
    if json_output {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        let handle = files.len() > report.kids.len();
        println!(
            "wrote {} key file(s) to {} (mode 0600): sealing key(s) {}{}",
            files.len(),
            out.display(),
            report.kids.join(", "),
            if handle { " and the never-rotated handle.key and mac.key" } else { "" }
        );
    }
    Ok(report)
}

/// Writes the keys of a `keys export` file into the new directory `dir` (0700, files
/// 0600), for `isto admin restore --keys FILE` into a data directory that has no sealing
/// key yet; returns the path of the current key there. The restore moves `dir` into
/// place only when it succeeds.
fn install_keys(settings: &Settings, file: &Path, dir: &Path) -> anyhow::Result<PathBuf> {
    let text = zeroize::Zeroizing::new(
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?,
    );
    let k: KeysFile =
        serde_json::from_str(&text).with_context(|| format!("{} is not an isto key export", file.display()))?;
    if k.format != KEYS_FORMAT || k.version != 1 {
        bail!("{} is not an isto key export of version 1", file.display());
    }
    let current = settings.key_path();
    let name = current.file_name().and_then(|n| n.to_str()).unwrap_or("sealing.key").to_owned();
    let Some(first) = k.keys.first() else { bail!("{} holds no key", file.display()) };
    if first.file != name {
        bail!("{}: the first key must be the current key {name:?}", file.display());
    }
    let handle_name = KeyRing::handle_key_path(&current).file_name().and_then(|n| n.to_str()).map(str::to_owned);
    let ok_name = |f: &str| {
        f == name
            || handle_name.as_deref() == Some(f)
            || f == crate::crypto::MAC_KEY_FILE
            || f.strip_prefix(&format!("{name}."))
                .is_some_and(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric()))
    };
    std::fs::create_dir(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    crate::crypto::set_mode(dir, 0o700)?;
    for e in &k.keys {
        if !ok_name(&e.file) {
            bail!("{}: key file name {:?} is not {name}, {name}.<id>, handle.key or mac.key", file.display(), e.file);
        }
        crate::crypto::write_private(&dir.join(&e.file), e.hex.as_bytes())
            .with_context(|| format!("cannot write {}", dir.join(&e.file).display()))?;
    }
    // Check they load.
    let staged = dir.join(&name);
    KeyRing::load_or_create(&staged)?;
    Ok(staged)
}

/// Old sealing keys a restore adds to a key ring: file name (`sealing.key.<kid>`) and
/// its hex text.
type AddedKeys = Vec<(String, zeroize::Zeroizing<String>)>;

/// For `isto admin restore FILE --keys EXPORT` into a data directory that has a key
/// ring: stages in the new directory `staged` the ring as it is plus every sealing key
/// of the export that the ring lacks (as `sealing.key.<kid>`); the current key,
/// `handle.key` and `mac.key` are never replaced, and an export whose `handle.key` or
/// `mac.key` differs from the directory's is refused (it is another holder's: its
/// handles and keyed hashes would not match). `check` is a scratch directory for
/// loading the export. Returns the staged current key's path and the files to add.
fn stage_added_keys(
    settings: &Settings,
    file: &Path,
    staged: &Path,
    check: &Path,
) -> anyhow::Result<(PathBuf, AddedKeys)> {
    let current = settings.key_path();
    let keys_dir = dir_of(&current);
    let export = install_keys(settings, file, check)?;
    for key in [KeyRing::handle_key_path(&current), KeyRing::mac_key_path(&current)] {
        let n = key.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        let read = |p: &Path| std::fs::read_to_string(p).ok().map(|t| zeroize::Zeroizing::new(t.trim().to_owned()));
        let (here, there) = (read(&key), read(&check.join(&n)));
        if here.is_some() && there.is_some() && here != there {
            bail!(
                "{} is another holder's key export: its {n} differs from the one in {} (intent handles and keyed \
                 hashes would not match); --keys adds only the missing sealing keys of this holder's own export, \
                 and nothing was changed",
                file.display(),
                keys_dir.display()
            );
        }
    }
    let (have, _) = KeyRing::load_or_create(&current)?;
    let have = have.kids();
    let (theirs, _) = KeyRing::load_or_create(&export)?;
    let name = current.file_name().and_then(|n| n.to_str()).unwrap_or("sealing.key").to_owned();
    let mut add = Vec::new();
    for k in theirs.key_info() {
        if have.contains(&k.kid) {
            continue;
        }
        let Some(f) = k.file else { continue };
        let text = zeroize::Zeroizing::new(
            std::fs::read_to_string(&f).with_context(|| format!("cannot read {}", f.display()))?.trim().to_owned(),
        );
        add.push((format!("{name}.{}", k.kid), text));
    }
    std::fs::create_dir(staged).with_context(|| format!("cannot create {}", staged.display()))?;
    crate::crypto::set_mode(staged, 0o700)?;
    for e in std::fs::read_dir(keys_dir).with_context(|| format!("cannot read {}", keys_dir.display()))? {
        let p = e?.path();
        if p.is_file() {
            let bytes =
                zeroize::Zeroizing::new(std::fs::read(&p).with_context(|| format!("cannot read {}", p.display()))?);
            let to = staged.join(p.file_name().unwrap_or_default());
            crate::crypto::write_private(&to, &bytes).with_context(|| format!("cannot write {}", to.display()))?;
        }
    }
    for (f, text) in &add {
        crate::crypto::write_private(&staged.join(f), text.as_bytes())
            .with_context(|| format!("cannot write {}", staged.join(f).display()))?;
    }
    let ring = staged.join(&name);
    KeyRing::load_or_create(&ring)?;
    Ok((ring, add))
}

/// Removes, when dropped unless disarmed, what a failed restore created: the staged key
/// directory and a data directory that did not exist before.
struct Undo {
    staged_keys: Option<PathBuf>,
    created_dir: Option<PathBuf>,
    scratch: Option<PathBuf>,
}

impl Drop for Undo {
    fn drop(&mut self) {
        if let Some(d) = self.scratch.take() {
            let _ = std::fs::remove_dir_all(d);
        }
        if let Some(d) = self.staged_keys.take() {
            let _ = std::fs::remove_dir_all(d);
        }
        if let Some(d) = self.created_dir.take() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// Runs `isto admin restore FILE`: see the module docs. Refuses while `isto serve`
/// runs, when the data directory has a store (unless `force`: then it is replaced), a
/// newer format or schema, a damaged file, and a sealed value the key ring cannot open;
/// in each case the data directory is left as it was. `keys` first installs a `keys
/// export` file into a data directory that has no key.
///
/// # Errors
/// As above, with messages naming the cause.
pub fn restore(
    settings: &Settings,
    file: &Path,
    force: bool,
    keys: Option<&Path>,
    json_output: bool,
) -> anyhow::Result<RestoreReport> {
    let checked = verify(file)?;
    if let Connect::Ready(_) = Client::connect(&settings.admin_socket_path())? {
        bail!(
            "`isto serve` is running on {} (its admin socket answers): stop it, then restore",
            settings.data_dir.display()
        );
    }
    let store_path = settings.store_path();
    let replaced = store_path.exists();
    if replaced && !force {
        bail!(
            "the data directory {} is not empty: it has a store ({}); restore into an empty data directory, \
             or add --force to replace that store",
            settings.data_dir.display(),
            store_path.display()
        );
    }
    // (Only with --force: opening the file to find out is not a read-only act.)
    if replaced && crate::store::in_use(&store_path) {
        bail!("the store {} is in use by another process (`isto serve`?): stop it, then restore", store_path.display());
    }
    let key_path = settings.key_path();
    if keys.is_none() && !key_path.exists() {
        bail!(
            "no sealing key at {}: put the key ring of the holder that made the backup there first \
             (`isto admin restore FILE --keys KEYS`, with the file of `isto admin keys export`)",
            key_path.display()
        );
    }
    let mut undo = Undo { staged_keys: None, created_dir: None, scratch: None };
    if !settings.data_dir.exists() {
        std::fs::create_dir_all(&settings.data_dir)
            .with_context(|| format!("cannot create the data directory {}", settings.data_dir.display()))?;
        undo.created_dir = Some(settings.data_dir.clone());
        crate::crypto::set_mode(&settings.data_dir, 0o700)?;
    }
    let keys_dir = dir_of(&key_path).to_owned();
    let mut adding: Option<AddedKeys> = None;
    let ring_path = match keys {
        Some(k) => {
            let staged = keys_dir.with_file_name(format!(
                "{}.restoring",
                keys_dir.file_name().and_then(|n| n.to_str()).unwrap_or("keys")
            ));
            if staged.exists() {
                std::fs::remove_dir_all(&staged)
                    .with_context(|| format!("cannot remove the leftover {}", staged.display()))?;
            }
            undo.staged_keys = Some(staged.clone());
            if key_path.exists() {
                let check = staged.with_file_name(format!(
                    "{}.checking",
                    keys_dir.file_name().and_then(|n| n.to_str()).unwrap_or("keys")
                ));
                if check.exists() {
                    std::fs::remove_dir_all(&check)
                        .with_context(|| format!("cannot remove the leftover {}", check.display()))?;
                }
                undo.scratch = Some(check.clone());
                let (ring, add) = stage_added_keys(settings, k, &staged, &check)?;
                adding = Some(add);
                ring
            } else {
                install_keys(settings, k, &staged)?
            }
        }
        None => key_path.clone(),
    };
    let (ring, _) = KeyRing::load_or_create(&ring_path)?;
    let have = ring.kids();
    let missing: Vec<&String> = checked.trailer.sealed.keys().filter(|k| !have.contains(k)).collect();
    if !missing.is_empty() {
        bail!(
            "the key ring in {} cannot open the backup's sealed values: it lacks key id(s) {} (it has {}); \
             nothing was restored. Add the missing old key(s) from a key export of this holder made when they \
             were in use: `isto admin restore FILE --keys EXPORT` (the current key, handle.key and mac.key stay)",
            dir_of(&key_path).display(),
            missing.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", "),
            have.join(", ")
        );
    }
    let tmp = store_path.with_file_name(format!("{}.restoring", crate::store::FILE_NAME));
    if tmp.exists() {
        std::fs::remove_file(&tmp).with_context(|| format!("cannot remove the leftover {}", tmp.display()))?;
    }
    drop(create_private(&tmp)?);
    let guard = TempFile(Some(tmp.clone()));
    let bar = if json_output || !std::io::stderr().is_terminal() {
        ProgressBar::hidden()
    } else {
        let b = ProgressBar::with_draw_target(Some(checked.trailer.rows), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{wide_bar} {pos}/{len} rows {per_sec} ETA {eta}") {
            b.set_style(style);
        }
        b
    };
    let mut opened = 0u64;
    let restored = restore_rows(file, &tmp, &ring, &mut opened, &bar);
    bar.finish_and_clear();
    let restored = restored?;
    // Open it as a store: migrations of an older schema run here, still in the temp file.
    let restored_store =
        Store::open(&tmp).with_context(|| format!("the restored store {} does not open", tmp.display()))?;
    check_records(&restored_store)?;
    drop(restored_store);
    let want: BTreeMap<String, u64> =
        checked.header.tables.iter().filter(|(_, n)| **n > 0).map(|(k, n)| (k.clone(), *n)).collect();
    let got: BTreeMap<String, u64> =
        restored.iter().filter(|(_, n)| **n > 0).map(|(k, n)| ((*k).to_owned(), *n)).collect();
    if got != want {
        bail!("the restored store does not hold the backup's rows; nothing was replaced");
    }
    // The offer index is derived from the store: dropped, so it is rebuilt at start.
    let index = settings.data_dir.join("index");
    if index.exists() {
        std::fs::remove_dir_all(&index)
            .with_context(|| format!("cannot remove the old offer index {}", index.display()))?;
    }
    if let Some(add) = &adding {
        // Only the missing old sealing keys are added; nothing is replaced.
        for (f, text) in add {
            let to = keys_dir.join(f);
            crate::crypto::write_private(&to, text.as_bytes())
                .with_context(|| format!("cannot write {}", to.display()))?;
        }
        sync_dir(&keys_dir)?;
        if let Some(staged) = undo.staged_keys.take() {
            let _ = std::fs::remove_dir_all(staged);
        }
    } else if let Some(staged) = undo.staged_keys.take() {
        // An empty keys directory is replaced (a directory with a key adds, above).
        if keys_dir.exists() {
            std::fs::remove_dir(&keys_dir).with_context(|| format!("cannot replace {}", keys_dir.display()))?;
        }
        std::fs::rename(&staged, &keys_dir)
            .with_context(|| format!("cannot rename {} to {}", staged.display(), keys_dir.display()))?;
    }
    std::fs::rename(&tmp, &store_path)
        .with_context(|| format!("cannot rename {} to {}", tmp.display(), store_path.display()))?;
    let mut guard = guard;
    guard.0 = None;
    undo.created_dir = None;
    sync_dir(&settings.data_dir)?;
    let report = RestoreReport {
        file: file.to_owned(),
        store: store_path.clone(),
        rows: checked.trailer.rows,
        tables: got,
        schema_from: checked.header.schema,
        schema: SCHEMA_VERSION,
        sealed_opened: opened,
        replaced,
        keys_added: adding.iter().flatten().map(|(f, _)| f.rsplit('.').next().unwrap_or_default().to_owned()).collect(),
    };
    tracing::info!(rows = report.rows, "backup restored");
    if json_output {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "restored {} rows from {} (made {} by isto {}) into {}{}; all {} sealed values open with the key ring",
            report.rows,
            file.display(),
            checked.header.created,
            checked.header.isto,
            store_path.display(),
            if replaced { ", replacing the store that was there" } else { "" },
            opened
        );
        if !report.keys_added.is_empty() {
            println!("added old sealing key(s) {} to the key ring", report.keys_added.join(", "));
        }
        if checked.header.schema < SCHEMA_VERSION {
            println!("the store was migrated from schema version {} to {SCHEMA_VERSION}", checked.header.schema);
        }
    }
    Ok(report)
}

/// Decodes every record of the restored (not yet renamed) store with the real record
/// types (`intents`, `offers`, `sellers`) and checks that the index tables name records
/// that exist ([`crate::store::Rx::dangling_refs`]); refuses with the table, the key or
/// id, and the reason, before anything replaces the data directory's store.
fn check_records(store: &Store) -> anyhow::Result<()> {
    use crate::records::{IntentRecord, OfferRecord, SellerRecord};
    use crate::store::Reads as _;
    let refuse = |table: &str, e: crate::store::StoreError| {
        anyhow::anyhow!("the backup's table {table} holds a record that does not decode: {e}; nothing was restored")
    };
    let mut broken: Option<anyhow::Error> = None;
    store
        .read(|rx| {
            rx.each_intent(|r: IntentRecord| {
                if let (None, Err(e)) = (&broken, records::check_intent(&r)) {
                    broken = Some(anyhow::anyhow!(
                        "the backup's intent {} breaks the input rules: {e}; nothing was restored",
                        r.id
                    ));
                }
            })
        })
        .map_err(|e| refuse("intents", e))?;
    if let Some(e) = broken {
        return Err(e);
    }
    store.read(|rx| rx.each_offer(|_: OfferRecord| ())).map_err(|e| refuse("offers", e))?;
    store.read(|rx| rx.all_sellers::<SellerRecord>().map(drop)).map_err(|e| refuse("sellers", e))?;
    let dangling = store.read(|rx| rx.dangling_refs(5)).context("cannot check the restored store's indexes")?;
    if let Some(d) = dangling.first() {
        bail!(
            "the backup's table {} has a row for {} {}, which is not in table {}{}; the backup is inconsistent, \
             nothing was restored",
            d.table,
            d.target.trim_end_matches('s'),
            d.id,
            d.target,
            if dangling.len() > 1 { format!(" (and {} more such rows)", dangling.len() - 1) } else { String::new() }
        );
    }
    Ok(())
}

/// The second pass of a restore: every row into `tmp`, every sealed value opened.
fn restore_rows(
    file: &Path,
    tmp: &Path,
    ring: &KeyRing,
    opened: &mut u64,
    bar: &ProgressBar,
) -> anyhow::Result<BTreeMap<&'static str, u64>> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<anyhow::Result<String>>(1024);
    let file = file.to_owned();
    let mut counted = 0u64;
    std::thread::scope(|s| {
        let reader = s.spawn(move || {
            let mut opened = 0u64;
            let out = read_backup(
                &file,
                |_| Ok(()),
                |_, line| tx.send(Ok(line.to_owned())).map_err(|_| anyhow::anyhow!("the restore stopped")),
                &mut |table, sealed| {
                    ring.open(&sealed).map(|_| opened += 1).map_err(|e| {
                        anyhow::anyhow!(
                            "the key ring cannot open a sealed value of table {table:?} ({e}); nothing was restored"
                        )
                    })
                },
            );
            if let Err(e) = out {
                let _ = tx.send(Err(e));
            }
            opened
        });
        let lines = rx.iter().inspect(|_| {
            counted += 1;
            bar.set_position(counted);
        });
        let restored = crate::store::restore_file(tmp, lines);
        let n = reader.join().map_err(|_| anyhow::anyhow!("the backup reader failed"))?;
        *opened = n;
        restored
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_value_is_an_object_of_exactly_kid_nonce_and_ct() {
        let mut seen = Vec::new();
        let v = json!({"contact": {"kid": "k1", "nonce": "n", "ct": "c"},
                       "list": [{"kid": "k2", "nonce": "n", "ct": "c"}],
                       "more": {"kid": "k3", "nonce": "n", "ct": "c", "x": 1},
                       "number": {"kid": "k4", "nonce": "n", "ct": 5}});
        each_sealed(&v, &mut |s| {
            seen.push(s.kid);
            Ok::<_, ()>(())
        })
        .unwrap();
        seen.sort();
        assert_eq!(seen, vec!["k1", "k2"]);
    }

    fn header(version: u64, schema: u64) -> String {
        json!({"format": FORMAT, "version": version, "isto": "9.9.9", "schema": schema, "created": "2026-12-01T00:00:00Z",
               "tables": {}, "rows": 0, "keysIncluded": false})
        .to_string()
    }

    #[test]
    fn a_header_of_a_newer_format_or_schema_or_another_file_is_refused_by_name() {
        assert!(parse_header(&header(FORMAT_VERSION, SCHEMA_VERSION)).is_ok());
        let e = parse_header(&header(FORMAT_VERSION + 1, SCHEMA_VERSION)).unwrap_err().to_string();
        assert!(e.contains(&format!("format version {}", FORMAT_VERSION + 1)) && e.contains("9.9.9"), "{e}");
        let e = parse_header(&header(FORMAT_VERSION, SCHEMA_VERSION + 1)).unwrap_err().to_string();
        assert!(e.contains(&format!("schema version {}", SCHEMA_VERSION + 1)), "{e}");
        // It names this isto as the one too old, not the writer's version as the minimum.
        assert!(e.contains(&format!("a newer isto than this one ({})", super::super::VERSION)), "{e}");
        assert!(!e.contains("isto 9.9.9 or newer"), "{e}");
        let e = parse_header(r#"{"t":"meta","k":"a","v":"b"}"#).unwrap_err().to_string();
        assert!(e.contains("not an isto backup"), "{e}");
    }
}
