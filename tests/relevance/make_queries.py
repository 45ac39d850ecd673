#!/usr/bin/env python3
"""Builds the judged query set of the search relevance evaluation.

Reads the real listing files in DATA_DIR (../shared/data, never copied into the
repository) and writes two JSON Lines files into OUT_DIR:

* ``catalogue.jsonl``: one isto import row per listing (the format of
  ``isto::catalogue::parse_json_row``; ``ref`` is ``<source>-<listing id>``);
* ``queries.jsonl``: one judged query per line:
  ``{"id", "class", "lang", "statement", "relevant": [ref...], "models": [ref...]}``.

The right answers of a query are computed from the structured columns only (make_slug,
model_slug, fuel of sauto; disposition and the city of locality_slug of sreality;
property_type and district of the Slovak table), never from what the engine returns.
``models`` (vehicle queries) lists every listing with the queried model whatever the
other constraints, for the "top hit has the wrong model" check.

Query classes:
* ``make_model``: make + model (``Tesla Model 3``, ``BMW X5``, ``Peugeot 308``), in cs,
  sk and en, with and without diacritics, some with a quantity (``do 400000 Kč``,
  ``under 150000 km``) that must not count as a term; and the names that differ in one
  letter (``Ford C-MAX`` / ``S-MAX``, ``Mercedes-Benz Třídy C/E/S/V``);
* ``model_fuel``: make + model + fuel (``nafta``, ``diesel``, ``benzín``);
* ``flat_cz``: Czech flat disposition + city (``byt 2+kk Brno``);
* ``flat_sk``: Slovak property type + district (``3 izbový byt Bratislava``).

Usage: make_queries.py DATA_DIR OUT_DIR. Deterministic: the same files give the same
output. Exit status 2 when a data file is missing.
"""

import csv
import json
import os
import sys
import unicodedata
from collections import Counter, defaultdict

SREALITY_ROWS = 4000  # the first rows with a price; the whole file would only slow the test

FUEL = {"Nafta": "diesel", "Benzín": "petrol", "Hybridní": "hybrid", "Elektro": "electric",
        "LPG + benzín": "lpg", "CNG + benzín": "cng"}
FUEL_WORDS = {  # (lang, fuel) -> the word a person writes
    ("cs", "diesel"): "nafta", ("sk", "diesel"): "naftový", ("en", "diesel"): "diesel",
    ("cs", "petrol"): "benzín", ("sk", "petrol"): "benzín", ("en", "petrol"): "petrol",
}
TRANSMISSION = {"Manuální": "manual", "Automatická": "automatic"}


def fold(s):
    return "".join(c for c in unicodedata.normalize("NFD", s) if not unicodedata.combining(c)).lower()


def vehicles(data):
    rows = list(csv.DictReader(open(os.path.join(data, "vehicles_cz_sauto.csv"), encoding="utf-8")))
    catalogue, facts = [], []
    for r in rows:
        head = r["title"].split(",")[0].strip()
        attrs = {"make": r["make_slug"].replace("-", " "), "model": r["model_slug"].replace("-", " ")}
        if r["fuel"] in FUEL:
            attrs["fuel"] = FUEL[r["fuel"]]
        if r["transmission"] in TRANSMISSION:
            attrs["transmission"] = TRANSMISSION[r["transmission"]]
        if r["year"].isdigit():
            attrs["year"] = int(r["year"])
        if r["mileage_km"].isdigit():
            attrs["mileageKm"] = int(r["mileage_km"])
        ref = "sauto-" + r["listing_id"]
        catalogue.append({
            "ref": ref, "title": r["title"], "description": r["summary_raw"], "category": "vehicles",
            "attributes": attrs, "price": {"amount": int(r["price_czk"] or 0) or 1, "currency": "CZK"},
            "area": "CZ", "seller": {"name": "sauto dealer"},
        })
        facts.append((ref, r["make_slug"], r["model_slug"], attrs.get("fuel"), head))
    return catalogue, facts


def vehicle_queries(facts):
    by_model = defaultdict(list)
    for f in facts:
        by_model[(f[1], f[2])].append(f)
    # The display name of a model: the most common "Make Model" head of its titles.
    shown = {k: Counter(f[4] for f in v).most_common(1)[0][0] for k, v in by_model.items()}

    def models_of(make, model):
        return sorted(f[0] for f in facts if f[1] == make and (f[2] == model or f[2].startswith(model + "-")))

    designated = [k for k, v in by_model.items() if len(v) >= 5 and any(c.isdigit() for c in k[1])]
    plain = [k for k, v in by_model.items() if len(v) >= 15 and not any(c.isdigit() for c in k[1])
             and k[1] != "ostatni"]
    designated.sort(key=lambda k: (-len(by_model[k]), k))
    plain.sort(key=lambda k: (-len(by_model[k]), k))
    templates = [
        ("cs", "Hledám {name}"),
        ("sk", "hľadám {name} do 400000 Kč"),
        ("en", "looking for a {folded} under 150000 km"),
        ("cs", "koupím {folded}"),
        ("sk", "{name}, najlepšie do 12 000 EUR"),
        ("en", "{name} wanted"),
    ]
    out = []
    for i, key in enumerate(designated[:30] + plain[:8]):
        lang, t = templates[i % len(templates)]
        name = shown[key]
        stmt = t.format(name=name, folded=fold(name))
        rel = models_of(*key)
        out.append({"class": "make_model", "lang": lang, "statement": stmt, "relevant": rel, "models": rel})
    # Names that differ only in one letter: hyphenated (C-MAX, S-MAX) and the single-letter
    # Mercedes-Benz classes ("Třídy C"); the top hit must have the named model.
    lettered = [("cs", "{name}"), ("en", "{folded} wanted"), ("cs", "koupím {name}"), ("sk", "hľadám {folded}"),
                ("cs", "Hledám {name}"), ("en", "{name}")]
    keys = [("ford", "c-max"), ("ford", "s-max"), ("mercedes-benz", "tridy-c"), ("mercedes-benz", "tridy-e"),
            ("mercedes-benz", "tridy-s"), ("mercedes-benz", "tridy-v")]
    for (lang, t), key in zip(lettered, keys):
        if key not in by_model:
            continue
        name = shown[key]
        rel = models_of(*key)
        out.append({"class": "make_model", "lang": lang, "statement": t.format(name=name, folded=fold(name)),
                    "relevant": rel, "models": rel})
    # make + model + fuel where at least 3 listings have that fuel.
    n = 0
    for key in designated + plain:
        fuels = Counter(f[3] for f in by_model[key] if f[3] in ("diesel", "petrol"))
        for fuel, count in sorted(fuels.items()):
            if count < 3 or n >= 16:
                continue
            lang = ("cs", "sk", "en")[n % 3]
            name = shown[key]
            word = FUEL_WORDS[(lang, fuel)]
            stmt = f"{name} {word}" if n % 2 == 0 else fold(f"{name} {word}")
            rel = sorted(f[0] for f in facts if f[1] == key[0] and f[2] == key[1] and f[3] == fuel)
            out.append({"class": "model_fuel", "lang": lang, "statement": stmt, "relevant": rel,
                        "models": models_of(*key)})
            n += 1
    return out


def flats_cz(data):
    path = os.path.join(data, "property_cz_sreality_flats.csv")
    catalogue, facts = [], []
    for r in csv.DictReader(open(path, encoding="utf-8")):
        if len(catalogue) >= SREALITY_ROWS:
            break
        price = float(r["price_czk"] or 0)
        if price <= 1 or r["category_type"] != "prodej":
            continue
        city = r["locality_slug"].split("-")[0]
        ref = "sreality-" + r["listing_id"]
        attrs = {"type": "flat", "transaction": "sale", "disposition": r["disposition"]}
        try:
            attrs["floorAreaM2"] = float(r["area_m2"])
        except ValueError:
            pass
        catalogue.append({
            "ref": ref, "title": r["name"], "description": r["locality_slug"].replace("-", " "),
            "category": "property", "attributes": attrs, "price": {"amount": price, "currency": "CZK"},
            "area": "CZ", "seller": {"name": "sreality agency"},
        })
        facts.append((ref, r["disposition"], city))
    counts = Counter((f[1], f[2]) for f in facts)
    cities = {"praha": "Praha", "brno": "Brno", "ostrava": "Ostrava", "olomouc": "Olomouc", "plzen": "Plzeň",
              "liberec": "Liberec", "jihlava": "Jihlava", "kladno": "Kladno", "znojmo": "Znojmo"}
    templates = [("cs", "Hledám byt {d} {city}"), ("cs", "prodej bytu {d} {folded}"), ("en", "{d} flat in {city}"),
                 ("sk", "kúpim byt {d} {city} do 5 000 000 Kč")]
    out = []
    keys = sorted((k for k, n in counts.items() if n >= 3 and k[1] in cities), key=lambda k: (-counts[k], k))
    for i, (d, city) in enumerate(keys[:20]):
        lang, t = templates[i % len(templates)]
        stmt = t.format(d=d, city=cities[city], folded=fold(cities[city]))
        rel = sorted(f[0] for f in facts if f[1] == d and f[2] == city)
        out.append({"class": "flat_cz", "lang": lang, "statement": stmt, "relevant": rel})
    return catalogue, out


def property_sk(data):
    path = os.path.join(data, "property_sk_simple.csv")
    catalogue, facts = [], []
    for i, r in enumerate(csv.DictReader(open(path, encoding="utf-8"))):
        if not r["property_type"] or not r["price_eur"]:
            continue
        ref = f"sksimple-{i}"
        transaction = "rent" if r["listing_type"] == "rent" else "sale"
        title = r["title"] or f"{r['property_type']}, {r['location']}"
        catalogue.append({
            "ref": ref, "title": title, "description": f"{r['location']} {r['district']}", "category": "property",
            "attributes": {"type": r["property_type"], "transaction": transaction},
            "price": {"amount": float(r["price_eur"]), "currency": "EUR"}, "area": "SK",
            "seller": {"name": "sk agency"},
        })
        facts.append((ref, r["property_type"], r["district"]))
    counts = Counter((f[1], f[2]) for f in facts)
    templates = [("sk", "Hľadám {t} {city}"), ("sk", "{ft} {fcity}"), ("cs", "sháním {t} v {city}")]
    out = []
    keys = sorted((k for k, n in counts.items() if n >= 3 and "byt" in k[0] and k[1]), key=lambda k: (-counts[k], k))
    for i, (t, city) in enumerate(keys[:10]):
        lang, tpl = templates[i % len(templates)]
        stmt = tpl.format(t=t, city=city, ft=fold(t), fcity=fold(city))
        rel = sorted(f[0] for f in facts if f[1] == t and f[2] == city)
        out.append({"class": "flat_sk", "lang": lang, "statement": stmt, "relevant": rel})
    return catalogue, out


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: make_queries.py DATA_DIR OUT_DIR")
    data, out_dir = sys.argv[1], sys.argv[2]
    for name in ("vehicles_cz_sauto.csv", "property_cz_sreality_flats.csv", "property_sk_simple.csv"):
        if not os.path.exists(os.path.join(data, name)):
            print(f"missing data file {name} in {data}", file=sys.stderr)
            sys.exit(2)
    cars, facts = vehicles(data)
    queries = vehicle_queries(facts)
    flats, q = flats_cz(data)
    queries += q
    sk, q = property_sk(data)
    queries += q
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "catalogue.jsonl"), "w", encoding="utf-8") as f:
        for row in cars + flats + sk:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    with open(os.path.join(out_dir, "queries.jsonl"), "w", encoding="utf-8") as f:
        for i, qu in enumerate(queries):
            qu = {"id": f"q{i:03}", **qu}
            f.write(json.dumps(qu, ensure_ascii=False) + "\n")
    print(f"{len(cars) + len(flats) + len(sk)} listings, {len(queries)} queries")


if __name__ == "__main__":
    main()
