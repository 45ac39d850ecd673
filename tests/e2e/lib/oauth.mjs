// OAuth helpers for the end-to-end tests of isto's authorization server: the person's
// part (sign-up with the confirmation e-mail, sign-in, the Allow/Deny page) done with
// plain HTTP form posts, the machine endpoints (registration, token, revocation), PKCE,
// and an OAuthClientProvider for the MCP TypeScript SDK whose redirectToAuthorization
// hands the URL to that person.
//
// Redirects back to the client are never followed: the person's part ends at the 303
// from POST /oauth/authorize, and its Location (the client's redirect URI with
// code/state/iss or error) is what the caller gets.

import { createHash, randomBytes } from "node:crypto";

import { Browser, extractUrls, findPostForm, freePort, htmlText, mailIsFor, randomToken } from "./harness.mjs";

// ---------------------------------------------------------------------------
// PKCE and small HTTP helpers

/** A PKCE pair: {verifier, challenge} (S256). */
export function pkcePair() {
  const verifier = randomBytes(32).toString("base64url");
  const challenge = createHash("sha256").update(verifier).digest("base64url");
  return { verifier, challenge };
}

/** A random OAuth state value. */
export function newState() {
  return randomBytes(16).toString("base64url");
}

/** Response body as JSON, or {raw: text} when it is not JSON. */
async function bodyOf(res) {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    return { raw: text };
  }
}

/**
 * POST /oauth/register (RFC 7591) with `metadata` as JSON.
 * @returns {Promise<{status, body, headers}>}
 */
export async function registerClient(baseUrl, metadata) {
  const res = await fetch(`${baseUrl}/oauth/register`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify(metadata),
  });
  return { status: res.status, headers: res.headers, body: await bodyOf(res) };
}

/**
 * POST a form to /oauth/token (or `path`): `params` as application/x-www-form-urlencoded.
 * @returns {Promise<{status, body, headers}>}
 */
export async function tokenRequest(baseUrl, params, { path = "/oauth/token", headers = {} } = {}) {
  const res = await fetch(`${baseUrl}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json", ...headers },
    body: new URLSearchParams(params).toString(),
  });
  return { status: res.status, headers: res.headers, body: await bodyOf(res) };
}

/** `${baseUrl}/oauth/authorize?…` from a plain object (undefined values left out). */
export function authorizeUrl(baseUrl, params) {
  const u = new URL(`${baseUrl}/oauth/authorize`);
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null) u.searchParams.set(k, v);
  return u.href;
}

/**
 * A redirect back to the client: {url, params (URLSearchParams), get(name) → the first
 * value or null, all(name) → every value (to see repeated parameters)}.
 */
export function parseRedirect(location) {
  const url = new URL(location);
  const params = url.searchParams;
  return {
    url,
    params,
    get: (name) => params.get(name),
    all: (name) => params.getAll(name),
  };
}

// ---------------------------------------------------------------------------
// accounts: sign-up (double opt-in) and sign-in

/**
 * Creates a buyer account the way a person does: GET /signup, POST the form (e-mail,
 * password, consent box ticked), open the confirmation e-mail from the SMTP sink, GET
 * its link and POST the Confirm button. The returned browser is signed in (the
 * confirmation starts a session).
 * @returns {Promise<{email, password, browser}>}
 */
export async function signUpBuyer(isto, smtp, { email, password } = {}) {
  email ??= `buyer-${randomToken(8)}@example.test`;
  password ??= `pw-${randomToken(16)}`;
  const browser = new Browser();
  const page = await browser.get(`${isto.baseUrl}/signup`);
  if (page.status !== 200) throw new Error(`GET /signup: HTTP ${page.status}\n${htmlText(page.body).slice(0, 500)}`);
  const sent = await browser.submitForm(page.url, page.body, { email, password, accept: "yes" }, { actionPattern: "/signup$" });
  if (sent.status !== 200 || !/\/signup\/sent$/.test(sent.url)) {
    throw new Error(`POST /signup: HTTP ${sent.status} at ${sent.url}\n${htmlText(sent.body).slice(0, 500)}`);
  }
  const mail = await smtp.waitForMessage(
    (m) => mailIsFor(m, email) && extractUrls(`${m.text ?? ""}\n${m.html ?? ""}`).some((u) => u.includes("/signup/confirm/")),
    { timeout: 30000, what: `the sign-up confirmation e-mail to ${email}` },
  );
  const link = extractUrls(`${mail.text ?? ""}\n${mail.html ?? ""}`).find((u) => u.includes("/signup/confirm/"));
  const confirmPage = await browser.get(link);
  if (confirmPage.status !== 200) {
    throw new Error(`GET ${link}: HTTP ${confirmPage.status}\n${htmlText(confirmPage.body).slice(0, 500)}`);
  }
  // Not followed: the confirmation 303s to the `next` page (default /me), which is not
  // what this helper checks.
  const form = findPostForm(confirmPage.body, confirmPage.url, { actionPattern: "/signup/confirm/" });
  if (!form) throw new Error(`no confirmation form on ${link}\n${htmlText(confirmPage.body).slice(0, 500)}`);
  const confirmed = await postFormNoFollow(browser, form, confirmPage.url);
  if (confirmed.status !== 303) {
    throw new Error(`POST confirmation: HTTP ${confirmed.status}\n${htmlText(confirmed.body).slice(0, 500)}`);
  }
  if (!browser.cookies.get("isto_session")) throw new Error("the sign-up confirmation did not start a session (no isto_session cookie)");
  return { email, password, browser };
}

/**
 * Signs in on the sign-in page `signinUrl` (e.g. the /signin?next=… the authorization
 * endpoint redirected to) with e-mail and password. Follows nothing: returns the
 * response to POST /signin ({status, location, body}).
 */
export async function signInWithPassword(browser, signinUrl, { email, password }) {
  const page = await browser.get(signinUrl, { maxRedirects: 0 });
  if (page.status !== 200) throw new Error(`GET ${signinUrl}: HTTP ${page.status}`);
  const form = findPostForm(page.body, page.url, { actionPattern: "/signin$", withInput: "password" });
  if (!form) throw new Error(`no password form on ${signinUrl}\n${htmlText(page.body).slice(0, 800)}`);
  const res = await postFormNoFollow(browser, form, page.url, { email, password });
  return res;
}

/** POST a parsed form (hidden fields + `fields`) without following the redirect. */
export async function postFormNoFollow(browser, form, pageUrl, fields = {}) {
  const params = new URLSearchParams();
  const overridden = new Set(Object.keys(fields));
  for (const [k, v] of form.hidden) if (!overridden.has(k)) params.append(k, v);
  for (const [k, v] of Object.entries(fields)) params.append(k, String(v));
  const res = await browser.request(form.action, {
    method: "POST",
    headers: {
      "Content-Type": "application/x-www-form-urlencoded",
      Origin: new URL(pageUrl).origin,
      Referer: pageUrl,
    },
    body: params.toString(),
    maxRedirects: 0,
  });
  return { ...res, location: res.headers.get("location") };
}

// ---------------------------------------------------------------------------
// the person at the authorization endpoint

/**
 * Does the person's part of an authorization request: GET `url` in `browser`; if the
 * holder sends the person to /signin, signs in with `credentials` (once) and comes back;
 * on the consent page POSTs the form with decision=`decision` ("allow" | "deny").
 *
 * Returns how it ended, without following the final redirect:
 *   {kind: "redirect", location, status, steps}  — a 3xx to somewhere off /signin and
 *                                                  off the authorization page (the client)
 *   {kind: "page", status, body, text, url, steps} — an HTML page that is not the consent
 *                                                  form (a refusal page, a wrong-role page)
 * `steps` lists what happened, for assertion messages.
 */
export async function actAsPerson(browser, url, { credentials, decision = "allow" } = {}) {
  const steps = [];
  let current = url;
  let signedIn = false;
  for (let hop = 0; hop < 8; hop++) {
    const res = await browser.get(current, { maxRedirects: 0 });
    steps.push(`GET ${pathOf(current)} → ${res.status}`);
    const loc = res.headers.get("location");
    if (res.status >= 300 && res.status < 400 && loc) {
      const next = new URL(loc, current);
      if (next.pathname === "/signin" && next.origin === new URL(current).origin) {
        if (!credentials) throw new Error(`sign-in required but no credentials given (${steps.join("; ")})`);
        if (signedIn) throw new Error(`sent to /signin again after signing in (${steps.join("; ")})`);
        const signin = await signInWithPassword(browser, next.href, credentials);
        steps.push(`POST /signin → ${signin.status}${signin.location ? ` ${pathOf(signin.location)}` : ""}`);
        if (signin.status !== 303 || !signin.location) {
          throw new Error(`sign-in failed: HTTP ${signin.status}: ${htmlText(signin.body).slice(0, 400)} (${steps.join("; ")})`);
        }
        signedIn = true;
        current = new URL(signin.location, next).href;
        continue;
      }
      return { kind: "redirect", status: res.status, location: next.href, steps };
    }
    const form =
      res.status === 200
        ? findPostForm(res.body, res.url, { actionPattern: "/oauth/authorize$", withInput: "csrf" })
        : null;
    if (!form) {
      return { kind: "page", status: res.status, body: res.body, text: htmlText(res.body), url: res.url, steps };
    }
    const answer = await postFormNoFollow(browser, form, res.url, { decision });
    steps.push(`POST /oauth/authorize decision=${decision} → ${answer.status}`);
    if (answer.status >= 300 && answer.status < 400 && answer.location) {
      return { kind: "redirect", status: answer.status, location: new URL(answer.location, res.url).href, steps };
    }
    return { kind: "page", status: answer.status, body: answer.body, text: htmlText(answer.body), url: res.url, steps };
  }
  throw new Error(`too many redirects (${steps.join("; ")})`);
}

function pathOf(u) {
  try {
    const x = new URL(u);
    return x.pathname;
  } catch {
    return String(u).split("?")[0];
  }
}

/**
 * A whole authorization code grant with raw HTTP: authorize (person signs in if needed
 * and allows) and exchange the code. `client` is a registration response.
 * @returns {Promise<{redirect, code, verifier, token: {status, body}}>}
 */
export async function codeGrant(isto, browser, credentials, client, { redirectUri, resource, scope, exchange = true } = {}) {
  const { verifier, challenge } = pkcePair();
  const state = newState();
  redirectUri ??= client.redirect_uris[0];
  const url = authorizeUrl(isto.baseUrl, {
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: redirectUri,
    state,
    code_challenge: challenge,
    code_challenge_method: "S256",
    scope,
    resource,
  });
  const outcome = await actAsPerson(browser, url, { credentials });
  if (outcome.kind !== "redirect") {
    throw new Error(`authorization did not redirect back: HTTP ${outcome.status}: ${outcome.text?.slice(0, 400)} (${outcome.steps.join("; ")})`);
  }
  const redirect = parseRedirect(outcome.location);
  if (redirect.get("error")) {
    throw new Error(`authorization answered ${redirect.get("error")}: ${redirect.get("error_description")}`);
  }
  if (redirect.get("state") !== state) throw new Error(`state mismatch: sent ${state}, got ${redirect.get("state")}`);
  const code = redirect.get("code");
  if (!exchange) return { redirect, code, verifier, state, redirectUri };
  const token = await tokenRequest(isto.baseUrl, {
    grant_type: "authorization_code",
    code,
    redirect_uri: redirectUri,
    code_verifier: verifier,
    client_id: client.client_id,
    ...(resource ? { resource } : {}),
  });
  return { redirect, code, verifier, state, redirectUri, token };
}

/**
 * A buyer with a token for `resource` (default `<public>/mcp/buyer`, scope `intents`),
 * made with raw HTTP: sign-up (`signUpBuyer`), a public client registered on a
 * 127.0.0.1 callback, and `codeGrant` (the person allows). Throws unless the token
 * endpoint answers 200.
 * @returns {Promise<{person, client, tokens}>} the signed-in person, the registration
 *   response and the token response.
 */
export async function buyerWithToken(isto, smtp, { resource = `${isto.baseUrl}/mcp/buyer`, scope = "intents" } = {}) {
  const person = await signUpBuyer(isto, smtp);
  const reg = await registerClient(isto.baseUrl, {
    client_name: "isto e2e buyer agent",
    redirect_uris: [`http://127.0.0.1:${await freePort()}/callback`],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
  });
  if (reg.status !== 201) throw new Error(`registration: HTTP ${reg.status} ${JSON.stringify(reg.body)}`);
  const grant = await codeGrant(isto, person.browser, person, reg.body, { resource, scope });
  if (grant.token.status !== 200) throw new Error(`token: HTTP ${grant.token.status} ${JSON.stringify(grant.token.body)}`);
  return { person, client: reg.body, tokens: grant.token.body };
}

// ---------------------------------------------------------------------------
// MCP SDK OAuthClientProvider

/**
 * An in-memory OAuthClientProvider (see @modelcontextprotocol/sdk client/auth.js).
 * `onRedirect(url)` is awaited by redirectToAuthorization: it plays the person and
 * should resolve once the authorization code is known (see `code` / `lastRedirect`).
 */
export class MemoryOAuthProvider {
  constructor({ redirectUrl, clientMetadata, onRedirect }) {
    this._redirectUrl = redirectUrl;
    this._clientMetadata = clientMetadata;
    this._onRedirect = onRedirect;
    this._client = undefined;
    this._tokens = undefined;
    this._verifier = undefined;
    this._state = undefined;
    this.authorizationUrls = [];
    this.savedTokens = [];
    this.registrations = 0;
    this.invalidated = [];
  }

  get redirectUrl() {
    return this._redirectUrl;
  }

  get clientMetadata() {
    return this._clientMetadata;
  }

  state() {
    this._state = newState();
    return this._state;
  }

  /** The state sent with the last authorization request. */
  get lastState() {
    return this._state;
  }

  clientInformation() {
    return this._client;
  }

  saveClientInformation(info) {
    this.registrations += 1;
    this._client = info;
  }

  tokens() {
    return this._tokens;
  }

  saveTokens(tokens) {
    this.savedTokens.push(tokens);
    this._tokens = tokens;
  }

  async redirectToAuthorization(url) {
    this.authorizationUrls.push(new URL(url));
    if (this._onRedirect) await this._onRedirect(new URL(url));
  }

  saveCodeVerifier(v) {
    this._verifier = v;
  }

  codeVerifier() {
    if (!this._verifier) throw new Error("no code verifier saved");
    return this._verifier;
  }

  invalidateCredentials(scope) {
    this.invalidated.push(scope);
    if (scope === "all" || scope === "client") this._client = undefined;
    if (scope === "all" || scope === "tokens") this._tokens = undefined;
    if (scope === "all" || scope === "verifier") this._verifier = undefined;
  }
}
