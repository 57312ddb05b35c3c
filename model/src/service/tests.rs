//! Services applied as the replicated state machine applies them: the environment chosen by the
//! tenant's rules, acceptance within the marks, one pending revision, `previous`, the history
//! types, merge patches, scale and rollback, and the part-1 guards that waited for services.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::*;
use crate::cluster::agent_api::{ExecSpec, Resources, SetName};
use crate::platform::error::PlatformError;
use crate::platform::identity::Identity;
use crate::platform::{
    AccountSpec, EnvironmentSpec, Platform, PlatformCommand, PlatformOp, ResourceKind, ResourceSpec, Role,
    TenantAccount, TenantSpec, UserProfile,
};

fn who(subject: &str) -> Identity {
    Identity {
        issuer: "https://idp.test".to_string(),
        subject: subject.to_string(),
    }
}

fn op(platform: &mut Platform, caller: &str, op: PlatformOp) -> Result<(), PlatformError> {
    platform
        .apply(&PlatformCommand {
            caller: who(caller),
            op,
        })
        .map(|_| ())
}

fn ok(platform: &mut Platform, caller: &str, change: PlatformOp) {
    let shown = format!("{change:?}");
    op(platform, caller, change).unwrap_or_else(|e| panic!("{caller} {shown}: {e}"));
}

fn environment(marks: Value, labels: Value) -> EnvironmentSpec {
    serde_json::from_value(json!({"marks": marks, "labels": labels})).unwrap()
}

/// alice owns acme (account main, environment prod with 1000m vCPU), bob is a plain member,
/// carol a stranger, dave an operator.
fn world() -> Platform {
    let mut platform = Platform::default();
    for name in ["alice", "bob", "carol", "dave"] {
        let register = PlatformOp::RegisterUser {
            uid: format!("u-{name}"),
            profile: UserProfile {
                name: name.into(),
                ..UserProfile::default()
            },
            operator: name == "dave",
        };
        ok(&mut platform, name, register);
    }
    ok(
        &mut platform,
        "alice",
        PlatformOp::CreateTenant {
            tenant: "acme".into(),
            spec: TenantSpec::default(),
        },
    );
    let invite = PlatformOp::Invite {
        tenant: "acme".into(),
        user: "u-bob".into(),
        role: Role::Plain,
    };
    ok(&mut platform, "alice", invite);
    ok(
        &mut platform,
        "bob",
        PlatformOp::Confirm {
            tenant: "acme".into(),
            role: Role::Plain,
        },
    );
    let account = PlatformOp::CreateAccount {
        tenant: "acme".into(),
        account: "main".into(),
        body: TenantAccount {
            spec: serde_json::from_value::<AccountSpec>(json!({"iaas": "sim"})).unwrap(),
            meta: Default::default(),
        },
    };
    ok(&mut platform, "alice", account);
    add_environment(
        &mut platform,
        "prod",
        json!({"vcpu": {"max": 1000}}),
        json!({"tier": "prod"}),
    );
    platform
}

fn add_environment(platform: &mut Platform, name: &str, marks: Value, labels: Value) {
    let create = PlatformOp::CreateEnvironment {
        tenant: "acme".into(),
        account: "main".into(),
        environment: name.into(),
        spec: environment(marks, labels),
    };
    ok(platform, "alice", create);
}

fn deployment(instances: u32, cpu: u64) -> Deployment {
    Deployment {
        roles: BTreeMap::from([(
            "frontend".to_string(),
            RoleSpec {
                instances,
                resources: Resources {
                    cpu_millis: cpu,
                    memory_mib: 64,
                },
                exec: ExecSpec {
                    argv: vec!["sleep".into(), "1000".into()],
                    probe: None,
                    files: Default::default(),
                    pod: None,
                },
                env: BTreeMap::from([("MODE".to_string(), "one".to_string())]),
            },
        )]),
        parameters: json!({}),
        resources: Vec::new(),
        channels: Default::default(),
        constraints: Default::default(),
        source: None,
    }
}

fn run(platform: &mut Platform, caller: &str, change: ServiceOp) -> Result<ServiceOutcome, PlatformError> {
    platform.apply_service(
        1_000,
        &ServiceCommand {
            caller: who(caller),
            change,
        },
    )
}

fn refused(platform: &mut Platform, caller: &str, change: ServiceOp) -> PlatformError {
    let before = platform.clone();
    let error = run(platform, caller, change).expect_err("refused");
    assert_eq!(*platform, before, "a refused change changed the state");
    error
}

fn create(service: &str, deployment: Deployment, accept: bool) -> ServiceOp {
    ServiceOp::Create {
        tenant: "acme".into(),
        service: service.into(),
        uid: format!("uid-{service}"),
        deployment,
        comment: "first".into(),
        accept,
    }
}

fn revise(previous: u64, change: Change, accept: bool) -> ServiceOp {
    ServiceOp::Revise {
        tenant: "acme".into(),
        service: "web".into(),
        previous,
        change,
        comment: String::new(),
        accept,
        remove_links: false,
    }
}

fn decide(revision: Option<u64>, accept: bool) -> ServiceOp {
    ServiceOp::Decide {
        tenant: "acme".into(),
        service: "web".into(),
        revision,
        accept,
    }
}

#[test]
fn a_revision_is_accepted_at_once_only_within_the_marks_and_when_asked() {
    let mut platform = world();
    // Without accept: pending.
    let outcome = run(&mut platform, "bob", create("web", deployment(2, 100), false)).unwrap();
    assert_eq!((outcome.revision, outcome.accepted), (Some(1), false));
    assert_eq!(outcome.environment.unwrap().name(), "main/prod");
    let stored = platform.service("acme", "web").unwrap();
    assert_eq!((stored.current, stored.pending), (None, Some(1)));
    // Accepting it explicitly deploys it; the environment shows the usage.
    run(&mut platform, "bob", decide(Some(1), true)).unwrap();
    let info = platform.environment_info("acme", "main", "prod").unwrap();
    assert_eq!(info.status.marks["vcpu"].current, 200);
    // accept=true within the marks: accepted at once.
    let within = run(
        &mut platform,
        "bob",
        revise(
            1,
            Change::Scale {
                scale: BTreeMap::from([("frontend".into(), 5)]),
            },
            true,
        ),
    )
    .unwrap();
    assert!(within.accepted);
    // accept=true beyond the marks (20 × 100m > 1000m): pending, and accepting it is refused.
    let beyond = run(
        &mut platform,
        "bob",
        revise(
            2,
            Change::Scale {
                scale: BTreeMap::from([("frontend".into(), 20)]),
            },
            true,
        ),
    )
    .unwrap();
    assert_eq!((beyond.revision, beyond.accepted), (Some(3), false));
    let error = refused(&mut platform, "bob", decide(Some(3), true));
    assert!(
        matches!(&error, PlatformError::Conflict(m) if m.contains("vcpu")),
        "{error:?}"
    );
    // Rejecting a later revision drops it and keeps the service.
    let rejected = run(&mut platform, "bob", decide(None, false)).unwrap();
    assert!(!rejected.removed);
    let stored = platform.service("acme", "web").unwrap();
    assert_eq!((stored.current, stored.pending), (Some(2), None));
    assert!(!stored.revisions.contains_key(&3));
}

#[test]
fn rejecting_the_first_revision_removes_the_service() {
    let mut platform = world();
    run(&mut platform, "alice", create("web", deployment(1, 100), false)).unwrap();
    let outcome = run(&mut platform, "alice", decide(Some(1), false)).unwrap();
    assert!(outcome.removed);
    assert!(matches!(
        platform.service("acme", "web"),
        Err(PlatformError::NotFound(_))
    ));
    assert!(matches!(
        refused(&mut platform, "alice", decide(None, true)),
        PlatformError::NotFound(_)
    ));
}

#[test]
fn one_pending_revision_at_a_time_and_previous_must_be_current() {
    let mut platform = world();
    run(&mut platform, "alice", create("web", deployment(1, 100), true)).unwrap();
    run(
        &mut platform,
        "alice",
        revise(
            1,
            Change::Put {
                deployment: deployment(2, 100),
            },
            false,
        ),
    )
    .unwrap();
    // Revision 2 is pending: scale, rollback and updates are refused.
    for change in [
        Change::Scale {
            scale: BTreeMap::from([("frontend".into(), 3)]),
        },
        Change::Rollback { target: 1 },
        Change::Put {
            deployment: deployment(3, 100),
        },
    ] {
        assert!(matches!(
            refused(&mut platform, "alice", revise(1, change, true)),
            PlatformError::Conflict(_)
        ));
    }
    assert!(matches!(
        refused(&mut platform, "alice", decide(Some(1), true)),
        PlatformError::Conflict(_)
    ));
    run(&mut platform, "alice", decide(Some(2), true)).unwrap();
    // A stale previous is refused.
    let stale = refused(
        &mut platform,
        "alice",
        revise(
            1,
            Change::Scale {
                scale: BTreeMap::new(),
            },
            true,
        ),
    );
    assert!(
        matches!(&stale, PlatformError::Conflict(m) if m.contains("current revision 2")),
        "{stale:?}"
    );
}

#[test]
fn history_types_merge_patches_scale_and_rollback() {
    let mut platform = world();
    run(&mut platform, "alice", create("web", deployment(1, 100), true)).unwrap();
    // PATCH: a merge patch over revision 1 (null removes a key).
    let patch = json!({"roles": {"frontend": {"env": {"MODE": null, "COLOR": "blue"}}}, "parameters": {"greeting": "hi"}});
    run(&mut platform, "alice", revise(1, Change::Patch { patch }, true)).unwrap();
    run(
        &mut platform,
        "alice",
        revise(
            2,
            Change::Scale {
                scale: BTreeMap::from([("frontend".into(), 3)]),
            },
            true,
        ),
    )
    .unwrap();
    run(
        &mut platform,
        "alice",
        revise(3, Change::Rollback { target: 1 }, true),
    )
    .unwrap();
    let stored = platform.service("acme", "web").unwrap();
    let history: Vec<(u64, RevisionType, Option<u64>, Option<u64>)> = stored
        .revisions
        .values()
        .map(|r| (r.number, r.kind, r.previous, r.reinstates))
        .collect();
    assert_eq!(
        history,
        [
            (1, RevisionType::Put, None, None),
            (2, RevisionType::Patch, Some(1), None),
            (3, RevisionType::Scale, Some(2), None),
            (4, RevisionType::Rollback, Some(3), Some(1)),
        ]
    );
    let patched = &stored.revisions[&2].deployment;
    assert_eq!(
        patched.roles["frontend"].env,
        BTreeMap::from([("COLOR".to_string(), "blue".to_string())])
    );
    assert_eq!(patched.parameters, json!({"greeting": "hi"}));
    assert_eq!(stored.revisions[&3].deployment.roles["frontend"].instances, 3);
    assert_eq!(stored.revisions[&4].deployment, stored.revisions[&1].deployment);
    // Instance ids follow what a role runs: the patch changed it, the scale did not, the
    // rollback changed it back (new instances again).
    let role_revisions: Vec<u64> = (1..=4)
        .map(|n| stored.revisions[&n].role_revisions["frontend"])
        .collect();
    assert_eq!(role_revisions, [1, 2, 2, 4]);
    assert_eq!(stored.current, Some(4));
    // Bad changes name what to fix.
    for (change, field) in [
        (
            Change::Scale {
                scale: BTreeMap::from([("backend".into(), 1)]),
            },
            "scale.backend",
        ),
        (
            Change::Patch {
                patch: json!({"roles": {"frontend": {"instances": "many"}}}),
            },
            "body",
        ),
        (
            Change::Patch {
                patch: json!({"roles": null}),
            },
            "body",
        ),
        (
            Change::Put {
                deployment: Deployment {
                    roles: BTreeMap::new(),
                    ..deployment(1, 1)
                },
            },
            "roles",
        ),
    ] {
        match refused(&mut platform, "alice", revise(4, change, true)) {
            PlatformError::Invalid { field: got, .. } => assert_eq!(got, field),
            other => panic!("{field}: {other:?}"),
        }
    }
    assert!(matches!(
        refused(
            &mut platform,
            "alice",
            revise(4, Change::Rollback { target: 9 }, true)
        ),
        PlatformError::NotFound(_)
    ));
}

fn rule(reason: &str, sel: Value) -> Value {
    json!({"reason": reason, "sel": sel})
}

#[test]
fn the_tenants_rules_choose_the_environment_and_can_refuse_the_user() {
    let mut platform = world();
    add_environment(
        &mut platform,
        "staging",
        json!({"vcpu": {"max": 8000}}),
        json!({"tier": "staging"}),
    );
    // prod (1000m) is accepted outright, staging (8000m) only with acceptance: prod is chosen
    // although it has fewer vCPUs (A18).
    let rules = json!({
        "selectEnvironmentService": [rule("prod deploys at once", json!(["$.environment.labels.tier", "prod", "::eq"]))],
        "selectAcceptEnvironmentService": [rule("staging needs acceptance", json!(["$.environment.labels.tier", "staging", "::eq"]))],
    });
    let spec: TenantSpec = serde_json::from_value(json!({"rules": rules})).unwrap();
    ok(
        &mut platform,
        "alice",
        PlatformOp::PatchTenant {
            tenant: "acme".into(),
            spec,
        },
    );
    let outcome = run(&mut platform, "alice", create("web", deployment(1, 100), true)).unwrap();
    assert_eq!(outcome.environment.unwrap().environment, "prod");
    assert!(outcome.accepted);
    // Only the requiring environment passes: the revision waits for acceptance.
    let rules = json!({
        "selectEnvironmentService": [rule("never", json!(["$.environment.labels.tier", "none", "::eq"]))],
        "selectAcceptEnvironmentService": [rule("staging needs acceptance", json!(["$.environment.labels.tier", "staging", "::eq"]))],
    });
    let spec: TenantSpec = serde_json::from_value(json!({"rules": rules})).unwrap();
    ok(
        &mut platform,
        "alice",
        PlatformOp::PatchTenant {
            tenant: "acme".into(),
            spec,
        },
    );
    let outcome = run(&mut platform, "alice", create("api", deployment(1, 100), true)).unwrap();
    assert_eq!(
        outcome.environment.as_ref().map(|e| e.environment.as_str()),
        Some("staging")
    );
    assert!(!outcome.accepted);
    // validateEnvironmentUser refusing every environment: 403 and nothing created (A19).
    let rules =
        json!({"validateEnvironmentUser": [rule("owners only", json!(["$.user.role", "owner", "::eq"]))]});
    let spec: TenantSpec = serde_json::from_value(json!({"rules": rules})).unwrap();
    ok(
        &mut platform,
        "alice",
        PlatformOp::PatchTenant {
            tenant: "acme".into(),
            spec,
        },
    );
    let error = refused(&mut platform, "bob", create("db", deployment(1, 100), true));
    assert!(
        matches!(&error, PlatformError::Forbidden(m) if m.contains("owners only")),
        "{error:?}"
    );
    // Operators bypass the tenant's rules.
    run(&mut platform, "dave", create("db", deployment(1, 100), false)).unwrap();
}

#[test]
fn who_may_deploy_and_the_guards_that_waited_for_services() {
    let mut platform = world();
    assert!(matches!(
        refused(&mut platform, "carol", create("web", deployment(1, 100), true)),
        PlatformError::NotFound(_)
    ));
    let secret = PlatformOp::RegisterResource {
        tenant: "acme".into(),
        kind: ResourceKind::Secret,
        name: "db".into(),
        spec: ResourceSpec {
            data: json!("pw"),
            meta: None,
            selector: None,
        },
    };
    ok(&mut platform, "alice", secret);
    let mut uses = deployment(1, 100);
    uses.resources.push(ResourceUse {
        kind: "secret".into(),
        name: "db".into(),
    });
    run(&mut platform, "bob", create("web", uses, true)).unwrap();
    let mut missing = deployment(1, 100);
    missing.resources.push(ResourceUse {
        kind: "secret".into(),
        name: "nope".into(),
    });
    assert!(matches!(
        refused(&mut platform, "bob", create("api", missing, true)),
        PlatformError::Invalid { .. }
    ));
    assert!(matches!(
        refused(&mut platform, "bob", create("web", deployment(1, 100), true)),
        PlatformError::Conflict(_)
    ));
    for guarded in [
        PlatformOp::UnregisterResource {
            tenant: "acme".into(),
            kind: ResourceKind::Secret,
            name: "db".into(),
        },
        PlatformOp::DeleteEnvironment {
            tenant: "acme".into(),
            account: "main".into(),
            environment: "prod".into(),
        },
        PlatformOp::DeleteTenant {
            tenant: "acme".into(),
        },
    ] {
        let before = platform.clone();
        let error = op(&mut platform, "alice", guarded).expect_err("guarded");
        assert!(matches!(error, PlatformError::Conflict(_)), "{error:?}");
        assert_eq!(platform, before);
    }
    run(
        &mut platform,
        "bob",
        ServiceOp::Delete {
            tenant: "acme".into(),
            service: "web".into(),
            force: false,
        },
    )
    .unwrap();
    ok(
        &mut platform,
        "alice",
        PlatformOp::UnregisterResource {
            tenant: "acme".into(),
            kind: ResourceKind::Secret,
            name: "db".into(),
        },
    );
    ok(
        &mut platform,
        "alice",
        PlatformOp::DeleteTenant {
            tenant: "acme".into(),
        },
    );
}

#[test]
fn a_tenant_without_environments_cannot_deploy() {
    let mut platform = world();
    ok(
        &mut platform,
        "alice",
        PlatformOp::DeleteEnvironment {
            tenant: "acme".into(),
            account: "main".into(),
            environment: "prod".into(),
        },
    );
    let error = refused(&mut platform, "alice", create("web", deployment(1, 100), true));
    assert!(
        matches!(&error, PlatformError::Conflict(m) if m.contains("no environment")),
        "{error:?}"
    );
}

#[test]
fn restarting_a_role_or_an_instance_asks_the_services_cluster() {
    use crate::cluster::agent_api::InstanceId;
    let mut platform = world();
    run(&mut platform, "bob", create("web", deployment(2, 100), true)).unwrap();
    let restart = |instance: Option<&str>| ServiceOp::Restart {
        tenant: "acme".into(),
        service: "web".into(),
        role: "frontend".into(),
        instance: instance.map(|i| InstanceId::parse(i).unwrap()),
    };
    assert!(
        matches!(
            refused(&mut platform, "bob", restart(None)),
            PlatformError::Conflict(_)
        ),
        "not placed yet"
    );
    let cluster = place_web(&mut platform);
    run(&mut platform, "bob", restart(Some("acme.web.frontend.r1.1"))).unwrap();
    let pending: Vec<String> = platform
        .cluster(&cluster)
        .unwrap()
        .pending_restarts
        .keys()
        .map(|i| i.to_string())
        .collect();
    assert_eq!(pending, ["acme.web.frontend.r1.1"]);
    run(&mut platform, "bob", restart(None)).unwrap();
    assert_eq!(platform.cluster(&cluster).unwrap().pending_restarts.len(), 2);
    assert!(matches!(
        refused(&mut platform, "bob", restart(Some("acme.web.frontend.r1.7"))),
        PlatformError::NotFound(_)
    ));
    let other_role = ServiceOp::Restart {
        tenant: "acme".into(),
        service: "web".into(),
        role: "backend".into(),
        instance: None,
    };
    assert!(matches!(
        refused(&mut platform, "bob", other_role),
        PlatformError::NotFound(_)
    ));
    assert!(matches!(
        refused(&mut platform, "carol", restart(None)),
        PlatformError::NotFound(_)
    ));
}

#[test]
fn a_service_keeps_its_last_hundred_revisions_and_bounded_deployments() {
    let mut platform = world();
    run(&mut platform, "alice", create("web", deployment(1, 10), true)).unwrap();
    for previous in 1..=(REVISIONS_KEPT as u64 + 5) {
        let scale = Change::Scale {
            scale: BTreeMap::from([("frontend".into(), 1 + (previous % 2) as u32)]),
        };
        run(&mut platform, "alice", revise(previous, scale, true)).unwrap();
    }
    let stored = platform.service("acme", "web").unwrap();
    assert_eq!(stored.revisions.len(), REVISIONS_KEPT);
    assert_eq!(stored.current, Some(REVISIONS_KEPT as u64 + 6));
    assert_eq!(stored.revisions.keys().next(), Some(&7));
    assert!(matches!(
        refused(
            &mut platform,
            "alice",
            revise(106, Change::Rollback { target: 1 }, true)
        ),
        PlatformError::NotFound(_)
    ));
    // Too many instances for one agent's set, too large parameters, a probe path that is no path.
    let mut many = deployment(1000, 1);
    for role in ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"] {
        let spec = many.roles["frontend"].clone();
        many.roles.insert(role.into(), spec);
    }
    let mut huge = deployment(1, 1);
    huge.parameters = json!({"blob": "x".repeat(70 * 1024)});
    let mut probe = deployment(1, 1);
    if let Some(role) = probe.roles.get_mut("frontend") {
        role.exec.probe = Some(crate::cluster::agent_api::Probe::Http {
            port: 80,
            path: "/ok\r\nX: y".into(),
        });
    }
    for (deployment, field) in [
        (many, "roles"),
        (huge, "parameters"),
        (probe, "roles.frontend.exec.probe.http.path"),
    ] {
        match refused(&mut platform, "alice", create("api", deployment, true)) {
            PlatformError::Invalid { field: got, .. } => assert_eq!(got, field),
            other => panic!("{field}: {other:?}"),
        }
    }
}

/// Registers the operator's cluster `edge` and places `acme/web` on it.
fn place_web(platform: &mut Platform) -> crate::cluster::ClusterRef {
    use crate::cluster::{ClusterCommand, ClusterOp, ClusterRef, ClusterRegistration};
    let cluster = ClusterRef {
        tenant: "operator".into(),
        name: "edge".into(),
    };
    let register = ClusterOp::Register {
        cluster: cluster.clone(),
        uid: "c-1".into(),
        registration: ClusterRegistration {
            ca: None,
            metrics: Vec::new(),
            endpoint: "http://127.0.0.1:7700".into(),
            join_token: "a-join-token-of-some-length".into(),
            labels: BTreeMap::new(),
        },
    };
    platform
        .apply_cluster(
            1_000,
            &ClusterCommand::User {
                caller: who("dave"),
                change: register,
            },
        )
        .unwrap();
    report_capacity(platform, &cluster, "c-1", 64_000);
    place_web_again(platform, &cluster);
    cluster
}

/// The cluster's actor reports its agent's facts: `cpu_millis` of capacity (and as many MiB).
fn report_capacity(
    platform: &mut Platform,
    cluster: &crate::cluster::ClusterRef,
    uid: &str,
    cpu_millis: u64,
) {
    use crate::cluster::{ClusterCommand, ClusterFacts, ClusterObservation, ClusterState};
    let capacity = Resources {
        cpu_millis,
        memory_mib: cpu_millis,
    };
    let observation = ClusterObservation {
        cluster: cluster.clone(),
        uid: uid.into(),
        state: ClusterState::Online,
        reason: String::new(),
        facts: Some(Box::new(ClusterFacts {
            nodes: 1,
            capacity,
            free: capacity,
            executor: "sim".into(),
            version: "test".into(),
            used: None,
            confinement: None,
        })),
        instances: None,
        set_errors: None,
        sets: None,
        sets_changed: None,
        restarted: Vec::new(),
        metrics: None,
    };
    platform
        .apply_cluster(1_000, &ClusterCommand::Observe(observation))
        .unwrap();
}

#[test]
fn capacity_is_taken_in_the_apply_so_two_placements_cannot_share_room() {
    let mut platform = world();
    // `edge` has 64 CPUs; `web` takes 100m of them. A second cluster with room for one service.
    run(&mut platform, "bob", create("web", deployment(1, 100), true)).unwrap();
    let edge = place_web(&mut platform);
    use crate::cluster::{ClusterCommand, ClusterOp, ClusterRef, ClusterRegistration};
    let small = ClusterRef {
        tenant: "operator".into(),
        name: "small".into(),
    };
    let register = ClusterOp::Register {
        cluster: small.clone(),
        uid: "c-small".into(),
        registration: ClusterRegistration {
            ca: None,
            metrics: Vec::new(),
            endpoint: "http://127.0.0.1:7701".into(),
            join_token: "a-join-token-of-some-length".into(),
            labels: BTreeMap::new(),
        },
    };
    let command = ClusterCommand::User {
        caller: who("dave"),
        change: register,
    };
    platform.apply_cluster(1_000, &command).unwrap();
    let place = |platform: &mut Platform, service: &str, cluster: &ClusterRef, migrate: bool| {
        let uid = platform.service("acme", service).unwrap().uid.clone();
        platform.apply_placement(
            2_000,
            &placement::Placement {
                tenant: "acme".into(),
                service: service.into(),
                uid,
                cluster: cluster.clone(),
                decision: Default::default(),
                migrate,
                decided_ms: 0,
            },
        )
    };
    for name in ["api", "db"] {
        run(&mut platform, "bob", create(name, deployment(2, 150), true)).unwrap();
    }
    // No facts yet: no placement can count on room it does not know of.
    let error = place(&mut platform, "api", &small, false).unwrap_err();
    assert!(
        error.to_string().contains("has not reported its capacity"),
        "{error}"
    );
    report_capacity(&mut platform, &small, "c-small", 400);
    // 300m fits in 400m; the second 300m does not, whichever leader proposed it.
    assert!(place(&mut platform, "api", &small, false).unwrap());
    let error = place(&mut platform, "db", &small, false).unwrap_err();
    assert!(matches!(error, PlatformError::Conflict(_)), "{error:?}");
    assert!(error.to_string().contains("no room"), "{error}");
    assert!(platform.service("acme", "db").unwrap().placement.is_none());
    // A move reserves room on its target too: `web` (100m) moving to `small` fits (400m),
    // then `db` cannot go there either, and the service already there is placed again freely.
    assert!(place(&mut platform, "web", &small, true).unwrap());
    assert_eq!(platform.reserved()[&small].cpu_millis, 400);
    assert!(place(&mut platform, "db", &small, false).is_err());
    assert!(place(&mut platform, "db", &edge, false).unwrap());
    assert!(
        !place(&mut platform, "api", &small, false).unwrap(),
        "already there: nothing changes"
    );
    // Which sets belong to services, looked up set by set, is what the walk of every service
    // says (a set of no service, or of a service placed elsewhere, belongs to none).
    for cluster in [&small, &edge] {
        let owned = platform.service_sets_on(cluster);
        assert!(!owned.is_empty());
        let mut asked: Vec<SetName> = platform
            .service_sets_on(&small)
            .into_iter()
            .chain(platform.service_sets_on(&edge))
            .collect();
        asked.extend(["acme.nothing", "nobody.web"].map(|n| SetName::parse(n).unwrap()));
        assert_eq!(platform.service_sets_among(cluster, &asked), owned);
    }
    // The reservations kept between placements are what counting every service gives, after
    // placements, a move's end, a scale and a deletion's end alike.
    assert_eq!(platform.reserved(), platform.reserved_uncached());
    let mut switch = report(&platform, reconcile::Phase::Running, "", false);
    switch.switched_to = Some(small.clone());
    assert!(platform.apply_service_report(3, 3_000, &switch).unwrap());
    assert_eq!(platform.reserved()[&small].cpu_millis, 400);
    assert_eq!(platform.reserved(), platform.reserved_uncached());
    run(&mut platform, "bob", delete(false)).unwrap();
    let end = report(&platform, reconcile::Phase::Deleting, "", true);
    assert!(platform.apply_service_report(4, 4_000, &end).unwrap());
    assert_eq!(platform.reserved()[&small].cpu_millis, 300);
    assert_eq!(platform.reserved(), platform.reserved_uncached());
}

fn delete(force: bool) -> ServiceOp {
    ServiceOp::Delete {
        tenant: "acme".into(),
        service: "web".into(),
        force,
    }
}

fn report(
    platform: &Platform,
    phase: reconcile::Phase,
    reason: &str,
    finalize: bool,
) -> reconcile::ServiceReport {
    reconcile::ServiceReport {
        tenant: "acme".into(),
        service: "web".into(),
        uid: platform
            .service("acme", "web")
            .map(|s| s.uid.clone())
            .unwrap_or_default(),
        status: reconcile::ReconcileStatus {
            phase,
            reason: reason.into(),
            revision: Some(1),
            progress: reconcile::Progress::default(),
            alert: None,
            endpoints: Vec::new(),
        },
        finalize,
        switched_to: None,
    }
}

#[test]
fn a_placed_service_is_deleted_through_its_finalizer() {
    use reconcile::Phase;
    let mut platform = world();
    // Never accepted: nothing can run, so it goes at once.
    run(&mut platform, "bob", create("web", deployment(2, 100), false)).unwrap();
    let outcome = run(&mut platform, "bob", delete(false)).unwrap();
    assert!(outcome.removed && !outcome.deleting);
    // Placed: marked deleting, refuses new revisions, goes when its actor finalizes it.
    run(&mut platform, "bob", create("web", deployment(2, 100), true)).unwrap();
    let cluster = place_web(&mut platform);
    let outcome = run(&mut platform, "bob", delete(false)).unwrap();
    assert!(outcome.deleting && !outcome.removed, "{outcome:?}");
    assert_eq!(platform.service("acme", "web").unwrap().deleting_ms, Some(1_000));
    let scale = revise(
        1,
        Change::Scale {
            scale: BTreeMap::from([("frontend".into(), 3)]),
        },
        true,
    );
    assert!(matches!(
        refused(&mut platform, "bob", scale),
        PlatformError::Conflict(_)
    ));
    // Deleting again is no error and keeps the first time.
    assert!(run(&mut platform, "bob", delete(false)).unwrap().deleting);
    // A tenant with a service still being deleted cannot go.
    let error = op(
        &mut platform,
        "alice",
        PlatformOp::DeleteTenant {
            tenant: "acme".into(),
        },
    )
    .unwrap_err();
    assert!(matches!(error, PlatformError::Conflict(_)), "{error:?}");
    // A report about another incarnation changes nothing; this one's status is recorded with
    // one event per phase change, repeats counted.
    let mut stale = report(&platform, Phase::Deleting, "x", true);
    stale.uid = "another".into();
    platform.apply_service_report(2, 2_000, &stale).unwrap();
    assert!(platform.service("acme", "web").is_ok());
    let deleting = report(&platform, Phase::Deleting, "removing 2 instances", false);
    platform.apply_service_report(2, 2_000, &deleting).unwrap();
    let stored = platform.service("acme", "web").unwrap();
    assert_eq!(stored.reconcile.phase, Phase::Deleting);
    assert_eq!(stored.reconcile.reason, "removing 2 instances");
    assert_eq!(stored.events.len(), 1, "DELETING since the delete: no new event");
    assert_eq!(stored.events[0].reason, "Deleting");
    assert_eq!(stored.events[0].first_timestamp, "1970-01-01T00:00:01Z");
    platform
        .apply_service_report(
            3,
            3_000,
            &report(&platform, Phase::Deleting, "removing 1 instances", false),
        )
        .unwrap();
    assert_eq!(
        platform.service("acme", "web").unwrap().events.len(),
        1,
        "same phase: no new event"
    );
    platform
        .apply_service_report(4, 4_000, &report(&platform, Phase::Deleting, "", true))
        .unwrap();
    assert!(matches!(
        platform.service("acme", "web"),
        Err(PlatformError::NotFound(_))
    ));
    // Finalizing a service that is not being deleted is refused.
    run(&mut platform, "bob", create("web", deployment(2, 100), true)).unwrap();
    place_web_again(&mut platform, &cluster);
    let error = platform
        .apply_service_report(5, 5_000, &report(&platform, Phase::Running, "", true))
        .unwrap_err();
    assert!(matches!(error, PlatformError::Conflict(_)));
    // Forcing is for operators, and says what it orphaned.
    assert!(matches!(
        refused(&mut platform, "bob", delete(true)),
        PlatformError::Forbidden(_)
    ));
    let outcome = run(&mut platform, "dave", delete(true)).unwrap();
    assert!(outcome.removed);
    assert_eq!(
        outcome.orphaned.map(|o| o.cluster),
        None,
        "its cluster reported no instances yet"
    );
}

/// Issue #31, defect 12: the committed delete makes the phase `DELETING` at once (with its
/// event, at the delete's own revision), and nothing but the finalizer changes that; a report
/// planned before the delete committed cannot bring `RUNNING` back.
#[test]
fn a_deleted_service_is_deleting_from_the_commit_until_it_goes() {
    use reconcile::Phase;
    let mut platform = world();
    run(&mut platform, "bob", create("web", deployment(2, 100), true)).unwrap();
    place_web(&mut platform);
    let running = report(
        &platform,
        Phase::Running,
        "revision 1: 2 instances running",
        false,
    );
    platform.apply_service_report(5, 500, &running).unwrap();
    assert_eq!(
        platform.service("acme", "web").unwrap().reconcile.phase,
        Phase::Running
    );
    // The delete, applied as the state applies it at revision 7.
    let touched = [("acme".to_string(), "web".to_string())];
    let command = ServiceCommand {
        caller: who("bob"),
        change: delete(false),
    };
    let outcome = platform
        .changing_services(7, &touched, |p| Ok((p.apply_service(1_000, &command)?, true)))
        .unwrap();
    assert!(outcome.deleting);
    let stored = platform.service("acme", "web").unwrap();
    assert_eq!(stored.reconcile.phase, Phase::Deleting);
    assert_eq!(
        stored.reconcile.reason,
        "deleted; its instances are being removed from cluster operator/edge"
    );
    assert_eq!(stored.reconcile.revision, Some(1));
    let last = stored.events.back().unwrap();
    assert_eq!(
        (last.reason.as_str(), last.kind.as_str(), last.resource_version),
        ("Deleting", "Normal", 7)
    );
    assert_eq!(last.first_timestamp, "1970-01-01T00:00:01Z");
    assert_eq!(stored.version, 7);
    let events = stored.events.len();
    // Its summary and full view say so too.
    let view = serde_json::to_value(stored.full().unwrap()).unwrap();
    assert_eq!(view["reconcile"]["phase"], "DELETING", "{view}");
    assert!(stored.summary().deleted);
    // Reports planned before the delete committed change nothing.
    for stale in [
        Phase::Running,
        Phase::Progressing,
        Phase::Failed,
        Phase::Unreachable,
    ] {
        let late = report(&platform, stale, "planned before the delete", false);
        platform.apply_service_report(8, 2_000, &late).unwrap();
        let stored = platform.service("acme", "web").unwrap();
        assert_eq!(stored.reconcile.phase, Phase::Deleting, "{stale:?}");
        assert_eq!(stored.events.len(), events, "{stale:?}");
    }
    // The actor's own DELETING reports update the reason; the finalizer removes the service.
    let removing = report(&platform, Phase::Deleting, "deleted; removing 2 instances", false);
    platform.apply_service_report(9, 3_000, &removing).unwrap();
    let stored = platform.service("acme", "web").unwrap();
    assert_eq!(stored.reconcile.reason, "deleted; removing 2 instances");
    assert_eq!(stored.events.len(), events);
    let end = report(&platform, Phase::Deleting, "", true);
    platform.apply_service_report(10, 4_000, &end).unwrap();
    assert!(platform.service("acme", "web").is_err());
}

/// Issue #31, defect 10: what an agent refuses for its spec is refused before anything is
/// committed, whichever way the deployment comes (create, a whole update, a merge patch, a
/// rollback), naming the field as the agent would under the role.
#[test]
fn a_deployment_the_agent_would_refuse_is_refused_naming_the_field() {
    use crate::cluster::agent_api::Probe;
    use crate::cluster::validate::{INSTANCE_ID_ENV, MAX_SET_BYTES};
    let mut platform = world();
    let with = |change: &dyn Fn(&mut RoleSpec)| {
        let mut deployment = deployment(1, 10);
        if let Some(role) = deployment.roles.get_mut("frontend") {
            change(role);
        }
        deployment
    };
    let reserved = with(&|role| {
        role.env.insert(INSTANCE_ID_ENV.into(), "x".into());
    });
    let tcp_zero = with(&|role| role.exec.probe = Some(Probe::Tcp { port: 0 }));
    let http_zero = with(&|role| {
        role.exec.probe = Some(Probe::Http {
            port: 0,
            path: "/".into(),
        })
    });
    let empty_program = with(&|role| role.exec.argv = vec![String::new()]);
    // 1,000 instances of 20 KiB each, and the rollout's 250 more: over the set's bytes.
    let heavy = with(&|role| {
        role.instances = 1_000;
        role.resources = Resources::default();
        role.env.insert("BLOB".into(), "x".repeat(20 * 1024));
    });
    // 9,000 instances fit a set, but not with a rollout's surge beside them.
    let mut crowded = deployment(1_000, 0);
    for role in ["a", "b", "c", "d", "e", "f", "g", "h"] {
        let spec = crowded.roles["frontend"].clone();
        crowded.roles.insert(role.into(), spec);
    }
    let table = [
        (
            "reserved env",
            reserved.clone(),
            "roles.frontend.env",
            "DROVER_INSTANCE_ID is set by the agent".to_string(),
        ),
        (
            "tcp probe on port 0",
            tcp_zero,
            "roles.frontend.exec.probe.tcp.port",
            "must not be 0".into(),
        ),
        (
            "http probe on port 0",
            http_zero,
            "roles.frontend.exec.probe.http.port",
            "must not be 0".into(),
        ),
        (
            "empty program",
            empty_program,
            "roles.frontend.exec.argv[0]",
            "the program must not be empty".into(),
        ),
        (
            "set too large",
            heavy,
            "roles.frontend.instances",
            format!("at most {MAX_SET_BYTES}"),
        ),
        (
            "no room for the surge",
            crowded,
            "roles",
            "11250 while a rollout".into(),
        ),
    ];
    for (case, deployment, field, words) in &table {
        match refused(&mut platform, "alice", create("web", deployment.clone(), true)) {
            PlatformError::Invalid { field: got, message } => {
                assert_eq!(got, *field, "{case}");
                assert!(message.contains(words.as_str()), "{case}: {message}");
            }
            other => panic!("{case}: {other:?}"),
        }
    }
    // Later revisions too: a whole update, a merge patch, a rollback to a revision stored
    // before the rule existed.
    run(&mut platform, "alice", create("web", deployment(1, 10), true)).unwrap();
    let put = Change::Put { deployment: reserved };
    let patch = Change::Patch {
        patch: json!({"roles": {"frontend": {"env": {INSTANCE_ID_ENV: "x"}}}}),
    };
    for change in [put, patch] {
        match refused(&mut platform, "alice", revise(1, change, true)) {
            PlatformError::Invalid { field, message } => {
                assert_eq!(
                    format!("{field}: {message}"),
                    "roles.frontend.env: DROVER_INSTANCE_ID is set by the agent"
                );
            }
            other => panic!("{other:?}"),
        }
    }
    let mut old = platform.service("acme", "web").unwrap().revisions[&1].clone();
    old.number = 0;
    if let Some(role) = old.deployment.roles.get_mut("frontend") {
        role.env.insert(INSTANCE_ID_ENV.into(), "x".into());
    }
    if let Some(stored) = platform
        .tenants
        .get_mut("acme")
        .and_then(|t| t.services.get_mut("web"))
    {
        stored.revisions.insert(0, old);
    }
    assert!(matches!(
        refused(
            &mut platform,
            "alice",
            revise(1, Change::Rollback { target: 0 }, true)
        ),
        PlatformError::Invalid { .. }
    ));
}

fn place_web_again(platform: &mut Platform, cluster: &crate::cluster::ClusterRef) {
    let uid = platform.service("acme", "web").unwrap().uid.clone();
    let placement = placement::Placement {
        tenant: "acme".into(),
        service: "web".into(),
        uid,
        cluster: cluster.clone(),
        decision: Default::default(),
        migrate: false,
        decided_ms: 0,
    };
    platform.apply_placement(1_000, &placement).unwrap();
}

#[test]
fn the_scheduler_sees_the_environments_clusters_and_the_services_constraints() {
    use crate::cluster::{ClusterCommand, ClusterOp, ClusterRef, ClusterRegistration};
    let mut platform = world();
    let mut constrained = deployment(1, 100);
    constrained.constraints.labels = vec!["location is DE".into()];
    run(&mut platform, "bob", create("web", constrained.clone(), true)).unwrap();
    // No cluster yet: nothing to choose, and the decision says so.
    let decision = platform
        .schedule_service("acme", "web", &Default::default())
        .unwrap();
    assert!(decision.chosen.is_none());
    let register = |name: &str, location: &str| ClusterOp::Register {
        cluster: ClusterRef {
            tenant: "operator".into(),
            name: name.into(),
        },
        uid: format!("c-{name}"),
        registration: ClusterRegistration {
            ca: None,
            metrics: Vec::new(),
            endpoint: format!("http://127.0.0.1:77{}", name.len()),
            join_token: "a-join-token-of-some-length".into(),
            labels: BTreeMap::from([("location".to_string(), location.to_string())]),
        },
    };
    for (name, location) in [("de", "DE"), ("skk", "SK")] {
        let command = ClusterCommand::User {
            caller: who("dave"),
            change: register(name, location),
        };
        platform.apply_cluster(1_000, &command).unwrap();
    }
    // Registered clusters are PENDING until their agents answer: excluded, with reasons.
    let decision = platform
        .schedule_service("acme", "web", &Default::default())
        .unwrap();
    assert!(decision.chosen.is_none());
    assert!(decision.why_none().contains("PENDING"), "{}", decision.why_none());
    // A bad constraint is refused when the revision is made, naming the expression.
    constrained.constraints.labels = vec!["location was DE".into()];
    let error = refused(&mut platform, "bob", create("api", constrained, true));
    assert!(error.to_string().contains("constraints.labels[0]"), "{error}");
    assert!(error.to_string().contains("location was DE"), "{error}");
}

/// The cluster's actor reports it in `state` with a reading of metric `load` (normalised).
fn report_state(
    platform: &mut Platform,
    cluster: &crate::cluster::ClusterRef,
    uid: &str,
    state: crate::cluster::ClusterState,
    load: Option<f64>,
) {
    use crate::cluster::{ClusterCommand, ClusterObservation, ClusterOp, ClusterPatch};
    use crate::scheduling::metrics::{MetricReadings, MetricRef};
    use crate::scheduling::score::MetricValue;
    if load.is_some() {
        let patch = ClusterOp::Patch {
            cluster: cluster.clone(),
            patch: ClusterPatch {
                metrics: Some(vec![MetricRef {
                    name: "load".into(),
                    weight: 1.0,
                    namespaced: false,
                }]),
                ..ClusterPatch::default()
            },
        };
        let command = ClusterCommand::User {
            caller: who("dave"),
            change: patch,
        };
        platform.apply_cluster(1_000, &command).unwrap();
    }
    let metrics = load.map(|normalised| MetricReadings {
        values: BTreeMap::from([(
            "load".to_string(),
            MetricValue {
                value: normalised,
                normalised,
                weight: 1.0,
            },
        )]),
        failures: BTreeMap::new(),
    });
    let observation = ClusterObservation {
        cluster: cluster.clone(),
        uid: uid.into(),
        state,
        reason: "test".into(),
        facts: None,
        instances: None,
        set_errors: None,
        sets: None,
        sets_changed: None,
        restarted: Vec::new(),
        metrics,
    };
    platform
        .apply_cluster(1_000, &ClusterCommand::Observe(observation))
        .unwrap();
}

/// A table row: what differs from `web` placed on `edge` with `other` beside it.
struct PassRow {
    row: &'static str,
    migration: bool,
    edge: crate::cluster::ClusterState,
    edge_load: Option<f64>,
    other_load: Option<f64>,
    moved_ago_ms: Option<u64>,
    due: bool,
    expected: Option<(&'static str, bool)>,
}

#[test]
fn the_placement_pass_moves_only_what_must_or_should_move() {
    use crate::cluster::{ClusterCommand, ClusterOp, ClusterRef, ClusterRegistration, ClusterState::*};
    const INTERVAL: u64 = 60_000;
    const NOW: u64 = 1_000_000;
    // `web` placed on `edge`; `other` ONLINE with room; both scored on nothing unless a row
    // gives them a `load` reading.
    let world_with = |migration: bool| {
        let mut platform = world();
        let mut web = deployment(1, 100);
        web.constraints.migration = migration;
        run(&mut platform, "bob", create("web", web, true)).unwrap();
        let edge = place_web(&mut platform);
        let other = ClusterRef {
            tenant: "operator".into(),
            name: "other".into(),
        };
        let register = ClusterOp::Register {
            cluster: other.clone(),
            uid: "c-other".into(),
            registration: ClusterRegistration {
                ca: None,
                metrics: Vec::new(),
                endpoint: "http://127.0.0.1:7702".into(),
                join_token: "a-join-token-of-some-length".into(),
                labels: BTreeMap::new(),
            },
        };
        let command = ClusterCommand::User {
            caller: who("dave"),
            change: register,
        };
        platform.apply_cluster(1_000, &command).unwrap();
        report_capacity(&mut platform, &other, "c-other", 64_000);
        (platform, edge, other)
    };
    let row = |row, migration, edge, moved_ago_ms, due, expected| PassRow {
        row,
        migration,
        edge,
        edge_load: None,
        other_load: None,
        moved_ago_ms,
        due,
        expected,
    };
    let loads = |mut r: PassRow, edge: f64, other: f64| {
        r.edge_load = Some(edge);
        r.other_load = Some(other);
        r
    };
    let rows = [
        row("steady, not due", true, Online, None, false, None),
        row(
            "due, equal clusters: stickiness keeps it",
            true,
            Online,
            None,
            true,
            None,
        ),
        row(
            "its cluster OFFLINE",
            true,
            Offline,
            None,
            false,
            Some(("other", true)),
        ),
        row(
            "its cluster UNHEALTHY",
            true,
            Unhealthy,
            None,
            false,
            Some(("other", true)),
        ),
        row(
            "drained (NOTREADY)",
            true,
            NotReady,
            None,
            false,
            Some(("other", true)),
        ),
        row("OFFLINE but migration: false", false, Offline, None, false, None),
        row(
            "OFFLINE but moved 1 s ago",
            true,
            Offline,
            Some(1_000),
            false,
            None,
        ),
        row(
            "OFFLINE, moved a minute ago",
            true,
            Offline,
            Some(INTERVAL),
            false,
            Some(("other", true)),
        ),
        loads(
            row(
                "FAILING_METRICS, due: stays",
                true,
                FailingMetrics,
                None,
                true,
                None,
            ),
            0.2,
            0.8,
        ),
        loads(
            row(
                "due, a metric outweighs stickiness",
                true,
                Online,
                None,
                true,
                Some(("other", true)),
            ),
            0.2,
            0.8,
        ),
        loads(
            row("due, a metric within stickiness", true, Online, None, true, None),
            0.5,
            0.55,
        ),
        loads(
            row("not due, a metric outweighs", true, Online, None, false, None),
            0.2,
            0.8,
        ),
    ];
    for r in rows {
        let (mut platform, edge, other) = world_with(r.migration);
        report_state(&mut platform, &edge, "c-1", r.edge, r.edge_load);
        if r.other_load.is_some() {
            report_state(&mut platform, &other, "c-other", Online, r.other_load);
        }
        if let Some(ago) = r.moved_ago_ms {
            let web = platform
                .tenants
                .get_mut("acme")
                .unwrap()
                .services
                .get_mut("web")
                .unwrap();
            web.moved_ms = NOW - ago;
        }
        let mut asked = Vec::new();
        let decisions = platform.placement_pass(NOW, INTERVAL, |uid| {
            asked.push(uid.to_string());
            r.due
        });
        let got: Vec<(&str, bool)> = decisions
            .iter()
            .map(|p| (p.cluster.name.as_str(), p.migrate))
            .collect();
        assert_eq!(got, r.expected.into_iter().collect::<Vec<_>>(), "{}", r.row);
        if !r.migration || r.edge != Online {
            assert!(
                asked.is_empty(),
                "{}: only a movable service on an ONLINE cluster is rescored",
                r.row
            );
        }
    }

    // A move whose target goes OFFLINE ends where the service still runs.
    let (mut platform, edge, other) = world_with(true);
    report_state(&mut platform, &edge, "c-1", Offline, None);
    let moves = platform.placement_pass(NOW, INTERVAL, |_| false);
    assert_eq!(moves.len(), 1);
    platform.apply_placement(NOW, &moves[0]).unwrap();
    assert_eq!(
        platform.service("acme", "web").unwrap().migrating_to.as_ref(),
        Some(&other)
    );
    report_state(&mut platform, &other, "c-other", Offline, None);
    report_state(&mut platform, &edge, "c-1", Online, None);
    let back = platform.placement_pass(NOW, INTERVAL, |_| false);
    let got: Vec<(&str, bool)> = back
        .iter()
        .map(|p| (p.cluster.name.as_str(), p.migrate))
        .collect();
    assert_eq!(got, [("edge", false)]);
    platform.apply_placement(NOW, &back[0]).unwrap();
    assert_eq!(platform.service("acme", "web").unwrap().migrating_to, None);

    // A new service is placed; one being deleted never is.
    let (mut platform, _, _) = world_with(true);
    run(&mut platform, "bob", create("api", deployment(1, 100), true)).unwrap();
    let placed = platform.placement_pass(NOW, INTERVAL, |_| false);
    let got: Vec<(&str, bool)> = placed.iter().map(|p| (p.service.as_str(), p.migrate)).collect();
    assert_eq!(got, [("api", false)]);
    platform.apply_placement(NOW, &placed[0]).unwrap();
    let delete_api = ServiceOp::Delete {
        tenant: "acme".into(),
        service: "api".into(),
        force: false,
    };
    run(&mut platform, "bob", delete_api).unwrap();
    assert!(platform.service("acme", "api").unwrap().deleting_ms.is_some());
    platform
        .tenants
        .get_mut("acme")
        .unwrap()
        .services
        .get_mut("api")
        .unwrap()
        .placement = None;
    assert!(platform.placement_pass(NOW, INTERVAL, |_| false).is_empty());
}

#[test]
fn a_status_derives_the_same_ids_as_the_instances_it_runs() {
    let mut two_roles = deployment(3, 10);
    let mut backend = two_roles.roles["frontend"].clone();
    backend.instances = 2;
    two_roles.roles.insert("backend".into(), backend);
    let revision = Revision {
        number: 4,
        kind: RevisionType::Put,
        previous: Some(3),
        reinstates: None,
        comment: String::new(),
        usage: two_roles.usage(),
        accepted: true,
        created_ms: 0,
        role_revisions: BTreeMap::from([("backend".to_string(), 2)]),
        deployment: two_roles,
    };
    let set = SetName::parse("acme.web").unwrap();
    let specs: Vec<_> = placement::instances_of(&set, &revision)
        .into_iter()
        .map(|spec| spec.id)
        .collect();
    assert_eq!(specs.len(), 5);
    assert!(specs.iter().any(|id| id.as_str() == "acme.web.backend.r2.1"));
    assert_eq!(placement::instance_ids_of(&set, &revision), specs);
}

#[test]
fn the_pass_places_services_where_a_rollouts_surge_fits() {
    use crate::cluster::{ClusterCommand, ClusterOp, ClusterRef, ClusterRegistration};
    let mut platform = world();
    // Two ONLINE clusters: `tight` holds one service of 100m but not the 25m a rollout of it
    // starts beside the old instances (a quarter of 4 instances: 1); `roomy` holds them all.
    let clusters: Vec<ClusterRef> = [("tight", 100), ("roomy", 64_000)]
        .into_iter()
        .enumerate()
        .map(|(i, (name, cpu))| {
            let cluster = ClusterRef {
                tenant: "operator".into(),
                name: name.into(),
            };
            let register = ClusterOp::Register {
                cluster: cluster.clone(),
                uid: format!("c-{name}"),
                registration: ClusterRegistration {
                    ca: None,
                    metrics: Vec::new(),
                    endpoint: format!("http://127.0.0.1:771{i}"),
                    join_token: "a-join-token-of-some-length".into(),
                    labels: BTreeMap::new(),
                },
            };
            let command = ClusterCommand::User {
                caller: who("dave"),
                change: register,
            };
            platform.apply_cluster(1_000, &command).unwrap();
            report_capacity(&mut platform, &cluster, &format!("c-{name}"), cpu);
            cluster
        })
        .collect();
    // Eight services, so that the tie-breaker (a hash of each uid) would send some to `tight`
    // if the surge were not counted (800m in all: within the environment's 1000m).
    let names: Vec<String> = (0..8).map(|i| format!("svc{i}")).collect();
    let mut small = deployment(4, 25);
    if let Some(role) = small.roles.get_mut("frontend") {
        role.resources.memory_mib = 1;
    }
    for name in &names {
        run(&mut platform, "bob", create(name, small.clone(), true)).unwrap();
    }
    let decisions = platform.placement_pass(2_000, 60_000, |_| false);
    assert_eq!(decisions.len(), names.len(), "{decisions:?}");
    for decision in &decisions {
        assert_eq!(
            decision.cluster, clusters[1],
            "{}: {:?}",
            decision.service, decision.decision
        );
        let passed_over = decision
            .decision
            .excluded
            .iter()
            .find(|e| e.cluster == clusters[0])
            .map_or("", |e| e.reason.as_str());
        assert!(
            passed_over.starts_with("no room for a rollout's surge: needs 125m CPU and 5 MiB"),
            "{}: {passed_over}",
            decision.service
        );
    }
}
