//! What `isto admin check-config` shows of the settings: the effective values
//! ([`Settings::describe`], the SMTP password never) and what looks wrong but is allowed
//! ([`Settings::warnings`]).

use super::{check_smtp_url, Settings};

impl Settings {
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
            "store": {
                "backend": if self.store_postgres.is_some() { "postgres" } else { "redb" },
                "cache_mib": self.store_cache_mib,
                "url": self.store_postgres.as_ref().map(|pg| crate::store::redacted(&pg.url)),
                "pool_size": self.store_postgres.as_ref().map(|pg| pg.pool_size),
            },
            "limits": self.limits,
            "quotas": self.quotas,
            "warnings": self.warnings(),
        })
    }

    /// What looks wrong but is allowed (for `isto admin check-config`), each naming its key.
    pub fn warnings(&self) -> Vec<String> {
        let mut w: Vec<String> = self
            .smtp_url
            .as_deref()
            .and_then(|u| check_smtp_url(u, self.allow_plaintext_auth).ok())
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
}
