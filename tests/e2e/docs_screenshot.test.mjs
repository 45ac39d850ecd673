// The consent page's screenshot in the README and the book (docs/src/images/consent.png),
// taken in the real Chromium (playwright-core): an assistant publishes a draft over MCP
// and the person opens its consentUrl in English on a laptop-sized viewport. The test
// checks the screenshot is a PNG of that page; it replaces the committed image only when
// ISTO_WRITE_DOCS=1 (`ISTO_WRITE_DOCS=1 node --test docs_screenshot.test.mjs`), so a
// test run never changes the repository.
//
// Needs: /usr/bin/chromium (or CHROMIUM_BIN), playwright-core, the isto binary, python3
// with aiosmtpd. Skipped with a message when Chromium or playwright-core is absent.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import test from "node:test";
import { fileURLToPath } from "node:url";

import { connectMcp, tmpDir, withIsto } from "./lib/harness.mjs";
import { launchBrowser, loadChromium } from "./lib/browser.mjs";
import { stepper } from "./lib/steps.mjs";

const TARGET = path.join(path.dirname(fileURLToPath(import.meta.url)), "../../docs/src/images/consent.png");
const STATEMENT = "Used Škoda Octavia Combi, diesel, automatic, in the Bratislava region";

const { chromium, skip } = await loadChromium();

test("the consent page's screenshot for the README and the book", { skip, timeout: 2 * 60 * 1000 }, (t) =>
  withIsto(t, { prefix: "isto-docshot-" }, async ({ isto, defer }) => {
    const step = stepper(t);
    const s = {};
    await step("an assistant publishes a draft", async () => {
      const mcp = await connectMcp(isto.mcpUrl);
      defer(() => mcp.close());
      const res = await mcp.callTool("intent_publish_intent", {
        statement: STATEMENT,
        criteria: { category: "vehicles", make: "Škoda", model: "Octavia", fuel: "diesel", transmission: "automatic" },
        area: "Bratislava",
        budget: { max: 14000, currency: "EUR" },
        hiddenLimit: 12500,
      });
      assert.ok(!res.isError, JSON.stringify(res));
      s.url = res.structuredContent.consentUrl;
    });
    await step("Chromium shows the consent page in English; the screenshot is a PNG of it", async () => {
      const browser = await launchBrowser(chromium);
      defer(() => browser.close());
      const page = await browser.newPage({ viewport: { width: 900, height: 900 }, locale: "en-GB", javaScriptEnabled: false });
      const res = await page.goto(s.url);
      assert.equal(res.status(), 200);
      const text = await page.locator("body").innerText();
      assert.ok(text.includes(STATEMENT), `statement missing:\n${text}`);
      assert.doesNotMatch(await page.content(), /12[\s\u00a0\u202f.,']?500/, "the page shows the hidden limit");
      const file = path.join(tmpDir("isto-docshot-png-"), "consent.png");
      await page.screenshot({ path: file, fullPage: true });
      const png = fs.readFileSync(file);
      assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], "not a PNG");
      assert.ok(png.length > 10_000, `a ${png.length}-byte screenshot is too small to show the page`);
      if (process.env.ISTO_WRITE_DOCS === "1") {
        fs.copyFileSync(file, TARGET);
        t.diagnostic(`wrote ${TARGET}`);
      }
    });
  }),
);
