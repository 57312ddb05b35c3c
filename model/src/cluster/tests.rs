//! Cluster changes applied as the replicated state machine applies them: who may register,
//! what is refused without a change, how observations become transitions, set revisions.

use std::collections::BTreeMap;

use super::agent_api::{ExecSpec, InstanceId, Resources, SetName};
use super::*;
use crate::platform::error::PlatformError;
use crate::platform::identity::Identity;
use crate::platform::{Platform, PlatformCommand, PlatformOp, Role, TenantSpec, UserProfile};

fn who(subject: &str) -> Identity {
    Identity {
        issuer: "https://idp.test".to_string(),
        subject: subject.to_string(),
    }
}

fn at(tenant: &str, name: &str) -> ClusterRef {
    ClusterRef {
        tenant: tenant.to_string(),
        name: name.to_string(),
    }
}

fn platform_op(platform: &mut Platform, caller: &str, op: PlatformOp) {
    platform
        .apply(&PlatformCommand {
            caller: who(caller),
            op,
        })
        .unwrap_or_else(|e| panic!("{caller}: {e}"));
}

/// alice owns acme, bob is a plain member of it, carol an admin; dave is an operator.
fn world() -> Platform {
    let mut platform = Platform::default();
    for name in ["alice", "bob", "carol", "dave"] {
        let op = PlatformOp::RegisterUser {
            uid: format!("u-{name}"),
            profile: UserProfile {
                name: name.to_string(),
                ..UserProfile::default()
            },
            operator: name == "dave",
        };
        platform_op(&mut platform, name, op);
    }
    let create = PlatformOp::CreateTenant {
        tenant: "acme".into(),
        spec: TenantSpec::default(),
    };
    platform_op(&mut platform, "alice", create);
    for (user, role) in [("bob", Role::Plain), ("carol", Role::Admin)] {
        let invite = PlatformOp::Invite {
            tenant: "acme".into(),
            user: format!("u-{user}"),
            role,
        };
        platform_op(&mut platform, "alice", invite);
        platform_op(
            &mut platform,
            user,
            PlatformOp::Confirm {
                tenant: "acme".into(),
                role,
            },
        );
    }
    platform
}

/// Registers `cluster` with an agent endpoint of its own.
fn register(cluster: ClusterRef) -> ClusterOp {
    let endpoint = format!("http://{}.{}.test:7700", cluster.name, cluster.tenant);
    register_at(cluster, &endpoint)
}

fn register_at(cluster: ClusterRef, endpoint: &str) -> ClusterOp {
    ClusterOp::Register {
        cluster,
        uid: "c-1".into(),
        registration: ClusterRegistration {
            ca: None,
            metrics: Vec::new(),
            endpoint: endpoint.into(),
            join_token: "a-join-token-of-some-length".into(),
            labels: BTreeMap::from([("zone".into(), "a".into())]),
        },
    }
}

fn run(platform: &mut Platform, caller: &str, change: ClusterOp) -> Result<(), PlatformError> {
    platform.apply_cluster(
        1_000,
        &ClusterCommand::User {
            caller: who(caller),
            change,
        },
    )
}

fn refused(platform: &mut Platform, caller: &str, change: ClusterOp) -> PlatformError {
    let before = platform.clone();
    let error = run(platform, caller, change).expect_err("refused");
    assert_eq!(*platform, before, "a refused change changed the state");
    error
}

#[test]
fn admins_register_in_their_tenant_plain_members_and_strangers_cannot() {
    let mut platform = world();
    assert!(matches!(
        refused(&mut platform, "bob", register(at("acme", "edge"))),
        PlatformError::Forbidden(_)
    ));
    assert!(matches!(
        refused(&mut platform, "dave", register(at("nowhere", "edge"))),
        PlatformError::NotFound(_)
    ));
    run(&mut platform, "carol", register(at("acme", "edge"))).unwrap();
    assert!(matches!(
        refused(&mut platform, "alice", register(at("acme", "edge"))),
        PlatformError::Conflict(_)
    ));
    // Operators register platform-wide clusters (in the operator tenant) and any tenant's.
    run(&mut platform, "dave", register(at("operator", "shared"))).unwrap();
    run(&mut platform, "dave", register(at("acme", "second"))).unwrap();
    assert!(matches!(
        refused(&mut platform, "carol", register(at("operator", "mine"))),
        PlatformError::NotFound(_)
    ));
    let names: Vec<String> = platform
        .cluster_list("acme")
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(names, ["edge", "second"]);
    assert_eq!(platform.all_clusters().len(), 3);
    let stored = platform.cluster(&at("acme", "edge")).unwrap();
    assert_eq!(stored.status.state, ClusterState::Pending);
    assert_eq!(stored.events.len(), 1);
}

#[test]
fn bad_registrations_name_the_field_and_change_nothing() {
    let mut platform = world();
    let with = |endpoint: &str, token: &str, label: &str| ClusterOp::Register {
        cluster: at("acme", "edge"),
        uid: "c-1".into(),
        registration: ClusterRegistration {
            ca: None,
            metrics: Vec::new(),
            endpoint: endpoint.into(),
            join_token: token.into(),
            labels: BTreeMap::from([(label.into(), "v".into())]),
        },
    };
    let good = "a-join-token-of-some-length";
    for (op, field) in [
        (with("ftp://x:1", good, "k"), "endpoint"),
        // An https:// agent needs the CA its certificate is checked against.
        (with("https://x:1", good, "k"), "ca"),
        (with("http://x", good, "k"), "endpoint"),
        (with("http://x:1/path", good, "k"), "endpoint"),
        (with("http://u@x:1", good, "k"), "endpoint"),
        (with("http://x:1", "short", "k"), "join_token"),
        (with("http://x:1", "has a space in it ok", "k"), "join_token"),
        (with("http://x:1", good, "bad key!"), "labels"),
    ] {
        match refused(&mut platform, "alice", op) {
            PlatformError::Invalid { field: got, .. } => assert_eq!(got, field),
            other => panic!("{field}: {other:?}"),
        }
    }
    let name = ClusterOp::Register {
        cluster: at("acme", "Edge_1"),
        uid: "c".into(),
        registration: ClusterRegistration {
            ca: None,
            metrics: Vec::new(),
            endpoint: "http://x:1".into(),
            join_token: good.into(),
            labels: BTreeMap::new(),
        },
    };
    assert!(matches!(
        refused(&mut platform, "alice", name),
        PlatformError::Invalid { .. }
    ));
}

fn observe(state: ClusterState, reason: &str, uid: &str) -> ClusterCommand {
    ClusterCommand::Observe(ClusterObservation {
        metrics: None,
        cluster: at("acme", "edge"),
        uid: uid.into(),
        state,
        reason: reason.into(),
        facts: None,
        instances: Some(InstanceCounts {
            running: 3,
            ..InstanceCounts::default()
        }),
        set_errors: None,
        sets: None,
        sets_changed: None,
        restarted: Vec::new(),
    })
}

#[test]
fn observations_record_transitions_only_for_the_same_registration() {
    let mut platform = world();
    run(&mut platform, "alice", register(at("acme", "edge"))).unwrap();
    platform
        .apply_cluster(2_000, &observe(ClusterState::Online, "agent answered", "c-1"))
        .unwrap();
    // The same state again is no transition.
    platform
        .apply_cluster(3_000, &observe(ClusterState::Online, "agent answered", "c-1"))
        .unwrap();
    platform
        .apply_cluster(4_000, &observe(ClusterState::Degraded, "probe failed", "c-1"))
        .unwrap();
    // A predecessor's actor (another uid) changes nothing.
    let before = platform.clone();
    platform
        .apply_cluster(5_000, &observe(ClusterState::Offline, "late", "c-0"))
        .unwrap();
    assert_eq!(platform, before);
    let stored = platform.cluster(&at("acme", "edge")).unwrap();
    let path: Vec<(ClusterState, ClusterState, &str, u64)> = stored
        .events
        .iter()
        .map(|e| (e.from, e.to, e.reason.as_str(), e.at_ms))
        .collect();
    assert_eq!(
        path,
        [
            (ClusterState::Pending, ClusterState::Pending, "registered", 1_000),
            (
                ClusterState::Pending,
                ClusterState::Online,
                "agent answered",
                2_000
            ),
            (
                ClusterState::Online,
                ClusterState::Degraded,
                "probe failed",
                4_000
            ),
        ]
    );
    assert_eq!(stored.status.since_ms, 4_000);
    assert_eq!(stored.status.instances.running, 3);
    for i in 0..(2 * EVENTS_KEPT as u64) {
        let state = if i % 2 == 0 {
            ClusterState::Online
        } else {
            ClusterState::Degraded
        };
        platform
            .apply_cluster(10_000 + i, &observe(state, "flap", "c-1"))
            .unwrap();
    }
    assert_eq!(
        platform.cluster(&at("acme", "edge")).unwrap().events.len(),
        EVENTS_KEPT
    );
}

fn set_spec(count: u32, program: &str) -> SetSpec {
    SetSpec {
        count,
        exec: ExecSpec {
            argv: vec![program.into(), "1000".into()],
            probe: None,
            files: Default::default(),
            pod: None,
        },
        resources: Resources {
            cpu_millis: 100,
            memory_mib: 64,
        },
        env: BTreeMap::new(),
    }
}

#[test]
fn a_set_keeps_its_revision_when_only_its_count_changes() {
    let mut platform = world();
    run(&mut platform, "alice", register(at("acme", "edge"))).unwrap();
    let set = SetName::parse("web").unwrap();
    let put = |count, program: &str| ClusterOp::PutSet {
        cluster: at("acme", "edge"),
        set: set.clone(),
        spec: set_spec(count, program),
    };
    run(&mut platform, "alice", put(3, "sleep")).unwrap();
    run(&mut platform, "alice", put(5, "sleep")).unwrap();
    let stored = &platform.cluster(&at("acme", "edge")).unwrap().sets[&set];
    assert_eq!(stored.revision, 1);
    assert_eq!(
        stored.instance_ids(&set)[4],
        InstanceId::parse("web.main.r1.4").unwrap()
    );
    run(&mut platform, "alice", put(5, "/bin/sleep")).unwrap();
    assert_eq!(
        platform.cluster(&at("acme", "edge")).unwrap().sets[&set].revision,
        2
    );
    let cluster = platform.cluster(&at("acme", "edge")).unwrap();
    assert_eq!(
        cluster.requested(),
        Resources {
            cpu_millis: 500,
            memory_mib: 320
        }
    );
    assert!(matches!(
        refused(&mut platform, "bob", put(1, "sleep")),
        PlatformError::Forbidden(_)
    ));
    let empty = ClusterOp::PutSet {
        cluster: at("acme", "edge"),
        set: set.clone(),
        spec: SetSpec {
            exec: ExecSpec {
                argv: vec![],
                probe: None,
                files: Default::default(),
                pod: None,
            },
            ..set_spec(1, "x")
        },
    };
    match refused(&mut platform, "alice", empty) {
        PlatformError::Invalid { field, .. } => assert_eq!(field, "exec.argv"),
        other => panic!("{other:?}"),
    }
    run(
        &mut platform,
        "alice",
        ClusterOp::DeleteSet {
            cluster: at("acme", "edge"),
            set: set.clone(),
        },
    )
    .unwrap();
    assert!(matches!(
        refused(
            &mut platform,
            "alice",
            ClusterOp::DeleteSet {
                cluster: at("acme", "edge"),
                set
            }
        ),
        PlatformError::NotFound(_)
    ));
}

#[test]
fn the_join_token_is_never_in_a_view() {
    let mut platform = world();
    run(&mut platform, "alice", register(at("acme", "edge"))).unwrap();
    let shown = serde_json::to_string(&platform.cluster_list("acme").unwrap()).unwrap();
    assert!(shown.contains("\"endpoint\""));
    assert!(!shown.contains("a-join-token-of-some-length"));
}

#[test]
fn drain_patch_and_deregister() {
    let mut platform = world();
    run(&mut platform, "alice", register(at("acme", "edge"))).unwrap();
    run(
        &mut platform,
        "carol",
        ClusterOp::Drain {
            cluster: at("acme", "edge"),
            draining: true,
        },
    )
    .unwrap();
    let patch = ClusterPatch {
        labels: Some(BTreeMap::from([("zone".into(), "b".into())])),
        ..ClusterPatch::default()
    };
    run(
        &mut platform,
        "carol",
        ClusterOp::Patch {
            cluster: at("acme", "edge"),
            patch,
        },
    )
    .unwrap();
    let stored = platform.cluster(&at("acme", "edge")).unwrap();
    assert!(stored.draining);
    assert_eq!(stored.labels["zone"], "b");
    assert_eq!(stored.endpoint, "http://edge.acme.test:7700");
    run(
        &mut platform,
        "alice",
        ClusterOp::Deregister {
            cluster: at("acme", "edge"),
        },
    )
    .unwrap();
    assert!(platform.cluster(&at("acme", "edge")).is_none());
    assert!(matches!(
        refused(
            &mut platform,
            "alice",
            ClusterOp::Deregister {
                cluster: at("acme", "edge")
            }
        ),
        PlatformError::NotFound(_)
    ));
}

#[test]
fn environments_use_their_tenants_clusters_and_the_platform_wide_ones_they_select() {
    use crate::platform::{environment_may_use, ClusterSelection};
    let labels = BTreeMap::from([("zone".to_string(), "a".to_string())]);
    let own = at("acme", "edge");
    let shared = at("operator", "shared");
    let foreign = at("globex", "edge");
    let by_name = ClusterSelection {
        names: vec!["edge".into(), "operator/shared".into()],
        labels: BTreeMap::new(),
    };
    let by_label = |zone: &str| ClusterSelection {
        names: vec![],
        labels: BTreeMap::from([("zone".to_string(), zone.to_string())]),
    };
    let table = [
        // (cluster, isolated, selection, expected)
        (&own, false, None, true),
        (&shared, false, None, true),
        (&foreign, false, None, false),
        (&shared, true, None, false),
        (&own, true, None, true),
        (&own, false, Some(by_name.clone()), true),
        (&shared, false, Some(by_name.clone()), true),
        (&shared, true, Some(by_name.clone()), false),
        (&foreign, false, Some(by_name), false),
        (&own, false, Some(by_label("a")), true),
        (&own, false, Some(by_label("b")), false),
        (&shared, false, Some(by_label("a")), true),
        (&own, false, Some(ClusterSelection::default()), false),
    ];
    for (cluster, isolated, selection, expected) in table {
        assert_eq!(
            environment_may_use("acme", isolated, selection.as_ref(), cluster, &labels),
            expected,
            "{cluster} isolated={isolated} {selection:?}"
        );
    }
    // "globex/edge" names another tenant's cluster, which acme cannot see anyway.
    let named_foreign = ClusterSelection {
        names: vec!["globex/edge".into()],
        labels: BTreeMap::new(),
    };
    assert!(!environment_may_use(
        "acme",
        false,
        Some(&named_foreign),
        &foreign,
        &labels
    ));
    assert!(crate::platform::validate_selection(&named_foreign).is_err());
}

#[test]
fn an_environment_lists_its_usable_clusters_and_their_free_capacity() {
    use crate::platform::{AccountSpec, EnvironmentSpec, TenantAccount};
    let mut platform = world();
    run(&mut platform, "alice", register(at("acme", "edge"))).unwrap();
    run(&mut platform, "dave", register(at("operator", "shared"))).unwrap();
    let account = PlatformOp::CreateAccount {
        tenant: "acme".into(),
        account: "main".into(),
        body: TenantAccount {
            spec: serde_json::from_value::<AccountSpec>(serde_json::json!({"iaas": "sim"})).unwrap(),
            meta: Default::default(),
        },
    };
    platform_op(&mut platform, "alice", account);
    for (name, isolated) in [("prod", false), ("private", true)] {
        let env = PlatformOp::CreateEnvironment {
            tenant: "acme".into(),
            account: "main".into(),
            environment: name.into(),
            spec: EnvironmentSpec {
                isolated,
                ..EnvironmentSpec::default()
            },
        };
        platform_op(&mut platform, "alice", env);
    }
    let facts = |free: u64| ClusterFacts {
        nodes: 1,
        capacity: Resources {
            cpu_millis: 4000,
            memory_mib: 4096,
        },
        free: Resources {
            cpu_millis: free,
            memory_mib: free,
        },
        executor: "sim".into(),
        version: "0".into(),
        used: None,
        confinement: None,
    };
    for (cluster, uid, free) in [
        (at("acme", "edge"), "c-1", 1000),
        (at("operator", "shared"), "c-1", 500),
    ] {
        let observe = ClusterCommand::Observe(ClusterObservation {
            metrics: None,
            cluster,
            uid: uid.into(),
            state: ClusterState::Online,
            reason: "up".into(),
            facts: Some(Box::new(facts(free))),
            instances: None,
            set_errors: None,
            sets: None,
            sets_changed: None,
            restarted: Vec::new(),
        });
        platform.apply_cluster(2_000, &observe).unwrap();
    }
    let prod = platform.environment_clusters("acme", "main", "prod").unwrap();
    assert_eq!(prod.clusters.len(), 2);
    assert_eq!(
        prod.free,
        Resources {
            cpu_millis: 1500,
            memory_mib: 1500
        }
    );
    let private = platform.environment_clusters("acme", "main", "private").unwrap();
    let names: Vec<&str> = private.clusters.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["edge"]);
    assert_eq!(private.free.cpu_millis, 1000);
    let bad = PlatformOp::PatchEnvironment {
        tenant: "acme".into(),
        account: "main".into(),
        environment: "prod".into(),
        patch: crate::platform::EnvironmentPatch {
            clusters: Some(crate::platform::ClusterSelection {
                names: vec!["Not A Name".into()],
                labels: BTreeMap::new(),
            }),
            ..Default::default()
        },
    };
    let error = platform
        .apply(&PlatformCommand {
            caller: who("alice"),
            op: bad,
        })
        .unwrap_err();
    assert!(
        matches!(error, PlatformError::Invalid { ref field, .. } if field == "clusters.names[0]"),
        "{error:?}"
    );
}

#[test]
fn restart_requests_wait_for_the_actor_and_a_newer_one_is_not_lost() {
    let mut platform = world();
    run(&mut platform, "alice", register(at("acme", "edge"))).unwrap();
    let set = SetName::parse("web").unwrap();
    let put = ClusterOp::PutSet {
        cluster: at("acme", "edge"),
        set: set.clone(),
        spec: set_spec(2, "sleep"),
    };
    run(&mut platform, "alice", put).unwrap();
    let restart = |id: &str| ClusterOp::RestartInstance {
        cluster: at("acme", "edge"),
        instance: InstanceId::parse(id).unwrap(),
    };
    assert!(matches!(
        refused(&mut platform, "alice", restart("web.main.r1.2")),
        PlatformError::NotFound(_)
    ));
    assert!(matches!(
        refused(&mut platform, "bob", restart("web.main.r1.1")),
        PlatformError::Forbidden(_)
    ));
    run(&mut platform, "alice", restart("web.main.r1.1")).unwrap();
    let id = InstanceId::parse("web.main.r1.1").unwrap();
    assert_eq!(
        platform.cluster(&at("acme", "edge")).unwrap().pending_restarts[&id],
        1_000
    );
    // Asked again later: the actor's report of the first restart leaves the second pending.
    platform
        .apply_cluster(
            5_000,
            &ClusterCommand::User {
                caller: who("alice"),
                change: restart("web.main.r1.1"),
            },
        )
        .unwrap();
    let report = |requested: u64| {
        ClusterCommand::Observe(ClusterObservation {
            metrics: None,
            cluster: at("acme", "edge"),
            uid: "c-1".into(),
            state: ClusterState::Online,
            reason: "up".into(),
            facts: None,
            instances: None,
            set_errors: Some(BTreeMap::from([(set.clone(), "no room".to_string())])),
            sets: None,
            sets_changed: None,
            restarted: vec![(id.clone(), requested)],
        })
    };
    platform.apply_cluster(6_000, &report(1_000)).unwrap();
    let stored = platform.cluster(&at("acme", "edge")).unwrap();
    assert_eq!(stored.pending_restarts.get(&id), Some(&5_000));
    assert_eq!(stored.status.set_errors[&set], "no room");
    platform.apply_cluster(7_000, &report(5_000)).unwrap();
    assert!(platform
        .cluster(&at("acme", "edge"))
        .unwrap()
        .pending_restarts
        .is_empty());
    // Removing the set forgets its refusal and its requests.
    run(&mut platform, "alice", restart("web.main.r1.0")).unwrap();
    run(
        &mut platform,
        "alice",
        ClusterOp::DeleteSet {
            cluster: at("acme", "edge"),
            set: set.clone(),
        },
    )
    .unwrap();
    let stored = platform.cluster(&at("acme", "edge")).unwrap();
    assert!(stored.pending_restarts.is_empty() && stored.status.set_errors.is_empty());
}

#[test]
fn the_ids_digest_depends_on_the_set_of_ids_only() {
    let ids =
        |names: &[&str]| -> Vec<InstanceId> { names.iter().map(|n| InstanceId::parse(n).unwrap()).collect() };
    let one = ids(&["web.a.r1.0", "web.a.r1.1"]);
    let other_order = ids(&["web.a.r1.1", "web.a.r1.0"]);
    let newer = ids(&["web.a.r2.0", "web.a.r2.1"]);
    assert_eq!(ids_digest(&one), ids_digest(&other_order));
    assert_ne!(ids_digest(&one), ids_digest(&newer));
    assert_ne!(ids_digest(&one), ids_digest(&one[..1]));
    // Joined names must not collide with split ones.
    assert_ne!(ids_digest(&ids(&["a.b", "c"])), ids_digest(&ids(&["a", "b.c"])));
}

#[test]
fn one_agent_is_one_cluster() {
    let mut platform = world();
    run(&mut platform, "alice", register(at("acme", "edge"))).unwrap();
    // The same agent again, under another name or by another tenant's operator: refused, and
    // the message does not name the registration that holds it.
    let error = refused(
        &mut platform,
        "dave",
        register_at(at("operator", "twin"), "http://edge.acme.test:7700"),
    );
    assert!(
        matches!(&error, PlatformError::Conflict(m) if !m.contains("\"edge\"") && !m.contains("\"acme\"")),
        "{error:?}"
    );
    let again = ClusterOp::Register {
        cluster: at("acme", "twin"),
        uid: "c-2".into(),
        registration: ClusterRegistration {
            ca: None,
            metrics: Vec::new(),
            endpoint: "http://EDGE.acme.test:7700/".into(),
            join_token: "a-join-token-of-some-length".into(),
            labels: BTreeMap::new(),
        },
    };
    assert!(matches!(
        refused(&mut platform, "alice", again),
        PlatformError::Conflict(_)
    ));
    // Moving another cluster onto it is refused too; keeping its own endpoint is not.
    let other = ClusterOp::Register {
        cluster: at("acme", "other"),
        uid: "c-3".into(),
        registration: ClusterRegistration {
            ca: None,
            metrics: Vec::new(),
            endpoint: "http://127.0.0.1:7701".into(),
            join_token: "a-join-token-of-some-length".into(),
            labels: BTreeMap::new(),
        },
    };
    run(&mut platform, "alice", other).unwrap();
    let onto = |name: &str| ClusterOp::Patch {
        cluster: at("acme", name),
        patch: ClusterPatch {
            endpoint: Some("http://edge.acme.test:7700".into()),
            ..ClusterPatch::default()
        },
    };
    assert!(matches!(
        refused(&mut platform, "alice", onto("other")),
        PlatformError::Conflict(_)
    ));
    run(&mut platform, "alice", onto("edge")).unwrap();
}

#[test]
fn metrics_resolve_through_their_tenant_and_provider_and_say_why_not() {
    use crate::scheduling::metrics::{
        MetricFailureReason, MetricRef, MetricSource, MetricSpec, ProviderMetric, ProviderSpec, StaticSpec,
    };
    let mut platform = world();
    run(&mut platform, "carol", register(at("acme", "edge"))).unwrap();
    let fixed = |value: f64| ProviderSpec::Static {
        values: StaticSpec {
            metrics: BTreeMap::from([("load".to_string(), value)]),
        },
    };
    let provider = |tenant: &str, value: f64| ClusterOp::PutMetricsProvider {
        tenant: tenant.into(),
        name: "fixed".into(),
        spec: fixed(value),
    };
    let metric = |tenant: &str, name: &str, provider: &str| ClusterOp::PutMetric {
        tenant: tenant.into(),
        name: name.into(),
        spec: MetricSpec {
            min: 0.0,
            max: 100.0,
            provider: ProviderMetric {
                name: provider.into(),
                metric: "load".into(),
            },
        },
    };
    // A tenant's admins write its metrics; plain members and other tenants' admins do not.
    assert!(matches!(
        refused(&mut platform, "bob", provider("acme", 30.0)),
        PlatformError::Forbidden(_)
    ));
    refused(&mut platform, "carol", provider("operator", 30.0));
    run(&mut platform, "carol", provider("acme", 30.0)).unwrap();
    run(&mut platform, "carol", metric("acme", "load", "fixed")).unwrap();
    run(&mut platform, "dave", provider("operator", 90.0)).unwrap();
    run(&mut platform, "dave", metric("operator", "global-load", "fixed")).unwrap();
    run(&mut platform, "dave", metric("operator", "orphan", "nowhere")).unwrap();
    let mut bad = metric("acme", "inverted", "fixed");
    if let ClusterOp::PutMetric { spec, .. } = &mut bad {
        spec.min = 100.0;
    }
    assert!(refused(&mut platform, "carol", bad)
        .to_string()
        .starts_with("max"));

    let refs = |names: &[(&str, f64, bool)]| ClusterOp::Patch {
        cluster: at("acme", "edge"),
        patch: ClusterPatch {
            metrics: Some(
                names
                    .iter()
                    .map(|(name, weight, namespaced)| MetricRef {
                        name: (*name).into(),
                        weight: *weight,
                        namespaced: *namespaced,
                    })
                    .collect(),
            ),
            ..ClusterPatch::default()
        },
    };
    let change = refs(&[
        ("load", 1.0, true),
        ("global-load", 2.0, false),
        ("missing", 1.0, false),
        ("orphan", 1.0, false),
    ]);
    run(&mut platform, "carol", change).unwrap();
    let sources = platform.cluster_metric_sources(&at("acme", "edge"));
    let by_name = |name: &str| sources.iter().find(|s| s.name == name).unwrap();
    // The cluster's own tenant's metric (namespaced), and the operator tenant's.
    assert_eq!(by_name("load").source, Ok(MetricSource::Static(30.0)));
    assert_eq!(by_name("load").reading(Ok(30.0)).unwrap().normalised, 0.3);
    assert_eq!(by_name("global-load").source, Ok(MetricSource::Static(90.0)));
    assert_eq!(by_name("global-load").weight, 2.0);
    let reason = |name: &str| by_name(name).source.clone().unwrap_err().reason;
    assert_eq!(reason("missing"), MetricFailureReason::UnknownMetric);
    assert_eq!(reason("orphan"), MetricFailureReason::UnknownMetricsProvider);
    // A value outside the bounds is invalid; a provider removed fails its metrics.
    assert_eq!(
        by_name("load").reading(Ok(130.0)).unwrap_err().reason,
        MetricFailureReason::InvalidMetric
    );
    let remove = ClusterOp::DeleteMetricsProvider {
        tenant: "acme".into(),
        name: "fixed".into(),
    };
    run(&mut platform, "carol", remove).unwrap();
    let sources = platform.cluster_metric_sources(&at("acme", "edge"));
    let load = sources.iter().find(|s| s.name == "load").unwrap();
    assert_eq!(
        load.source.clone().unwrap_err().reason,
        MetricFailureReason::UnknownMetricsProvider
    );
    // Listing a metric twice, or a negative weight, is refused naming the field.
    let error = refused(
        &mut platform,
        "carol",
        refs(&[("load", 1.0, true), ("load", 1.0, false)]),
    );
    assert!(error.to_string().contains("metrics[1].name"), "{error}");
    let error = refused(&mut platform, "carol", refs(&[("load", -1.0, true)]));
    assert!(error.to_string().contains("metrics[0].weight"), "{error}");
}

#[test]
fn a_sets_change_turns_the_committed_map_into_the_observed_one() {
    let set = |name: &str| SetName::parse(name).unwrap();
    let seen = |total: u32, running: u32, digest: u64| SetObservation {
        total,
        running,
        digest,
    };
    let committed = BTreeMap::from([
        (set("acme.web"), seen(3, 3, 7)),
        (set("acme.db"), seen(1, 0, 0)),
        (set("acme.gone"), seen(2, 2, 9)),
    ]);
    let observed = BTreeMap::from([
        (set("acme.web"), seen(3, 3, 7)),
        (set("acme.db"), seen(1, 1, 4)),
        (set("acme.new"), seen(1, 0, 0)),
    ]);
    let change = SetsChange::between(&committed, &observed);
    // Only what differs is carried: the unchanged set is not.
    assert_eq!(
        change.changed.keys().cloned().collect::<Vec<_>>(),
        vec![set("acme.db"), set("acme.new")]
    );
    assert_eq!(change.removed, vec![set("acme.gone")]);
    let mut applied = committed.clone();
    change.apply_to(&mut applied);
    assert_eq!(applied, observed);
    assert!(SetsChange::between(&observed, &observed).is_empty());
    // Applied to an older map, every set it names is right; the rest is put right by the next
    // change, computed from what is committed then.
    let mut older = BTreeMap::from([(set("acme.stale"), seen(1, 1, 1))]);
    change.apply_to(&mut older);
    let next = SetsChange::between(&older, &observed);
    assert_eq!(next.removed, vec![set("acme.stale")]);
    next.apply_to(&mut older);
    assert_eq!(older, observed);
    // It travels in the log as JSON and comes back unchanged.
    let encoded = serde_json::to_string(&change).unwrap();
    assert_eq!(serde_json::from_str::<SetsChange>(&encoded).unwrap(), change);
}

#[test]
fn an_https_agent_is_registered_with_its_ca_and_a_plain_one_without() {
    const CA: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    let mut platform = world();
    let mut tls = register_at(at("acme", "edge"), "https://edge.acme.test:7700");
    if let ClusterOp::Register { registration, .. } = &mut tls {
        registration.ca = Some(CA.into());
    }
    run(&mut platform, "alice", tls).expect("registered with its CA");
    let stored = platform.cluster(&at("acme", "edge")).unwrap();
    assert_eq!(stored.access().ca.as_deref(), Some(CA));
    let view = platform.cluster_view(&at("acme", "edge")).unwrap();
    assert_eq!(view.transport, "tls");
    let patch = |endpoint: Option<&str>, ca: Option<&str>| ClusterOp::Patch {
        cluster: at("acme", "edge"),
        patch: ClusterPatch {
            endpoint: endpoint.map(str::to_string),
            ca: ca.map(str::to_string),
            ..ClusterPatch::default()
        },
    };
    // A CA that is no PEM certificate, or a CA for a plain endpoint, is refused.
    for change in [
        patch(None, Some("not a certificate")),
        patch(Some("http://edge.acme.test:7700"), Some(CA)),
    ] {
        assert!(matches!(
            refused(&mut platform, "alice", change),
            PlatformError::Invalid { field, .. } if field == "ca"
        ));
    }
    // Another https endpoint keeps the CA; back to plain HTTP drops it.
    run(
        &mut platform,
        "alice",
        patch(Some("https://edge2.acme.test:7700"), None),
    )
    .expect("moved");
    assert_eq!(
        platform.cluster(&at("acme", "edge")).unwrap().ca.as_deref(),
        Some(CA)
    );
    run(
        &mut platform,
        "alice",
        patch(Some("http://edge2.acme.test:7700"), None),
    )
    .expect("plain");
    let stored = platform.cluster(&at("acme", "edge")).unwrap();
    assert_eq!(
        (stored.ca.as_deref(), stored.endpoint.as_str()),
        (None, "http://edge2.acme.test:7700")
    );
    assert_eq!(
        platform.cluster_view(&at("acme", "edge")).unwrap().transport,
        "plain-http"
    );
    // The same agent under the other scheme is the same agent.
    let mut again = register_at(at("acme", "twin"), "https://edge2.acme.test:7700");
    if let ClusterOp::Register { registration, .. } = &mut again {
        registration.ca = Some(CA.into());
    }
    assert!(matches!(
        refused(&mut platform, "alice", again),
        PlatformError::Conflict(_)
    ));
}
