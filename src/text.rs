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
