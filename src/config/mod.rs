//! Settings: embedded defaults, then a TOML file, then `ISTO_*` environment variables and
//! command-line flags (later wins). Read once at start-up; read-only at run time.
//!
//! The file is `--config PATH`, else `/etc/isto/isto.toml` when that file exists. Unknown
//! keys are rejected so a typo never goes unnoticed. Every key is listed in the book's
//! "Configuration keys" page, which `isto generate reference` writes.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

mod helo;
mod limits;
mod quotas;
pub mod reference;

use limits::FileLimits;
pub use limits::Limits;
use quotas::FileQuotas;
pub use quotas::Quotas;

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

/// The TOML file's shape; every key optional (defaults fill the rest).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    listen: Option<String>,
    metrics_listen: Option<String>,
    public_url: Option<String>,
    data_dir: Option<PathBuf>,
    holder_name: Option<String>,
    default_language: Option<String>,
    trusted_proxies: Option<Vec<String>>,
    #[serde(default)]
    mail: FileMail,
    #[serde(default)]
    intents: FileIntents,
    #[serde(default)]
    matching: FileMatching,
    #[serde(default)]
    currency: FileCurrency,
    #[serde(default)]
    demand: FileDemand,
    #[serde(default)]
    limits: FileLimits,
    #[serde(default)]
    quotas: FileQuotas,
    #[serde(default)]
    store: FileStore,
}

/// `[store]`: the store file's memory.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileStore {
    cache_mib: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileMail {
    smtp_url: Option<String>,
    allow_plaintext_auth: Option<bool>,
    from: Option<String>,
    helo_name: Option<String>,
    digest_min_interval_secs: Option<u64>,
    smtp_timeout_secs: Option<u64>,
    retry_base_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileIntents {
    draft_ttl_secs: Option<u64>,
    confirm_ttl_secs: Option<u64>,
    default_validity_days: Option<u32>,
    max_validity_days: Option<u32>,
    contact_retention_days: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileMatching {
    min_should_match: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCurrency {
    default: Option<String>,
    rates: Option<BTreeMap<String, f64>>,
}

/// `[demand]`: the threshold k and per-category budget band boundaries
/// (PROTOCOL.md §5).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDemand {
    k: Option<u32>,
    budget_bands: Option<BTreeMap<String, Vec<u64>>>,
}

/// Values given on the command line or in `ISTO_*` variables (clap reads both); each
/// `Some` overrides the file.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    /// `--config`.
    pub config: Option<PathBuf>,
    /// `--listen` / `ISTO_LISTEN`.
    pub listen: Option<String>,
    /// `--metrics-listen` / `ISTO_METRICS_LISTEN` (`off` turns a file's value off).
    pub metrics_listen: Option<String>,
    /// `--public-url` / `ISTO_PUBLIC_URL`.
    pub public_url: Option<String>,
    /// `--data-dir` / `ISTO_DATA_DIR`.
    pub data_dir: Option<PathBuf>,
    /// `ISTO_SMTP_URL`.
    pub smtp_url: Option<String>,
    /// `ISTO_MAIL_FROM`.
    pub mail_from: Option<String>,
    /// `ISTO_MAIL_HELO_NAME`.
    pub mail_helo_name: Option<String>,
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

    /// The allowed `Host` header values for DNS-rebinding protection: the host, and
    /// host:port (with the default port written out as well).
    pub fn allowed_hosts(&self) -> Vec<String> {
        let h = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        let port = self.port.unwrap_or(if self.is_https() { 443 } else { 80 });
        vec![h.clone(), format!("{h}:{port}")]
    }

    /// The allowed `Origin` values: this origin with its explicit port.
    pub fn allowed_origins(&self) -> Vec<String> {
        let h = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        let port = self.port.unwrap_or(if self.is_https() { 443 } else { 80 });
        vec![format!("{}://{h}:{port}", self.scheme)]
    }
}

/// The effective settings of one `isto` process.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Socket address `isto serve` binds (default `127.0.0.1:8080`).
    pub listen: SocketAddr,
    /// Where Prometheus metrics are served, `GET /metrics` on a listener of their own
    /// (`metrics_listen`, default `None`: no metrics; issue 11 point 4). Never on the
    /// public listener.
    pub metrics_listen: Option<SocketAddr>,
    /// The holder's public origin (default `http://127.0.0.1:8080`); links in pages and
    /// e-mails, and the allowed Host/Origin values, derive from it.
    pub public_url: PublicUrl,
    /// Directory of the store, keys, outbox and admin socket (default `./isto-data`).
    pub data_dir: PathBuf,
    /// The holder's display name in pages and e-mails.
    pub holder_name: String,
    /// Language of pages when the intent's language is not sk/cs/en.
    pub default_language: String,
    /// lettre SMTP URL (`smtp://host:port`, `smtps://...`, `...?tls=required`); `None`
    /// writes `.eml` files to `DATA_DIR/outbox` instead.
    pub smtp_url: Option<String>,
    /// Whether SMTP credentials may be sent without TLS (`mail.allow_plaintext_auth`,
    /// default false: a URL with a user name must use TLS).
    pub allow_plaintext_auth: bool,
    /// From address of every e-mail.
    pub mail_from: String,
    /// The SMTP EHLO name and `Message-ID` domain as configured (`mail.helo_name`,
    /// `ISTO_MAIL_HELO_NAME`); `None` derives it ([`Settings::helo_name`]).
    pub mail_helo_name: Option<String>,
    /// Longest wait for one SMTP step (connect, greeting, STARTTLS, AUTH, MAIL, RCPT,
    /// DATA), seconds; the whole conversation gets three times it (`mail.smtp_timeout_secs`,
    /// default 20; 1..=300; issue 9 point 5).
    pub smtp_timeout_secs: u64,
    /// Half the first retry delay of a message that could not be sent, seconds: attempt
    /// `n` failed → retried `base × 2^n` s later, at most an hour apart
    /// (`mail.retry_base_secs`, default 30; 1..=3600).
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
    /// currency, ascending and starting at 0 (PROTOCOL.md §5; `[demand.budget_bands]`).
    /// `[0, 5000, 10000]` gives the bands `0-5000`, `5000-10000` and `10000+`; the band
    /// `none` (no visible budget.max) is always added. See `demand::grid`.
    pub demand_budget_bands: BTreeMap<String, Vec<u64>>,
    /// Connection, MCP session and request-rate bounds (`[limits]`).
    pub limits: Limits,
    /// Hourly quotas on unauthenticated writes (`[quotas]`, issue 9 point 3).
    pub quotas: Quotas,
    /// Peers whose `X-Forwarded-For` names the client (`trusted_proxies`, default
    /// `127.0.0.1` and `::1`: a reverse proxy on the same host; `[]` believes no header).
    pub trusted_proxies: crate::net::TrustedProxies,
    /// Most memory the store's page cache holds, MiB (`store.cache_mib`, default
    /// [`crate::store::DEFAULT_CACHE_MIB`]; 1..=65536). The cache fills with the pages
    /// that are read and written; a page outside it is read from the file again (the
    /// operating system's page cache usually has it). It never changes what a commit
    /// makes durable.
    pub store_cache_mib: u64,
}

/// `v` when it lies in `range` (else the error naming `key` and `rule`), `default` when absent.
fn ranged<T: PartialOrd + Copy>(
    v: Option<T>,
    default: T,
    range: std::ops::RangeInclusive<T>,
    key: &'static str,
    rule: &str,
) -> Result<T, ConfigError> {
    match v {
        Some(v) if !range.contains(&v) => Err(ConfigError::Invalid { key, message: format!("must be {rule}") }),
        Some(v) => Ok(v),
        None => Ok(default),
    }
}

/// The holder's category keys (PROTOCOL.md §2), which `[demand.budget_bands]` may name.
/// The same keys as `protocol::CATEGORIES` (a test there checks it); listed here so that
/// settings are checked without the model layer.
pub const CATEGORY_KEYS: &[&str] = &["vehicles", "property"];

/// Default budget band bounds (EUR) per category: vehicles as PROTOCOL.md §5, property
/// ten times as wide.
pub const DEFAULT_BUDGET_BANDS: &[(&str, &[u64])] =
    &[("vehicles", &[0, 5_000, 10_000, 20_000, 40_000]), ("property", &[0, 50_000, 100_000, 200_000, 400_000])];

impl Settings {
    /// The embedded defaults: `isto serve` runs with no file at all.
    pub fn defaults() -> Self {
        let mut rates = BTreeMap::new();
        rates.insert("EUR".to_owned(), 1.0);
        rates.insert("CZK".to_owned(), 0.04);
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
            rates,
            demand_k: 5,
            demand_budget_bands: DEFAULT_BUDGET_BANDS.iter().map(|(c, b)| ((*c).to_owned(), b.to_vec())).collect(),
            limits: Limits::default(),
            quotas: Quotas::default(),
            trusted_proxies: crate::net::TrustedProxies::loopback(),
            store_cache_mib: crate::store::DEFAULT_CACHE_MIB,
        }
    }

    /// Defaults, then the config file (explicit, or [`DEFAULT_CONFIG_PATH`] if present),
    /// then `overrides`.
    ///
    /// # Errors
    /// [`ConfigError`] naming the file, key and rule.
    pub fn load(overrides: &Overrides) -> Result<Self, ConfigError> {
        let path = match &overrides.config {
            Some(p) => Some(p.clone()),
            None => Some(PathBuf::from(DEFAULT_CONFIG_PATH)).filter(|p| p.exists()),
        };
        let file = match &path {
            Some(p) => read_file(p)?,
            None => FileConfig::default(),
        };
        let mut s = Self::defaults();
        let listen = overrides.listen.clone().or(file.listen);
        let public_url = overrides.public_url.clone().or(file.public_url);
        if let Some(l) = &listen {
            s.listen = l.parse().map_err(|_| ConfigError::Invalid {
                key: "listen",
                message: format!("{l:?} must be an address:port such as 127.0.0.1:8080"),
            })?;
        }
        match public_url {
            Some(u) => {
                s.public_url =
                    PublicUrl::parse(&u).map_err(|message| ConfigError::Invalid { key: "public_url", message })?;
            }
            None if listen.is_some() => {
                // Follow the listen address so a bare `--listen` still produces working links.
                let base = format!("http://{}", s.listen);
                s.public_url =
                    PublicUrl::parse(&base).map_err(|message| ConfigError::Invalid { key: "public_url", message })?;
            }
            None => {}
        }
        match overrides.metrics_listen.clone().or(file.metrics_listen).as_deref() {
            None | Some("" | "off") => {}
            Some(m) => {
                s.metrics_listen = Some(m.parse().map_err(|_| ConfigError::Invalid {
                    key: "metrics_listen",
                    message: format!("{m:?} must be an address:port such as 127.0.0.1:9464, or \"off\""),
                })?);
            }
        }
        if s.metrics_listen.is_some() && s.metrics_listen == Some(s.listen) {
            return Err(ConfigError::Invalid {
                key: "metrics_listen",
                message: "must differ from listen (metrics have a listener of their own)".into(),
            });
        }
        if let Some(d) = overrides.data_dir.clone().or(file.data_dir) {
            s.data_dir = d;
        }
        if let Some(n) = file.holder_name {
            s.holder_name = n;
        }
        if let Some(l) = file.default_language {
            if !matches!(l.as_str(), "sk" | "cs" | "en") {
                return Err(ConfigError::Invalid { key: "default_language", message: "must be sk, cs or en".into() });
            }
            s.default_language = l;
        }
        s.smtp_url = overrides.smtp_url.clone().or(file.mail.smtp_url).filter(|u| !u.is_empty());
        s.allow_plaintext_auth = file.mail.allow_plaintext_auth.unwrap_or(false);
        if let Some(u) = &s.smtp_url {
            crate::mail::check_smtp_url(u, s.allow_plaintext_auth)
                .map_err(|message| ConfigError::Invalid { key: "mail.smtp_url", message })?;
        }
        if let Some(f) = overrides.mail_from.clone().or(file.mail.from) {
            if !crate::mail::is_mailbox(&f) {
                return Err(ConfigError::Invalid {
                    key: "mail.from",
                    message: format!("{f:?} is not an address such as \"Holder <noreply@holder.example>\""),
                });
            }
            s.mail_from = f;
        }
        if let Some(n) = overrides.mail_helo_name.clone().or(file.mail.helo_name).filter(|n| !n.is_empty()) {
            helo::check(&n).map_err(|message| ConfigError::Invalid { key: "mail.helo_name", message })?;
            s.mail_helo_name = Some(n.to_ascii_lowercase());
        }
        if let Some(v) = file.mail.digest_min_interval_secs {
            s.digest_min_interval_secs = v;
        }
        s.store_cache_mib =
            ranged(file.store.cache_mib, crate::store::DEFAULT_CACHE_MIB, 1..=65_536, "store.cache_mib", "1..=65536")?;
        if let Some(v) = file.mail.smtp_timeout_secs {
            if !(1..=300).contains(&v) {
                return Err(ConfigError::Invalid { key: "mail.smtp_timeout_secs", message: "must be 1..=300".into() });
            }
            s.smtp_timeout_secs = v;
        }
        if let Some(v) = file.mail.retry_base_secs {
            if !(1..=3600).contains(&v) {
                return Err(ConfigError::Invalid { key: "mail.retry_base_secs", message: "must be 1..=3600".into() });
            }
            s.mail_retry_base_secs = v;
        }
        if let Some(v) = file.intents.draft_ttl_secs {
            if v == 0 || v > 86_400 {
                return Err(ConfigError::Invalid {
                    key: "intents.draft_ttl_secs",
                    message: "must be 1..=86400 (a draft expires within 24 hours, seed §5.1)".into(),
                });
            }
            s.draft_ttl_secs = v;
        }
        if let Some(v) = file.intents.confirm_ttl_secs {
            if v < 60 {
                return Err(ConfigError::Invalid {
                    key: "intents.confirm_ttl_secs",
                    message: "must be at least 60".into(),
                });
            }
            s.confirm_ttl_secs = v;
        }
        if let Some(v) = file.intents.max_validity_days {
            if !(1..=3650).contains(&v) {
                return Err(ConfigError::Invalid {
                    key: "intents.max_validity_days",
                    message: "must be 1..=3650".into(),
                });
            }
            s.max_validity_days = v;
        }
        if let Some(v) = file.intents.default_validity_days {
            s.default_validity_days = v;
        }
        if s.default_validity_days == 0 || s.default_validity_days > s.max_validity_days {
            return Err(ConfigError::Invalid {
                key: "intents.default_validity_days",
                message: format!("must be 1..={} (intents.max_validity_days)", s.max_validity_days),
            });
        }
        if let Some(v) = file.intents.contact_retention_days {
            s.contact_retention_days = v;
        }
        if let Some(v) = file.matching.min_should_match {
            if !(0.0..=1.0).contains(&v) {
                return Err(ConfigError::Invalid {
                    key: "matching.min_should_match",
                    message: "must be 0.0..=1.0".into(),
                });
            }
            s.min_should_match = v;
        }
        if let Some(c) = file.currency.default {
            let c = c.trim().to_ascii_uppercase();
            if c.len() != 3 || !c.chars().all(|ch| ch.is_ascii_alphabetic()) {
                return Err(ConfigError::Invalid {
                    key: "currency.default",
                    message: "must be an ISO 4217 code such as EUR".into(),
                });
            }
            s.default_currency = c;
        }
        if let Some(r) = file.currency.rates {
            for (k, v) in r {
                if !(v.is_finite() && v > 0.0) {
                    return Err(ConfigError::Invalid {
                        key: "currency.rates",
                        message: format!("{k} must be a positive number"),
                    });
                }
                s.rates.insert(k.to_ascii_uppercase(), v);
            }
        }
        s.rates.insert(s.default_currency.clone(), 1.0);
        if let Some(k) = file.demand.k {
            if !(1..=1000).contains(&k) {
                return Err(ConfigError::Invalid { key: "demand.k", message: "must be 1..=1000".into() });
            }
            s.demand_k = k;
        }
        for (cat, bounds) in file.demand.budget_bands.unwrap_or_default() {
            if !CATEGORY_KEYS.contains(&cat.as_str()) {
                let keys = CATEGORY_KEYS;
                return Err(ConfigError::Invalid {
                    key: "demand.budget_bands",
                    message: format!("{cat:?} is not a category (known: {})", keys.join(", ")),
                });
            }
            if bounds.first() != Some(&0) || bounds.len() > 20 || bounds.windows(2).any(|w| w[0] >= w[1]) {
                return Err(ConfigError::Invalid {
                    key: "demand.budget_bands",
                    message: format!(
                        "{cat} must list 1 to 20 band lower bounds in ascending order starting at 0, e.g. [0, 5000, 10000]"
                    ),
                });
            }
            s.demand_budget_bands.insert(cat, bounds);
        }
        s.limits = limits::limits(&file.limits)?;
        s.quotas = quotas::quotas(&file.quotas)?;
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

    /// The effective settings as JSON for `isto admin check-config` (the SMTP URL is
    /// shown without its user info, which may hold a password).
    pub fn describe(&self) -> serde_json::Value {
        let smtp = self.smtp_url.as_deref().map(|u| match (u.find("://"), u.rfind('@')) {
            (Some(i), Some(j)) if j > i => format!("{}***@{}", &u[..i + 3], &u[j + 1..]),
            _ => u.to_owned(),
        });
        serde_json::json!({
            "listen": self.listen.to_string(),
            "metrics_listen": self.metrics_listen.map(|a| a.to_string()),
            "public_url": self.public_url.base,
            "data_dir": self.data_dir.display().to_string(),
            "holder_name": self.holder_name,
            "default_language": self.default_language,
            "trusted_proxies": self.trusted_proxies.describe(),
            "mail": {"smtp_url": smtp, "allow_plaintext_auth": self.allow_plaintext_auth, "from": self.mail_from, "helo_name": self.helo_name(), "digest_min_interval_secs": self.digest_min_interval_secs, "smtp_timeout_secs": self.smtp_timeout_secs, "retry_base_secs": self.mail_retry_base_secs},
            "intents": {
                "draft_ttl_secs": self.draft_ttl_secs,
                "confirm_ttl_secs": self.confirm_ttl_secs,
                "default_validity_days": self.default_validity_days,
                "max_validity_days": self.max_validity_days,
                "contact_retention_days": self.contact_retention_days,
            },
            "matching": {"min_should_match": self.min_should_match},
            "currency": {"default": self.default_currency, "rates": self.rates},
            "demand": {"k": self.demand_k, "budget_bands": self.demand_budget_bands},
            "store": {"cache_mib": self.store_cache_mib},
            "limits": {
                "header_read_timeout_secs": self.limits.header_read_timeout_secs,
                "idle_timeout_secs": self.limits.idle_timeout_secs,
                "body_read_timeout_secs": self.limits.body_read_timeout_secs,
                "max_connections": self.limits.max_connections,
                "max_connections_per_client": self.limits.max_connections_per_client,
                "stream_idle_secs": self.limits.stream_idle_secs,
                "mcp_session_idle_secs": self.limits.mcp_session_idle_secs,
                "max_mcp_sessions": self.limits.max_mcp_sessions,
                "max_mcp_sessions_per_client": self.limits.max_mcp_sessions_per_client,
                "mcp_requests_per_minute": self.limits.mcp_requests_per_minute,
                "mcp_burst": self.limits.mcp_burst,
                "credential_requests_per_minute": self.limits.credential_requests_per_minute,
                "credential_burst": self.limits.credential_burst,
                "page_requests_per_minute": self.limits.page_requests_per_minute,
                "page_burst": self.limits.page_burst,
                "oauth_requests_per_minute": self.limits.oauth_requests_per_minute,
                "oauth_burst": self.limits.oauth_burst,
                "refresh_grace_secs": self.limits.refresh_grace_secs,
                "elicitation_wait_secs": self.limits.elicitation_wait_secs,
                "request_state_secs": self.limits.request_state_secs,
            },
            "quotas": {
                "drafts_per_client_per_hour": self.quotas.drafts_per_client_per_hour,
                "consents_per_client_per_hour": self.quotas.consents_per_client_per_hour,
                "consents_per_address_per_hour": self.quotas.consents_per_address_per_hour,
                "confirmation_mails_per_hour": self.quotas.confirmation_mails_per_hour,
                "confirmation_mails_reserved_percent": self.quotas.confirmation_mails_reserved_percent,
                "consents_per_network_per_hour": self.quotas.consents_per_network_per_hour,
                "registrations_per_client_per_hour": self.quotas.registrations_per_client_per_hour,
                "active_intents_per_person": self.quotas.active_intents_per_person,
            },
            "warnings": self.warnings(),
        })
    }

    /// What looks wrong but is allowed (for `isto admin check-config`): SMTP URL
    /// mismatches such as port 465 without implicit TLS, an EHLO name without a dot
    /// (`mail.helo_name`), connection limits that refuse ordinary clients
    /// ([`Limits::warnings`]), and a `trusted_proxies` entry that trusts every address.
    pub fn warnings(&self) -> Vec<String> {
        let mut w: Vec<String> = self
            .smtp_url
            .as_deref()
            .and_then(|u| crate::mail::check_smtp_url(u, self.allow_plaintext_auth).ok())
            .unwrap_or_default()
            .into_iter()
            .map(|w| format!("mail.smtp_url: {w}"))
            .collect();
        if let Some(m) = self.metrics_listen.filter(|m| !m.ip().is_loopback()) {
            w.push(format!(
                "metrics_listen: {m} is not a loopback address, so whoever reaches it reads the metrics \
                 (no personal data, but traffic and queue figures); prefer 127.0.0.1 or firewall the port"
            ));
        }
        w.extend(self.helo_warning());
        w.extend(self.limits.warnings());
        w.extend(crate::net::loopback_proxy_warning(&self.trusted_proxies, self.listen));
        for net in self.trusted_proxies.everyone() {
            w.push(format!(
                "trusted_proxies: {net} trusts every address, so any client can name itself in \
                 X-Forwarded-For and escape the per-client limits; list only your proxies' addresses"
            ));
        }
        w
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

/// [`SKELETON`] with its `data_dir` line set (uncommented) to `dir`, every other line
/// unchanged: the Debian package's `/etc/isto/isto.toml` (`isto --data-dir /var/lib/isto
/// generate config`), so that admin commands find the service's store without
/// `--data-dir`. The value is written as a TOML string.
pub fn skeleton_with_data_dir(dir: &str) -> String {
    let value = toml::Value::String(dir.to_owned()).to_string();
    let mut out = String::with_capacity(SKELETON.len() + 64);
    for line in SKELETON.lines() {
        if line.starts_with("# data_dir = ") {
            out.push_str(&format!("data_dir = {value}  # ISTO_DATA_DIR and --data-dir override it"));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
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
# cache_mib = 16                            # the store's page cache; more keeps more of a big catalogue in memory

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
mod tests {
    use super::*;

    #[test]
    fn defaults_need_no_file() {
        let s = Settings::load(&Overrides { config: None, ..Default::default() }).unwrap();
        assert_eq!(s.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(s.public_url.base, "http://127.0.0.1:8080");
    }

    #[test]
    fn store_cache_mib_defaults_loads_and_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("isto.toml");
        let load = |text: &str| {
            std::fs::write(&p, text).unwrap();
            Settings::load(&Overrides { config: Some(p.clone()), ..Default::default() })
        };
        assert_eq!(load("").unwrap().store_cache_mib, crate::store::DEFAULT_CACHE_MIB);
        assert_eq!(crate::store::DEFAULT_CACHE_MIB, 16);
        let s = load("[store]\ncache_mib = 256\n").unwrap();
        assert_eq!(s.store_cache_mib, 256);
        assert_eq!(s.describe()["store"]["cache_mib"], 256);
        for bad in ["0", "65537"] {
            let e = load(&format!("[store]\ncache_mib = {bad}\n")).unwrap_err();
            assert!(e.to_string().contains("store.cache_mib"), "{e}");
        }
        assert!(load("[store]\ncache = 1\n").is_err(), "unknown keys fail");
        assert!(SKELETON.contains("# cache_mib = 16 "), "the skeleton shows the default");
    }

    #[test]
    fn skeleton_parses_and_unknown_keys_fail() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("isto.toml");
        std::fs::write(&p, SKELETON).unwrap();
        Settings::load(&Overrides { config: Some(p.clone()), ..Default::default() }).unwrap();
        std::fs::write(&p, "lisen = \"1.2.3.4:5\"\n").unwrap();
        let e = Settings::load(&Overrides { config: Some(p), ..Default::default() }).unwrap_err();
        assert!(e.to_string().contains("lisen"), "{e}");
    }

    #[test]
    fn trusted_proxies_load_and_a_catch_all_is_warned_about() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("isto.toml");
        std::fs::write(&p, "trusted_proxies = [\"10.0.0.0/8\", \"0.0.0.0/0\"]\n").unwrap();
        let s = Settings::load(&Overrides { config: Some(p.clone()), ..Default::default() }).unwrap();
        assert_eq!(s.describe()["trusted_proxies"], serde_json::json!(["10.0.0.0/8", "0.0.0.0/0"]));
        let w = s.warnings();
        assert!(w.len() == 1 && w[0].starts_with("trusted_proxies: 0.0.0.0/0 trusts every address"), "{w:?}");
        assert!(Settings::defaults().warnings().is_empty());
        std::fs::write(&p, "trusted_proxies = [\"proxy.example\"]\n").unwrap();
        let e = Settings::load(&Overrides { config: Some(p), ..Default::default() }).unwrap_err().to_string();
        assert!(e.contains("trusted_proxies") && e.contains("\"proxy.example\""), "{e}");
    }

    #[test]
    fn public_url_gives_hosts_and_origins() {
        let u = PublicUrl::parse("https://Holder.Example/").unwrap();
        assert_eq!(u.base, "https://holder.example");
        assert_eq!(u.allowed_hosts(), vec!["holder.example", "holder.example:443"]);
        assert_eq!(u.allowed_origins(), vec!["https://holder.example:443"]);
        assert!(PublicUrl::parse("https://holder.example/app").is_err());
        assert!(PublicUrl::parse("ftp://x").is_err());
    }

    #[test]
    fn metrics_listen_is_off_by_default_parsed_checked_and_warned_about_off_loopback() {
        let s = Settings::load(&Overrides::default()).unwrap();
        assert_eq!(s.metrics_listen, None);
        assert!(s.describe()["metrics_listen"].is_null());
        let with = |m: &str| Settings::load(&Overrides { metrics_listen: Some(m.into()), ..Default::default() });
        let s = with("127.0.0.1:9464").unwrap();
        assert_eq!(s.metrics_listen, Some(SocketAddr::from(([127, 0, 0, 1], 9464))));
        assert!(s.warnings().is_empty(), "{:?}", s.warnings());
        assert_eq!(with("off").unwrap().metrics_listen, None);
        let e = with("localhost").unwrap_err().to_string();
        assert!(e.contains("metrics_listen") && e.contains("address:port"), "{e}");
        let e = with("127.0.0.1:8080").unwrap_err().to_string();
        assert!(e.contains("must differ from listen"), "{e}");
        let w = with("0.0.0.0:9464").unwrap().warnings();
        assert!(w.iter().any(|w| w.starts_with("metrics_listen: 0.0.0.0:9464 is not a loopback address")), "{w:?}");
    }

    #[test]
    fn listen_alone_moves_public_url() {
        let s = Settings::load(&Overrides { listen: Some("127.0.0.1:9999".into()), ..Default::default() }).unwrap();
        assert_eq!(s.public_url.base, "http://127.0.0.1:9999");
    }
}
