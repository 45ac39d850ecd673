//! The name isto gives itself to SMTP servers (`EHLO`, RFC 5321 §4.1.1.1), which
//! `config` derives (`mail.helo_name`, `Settings::helo_name`).

use super::Transport;
use lettre::transport::smtp::extension::ClientId;
use std::sync::Arc;

/// The EHLO argument for `name`: an IP address as an address literal (`[192.0.2.1]`,
/// `[IPv6:…]`, RFC 5321 §4.1.3), anything else as a domain.
fn client_id(name: &str) -> ClientId {
    match name.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(a)) => ClientId::Ipv4(a),
        Ok(std::net::IpAddr::V6(a)) => ClientId::Ipv6(a),
        Err(_) => ClientId::Domain(name.to_owned()),
    }
}

impl Transport {
    /// This transport greeting SMTP servers with `name` (`mail.helo_name`; lettre's
    /// default host name is often not fully qualified and then refused by relays), unless
    /// the SMTP URL's path names an EHLO domain.
    #[must_use]
    pub fn with_hello(self, name: &str) -> Self {
        match self {
            Self::Smtp(s) if !s.hello_in_url => {
                let mut server = Arc::unwrap_or_clone(s);
                server.hello = client_id(name);
                Self::Smtp(Arc::new(server))
            }
            other => other,
        }
    }

    /// The EHLO argument this transport sends (`None` for the file transport), as the
    /// server sees it (`holder.example`, `[192.0.2.1]`).
    pub fn hello(&self) -> Option<String> {
        self.smtp().map(|s| s.hello.to_string())
    }
}
