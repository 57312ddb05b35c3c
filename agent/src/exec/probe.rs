//! Readiness probes on 127.0.0.1 (or a pod's address): a TCP connect, or an HTTP/1.0 GET over a raw TCP stream
//! answered with 2xx or 3xx. Each try gives up after [`PROBE_TIMEOUT`].

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use drover_model::cluster::agent_api::Probe;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long one try may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(900);

/// Whether `probe` answers now on 127.0.0.1.
pub async fn ready(probe: &Probe) -> bool {
    answers(IpAddr::V4(Ipv4Addr::LOCALHOST), probe, PROBE_TIMEOUT).await
}

/// Whether `probe` answers now at `host` within `timeout` (a pod's address, for the `container`
/// executor).
pub async fn answers(host: IpAddr, probe: &Probe, timeout: Duration) -> bool {
    tokio::time::timeout(timeout, attempt(host, probe))
        .await
        .unwrap_or(false)
}

async fn attempt(host: IpAddr, probe: &Probe) -> bool {
    match probe {
        Probe::Tcp { port } => TcpStream::connect((host, *port)).await.is_ok(),
        Probe::Http { port, path } => {
            let Ok(mut stream) = TcpStream::connect((host, *port)).await else {
                return false;
            };
            let request = format!(
                "GET {path} HTTP/1.0\r\nHost: {}\r\nUser-Agent: drover-agent\r\n\r\n",
                SocketAddr::new(host, *port)
            );
            if stream.write_all(request.as_bytes()).await.is_err() {
                return false;
            }
            // The status line is all that matters: "HTTP/1.x NNN ...".
            let mut head = [0u8; 64];
            let mut filled = 0;
            while filled < head.len() {
                match stream.read(&mut head[filled..]).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => filled += n,
                }
                if head[..filled].contains(&b'\n') {
                    break;
                }
            }
            status_ok(&head[..filled])
        }
    }
}

fn status_ok(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let mut words = text.split_whitespace();
    let version_ok = words.next().is_some_and(|v| v.starts_with("HTTP/"));
    let code = words.next().and_then(|c| c.parse::<u16>().ok());
    version_ok && code.is_some_and(|c| (200..400).contains(&c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_and_three_hundreds_are_ready() {
        assert!(status_ok(b"HTTP/1.1 200 OK\r\n"));
        assert!(status_ok(b"HTTP/1.0 302 Found\r\n"));
        assert!(!status_ok(b"HTTP/1.1 500 Oops\r\n"));
        assert!(!status_ok(b"garbage"));
    }

    #[tokio::test]
    async fn probes_a_listener() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut buf = [0u8; 256];
                let _ = stream.read(&mut buf).await;
                let _ = stream.write_all(b"HTTP/1.0 204 No Content\r\n\r\n").await;
            }
        });
        assert!(ready(&Probe::Tcp { port }).await);
        assert!(
            ready(&Probe::Http {
                port,
                path: "/healthz".into()
            })
            .await
        );
    }
}
