//! The store's error type: [`StoreError`], and [`DbError`], the database engine's
//! failure behind it.

use super::{IO_FAILURES, ISTO_VERSION, LAST_IO_FAILURE, SCHEMA_VERSION};

/// A failure reported by the database engine (redb: I/O, corruption, a second process
/// holding the file; PostgreSQL: the server's or the connection's error, which never
/// carries the connection's password). Opaque: match on [`StoreError`] and its methods
/// instead.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct DbError(Engine);

#[derive(Debug, thiserror::Error)]
enum Engine {
    #[error("{0}")]
    Redb(#[source] redb::Error),
    #[error("PostgreSQL: {}", .0.as_db_error().map_or_else(|| .0.to_string(), |db| format!("{} ({})", db.message(), db.code().code())))]
    Pg(#[source] tokio_postgres::Error),
}

impl From<tokio_postgres::Error> for StoreError {
    fn from(e: tokio_postgres::Error) -> Self {
        Self::Db(DbError(Engine::Pg(e)))
    }
}

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database engine reported an error (I/O, corruption, a second process holding
    /// the file: see [`StoreError::is_already_open`]).
    #[error("store: {0}")]
    Db(DbError),
    /// A record does not decode: `(key, cause)`.
    #[error("store record {0} is corrupt: {1}")]
    Corrupt(String, String),
    /// A record does not encode (nothing is written): `(table or namespace, cause)`.
    #[error("store: a {0} record does not encode: {1}")]
    Encode(String, String),
    /// The store cannot be used now: on redb the file is being (or could not be)
    /// opened again after an I/O failure (see [`super::REOPEN_INTERVAL`]); on PostgreSQL
    /// no connection was had within the pool's wait. The call may be retried.
    #[error("store: unavailable for now (the redb file is being reopened after an I/O failure, or the database did not answer in time); retry later")]
    Unavailable,
    /// A backup's rows or the store's tables do not fit a backup (the message says
    /// which row or table; never a key or value): see `dump`.
    #[error("backup: {0}")]
    Backup(String),
    /// The file is not an isto store (empty, not a regular file, not a redb database,
    /// or a redb database without isto's schema version): the reason and what to do.
    /// It is never initialised. The caller names the file.
    #[error("not an isto store: {0}")]
    NotAStore(String),
    /// The file was written by a newer isto (schema version above [`SCHEMA_VERSION`]).
    /// The message names the file's version and writer, this build's, and what to do.
    #[error(
        "the store was written by {} at store schema version {found}, which is newer than this isto \
         {ISTO_VERSION} knows ({SCHEMA_VERSION}): upgrade isto again (install {} or later), or restore a \
         backup made by this version (`isto admin restore FILE --force`, with the newer isto stopped)",
        writer.as_deref().map_or_else(|| "a newer isto".to_owned(), |w| format!("isto {w}")),
        writer.as_deref().map_or_else(|| "the version that wrote it".to_owned(), |w| format!("isto {w}"))
    )]
    TooNew {
        /// The version found in the file.
        found: u64,
        /// The isto version recorded as its last writer, when the file has one.
        writer: Option<String>,
    },
}

impl StoreError {
    /// Whether another process (usually `isto serve`) holds the store file.
    pub fn is_already_open(&self) -> bool {
        matches!(self, Self::Db(DbError(Engine::Redb(redb::Error::DatabaseAlreadyOpen))))
    }

    /// Whether the file could not be opened for want of permission (the process is not
    /// the data directory's owner, say).
    pub fn is_permission_denied(&self) -> bool {
        let mut e: Option<&(dyn std::error::Error + 'static)> = Some(self);
        while let Some(x) = e {
            if x.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::PermissionDenied) {
                return true;
            }
            e = x.source();
        }
        self.to_string().contains("Permission denied")
    }

    /// The error to give every write of a transaction that failed with `self`, beside
    /// the one that got `self`: redb's "previous I/O error" for an engine error (the
    /// handle is latched until it is reopened), the same error for a record that does not
    /// encode or decode, else [`StoreError::Unavailable`] (retry later).
    pub fn shared(&self) -> StoreError {
        match self {
            Self::Db(_) => Self::Db(DbError(Engine::Redb(redb::Error::PreviousIo))),
            Self::Corrupt(k, c) => Self::Corrupt(k.clone(), c.clone()),
            Self::Encode(t, c) => Self::Encode(t.clone(), c.clone()),
            _ => Self::Unavailable,
        }
    }
}

impl From<redb::Error> for StoreError {
    fn from(e: redb::Error) -> Self {
        if is_io_class(&e) {
            IO_FAILURES.with(|n| n.set(n.get().wrapping_add(1)));
            LAST_IO_FAILURE.with(|m| *m.borrow_mut() = Some(e.to_string()));
        }
        Self::Db(DbError(Engine::Redb(e)))
    }
}

/// Whether a redb error means the handle is (or may be) latched after an I/O failure
/// and must be closed and opened again.
fn is_io_class(e: &redb::Error) -> bool {
    matches!(e, redb::Error::Io(_) | redb::Error::PreviousIo | redb::Error::DatabaseClosed | redb::Error::Backend(_))
}

macro_rules! from_redb {
    ($($t:ty),*) => {$(impl From<$t> for StoreError { fn from(e: $t) -> Self { redb::Error::from(e).into() } })*};
}
from_redb!(redb::DatabaseError, redb::TransactionError, redb::TableError, redb::StorageError, redb::CommitError);

/// Result alias.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
