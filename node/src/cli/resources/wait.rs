//! `drover wait KIND/NAME --for CONDITION`: polls one object until it is deleted or a field of
//! it has a value, or until `--timeout` passes.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, ValueEnum};
use reqwest::Method;
use serde_json::Value;

use super::client::Client;
use super::common::Common;
use super::failure::{exit, finish, Failure};
use super::kind::Kind;
use super::output::{print, Output};
use super::paths::path;

/// `drover wait KIND/NAME --for CONDITION`.
#[derive(Debug, Args)]
pub struct WaitArgs {
    /// The object, as `kind/name` (e.g. `service/web`, `lease/l1`, `cluster/edge`).
    target: String,
    /// `delete` (until it is gone), or `PATH=VALUE`: a dotted path into the object (for
    /// platform objects, into its `data`) and the value it must have, e.g.
    /// `status.converged=true`, `status.state=ONLINE`, `spec.holderIdentity=me`.
    #[arg(long = "for")]
    condition: String,
    #[command(flatten)]
    common: Common,
}

/// What `--for` asks.
enum Condition {
    Deleted,
    Field(Vec<String>, String),
}

fn condition(text: &str) -> Result<Condition, Failure> {
    if text == "delete" {
        return Ok(Condition::Deleted);
    }
    let (path, value) = text
        .split_once('=')
        .ok_or_else(|| Failure::usage("--for is `delete` or PATH=VALUE, e.g. status.converged=true"))?;
    if path.is_empty() {
        return Err(Failure::usage("--for PATH=VALUE needs a path"));
    }
    Ok(Condition::Field(
        path.split('.').map(str::to_string).collect(),
        value.to_string(),
    ))
}

/// Whether `object` has `value` at `path` (strings compare without quotes).
fn holds(kind: Kind, answer: &Value, path: &[String], value: &str) -> bool {
    let mut at = if kind.is_platform() {
        &answer["data"]
    } else {
        answer
    };
    for step in path {
        at = match at {
            Value::Array(items) => match step.parse::<usize>() {
                Ok(index) => items.get(index).unwrap_or(&Value::Null),
                Err(_) => &Value::Null,
            },
            other => &other[step.as_str()],
        };
    }
    match at {
        Value::String(s) => s == value,
        Value::Null => false,
        // Numbers and booleans: the value read as JSON.
        other => serde_json::from_str::<Value>(value).is_ok_and(|v| v == *other),
    }
}

/// `drover wait`: polls until the condition holds (exit 0), or `--timeout` passes (exit 5).
pub async fn wait(args: WaitArgs) -> ExitCode {
    let run = async {
        let (kind, name) = args
            .target
            .split_once('/')
            .ok_or_else(|| Failure::usage("the object is KIND/NAME, e.g. service/web"))?;
        let kind = <Kind as ValueEnum>::from_str(kind, true)
            .map_err(|_| Failure::usage(&format!("unknown kind {kind:?}")))?;
        if matches!(
            kind,
            Kind::Resources | Kind::Pools | Kind::Members | Kind::Revisions
        ) {
            return Err(Failure::usage(
                "wait takes leases, akka leases, tenants, accounts, environments, clusters and services",
            ));
        }
        let condition = condition(&args.condition)?;
        let path = path(kind, Some(name), &args.common)?;
        let deadline = std::time::Instant::now() + Duration::from_secs_f64(args.common.timeout.max(0.001));
        // One client for every poll: the node that answered is asked first the next time.
        let client = Client::of(&args.common)?;
        loop {
            match client.send(Method::GET, &path, &[], None).await {
                Ok(answer) => {
                    if let Condition::Field(path, value) = &condition {
                        if holds(kind, &answer, path, value) {
                            eprintln!("{}: {} met", args.target, args.condition);
                            return print(
                                kind,
                                Some(name),
                                &answer,
                                args.common.output.or(Some(Output::Name)),
                            );
                        }
                    }
                }
                Err(failure) if failure.code == exit::NOT_FOUND => {
                    if matches!(condition, Condition::Deleted) {
                        eprintln!("{}: deleted", args.target);
                        return Ok(());
                    }
                }
                Err(failure) if failure.code == exit::TIMEOUT || failure.code == exit::UNAVAILABLE => {}
                Err(failure) => return Err(failure),
            }
            if std::time::Instant::now() >= deadline {
                return Err(Failure {
                    code: exit::TIMEOUT,
                    message: format!(
                        "{}: {} not met within {}s",
                        args.target, args.condition, args.common.timeout
                    ),
                });
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    };
    finish(run.await)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn wait_conditions_read_paths_strings_numbers_and_booleans() {
        let service =
            json!({"data": {"status": {"converged": true, "revision": 3, "cluster": {"name": "edge"}}}});
        let at = |path: &str| path.split('.').map(str::to_string).collect::<Vec<_>>();
        assert!(holds(Kind::Services, &service, &at("status.converged"), "true"));
        assert!(!holds(Kind::Services, &service, &at("status.converged"), "false"));
        assert!(holds(Kind::Services, &service, &at("status.revision"), "3"));
        assert!(holds(
            Kind::Services,
            &service,
            &at("status.cluster.name"),
            "edge"
        ));
        assert!(!holds(Kind::Services, &service, &at("status.missing"), "null"));
        let lease = json!({"spec": {"holderIdentity": "me"}});
        assert!(holds(Kind::Leases, &lease, &at("spec.holderIdentity"), "me"));
        assert!(matches!(condition("delete"), Ok(Condition::Deleted)));
        assert!(condition("nonsense").is_err());
    }
}
