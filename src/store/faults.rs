//! A storage backend whose writes fail on demand, for tests of what a failed commit does
//! above the store (the engine rebuilt after a failed durable commit, `base::write`):
//! [`Faults::fail_next_write`] makes the next write, resize or fsync of the file fail
//! once with an I/O error, as a failing disk does; everything after it works again, so
//! the store's reopen after the failure (see the module docs of `store`) succeeds.

use super::{Store, StoreError};
use redb::backends::FileBackend;
use redb::{BackendError, Database, StorageBackend};
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// When the file of a store opened by [`open_failing`] fails: `check` is called before
/// every write and resize (`sync` false) and every fsync (`sync` true) and returns the
/// I/O error to fail it with, if any.
pub(crate) trait Fail: std::fmt::Debug + Clone + Send + Sync + 'static {
    /// `Err` to fail the operation (see the trait docs).
    fn check(&self, sync: bool) -> std::io::Result<()>;
}

/// The switch of a store opened by [`open_faulty`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Faults {
    next_write: Arc<AtomicBool>,
}

impl Faults {
    /// The next write, resize or fsync of the file fails once (EIO).
    pub(crate) fn fail_next_write(&self) {
        self.next_write.store(true, Ordering::SeqCst);
    }

    /// Whether the armed failure is still to come.
    pub(crate) fn armed(&self) -> bool {
        self.next_write.load(Ordering::SeqCst)
    }
}

impl Fail for Faults {
    fn check(&self, _sync: bool) -> std::io::Result<()> {
        if self.next_write.swap(false, Ordering::SeqCst) {
            Err(std::io::Error::from_raw_os_error(5))
        } else {
            Ok(())
        }
    }
}

/// A file backend that fails as its [`Fail`] says.
#[derive(Debug)]
struct Failing<F> {
    file: FileBackend,
    fail: F,
}

impl<F: Fail> StorageBackend for Failing<F> {
    fn len(&self) -> std::io::Result<u64> {
        self.file.len()
    }
    fn read(&self, offset: u64, out: &mut [u8]) -> std::io::Result<()> {
        self.file.read(offset, out)
    }
    fn set_len(&self, len: u64) -> std::io::Result<()> {
        self.fail.check(false)?;
        self.file.set_len(len)
    }
    fn sync_data(&self) -> std::io::Result<()> {
        self.fail.check(true)?;
        self.file.sync_data()
    }
    fn write(&self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        self.fail.check(false)?;
        self.file.write(offset, data)
    }
    fn close(&self) -> std::io::Result<()> {
        self.file.close()
    }
    fn try_lock_range(&self, s: Bound<u64>, e: Bound<u64>) -> Result<bool, BackendError> {
        self.file.try_lock_range(s, e)
    }
    fn try_lock_shared_range(&self, s: Bound<u64>, e: Bound<u64>) -> Result<bool, BackendError> {
        self.file.try_lock_shared_range(s, e)
    }
    fn lock_range(&self, s: Bound<u64>, e: Bound<u64>) -> Result<(), BackendError> {
        self.file.lock_range(s, e)
    }
    fn lock_shared_range(&self, s: Bound<u64>, e: Bound<u64>) -> Result<(), BackendError> {
        self.file.lock_shared_range(s, e)
    }
    fn unlock_range(&self, s: Bound<u64>, e: Bound<u64>) -> Result<(), BackendError> {
        self.file.unlock_range(s, e)
    }
    fn query_lock_range(&self, s: Bound<u64>, e: Bound<u64>) -> Result<bool, BackendError> {
        self.file.query_lock_range(s, e)
    }
}

/// A new store at `path` over a file that fails as `fail` says (also after the store
/// reopens the file).
///
/// # Errors
/// As [`Store::open`].
pub(crate) fn open_failing<F: Fail>(path: &Path, fail: F) -> Result<Store, StoreError> {
    let path = path.to_owned();
    Store::open_with(
        Box::new(move |_| {
            let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path)?;
            Database::builder().create_with_backend(Failing { file: FileBackend::new(file)?, fail: fail.clone() })
        }),
        None,
        true,
    )
}

/// A new store at `path` over a backend that fails as the returned [`Faults`] say (also
/// after the store reopens the file).
///
/// # Errors
/// As [`Store::open`].
pub(crate) fn open_faulty(path: &Path) -> Result<(Store, Faults), StoreError> {
    let faults = Faults::default();
    Ok((open_failing(path, faults.clone())?, faults))
}
