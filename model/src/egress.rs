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

/// The host a call goes to, as the URL standard reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallHost {
    /// An address, however the URL spelled it (`0x7f.1`, `127.0.0.1.`, fullwidth digits …).
    Address(IpAddr),
    /// A name (lower case, IDNA-mapped), checked on every address it resolves to.
    Name(String),
}

/// A URL called on a tenant's behalf, parsed once by the URL standard's rules: the parser the
/// HTTP client itself uses, so that the host checked is the host called, however it is spelled
/// (trailing dots, hexadecimal or octal parts, percent-escapes, fullwidth digits, an empty port,
/// a backslash for a slash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallUrl {
    url: url::Url,
    host: CallHost,
    port: u16,
}

impl CallUrl {
    /// `text` parsed, or why it cannot be called (not an `http`/`https` URL with a host).
    pub fn parse(text: &str) -> Result<Self, String> {
        let url = url::Url::parse(text).map_err(|e| format!("{text:?} is not a URL: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("{text:?}: only http:// and https:// URLs are called"));
        }
        let host = match url.host() {
            Some(url::Host::Ipv4(v4)) => CallHost::Address(IpAddr::V4(v4)),
            Some(url::Host::Ipv6(v6)) => CallHost::Address(IpAddr::V6(v6)),
            Some(url::Host::Domain(name)) => CallHost::Name(name.to_ascii_lowercase()),
            None => return Err(format!("{text:?} names no host")),
        };
        let port = url
            .port_or_known_default()
            .ok_or_else(|| format!("{text:?} names no port"))?;
        Ok(Self { url, host, port })
    }

    /// The URL as parsed (what the HTTP client is given).
    pub fn url(&self) -> &url::Url {
        &self.url
    }

    /// The host called.
    pub fn host(&self) -> &CallHost {
        &self.host
    }

    /// The port called (the scheme's when the URL gives none, or an empty one).
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl EgressPolicy {
    /// Why a call to `target` is refused by the address it names, if it names one (a name is
    /// judged on what it resolves to, when it is called).
    pub fn refuses_literal(&self, target: &CallUrl) -> Option<String> {
        match target.host() {
            CallHost::Address(ip) => self.refuses(*ip),
            CallHost::Name(_) => None,
        }
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

    /// Every spelling of loopback found from outside (#50), and the URL standard's other host
    /// forms: each is read as the address the HTTP client connects to, and refused.
    #[test]
    fn every_spelling_of_an_address_is_read_as_the_client_reads_it() {
        let policy = EgressPolicy::new(&[], Vec::new()).expect("policy");
        for (url, address, port) in [
            ("http://127.0.0.1.:8080/", "127.0.0.1", 8080),
            ("http://0x7f.1.:8080/", "127.0.0.1", 8080),
            ("http://127.0.0.1:/", "127.0.0.1", 80),
            ("http://[::1]:/", "::1", 80),
            ("http://127.0.0.%31:8080/", "127.0.0.1", 8080),
            (
                "http://\u{ff11}\u{ff12}\u{ff17}.\u{ff10}.\u{ff10}.\u{ff11}:8080/",
                "127.0.0.1",
                8080,
            ),
            ("http://127\u{3002}0\u{3002}0\u{3002}1:8080/", "127.0.0.1", 8080),
            ("http://127.0.0.1:8080\\@example.com/", "127.0.0.1", 8080),
            ("http://127.0.0.1:8080\\", "127.0.0.1", 8080),
            ("http://127.1/", "127.0.0.1", 80),
            ("http://2130706433/", "127.0.0.1", 80),
            ("http://0x7f000001/", "127.0.0.1", 80),
            ("http://0177.0.0.1/", "127.0.0.1", 80),
            ("http://0177.1:9/", "127.0.0.1", 9),
            ("http://127.0.0.1%2e/", "127.0.0.1", 80),
            ("http://12\t7.0.0.\n1/", "127.0.0.1", 80),
            ("  http://127.0.0.1/ ", "127.0.0.1", 80),
            ("HTTP://127.0.0.1/", "127.0.0.1", 80),
            ("http:127.0.0.1/", "127.0.0.1", 80),
            ("http:/\\127.0.0.1/", "127.0.0.1", 80),
            ("http://user:pw@127.0.0.1:9/", "127.0.0.1", 9),
            ("http://example.com@127.0.0.1/", "127.0.0.1", 80),
            ("http://127.0.0.1#@example.com/", "127.0.0.1", 80),
            ("http://127.0.0.1?@example.com/", "127.0.0.1", 80),
            ("https://127.0.0.1/", "127.0.0.1", 443),
            ("http://0/", "0.0.0.0", 80),
            ("http://[::]/", "::", 80),
            ("http://[0:0:0:0:0:0:0:1]/", "::1", 80),
            ("http://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1", 80),
            ("http://[::ffff:7f00:1]/", "::ffff:127.0.0.1", 80),
            ("http://169.254.169.254./latest", "169.254.169.254", 80),
            ("http://0xa9fea9fe/", "169.254.169.254", 80),
            ("http://10.0.0.1:65535/", "10.0.0.1", 65535),
        ] {
            let target = CallUrl::parse(url).unwrap_or_else(|e| panic!("{url:?}: {e}"));
            assert_eq!(target.host(), &CallHost::Address(ip(address)), "{url:?}");
            assert_eq!(target.port(), port, "{url:?}");
            assert!(policy.refuses_literal(&target).is_some(), "{url:?} allowed");
        }
    }

    #[test]
    fn names_are_left_to_resolution_and_what_cannot_be_called_is_refused() {
        let policy = EgressPolicy::new(&[], Vec::new()).expect("policy");
        for (url, name, port) in [
            ("http://LOCALHOST:9/", "localhost", 9),
            ("https://prom.example", "prom.example", 443),
            ("http://prom.example./x", "prom.example.", 80),
            ("http://xn--bcher-kva.example/", "xn--bcher-kva.example", 80),
            ("http://b\u{fc}cher.example/", "xn--bcher-kva.example", 80),
            // The URL standard skips any number of slashes after a special scheme.
            ("http:///x", "x", 80),
        ] {
            let target = CallUrl::parse(url).unwrap_or_else(|e| panic!("{url:?}: {e}"));
            assert_eq!(target.host(), &CallHost::Name(name.to_string()), "{url:?}");
            assert_eq!(target.port(), port, "{url:?}");
            assert!(policy.refuses_literal(&target).is_none(), "{url:?}");
        }
        for url in [
            "ftp://127.0.0.1/",
            "file:///etc/passwd",
            "http://x:port",
            "http://127.0.0.1:65536/",
            "http://[::1/",
            "http://1.2.3.4.5.6/",
            "http://0x100000000/",
            "//127.0.0.1/",
            "127.0.0.1:80",
            "",
        ] {
            assert!(CallUrl::parse(url).is_err(), "{url:?} parsed");
        }
    }
}
