//! Streaming reader of catalogue files: JSON Lines (one offer object per line) and CSV
//! (a header line, then one offer per record). Memory stays constant whatever the file
//! size: one line or record is held at a time, and a line or record longer than
//! [`MAX_LINE_BYTES`] is refused.
//!
//! The format comes from the extension (`.jsonl`, `.ndjson`, `.json` → JSON Lines,
//! `.csv` → CSV); otherwise a file whose first non-blank byte is `{` is JSON Lines and
//! anything else CSV. A UTF-8 byte order mark is skipped.
//!
//! CSV columns ([`CSV_COLUMNS`] and `attr.KEY`, e.g. `attr.make`, `attr.year`) map to the
//! row fields of [`super::parse_json_row`]: `price.amount` + `price.currency` → `price`,
//! `seller.name` + `seller.url` → `seller`, `area` (a code or name) + optional
//! `area.place` → `area`, `attr.KEY` → `attributes.KEY` (numeric cells of number
//! attributes become numbers). Empty cells are absent. The delimiter is `,`, or `;` or a
//! tab when the header line uses that instead. Unknown or duplicate columns and missing
//! required ones fail the whole file before any row is read.

use super::{number_value, parse_json_row, parse_number_text};
use crate::gazetteer;
use crate::protocol::CATEGORIES;
use crate::records::OfferInput;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Longest JSON line or CSV record accepted, bytes (1 MiB).
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// The fixed CSV columns; attributes come as `attr.KEY` columns besides these.
pub const CSV_COLUMNS: &[&str] = &[
    "ref",
    "title",
    "description",
    "category",
    "price.amount",
    "price.currency",
    "area",
    "area.place",
    "seller.name",
    "seller.url",
    "url",
    "validUntil",
];

/// Columns every CSV file must have.
const CSV_REQUIRED: &[&str] = &["title", "category", "price.amount", "price.currency", "area", "seller.name"];

/// Buffer sizes of the file readers.
const BUF_BYTES: usize = 64 * 1024;

/// A rejected row: its line in the file (1-based; for CSV the line where the record
/// starts) and what is wrong, naming the field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RowError {
    /// 1-based line number.
    pub line: u64,
    /// The validation message (`"price.currency is required"`).
    pub message: String,
}

impl std::fmt::Display for RowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// A failure of the file as a whole (nothing row-specific).
#[derive(Debug, thiserror::Error)]
pub enum CatalogueError {
    /// The file could not be opened or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The file is not a catalogue file isto reads (bad CSV header, a JSON array, ...).
    #[error("{}: {message}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong (`"header line: unknown columns colour"`).
        message: String,
    },
}

/// The two file formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// JSON Lines: one offer object per line.
    Jsonl,
    /// CSV with a header line.
    Csv,
}

/// One data row before validation: its line and the row as JSON (for CSV, the value
/// built from the record's cells).
#[derive(Debug, Clone, PartialEq)]
pub struct RawRow {
    /// 1-based line number.
    pub line: u64,
    /// The row as a JSON value, to be checked with [`super::parse_json_row`].
    pub value: Value,
}

/// Bytes taken from the file (for the progress bar) and, for CSV, where the current
/// record starts in the normalised stream (for the record length limit).
#[derive(Debug, Default)]
struct Progress {
    read: AtomicU64,
    record_start: AtomicU64,
}

/// The file, counting the bytes read from it.
struct Counting {
    file: File,
    progress: Arc<Progress>,
}

impl Read for Counting {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read(buf)?;
        self.progress.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// What the CSV parser reads: line ends normalised to `\n` (CRLF and lone CR), a final
/// `\n` added when missing, so that line numbers can be derived from the parser's
/// newline count; and no more than [`MAX_LINE_BYTES`] (plus one buffer) past the start of
/// the current record, so an unbalanced quote cannot pull the whole file into memory.
struct CsvInput {
    inner: Counting,
    after_cr: bool,
    ends_with_lf: bool,
    finished: bool,
    produced: u64,
}

impl Read for CsvInput {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let limit = (MAX_LINE_BYTES + BUF_BYTES) as u64;
        if self.produced.saturating_sub(self.inner.progress.record_start.load(Ordering::Relaxed)) > limit {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a record is longer than {} MiB (is a quote unbalanced?)", MAX_LINE_BYTES >> 20),
            ));
        }
        if buf.is_empty() || self.finished {
            return Ok(0);
        }
        loop {
            let n = self.inner.read(buf)?;
            if n == 0 {
                self.finished = true;
                if self.ends_with_lf {
                    return Ok(0);
                }
                buf[0] = b'\n';
                self.produced += 1;
                return Ok(1);
            }
            let mut out = 0;
            for i in 0..n {
                let b = buf[i];
                let after_cr = std::mem::replace(&mut self.after_cr, b == b'\r');
                if b == b'\n' && after_cr {
                    continue;
                }
                buf[out] = if b == b'\r' { b'\n' } else { b };
                out += 1;
            }
            if out > 0 {
                self.ends_with_lf = buf[out - 1] == b'\n';
                self.produced += out as u64;
                return Ok(out);
            }
        }
    }
}

/// A CSV column: one of [`CSV_COLUMNS`] (`a.b` names field `b` of object `a`), or
/// `attr.KEY` (`number` for a number attribute).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Column {
    Fixed(&'static str),
    Attr { key: String, number: bool },
}

enum Inner {
    Jsonl { reader: BufReader<Counting>, buf: Vec<u8>, line: u64 },
    Csv { reader: csv::Reader<CsvInput>, columns: Vec<Column>, record: csv::ByteRecord },
}

/// Streams the rows of one catalogue file. As an [`Iterator`] it yields each row
/// validated ([`super::parse_json_row`]); [`RowReader::next_raw`] yields the JSON value
/// before validation. Blank lines are skipped. [`RowReader::finish`] reports a read
/// error that stopped the file early.
pub struct RowReader {
    path: PathBuf,
    format: Format,
    total: u64,
    progress: Arc<Progress>,
    currencies: Vec<String>,
    inner: Inner,
    failed: Option<io::Error>,
}

impl std::fmt::Debug for RowReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowReader").field("path", &self.path).field("format", &self.format).finish()
    }
}

/// Opens a catalogue file (JSON Lines or CSV, see the module docs) for streaming.
/// `currencies` are the codes the holder has rates for (used by the iterator).
///
/// # Errors
/// [`CatalogueError::Io`] when the file cannot be opened; [`CatalogueError::Format`] for a
/// JSON array instead of JSON Lines, or a CSV header with unknown, duplicate or missing
/// columns (all named at once).
pub fn read_file(path: &Path, currencies: &[String]) -> Result<RowReader, CatalogueError> {
    let io_err = |source| CatalogueError::Io { path: path.to_owned(), source };
    let fmt_err = |message: String| CatalogueError::Format { path: path.to_owned(), message };
    let mut file = File::open(path).map_err(io_err)?;
    let total = file.metadata().map_err(io_err)?.len();
    let mut head = Vec::with_capacity(8192);
    (&mut file).take(8192).read_to_end(&mut head).map_err(io_err)?;
    let bom = head.starts_with(b"\xEF\xBB\xBF");
    let start: u64 = if bom { 3 } else { 0 };
    let body = &head[start as usize..];
    let first = body.iter().copied().find(|b| !b.is_ascii_whitespace());
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    let format = match ext.as_deref() {
        Some("jsonl" | "ndjson" | "json") => Format::Jsonl,
        Some("csv") => Format::Csv,
        _ if first == Some(b'{') || first == Some(b'[') => Format::Jsonl,
        _ => Format::Csv,
    };
    if format == Format::Jsonl && first == Some(b'[') {
        return Err(fmt_err(
            "the file is a JSON array; isto reads JSON Lines (one offer object per line, no enclosing [ ])".into(),
        ));
    }
    file.seek(SeekFrom::Start(start)).map_err(io_err)?;
    let progress = Arc::new(Progress { read: AtomicU64::new(start), record_start: AtomicU64::new(start) });
    let inner = match format {
        Format::Jsonl => {
            let counting = Counting { file, progress: progress.clone() };
            Inner::Jsonl { reader: BufReader::with_capacity(BUF_BYTES, counting), buf: Vec::new(), line: 0 }
        }
        Format::Csv => {
            let input = CsvInput {
                inner: Counting { file, progress: progress.clone() },
                after_cr: false,
                ends_with_lf: true,
                finished: false,
                produced: 0,
            };
            let mut reader = csv::ReaderBuilder::new()
                .has_headers(true)
                .flexible(true)
                .delimiter(sniff_delimiter(body))
                .buffer_capacity(BUF_BYTES)
                .from_reader(input);
            let header = reader.headers().map_err(|e| fmt_err(format!("header line: {e}")))?.clone();
            progress.record_start.store(reader.position().byte(), Ordering::Relaxed);
            let columns = parse_header(&header).map_err(fmt_err)?;
            Inner::Csv { reader, columns, record: csv::ByteRecord::new() }
        }
    };
    Ok(RowReader {
        path: path.to_owned(),
        format,
        total,
        progress,
        currencies: currencies.to_vec(),
        inner,
        failed: None,
    })
}

/// `;` or tab when the header line has more of them than commas, else `,`.
fn sniff_delimiter(head: &[u8]) -> u8 {
    let line = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let count = |d: u8| line.iter().filter(|b| **b == d).count();
    let (comma, semi, tab) = (count(b','), count(b';'), count(b'\t'));
    if semi > comma && semi >= tab {
        b';'
    } else if tab > comma && tab > semi {
        b'\t'
    } else {
        b','
    }
}

fn attribute_keys() -> Vec<&'static str> {
    let mut keys: Vec<&str> = CATEGORIES.iter().flat_map(|c| c.attributes.iter().map(|(k, _, _)| *k)).collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// Maps the header to columns; the message lists every unknown, duplicate and missing
/// column at once.
fn parse_header(header: &csv::StringRecord) -> Result<Vec<Column>, String> {
    if header.iter().all(|h| h.trim().is_empty()) {
        return Err("the header line is missing (a CSV file starts with its column names)".into());
    }
    let mut columns = Vec::with_capacity(header.len());
    let (mut unknown, mut seen, mut dup) = (Vec::new(), Vec::new(), Vec::new());
    for name in header.iter().map(str::trim) {
        let fixed = CSV_COLUMNS.iter().copied().find(|c| *c == name).map(Column::Fixed);
        let col = fixed.or_else(|| {
            let key = name.strip_prefix("attr.")?;
            let kinds: Vec<&str> = CATEGORIES
                .iter()
                .flat_map(|c| c.attributes.iter())
                .filter(|(k, _, _)| *k == key)
                .map(|(_, kind, _)| *kind)
                .collect();
            (!kinds.is_empty()).then(|| Column::Attr { key: key.to_owned(), number: kinds.contains(&"number") })
        });
        match col {
            Some(c) => {
                if seen.contains(&name) {
                    dup.push(name.to_owned());
                }
                seen.push(name);
                columns.push(c);
            }
            None => unknown.push(if name.is_empty() { "(an empty name)".to_owned() } else { name.to_owned() }),
        }
    }
    let missing: Vec<&str> = CSV_REQUIRED.iter().copied().filter(|r| !seen.contains(r)).collect();
    let mut problems = Vec::new();
    if !unknown.is_empty() {
        problems.push(format!(
            "unknown columns {} (accepted: {}, and attr.KEY with KEY one of {})",
            unknown.join(", "),
            CSV_COLUMNS.join(", "),
            attribute_keys().join(", ")
        ));
    }
    if !dup.is_empty() {
        problems.push(format!("duplicate columns {}", dup.join(", ")));
    }
    if !missing.is_empty() {
        problems.push(format!("missing required columns {}", missing.join(", ")));
    }
    if problems.is_empty() {
        Ok(columns)
    } else {
        Err(format!("header line: {}", problems.join("; ")))
    }
}

/// The JSON row of one CSV record (cells trimmed; empty cells absent).
fn record_value(columns: &[Column], record: &csv::StringRecord) -> Result<Value, String> {
    let mut top = Map::new();
    let (mut price, mut seller, mut attrs) = (Map::new(), Map::new(), Map::new());
    let (mut area, mut place) = (None, None);
    let number_or_text = |s: &str| parse_number_text(s).and_then(number_value).unwrap_or_else(|| Value::from(s));
    for (col, cell) in columns.iter().zip(record.iter()) {
        let cell = cell.trim();
        if cell.is_empty() {
            continue;
        }
        let text = || Value::from(cell);
        match col {
            Column::Fixed("area") => area = Some(cell),
            Column::Fixed("area.place") => place = Some(cell),
            Column::Fixed("price.amount") => {
                price.insert("amount".into(), number_or_text(cell));
            }
            Column::Fixed(name) => {
                let (map, key) = match name.split_once('.') {
                    Some(("price", key)) => (&mut price, key),
                    Some((_seller, key)) => (&mut seller, key),
                    None => (&mut top, *name),
                };
                map.insert(key.into(), text());
            }
            Column::Attr { key, number } => {
                attrs.insert(key.clone(), if *number { number_or_text(cell) } else { text() });
            }
        }
    }
    if !price.is_empty() {
        top.insert("price".into(), Value::Object(price));
    }
    if !seller.is_empty() {
        top.insert("seller".into(), Value::Object(seller));
    }
    if !attrs.is_empty() {
        top.insert("attributes".into(), Value::Object(attrs));
    }
    match (area, place) {
        (None, None) => {}
        (None, Some(_)) => return Err("area is required when area.place is given".into()),
        (Some(a), None) => {
            top.insert("area".into(), Value::from(a));
        }
        (Some(a), Some(p)) => {
            // The object form keeps the feed's place; an unresolvable area stays a string
            // so that the validator reports it by name.
            let v = match gazetteer::resolve(a) {
                Ok(r) => json!({"country": r.country, "regions": [a], "place": p}),
                Err(_) => Value::from(a),
            };
            top.insert("area".into(), v);
        }
    }
    Ok(Value::Object(top))
}

/// Reads one physical line into `buf` (without the newline), keeping at most `cap`
/// bytes. Returns `None` at end of file, else whether the line was longer than `cap`.
fn read_line_capped(r: &mut impl BufRead, buf: &mut Vec<u8>, cap: usize) -> io::Result<Option<bool>> {
    buf.clear();
    if r.by_ref().take(cap as u64 + 1).read_until(b'\n', buf)? == 0 {
        return Ok(None);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
    } else if buf.len() > cap {
        // Longer than `cap`: the rest of the line is skipped.
        buf.truncate(cap);
        r.skip_until(b'\n')?;
        return Ok(Some(true));
    }
    Ok(Some(false))
}

/// `serde_json`'s message without its "at line 1 column N" (the line is the file's).
fn json_message(e: &serde_json::Error) -> String {
    let s = e.to_string();
    let msg = s.split(" at line ").next().unwrap_or(&s);
    format!("not valid JSON at column {}: {msg}", e.column())
}

impl RowReader {
    /// The next data row as JSON, before validation; `None` at the end (or after a read
    /// error, which [`RowReader::finish`] then reports).
    pub fn next_raw(&mut self) -> Option<Result<RawRow, RowError>> {
        if self.failed.is_some() {
            return None;
        }
        match &mut self.inner {
            Inner::Jsonl { reader, buf, line } => loop {
                let over = match read_line_capped(reader, buf, MAX_LINE_BYTES) {
                    Ok(Some(over)) => over,
                    Ok(None) => return None,
                    Err(e) => {
                        self.failed = Some(e);
                        return None;
                    }
                };
                *line += 1;
                let line = *line;
                if over {
                    let message = format!("the line is longer than {} MiB", MAX_LINE_BYTES >> 20);
                    return Some(Err(RowError { line, message }));
                }
                if buf.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let Ok(text) = std::str::from_utf8(buf) else {
                    return Some(Err(RowError { line, message: "the line is not valid UTF-8".into() }));
                };
                return Some(match serde_json::from_str::<Value>(text) {
                    Ok(value) => Ok(RawRow { line, value }),
                    Err(e) => Err(RowError { line, message: json_message(&e) }),
                });
            },
            Inner::Csv { reader, columns, record } => loop {
                let result = reader.read_byte_record(record);
                self.progress.record_start.store(reader.position().byte(), Ordering::Relaxed);
                match result {
                    Ok(false) => return None,
                    Ok(true) => {
                        // Every record ends with `\n` (see CsvInput): it starts at the line
                        // after the parser's, less its own terminator and inner newlines.
                        let inner: usize = record.iter().map(|f| f.iter().filter(|b| **b == b'\n').count()).sum();
                        let line = reader.position().line().saturating_sub(1 + inner as u64);
                        if record.iter().all(|c| c.trim_ascii().is_empty()) {
                            continue;
                        }
                        if record.len() != columns.len() {
                            let message =
                                format!("the record has {} fields; the header has {}", record.len(), columns.len());
                            return Some(Err(RowError { line, message }));
                        }
                        let text = match csv::StringRecord::from_byte_record(std::mem::take(record)) {
                            Ok(text) => text,
                            Err(e) => {
                                let field = e.utf8_error().field();
                                *record = e.into_byte_record();
                                let name = match &columns[field] {
                                    Column::Fixed(name) => (*name).to_owned(),
                                    Column::Attr { key, .. } => format!("attr.{key}"),
                                };
                                return Some(Err(RowError { line, message: format!("{name} is not valid UTF-8") }));
                            }
                        };
                        let value = record_value(columns, &text);
                        *record = text.into_byte_record();
                        return Some(
                            value.map(|value| RawRow { line, value }).map_err(|message| RowError { line, message }),
                        );
                    }
                    Err(e) => {
                        if e.is_io_error() {
                            if let csv::ErrorKind::Io(io) = e.into_kind() {
                                self.failed = Some(io);
                            }
                            return None;
                        }
                        let line = reader.position().line().saturating_sub(1);
                        return Some(Err(RowError { line, message: e.to_string() }));
                    }
                }
            },
        }
    }

    /// The file's format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Bytes read from the file so far (runs ahead of the rows by up to one buffer).
    pub fn bytes_read(&self) -> u64 {
        self.progress.read.load(Ordering::Relaxed).min(self.total)
    }

    /// The file's size in bytes.
    pub fn total_bytes(&self) -> u64 {
        self.total
    }

    /// Ends reading.
    ///
    /// # Errors
    /// [`CatalogueError::Io`] when a read error (or an over-long CSV record) stopped the
    /// file before its end; the rows yielded before it are fine.
    pub fn finish(self) -> Result<(), CatalogueError> {
        match self.failed {
            Some(source) => Err(CatalogueError::Io { path: self.path, source }),
            None => Ok(()),
        }
    }
}

impl Iterator for RowReader {
    type Item = Result<OfferInput, RowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let raw = self.next_raw()?;
        Some(raw.and_then(|r| {
            parse_json_row(&r.value, &self.currencies).map_err(|e| RowError { line: r.line, message: e.0 })
        }))
    }
}
