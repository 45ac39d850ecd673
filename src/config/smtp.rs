//! The mail settings' own checks: the SMTP server's URL ([`check_smtp_url`]) and the
//! `From` mailbox ([`mailbox_address`]), plain syntax over the settings' text (`mail`
//! turns them into its own types when it starts).

use super::{helo, ConfigError, FileMail, Overrides, Settings};

/// Checks an SMTP URL as lettre reads it (`smtp://` plain or with `?tls=required` /
/// `?tls=opportunistic` for STARTTLS, `smtps://` implicit TLS): the scheme, the `tls`
/// value, and that credentials never travel in clear — a URL with a user name must use
/// `smtps://` or `?tls=required` unless `allow_plaintext_auth` (`mail.allow_plaintext_auth`)
/// says otherwise. Returns warnings for mismatches it can see (port 465 without implicit
/// TLS, implicit TLS on 25 or 587).
///
/// # Errors
/// What is wrong with the URL (never the password), for a message that names the key.
pub fn check_smtp_url(url: &str, allow_plaintext_auth: bool) -> Result<Vec<String>, String> {
    let parsed =
        url::Url::parse(url).map_err(|_| "is not a URL such as smtp://mail.example:587?tls=required".to_owned())?;
    let implicit = match parsed.scheme() {
        "smtps" => true,
        "smtp" => false,
        other => return Err(format!("the scheme must be smtp or smtps, not {other:?}")),
    };
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err("names no host".to_owned());
    }
    let tls = parsed.query_pairs().find(|(k, _)| k == "tls").map(|(_, v)| v.into_owned());
    if let Some(t) = &tls {
        if !matches!(t.as_str(), "required" | "opportunistic" | "none") {
            return Err(format!("tls must be required, opportunistic or none, not {t:?}"));
        }
    }
    let encrypted = implicit || tls.as_deref() == Some("required");
    if !parsed.username().is_empty() && !encrypted && !allow_plaintext_auth {
        return Err("has a user name but no TLS: the password would travel in clear. Use \
                    smtps://… or add ?tls=required (or set mail.allow_plaintext_auth = true)"
            .to_owned());
    }
    let mut warnings = Vec::new();
    match (parsed.port(), implicit) {
        (Some(465), false) => warnings.push("port 465 usually expects implicit TLS (smtps://)".to_owned()),
        (Some(25 | 587), true) => {
            warnings.push("ports 25 and 587 usually expect STARTTLS (smtp://…?tls=required), not smtps://".to_owned())
        }
        _ => {}
    }
    Ok(warnings)
}

/// The address of a mailbox as a `From` setting writes it (RFC 5322 §3.4: an
/// `addr-spec` such as `noreply@holder.example`, or a display name and the address in
/// angle brackets, `Holder <noreply@holder.example>`): `(local part, domain)`, or `None`
/// when `s` is not such a mailbox. Stricter than RFC 5322 on the address (no quoted
/// local parts, comments or domain literals), which a `From` setting never needs.
pub fn mailbox_address(s: &str) -> Option<(&str, &str)> {
    let s = s.trim();
    let (name, addr) = match s.rfind('<') {
        Some(i) => (&s[..i], s[i + 1..].strip_suffix('>')?),
        None => ("", s),
    };
    if name.contains(['<', '>', '\r', '\n']) || addr.contains(['<', '>']) {
        return None;
    }
    let (local, domain) = addr.rsplit_once('@')?;
    let local_ok = !local.is_empty()
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && local.chars().all(|c| c.is_alphanumeric() || "!#$%&'*+-/=?^_`{|}~.".contains(c));
    let domain_ok = domain.split('.').all(|l| {
        !l.is_empty() && !l.starts_with('-') && !l.ends_with('-') && l.chars().all(|c| c.is_alphanumeric() || c == '-')
    });
    (local_ok && domain_ok).then_some((local, domain))
}

/// Reads the `[mail]` table and the mail overrides into `s`, each value checked.
///
/// # Errors
/// [`ConfigError::Invalid`] naming the key and the rule.
pub(super) fn load_mail(s: &mut Settings, mail: FileMail, overrides: &Overrides) -> Result<(), ConfigError> {
    s.smtp_url = overrides.smtp_url.clone().or(mail.smtp_url).filter(|u| !u.is_empty());
    s.allow_plaintext_auth = mail.allow_plaintext_auth.unwrap_or(false);
    if let Some(u) = &s.smtp_url {
        check_smtp_url(u, s.allow_plaintext_auth)
            .map_err(|message| ConfigError::Invalid { key: "mail.smtp_url", message })?;
    }
    if let Some(f) = overrides.mail_from.clone().or(mail.from) {
        if mailbox_address(&f).is_none() {
            return Err(ConfigError::invalid(
                "mail.from",
                format!("{f:?} is not an address such as \"Holder <noreply@holder.example>\""),
            ));
        }
        s.mail_from = f;
    }
    if let Some(n) = overrides.mail_helo_name.clone().or(mail.helo_name).filter(|n| !n.is_empty()) {
        helo::check(&n).map_err(|message| ConfigError::Invalid { key: "mail.helo_name", message })?;
        s.mail_helo_name = Some(n.to_ascii_lowercase());
    }
    s.digest_min_interval_secs = mail.digest_min_interval_secs.unwrap_or(s.digest_min_interval_secs);
    s.smtp_timeout_secs =
        super::within(mail.smtp_timeout_secs, s.smtp_timeout_secs, 1..=300, "mail.smtp_timeout_secs")?;
    s.mail_retry_base_secs =
        super::within(mail.retry_base_secs, s.mail_retry_base_secs, 1..=3600, "mail.retry_base_secs")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mailboxes_give_their_address_and_others_none() {
        assert_eq!(mailbox_address("Holder <noreply@holder.example>"), Some(("noreply", "holder.example")));
        assert_eq!(mailbox_address("noreply@holder.example"), Some(("noreply", "holder.example")));
        assert_eq!(mailbox_address("\"Holder, s.r.o.\" <a.b+c@x.sk>"), Some(("a.b+c", "x.sk")));
        assert_eq!(mailbox_address("isto <noreply@localhost>"), Some(("noreply", "localhost")));
        for bad in [
            "",
            "holder",
            "<>",
            "Holder <noreply>",
            "a@",
            "@b",
            "a@b..c",
            "a b@c",
            "Holder noreply@x.sk>",
            "Holder <noreply@x.sk",
            "a@-x.sk",
            "a@x_y.sk",
            "Holder > <a@b.sk>",
            "a@b@c",
        ] {
            assert_eq!(mailbox_address(bad), None, "{bad:?}");
        }
    }
}
