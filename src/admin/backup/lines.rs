//! The longest line a backup may hold, and reading one line within it: a restore never
//! holds more than [`MAX_LINE`] bytes of a line (a 36 KB file that decompresses to one
//! 1 GiB line is refused at the cap).

use anyhow::{bail, Context as _};
use std::io::{BufRead, Read as _};

/// The longest line (one row, without its newline) a backup writes and a restore reads:
/// 8 MiB, far above any stored record.
pub const MAX_LINE: usize = 8 << 20;

/// Reads the next line of `reader` into `line` (without its newline): `Ok(false)` at
/// the end. `n` is the line's number and `what` names the file, for errors.
///
/// # Errors
/// A line longer than [`MAX_LINE`] (read no further than the cap), a last line without
/// its newline, a line that is not UTF-8, and read errors — each naming the line.
pub(super) fn next_line(reader: &mut impl BufRead, line: &mut String, n: u64, what: &str) -> anyhow::Result<bool> {
    let mut buf = std::mem::take(line).into_bytes();
    buf.clear();
    let got = reader
        .by_ref()
        .take(MAX_LINE as u64 + 1)
        .read_until(b'\n', &mut buf)
        .with_context(|| format!("the backup {what} is damaged or truncated (decompression failed at line {n})"))?;
    if buf.last() == Some(&b'\n') {
        buf.pop();
    } else if got > MAX_LINE {
        bail!(
            "the backup {what} is refused: line {n} is longer than {MAX_LINE} bytes (the longest line a backup \
             holds); the file is damaged or not a backup, nothing was restored"
        );
    } else if got > 0 {
        bail!("the backup {what} is damaged or truncated (decompression failed at line {n}): line {n} is cut off");
    }
    *line =
        String::from_utf8(buf).map_err(|_| anyhow::anyhow!("the backup {what} is damaged: line {n} is not UTF-8"))?;
    Ok(got > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_over_the_cap_is_refused_after_reading_only_the_cap() {
        let mut data = b"short\n".to_vec();
        data.extend(std::iter::repeat_n(b'a', MAX_LINE + 10));
        data.push(b'\n');
        let mut r = std::io::BufReader::new(&data[..]);
        let mut line = String::new();
        assert!(next_line(&mut r, &mut line, 1, "f").unwrap());
        assert_eq!(line, "short");
        let e = next_line(&mut r, &mut line, 2, "f").unwrap_err().to_string();
        assert!(e.contains("line 2 is longer than 8388608 bytes"), "{e}");
        let exact = [vec![b'b'; MAX_LINE], b"\n".to_vec()].concat();
        let mut r = std::io::BufReader::new(&exact[..]);
        assert!(next_line(&mut r, &mut line, 1, "f").unwrap());
        assert_eq!(line.len(), MAX_LINE);
        assert!(!next_line(&mut r, &mut line, 2, "f").unwrap());
    }
}
