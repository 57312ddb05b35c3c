//! The `drover` binary refuses bad settings before starting anything, and says which.

use std::process::Command;

fn drover() -> Command {
    Command::new(env!("CARGO_BIN_EXE_drover"))
}

#[test]
fn a_missing_node_id_is_named_and_exits_2() {
    let output = drover()
        .args(["serve", "--data-dir", "/nonexistent/x"])
        .env("DROVER_CLUSTER_SECRET", "0123456789abcdef")
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
            "--initial-cluster=1=127.0.0.1:7500,2=nohost",
        ])
        .env("DROVER_CLUSTER_SECRET", "0123456789abcdef")
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

#[test]
fn secrets_are_refused_on_the_command_line() {
    // Finding 2 of the hardening issue: `ps` shows every local user a process's arguments.
    for flag in [
        "--cluster-secret=0123456789abcdef",
        "--claimer-auth-token=0123456789abcdef",
    ] {
        let output = drover()
            .args(["serve", "--node-id=1", "--data-dir=/nonexistent/x", flag])
            .env("DROVER_CLUSTER_SECRET", "0123456789abcdef")
            .output()
            .expect("run drover");
        assert_eq!(output.status.code(), Some(2), "{flag} was accepted");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("unexpected argument"), "{stderr}");
    }
}

#[test]
fn a_secret_file_other_users_can_read_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "0123456789abcdef").expect("write secret");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let run = || {
        drover()
            .args(["serve", "--node-id=1", "--data-dir=/nonexistent/x"])
            .arg(format!("--cluster-secret-file={}", secret.display()))
            .env_remove("DROVER_CLUSTER_SECRET")
            .output()
            .expect("run drover")
    };
    let output = run();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("chmod 600") && !stderr.contains("0123456789abcdef"),
        "{stderr}"
    );
    // Once private, the secret is accepted and the next setting is judged (and refused: the
    // node must not start here).
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let output = drover()
        .args([
            "serve",
            "--node-id=1",
            "--data-dir=/nonexistent/x",
            "--initial-cluster=1=nohost",
        ])
        .arg(format!("--cluster-secret-file={}", secret.display()))
        .env_remove("DROVER_CLUSTER_SECRET")
        .output()
        .expect("run drover");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("1=nohost") && !stderr.contains("cluster-secret-file"),
        "a private file was refused: {stderr}"
    );
}
