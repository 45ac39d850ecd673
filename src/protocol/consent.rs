//! The consent texts in force (PROTOCOL.md §4.2: versioned, per language): shipped
//! defaults, replaced per language by `DATA_DIR/consent/<lang>.txt`.

use rust_embed::RustEmbed;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;

/// The languages the holder serves: its pages and its consent texts (one text each).
pub const LANGUAGES: [&str; 3] = ["sk", "cs", "en"];

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
        for lang in LANGUAGES {
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
