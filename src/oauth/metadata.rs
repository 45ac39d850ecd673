//! Authorization server metadata (RFC 8414, with the MCP 2025-11-25 addition
//! `client_id_metadata_document_supported`) and protected resource metadata (RFC 9728)
//! for `/mcp/buyer` and `/mcp/seller`. The issuer is the public URL without a trailing
//! slash, so the metadata lives at the root well-known path.

use super::{Resource, Server, SCOPES};
use serde_json::{json, Value};

/// Client authentication methods of the token and revocation endpoints.
pub const AUTH_METHODS: [&str; 3] = ["none", "client_secret_post", "client_secret_basic"];

impl Server {
    /// This holder's RFC 8414 document (`GET /.well-known/oauth-authorization-server`);
    /// the issuer is the public URL.
    pub fn authorization_server_document(&self) -> Value {
        let issuer = &self.base.settings().public_url.base;
        json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}/oauth/authorize"),
            "token_endpoint": format!("{issuer}/oauth/token"),
            "registration_endpoint": format!("{issuer}/oauth/register"),
            "revocation_endpoint": format!("{issuer}/oauth/revoke"),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": AUTH_METHODS,
            "revocation_endpoint_auth_methods_supported": AUTH_METHODS,
            "scopes_supported": SCOPES,
            "client_id_metadata_document_supported": true,
            "authorization_response_iss_parameter_supported": true,
        })
    }

    /// This holder's RFC 9728 document of `r` (`GET
    /// /.well-known/oauth-protected-resource/mcp/buyer` or `…/mcp/seller`).
    pub fn resource_document(&self, r: Resource) -> Value {
        let s = &self.base.settings();
        let (base, holder_name) = (&s.public_url.base, &s.holder_name);
        let name = match r {
            Resource::Buyer => format!("{holder_name} (buyers)"),
            Resource::Seller => format!("{holder_name} (sellers)"),
        };
        json!({
            "resource": r.url(base),
            "authorization_servers": [base],
            "scopes_supported": r.scopes(),
            "bearer_methods_supported": ["header"],
            "resource_name": name,
        })
    }
}
