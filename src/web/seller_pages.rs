//! The sellers' list of open intents (PROTOCOL.md §1 "seller pages: open pseudonymous
//! intents"): `GET /seller/intents`.
//!
//! For signed-in, enabled sellers only ([`crate::policy::Action::SellerPages`]): without
//! a session, 303 to the sign-in page; any other role gets 403. The list is exactly what
//! the `intent_list_open_intents` tool gives the seller ([`sellers::open_intents`]), each
//! intent under the seller's own handle (never the intent id: PROTOCOL.md §2) — never
//! contact data, a hidden limit or whether one is set.

use super::i18n::{SellerText, Ui};
use super::{call, fail_page, page, page_access, pages, Shared};
use crate::policy::{Action, Denied};
use crate::sellers::{self, OpenIntent, OpenQuery};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use maud::{html, Markup};

/// Most intents the page lists.
const PAGE_LIMIT: usize = 200;

/// The route (merged into the pages' router, so it gets the page headers).
pub(super) fn routes() -> Router<Shared> {
    Router::new().route("/seller/intents", get(intents_page))
}

// ---------------------------------------------------------------------------
// the handler

enum Access {
    SignIn,
    Forbidden,
    NoProfile,
    List(Vec<OpenIntent>),
}

/// `GET /seller/intents`.
async fn intents_page(State(h): State<Shared>, headers: HeaderMap) -> Response {
    let ui = super::browser_ui(&h, &headers);
    let t = ui.sellers;
    let got = call(&h, "seller_intents", move |x| -> Result<Access, sellers::SellerError> {
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
    match got {
        Err(f) => fail_page(&h, ui, f),
        Ok(Access::SignIn) => Redirect::to("/signin?next=/seller/intents").into_response(),
        Ok(Access::Forbidden) => {
            page(&h, ui, StatusCode::FORBIDDEN, t.sellers_only_title, pages::message(t.sellers_only, true))
        }
        Ok(Access::NoProfile) => page(&h, ui, StatusCode::OK, t.title, pages::message(t.no_profile, true)),
        Ok(Access::List(intents)) => {
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
            @let columns = [t.buyer, ui.statement, ui.criteria, ui.area, ui.budget, ui.buy_by, t.handle];
            (pages::data_table("open-intents-caption", html! { (t.title) " (" (shown.len()) ")" }, columns, html! {
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
            }))
            @if more {
                p.hint { (t.more) }
            }
        }
        p.hint { (ui.aggregator) }
    }
}

/// `Category: Vehicles; Make: Škoda; Year: ≥ 2016` in the category's attribute order.
fn criteria_text(ui: &Ui, i: &OpenIntent) -> String {
    let items = pages::ordered_criteria(&i.category, &i.criteria);
    let mut out = vec![format!("{}: {}", ui.category, ui.category_name(&i.category))];
    out.extend(
        items.into_iter().map(|(k, v)| format!("{}: {}", ui.attribute_label(k), pages::criterion_value(None, v))),
    );
    out.join("; ")
}
