//! `isto` entry point: parse the command line, start logging, dispatch.

use anyhow::Context as _;
use clap::{ArgMatches, CommandFactory as _, FromArgMatches as _};
use isto::cli::{AdminCommand, Cli, Command, KeysCommand, OffersCommand};
use isto::config::{Overrides, Settings};
use std::process::ExitCode;

/// Starts logging to stderr. The filter: `--log-level` (or `ISTO_LOG_LEVEL`) when given;
/// else, with `default` (`isto serve`: `info`), `RUST_LOG` when set and valid, else
/// `default`; without `default` (the admin commands, whose output is their report)
/// nothing is logged. Whatever the filter, other crates log only at warn and above
/// ([`isto::app::log_ceiling`]).
fn init_logging(level: Option<&str>, default: Option<&str>) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::EnvFilter;
    use tracing_subscriber::Layer as _;
    let filter = match level {
        Some(l) => EnvFilter::new(l),
        None => match default {
            Some(d) => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(d)),
            None => return,
        },
    };
    use std::io::IsTerminal as _;
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .with_filter(filter)
        .with_filter(tracing_subscriber::filter::filter_fn(isto::app::log_ceiling));
    tracing_subscriber::registry().with(fmt).init();
}

/// Whether the command given has `--json` set (every admin command has the flag).
fn wants_json(matches: &ArgMatches) -> bool {
    let mut m = matches;
    loop {
        if let Ok(Some(true)) = m.try_get_one::<bool>("json").map(|v| v.copied()) {
            return true;
        }
        match m.subcommand() {
            Some((_, sub)) => m = sub,
            None => return false,
        }
    }
}

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let json = wants_json(&matches);
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    // `offers import` keeps 1 for "some rows were rejected"; its other failures exit 2
    // (`isto admin offers import --help`).
    let failure = match cli.command {
        Command::Admin(AdminCommand::Offers(OffersCommand::Import { .. })) => {
            ExitCode::from(isto::admin::IMPORT_FAILED)
        }
        _ => ExitCode::FAILURE,
    };
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            // Each cause once: many errors already quote their source in their message.
            let mut msg = String::new();
            for cause in e.chain() {
                let c = cause.to_string();
                if !msg.contains(&c) {
                    if !msg.is_empty() {
                        msg.push_str(": ");
                    }
                    msg.push_str(&c);
                }
            }
            if json {
                // With --json the failure is a JSON object on stdout too.
                println!("{}", serde_json::json!({"ok": false, "error": msg}));
            } else {
                eprintln!("error: {msg}");
            }
            failure
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let mut o = Overrides {
        config: cli.config.clone(),
        data_dir: cli.data_dir.clone(),
        listen: cli.listen.clone(),
        metrics_listen: cli.metrics_listen.clone(),
        public_url: cli.public_url.clone(),
        smtp_url: cli.smtp_url.clone(),
        mail_from: cli.mail_from.clone(),
        mail_helo_name: cli.mail_helo_name.clone(),
        store_backend: cli.store_backend.clone(),
        store_url: cli.store_url.clone(),
        store_pool_size: cli.store_pool_size,
    };
    let level = cli.log_level.as_deref();
    match cli.command {
        Command::Serve(_) => {
            let settings = Settings::load(&o)?;
            init_logging(level, Some("info"));
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting tokio")?;
            let served = rt.block_on(isto::app::serve(settings));
            // A blocking task still running (a store read of a request dropped at the
            // shutdown bound) does not hold the exit up (issue 9 point 5: 10 s in all).
            rt.shutdown_timeout(std::time::Duration::from_millis(500));
            served?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Check(args) => {
            init_logging(level, None);
            isto::check::command(&args.url, &args.revision, args.json).map_err(anyhow::Error::msg)
        }
        Command::Generate(cmd) => {
            isto::generate::run(cmd, o.data_dir.as_deref())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Admin(AdminCommand::Init { json }) => {
            init_logging(level, None);
            // `init --config PATH` writes the skeleton there: a file that does not exist
            // yet is not an error.
            if o.config.as_ref().is_some_and(|p| !p.exists()) {
                o.config = None;
            }
            let settings = Settings::load(&o)?;
            isto::admin::init_report(&settings, cli.config.as_deref(), json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Admin(cmd) => {
            let settings = Settings::load(&o)?;
            init_logging(level, None);
            match cmd {
                AdminCommand::Init { .. } => Ok(ExitCode::SUCCESS),
                AdminCommand::Stats { json } => {
                    isto::admin::stats_command(&settings, json)?;
                    Ok(ExitCode::SUCCESS)
                }
                AdminCommand::CheckConfig { json } => {
                    let d = settings.describe();
                    if json {
                        println!("{d}");
                    } else {
                        for w in settings.warnings() {
                            eprintln!("warning: {w}");
                        }
                        println!("configuration is valid; effective settings:");
                        println!("{}", serde_json::to_string_pretty(&d)?);
                    }
                    Ok(ExitCode::SUCCESS)
                }
                AdminCommand::Offers(OffersCommand::Import { file, full, json }) => {
                    let report = isto::admin::import_feed(&settings, &file, full, json)?;
                    Ok(ExitCode::from(report.exit_code()))
                }
                AdminCommand::Seller(cmd) => {
                    isto::admin::seller_command(&settings, cmd)?;
                    Ok(ExitCode::SUCCESS)
                }
                AdminCommand::Backup { out: Some(out), force, json, .. } => {
                    isto::admin::backup(&settings, &out, force, json)?;
                    Ok(ExitCode::SUCCESS)
                }
                AdminCommand::Backup { verify, json, .. } => {
                    let file = verify.context("--out or --verify is required")?;
                    let v = isto::admin::verify_backup(&file)?;
                    if json {
                        println!("{}", serde_json::to_string(&v)?);
                    } else {
                        println!(
                            "{} is a good backup: {} rows, schema version {}, made {} by isto {}; SHA-256 {}",
                            file.display(),
                            v.trailer.rows,
                            v.header.schema,
                            v.header.created,
                            v.header.isto,
                            v.file_sha256
                        );
                    }
                    Ok(ExitCode::SUCCESS)
                }
                AdminCommand::Restore { file, force, keys, json } => {
                    isto::admin::restore(&settings, &file, force, keys.as_deref(), json)?;
                    Ok(ExitCode::SUCCESS)
                }
                AdminCommand::Keys(KeysCommand::Export { out, force, json }) => {
                    isto::admin::keys_export(&settings, &out, force, json)?;
                    Ok(ExitCode::SUCCESS)
                }
                AdminCommand::Migrate { dry_run, json } => {
                    isto::admin::migrate_command(&settings, dry_run, json)?;
                    Ok(ExitCode::SUCCESS)
                }
                AdminCommand::Keys(KeysCommand::Rotate { resume, batch, json }) => {
                    let r = isto::admin::keys_rotate(&settings, resume, usize::try_from(batch).unwrap_or(500), json)?;
                    Ok(if r.left == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
                }
                AdminCommand::Keys(KeysCommand::Status { json }) => {
                    isto::admin::keys_status(&settings, json)?;
                    Ok(ExitCode::SUCCESS)
                }
                AdminCommand::Keys(KeysCommand::Retire { id, json }) => {
                    isto::admin::keys_retire(&settings, &id, json)?;
                    Ok(ExitCode::SUCCESS)
                }
                AdminCommand::RegistryEntry { check_result, json } => {
                    isto::admin::registry_entry(&settings, check_result.as_deref(), json)?;
                    Ok(ExitCode::SUCCESS)
                }
                AdminCommand::Purge { dry_run, json } => {
                    isto::admin::purge_command(&settings, dry_run, json)?;
                    Ok(ExitCode::SUCCESS)
                }
            }
        }
    }
}
