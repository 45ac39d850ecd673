//! `isto` entry point: parse the command line, start logging, dispatch.

use anyhow::Context as _;
use clap::Parser as _;
use isto::cli::{AdminCommand, Cli, Command, OffersCommand};
use isto::config::{Overrides, Settings};
use std::process::ExitCode;

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rmcp=warn"));
    use std::io::IsTerminal as _;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let mut o = Overrides { config: cli.config.clone(), data_dir: cli.data_dir.clone(), ..Default::default() };
    match cli.command {
        Command::Serve(a) => {
            o.listen = a.listen;
            o.public_url = a.public_url;
            o.smtp_url = a.smtp_url;
            o.mail_from = a.mail_from;
            let settings = Settings::load(&o)?;
            init_logging();
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting tokio")?;
            rt.block_on(isto::app::serve(settings))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Admin(cmd) => {
            let settings = Settings::load(&o)?;
            match cmd {
                AdminCommand::Init => {
                    isto::admin::init(&settings, cli.config.as_deref())?;
                    Ok(ExitCode::SUCCESS)
                }
                AdminCommand::CheckConfig { json } => {
                    let d = settings.describe();
                    if json {
                        println!("{d}");
                    } else {
                        println!("configuration is valid; effective settings:");
                        println!("{}", serde_json::to_string_pretty(&d)?);
                    }
                    Ok(ExitCode::SUCCESS)
                }
                AdminCommand::Offers(OffersCommand::Import { file, full, json }) => {
                    let report = isto::admin::import_feed(&settings, &file, full, json)?;
                    Ok(ExitCode::from(u8::try_from(report.exit_code()).unwrap_or(1)))
                }
            }
        }
    }
}
