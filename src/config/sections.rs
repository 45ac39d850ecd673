//! The top-level keys and the small sections of the file (`[intents]`, `[matching]`,
//! `[currency]`, `[demand]`), each checked and written into [`Settings`] by
//! [`Settings::load`] (the first key that breaks its rule is the one reported).

use super::{
    ConfigError, FileConfig, FileCurrency, FileDemand, FileIntents, FileMatching, Overrides, PublicUrl, Settings,
    CATEGORY_KEYS,
};

/// `listen`, `public_url` and `metrics_listen` (an override before the file's value).
/// Without a `public_url`, a given `listen` address is the public URL too.
///
/// # Errors
/// [`ConfigError::Invalid`] for an address that does not parse, a public URL with a path
/// or another scheme, or metrics on the public listener.
pub(super) fn load_addresses(s: &mut Settings, file: &FileConfig, overrides: &Overrides) -> Result<(), ConfigError> {
    let listen = overrides.listen.clone().or_else(|| file.listen.clone());
    let public_url = overrides.public_url.clone().or_else(|| file.public_url.clone());
    if let Some(l) = &listen {
        s.listen = l.parse().map_err(|_| {
            ConfigError::invalid("listen", format!("{l:?} must be an address:port such as 127.0.0.1:8080"))
        })?;
    }
    if let Some(u) = public_url.or_else(|| listen.is_some().then(|| format!("http://{}", s.listen))) {
        s.public_url = PublicUrl::parse(&u).map_err(|message| ConfigError::Invalid { key: "public_url", message })?;
    }
    match overrides.metrics_listen.as_deref().or(file.metrics_listen.as_deref()) {
        None | Some("" | "off") => {}
        Some(m) => {
            s.metrics_listen = Some(m.parse().map_err(|_| {
                ConfigError::invalid(
                    "metrics_listen",
                    format!("{m:?} must be an address:port such as 127.0.0.1:9464, or \"off\""),
                )
            })?);
        }
    }
    if s.metrics_listen.is_some() && s.metrics_listen == Some(s.listen) {
        return Err(ConfigError::invalid(
            "metrics_listen",
            "must differ from listen (metrics have a listener of their own)",
        ));
    }
    Ok(())
}

/// `data_dir` (an override before the file's value), `holder_name` and
/// `default_language`.
///
/// # Errors
/// [`ConfigError::Invalid`] for a language other than sk, cs or en.
pub(super) fn load_holder(s: &mut Settings, file: &FileConfig, overrides: &Overrides) -> Result<(), ConfigError> {
    if let Some(d) = overrides.data_dir.clone().or_else(|| file.data_dir.clone()) {
        s.data_dir = d;
    }
    if let Some(n) = &file.holder_name {
        s.holder_name.clone_from(n);
    }
    if let Some(l) = &file.default_language {
        if !matches!(l.as_str(), "sk" | "cs" | "en") {
            return Err(ConfigError::invalid("default_language", "must be sk, cs or en"));
        }
        s.default_language.clone_from(l);
    }
    Ok(())
}

/// `[intents]`.
///
/// # Errors
/// [`ConfigError::Invalid`] naming the key: `draft_ttl_secs` outside 1..=86400,
/// `confirm_ttl_secs` under 60, `max_validity_days` outside 1..=3650, or
/// `default_validity_days` outside 1..=`max_validity_days`.
pub(super) fn load_intents(s: &mut Settings, f: &FileIntents) -> Result<(), ConfigError> {
    if let Some(v) = f.draft_ttl_secs {
        if v == 0 || v > 86_400 {
            return Err(ConfigError::invalid(
                "intents.draft_ttl_secs",
                "must be 1..=86400 (a draft expires within 24 hours, seed §5.1)",
            ));
        }
        s.draft_ttl_secs = v;
    }
    if let Some(v) = f.confirm_ttl_secs {
        if v < 60 {
            return Err(ConfigError::invalid("intents.confirm_ttl_secs", "must be at least 60"));
        }
        s.confirm_ttl_secs = v;
    }
    s.max_validity_days =
        super::within(f.max_validity_days, s.max_validity_days, 1..=3650, "intents.max_validity_days")?;
    s.default_validity_days = f.default_validity_days.unwrap_or(s.default_validity_days);
    if s.default_validity_days == 0 || s.default_validity_days > s.max_validity_days {
        return Err(ConfigError::invalid(
            "intents.default_validity_days",
            format!("must be 1..={} (intents.max_validity_days)", s.max_validity_days),
        ));
    }
    s.contact_retention_days = f.contact_retention_days.unwrap_or(s.contact_retention_days);
    Ok(())
}

/// `[matching]` and `[currency]` (the default currency's own rate is always 1).
///
/// # Errors
/// [`ConfigError::Invalid`] naming the key: `min_should_match` outside 0.0..=1.0, a
/// default that is not three letters, a rate that is not a positive number.
pub(super) fn load_matching(s: &mut Settings, m: &FileMatching, c: FileCurrency) -> Result<(), ConfigError> {
    if let Some(v) = m.min_should_match {
        if !(0.0..=1.0).contains(&v) {
            return Err(ConfigError::invalid("matching.min_should_match", "must be 0.0..=1.0"));
        }
        s.min_should_match = v;
    }
    if let Some(code) = c.default {
        let code = code.trim().to_ascii_uppercase();
        if code.len() != 3 || !code.chars().all(|ch| ch.is_ascii_alphabetic()) {
            return Err(ConfigError::invalid("currency.default", "must be an ISO 4217 code such as EUR"));
        }
        s.default_currency = code;
    }
    for (k, v) in c.rates.unwrap_or_default() {
        if !(v.is_finite() && v > 0.0) {
            return Err(ConfigError::invalid("currency.rates", format!("{k} must be a positive number")));
        }
        s.rates.insert(k.to_ascii_uppercase(), v);
    }
    s.rates.insert(s.default_currency.clone(), 1.0);
    Ok(())
}

/// `[demand]`: the threshold k and the budget bands of each category (PROTOCOL.md §5).
///
/// # Errors
/// [`ConfigError::Invalid`] naming the key: k outside 1..=1000, an unknown category, or
/// bands that are not 1 to 20 ascending lower bounds starting at 0.
pub(super) fn load_demand(s: &mut Settings, f: FileDemand) -> Result<(), ConfigError> {
    s.demand_k = super::within(f.k, s.demand_k, 1..=1000, "demand.k")?;
    for (cat, bounds) in f.budget_bands.unwrap_or_default() {
        if !CATEGORY_KEYS.contains(&cat.as_str()) {
            return Err(ConfigError::invalid(
                "demand.budget_bands",
                format!("{cat:?} is not a category (known: {})", CATEGORY_KEYS.join(", ")),
            ));
        }
        if bounds.first() != Some(&0) || bounds.len() > 20 || bounds.windows(2).any(|w| w[0] >= w[1]) {
            return Err(ConfigError::invalid(
                "demand.budget_bands",
                format!(
                    "{cat} must list 1 to 20 band lower bounds in ascending order starting at 0, e.g. [0, 5000, 10000]"
                ),
            ));
        }
        s.demand_budget_bands.insert(cat, bounds);
    }
    Ok(())
}
