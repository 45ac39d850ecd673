//! `isto` entry point: parse the command line, start logging, dispatch.

use anyhow::Context as _;
use clap::Parser as _;
use isto::cli::{AdminCommand, Cli, Command, KeysCommand, OffersCommand};
use isto::config::{Overrides, Settings};
use std::process::ExitCode;

fn init_logging() {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::Layer as _;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    use std::io::IsTerminal as _;
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .with_filter(filter)
        .with_filter(tracing_subscriber::filter::filter_fn(isto::app::log_ceiling));
    tracing_subscriber::registry().with(fmt).init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
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
            eprintln!("error: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let mut o = Overrides {
        config: cli.config.clone(),
        data_dir: cli.data_dir.clone(),
        listen: cli.listen.clone(),
        public_url: cli.public_url.clone(),
        smtp_url: cli.smtp_url.clone(),
        mail_from: cli.mail_from.clone(),
    };
    match cli.command {
        Command::Serve(_) => {
            let settings = Settings::load(&o)?;
            init_logging();
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting tokio")?;
            let served = rt.block_on(isto::app::serve(settings));
            // A blocking task still running (a store read of a request dropped at the
            // shutdown bound) does not hold the exit up (issue 9 point 5: 10 s in all).
            rt.shutdown_timeout(std::time::Duration::from_millis(500));
            served?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Generate(cmd) => {
            isto::generate::run(cmd, o.data_dir.as_deref())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Admin(AdminCommand::Init) => {
            // `init --config PATH` writes the skeleton there: a file that does not exist
            // yet is not an error.
            if o.config.as_ref().is_some_and(|p| !p.exists()) {
                o.config = None;
            }
            let settings = Settings::load(&o)?;
            isto::admin::init(&settings, cli.config.as_deref())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Admin(cmd) => {
            let settings = Settings::load(&o)?;
            match cmd {
                AdminCommand::Init => Ok(ExitCode::SUCCESS),
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
                    Ok(ExitCode::from(u8::try_from(report.exit_code()).unwrap_or(1)))
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
                AdminCommand::Purge { dry_run, json } => {
                    isto::admin::purge_command(&settings, dry_run, json)?;
                    Ok(ExitCode::SUCCESS)
                }
            }
        }
    }
}
