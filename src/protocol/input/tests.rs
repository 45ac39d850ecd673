//! The input parsers' unit tests.

use super::*;
use serde_json::json;

#[test]
fn an_unknown_name_is_echoed_shortly() {
    let mut m = serde_json::Map::new();
    m.insert("x".repeat(200_000), Value::Bool(true));
    let v = Value::Object(m);
    let f = Fields::new(&v, "").unwrap();
    let e = f.finish("").unwrap_err().0;
    assert!(e.len() < 300 && e.contains(&format!("{}… is not a known property", "x".repeat(64))), "{e}");
    assert_eq!(echo("budget"), "budget");
    assert_eq!(echo(&"é".repeat(65)), format!("{}…", "é".repeat(64)));
}

/// A statement loses control characters (but tabs and line breaks) and bidirectional
/// overrides; one of nothing else is refused, naming the field.
#[test]
fn a_statement_loses_hidden_characters_and_one_of_nothing_else_is_refused() {
    let v = json!({"statement": " Hledám\u{1b}[31m Octavia\u{202e}combi\n do 12 000 € \u{7} "});
    let mut f = Fields::new(&v, "").unwrap();
    assert_eq!(f.req_text("statement", 2000).unwrap(), "Hledám[31m Octaviacombi\n do 12 000 €");
    // Marks, invisible format and tag characters go; every line break becomes `\n`, so no
    // word is glued to the next and no lone `\r` rewrites a line.
    let v = json!({"statement": "Octavia\u{200e}\u{e0041}\u{feff} za\u{c}12 000\u{2028}€\rFree car\r\nok"});
    let mut f = Fields::new(&v, "").unwrap();
    assert_eq!(f.req_text("statement", 2000).unwrap(), "Octavia za\n12 000\n€\nFree car\nok");
    let v = json!({"statement": "\u{202e}\u{2066}\u{0}\u{200b}\u{e0020}"});
    let e = Fields::new(&v, "").unwrap().req_text("statement", 2000).unwrap_err().0;
    assert_eq!(e, "statement must contain visible text, not only control or bidirectional characters");
    let v = json!({"statement": "   "});
    assert_eq!(Fields::new(&v, "").unwrap().req_text("statement", 2000).unwrap_err().0, "statement must not be empty");
}

/// A 250 KB area (string or region entry) is refused fast, naming the field and rule.
#[test]
fn huge_area_is_refused_fast_naming_the_field() {
    let huge = "okres ".repeat(42_000);
    let t = std::time::Instant::now();
    let e = parse_area(&json!(huge), "area").unwrap_err().0;
    assert!(t.elapsed() < std::time::Duration::from_secs(1), "took {:?}", t.elapsed());
    assert_eq!(e, "area must be at most 200 characters (a region code or place name)");
    let obj = json!({"country": "SK", "regions": ["SK-BL", huge]});
    let t = std::time::Instant::now();
    let e = parse_area(&obj, "area").unwrap_err().0;
    assert!(t.elapsed() < std::time::Duration::from_secs(1), "took {:?}", t.elapsed());
    assert_eq!(e, "area.regions[1] must be at most 200 characters (a region code or place name)");
    let e = parse_area(&json!({"country": "SK", "place": "a".repeat(201)}), "area").unwrap_err().0;
    assert!(e.starts_with("area.place must be at most 200 characters"), "{e}");
    assert!(parse_area(&json!(format!("  {}  ", "a".repeat(200))), "area").unwrap_err().0.contains("unknown place"));
    assert!(parse_area(&json!("Bratislavský kraj"), "area").is_ok());
}

/// Criteria values and keys, and attribute keys, have caps that name the field.
#[test]
fn criteria_caps_name_the_field() {
    let long_key = "k".repeat(65);
    let e = parse_criteria(&json!({ long_key: 1 })).unwrap_err().0;
    assert_eq!(e, "criteria keys must be at most 64 characters");
    let e = parse_criteria(&json!({"district": "x".repeat(250_000)})).unwrap_err().0;
    assert_eq!(e, "criteria.district must be a non-empty string of at most 200 characters");
    let e = parse_attributes(&json!({ "k".repeat(65): 1 }), "unknown").unwrap_err().0;
    assert_eq!(e, "attributes keys must be at most 64 characters");
}

fn cur() -> Vec<String> {
    vec!["EUR".into(), "CZK".into()]
}

#[test]
fn budget_rules_name_fields() {
    assert_eq!(parse_budget(&json!(12000), "EUR", &cur()).unwrap().max, Some(12000.0));
    assert!(parse_budget(&json!({"max": "x"}), "EUR", &cur()).unwrap_err().0.contains("budget.max"));
    assert!(parse_budget(&json!({"max": -1}), "EUR", &cur()).unwrap_err().0.contains("budget.max"));
    assert!(parse_budget(&json!({"max": 5, "min": 9}), "EUR", &cur()).unwrap_err().0.contains("budget.min"));
    assert!(parse_budget(&json!({"max": 5, "currency": "USD"}), "EUR", &cur())
        .unwrap_err()
        .0
        .contains("budget.currency"));
    assert!(parse_budget(&json!({"max": 5, "foo": 1}), "EUR", &cur()).unwrap_err().0.contains("budget.foo"));
}

#[test]
fn criteria_checks_keys_and_shapes() {
    let (c, m) =
        parse_criteria(&json!({"category": "vehicles", "make": "Škoda", "fuel": ["diesel"], "year": {"min": 2016}}))
            .unwrap();
    assert_eq!(c.as_deref(), Some("vehicles"));
    assert_eq!(m.len(), 3);
    assert!(parse_criteria(&json!({"category": "boats"})).unwrap_err().0.contains("criteria.category"));
    assert!(parse_criteria(&json!({"category": "vehicles", "wings": 2})).unwrap_err().0.contains("criteria.wings"));
    assert!(parse_criteria(&json!({"year": {"min": 2020, "max": 2010}})).unwrap_err().0.contains("criteria.year.min"));
    assert!(parse_criteria(&json!({"make": []})).unwrap_err().0.contains("criteria.make"));
    assert!(parse_criteria(&json!({"category": "vehicles", "make": 5})).unwrap_err().0.contains("criteria.make"));
    let e = check_criteria_keys("property", &json!({"make": "x"}).as_object().cloned().unwrap()).unwrap_err();
    assert!(e.0.starts_with("criteria.make is not an attribute of property (known: "), "{}", e.0);
    assert!(check_criteria_keys("vehicles", &json!({"year": {"min": 2010}}).as_object().cloned().unwrap()).is_ok());
}

#[test]
fn unknown_property_is_named() {
    let v = json!({"statement": "x", "email": "a@b.c"});
    let mut f = Fields::new(&v, "").unwrap();
    f.req_str("statement", 10).unwrap();
    let e = f.finish("").unwrap_err();
    assert!(e.0.starts_with("email is not a known property"), "{e}");
}

#[test]
fn classifies_and_detects() {
    assert_eq!(classify("Hledám Škoda Octavia combi"), Some("vehicles"));
    assert_eq!(classify("Kúpim 3-izbový byt v Bratislave"), Some("property"));
    assert_eq!(classify("something"), None);
    assert_eq!(detect_language("Hľadám auto", "en"), "sk");
    assert_eq!(detect_language("Hledám ojetý vůz", "en"), "cs");
    assert_eq!(detect_language("Looking for a used Octavia", "sk"), "en");
}
