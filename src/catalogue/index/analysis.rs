//! The text analysis of the offer index: the analyzers of the searchable fields and of
//! `terms` (the token stream of [`matching::text_terms`], with or without the sk/cs/en
//! stop words) and the fingerprint of that analysis stored with each commit, so that an
//! index written with other analysis is rebuilt.

use super::INDEX_VERSION;
use crate::matching;
use std::collections::HashSet;
use std::sync::LazyLock;
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// The analyzer of `title`, `attrs` and `description`: [`matching::text_terms`] without
/// stop words.
pub const ANALYZER: &str = "isto_v1";
/// The analyzer of `terms`: exactly [`matching::text_terms`].
pub const TERMS_ANALYZER: &str = "isto_terms_v1";

/// Slovak stop words (written with diacritics; folded when used).
const STOP_SK: &[&str] = &[
    "a", "aj", "ako", "aby", "ale", "alebo", "ani", "by", "bol", "bola", "bolo", "boli", "do", "je", "k", "ku", "na",
    "nad", "o", "od", "po", "pod", "pre", "pri", "s", "so", "sa", "si", "som", "sú", "tak", "tiež", "to", "už", "v",
    "vo", "z", "zo", "za", "že", "čo", "ktorý", "ktorá", "ktoré",
];
/// Czech stop words.
const STOP_CS: &[&str] = &[
    "a", "aby", "ale", "ani", "by", "byl", "byla", "bylo", "do", "i", "jak", "jako", "je", "jsem", "jsou", "k", "ke",
    "na", "nad", "nebo", "o", "od", "po", "pod", "pro", "při", "s", "se", "si", "tak", "také", "to", "u", "už", "v",
    "ve", "z", "ze", "za", "že", "což", "který", "která", "které",
];
/// English stop words.
const STOP_EN: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "from", "if", "in", "into", "is", "it", "its", "of",
    "on", "or", "that", "the", "their", "this", "to", "was", "were", "will", "with",
];

static STOP_WORDS: LazyLock<HashSet<String>> =
    LazyLock::new(|| STOP_SK.iter().chain(STOP_CS).chain(STOP_EN).map(|w| crate::text::fold(w)).collect());

/// Whether a folded token is a stop word of the searchable fields (sk/cs/en).
pub fn is_stop_word(term: &str) -> bool {
    STOP_WORDS.contains(term)
}

/// A fingerprint of the analysis (version, stop words, and the token stream of a probe
/// text with diacritics and synonyms), stored with each commit.
pub(super) fn analysis_fingerprint() -> &'static str {
    static FP: LazyLock<String> = LazyLock::new(|| {
        use sha2::{Digest, Sha256};
        let probe = "Škoda Octavia Combi 2.0 TDI 110kW nafta naftový benzín benzínový TSI TFSI kombi estate \
                     wagon variant touring avant elektro elektromobil EV hybrid hybridní hybridný automat \
                     automatická DSG byt bytu flat apartment dom dům domu house Košice ŁØß Žilina CRDi HDi dCi \
                     Tesla Model 3 BMW X5 byt 3+kk 2+1 do 12 000 EUR 150000 km Peugeot 2008";
        let mut h = Sha256::new();
        h.update(INDEX_VERSION.to_le_bytes());
        let mut stop: Vec<&String> = STOP_WORDS.iter().collect();
        stop.sort();
        for w in stop {
            h.update(w.as_bytes());
            h.update([0]);
        }
        for t in matching::text_terms(probe) {
            h.update(t.as_bytes());
            h.update([1]);
        }
        h.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect()
    });
    &FP
}

/// The tokenizer of both analyzers: the tokens of [`matching::text_terms`], optionally
/// without stop words. Offsets are not kept (nothing is highlighted).
#[derive(Clone)]
pub(super) struct IstoTokenizer {
    /// Whether stop words are dropped (the searchable fields) or kept (`terms`).
    pub(super) drop_stop_words: bool,
}

/// The token stream of [`IstoTokenizer`].
pub(super) struct IstoTokenStream {
    tokens: std::vec::IntoIter<Token>,
    current: Token,
}

impl TokenStream for IstoTokenStream {
    fn advance(&mut self) -> bool {
        match self.tokens.next() {
            Some(t) => {
                self.current = t;
                true
            }
            None => false,
        }
    }

    fn token(&self) -> &Token {
        &self.current
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.current
    }
}

impl Tokenizer for IstoTokenizer {
    type TokenStream<'a> = IstoTokenStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> IstoTokenStream {
        let tokens: Vec<Token> = matching::text_terms(text)
            .enumerate()
            .filter(|(_, t)| !(self.drop_stop_words && is_stop_word(t)))
            .map(|(position, text)| Token { offset_from: 0, offset_to: 0, position, text, position_length: 1 })
            .collect();
        IstoTokenStream { tokens: tokens.into_iter(), current: Token::default() }
    }
}
