//! Where the control plane may call on a tenant's behalf (a metrics provider's Prometheus, an
//! application's shutdown hook): the operator's egress policy. Loopback, link-local, private,
//! unspecified and multicast addresses and the nodes' own addresses are refused unless a
//! network the operator allows holds them or the URL names a host the operator allows; every
//! other address is allowed. Pure: the API checks a URL's address when it is written, and the
//! leader checks every address a name resolves to (and every redirect) when it calls.

use std::net::IpAddr;

/// An allowed network or host (`--tenant-egress-allow`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allowed {
    /// Every address of `addr/prefix`.
    Network {
        /// The network's address.
        addr: IpAddr,
        /// Its prefix length.
        prefix: u8,
    },
    /// A host name, whatever it resolves to (lower case).
    Host(String),
}

/// The operator's egress policy for calls made on a tenant's behalf.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EgressPolicy {
    allowed: Vec<Allowed>,
    /// The nodes' own addresses (refused unless allowed).
    nodes: Vec<IpAddr>,
}

/// Whether `ip` lies in `addr/prefix`.
fn within(ip: IpAddr, addr: IpAddr, prefix: u8) -> bool {
    match (ip, addr) {
        (IpAddr::V4(ip), IpAddr::V4(net)) => {
            let bits = u32::from(prefix.min(32));
            let mask = if bits == 0 { 0 } else { u32::MAX << (32 - bits) };
            u32::from(ip) & mask == u32::from(net) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(net)) => {
            let bits = u32::from(prefix.min(128));
            let mask = if bits == 0 { 0 } else { u128::MAX << (128 - bits) };
            u128::from(ip) & mask == u128::from(net) & mask
        }
        _ => false,
    }
}

/// Why `ip` is refused by default, if it is.
fn special(ip: IpAddr) -> Option<&'static str> {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    match ip {
        IpAddr::V4(v4) if v4.is_loopback() => Some("a loopback address"),
        IpAddr::V4(v4) if v4.is_link_local() => {
            Some("a link-local address (cloud metadata endpoints live there)")
        }
        IpAddr::V4(v4) if v4.is_private() || within(ip, IpAddr::from([100, 64, 0, 0]), 10) => {
            Some("a private address")
        }
        IpAddr::V4(v4) if v4.is_unspecified() || v4.is_broadcast() || v4.is_multicast() => {
            Some("not a unicast address")
        }
        IpAddr::V6(v6) if v6.is_loopback() => Some("a loopback address"),
        IpAddr::V6(v6) if v6.is_unspecified() || v6.is_multicast() => Some("not a unicast address"),
        IpAddr::V6(_) if within(ip, "fe80::".parse().unwrap_or(ip), 10) => {
            Some("a link-local address (cloud metadata endpoints live there)")
        }
        IpAddr::V6(_) if within(ip, "fc00::".parse().unwrap_or(ip), 7) => Some("a private address"),
        _ => None,
    }
}

impl EgressPolicy {
    /// The policy allowing `entries` (networks `10.1.0.0/16`, addresses `192.0.2.7`, host
    /// names `prometheus.internal`), refusing the nodes' own `nodes` addresses unless allowed.
    pub fn new(entries: &[String], nodes: Vec<IpAddr>) -> Result<Self, String> {
        let mut allowed = Vec::new();
        for entry in entries.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
            let (addr, prefix) = match entry.split_once('/') {
                Some((addr, prefix)) => (addr, Some(prefix)),
                None => (entry, None),
            };
            match (addr.parse::<IpAddr>(), prefix) {
                (Ok(addr), prefix) => {
                    let most = if addr.is_ipv4() { 32 } else { 128 };
                    let prefix = match prefix {
                        None => most,
                        Some(text) => text
                            .parse::<u8>()
                            .ok()
                            .filter(|p| *p <= most)
                            .ok_or_else(|| format!("{entry:?}: the prefix is 0 to {most}"))?,
                    };
                    allowed.push(Allowed::Network { addr, prefix });
                }
                (Err(_), None)
                    if entry.len() <= 253
                        && entry
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.') =>
                {
                    allowed.push(Allowed::Host(entry.to_ascii_lowercase()));
                }
                _ => {
                    return Err(format!(
                        "{entry:?} is neither a network (10.0.0.0/8), an address nor a host name"
                    ))
                }
            }
        }
        Ok(Self { allowed, nodes })
    }

    /// Whether the operator allows `host` by name.
    pub fn allows_host(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.allowed
            .iter()
            .any(|a| matches!(a, Allowed::Host(name) if *name == host))
    }

    /// Why a call to `ip` is refused, if it is.
    pub fn refuses(&self, ip: IpAddr) -> Option<String> {
        let allowed = self
            .allowed
            .iter()
            .any(|a| matches!(a, Allowed::Network { addr, prefix } if within(ip, *addr, *prefix)));
        if allowed {
            return None;
        }
        if let Some(why) = special(ip) {
            return Some(format!("{ip} is {why}"));
        }
        self.nodes
            .contains(&ip)
            .then(|| format!("{ip} is an address of this control plane's own nodes"))
    }
}

/// The host and port a URL names (`http://host:port/…`, the scheme's port when left out; IPv6
/// hosts in brackets).
pub fn host_and_port(url: &str) -> Option<(String, u16)> {
    let (scheme, rest) = url.split_once("://")?;
    let default = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(port) => port.parse().ok()?,
            None => default,
        };
        return Some((host.to_string(), port));
    }
    match authority.rsplit_once(':') {
        Some((host, port)) => Some((host.to_string(), port.parse().ok()?)),
        None => Some((authority.to_string(), default)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    #[test]
    fn special_ranges_and_the_nodes_are_refused_unless_allowed() {
        let policy = EgressPolicy::new(&[], vec![ip("203.0.113.5")]).expect("policy");
        for (address, refused) in [
            ("127.0.0.1", true),
            ("127.9.9.9", true),
            ("169.254.169.254", true),
            ("10.1.2.3", true),
            ("172.16.0.1", true),
            ("192.168.1.1", true),
            ("100.64.0.1", true),
            ("0.0.0.0", true),
            ("224.0.0.1", true),
            ("::1", true),
            ("fe80::1", true),
            ("fd00::1", true),
            ("::ffff:127.0.0.1", true),
            ("203.0.113.5", true),
            ("93.184.216.34", false),
            ("2606:2800:220:1::1", false),
        ] {
            assert_eq!(policy.refuses(ip(address)).is_some(), refused, "{address}");
        }
        let policy = EgressPolicy::new(
            &[
                "10.1.0.0/16".into(),
                "127.0.0.2".into(),
                "prometheus.internal".into(),
            ],
            Vec::new(),
        )
        .expect("policy");
        assert!(policy.refuses(ip("10.1.9.9")).is_none());
        assert!(policy.refuses(ip("10.2.0.1")).is_some());
        assert!(policy.refuses(ip("127.0.0.2")).is_none());
        assert!(policy.refuses(ip("127.0.0.1")).is_some());
        assert!(policy.allows_host("Prometheus.Internal."));
        assert!(!policy.allows_host("other.internal"));
        for bad in ["10.0.0.0/33", "a b", "::1/200", "host:80"] {
            assert!(EgressPolicy::new(&[bad.into()], Vec::new()).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_urls_host_and_port() {
        for (url, expected) in [
            ("http://127.0.0.1:9090/api", Some(("127.0.0.1", 9090))),
            ("https://prom.example", Some(("prom.example", 443))),
            ("http://user@host:1/x?y", Some(("host", 1))),
            ("http://[::1]:9090/", Some(("::1", 9090))),
            ("http://[fe80::1]/", Some(("fe80::1", 80))),
            ("ftp://x", None),
            ("http://x:port", None),
        ] {
            let got = host_and_port(url);
            assert_eq!(got.as_ref().map(|(h, p)| (h.as_str(), *p)), expected, "{url}");
        }
    }
}
