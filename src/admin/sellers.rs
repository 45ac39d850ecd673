//! `isto admin seller add|list|disable|enable` (see [`crate::sellers`]).
//!
//! With `isto serve` running the commands go through its admin socket (the store allows one
//! process per file); without one they open the store here. Socket ops (newline-
//! delimited JSON like the others, see [`super::socket`]):
//!
//! - `{"op":"seller_add","seller":{"name":…,"email":…,"url"?:…,"categories":[…],
//!   "regions":[…],"invite":bool}}` → `{"ok":true,"added":{"seller":SellerInfo,
//!   "adoptedAccount":bool,"adoptedCatalogueSeller":bool,"invite"?:"queued"|"throttled"|"nothing"}}`
//! - `{"op":"seller_list"}` → `{"ok":true,"sellers":[SellerInfo…]}`
//! - `{"op":"seller_disable","id":"acc_…|sel_…"}`, `{"op":"seller_enable","id":…}` →
//!   `{"ok":true,"toggled":{"seller":SellerInfo,"tokensRevoked":n}}`
//!
//! `SellerInfo` is `{"accountId","sellerId","name","email","url"?,"categories",
//! "regions","disabled","createdAt"}`. Refusals are `{"ok":false,"error":"…"}`.

use super::socket::failure;
use super::Request;
use crate::cli::out::{print_json_or, print_line};
use crate::cli::SellerCommand;
use crate::config::Settings;
use crate::sellers::{self, Added, NewSeller, SellerError, SellerInfo, Toggled};
use crate::state::AppState;
use serde_json::{json, Value};

fn run(holder: &AppState, req: &Request) -> Result<Value, SellerError> {
    Ok(match req {
        Request::SellerAdd { seller } => json!({"ok": true, "added": sellers::add(&holder.base, seller)?}),
        Request::SellerList => json!({"ok": true, "sellers": sellers::list(&holder.base)?}),
        Request::SellerDisable { id } => json!({"ok": true, "toggled": sellers::set_disabled(&holder.base, id, true)?}),
        Request::SellerEnable { id } => json!({"ok": true, "toggled": sellers::set_disabled(&holder.base, id, false)?}),
        other => return Err(SellerError::Input(format!("{} is not a seller op", other.op()))),
    })
}

/// Answers one seller request on `holder`. Internal failures are logged; over the
/// socket (`detail` false) they are answered generically.
pub(crate) fn answer(holder: &AppState, req: &Request, detail: bool) -> Value {
    let op = req.op();
    match run(holder, req) {
        Ok(v) => v,
        Err(e) if e.is_internal() => super::socket::internal_failure(op, &e, detail),
        Err(e) => failure(e.to_string()),
    }
}

/// Sends `req` to the running server, or runs it on the store opened here. Returns the
/// answer and whether it went through the socket.
fn call(settings: &Settings, req: &Request) -> anyhow::Result<(Value, bool)> {
    super::via_server_or_store(settings, req, |holder, req| answer(holder, req, true))
}

fn all_or(list: &[String], all: &str) -> String {
    if list.is_empty() {
        all.to_owned()
    } else {
        list.join(", ")
    }
}

/// The `isto admin seller list` table.
pub fn table(sellers: &[SellerInfo]) -> String {
    let head = ["ACCOUNT", "SELLER", "NAME", "E-MAIL", "CATEGORIES", "REGIONS", "STATUS"];
    let rows: Vec<[String; 7]> = sellers
        .iter()
        .map(|s| {
            [
                s.account_id.clone(),
                s.seller_id.clone(),
                s.name.clone(),
                s.email.clone(),
                all_or(&s.categories, "all"),
                all_or(&s.regions, "everywhere"),
                if s.disabled { "disabled" } else { "enabled" }.to_owned(),
            ]
        })
        .collect();
    let mut width = head.map(|h| h.chars().count());
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, (c, w)) in cells.iter().zip(width).enumerate() {
            if i + 1 == cells.len() {
                out.push_str(c);
            } else {
                out.push_str(c);
                out.push_str(&" ".repeat(w - c.chars().count() + 2));
            }
        }
        out
    };
    let mut out = line(head.to_vec());
    for r in &rows {
        out.push('\n');
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    out
}

/// Runs `isto admin seller …`, printing the result (JSON with `--json`).
///
/// # Errors
/// The server's or the store's refusal (bad input, unknown id, a taken address), the
/// store held by a server without a working admin socket, I/O errors.
pub fn seller_command(settings: &Settings, cmd: SellerCommand) -> anyhow::Result<()> {
    let base = &settings.public_url.base;
    match cmd {
        SellerCommand::Add { name, email, url, categories, regions, invite, json } => {
            let new = NewSeller { name, email, url, categories, regions, invite };
            let (answer, via_socket) = call(settings, &Request::SellerAdd { seller: new })?;
            let added: Added = super::answer_field(answer, "added")?;
            print_json_or(json, &added, || {
                let s = &added.seller;
                print_line(format_args!("registered seller {} <{}>", s.name, s.email))?;
                print_line(format_args!("  account:    {}", s.account_id))?;
                print_line(format_args!("  seller id:  {}", s.seller_id))?;
                print_line(format_args!("  categories: {}", all_or(&s.categories, "all")))?;
                print_line(format_args!("  regions:    {}", all_or(&s.regions, "everywhere")))?;
                if added.adopted_account {
                    print_line("  (took over the existing seller account of this address)")?;
                }
                if added.adopted_catalogue_seller {
                    print_line(
                        "  (the catalogue seller of this name is now this seller: its feed offers are its offers)",
                    )?;
                }
                match added.invite.as_deref() {
                    Some("queued") if via_socket => {
                        print_line(format_args!("a one-time sign-in link (valid 15 minutes) is on its way to {}", s.email))
                    }
                    Some("queued") => print_line(format_args!(
                        "a one-time sign-in link (valid 15 minutes) is queued for {}; it is sent when `isto serve` runs",
                        s.email
                    )),
                    Some("throttled") => print_line(format_args!(
                        "no sign-in link sent: this address got too many account e-mails in the last hour; the seller can \
                         ask for one at {base}/signin"
                    )),
                    Some(_) => print_line("no sign-in link sent (the account is disabled)"),
                    None => print_line(format_args!("the seller signs in at {base}/signin with a one-time e-mail link")),
                }
            })?;
        }
        SellerCommand::List { json } => {
            let (answer, _) = call(settings, &Request::SellerList)?;
            let list: Vec<SellerInfo> = super::answer_field(answer, "sellers")?;
            print_json_or(json, &list, || {
                if list.is_empty() {
                    print_line("no registered sellers; add one with `isto admin seller add --name NAME --email EMAIL`")
                } else {
                    print_line(table(&list))
                }
            })?;
        }
        SellerCommand::Disable { id, json } => toggle(settings, &id, true, json)?,
        SellerCommand::Enable { id, json } => toggle(settings, &id, false, json)?,
    }
    Ok(())
}

fn toggle(settings: &Settings, id: &str, disable: bool, json: bool) -> anyhow::Result<()> {
    let id = id.to_owned();
    let req = if disable { Request::SellerDisable { id } } else { Request::SellerEnable { id } };
    let (answer, _) = call(settings, &req)?;
    let t: Toggled = super::answer_field(answer, "toggled")?;
    print_json_or(json, &t, || {
        if disable {
            print_line(format_args!(
            "seller {} ({}) disabled: its tools and sessions stopped working, {} OAuth authorizations revoked, its \
             offers and replies no longer match",
            t.seller.name, t.seller.account_id, t.tokens_revoked
            ))
        } else {
            print_line(format_args!(
                "seller {} ({}) enabled; tokens revoked earlier stay revoked: its agent authorizes again",
                t.seller.name, t.seller.account_id
            ))
        }
    })
}
