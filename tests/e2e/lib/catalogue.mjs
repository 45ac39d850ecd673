// Builds an isto import catalogue (JSON Lines, one offer per line) from the real listing
// files in ../shared/data (relative to the repo root). The files are read at test time
// only and never copied into the repository.
//
// Import format (one object per line):
//   {"ref": "sauto-<listing_id>", "title", "description", "category": "vehicles",
//    "attributes": {"make", "model", "year", "mileageKm", "fuel", "transmission"},
//    "price": {"amount", "currency": "CZK"},
//    "area": {"country": "CZ", "regions": ["CZ-64"], "place"?},
//    "seller": {"name", "url"?}, "url"}

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseCsvObjects } from "./csv.mjs";

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
// ISTO_DATA_DIR overrides (a worktree whose ../shared/data is elsewhere).
export const DATA_DIR = process.env.ISTO_DATA_DIR ?? path.resolve(REPO_ROOT, "../shared/data");
export const SAUTO_CSV = path.join(DATA_DIR, "vehicles_cz_sauto.csv");
export const BAZOS_JSONL = path.join(DATA_DIR, "vehicles_cz_bazos_ads.jsonl");

/** True when the real listing files are available. */
export function dataAvailable() {
  return fs.existsSync(SAUTO_CSV) && fs.existsSync(BAZOS_JSONL);
}

/** The 14 Czech regions (ISO 3166-2:CZ kraje), in a fixed order. */
export const CZ_REGIONS = [
  "CZ-10", // Praha
  "CZ-20", // Středočeský
  "CZ-31", // Jihočeský
  "CZ-32", // Plzeňský
  "CZ-41", // Karlovarský
  "CZ-42", // Ústecký
  "CZ-51", // Liberecký
  "CZ-52", // Královéhradecký
  "CZ-53", // Pardubický
  "CZ-63", // Kraj Vysočina
  "CZ-64", // Jihomoravský
  "CZ-71", // Olomoucký
  "CZ-72", // Zlínský
  "CZ-80", // Moravskoslezský
];

/** Lower case, diacritics removed (NFD, combining marks dropped). */
export function fold(s) {
  return String(s)
    .normalize("NFD")
    .replace(/\p{M}/gu, "")
    .toLowerCase();
}

/** ASCII slug as used in sauto URLs: folded, runs of non-alphanumerics become "-". */
export function slugify(s) {
  return fold(s)
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
}

/** 32-bit FNV-1a hash of a string (deterministic region/seller assignment). */
export function fnv1a(str) {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(String(str), "utf8")) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

const MAKE_NAMES = {
  skoda: "Škoda",
  volkswagen: "Volkswagen",
  "mercedes-benz": "Mercedes-Benz",
  bmw: "BMW",
  mg: "MG",
  byd: "BYD",
  "land-rover": "Land Rover",
  "alfa-romeo": "Alfa Romeo",
  citroen: "Citroën",
  ssangyong: "SsangYong",
  seat: "Seat",
  mini: "Mini",
  kia: "Kia",
};

const FUEL = {
  Nafta: "diesel",
  "Benzín": "petrol",
  "Hybridní": "hybrid",
  Elektro: "electric",
  "LPG + benzín": "lpg",
  "CNG + benzín": "cng",
};

const TRANSMISSION = {
  "Manuální": "manual",
  "Automatická": "automatic",
};

function titleCaseSlug(slug) {
  return slug
    .split("-")
    .filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join(" ");
}

const squash = (s) => slugify(s).replace(/-/g, "");

/**
 * Make and model display names for a sauto row: the title's first words are matched
 * against make_slug and model_slug (so diacritics come from the title, e.g. "Škoda",
 * "Řada 3"); a known make display name wins; otherwise the slug is title-cased.
 * model_slug "ostatni" ("other") gives no model.
 */
export function sautoMakeModel(row) {
  const words = row.title.split(/[\s,]+/).filter(Boolean);
  let make = null;
  let model = null;
  for (let i = 1; i <= Math.min(3, words.length); i++) {
    if (squash(words.slice(0, i).join(" ")) === squash(row.make_slug)) {
      make = words.slice(0, i).join(" ");
      for (let j = i + 1; j <= Math.min(i + 4, words.length); j++) {
        if (squash(words.slice(i, j).join(" ")) === squash(row.model_slug)) {
          model = words.slice(i, j).join(" ");
          break;
        }
      }
      break;
    }
  }
  make = MAKE_NAMES[row.make_slug] ?? make ?? titleCaseSlug(row.make_slug);
  if (!model && row.model_slug && row.model_slug !== "ostatni") {
    model = titleCaseSlug(row.model_slug);
  }
  return { make, model };
}

// Czech PSČ (postal code) prefix → region. APPROXIMATE: Czech postal districts do not
// follow region borders exactly. The longest matching prefix wins; the 3-digit entries
// fix the larger known exceptions of the 2-digit table (e.g. Třebíč 674 is Vysočina,
// Uherské Hradiště 686 is Zlínský, Přerov 750 is Olomoucký, Turnov 511 is Liberecký).
// Codes outside the table (e.g. Slovak 98x) give null and the row is skipped.
export const PSC_PREFIX_REGION = {
  10: "CZ-10", 11: "CZ-10", 12: "CZ-10", 13: "CZ-10", 14: "CZ-10",
  15: "CZ-10", 16: "CZ-10", 17: "CZ-10", 18: "CZ-10", 19: "CZ-10",
  25: "CZ-20", 26: "CZ-20", 27: "CZ-20", 28: "CZ-20", 29: "CZ-20",
  30: "CZ-32", 31: "CZ-32", 32: "CZ-32", 33: "CZ-32", 34: "CZ-32",
  35: "CZ-41", 36: "CZ-41",
  37: "CZ-31", 38: "CZ-31", 39: "CZ-31", 393: "CZ-63", 394: "CZ-63", 395: "CZ-63",
  40: "CZ-42", 41: "CZ-42", 43: "CZ-42", 44: "CZ-42",
  46: "CZ-51", 47: "CZ-51",
  50: "CZ-52", 51: "CZ-52", 511: "CZ-51", 512: "CZ-51", 513: "CZ-51",
  53: "CZ-53", 54: "CZ-52", 55: "CZ-52", 56: "CZ-53", 57: "CZ-53",
  58: "CZ-63", 59: "CZ-63",
  60: "CZ-64", 61: "CZ-64", 62: "CZ-64", 63: "CZ-64", 64: "CZ-64", 65: "CZ-64",
  66: "CZ-64", 67: "CZ-64", 674: "CZ-63", 675: "CZ-63", 676: "CZ-63",
  68: "CZ-64", 686: "CZ-72", 687: "CZ-72", 688: "CZ-72", 689: "CZ-72",
  69: "CZ-64",
  70: "CZ-80", 71: "CZ-80", 72: "CZ-80", 73: "CZ-80", 74: "CZ-80",
  75: "CZ-71", 755: "CZ-72", 756: "CZ-72", 757: "CZ-72",
  76: "CZ-72",
  77: "CZ-71", 78: "CZ-71", 79: "CZ-71", 792: "CZ-80", 793: "CZ-80", 794: "CZ-80", 795: "CZ-80",
};

/** Region code for a Czech PSČ, or null (approximate, see PSC_PREFIX_REGION). */
export function regionForPsc(psc) {
  const digits = String(psc ?? "").replace(/\s+/g, "");
  if (!/^\d{5}$/.test(digits)) return null;
  return PSC_PREFIX_REGION[digits.slice(0, 3)] ?? PSC_PREFIX_REGION[digits.slice(0, 2)] ?? null;
}

/** Make/model for a bazos saved search. BMW E46/E39 are sauto's "Řada 3"/"Řada 5". */
export function bazosMakeModel(row) {
  const m = fold(row.search_model ?? row.search_query ?? "");
  if (m.includes("octavia")) return { make: "Škoda", model: "Octavia" };
  if (m.includes("fabia")) return { make: "Škoda", model: "Fabia" };
  if (m.includes("passat")) return { make: "Volkswagen", model: "Passat" };
  if (m.includes("e46")) return { make: "BMW", model: "Řada 3" };
  if (m.includes("e39")) return { make: "BMW", model: "Řada 5" };
  if (m.startsWith("bmw")) return { make: "BMW", model: null };
  return { make: null, model: null };
}

const BAZOS_MODEL_TEXT = {
  Octavia: /octavi/,
  Fabia: /fabi/,
  Passat: /passat/,
  "Řada 3": /\be46\b|\bbmw\b|\b3[23]\d[di]\b/,
  "Řada 5": /\be39\b|\bbmw\b|\b5[23]\d[di]\b/,
};

/** Fuel implied by a bazos saved search ("1.9 tdi", "320d" → diesel; "mpi", "320i", "1.6" → petrol). */
export function bazosFuel(row) {
  const q = fold(row.search_query ?? "");
  if (/\btdi\b|\b\d{3}d\b/.test(q)) return "diesel";
  if (/\bmpi\b|\b\d{3}i\b|\b1\.6\b/.test(q)) return "petrol";
  return null;
}

function positiveInt(v) {
  const n = typeof v === "number" ? v : Number(String(v ?? "").replace(/\s+/g, ""));
  return Number.isFinite(n) && n > 0 ? Math.round(n) : null;
}

/** Offers from the sauto CSV (rows without a positive price are skipped). */
export function sautoOffers(csvPath = SAUTO_CSV) {
  const rows = parseCsvObjects(fs.readFileSync(csvPath, "utf8"));
  const offers = [];
  for (const row of rows) {
    const amount = positiveInt(row.price_czk);
    if (!amount) continue;
    const h = fnv1a(row.listing_id);
    const { make, model } = sautoMakeModel(row);
    const attributes = { make };
    if (model) attributes.model = model;
    const year = positiveInt(row.year);
    if (year) attributes.year = year;
    const km = Number(String(row.mileage_km ?? "").replace(/\s+/g, ""));
    if (row.mileage_km !== "" && Number.isFinite(km) && km >= 0) attributes.mileageKm = Math.round(km);
    if (FUEL[row.fuel]) attributes.fuel = FUEL[row.fuel];
    if (TRANSMISSION[row.transmission]) attributes.transmission = TRANSMISSION[row.transmission];
    offers.push({
      ref: `sauto-${row.listing_id}`,
      title: row.title,
      description: row.summary_raw ?? "",
      category: "vehicles",
      attributes,
      price: { amount, currency: "CZK" },
      // The file has no location: the region is assigned deterministically.
      area: { country: "CZ", regions: [CZ_REGIONS[h % CZ_REGIONS.length]] },
      seller: { name: `sauto dealer ${((h >>> 8) % 40) + 1}` },
      url: row.url,
    });
  }
  return offers;
}

/**
 * Offers from the bazos JSONL. Skipped: rows without a positive price, without a Czech
 * PSČ, or whose text does not name the model of their saved search.
 */
export function bazosOffers(jsonlPath = BAZOS_JSONL) {
  const lines = fs.readFileSync(jsonlPath, "utf8").split("\n").filter((l) => l.trim());
  const offers = [];
  let n = 0;
  for (const line of lines) {
    const row = JSON.parse(line);
    const amount = positiveInt(row.price_czk);
    if (!amount) continue;
    const region = regionForPsc(row.postal_code);
    if (!region) continue;
    const { make, model } = bazosMakeModel(row);
    if (!make) continue;
    // A saved search sometimes returns an unrelated ad (e.g. an Opel under "bmw e46"):
    // keep a row only when its own text names the model it was filed under.
    if (!BAZOS_MODEL_TEXT[model ?? ""]?.test(fold(`${row.title} ${row.description ?? ""}`))) continue;
    const attributes = { make };
    if (model) attributes.model = model;
    const fuel = bazosFuel(row);
    if (fuel) attributes.fuel = fuel;
    n++;
    const area = { country: "CZ", regions: [region] };
    if (row.city) area.place = row.city;
    offers.push({
      ref: `bazos-${row.listing_id}`,
      title: row.title,
      description: row.description ?? "",
      category: "vehicles",
      attributes,
      price: { amount, currency: "CZK" },
      area,
      seller: { name: `bazos seller ${n}` },
      url: row.url,
    });
  }
  return offers;
}

/** Write offers as JSON Lines to dir/name; returns the path. */
export function writeJsonl(dir, name, offers) {
  const p = path.join(dir, name);
  fs.writeFileSync(p, offers.map((o) => JSON.stringify(o)).join("\n") + "\n", "utf8");
  return p;
}

/**
 * Build the catalogue JSONL from both files in `dir` (a fresh tmp dir when omitted).
 * @returns {{path: string, offers: object[]}}
 */
export function buildCatalogue(dir) {
  dir ??= fs.mkdtempSync(path.join(os.tmpdir(), "isto-catalogue-"));
  const offers = [...sautoOffers(), ...bazosOffers()];
  const refs = new Set();
  for (const o of offers) {
    if (refs.has(o.ref)) throw new Error(`duplicate ref ${o.ref}`);
    refs.add(o.ref);
  }
  return { path: writeJsonl(dir, "catalogue.jsonl", offers), offers };
}

/**
 * Reference matcher used by the tests to compute expected matches independently of
 * isto: category, string attributes equal after folding, region in the list, price at
 * most `maxPrice` in `currency`.
 */
export function expectedMatches(offers, { category, attributes = {}, regions, maxPrice, currency }) {
  return offers.filter((o) => {
    if (category && o.category !== category) return false;
    for (const [k, v] of Object.entries(attributes)) {
      if (o.attributes[k] === undefined || fold(o.attributes[k]) !== fold(v)) return false;
    }
    if (regions && !o.area.regions.some((r) => regions.includes(r))) return false;
    if (currency && o.price.currency !== currency) return false;
    if (maxPrice !== undefined && o.price.amount > maxPrice) return false;
    return true;
  });
}

// `node lib/catalogue.mjs` prints statistics about the catalogue.
if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  if (!dataAvailable()) {
    console.error(`data not found in ${DATA_DIR}`);
    process.exit(1);
  }
  const { path: p, offers } = buildCatalogue();
  console.log(`catalogue: ${p}`);
  console.log(`offers: ${offers.length} (sauto ${offers.filter((o) => o.ref.startsWith("sauto-")).length}, bazos ${offers.filter((o) => o.ref.startsWith("bazos-")).length})`);
  const perRegion = {};
  for (const o of offers) perRegion[o.area.regions[0]] = (perRegion[o.area.regions[0]] ?? 0) + 1;
  console.log("per region:", CZ_REGIONS.map((r) => `${r}=${perRegion[r] ?? 0}`).join(" "));
  const octavia = expectedMatches(offers, { category: "vehicles", attributes: { make: "Škoda", model: "Octavia" } });
  console.log(`Škoda Octavia: ${octavia.length}`);
  const octRegion = {};
  for (const o of octavia) {
    const r = o.area.regions[0];
    octRegion[r] ??= { le250k: 0, gt250k: 0 };
    octRegion[r][o.price.amount <= 250000 ? "le250k" : "gt250k"]++;
  }
  console.log("Škoda Octavia per region (≤250000 / >250000):");
  for (const r of CZ_REGIONS) console.log(`  ${r}: ${octRegion[r]?.le250k ?? 0} / ${octRegion[r]?.gt250k ?? 0}`);
  const models = {};
  for (const o of offers) {
    const k = `${o.attributes.make} ${o.attributes.model ?? "-"}`;
    models[k] = (models[k] ?? 0) + 1;
  }
  console.log("top make/model:", Object.entries(models).sort((a, b) => b[1] - a[1]).slice(0, 15).map(([k, v]) => `${k}=${v}`).join(", "));
}
