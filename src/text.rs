//! Text folding shared by the gazetteer, matching and catalogue search.
//!
//! PROTOCOL.md §2 (criteria strings are "equal after case and diacritics folding") and
//! §6 (statement relevance is "diacritics- and case-insensitive").

use unicode_normalization::UnicodeNormalization;

/// Lower-cases `s` and strips diacritics: `"Škoda Košice"` → `"skoda kosice"`.
///
/// Canonical decomposition (NFD) followed by removal of combining marks; characters
/// without a decomposition that still carry a diacritic in Slovak/Czech/German/Polish
/// (`ł`, `ø`, `ß`, `đ`) are mapped by hand.
pub fn fold(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.nfd() {
        if unicode_normalization::char::is_combining_mark(c) {
            continue;
        }
        match c {
            'ł' | 'Ł' => out.push('l'),
            'ø' | 'Ø' => out.push('o'),
            'đ' | 'Đ' => out.push('d'),
            'ß' => out.push_str("ss"),
            _ => out.extend(c.to_lowercase()),
        }
    }
    out
}

/// Splits folded text into alphanumeric tokens: `"Škoda Octavia 2.0 TDI"` →
/// `["skoda", "octavia", "2", "0", "tdi"]`.
pub fn tokens(s: &str) -> Vec<String> {
    fold(s).split(|c: char| !c.is_alphanumeric()).filter(|t| !t.is_empty()).map(str::to_owned).collect()
}

/// Whether `c` is an invisible character that can make text show other than it reads:
/// a control character (C0, DEL, C1: `char::is_control`) or a bidirectional embedding,
/// override or isolate (U+202A–U+202E, U+2066–U+2069; Unicode UAX #9).
fn hidden(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` as one line: runs of whitespace (line breaks and tabs too) as one space, the
/// [`hidden`] characters removed, trimmed: `"Škoda\u{1b}[31m  Octavia\u{202e}"` →
/// `"Škoda[31m Octavia"`. For a catalogue row's title, ref and seller name.
pub fn one_line(s: &str) -> String {
    let words = s.split_whitespace().map(|w| w.chars().filter(|&c| !hidden(c)).collect::<String>());
    words.filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ")
}

/// `s` with the [`hidden`] characters removed except tabs and line breaks (`\t`, `\n`,
/// `\r`), trimmed. For a catalogue row's description.
pub fn without_hidden(s: &str) -> String {
    s.chars().filter(|&c| matches!(c, '\t' | '\n' | '\r') || !hidden(c)).collect::<String>().trim().to_owned()
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

    #[test]
    fn folds_slovak_and_czech() {
        assert_eq!(fold("Škoda Košice Žilina Ľubľana ŘÍJEN ůň"), "skoda kosice zilina lublana rijen un");
    }

    #[test]
    fn tokenizes() {
        assert_eq!(tokens("Škoda Octavia 2.0 TDI"), vec!["skoda", "octavia", "2", "0", "tdi"]);
    }
}
