//! The rmcp Streamable HTTP services of the three MCP endpoints (`/mcp`, `/mcp/buyer`,
//! `/mcp/seller`), built in one place for `isto serve` and the tests alike: Host and
//! Origin checks derived from the public URL (DNS-rebinding protection), a body limit,
//! the server's cancellation token.

use super::buyer::BuyerServer;
use super::seller::SellerServer;
use super::PublicServer;
use crate::state::AppState;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The MCP Streamable HTTP service for `/mcp`, with Host and Origin checks derived from
/// the public URL (DNS-rebinding protection).
pub fn mcp_service(
    holder: AppState,
    stop: CancellationToken,
) -> StreamableHttpService<PublicServer, LocalSessionManager> {
    let h = holder.clone();
    StreamableHttpService::new(
        move || Ok(PublicServer::new(h.clone())),
        Arc::new(LocalSessionManager::default()),
        mcp_config(&holder, stop),
    )
}

/// Streamable HTTP settings shared by the three MCP endpoints: Host and Origin from the
/// public URL, a body limit.
fn mcp_config(holder: &AppState, stop: CancellationToken) -> StreamableHttpServerConfig {
    let url = &holder.base.settings.public_url;
    StreamableHttpServerConfig::default()
        .with_allowed_hosts(url.allowed_hosts())
        .with_allowed_origins(url.allowed_origins())
        .enforce_origin_validation()
        .with_cancellation_token(stop)
        .with_max_request_body_bytes(256 * 1024)
}

/// The MCP service for `/mcp/buyer` (bearer-checked in front by `app::router`).
pub fn buyer_service(
    holder: AppState,
    stop: CancellationToken,
) -> StreamableHttpService<BuyerServer, LocalSessionManager> {
    let h = holder.clone();
    StreamableHttpService::new(
        move || Ok(BuyerServer::new(h.clone())),
        Arc::new(LocalSessionManager::default()),
        mcp_config(&holder, stop),
    )
}

/// The MCP service for `/mcp/seller` (bearer-checked in front by `app::router`).
pub fn seller_service(
    holder: AppState,
    stop: CancellationToken,
) -> StreamableHttpService<SellerServer, LocalSessionManager> {
    let h = holder.clone();
    StreamableHttpService::new(
        move || Ok(SellerServer::new(h.clone())),
        Arc::new(LocalSessionManager::default()),
        mcp_config(&holder, stop),
    )
}
