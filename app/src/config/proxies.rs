//! `HOOKBOX_TRUSTED_PROXIES`: the load balancers in front of hookbox, and from them the client
//! address the sign-in throttle and the audit log use.
//!
//! Only a request whose TCP peer is a trusted proxy has its client address taken from
//! `X-Forwarded-For`: the right-most entry that is not itself a trusted proxy (every proxy
//! appends the address it saw, so entries left of the first untrusted one may be forged). Any
//! other request's client address is its TCP peer, whatever headers it sends.

use http::HeaderMap;
use ipnet::IpNet;
use std::net::IpAddr;

/// The environment variable: comma-separated addresses or CIDR ranges.
pub const TRUSTED_PROXIES_ENV: &str = "HOOKBOX_TRUSTED_PROXIES";

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// `10.0.0.0/8, 192.168.1.7, ::1`; an empty text trusts no one. The error names the entry.
    pub fn parse(text: &str) -> Result<TrustedProxies, String> {
        let mut nets = Vec::new();
        for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let net = entry
                .parse::<IpNet>()
                .or_else(|_| entry.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| {
                    format!(
                        "{TRUSTED_PROXIES_ENV}: {entry:?} is not an IP address or CIDR range (like 10.0.0.0/8)"
                    )
                })?;
            nets.push(net.trunc());
        }
        Ok(TrustedProxies(nets))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn trusts(&self, address: IpAddr) -> bool {
        let address = canonical(address);
        self.0.iter().any(|net| net.contains(&address))
    }

    /// The client address of a request as it is logged, limited and shown: that of
    /// [`Self::client_address`], or "unknown" when the connection's peer is not known.
    pub fn client_of(&self, peer: Option<std::net::SocketAddr>, headers: &HeaderMap) -> String {
        match peer {
            Some(peer) => self.client_address(peer.ip(), headers).to_string(),
            None => "unknown".into(),
        }
    }

    /// The client address of a request from `peer` carrying `headers`.
    pub fn client_address(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let peer = canonical(peer);
        if !self.trusts(peer) {
            return peer;
        }
        // Every X-Forwarded-For header, in order, as one list; read from the right.
        let entries: Vec<&str> = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect();
        let mut client = peer;
        for entry in entries.iter().rev() {
            let Some(address) = parse_entry(entry) else {
                // Garbage where an address should be: nothing left of it can be believed.
                return client;
            };
            client = address;
            if !self.trusts(address) {
                return address;
            }
        }
        client
    }

    /// For `hookbox check-config`.
    pub fn describe(&self) -> String {
        if self.0.is_empty() {
            format!("{TRUSTED_PROXIES_ENV}: none (client address = TCP peer)")
        } else {
            let nets: Vec<String> = self.0.iter().map(ToString::to_string).collect();
            format!("{TRUSTED_PROXIES_ENV}: {}", nets.join(", "))
        }
    }
}

/// An IPv4 address mapped into IPv6 (`::ffff:10.0.0.1`, what a dual-stack socket reports) is
/// the IPv4 address.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        v4 => v4,
    }
}

/// One `X-Forwarded-For` entry: an address, perhaps with a port (`1.2.3.4:567`, `[::1]:567`).
fn parse_entry(entry: &str) -> Option<IpAddr> {
    if let Ok(address) = entry.parse::<IpAddr>() {
        return Some(canonical(address));
    }
    entry
        .parse::<std::net::SocketAddr>()
        .ok()
        .map(|s| canonical(s.ip()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn forwarded(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(
                "x-forwarded-for",
                HeaderValue::from_str(v).expect("header value"),
            );
        }
        headers
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    #[test]
    fn only_a_trusted_peer_may_name_the_client() {
        let proxies = TrustedProxies::parse("10.0.0.0/8, 192.168.1.7").expect("valid");
        let headers = forwarded(&["203.0.113.9"]);
        assert_eq!(
            proxies.client_address(ip("10.1.2.3"), &headers),
            ip("203.0.113.9")
        );
        // Not a trusted proxy: its header is ignored.
        assert_eq!(
            proxies.client_address(ip("198.51.100.1"), &headers),
            ip("198.51.100.1")
        );
        assert_eq!(
            TrustedProxies::default().client_address(ip("10.1.2.3"), &headers),
            ip("10.1.2.3")
        );
    }

    #[test]
    fn the_right_most_untrusted_entry_is_the_client() {
        let proxies = TrustedProxies::parse("10.0.0.0/8").expect("valid");
        // The client forged "1.1.1.1"; the edge proxy appended what it saw, then an inner proxy.
        let headers = forwarded(&["1.1.1.1, 203.0.113.9", "10.0.0.5"]);
        assert_eq!(
            proxies.client_address(ip("10.0.0.2"), &headers),
            ip("203.0.113.9")
        );
        // Garbage stops the walk at the last address that could be believed.
        let headers = forwarded(&["203.0.113.9, not-an-ip, 10.0.0.5"]);
        assert_eq!(
            proxies.client_address(ip("10.0.0.2"), &headers),
            ip("10.0.0.5")
        );
        // Ports and mapped addresses.
        let headers = forwarded(&["[2001:db8::1]:4711"]);
        assert_eq!(
            proxies.client_address(ip("::ffff:10.0.0.2"), &headers),
            ip("2001:db8::1")
        );
        // No header from a trusted proxy: the proxy itself.
        assert_eq!(
            proxies.client_address(ip("10.0.0.2"), &HeaderMap::new()),
            ip("10.0.0.2")
        );
    }

    #[test]
    fn a_bad_entry_is_named() {
        let err = TrustedProxies::parse("10.0.0.0/8, lb.internal").expect_err("invalid");
        assert!(err.contains("\"lb.internal\""), "{err}");
        assert!(err.contains(TRUSTED_PROXIES_ENV), "{err}");
        assert!(TrustedProxies::parse("10.0.0.0/33").is_err());
        assert!(TrustedProxies::parse(" ").expect("valid").is_empty());
    }
}
