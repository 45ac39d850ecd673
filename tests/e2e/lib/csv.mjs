// A small RFC 4180 CSV parser: comma separated, fields optionally in double quotes,
// quoted fields may contain commas, CR/LF and doubled quotes (""), records end with
// CRLF or LF. A UTF-8 BOM at the start is dropped. No dependency.

/**
 * Parse CSV text into an array of records (arrays of strings).
 * @param {string} text
 * @returns {string[][]}
 */
export function parseCsv(text) {
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const records = [];
  let record = [];
  let field = "";
  let inQuotes = false;
  let fieldStarted = false; // distinguishes an empty last line from an empty field
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text[i];
    if (inQuotes) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else {
          inQuotes = false;
        }
      } else {
        field += c;
      }
      continue;
    }
    if (c === '"' && field === "") {
      inQuotes = true;
      fieldStarted = true;
    } else if (c === ",") {
      record.push(field);
      field = "";
      fieldStarted = true;
    } else if (c === "\r" || c === "\n") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      if (fieldStarted || field !== "" || record.length > 0) {
        record.push(field);
        records.push(record);
      }
      record = [];
      field = "";
      fieldStarted = false;
    } else {
      field += c;
      fieldStarted = true;
    }
  }
  if (inQuotes) throw new Error("CSV: unterminated quoted field at end of input");
  if (fieldStarted || field !== "" || record.length > 0) {
    record.push(field);
    records.push(record);
  }
  return records;
}

/**
 * Parse CSV with a header line into objects keyed by the header names.
 * @param {string} text
 * @returns {Record<string, string>[]}
 */
export function parseCsvObjects(text) {
  const [header, ...rows] = parseCsv(text);
  if (!header) return [];
  return rows.map((row, idx) => {
    if (row.length !== header.length) {
      throw new Error(
        `CSV: record ${idx + 2} has ${row.length} fields, header has ${header.length}`,
      );
    }
    const obj = {};
    header.forEach((h, i) => {
      obj[h] = row[i];
    });
    return obj;
  });
}
