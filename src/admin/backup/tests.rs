//! The backup format's unit tests: sealed values in rows, the header's checks.

use super::*;

#[test]
fn a_sealed_value_is_an_object_of_exactly_kid_nonce_and_ct() {
    let mut seen = Vec::new();
    let v = json!({"contact": {"kid": "k1", "nonce": "n", "ct": "c"},
                   "list": [{"kid": "k2", "nonce": "n", "ct": "c"}],
                   "more": {"kid": "k3", "nonce": "n", "ct": "c", "x": 1},
                   "number": {"kid": "k4", "nonce": "n", "ct": 5}});
    each_sealed(&v, &mut |s| {
        seen.push(s.kid);
        Ok::<_, ()>(())
    })
    .unwrap();
    seen.sort();
    assert_eq!(seen, vec!["k1", "k2"]);
}

fn header(version: u64, schema: u64) -> String {
    json!({"format": FORMAT, "version": version, "isto": "9.9.9", "schema": schema, "created": "2026-12-01T00:00:00Z",
           "tables": {}, "rows": 0, "keysIncluded": false})
    .to_string()
}

#[test]
fn a_header_of_a_newer_format_or_schema_or_another_file_is_refused_by_name() {
    assert!(parse_header(&header(FORMAT_VERSION, SCHEMA_VERSION)).is_ok());
    let e = parse_header(&header(FORMAT_VERSION + 1, SCHEMA_VERSION)).unwrap_err().to_string();
    assert!(e.contains(&format!("format version {}", FORMAT_VERSION + 1)) && e.contains("9.9.9"), "{e}");
    let e = parse_header(&header(FORMAT_VERSION, SCHEMA_VERSION + 1)).unwrap_err().to_string();
    assert!(e.contains(&format!("schema version {}", SCHEMA_VERSION + 1)), "{e}");
    // It names this isto as the one too old, not the writer's version as the minimum.
    assert!(e.contains(&format!("a newer isto than this one ({})", super::super::VERSION)), "{e}");
    assert!(!e.contains("isto 9.9.9 or newer"), "{e}");
    let e = parse_header(r#"{"t":"meta","k":"a","v":"b"}"#).unwrap_err().to_string();
    assert!(e.contains("not an isto backup"), "{e}");
}
