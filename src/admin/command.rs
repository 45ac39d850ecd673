//! The dispatch of `isto admin …` once the settings are loaded: each [`AdminCommand`] to
//! the function of this module that runs it, and the exit status it ends with.

use crate::cli::out::{print_json_or, print_line};
use crate::cli::{AdminCommand, KeysCommand, OffersCommand};
use crate::config::Settings;
use anyhow::Context as _;

/// Runs the admin command `cmd` and gives the process exit status: 0 on success;
/// [`super::IMPORT_REJECTED`] when an import refused rows; 1 when a key rotation left
/// rows to reseal. `init` ([`super::init`]) is a no-op here.
///
/// # Errors
/// The command's own error (a store, socket, file or argument failure), for the caller to
/// print (exit status 1, or [`super::IMPORT_FAILED`] for an import).
pub fn run(settings: &Settings, cmd: AdminCommand) -> anyhow::Result<u8> {
    match cmd {
        AdminCommand::Init { .. } => {}
        AdminCommand::Stats { json } => super::stats_command(settings, json).map(drop)?,
        AdminCommand::CheckConfig { json } => check_config(settings, json)?,
        AdminCommand::Offers(OffersCommand::Import { file, full, json }) => {
            return Ok(super::import(settings, &file, full, json)?.exit_code());
        }
        AdminCommand::Seller(cmd) => super::seller_command(settings, cmd)?,
        AdminCommand::Backup { out: Some(out), force, json, .. } => {
            super::backup(settings, &out, force, json).map(drop)?
        }
        AdminCommand::Backup { verify, json, .. } => {
            verify_backup(&verify.context("--out or --verify is required")?, json)?;
        }
        AdminCommand::Restore { file, force, keys, json } => {
            super::restore(settings, &file, force, keys.as_deref(), json).map(drop)?
        }
        AdminCommand::Migrate { dry_run, json } => super::migrate_command(settings, dry_run, json).map(drop)?,
        AdminCommand::Keys(cmd) => return keys(settings, cmd),
        AdminCommand::RegistryEntry { check_result, json } => {
            super::registry_entry(settings, check_result.as_deref(), json).map(drop)?
        }
        AdminCommand::Purge { dry_run, json } => super::purge_command(settings, dry_run, json).map(drop)?,
    }
    Ok(0)
}

/// `isto admin keys …`: 1 when a rotation left rows to reseal (run it again with
/// `--resume`), else 0.
fn keys(settings: &Settings, cmd: KeysCommand) -> anyhow::Result<u8> {
    match cmd {
        KeysCommand::Export { out, force, json } => super::keys_export(settings, &out, force, json).map(drop)?,
        KeysCommand::Rotate { resume, batch, json } => {
            let batch = usize::try_from(batch).context("--batch does not fit this machine's word size")?;
            let r = super::keys_rotate(settings, resume, batch, json)?;
            return Ok(u8::from(r.left != 0));
        }
        KeysCommand::Status { json } => super::keys_status(settings, json).map(drop)?,
        KeysCommand::Retire { id, json } => super::keys_retire(settings, &id, json).map(drop)?,
    }
    Ok(0)
}

/// `isto admin check-config`: the effective settings as JSON (`--json`: one line), else
/// the warnings on stderr and the settings pretty-printed.
fn check_config(settings: &Settings, json: bool) -> anyhow::Result<()> {
    let d = settings.describe();
    print_json_or(json, &d, || {
        for w in settings.warnings() {
            eprintln!("warning: {w}");
        }
        print_line("configuration is valid; effective settings:")?;
        print_line(serde_json::to_string_pretty(&d)?)
    })
}

/// `isto admin backup --verify FILE`: the verified backup's rows, schema, date, writer
/// and SHA-256 (`--json`: the verified header and trailer).
fn verify_backup(file: &std::path::Path, json: bool) -> anyhow::Result<()> {
    let v = super::verify_backup(file)?;
    print_json_or(json, &v, || {
        print_line(format_args!(
            "{} is a good backup: {} rows, schema version {}, made {} by isto {}; SHA-256 {}",
            file.display(),
            v.trailer.rows,
            v.header.schema,
            v.header.created,
            v.header.isto,
            v.file_sha256
        ))
    })
}
