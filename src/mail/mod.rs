//! E-mail: one function per message, the consent texts, and the durable outbox worker.
//!
//! Messages are UTF-8 (Slovak and Czech diacritics in subjects and bodies), carry the
//! withdraw link and RFC 8058 `List-Unsubscribe` / `List-Unsubscribe-Post` headers
//! (PROTOCOL.md §4.4–4.5). A message is composed when it is queued and stored sealed in
//! the outbox table in the same transaction as the state change that caused it; the
//! worker sends and then deletes it, so a crash or an SMTP outage delays mail but loses
//! none.

pub mod worker;

use crate::config::Settings;
use crate::crypto::{KeyRing, Sealed};
use crate::protocol::{Intent, Offer};
use lettre::message::header::{self, ContentType, Header, HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart, SinglePart};
use lettre::{AsyncFileTransport, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use rust_embed::RustEmbed;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;

#[derive(RustEmbed)]
#[folder = "assets/consent/"]
struct ConsentAssets;

/// One consent text (PROTOCOL.md §4.2: versioned, per language).
#[derive(Debug, Clone)]
pub struct ConsentText {
    /// `sk`, `cs` or `en`.
    pub language: String,
    /// First 12 hex digits of the text's SHA-256: changes whenever the text does.
    pub version: String,
    /// The text (plain, paragraphs separated by blank lines).
    pub body: String,
}

/// The consent texts in force: shipped defaults, replaced per language by
/// `DATA_DIR/consent/<lang>.txt` when the operator puts one there.
#[derive(Debug, Clone)]
pub struct ConsentTexts {
    by_lang: BTreeMap<String, ConsentText>,
}

impl ConsentTexts {
    /// Loads the texts (operator files win over shipped ones).
    pub fn load(dir: &Path) -> Self {
        let mut by_lang = BTreeMap::new();
        for lang in ["sk", "cs", "en"] {
            let name = format!("{lang}.txt");
            let body = std::fs::read_to_string(dir.join(&name))
                .ok()
                .or_else(|| ConsentAssets::get(&name).map(|f| String::from_utf8_lossy(&f.data).into_owned()));
            if let Some(body) = body {
                let digest = Sha256::digest(body.as_bytes());
                let version = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
                by_lang.insert(lang.to_owned(), ConsentText { language: lang.to_owned(), version, body });
            }
        }
        Self { by_lang }
    }

    /// The text for `lang`, falling back to English, then any.
    pub fn get(&self, lang: &str) -> ConsentText {
        self.by_lang
            .get(lang)
            .or_else(|| self.by_lang.get("en"))
            .or_else(|| self.by_lang.values().next())
            .cloned()
            .unwrap_or(ConsentText { language: "en".into(), version: "none".into(), body: String::new() })
    }
}

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
}

impl MailJob {
    /// Seals `content` into a job due at once; `domain` (the holder's host) goes into
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
        })
    }
}

struct Strings {
    confirm_subject: &'static str,
    confirm_intro: &'static str,
    confirm_action: &'static str,
    ignore: &'static str,
    withdraw: &'static str,
    digest_subject: &'static str,
    digest_intro: &'static str,
    all_results: &'static str,
    aggregator: &'static str,
}

fn strings(lang: &str) -> &'static Strings {
    match lang {
        "sk" => &Strings {
            confirm_subject: "Potvrďte svoj dopyt",
            confirm_intro: "Dostali sme váš súhlas so zverejnením tohto dopytu:",
            confirm_action: "Dopyt aktivujete tlačidlom Potvrdiť na tejto stránke:",
            ignore: "Ak ste o nič nežiadali, tento e-mail ignorujte; bez potvrdenia sa nič nestane.",
            withdraw: "Dopyt kedykoľvek zrušíte tu:",
            digest_subject: "Nové ponuky pre váš dopyt",
            digest_intro: "Našli sme nové ponuky, ktoré zodpovedajú vášmu dopytu:",
            all_results: "Všetky výsledky:",
            aggregator: "Ponuky pochádzajú od trhového agregátora a nemusia byť úplné.",
        },
        "cs" => &Strings {
            confirm_subject: "Potvrďte svou poptávku",
            confirm_intro: "Obdrželi jsme váš souhlas se zveřejněním této poptávky:",
            confirm_action: "Poptávku aktivujete tlačítkem Potvrdit na této stránce:",
            ignore: "Pokud jste o nic nežádali, tento e-mail ignorujte; bez potvrzení se nic nestane.",
            withdraw: "Poptávku kdykoli zrušíte zde:",
            digest_subject: "Nové nabídky pro vaši poptávku",
            digest_intro: "Našli jsme nové nabídky, které odpovídají vaší poptávce:",
            all_results: "Všechny výsledky:",
            aggregator: "Nabídky pocházejí od tržního agregátoru a nemusí být úplné.",
        },
        _ => &Strings {
            confirm_subject: "Confirm your request",
            confirm_intro: "We received your consent to publish this request:",
            confirm_action: "Activate it with the Confirm button on this page:",
            ignore: "If you did not ask for anything, ignore this e-mail; nothing happens without confirmation.",
            withdraw: "Withdraw it at any time here:",
            digest_subject: "New offers for your request",
            digest_intro: "We found new offers that match your request:",
            all_results: "All results:",
            aggregator: "Offers come from a market aggregator and may be incomplete.",
        },
    }
}

fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

/// The double opt-in confirmation e-mail (PROTOCOL.md §4.3): the statement, the
/// confirmation page link (which shows a Confirm button; GET never confirms) and the
/// withdraw link.
pub fn confirmation(
    settings: &Settings,
    to: &str,
    intent: &Intent,
    confirm_url: &str,
    withdraw_url: &str,
    unsubscribe_url: &str,
) -> MailContent {
    let s = strings(&intent.language);
    let text = format!(
        "{intro}\n\n  \u{201e}{statement}\u{201c}\n\n{action}\n{confirm_url}\n\n{ignore}\n\n{withdraw}\n{withdraw_url}\n\n-- \n{holder}\n",
        intro = s.confirm_intro,
        statement = intent.statement,
        action = s.confirm_action,
        ignore = s.ignore,
        withdraw = s.withdraw,
        holder = settings.holder_name,
    );
    MailContent {
        to: to.to_owned(),
        subject: format!("{}: {}", s.confirm_subject, short(&intent.statement, 60)),
        text,
        unsubscribe_url: unsubscribe_url.to_owned(),
    }
}

/// The match digest (PROTOCOL.md §4.5): new offers with price, place and link, the
/// results page and the withdraw link.
pub fn digest(
    settings: &Settings,
    to: &str,
    intent: &Intent,
    offers: &[Offer],
    results_url: &str,
    withdraw_url: &str,
    unsubscribe_url: &str,
) -> MailContent {
    let s = strings(&intent.language);
    let mut list = String::new();
    for o in offers {
        let place = o.area.place.clone().unwrap_or_else(|| o.area.regions.join(", "));
        list.push_str(&format!("* {} — {} {} — {}\n", o.title, format_amount(o.price.amount), o.price.currency, place));
        if let Some(u) = &o.source.url {
            list.push_str(&format!("  {u}\n"));
        }
    }
    let text = format!(
        "{intro}\n\n  \u{201e}{statement}\u{201c}\n\n{list}\n{all}\n{results_url}\n\n{aggregator}\n\n{withdraw}\n{withdraw_url}\n\n-- \n{holder}\n",
        intro = s.digest_intro,
        statement = intent.statement,
        all = s.all_results,
        aggregator = s.aggregator,
        withdraw = s.withdraw,
        holder = settings.holder_name,
    );
    MailContent {
        to: to.to_owned(),
        subject: format!("{} ({}): {}", s.digest_subject, offers.len(), short(&intent.statement, 50)),
        text,
        unsubscribe_url: unsubscribe_url.to_owned(),
    }
}

/// Whether `s` is a mailbox such as `Holder <noreply@holder.example>` (RFC 5322).
pub fn is_mailbox(s: &str) -> bool {
    s.parse::<Mailbox>().is_ok()
}

/// Formats an amount with a thin group separator: `12 500`.
pub fn format_amount(a: f64) -> String {
    let whole = a.round() as i64;
    let digits = whole.abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('\u{a0}');
        }
        out.push(c);
    }
    if whole < 0 {
        format!("-{out}")
    } else {
        out
    }
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
/// reply text (which often quotes the address): only the kind and the reply code.
#[derive(Debug, thiserror::Error)]
pub enum MailError {
    /// The From or To address does not parse.
    #[error("bad address in {0}")]
    Address(&'static str),
    /// Building the message failed.
    #[error("cannot build message: {0}")]
    Build(String),
    /// The SMTP server or the connection to it failed.
    #[error("SMTP {kind}{}", code.as_ref().map(|c| format!(" (reply code {c})")).unwrap_or_default())]
    Smtp {
        /// `permanent rejection`, `temporary failure`, `timeout`, `TLS failure`, `connection failure`.
        kind: &'static str,
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
}

fn smtp_error(e: &lettre::transport::smtp::Error) -> MailError {
    let kind = if e.is_permanent() {
        "permanent rejection"
    } else if e.is_transient() {
        "temporary failure"
    } else if e.is_timeout() {
        "timeout"
    } else if e.is_tls() {
        "TLS failure"
    } else {
        "connection failure"
    };
    MailError::Smtp { kind, code: e.status().map(|c| c.to_string()), permanent: e.is_permanent() }
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

/// Where mail goes: SMTP when configured, else `.eml` files in `DATA_DIR/outbox`.
#[derive(Clone)]
pub enum Transport {
    /// lettre SMTP.
    Smtp(AsyncSmtpTransport<Tokio1Executor>),
    /// lettre file transport.
    File(AsyncFileTransport<Tokio1Executor>),
}

impl Transport {
    /// Builds the transport from settings; creates the outbox directory in file mode.
    ///
    /// # Errors
    /// [`MailError::Transport`] for a malformed SMTP URL or an unwritable directory.
    pub fn from_settings(s: &Settings) -> Result<Self, MailError> {
        match &s.smtp_url {
            Some(url) => AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
                .map(|b| Self::Smtp(b.build()))
                .map_err(|e| MailError::Transport(format!("ISTO_SMTP_URL: {e}"))),
            None => {
                let dir = s.outbox_dir();
                std::fs::create_dir_all(&dir).map_err(|e| MailError::Transport(format!("{}: {e}", dir.display())))?;
                // The .eml files hold addresses and tokens: owner only.
                crate::crypto::set_mode(&dir, 0o700)
                    .map_err(|e| MailError::Transport(format!("{}: {e}", dir.display())))?;
                Ok(Self::File(AsyncFileTransport::new(dir)))
            }
        }
    }

    /// Sends one message.
    ///
    /// # Errors
    /// [`MailError::Transport`].
    pub async fn send(&self, m: Message) -> Result<(), MailError> {
        match self {
            Self::Smtp(t) => t.send(m).await.map(|_| ()).map_err(|e| smtp_error(&e)),
            Self::File(t) => t.send(m).await.map(|_| ()).map_err(|e| {
                MailError::Transport(format!("writing the .eml file: {}", std::io::Error::other(e).kind()))
            }),
        }
    }
}
