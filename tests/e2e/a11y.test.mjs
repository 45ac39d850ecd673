// Issue 13 point 5: the accessibility of every page, in Debian Chromium (playwright-core).
//
// For each page language (sk, cs, en) the test walks every page the holder has, the way
// people reach them: the home page and the 404 page; an intent published over /mcp in
// that language through its consent page (with the error states: a missing checkbox, a
// forged CSRF token, the per-address consent quota's 429, "already taken", "closed"),
// the confirmation page, the results, withdraw and unsubscribe pages and their done
// pages; sign-up (its sent and confirmation pages), sign-in (password, one-time link,
// its sent and link pages), /me, /me/intents/{id} and /renew/{token} of an intent the
// buyer published over /mcp/buyer, the password and mail pages, the OAuth consent page
// and its 400 error page, and the sellers' /seller/intents and /seller/demand pages.
//
// On every page: axe-core (run in the page; the tags below) must find no violation
// with impact `serious` or `critical`, in the light and the dark colour scheme; in a
// 360×740 viewport the document must not scroll sideways; a phone and a desktop
// screenshot are kept (the directory is printed as a diagnostic). The main forms
// (consent, confirm, withdraw, sign-in) are reached and submitted with the keyboard
// only (Tab, Space, Enter, typing), every focused control showing a focus indicator;
// the first Tab reaches the skip link, which then becomes visible.
//
// axe runs through playwright's page.evaluate (the DevTools protocol), which the pages'
// CSP (`default-src 'none'`) does not govern: no CSP bypass is needed.
//
// Needs: /usr/bin/chromium (CHROMIUM_BIN overrides), playwright-core and axe-core
// (devDependencies), the isto binary, python3 with aiosmtpd. Skipped with a message when
// Chromium, playwright-core or axe-core is absent.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import test from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { connectMcp, extractUrls, mailIsFor, randomToken, tmpDir, withIsto } from "./lib/harness.mjs";
import { codeGrant, registerClient, signUpBuyer, authorizeUrl, pkcePair, newState } from "./lib/oauth.mjs";
import { writeJsonl } from "./lib/seller.mjs";
import { launchBrowser, loadChromium, readAxe } from "./lib/browser.mjs";
import { stepper } from "./lib/steps.mjs";


/** The axe rule sets run (WCAG 2.0/2.1 A and AA, and axe's best practices). */
const AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"];
/** Impacts that fail the test. */
const FAILING = new Set(["serious", "critical"]);
const PHONE = { width: 360, height: 740 };
const DESKTOP = { width: 1280, height: 900 };
// ISTO_A11Y_LANGS=sk,en checks fewer languages (while fixing a page).
const LANGS = (process.env.ISTO_A11Y_LANGS ?? "sk,cs,en").split(",");

/** One statement per page language (the intent's language is detected from it). */
const STATEMENTS = {
  sk: "Hľadám ojazdenú Škodu Octavia, najlepšie naftovú, do 20 000 eur",
  cs: "Hledám ojetou Škodu Octavia, nejlépe diesel, do 20 000 eur",
  en: "Looking for a used Skoda Octavia with a diesel engine, up to 20 000 EUR",
};

const { chromium, skip, axeSource } = await loadChromium({
  more: async () => ({ axeSource: readAxe() }),
  missing: "playwright-core or axe-core is not installed",
});

/** A config with a per-address consent quota of one, so the 429 page can be shown. */
function writeConfig(work) {
  const file = path.join(work, "isto.toml");
  fs.writeFileSync(file, ["[quotas]", "consents_per_address_per_hour = 1", ""].join("\n"));
  return file;
}

/** Offers that fit the intents (so the results pages list deliveries). */
function catalogue() {
  const row = (ref, title, amount, place) => ({
    ref,
    title,
    description: `${title}. Test offer of the a11y e2e test.`,
    category: "vehicles",
    attributes: { make: "Škoda", model: "Octavia", year: 2018, mileageKm: 120000, fuel: "diesel" },
    price: { amount, currency: "EUR" },
    area: { country: "SK", regions: ["SK-BL"], place },
    seller: { name: "a11y catalogue dealer", url: "https://dealer.example/" },
    url: `https://dealer.example/${ref}`,
  });
  return [
    row("a11y-octavia-1", "Škoda Octavia 2.0 TDI Combi", 14500, "Bratislava"),
    row("a11y-octavia-2", "Škoda Octavia 1.6 TDI Style", 12900, "Pezinok"),
  ];
}

const mailText = (m) => `${m.text ?? ""}\n${m.html ?? ""}`;

test("accessibility of every page in sk, cs and en: axe-core, phone width, keyboard", { skip, timeout: 15 * 60 * 1000 }, (t) => withIsto(t, { prefix: "isto-a11y-", start: false }, async (env) => {
  const step = stepper(t);
  const shots = tmpDir("isto-a11y-screenshots-");
  const { smtp } = env;
  const config = writeConfig(env.work);
  let isto = null;
  let browser = null;
  const clients = [];
  env.defer(() => t.diagnostic(`screenshots in ${shots}`));
  env.defer(() => Promise.all(clients.map((c) => c.close())));
  env.defer(() => browser?.close());

  /** Every serious/critical violation, every sideways scroll, every missing focus ring. */
  const problems = [];
  /** Moderate and minor violations (reported, not failing). */
  const notes = new Map();
  /** Pages checked, per language. */
  const audited = new Map(LANGS.map((l) => [l, []]));
  const csp = [];

  const callOk = async (client, name, args) => {
    const res = await client.callTool({ name, arguments: args });
    assert.ok(!res.isError, `${name} failed: ${JSON.stringify(res)}`);
    return res.structuredContent;
  };

  /** A fresh browser context in `lang` (Accept-Language), watching CSP reports. */
  const newPage = async (lang) => {
    const context = await browser.newContext({ viewport: DESKTOP, locale: lang });
    const page = await context.newPage();
    page.on("console", (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) csp.push(`${page.url()}: ${m.text()}`);
    });
    return page;
  };

  /** axe in the page: violations of AXE_TAGS, with their nodes. */
  const runAxe = async (page) => {
    if (!(await page.evaluate(() => typeof window.axe === "object"))) await page.evaluate(axeSource);
    return page.evaluate(
      (tags) =>
        window.axe
          .run(document, { runOnly: { type: "tag", values: tags }, resultTypes: ["violations"] })
          .then((r) => r.violations.map((v) => ({
            id: v.id,
            impact: v.impact,
            help: v.help,
            nodes: v.nodes.map((n) => ({ target: n.target.join(" "), summary: n.failureSummary })),
          }))),
      AXE_TAGS,
    );
  };

  /**
   * Checks the page now shown as `name` in `lang`: axe (light at phone width, dark at
   * desktop width), the phone width without sideways scroll, `<html lang>`, screenshots.
   */
  const audit = async (page, lang, name) => {
    const where = `${lang} ${name} (${new URL(page.url()).pathname.replace(/\/[A-Za-z0-9_-]{20,}/g, "/…")})`;
    const record = (scheme, violations) => {
      for (const v of violations) {
        const line = `${where} [${scheme}] ${v.id} (${v.impact}): ${v.help}\n` +
          v.nodes.slice(0, 5).map((n) => `      at ${n.target}: ${n.summary.split("\n").slice(1).join(" ").trim()}`).join("\n");
        if (FAILING.has(v.impact)) problems.push(line);
        else notes.set(`${v.id} ${where}`, line);
      }
    };
    const htmlLang = await page.locator("html").getAttribute("lang");
    if (htmlLang !== lang) problems.push(`${where}: <html lang="${htmlLang}">, expected "${lang}"`);
    await page.emulateMedia({ colorScheme: "light" });
    await page.setViewportSize(PHONE);
    record("light, phone", await runAxe(page));
    const widths = await page.evaluate(() => ({
      scroll: document.documentElement.scrollWidth,
      inner: window.innerWidth,
      wide: [...document.querySelectorAll("body *")]
        .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5)
        .slice(0, 5)
        .map((e) => `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ""}${e.className && typeof e.className === "string" ? `.${e.className.split(" ").join(".")}` : ""}`),
    }));
    if (widths.scroll > widths.inner) {
      problems.push(`${where}: scrolls sideways at ${PHONE.width}px (scrollWidth ${widths.scroll} > innerWidth ${widths.inner}; too wide: ${widths.wide.join(", ")})`);
    }
    const file = `${lang}-${name.replace(/[^a-z0-9]+/gi, "-")}`;
    await page.screenshot({ path: path.join(shots, `${file}-phone.png`), fullPage: true });
    await page.setViewportSize(DESKTOP);
    await page.emulateMedia({ colorScheme: "dark" });
    record("dark, desktop", await runAxe(page));
    await page.screenshot({ path: path.join(shots, `${file}-desktop-dark.png`), fullPage: true });
    await page.emulateMedia({ colorScheme: "light" });
    audited.get(lang).push(name);
  };

  /** Go to `url` (expecting `status`) and audit it. */
  const visit = async (page, lang, name, url, status = 200) => {
    const res = await page.goto(url);
    assert.equal(res.status(), status, `${lang} ${name}: GET ${new URL(url).pathname} → ${res.status()}`);
    await audit(page, lang, name);
  };

  /** The focused element's description and whether a focus indicator is drawn. */
  const focused = (page) =>
    page.evaluate(() => {
      const e = document.activeElement;
      if (!e || e === document.body) return null;
      const s = getComputedStyle(e);
      const ring = (s.outlineStyle !== "none" && parseFloat(s.outlineWidth) > 0) || (s.boxShadow && s.boxShadow !== "none");
      const r = e.getBoundingClientRect();
      return {
        tag: e.tagName.toLowerCase(),
        id: e.id,
        cls: typeof e.className === "string" ? e.className : "",
        type: e.getAttribute("type") ?? "",
        text: (e.innerText || e.value || "").trim().slice(0, 40),
        visible: e.matches(":focus-visible") && ring && r.width > 0 && r.height > 0,
      };
    });

  /**
   * Presses Tab until the focused element matches `want` (a predicate over `focused`),
   * at most `max` times; every element passed on the way must show its focus.
   */
  const tabTo = async (page, lang, what, want, max = 40) => {
    const passed = [];
    for (let i = 0; i < max; i++) {
      await page.keyboard.press("Tab");
      const f = await focused(page);
      if (!f) continue;
      passed.push(`${f.tag}${f.id ? `#${f.id}` : ""}${f.cls ? `.${f.cls}` : ""}`);
      if (!f.visible) problems.push(`${lang} ${what}: ${passed.at(-1)} "${f.text}" has no visible focus indicator`);
      if (want(f)) return f;
    }
    throw new Error(`${lang} ${what}: not reached with ${max} Tabs (passed: ${passed.join(" → ")})`);
  };

  /** The first Tab from the top lands on the skip link, which is then on screen. */
  const skipLinkFirst = async (page, lang, what) => {
    await page.locator("body").focus();
    await page.evaluate(() => document.activeElement?.blur());
    await page.keyboard.press("Tab");
    const f = await focused(page);
    assert.ok(f && f.cls.split(" ").includes("skip"), `${lang} ${what}: the first Tab focuses ${JSON.stringify(f)}, not the skip link`);
    const box = await page.locator("a.skip").boundingBox();
    assert.ok(box && box.x >= 0 && box.y >= 0 && box.width > 0, `${lang} ${what}: the focused skip link is off screen (${JSON.stringify(box)})`);
  };

  const submitButton = (f) => f.tag === "button" && f.type === "submit";

  await step("isto serve (consent quota 1 per address), offers imported, Chromium", async () => {
    isto = await env.start({ env: { ISTO_CONFIG: config } });
    const res = await isto.importOffers(writeJsonl(env.work, "catalogue.jsonl", catalogue()), { env: { ISTO_CONFIG: config } });
    assert.equal(res.code, 0, `import: exit ${res.code}\n${res.stdout}\n${res.stderr}`);
    browser = await launchBrowser(chromium);
  });

  const base = () => isto.baseUrl;
  const buyerUrl = () => `${isto.baseUrl}/mcp/buyer`;
  let mcp = null;
  let rawClient = null;

  await step("an MCP client on /mcp, an OAuth client registered", async () => {
    mcp = await connectMcp(isto.mcpUrl);
    clients.push(mcp);
    const reg = await registerClient(base(), {
      client_name: "isto a11y client",
      redirect_uris: ["http://127.0.0.1/callback"],
      token_endpoint_auth_method: "none",
    });
    assert.equal(reg.status, 201, JSON.stringify(reg.body));
    rawClient = reg.body;
  });

  const publish = (lang) => mcp.callTool("intent_publish_intent", intentArgs(lang));
  const intentArgs = (lang) => ({
    statement: STATEMENTS[lang],
    criteria: { category: "vehicles", make: "Škoda", model: "Octavia" },
    area: "SK-BL",
    budget: { max: 20000, currency: "EUR" },
    hiddenLimit: 16000,
  });

  for (const lang of LANGS) {
    const s = { email: `a11y-${lang}-${randomToken(6)}@buyer.example` };

    await step(`${lang}: home page and 404 page`, async () => {
      s.page = await newPage(lang);
      await visit(s.page, lang, "home", `${base()}/?lang=${lang}`);
      await skipLinkFirst(s.page, lang, "home");
      if (lang === LANGS[0]) {
        // The check itself can fail: an input without a label and grey-on-white text
        // put into the page are found, with a failing impact.
        await s.page.evaluate(() => {
          const m = document.querySelector("main");
          m.insertAdjacentHTML("beforeend", '<input type="text" name="canary">');
          const p = document.createElement("p");
          p.textContent = "low contrast canary";
          // CSSOM, not a style attribute (the CSP refuses inline styles).
          Object.assign(p.style, { color: "#bbbbbb", background: "#ffffff" });
          m.append(p);
        });
        const found = await runAxe(s.page);
        const failing = found.filter((v) => FAILING.has(v.impact)).map((v) => v.id);
        assert.ok(failing.includes("label"), `axe missed the unlabelled input: ${JSON.stringify(found)}`);
        assert.ok(failing.includes("color-contrast"), `axe missed the low contrast: ${JSON.stringify(found)}`);
      }
      await visit(s.page, lang, "404", `${base()}/no/such/page?lang=${lang}`, 404);
    });

    await step(`${lang}: the consent page and its error states (checkbox, CSRF)`, async () => {
      const res = await publish(lang);
      assert.ok(!res.isError, JSON.stringify(res));
      assert.equal(res.structuredContent.intent.language, lang, "the statement's language");
      s.consentUrl = res.structuredContent.consentUrl;
      const { page } = s;
      await visit(page, lang, "consent", s.consentUrl);
      // The checkbox error: the browser's `required` taken away, the server answers.
      await page.evaluate(() => document.getElementById("accept").removeAttribute("required"));
      await page.locator("#email").fill(s.email);
      const [bad] = await Promise.all([page.waitForResponse((r) => r.request().method() === "POST"), page.locator("form.card button[type=submit]").click()]);
      assert.equal(bad.status(), 400);
      await page.waitForLoadState();
      await audit(page, lang, "consent-error");
      // A forged CSRF token: the 403 page.
      await page.evaluate(() => { document.querySelector('input[name="csrf"]').value = "forged"; });
      await page.locator("#email").fill(s.email);
      await page.locator("#accept").check();
      const [forbidden] = await Promise.all([page.waitForResponse((r) => r.request().method() === "POST"), page.locator("form.card button[type=submit]").click()]);
      assert.equal(forbidden.status(), 403);
      await page.waitForLoadState();
      await audit(page, lang, "csrf-403");
    });

    await step(`${lang}: the consent form with the keyboard only → "check your e-mail"`, async () => {
      const { page } = s;
      await page.goto(s.consentUrl);
      await skipLinkFirst(page, lang, "consent");
      await tabTo(page, lang, "consent e-mail field", (f) => f.id === "email");
      await page.keyboard.type(s.email);
      await tabTo(page, lang, "consent checkbox", (f) => f.id === "accept");
      await page.keyboard.press("Space");
      assert.equal(await page.locator("#accept").isChecked(), true, "Space ticks the checkbox");
      await tabTo(page, lang, "consent button", submitButton);
      await Promise.all([page.waitForURL(/\/consent\/[^/]+\/sent$/), page.keyboard.press("Enter")]);
      await audit(page, lang, "consent-sent");
      // The same link again, now taken: 409.
      await visit(page, lang, "consent-taken", s.consentUrl, 409);
    });

    await step(`${lang}: a second consent to the same address → the 429 quota page`, async () => {
      const res = await publish(lang);
      const { page } = s;
      await page.goto(res.structuredContent.consentUrl);
      await page.locator("#email").fill(s.email);
      await page.locator("#accept").check();
      const [r] = await Promise.all([page.waitForResponse((x) => x.request().method() === "POST"), page.locator("form.card button[type=submit]").click()]);
      assert.equal(r.status(), 429);
      await page.waitForLoadState();
      await audit(page, lang, "consent-429");
    });

    await step(`${lang}: the confirmation page with the keyboard only → active`, async () => {
      const msg = await smtp.waitForMessage((m) => mailIsFor(m, s.email) && mailText(m).includes("/confirm/"), { timeout: 30000, what: `confirmation e-mail to ${s.email}` });
      const urls = extractUrls(mailText(msg));
      s.confirmUrl = urls.find((u) => u.includes("/confirm/"));
      s.withdrawUrl = urls.find((u) => u.includes("/withdraw/"));
      assert.ok(s.confirmUrl && s.withdrawUrl, `links missing in:\n${mailText(msg)}`);
      // The unsubscribe link (List-Unsubscribe header) carries the same manage token.
      s.unsubscribeUrl = s.withdrawUrl.replace("/withdraw/", "/unsubscribe/");
      const { page } = s;
      await visit(page, lang, "confirm", s.confirmUrl);
      await page.evaluate(() => document.activeElement?.blur());
      await tabTo(page, lang, "confirm button", submitButton);
      await Promise.all([page.waitForURL(/\/confirm\/[^/]+\/done$/), page.keyboard.press("Space")]);
      await audit(page, lang, "confirm-done");
    });

    await step(`${lang}: results, unsubscribe and withdraw pages; withdraw with the keyboard only`, async () => {
      const { page } = s;
      const token = new URL(s.withdrawUrl).pathname.split("/").pop();
      await visit(page, lang, "results", `${base()}/results/${token}`);
      await visit(page, lang, "unsubscribe", s.unsubscribeUrl);
      await visit(page, lang, "withdraw", s.withdrawUrl);
      await page.evaluate(() => document.activeElement?.blur());
      await tabTo(page, lang, "withdraw button", submitButton);
      await Promise.all([page.waitForURL(/\/withdraw\/[^/]+\/done$/), page.keyboard.press("Enter")]);
      await audit(page, lang, "withdraw-done");
      await visit(page, lang, "consent-closed", s.consentUrl, 410);
      await visit(page, lang, "results-withdrawn", `${base()}/results/${token}`);
    });

    await step(`${lang}: sign-up, its sent and confirmation pages`, async () => {
      const page = await newPage(lang);
      const email = `a11y-signup-${lang}-${randomToken(6)}@buyer.example`;
      await visit(page, lang, "signup", `${base()}/signup`);
      await page.locator("#email").fill(email);
      await page.locator("#accept").check();
      await Promise.all([page.waitForURL(/\/signup\/sent$/), page.locator("form.card button[type=submit]").click()]);
      await audit(page, lang, "signup-sent");
      const msg = await smtp.waitForMessage((m) => mailIsFor(m, email) && mailText(m).includes("/signup/confirm/"), { timeout: 30000, what: `sign-up e-mail to ${email}` });
      await visit(page, lang, "signup-confirm", extractUrls(mailText(msg)).find((u) => u.includes("/signup/confirm/")));
      await page.context().close();
    });

    await step(`${lang}: a buyer publishes over /mcp/buyer; sign-in with the keyboard only → /me`, async () => {
      s.buyer = await signUpBuyer(isto, smtp);
      const grant = await codeGrant(isto, s.buyer.browser, s.buyer, rawClient, { resource: buyerUrl() });
      assert.equal(grant.token.status, 200, JSON.stringify(grant.token.body));
      const client = new Client({ name: "isto-a11y-buyer", version: "0.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(buyerUrl()), {
        requestInit: { headers: { Authorization: `Bearer ${grant.token.body.access_token}` } },
      }));
      clients.push(client);
      const sc = await callOk(client, "intent_publish_intent", intentArgs(lang));
      s.ownedId = sc.intent.id;

      const page = await newPage(lang);
      s.signedIn = page;
      await visit(page, lang, "signin", `${base()}/signin`);
      await skipLinkFirst(page, lang, "signin");
      await tabTo(page, lang, "sign-in e-mail field", (f) => f.id === "email");
      await page.keyboard.type(s.buyer.email);
      await tabTo(page, lang, "sign-in password field", (f) => f.id === "password");
      await page.keyboard.type(s.buyer.password);
      await tabTo(page, lang, "sign-in button", submitButton);
      await Promise.all([page.waitForURL((u) => u.pathname === "/me"), page.keyboard.press("Enter")]);
      await audit(page, lang, "me");
    });

    await step(`${lang}: /me/intents/{id}, /renew/{token}, password and mail pages, signed-in sign-in page`, async () => {
      const page = s.signedIn;
      await visit(page, lang, "me-intent", `${base()}/me/intents/${s.ownedId}`);
      const renew = page.locator(`form[action$="/renew"] button`);
      await Promise.all([page.waitForURL(/\/renew\/[^/]+$/), renew.click()]);
      await audit(page, lang, "renew");
      await visit(page, lang, "account-password", `${base()}/account/password`);
      await visit(page, lang, "account-mail", `${base()}/account/mail`);
      await visit(page, lang, "signin-signed-in", `${base()}/signin`);
      await visit(page, lang, "seller-demand-403", `${base()}/seller/demand`, 403);
    });

    await step(`${lang}: the OAuth consent page and its 400 error page`, async () => {
      const page = s.signedIn;
      const { challenge } = pkcePair();
      const url = authorizeUrl(base(), {
        response_type: "code",
        client_id: rawClient.client_id,
        redirect_uri: rawClient.redirect_uris[0],
        state: newState(),
        code_challenge: challenge,
        code_challenge_method: "S256",
        resource: buyerUrl(),
      });
      await visit(page, lang, "oauth-authorize", url);
      await visit(page, lang, "oauth-error-400", `${base()}/oauth/authorize?client_id=nobody`, 400);
      await page.context().close();
    });

    await step(`${lang}: one-time sign-in link pages; the sellers' pages`, async () => {
      const sellerEmail = `a11y-seller-${lang}-${randomToken(6)}@dealer.example`;
      const res = await isto.run(
        ["admin", "seller", "add", "--name", `a11y dealer ${lang}`, "--email", sellerEmail, "--category", "vehicles", "--region", "SK-BL", "--json"],
        { env: { ISTO_CONFIG: config } },
      );
      assert.equal(res.code, 0, `seller add: exit ${res.code}\n${res.stdout}\n${res.stderr}`);
      const page = await newPage(lang);
      await page.goto(`${base()}/signin`);
      await page.locator("#link-email").fill(sellerEmail);
      await Promise.all([page.waitForURL(/\/signin\/sent/), page.locator('form[action="/signin/link"] button').click()]);
      await audit(page, lang, "signin-sent");
      const msg = await smtp.waitForMessage((m) => mailIsFor(m, sellerEmail) && mailText(m).includes("/signin/link/"), { timeout: 30000, what: `sign-in link to ${sellerEmail}` });
      await visit(page, lang, "signin-link", extractUrls(mailText(msg)).find((u) => u.includes("/signin/link/")));
      await Promise.all([page.waitForURL((u) => !u.pathname.startsWith("/signin")), page.locator("form.card button[type=submit]").click()]);
      await visit(page, lang, "seller-intents", `${base()}/seller/intents`);
      await visit(page, lang, "seller-demand", `${base()}/seller/demand`);
      await visit(page, lang, "seller-demand-unknown", `${base()}/seller/demand?category=nothing`, 404);
      await page.context().close();
      await s.page.context().close();
    });
  }

  await step("every page: no serious or critical axe violation, no sideways scroll, focus visible", () => {
    for (const [lang, names] of audited) t.diagnostic(`${lang}: ${names.length} pages checked: ${names.join(", ")}`);
    for (const line of notes.values()) t.diagnostic(`moderate/minor: ${line}`);
    assert.deepEqual(problems, [], `\n${problems.join("\n")}`);
  }, { independent: true });

  await step("no CSP violation on any page", () => {
    assert.deepEqual(csp, []);
  }, { independent: true });
}));
