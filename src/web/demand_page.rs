//! The sellers' demand heat map (PROTOCOL.md §1 "seller pages", §5):
//! `GET /seller/demand?category=vehicles[&buyBy=3m]`.
//!
//! For signed-in sellers only: without a session, 303 to the sign-in page; any other
//! role gets 403. An unknown category is a 404 listing the known ones.
//!
//! One section per buy-by band: an inline SVG grid of regions × budget bands, colour
//! intensity by the number of active intents, withheld cells (fewer than k) hatched
//! grey; then the same numbers as an accessible table. The cells are exactly those of
//! the `intent_demand_summary` tool ([`crate::demand::heat_map`]), so the page reveals
//! nothing the tool does not. The SVG uses presentation attributes only (the CSP has no
//! inline styles).

use super::i18n::DemandText;
use super::{call, fail_page, page, page_access, pages, Shared};
use crate::base::ServiceError;
use crate::demand::{HeatMap, BUY_BY_BANDS, NONE};
use crate::gazetteer::region_name;
use crate::policy::{Action, Denied};
use crate::protocol::CATEGORIES;

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use maud::{html, Markup};
use serde::Deserialize;

/// The route (merged into the pages' router, so it gets the page headers).
pub(super) fn routes() -> Router<Shared> {
    Router::new().route("/seller/demand", get(demand_page))
}

// ---------------------------------------------------------------------------
// the handler

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Query {
    category: String,
    #[serde(rename = "buyBy")]
    buy_by: String,
}

enum Access {
    SignIn,
    Forbidden,
    UnknownCategory,
    Map(Box<HeatMap>),
}

/// `GET /seller/demand?category=…[&buyBy=…]`.
async fn demand_page(State(h): State<Shared>, headers: HeaderMap, RawQuery(q): RawQuery) -> Response {
    let ui = super::browser_ui(&h, &headers);
    let (lang, t) = (ui.lang, ui.demand);
    let query: Query = q.as_deref().and_then(|q| serde_urlencoded::from_str(q).ok()).unwrap_or_default();
    let category = CATEGORIES.iter().find(|c| c.key == query.category || query.category.is_empty()).map(|c| c.key);
    let buy_by = BUY_BY_BANDS.iter().position(|b| *b == query.buy_by);
    let hd = headers.clone();
    let got = call(&h, "demand_heat_map", move |x| -> Result<_, ServiceError> {
        Ok(match page_access(x, &hd, Action::SellerPages) {
            Err(Denied::MissingCredentials) => Access::SignIn,
            Err(_) => Access::Forbidden,
            Ok(_) => match category {
                Some(c) => Access::Map(Box::new(crate::demand::heat_map(&x.base, c)?)),
                None => Access::UnknownCategory,
            },
        })
    })
    .await;
    match got {
        Ok(Access::SignIn) => {
            super::to_signin(&category.map_or("/seller/demand".to_owned(), |c| format!("/seller/demand?category={c}")))
        }
        Ok(Access::Forbidden) => {
            page(&h, ui, StatusCode::FORBIDDEN, t.sellers_only_title, pages::message(t.sellers_only, true))
        }
        Ok(Access::UnknownCategory) => {
            let body = html! {
                p.notice role="alert" { (t.unknown_category) }
                ul {
                    @for c in CATEGORIES {
                        li { a href=(format!("/seller/demand?category={}", c.key)) { (ui.category_name(c.key)) } }
                    }
                }
            };
            page(&h, ui, StatusCode::NOT_FOUND, t.title, body)
        }
        Ok(Access::Map(map)) => {
            let title = format!("{} – {}", t.title, ui.category_name(category.unwrap_or_default()));
            page(&h, ui, StatusCode::OK, &title, body(t, lang, &map, buy_by))
        }
        Err(f) => fail_page(&h, ui, f),
    }
}

// ---------------------------------------------------------------------------
// rendering

/// Left column (region names), column width, header and row heights of the SVG.
const LABEL_W: u32 = 170;
const COL_W: u32 = 80;
const HEAD_H: u32 = 28;
const ROW_H: u32 = 22;

/// The fill of a shown cell: from a light to a dark blue by `n / max` (never lighter
/// than 15 % so a small count stays visible), and a text colour that reads on it.
fn shade(n: u64, max: u64) -> (String, &'static str) {
    let t = if max == 0 { 0.0 } else { 0.15 + 0.85 * (n as f64 / max as f64).min(1.0) };
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * t).round() as u8;
    let (r, g, b) = (mix(0xe8, 0x0b), mix(0xf0, 0x3d), mix(0xfe, 0x91));
    (format!("#{r:02x}{g:02x}{b:02x}"), if t > 0.5 { "#ffffff" } else { "#1b1f24" })
}

fn budget_label(t: &DemandText, label: &str) -> String {
    if label == NONE {
        t.no_budget.to_owned()
    } else {
        label.to_owned()
    }
}

/// The page body: intro, category and buy-by navigation, one section per band.
fn body(t: &DemandText, lang: &str, map: &HeatMap, only: Option<usize>) -> Markup {
    let category = map.grid.category.as_str();
    let link = |c: &str, y: Option<&str>| match y {
        Some(y) => format!("/seller/demand?category={c}&buyBy={y}"),
        None => format!("/seller/demand?category={c}"),
    };
    let max = map.max_shown();
    let ui = super::i18n::ui(lang);
    html! {
        p { (t.intro) " " (t.rule_before_k) " " (map.k) " " (t.rule_after_k) }
        p.hint { (t.as_of) " " (pages::date(ui, &map.as_of)) " (" (map.as_of) ")" }
        nav aria-label=(t.category) {
            p {
                (t.category) ": "
                @for (i, c) in CATEGORIES.iter().enumerate() {
                    @if i > 0 { " · " }
                    @if c.key == category {
                        strong aria-current="page" { (ui.category_name(c.key)) }
                    } @else {
                        a href=(link(c.key, None)) { (ui.category_name(c.key)) }
                    }
                }
            }
            p {
                (t.buy_by) ": "
                @if only.is_none() { strong aria-current="page" { (t.all) } } @else { a href=(link(category, None)) { (t.all) } }
                @for (i, b) in BUY_BY_BANDS.iter().enumerate() {
                    " · "
                    @if only == Some(i) {
                        strong aria-current="page" { (t.bands[i]) }
                    } @else {
                        a href=(link(category, Some(b))) { (t.bands[i]) }
                    }
                }
            }
        }
        @for (y, band) in BUY_BY_BANDS.iter().enumerate() {
            @if only.is_none_or(|o| o == y) {
                section aria-labelledby=(format!("band-{band}")) {
                    h2 id=(format!("band-{band}")) { (t.buy_by) ": " (t.bands[y]) }
                    (svg(t, lang, map, y, max))
                    (table(t, lang, map, y))
                }
            }
        }
        p.hint { (ui.aggregator) }
    }
}

/// The heat map of one buy-by band as inline SVG.
fn svg(t: &DemandText, lang: &str, map: &HeatMap, y: usize, max: u64) -> Markup {
    let band = BUY_BY_BANDS[y];
    let labels = map.grid.budget_labels();
    let width = LABEL_W + COL_W * labels.len() as u32;
    let height = HEAD_H + ROW_H * map.grid.area.len() as u32;
    let (hatch, title) = (format!("hatch-{band}"), format!("svg-title-{band}"));
    html! {
        svg xmlns="http://www.w3.org/2000/svg" role="img" aria-labelledby=(title)
            viewBox=(format!("0 0 {width} {height}")) width="100%" font-family="system-ui, sans-serif" {
            title id=(title) { (t.svg_title) }
            defs {
                pattern id=(hatch) width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)" {
                    rect width="6" height="6" fill="#dcdcdc" {}
                    line x1="0" y1="0" x2="0" y2="6" stroke="#a0a0a0" stroke-width="2" {}
                }
            }
            text x="4" y=(HEAD_H - 9) font-size="11" fill="currentColor" { (t.budget) " (" (map.grid.currency) ")" }
            @for (b, label) in labels.iter().enumerate() {
                text x=(LABEL_W + COL_W * b as u32 + COL_W / 2) y=(HEAD_H - 9) font-size="11" text-anchor="middle"
                    fill="currentColor" { (budget_label(t, label)) }
            }
            @for (a, code) in map.grid.area.iter().enumerate() {
                @let top = HEAD_H + ROW_H * a as u32;
                text x="4" y=(top + ROW_H / 2 + 4) font-size="12" fill="currentColor" {
                    (region_name(code, lang).unwrap_or(code))
                }
                @for b in 0..labels.len() {
                    @let x = LABEL_W + COL_W * b as u32;
                    @let (cx, cy) = (x + COL_W / 2, top + ROW_H / 2 + 4);
                    @match map.at(y, a, b) {
                        Some(c) => {
                            @let (fill, ink) = shade(c.active_intents, max);
                            rect x=(x + 1) y=(top + 1) width=(COL_W - 2) height=(ROW_H - 2) fill=(fill) {}
                            text x=(cx) y=(cy) font-size="12" text-anchor="middle" fill=(ink) { (c.active_intents) }
                        }
                        None => {
                            rect x=(x + 1) y=(top + 1) width=(COL_W - 2) height=(ROW_H - 2)
                                fill=(format!("url(#{hatch})")) {}
                            text x=(cx) y=(cy) font-size="10" text-anchor="middle" fill="#303030" { (t.withheld) }
                        }
                    }
                }
            }
        }
    }
}

/// The same numbers as a table (regions × budget bands).
fn table(t: &DemandText, lang: &str, map: &HeatMap, y: usize) -> Markup {
    let labels = map.grid.budget_labels();
    let caption = html! {
        (t.region) " × " (t.budget) " (" (map.grid.currency) "), " (t.buy_by) ": " (t.bands[y]) " — " (t.brackets)
    };
    let columns = std::iter::once(t.region.to_owned()).chain(labels.iter().map(|l| budget_label(t, l)));
    let rows = html! {
        @for (a, code) in map.grid.area.iter().enumerate() {
            tr {
                th scope="row" { (region_name(code, lang).unwrap_or(code)) }
                @for b in 0..labels.len() {
                    @match map.at(y, a, b) {
                        Some(c) => td {
                            (c.active_intents)
                            @if let Some(n) = c.new_last_7_days { " (" (n) ")" }
                        },
                        None => td { (t.withheld) },
                    }
                }
            }
        }
    };
    pages::data_table(&format!("table-{}", BUY_BY_BANDS[y]), caption, columns, rows)
}
