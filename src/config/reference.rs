//! The configuration keys as data, for the book's "Configuration keys" page (`isto
//! generate reference`). Nothing here is a second copy of the settings: the keys and
//! notes are read from [`super::SKELETON`], the defaults from [`Settings::describe`] of
//! the defaults, and the ranges from the loader itself — each numeric key is loaded with
//! values outside any plausible range and the rule its [`ConfigError::Invalid`] names is
//! reported.

use super::{ConfigError, Overrides, Settings, SKELETON};
use std::path::Path;

/// One key of the TOML file.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyDoc {
    /// The dotted key as written in the file: `listen`, `mail.smtp_url`,
    /// `demand.budget_bands.vehicles`.
    pub key: String,
    /// The TOML type: `string`, `integer`, `float`, `boolean`, `array`, `table`.
    pub toml_type: &'static str,
    /// The default as JSON text (`null`: unset), from [`Settings::describe`] of
    /// [`Settings::defaults`].
    pub default: String,
    /// The value the skeleton shows (an example where the default is unset), as TOML text.
    pub example: String,
    /// The rules the loader states when the value is out of range (`1..=300`), joined with
    /// `; `; empty when no numeric value was refused.
    pub range: String,
    /// The skeleton's note on the key (may be empty).
    pub note: String,
}

/// The keys of [`SKELETON`] in file order: `(dotted key, shown value, note)`. A line
/// `# key = value   # note` under a `[section]` (or a commented `# [section.sub]`) is a key.
pub fn skeleton_keys() -> Vec<(String, String, String)> {
    let mut section = String::new();
    let mut sub = String::new();
    let mut out = Vec::new();
    for line in SKELETON.lines() {
        let line = line.trim_end();
        if let Some(rest) = line.strip_prefix('[') {
            section = rest.split(']').next().unwrap_or_default().to_owned();
            sub.clear();
            continue;
        }
        let Some(body) = line.strip_prefix("# ") else { continue };
        if let Some(rest) = body.strip_prefix('[') {
            let name = rest.split(']').next().unwrap_or_default();
            sub = name.strip_prefix(&format!("{section}.")).unwrap_or(name).to_owned();
            continue;
        }
        let Some((key, rest)) = body.split_once(" = ") else { continue };
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
            continue;
        }
        let (value, note) = match rest.find("  #").or_else(|| rest.find(" # ")) {
            Some(i) => (rest[..i].trim(), rest[i..].trim().trim_start_matches('#').trim()),
            None => (rest.trim(), ""),
        };
        let dotted =
            [section.as_str(), sub.as_str(), key].iter().filter(|p| !p.is_empty()).copied().collect::<Vec<_>>();
        out.push((dotted.join("."), value.to_owned(), note.to_owned()));
    }
    out
}

/// The value at the dotted `key` of `v`, if any.
fn at<'a>(v: &'a serde_json::Value, key: &str) -> Option<&'a serde_json::Value> {
    key.split('.').try_fold(v, |v, part| v.get(part))
}

/// The TOML type of the value `example` as the skeleton writes it.
fn toml_type(example: &str) -> &'static str {
    match example.chars().next() {
        Some('"') => "string",
        Some('[') => "array",
        Some('{') => "table",
        Some('t' | 'f') => "boolean",
        _ if example.contains('.') => "float",
        _ => "integer",
    }
}

/// The TOML text that sets `key` to `value` (`mail.smtp_timeout_secs` → `[mail]` then
/// `smtp_timeout_secs = value`).
fn setting(key: &str, value: &str) -> String {
    match key.rsplit_once('.') {
        Some((table, leaf)) => format!("[{table}]\n{leaf} = {value}\n"),
        None => format!("{key} = {value}\n"),
    }
}

/// The rules the loader names for `key` when given each of `probes`, joined with `; `.
fn probe_range(dir: &Path, key: &str, probes: &[&str]) -> anyhow::Result<String> {
    let file = dir.join("probe.toml");
    let mut rules: Vec<String> = Vec::new();
    for p in probes {
        std::fs::write(&file, setting(key, p))?;
        let loaded = Settings::load(&Overrides { config: Some(file.clone()), ..Default::default() });
        if let Err(ConfigError::Invalid { key: k, message }) = loaded {
            let rule = message.strip_prefix("must be ").unwrap_or(&message).to_owned();
            if k == key && !rules.contains(&rule) {
                rules.push(rule);
            }
        }
    }
    Ok(rules.join("; "))
}

/// Every key of the file, in the skeleton's order, with its type, default (of
/// `defaults`, normally [`Settings::defaults`]), example, range and note.
///
/// Errors: the probe file cannot be written in a temporary directory.
pub fn keys(defaults: &Settings) -> anyhow::Result<Vec<KeyDoc>> {
    let described = defaults.describe();
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("isto-reference-{}-{call}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut out = Vec::new();
    let result = (|| -> anyhow::Result<()> {
        for (key, example, note) in skeleton_keys() {
            let default = at(&described, &key).cloned().unwrap_or(serde_json::Value::Null);
            let ty = toml_type(&example);
            let probes: &[&str] = match ty {
                "integer" => &["0", "4294967295", "9223372036854775807"],
                "float" => &["-1.0", "1000000.5"],
                _ => &[],
            };
            let range = probe_range(&dir, &key, probes)?;
            out.push(KeyDoc { key, toml_type: ty, default: default.to_string(), example, range, note });
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result.map(|()| out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dotted leaf keys of `v` (maps of free keys, such as currency rates, as one key).
    fn leaves(v: &serde_json::Value, prefix: &str, out: &mut Vec<String>) {
        match v.as_object() {
            Some(m) if !matches!(prefix, "currency.rates") => {
                for (k, v) in m {
                    let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                    leaves(v, &key, out);
                }
            }
            _ => out.push(prefix.to_owned()),
        }
    }

    #[test]
    fn the_skeleton_names_every_setting_check_config_shows() {
        let mut shown = Vec::new();
        leaves(&Settings::defaults().describe(), "", &mut shown);
        shown.retain(|k| k != "warnings");
        let mut named: Vec<String> = skeleton_keys().into_iter().map(|(k, _, _)| k).collect();
        shown.sort_unstable();
        named.sort_unstable();
        assert_eq!(named, shown, "SKELETON and Settings::describe name different keys");
    }

    #[test]
    fn ranges_and_defaults_come_from_the_loader() {
        let keys = keys(&Settings::defaults()).unwrap();
        let get = |k: &str| keys.iter().find(|d| d.key == k).unwrap_or_else(|| panic!("{k} missing"));
        let t = get("mail.smtp_timeout_secs");
        assert_eq!((t.toml_type, t.default.as_str(), t.range.as_str()), ("integer", "20", "1..=300"));
        assert_eq!(get("limits.mcp_burst").range, "1..=100000");
        assert_eq!(get("intents.confirm_ttl_secs").range, "at least 60");
        assert_eq!(get("matching.min_should_match").range, "0.0..=1.0");
        assert_eq!(get("mail.digest_min_interval_secs").range, "", "no rule: any value");
        assert_eq!(get("mail.smtp_url").default, "null");
        assert_eq!(get("mail.smtp_url").toml_type, "string");
        assert_eq!(get("demand.budget_bands.vehicles").default, "[0,5000,10000,20000,40000]");
        assert!(get("quotas.confirmation_mails_reserved_percent").note.contains("confirmed before"));
        let mut changed = Settings::defaults();
        changed.demand_k = 6;
        assert_eq!(super::keys(&changed).unwrap().iter().find(|d| d.key == "demand.k").unwrap().default, "6");
    }
}
