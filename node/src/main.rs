//! The `drover` binary.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use drover_node::cli::cluster::ClusterCommand;
use drover_node::cli::lease::LeaseCommand;
use drover_node::cli::resources;
use drover_node::cli::token::TokenArgs;
use drover_node::{config, shutdown_signal, start, telemetry, Listeners, NodeConfig};

// glibc's malloc took about a fifth of each node's CPU under write load (profiled at 64
// clients); mimalloc's thread-local heaps suit the many small, short-lived allocations.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Drover: a replicated control plane for shared infrastructure.
#[derive(Debug, Parser)]
#[command(name = "drover", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the size difference between variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    /// Run a node.
    Serve(config::ServeArgs),
    /// Acquire, hold, release and list pool resources.
    #[command(subcommand)]
    Lease(LeaseCommand),
    /// The control plane's members: `drover cluster status`.
    #[command(subcommand)]
    Cluster(ClusterCommand),
    /// List or show objects of any kind: leases, akka leases, pools, resources, members,
    /// tenants, accounts, environments, clusters, services, revisions.
    Get(resources::GetArgs),
    /// Save a running cluster's state to a file, check one, or restore one into a cluster.
    #[command(subcommand)]
    Snapshot(drover_node::cli::snapshot::SnapshotCommand),
    /// Wait until an object meets a condition (`--for delete`, `--for status.converged=true`):
    /// exit 0 when it does, 5 when `--timeout` passes first.
    Wait(resources::WaitArgs),
    /// Print every change of leases or services as a line of JSON, or run a command for each
    /// (`drover watch leases -n ns -- ./on-change.sh`).
    Watch(resources::WatchArgs),
    /// Delete an object.
    Delete(resources::DeleteArgs),
    /// A service's instances' output: `drover service logs web -f`.
    #[command(subcommand)]
    Service(drover_node::cli::service::ServiceCommand),
    /// Create an object.
    #[command(subcommand)]
    Create(CreateCommand),
    /// boskosctl's commands and flags (acquire, release, metrics, heartbeat), so scripts written
    /// for it run unchanged; a symlink named `boskosctl` to this binary runs them too.
    Boskos(drover_node::cli::boskosctl::BoskosArgs),
    /// Client contexts (servers, token file, CA) in $XDG_CONFIG_HOME/drover/config.toml.
    #[command(subcommand)]
    Config(drover_node::cli::contexts::ConfigCommand),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completion {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Mint a development bearer token for the platform API.
    Token(TokenArgs),
    /// Run the worker-machine agent: serve the cluster API and run the instances the control
    /// plane wants on this machine. On SIGTERM it exits and leaves them running.
    Agent(drover_agent::AgentArgs),
}

/// `drover create` subcommands.
#[derive(Debug, Subcommand)]
enum CreateCommand {
    /// A tenant; the caller becomes its owner.
    Tenant(resources::CreateTenantArgs),
}

fn main() -> anyhow::Result<ExitCode> {
    // An agent's confined instance on its way into its cgroup: no runtime, straight to `exec`.
    if let Some(code) = drover_agent::exec::enter::run_if_asked() {
        return Ok(code);
    }
    run()
}

#[tokio::main]
async fn run() -> anyhow::Result<ExitCode> {
    // Started through a symlink named boskosctl: be boskosctl.
    let started_as = std::env::args_os()
        .next()
        .map(std::path::PathBuf::from)
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().to_string()));
    if started_as.as_deref() == Some("boskosctl") {
        let args = drover_node::cli::boskosctl::BoskosCtl::parse().into_args();
        return Ok(drover_node::cli::boskosctl::run(args).await);
    }
    let cli = Cli::parse();
    match cli.command {
        Command::Lease(command) => match drover_node::cli::lease::run(command).await {
            Ok(code) => return Ok(code),
            Err(e) => {
                eprintln!("drover: {e}");
                return Ok(ExitCode::from(1));
            }
        },
        Command::Cluster(command) => match drover_node::cli::cluster::run(command).await {
            Ok(code) => return Ok(code),
            Err(e) => {
                eprintln!("drover cluster: {e}");
                return Ok(ExitCode::from(1));
            }
        },
        Command::Get(args) => return Ok(resources::get(args).await),
        Command::Config(command) => return Ok(drover_node::cli::contexts::run(command).await),
        Command::Wait(args) => return Ok(resources::wait(args).await),
        Command::Watch(args) => return Ok(resources::watch(args).await),
        Command::Snapshot(command) => return Ok(drover_node::cli::snapshot::run(command).await),
        Command::Boskos(args) => return Ok(drover_node::cli::boskosctl::run(args).await),
        Command::Delete(args) => return Ok(resources::delete(args).await),
        Command::Service(command) => return Ok(drover_node::cli::service::run(command).await),
        Command::Create(CreateCommand::Tenant(args)) => return Ok(resources::create_tenant(args).await),
        Command::Completion { shell } => {
            use clap::CommandFactory;
            clap_complete::generate(shell, &mut Cli::command(), "drover", &mut std::io::stdout());
        }
        Command::Token(args) => match drover_node::cli::token::run(&args) {
            Ok(token) => println!("{token}"),
            Err(e) => {
                eprintln!("drover token: {e}");
                return Ok(ExitCode::from(2));
            }
        },
        Command::Agent(args) => {
            if let Err(e) = drover_node::agent_cmd::run(args, shutdown_signal()).await {
                eprintln!("drover agent: {e}");
                let code = match e {
                    drover_agent::AgentError::Config { .. } | drover_agent::AgentError::Corrupt { .. } => 2,
                    _ => 1,
                };
                return Ok(ExitCode::from(code));
            }
        }
        Command::Serve(args) => {
            let config = match NodeConfig::load(&args) {
                Ok(config) => config,
                Err(e) => {
                    eprintln!("drover: {e}");
                    std::process::exit(2);
                }
            };
            telemetry::init(config.log_format, config.node_id);
            let listeners = Listeners::bind(&config).await?;
            let node = start(config, listeners, Vec::new()).await?;
            // The API serves now: a Type=notify unit counts the node as started.
            if let Err(error) = drover_node::systemd::notify("READY=1") {
                tracing::warn!(%error, "could not tell systemd the node is ready");
            }
            node.run_until(shutdown_signal()).await?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
