//! The SMTP server a `mail.smtp_url` names ([`SmtpServer`]) and its one-message
//! conversation, driven step by step so that each step and the whole are bounded in
//! time and a failure is named by its phase.

use super::{failed, smtp_error, MailError, Phase};
use lettre::Message;

/// How the SMTP connection is encrypted, from the URL (`smtp://` → `None`,
/// `?tls=opportunistic`, `?tls=required` → `StartTls`, `smtps://` → `Implicit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsMode {
    /// Plain SMTP.
    None,
    /// STARTTLS when the server offers it, else plain.
    Opportunistic,
    /// STARTTLS, required.
    StartTls,
    /// TLS from the first byte (SMTPS).
    Implicit,
}

impl TlsMode {
    /// The mode as log lines write it: `none`, `starttls-opportunistic`, `starttls`, `tls`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Opportunistic => "starttls-opportunistic",
            Self::StartTls => "starttls",
            Self::Implicit => "tls",
        }
    }
}

/// The SMTP server as the URL names it, and the bounds of one conversation (see the
/// module docs).
#[derive(Clone)]
pub struct SmtpServer {
    /// Host name or address.
    pub host: String,
    /// Port (the URL's, else 25 for `smtp://`, 587 with `tls=`, 465 for `smtps://`).
    pub port: u16,
    /// Encryption.
    pub tls: TlsMode,
    credentials: Option<lettre::transport::smtp::authentication::Credentials>,
    allow_plaintext_auth: bool,
    pub(super) hello: lettre::transport::smtp::extension::ClientId,
    /// Whether the URL's path named the EHLO domain (it then wins over `mail.helo_name`).
    pub(super) hello_in_url: bool,
    step_timeout: std::time::Duration,
    send_timeout: std::time::Duration,
}

impl std::fmt::Debug for SmtpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the credentials.
        write!(f, "SmtpServer({}:{} tls={})", self.host, self.port, self.tls.as_str())
    }
}

/// `%XX` escapes of a URL's user name or password decoded (as lettre does).
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

impl SmtpServer {
    /// Reads `url` (already checked by [`check_smtp_url`]).
    pub(super) fn parse(
        url: &str,
        allow_plaintext_auth: bool,
        step_timeout: std::time::Duration,
    ) -> Result<Self, String> {
        use lettre::transport::smtp::{authentication::Credentials, extension::ClientId};
        let u = url::Url::parse(url).map_err(|_| "is not a URL".to_owned())?;
        let host = u.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']').to_owned();
        let tls = match (u.scheme(), u.query_pairs().find(|(k, _)| k == "tls").map(|(_, v)| v.into_owned())) {
            ("smtps", _) => TlsMode::Implicit,
            (_, Some(t)) if t == "required" => TlsMode::StartTls,
            (_, Some(t)) if t == "opportunistic" => TlsMode::Opportunistic,
            _ => TlsMode::None,
        };
        let default_port = match (u.scheme(), u.query().is_some_and(|q| q.contains("tls="))) {
            ("smtps", _) => 465,
            (_, true) => 587,
            _ => 25,
        };
        let credentials = match u.password() {
            Some(p) => {
                let user = percent_decode(u.username()).ok_or("has a user name that is not UTF-8")?;
                let pass = percent_decode(p).ok_or("has a password that is not UTF-8")?;
                Some(Credentials::new(user, pass))
            }
            None => None,
        };
        // As lettre: the URL's path names the EHLO domain.
        let hello = match u.path().trim_matches('/') {
            "" => ClientId::default(),
            name => ClientId::Domain(name.to_owned()),
        };
        Ok(Self {
            host,
            port: u.port().unwrap_or(default_port),
            tls,
            credentials,
            allow_plaintext_auth,
            hello_in_url: !u.path().trim_matches('/').is_empty(),
            hello,
            step_timeout,
            send_timeout: step_timeout.saturating_mul(3),
        })
    }

    /// One step of the conversation, bounded by the step timeout.
    async fn step<T>(
        &self,
        phase: Phase,
        f: impl std::future::Future<Output = Result<T, lettre::transport::smtp::Error>>,
    ) -> Result<T, MailError> {
        match tokio::time::timeout(self.step_timeout, f).await {
            Ok(r) => r.map_err(|e| smtp_error(&e, phase)),
            Err(_) => Err(failed("timeout", phase)),
        }
    }

    /// Connects, greets, encrypts and authenticates as the URL says.
    async fn open(&self) -> Result<lettre::transport::smtp::client::AsyncSmtpConnection, MailError> {
        use lettre::transport::smtp::client::{AsyncSmtpConnection, TlsParameters};
        let tls_params = || TlsParameters::new(self.host.clone()).map_err(|_| failed("TLS failure", Phase::Tls));
        let mut conn = if self.tls == TlsMode::Implicit {
            // lettre connects and shakes hands in one call: tell the steps apart by the
            // error where it can (its connect timeout is the step timeout, so an expiry of
            // the outer bound means the handshake or the greeting stalled).
            let params = tls_params()?;
            let connecting = AsyncSmtpConnection::connect_tokio1(
                (self.host.as_str(), self.port),
                Some(self.step_timeout),
                &self.hello,
                Some(params),
                None,
            );
            match tokio::time::timeout(self.step_timeout.saturating_mul(2), connecting).await {
                Ok(Ok(c)) => c,
                Ok(Err(e)) if e.is_timeout() => return Err(smtp_error(&e, Phase::Connect)),
                Ok(Err(e)) if e.is_transient() || e.is_permanent() || e.is_response() => {
                    return Err(smtp_error(&e, Phase::Greeting))
                }
                Ok(Err(e)) => return Err(smtp_error(&e, Phase::ConnectOrTls)),
                Err(_) => return Err(failed("timeout", Phase::TlsOrGreeting)),
            }
        } else {
            let tcp = match tokio::time::timeout(
                self.step_timeout,
                tokio::net::TcpStream::connect((self.host.as_str(), self.port)),
            )
            .await
            {
                Ok(Ok(t)) => t,
                Ok(Err(_)) => return Err(failed("connection failure", Phase::Connect)),
                Err(_) => return Err(failed("timeout", Phase::Connect)),
            };
            let _ = tcp.set_nodelay(true);
            let mut conn = self
                .step(Phase::Greeting, AsyncSmtpConnection::connect_with_transport(Box::new(tcp), &self.hello))
                .await?;
            let starttls = match self.tls {
                TlsMode::StartTls => true,
                TlsMode::Opportunistic => conn.can_starttls(),
                _ => false,
            };
            if starttls {
                let params = tls_params()?;
                self.step(Phase::Tls, conn.starttls(params, &self.hello)).await?;
            }
            conn
        };
        if let Some(creds) = &self.credentials {
            if !conn.is_encrypted() && !self.allow_plaintext_auth {
                // Never AUTH in clear unless the operator said so.
                conn.abort().await;
                return Err(failed("refused by isto", Phase::Auth));
            }
            use lettre::transport::smtp::authentication::Mechanism;
            self.step(Phase::Auth, conn.auth(&[Mechanism::Plain, Mechanism::Login], creds)).await?;
        }
        Ok(conn)
    }

    /// Sends `m` in one conversation: each step bounded by the step timeout, the whole by
    /// three step timeouts.
    pub(super) async fn send(&self, m: &Message) -> Result<(), MailError> {
        let whole = async {
            let mut conn = self.open().await?;
            let r = self.transfer(&mut conn, m).await;
            match &r {
                // A polite QUIT, bounded; its failure does not matter.
                Ok(()) => {
                    let _ = tokio::time::timeout(self.step_timeout, conn.quit()).await;
                }
                Err(_) => {
                    let _ = tokio::time::timeout(self.step_timeout, conn.abort()).await;
                }
            }
            r
        };
        match tokio::time::timeout(self.send_timeout, whole).await {
            Ok(r) => r,
            Err(_) => Err(failed("timeout", Phase::Unknown)),
        }
    }

    /// MAIL, RCPT, DATA and the message, each its own step.
    async fn transfer(
        &self,
        conn: &mut lettre::transport::smtp::client::AsyncSmtpConnection,
        m: &Message,
    ) -> Result<(), MailError> {
        use lettre::transport::smtp::commands::{Data, Mail, Rcpt};
        use lettre::transport::smtp::extension::{Extension, MailBodyParameter, MailParameter};
        let envelope = m.envelope();
        let bytes = m.formatted();
        let refused = |phase| failed("refused by isto", phase);
        let mut options = Vec::new();
        let non_ascii = envelope.from().is_some_and(|a| !AsRef::<str>::as_ref(a).is_ascii())
            || envelope.to().iter().any(|a| !AsRef::<str>::as_ref(a).is_ascii());
        if non_ascii {
            if !conn.server_info().supports_feature(Extension::SmtpUtfEight) {
                return Err(refused(Phase::Mail));
            }
            options.push(MailParameter::SmtpUtfEight);
        }
        if !bytes.is_ascii() {
            if !conn.server_info().supports_feature(Extension::EightBitMime) {
                return Err(refused(Phase::Mail));
            }
            options.push(MailParameter::Body(MailBodyParameter::EightBitMime));
        }
        self.step(Phase::Mail, conn.command(Mail::new(envelope.from().cloned(), options))).await?;
        for to in envelope.to() {
            self.step(Phase::Rcpt, conn.command(Rcpt::new(to.clone(), vec![]))).await?;
        }
        self.step(Phase::Data, conn.command(Data)).await?;
        self.step(Phase::Data, conn.message(&bytes)).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smtp_urls_give_host_port_tls_mode_and_credentials() {
        let t = std::time::Duration::from_secs(2);
        let s = SmtpServer::parse("smtp://127.0.0.1", false, t).unwrap();
        assert_eq!((s.host.as_str(), s.port, s.tls), ("127.0.0.1", 25, TlsMode::None));
        let s = SmtpServer::parse("smtp://mail.example?tls=required", false, t).unwrap();
        assert_eq!((s.port, s.tls.as_str()), (587, "starttls"));
        let s = SmtpServer::parse("smtp://mail.example:2525?tls=opportunistic", false, t).unwrap();
        assert_eq!((s.port, s.tls.as_str()), (2525, "starttls-opportunistic"));
        let s = SmtpServer::parse("smtps://us%40er:p%3Ass@[::1]", false, t).unwrap();
        assert_eq!((s.host.as_str(), s.port, s.tls.as_str()), ("::1", 465, "tls"));
        let c = s.credentials.as_ref().map(|c| format!("{c:?}")).unwrap_or_default();
        assert!(!c.is_empty());
        // The whole conversation gets three steps' worth; Debug never shows the password.
        assert_eq!(s.send_timeout, std::time::Duration::from_secs(6));
        assert!(!format!("{s:?}").contains("p:ss"), "{s:?}");
        assert_eq!(percent_decode("us%40er").as_deref(), Some("us@er"));
        assert_eq!(percent_decode("bad%4"), None);
    }
}
