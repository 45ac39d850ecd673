//! `mail.helo_name`: the name isto gives itself in SMTP `EHLO` (RFC 5321 §4.1.1.1) and
//! the domain of its `Message-ID`s (RFC 5322 §3.6.4).
//!
//! Relays commonly refuse a client whose EHLO name is not fully qualified (Postfix's
//! `reject_non_fqdn_helo_hostname`), as the machine's bare host name (`vps-4821`) is not,
//! and double opt-in would never complete: so the name is configured, or taken from
//! what the holder knows about its own domain.

use super::Settings;

/// Longest domain name (RFC 1035 §2.3.4).
const NAME_MAX: usize = 253;

/// Checks an explicit `mail.helo_name`: a domain name (letters, digits, `-`, labels of
/// 1–63 characters separated by dots, at most 253 characters) or an IP address.
///
/// # Errors
/// The rule broken, for [`super::ConfigError::Invalid`] with key `mail.helo_name`.
pub(super) fn check(name: &str) -> Result<(), String> {
    if name.parse::<std::net::IpAddr>().is_ok() {
        return Ok(());
    }
    let label_ok = |l: &str| {
        (1..=63).contains(&l.len())
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if name.is_empty() || name.len() > NAME_MAX || !name.split('.').all(label_ok) {
        return Err(format!(
            "{name:?} must be a domain name such as \"holder.example\" (letters, digits and '-', \
             labels of 1-63 characters separated by dots, at most {NAME_MAX} characters) or an IP address"
        ));
    }
    Ok(())
}

/// Whether `name` is a domain name with a dot (a fully qualified name as relays ask).
fn qualified(name: &str) -> bool {
    name.parse::<std::net::IpAddr>().is_err() && name.contains('.') && check(name).is_ok()
}

impl Settings {
    /// The EHLO name and `Message-ID` domain: `mail.helo_name` when set; else the
    /// `public_url` host when it is a qualified domain name; else the domain of
    /// `mail.from` when qualified; else the `public_url` host when it is an IP address
    /// (sent as an address literal, `[192.0.2.1]`); else the first of those names there
    /// is (`localhost`: [`Settings::warnings`] then says so).
    pub fn helo_name(&self) -> String {
        if let Some(n) = &self.mail_helo_name {
            return n.clone();
        }
        let host = self.public_url.host.to_ascii_lowercase();
        let from = super::smtp::mailbox_address(&self.mail_from).map(|(_, d)| d.to_ascii_lowercase());
        if qualified(&host) {
            return host;
        }
        match from {
            Some(d) if qualified(&d) => d,
            _ => host,
        }
    }

    /// The `check-config` warning of an EHLO name without a dot (when mail goes to an
    /// SMTP server): relays with `reject_non_fqdn_helo_hostname` refuse it.
    pub(super) fn helo_warning(&self) -> Option<String> {
        let name = self.helo_name();
        let ip = name.parse::<std::net::IpAddr>().is_ok();
        (self.smtp_url.is_some() && !ip && !name.contains('.')).then(|| {
            format!(
                "mail.helo_name: {name:?} has no dot; SMTP servers that require a fully qualified EHLO name \
                 (Postfix reject_non_fqdn_helo_hostname) refuse every e-mail, so confirmations never arrive; \
                 set mail.helo_name (or public_url) to the holder's domain"
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Overrides, PublicUrl};

    fn with(public_url: &str, from: &str) -> Settings {
        let mut s = Settings::defaults();
        s.public_url = PublicUrl::parse(public_url).unwrap();
        s.mail_from = from.into();
        s.smtp_url = Some("smtp://127.0.0.1:25".into());
        s
    }

    #[test]
    fn the_default_is_the_public_url_host_else_the_from_domain() {
        assert_eq!(with("https://holder.example", "x <noreply@other.example>").helo_name(), "holder.example");
        assert_eq!(with("http://127.0.0.1:8080", "x <noreply@holder.example>").helo_name(), "holder.example");
        assert_eq!(with("http://localhost:8080", "x <noreply@holder.example>").helo_name(), "holder.example");
        assert_eq!(with("http://127.0.0.1:8080", "x <noreply@localhost>").helo_name(), "127.0.0.1");
        assert_eq!(with("http://vps-4821:8080", "x <noreply@localhost>").helo_name(), "vps-4821");
        let mut s = with("https://holder.example", "x <noreply@holder.example>");
        s.mail_helo_name = Some("mx.holder.example".into());
        assert_eq!(s.helo_name(), "mx.holder.example");
    }

    #[test]
    fn check_config_warns_about_a_name_without_a_dot() {
        let w = with("http://vps-4821:8080", "x <noreply@localhost>").warnings();
        assert!(w.iter().any(|w| w.starts_with("mail.helo_name: \"vps-4821\" has no dot")), "{w:?}");
        let mut s = with("https://holder.example", "x <noreply@holder.example>");
        assert!(s.warnings().is_empty(), "{:?}", s.warnings());
        s.mail_helo_name = Some("vps-4821".into());
        assert!(s.warnings().iter().any(|w| w.starts_with("mail.helo_name: \"vps-4821\"")));
        // An IP address is an address literal, not a bare name.
        assert!(with("http://127.0.0.1:8080", "x <noreply@localhost>").warnings().is_empty());
    }

    #[test]
    fn the_setting_is_read_from_the_file_and_the_environment_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("isto.toml");
        std::fs::write(&p, "[mail]\nhelo_name = \"mx.holder.example\"\n").unwrap();
        let o = Overrides { config: Some(p.clone()), ..Default::default() };
        let s = Settings::load(&o).unwrap();
        assert_eq!(s.helo_name(), "mx.holder.example");
        assert_eq!(s.describe()["mail"]["helo_name"], "mx.holder.example");
        let env = Overrides { mail_helo_name: Some("relay.holder.example".into()), ..o };
        assert_eq!(Settings::load(&env).unwrap().helo_name(), "relay.holder.example");
        std::fs::write(&p, "[mail]\nhelo_name = \"bad name!\"\n").unwrap();
        let e = Settings::load(&Overrides { config: Some(p), ..Default::default() }).unwrap_err().to_string();
        assert!(e.contains("mail.helo_name") && e.contains("must be a domain name"), "{e}");
    }
}
