//! Network partitions: the harness runs in a network namespace of its own (made by re-executing
//! itself under `unshare --net`), where each node has its own loopback address and iptables
//! rules drop the packets between chosen pairs. The namespace, and every rule in it, disappears
//! with the harness, so nothing outlives a run, even an interrupted one.

use std::net::IpAddr;
use std::process::Command;

use anyhow::{bail, Context, Result};

/// Set in the environment of the re-executed harness.
const INSIDE: &str = "DROVER_CHAOS_NETNS";

/// True when this process runs in the private namespace the harness made.
pub fn inside() -> bool {
    std::env::var_os(INSIDE).is_some()
}

/// Re-executes the current program with the same arguments in a new network namespace and
/// returns its exit code. Needs root (or a user namespace), `unshare` and `ip`.
pub fn reexec_inside() -> Result<i32> {
    let exe = std::env::current_exe().context("locating the running program")?;
    let status = Command::new("unshare")
        .arg("--net")
        .arg("--")
        .arg(&exe)
        .args(std::env::args_os().skip(1))
        .env(INSIDE, "1")
        .status()
        .context("running unshare (util-linux)")?;
    Ok(status.code().unwrap_or(1))
}

/// A command run to its end, failing with its stderr.
fn run(program: &str, args: &[&str]) -> Result<()> {
    drover_tests::netns::run(program, args).map(drop)
}

/// Brings the namespace's loopback up and checks that iptables works in it.
pub fn prepare() -> Result<()> {
    if !inside() {
        bail!("partitions need the harness's own network namespace: run the drover-chaos binary");
    }
    run("ip", &["link", "set", "lo", "up"])?;
    run("iptables", &["-F", "INPUT"]).context("iptables is needed for partitions (apt install iptables)")
}

/// Drops every packet from `from` to `to` (one direction).
pub fn drop_packets(from: IpAddr, to: IpAddr) -> Result<()> {
    run(
        "iptables",
        &[
            "-A",
            "INPUT",
            "-s",
            &from.to_string(),
            "-d",
            &to.to_string(),
            "-j",
            "DROP",
        ],
    )
}

/// Cuts both directions between `a` and `b`.
pub fn cut(a: IpAddr, b: IpAddr) -> Result<()> {
    drop_packets(a, b)?;
    drop_packets(b, a)
}

/// Removes every rule: the network is whole again.
pub fn heal() -> Result<()> {
    run("iptables", &["-F", "INPUT"])
}
