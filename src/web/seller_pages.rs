//! The sellers' list of open intents (PROTOCOL.md §1 "seller pages: open pseudonymous
//! intents"): `GET /seller/intents`.
//!
//! For signed-in sellers only ([`crate::policy::Action::SellerPages`]: role `seller`,
//! enabled: `accounts::current` reads the account on every request): without a session, 303 to
//! `/signin?next=/seller/intents`; any other role gets 403. The list is exactly what
//! the `intent_list_open_intents` tool gives the seller ([`sellers::open_intents`]):
//! active pseudonymous intents in the seller's categories and regions, each under the
//! seller's pseudonym for its buyer and the seller's own handle for the intent (what its
//! agent gives as `inReplyTo`; never the intent id: PROTOCOL.md §2), with statement,
//! criteria, area, visible budget and buy-by date — never contact data, a hidden limit
//! or whether one is set.
//!
//! Language: the browser's `Accept-Language` (sk, cs or en), else the holder's default.

use super::i18n::{ui, SellerText, Ui};
use super::{fail_page, page, page_access, pages, Fail, Shared};
use crate::policy::{Action, Denied};
use crate::sellers::{self, OpenIntent, OpenQuery};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use maud::{html, Markup};
use serde_json::Value;

/// Most intents the page lists.
const PAGE_LIMIT: usize = 200;

/// The route (merged into the pages' router, so it gets the page headers).
pub(super) fn routes() -> Router<Shared> {
    Router::new().route("/seller/intents", get(intents_page))
}

// ---------------------------------------------------------------------------
// strings

fn texts(lang: &str) -> &'static SellerText {
    ui(lang).sellers
}

// ---------------------------------------------------------------------------
// the handler

/// What the session allows.
enum Access {
    SignIn,
    Forbidden,
    NoProfile,
    List(Vec<OpenIntent>),
}

/// `GET /seller/intents`.
async fn intents_page(State(h): State<Shared>, headers: HeaderMap) -> Response {
    let lang = super::browser_lang(&h, &headers);
    let (ui, t) = (ui(lang), texts(lang));
    let holder = h.clone();
    let span = tracing::Span::current();
    let got = tokio::task::spawn_blocking(move || -> Result<Access, sellers::SellerError> {
        let _in_request = span.enter();
        let x = &holder;
        Ok(match page_access(x, &headers, Action::SellerPages) {
            Err(Denied::MissingCredentials) => Access::SignIn,
            Err(_) => Access::Forbidden,
            Ok(account) => match sellers::profile(&x.base, &account)? {
                None => Access::NoProfile,
                Some(p) => {
                    let q = OpenQuery { limit: PAGE_LIMIT + 1, ..OpenQuery::default() };
                    Access::List(sellers::open_intents(&x.base, &p, &q)?.intents)
                }
            },
        })
    })
    .await;
    let access = match got {
        Ok(Ok(a)) => a,
        Ok(Err(e)) => return fail_page(&h, ui, Fail::internal("seller_intents", &e)),
        Err(e) => return fail_page(&h, ui, Fail::internal("seller_intents", &e)),
    };
    match access {
        Access::SignIn => Redirect::to("/signin?next=/seller/intents").into_response(),
        Access::Forbidden => {
            page(&h, ui, StatusCode::FORBIDDEN, t.sellers_only_title, pages::message(t.sellers_only, true))
        }
        Access::NoProfile => page(&h, ui, StatusCode::OK, t.title, pages::message(t.no_profile, true)),
        Access::List(intents) => {
            let endpoint = format!("{}/mcp/seller", h.base.settings().public_url.base);
            page(&h, ui, StatusCode::OK, t.title, body(ui, t, &intents, &endpoint))
        }
    }
}

// ---------------------------------------------------------------------------
// rendering

fn body(ui: &Ui, t: &SellerText, intents: &[OpenIntent], endpoint: &str) -> Markup {
    let more = intents.len() > PAGE_LIMIT;
    let shown = &intents[..intents.len().min(PAGE_LIMIT)];
    html! {
        p { (t.intro) }
        p { (t.reply) }
        p { code.url { (endpoint) } }
        @if shown.is_empty() {
            p.notice { (t.none) }
        } @else {
            (pages::scroll_box("open-intents-caption", html! { table.criteria {
                caption #open-intents-caption { (t.title) " (" (shown.len()) ")" }
                thead {
                    tr {
                        th scope="col" { (t.buyer) }
                        th scope="col" { (ui.statement) }
                        th scope="col" { (ui.criteria) }
                        th scope="col" { (ui.area) }
                        th scope="col" { (ui.budget) }
                        th scope="col" { (ui.buy_by) }
                        th scope="col" { (t.handle) }
                    }
                }
                tbody {
                    @for i in shown {
                        tr {
                            th scope="row" { code { (i.pseudonym) } }
                            td { span lang=(i.language) { (i.statement) } }
                            td { (criteria_text(ui, i)) }
                            td { (pages::area_text(ui, &i.area)) }
                            td {
                                @if let Some(b) = &i.budget { (pages::budget_text(ui, b)) }
                            }
                            td {
                                @if let Some(d) = &i.buy_by { (pages::date(ui, d)) }
                            }
                            td { code.url { (i.id) } }
                        }
                    }
                }
            } }))
            @if more {
                p.hint { (t.more) }
            }
        }
        p.hint { (ui.aggregator) }
    }
}

/// `Category: Vehicles; Make: Škoda; Year: ≥ 2016` in the category's attribute order.
fn criteria_text(ui: &Ui, i: &OpenIntent) -> String {
    let order = crate::protocol::category(&i.category).map(|c| c.attributes).unwrap_or(&[]);
    let mut items: Vec<(&String, &Value)> = i.criteria.iter().filter(|(k, _)| k.as_str() != "category").collect();
    items.sort_by_key(|(k, _)| order.iter().position(|(a, _, _)| a == k).unwrap_or(usize::MAX));
    let mut out = vec![format!("{}: {}", ui.category, ui.category_name(&i.category))];
    out.extend(items.into_iter().map(|(k, v)| format!("{}: {}", ui.attribute_label(k), value_text(v))));
    out.join("; ")
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => String::new(),
        Value::Array(a) => a.iter().map(value_text).collect::<Vec<_>>().join(", "),
        Value::Object(o) => {
            let side = |k: &str| o.get(k).filter(|x| x.is_number()).map(value_text);
            match (side("min"), side("max")) {
                (Some(a), Some(b)) => format!("{a}\u{a0}– {b}"),
                (Some(a), None) => format!("≥ {a}"),
                (None, Some(b)) => format!("≤ {b}"),
                (None, None) => Value::Object(o.clone()).to_string(),
            }
        }
    }
}
