//! Client addresses (infrastructure): who a request comes from, for the per-client limits
//! and quotas.
//!
//! The address is the TCP peer's, unless the peer is one of the configured
//! [`TrustedProxies`]; then `X-Forwarded-For` names the client ([`ClientAddr::resolve`]).
//! Counting uses [`ClientAddr::key`] (an IPv6 address cut to its /64, one customer's
//! prefix, RFC 6177, so that a client cannot multiply its allowance by rotating through
//! its own prefix) and, for some quotas, [`network_key`].

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The networks whose `X-Forwarded-For` is believed (setting `trusted_proxies`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// Most entries accepted in `trusted_proxies`.
    pub const MAX_ENTRIES: usize = 64;

    /// `127.0.0.1` and `::1` only: the default, for a proxy on the same host. Not all of
    /// `127.0.0.0/8`: a local process binding to `127.0.0.2` is not a proxy.
    pub fn loopback() -> Self {
        Self(vec![
            IpNet::V4(Ipv4Net::new_assert(Ipv4Addr::LOCALHOST, 32)),
            IpNet::V6(Ipv6Net::new_assert(Ipv6Addr::LOCALHOST, 128)),
        ])
    }

    #[cfg(any(test, feature = "testkit"))]
    /// No proxy is trusted: the header is never read.
    pub fn none() -> Self {
        Self(Vec::new())
    }

    /// Parses addresses (`192.0.2.1`, `::1`) and networks in CIDR notation
    /// (`10.0.0.0/8`, `2001:db8::/32`).
    ///
    /// # Errors
    /// The rule broken, naming the entry: not an address or network, or more than
    /// [`Self::MAX_ENTRIES`] entries.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Self, String> {
        if entries.len() > Self::MAX_ENTRIES {
            return Err(format!("at most {} entries", Self::MAX_ENTRIES));
        }
        let mut nets = Vec::with_capacity(entries.len());
        for e in entries {
            let e = e.as_ref().trim();
            let net = e
                .parse::<IpNet>()
                .or_else(|_| e.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| format!("{e:?} is not an IP address or a network in CIDR notation (10.0.0.0/8)"))?;
            nets.push(net.trunc());
        }
        Ok(Self(nets))
    }

    /// Whether `ip` (IPv4-mapped IPv6 read as IPv4) is one of these networks.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.iter().any(|n| n.contains(&ip))
    }

    /// The entries that take in every address (`0.0.0.0/0`, `::/0`): with them anyone can
    /// name any client in `X-Forwarded-For` (a `check-config` warning).
    pub fn everyone(&self) -> Vec<String> {
        self.describe_if(|n| n.prefix_len() == 0)
    }

    /// The entries that hold a loopback address: a `check-config` warning when isto
    /// listens on a non-loopback address, since then any process on the host (not only
    /// the proxy) can connect from loopback and name any client.
    pub fn loopback_entries(&self) -> Vec<String> {
        let loops = [IpAddr::V4(Ipv4Addr::LOCALHOST), IpAddr::V6(Ipv6Addr::LOCALHOST)];
        self.describe_if(|n| loops.iter().any(|l| n.contains(l)) || n.addr().is_loopback())
    }

    /// The entries in CIDR notation (for `isto admin check-config`).
    pub fn describe(&self) -> Vec<String> {
        self.describe_if(|_| true)
    }

    /// The entries `keep` keeps, in CIDR notation.
    fn describe_if(&self, keep: impl Fn(&IpNet) -> bool) -> Vec<String> {
        self.0.iter().filter(|n| keep(n)).map(ToString::to_string).collect()
    }
}

/// The key a client is counted under by every per-client limit and quota
/// ([`ClientAddr::key`]); every request without a peer address shares `None`.
pub type ClientKey = Option<IpAddr>;

/// What an MCP call cost beyond its request, charged to its client's per-address rate
/// bucket: the app's front layer puts one into each MCP request's extensions
/// (`app::rate::mcp_charge`), and the MCP tools call [`Charge::cpu`] once a call ran.
#[derive(Clone)]
pub struct Charge(std::sync::Arc<dyn Fn(std::time::Duration) + Send + Sync>);

impl Charge {
    /// A charge that hands the CPU time used to `take`.
    pub fn new(take: impl Fn(std::time::Duration) + Send + Sync + 'static) -> Self {
        Self(std::sync::Arc::new(take))
    }

    /// Charges `used` CPU time to the client.
    pub fn cpu(&self, used: std::time::Duration) {
        (self.0)(used);
    }
}

impl std::fmt::Debug for Charge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Charge")
    }
}

/// The client a request comes from; put into every request's extensions by the app's
/// middleware, read by the faces for their limits and quotas. `None` inside when the
/// router runs without a peer address (driven in-process by a test).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientAddr(pub Option<IpAddr>);

impl ClientAddr {
    /// The client of a request from `peer` carrying `forwarded_for` (the
    /// `X-Forwarded-For` values joined by `,`; the de-facto standard that RFC 7239 §1
    /// describes), believed only when `peer` is trusted. The header is read from the
    /// right: each entry appended by a trusted proxy is skipped and the first entry that
    /// is not trusted is the client; entries to its left are the client's own words and
    /// are never read. A header that does not parse leaves the last proxy as the client.
    pub fn resolve(peer: Option<SocketAddr>, forwarded_for: Option<&str>, trusted: &TrustedProxies) -> Self {
        let Some(peer) = peer.map(|p| p.ip().to_canonical()) else {
            return Self(None);
        };
        if !trusted.contains(peer) {
            return Self(Some(peer));
        }
        let mut client = peer;
        // At most 32 hops are looked at: a longer header is a client talking.
        for entry in forwarded_for.unwrap_or_default().rsplit(',').take(32) {
            match parse_entry(entry) {
                Some(ip) if trusted.contains(ip) => client = ip,
                Some(ip) => return Self(Some(ip)),
                None => break,
            }
        }
        Self(Some(client))
    }

    /// The counting key: IPv4 as is, IPv6 cut to its /64 (see the module docs).
    pub fn key(self) -> ClientKey {
        self.0.map(|a| match a {
            IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
            v4 => v4,
        })
    }
}

/// The `check-config` warning for `trusted_proxies` holding a loopback address while isto
/// listens on `listen`, a non-loopback address: then the proxy is not the only way in,
/// and any local process can connect from loopback and name any client. `None` when
/// `listen` is loopback or no loopback address is trusted.
pub fn loopback_proxy_warning(trusted: &TrustedProxies, listen: SocketAddr) -> Option<String> {
    let loops = trusted.loopback_entries();
    if listen.ip().to_canonical().is_loopback() || loops.is_empty() {
        return None;
    }
    Some(format!(
        "trusted_proxies: {} trusted while isto listens on {listen}, a non-loopback address: clients reach isto \
         directly, and any process on this host can name any client in X-Forwarded-For; if no proxy on this \
         host forwards to isto, set trusted_proxies = [] (or list only your proxies' addresses)",
        loops.join(", ")
    ))
}

/// The network of a counting key ([`ClientAddr::key`]): an IPv4 address cut to its /24,
/// an IPv6 address to its /48 (a site's usual allocation, RFC 6177); `None` stays `None`.
pub fn network_key(key: ClientKey) -> ClientKey {
    key.map(|a| match a.to_canonical() {
        IpAddr::V4(v4) => IpAddr::V4(Ipv4Addr::from(u32::from(v4) & 0xffff_ff00)),
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !((1u128 << 80) - 1))),
    })
}

/// One `X-Forwarded-For` entry: an address, optionally with a port (`192.0.2.1:4000`,
/// `[2001:db8::1]:4000`).
fn parse_entry(entry: &str) -> Option<IpAddr> {
    let e = entry.trim();
    e.parse::<IpAddr>().ok().or_else(|| e.parse::<SocketAddr>().ok().map(|a| a.ip())).map(|a| a.to_canonical())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> Option<SocketAddr> {
        Some(s.parse().unwrap())
    }

    fn ip(s: &str) -> ClientAddr {
        ClientAddr(Some(s.parse().unwrap()))
    }

    #[test]
    fn keys_drop_the_port_and_fold_ipv6() {
        let t = TrustedProxies::loopback();
        let key = |a: &str| ClientAddr::resolve(addr(a), None, &t).key();
        assert_eq!(key("192.0.2.1:1000"), key("192.0.2.1:2000"));
        assert_eq!(key("[::ffff:192.0.2.1]:1"), key("192.0.2.1:1"));
        assert_eq!(key("[2001:db8:1:2:3::1]:1"), key("[2001:db8:1:2:ffff::9]:1"));
        assert_ne!(key("[2001:db8:1:2::1]:1"), key("[2001:db8:1:3::1]:1"));
        assert_eq!(ClientAddr::resolve(None, Some("192.0.2.1"), &t), ClientAddr(None));
    }

    #[test]
    fn a_loopback_proxy_forwards_the_client() {
        let t = TrustedProxies::loopback();
        let via = |peer: &str, xff: Option<&str>| ClientAddr::resolve(addr(peer), xff, &t);
        assert_eq!(via("127.0.0.1:9", Some("10.0.0.1, 192.0.2.7")), ip("192.0.2.7"));
        assert_eq!(via("[::1]:9", Some("192.0.2.7:4000")), ip("192.0.2.7"));
        assert_eq!(via("127.0.0.1:9", Some("garbage")), ip("127.0.0.1"));
        assert_eq!(via("127.0.0.1:9", None), ip("127.0.0.1"));
        // Not from a trusted proxy: the header is the client's own words and is ignored.
        assert_eq!(via("192.0.2.9:9", Some("192.0.2.7")), ip("192.0.2.9"));
    }

    #[test]
    fn a_chain_of_trusted_proxies_is_walked_from_the_right() {
        let t = TrustedProxies::parse(&["127.0.0.1", "10.0.0.0/8"]).unwrap();
        let via = |xff: &str| ClientAddr::resolve(addr("127.0.0.1:9"), Some(xff), &t);
        // The client forged "198.51.100.1"; the edge proxy 10.1.1.1 appended what it saw.
        assert_eq!(via("198.51.100.1, 192.0.2.7, 10.1.1.1"), ip("192.0.2.7"));
        // Every hop trusted: the leftmost trusted hop is as far as can be believed.
        assert_eq!(via("10.2.2.2, 10.1.1.1"), ip("10.2.2.2"));
        // A broken entry stops the walk at the last proxy believed.
        assert_eq!(via("192.0.2.7, junk, 10.1.1.1"), ip("10.1.1.1"));
    }

    #[test]
    fn another_loopback_address_is_not_a_proxy_by_default() {
        let t = TrustedProxies::loopback();
        assert_eq!(ClientAddr::resolve(addr("127.0.0.2:9"), Some("192.0.2.7"), &t), ip("127.0.0.2"));
        assert_eq!(ClientAddr::resolve(addr("127.0.0.1:9"), Some("127.0.0.2, 192.0.2.7"), &t), ip("192.0.2.7"));
        assert_eq!(TrustedProxies::loopback().loopback_entries(), vec!["127.0.0.1/32", "::1/128"]);
        let t = TrustedProxies::parse(&["10.0.0.0/8", "127.0.0.0/8"]).unwrap();
        assert_eq!(t.loopback_entries(), vec!["127.0.0.0/8"]);
        assert!(TrustedProxies::parse(&["10.0.0.1"]).unwrap().loopback_entries().is_empty());
        let public: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let w = loopback_proxy_warning(&TrustedProxies::loopback(), public).unwrap();
        assert!(
            w.starts_with("trusted_proxies: 127.0.0.1/32, ::1/128 trusted while isto listens on 0.0.0.0:8080"),
            "{w}"
        );
        assert_eq!(loopback_proxy_warning(&TrustedProxies::loopback(), "127.0.0.1:8080".parse().unwrap()), None);
        assert_eq!(loopback_proxy_warning(&TrustedProxies::none(), public), None);
    }

    #[test]
    fn networks_are_ipv4_slash_24_and_ipv6_slash_48() {
        let net = |s: &str| network_key(Some(s.parse().unwrap())).map(|a| a.to_string());
        assert_eq!(net("192.0.2.77"), Some("192.0.2.0".into()));
        assert_eq!(net("127.0.0.30"), net("127.0.0.1"));
        assert_ne!(net("127.0.1.1"), net("127.0.0.1"));
        assert_eq!(net("2001:db8:1:2::"), Some("2001:db8:1::".into()));
        assert_eq!(net("2001:db8:1:ffff::"), net("2001:db8:1::"));
        assert_ne!(net("2001:db8:2::"), net("2001:db8:1::"));
        assert_eq!(network_key(None), None);
    }

    #[test]
    fn no_trusted_proxy_means_the_socket_peer() {
        let t = TrustedProxies::none();
        assert_eq!(ClientAddr::resolve(addr("127.0.0.1:9"), Some("192.0.2.7"), &t), ip("127.0.0.1"));
    }

    #[test]
    fn trusted_proxies_parse_addresses_and_networks() {
        let t = TrustedProxies::parse(&["192.0.2.1", "10.9.9.9/8", "2001:db8::/32"]).unwrap();
        assert_eq!(t.describe(), vec!["192.0.2.1/32", "10.0.0.0/8", "2001:db8::/32"]);
        assert!(t.contains("::ffff:10.1.2.3".parse().unwrap()));
        assert!(!t.contains("192.0.2.2".parse().unwrap()));
        let err = TrustedProxies::parse(&["10.0.0.0/33"]).unwrap_err();
        assert!(err.contains("\"10.0.0.0/33\"") && err.contains("CIDR"), "{err}");
        let err = TrustedProxies::parse(&vec!["::1"; 65]).unwrap_err();
        assert_eq!(err, format!("at most {} entries", TrustedProxies::MAX_ENTRIES));
        assert!(TrustedProxies::loopback().contains("127.0.0.1".parse().unwrap()));
        assert!(TrustedProxies::loopback().contains("::ffff:127.0.0.1".parse().unwrap()));
        assert!(!TrustedProxies::loopback().contains("127.1.2.3".parse().unwrap()), "not all of 127.0.0.0/8");
        assert!(!TrustedProxies::loopback().contains("127.0.0.2".parse().unwrap()));
        assert!(TrustedProxies::loopback().everyone().is_empty());
        assert_eq!(TrustedProxies::parse(&["10.0.0.0/8", "::/0"]).unwrap().everyone(), vec!["::/0"]);
    }
}
