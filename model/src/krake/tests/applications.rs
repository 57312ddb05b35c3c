//! Applications as the cluster applies them: each is a service of its namespace, its manifest
//! the service's roles with the hooks' URLs and tokens in their environment; an update that
//! changes what runs is a new revision; a deletion goes through the service (and waits for the
//! `shutdown` hook's call, or its retry); `complete` with the right token ends it.

use serde_json::json;

use super::*;
use crate::krake::application::{
    phase_of, AppState, IssuedHooks, KrakeApplication, COMPLETE_TOKEN_ENV, COMPLETE_URL_ENV,
};
use crate::krake::cluster::Backoff;
use crate::platform::{AccountMeta, AccountSpec, EnvironmentSpec, TenantAccount};

pub(super) fn with_environment() -> World {
    let mut world = World::new();
    let root = Identity {
        issuer: "i".into(),
        subject: "root".into(),
    };
    for op in [
        PlatformOp::CreateAccount {
            tenant: "ns1".into(),
            account: "main".into(),
            body: TenantAccount {
                spec: AccountSpec {
                    iaas: "sim".into(),
                    iaas_info: json!({}),
                    marks: Default::default(),
                },
                meta: AccountMeta::default(),
            },
        },
        PlatformOp::CreateEnvironment {
            tenant: "ns1".into(),
            account: "main".into(),
            environment: "prod".into(),
            spec: EnvironmentSpec {
                marks: Default::default(),
                labels: json!({}),
                isolated: false,
                clusters: None,
            },
        },
    ] {
        let command = PlatformCommand {
            caller: root.clone(),
            op,
        };
        world.platform.apply(&command).expect("the environment is made");
    }
    world
}

/// A Deployment of `replicas`, and with the shutdown hook the Service it is asked at.
fn manifest(replicas: u64, hooks: &[&str]) -> Vec<serde_json::Value> {
    let mut manifest = vec![json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": replicas, "template": {"spec": {"containers": [
            {"name": "main", "image": "exec", "command": ["sleep", "600"]}
        ]}}}
    })];
    if hooks.contains(&"shutdown") {
        manifest.push(
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "shutdown"},
                             "spec": {"ports": [{"port": 80, "targetPort": 8080}]}}),
        );
    }
    manifest
}

fn app(replicas: u64, hooks: &[&str]) -> KrakeBody {
    KrakeBody::Application(KrakeApplication {
        manifest: manifest(replicas, hooks),
        observer_schema: Vec::new(),
        constraints: Default::default(),
        migration: true,
        hooks: hooks.iter().map(|h| h.to_string()).collect(),
        shutdown_grace_time: 30,
        backoff: Backoff::default(),
        issued: Some(IssuedHooks {
            endpoint: "http://127.0.0.1:7400".into(),
            complete_token: "complete-secret".into(),
            shutdown_token: "shutdown-secret".into(),
        }),
    })
}

fn key() -> KrakeKey {
    KrakeKey::new(KrakeKind::Application, Some("ns1"), "job")
}

fn hook(call: HookCall) -> KrakeChange {
    KrakeChange::Hook { call }
}

impl World {
    fn state(&self) -> AppState {
        let tenant = self.platform.tenant("ns1").expect("tenant");
        let extras = &tenant.krake.applications["job"];
        phase_of(extras, tenant.services.get("job"), self.now)
    }
}

#[test]
fn an_application_is_a_service_of_its_namespace_and_an_update_a_revision() {
    let mut world = with_environment();
    world.run(&key(), create(app(3, &["complete"]))).expect("created");
    let service = world.platform.service("ns1", "job").expect("its service");
    let revision = &service.revisions[&1];
    let role = &revision.deployment.roles["web"];
    assert_eq!(role.instances, 3);
    assert_eq!(role.exec.argv, vec!["sleep", "600"]);
    assert_eq!(role.env[COMPLETE_TOKEN_ENV], "complete-secret");
    assert_eq!(
        role.env[COMPLETE_URL_ENV],
        "http://127.0.0.1:7400/kubernetes/namespaces/ns1/applications/job/complete"
    );
    assert_eq!(service.uid, world.read(&key()).expect("read").0.uid, "one uid");
    assert_eq!(world.state(), AppState::Pending, "not placed yet");
    let (meta, body) = world.read(&key()).expect("read");
    let KrakeBody::Application(stored) = &body else {
        panic!("an application: {body:?}")
    };
    assert_eq!(stored.issued, None, "the issued tokens are not part of the spec");

    // The same manifest again (a label changed): no new revision. More replicas: revision 2,
    // and the token stays the one issued first.
    let labelled = MetaInput {
        labels: BTreeMap::from([("tier".to_string(), "batch".to_string())]),
        ..MetaInput::default()
    };
    world
        .run(&key(), update(labelled.clone(), body, Some(meta.modified_us)))
        .expect("relabelled");
    assert_eq!(world.platform.service("ns1", "job").unwrap().revisions.len(), 1);
    let mut five = app(5, &["complete"]);
    if let KrakeBody::Application(a) = &mut five {
        a.issued.as_mut().unwrap().complete_token = "another".into();
    }
    world.run(&key(), update(labelled, five, None)).expect("scaled");
    let service = world.platform.service("ns1", "job").unwrap();
    assert_eq!(service.current, Some(2));
    let role = &service.revisions[&2].deployment.roles["web"];
    assert_eq!(
        (role.instances, role.env[COMPLETE_TOKEN_ENV].as_str()),
        (5, "complete-secret")
    );
    assert_eq!(
        apply::keys_of(&world.platform, &world.store, KrakeKind::Application, None),
        vec![key()]
    );
}

#[test]
fn complete_with_the_token_ends_the_application_and_a_wrong_one_is_refused() {
    let mut world = with_environment();
    world.run(&key(), create(app(1, &["complete"]))).expect("created");
    let refused = world.refused(
        &key(),
        hook(HookCall::Complete {
            token: "guess".into(),
        }),
    );
    assert!(matches!(refused, KrakeError::BadToken(_)), "{refused:?}");
    let done = world
        .run(
            &key(),
            hook(HookCall::Complete {
                token: "complete-secret".into(),
            }),
        )
        .expect("completed");
    // Never placed, so nothing runs: the service and the application go at once.
    assert!(done.gone, "{done:?}");
    assert!(world.read(&key()).is_none());
    assert!(world.platform.service("ns1", "job").is_err());
}

#[test]
fn a_shutdown_hook_holds_the_deletion_until_it_is_called_and_its_grace_can_be_retried() {
    let mut world = with_environment();
    world.run(&key(), create(app(1, &["shutdown"]))).expect("created");
    world
        .run(&key(), KrakeChange::Delete { force: false })
        .expect("deleted");
    assert_eq!(world.state(), AppState::WaitingForCleaning);
    assert!(world.platform.service("ns1", "job").is_ok(), "it still runs");
    let early = world.refused(&key(), hook(HookCall::Retry));
    assert!(matches!(early, KrakeError::NothingToDo(_)), "{early:?}");
    world.now += 31_000;
    assert_eq!(world.state(), AppState::Degraded, "the grace passed");
    world.run(&key(), hook(HookCall::Retry)).expect("retried");
    assert_eq!(world.state(), AppState::WaitingForCleaning);
    let wrong = world.refused(
        &key(),
        hook(HookCall::Shutdown {
            token: "complete-secret".into(),
        }),
    );
    assert!(matches!(wrong, KrakeError::BadToken(_)), "{wrong:?}");
    let done = world
        .run(
            &key(),
            hook(HookCall::Shutdown {
                token: "shutdown-secret".into(),
            }),
        )
        .expect("shut down");
    assert!(done.gone && world.read(&key()).is_none(), "{done:?}");
}

#[test]
fn what_drover_cannot_run_or_where_it_cannot_go_is_refused_unchanged() {
    let mut world = with_environment();
    let mut image = app(1, &[]);
    if let KrakeBody::Application(a) = &mut image {
        let container = &mut a.manifest[0]["spec"]["template"]["spec"]["containers"][0];
        container["image"] = json!("nginx:1.25");
        container["securityContext"] = json!({"privileged": true});
    }
    // An image the tenant's pod security level refuses (baseline: no privileged container).
    let refused = world.refused(&key(), create(image));
    let KrakeError::Invalid { field, message } = &refused else {
        panic!("{refused:?}")
    };
    assert_eq!(
        field,
        "spec.manifest.0.spec.template.spec.containers.0.securityContext.privileged"
    );
    assert!(message.contains("baseline pod security level"), "{message}");
    let mut unasked = app(1, &[]);
    if let KrakeBody::Application(a) = &mut unasked {
        a.hooks = vec!["shutdown".into()];
    }
    let refused = world.refused(&key(), create(unasked));
    assert!(
        matches!(&refused, KrakeError::Invalid { field, .. } if field == "spec.hooks"),
        "the shutdown hook without its Service: {refused:?}"
    );
    let mut unknown = app(1, &["reboot"]);
    if let KrakeBody::Application(a) = &mut unknown {
        a.hooks = vec!["reboot".into()];
    }
    assert!(matches!(
        world.refused(&key(), create(unknown)),
        KrakeError::Invalid { .. }
    ));
    // Krake allows names a service cannot have: refused before anything is written.
    let odd = KrakeKey::new(KrakeKind::Application, Some("ns1"), "Job_1");
    let refused = world.refused(&odd, create(app(1, &[])));
    assert!(
        matches!(&refused, KrakeError::Invalid { field, .. } if field == "metadata.name"),
        "{refused:?}"
    );
    // A namespace without an environment has nowhere to deploy.
    let mut bare = World::new();
    let nowhere = bare.refused(&key(), create(app(1, &[])));
    assert!(matches!(nowhere, KrakeError::Busy(_)), "{nowhere:?}");
}

#[test]
fn the_leader_owes_a_shutdown_call_only_within_the_grace_of_a_placed_application() {
    use crate::krake::hooks_due::{shutdown_calls, ShutdownCall};
    let mut world = with_environment();
    let cluster = KrakeKey::new(KrakeKind::Cluster, Some("ns1"), "edge");
    world
        .run(
            &cluster,
            create(cluster_body("http://127.0.0.9:7700", Some("t0ken-of-the-agent"))),
        )
        .expect("cluster");
    let mut body = app(1, &["shutdown"]);
    if let KrakeBody::Application(a) = &mut body {
        a.manifest.push(
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "shutdown"},
                               "spec": {"ports": [{"port": 80, "targetPort": 9123}]}}),
        );
    }
    world.run(&key(), create(body)).expect("created");
    world
        .run(&key(), KrakeChange::Delete { force: false })
        .expect("deleted");
    assert_eq!(
        shutdown_calls(&world.platform, world.now),
        vec![],
        "not placed: nobody to ask"
    );
    let uid = world.platform.service("ns1", "job").unwrap().uid.clone();
    let placement = crate::service::placement::Placement {
        tenant: "ns1".into(),
        service: "job".into(),
        uid,
        cluster: crate::cluster::ClusterRef {
            tenant: "ns1".into(),
            name: "edge".into(),
        },
        decision: Default::default(),
        migrate: false,
        decided_ms: world.now,
    };
    let room = crate::cluster::agent_api::Resources {
        cpu_millis: 4000,
        memory_mib: 4096,
    };
    world
        .platform
        .tenants
        .get_mut("ns1")
        .and_then(|t| t.clusters.get_mut("edge"))
        .expect("the cluster")
        .status
        .facts = Some(crate::cluster::ClusterFacts {
        nodes: 1,
        capacity: room,
        free: room,
        executor: "exec".into(),
        version: "test".into(),
        used: None,
        confinement: None,
    });
    world
        .platform
        .apply_placement(world.now, &placement)
        .expect("placed");
    let until_ms = match world.platform.tenant("ns1").unwrap().krake.applications["job"].cleaning {
        Some(crate::krake::application::Cleaning::Waiting { until_ms }) => until_ms,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        shutdown_calls(&world.platform, world.now),
        vec![ShutdownCall {
            tenant: "ns1".into(),
            name: "job".into(),
            until_ms,
            url: "http://127.0.0.9:9123/shutdown".into(),
        }]
    );
    assert_eq!(
        shutdown_calls(&world.platform, until_ms + 1),
        vec![],
        "the grace passed"
    );
}

#[test]
fn krakes_state_follows_the_service() {
    use crate::service::reconcile::Phase;
    let mut world = with_environment();
    world.run(&key(), create(app(1, &[]))).expect("created");
    let edge = crate::cluster::ClusterRef {
        tenant: "ns1".into(),
        name: "edge".into(),
    };
    // (placed, moving, deleting, current revision, the actor's phase) → Krake's state.
    let table = [
        (false, false, false, 1, Phase::Waiting, AppState::Pending),
        (true, false, false, 1, Phase::Waiting, AppState::Pending),
        (true, false, false, 1, Phase::Progressing, AppState::Creating),
        (true, false, false, 2, Phase::Progressing, AppState::Reconciling),
        (true, false, false, 2, Phase::Running, AppState::Running),
        (true, true, false, 2, Phase::Progressing, AppState::Migrating),
        (true, false, false, 1, Phase::Unreachable, AppState::Degraded),
        (true, false, false, 1, Phase::Failed, AppState::Failed),
        (true, false, true, 1, Phase::Running, AppState::Deleting),
    ];
    for (placed, moving, deleting, current, phase, expected) in table {
        let tenant = world.platform.tenants.get_mut("ns1").expect("tenant");
        let service = tenant.services.get_mut("job").expect("service");
        service.placement = placed.then(|| edge.clone());
        service.migrating_to = moving.then(|| edge.clone());
        service.deleting_ms = deleting.then_some(1);
        service.current = Some(current);
        service.reconcile.phase = phase;
        assert_eq!(
            world.state(),
            expected,
            "placed {placed}, moving {moving}, deleting {deleting}, revision {current}, {phase:?}"
        );
    }
    // Gone: what a read in the write that removed it shows.
    let tenant = world.platform.tenant("ns1").expect("tenant");
    assert_eq!(
        phase_of(&tenant.krake.applications["job"], None, world.now),
        AppState::Deleting
    );
}
