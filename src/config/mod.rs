//! Settings: embedded defaults, then a TOML file (`--config PATH`, else
//! `/etc/isto/isto.toml` when it exists), then `ISTO_*` environment variables and
//! command-line flags (later wins). Read once at start-up. Unknown keys are rejected so a
//! typo never goes unnoticed.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// A section of the file whose keys are all numbers, each with its default and range,
/// declared once: the struct (unknown keys refused), its `Default`, and `checked`, which
/// gives the [`ConfigError::Invalid`] naming the first key out of its range
/// (`$section.$key`, [`within`]). The key in the file is the field's name.
macro_rules! numeric_section {
    ($(#[$meta:meta])* pub struct $name:ident in $section:literal {
        $($(#[$doc:meta])* $key:ident: $ty:ty = $default:expr, $range:expr;)*
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
        #[serde(default, deny_unknown_fields)]
        pub struct $name {
            $($(#[$doc])* pub $key: $ty,)*
        }

        impl Default for $name {
            fn default() -> Self {
                Self { $($key: $default,)* }
            }
        }

        impl $name {
            /// This section when every key lies in its range.
            ///
            /// # Errors
            /// [`ConfigError::Invalid`] naming the first key out of its range.
            pub(super) fn checked(&self) -> Result<Self, ConfigError> {
                Ok(Self {
                    $($key: super::within(Some(self.$key), self.$key, $range, concat!($section, ".", stringify!($key)))?,)*
                })
            }
        }
    };
}

mod helo;
mod limits;
mod quotas;
pub mod reference;
mod report;
mod sections;
mod smtp;
mod store;

pub use limits::Limits;
pub use quotas::Quotas;
pub use smtp::{check_smtp_url, mailbox_address};

/// The system-wide config file read when `--config` is not given and the file exists.
pub const DEFAULT_CONFIG_PATH: &str = "/etc/isto/isto.toml";

/// A configuration problem, with what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {cause}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        cause: std::io::Error,
    },
    /// The file is not valid TOML or has an unknown key or wrong type.
    #[error("config file {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the key.
        message: String,
    },
    /// A value is out of its range.
    #[error("config {key}: {message}")]
    Invalid {
        /// The key, as in the file (`listen`, `mail.smtp_url`, ...).
        key: &'static str,
        /// The rule it breaks.
        message: String,
    },
}

impl ConfigError {
    /// [`ConfigError::Invalid`] naming `key` and the rule `message` it breaks.
    pub(crate) fn invalid(key: &'static str, message: impl Into<String>) -> Self {
        Self::Invalid { key, message: message.into() }
    }
}

/// The TOML file's shape; every key optional (defaults fill the rest).
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct FileConfig {
    listen: Option<String>,
    metrics_listen: Option<String>,
    public_url: Option<String>,
    data_dir: Option<PathBuf>,
    holder_name: Option<String>,
    default_language: Option<String>,
    trusted_proxies: Option<Vec<String>>,
    mail: FileMail,
    intents: FileIntents,
    matching: FileMatching,
    currency: FileCurrency,
    demand: FileDemand,
    limits: Limits,
    quotas: Quotas,
    store: FileStore,
}

/// Declares tables of the file whose keys are all optional (`Option` of the type given),
/// unknown keys refused.
macro_rules! file_tables {
    ($($name:ident { $($key:ident: $ty:ty),* })*) => {$(
        #[derive(Debug, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        struct $name { $($key: Option<$ty>,)* }
    )*};
}

file_tables! {
    FileStore { cache_mib: u64, backend: String, url: String, pool_size: u32 }
    FileMail {
        smtp_url: String, allow_plaintext_auth: bool, from: String, helo_name: String,
        digest_min_interval_secs: u64, smtp_timeout_secs: u64, retry_base_secs: u64
    }
    FileIntents {
        draft_ttl_secs: u64, confirm_ttl_secs: u64, default_validity_days: u32, max_validity_days: u32,
        contact_retention_days: u32
    }
    FileMatching { min_should_match: f64 }
    FileCurrency { default: String, rates: BTreeMap<String, f64> }
    FileDemand { k: u32, budget_bands: BTreeMap<String, Vec<u64>> }
}

/// The global options of the command line, each also read from its `ISTO_*` variable
/// (clap reads both; [`crate::cli::Cli`] flattens them); each `Some` overrides the file.
/// The field docs are the `--help` text (a URL or `<listen>` is plain text, not
/// Markdown); `log_level` is the binary's, not a setting.
#[allow(rustdoc::bare_urls, rustdoc::invalid_html_tags)]
#[derive(Debug, Default, Clone, clap::Args)]
pub struct Overrides {
    /// Config file (TOML). Default: /etc/isto/isto.toml when it exists; none needed.
    #[arg(long, global = true, env = "ISTO_CONFIG", value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Data directory: store, keys, outbox, admin socket. Default ./isto-data.
    #[arg(long, global = true, env = "ISTO_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Address to listen on. Default 127.0.0.1:8080.
    #[arg(long, global = true, env = "ISTO_LISTEN", value_name = "ADDR:PORT")]
    pub listen: Option<String>,
    /// Serve Prometheus metrics (GET /metrics) on this address, a listener of its own
    /// (keep it on loopback, e.g. 127.0.0.1:9464); `off` for none. Default: off, or
    /// `metrics_listen` in the config file.
    #[arg(long, global = true, env = "ISTO_METRICS_LISTEN", value_name = "ADDR:PORT")]
    pub metrics_listen: Option<String>,
    /// Log level: error, warn, info, debug or trace (logs go to stderr). When given it
    /// wins over RUST_LOG. Without it `isto serve` logs as RUST_LOG says (a tracing
    /// filter such as `isto=debug`), else at info; admin commands log only with this
    /// flag. Other crates never log below warn, whatever the level.
    #[arg(long, global = true, env = "ISTO_LOG_LEVEL", value_name = "LEVEL", value_parser = ["error", "warn", "info", "debug", "trace"])]
    pub log_level: Option<String>,
    /// The public origin people and assistants use (https://holder.example). Default
    /// http://<listen>.
    #[arg(long, global = true, env = "ISTO_PUBLIC_URL", value_name = "URL")]
    pub public_url: Option<String>,
    /// SMTP server as a lettre URL (smtp://host:port, smtps://user:pass@host). Default:
    /// none, mail is written to DATA_DIR/outbox as .eml files.
    #[arg(long, global = true, env = "ISTO_SMTP_URL", value_name = "URL", hide_env_values = true)]
    pub smtp_url: Option<String>,
    /// From address of e-mails.
    #[arg(long, global = true, env = "ISTO_MAIL_FROM", value_name = "ADDRESS")]
    pub mail_from: Option<String>,
    /// The SMTP EHLO name and Message-ID domain (default: the public URL's host, else the
    /// From domain).
    #[arg(long, global = true, env = "ISTO_MAIL_HELO_NAME", value_name = "NAME")]
    pub mail_helo_name: Option<String>,
    /// The store's backend: redb (the file in the data directory; the default) or
    /// postgres (`store.url`). Default: `store.backend` in the config file.
    #[arg(long, global = true, env = "ISTO_STORE_BACKEND", value_name = "BACKEND", value_parser = ["redb", "postgres"])]
    pub store_backend: Option<String>,
    /// The PostgreSQL store's connection: a postgres:// URL or key=value settings
    /// (`host=/run/postgresql dbname=isto`). Default: `store.url` in the config file.
    #[arg(long, global = true, env = "ISTO_STORE_URL", value_name = "URL", hide_env_values = true)]
    pub store_url: Option<String>,
    /// Most connections of the PostgreSQL store (1..=64). Default: `store.pool_size`, else 8.
    #[arg(long, global = true, env = "ISTO_STORE_POOL_SIZE", value_name = "N")]
    pub store_pool_size: Option<u32>,
}

/// The public URL split into the parts isto needs (scheme, host, port, path prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicUrl {
    /// `http` or `https`.
    pub scheme: String,
    /// Host name or IP literal, without brackets.
    pub host: String,
    /// Explicit port, if the URL has one.
    pub port: Option<u16>,
    /// The URL without a trailing slash: `https://holder.example`.
    pub base: String,
}

impl PublicUrl {
    /// Parses `http(s)://host[:port][/]`.
    ///
    /// # Errors
    /// A message when the scheme is not http/https, the host is missing, or the URL has a
    /// path, query or fragment (isto must be served at the root of its origin).
    pub fn parse(s: &str) -> Result<Self, String> {
        let uri: http::Uri = s.parse().map_err(|_| format!("{s:?} is not a URL"))?;
        let scheme = uri.scheme_str().unwrap_or_default().to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return Err(format!("{s:?} must start with http:// or https://"));
        }
        let authority = uri.authority().ok_or_else(|| format!("{s:?} has no host"))?;
        if uri.path() != "/" && !uri.path().is_empty() || uri.query().is_some() {
            return Err(format!("{s:?} must have no path or query (serve isto at the root of its origin)"));
        }
        let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
        let port = authority.port_u16();
        let base = format!("{scheme}://{}", authority.as_str().to_ascii_lowercase());
        Ok(Self { scheme, host, port, base })
    }

    /// Whether cookies and links are served over TLS.
    pub fn is_https(&self) -> bool {
        self.scheme == "https"
    }

    /// The allowed `Host` header values for DNS-rebinding protection: host and host:port.
    pub fn allowed_hosts(&self) -> Vec<String> {
        let h = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        let port = self.port.unwrap_or(if self.is_https() { 443 } else { 80 });
        vec![h.clone(), format!("{h}:{port}")]
    }

    /// The allowed `Origin` values: this origin with its explicit port (as [`Self::allowed_hosts`]).
    pub fn allowed_origins(&self) -> Vec<String> {
        self.allowed_hosts().into_iter().skip(1).map(|host_port| format!("{}://{host_port}", self.scheme)).collect()
    }
}

/// The effective settings of one `isto` process.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Socket address `isto serve` binds (default `127.0.0.1:8080`).
    pub listen: SocketAddr,
    /// Where `GET /metrics` is served, a listener of its own, never the public one
    /// (default `None`: no metrics).
    pub metrics_listen: Option<SocketAddr>,
    /// The holder's public origin (default `http://127.0.0.1:8080`): links, allowed
    /// Host/Origin values.
    pub public_url: PublicUrl,
    /// Directory of the store, keys, outbox and admin socket (default `./isto-data`).
    pub data_dir: PathBuf,
    /// The holder's display name in pages and e-mails.
    pub holder_name: String,
    /// Language of pages when the intent's language is not sk/cs/en.
    pub default_language: String,
    /// lettre SMTP URL ([`check_smtp_url`]); `None` writes `.eml` files to
    /// `DATA_DIR/outbox` instead.
    pub smtp_url: Option<String>,
    /// Whether SMTP credentials may be sent without TLS (default false).
    pub allow_plaintext_auth: bool,
    /// From address of every e-mail.
    pub mail_from: String,
    /// The SMTP EHLO name as configured; `None` derives it ([`Settings::helo_name`]).
    pub mail_helo_name: Option<String>,
    /// Longest wait for one SMTP step, seconds; the whole conversation gets three times it
    /// (default 20; 1..=300).
    pub smtp_timeout_secs: u64,
    /// Half the first retry delay of a message that could not be sent, seconds: attempt
    /// `n` failed → retried `base × 2^n` s later, at most an hour apart (default 30; 1..=3600).
    pub mail_retry_base_secs: u64,
    /// Minimum time between two digests of one intent, seconds (default 3600, §4.5).
    pub digest_min_interval_secs: u64,
    /// Lifetime of a draft without consent, seconds (default and maximum 86400, seed §5.1).
    pub draft_ttl_secs: u64,
    /// Time to confirm the e-mail after consent, seconds (default 72 h, §4.3).
    pub confirm_ttl_secs: u64,
    /// validUntil when the buyer gives none, days (default 90).
    pub default_validity_days: u32,
    /// Latest validUntil accepted, days from now (default 365).
    pub max_validity_days: u32,
    /// Days after an intent ends before its contact is erased (default 30, §4.6).
    pub contact_retention_days: u32,
    /// Minimum-should-match ratio of statement terms, 0..=1 (default 0.5, §6).
    pub min_should_match: f64,
    /// The holder's default currency (ISO 4217, default EUR).
    pub default_currency: String,
    /// Value of one unit of each currency in the default currency (default `CZK = 0.04`).
    pub rates: BTreeMap<String, f64>,
    /// Demand summaries: a cell with fewer active intents than this is withheld
    /// (PROTOCOL.md §5; default 5, `[demand] k`).
    pub demand_k: u32,
    /// Demand summaries: lower bounds of the budget bands per category, in the default
    /// currency, ascending from 0 (PROTOCOL.md §5): `[0, 5000]` gives `0-5000` and `5000+`
    /// (the band `none` is always added).
    pub demand_budget_bands: BTreeMap<String, Vec<u64>>,
    /// Connection, MCP session and request-rate bounds (`[limits]`).
    pub limits: Limits,
    /// Hourly quotas on unauthenticated writes (`[quotas]`).
    pub quotas: Quotas,
    /// Peers whose `X-Forwarded-For` names the client (default loopback; `[]`: none).
    pub trusted_proxies: crate::net::TrustedProxies,
    /// Most memory the redb store's page cache holds, MiB (default
    /// [`crate::store::DEFAULT_CACHE_MIB`]; 1..=65536); never changes what a commit makes
    /// durable.
    pub store_cache_mib: u64,
    /// The PostgreSQL store (`store.backend = "postgres"`); `None`: the redb file in the
    /// data directory (the default).
    pub store_postgres: Option<crate::store::PgSettings>,
}

/// `v` when it lies in `range` (else the error naming `key` and the range: `must be
/// 1..=300`), `default` when absent.
fn within<T: PartialOrd + Copy + std::fmt::Display>(
    v: Option<T>,
    default: T,
    range: std::ops::RangeInclusive<T>,
    key: &'static str,
) -> Result<T, ConfigError> {
    match v {
        Some(v) if !range.contains(&v) => {
            Err(ConfigError::Invalid { key, message: format!("must be {}..={}", range.start(), range.end()) })
        }
        Some(v) => Ok(v),
        None => Ok(default),
    }
}

/// The holder's category keys (PROTOCOL.md §2), which `[demand.budget_bands]` may name:
/// `protocol::CATEGORIES` (a test there checks it), here below the model layer.
pub const CATEGORY_KEYS: &[&str] = &["vehicles", "property"];

/// Default budget band bounds (EUR) per category: vehicles as PROTOCOL.md §5, property
/// ten times as wide.
pub const DEFAULT_BUDGET_BANDS: &[(&str, &[u64])] =
    &[("vehicles", &[0, 5_000, 10_000, 20_000, 40_000]), ("property", &[0, 50_000, 100_000, 200_000, 400_000])];

impl Settings {
    /// The embedded defaults: `isto serve` runs with no file at all.
    pub fn defaults() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            metrics_listen: None,
            public_url: PublicUrl {
                scheme: "http".into(),
                host: "127.0.0.1".into(),
                port: Some(8080),
                base: "http://127.0.0.1:8080".into(),
            },
            data_dir: PathBuf::from("./isto-data"),
            holder_name: "isto".into(),
            default_language: "sk".into(),
            smtp_url: None,
            allow_plaintext_auth: false,
            mail_from: "isto <noreply@localhost>".into(),
            mail_helo_name: None,
            smtp_timeout_secs: 20,
            mail_retry_base_secs: 30,
            digest_min_interval_secs: 3600,
            draft_ttl_secs: 86_400,
            confirm_ttl_secs: 72 * 3600,
            default_validity_days: 90,
            max_validity_days: 365,
            contact_retention_days: 30,
            min_should_match: 0.5,
            default_currency: "EUR".into(),
            rates: BTreeMap::from([("EUR".to_owned(), 1.0), ("CZK".to_owned(), 0.04)]),
            demand_k: 5,
            demand_budget_bands: DEFAULT_BUDGET_BANDS.iter().map(|(c, b)| ((*c).to_owned(), b.to_vec())).collect(),
            limits: Limits::default(),
            quotas: Quotas::default(),
            trusted_proxies: crate::net::TrustedProxies::loopback(),
            store_cache_mib: crate::store::DEFAULT_CACHE_MIB,
            store_postgres: None,
        }
    }

    /// Defaults, then the config file (explicit, or [`DEFAULT_CONFIG_PATH`] if present),
    /// then `overrides`.
    ///
    /// # Errors
    /// [`ConfigError`] naming the file, key and rule.
    pub fn load(overrides: &Overrides) -> Result<Self, ConfigError> {
        let path = overrides.config.clone().or_else(|| Some(PathBuf::from(DEFAULT_CONFIG_PATH)).filter(|p| p.exists()));
        let file = path.as_deref().map(read_file).transpose()?.unwrap_or_default();
        let mut s = Self::defaults();
        sections::load_addresses(&mut s, &file, overrides)?;
        sections::load_holder(&mut s, &file, overrides)?;
        smtp::load_mail(&mut s, file.mail, overrides)?;
        s.store_cache_mib =
            within(file.store.cache_mib, crate::store::DEFAULT_CACHE_MIB, 1..=65_536, "store.cache_mib")?;
        s.store_postgres = store::load(&file.store, overrides)?;
        sections::load_intents(&mut s, &file.intents)?;
        sections::load_matching(&mut s, &file.matching, file.currency)?;
        sections::load_demand(&mut s, file.demand)?;
        s.limits = limits::limits(&file.limits)?;
        s.quotas = file.quotas.checked()?;
        if let Some(t) = &file.trusted_proxies {
            s.trusted_proxies = crate::net::TrustedProxies::parse(t)
                .map_err(|message| ConfigError::Invalid { key: "trusted_proxies", message })?;
        }
        Ok(s)
    }

    /// Converts `amount` of `currency` into the default currency; `None` when no rate is
    /// configured for `currency`.
    pub fn to_default_currency(&self, amount: f64, currency: &str) -> Option<f64> {
        self.rates.get(currency).map(|r| amount * r)
    }

    /// Where the store lives: the PostgreSQL database of `[store]`, else the redb file
    /// [`Settings::store_path`].
    pub fn store_location(&self) -> crate::store::Location {
        match &self.store_postgres {
            Some(pg) => crate::store::Location::Postgres(pg.clone()),
            None => crate::store::Location::Redb { path: self.store_path(), cache_mib: self.store_cache_mib },
        }
    }

    /// The store as messages name it: the redb file's path, or the PostgreSQL settings
    /// without their password.
    pub fn store_name(&self) -> String {
        match &self.store_postgres {
            Some(pg) => format!("PostgreSQL {}", crate::store::redacted(&pg.url)),
            None => self.store_path().display().to_string(),
        }
    }

    /// Path of the store file ([`crate::store::FILE_NAME`] in the data directory).
    pub fn store_path(&self) -> PathBuf {
        self.data_dir.join(crate::store::FILE_NAME)
    }

    /// Path of the sealing key file (mode 0600).
    pub fn key_path(&self) -> PathBuf {
        self.data_dir.join("keys").join("sealing.key")
    }

    /// Path of the admin socket (owner-only).
    pub fn admin_socket_path(&self) -> PathBuf {
        self.data_dir.join("admin.sock")
    }

    /// Directory of `.eml` files when no SMTP server is configured.
    pub fn outbox_dir(&self) -> PathBuf {
        self.data_dir.join("outbox")
    }

    /// Directory where the operator may put `consent.<lang>.txt` to replace the shipped text.
    pub fn consent_dir(&self) -> PathBuf {
        self.data_dir.join("consent")
    }
}

fn read_file(p: &Path) -> Result<FileConfig, ConfigError> {
    let text = std::fs::read_to_string(p).map_err(|cause| ConfigError::Read { path: p.to_owned(), cause })?;
    // toml's Display names the line, column and key, with the offending text.
    toml::from_str(&text)
        .map_err(|e| ConfigError::Parse { path: p.to_owned(), message: e.to_string().trim().to_owned() })
}

/// [`SKELETON`] with its `data_dir` line set (uncommented) to `dir` as a TOML string,
/// every other line unchanged (the Debian package's `/etc/isto/isto.toml`).
pub fn skeleton_with_data_dir(dir: &str) -> String {
    let value = toml::Value::String(dir.to_owned()).to_string();
    SKELETON
        .lines()
        .map(|line| match line.starts_with("# data_dir = ") {
            true => format!("data_dir = {value}  # ISTO_DATA_DIR and --data-dir override it\n"),
            false => format!("{line}\n"),
        })
        .collect()
}

/// A commented config skeleton, written by `isto admin init`.
pub const SKELETON: &str = r#"# isto configuration. Every key is optional; the values shown are the defaults.
# Environment variables (ISTO_LISTEN, ISTO_METRICS_LISTEN, ISTO_PUBLIC_URL, ISTO_DATA_DIR,
# ISTO_SMTP_URL, ISTO_MAIL_FROM, ISTO_MAIL_HELO_NAME) and command-line flags override this file.

# listen = "127.0.0.1:8080"
# metrics_listen = "127.0.0.1:9464"       # Prometheus GET /metrics on its own listener; unset = off
# public_url = "https://holder.example"   # the origin people and assistants use
# data_dir = "/var/lib/isto"
# holder_name = "isto"
# default_language = "sk"                  # sk, cs or en
# trusted_proxies = ["127.0.0.1", "::1"]   # peers whose X-Forwarded-For names the client; [] = none

[mail]
# smtp_url = "smtp://127.0.0.1:25"         # lettre URL; smtps://user:pass@host or ?tls=required
# allow_plaintext_auth = false            # true only for a server on a trusted network
# from = "Holder <noreply@holder.example>"
# helo_name = "holder.example"            # EHLO name and Message-ID domain; default: public_url's host, else from's domain
# digest_min_interval_secs = 3600
# smtp_timeout_secs = 20                  # per SMTP step; a whole conversation gets 3 times it
# retry_base_secs = 30                    # a failed message is retried after 60 s, 120 s, ... (at most 1 h)

[intents]
# draft_ttl_secs = 86400                    # at most 24 h
# confirm_ttl_secs = 259200                 # 72 h to confirm the e-mail
# default_validity_days = 90
# max_validity_days = 365
# contact_retention_days = 30

[matching]
# min_should_match = 0.5                    # share of statement terms an offer must contain

[currency]
# default = "EUR"
# rates = { CZK = 0.04 }                    # value of one unit in the default currency

[demand]
# k = 5                                     # demand cells with fewer active intents are withheld
# [demand.budget_bands]                     # band lower bounds in the default currency, from 0
# vehicles = [0, 5000, 10000, 20000, 40000] # → 0-5000, 5000-10000, 10000-20000, 20000-40000, 40000+
# property = [0, 50000, 100000, 200000, 400000]

[limits]
# header_read_timeout_secs = 10             # to send a request head (and between keep-alive requests)
# idle_timeout_secs = 60                    # a connection with no traffic is closed
# body_read_timeout_secs = 15               # to send a whole request body once the head is in (in all, however spaced)
# max_connections = 1024                    # served at once; at the cap a half-open or idle one makes room (LimitNOFILE above it)
# max_connections_per_client = 32           # per client address (IPv6: /64), streams and requests in flight included; over it 429
# stream_idle_secs = 300                    # an event stream (MCP GET) without an event is ended (keep-alives do not count)
# mcp_session_idle_secs = 60                # an MCP session with no request is closed
# max_mcp_sessions = 256                    # per MCP endpoint; over it the least recently used is closed
# max_mcp_sessions_per_client = 32          # per client address and endpoint; over it its own oldest is closed
# Requests per client address (IPv6: per /64), sustained per minute with a burst; over
# them HTTP 429 with Retry-After. /healthz is never limited.
# mcp_requests_per_minute = 1200            # /mcp, /mcp/buyer, /mcp/seller (20/s)
# mcp_burst = 120
# credential_requests_per_minute = 600      # per bearer token's account and client on /mcp/buyer, /mcp/seller
# credential_burst = 60
# page_requests_per_minute = 300            # the pages and every other path (5/s)
# page_burst = 60
# oauth_requests_per_minute = 300           # /oauth/* and /.well-known/oauth-* (5/s)
# oauth_burst = 60
# refresh_grace_secs = 30                   # a rotated refresh token presented again this soon gets the same new pair (0: never)
# elicitation_wait_secs = 120               # a 2025-11-25 /mcp publish waits this long for the answer to its consent-page elicitation
# request_state_secs = 300                  # a 2026-07-28 /mcp publish's requestState is refused this long after its answer

[store]
# backend = "redb"                          # or "postgres" (ISTO_STORE_BACKEND): the database below instead of DATA_DIR/isto.redb
# cache_mib = 16                            # redb: the store's page cache; more keeps more of a big catalogue in memory
# url = "host=/run/postgresql dbname=isto"  # postgres (ISTO_STORE_URL): a postgres:// URL or key=value settings
# pool_size = 8                             # postgres (ISTO_STORE_POOL_SIZE): most connections, 1..=64

[quotas]                                    # per hour (the last 60 minutes); a client = an IPv4 address or IPv6 /64
# drafts_per_client_per_hour = 60           # intent_publish_intent on /mcp
# consents_per_client_per_hour = 20         # consent page submissions
# consents_per_network_per_hour = 60        # consent page submissions from one IPv4 /24 or IPv6 /48
# consents_per_address_per_hour = 5         # confirmation e-mails to one e-mail address
# confirmation_mails_per_hour = 500         # confirmation e-mails from the whole holder
# confirmation_mails_reserved_percent = 20  # of those, kept for addresses and accounts that confirmed before (1..=90)
# registrations_per_client_per_hour = 20    # OAuth dynamic client registrations (/oauth/register)
# active_intents_per_person = 20            # not hourly: active intents one e-mail address (+tags folded) or account holds
"#;

#[cfg(test)]
mod tests;
