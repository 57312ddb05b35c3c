//! The leader's calls made on a tenant's behalf (a Prometheus provider, an application's
//! shutdown hook) go only where the operator's [`EgressPolicy`] allows: every address a name
//! resolves to is checked after resolution (a name cannot rebind to a refused address), an
//! address written in the URL is checked before the call, and a redirect is followed only to an
//! address the policy allows (at most five).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use drover_model::egress::EgressPolicy;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Most redirects followed.
const MAX_REDIRECTS: usize = 5;

/// Resolves names and refuses those resolving to an address the policy refuses.
struct PolicyResolver(Arc<EgressPolicy>);

impl Resolve for PolicyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.0.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if !policy.allows_host(&host) {
                if let Some(why) = found.iter().find_map(|a| policy.refuses(a.ip())) {
                    return Err(format!("{host} resolves to {why}: refused by the egress policy").into());
                }
            }
            let addrs: Addrs = Box::new(found.into_iter());
            Ok(addrs)
        })
    }
}

/// Why the policy refuses the address `url` names literally, if it does.
pub fn literal_refused(policy: &EgressPolicy, url: &str) -> Option<String> {
    let (host, _) = drover_model::egress::host_and_port(url)?;
    let ip: IpAddr = host.parse().ok()?;
    policy
        .refuses(ip)
        .map(|why| format!("{why}: refused by the egress policy (--tenant-egress-allow)"))
}

/// A client for calls made on a tenant's behalf: resolution and redirects within `policy`, no
/// proxy from the environment.
pub fn client(policy: Arc<EgressPolicy>) -> reqwest::Result<reqwest::Client> {
    let redirects = policy.clone();
    reqwest::Client::builder()
        .no_proxy()
        .dns_resolver(Arc::new(PolicyResolver(policy)))
        .redirect(reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= MAX_REDIRECTS {
                return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
            }
            match literal_refused(&redirects, attempt.url().as_str()) {
                Some(why) => {
                    let to = attempt.url().to_string();
                    attempt.error(format!("a redirect to {to} is not followed: {why}"))
                }
                None => attempt.follow(),
            }
        }))
        .build()
}
