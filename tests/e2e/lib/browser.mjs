// Chromium for the page tests (playwright-core driving the Debian package `chromium`):
// where it is, the flags it runs with, one loader that says why a test must be skipped,
// and one launcher.

import fs from "node:fs";
import { createRequire } from "node:module";

/** The Chromium binary: `CHROMIUM_BIN`, else the Debian package's. */
export const CHROMIUM = process.env.CHROMIUM_BIN ?? "/usr/bin/chromium";

/** Headless, no sandbox (containers), and nothing that talks to the network on its own. */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/**
 * playwright-core's `chromium`, and what `more()` loads besides (other modules a test
 * file needs), as `{ chromium, skip, ...more }`. `skip` is `false`, or why the tests
 * cannot run: Chromium absent, or a module missing (`missing` names what, e.g.
 * "playwright-core or axe-core is not installed").
 */
export async function loadChromium({ more = async () => ({}), missing = "playwright-core is not installed" } = {}) {
  if (!fs.existsSync(CHROMIUM)) {
    return { chromium: null, skip: `${CHROMIUM} is absent (install the Debian package chromium, or set CHROMIUM_BIN)` };
  }
  try {
    const { chromium } = await import("playwright-core");
    return { chromium, skip: false, ...(await more()) };
  } catch (e) {
    return { chromium: null, skip: `${missing} (npm ci in tests/e2e): ${e.message}` };
  }
}

/** axe-core's script (`axe.min.js`), to inject into a page. Throws when it is not installed. */
export function readAxe() {
  return fs.readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
}

/** A headless Chromium with [`CHROMIUM_ARGS`]; the caller closes it. */
export function launchBrowser(chromium) {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

/**
 * A new page of `browser` as a phone shows it with JavaScript off (390×844 at 2×, touch),
 * in `locale` (e.g. "cs-CZ").
 */
export async function phonePage(browser, locale) {
  const context = await browser.newContext({
    javaScriptEnabled: false,
    viewport: { width: 390, height: 844 },
    deviceScaleFactor: 2,
    isMobile: true,
    hasTouch: true,
    locale,
  });
  return context.newPage();
}
