//! The admin socket, how admin commands reach a running `isto serve`: the server and the
//! blocking client (the protocol is in the module docs of [`crate::admin`]).

use super::Request;
use crate::catalogue::parse_json_row;
use crate::records::ImportCounts;
use crate::state::AppState;
use serde_json::{json, Value};
use std::io::{self, BufRead as _, Write as _};
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;

/// Most rows in one import request.
pub const MAX_ROWS: usize = 5000;
/// Longest request line, bytes (64 MiB).
pub const MAX_REQUEST_BYTES: usize = 64 << 20;
/// How long a client waits for the answer to `ping`.
pub const PING_TIMEOUT: Duration = Duration::from_secs(5);

/// This build's version, as `ping` reports it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Removes the socket file when dropped, if it is still the file this server bound.
#[derive(Debug)]
struct SocketFile {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        if std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.dev() == self.dev && m.ino() == self.ino) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A bound admin socket, ready to [`AdminSocket::run`].
#[derive(Debug)]
pub struct AdminSocket {
    listener: UnixListener,
    file: SocketFile,
    uid: u32,
}

impl AdminSocket {
    /// Binds the socket at `path` (mode 0600), inside a tokio runtime. A stale socket
    /// file is removed first (a live server would hold the store this process got).
    ///
    /// # Errors
    /// I/O errors; `AlreadyExists` when `path` exists and is not a socket.
    pub fn bind(path: &Path) -> io::Result<Self> {
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_socket() => std::fs::remove_file(path)?,
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists and is not a socket; move it away", path.display()),
                ))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let listener = UnixListener::bind(path)?;
        crate::crypto::set_mode(path, 0o600)?;
        let m = std::fs::symlink_metadata(path)?;
        // Created with this process's (effective) uid: the uid that may connect.
        let uid = m.uid();
        Ok(Self { listener, file: SocketFile { path: path.to_owned(), dev: m.dev(), ino: m.ino() }, uid })
    }

    /// The socket's path.
    #[cfg(test)]
    pub fn path(&self) -> &Path {
        &self.file.path
    }

    /// Accepts connections until `stop` is cancelled, then removes the socket file and
    /// waits for requests in progress.
    ///
    /// # Errors
    /// None so far (accept errors are logged and retried).
    pub async fn run(self, holder: AppState, stop: CancellationToken) -> io::Result<()> {
        tracing::info!(path = %self.file.path.display(), "admin socket listening");
        let mut conns = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        conns.spawn(connection(stream, holder.clone(), stop.clone(), self.uid));
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "admin socket: accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                },
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
            }
        }
        let Self { listener, file, .. } = self;
        drop(listener);
        drop(file);
        while conns.join_next().await.is_some() {}
        tracing::info!("admin socket closed");
        Ok(())
    }
}

/// [`AdminSocket::bind`] at the settings' socket path, then [`AdminSocket::run`].
///
/// # Errors
/// Binding errors (see [`AdminSocket::bind`]).
pub async fn serve_socket(holder: AppState, stop: CancellationToken) -> io::Result<()> {
    let socket = AdminSocket::bind(&holder.base.settings().admin_socket_path())?;
    socket.run(holder, stop).await
}

/// A refusal on the socket: `{"ok":false,"error":msg}`.
pub(super) fn failure(msg: impl Into<String>) -> Value {
    json!({"ok": false, "error": msg.into()})
}

/// The answer of `what` (an op) that failed inside: logged with its cause `e`, which the
/// answer names with `detail` (the store opened by the command), else points to the log.
pub(super) fn internal_failure(what: &str, e: &dyn std::fmt::Display, detail: bool) -> Value {
    tracing::error!(op = what, error = %e, "admin: command failed");
    failure(if detail { format!("{what} failed: {e}") } else { format!("{what} failed (see the server log)") })
}

/// Runs `job` on a blocking thread (a store transaction must not hold up the runtime);
/// a job that panicked is answered with [`internal_failure`].
async fn blocking(holder: &AppState, what: &str, job: impl FnOnce(&AppState) -> Value + Send + 'static) -> Value {
    let h = holder.clone();
    match tokio::task::spawn_blocking(move || job(&h)).await {
        Ok(v) => v,
        Err(e) => internal_failure(what, &e, false),
    }
}

async fn connection(stream: UnixStream, holder: AppState, stop: CancellationToken, uid: u32) {
    let peer = stream.peer_cred();
    let (read, mut write) = stream.into_split();
    let refusal = match peer {
        Ok(c) if c.uid() == uid || c.uid() == 0 => None,
        Ok(c) => {
            tracing::warn!(peer_uid = c.uid(), "admin socket: refused a connection from another user");
            Some(format!("permission denied: the admin socket serves uid {uid} only; run the command as that user"))
        }
        Err(e) => {
            tracing::warn!(error = %e, "admin socket: cannot read the peer's credentials");
            Some("permission denied: peer credentials unavailable".to_owned())
        }
    };
    if let Some(msg) = refusal {
        let _ = write.write_all(format!("{}\n", failure(msg)).as_bytes()).await;
        return;
    }
    let mut read = BufReader::new(read);
    let mut line = Vec::new();
    loop {
        line.clear();
        let mut limited = (&mut read).take(MAX_REQUEST_BYTES as u64 + 1);
        let n = tokio::select! {
            () = stop.cancelled() => break,
            n = limited.read_until(b'\n', &mut line) => n,
        };
        match n {
            Ok(0) => break,
            Ok(_) if line.len() > MAX_REQUEST_BYTES => {
                let msg = format!("request longer than {} MiB", MAX_REQUEST_BYTES >> 20);
                let _ = write.write_all(format!("{}\n", failure(msg)).as_bytes()).await;
                break;
            }
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(error = %e, "admin socket: read failed");
                break;
            }
        }
        let answer = match Request::parse(&line) {
            Ok(request) => respond(&holder, request).await,
            Err(msg) => Answer::Line(failure(msg)),
        };
        match answer {
            Answer::Line(response) => {
                if write.write_all(format!("{response}\n").as_bytes()).await.is_err() {
                    break;
                }
            }
            // A backup answers with many lines (see `backup.rs` in this directory).
            Answer::Backup => {
                if super::backup::serve(&holder, &mut write, &stop).await.is_err() {
                    break;
                }
            }
        }
    }
}

/// How a request is answered: with one line, or with the backup's stream of lines.
enum Answer {
    Line(Value),
    Backup,
}

/// Answers one request (an exhaustive match: an op without a server side does not compile).
async fn respond(holder: &AppState, request: Request) -> Answer {
    Answer::Line(match request {
        Request::Ping => json!({"ok": true, "version": VERSION}),
        Request::Import { rows, run } => {
            if rows.len() > MAX_ROWS {
                return Answer::Line(failure(format!("at most {MAX_ROWS} rows per request")));
            }
            blocking(holder, "import", move |h| import_rows(h, &rows, run.as_deref())).await
        }
        Request::FinishFull { run } => blocking(holder, "finish_full", move |h| finish_full(h, &run)).await,
        r @ (Request::SellerAdd { .. }
        | Request::SellerList
        | Request::SellerDisable { .. }
        | Request::SellerEnable { .. }) => {
            blocking(holder, "the seller command", move |h| super::sellers::answer(h, &r, false)).await
        }
        Request::Purge { dry_run } => blocking(holder, "purge", move |h| super::purge::answer(h, dry_run, false)).await,
        Request::Migrate => blocking(holder, "migrate", super::migrate::answer).await,
        Request::Stats => blocking(holder, "stats", |h| super::stats::answer(h, false)).await,
        Request::Backup => return Answer::Backup,
        r @ (Request::KeysStatus | Request::KeysRotate | Request::KeysReseal { .. } | Request::KeysRetire { .. }) => {
            blocking(holder, "the key command", move |h| super::keys::answer(h.base.store(), h.base.keys(), &r)).await
        }
    })
}

/// Ends the full-feed run `run` (blocking: one transaction).
fn finish_full(holder: &AppState, run: &str) -> Value {
    match holder.catalogue.withdraw_vanished(run) {
        Ok(gone) => {
            tracing::info!(withdrawn = gone.len(), "admin import: full feed finished");
            json!({"ok": true, "withdrawn": gone.len()})
        }
        Err(e) => internal_failure("withdrawing vanished offers", &e, true),
    }
}

/// Validates and imports one batch (blocking: gazetteer lookups and one transaction).
fn import_rows(holder: &AppState, rows: &[Value], run: Option<&str>) -> Value {
    let currencies: Vec<String> = holder.base.settings().rates.keys().cloned().collect();
    let mut inputs = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        match parse_json_row(row, &currencies) {
            Ok(input) => inputs.push(input),
            Err(e) => {
                // Counts only in the log: messages may quote row contents.
                tracing::warn!(rows = rows.len(), "admin import: batch refused, a row is invalid");
                crate::telemetry::offers_imported(0, 0, rows.len() as u64);
                return failure(format!("rows[{i}]: {e}"));
            }
        }
    }
    match holder.catalogue.import_offers_run(inputs, run) {
        Ok(counts) => {
            tracing::info!(
                rows = rows.len(),
                created = counts.created,
                updated = counts.updated,
                delivered = counts.delivered,
                "admin import: batch stored"
            );
            json!({"ok": true, "counts": counts})
        }
        Err(e) => internal_failure("import", &e, true),
    }
}

/// The client side (blocking): one connection, one request at a time.
#[derive(Debug)]
pub(crate) struct Client {
    reader: io::BufReader<std::os::unix::net::UnixStream>,
    writer: std::os::unix::net::UnixStream,
}

/// What connecting to the admin socket found.
#[derive(Debug)]
pub(crate) enum Connect {
    /// A server answered `ping`.
    Ready(Client),
    /// No socket file.
    Absent,
    /// A socket file that nothing answers.
    Stale,
}

impl Client {
    /// Connects and pings.
    ///
    /// # Errors
    /// The server refuses this user, or the socket cannot be used (other than stale).
    pub(crate) fn connect(path: &Path) -> anyhow::Result<Connect> {
        use anyhow::Context as _;
        if std::fs::symlink_metadata(path).is_err() {
            return Ok(Connect::Absent);
        }
        let stream = match std::os::unix::net::UnixStream::connect(path) {
            Ok(s) => s,
            Err(e) if matches!(e.kind(), io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound) => {
                return Ok(Connect::Stale)
            }
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => anyhow::bail!(
                "cannot use the admin socket {}: permission denied; run the command as the user that runs `isto serve`",
                path.display()
            ),
            Err(e) => return Err(e).with_context(|| format!("admin socket {}", path.display())),
        };
        stream.set_read_timeout(Some(PING_TIMEOUT))?;
        let mut client = Self { reader: io::BufReader::new(stream.try_clone()?), writer: stream };
        let answer = match client.request(&Request::Ping) {
            Ok(v) => v,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                return Ok(Connect::Stale)
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset) => {
                return Ok(Connect::Stale)
            }
            Err(e) => return Err(e).with_context(|| format!("admin socket {}", path.display())),
        };
        super::ok_or_bail(answer)
            .map_err(|msg| anyhow::anyhow!("the admin socket {} refused: {msg}", path.display()))?;
        client.writer.set_read_timeout(None)?;
        Ok(Connect::Ready(client))
    }

    /// Writes `request` as one line.
    fn send(&mut self, request: &Request) -> io::Result<()> {
        let mut line = serde_json::to_vec(request)?;
        line.push(b'\n');
        self.writer.write_all(&line)?;
        self.writer.flush()
    }

    /// Sends one request and returns the server's answer line as it is (`ok` or not).
    ///
    /// # Errors
    /// I/O errors; `UnexpectedEof` when the server closed the socket instead of
    /// answering, `InvalidData` when the answer is not JSON.
    pub(crate) fn request(&mut self, request: &Request) -> io::Result<Value> {
        self.send(request)?;
        let mut answer = String::new();
        if self.reader.read_line(&mut answer)? == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed the admin socket"));
        }
        serde_json::from_str(&answer).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }

    /// Sends one request whose answer is many lines, handing each (without its newline)
    /// to `on_line` until it answers false.
    ///
    /// # Errors
    /// I/O errors; [`Closed`] before `on_line` said stop; `on_line`'s error.
    pub(crate) fn stream(
        &mut self,
        request: &Request,
        on_line: &mut dyn FnMut(&str) -> anyhow::Result<bool>,
    ) -> anyhow::Result<()> {
        self.send(request)?;
        let mut answer = String::new();
        loop {
            answer.clear();
            match self.reader.read_line(&mut answer) {
                Ok(_) if answer.ends_with('\n') => answer.truncate(answer.len() - 1),
                // Nothing, or a line cut off: the server went away.
                Ok(_) => return Err(Closed.into()),
                Err(e) if matches!(e.kind(), io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset) => {
                    return Err(Closed.into())
                }
                Err(e) => return Err(e.into()),
            }
            if !on_line(&answer)? {
                return Ok(());
            }
        }
    }

    /// Sends one import batch.
    ///
    /// # Errors
    /// I/O errors, or the server's refusal.
    pub(crate) fn import(&mut self, rows: &[Value], run: Option<&str>) -> anyhow::Result<ImportCounts> {
        let answer = self.request(&Request::Import { rows: rows.to_vec(), run: run.map(str::to_owned) })?;
        let mut answer =
            super::ok_or_bail(answer).map_err(|msg| anyhow::anyhow!("the server refused the batch: {msg}"))?;
        Ok(serde_json::from_value(answer["counts"].take())?)
    }

    /// Ends a full-feed import: the server withdraws offers the feed no longer has.
    ///
    /// # Errors
    /// I/O errors, or the server's refusal.
    pub(crate) fn finish_full(&mut self, run: &str) -> anyhow::Result<u64> {
        let answer = self.request(&Request::FinishFull { run: run.to_owned() })?;
        let answer = super::ok_or_bail(answer)
            .map_err(|msg| anyhow::anyhow!("the server refused to finish the full import: {msg}"))?;
        Ok(answer.get("withdrawn").and_then(Value::as_u64).unwrap_or(0))
    }
}

/// The error of [`Client::stream`] when the server closes the socket before its answer ended.
#[derive(Debug, thiserror::Error)]
#[error("the server closed the admin socket before the answer ended")]
pub(crate) struct Closed;
