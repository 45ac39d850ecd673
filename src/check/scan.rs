//! The check's pure parts: what the drafts look like, the entropy estimate of codes,
//! the searches for contact fields and secrets, URL helpers. No I/O.

use super::rpc::ToolAnswer;
use super::HIDDEN_LIMIT;
use serde_json::{json, Value};
use url::Url;

/// The visible budget of the check's drafts (in the holder's default currency).
const DRAFT_BUDGET: f64 = 15_000.0;

/// What the check's drafts look like and which demand cell they fall in.
#[derive(Debug, Clone)]
pub struct DraftPlan {
    /// The category key (from the holder metadata), if known.
    category: Option<String>,
    /// The area of the drafts: the grid's first region, or `"SK"`.
    area: String,
    /// `intent_demand_summary` arguments of the drafts' cell, when the holder publishes
    /// a band grid.
    pub cell: Option<Value>,
    /// The cell, for the report.
    pub cell_label: String,
    /// The holder's k (PROTOCOL.md §5), when published.
    pub k: Option<u64>,
}

impl DraftPlan {
    /// The plan for a holder whose `/.well-known/isto-intents` is `meta`: the first
    /// category and its grid's first region, the budget band holding [`DRAFT_BUDGET`],
    /// buy-by band `none`.
    pub fn from_metadata(meta: Option<&Value>) -> Self {
        let cat = meta.and_then(|m| m.pointer("/categories/0"));
        let category = cat.and_then(|c| c["key"].as_str()).map(str::to_owned);
        let area = cat.and_then(|c| c.pointer("/bandGrid/area/0")).and_then(Value::as_str).map(str::to_owned);
        let band = cat.and_then(|c| c.pointer("/bandGrid/budgetBand")).and_then(Value::as_array).and_then(|bands| {
            bands.iter().filter_map(Value::as_str).find(|b| band_holds(b, DRAFT_BUDGET)).map(str::to_owned)
        });
        let k = meta.and_then(|m| m["k"].as_u64());
        let (cell, cell_label) = match (&category, &area, &band) {
            (Some(c), Some(a), Some(b)) => (
                Some(json!({"category": c, "cell": {"area": a, "budgetBand": b, "buyByBand": "none"}})),
                format!("{c} {a} {b} none"),
            ),
            _ => (None, String::new()),
        };
        Self { category, area: area.unwrap_or_else(|| "SK".into()), cell, cell_label, k }
    }

    /// The arguments of draft `i`: a plain statement saying what it is, the area, the
    /// visible budget and the distinctive hidden limit; no contact (there is no field).
    pub fn draft(&self, i: usize) -> Value {
        let mut v = json!({
            "statement": format!("Used Skoda Octavia combi, diesel (isto check draft {i}; withdrawn at once)"),
            "area": self.area,
            "budget": {"max": DRAFT_BUDGET},
            "hiddenLimit": HIDDEN_LIMIT,
        });
        if let Some(c) = &self.category {
            v["criteria"] = json!({"category": c});
        }
        v
    }
}

/// Whether band label `b` (`"LOW-HIGH"`, LOW inclusive, HIGH exclusive, or `"LOW+"`)
/// holds `x`.
fn band_holds(b: &str, x: f64) -> bool {
    if let Some(low) = b.strip_suffix('+') {
        return low.parse::<f64>().is_ok_and(|l| x >= l);
    }
    match b.split_once('-') {
        Some((l, h)) => matches!((l.parse::<f64>(), h.parse::<f64>()), (Ok(l), Ok(h)) if x >= l && x < h),
        None => false,
    }
}

/// Whether a tool description carries the seed's disclaimer (rule 2): results come from
/// a market aggregator and may be incomplete (both words, any case).
pub fn has_disclaimer(description: &str) -> bool {
    let d = description.to_lowercase();
    d.contains("aggregator") && d.contains("incomplete")
}

/// A property name that asks for contact data (seed §5.1: no e-mail, phone or name).
fn is_contact_key(key: &str) -> bool {
    let k: String = key.chars().filter(char::is_ascii_alphanumeric).collect::<String>().to_ascii_lowercase();
    k.contains("mail")
        || k.contains("phone")
        || k.contains("mobile")
        || k == "tel"
        || k.contains("contact")
        || k.contains("address")
        || k == "name"
        || k.ends_with("name")
        || ["whatsapp", "telegram", "skype", "signal"].iter().any(|w| k.contains(w))
}

/// Every contact-like property name at any depth of a JSON Schema (`properties` of
/// every nested schema: `anyOf`, `items`, `$defs`, ...), as `path.to.name`.
pub fn contact_properties(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk_schema(schema, "", &mut out);
    out
}

fn walk_schema(v: &Value, path: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, sub) in m {
                if k == "properties" {
                    if let Some(props) = sub.as_object() {
                        for (name, s) in props {
                            let p = if path.is_empty() { name.clone() } else { format!("{path}.{name}") };
                            if is_contact_key(name) {
                                out.push(p.clone());
                            }
                            walk_schema(s, &p, out);
                        }
                    }
                } else {
                    walk_schema(sub, path, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| walk_schema(x, path, out)),
        _ => {}
    }
}

/// Keys of a tool result that carry what a result must never hold (seed rule 1, §5.4):
/// contact fields, the hidden limit itself, tokens, other buyers' pseudonyms.
pub fn secret_keys(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk_keys(v, &mut out);
    out.sort_unstable();
    out.dedup();
    out
}

fn walk_keys(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, sub) in m {
                let n = k.to_ascii_lowercase();
                if is_contact_key(k) || n == "hiddenlimit" || n.contains("token") || n.contains("pseudonym") {
                    out.push(k.clone());
                }
                walk_keys(sub, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| walk_keys(x, out)),
        _ => {}
    }
}

/// The first written form of `n` found in `raw` (plain, with a thousands separator, as
/// a float or in exponent form), digits on neither side.
pub fn hidden_limit_in(raw: &str, n: u64) -> Option<String> {
    let plain = n.to_string();
    let mut forms = vec![plain.clone()];
    if plain.len() > 3 {
        let (hi, lo) = plain.split_at(plain.len() - 3);
        for sep in [" ", ",", ".", "\u{a0}", "\\u00a0", "\u{202f}", "\\u202f", "_", "'"] {
            forms.push(format!("{hi}{sep}{lo}"));
        }
        let mantissa = format!("{}.{}", &plain[..1], plain[1..].trim_end_matches('0'));
        for e in ["e", "E", "e+", "E+"] {
            forms.push(format!("{mantissa}{e}{}", plain.len() - 1));
        }
    }
    for f in forms {
        let mut from = 0;
        while let Some(i) = raw[from..].find(&f) {
            let at = from + i;
            let before = raw[..at].chars().next_back();
            let after = raw[at + f.len()..].chars().next();
            if !before.is_some_and(|c| c.is_ascii_digit()) && !after.is_some_and(|c| c.is_ascii_digit()) {
                return Some(f);
            }
            from = at + f.len();
        }
    }
    None
}

/// `code` without its intent's `id` (whole, or the part after its prefix up to `_`, when
/// that is 8 characters or more): an id is public (PROTOCOL.md §2), so the part of a
/// code that repeats it is no secret, however random it looks (isto's codes begin with
/// the id's 26 characters). Without an id, `code` unchanged.
pub fn without_id(code: &str, id: Option<&str>) -> String {
    let Some(id) = id.filter(|i| !i.is_empty()) else { return code.to_owned() };
    let body = id.split_once('_').map_or(id, |(_, b)| b);
    let code = code.replace(id, "");
    if body.len() >= 8 {
        code.replace(body, "")
    } else {
        code
    }
}

/// The entropy estimate of a set of intentCodes.
#[derive(Debug, Clone, PartialEq)]
pub struct Entropy {
    /// Estimated random bits per code.
    pub bits: f64,
    /// Every code differs from every other.
    pub distinct: bool,
    /// Characters that vary (the shortest code, without a prefix or suffix all share
    /// and without positions equal in every code).
    pub length: usize,
    /// Size of the smallest usual alphabet holding every varying character.
    pub alphabet: usize,
    /// Its name.
    pub alphabet_name: &'static str,
}

/// Estimates the random bits of `codes` (several codes of one holder): the common
/// prefix and suffix and the positions equal in every code are taken as constant; the
/// rest counts `log2(alphabet)` bits per character, the alphabet being the smallest
/// usual one (digits, hex, base32, base36, base62, base64url) holding every varying
/// character.
pub fn entropy(codes: &[String]) -> Entropy {
    let chars: Vec<Vec<char>> = codes.iter().map(|c| c.chars().collect()).collect();
    let min_len = chars.iter().map(Vec::len).min().unwrap_or(0);
    let distinct = codes.iter().enumerate().all(|(i, a)| !codes[i + 1..].contains(a));
    let same_at = |f: &dyn Fn(&Vec<char>) -> Option<char>| {
        let first = chars.first().and_then(f);
        first.is_some() && chars.iter().all(|c| f(c) == first)
    };
    // The common suffix (codes may differ in length); the common prefix is among the
    // positions equal in every code, which the loop below leaves out.
    let mut suffix = 0;
    while suffix < min_len
        && chars.len() > 1
        && same_at(&|c: &Vec<char>| c.len().checked_sub(suffix + 1).and_then(|i| c.get(i)).copied())
    {
        suffix += 1;
    }
    let mut varying = Vec::new();
    for i in 0..min_len.saturating_sub(suffix) {
        if chars.len() < 2 || !same_at(&|c: &Vec<char>| c.get(i).copied()) {
            varying.extend(chars.iter().map(|c| c[i]));
        }
    }
    let length = if chars.is_empty() { 0 } else { varying.len() / chars.len() };
    let all = |f: fn(char) -> bool| varying.iter().all(|c| f(*c));
    let (alphabet, alphabet_name) = if all(|c| c.is_ascii_digit()) {
        (10, "decimal digits")
    } else if all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
        || all(|c| c.is_ascii_digit() || ('A'..='F').contains(&c))
    {
        (16, "hex")
    } else if all(|c| c.is_ascii_lowercase() || ('2'..='7').contains(&c))
        || all(|c| c.is_ascii_uppercase() || ('2'..='7').contains(&c))
    {
        (32, "base32")
    } else if all(|c| c.is_ascii_digit() || c.is_ascii_lowercase())
        || all(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
    {
        (36, "base36")
    } else if all(|c| c.is_ascii_alphanumeric()) {
        (62, "base62")
    } else if all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        || all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '/')
    {
        (64, "base64")
    } else {
        (94, "printable ASCII")
    };
    let bits = if distinct { length as f64 * (alphabet as f64).log2() } else { 0.0 };
    Entropy { bits, distinct, length, alphabet, alphabet_name }
}

/// What is wrong with a publish's `consentUrl` (seed §5.2: on the holder's own domain,
/// not the code), if anything.
pub fn consent_url_problem(url: &str, code: &str, host: &str, scheme: &str) -> Option<String> {
    let Ok(u) = Url::parse(url) else {
        return Some("a consentUrl is not an absolute URL".into());
    };
    let uh = u.host_str().unwrap_or("").to_ascii_lowercase();
    if uh != host {
        return Some(format!("a consentUrl is on {uh}, not {host}"));
    }
    if u.scheme() != "https" && u.scheme() != scheme {
        return Some(format!("a consentUrl uses {}", u.scheme()));
    }
    let lower = url.to_ascii_lowercase();
    let code_l = code.to_ascii_lowercase();
    let encoded: String =
        url::form_urlencoded::byte_serialize(code.as_bytes()).collect::<String>().to_ascii_lowercase();
    if lower.contains(&code_l) || lower.contains(&encoded) {
        return Some("a consentUrl contains the intentCode".into());
    }
    None
}

/// The consent token of a consent URL: its last path segment when it is long enough
/// to be a secret (16+ characters).
pub fn consent_token(url: &str) -> Option<String> {
    let u = Url::parse(url).ok()?;
    let last = u.path_segments()?.rfind(|s| !s.is_empty())?.to_owned();
    (last.len() >= 16).then_some(last)
}

/// The intent status in a get answer (`{"intent": {"status"}}`, or the text as JSON).
pub fn intent_status(a: &ToolAnswer) -> Option<String> {
    if a.refused() {
        return None;
    }
    let v = a.structured.clone().or_else(|| serde_json::from_str(&a.text).ok())?;
    v.pointer("/intent/status").or_else(|| v.get("status")).and_then(Value::as_str).map(str::to_owned)
}

/// A code one character off from `code` (its middle character moved to a neighbour
/// in the same class, so it stays in the code's alphabet).
pub fn mutate(code: &str) -> String {
    let mut c: Vec<char> = code.chars().collect();
    if c.is_empty() {
        return "x".repeat(27);
    }
    let i = c.len() / 2;
    c[i] = match c[i] {
        'f' | 'z' => 'a',
        'F' | 'Z' => 'A',
        '7' => '2',
        '9' => '0',
        '-' => '_',
        '_' => '-',
        x if x.is_ascii_alphanumeric() => char::from(x as u8 + 1),
        _ => 'A',
    };
    c.into_iter().collect()
}

/// A code of the same length and characters as `code` that no holder issued: the second
/// half redrawn at random from the code's own characters.
pub fn unknown_like(code: &str) -> String {
    use rand::seq::IndexedRandom as _;
    let c: Vec<char> = code.chars().collect();
    let mut rng = rand::rng();
    let half = c.len() / 2;
    let mut out: Vec<char> = c[..half].to_vec();
    for _ in half..c.len() {
        out.push(*c.choose(&mut rng).unwrap_or(&'A'));
    }
    let s: String = out.into_iter().collect();
    if s == code {
        mutate(&mutate(code))
    } else {
        s
    }
}

/// A demand answer for the report.
pub fn summary_label(v: &Value) -> String {
    if v.get("withheld") == Some(&Value::Bool(true)) {
        format!("withheld ({})", v["reason"].as_str().unwrap_or("no reason"))
    } else {
        format!("activeIntents {}", v.get("activeIntents").map(Value::to_string).unwrap_or_else(|| "missing".into()))
    }
}

/// At most 120 characters of an error text, on one line.
pub fn short(s: &str) -> String {
    clip(s, 120)
}

/// `s` on one line (whitespace runs as one space), cut at `n` characters with "…".
pub fn clip(s: &str, n: usize) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > n {
        format!("{}…", one.chars().take(n).collect::<String>())
    } else {
        one
    }
}

/// `s` with every control character (ESC, BEL, …) written as a `\u{..}` escape, so a
/// holder's text cannot drive the terminal the table is printed on.
pub fn printable(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_owned();
    }
    s.chars().map(|c| if c.is_control() { c.escape_unicode().to_string() } else { c.to_string() }).collect()
}

/// Whether `url` is on the origin of `checked` (scheme, host and port): the only
/// addresses the check fetches, whatever the holder's answers name.
pub fn same_origin(checked: &url::Url, url: &url::Url) -> bool {
    checked.origin() == url.origin()
}

/// Whether `host` is a loopback host (`localhost`, 127.0.0.0/8, `::1`), where plain
/// `http` is for testing.
pub fn is_loopback_host(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => {
            d.eq_ignore_ascii_case("localhost") || d.to_ascii_lowercase().ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Whether a refusal's text says the holder limits the pace or a quota (a retry time,
/// "too many", "quota", "rate"): the check is then not run, rather than failed.
pub fn is_quota_refusal(text: &str) -> bool {
    let t = text.to_lowercase();
    ["try again", "retry", "quota", "too many", "rate limit"].iter().any(|w| t.contains(w))
}

/// The value of auth-param `name` in a `WWW-Authenticate` challenge (quoted or token).
pub fn auth_param(challenge: &str, name: &str) -> Option<String> {
    let lower = challenge.to_ascii_lowercase();
    let key = format!("{name}=");
    let mut from = 0;
    while let Some(i) = lower[from..].find(&key) {
        let at = from + i;
        let boundary = at == 0 || matches!(lower.as_bytes()[at - 1], b' ' | b',');
        let rest = &challenge[at + key.len()..];
        if boundary {
            return Some(match rest.strip_prefix('"') {
                Some(q) => q.split('"').next().unwrap_or("").to_owned(),
                None => rest.split([',', ' ']).next().unwrap_or("").to_owned(),
            });
        }
        from = at + key.len();
    }
    None
}

/// The RFC 9728 §3.1 well-known protected resource metadata URL of `resource`.
pub fn prm_default(resource: &Url) -> Option<Url> {
    let path = resource.path().trim_end_matches('/');
    resource.join(&format!("/.well-known/oauth-protected-resource{path}")).ok()
}

/// The RFC 8414 §3.1 metadata URL of `issuer` (the well-known segment inserted before
/// the issuer's path).
pub fn as_metadata_url(issuer: &Url) -> Url {
    let path = issuer.path().trim_end_matches('/');
    issuer.join(&format!("/.well-known/oauth-authorization-server{path}")).unwrap_or_else(|_| issuer.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holder_text_cannot_drive_the_terminal() {
        assert_eq!(printable("plain – text"), "plain – text");
        let shown = printable("a\u{1b}]0;PWNED\u{7}\u{1b}[2Jb");
        assert!(!shown.chars().any(char::is_control), "{shown}");
        assert_eq!(shown, "a\\u{1b}]0;PWNED\\u{7}\\u{1b}[2Jb");
    }

    #[test]
    fn only_the_checked_origin_is_fetched_and_http_only_on_loopback() {
        let checked = url::Url::parse("https://holder.example/mcp").unwrap();
        for same in ["https://holder.example/mcp/buyer", "https://holder.example:443/.well-known/x"] {
            assert!(same_origin(&checked, &url::Url::parse(same).unwrap()), "{same}");
        }
        for other in [
            "http://holder.example/mcp/buyer",
            "https://holder.example:8443/",
            "https://127.0.0.1/",
            "https://evil.example/",
        ] {
            assert!(!same_origin(&checked, &url::Url::parse(other).unwrap()), "{other}");
        }
        for lo in [
            "http://127.0.0.1:8080/mcp",
            "http://127.9.9.9/",
            "http://[::1]:80/",
            "http://localhost/",
            "http://a.localhost/",
        ] {
            assert!(is_loopback_host(&url::Url::parse(lo).unwrap()), "{lo}");
        }
        for public in ["http://holder.example/", "http://10.0.0.1/", "http://localhost.example/"] {
            assert!(!is_loopback_host(&url::Url::parse(public).unwrap()), "{public}");
        }
    }

    #[test]
    fn quota_refusals_are_told_from_other_refusals() {
        assert!(is_quota_refusal("too many drafts from this address; try again after 2026-12-02T21:09:00Z"));
        assert!(is_quota_refusal("Rate limit exceeded"));
        assert!(!is_quota_refusal("statement: required"));
        assert_eq!(clip("a  b\n c", 3), "a b…");
    }

    #[test]
    fn an_id_in_a_code_counts_no_bits() {
        let id = "int_abcdefghijklmnopqrstuvwxyz";
        let secret = "Q2hhbmdlZCBzZWNyZXQgYnl0ZXM";
        assert_eq!(without_id(&format!("abcdefghijklmnopqrstuvwxyz{secret}"), Some(id)), secret);
        assert_eq!(without_id(&format!("{id}.{secret}"), Some(id)), format!(".{secret}"));
        assert_eq!(without_id(secret, Some(id)), secret);
        assert_eq!(without_id(secret, None), secret);
        // A short id body is not cut out of a code it happens to appear in.
        assert_eq!(without_id("xab1y", Some("i_ab1")), "xab1y");
        // Codes made of their ids and 8 random base64url characters: the estimate counts
        // those 8 (48 bits), not the ids' varying characters too.
        let made: Vec<(String, String)> = [
            ("int_2ahcsbq5r3kd7xz4mwpe6nyfjt", "Qx7_kP2a"),
            ("int_2ahcsbq5vfe3oa7ltgy2kcq4hu", "m9Z-c1Rt"),
            ("int_2ahcsbq6b2xwn5jdrk7pz3mqae", "Tt0bN8ye"),
            ("int_2ahcsbq6j7gq4ty3cvx2nbhl5d", "Lf4GhW3s"),
        ]
        .iter()
        .map(|(id, s)| (format!("{}{s}", &id[4..]), (*id).to_owned()))
        .collect();
        let codes: Vec<String> = made.iter().map(|(c, _)| c.clone()).collect();
        let secrets: Vec<String> = made.iter().map(|(c, id)| without_id(c, Some(id))).collect();
        assert!(entropy(&codes).bits > 128.0, "{:?}", entropy(&codes));
        assert_eq!((entropy(&secrets).length, entropy(&secrets).bits), (8, 48.0));
    }

    #[test]
    fn entropy_of_code_forms() {
        let b64: Vec<String> = [
            "Z74WE1KaKhdssLe035yM-irVEUk",
            "YT6zunoeKMqLhuQ1RUwxhngwdKs",
            "q2Xc_0PzLmN8rTyUvW3sAbCdEfG",
            "Hk9-pQrStUvWxYz0aBcDeFgHiJk",
        ]
        .map(String::from)
        .into();
        let e = entropy(&b64);
        assert_eq!((e.alphabet, e.distinct), (64, true));
        assert!(e.bits >= 150.0, "{e:?}");
        // 64-bit hex codes with a common prefix: 16 varying characters × 4 bits.
        let hex: Vec<String> =
            ["ic_0123456789abcdef", "ic_fedcba9876543210", "ic_a1b2c3d4e5f60718", "ic_9f8e7d6c5b4a3921"]
                .map(String::from)
                .into();
        let e = entropy(&hex);
        assert_eq!(e.alphabet, 16);
        assert!(e.bits <= 64.0 && e.bits >= 56.0, "{e:?}");
        let same: Vec<String> = ["abc", "abc"].map(String::from).into();
        assert!(!entropy(&same).distinct);
        assert_eq!(entropy(&same).bits, 0.0);
    }

    #[test]
    fn contact_fields_at_any_depth() {
        let s = json!({"type": "object", "properties": {
            "statement": {"type": "string"},
            "area": {"anyOf": [{"type": "string"}, {"type": "object", "properties": {"place": {}, "buyer": {"type": "object", "properties": {"e_mail": {}}}}}]},
            "extra": {"type": "array", "items": {"properties": {"phoneNumber": {}, "fullName": {}}}}
        }});
        assert_eq!(contact_properties(&s), vec!["area.buyer.e_mail", "extra.fullName", "extra.phoneNumber"]);
        assert!(contact_properties(&json!({"properties": {"statement": {}, "budget": {"properties": {"max": {}}}}}))
            .is_empty());
    }

    #[test]
    fn hidden_limit_forms_are_found_with_digit_boundaries() {
        for raw in ["{\"limit\":13579}", "13 579 EUR", "13,579", "13579.0", "1.3579e4", "13\\u00a0579"] {
            assert!(hidden_limit_in(raw, 13_579).is_some(), "{raw}");
        }
        for raw in ["135790", "213579", "{\"max\":15000.0}", "1357"] {
            assert!(hidden_limit_in(raw, 13_579).is_none(), "{raw}");
        }
    }

    #[test]
    fn codes_and_urls() {
        let code = "Z74WE1KaKhdssLe035yM-irVEUk";
        let m = mutate(code);
        assert_ne!(m, code);
        assert_eq!(m.len(), code.len());
        assert_ne!(unknown_like(code), code);
        assert!(
            consent_url_problem("http://127.0.0.1:8080/consent/abcdefghijklmnopq", code, "127.0.0.1", "http").is_none()
        );
        assert!(
            consent_url_problem(&format!("http://127.0.0.1:8080/consent/{code}"), code, "127.0.0.1", "http").is_some()
        );
        assert!(consent_url_problem("https://elsewhere.example/c/x", code, "127.0.0.1", "http").is_some());
        assert_eq!(
            consent_token("http://h/consent/YT6zunoeKMqLhuQ1RUwxhngwdKs").as_deref(),
            Some("YT6zunoeKMqLhuQ1RUwxhngwdKs")
        );
        let ch =
            "Bearer resource_metadata=\"http://h/.well-known/oauth-protected-resource/mcp/buyer\", scope=\"intents\"";
        assert_eq!(
            auth_param(ch, "resource_metadata").as_deref(),
            Some("http://h/.well-known/oauth-protected-resource/mcp/buyer")
        );
        assert_eq!(auth_param(ch, "metadata"), None);
        let issuer = Url::parse("https://h.example/tenant").unwrap();
        assert_eq!(
            as_metadata_url(&issuer).as_str(),
            "https://h.example/.well-known/oauth-authorization-server/tenant"
        );
        assert!(
            band_holds("10000-20000", 15_000.0) && !band_holds("0-5000", 15_000.0) && band_holds("10000+", 15_000.0)
        );
    }
}
