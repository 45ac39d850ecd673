//! The references of `isto check`'s checks, in one place: each names the specification
//! text the check judges against — a section of the seed (the MCP binding, "Protocol
//! v0.1 draft": §1–§6, §5 items as §5.n), a section of PROTOCOL.md, an RFC (with its
//! section), or a page of the MCP specification with its revision — and never a work
//! item. [`cites_a_spec`] states that form; their test holds every one to it.

/// `tools.present`: the tools of the binding.
pub const TOOLS: &str = "seed §1/§3, PROTOCOL.md §3";
/// `publish.no_contact_field`.
pub const CONTACT: &str = "seed §5.1, PROTOCOL.md §3";
/// `publish.unknown_refused`.
pub const UNKNOWN: &str = "PROTOCOL.md §3 (unknown properties are rejected)";
/// `tools.disclaimer`.
pub const DISCLAIMER: &str = "seed §4 rule 2";
/// `publish.intent_code`.
pub const CODE: &str = "seed §5.2, PROTOCOL.md §4 item 1";
/// `publish.consent_url`.
pub const CONSENT_URL: &str = "seed §5.2";
/// `get.by_code`, `list_matches.by_code`.
pub const BY_CODE: &str = "seed §5.4, PROTOCOL.md §3";
/// `codes.wrong_like_unknown`.
pub const WRONG_CODE: &str = "PROTOCOL.md §3 Errors (one indistinguishable not_found)";
/// `withdraw.immediate`.
pub const WITHDRAW: &str = "seed §1 (withdraw MUST take effect immediately)";
/// `results.no_secrets`.
pub const SECRETS: &str = "seed §4 rule 1, §5.4";
/// `demand.draft_not_counted`.
pub const DEMAND_DRAFT: &str = "seed §5.1, PROTOCOL.md §5";
/// `demand.below_k_withheld`.
pub const DEMAND_K: &str = "PROTOCOL.md §5 (a cell below k is withheld)";
/// `input.error_names_field`.
pub const BAD_INPUT: &str = "PROTOCOL.md §3 Errors";
/// `rate.limit`.
pub const RATE: &str = "seed §4 rule 3, PROTOCOL.md §3 Limits";
/// `oauth.resource_metadata` (also when it is skipped: another origin).
pub const PRM: &str = "RFC 9728 §3, MCP 2025-11-25 authorization (Protected Resource Metadata Discovery)";
/// `oauth.as_metadata` (also when it is skipped: another origin).
pub const ASM: &str = "RFC 8414 §3, MCP 2025-11-25 authorization (Authorization Code Protection: PKCE S256)";
/// `oauth.challenge` (also when it is skipped: no endpoint, another origin).
pub const CHALLENGE: &str = "RFC 9728 §5.1, MCP 2025-11-25 authorization (Protected Resource Metadata Discovery)";
/// `transport.origin`.
pub const ORIGIN: &str =
    "MCP 2025-11-25 transports (Security Warning), MCP 2026-07-28 Streamable HTTP (Security & Endpoint): Origin, 403";
/// `transport.accept_both`, `transport.accept_json`: the answer is JSON or an SSE stream,
/// and a client that can read only JSON is served JSON.
pub const ACCEPT: &str = "MCP 2025-11-25 transports (Sending Messages to the Server), RFC 9110 §12.5.1 (Accept)";
/// `transport.initialize`.
pub const OPEN_2025: &str = "MCP 2025-11-25 lifecycle (Initialization, Version Negotiation)";
/// `transport.server_discover`.
pub const OPEN_2026: &str = "MCP 2026-07-28 server/discover";
/// `transport.https`.
pub const HTTPS: &str = "MCP 2025-11-25 authorization (Communication Security: HTTPS), PROTOCOL.md §7";
/// `cleanup.drafts_withdrawn`: the check's drafts are withdrawn with the binding's tool
/// and lapse otherwise.
pub const CLEANUP: &str = "seed §1 intent_withdraw_intent, seed §5.1 (a draft expires within 24 hours)";

/// Whether `reference` cites a specification: `seed §n`, `PROTOCOL.md §n`, `RFC n` or
/// `MCP <revision> <page>`, and no work item (an issue, a ticket, `#n`).
pub fn cites_a_spec(reference: &str) -> bool {
    let words: Vec<&str> = reference.split_whitespace().collect();
    let work_item = reference.contains('#')
        || words.iter().any(|w| {
            let w = w.trim_matches(|c: char| !c.is_ascii_alphanumeric()).to_ascii_lowercase();
            matches!(w.as_str(), "issue" | "issues" | "ticket" | "todo" | "sprint")
        });
    let numbered = |w: &str| w.trim_start_matches('§').chars().next().is_some_and(|c| c.is_ascii_digit());
    let cited = words.windows(2).any(|p| match p[0] {
        "seed" | "PROTOCOL.md" => p[1].starts_with('§') && numbered(p[1]),
        "RFC" => numbered(p[1]),
        "MCP" => matches!(p[1], "2025-11-25" | "2026-07-28"),
        _ => false,
    });
    cited && !work_item
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every reference, for the test of their form.
    const ALL: &[&str] = &[
        TOOLS,
        CONTACT,
        UNKNOWN,
        DISCLAIMER,
        CODE,
        CONSENT_URL,
        BY_CODE,
        WRONG_CODE,
        WITHDRAW,
        SECRETS,
        DEMAND_DRAFT,
        DEMAND_K,
        BAD_INPUT,
        RATE,
        PRM,
        ASM,
        CHALLENGE,
        ORIGIN,
        ACCEPT,
        OPEN_2025,
        OPEN_2026,
        HTTPS,
        CLEANUP,
    ];

    #[test]
    fn every_reference_cites_a_specification_and_no_work_item() {
        for r in ALL {
            assert!(cites_a_spec(r), "{r}");
        }
        for bad in [
            "MCP transports (Accept), PROTOCOL.md issue 12",
            "issue 14 (checks that create data clean up after themselves)",
            "isto check fetches only the checked URL's origin",
            "MCP transports",
            "RFC",
            "seed §2, see #41",
            "seed §5.2 (Issue 3)",
        ] {
            assert!(!cites_a_spec(bad), "{bad}");
        }
    }
}
