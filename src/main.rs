//! `isto` entry point: parse the command line, start logging, dispatch.

use anyhow::Context as _;
use clap::{ArgMatches, CommandFactory as _, FromArgMatches as _};
use isto::cli::{AdminCommand, Cli, Command, OffersCommand};
use isto::config::Settings;
use std::process::ExitCode;

/// The process's allocator: jemalloc, with the options compiled in
/// (`JEMALLOC_SYS_WITH_MALLOC_CONF` in `.cargo/config.toml`: one arena, a background
/// thread that returns pages freed for a second to the system). glibc's allocator was
/// about a quarter of a read's CPU and kept what a load freed; see `docs/choices.md`
/// ("The allocator"). `_RJEM_MALLOC_CONF` in the environment overrides the options.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// In the package's binary, which has no unwind tables (`packaging/build-deb`: the cfg
/// `isto_no_unwind_tables`), backtraces are off: `RUST_BACKTRACE` and
/// `RUST_LIB_BACKTRACE` are removed before anything reads them, since a backtrace taken
/// without the tables (anyhow's errors and the panic message take one when either is
/// set) ends the process by SIGABRT in the unwinder. Called first in `main`, before any
/// thread starts (jemalloc's background thread starts at the first allocation, after
/// this, and reads no environment). Elsewhere, nothing (docs/choices.md "Unwind
/// tables"). Edition 2024 makes `remove_var` unsafe, which the crate forbids: moving
/// to it needs another way.
fn no_backtraces() {
    #[cfg(isto_no_unwind_tables)]
    for var in ["RUST_BACKTRACE", "RUST_LIB_BACKTRACE"] {
        std::env::remove_var(var);
    }
}

/// Starts logging to stderr. The filter: `--log-level` (or `ISTO_LOG_LEVEL`) when given;
/// else, with `default` (`isto serve`: `info`), `RUST_LOG` when set and valid, else
/// `default`; without `default` (the admin commands, whose output is their report)
/// nothing is logged. Whatever the filter, other crates log only at warn and above
/// ([`isto::app::log_ceiling`]). The filter is a list of `target=level` directives and a
/// default level (`info,isto::store=debug`): tracing-subscriber's `Targets`, decided
/// once per call site, not `EnvFilter`, whose span directives tracked every span entered
/// and left (about 1 % of a read's CPU); a `RUST_LOG` with span directives reads as
/// invalid (docs/choices.md, "The log filter is a list of targets").
///
/// Lines go to stderr through [`isto::app::logbuf`]: as they come, or, once `isto serve`
/// has called its `install`, in batches (a request's access line costs no `write(2)`).
fn init_logging(level: Option<&str>, default: Option<&str>) {
    use tracing_subscriber::filter::Targets;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let parse = |s: &str| s.parse::<Targets>().ok();
    let filter = match (level, default) {
        (Some(l), _) => parse(l),
        (None, Some(d)) => std::env::var("RUST_LOG").ok().and_then(|v| parse(&v)).or_else(|| parse(d)),
        (None, None) => None,
    };
    let Some(filter) = filter else { return };
    use std::io::IsTerminal as _;
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(isto::app::logbuf::Buffered)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false);
    // Global filters, not per-layer ones (`with_filter`): the registry still makes and
    // enters every span a per-layer filter refuses (rmcp's, several per MCP request);
    // refused here, such a span is never made.
    tracing_subscriber::registry()
        .with(filter)
        .with(tracing_subscriber::filter::filter_fn(isto::app::log_ceiling))
        .with(fmt)
        .init();
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
    no_backtraces();
    let matches = Cli::command().get_matches();
    let json = wants_json(&matches);
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    // `offers import` keeps 1 for "some rows were rejected"; its other failures exit 2
    // (`isto admin offers import --help`).
    let import = matches!(cli.command, Command::Admin(AdminCommand::Offers(OffersCommand::Import { .. })));
    let failure = if import { ExitCode::from(isto::admin::IMPORT_FAILED) } else { ExitCode::FAILURE };
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
                // With --json the failure is a JSON object on stdout; when stdout cannot
                // take it (its reader is gone), the error goes to stderr as without --json.
                let said = isto::cli::out::print_line(serde_json::json!({"ok": false, "error": msg}));
                if said.is_err() || isto::cli::out::stdout_closed() {
                    eprintln!("error: {msg}");
                }
            } else {
                eprintln!("error: {msg}");
            }
            failure
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let mut o = cli.global;
    let level = o.log_level.clone();
    let level = level.as_deref();
    match cli.command {
        Command::Serve => {
            let settings = Settings::load(&o)?;
            isto::app::logbuf::install();
            init_logging(level, Some("info"));
            let rt = tokio::runtime::Builder::new_multi_thread()
                .max_blocking_threads(isto::app::BLOCKING_THREADS)
                .thread_keep_alive(isto::app::BLOCKING_KEEP_ALIVE)
                .enable_all()
                .build()
                .context("starting tokio")?;
            let served = rt.block_on(isto::app::serve(settings));
            // A blocking task still running (a store read of a request dropped at the
            // shutdown bound) does not hold the exit up (10 s in all).
            rt.shutdown_timeout(std::time::Duration::from_millis(500));
            isto::app::logbuf::flush();
            served?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Check(args) => {
            init_logging(level, None);
            isto::check::command(&args.url, &args.revision, args.json)
        }
        Command::Generate(cmd) => {
            isto::generate::run(cmd, o.data_dir.as_deref())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Admin(AdminCommand::Init { json }) => {
            init_logging(level, None);
            // `init --config PATH` writes the skeleton there: a file that does not exist
            // yet is not an error.
            let config = o.config.clone();
            if o.config.as_ref().is_some_and(|p| !p.exists()) {
                o.config = None;
            }
            let settings = Settings::load(&o)?;
            isto::admin::init(&settings, config.as_deref(), json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Admin(cmd) => {
            let settings = Settings::load(&o)?;
            init_logging(level, None);
            Ok(ExitCode::from(isto::admin::command(&settings, cmd)?))
        }
    }
}
