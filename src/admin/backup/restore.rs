//! `isto admin restore FILE`: the checks before anything is touched, the staged keys,
//! the rows into a new store file beside the live one, checked and then renamed (see the
//! module docs of `admin::backup`).

use super::*;
use crate::cli::out::{print_json_or, print_line};

/// Removes, when dropped, what a failed restore created (each `None` once kept).
struct Undo {
    staged_keys: Option<PathBuf>,
    created_dir: Option<PathBuf>,
    scratch: Option<PathBuf>,
}

impl Drop for Undo {
    fn drop(&mut self) {
        for d in [self.scratch.take(), self.staged_keys.take(), self.created_dir.take()].into_iter().flatten() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// Runs `isto admin restore FILE` (see the module docs); `keys` first installs a `keys
/// export` file, or adds its missing old keys.
///
/// # Errors
/// `isto serve` runs; the data directory has a store (without `force`); a newer format
/// or schema, a damaged file, a sealed value the key ring cannot open. The data
/// directory is then left as it was.
pub fn restore(
    settings: &Settings,
    file: &Path,
    force: bool,
    keys: Option<&Path>,
    json_output: bool,
) -> anyhow::Result<RestoreReport> {
    let checked = verify(file)?;
    let mut replaced = refuse_target(settings, force, keys)?;
    let store_path = settings.store_path();
    let key_path = settings.key_path();
    let mut undo = Undo { staged_keys: None, created_dir: None, scratch: None };
    if !settings.data_dir.exists() {
        std::fs::create_dir_all(&settings.data_dir)
            .with_context(|| format!("cannot create the data directory {}", settings.data_dir.display()))?;
        undo.created_dir = Some(settings.data_dir.clone());
        crate::crypto::set_mode(&settings.data_dir, 0o700)?;
    }
    let keys_dir = dir_of(&key_path).to_owned();
    let (ring_path, adding) = match keys {
        Some(k) => stage_keys(settings, k, &keys_dir, &mut undo)?,
        None => (key_path.clone(), None),
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
    let mut guard = TempFile(Some(tmp.clone()));
    let (got, opened) = restore_checked(settings, file, &checked, &tmp, &ring, json_output)?;
    if settings.store_postgres.is_some() {
        // Checked in the temp redb store above; then moved into the empty database.
        replaced = super::restore_pg::into_database(settings, &tmp, force)?;
    }
    install_staged_keys(&keys_dir, adding.as_ref(), &mut undo)?;
    if settings.store_postgres.is_none() {
        std::fs::rename(&tmp, &store_path)
            .with_context(|| format!("cannot rename {} to {}", tmp.display(), store_path.display()))?;
        guard.0 = None;
    }
    undo.created_dir = None;
    sync_dir(&settings.data_dir)?;
    let report = RestoreReport {
        file: file.to_owned(),
        store: if settings.store_postgres.is_some() { settings.store_name().into() } else { store_path.clone() },
        rows: checked.trailer.rows,
        tables: got,
        schema_from: checked.header.schema,
        schema: SCHEMA_VERSION,
        sealed_opened: opened,
        replaced,
        keys_added: adding.iter().flatten().map(|(f, _)| f.rsplit('.').next().unwrap_or_default().to_owned()).collect(),
    };
    tracing::info!(rows = report.rows, "backup restored");
    print_report(&report, &checked, json_output)?;
    Ok(report)
}

/// The refusals before anything is touched (see [`restore`]); whether a store is replaced.
fn refuse_target(settings: &Settings, force: bool, keys: Option<&Path>) -> anyhow::Result<bool> {
    if let Connect::Ready(_) = Client::connect(&settings.admin_socket_path())? {
        bail!(
            "`isto serve` is running on {} (its admin socket answers): stop it, then restore",
            settings.data_dir.display()
        );
    }
    let store_path = settings.store_path();
    if settings.store_postgres.is_some() {
        super::restore_pg::refuse_data(settings, force)?;
    }
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
    Ok(replaced)
}

/// Stages the key export `k` beside `keys_dir` (recorded in `undo`): the ring to restore
/// with, and the old keys to add when the directory has a key.
fn stage_keys(
    settings: &Settings,
    k: &Path,
    keys_dir: &Path,
    undo: &mut Undo,
) -> anyhow::Result<(PathBuf, Option<AddedKeys>)> {
    let name = keys_dir.file_name().and_then(|n| n.to_str()).unwrap_or("keys");
    let staged = keys_dir.with_file_name(format!("{name}.restoring"));
    if staged.exists() {
        std::fs::remove_dir_all(&staged).with_context(|| format!("cannot remove the leftover {}", staged.display()))?;
    }
    undo.staged_keys = Some(staged.clone());
    if !settings.key_path().exists() {
        return Ok((install_keys(settings, k, &staged)?, None));
    }
    let check = staged.with_file_name(format!("{name}.checking"));
    if check.exists() {
        std::fs::remove_dir_all(&check).with_context(|| format!("cannot remove the leftover {}", check.display()))?;
    }
    undo.scratch = Some(check.clone());
    let (ring, add) = stage_added_keys(settings, k, &staged, &check)?;
    Ok((ring, Some(add)))
}

/// Restores the checked backup `file` into the temp store `tmp` with `ring`, opens it
/// (migrating an older schema), checks its records and row counts and drops the old offer
/// index; the rows per table and the number of sealed values opened.
fn restore_checked(
    settings: &Settings,
    file: &Path,
    checked: &Verified,
    tmp: &Path,
    ring: &KeyRing,
    json_output: bool,
) -> anyhow::Result<(BTreeMap<String, u64>, u64)> {
    let bar = crate::admin::progress(json_output, Some(checked.trailer.rows), ROWS_BAR);
    let mut opened = 0u64;
    let restored = restore_rows(file, tmp, ring, &mut opened, &bar);
    bar.finish_and_clear();
    let restored = restored?;
    let restored_store =
        Store::open(tmp).with_context(|| format!("the restored store {} does not open", tmp.display()))?;
    check_records(&restored_store)?;
    drop(restored_store);
    let got: BTreeMap<String, u64> =
        restored.iter().filter(|(_, n)| **n > 0).map(|(k, n)| ((*k).to_owned(), *n)).collect();
    if got != nonzero(&checked.header.tables) {
        bail!("the restored store does not hold the backup's rows; nothing was replaced");
    }
    let index = settings.data_dir.join("index");
    if index.exists() {
        std::fs::remove_dir_all(&index)
            .with_context(|| format!("cannot remove the old offer index {}", index.display()))?;
    }
    Ok((got, opened))
}

/// Puts the staged keys in place: the old keys `adding` written into `keys_dir` (nothing
/// replaced), or the staged directory renamed over an empty `keys_dir`.
fn install_staged_keys(keys_dir: &Path, adding: Option<&AddedKeys>, undo: &mut Undo) -> anyhow::Result<()> {
    if let Some(add) = adding {
        for (f, text) in add {
            let to = keys_dir.join(f);
            crate::crypto::write_private(&to, text.as_bytes())
                .with_context(|| format!("cannot write {}", to.display()))?;
        }
        sync_dir(keys_dir)?;
        if let Some(staged) = undo.staged_keys.take() {
            let _ = std::fs::remove_dir_all(staged);
        }
    } else if let Some(staged) = undo.staged_keys.take() {
        if keys_dir.exists() {
            std::fs::remove_dir(keys_dir).with_context(|| format!("cannot replace {}", keys_dir.display()))?;
        }
        std::fs::rename(&staged, keys_dir)
            .with_context(|| format!("cannot rename {} to {}", staged.display(), keys_dir.display()))?;
    }
    Ok(())
}

/// Prints the restore's summary (or, with `json_output`, the report as JSON).
fn print_report(report: &RestoreReport, checked: &Verified, json_output: bool) -> anyhow::Result<()> {
    print_json_or(json_output, report, || {
        print_line(format_args!(
            "restored {} rows from {} (made {} by isto {}) into {}{}; all {} sealed values open with the key ring",
            report.rows,
            report.file.display(),
            checked.header.created,
            checked.header.isto,
            report.store.display(),
            if report.replaced { ", replacing the store that was there" } else { "" },
            report.sealed_opened
        ))?;
        if !report.keys_added.is_empty() {
            print_line(format_args!("added old sealing key(s) {} to the key ring", report.keys_added.join(", ")))?;
        }
        if checked.header.schema < SCHEMA_VERSION {
            print_line(format_args!(
                "the store was migrated from schema version {} to {SCHEMA_VERSION}",
                checked.header.schema
            ))?;
        }
        Ok(())
    })
}

/// Decodes every record of the restored (not yet renamed) store with the real record
/// types, checks that each `intent_targets` row says what its intent record says, and
/// that the index tables name records that exist
/// ([`crate::store::Rx::dangling_refs`]); refuses naming the table, the id and the reason.
fn check_records(store: &Store) -> anyhow::Result<()> {
    use crate::accounts::{Account, SessionRecord};
    use crate::records::{DeliveryTarget, IntentRecord, OfferRecord, SellerRecord};
    use crate::store::{Ns, Reads as _};
    let refuse = |table: &str, e: crate::store::StoreError| {
        anyhow::anyhow!("the backup's table {table} holds a record that does not decode: {e}; nothing was restored")
    };
    // What an import reads of an active intent must be what its record says (the
    // bookkeeping aside, which its own row overrides).
    let targets: Vec<DeliveryTarget> =
        store.read(|rx| rx.all_intent_targets()).map_err(|e| refuse("intent_targets", e))?;
    let mut targets: std::collections::HashMap<String, DeliveryTarget> =
        targets.into_iter().map(|t| (t.id.clone(), t)).collect();
    let mut broken: Option<anyhow::Error> = None;
    store
        .read(|rx| {
            rx.each_intent(|r: IntentRecord| {
                let stale = targets.remove(&r.id).is_some_and(|t| {
                    let mut want = r.delivery_target();
                    (want.match_count, want.last_delivered) = (t.match_count, t.last_delivered);
                    t != want
                });
                if broken.is_none() {
                    broken = match records::check_intent(&r) {
                        Err(e) => Some(anyhow::anyhow!(
                            "the backup's intent {} breaks the input rules: {e}; nothing was restored",
                            r.id
                        )),
                        Ok(()) if stale => Some(anyhow::anyhow!(
                            "the backup's table intent_targets has a row for intent {} that differs from its record; \
                             the backup is inconsistent, nothing was restored",
                            r.id
                        )),
                        Ok(()) => None,
                    };
                }
            })
        })
        .map_err(|e| refuse("intents", e))?;
    if let Some(e) = broken {
        return Err(e);
    }
    store.read(|rx| rx.each_offer(|_: OfferRecord| ())).map_err(|e| refuse("offers", e))?;
    store.read(|rx| rx.all_sellers::<SellerRecord>().map(drop)).map_err(|e| refuse("sellers", e))?;
    store.read(|rx| rx.records::<Account>(Ns::Account).map(drop)).map_err(|e| refuse("records", e))?;
    store.read(|rx| rx.records::<SessionRecord>(Ns::Session).map(drop)).map_err(|e| refuse("records", e))?;
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
