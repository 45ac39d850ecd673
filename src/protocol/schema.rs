//! JSON Schemas (draft 2020-12) of the tools' inputs and outputs on `/mcp` and `/mcp/buyer`
//! (PROTOCOL.md §3). Inputs reject unknown properties; the publish input has no contact
//! field of any kind (seed §5.1).

use serde_json::{json, Value};

/// Schema of an Area input: a name/code string or `{country, regions?, place?}`.
pub fn area_input() -> Value {
    json!({
        "description": "ISO 3166-1 country (\"SK\"), ISO 3166-2 region (\"SK-BL\", \"CZ-64\"), a place or region name in sk/cs/en (\"Bratislava\", \"Jihomoravský kraj\", \"Prague\"), or an object",
        "anyOf": [
            {"type": "string", "minLength": 1, "maxLength": 200},
            {"type": "object", "additionalProperties": false, "required": ["country"], "properties": {
                "country": {"type": "string", "minLength": 2, "maxLength": 2},
                "regions": {"type": "array", "items": {"type": "string"}, "maxItems": 30},
                "place": {"type": "string", "maxLength": 200}
            }}
        ]
    })
}

fn area_output() -> Value {
    json!({"type": "object", "required": ["country", "regions"], "properties": {
        "country": {"type": "string"},
        "regions": {"type": "array", "items": {"type": "string"}},
        "place": {"type": "string"}
    }})
}

fn money() -> Value {
    json!({"type": "object", "required": ["amount", "currency"], "properties": {
        "amount": {"type": "number"}, "currency": {"type": "string"}
    }})
}

/// Schema of an Intent in results (never contact, never the hidden limit's value).
pub fn intent() -> Value {
    json!({"type": "object",
        "required": ["id", "status", "statement", "category", "criteria", "area", "hasHiddenLimit", "validUntil", "visibility", "language", "createdAt", "updatedAt", "extensions"],
        "properties": {
            "id": {"type": "string"},
            "status": {"type": "string", "enum": ["awaiting_consent", "awaiting_email_confirmation", "active", "expired", "withdrawn"]},
            "statement": {"type": "string"},
            "category": {"type": "string"},
            "criteria": {"type": "object"},
            "area": area_output(),
            "budget": {"type": "object", "properties": {"max": {"type": "number"}, "min": {"type": "number"}, "currency": {"type": "string"}}},
            "hasHiddenLimit": {"type": "boolean"},
            "buyBy": {"type": "string", "format": "date"},
            "validUntil": {"type": "string", "format": "date-time"},
            "visibility": {"type": "string", "enum": ["private", "pseudonymous"]},
            "language": {"type": "string"},
            "createdAt": {"type": "string", "format": "date-time"},
            "updatedAt": {"type": "string", "format": "date-time"},
            "extensions": {"type": "object"}
        }
    })
}

/// Schema of an Offer in results.
pub fn offer() -> Value {
    json!({"type": "object",
        "required": ["id", "source", "title", "description", "category", "attributes", "price", "area", "seller", "publishedAt", "extensions"],
        "properties": {
            "id": {"type": "string"},
            "source": {"type": "object", "required": ["kind", "sellerId"], "properties": {
                "kind": {"type": "string", "enum": ["catalogue", "reply"]}, "sellerId": {"type": "string"}, "url": {"type": "string"}}},
            "inReplyTo": {"type": "string"},
            "title": {"type": "string"},
            "description": {"type": "string"},
            "category": {"type": "string"},
            "attributes": {"type": "object"},
            "price": money(),
            "area": area_output(),
            "seller": {"type": "object", "required": ["id", "name"], "properties": {
                "id": {"type": "string"}, "name": {"type": "string"}, "url": {"type": "string"}}},
            "publishedAt": {"type": "string", "format": "date-time"},
            "validUntil": {"type": "string", "format": "date-time"},
            "extensions": {"type": "object"}
        }
    })
}

fn code_prop() -> Value {
    json!({"type": "string", "minLength": 16, "maxLength": 200,
        "description": "The intentCode returned by intent_publish_intent. Keep it secret: it can read and withdraw the intent."})
}

/// `intent_publish_intent` input on `/mcp`.
pub fn publish_input() -> Value {
    json!({"type": "object", "additionalProperties": false, "required": ["statement", "area"],
        "properties": {
            "statement": {"type": "string", "minLength": 1, "maxLength": 2000, "description": "What the person wants, in their own words, any language."},
            "criteria": {"type": "object", "description": "Optional flat constraints: {\"category\": \"vehicles\"|\"property\", <attribute>: string | number | [any of] | {\"min\", \"max\"}}. Vehicle attributes: make, model, body, fuel, transmission, year, mileageKm, powerKw, color. Property attributes: type, transaction, disposition, rooms, floorAreaM2, landAreaM2, floor.",
                "additionalProperties": {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "array"}, {"type": "object", "properties": {"min": {"type": "number"}, "max": {"type": "number"}}, "additionalProperties": false}]}},
            "area": area_input(),
            "budget": {"description": "Visible budget: a number (max in the holder's default currency) or {max, min?, currency?}.",
                "anyOf": [{"type": "number", "exclusiveMinimum": 0}, {"type": "object", "additionalProperties": false, "properties": {
                    "max": {"type": "number", "exclusiveMinimum": 0}, "min": {"type": "number", "minimum": 0}, "currency": {"type": "string", "minLength": 3, "maxLength": 3}}}]},
            "hiddenLimit": {"type": "number", "exclusiveMinimum": 0, "description": "Optional sealed price ceiling in the budget's currency. The holder seals it on receipt; it is never shown to anyone, sellers included."},
            "buyBy": {"type": "string", "format": "date", "description": "YYYY-MM-DD"},
            "validUntil": {"type": "string", "format": "date-time", "description": "RFC 3339; default 90 days, at most 365 days from now."},
            "visibility": {"type": "string", "enum": ["private", "pseudonymous"], "default": "private"}
        }
    })
}

/// `intent_publish_intent` output on `/mcp`.
pub fn publish_output() -> Value {
    json!({"type": "object", "required": ["intent", "intentCode", "consentUrl", "expiresAt"], "properties": {
        "intent": intent(), "intentCode": {"type": "string"}, "consentUrl": {"type": "string", "format": "uri"},
        "expiresAt": {"type": "string", "format": "date-time"}}})
}

/// `intent_get_intent` / `intent_withdraw_intent` input on `/mcp`.
pub fn code_input() -> Value {
    json!({"type": "object", "additionalProperties": false, "required": ["intentCode"], "properties": {
        "intentCode": code_prop(), "id": {"type": "string", "maxLength": 64, "description": "Optional: the intent id; must belong to the code."}}})
}

/// `intent_get_intent` output.
pub fn get_output() -> Value {
    json!({"type": "object", "required": ["intent"], "properties": {"intent": intent()}})
}

/// `intent_withdraw_intent` output.
pub fn withdraw_output() -> Value {
    json!({"type": "object", "required": ["status"], "properties": {"status": {"type": "string", "const": "withdrawn"}}})
}

/// `intent_list_matches` input on `/mcp`.
pub fn list_matches_input() -> Value {
    json!({"type": "object", "additionalProperties": false, "required": ["intentCode"], "properties": {
        "intentCode": code_prop(),
        "intent": {"type": "string", "maxLength": 64, "description": "Optional: the intent id; must belong to the code."},
        "since": {"type": "string", "format": "date-time", "description": "Only deliveries after this time (use the previous nextSince)."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 50}}})
}

/// `intent_list_matches` output.
pub fn list_matches_output() -> Value {
    json!({"type": "object", "required": ["matches", "nextSince"], "properties": {
        "matches": {"type": "array", "items": {"type": "object", "required": ["offer", "deliveredAt"], "properties": {
            "offer": offer(), "deliveredAt": {"type": "string", "format": "date-time"}, "extensions": {"type": "object"}}}},
        "nextSince": {"type": ["string", "null"]}}})
}

/// `intent_search_offers` input.
pub fn search_input() -> Value {
    json!({"type": "object", "additionalProperties": false, "required": ["statement"], "properties": {
        "statement": {"type": "string", "minLength": 1, "maxLength": 2000, "description": "Free text, any of sk/cs/en; case and diacritics do not matter."},
        "area": area_input(),
        "category": {"type": "string", "enum": ["vehicles", "property"]},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}}})
}

/// `intent_search_offers` output.
pub fn search_output() -> Value {
    json!({"type": "object", "required": ["offers"], "properties": {"offers": {"type": "array", "items": offer()}}})
}

// ---------------------------------------------------------------------------
// `/mcp/buyer` (PROTOCOL.md §1, §3): the buyer tools by `id`, no intentCode, no contact
// field of any kind (the account's verified e-mail address is used).

fn id_prop(what: &str) -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 64, "description": what})
}

/// `intent_publish_intent` output on `/mcp/buyer`: the intent, and `consentUrl` when the
/// person has not accepted the holder's current consent text.
pub fn buyer_publish_output() -> Value {
    json!({"type": "object", "required": ["intent"], "properties": {
        "intent": intent(),
        "consentUrl": {"type": "string", "format": "uri", "description": "Present when the intent waits for the person's consent on the holder's page."}}})
}

/// `intent_get_intent` / `intent_withdraw_intent` input on `/mcp/buyer`.
pub fn id_input() -> Value {
    json!({"type": "object", "additionalProperties": false, "required": ["id"], "properties": {
        "id": id_prop("The intent's id (\"int_...\"), as returned by intent_publish_intent.")}})
}

/// `intent_update_intent` input on `/mcp/buyer`: the id and the changed fields, each
/// with the publish input's rules; `null` removes criteria (the category stays), budget,
/// hiddenLimit or buyBy.
pub fn update_input() -> Value {
    let publish = publish_input();
    let p = &publish["properties"];
    let nullable = |v: &Value| json!({"anyOf": [v, {"type": "null"}]});
    json!({"type": "object", "additionalProperties": false, "required": ["id"], "minProperties": 2,
        "properties": {
            "id": id_prop("The intent's id."),
            "statement": p["statement"],
            "criteria": nullable(&p["criteria"]),
            "area": p["area"],
            "budget": nullable(&p["budget"]),
            "hiddenLimit": nullable(&p["hiddenLimit"]),
            "buyBy": nullable(&p["buyBy"]),
            "validUntil": {"type": "string", "format": "date-time",
                "description": "RFC 3339, at most 365 days from now. Earlier than now's validUntil: applies at once. Later (or renewing an expired intent): not applied until the person confirms on the page at renewUrl."},
            "visibility": p["visibility"]
        }
    })
}

/// `intent_update_intent` output: the intent after the changes that apply at once, and
/// `renewUrl` when validUntil moved later.
pub fn update_output() -> Value {
    json!({"type": "object", "required": ["intent"], "properties": {
        "intent": intent(),
        "renewUrl": {"type": "string", "format": "uri", "description": "The holder page where the person confirms the new validUntil."}}})
}

/// `intent_list_matches` input on `/mcp/buyer`.
pub fn buyer_list_matches_input() -> Value {
    json!({"type": "object", "additionalProperties": false, "required": ["intent"], "properties": {
        "intent": id_prop("The intent's id."),
        "since": {"type": "string", "format": "date-time", "description": "Only deliveries after this time (use the previous nextSince)."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 50}}})
}

// ---------------------------------------------------------------------------
// `intent_demand_summary` (PROTOCOL.md §3, §5): on `/mcp`, `/mcp/buyer` and `/mcp/seller`.

/// `intent_demand_summary` input: `{category, cell: {area, budgetBand, buyByBand}}`.
/// budgetBand labels depend on the holder's configuration, so they are described (and
/// checked by the holder, whose error lists them) rather than enumerated here.
pub fn demand_summary_input() -> Value {
    let categories: Vec<&str> = super::CATEGORIES.iter().map(|c| c.key).collect();
    json!({"type": "object", "additionalProperties": false, "required": ["category", "cell"], "properties": {
        "category": {"type": "string", "enum": categories},
        "cell": {"type": "object", "additionalProperties": false, "required": ["area", "budgetBand", "buyByBand"],
            "description": "One cell of the holder's band grid (published per category in GET /.well-known/isto-intents as bandGrid).",
            "properties": {
                "area": {"type": "string", "minLength": 1, "maxLength": 200,
                    "description": "One region: an ISO 3166-2 code (\"SK-BL\", \"CZ-64\") or a region or town name in sk/cs/en that lies in exactly one region (\"Jihomoravský kraj\", \"Brno\"). Not a whole country."},
                "budgetBand": {"type": "string", "minLength": 1, "maxLength": 40,
                    "description": "A budget band of the category's grid, in the category's currency: \"LOW-HIGH\" (LOW inclusive, HIGH exclusive), \"LOW+\" for the top band, or \"none\" (no visible budget). Default vehicles bands (EUR): 0-5000, 5000-10000, 10000-20000, 20000-40000, 40000+, none; property: 0-50000, 50000-100000, 100000-200000, 200000-400000, 400000+, none."},
                "buyByBand": {"type": "string", "enum": super::BUY_BY_BANDS,
                    "description": "buyBy within 1, 3 or 12 months from today, later, or none (no buyBy)."}
            }}
    }})
}

/// `intent_demand_summary` output: DemandSummary or withheld (PROTOCOL.md §5).
pub fn demand_summary_output() -> Value {
    json!({"type": "object", "oneOf": [
        {"type": "object", "required": ["category", "cell", "activeIntents", "newLast7Days", "pseudonymous", "asOf"], "properties": {
            "category": {"type": "string"},
            "cell": {"type": "object", "required": ["area", "budgetBand", "buyByBand"], "properties": {
                "area": {"type": "string"}, "budgetBand": {"type": "string"}, "buyByBand": {"type": "string"}}},
            "activeIntents": {"type": "integer", "minimum": 0},
            "newLast7Days": {"type": ["integer", "null"], "minimum": 0,
                "description": "null unless these intents and the cell's others each come from at least k people."},
            "pseudonymous": {"type": ["integer", "null"], "minimum": 0,
                "description": "null unless these intents and the cell's others each come from at least k people."},
            "asOf": {"type": "string", "format": "date-time"}
        }},
        {"type": "object", "required": ["withheld", "reason"], "properties": {
            "withheld": {"type": "boolean", "const": true},
            "reason": {"type": "string", "const": "below_threshold"}
        }}
    ]})
}

// ---------------------------------------------------------------------------
// `/mcp/seller` (PROTOCOL.md §1, §3): the seller's own tools.

/// Longest `inReplyTo`, characters (a handle is 80).
pub const IN_REPLY_TO_MAX: usize = 128;

/// `intent_submit_offer` input on `/mcp/seller`: an Offer with `source: {"kind": "reply"}`
/// and `inReplyTo`.
pub fn offer_input() -> Value {
    let area = area_input();
    json!({"type": "object", "additionalProperties": false,
        "required": ["source", "inReplyTo", "title", "category", "price", "area"],
        "properties": {
            "source": {"type": "object", "additionalProperties": false, "required": ["kind"],
                "properties": {"kind": {"type": "string", "const": "reply"}}},
            "inReplyTo": {"type": "string", "minLength": 1, "maxLength": IN_REPLY_TO_MAX,
                "description": "The id (hdl_…) of the open intent this offer answers, as intent_list_open_intents gave it to this seller."},
            "title": {"type": "string", "minLength": 1, "maxLength": 300},
            "description": {"type": "string", "maxLength": 10000},
            "category": {"type": "string", "enum": ["vehicles", "property"]},
            "attributes": {"type": "object", "description": "The offer's attributes, same keys and units as intent criteria. Vehicles: make, model, body, fuel, transmission, year, mileageKm, powerKw, color. Property: type, transaction, disposition, rooms, floorAreaM2, landAreaM2, floor.",
                "additionalProperties": {"anyOf": [{"type": "string"}, {"type": "number"}]}},
            "price": {"type": "object", "additionalProperties": false, "required": ["amount", "currency"], "properties": {
                "amount": {"type": "number", "exclusiveMinimum": 0}, "currency": {"type": "string", "minLength": 3, "maxLength": 3}}},
            "area": {"description": "Where the offered item is: one region or town (\"Košice\", \"SK-KI\").", "anyOf": area["anyOf"]},
            "url": {"type": "string", "maxLength": 2000, "description": "The offer's own page (http or https)."},
            "validUntil": {"type": "string", "description": "RFC 3339 time (or a date: the end of that day, UTC) when the offer lapses; in the future."}
        }
    })
}

/// `intent_submit_offer` output: `{accepted, offerId?, reason?}`.
pub fn offer_output() -> Value {
    json!({"type": "object", "required": ["accepted"], "properties": {
        "accepted": {"type": "boolean", "description": "true: stored and valid. Whether it is delivered to the buyer is not shown."},
        "offerId": {"type": "string"},
        "reason": {"type": "string", "description": "Why it was not accepted: \"not open for replies\" or \"reply limit reached\"."}
    }})
}

/// `intent_list_open_intents` input: `{category?, area?, since?, limit?}`.
pub fn open_input() -> Value {
    json!({"type": "object", "additionalProperties": false, "properties": {
        "category": {"type": "string", "enum": ["vehicles", "property"]},
        "area": area_input(),
        "since": {"type": "string", "format": "date-time", "description": "Only intents that opened or changed in this minute or later (use the previous nextSince; the current minute comes again, so skip ids already seen)."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 50}
    }})
}

/// `intent_list_open_intents` output: the open intents under the seller's handles.
pub fn open_output() -> Value {
    let intent = intent();
    let p = &intent["properties"];
    json!({"type": "object", "required": ["intents", "nextSince"], "properties": {
        "intents": {"type": "array", "items": {"type": "object",
            "required": ["id", "pseudonym", "statement", "category", "criteria", "area", "validUntil"],
            "properties": {
                "id": {"type": "string", "pattern": "^hdl_", "description": "This seller's handle for the intent (inReplyTo of intent_submit_offer): the same on every call, different for every seller."},
                "pseudonym": {"type": "string", "description": "This seller's pseudonym for the buyer: the same for all of one buyer's intents, different for every seller."},
                "statement": p["statement"],
                "category": p["category"],
                "criteria": p["criteria"],
                "area": p["area"],
                "budget": p["budget"],
                "buyBy": p["buyBy"],
                "validUntil": {"type": "string", "format": "date-time", "description": "RFC 3339, the day only: 00:00 UTC of the day the intent lapses (rounded down)."}
            }}},
        "nextSince": {"type": ["string", "null"]}
    }})
}
