//! Gazetteer for the Area of PROTOCOL.md §2: resolves area strings and objects for
//! Slovakia and Czechia to ISO 3166-1 countries and ISO 3166-2 regions (kraje).
//!
//! An area string is a country code (`"SK"`), a region code (`"SK-BL"`, `"CZ-10"`), or a
//! place name in Slovak, Czech or English (`"Bratislava"`, `"Jihomoravský kraj"`,
//! `"Prague"`, `"South Moravian Region"`). Matching is case- and diacritics-insensitive
//! ([`crate::text::fold`]), ignores punctuation, and tolerates a trailing
//! `kraj`/`region`/`okres`/`district` and a leading `okres`, `district (of)`, `kraj`,
//! `region (of)`, `city of` or `mesto`.
//! All data lives in static arrays; lookup maps are built once on first use.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use crate::text;

/// A resolved area: the normalised object of PROTOCOL.md §2 (Area), e.g. `{"country":
/// "SK", "regions": ["SK-BL", "SK-TA"], "place": "Bratislava"}`; `regions` sorted and
/// without duplicates, `place` omitted from JSON when absent.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct AreaObject {
    /// ISO 3166-1 alpha-2 country code, upper case: `"SK"` or `"CZ"`.
    pub country: String,
    /// ISO 3166-2 region codes inside `country`; empty means the whole country.
    #[serde(default)]
    pub regions: Vec<String>,
    /// Town the area was named by, canonical spelling (`"Košice"`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<String>,
}

/// The longest area string (or region entry) accepted, in characters after trimming.
pub const MAX_AREA_CHARS: usize = 200;

/// Why an area string or object could not be resolved (PROTOCOL.md §2 Area: "a name it
/// cannot resolve is a tool error that lists close names").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AreaError {
    /// The input (or a region entry, or country plus regions) was empty or blank.
    #[error("must not be empty")]
    Empty,
    /// No country, region or town has this name; `suggestions` holds up to 5 close names.
    #[error("unknown place {input:?}; close names: {}", suggestions.join(", "))]
    Unknown {
        /// The input as given (trimmed).
        input: String,
        /// Up to 5 known names or codes closest to the input, best first.
        suggestions: Vec<String>,
    },
    /// A country code (or a region code's country part) other than SK or CZ.
    #[error("unknown country {0:?}; this holder serves SK and CZ")]
    UnknownCountry(String),
    /// The input is longer than [`MAX_AREA_CHARS`] characters (after trimming).
    #[error("must be at most {MAX_AREA_CHARS} characters (a region code or place name)")]
    TooLong,
    /// An area object lists a region (as given) that lies in another country.
    #[error("region {region:?} is not in country {country:?}")]
    RegionOutsideCountry {
        /// The region entry as given (trimmed).
        region: String,
        /// The object's (upper-cased) country.
        country: String,
    },
}

struct Country {
    code: &'static str,
    names: &'static [&'static str],
}

struct Region {
    code: &'static str,
    country: &'static str,
    sk: &'static str,
    cs: &'static str,
    en: &'static str,
    /// Short and variant forms ("Bratislavský", "South Moravia").
    aliases: &'static [&'static str],
}

struct Town {
    name: &'static str,
    region: &'static str,
    /// Exonyms and variant spellings ("Prague", "Pilsen").
    aliases: &'static [&'static str],
}

// "Čechy" (Bohemia) is deliberately not a country alias.
#[rustfmt::skip]
static COUNTRIES: &[Country] = &[
    Country { code: "SK", names: &["Slovensko", "Slovakia", "Slovenská republika", "Slovak Republic"] },
    Country { code: "CZ", names: &["Česko", "Czechia", "Czech Republic", "Česká republika"] },
];

#[rustfmt::skip]
static REGIONS: &[Region] = &[
    Region { code: "SK-BC", country: "SK", sk: "Banskobystrický kraj", cs: "Banskobystrický kraj", en: "Banská Bystrica Region", aliases: &["Banskobystrický"] },
    Region { code: "SK-BL", country: "SK", sk: "Bratislavský kraj", cs: "Bratislavský kraj", en: "Bratislava Region", aliases: &["Bratislavský"] },
    Region { code: "SK-KI", country: "SK", sk: "Košický kraj", cs: "Košický kraj", en: "Košice Region", aliases: &["Košický"] },
    Region { code: "SK-NI", country: "SK", sk: "Nitriansky kraj", cs: "Nitranský kraj", en: "Nitra Region", aliases: &["Nitriansky", "Nitranský"] },
    Region { code: "SK-PV", country: "SK", sk: "Prešovský kraj", cs: "Prešovský kraj", en: "Prešov Region", aliases: &["Prešovský"] },
    Region { code: "SK-TC", country: "SK", sk: "Trenčiansky kraj", cs: "Trenčínský kraj", en: "Trenčín Region", aliases: &["Trenčiansky", "Trenčínský"] },
    Region { code: "SK-TA", country: "SK", sk: "Trnavský kraj", cs: "Trnavský kraj", en: "Trnava Region", aliases: &["Trnavský"] },
    Region { code: "SK-ZI", country: "SK", sk: "Žilinský kraj", cs: "Žilinský kraj", en: "Žilina Region", aliases: &["Žilinský"] },
    Region { code: "CZ-10", country: "CZ", sk: "Hlavné mesto Praha", cs: "Hlavní město Praha", en: "Prague", aliases: &["Capital City of Prague", "Prague Region", "Praha hlavní město", "hl. m. Praha"] },
    Region { code: "CZ-20", country: "CZ", sk: "Stredočeský kraj", cs: "Středočeský kraj", en: "Central Bohemian Region", aliases: &["Středočeský", "Stredočeský", "Central Bohemia"] },
    Region { code: "CZ-31", country: "CZ", sk: "Juhočeský kraj", cs: "Jihočeský kraj", en: "South Bohemian Region", aliases: &["Jihočeský", "Juhočeský", "South Bohemia"] },
    Region { code: "CZ-32", country: "CZ", sk: "Plzenský kraj", cs: "Plzeňský kraj", en: "Plzeň Region", aliases: &["Plzeňský", "Plzenský", "Pilsen Region"] },
    Region { code: "CZ-41", country: "CZ", sk: "Karlovarský kraj", cs: "Karlovarský kraj", en: "Karlovy Vary Region", aliases: &["Karlovarský"] },
    Region { code: "CZ-42", country: "CZ", sk: "Ústecký kraj", cs: "Ústecký kraj", en: "Ústí nad Labem Region", aliases: &["Ústecký"] },
    Region { code: "CZ-51", country: "CZ", sk: "Liberecký kraj", cs: "Liberecký kraj", en: "Liberec Region", aliases: &["Liberecký"] },
    Region { code: "CZ-52", country: "CZ", sk: "Královohradecký kraj", cs: "Královéhradecký kraj", en: "Hradec Králové Region", aliases: &["Královéhradecký", "Královohradecký"] },
    Region { code: "CZ-53", country: "CZ", sk: "Pardubický kraj", cs: "Pardubický kraj", en: "Pardubice Region", aliases: &["Pardubický"] },
    Region { code: "CZ-63", country: "CZ", sk: "Kraj Vysočina", cs: "Kraj Vysočina", en: "Vysočina Region", aliases: &["Vysočina"] },
    Region { code: "CZ-64", country: "CZ", sk: "Juhomoravský kraj", cs: "Jihomoravský kraj", en: "South Moravian Region", aliases: &["Jihomoravský", "Juhomoravský", "South Moravia"] },
    Region { code: "CZ-71", country: "CZ", sk: "Olomoucký kraj", cs: "Olomoucký kraj", en: "Olomouc Region", aliases: &["Olomoucký"] },
    Region { code: "CZ-72", country: "CZ", sk: "Zlínsky kraj", cs: "Zlínský kraj", en: "Zlín Region", aliases: &["Zlínský", "Zlínsky"] },
    Region { code: "CZ-80", country: "CZ", sk: "Moravskosliezsky kraj", cs: "Moravskoslezský kraj", en: "Moravian-Silesian Region", aliases: &["Moravskoslezský", "Moravskosliezsky", "Moravia-Silesia"] },
];

const fn t(name: &'static str, region: &'static str) -> Town {
    Town { name, region, aliases: &[] }
}

#[rustfmt::skip]
static TOWNS: &[Town] = &[
    // Slovakia: regional seats, then larger towns.
    Town { name: "Bratislava", region: "SK-BL", aliases: &["Pressburg"] },
    t("Trnava", "SK-TA"), t("Trenčín", "SK-TC"), t("Nitra", "SK-NI"), t("Žilina", "SK-ZI"),
    t("Banská Bystrica", "SK-BC"), t("Prešov", "SK-PV"), t("Košice", "SK-KI"),
    t("Piešťany", "SK-TA"), t("Martin", "SK-ZI"), t("Poprad", "SK-PV"), t("Zvolen", "SK-BC"),
    t("Michalovce", "SK-KI"), t("Levice", "SK-NI"), t("Komárno", "SK-NI"), t("Nové Zámky", "SK-NI"),
    t("Senec", "SK-BL"), t("Pezinok", "SK-BL"), t("Malacky", "SK-BL"),
    t("Dunajská Streda", "SK-TA"), t("Považská Bystrica", "SK-TC"), t("Prievidza", "SK-TC"),
    t("Spišská Nová Ves", "SK-KI"), t("Humenné", "SK-PV"), t("Bardejov", "SK-PV"),
    t("Lučenec", "SK-BC"), t("Rožňava", "SK-KI"), t("Ružomberok", "SK-ZI"),
    t("Liptovský Mikuláš", "SK-ZI"), t("Čadca", "SK-ZI"),
    // Czechia: regional seats, then larger towns.
    Town { name: "Praha", region: "CZ-10", aliases: &["Prague", "Prag"] },
    Town { name: "Brno", region: "CZ-64", aliases: &["Brünn"] },
    t("Ostrava", "CZ-80"),
    Town { name: "Plzeň", region: "CZ-32", aliases: &["Pilsen"] },
    t("Liberec", "CZ-51"), t("Olomouc", "CZ-71"),
    Town { name: "České Budějovice", region: "CZ-31", aliases: &["Budweis"] },
    t("Hradec Králové", "CZ-52"), t("Ústí nad Labem", "CZ-42"), t("Pardubice", "CZ-53"),
    t("Zlín", "CZ-72"), t("Jihlava", "CZ-63"),
    Town { name: "Karlovy Vary", region: "CZ-41", aliases: &["Karlsbad", "Carlsbad"] },
    t("Kladno", "CZ-20"), t("Most", "CZ-42"), t("Opava", "CZ-80"), t("Frýdek-Místek", "CZ-80"),
    t("Karviná", "CZ-80"), t("Havířov", "CZ-80"), t("Teplice", "CZ-42"), t("Děčín", "CZ-42"),
    t("Chomutov", "CZ-42"), t("Jablonec nad Nisou", "CZ-51"), t("Mladá Boleslav", "CZ-20"),
    t("Prostějov", "CZ-71"), t("Přerov", "CZ-71"), t("Třebíč", "CZ-63"), t("Znojmo", "CZ-64"),
    t("Kolín", "CZ-20"), t("Tábor", "CZ-31"), t("Příbram", "CZ-20"), t("Cheb", "CZ-41"),
    t("Trutnov", "CZ-52"), t("Písek", "CZ-31"), t("Kroměříž", "CZ-72"), t("Vsetín", "CZ-72"),
    t("Uherské Hradiště", "CZ-72"), t("Hodonín", "CZ-64"), t("Břeclav", "CZ-64"),
    t("Vyškov", "CZ-64"), t("Blansko", "CZ-64"), t("Náchod", "CZ-52"), t("Chrudim", "CZ-53"),
    t("Beroun", "CZ-20"), t("Kutná Hora", "CZ-20"), t("Benešov", "CZ-20"), t("Rakovník", "CZ-20"),
    t("Mělník", "CZ-20"), t("Nymburk", "CZ-20"),
];

/// Words tolerated before a name (folded): "okres Senec", "district of Brno".
#[rustfmt::skip]
const LEADING: &[&[&str]] = &[&["district", "of"], &["region", "of"], &["city", "of"], &["okres"], &["district"], &["kraj"], &["region"], &["mesto"]];
/// Words tolerated after a name (folded): "Brno district", "Trnava kraj".
const TRAILING: &[&str] = &["kraj", "region", "okres", "district"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Country(&'static str),
    Region(usize),
    Town(usize),
}

/// Canonical lookup key: folded alphanumeric tokens joined by single spaces.
fn key(s: &str) -> String {
    text::tokens(s).join(" ")
}

/// Every (display name, target) pair, in priority order: countries, towns, regions.
/// Towns come before regions so that "Prague" (also CZ-10's English name) keeps its place.
fn all_names() -> impl Iterator<Item = (&'static str, Target)> {
    let countries = COUNTRIES.iter().flat_map(|c| c.names.iter().map(move |n| (*n, Target::Country(c.code))));
    let towns = TOWNS
        .iter()
        .enumerate()
        .flat_map(|(i, t)| std::iter::once(t.name).chain(t.aliases.iter().copied()).map(move |n| (n, Target::Town(i))));
    let regions = REGIONS.iter().enumerate().flat_map(|(i, r)| {
        [r.sk, r.cs, r.en].into_iter().chain(r.aliases.iter().copied()).map(move |n| (n, Target::Region(i)))
    });
    countries.chain(towns).chain(regions)
}

static BY_NAME: LazyLock<HashMap<String, Target>> = LazyLock::new(|| {
    let mut map = HashMap::new();
    for (name, target) in all_names() {
        map.entry(key(name)).or_insert(target);
    }
    map
});

static PLACE_TOKENS: LazyLock<HashSet<String>> = LazyLock::new(|| {
    let mut set: HashSet<String> = all_names().flat_map(|(n, _)| text::tokens(n)).collect();
    set.extend(TRAILING.iter().map(|w| (*w).to_owned()));
    set
});

fn region_index(code: &str) -> Option<usize> {
    let code = code.trim();
    REGIONS.iter().position(|r| r.code.eq_ignore_ascii_case(code))
}

fn is_served_country(code: &str) -> bool {
    COUNTRIES.iter().any(|c| c.code == code)
}

fn target_area(target: Target) -> AreaObject {
    match target {
        Target::Country(code) => whole_country(code.to_owned()),
        Target::Region(i) => region_area(i),
        Target::Town(i) => {
            let town = &TOWNS[i];
            let country = region_country(town.region).unwrap_or_default();
            AreaObject {
                country: country.to_owned(),
                regions: vec![town.region.to_owned()],
                place: Some(town.name.to_owned()),
            }
        }
    }
}

fn whole_country(country: String) -> AreaObject {
    AreaObject { country, regions: Vec::new(), place: None }
}

fn region_area(i: usize) -> AreaObject {
    let r = &REGIONS[i];
    AreaObject { country: r.country.to_owned(), regions: vec![r.code.to_owned()], place: None }
}

/// The most tokens any known name has; longer token runs are never joined for a lookup.
static MAX_NAME_TOKENS: LazyLock<usize> =
    LazyLock::new(|| BY_NAME.keys().map(|k| k.split(' ').count()).max().unwrap_or(0));

/// Looks `tokens` up, then retries with tolerated leading/trailing words removed; linear
/// in the number of tokens (joined for a lookup only when no longer than the longest
/// known name).
fn lookup(tokens: &[String]) -> Option<Target> {
    let mut rest = tokens;
    loop {
        if rest.is_empty() {
            return None;
        }
        if rest.len() <= *MAX_NAME_TOKENS {
            if let Some(t) = BY_NAME.get(&rest.join(" ")) {
                return Some(*t);
            }
        }
        if rest.last().is_some_and(|w| TRAILING.contains(&w.as_str())) {
            rest = &rest[..rest.len() - 1];
            continue;
        }
        match LEADING.iter().find(|p| rest.len() > p.len() && rest.iter().zip(p.iter()).all(|(a, b)| a == b)) {
            Some(prefix) => rest = &rest[prefix.len()..],
            None => return None,
        }
    }
}

/// Up to 5 known names or codes closest to `input` (Jaro–Winkler over folded keys).
fn suggestions(input: &str) -> Vec<String> {
    let folded = key(input);
    let mut scored: Vec<(f64, &'static str)> = all_names()
        .map(|(n, _)| n)
        .chain(REGIONS.iter().map(|r| r.code))
        .map(|n| (strsim::jaro_winkler(&folded, &key(n)), n))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut out: Vec<String> = Vec::new();
    for (score, name) in &scored {
        if out.len() >= 5 || (*score < 0.75 && out.len() >= 3) {
            break;
        }
        if !out.iter().any(|o| o == name) {
            out.push((*name).to_owned());
        }
    }
    out
}

/// Resolves an area string (PROTOCOL.md §2 Area) to its normalised object.
///
/// Accepts, after trimming and case/diacritics folding:
/// - a country code or name (`"SK"`, `"cz"`, `"Slovensko"`, `"Czech Republic"`) →
///   `{country, regions: [], place: None}` (whole country);
/// - a region code or name (`"sk-bl"`, `"Jihomoravský kraj"`, `"Bratislava region"`,
///   `"South Moravia"`) → `{country, regions: [code], place: None}`;
/// - a town (`"kosice"`, `"Prague"`, `"okres Senec"`) →
///   `{country, regions: [its kraj], place: Some("Košice")}`.
///
/// # Errors
/// [`AreaError::Empty`] for blank input; [`AreaError::TooLong`] for more than
/// [`MAX_AREA_CHARS`] characters (checked before any folding or lookup);
/// [`AreaError::UnknownCountry`] for a two-letter
/// code or `XX-…` region code whose country is not SK/CZ; [`AreaError::Unknown`] with up
/// to 5 close names for anything else not in the gazetteer.
pub fn resolve(input: &str) -> Result<AreaObject, AreaError> {
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Err(AreaError::Empty);
    }
    if trimmed.len() > MAX_AREA_CHARS && trimmed.chars().nth(MAX_AREA_CHARS).is_some() {
        return Err(AreaError::TooLong);
    }
    if let Some(i) = region_index(trimmed) {
        return Ok(region_area(i));
    }
    let is_alpha2 = |s: &str| s.len() == 2 && s.chars().all(|c| c.is_ascii_alphabetic());
    if is_alpha2(trimmed) {
        let code = trimmed.to_ascii_uppercase();
        return if is_served_country(&code) { Ok(whole_country(code)) } else { Err(AreaError::UnknownCountry(code)) };
    }
    let tokens = text::tokens(trimmed);
    if let Some(target) = lookup(&tokens) {
        return Ok(target_area(target));
    }
    // Looks like an ISO 3166-2 code ("AT-9", "SK-XX") but is not a known region.
    if let Some((prefix, sub)) = trimmed.split_once('-') {
        let code_like = !sub.is_empty() && sub.len() <= 3 && sub.chars().all(|c| c.is_ascii_alphanumeric());
        if is_alpha2(prefix) && code_like && !is_served_country(&prefix.to_ascii_uppercase()) {
            return Err(AreaError::UnknownCountry(prefix.to_ascii_uppercase()));
        }
    }
    Err(AreaError::Unknown { input: trimmed.to_owned(), suggestions: suggestions(trimmed) })
}

/// Normalises an area object (PROTOCOL.md §2 Area, object form).
///
/// `country` is trimmed and upper-cased and must be SK or CZ (a country name such as
/// `"Slovakia"` is also accepted; when blank it is taken from the first region). Each
/// entry of `regions` is resolved like [`resolve`] (codes, region names or towns); the
/// result is deduplicated and sorted, and an entry naming the whole country makes
/// `regions` empty (whole country). `place` is kept (trimmed; blank becomes `None`).
///
/// # Errors
/// [`AreaError::Empty`] when country and regions are both blank or a region entry is
/// blank; [`AreaError::UnknownCountry`] for a country other than SK/CZ;
/// [`AreaError::Unknown`] for an unresolvable region entry;
/// [`AreaError::RegionOutsideCountry`] when an entry lies in another country.
pub fn normalize(obj: &AreaObject) -> Result<AreaObject, AreaError> {
    let country_in = obj.country.trim();
    let country = if country_in.is_empty() {
        match obj.regions.first() {
            Some(first) => resolve(first)?.country,
            None => return Err(AreaError::Empty),
        }
    } else {
        match resolve(country_in) {
            Ok(a) if a.regions.is_empty() && a.place.is_none() => a.country,
            Ok(_) | Err(AreaError::Unknown { .. }) => return Err(AreaError::UnknownCountry(country_in.to_owned())),
            Err(e) => return Err(e),
        }
    };
    let mut regions: Vec<String> = Vec::new();
    let mut whole = false;
    for entry in &obj.regions {
        let resolved = resolve(entry)?;
        if resolved.country != country {
            return Err(AreaError::RegionOutsideCountry { region: entry.trim().to_owned(), country });
        }
        whole |= resolved.regions.is_empty();
        regions.extend(resolved.regions);
    }
    if whole {
        regions.clear();
    }
    regions.sort_unstable();
    regions.dedup();
    let place = obj.place.as_deref().map(str::trim).filter(|p| !p.is_empty()).map(str::to_owned);
    Ok(AreaObject { country, regions, place })
}

/// Country of an ISO 3166-2 region code (case-insensitive): `"SK-BL"` → `Some("SK")`,
/// `"cz-64"` → `Some("CZ")`; `None` for codes not in the gazetteer (PROTOCOL.md §2 Area).
pub fn region_country(code: &str) -> Option<&'static str> {
    region_index(code).map(|i| REGIONS[i].country)
}

/// Name of a region (code case-insensitive) in `lang`: `"sk"`, `"cs"` or `"en"` (a BCP 47
/// tag's primary subtag is used, so `"cs-CZ"` works; any other language gives English).
/// `region_name("CZ-64", "sk")` → `Some("Juhomoravský kraj")`; `None` for unknown codes.
pub fn region_name(code: &str, lang: &str) -> Option<&'static str> {
    let r = &REGIONS[region_index(code)?];
    Some([r.en, r.sk, r.cs][language(lang)])
}

/// The gazetteer's language of a BCP 47 tag (its primary subtag): 1 for Slovak (`sk`),
/// 2 for Czech (`cs`, also `cz`), 0 (English) for any other.
pub fn language(lang: &str) -> usize {
    match lang.split(['-', '_']).next().unwrap_or_default().to_ascii_lowercase().as_str() {
        "sk" => 1,
        "cs" | "cz" => 2,
        _ => 0,
    }
}

/// Every region the gazetteer knows, as `(code, country)`: `("SK-BC", "SK")`, …,
/// `("CZ-80", "CZ")` — the 8 Slovak and 14 Czech kraje of PROTOCOL.md §2 Area.
pub fn all_regions() -> impl Iterator<Item = (&'static str, &'static str)> {
    REGIONS.iter().map(|r| (r.code, r.country))
}

/// Whether the offer's area lies in the intent's area (PROTOCOL.md §6): the countries
/// are equal and either `area.regions` is empty (whole country) or `offer_area.regions`
/// is non-empty and each of its regions is in `area.regions`. `place` is not compared.
pub fn contains(area: &AreaObject, offer_area: &AreaObject) -> bool {
    if !area.country.trim().eq_ignore_ascii_case(offer_area.country.trim()) {
        return false;
    }
    if area.regions.is_empty() {
        return true;
    }
    !offer_area.regions.is_empty()
        && offer_area.regions.iter().all(|o| area.regions.iter().any(|a| a.eq_ignore_ascii_case(o)))
}

/// Every folded token of every country, region and town name and alias, plus the
/// tolerated words `kraj`, `region`, `okres`, `district`: matching (PROTOCOL.md §6)
/// ignores them in statements, since the area is matched separately.
pub fn place_tokens() -> &'static HashSet<String> {
    &PLACE_TOKENS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn area(country: &str, regions: &[&str]) -> AreaObject {
        let regions = regions.iter().map(|r| (*r).to_owned()).collect();
        AreaObject { country: country.into(), regions, place: None }
    }

    fn placed(country: &str, regions: &[&str], place: &str) -> AreaObject {
        AreaObject { place: Some(place.into()), ..area(country, regions) }
    }

    fn regions_of(s: &str) -> Result<Vec<String>, AreaError> {
        resolve(s).map(|a| a.regions)
    }

    #[test]
    fn data_is_complete_and_unambiguous() {
        assert_eq!(all_regions().filter(|(_, c)| *c == "SK").count(), 8);
        assert_eq!(all_regions().filter(|(_, c)| *c == "CZ").count(), 14);
        assert!(TOWNS.iter().all(|t| region_index(t.region).is_some()));
        // Only "Prague" is both a town (Praha) and a region name (CZ-10); the town wins.
        let mut seen: HashMap<String, Target> = HashMap::new();
        let mut conflicts: Vec<String> = all_names()
            .filter(|(n, t)| seen.insert(key(n), *t).is_some_and(|prev| prev != *t))
            .map(|(n, _)| key(n))
            .collect();
        conflicts.dedup();
        assert_eq!(conflicts, ["prague"]);
    }

    #[test]
    fn every_region_resolves_by_code_and_each_name() {
        for r in REGIONS {
            let want = Ok((r.country.to_owned(), vec![r.code.to_owned()]));
            for s in [r.code, &r.code.to_lowercase(), r.sk, r.cs, r.en, &text::fold(r.en)] {
                assert_eq!(resolve(s).map(|a| (a.country, a.regions)), want, "{s}");
            }
            for s in r.aliases {
                assert_eq!(resolve(s).map(|a| (a.country, a.regions)), want, "{s}");
            }
        }
        assert_eq!(resolve(" sk-bl "), Ok(area("SK", &["SK-BL"])));
    }

    #[test]
    fn towns_resolve_with_place() {
        for (s, want) in [
            ("kosice", placed("SK", &["SK-KI"], "Košice")),
            ("KOŠICE", placed("SK", &["SK-KI"], "Košice")),
            ("Prague", placed("CZ", &["CZ-10"], "Praha")),
            ("praha", placed("CZ", &["CZ-10"], "Praha")),
            ("Prag", placed("CZ", &["CZ-10"], "Praha")),
            ("Brno", placed("CZ", &["CZ-64"], "Brno")),
            ("frydek mistek", placed("CZ", &["CZ-80"], "Frýdek-Místek")),
            ("okres Senec", placed("SK", &["SK-BL"], "Senec")),
            ("district of Znojmo", placed("CZ", &["CZ-64"], "Znojmo")),
            ("Pilsen district", placed("CZ", &["CZ-32"], "Plzeň")),
        ] {
            assert_eq!(resolve(s), Ok(want), "{s}");
        }
        for t in TOWNS {
            assert_eq!(regions_of(t.name), Ok(vec![t.region.to_owned()]), "{}", t.name);
        }
    }

    #[test]
    fn region_forms_resolve() {
        // Short forms, "kraj"/"region" suffixes and a "Kraj" prefix (names are tested above).
        for (code, names) in [
            ("SK-BL", "bratislava region|Bratislavský kraj|Bratislavský|bratislavsky region"),
            ("CZ-64", "Jihomoravský kraj|Jihomoravský|Juhomoravský kraj|South Moravia"),
            ("CZ-63", "Vysočina|kraj vysocina|Vysocina region"),
        ] {
            for s in names.split('|') {
                assert_eq!(resolve(s), Ok(area(&code[..2], &[code])), "{s}");
            }
        }
    }

    #[test]
    fn countries_resolve() {
        for (code, names) in [
            ("SK", "SK|sk| Sk |Slovensko|Slovakia|slovenska republika"),
            ("CZ", "CZ|cz|Česko|Czechia|Czech Republic|Česká republika"),
        ] {
            for s in names.split('|') {
                assert_eq!(resolve(s), Ok(area(code, &[])), "{s}");
            }
        }
        assert!(matches!(resolve("Čechy"), Err(AreaError::Unknown { .. })));
        assert_eq!(resolve("AT"), Err(AreaError::UnknownCountry("AT".into())));
        assert_eq!(resolve("at-9"), Err(AreaError::UnknownCountry("AT".into())));
    }

    #[test]
    fn unknown_and_empty() {
        let Err(AreaError::Unknown { input, suggestions }) = resolve("Bratislva") else {
            panic!("Bratislva resolved");
        };
        assert_eq!(input, "Bratislva");
        assert!(suggestions.iter().any(|s| s == "Bratislava"), "{suggestions:?}");
        assert!(suggestions.len() <= 5);
        let Err(AreaError::Unknown { suggestions, .. }) = resolve("SK-XX") else {
            panic!("SK-XX resolved");
        };
        assert!(suggestions.iter().any(|s| s.starts_with("SK-")), "{suggestions:?}");
        let err = resolve("Zilna").map_err(|e| e.to_string()).err();
        let want = "unknown place \"Zilna\"; close names: Žilina";
        assert!(err.as_deref().is_some_and(|e| e.starts_with(want)), "{err:?}");
        assert_eq!(resolve(""), Err(AreaError::Empty));
        assert_eq!(resolve("   "), Err(AreaError::Empty));
        assert!(matches!(resolve("kraj"), Err(AreaError::Unknown { .. })));
    }

    #[test]
    fn normalize_objects() {
        for (input, want) in [
            (area("sk", &["SK-BL", "Trnavský kraj"]), area("SK", &["SK-BL", "SK-TA"])),
            (area("SK", &["Trnava", "sk-ta", "SK-BL"]), area("SK", &["SK-BL", "SK-TA"])),
            (area(" cz ", &[]), area("CZ", &[])),
            (area("Slovakia", &["SK-KI"]), area("SK", &["SK-KI"])),
            (area("", &["Brno"]), area("CZ", &["CZ-64"])),
            (area("SK", &["SK-BL", "Slovensko"]), area("SK", &[])),
            (placed("SK", &["SK-BL"], " Senec "), placed("SK", &["SK-BL"], "Senec")),
        ] {
            assert_eq!(normalize(&input), Ok(want), "{input:?}");
        }
        let outside = AreaError::RegionOutsideCountry { region: "CZ-64".into(), country: "SK".into() };
        assert_eq!(normalize(&area("SK", &["CZ-64"])), Err(outside));
        assert_eq!(normalize(&area("DE", &[])), Err(AreaError::UnknownCountry("DE".into())));
        let bratislava = AreaError::UnknownCountry("Bratislava".into());
        assert_eq!(normalize(&area("Bratislava", &[])), Err(bratislava));
        assert_eq!(normalize(&area("", &[])), Err(AreaError::Empty));
        assert_eq!(normalize(&area("SK", &[" "])), Err(AreaError::Empty));
        let unknown = normalize(&area("SK", &["Bratislva"]));
        assert!(matches!(unknown, Err(AreaError::Unknown { .. })));
    }

    #[test]
    fn contains_truth_table() {
        let (sk, cz) = (area("SK", &[]), area("CZ", &[]));
        let (sk_bl, sk_ta, sk_ki) = (area("SK", &["SK-BL"]), area("SK", &["SK-TA"]), area("SK", &["SK-KI"]));
        let (sk_bl_ta, cz_64) = (area("SK", &["SK-BL", "SK-TA"]), area("CZ", &["CZ-64"]));
        let trnava = placed("SK", &["SK-TA"], "Trnava");
        // (intent area, offer area, expected)
        for (a, o, want) in [
            (&sk, &sk_bl, true),
            (&sk, &sk, true),
            (&sk_bl, &sk_bl, true),
            (&sk_bl_ta, &sk_ta, true),
            (&sk_bl_ta, &sk_bl_ta, true),
            (&sk_bl_ta, &trnava, true),
            (&cz, &cz_64, true),
            (&sk_bl, &sk_ta, false),
            (&sk_bl, &sk_bl_ta, false),
            (&sk_bl, &sk, false),
            (&sk_bl_ta, &sk_ki, false),
            (&sk, &cz_64, false),
            (&cz, &sk, false),
            (&cz_64, &sk_bl, false),
        ] {
            assert_eq!(contains(a, o), want, "{a:?} contains {o:?}");
        }
    }

    #[test]
    fn region_names_and_tokens() {
        assert_eq!(region_name("CZ-64", "sk"), Some("Juhomoravský kraj"));
        assert_eq!(region_name("cz-64", "cs-CZ"), Some("Jihomoravský kraj"));
        assert_eq!(region_name("CZ-64", "de"), Some("South Moravian Region"));
        assert_eq!(region_name("SK-TC", "cs"), Some("Trenčínský kraj"));
        assert_eq!(region_name("XX-1", "en"), None);
        assert_eq!(region_country("SK-BL"), Some("SK"));
        assert_eq!(region_country("cz-10"), Some("CZ"));
        assert_eq!(region_country("SK"), None);
        let tokens = place_tokens();
        for w in ["bratislava", "kraj", "region", "jihomoravsky", "kosice", "prague", "okres"] {
            assert!(tokens.contains(w), "{w}");
        }
        assert!(!tokens.contains("cechy"));
    }
}

#[cfg(test)]
mod linear_tests {
    use super::*;

    /// A 250 KB area of any shape is refused quickly (it used to cost seconds).
    #[test]
    fn huge_area_is_refused_fast() {
        let inputs = ["a".repeat(250_000), "okres ".repeat(42_000), "ab cd ".repeat(42_000), "x kraj".repeat(42_000)];
        for s in &inputs {
            let t = std::time::Instant::now();
            assert_eq!(resolve(s), Err(AreaError::TooLong));
            assert!(t.elapsed() < std::time::Duration::from_secs(1), "took {:?}", t.elapsed());
        }
    }

    /// The cap counts characters, not bytes, and applies after trimming.
    #[test]
    fn cap_counts_characters_after_trimming() {
        let long_ok = format!("  {}  ", "ž".repeat(MAX_AREA_CHARS));
        assert!(matches!(resolve(&long_ok), Err(AreaError::Unknown { .. })));
        assert_eq!(resolve(&"ž".repeat(MAX_AREA_CHARS + 1)), Err(AreaError::TooLong));
        assert_eq!(
            AreaError::TooLong.to_string(),
            format!("must be at most {MAX_AREA_CHARS} characters (a region code or place name)")
        );
    }

    /// Lookup stays linear in the token count, and still strips tolerated words.
    #[test]
    fn lookup_is_linear_and_strips_words() {
        let many: Vec<String> = std::iter::repeat_n("okres".to_owned(), 100_000).collect();
        let t = std::time::Instant::now();
        assert!(lookup(&many).is_none());
        assert!(t.elapsed() < std::time::Duration::from_secs(1), "took {:?}", t.elapsed());
        assert!(resolve("okres Senec").is_ok());
        assert!(resolve("Bratislavský kraj").is_ok());
    }
}
