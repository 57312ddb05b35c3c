//! The `drover` binary refuses bad settings before starting anything, and says which.

use std::process::Command;

fn drover() -> Command {
    Command::new(env!("CARGO_BIN_EXE_drover"))
}

#[test]
fn a_missing_node_id_is_named_and_exits_2() {
    let output = drover()
        .args([
            "serve",
            "--data-dir",
            "/nonexistent/x",
            "--cluster-secret",
            "0123456789abcdef",
        ])
        .env_remove("DROVER_NODE_ID")
        .output()
        .expect("run drover");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("node-id"), "{stderr}");
}

#[test]
fn a_bad_initial_cluster_entry_is_named() {
    let output = drover()
        .args([
            "serve",
            "--node-id=1",
            "--data-dir=/nonexistent/x",
            "--cluster-secret=0123456789abcdef",
            "--initial-cluster=1=127.0.0.1:7500,2=nohost",
        ])
        .output()
        .expect("run drover");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("2=nohost"), "{stderr}");
}

#[test]
fn environment_variables_are_read_and_flags_win() {
    let output = drover()
        .args(["serve", "--node-id=0"])
        .env("DROVER_NODE_ID", "3")
        .env("DROVER_DATA_DIR", "/nonexistent/x")
        .env("DROVER_CLUSTER_SECRET", "0123456789abcdef")
        .output()
        .expect("run drover");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("node-id: must be a positive integer"),
        "the flag (0) won over the env (3): {stderr}"
    );
}
