//! What the actors' integration tests share: a real single-node Raft in a temporary directory.

use std::collections::BTreeMap;

use anyhow::Result;
use drover_raft::{PeerNode, RaftConfig, RaftHandle, StartOptions};

/// Starts a one-member Raft whose data lives as long as the returned directory.
pub async fn single_node() -> Result<(tempfile::TempDir, RaftHandle)> {
    let dir = tempfile::tempdir()?;
    let raft = RaftHandle::start(
        StartOptions {
            id: 1,
            node: PeerNode {
                peer_addr: "127.0.0.1:9".into(),
                api_addr: String::new(),
            },
            data_dir: dir.path().join("raft"),
            config: RaftConfig::default(),
            cluster_secret: "drover-test-cluster-secret".into(),
            initial_members: BTreeMap::from([(1, "127.0.0.1:9".to_string())]),
            peer_source_ip: None,
            peer_tls: None,
        },
        &prometheus::Registry::new(),
    )
    .await?;
    Ok((dir, raft))
}
