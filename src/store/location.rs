//! Where a store lives ([`Location`]) and [`Store::open_at`], which opens either backend.

use super::{pg, PgSettings, Result, Store, StoreError};
use std::path::PathBuf;

/// Where a store lives (`[store] backend`): a redb file, or a PostgreSQL database.
#[derive(Debug, Clone)]
pub enum Location {
    /// The redb file at `path` with a page cache of `cache_mib` MiB.
    Redb {
        /// The store file.
        path: PathBuf,
        /// `store.cache_mib`.
        cache_mib: u64,
    },
    /// A PostgreSQL database (see `pg`).
    Postgres(PgSettings),
}

impl Store {
    /// Opens the store at `location`: [`Store::open_cached`] for a redb file; for
    /// PostgreSQL, connects, runs the SQL migrations and then the store's typed
    /// migrations in one write transaction (a database at a newer schema version is
    /// refused as a newer file is).
    ///
    /// # Errors
    /// As [`Store::open`]; the database's error when it cannot be reached.
    pub fn open_at(location: &Location) -> Result<Self> {
        match location {
            Location::Redb { path, cache_mib } => Self::open_cached(path, *cache_mib),
            Location::Postgres(settings) => {
                let never = Box::new(|_| Err(redb::DatabaseError::DatabaseAlreadyOpen));
                Ok(Self::assemble(never, None, None, Some(pg::open(settings)?)))
            }
        }
    }

    /// The first table other than `meta` that holds a row (`None`: the store holds
    /// nothing but what its open wrote).
    pub fn holds_data(&self) -> Result<Option<&'static str>> {
        self.write(|tx| first_filled(tx))
    }

    /// Loads the rows of a backup (as [`Store::export`] made them) into this store in one
    /// write transaction: `meta` is replaced by the backup's, every other table filled.
    /// Unless `replace`, the store must hold nothing but what its open wrote (the `meta`
    /// rows of the version and writer); with `replace`, every row of every table is
    /// removed first, in the same transaction (`isto admin restore --force`). This is how
    /// a redb backup moves into a PostgreSQL store (and back): the keys and sealed values
    /// are the same bytes on both backends. Reopen the store afterwards, so that the
    /// backup's schema version is migrated. Returns the rows written per table.
    ///
    /// # Errors
    /// [`StoreError::Backup`] when, without `replace`, a table other than `meta` holds a
    /// row (nothing is written), and as [`super::restore_file`].
    pub fn restore_rows<E: From<StoreError>>(
        &self,
        lines: impl Iterator<Item = Result<String, E>>,
        replace: bool,
    ) -> Result<std::collections::BTreeMap<&'static str, u64>, E> {
        self.write(|tx| {
            let filled = if replace { None } else { first_filled(tx)? };
            if let Some(t) = filled {
                let e = format!("the store is not empty (table {t:?} holds rows): restore into a new store");
                return Err(StoreError::Backup(e).into());
            }
            for t in super::schema::TABLES.iter().filter(|t| replace || t.name() == "meta") {
                t.clear(tx)?;
            }
            super::dump::load_rows(tx, lines)
        })
    }
}

/// The first table other than `meta` that holds a row in `tx`.
fn first_filled(tx: &super::Tx<'_>) -> Result<Option<&'static str>> {
    for t in super::schema::TABLES {
        if t.name() != "meta" && t.count_in(tx)? > 0 {
            return Ok(Some(t.name()));
        }
    }
    Ok(None)
}
