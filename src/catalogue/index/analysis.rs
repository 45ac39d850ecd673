//! The text analysis of the offer index: the analyzers of the searchable field `text` and of
//! `terms`, and the fingerprint of that analysis stored with each commit, so that an
//! index written with other analysis is rebuilt.
//!
//! **The language work is done at index time**, so that a search is a handful of plain
//! term lookups:
//! - folding (case, diacritics), synonyms and designations come from
//!   [`matching::analyse`] (the one analysis of search and matching);
//! - **inflection**: each searchable word `t` of `m` characters is indexed as its *stem
//!   forms* `~p` ([`STEM_MARK`] + `p`) for each prefix `p` of `t` of `L` characters,
//!   `max(4, m - 5) ≤ L ≤ m` (`L = 4` only when `m ≤ 8`). A statement word `w` with a
//!   [`matching::stem`] `s` looks up the one term `~s`: it finds exactly the words that
//!   start with `s` and are at most `len(w) + 3` characters long — the inflection rule of
//!   [`matching::term_hit`] (for 6-character words with a 4-character stem, words up to
//!   8 characters instead of 9). A word without a stem (short, or with digits) looks up
//!   itself, so only such a word, and a place name (a search ranks by place names
//!   exactly), is also indexed as itself: no other lookup reads a word with a stem as
//!   itself (the candidates of an intent find it as `~t`);
//! - **one field, weighted by repetition** ([`text_tokens`]): the tokens of the title,
//!   the attribute values and the description go into the one field `text`, the title's
//!   3 times and the attributes' twice (the field weights 3/2/1 of PROTOCOL.md §3 as
//!   term frequencies, the usual BM25F approximation), so that a statement word is one
//!   term and one posting list, not one per field. The field is padded to
//!   [`TEXT_PAD`] tokens (the token `~`, which no statement looks up), so that offers
//!   with short texts have the same length norm: a long title does not rank below a
//!   short one for the same words;
//! - **single-letter names**: a one-letter word beside a longer word is indexed joined to
//!   it (`Ford C-MAX` → `ford_c`, `c_max`; `Mercedes-Benz Třídy C` → `tridy_c`), before
//!   stop words are dropped (`s`, `v`, `a` are Slovak/Czech stop words), so that `C-MAX`
//!   and `S-MAX`, or the classes of one make, rank apart ([`letter_phrases`]);
//! - **stop words** ([`is_stop_word`]) are not weighted and get no stem forms: each one
//!   of an offer is indexed once, after the weighted tokens and within the padding, for
//!   the candidates of an intent ([`super::candidates`]), which must find every term of
//!   [`matching::text_terms`]. A search never looks them up.

use super::INDEX_VERSION;
use crate::matching;
use std::collections::HashSet;
use std::sync::LazyLock;
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// The analyzer of `text`: the tokens of a [`text_value`] (see [`text_tokens`]).
pub const TEXT_ANALYZER: &str = "isto_text_v7";
/// The mark of a stem form (a character folded text never holds in a token).
pub const STEM_MARK: char = '~';

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
        stop.sort_unstable();
        for w in stop {
            h.update(w.as_bytes());
            h.update([0]);
        }
        for t in text_tokens(probe, &[probe], probe) {
            h.update(t.as_bytes());
            h.update([2]);
        }
        h.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect()
    });
    &FP
}

/// The phrases of one-letter words (`c`, `s`, `v`) with the longer word (not a stop word)
/// before and after them (`ford_c`, `c_max`, `tridy_c`): names such as `C-MAX` or
/// `Třídy C`. Designation phrases of [`matching::analyse`] are not neighbours (they
/// follow their designation).
pub fn letter_phrases(terms: &[matching::Term]) -> Vec<String> {
    let words: Vec<&str> =
        terms.iter().filter(|t| t.kind != matching::TermKind::Phrase).map(|t| t.text.as_str()).collect();
    let mut out = Vec::new();
    let long = |w: &str| w.chars().count() >= 2 && !w.contains('_') && !is_stop_word(w);
    for (i, w) in words.iter().enumerate() {
        let mut chars = w.chars();
        let letter = chars.next().is_some_and(char::is_alphabetic) && chars.next().is_none();
        if !letter {
            continue;
        }
        if let Some(p) = i.checked_sub(1).map(|j| words[j]).filter(|p| long(p)) {
            out.push(format!("{p}_{w}"));
        }
        if let Some(n) = words.get(i + 1).filter(|n| long(n)) {
            out.push(format!("{w}_{n}"));
        }
    }
    out
}

/// The prefixes of a searchable token whose stem forms (`STEM_MARK` + prefix) are
/// indexed (see the module docs), shortest first; none for a token that
/// [`matching::stem`] would not stem (digits, `_`, `+`).
pub fn stem_prefixes(token: &str) -> impl Iterator<Item = &str> {
    let m = if token.chars().any(|c| c.is_ascii_digit() || c == '_' || c == '+') { 0 } else { token.chars().count() };
    // `L = 4` only when `m <= 8`: from 9 characters on, `m - 5 >= 4`.
    let shortest = if m > 8 { (m - 5).max(5) } else { 4 };
    let ends = token.char_indices().map(|(i, _)| i).skip(shortest).chain([token.len()]);
    ends.take((m + 1).saturating_sub(shortest)).map(move |end| &token[..end])
}

/// The one term a statement word looks up in the searchable fields: its stem form when
/// [`matching::stem`] gives a stem, else the word itself.
pub fn lookup_term(word: &str) -> String {
    match matching::stem(word) {
        Some(s) => format!("{STEM_MARK}{s}"),
        None => word.to_owned(),
    }
}

/// The tokens of a searchable text: the tokens of [`matching::analyse`] and the
/// [`letter_phrases`], stop words apart: `(searchable, stop words)`.
pub fn searchable_tokens(text: &str) -> (Vec<String>, Vec<String>) {
    let terms = matching::analyse(text);
    let phrases = letter_phrases(&terms);
    terms.into_iter().map(|t| t.text).chain(phrases).partition(|t| !is_stop_word(t))
}

/// The padding token of `text`: [`STEM_MARK`] alone, which no statement looks up.
const PAD_TOKEN: &str = "~";

/// The separator of the sections of a `text` value ([`text_value`]).
const SECTION: char = '\u{1}';

/// The one value of the field `text` of an offer: its title, attribute values and
/// description as three sections ([`SECTION`] between them; a `SECTION` in the texts
/// becomes a space, which gives the same tokens), read by the analyzer
/// [`TEXT_ANALYZER`] (see the module docs).
pub fn text_value(title: &str, attrs: &[&str], description: &str) -> String {
    fn push(out: &mut String, t: &str) {
        out.extend(t.chars().map(|c| if c == SECTION { ' ' } else { c }));
    }
    let mut out =
        String::with_capacity(title.len() + description.len() + attrs.iter().map(|a| a.len() + 1).sum::<usize>() + 2);
    push(&mut out, title);
    out.push(SECTION);
    for (i, a) in attrs.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        push(&mut out, a);
    }
    out.push(SECTION);
    push(&mut out, description);
    out
}

/// The length the field `text` is padded to (see the module docs): about the tokens of
/// a title of 8 words and a few attributes, weighted.
pub const TEXT_PAD: usize = 160;

/// The tokens of the field `text` of an offer (see the module docs): those of the title
/// 3 times, of the attribute values twice, of the description once, then each stop word
/// once, then `~` up to [`TEXT_PAD`] tokens (the analyzer's token stream of
/// [`text_value`]).
pub fn text_tokens(title: &str, attrs: &[&str], description: &str) -> Vec<String> {
    let value = text_value(title, attrs, description);
    let mut stream = IstoTokenizer.token_stream(&value);
    let mut out = Vec::new();
    while stream.advance() {
        out.push(stream.token().text.clone());
    }
    out
}

/// The tokenizer of the analyzer [`TEXT_ANALYZER`]: the tokens of a [`text_value`], its
/// sections' [`searchable_tokens`] and their [`stem_prefixes`], weighted 3/2/1, its stop
/// words once, padded (see [`text_tokens`]); a text without [`SECTION`]s counts as a
/// title. Offsets are not kept (nothing is highlighted).
#[derive(Clone)]
pub(super) struct IstoTokenizer;

/// The token texts of one [`IstoTokenStream`] in one buffer (no allocation per token):
/// text `i` is `buf[ends[i - 1]..ends[i]]`.
#[derive(Default)]
struct Texts {
    buf: String,
    ends: Vec<usize>,
}

impl Texts {
    /// Appends the text `t`.
    fn push(&mut self, t: &str) {
        self.buf.push_str(t);
        self.ends.push(self.buf.len());
    }

    /// Appends the stem form of `prefix`: [`STEM_MARK`] + `prefix`.
    fn push_stem_form(&mut self, prefix: &str) {
        self.buf.push(STEM_MARK);
        self.push(prefix);
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn get(&self, i: usize) -> &str {
        let start = i.checked_sub(1).map_or(0, |j| self.ends[j]);
        &self.buf[start..self.ends[i]]
    }
}

/// The token stream of [`IstoTokenizer`]: each distinct token text is made once and
/// copied into the current token in `order` (a section's texts as often as its weight
/// asks), then `pad` times `~` (no allocation per emitted token).
pub(super) struct IstoTokenStream {
    texts: Texts,
    /// Indices into `texts`, in emission order.
    order: std::vec::IntoIter<usize>,
    pad: usize,
    current: Token,
}

impl IstoTokenStream {
    fn new(texts: Texts, order: Vec<usize>, pad: usize) -> Self {
        let current = Token { position: usize::MAX, ..Token::default() };
        Self { texts, order: order.into_iter(), pad, current }
    }
}

impl TokenStream for IstoTokenStream {
    fn advance(&mut self) -> bool {
        let text = match self.order.next() {
            Some(i) => self.texts.get(i),
            None if self.pad > 0 => {
                self.pad -= 1;
                PAD_TOKEN
            }
            None => return false,
        };
        self.current.position = self.current.position.wrapping_add(1);
        self.current.text.clear();
        self.current.text.push_str(text);
        true
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
        let mut texts = Texts::default();
        let mut order = Vec::new();
        let mut stops = std::collections::BTreeSet::new();
        let places = crate::gazetteer::place_tokens();
        for (section, weight) in text.splitn(3, SECTION).zip([3, 2, 1]) {
            let start = texts.len();
            let (searchable, stop) = searchable_tokens(section);
            for t in searchable {
                for p in stem_prefixes(&t) {
                    texts.push_stem_form(p);
                }
                // A word with a stem is looked up only by its stem forms (`~t` among them),
                // but a place name also as itself (a search ranks by it exactly).
                if matching::stem(&t).is_none() || places.contains(&t) {
                    texts.push(&t);
                }
            }
            for _ in 0..weight {
                order.extend(start..texts.len());
            }
            stops.extend(stop);
        }
        for t in stops {
            order.push(texts.len());
            texts.push(&t);
        }
        let pad = TEXT_PAD.saturating_sub(order.len());
        IstoTokenStream::new(texts, order, pad)
    }
}
