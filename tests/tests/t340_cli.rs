//! The `drover` CLI's resource commands against three `drover serve` processes: `-o json` prints
//! what `curl` gets for the same object (a tenant, a Kubernetes lease, a pool resource),
//! `-o name`, `-o yaml` and tables print the same objects, every documented exit code comes
//! out of the case it names, and completions generate for bash, zsh and fish.

use std::process::{Command, Output};
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_tests::boskos::static_pool_yaml;
use drover_tests::client::LeaseClient;
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::{drover_binary, free_ports, ProcessCluster};
use serde_json::Value;

struct Cli {
    servers: String,
}

impl Cli {
    fn run(&self, subject: Option<&str>, args: &[&str]) -> Result<Output> {
        let mut command = Command::new(drover_binary()?);
        command
            .args(args)
            .env("DROVER_SERVER", &self.servers)
            .env_remove("DROVER_TOKEN");
        if let Some(subject) = subject {
            command.env("DROVER_TOKEN", token(subject));
        }
        Ok(command.output()?)
    }

    fn json(&self, subject: &str, args: &[&str]) -> Result<Value> {
        let out = self.run(Some(subject), args)?;
        ensure!(
            out.status.success(),
            "drover {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).context("JSON on stdout")
    }

    fn code(&self, subject: Option<&str>, args: &[&str]) -> Result<i32> {
        self.run(subject, args)?
            .status
            .code()
            .context("killed by a signal")
    }
}

async fn curl(addr: &str, subject: &str, path: &str) -> Result<Value> {
    let answer = reqwest::Client::builder()
        .no_proxy()
        .build()?
        .get(format!("http://{addr}{path}"))
        .bearer_auth(token(subject))
        .send()
        .await?;
    ensure!(answer.status() == 200, "GET {path}: {}", answer.status());
    Ok(answer.json().await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_output_equals_the_api_and_exit_codes_are_as_documented() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let pools = dir.path().join("pools.yaml");
    std::fs::write(&pools, static_pool_yaml("t", &["r0"]))?;
    let mut args = process_platform_args(dir.path())?;
    args.extend([
        format!("--pools={}", pools.display()),
        "--pool-sync-interval=200ms".into(),
    ]);
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    let leader = nodes.leader(Duration::from_secs(20)).await?;
    let addr = nodes.api_addr(leader);
    let cli = Cli {
        servers: (1..=3)
            .map(|id| format!("http://{}", nodes.api_addr(id)))
            .collect::<Vec<_>>()
            .join(","),
    };
    PlatformClient::new(&addr, Some(token(OPERATOR_SUBJECT)))
        .register(OPERATOR_SUBJECT)
        .await?;
    PlatformClient::new(&addr, Some(token("alice")))
        .register("alice")
        .await?;

    // Create, then the same again: a conflict (4).
    ensure!(cli.code(Some("alice"), &["create", "tenant", "acme"])? == 0);
    ensure!(
        cli.code(Some("alice"), &["create", "tenant", "acme"])? == 4,
        "conflict is 4"
    );

    // -o json is what curl gets.
    let shown = cli.json("alice", &["get", "tenants", "acme", "-o", "json"])?;
    ensure!(
        shown == curl(&addr, "alice", "/api/1.0-beta/tenant/acme").await?,
        "{shown}"
    );
    let header = format!("Bearer {}", token("alice"));
    let created = LeaseClient::authorized(&addr, Some(&header))
        .create("acme", "l1", "alice")
        .await?;
    ensure!(created.status == 201, "{created:?}");
    let lease = cli.json("alice", &["get", "leases", "l1", "-n", "acme", "-o", "json"])?;
    let path = "/apis/coordination.k8s.io/v1/namespaces/acme/leases/l1";
    ensure!(lease == curl(&addr, "alice", path).await?, "{lease}");
    let list = cli.json("alice", &["get", "leases", "-n", "acme", "-o", "json"])?;
    ensure!(list["items"][0]["metadata"]["name"] == "l1", "{list}");
    let resource = cli.json("alice", &["get", "resources", "r0", "-o", "json"])?;
    let all = curl(&addr, "alice", "/pools/resources").await?;
    ensure!(
        Some(&resource) == all.as_array().and_then(|r| r.first()),
        "{resource} in {all}"
    );

    // Every dialect's kinds: a pool type (the configuration's entry), Akka leases, accounts.
    let pool = cli.json("alice", &["get", "pools", "t", "-o", "json"])?;
    let config = curl(&addr, "alice", "/pools/config").await?;
    ensure!(
        pool == config["resources"][0] && pool["type"] == "t",
        "{pool} in {config}"
    );
    let akka = cli.json("alice", &["get", "akkaleases", "-n", "acme", "-o", "json"])?;
    ensure!(
        akka == curl(&addr, "alice", "/apis/akka.io/v1/namespaces/acme/leases").await?,
        "{akka}"
    );
    let accounts = cli.json("alice", &["get", "accounts", "--tenant", "acme", "-o", "json"])?;
    ensure!(
        accounts == curl(&addr, "alice", "/api/1.0-beta/tenant/acme/account").await?,
        "{accounts}"
    );
    ensure!(
        cli.code(Some("alice"), &["get", "environments", "--tenant", "acme"])? == 2,
        "environments need --account"
    );

    // The other formats show the same objects.
    let names = cli.run(Some("alice"), &["get", "leases", "-n", "acme", "-o", "name"])?;
    ensure!(
        String::from_utf8_lossy(&names.stdout).trim() == "lease/l1",
        "{names:?}"
    );
    let yaml = cli.run(
        Some("alice"),
        &["get", "leases", "l1", "-n", "acme", "-o", "yaml"],
    )?;
    let yaml = String::from_utf8_lossy(&yaml.stdout).to_string();
    ensure!(
        yaml.contains("holderIdentity: alice") && yaml.contains("name: l1"),
        "{yaml}"
    );
    let table = cli.run(Some("alice"), &["get", "leases", "-n", "acme", "-o", "wide"])?;
    let table = String::from_utf8_lossy(&table.stdout).to_string();
    ensure!(table.starts_with("NAME") && table.contains("alice"), "{table}");

    // Exit codes, one case each.
    ensure!(
        cli.code(Some("alice"), &["get", "tenants", "nowhere"])? == 3,
        "not found is 3"
    );
    ensure!(
        cli.code(None, &["get", "tenants", "acme"])? == 7,
        "no credential is 7"
    );
    ensure!(
        cli.code(Some("alice"), &["get", "clusters"])? == 2,
        "a missing --tenant is a usage error"
    );
    ensure!(
        cli.code(Some("alice"), &["get", "bogus"])? == 2,
        "an unknown kind is a usage error"
    );
    let slow = cli.code(
        Some("alice"),
        &["get", "tenants", "acme", "--timeout", "0.000001"],
    )?;
    ensure!(slow == 5, "a timeout is 5, got {slow}");
    let (closed, _) = free_ports(&["127.0.0.1".parse()?])?[0];
    let nowhere = Cli {
        servers: format!("http://127.0.0.1:{closed}"),
    };
    ensure!(
        nowhere.code(Some("alice"), &["get", "tenants"])? == 6,
        "no server is 6"
    );
    // watch: the existing lease arrives as ADDED, printed or handed to a command; the stream
    // ends with --timeout (the server's timeoutSeconds) and the watch exits 0.
    let watched = cli.run(
        Some("alice"),
        &["watch", "leases", "-n", "acme", "--timeout", "1"],
    )?;
    let printed = String::from_utf8_lossy(&watched.stdout).to_string();
    ensure!(watched.status.success(), "{watched:?}");
    let first: Value = serde_json::from_str(printed.lines().next().unwrap_or_default())?;
    ensure!(
        first["type"] == "ADDED" && first["object"]["metadata"]["name"] == "l1",
        "{printed}"
    );
    let seen = dir.path().join("events");
    let script = format!("cat >> {0}; echo \" $DROVER_EVENT_TYPE\" >> {0}", seen.display());
    let handed = cli.run(
        Some("alice"),
        &[
            "watch",
            "leases",
            "-n",
            "acme",
            "--timeout",
            "1",
            "--",
            "sh",
            "-c",
            &script,
        ],
    )?;
    ensure!(handed.status.success(), "{handed:?}");
    let events = std::fs::read_to_string(&seen)?;
    ensure!(events.contains("\"l1\"") && events.contains(" ADDED"), "{events}");
    ensure!(
        cli.code(Some("alice"), &["watch", "tenants"])? == 2,
        "tenants are not watched"
    );

    // wait: a condition that holds (0), one that never does (5), then a deletion (0).
    let holder = [
        "wait",
        "lease/l1",
        "-n",
        "acme",
        "--for",
        "spec.holderIdentity=alice",
    ];
    ensure!(cli.code(Some("alice"), &holder)? == 0, "the holder is alice");
    let never = [
        "wait",
        "lease/l1",
        "-n",
        "acme",
        "--for",
        "spec.holderIdentity=bob",
        "--timeout",
        "1",
    ];
    ensure!(
        cli.code(Some("alice"), &never)? == 5,
        "waiting in vain times out with 5"
    );
    ensure!(cli.code(Some("alice"), &["delete", "leases", "l1", "-n", "acme"])? == 0);
    ensure!(
        cli.code(
            Some("alice"),
            &["wait", "lease/l1", "-n", "acme", "--for", "delete"]
        )? == 0
    );
    ensure!(cli.code(Some("alice"), &["delete", "leases", "l1", "-n", "acme"])? == 3);

    // Contexts: the servers and token file come from $XDG_CONFIG_HOME/drover/config.toml.
    let home = tempfile::tempdir()?;
    let token_file = home.path().join("token");
    std::fs::write(&token_file, token("alice"))?;
    let in_context = |args: &[&str]| -> Result<Output> {
        Ok(Command::new(drover_binary()?)
            .args(args)
            .env("XDG_CONFIG_HOME", home.path())
            .env_remove("DROVER_SERVER")
            .env_remove("DROVER_TOKEN")
            .env_remove("DROVER_CONTEXT")
            .output()?)
    };
    let set = in_context(&[
        "config",
        "set-context",
        "local",
        "--server",
        &cli.servers,
        "--token-file",
        &token_file.to_string_lossy(),
    ])?;
    ensure!(set.status.success(), "{set:?}");
    let viewed = in_context(&["config", "view"])?;
    let viewed = String::from_utf8_lossy(&viewed.stdout).to_string();
    ensure!(
        viewed.contains("current-context = \"local\"") && viewed.contains("[contexts.local]"),
        "{viewed}"
    );
    ensure!(
        !viewed.contains(&token("alice")),
        "the token itself is never stored"
    );
    let through = in_context(&["get", "tenants", "acme", "-o", "json"])?;
    ensure!(through.status.success(), "through the context: {through:?}");
    let missing = in_context(&["get", "tenants", "--context", "nowhere"])?;
    ensure!(
        !missing.status.success() && String::from_utf8_lossy(&missing.stderr).contains("no context"),
        "{missing:?}"
    );

    // Completions.
    for shell in ["bash", "zsh", "fish"] {
        let out = cli.run(None, &["completion", shell])?;
        let script = String::from_utf8_lossy(&out.stdout).to_string();
        ensure!(
            out.status.success() && script.contains("drover") && script.len() > 1000,
            "{shell}"
        );
    }
    Ok(())
}
