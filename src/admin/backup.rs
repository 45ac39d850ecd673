//! `isto admin backup`, `isto admin restore` and `isto admin keys export`.
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
//! With `isto serve` running the export runs in the server and streams through the
//! admin socket: `{"op":"backup"}` → the header line, every row line, then
//! `{"ok":true,"rows":N}` (or `{"ok":false,"error":"…"}` at any point). Either way this
//! process writes the file: a temp file beside `--out` (mode 0600), compressed as the
//! lines arrive, synced, re-read and checked, then renamed over `--out` and the
//! directory synced. A restore checks the whole file before it writes a store
//! (`restore.rs` in this directory).

mod keys;
mod lines;
mod paths;
mod records;
mod restore;
mod restore_pg;

use crate::cli::out::{print_json_or, print_line};
pub use keys::keys_export;
use keys::{install_keys, stage_added_keys, AddedKeys};
pub use lines::MAX_LINE;
use paths::{check_out, create_private, dir_of, sync_dir, temp_beside, TempFile};
pub use restore::restore;

use super::socket::{Client, Connect};
use crate::clock::{rfc3339, Clock, SystemClock};
use crate::config::Settings;
use crate::crypto::{each_sealed, KeyRing, Sealed};
use crate::state::AppState;
use crate::store::{Export, Snapshot, Store, SCHEMA_VERSION};
use anyhow::{bail, Context as _};
use data_encoding::HEXLOWER;
use indicatif::ProgressBar;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The `format` of a backup's header.
pub const FORMAT: &str = "isto-backup";
/// The backup format version this isto writes and the newest it reads.
pub const FORMAT_VERSION: u64 = 1;
/// The `format` of a key ring export.
pub const KEYS_FORMAT: &str = "isto-keys";
/// zstd level (3: zstd's default, fast with a good ratio).
const LEVEL: i32 = 3;
/// How the progress bars of a backup and a restore are drawn (rows done of all).
const ROWS_BAR: &str = "{wide_bar} {pos}/{len} rows {per_sec} ETA {eta}";
/// What a backup says about the keys.
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
    /// The store's schema version.
    pub schema: u64,
    /// When the export's read transaction began (RFC 3339, UTC).
    pub created: String,
    /// Rows per table (every table of the layout, by name).
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
    /// `"socket"` or `"direct"`.
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
    /// Key ids of old sealing keys `--keys` added to an existing key ring.
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

/// Exports `store` as lines (the header made at `clock`'s now, then rows; no newline),
/// each handed to `emit`.
fn export_lines(
    store: &Store,
    clock: &dyn Clock,
    mut emit: impl FnMut(&str) -> anyhow::Result<()>,
) -> anyhow::Result<Snapshot> {
    store.export(|step| -> anyhow::Result<()> {
        match step {
            Export::Begin(s) => emit(&serde_json::to_string(&Header {
                format: FORMAT.to_owned(),
                version: FORMAT_VERSION,
                isto: super::VERSION.to_owned(),
                schema: s.schema_version,
                created: rfc3339(clock.now()),
                tables: s.tables.iter().map(|(t, n)| ((*t).to_owned(), *n)).collect(),
                rows: s.rows(),
                keys_included: false,
            })?),
            Export::Row { line, .. } => emit(line),
        }
    })
}

/// The server's side of `backup`: streams the export to `write` in chunks of about 64
/// KiB through a bounded channel, so a slow client slows the export down instead of
/// filling memory; a client that goes away stops it. A server stopping (`stop`) ends the
/// stream at once: the client sees no end line and writes nothing.
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

/// A row's table and value (the key stays opaque).
#[derive(Deserialize)]
struct RowView {
    t: String,
    #[serde(default)]
    v: Option<Value>,
}

/// Counts rows per table and sealed values per key id, and hashes the lines.
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
        HEXLOWER.encode(&self.sha.clone().finalize())
    }
}

/// The tables of `m` that have rows (a header lists every table of the layout).
fn nonzero(m: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    m.iter().filter(|(_, n)| **n > 0).map(|(k, n)| (k.clone(), *n)).collect()
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

/// Reads a backup file line by line, checking as it goes: the header, each row (to
/// `on_row` with its line number), then the trailer against every count and the
/// checksum. Nothing may follow the trailer.
fn read_backup(
    path: &Path,
    mut on_header: impl FnMut(&Header) -> anyhow::Result<()>,
    mut on_row: impl FnMut(u64, &str) -> anyhow::Result<()>,
    on_sealed: &mut dyn FnMut(&str, Sealed) -> anyhow::Result<()>,
) -> anyhow::Result<Verified> {
    let file = std::fs::File::open(path).with_context(|| format!("cannot open the backup {}", path.display()))?;
    let bytes = file.metadata()?.len();
    let hashing = Hashing { inner: file, sha: Sha256::new(), bytes: 0 };
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
    let file_sha256 = HEXLOWER.encode(&decoder.get_ref().get_ref().sha.clone().finalize());
    let digest = tally.digest();
    if digest != trailer.sha256 {
        bail!(
            "the backup {} fails its checksum: SHA-256 of its lines is {digest}, its trailer says {}; \
             the file is damaged, use another copy",
            path.display(),
            trailer.sha256
        );
    }
    let tables = &tally.tables;
    if tally.rows != header.rows
        || tally.rows != trailer.rows
        || *tables != nonzero(&header.tables)
        || *tables != nonzero(&trailer.tables)
    {
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

/// A reader or writer that hashes and counts the bytes that pass through it.
struct Hashing<T> {
    inner: T,
    sha: Sha256,
    bytes: u64,
}

impl<R: std::io::Read> std::io::Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.sha.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

impl<W: std::io::Write> std::io::Write for Hashing<W> {
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
/// The file cannot be read, is not a backup, is of a newer format or schema, or is
/// damaged (decompression, checksum, counts), naming the file and the cause.
pub fn verify(path: &Path) -> anyhow::Result<Verified> {
    read_backup(path, |_| Ok(()), |_, _| Ok(()), &mut |_, _| Ok(()))
}

/// The compressed, hashed file being written.
struct Writer {
    enc: zstd::stream::write::Encoder<'static, Hashing<std::io::BufWriter<std::fs::File>>>,
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

/// Runs `isto admin backup --out FILE` (see the module docs), printing a progress bar,
/// then the summary and [`KEYS_NOTE`] (or the [`BackupReport`] as JSON). `force`
/// replaces an existing `out`.
///
/// # Errors
/// `out` exists (without `force`); no store; the server's or the store's failure; a
/// write failure; the written file fails its check. `out` is then as it was.
pub fn backup(settings: &Settings, out: &Path, force: bool, json_output: bool) -> anyhow::Result<BackupReport> {
    check_out(settings, out, force)?;
    let tmp = temp_beside(out, "partial")?;
    let file = create_private(&tmp)?;
    let guard = TempFile(Some(tmp.clone()));
    let mut enc = zstd::stream::write::Encoder::new(
        Hashing { inner: std::io::BufWriter::with_capacity(256 << 10, file), sha: Sha256::new(), bytes: 0 },
        LEVEL,
    )?;
    // zstd's own checksum of the frame too, checked while decompressing.
    enc.include_checksum(true)?;
    let bar = crate::admin::progress(json_output, Some(0), ROWS_BAR);
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
    if tally.rows != header.rows || tally.tables != nonzero(&header.tables) {
        bail!("the export is incomplete: {} rows arrived, its header announced {}", tally.rows, header.rows);
    }
    enc.write_all(serde_json::to_string(&End { end: trailer.clone() })?.as_bytes())?;
    enc.write_all(b"\n")?;
    let hashing = enc.finish().context("cannot finish compressing")?;
    let file = hashing.inner.into_inner().map_err(|e| e.into_error()).context("cannot write the backup")?;
    file.sync_all().with_context(|| format!("cannot sync {}", tmp.display()))?;
    drop(file);
    let checked = verify(&tmp).context("the backup just written does not read back; nothing was replaced")?;
    if checked.file_sha256 != HEXLOWER.encode(&hashing.sha.finalize()) || checked.trailer != trailer {
        bail!("the backup just written reads back differently; nothing was replaced");
    }
    paths::move_into_place(&tmp, out, guard)?;
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
    print_json_or(json_output, &report, || {
        print_line(format_args!(
            "wrote {} ({} rows, {} bytes, schema version {}), checked: SHA-256 {}",
            out.display(),
            report.trailer.rows,
            report.bytes,
            report.header.schema,
            report.file_sha256
        ))?;
        print_line(format_args!("note: {KEYS_NOTE}"))
    })?;
    Ok(report)
}

/// Feeds the export (through the server's socket, or from the store opened here) into `w`.
fn export_into(settings: &Settings, w: &mut Writer) -> anyhow::Result<super::Route> {
    match Client::connect(&settings.admin_socket_path())? {
        Connect::Ready(mut client) => {
            let mut ended = None;
            // Row lines, the header line (with a "format"), then the end line.
            let streamed = client.stream(&super::Request::Backup, &mut |line| {
                if !line.starts_with("{\"t\":") {
                    let v: Value = serde_json::from_str(line).context("the server sent a line that is not JSON")?;
                    if v.get("format").is_none() {
                        ended = Some(v);
                        return Ok(false);
                    }
                }
                w.take(line)?;
                Ok(true)
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
        Connect::Absent | Connect::Stale => {
            super::require_store(settings, "nothing to back up")?;
            let store = super::open_offline(settings)?;
            export_lines(&store, &SystemClock, |line| w.take(line))?;
            Ok(super::Route::Direct)
        }
    }
}

#[cfg(test)]
mod tests;
