//! Krake's operation semantics, names and labels, RBAC and cascading deletion, applied as the
//! cluster applies them; and one state for two dialects (a metric written through the platform
//! API has Krake metadata, one written through Krake is the tenant's metric).

use std::collections::BTreeMap;

use super::apply::KrakeObjects;
use super::rbac::{Access, Scope};
use super::*;
use crate::platform::{Identity, Platform, PlatformCommand, PlatformOp, UserProfile};
use crate::scheduling::metrics::{MetricSpec, ProviderMetric, ProviderSpec, StaticSpec};

struct World {
    platform: Platform,
    store: KrakeStore,
    now: u64,
}

impl World {
    fn new() -> Self {
        let mut platform = Platform::default();
        let register = PlatformCommand {
            caller: Identity {
                issuer: "i".into(),
                subject: "root".into(),
            },
            op: PlatformOp::RegisterUser {
                uid: "u-root".into(),
                profile: UserProfile {
                    name: "Root".into(),
                    surname: "Operator".into(),
                    ..UserProfile::default()
                },
                operator: true,
            },
        };
        platform.apply(&register).expect("the operator registers");
        let tenant = PlatformCommand {
            caller: register.caller.clone(),
            op: PlatformOp::CreateTenant {
                tenant: "ns1".into(),
                spec: Default::default(),
            },
        };
        platform.apply(&tenant).expect("tenant ns1 is made");
        World {
            platform,
            store: KrakeStore::default(),
            now: 1_000,
        }
    }

    fn run(&mut self, key: &KrakeKey, change: KrakeChange) -> Result<KrakeStored, KrakeError> {
        self.now += 1_000;
        let mut objects = KrakeObjects::new(&mut self.platform, &mut self.store);
        objects.apply(
            self.now,
            &KrakeCommand {
                caller: "test".into(),
                key: key.clone(),
                change,
            },
        )
    }

    fn read(&self, key: &KrakeKey) -> Option<(KrakeMeta, KrakeBody)> {
        apply::read(&self.platform, &self.store, key)
    }

    fn refused(&mut self, key: &KrakeKey, change: KrakeChange) -> KrakeError {
        let (platform, store) = (self.platform.clone(), self.store.clone());
        let error = self.run(key, change).expect_err("refused");
        assert_eq!(self.platform, platform, "a refused command changed the tenants");
        assert_eq!(self.store, store, "a refused command changed the store");
        error
    }
}

fn metric(min: f64) -> KrakeBody {
    KrakeBody::Metric(MetricSpec {
        min,
        max: 10.0,
        provider: ProviderMetric {
            name: "p".into(),
            metric: "load".into(),
        },
    })
}

fn create(body: KrakeBody) -> KrakeChange {
    KrakeChange::Create {
        meta: MetaInput::default(),
        body,
    }
}

fn update(meta: MetaInput, body: KrakeBody, modified_us: Option<u64>) -> KrakeChange {
    KrakeChange::Update {
        meta,
        body,
        modified_us,
    }
}

fn owned_by(owner: &KrakeKey) -> MetaInput {
    MetaInput {
        owners: vec![owner.owner_ref()],
        ..MetaInput::default()
    }
}

#[test]
fn names_and_labels_follow_krakes_patterns() {
    for (name, valid) in [
        ("a", true),
        ("a-b.c:d_e", true),
        ("-a", false),
        ("a-", false),
        ("", false),
        ("a b", false),
        ("é", false),
        (&"a".repeat(255), true),
        (&"a".repeat(256), false),
    ] {
        assert_eq!(validate::is_name(name), valid, "name {name:?}");
    }
    for (key, valid) in [
        ("app", true),
        ("example.com/app", true),
        ("a:b", false),
        ("/app", false),
        (&"k".repeat(63), true),
        (&"k".repeat(64), false),
        (&format!("{}/k", "p".repeat(253)), true),
    ] {
        assert_eq!(validate::is_label_key(key), valid, "label key {key:?}");
    }
    for (value, valid) in [("v", true), ("", false), ("a.b-c_d", true), ("a/b", false)] {
        assert_eq!(validate::is_label_value(value), valid, "label value {value:?}");
    }
}

#[test]
fn rbac_allows_what_a_bound_role_allows_and_list_all_needs_every_namespace() {
    let mut world = World::new();
    let rule = |namespaces: &[&str], verbs: Vec<Verb>| RoleRule {
        api: "kubernetes".into(),
        resources: vec!["applications".into()],
        namespaces: namespaces.iter().map(|s| s.to_string()).collect(),
        verbs,
    };
    let reader = KrakeRole {
        rules: vec![rule(&["ns1"], vec![Verb::Get, Verb::List])],
    };
    let everywhere = KrakeRole {
        rules: vec![RoleRule {
            api: String::new(),
            resources: vec![String::new()],
            namespaces: vec![String::new()],
            verbs: vec![Verb::List],
        }],
    };
    for (name, role) in [("reader", reader), ("lister", everywhere)] {
        world
            .run(
                &KrakeKey::new(KrakeKind::Role, None, name),
                create(KrakeBody::Role(role)),
            )
            .expect("role made");
    }
    let bind = |users: &[&str], roles: &[&str]| {
        KrakeBody::RoleBinding(KrakeRoleBinding {
            users: users.iter().map(|s| s.to_string()).collect(),
            roles: roles.iter().map(|s| s.to_string()).collect(),
        })
    };
    world
        .run(
            &KrakeKey::new(KrakeKind::RoleBinding, None, "b1"),
            create(bind(&["ann"], &["reader", "ghost"])),
        )
        .expect("binding made");
    world
        .run(
            &KrakeKey::new(KrakeKind::RoleBinding, None, "b2"),
            create(bind(&["bo"], &["lister"])),
        )
        .expect("binding made");
    assert_eq!(world.store.roles_of("ann"), vec!["ghost", "reader"]);
    assert!(world.store.roles_of("nobody").is_empty());
    let access = |resource, verb, scope| Access {
        api: "kubernetes",
        resource,
        verb,
        scope,
    };
    let table = [
        (
            "ann",
            access("applications", Verb::Get, Scope::Namespace("ns1")),
            true,
        ),
        (
            "ann",
            access("applications", Verb::List, Scope::Namespace("ns1")),
            true,
        ),
        (
            "ann",
            access("applications", Verb::Create, Scope::Namespace("ns1")),
            false,
        ),
        (
            "ann",
            access("applications", Verb::Get, Scope::Namespace("ns2")),
            false,
        ),
        (
            "ann",
            access("applications", Verb::List, Scope::AllNamespaces),
            false,
        ),
        (
            "ann",
            access("clusters", Verb::Get, Scope::Namespace("ns1")),
            false,
        ),
        (
            "ann",
            access("applications/status", Verb::Get, Scope::Namespace("ns1")),
            false,
        ),
        ("bo", access("clusters", Verb::List, Scope::AllNamespaces), true),
        ("bo", access("clusters", Verb::List, Scope::Global), true),
        ("bo", access("clusters", Verb::Get, Scope::Global), false),
        (
            "nobody",
            access("applications", Verb::Get, Scope::Namespace("ns1")),
            false,
        ),
    ];
    for (user, access, allowed) in table {
        assert_eq!(world.store.allows(user, &access), allowed, "{user} {access:?}");
    }
}

#[test]
fn create_read_update_and_conflicts_follow_krake() {
    let mut world = World::new();
    let key = KrakeKey::new(KrakeKind::Metric, Some("ns1"), "load");
    let made = world.run(&key, create(metric(0.0))).expect("made");
    assert_eq!(made.meta.created_us, made.meta.modified_us);
    assert!(matches!(
        world.refused(&key, create(metric(0.0))),
        KrakeError::AlreadyExists(_)
    ));
    let elsewhere = KrakeKey::new(KrakeKind::Metric, Some("nope"), "load");
    assert!(matches!(
        world.refused(&elsewhere, create(metric(0.0))),
        KrakeError::NotFound(_)
    ));
    let bad_label = MetaInput {
        labels: BTreeMap::from([("-x".into(), "v".into())]),
        ..MetaInput::default()
    };
    assert!(matches!(
        world.refused(&key, update(bad_label, metric(0.0), None)),
        KrakeError::Invalid { .. }
    ));
    assert!(matches!(
        world.refused(&key, update(MetaInput::default(), metric(20.0), None)),
        KrakeError::Invalid { .. }
    ));
    assert!(matches!(
        world.refused(
            &key,
            update(MetaInput::default(), metric(1.0), Some(made.meta.modified_us + 1))
        ),
        KrakeError::Transaction(_)
    ));
    let updated = world
        .run(
            &key,
            update(MetaInput::default(), metric(1.0), Some(made.meta.modified_us)),
        )
        .expect("updated");
    assert_eq!(updated.meta.uid, made.meta.uid);
    assert_eq!(updated.meta.created_us, made.meta.created_us);
    assert!(updated.meta.modified_us > made.meta.modified_us);
    // The version read is gone: a second writer that read it conflicts.
    assert!(matches!(
        world.refused(
            &key,
            update(MetaInput::default(), metric(2.0), Some(made.meta.modified_us))
        ),
        KrakeError::Transaction(_)
    ));
    // The tenant's own metric is what Krake wrote: the scheduler reads this one.
    let tenant = world.platform.tenant("ns1").expect("tenant");
    assert_eq!(tenant.metrics["load"].min, 1.0);
    let aliased = KrakeKey::new(KrakeKind::Metric, Some("operator"), "load");
    assert!(matches!(
        world.refused(&aliased, create(metric(0.0))),
        KrakeError::Invalid { .. }
    ));
    let wrong = KrakeKey::new(KrakeKind::Metric, None, "load");
    assert!(matches!(
        world.refused(&wrong, create(metric(0.0))),
        KrakeError::Invalid { .. }
    ));
}

#[test]
fn delete_marks_and_finalizers_hold_the_object_until_removed() {
    let mut world = World::new();
    let key = KrakeKey::new(KrakeKind::GlobalMetricsProvider, None, "p");
    let provider = KrakeBody::MetricsProvider(ProviderSpec::Static {
        values: StaticSpec {
            metrics: BTreeMap::from([("load".into(), 1.0)]),
        },
    });
    let held = MetaInput {
        finalizers: vec!["mine".into()],
        ..MetaInput::default()
    };
    world
        .run(
            &key,
            KrakeChange::Create {
                meta: held.clone(),
                body: provider.clone(),
            },
        )
        .expect("made");
    let marked = world
        .run(&key, KrakeChange::Delete { force: false })
        .expect("marked");
    assert!(marked.meta.in_deletion());
    assert!(!marked.gone);
    // The garbage collection dropped `cascade_deletion` (nothing depends on it); `mine` holds it.
    let (meta, _) = world.read(&key).expect("still there");
    assert_eq!(meta.input.finalizers, vec!["mine".to_string()]);
    let again = world
        .run(&key, KrakeChange::Delete { force: false })
        .expect("idempotent");
    assert_eq!(again.meta.deleted_us, meta.deleted_us);
    let adding = MetaInput {
        finalizers: vec!["mine".into(), "other".into()],
        ..MetaInput::default()
    };
    assert!(matches!(
        world.refused(&key, update(adding, provider.clone(), None)),
        KrakeError::Finalizers(_)
    ));
    let released = world
        .run(&key, update(MetaInput::default(), provider, None))
        .expect("finalizer removed");
    assert!(released.gone);
    assert!(world.read(&key).is_none());
    assert!(world
        .platform
        .tenant("operator")
        .expect("operator")
        .metrics_providers
        .is_empty());
}

#[test]
fn deleting_an_owner_deletes_its_dependents_first() {
    let mut world = World::new();
    let owner = KrakeKey::new(KrakeKind::GlobalMetric, None, "owner");
    let child = KrakeKey::new(KrakeKind::Metric, Some("ns1"), "child");
    let grandchild = KrakeKey::new(KrakeKind::Role, None, "grandchild");
    let held = KrakeKey::new(KrakeKind::Metric, Some("ns1"), "held");
    world.run(&owner, create(metric(0.0))).expect("owner");
    world
        .run(
            &child,
            KrakeChange::Create {
                meta: owned_by(&owner),
                body: metric(0.0),
            },
        )
        .expect("child");
    world
        .run(
            &grandchild,
            KrakeChange::Create {
                meta: owned_by(&child),
                body: KrakeBody::Role(KrakeRole { rules: vec![] }),
            },
        )
        .expect("grandchild");
    let mut holding = owned_by(&owner);
    holding.finalizers = vec!["mine".into()];
    world
        .run(
            &held,
            KrakeChange::Create {
                meta: holding,
                body: metric(0.0),
            },
        )
        .expect("held");
    world
        .run(&owner, KrakeChange::Delete { force: false })
        .expect("owner deleted");
    assert!(world.read(&child).is_none(), "the child went");
    assert!(world.read(&grandchild).is_none(), "the grandchild went");
    let (held_meta, _) = world.read(&held).expect("a finalizer holds the dependent");
    assert!(held_meta.in_deletion());
    let (owner_meta, _) = world.read(&owner).expect("the owner waits for its dependent");
    assert_eq!(owner_meta.input.finalizers, vec![CASCADE_DELETION.to_string()]);
    world
        .run(&held, update(owned_by(&owner), metric(0.0), None))
        .expect("the dependent's finalizer removed");
    assert!(world.read(&held).is_none());
    assert!(
        world.read(&owner).is_none(),
        "the owner went after its last dependent"
    );
}

#[test]
fn force_removes_at_once() {
    let mut world = World::new();
    let key = KrakeKey::new(KrakeKind::Metric, Some("ns1"), "m");
    let held = MetaInput {
        finalizers: vec!["mine".into()],
        ..MetaInput::default()
    };
    world
        .run(
            &key,
            KrakeChange::Create {
                meta: held,
                body: metric(0.0),
            },
        )
        .expect("made");
    let gone = world
        .run(&key, KrakeChange::Delete { force: true })
        .expect("forced");
    assert!(gone.gone);
    assert!(world.read(&key).is_none());
}

#[test]
fn a_metric_made_through_the_platform_api_has_krake_metadata() {
    use crate::cluster::{ClusterCommand, ClusterOp};
    let mut world = World::new();
    let put = |min| ClusterCommand::User {
        caller: Identity {
            issuer: "i".into(),
            subject: "root".into(),
        },
        change: ClusterOp::PutMetric {
            tenant: "operator".into(),
            name: "cpu".into(),
            spec: match metric(min) {
                KrakeBody::Metric(spec) => spec,
                _ => unreachable!(),
            },
        },
    };
    world.platform.apply_cluster(5_000, &put(0.0)).expect("put");
    let key = KrakeKey::new(KrakeKind::GlobalMetric, None, "cpu");
    let (first, _) = world.read(&key).expect("read through Krake");
    assert_eq!((first.created_us, first.modified_us), (5_000_000, 5_000_000));
    world.platform.apply_cluster(6_000, &put(1.0)).expect("put again");
    let (second, body) = world.read(&key).expect("read again");
    assert_eq!(second.uid, first.uid);
    assert_eq!((second.created_us, second.modified_us), (5_000_000, 6_000_000));
    assert_eq!(body, metric(1.0));
}

fn kubeconfig(server: &str, token: Option<&str>) -> serde_json::Value {
    let mut user = serde_json::json!({});
    if let Some(token) = token {
        user["token"] = serde_json::json!(token);
    }
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    })
}

#[test]
fn a_kubeconfig_names_one_agent_and_its_token() {
    use super::cluster::{read_kubeconfig, show_kubeconfig, REDACTED_TOKEN};
    let read = read_kubeconfig(&kubeconfig(
        "http://127.0.0.1:7701",
        Some("join-token-0123456789"),
    ))
    .expect("read");
    let (server, token, skeleton) = (read.server, read.token, read.skeleton);
    assert_eq!(server, "http://127.0.0.1:7701");
    assert_eq!(token.as_deref(), Some("join-token-0123456789"));
    assert!(skeleton.pointer("/clusters/0/cluster/server").is_none());
    assert!(skeleton.pointer("/users/0/user/token").is_none());
    let shown = show_kubeconfig(&skeleton, "ignored", "http://127.0.0.1:7702", None);
    assert_eq!(shown["clusters"][0]["cluster"]["server"], "http://127.0.0.1:7702");
    assert_eq!(shown["users"][0]["user"]["token"], REDACTED_TOKEN);
    assert_eq!(shown["contexts"][0]["name"], "x");
    // What a reader sends back keeps the stored token.
    let kept = read_kubeconfig(&shown).expect("read back").token;
    assert_eq!(kept, None);
    // An https agent's CA travels as the cluster's certificate-authority-data.
    let mut tls = kubeconfig("https://127.0.0.1:7701", Some("join-token-0123456789"));
    tls["clusters"][0]["cluster"]["certificate-authority-data"] = serde_json::json!("UEVN");
    let read = read_kubeconfig(&tls).expect("read");
    assert_eq!(read.ca_data.as_deref(), Some("UEVN"));
    assert!(read
        .skeleton
        .pointer("/clusters/0/cluster/certificate-authority-data")
        .is_none());
    let shown = show_kubeconfig(&read.skeleton, "x", "https://127.0.0.1:7701", Some("UEVN"));
    assert_eq!(
        shown["clusters"][0]["cluster"]["certificate-authority-data"],
        "UEVN"
    );
    let mut two = kubeconfig("http://127.0.0.1:7701", Some("t"));
    two["users"] = serde_json::json!([{"name": "u", "user": {}}, {"name": "v", "user": {}}]);
    let refused = [
        (two, "Only one user"),
        (kubeconfig("http://127.0.0.1:7701", None), "no token"),
        (serde_json::json!({"clusters": []}), "contexts"),
        (serde_json::json!([1]), "mapping"),
    ];
    for (kubeconfig, says) in refused {
        match read_kubeconfig(&kubeconfig) {
            Err(KrakeError::Invalid { field, message }) => {
                assert_eq!(field, "spec.kubeconfig");
                assert!(message.contains(says), "{message}");
            }
            other => panic!("{kubeconfig}: {other:?}"),
        }
    }
}

fn cluster_body(endpoint: &str, token: Option<&str>) -> KrakeBody {
    KrakeBody::Cluster(super::cluster::KrakeCluster {
        endpoint: endpoint.to_string(),
        ca: None,
        join_token: token.map(str::to_string),
        metrics: vec![],
        extras: super::cluster::KrakeClusterSpecExtras {
            kubeconfig: serde_json::json!({"clusters": [{"name": "c", "cluster": {}}]}),
            custom_resources: vec!["crontabs.stable.example.com".into()],
            constraints: serde_json::json!({"cloud": {"labels": [], "metrics": []}}),
            backoff: Default::default(),
        },
    })
}

#[test]
fn a_krake_cluster_is_the_tenants_drover_cluster() {
    let mut world = World::new();
    let key = KrakeKey::new(KrakeKind::Cluster, Some("ns1"), "edge");
    let labelled = MetaInput {
        labels: BTreeMap::from([("zone".into(), "a".into())]),
        ..MetaInput::default()
    };
    let made = world
        .run(
            &key,
            KrakeChange::Create {
                meta: labelled.clone(),
                body: cluster_body("http://127.0.0.1:7701", Some("join-token-0123456789")),
            },
        )
        .expect("registered");
    let tenant = world.platform.tenant("ns1").expect("tenant");
    let cluster = &tenant.clusters["edge"];
    assert_eq!(cluster.uid, made.meta.uid, "one uid");
    assert_eq!(cluster.endpoint, "http://127.0.0.1:7701");
    assert_eq!(cluster.join_token, "join-token-0123456789");
    assert_eq!(cluster.labels["zone"], "a");
    assert!(
        tenant.krake.clusters["edge"].meta.input.labels.is_empty(),
        "labels kept once, in the cluster"
    );
    // A reader's body (no token) keeps the token; labels and endpoint change.
    let relabelled = MetaInput {
        labels: BTreeMap::from([("zone".into(), "b".into())]),
        ..MetaInput::default()
    };
    world
        .run(
            &key,
            update(relabelled, cluster_body("http://127.0.0.1:7702", None), None),
        )
        .expect("patched");
    let (meta, body) = world.read(&key).expect("read");
    assert_eq!(meta.input.labels["zone"], "b");
    match body {
        KrakeBody::Cluster(cluster) => {
            assert_eq!(cluster.endpoint, "http://127.0.0.1:7702");
            assert_eq!(cluster.join_token.as_deref(), Some("join-token-0123456789"));
            assert_eq!(
                cluster.extras.custom_resources,
                vec!["crontabs.stable.example.com".to_string()]
            );
        }
        other => panic!("{other:?}"),
    }
    // Another cluster may not take the same agent.
    let twin = KrakeKey::new(KrakeKind::Cluster, Some("ns1"), "twin");
    assert!(matches!(
        world.refused(
            &twin,
            create(cluster_body(
                "http://127.0.0.1:7702",
                Some("join-token-0123456789")
            ))
        ),
        KrakeError::Busy(_)
    ));
    // Deleting it deregisters the Drover cluster.
    world
        .run(&key, KrakeChange::Delete { force: false })
        .expect("deleted");
    let tenant = world.platform.tenant("ns1").expect("tenant");
    assert!(tenant.clusters.is_empty() && tenant.krake.clusters.is_empty());
}

#[test]
fn a_kubeconfig_nested_past_the_bound_is_refused_before_it_reaches_the_log() {
    let mut deep = serde_json::json!("leaf");
    for _ in 0..40 {
        deep = serde_json::json!([deep]);
    }
    assert_eq!(crate::limits::json_depth(&deep), 40);
    let mut body = cluster_body("http://127.0.0.1:7701", Some("join-token-0123456789"));
    if let KrakeBody::Cluster(cluster) = &mut body {
        cluster.extras.kubeconfig =
            serde_json::json!({"clusters": [{"name": "c", "cluster": {}}], "x": deep});
    }
    let mut world = World::new();
    let key = KrakeKey::new(KrakeKind::Cluster, Some("ns1"), "deep");
    match world.refused(&key, create(body)) {
        KrakeError::Invalid { field, .. } => assert_eq!(field, "spec.kubeconfig"),
        other => panic!("{other:?}"),
    }
}

mod applications;
mod images;
mod infrastructure;

#[test]
fn a_snapshot_that_still_holds_the_old_krake_removals_is_read() {
    // Krake watches resumed from a record of removals in the replicated state before #50;
    // snapshots taken then still carry it and must be read (and it dropped).
    let state = crate::state::State::new();
    let mut value = serde_json::to_value(&state).expect("encoded");
    value["platform"]["krake_removals"] = serde_json::json!({"kept": [], "forgotten_up_to_us": 7});
    let read: crate::state::State = serde_json::from_value(value).expect("decoded");
    assert_eq!(read, state);
}
