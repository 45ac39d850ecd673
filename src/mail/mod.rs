//! E-mail transport (infrastructure): the composed message ([`MailContent`]), the sealed
//! outbox row ([`MailJob`]), the [`Outbox`] handle, the SMTP / file [`Transport`] and
//! the durable outbox worker. The messages themselves are composed by the services
//! (`crate::messages`, `crate::accounts`).
//!
//! Messages are UTF-8 (Slovak and Czech diacritics in subjects and bodies), carry the
//! withdraw link and RFC 8058 `List-Unsubscribe` / `List-Unsubscribe-Post` headers
//! (PROTOCOL.md §4.4–4.5). A message is composed when it is queued and stored sealed in
//! the outbox table in the same transaction as the state change that caused it; the
//! worker sends and then deletes it, so a crash or an SMTP outage delays mail but loses
//! none.

mod hello;
pub mod worker;

pub use hello::mailbox_domain;

use crate::clock::Clock;
use crate::crypto::{KeyRing, Sealed};
use crate::store::Store;
use lettre::message::header::{self, ContentType, Header, HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart, SinglePart};
use lettre::{AsyncFileTransport, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// A composed message before sealing.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MailContent {
    /// Recipient address.
    pub to: String,
    /// Subject (UTF-8).
    pub subject: String,
    /// Plain-text body (UTF-8).
    pub text: String,
    /// The RFC 8058 one-click unsubscribe URL (POST) for `List-Unsubscribe`.
    pub unsubscribe_url: String,
}

/// An outbox row: the sealed [`MailContent`] and delivery bookkeeping.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MailJob {
    /// The intent it belongs to (a withdrawal cancels its queued mail).
    pub intent_id: Option<String>,
    /// Sealed JSON of [`MailContent`].
    pub sealed: Sealed,
    /// Failed attempts so far.
    pub attempts: u32,
    /// Unix seconds before which the job is not retried.
    pub next_attempt: i64,
    /// The `Message-ID`, fixed when queued and the same on every attempt, so that a
    /// message sent again after a crash can be recognised as the same one.
    #[serde(default)]
    pub message_id: Option<String>,
    /// When the job was queued, unix seconds (for the oldest-message age of `/readyz`,
    /// issue 9 point 7); `None` in rows queued before it was recorded.
    #[serde(default)]
    pub queued_at: Option<i64>,
}

impl MailJob {
    /// Seals `content` into a job due at once; `domain` (`Settings::helo_name`, the EHLO name) goes into
    /// the `Message-ID`.
    ///
    /// # Errors
    /// [`crate::crypto::CryptoError::Seal`] when the content does not encode or sealing
    /// fails (nothing is queued).
    pub fn seal(
        keys: &KeyRing,
        intent: Option<&str>,
        content: &MailContent,
        now_unix: i64,
        domain: &str,
    ) -> Result<Self, crate::crypto::CryptoError> {
        let json = zeroize::Zeroizing::new(
            serde_json::to_vec(content)
                .map_err(|_| crate::crypto::CryptoError::Seal("the mail content does not encode as JSON"))?,
        );
        let message_id = format!("<{}@{domain}>", crate::crypto::new_id("msg_"));
        Ok(Self {
            intent_id: intent.map(str::to_owned),
            sealed: keys.seal(&json)?,
            attempts: 0,
            next_attempt: now_unix,
            message_id: Some(message_id),
            queued_at: Some(now_unix),
        })
    }
}

/// Whether `s` is a mailbox such as `Holder <noreply@holder.example>` (RFC 5322).
pub fn is_mailbox(s: &str) -> bool {
    s.parse::<Mailbox>().is_ok()
}

#[derive(Clone)]
struct ListUnsubscribe(String);

impl Header for ListUnsubscribe {
    fn name() -> HeaderName {
        HeaderName::new_from_ascii_str("List-Unsubscribe")
    }
    fn parse(s: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(Self(s.to_owned()))
    }
    fn display(&self) -> HeaderValue {
        HeaderValue::new(Self::name(), self.0.clone())
    }
}

#[derive(Clone)]
struct ListUnsubscribePost;

impl Header for ListUnsubscribePost {
    fn name() -> HeaderName {
        HeaderName::new_from_ascii_str("List-Unsubscribe-Post")
    }
    fn parse(_: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(Self)
    }
    fn display(&self) -> HeaderValue {
        HeaderValue::new(Self::name(), "List-Unsubscribe=One-Click".to_owned())
    }
}

/// A mail failure. Messages never include the recipient, the body or the SMTP server's
/// reply text (which often quotes the address): only the kind, the phase and the reply
/// code.
#[derive(Debug, thiserror::Error)]
pub enum MailError {
    /// The From or To address does not parse.
    #[error("bad address in {0}")]
    Address(&'static str),
    /// Building the message failed.
    #[error("cannot build message: {0}")]
    Build(String),
    /// The SMTP server or the connection to it failed.
    #[error("SMTP {kind} in phase {}{}", phase.as_str(), code.as_ref().map(|c| format!(" (reply code {c})")).unwrap_or_default())]
    Smtp {
        /// `permanent rejection`, `temporary failure`, `timeout`, `TLS failure`,
        /// `connection failure`, `bad reply`, `refused`.
        kind: &'static str,
        /// Where in the conversation it failed (as far as it can be told).
        phase: Phase,
        /// The SMTP reply code, when the server answered.
        code: Option<String>,
        /// A 5xx answer: retrying will not help.
        permanent: bool,
    },
    /// The configured transport cannot be used (bad URL, unwritable directory).
    #[error("transport: {0}")]
    Transport(String),
}

impl MailError {
    /// Whether retrying cannot succeed (the server rejected the message for good).
    pub fn is_permanent(&self) -> bool {
        matches!(self, Self::Smtp { permanent: true, .. } | Self::Address(_) | Self::Build(_))
    }

    /// The SMTP phase of the failure (`Phase::Unknown` for non-SMTP failures).
    pub fn phase(&self) -> Phase {
        match self {
            Self::Smtp { phase, .. } => *phase,
            _ => Phase::Unknown,
        }
    }
}

/// The step of an SMTP conversation (issue 9 point 5: log lines name the phase). Where
/// lettre's error cannot tell two steps apart the phase says so (`TlsOrGreeting`,
/// `ConnectOrTls`) or is `Unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Resolving the host and opening the TCP connection.
    Connect,
    /// The TLS handshake (implicit TLS, or after `STARTTLS`, with the second EHLO).
    Tls,
    /// The server's greeting and the reply to EHLO.
    Greeting,
    /// Implicit TLS: the handshake or the greeting after it (lettre does both in one step).
    TlsOrGreeting,
    /// Implicit TLS: the TCP connection or the handshake (lettre reports both alike).
    ConnectOrTls,
    /// `AUTH`.
    Auth,
    /// `MAIL FROM`.
    Mail,
    /// `RCPT TO`.
    Rcpt,
    /// `DATA` and the message.
    Data,
    /// Cannot be told.
    Unknown,
}

impl Phase {
    /// The phase as log lines write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Connect => "connect",
            Self::Tls => "tls",
            Self::Greeting => "greeting/ehlo",
            Self::TlsOrGreeting => "tls-or-greeting",
            Self::ConnectOrTls => "connect-or-tls",
            Self::Auth => "auth",
            Self::Mail => "mail",
            Self::Rcpt => "rcpt",
            Self::Data => "data",
            Self::Unknown => "unknown",
        }
    }
}

/// A failure of lettre in `phase`, described by kind and reply code only.
fn smtp_error(e: &lettre::transport::smtp::Error, phase: Phase) -> MailError {
    let kind = if e.is_permanent() {
        "permanent rejection"
    } else if e.is_transient() {
        "temporary failure"
    } else if e.is_timeout() {
        "timeout"
    } else if e.is_tls() {
        "TLS failure"
    } else if e.is_response() {
        "bad reply"
    } else if e.is_client() {
        "refused by isto"
    } else {
        "connection failure"
    };
    MailError::Smtp { kind, phase, code: e.status().map(|c| c.to_string()), permanent: e.is_permanent() }
}

/// A step of `phase` that took longer than its bound.
fn timed_out(phase: Phase) -> MailError {
    MailError::Smtp { kind: "timeout", phase, code: None, permanent: false }
}

/// Builds the RFC 5322 message for `content`.
///
/// # Errors
/// [`MailError::Address`], [`MailError::Build`].
pub fn build_message(from: &str, content: &MailContent, message_id: Option<&str>) -> Result<Message, MailError> {
    let from: Mailbox = from.parse().map_err(|_| MailError::Address("mail.from"))?;
    let to: Mailbox = content.to.parse().map_err(|_| MailError::Address("recipient"))?;
    Message::builder()
        .message_id(message_id.map(str::to_owned))
        .from(from)
        .to(to)
        .subject(content.subject.clone())
        .header(ListUnsubscribe(format!("<{}>", content.unsubscribe_url)))
        .header(ListUnsubscribePost)
        .header(header::MIME_VERSION_1_0)
        .multipart(
            MultiPart::mixed()
                .singlepart(SinglePart::builder().header(ContentType::TEXT_PLAIN).body(content.text.clone())),
        )
        .map_err(|e| MailError::Build(e.to_string()))
}

/// Longest wait for one SMTP step (the TCP connect, the greeting and EHLO, STARTTLS and
/// the handshake, AUTH, each of MAIL, RCPT and DATA) unless `mail.smtp_timeout_secs` says
/// otherwise.
pub const SMTP_COMMAND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);
/// Longest whole SMTP conversation for one message with the default step timeout: three
/// steps' worth ([`Transport::with_timeout`] keeps that ratio).
pub const SMTP_SEND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

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

/// The SMTP server as the URL names it, and the bounds of one conversation. The
/// conversation is driven step by step ([`lettre::transport::smtp::client::AsyncSmtpConnection`])
/// so that each step has its own timeout and a failure names its [`Phase`].
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
    hello: lettre::transport::smtp::extension::ClientId,
    /// Whether the URL's path named the EHLO domain (it then wins over `mail.helo_name`).
    hello_in_url: bool,
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
    fn parse(url: &str, allow_plaintext_auth: bool, step_timeout: std::time::Duration) -> Result<Self, String> {
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
            Err(_) => Err(timed_out(phase)),
        }
    }

    /// Connects, greets, encrypts and authenticates as the URL says.
    async fn open(&self) -> Result<lettre::transport::smtp::client::AsyncSmtpConnection, MailError> {
        use lettre::transport::smtp::client::{AsyncSmtpConnection, TlsParameters};
        let tls_params = || {
            TlsParameters::new(self.host.clone()).map_err(|_| MailError::Smtp {
                kind: "TLS failure",
                phase: Phase::Tls,
                code: None,
                permanent: false,
            })
        };
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
                Err(_) => return Err(timed_out(Phase::TlsOrGreeting)),
            }
        } else {
            let tcp = match tokio::time::timeout(
                self.step_timeout,
                tokio::net::TcpStream::connect((self.host.as_str(), self.port)),
            )
            .await
            {
                Ok(Ok(t)) => t,
                Ok(Err(_)) => {
                    return Err(MailError::Smtp {
                        kind: "connection failure",
                        phase: Phase::Connect,
                        code: None,
                        permanent: false,
                    })
                }
                Err(_) => return Err(timed_out(Phase::Connect)),
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
                // issue 9 point 5: never AUTH in clear unless the operator said so.
                conn.abort().await;
                return Err(MailError::Smtp {
                    kind: "refused by isto",
                    phase: Phase::Auth,
                    code: None,
                    permanent: false,
                });
            }
            use lettre::transport::smtp::authentication::Mechanism;
            self.step(Phase::Auth, conn.auth(&[Mechanism::Plain, Mechanism::Login], creds)).await?;
        }
        Ok(conn)
    }

    /// Sends `m` in one conversation: each step bounded by the step timeout, the whole by
    /// three step timeouts.
    async fn send(&self, m: &Message) -> Result<(), MailError> {
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
            Err(_) => Err(timed_out(Phase::Unknown)),
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
        let refused = |phase| MailError::Smtp { kind: "refused by isto", phase, code: None, permanent: false };
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

/// Where mail goes: SMTP when configured, else `.eml` files in `DATA_DIR/outbox`.
#[derive(Clone)]
pub enum Transport {
    /// An SMTP server, one conversation per message (no pool: a stuck connection holds
    /// up only its own message).
    Smtp(Arc<SmtpServer>),
    /// lettre file transport.
    File(AsyncFileTransport<Tokio1Executor>),
}

impl Transport {
    /// Builds the transport: SMTP at `smtp_url` (`ISTO_SMTP_URL`) when given, else `.eml`
    /// files in `outbox_dir` (created, owner only), with the default step timeout
    /// ([`SMTP_COMMAND_TIMEOUT`]).
    ///
    /// # Errors
    /// [`MailError::Transport`] for a malformed SMTP URL or an unwritable directory.
    pub fn new(smtp_url: Option<&str>, outbox_dir: &Path, allow_plaintext_auth: bool) -> Result<Self, MailError> {
        Self::with_timeout(smtp_url, outbox_dir, allow_plaintext_auth, SMTP_COMMAND_TIMEOUT)
    }

    /// As [`Transport::new`] with each SMTP step bounded by `step_timeout`
    /// (`mail.smtp_timeout_secs`) and the whole conversation by three times that.
    ///
    /// # Errors
    /// [`MailError::Transport`] for a malformed SMTP URL or an unwritable directory.
    pub fn with_timeout(
        smtp_url: Option<&str>,
        outbox_dir: &Path,
        allow_plaintext_auth: bool,
        step_timeout: std::time::Duration,
    ) -> Result<Self, MailError> {
        match smtp_url {
            Some(url) => {
                check_smtp_url(url, allow_plaintext_auth)
                    .map_err(|m| MailError::Transport(format!("ISTO_SMTP_URL {m}")))?;
                // lettre's own reading of the URL, as a second check.
                AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
                    .map_err(|e| MailError::Transport(format!("ISTO_SMTP_URL: {e}")))?;
                SmtpServer::parse(url, allow_plaintext_auth, step_timeout)
                    .map(|s| Self::Smtp(Arc::new(s)))
                    .map_err(|m| MailError::Transport(format!("ISTO_SMTP_URL {m}")))
            }
            None => {
                let dir = outbox_dir.to_path_buf();
                std::fs::create_dir_all(&dir).map_err(|e| MailError::Transport(format!("{}: {e}", dir.display())))?;
                // The .eml files hold addresses and tokens: owner only.
                crate::crypto::set_mode(&dir, 0o700)
                    .map_err(|e| MailError::Transport(format!("{}: {e}", dir.display())))?;
                Ok(Self::File(AsyncFileTransport::new(dir)))
            }
        }
    }

    /// The SMTP server, for log lines (`None` for the file transport).
    pub fn smtp(&self) -> Option<&SmtpServer> {
        match self {
            Self::Smtp(s) => Some(s),
            Self::File(_) => None,
        }
    }

    /// Sends one message.
    ///
    /// # Errors
    /// [`MailError::Smtp`] (kind, [`Phase`], reply code), [`MailError::Transport`].
    pub async fn send(&self, m: Message) -> Result<(), MailError> {
        match self {
            Self::Smtp(s) => s.send(&m).await,
            Self::File(t) => t.send(m).await.map(|_| ()).map_err(|e| {
                MailError::Transport(format!("writing the .eml file: {}", std::io::Error::other(e).kind()))
            }),
        }
    }
}

/// The mail waiting in the outbox (see [`Outbox::backlog`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backlog {
    /// Jobs in the outbox (queued, or waiting for a retry).
    pub jobs: u64,
    /// Age of the oldest job, seconds (0 when there is none).
    pub oldest_age_secs: u64,
    /// Messages dropped after a permanent refusal (5xx) since the store was created.
    pub dropped: u64,
}

/// The durable mail queue as the worker and the services share it: the store and keys
/// the jobs live in, the clock, the `From` address, the worker's wake-up, and the send
/// lock.
#[derive(Clone)]
pub struct Outbox {
    /// The store holding the `outbox` table.
    pub store: Arc<Store>,
    /// Keys that open the sealed jobs.
    pub keys: Arc<KeyRing>,
    /// The clock (retry times).
    pub clock: Arc<dyn Clock>,
    /// The `From` mailbox (`mail.from`).
    pub from: String,
    wake: Arc<tokio::sync::Notify>,
    /// Held by the worker while it checks that a job still exists before sending it (never
    /// during the send), and by a withdrawal around its transaction: once a withdrawal
    /// has returned, no send of its intent's mail starts; a withdrawal never waits for
    /// an SMTP server.
    pub send_lock: Arc<tokio::sync::Mutex<()>>,
    /// Half the first retry delay, seconds (`mail.retry_base_secs`, default
    /// [`worker::RETRY_BASE_SECS`]): attempt `n` failed → retried `base × 2^n` s later.
    pub retry_base_secs: u64,
}

impl std::fmt::Debug for Outbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Outbox")
    }
}

impl Outbox {
    /// A handle over `store`'s outbox.
    pub fn new(store: Arc<Store>, keys: Arc<KeyRing>, clock: Arc<dyn Clock>, from: &str) -> Self {
        Self {
            store,
            keys,
            clock,
            from: from.to_owned(),
            wake: Arc::new(tokio::sync::Notify::new()),
            send_lock: Arc::new(tokio::sync::Mutex::new(())),
            retry_base_secs: worker::RETRY_BASE_SECS,
        }
    }

    /// Wakes the worker (after a commit that queued mail or made digests due).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// The mail waiting in the outbox (issue 9 point 7, `/readyz`), in one read: how many
    /// jobs, the age of the oldest in seconds (0 when empty), and how many were dropped
    /// for good (point 5). A row queued before `queued_at`
    /// was recorded counts from its next attempt time.
    ///
    /// # Errors
    /// Storage errors.
    pub fn backlog(&self) -> Result<Backlog, crate::store::StoreError> {
        use crate::store::Reads as _;
        let (jobs, oldest, dropped) = self.store.read(|rx| {
            let (jobs, oldest) = rx.outbox_backlog::<MailJob>()?;
            Ok::<_, crate::store::StoreError>((jobs, oldest, rx.mail_dropped()?))
        })?;
        let now = self.clock.now().unix_timestamp();
        let oldest_age_secs = oldest
            .map(|(_, j)| u64::try_from(now.saturating_sub(j.queued_at.unwrap_or(j.next_attempt))).unwrap_or(0))
            .unwrap_or(0);
        Ok(Backlog { jobs, oldest_age_secs, dropped })
    }

    /// Resolves when [`Outbox::wake`] was called.
    pub async fn woken(&self) {
        self.wake.notified().await;
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

    #[test]
    fn backlog_counts_waiting_mail_its_oldest_age_and_drops() {
        let d = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(&d.path().join("s.redb")).unwrap());
        let clock =
            Arc::new(crate::clock::ManualClock::new(crate::clock::parse_rfc3339("2026-12-01T10:00:00Z").unwrap()));
        let keys = Arc::new(KeyRing::ephemeral());
        let outbox = Outbox::new(store.clone(), keys.clone(), clock.clone(), "isto <noreply@localhost>");
        assert_eq!(outbox.backlog().unwrap(), Backlog { jobs: 0, oldest_age_secs: 0, dropped: 0 });
        let content = MailContent {
            to: "a@example.com".into(),
            subject: "s".into(),
            text: "t".into(),
            unsubscribe_url: "https://holder.example/unsubscribe/x".into(),
        };
        let now = clock.now().unix_timestamp();
        let job = |at| MailJob::seal(&keys, None, &content, at, "holder.example").unwrap();
        let (a, _) = store
            .write(|tx| {
                Ok::<_, crate::store::StoreError>((tx.enqueue_mail(&job(now - 90))?, tx.enqueue_mail(&job(now - 10))?))
            })
            .unwrap();
        assert_eq!(outbox.backlog().unwrap(), Backlog { jobs: 2, oldest_age_secs: 90, dropped: 0 });
        store.write(|tx| tx.drop_mail(a)).unwrap();
        assert_eq!(outbox.backlog().unwrap(), Backlog { jobs: 1, oldest_age_secs: 10, dropped: 1 });
    }

    #[test]
    fn errors_name_kind_phase_and_code_only() {
        let e = MailError::Smtp {
            kind: "temporary failure",
            phase: Phase::Rcpt,
            code: Some("451".into()),
            permanent: false,
        };
        assert_eq!(e.to_string(), "SMTP temporary failure in phase rcpt (reply code 451)");
        assert!(!e.is_permanent());
        assert_eq!(timed_out(Phase::Greeting).to_string(), "SMTP timeout in phase greeting/ehlo");
        assert_eq!(MailError::Address("recipient").phase(), Phase::Unknown);
    }
}
