//! A Krake `Application` on the wire (`krake.md` §3.2): its spec as written, and its status
//! from the service it is — state (§4.1) from the service's phase and placement, the cluster it
//! is scheduled to and runs on, its instances' health, where its Services listen — never the
//! hook tokens (`<redacted>`: the instances find them in their environment). Reading a body:
//! Krake's required fields and a `422` for what Drover does not do (TOSCA and CSAR).

use drover_model::krake::application::{
    agent_host, cluster_owner, phase_of, service_addresses, AppState, ClusterConstraints, KrakeApplication,
};
use drover_model::krake::cluster::Backoff;
use drover_model::krake::KrakeKey;
use drover_model::time::isoformat_us;
use drover_model::State;
use serde_json::{json, Map, Value};

use super::fields::field;
use super::problem::Problem;

/// What a reader sees of a hook token.
const REDACTED: &str = "<redacted: the application's instances find it in their environment>";

/// Krake's `ReasonCode`s the states map to.
const NO_SUITABLE_RESOURCE: u32 = 50;
const CLUSTER_NOT_REACHABLE: u32 = 20;
const CREATE_FAILED: u32 = 70;
const INTERNAL_ERROR: u32 = 1;

/// The spec as Krake shows it.
pub fn spec(app: &KrakeApplication) -> Value {
    json!({
        "manifest": app.manifest,
        "tosca": {},
        "csar": null,
        "observer_schema": app.observer_schema,
        "constraints": {
            "cluster": {
                "labels": app.constraints.labels,
                "custom_resources": app.constraints.custom_resources,
                "metrics": app.constraints.metrics,
            },
            "migration": app.migration,
        },
        "hooks": app.hooks,
        "shutdown_grace_time": app.shutdown_grace_time,
        "backoff": app.backoff.backoff,
        "backoff_delay": app.backoff.backoff_delay,
        "backoff_limit": app.backoff.backoff_limit,
    })
}

/// Why no cluster may take the application's service now, in the scheduler's words (what
/// `…/service/{name}/placement` shows as `now`), when none may.
fn unplaceable(state: &State, key: &KrakeKey) -> Option<String> {
    let platform = state.platform();
    platform
        .schedule_service(key.tenant(), &key.name, &platform.reserved())
        .filter(|decision| decision.chosen.is_none())
        .map(|decision| decision.why_none())
}

/// The status as Krake shows it, from the service's committed state at the replica's clock.
pub fn status(state: &State, key: &KrakeKey, app: &KrakeApplication) -> Value {
    let platform = state.platform();
    let tenant = platform.tenant(key.tenant());
    let extras = tenant.and_then(|t| t.krake.applications.get(&key.name));
    let service = tenant.and_then(|t| t.services.get(&key.name));
    // The wall clock too: the committed one moves only when something is written, and a
    // shutdown grace passes in a quiet cluster as well.
    let now_ms = state.clock_ms().max(drover_raft::wall_clock_ms());
    let phase = extras.map_or(AppState::Deleting, |e| phase_of(e, service, now_ms));
    let token = |on: bool| if on { json!(REDACTED) } else { Value::Null };
    let reason = match (phase, service) {
        (AppState::Pending, Some(s)) => unplaceable(state, key)
            .map(|why| json!({"code": NO_SUITABLE_RESOURCE, "message": why}))
            .or_else(|| {
                s.pending
                    .map(|n| json!({"code": NO_SUITABLE_RESOURCE, "message": format!("revision {n} waits for the tenant's acceptance")}))
            })
            .unwrap_or(Value::Null),
        (AppState::Degraded, Some(s)) if s.deleting_ms.is_none() && extras.is_some_and(|e| e.cleaning.is_some()) => json!({
            "code": INTERNAL_ERROR,
            "message": "the application did not call its shutdown hook within shutdown_grace_time; PUT …/retry asks it again",
        }),
        (AppState::Degraded, Some(s)) => json!({"code": CLUSTER_NOT_REACHABLE, "message": s.reconcile.reason}),
        (AppState::Failed, Some(s)) => json!({"code": CREATE_FAILED, "message": s.reconcile.reason}),
        _ => Value::Null,
    };
    let cluster_ref = |c: &drover_model::cluster::ClusterRef| json!(cluster_owner(c));
    let placement = service.and_then(|s| s.placement.as_ref());
    let scheduled_to = service
        .and_then(|s| s.migrating_to.as_ref().or(s.placement.as_ref()))
        .map(cluster_ref);
    let running_on = placement.map(cluster_ref);
    let scheduled = service
        .filter(|s| s.placement.is_some())
        .map(|s| isoformat_us(s.moved_ms.max(s.created_ms).saturating_mul(1000)));
    let services: Map<String, Value> = placement
        .and_then(|c| platform.tenant(&c.tenant)?.clusters.get(&c.name))
        .zip(extras)
        .map(|(cluster, extras)| {
            service_addresses(extras, agent_host(&cluster.endpoint), service)
                .into_iter()
                .map(|(name, address)| (name, json!(address)))
                .collect()
        })
        .unwrap_or_default();
    let progress = service.map(|s| s.reconcile.progress).unwrap_or_default();
    let grace = extras.and_then(|e| match e.cleaning {
        Some(drover_model::krake::application::Cleaning::Waiting { until_ms }) => {
            Some(isoformat_us(until_ms.saturating_mul(1000)))
        }
        _ => None,
    });
    let applied = if placement.is_some() {
        json!(app.manifest)
    } else {
        json!([])
    };
    json!({
        "state": phase.as_str(),
        "reason": reason,
        "container_health": {
            "desired_pods": progress.desired,
            "running_pods": progress.ready,
            "completed_pods": 0,
            "failed_pods": 0,
        },
        "kube_controller_triggered": scheduled,
        "scheduled": scheduled,
        "scheduled_to": scheduled_to,
        "running_on": running_on,
        "retries": null,
        "scheduled_retry": null,
        "services": services,
        "mangled_observer_schema": [],
        "last_observed_manifest": applied,
        "last_applied_manifest": applied,
        "complete_token": token(app.hook("complete")),
        "complete_cert": null,
        "complete_key": null,
        "shutdown_token": token(app.hook("shutdown")),
        "shutdown_cert": null,
        "shutdown_key": null,
        "shutdown_grace_period": grace,
    })
}

/// Reads an Application's spec.
pub fn parse(spec: Option<&Value>) -> Result<KrakeApplication, Problem> {
    let spec = match spec {
        Some(Value::Object(spec)) => spec,
        Some(_) => return Err(Problem::invalid("spec._schema", "Invalid input type.")),
        None => return Err(Problem::invalid("spec", "Missing data for required field.")),
    };
    let given = |name: &str| {
        spec.get(name)
            .is_some_and(|v| !v.is_null() && v != &json!({}) && v != &json!(""))
    };
    if given("tosca") || given("csar") {
        return Err(Problem::invalid(
            if given("tosca") { "spec.tosca" } else { "spec.csar" },
            "Drover does not translate TOSCA templates or CSAR archives: give the Kubernetes manifest (spec.manifest).",
        ));
    }
    let manifest: Vec<Value> = field(spec, "manifest", "spec")?.unwrap_or_default();
    if manifest.is_empty() {
        return Err(Problem::invalid(
            "spec._schema",
            "At least one of the following fields must be defined: manifest (Drover runs manifests; tosca and csar are not translated).",
        ));
    }
    for (index, item) in manifest.iter().enumerate() {
        for required in ["apiVersion", "kind", "metadata"] {
            if item.get(required).is_none() {
                return Err(Problem::invalid(
                    &format!("spec.manifest.{index}.{required}"),
                    "Missing data for required field.",
                ));
            }
        }
    }
    let Some(Value::Object(constraints)) = spec.get("constraints") else {
        return Err(Problem::invalid(
            "spec.constraints",
            "Missing data for required field.",
        ));
    };
    let cluster: ClusterConstraints = field(constraints, "cluster", "spec.constraints")?.unwrap_or_default();
    let defaults = Backoff::default();
    Ok(KrakeApplication {
        manifest,
        observer_schema: field(spec, "observer_schema", "spec")?.unwrap_or_default(),
        constraints: cluster,
        migration: field(constraints, "migration", "spec.constraints")?.unwrap_or(true),
        hooks: field(spec, "hooks", "spec")?.unwrap_or_default(),
        shutdown_grace_time: field(spec, "shutdown_grace_time", "spec")?.unwrap_or(30),
        backoff: Backoff {
            backoff: field(spec, "backoff", "spec")?.unwrap_or(defaults.backoff),
            backoff_delay: field(spec, "backoff_delay", "spec")?.unwrap_or(defaults.backoff_delay),
            backoff_limit: field(spec, "backoff_limit", "spec")?.unwrap_or(defaults.backoff_limit),
        },
        issued: None,
    })
}

/// A digest of what a watcher of applications must see change besides the metadata: the
/// status.
pub fn status_digest(state: &State, key: &KrakeKey, app: &KrakeApplication) -> u64 {
    super::digest::digest(&status(state, key, app))
}
