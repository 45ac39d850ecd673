//! Command-line definitions (clap), and [`out`]: the commands' standard output.
// These doc comments are the `--help` text, where a URL or `<listen>` is plain text, not
// Markdown.
#![allow(rustdoc::bare_urls, rustdoc::invalid_html_tags)]

pub mod out;

use crate::config::Overrides;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// isto — an Isto Intents intent holder: MCP tools for assistants, double opt-in consent
/// pages, catalogue and matching, in one binary.
#[derive(Debug, Parser)]
// `--version` names the commit (build.rs): `isto 0.1.0 (abc1234 2026-12-02)`.
#[command(
    name = "isto",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("ISTO_BUILD"), ")"),
    about,
    long_about = None,
    propagate_version = true
)]
pub struct Cli {
    /// The global options: config file, data directory, addresses, log level, mail and
    /// store ([`Overrides`]; its field docs are their `--help` text).
    #[command(flatten)]
    pub global: Overrides,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the holder: MCP at /mcp, pages, mail (run it under systemd).
    // No options of its own: listen, URL and mail options are global (`check-config` shows them).
    Serve,
    /// Operator commands; they work whether or not `isto serve` runs.
    #[command(subcommand)]
    Admin(AdminCommand),
    /// Write the man pages or a shell completion script, made from these very commands
    /// (the Debian package ships both; for an install from source).
    #[command(subcommand)]
    Generate(GenerateCommand),
    /// Run the MCP binding's automated check against a holder's MCP endpoint (any
    /// holder, this one included) and print a pass/fail table: tools and schemas, the
    /// disclaimer, intentCode entropy, the code's powers, withdrawal, secrets in answers,
    /// demand thresholds, errors, rate limits, OAuth metadata, transport. It publishes a
    /// few drafts (no contact) and withdraws them; it never opens a consent page. Exit
    /// status: 0 every check passed, 1 a check failed, 2 the check could not run (or not
    /// completely: the holder's quota stopped it; run it again later).
    Check(CheckArgs),
}

/// Options of `isto check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The holder's MCP endpoint, e.g. https://holder.example/mcp. `http` is for
    /// loopback and testing only.
    #[arg(value_name = "URL")]
    pub url: String,
    /// The MCP revision(s) to check in.
    #[arg(long, value_name = "REVISION", default_value = "both", value_parser = ["2025-11-25", "2026-07-28", "both"])]
    pub revision: String,
    /// Print the report as JSON: {"ok","complete","holder","revisions","checks":[{"id","revision","ref","status","detail"}]}.
    #[arg(long)]
    pub json: bool,
}

/// `isto generate ...`.
#[derive(Debug, Subcommand)]
pub enum GenerateCommand {
    /// Write one roff man page per command (isto.1, isto-serve.1, isto-admin-backup.1,
    /// ...) into DIR, created when missing; existing pages are replaced.
    Man {
        /// The directory to write into (e.g. /usr/local/share/man/man1).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Print the written files as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the completion script for SHELL, or write it into DIR under the name that
    /// shell looks for (isto.bash, _isto, isto.fish, ...). Bash: `isto generate
    /// completions bash > /etc/bash_completion.d/isto`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: Shell,
        /// Write the script into this directory instead of standard output.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Print the written file as JSON (with --out).
        #[arg(long, requires = "out")]
        json: bool,
    },
    /// Write the book's reference pages (configuration keys, metrics, commands, store
    /// schema versions: config.md, metrics.md, cli.md, schema.md) into DIR, made from this
    /// very binary; with --check, write nothing and exit 1 naming the pages in DIR that
    /// differ from what this binary would write (CI runs `isto generate reference --check
    /// --out docs/src/reference`).
    Reference {
        /// The directory (docs/src/reference in the repository).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Only compare: exit 1 when a page is missing or differs.
        #[arg(long)]
        check: bool,
        /// Print the written (or stale) files as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the commented config skeleton (what `isto admin init --config` writes), or
    /// write it to FILE; with the global --data-dir, its data_dir line is set to it (the
    /// Debian package's /etc/isto/isto.toml).
    Config {
        /// Write the skeleton to this file (mode 0640) instead of standard output.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Replace FILE when it exists.
        #[arg(long, requires = "out")]
        force: bool,
        /// Print the written file as JSON (with --out).
        #[arg(long, requires = "out")]
        json: bool,
    },
}

/// The shells `isto generate completions` writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    /// Bash (bash-completion).
    Bash,
    /// Zsh.
    Zsh,
    /// Fish.
    Fish,
    /// Elvish.
    Elvish,
    /// PowerShell.
    #[value(name = "powershell")]
    PowerShell,
}

/// `isto admin ...`.
#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Create the data directory, the sealing key and the store; write a commented config
    /// skeleton to --config when given and absent.
    Init {
        /// Print JSON: {"dataDir","store","keyCreated","configWritten"}.
        #[arg(long)]
        json: bool,
    },
    /// Counts of what the holder keeps — intents by status and category, sellers, offers
    /// by category, deliveries, the outbox, accounts — without any personal data; through
    /// the running server or from the store.
    Stats {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Validate the configuration and print the effective settings.
    CheckConfig {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Catalogue offers.
    #[command(subcommand)]
    Offers(OffersCommand),
    /// Registered sellers: businesses that see pseudonymous intents and reply with
    /// offers on /mcp/seller.
    #[command(subcommand)]
    Seller(SellerCommand),
    /// Back the store up into one file: a consistent, compressed export (zstd JSON Lines)
    /// from one read transaction, through the running server or from the store, checked
    /// after writing and renamed into place (mode 0600). Sealed values stay sealed; the
    /// keys are not in the backup (see `isto admin keys export`).
    #[command(group = clap::ArgGroup::new("target").required(true).args(["out", "verify"]))]
    Backup {
        /// The backup file to write.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Only check an existing backup file (format, checksum, counts).
        #[arg(long, value_name = "FILE")]
        verify: Option<PathBuf>,
        /// Replace the --out file when it exists.
        #[arg(long)]
        force: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Restore a backup into a stopped holder's data directory that has no store (or,
    /// with --force, replace its store). The file is checked first, every sealed value
    /// must open with the data directory's key ring, and the store is written to a temp
    /// file renamed into place only when all of it succeeded.
    Restore {
        /// The backup file (from `isto admin backup`).
        file: PathBuf,
        /// Replace the data directory's store.
        #[arg(long)]
        force: bool,
        /// First install the key ring from this file (from `isto admin keys export`)
        /// into a data directory that has no key.
        #[arg(long, value_name = "FILE")]
        keys: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The key ring.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Bring the store to this isto's schema version (upgrades; --dry-run shows what
    /// would change).
    ///
    /// Prints the store's schema version, this binary's and the pending migrations
    /// (number, name, what each changes), runs them in one transaction and the one-time
    /// start-up passes, and prints what changed (rows per table). With `isto serve`
    /// running it prints the server's versions: the server migrated at start. A store
    /// written by a newer isto is refused (install that isto again, or restore a backup
    /// made by this one). Stop the server and back up first: see the book, "Upgrades and going back".
    Migrate {
        /// Run the migrations in a transaction that is rolled back and print what they
        /// would change; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print this holder's entry for the Isto Intents Registry (PROTOCOL.md §8): name,
    /// countries, categories, languages, endpoints and MCP revisions — the same data as
    /// GET /.well-known/isto-intents — with the result of `isto check --json` when given.
    RegistryEntry {
        /// A file with the JSON report of `isto check --json` to include as `check`.
        #[arg(long, value_name = "FILE")]
        check_result: Option<PathBuf>,
        /// Print compact JSON (one line) instead of indented JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete what is no longer needed — lapsed drafts and their codes, OAuth clients
    /// unused (no grant within a day of registering, or none for 90 days), expired OAuth
    /// codes and tokens, expired sign-in links and sessions — and print the counts per
    /// kind. `isto serve` does this every minute by itself.
    Purge {
        /// Only count what would be removed; remove nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `isto admin keys ...`.
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Write the key ring (every sealing key, the current one first, and the
    /// never-rotated handle.key and mac.key) to a file, mode 0600. Backups do not hold the keys; keep this file apart from them (offline or
    /// encrypted): with both, anyone reads every contact and hidden limit.
    Export {
        /// The file to write.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// Replace FILE when it exists.
        #[arg(long)]
        force: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Make a new sealing key current (at once, also in a running `isto serve`, through
    /// its admin socket) and re-seal every sealed value — contacts, hidden limits,
    /// account e-mails, queued mail — with it, in batches while the server keeps
    /// serving, with a progress bar. Only the sealing key rotates: handle.key and mac.key
    /// never do (the sellers' intent handles, pseudonyms, person keys, CSRF tokens and
    /// keyed hashes would change). Older keys stay in the ring until `keys retire`.
    /// Export the key ring again afterwards.
    Rotate {
        /// Make no new key: finish the re-seal of an earlier rotation that was cut short
        /// (see `keys status`).
        #[arg(long)]
        resume: bool,
        /// Rows per write transaction.
        #[arg(long, value_name = "ROWS", default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=5000))]
        batch: u64,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show every sealing key: its id, whether it is current, when it was made, and how
    /// many stored values it still seals (counted over every table).
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete the old sealing key ID (its file, and from a running server's ring).
    /// Refused when ID is the current key or any stored value is still sealed with it
    /// (finish the re-seal with `keys rotate --resume` first).
    Retire {
        /// The key id, as `keys status` shows it.
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `isto admin offers ...`.
#[derive(Debug, Subcommand)]
pub enum OffersCommand {
    /// Import offers from JSON Lines (.jsonl) or CSV (.csv); bad rows are reported with
    /// their line numbers and do not stop the others. Imported offers are matched against
    /// standing active intents.
    #[command(after_help = "Exit status:\n  \
        0  every row was imported (or the file has no rows)\n  \
        1  some rows were rejected: the report (text or --json) names their lines, the other rows are stored\n  \
        2  the import did not run or stopped: bad arguments or config, an unreadable file, a store or admin socket failure (see the error; offers of batches stored before a stop stay stored)")]
    Import {
        /// The file.
        file: PathBuf,
        /// The file is the whole feed of the sellers it names: their offers missing from
        /// it are withdrawn (skipped when any row is rejected).
        #[arg(long)]
        full: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `isto admin seller ...`.
#[derive(Debug, Subcommand)]
pub enum SellerCommand {
    /// Register a seller: its account (signs in with a one-time e-mail link), its public
    /// name, and the categories and regions whose open intents it sees.
    Add {
        /// The seller's public name (shown on its offers).
        #[arg(long)]
        name: String,
        /// The seller's e-mail address (sign-in).
        #[arg(long)]
        email: String,
        /// The seller's web site.
        #[arg(long)]
        url: Option<String>,
        /// A category it serves (vehicles, property); repeat for more. Default: all.
        #[arg(long = "category", value_name = "CATEGORY")]
        categories: Vec<String>,
        /// A region it serves: an ISO 3166-2 code (SK-BL), a country code (SK) or a
        /// name; repeat for more. Default: everywhere.
        #[arg(long = "region", value_name = "REGION")]
        regions: Vec<String>,
        /// E-mail the seller a one-time sign-in link.
        #[arg(long)]
        invite: bool,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the registered sellers.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Disable a seller at once: its tools and sessions stop working, its OAuth tokens
    /// are revoked, its offers and replies no longer match.
    Disable {
        /// The seller's account id (acc_...) or seller id (sel_...).
        id: String,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Enable a disabled seller again (its agent authorizes again).
    Enable {
        /// The seller's account id (acc_...) or seller id (sel_...).
        id: String,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
}
