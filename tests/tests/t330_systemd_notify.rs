//! `drover serve` speaks systemd's readiness protocol, so `deploy/systemd/drover.service` can be
//! `Type=notify`: a node started with `NOTIFY_SOCKET` sends `READY=1` once it serves its API, and
//! `STOPPING=1` on SIGTERM.

use std::os::unix::net::UnixDatagram;
use std::time::Duration;

use anyhow::{ensure, Result};
use drover_tests::process::ProcessCluster;

fn receive(socket: &UnixDatagram) -> Result<String> {
    let mut buffer = [0u8; 256];
    let read = socket.recv(&mut buffer)?;
    Ok(String::from_utf8_lossy(&buffer[..read]).to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_tells_systemd_it_is_ready_and_stopping() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("notify");
    let socket = UnixDatagram::bind(&path)?;
    // A read that never comes fails the test rather than hanging it.
    socket.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut nodes = ProcessCluster::start(3)?;
    nodes.leader(Duration::from_secs(20)).await?;
    nodes.kill(1)?;
    let notify = path.to_string_lossy().to_string();
    nodes.restart_with_env(1, &[("NOTIFY_SOCKET", notify.as_str())])?;
    let ready = receive(&socket)?;
    ensure!(ready == "READY=1", "{ready:?}");
    let (status, _) = nodes.client(1).get_path("/healthz").await?;
    ensure!(status.is_success(), "ready, and its API serves: {status}");
    nodes.terminate(1)?;
    let stopping = receive(&socket)?;
    ensure!(stopping == "STOPPING=1", "{stopping:?}");
    Ok(())
}
