//! The flags of `drover-bench compare`, read by the run and printed in the table's header.

use clap::Args;

/// Arguments of `drover-bench compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Client counts for the closed-loop workloads.
    #[arg(long, value_delimiter = ',', default_value = "1,16,64,256")]
    pub concurrency: Vec<usize>,
    /// Lease holders for the heartbeat workload, each renewing once a second.
    #[arg(long, value_delimiter = ',', default_value = "256,1024")]
    pub holders: Vec<usize>,
    /// Measured seconds per row and system.
    #[arg(long, default_value_t = 5)]
    pub duration: u64,
    /// Unmeasured warm-up seconds per row and system.
    #[arg(long, default_value_t = 1)]
    pub warmup: u64,
    /// Markdown file whose generated section receives the table (left alone when absent).
    #[arg(long)]
    pub write: Option<std::path::PathBuf>,
    /// etcd's Go client load generator (`scripts/setup-bench.sh` builds it): when given, the
    /// write and read rows also measure etcd over its native gRPC API.
    #[arg(long)]
    pub etcd_grpc_load: Option<std::path::PathBuf>,
    /// Extra `drover serve` flag for every node (repeatable), to try other settings.
    #[arg(long = "drover-flag", allow_hyphen_values = true)]
    pub drover_flags: Vec<String>,
    /// The Drover node client 0 talks to (the single client of the one-client rows), chosen
    /// after the election: `leader` or `follower`. Without it, node 1, whatever its role.
    #[arg(long, value_enum)]
    pub first_node: Option<FirstNode>,
}

/// Which node comes first in the clients' round-robin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FirstNode {
    /// The leader.
    Leader,
    /// A follower.
    Follower,
}
