//! Text folding shared by the gazetteer, matching and catalogue search.
//!
//! PROTOCOL.md §2 (criteria strings are "equal after case and diacritics folding") and
//! §6 (statement relevance is "diacritics- and case-insensitive").

/// Lower-cases `s` and strips diacritics: `"Škoda Košice"` → `"skoda kosice"`.
///
/// Canonical decomposition (NFD) followed by removal of combining marks; characters
/// without a decomposition that still carry a diacritic in Slovak/Czech/German/Polish
/// (`ł`, `ø`, `ß`, `đ`) are mapped by hand. Each character is decomposed on its own
/// (ASCII as is): NFD's canonical reordering moves only characters of a non-zero
/// combining class, which are all combining marks and removed (asserted over every
/// character by the tests), so the result is NFD's without its reordering pass.
pub fn fold(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
        } else {
            unicode_normalization::char::decompose_canonical(c, |d| fold_decomposed(d, &mut out));
        }
    }
    out
}

/// One character of a canonical decomposition, folded into `out` (see [`fold`]).
fn fold_decomposed(c: char, out: &mut String) {
    if unicode_normalization::char::is_combining_mark(c) {
        return;
    }
    match c {
        'ł' | 'Ł' => out.push('l'),
        'ø' | 'Ø' => out.push('o'),
        'đ' | 'Đ' => out.push('d'),
        'ß' => out.push_str("ss"),
        _ => out.extend(c.to_lowercase()),
    }
}

/// Splits folded text into alphanumeric tokens: `"Škoda Octavia 2.0 TDI"` →
/// `["skoda", "octavia", "2", "0", "tdi"]`.
pub fn tokens(s: &str) -> Vec<String> {
    fold(s).split(|c: char| !c.is_alphanumeric()).filter(|t| !t.is_empty()).map(str::to_owned).collect()
}

/// Whether `c` is a character that can make text show other than it reads, or look
/// empty: a control character (C0, DEL, C1: `char::is_control`), a bidirectional mark,
/// embedding, override or isolate (U+200E–U+200F, U+061C, U+202A–U+202E, U+2066–U+2069;
/// Unicode UAX #9: U+202E shows `evil\u{202E}moc.` as `evil.com`), an invisible format
/// character (soft hyphen, zero-width spaces and joiners, U+2060–U+206F, the BOM,
/// interlinear annotation marks), Unicode's Default_Ignorable blanks (the Hangul fillers,
/// U+115F, U+1160, U+3164, U+FFA0), the blank Braille pattern, and the tag characters
/// (U+E0000–U+E0FFF: invisible to people, read by an AI assistant).
pub fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
            | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}' | '\u{2800}' | '\u{3164}' | '\u{FEFF}' | '\u{FFA0}'
            | '\u{FFF9}'..='\u{FFFB}' | '\u{1D173}'..='\u{1D17A}' | '\u{E0000}'..='\u{E0FFF}')
}

/// `s` as one line: runs of whitespace (line breaks and tabs too) as one space, the
/// [`hidden`] characters removed, trimmed: `"Škoda\u{1b}[31m  Octavia\u{202e}"` →
/// `"Škoda[31m Octavia"`. For a catalogue row's title, ref and seller name.
pub fn one_line(s: &str) -> String {
    let words = s.split_whitespace().map(|w| w.chars().filter(|&c| !hidden(c)).collect::<String>());
    words.filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ")
}

/// `s` with the [`hidden`] characters removed but tabs and line breaks, every line break
/// as `\n` (`\r\n`, a lone `\r`, VT, FF, NEL, U+2028 and U+2029: so no word is glued to
/// the next and no `\r` rewrites a terminal's line), trimmed. For a catalogue row's
/// description and a statement.
pub fn without_hidden(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => {}
            '\r' | '\u{b}' | '\u{c}' | '\u{85}' | '\u{2028}' | '\u{2029}' => out.push('\n'),
            '\t' | '\n' => out.push(c),
            c if hidden(c) => {}
            c => out.push(c),
        }
    }
    out.trim().to_owned()
}

/// Formats an amount with a thin group separator: `12 500`.
pub fn format_amount(a: f64) -> String {
    let whole = a.round() as i64;
    let sign = if whole < 0 { "-" } else { "" };
    let digits = whole.abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('\u{a0}');
        }
        out.push(c);
    }
    format!("{sign}{out}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `fold` as NFD of the whole text, then the marks removed (its definition).
    fn fold_by_nfd(s: &str) -> String {
        use unicode_normalization::UnicodeNormalization;
        let mut out = String::new();
        for c in s.nfd() {
            fold_decomposed(c, &mut out);
        }
        out
    }

    #[test]
    fn folding_each_character_alone_is_folding_the_nfd_of_the_text() {
        // NFD reorders only characters of a non-zero combining class: all are marks,
        // which folding removes, so the reordering cannot change the result.
        let reordered: Vec<char> = (0..=0x10_FFFF_u32)
            .filter_map(char::from_u32)
            .filter(|&c| unicode_normalization::char::canonical_combining_class(c) != 0)
            .filter(|&c| !unicode_normalization::char::is_combining_mark(c))
            .collect();
        assert_eq!(reordered, Vec::<char>::new(), "characters NFD reorders that folding keeps");
        for s in [
            "Škoda Košice Žilina Ľubľana ŘÍJEN ůň",
            "e\u{301}\u{323}a\u{323}\u{301} Ä\u{308}\u{0327}",
            "한국어 ÅNGSTRÖM ǅ ﬁ Ω K ẞ łØđß",
            "\u{301}leading mark, then ASCII: ABC xyz 123",
        ] {
            assert_eq!(fold(s), fold_by_nfd(s), "{s:?}");
        }
    }

    #[test]
    fn folds_slovak_and_czech() {
        assert_eq!(fold("Škoda Košice Žilina Ľubľana ŘÍJEN ůň"), "skoda kosice zilina lublana rijen un");
    }

    #[test]
    fn tokenizes() {
        assert_eq!(tokens("Škoda Octavia 2.0 TDI"), vec!["skoda", "octavia", "2", "0", "tdi"]);
    }
}
