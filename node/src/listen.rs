//! The HTTP server loop of both listeners, with the bounds a public endpoint needs: a deadline
//! for a request's headers (which also closes keep-alive connections idle that long), and caps
//! on open connections in all and per client address. `axum::serve` has neither.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::serve::Listener;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio_util::sync::CancellationToken;

/// The bounds of one listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// A request's headers must arrive within this; a keep-alive connection idle this long is
    /// closed.
    pub header_timeout: Duration,
    /// Most open connections.
    pub max_connections: usize,
    /// Most open connections from one client address.
    pub max_per_address: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(30),
            max_connections: 10_000,
            max_per_address: 1_024,
        }
    }
}

/// Open connections, in all and by client address.
#[derive(Debug, Default)]
struct Counts {
    total: usize,
    by_address: HashMap<IpAddr, usize>,
}

/// Admits connections within the limits; a [`Slot`] gives its place back when dropped.
#[derive(Debug, Clone)]
pub struct Admission {
    limits: ConnectionLimits,
    counts: Arc<Mutex<Counts>>,
}

/// One admitted connection.
#[derive(Debug)]
pub struct Slot {
    address: IpAddr,
    counts: Arc<Mutex<Counts>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        counts.total = counts.total.saturating_sub(1);
        if let Some(open) = counts.by_address.get_mut(&self.address) {
            *open = open.saturating_sub(1);
            if *open == 0 {
                counts.by_address.remove(&self.address);
            }
        }
    }
}

impl Admission {
    /// Admission under `limits`.
    pub fn new(limits: ConnectionLimits) -> Self {
        Self {
            limits,
            counts: Arc::default(),
        }
    }

    /// A slot for a connection from `address`, or `None` when a limit is reached.
    pub fn admit(&self, address: IpAddr) -> Option<Slot> {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let from_address = counts.by_address.get(&address).copied().unwrap_or(0);
        if counts.total >= self.limits.max_connections || from_address >= self.limits.max_per_address {
            return None;
        }
        counts.total += 1;
        counts.by_address.insert(address, from_address + 1);
        Some(Slot {
            address,
            counts: self.counts.clone(),
        })
    }
}

/// An accepted connection's client address.
pub trait PeerAddress {
    /// The client's IP address.
    fn ip(&self) -> IpAddr;

    /// Who the connection's verified client certificate names, if it presented one.
    fn client_certificate(&self) -> Option<drover_api::auth::ClientCertificate> {
        None
    }
}

impl PeerAddress for std::net::SocketAddr {
    fn ip(&self) -> IpAddr {
        std::net::SocketAddr::ip(self)
    }
}

/// Serves `router` on `listener` until `shutdown`, then lets open requests finish.
pub async fn serve<L>(
    mut listener: L,
    router: axum::Router,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) where
    L: Listener,
    L::Addr: PeerAddress + std::fmt::Debug,
{
    let admission = Admission::new(limits);
    let graceful = GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    loop {
        let (io, address) = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let Some(slot) = admission.admit(address.ip()) else {
            tracing::debug!(?address, "connection refused: too many open connections");
            drop(io);
            continue;
        };
        // Requests on a connection with a client certificate carry who it names.
        let router = match address.client_certificate() {
            Some(certificate) => router.clone().layer(axum::Extension(certificate)),
            None => router.clone(),
        };
        let service = TowerToHyperService::new(router);
        let connection = builder.serve_connection(TokioIo::new(io), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!("connection ended: {e}");
            }
            drop(slot);
        });
    }
    drop(listener);
    // Open requests finish; a client that keeps its connection busy longer is cut.
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::debug!("connections still open after the shutdown grace period were cut");
    }
}

/// How long open requests may take to finish at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_capped_per_address_and_in_all() {
        let admission = Admission::new(ConnectionLimits {
            header_timeout: Duration::from_secs(1),
            max_connections: 3,
            max_per_address: 2,
        });
        let a: IpAddr = [127, 0, 0, 1].into();
        let b: IpAddr = [127, 0, 0, 2].into();
        let first = admission.admit(a).expect("first");
        let _second = admission.admit(a).expect("second");
        assert!(admission.admit(a).is_none(), "a third from one address");
        let _third = admission.admit(b).expect("another address");
        assert!(admission.admit(b).is_none(), "over the total");
        drop(first);
        assert!(
            admission.admit(a).is_some(),
            "a closed connection gives its place back"
        );
    }
}
