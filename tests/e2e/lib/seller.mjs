// Helpers for the seller end-to-end tests (seller.test.mjs, mcp_v2.test.mjs,
// python_sdk.test.mjs): a buyer's consent-link intent made active the way a person does
// it (consent page + confirmation e-mail), a seller's registration (`isto admin seller
// add`) and sign-in with a one-time e-mail link, the SDK's OAuth client provider for
// /mcp/seller, and a raw MCP initialize with a bearer token.

import fs from "node:fs";
import path from "node:path";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { Browser, extractUrls, findPostForm, freePort, htmlText, httpRequest, initializeBody, mailIsFor } from "./harness.mjs";
import { actAsPerson, MemoryOAuthProvider, parseRedirect, postFormNoFollow } from "./oauth.mjs";

/** Text and HTML of a mail, for link extraction. */
const mailBody = (m) => `${m.text ?? ""}\n${m.html ?? ""}`;

/** Write `rows` as JSON Lines to dir/name; returns the path. */
export function writeJsonl(dir, name, rows) {
  const file = path.join(dir, name);
  fs.writeFileSync(file, rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
  return file;
}

/** A catalogue row of a Škoda Octavia in Brno (CZ-64) at `amount` CZK. */
export function octavia(ref, amount) {
  return {
    ref,
    title: `Škoda Octavia ${ref}`,
    description: "Škoda Octavia, testovací nabídka pro e2e test isto.",
    category: "vehicles",
    attributes: { make: "Škoda", model: "Octavia", year: 2015, mileageKm: 180000, fuel: "diesel", transmission: "manual" },
    price: { amount, currency: "CZK" },
    area: { country: "CZ", regions: ["CZ-64"], place: "Brno" },
    seller: { name: "e2e dealer", url: "https://dealer.example/" },
    url: `https://dealer.example/${ref}`,
  };
}

/**
 * `isto admin seller add --name … --email … --category … --region … --json` (through the
 * admin socket when the server runs); returns the `seller` object of its JSON output
 * ({accountId, sellerId, name, email, categories, regions, disabled}). Throws with the
 * output when the command fails.
 */
export async function addSeller(isto, { name, email, categories = ["vehicles"], regions }) {
  const args = ["admin", "seller", "add", "--name", name, "--email", email];
  for (const c of categories) args.push("--category", c);
  for (const r of regions) args.push("--region", r);
  const res = await isto.run([...args, "--json"]);
  if (res.code !== 0) throw new Error(`isto admin seller add: exit ${res.code}\n${res.stdout}\n${res.stderr}`);
  const out = JSON.parse(res.stdout);
  const seller = out.seller ?? out.added?.seller;
  if (!seller?.sellerId) throw new Error(`no seller in the output of isto admin seller add: ${res.stdout}`);
  return seller;
}

/**
 * The person's part of the consent-link flow for an intent published on /mcp: open the
 * consentUrl, enter `email` and consent, open the /confirm/ link of the confirmation
 * e-mail and press Confirm. Returns {browser, confirmMail}.
 */
export async function consentAndConfirm(smtp, consentUrl, email) {
  const browser = new Browser();
  const page = await browser.get(consentUrl);
  if (page.status !== 200) throw new Error(`GET consentUrl: HTTP ${page.status}\n${htmlText(page.body).slice(0, 500)}`);
  const form = findPostForm(page.body, page.url, { withInput: "email" });
  if (!form) throw new Error(`no consent form with an email input:\n${htmlText(page.body).slice(0, 1000)}`);
  const sent = await browser.postForm(form, page.url, { email, accept: "yes" });
  if (sent.status < 200 || sent.status >= 300) {
    throw new Error(`consent POST: HTTP ${sent.status}\n${htmlText(sent.body).slice(0, 800)}`);
  }
  const mail = await smtp.waitForMessage(
    (m) => mailIsFor(m, email) && extractUrls(mailBody(m)).some((u) => u.includes("/confirm/")),
    { timeout: 30000, what: `the confirmation e-mail to ${email}` },
  );
  const link = extractUrls(mailBody(mail)).find((u) => u.includes("/confirm/"));
  const confirmPage = await browser.get(link);
  if (confirmPage.status !== 200) throw new Error(`GET ${link}: HTTP ${confirmPage.status}`);
  const confirmForm = findPostForm(confirmPage.body, confirmPage.url, { actionPattern: "/confirm", prefer: true });
  if (!confirmForm) throw new Error(`no Confirm form on ${link}\n${htmlText(confirmPage.body).slice(0, 800)}`);
  const done = await browser.postForm(confirmForm, confirmPage.url);
  if (done.status < 200 || done.status >= 300) {
    throw new Error(`confirm POST: HTTP ${done.status}\n${htmlText(done.body).slice(0, 800)}`);
  }
  return { browser, confirmMail: mail };
}

/**
 * Signs in with a one-time e-mail link, like a seller (whose account has no password):
 * GET /signin, POST the link form (/signin/link) with `email`, read the mail with the
 * /signin/link/… URL, GET it (a page with one button) and POST the button. The
 * returned browser holds the session cookie. Returns {browser, mail, link, steps}.
 */
export async function signInWithLink(isto, smtp, email, { browser = new Browser() } = {}) {
  const steps = [];
  const before = new Set(smtp.messages().map((m) => m.key));
  const page = await browser.get(`${isto.baseUrl}/signin`);
  steps.push(`GET /signin → ${page.status}`);
  if (page.status !== 200) throw new Error(`GET /signin: HTTP ${page.status}`);
  const form = findPostForm(page.body, page.url, { actionPattern: "/signin/link$", withInput: "email" });
  if (!form) throw new Error(`no one-time link form on /signin\n${htmlText(page.body).slice(0, 800)}`);
  const asked = await postFormNoFollow(browser, form, page.url, { email });
  steps.push(`POST /signin/link → ${asked.status} ${asked.location ?? ""}`.trim());
  if (asked.status !== 303) {
    throw new Error(`POST /signin/link: HTTP ${asked.status}\n${htmlText(asked.body).slice(0, 500)}`);
  }
  const mail = await smtp.waitForMessage(
    (m) => !before.has(m.key) && mailIsFor(m, email) && extractUrls(mailBody(m)).some((u) => u.includes("/signin/link/")),
    { timeout: 30000, what: `the sign-in link e-mail to ${email}` },
  );
  const link = extractUrls(mailBody(mail)).find((u) => u.includes("/signin/link/"));
  if (!link.startsWith(`${isto.baseUrl}/`)) throw new Error(`sign-in link ${link} is not on ${isto.baseUrl}`);
  const linkPage = await browser.get(link, { maxRedirects: 0 });
  steps.push(`GET /signin/link/… → ${linkPage.status}`);
  if (linkPage.status !== 200) throw new Error(`GET ${link}: HTTP ${linkPage.status}\n${htmlText(linkPage.body).slice(0, 500)}`);
  if (browser.cookies.get("isto_session")) throw new Error("GET of the sign-in link started a session");
  const button = findPostForm(linkPage.body, linkPage.url, { actionPattern: "/signin/link/" });
  if (!button) throw new Error(`no sign-in button on ${link}\n${htmlText(linkPage.body).slice(0, 500)}`);
  const signed = await postFormNoFollow(browser, button, linkPage.url);
  steps.push(`POST /signin/link/… → ${signed.status} ${signed.location ?? ""}`.trim());
  if (signed.status !== 303) throw new Error(`POST ${link}: HTTP ${signed.status}\n${htmlText(signed.body).slice(0, 500)}`);
  if (!browser.cookies.get("isto_session")) throw new Error("the one-time link did not start a session (no isto_session cookie)");
  return { browser, mail, link, steps };
}

/**
 * The SDK's OAuth flow for an MCP endpoint `url` on behalf of the person signed in in
 * `browser` (who presses Allow): connect without a token (401 → DCR → authorization →
 * the person's part, whose redirect back is read, not followed), then
 * transport.finishAuth(code), then a new connection with the token.
 * Returns {client, provider, tokens, person, redirect, authorizationUrl}.
 */
export async function sdkAuthorize(url, browser, { clientName = "isto e2e seller agent" } = {}) {
  const seen = { person: null, redirect: null, code: null };
  const provider = new MemoryOAuthProvider({
    redirectUrl: `http://127.0.0.1:${await freePort()}/callback`,
    clientMetadata: {
      client_name: clientName,
      redirect_uris: [],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    },
    onRedirect: async (authUrl) => {
      const outcome = await actAsPerson(browser, authUrl.href, {});
      seen.person = outcome;
      if (outcome.kind === "redirect") {
        seen.redirect = parseRedirect(outcome.location);
        seen.code = seen.redirect.get("code");
      }
    },
  });
  provider.clientMetadata.redirect_uris.push(String(provider.redirectUrl));

  const first = new Client({ name: clientName, version: "0.0.0" });
  let connected = false;
  try {
    await first.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }));
    connected = true;
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  } finally {
    await first.close().catch(() => {});
  }
  if (connected) throw new Error(`${url} accepted an MCP connection without a token`);
  const authorizationUrl = provider.authorizationUrls.at(-1);
  if (!authorizationUrl) throw new Error("the SDK did not start authorization (redirectToAuthorization not called)");
  if (!seen.person) throw new Error("the person's part did not run");
  if (seen.person.kind !== "redirect") {
    throw new Error(
      `the authorization did not redirect back: HTTP ${seen.person.status}: ${seen.person.text?.slice(0, 400)} (${seen.person.steps.join("; ")})`,
    );
  }
  if (seen.redirect.get("error")) {
    throw new Error(`authorization answered ${seen.redirect.get("error")}: ${seen.redirect.get("error_description")}`);
  }
  if (!seen.code) throw new Error(`no code in ${seen.person.location}`);

  await new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }).finishAuth(seen.code);
  const tokens = provider.tokens();
  if (!tokens?.access_token) throw new Error("no access token saved by the SDK");

  const client = new Client({ name: clientName, version: "0.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }));
  return { client, provider, tokens, person: seen.person, redirect: seen.redirect, authorizationUrl };
}

/** POST an MCP initialize to `url` with an optional bearer token (raw, no SDK). */
export function initializeWith(url, token) {
  const u = new URL(url);
  return httpRequest(url, {
    method: "POST",
    headers: {
      Host: u.host,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      ...(token ? { Authorization: `Bearer ${token}` } : {}),
    },
    body: initializeBody(),
  });
}

/** The auth-params of a `WWW-Authenticate: Bearer …` header as an object (null if not Bearer). */
export function bearerParams(header) {
  const out = {};
  const h = String(header ?? "");
  if (!/^Bearer\b/i.test(h)) return null;
  for (const m of h.matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/gi)) out[m[1].toLowerCase()] = m[2].replace(/\\(.)/g, "$1");
  return out;
}
