//! The API address a node tells the other members and clients: `GET /cluster`, `drover cluster
//! status`, `drover get members` and the default of Krake's hook endpoint all show it.
//!
//! A wildcard listener (`0.0.0.0`, `[::]`) is no address anyone can connect to, so a node whose
//! `--api-addr` is one and that is given no `--advertise-api-addr` takes the host of its own
//! peer address — its `--initial-cluster` entry, else a specific `--peer-addr` — with the API's
//! port. A node that knows no such host refuses to start (as etcd refuses a wildcard listener
//! without advertised URLs) rather than tell everyone `0.0.0.0`.

use std::net::{IpAddr, SocketAddr};

use crate::error::NodeError;
use crate::setting::invalid;

/// The advertised API address: `explicit` when given (checked), else derived as the module says.
/// `own_peer` is this node's `--initial-cluster` entry (`host:port`), when it has one.
pub fn advertised_api_addr(
    explicit: Option<String>,
    api_addr: SocketAddr,
    own_peer: Option<&str>,
    peer_addr: SocketAddr,
) -> Result<String, NodeError> {
    if let Some(addr) = explicit {
        let host = host_of(&addr).ok_or_else(|| {
            invalid(
                "advertise-api-addr",
                format!("{addr:?} must be host:port, the address clients reach this node's API at"),
            )
        })?;
        if is_wildcard(host) {
            return Err(invalid(
                "advertise-api-addr",
                format!("{addr} is no address others can connect to: give this node's host name or address"),
            ));
        }
        return Ok(addr);
    }
    if !api_addr.ip().is_unspecified() {
        return Ok(api_addr.to_string());
    }
    let derived = own_peer
        .and_then(host_of)
        .filter(|host| !is_wildcard(host))
        .map(str::to_string)
        .or_else(|| (!peer_addr.ip().is_unspecified()).then(|| bracketed(peer_addr.ip())));
    match derived {
        Some(host) => Ok(format!("{host}:{}", api_addr.port())),
        None => Err(invalid(
            "advertise-api-addr",
            format!(
                "is required: --api-addr {api_addr} listens on every address, and neither this node's \
                 --initial-cluster entry nor --peer-addr names a host others reach it at"
            ),
        )),
    }
}

/// The host of `host:port` (an IPv6 host keeps its brackets), when the port is a valid one.
fn host_of(addr: &str) -> Option<&str> {
    let (host, port) = addr.rsplit_once(':')?;
    let port_ok = port.parse::<u16>().is_ok_and(|p| p > 0);
    (!host.is_empty() && port_ok).then_some(host)
}

/// True for `0.0.0.0` and `[::]` (or `::`), which name every local address and none remote.
fn is_wildcard(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_unspecified())
}

fn bracketed(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().expect("socket address")
    }

    #[test]
    fn a_wildcard_listener_advertises_the_host_of_its_initial_cluster_entry() {
        let cases = [
            (
                "0.0.0.0:7400",
                Some("10.0.0.1:7500"),
                "0.0.0.0:7500",
                "10.0.0.1:7400",
            ),
            ("[::]:7400", Some("[fd00::1]:7500"), "[::]:7500", "[fd00::1]:7400"),
            (
                "0.0.0.0:7400",
                Some("drover-1.peers:7500"),
                "0.0.0.0:7500",
                "drover-1.peers:7400",
            ),
            // No entry (a node added at run time): a specific peer listener names the host.
            ("0.0.0.0:8400", None, "10.0.0.4:7500", "10.0.0.4:8400"),
            ("[::]:7400", None, "[fd00::4]:7500", "[fd00::4]:7400"),
            // A specific listener is its own advertised address.
            (
                "10.0.0.9:7400",
                Some("10.0.0.1:7500"),
                "0.0.0.0:7500",
                "10.0.0.9:7400",
            ),
        ];
        for (api, own_peer, peer, expected) in cases {
            let advertised = advertised_api_addr(None, addr(api), own_peer, addr(peer)).expect("derived");
            assert_eq!(
                advertised, expected,
                "--api-addr {api}, entry {own_peer:?}, --peer-addr {peer}"
            );
        }
    }

    /// The README's "Running a node" flags: every place naming the node's API gets its host.
    #[test]
    fn the_readmes_node_advertises_its_peer_host_and_krake_hooks_default_to_it() {
        let args = crate::config::ServeArgs {
            node_id: Some(2),
            data_dir: Some("/tmp/drover-advertise".into()),
            api_addr: Some(addr("0.0.0.0:7400")),
            peer_addr: Some(addr("0.0.0.0:7500")),
            initial_cluster: Some("1=10.0.0.1:7500,2=10.0.0.2:7500,3=10.0.0.3:7500".into()),
            cluster_secret: Some("0123456789abcdef".into()),
            ..Default::default()
        };
        let config = crate::config::NodeConfig::load(&args).expect("valid");
        assert_eq!(config.advertise_api_addr, "10.0.0.2:7400");
        assert_eq!(config.krake.hook_endpoint, "http://10.0.0.2:7400");
        let alone = crate::config::ServeArgs {
            initial_cluster: None,
            ..args
        };
        let error = crate::config::NodeConfig::load(&alone).expect_err("nothing to advertise");
        assert!(error.to_string().contains("advertise-api-addr"), "{error}");
    }

    #[test]
    fn no_reachable_host_is_refused_by_name() {
        for own_peer in [None, Some("0.0.0.0:7500"), Some("[::]:7500")] {
            let error = advertised_api_addr(None, addr("0.0.0.0:7400"), own_peer, addr("0.0.0.0:7500"))
                .expect_err("nothing to derive from");
            let text = error.to_string();
            assert!(
                text.contains("advertise-api-addr") && text.contains("is required"),
                "{text}"
            );
        }
    }

    #[test]
    fn an_explicit_address_wins_unless_it_is_a_wildcard_or_not_host_port() {
        let given = advertised_api_addr(
            Some("api.example.com:443".into()),
            addr("0.0.0.0:7400"),
            Some("10.0.0.1:7500"),
            addr("0.0.0.0:7500"),
        )
        .expect("explicit");
        assert_eq!(given, "api.example.com:443");
        for bad in ["0.0.0.0:7400", "[::]:7400", "no-port", "host:0", ":7400"] {
            let error = advertised_api_addr(
                Some(bad.into()),
                addr("0.0.0.0:7400"),
                None,
                addr("10.0.0.1:7500"),
            )
            .expect_err(bad);
            assert!(error.to_string().contains("advertise-api-addr"), "{bad}: {error}");
        }
    }
}
