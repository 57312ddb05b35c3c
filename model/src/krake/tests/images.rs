//! Applications whose manifests name container images, as the cluster applies them: one role
//! of one pod per workload, its pull credentials kept for the agent and never shown by the
//! service's views, and a pod the tenant's pod security level refuses changing nothing.

use serde_json::json;

use super::applications::with_environment;
use super::*;
use crate::krake::application::KrakeApplication;
use crate::krake::cluster::Backoff;

const PASSWORD: &str = "pull-password-never-shown";

fn image_app(privileged: bool) -> KrakeBody {
    let config =
        json!({"auths": {"127.0.0.1:5000": {"username": "puller", "password": PASSWORD}}}).to_string();
    KrakeBody::Application(KrakeApplication {
        manifest: vec![
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                   "spec": {"replicas": 2, "template": {"spec": {
                       "imagePullSecrets": [{"name": "pull"}],
                       "containers": [{"name": "web", "image": "127.0.0.1:5000/web:v1",
                                       "securityContext": {"privileged": privileged},
                                       "ports": [{"containerPort": 8080}]}]}}}}),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "pull"},
                   "type": "kubernetes.io/dockerconfigjson", "stringData": {".dockerconfigjson": config}}),
        ],
        observer_schema: Vec::new(),
        constraints: Default::default(),
        migration: true,
        hooks: Vec::new(),
        shutdown_grace_time: 30,
        backoff: Backoff::default(),
        issued: None,
    })
}

fn key() -> KrakeKey {
    KrakeKey::new(KrakeKind::Application, Some("ns1"), "site")
}

#[test]
fn pull_credentials_reach_the_revision_and_no_view_of_the_service() {
    let mut world = with_environment();
    world.run(&key(), create(image_app(false))).expect("created");
    let service = world.platform.service("ns1", "site").expect("its service");
    let pod = service.revisions[&1].deployment.roles["web"]
        .exec
        .pod
        .clone()
        .expect("a pod");
    assert_eq!(pod.pull_auth.len(), 1, "kept for the agent that pulls");
    assert_eq!(pod.pull_auth[0].password, PASSWORD);
    let full = serde_json::to_string(&service.full().expect("full view")).expect("json");
    let revision = serde_json::to_string(&service.revision_info(1).expect("revision")).expect("json");
    for shown in [full, revision] {
        assert!(
            shown.contains("127.0.0.1:5000/web:v1"),
            "the pod is shown: {shown}"
        );
        assert!(
            !shown.contains(PASSWORD) && !shown.contains("puller") && !shown.contains("pullAuth"),
            "{shown}"
        );
    }
}

#[test]
fn a_pod_the_tenants_level_refuses_changes_nothing() {
    let mut world = with_environment();
    let refused = world.refused(&key(), create(image_app(true)));
    assert!(
        matches!(&refused, KrakeError::Invalid { field, .. }
            if field == "spec.manifest.0.spec.template.spec.containers.0.securityContext.privileged"),
        "{refused:?}"
    );
    assert!(world.platform.service("ns1", "site").is_err(), "no service");
}

#[test]
fn the_level_an_operator_set_for_the_tenant_is_the_one_applied() {
    let mut world = with_environment();
    let mut host = image_app(false);
    if let KrakeBody::Application(app) = &mut host {
        let pod = &mut app.manifest[0]["spec"]["template"]["spec"];
        pod["containers"][0]["ports"] = json!([{"containerPort": 8080, "hostPort": 18080}]);
        app.manifest.push(
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "front"},
                                 "spec": {"ports": [{"port": 80, "targetPort": 8080}]}}),
        );
    }
    let refused = world.refused(&key(), create(host.clone()));
    assert!(
        matches!(&refused, KrakeError::Invalid { field, .. } if field == "spec.manifest.0.spec.template.spec.containers.0.ports.0.hostPort"),
        "baseline: {refused:?}"
    );
    let relax = PlatformCommand {
        caller: Identity {
            issuer: "i".into(),
            subject: "root".into(),
        },
        op: PlatformOp::SetPodSecurity {
            tenant: "ns1".into(),
            level: crate::pod_security::PodSecurity::BaselineWithHostNetwork,
        },
    };
    world.platform.apply(&relax).expect("the operator relaxes ns1");
    world.run(&key(), create(host)).expect("allowed for ns1 now");
    let service = world.platform.service("ns1", "site").expect("its service");
    let pod = service.revisions[&1].deployment.roles["web"]
        .exec
        .pod
        .as_ref()
        .expect("a pod");
    assert_eq!(pod.containers[0].ports[0].host_port, Some(18080));
    let extras = &world.platform.tenant("ns1").expect("ns1").krake.applications["site"];
    assert_eq!(
        extras.ports["front"], 18080,
        "the Service is reached at the machine's port"
    );
}
