//! Krake's infrastructure providers and clouds: Krake's checks (an IM provider authenticates
//! by token or user and password; a global cloud references no namespaced provider or metric),
//! the namespaced ones their tenant's and the global ones the operator tenant's.

use super::*;
use crate::krake::infrastructure::{ImProvider, OpenstackCloud, ProviderRef};
use crate::scheduling::metrics::MetricRef;

fn provider(token: Option<&str>, user: Option<(&str, &str)>) -> KrakeBody {
    KrakeBody::InfrastructureProvider(ImProvider {
        url: "http://im.example:8800".into(),
        username: user.map(|(u, _)| u.to_string()),
        password: user.map(|(_, p)| p.to_string()),
        token: token.map(str::to_string),
    })
}

fn cloud(provider_namespaced: bool, metric_namespaced: bool) -> KrakeBody {
    KrakeBody::Cloud(OpenstackCloud {
        url: "https://keystone.example:5000/v3".into(),
        version: "3".into(),
        username: "admin".into(),
        password: "s3cret".into(),
        domain_name: "Default".into(),
        user_comment: None,
        project: "p".into(),
        project_domain_id: "default".into(),
        project_comment: None,
        metrics: vec![MetricRef {
            name: "load".into(),
            weight: 1.0,
            namespaced: metric_namespaced,
        }],
        infrastructure_provider: ProviderRef {
            name: "im".into(),
            namespaced: provider_namespaced,
        },
    })
}

#[test]
fn providers_and_clouds_follow_krakes_checks_and_live_in_their_tenant() {
    let mut world = World::new();
    let global = KrakeKey::new(KrakeKind::GlobalInfrastructureProvider, None, "im");
    let refused = world.refused(&global, create(provider(None, Some(("u", "")))));
    assert!(matches!(refused, KrakeError::Invalid { .. }), "{refused:?}");
    let refused = world.refused(&global, create(provider(None, None)));
    let KrakeError::Invalid { field, .. } = &refused else {
        panic!("{refused:?}")
    };
    assert_eq!(field, "spec.im._schema");
    world
        .run(&global, create(provider(Some("tok"), None)))
        .expect("a token is enough");
    let namespaced = KrakeKey::new(KrakeKind::InfrastructureProvider, Some("ns1"), "im");
    world
        .run(&namespaced, create(provider(None, Some(("u", "p")))))
        .expect("a user and password");
    let elsewhere = KrakeKey::new(KrakeKind::InfrastructureProvider, Some("nobody"), "im");
    assert!(matches!(
        world.refused(&elsewhere, create(provider(Some("t"), None))),
        KrakeError::NotFound(_)
    ));

    let global_cloud = KrakeKey::new(KrakeKind::GlobalCloud, None, "os");
    for (provider_ns, metric_ns) in [(true, false), (false, true)] {
        let refused = world.refused(&global_cloud, create(cloud(provider_ns, metric_ns)));
        assert!(
            matches!(&refused, KrakeError::Invalid { field, .. } if field == "_schema"),
            "{refused:?}"
        );
    }
    world
        .run(&global_cloud, create(cloud(false, false)))
        .expect("a global cloud");
    let ns_cloud = KrakeKey::new(KrakeKind::Cloud, Some("ns1"), "os");
    world
        .run(&ns_cloud, create(cloud(true, true)))
        .expect("a namespaced cloud may");

    let operator = world
        .platform
        .tenant(crate::platform::OPERATOR_TENANT)
        .expect("operator");
    assert!(
        operator.krake.clouds.contains_key("os")
            && operator.krake.infrastructure_providers.contains_key("im")
    );
    assert_eq!(
        apply::keys_of(&world.platform, &world.store, KrakeKind::Cloud, None),
        vec![ns_cloud.clone()]
    );
    assert_eq!(
        apply::keys_of(&world.platform, &world.store, KrakeKind::GlobalCloud, None),
        vec![global_cloud.clone()]
    );
    world
        .run(&ns_cloud, KrakeChange::Delete { force: false })
        .expect("deleted");
    assert!(world.read(&ns_cloud).is_none(), "nothing held it");
    assert!(world.read(&global_cloud).is_some());
}
