//! Test samples of what the API answers for every kind, built from the types its handlers
//! serialize, so that the tables are checked against the API's own shapes.

use std::collections::BTreeMap;

use drover_api::axebow::reply::ok;
use drover_api::axebow::services::ServiceView;
use drover_model::cluster::agent_api::{Confinement, Resources};
use drover_model::cluster::views::ClusterView;
use drover_model::cluster::{ClusterFacts, ClusterRef, ClusterState, ClusterStatus, InstanceCounts};
use drover_model::platform::marks::{Mark, MarkStatus};
use drover_model::platform::views::{AccountInfo, EnvironmentInfo, EnvironmentStatus, TenantInfo};
use drover_model::platform::{
    AccountMeta, AccountSpec, ClusterSelection, EnvironmentSpec, Member, Role, TenantAccount, TenantRules,
};
use drover_model::pod_security::PodSecurity;
use drover_model::pool::{PoolConfig, Resource, TypeConfig};
use drover_model::service::placement::RunStatus;
use drover_model::service::reconcile::{Phase, Progress, ReconcileStatus};
use drover_model::service::views::{Configuration, HistoryEntry, ServiceFull};
use drover_model::service::{Deployment, RevisionType};
use drover_model::{
    AkkaLeaseSpec, CoordinationLeaseSpec, LeaseSpec, ObjectKey, ObjectKind, ObjectMeta, StoredObject,
};
use drover_raft::{MemberView, NodeStatus};
use serde_json::{json, Value};

use super::kind::Kind;

pub(super) fn value(x: impl serde::Serialize) -> Value {
    serde_json::to_value(x).unwrap()
}

pub(super) fn lease(kind: ObjectKind, spec: LeaseSpec) -> StoredObject {
    StoredObject {
        key: ObjectKey::new(kind, "ns", "l1"),
        meta: ObjectMeta {
            uid: "u-1".into(),
            resource_version: 7,
            created_index: 7,
            creation_timestamp: "2024-01-01T00:00:00Z".into(),
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
        },
        spec,
    }
}

pub(super) fn cluster_view() -> ClusterView {
    ClusterView {
        tenant: "operator".into(),
        name: "local-exec".into(),
        uid: "c-1".into(),
        endpoint: "http://127.0.0.1:7701".into(),
        transport: "plain-http".into(),
        ca: None,
        labels: BTreeMap::from([("kind".into(), "exec".into())]),
        metrics: Vec::new(),
        draining: false,
        registered_ms: 1,
        status: ClusterStatus {
            state: ClusterState::Online,
            reason: "the agent answers".into(),
            since_ms: 1,
            facts: Some(ClusterFacts {
                nodes: 1,
                capacity: Resources {
                    cpu_millis: 1900,
                    memory_mib: 3840,
                },
                free: Resources {
                    cpu_millis: 1860,
                    memory_mib: 3776,
                },
                executor: "exec".into(),
                version: "0.1.0".into(),
                used: Some(Resources {
                    cpu_millis: 12,
                    memory_mib: 9,
                }),
                confinement: Some(Confinement::CgroupV1),
            }),
            instances: InstanceCounts {
                running: 4,
                ..InstanceCounts::default()
            },
            set_errors: BTreeMap::new(),
            sets: BTreeMap::new(),
            metrics: Default::default(),
        },
        events: Vec::new(),
        sets: BTreeMap::new(),
        pending_restarts: Vec::new(),
    }
}

pub(super) fn service_full() -> ServiceFull {
    let local_exec = ClusterRef {
        tenant: "operator".into(),
        name: "local-exec".into(),
    };
    let deployment: Deployment = serde_json::from_value(json!({"roles": {"greeter": {
        "instances": 2, "resources": {"cpu_millis": 10, "memory_mib": 16},
        "exec": {"argv": ["sh", "-c", "sleep 1000"]}}}}))
    .unwrap();
    ServiceFull {
        revision: 1,
        comment: "demo".into(),
        configuration: Configuration {
            parameters: json!({}),
            resources: BTreeMap::new(),
            scale: BTreeMap::from([("greeter".into(), 2)]),
        },
        deployment,
        creation_timestamp: 1,
        last_modification: 1,
        environment: "main/prod".into(),
        pending: Some(2),
        cluster: Some(local_exec.clone()),
        migrating_to: None,
        status: Some(RunStatus {
            cluster: Some(local_exec),
            revision: Some(1),
            desired: 2,
            running: 2,
            converged: true,
        }),
        reconcile: ReconcileStatus {
            phase: Phase::Running,
            reason: "2 of 2 ready".into(),
            revision: Some(1),
            progress: Progress::default(),
            alert: None,
            endpoints: Vec::new(),
        },
        deletion_timestamp: None,
        events: Vec::new(),
        links: Vec::new(),
        scheduling: None,
    }
}

/// A rollback: every optional field of a history entry is there.
fn history() -> Vec<HistoryEntry> {
    vec![HistoryEntry {
        revision: 3,
        previous: Some(2),
        original: 1,
        reinstates: Some(1),
        comment: "back to the first".into(),
        kind: RevisionType::Rollback,
        accepted: true,
    }]
}

fn account() -> TenantAccount {
    TenantAccount {
        spec: AccountSpec {
            iaas: "sim".into(),
            iaas_info: Value::Null,
            marks: BTreeMap::from([(
                "vcpu".into(),
                Mark {
                    max: 16000,
                    unit: None,
                },
            )]),
        },
        meta: AccountMeta {
            labels: BTreeMap::from([("team".into(), "blue".into())]),
        },
    }
}

fn environment() -> EnvironmentInfo {
    EnvironmentInfo {
        spec: EnvironmentSpec {
            marks: BTreeMap::new(),
            labels: json!({"tier": "prod"}),
            isolated: false,
            clusters: Some(ClusterSelection {
                names: vec!["operator/local-exec".into()],
                labels: BTreeMap::new(),
            }),
        },
        status: EnvironmentStatus {
            marks: BTreeMap::from([
                (
                    "vcpu".into(),
                    MarkStatus {
                        max: Some(8000),
                        current: 20,
                        unit: "m".into(),
                    },
                ),
                // Neither limited nor used: left out.
                (
                    "cost".into(),
                    MarkStatus {
                        max: None,
                        current: 0,
                        unit: "EUR".into(),
                    },
                ),
            ]),
        },
    }
}

fn tenant_info() -> TenantInfo {
    TenantInfo {
        accounts: BTreeMap::from([(
            "main".into(),
            AccountInfo {
                account: account(),
                environments: BTreeMap::new(),
            },
        )]),
        users: BTreeMap::from([(
            "u-1".into(),
            Member {
                role: Role::Owner,
                confirmed: true,
            },
        )]),
        names: BTreeMap::from([("u-1".into(), "Ada Lovelace".into())]),
        resources: BTreeMap::new(),
        rules: TenantRules::default(),
        registry: None,
        pod_security: PodSecurity::default(),
    }
}

/// What the API answers for every kind, from the types its handlers serialize: (kind, the
/// list answer, the name of its object, the answer for that one object when it has a route
/// of its own).
pub(super) fn answers() -> Vec<(Kind, Value, &'static str, Option<Value>)> {
    let coordination = lease(
        ObjectKind::CoordinationLease,
        LeaseSpec::Coordination(CoordinationLeaseSpec {
            holder_identity: Some("me".into()),
            lease_duration_seconds: Some(15),
            acquire_time: Some("2024-01-01T00:00:00.000000Z".into()),
            renew_time: Some("2024-01-01T00:00:05.000000Z".into()),
            lease_transitions: Some(3),
            preferred_holder: None,
            strategy: None,
        }),
    );
    let akka = lease(
        ObjectKind::AkkaLease,
        LeaseSpec::Akka(AkkaLeaseSpec {
            owner: "node-a".into(),
            version: "4".into(),
            time: 1_700_000_000_000,
        }),
    );
    let leases = [coordination.clone()];
    let akkas = [akka.clone()];
    let pools = PoolConfig {
        resources: vec![TypeConfig {
            rtype: "t".into(),
            state: "free".into(),
            names: vec!["r0".into(), "r1".into()],
            min_count: Some(1),
            max_count: Some(3),
            lifespan: Some("48h".into()),
            ..TypeConfig::default()
        }],
    };
    let resource = Resource {
        name: "r0".into(),
        rtype: "t".into(),
        state: "busy".into(),
        owner: "me".into(),
        last_update_ms: 1_700_000_000_000,
        expiration_ms: Some(1_700_000_600_000),
        token: 5,
        ..Resource::default()
    };
    let member = MemberView {
        id: 1,
        membership: "voter",
        peer_addr: "127.0.0.1:7501".into(),
        status: Ok(NodeStatus {
            id: 1,
            api_addr: "127.0.0.1:7401".into(),
            peer_addr: "127.0.0.1:7501".into(),
            role: "leader".into(),
            term: 3,
            leader: Some(1),
            last_log_index: 9,
            commit_index: 9,
            applied_index: 9,
            snapshot_index: 0,
            purged_index: 0,
            version: "0.1.0".into(),
        }),
        replication_lag: Some(0),
    };
    vec![
        (
            Kind::Leases,
            value(drover_api::kube::wire::kube_list(
                ObjectKind::CoordinationLease,
                &leases,
                9,
            )),
            "l1",
            Some(value(drover_api::kube::wire::kube_object(&coordination))),
        ),
        (
            Kind::Akkaleases,
            value(drover_api::kube::wire::kube_list(
                ObjectKind::AkkaLease,
                &akkas,
                9,
            )),
            "l1",
            Some(value(drover_api::kube::wire::kube_object(&akka))),
        ),
        (Kind::Pools, value(&pools), "t", None),
        (
            Kind::Resources,
            json!([drover_api::boskos::wire::resource_json(&resource)]),
            "r0",
            None,
        ),
        (
            Kind::Members,
            json!({"self": 1, "leader": 1, "term": 3, "members": [drover_api::ops::member_json(member)]}),
            "1",
            None,
        ),
        (
            Kind::Tenants,
            value(ok(BTreeMap::from([(
                "demo".to_string(),
                Role::Owner.as_str().to_string(),
            )]))),
            "demo",
            Some(value(ok(tenant_info()))),
        ),
        (
            Kind::Accounts,
            value(ok(vec!["main"])),
            "main",
            Some(value(ok(account()))),
        ),
        (
            Kind::Environments,
            value(ok(vec!["prod"])),
            "prod",
            Some(value(ok(environment()))),
        ),
        (
            Kind::Clusters,
            value(ok(vec![cluster_view()])),
            "local-exec",
            Some(value(ok(cluster_view()))),
        ),
        (
            Kind::Services,
            value(ok(vec!["greeter"])),
            "greeter",
            Some(value(ok(ServiceView::Full(Box::new(service_full()))))),
        ),
        (Kind::Revisions, value(ok(history())), "3", None),
    ]
}
