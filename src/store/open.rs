//! What an open of the store file checks before trusting it, and what it logs.
//!
//! - A missing file is the first start: a new store is made in a temp file beside it
//!   (`.isto.redb.new-<pid>`, mode 0600), given every table and the schema version in
//!   one committed transaction, then linked into place (a link never replaces a file a
//!   concurrent start made first) — so `isto.redb` never exists without isto's schema
//!   version, even after a crash during the first start.
//! - An existing file must be a regular file of at least one byte that opens as a redb
//!   database and records isto's schema version in `meta`; anything else — an empty
//!   file, random bytes, another program's redb file — is refused
//!   ([`StoreError::NotAStore`]) and never initialised, whatever it holds.
//! - redb's repair of a file not closed cleanly (a crash, `kill -9`) is logged
//!   ([`repair_logged`]).

use super::{Result, StoreError};
use redb::{Builder, Database, DatabaseError, ReadableDatabase as _};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Whether `path` exists as a file the store may open (the module docs' rules, checked
/// through a read-only open, which changes nothing); `Ok(false)`: nothing there. A file
/// the read-only open cannot judge (one that needs a repair, or that another process
/// holds) is left to the writable open, which checks it again.
///
/// # Errors
/// [`StoreError::NotAStore`] naming the rule; I/O errors reading its metadata.
pub(super) fn existing(path: &Path) -> Result<bool> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(StoreError::from(redb::Error::Io(e))),
    };
    if !meta.is_file() {
        return Err(StoreError::NotAStore("it is not a regular file".to_owned()));
    }
    if meta.len() == 0 {
        return Err(StoreError::NotAStore(
            "it is an empty file (0 bytes); isto never initialises an existing file. If nothing else wrote it, \
             remove it and start again (a missing store is made anew); else restore a backup \
             (`isto admin restore FILE`)"
                .to_owned(),
        ));
    }
    let db = match Builder::new().open_read_only(path) {
        Ok(db) => db,
        Err(e) => {
            return match not_redb(e) {
                e @ StoreError::NotAStore(_) => Err(e),
                _ => Ok(true),
            }
        }
    };
    let txn = db.begin_read()?;
    let tables = super::schema::table_list(txn.list_tables()?, txn.list_multimap_tables()?);
    let has_meta = tables.iter().any(|t| t == "meta");
    let rx = super::Rx { txn: super::reads::RxTxn::Redb(txn) };
    if !has_meta || matches!(super::schema::read_version(&rx), Ok(None)) {
        return Err(super::schema::not_isto(tables));
    }
    Ok(true)
}

/// Makes a new store at `path` (which did not exist): see the module docs. When another
/// process linked its new store into place first, that one is kept.
///
/// # Errors
/// I/O and storage errors (the temp file is removed).
pub(super) fn initialise(path: &Path, cache_bytes: usize) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or(super::FILE_NAME);
    let tmp = path.with_file_name(format!(".{name}.new-{}", std::process::id()));
    let io = |e: std::io::Error| StoreError::from(redb::Error::Io(e));
    let _ = std::fs::remove_file(&tmp);
    let made = (|| -> Result<()> {
        drop(std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp).map_err(io)?);
        let mut b = Builder::new();
        b.set_cache_size(cache_bytes);
        let db = b.create(&tmp)?;
        let txn = db.begin_write()?;
        super::schema::prepare(&mut super::Tx { txn: super::TxTxn::Redb(&txn) }, true)?;
        txn.commit()?;
        drop(db);
        match std::fs::hard_link(&tmp, path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io(e)),
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(io)?;
        }
        Ok(())
    })();
    let _ = std::fs::remove_file(&tmp);
    made
}

/// Opens the existing store file `path` with `b`, logging a check and repair redb runs
/// on it (a file not closed cleanly): once when it begins, once with its duration (ms)
/// when the open ends. `what` says why the file is opened ("start", "reopen").
pub(super) fn repair_logged(
    b: &mut Builder,
    path: &Path,
    what: &'static str,
) -> std::result::Result<Database, DatabaseError> {
    let repairing = Arc::new(AtomicBool::new(false));
    let file = path.display().to_string();
    {
        let (repairing, file) = (repairing.clone(), file.clone());
        b.set_repair_callback(move |session| {
            if !repairing.swap(true, Ordering::SeqCst) {
                tracing::warn!(file = %file, open = what,
                    "store: the file was not closed cleanly (a crash or kill?): checking and repairing it");
            }
            tracing::debug!(file = %file, progress = session.progress(), "store: repair in progress");
        });
    }
    let t0 = Instant::now();
    let out = b.open(path);
    if repairing.load(Ordering::SeqCst) {
        let ms = t0.elapsed().as_millis() as u64;
        match &out {
            Ok(_) => tracing::warn!(file = %file, open = what, ms, "store: checked and repaired"),
            Err(e) => tracing::error!(file = %file, open = what, ms, error = %e, "store: the repair failed"),
        }
    }
    out
}

/// The refusal of an open that redb turned down because the file is not a redb
/// database (random bytes, another format); other errors pass through.
pub(super) fn not_redb(e: DatabaseError) -> StoreError {
    let refuse = |why: String| {
        StoreError::NotAStore(format!(
            "it is not a redb database isto can read ({why}); isto never initialises an existing file: move it \
             away and restore a backup (`isto admin restore FILE`)"
        ))
    };
    match e {
        DatabaseError::Storage(redb::StorageError::Corrupted(why)) => refuse(why),
        DatabaseError::Storage(redb::StorageError::Io(e))
            if matches!(e.kind(), std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof) =>
        {
            refuse(e.to_string())
        }
        other => other.into(),
    }
}

/// The lock file beside the store file `path` (`isto.redb.lock`), which `isto serve`
/// holds for its whole life ([`super::Store::hold_file`]).
fn lock_path(path: &Path) -> std::path::PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".lock");
    p.into()
}

/// Whether another open file holds the lock file of `path` ([`super::Store::hold_file`]):
/// an `isto serve` whose store file may be closed for a moment (the page cache's
/// release, a reopen), when redb's own lock on the file is free.
pub(super) fn locked_elsewhere(path: &Path) -> bool {
    let Ok(f) = std::fs::File::open(lock_path(path)) else { return false };
    matches!(f.try_lock_shared(), Err(std::fs::TryLockError::WouldBlock))
}

/// Takes the lock file of `path` (made if missing, mode 0600): the file, locked, or `None`
/// when it cannot be made or another open file holds it.
pub(super) fn lock_file(path: &Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let f = std::fs::OpenOptions::new().create(true).truncate(false).write(true).mode(0o600).open(lock_path(path));
    f.ok().filter(|f| f.try_lock().is_ok())
}
