//! `isto admin restore` into a PostgreSQL store: the backup is first restored and
//! checked in a temp redb store exactly as for a redb holder, then its rows are loaded
//! into the database in one transaction ([`Store::restore_rows`]), which is opened once
//! more so an older backup's schema is migrated. The database must hold no data unless
//! `--force`: then its rows are replaced in that one transaction.

use crate::config::Settings;
use crate::store::{Export, Store, StoreError};
use anyhow::Context as _;
use std::path::Path;

/// Rows in flight between the export of the temp store and the load into the database.
const IN_FLIGHT: usize = 1024;

/// Refuses, before anything is touched, a database that holds data unless `force`.
///
/// # Errors
/// The database cannot be reached, or holds data and `force` is not given (naming the
/// first table with rows).
pub(super) fn refuse_data(settings: &Settings, force: bool) -> anyhow::Result<()> {
    let name = settings.store_name();
    let store = Store::open_at(&settings.store_location()).with_context(|| format!("cannot open the store {name}"))?;
    match store.holds_data().with_context(|| format!("cannot read the store {name}"))? {
        Some(table) if !force => anyhow::bail!(
            "the store {name} is not empty (table {table:?} holds rows): restore into a new database, \
             or add --force to replace its data"
        ),
        _ => Ok(()),
    }
}

/// Loads the checked temp store `tmp` into the database of `settings`, replacing what it
/// holds when `replace`; whether it held data.
///
/// # Errors
/// The database cannot be reached or is not empty without `replace` (nothing is
/// written), or a storage error of either store.
pub(super) fn into_database(settings: &Settings, tmp: &Path, replace: bool) -> anyhow::Result<bool> {
    let name = settings.store_name();
    let to = Store::open_at(&settings.store_location()).with_context(|| format!("cannot open the store {name}"))?;
    let held = to.holds_data().with_context(|| format!("cannot read the store {name}"))?.is_some();
    let from = Store::open(tmp).with_context(|| format!("the restored store {} does not open", tmp.display()))?;
    let (send, recv) = std::sync::mpsc::sync_channel::<Result<String, StoreError>>(IN_FLIGHT);
    let exporter = std::thread::spawn(move || {
        let out = from.export(|step| -> Result<(), StoreError> {
            if let Export::Row { line, .. } = step {
                // The loader stopped (it failed): stop exporting too.
                send.send(Ok(line.to_owned())).map_err(|_| StoreError::Backup("the load stopped".to_owned()))?;
            }
            Ok(())
        });
        // A failed export ends the rows with its error, so the load rolls back rather
        // than commit what came before it.
        if let Err(e) = out {
            let _ = send.send(Err(e));
        }
    });
    let loaded = to.restore_rows(recv.into_iter(), replace);
    exporter.join().map_err(|_| anyhow::anyhow!("the export of the restored store failed"))?;
    loaded.with_context(|| format!("cannot restore into {name}; nothing was written there"))?;
    drop(to);
    // Opened again: an older backup's schema is migrated in the database.
    drop(
        Store::open_at(&settings.store_location())
            .with_context(|| format!("the restored store {name} does not open"))?,
    );
    Ok(held)
}
