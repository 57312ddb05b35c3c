//! Role rules and guards of the platform, applied through commands as the cluster applies them.

use serde_json::json;

use super::*;

fn who(subject: &str) -> Identity {
    Identity {
        issuer: "https://idp.test".to_string(),
        subject: subject.to_string(),
    }
}

struct World {
    platform: Platform,
}

impl World {
    fn new() -> Self {
        let mut world = World {
            platform: Platform::default(),
        };
        for name in ["alice", "bob", "carol", "dave"] {
            world.ok(
                name,
                PlatformOp::RegisterUser {
                    uid: format!("u-{name}"),
                    profile: UserProfile {
                        name: name.to_string(),
                        ..UserProfile::default()
                    },
                    operator: name == "dave",
                },
            );
        }
        world
    }

    fn run(&mut self, caller: &str, op: PlatformOp) -> Result<PlatformResult, PlatformError> {
        self.platform.apply(&PlatformCommand {
            caller: who(caller),
            op,
        })
    }

    fn ok(&mut self, caller: &str, op: PlatformOp) {
        let shown = format!("{op:?}");
        if let Err(e) = self.run(caller, op) {
            panic!("{caller} {shown}: {e}");
        }
    }

    fn refused(&mut self, caller: &str, op: PlatformOp) -> PlatformError {
        let before = self.platform.clone();
        let shown = format!("{op:?}");
        let error = self.run(caller, op).expect_err(&shown);
        assert_eq!(self.platform, before, "a refused {shown} changed the state");
        error
    }
}

fn t(name: &str) -> String {
    name.to_string()
}

fn invite(user: &str, role: Role) -> PlatformOp {
    PlatformOp::Invite {
        tenant: t("acme"),
        user: format!("u-{user}"),
        role,
    }
}

fn acme_with_bob_as(role: Role) -> World {
    let mut world = World::new();
    world.ok(
        "alice",
        PlatformOp::CreateTenant {
            tenant: t("acme"),
            spec: TenantSpec::default(),
        },
    );
    world.ok("alice", invite("bob", role));
    world.ok(
        "bob",
        PlatformOp::Confirm {
            tenant: t("acme"),
            role,
        },
    );
    world
}

#[test]
fn registering_twice_and_reserved_names_are_refused() {
    let mut world = World::new();
    let again = world.refused(
        "alice",
        PlatformOp::RegisterUser {
            uid: t("u-x"),
            profile: UserProfile::default(),
            operator: false,
        },
    );
    assert!(matches!(again, PlatformError::Conflict(_)), "{again}");
    let reserved = world.refused(
        "alice",
        PlatformOp::CreateTenant {
            tenant: t("operator"),
            spec: TenantSpec::default(),
        },
    );
    assert!(
        matches!(reserved, PlatformError::Conflict(_) | PlatformError::Forbidden(_)),
        "{reserved}"
    );
    let unregistered = world.refused(
        "eve",
        PlatformOp::CreateTenant {
            tenant: t("evil"),
            spec: TenantSpec::default(),
        },
    );
    assert!(
        matches!(unregistered, PlatformError::Unregistered { .. }),
        "{unregistered}"
    );
}

#[test]
fn invitations_stay_pending_until_confirmed_with_the_invited_role() {
    let mut world = World::new();
    world.ok(
        "alice",
        PlatformOp::CreateTenant {
            tenant: t("acme"),
            spec: TenantSpec::default(),
        },
    );
    world.ok("alice", invite("bob", Role::Plain));
    let read = world
        .platform
        .authorize(&who("bob"), PlatformRead::Tenant("acme").requirement());
    // An invitee is no member yet: the tenant looks as absent as one that does not exist.
    assert!(matches!(read, Err(PlatformError::NotFound(_))), "{read:?}");
    let wrong = world.refused(
        "bob",
        PlatformOp::Confirm {
            tenant: t("acme"),
            role: Role::Admin,
        },
    );
    assert!(matches!(wrong, PlatformError::Conflict(_)), "{wrong}");
    world.ok(
        "bob",
        PlatformOp::Confirm {
            tenant: t("acme"),
            role: Role::Plain,
        },
    );
    assert!(world
        .platform
        .authorize(&who("bob"), PlatformRead::Tenant("acme").requirement())
        .is_ok());
    let twice = world.refused("alice", invite("bob", Role::Admin));
    assert!(matches!(twice, PlatformError::Conflict(_)), "{twice}");
    world.ok("alice", invite("carol", Role::Plain));
    world.ok(
        "carol",
        PlatformOp::Reject {
            tenant: t("acme"),
            role: Role::Plain,
        },
    );
    assert!(!world
        .platform
        .tenant("acme")
        .expect("acme")
        .members
        .contains_key("u-carol"));
}

#[test]
fn role_rules_hold() {
    // A plain member cannot invite.
    let mut world = acme_with_bob_as(Role::Plain);
    assert!(matches!(
        world.refused("bob", invite("carol", Role::Plain)),
        PlatformError::Forbidden(_)
    ));
    // An admin cannot invite an owner nor promote to owner.
    let mut world = acme_with_bob_as(Role::Admin);
    assert!(matches!(
        world.refused("bob", invite("carol", Role::Owner)),
        PlatformError::Forbidden(_)
    ));
    world.ok("bob", invite("carol", Role::Plain));
    world.ok(
        "carol",
        PlatformOp::Confirm {
            tenant: t("acme"),
            role: Role::Plain,
        },
    );
    let promote = world.refused(
        "bob",
        PlatformOp::SetRole {
            tenant: t("acme"),
            user: t("u-carol"),
            role: Role::Owner,
        },
    );
    assert!(matches!(promote, PlatformError::Forbidden(_)), "{promote}");
    // An admin cannot demote or remove an owner.
    let demote = world.refused(
        "bob",
        PlatformOp::SetRole {
            tenant: t("acme"),
            user: t("u-alice"),
            role: Role::Plain,
        },
    );
    assert!(matches!(demote, PlatformError::Forbidden(_)), "{demote}");
    // The last owner can be neither demoted nor removed, nor leave, nor delete their user.
    let last = world.refused(
        "alice",
        PlatformOp::SetRole {
            tenant: t("acme"),
            user: t("u-alice"),
            role: Role::Admin,
        },
    );
    assert!(matches!(last, PlatformError::Conflict(_)), "{last}");
    let leave = world.refused(
        "alice",
        PlatformOp::RemoveMember {
            tenant: t("acme"),
            user: t("u-alice"),
        },
    );
    assert!(matches!(leave, PlatformError::Conflict(_)), "{leave}");
    assert!(matches!(
        world.refused("alice", PlatformOp::RemoveUser),
        PlatformError::Conflict(_)
    ));
    // With a second owner, the first may step down and the tenant can no longer be deleted by one.
    world.ok(
        "alice",
        PlatformOp::SetRole {
            tenant: t("acme"),
            user: t("u-bob"),
            role: Role::Owner,
        },
    );
    let delete = world.refused("alice", PlatformOp::DeleteTenant { tenant: t("acme") });
    assert!(matches!(delete, PlatformError::Conflict(_)), "{delete}");
    world.ok(
        "alice",
        PlatformOp::SetRole {
            tenant: t("acme"),
            user: t("u-alice"),
            role: Role::Plain,
        },
    );
    // Anyone may leave.
    world.ok(
        "carol",
        PlatformOp::RemoveMember {
            tenant: t("acme"),
            user: t("u-carol"),
        },
    );
    world.ok("bob", PlatformOp::DeleteTenant { tenant: t("acme") });
    assert!(world.platform.tenant("acme").is_none());
}

#[test]
fn operators_act_on_every_tenant_and_others_see_nothing() {
    let mut world = acme_with_bob_as(Role::Plain);
    assert!(world.platform.is_operator("u-dave"));
    let grant = world
        .platform
        .authorize(&who("dave"), PlatformRead::Tenant("acme").requirement())
        .expect("operators read every tenant");
    assert!(!grant.reads_secrets());
    world.ok("dave", invite("carol", Role::Owner));
    let outsider = world
        .platform
        .authorize(&who("carol"), PlatformRead::ListUsers.requirement());
    assert!(matches!(outsider, Err(PlatformError::Forbidden(_))));
    world.ok(
        "carol",
        PlatformOp::CreateTenant {
            tenant: t("other"),
            spec: TenantSpec::default(),
        },
    );
    let cross = world.refused(
        "bob",
        PlatformOp::RegisterResource {
            tenant: t("other"),
            kind: ResourceKind::Secret,
            name: t("s"),
            spec: ResourceSpec {
                data: json!("x"),
                meta: None,
                selector: None,
            },
        },
    );
    assert!(matches!(cross, PlatformError::NotFound(_)), "{cross}");
    // Finding 11: a stranger gets the same answer for a tenant that exists and one that does not.
    let absent = world
        .platform
        .authorize(&who("bob"), PlatformRead::Tenant("no-such-tenant").requirement());
    let present = world
        .platform
        .authorize(&who("bob"), PlatformRead::Tenant("other").requirement());
    assert_eq!(
        absent.map_err(|e| e.to_string().replace("no-such-tenant", "X")),
        present.map_err(|e| e.to_string().replace("other", "X"))
    );
}

fn port(n: u16) -> ResourceSpec {
    ResourceSpec {
        data: json!(n),
        meta: None,
        selector: None,
    }
}

#[test]
fn ports_and_domains_are_unique_across_tenants_and_accounts_guard_their_environments() {
    let mut world = acme_with_bob_as(Role::Plain);
    world.ok(
        "carol",
        PlatformOp::CreateTenant {
            tenant: t("other"),
            spec: TenantSpec::default(),
        },
    );
    world.ok(
        "bob",
        PlatformOp::RegisterResource {
            tenant: t("acme"),
            kind: ResourceKind::Port,
            name: t("p"),
            spec: port(30001),
        },
    );
    let taken = world.refused(
        "carol",
        PlatformOp::RegisterResource {
            tenant: t("other"),
            kind: ResourceKind::Port,
            name: t("p"),
            spec: port(30001),
        },
    );
    assert!(matches!(taken, PlatformError::Conflict(_)), "{taken}");
    // Updating a port to its own value is not a conflict.
    world.ok(
        "bob",
        PlatformOp::UpdateResource {
            tenant: t("acme"),
            kind: ResourceKind::Port,
            name: t("p"),
            spec: port(30001),
        },
    );
    let account = TenantAccount {
        spec: AccountSpec {
            iaas: t("sim"),
            iaas_info: json!({}),
            marks: Default::default(),
        },
        meta: AccountMeta::default(),
    };
    world.ok(
        "alice",
        PlatformOp::CreateAccount {
            tenant: t("acme"),
            account: t("main"),
            body: account,
        },
    );
    world.ok(
        "alice",
        PlatformOp::CreateEnvironment {
            tenant: t("acme"),
            account: t("main"),
            environment: t("prod"),
            spec: EnvironmentSpec::default(),
        },
    );
    let busy = world.refused(
        "alice",
        PlatformOp::DeleteAccount {
            tenant: t("acme"),
            account: t("main"),
            delete: true,
        },
    );
    assert!(matches!(busy, PlatformError::Conflict(_)), "{busy}");
    let plain = world.refused(
        "bob",
        PlatformOp::DeleteEnvironment {
            tenant: t("acme"),
            account: t("main"),
            environment: t("prod"),
        },
    );
    assert!(matches!(plain, PlatformError::Forbidden(_)), "{plain}");
}

#[test]
fn a_rule_with_an_unknown_operation_is_refused_naming_it() {
    let mut world = World::new();
    let spec: TenantSpec = serde_json::from_value(json!({
        "rules": { "selectEnvironmentService": [
            { "reason": "prod only", "sel": ["$.environment.labels.tier", "prod", "::eq"] },
            { "reason": "bad", "sel": [true, "::frobnicate"] }
        ] }
    }))
    .expect("spec");
    match world.refused(
        "alice",
        PlatformOp::CreateTenant {
            tenant: t("acme"),
            spec,
        },
    ) {
        PlatformError::Invalid { field, message } => {
            assert_eq!(field, "rules.selectEnvironmentService[1].sel[1]");
            assert!(message.contains("::frobnicate"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_platform_command_survives_the_log_encoding() {
    let proposal = crate::Proposal::new(crate::Command::Platform(PlatformCommand {
        caller: who("alice"),
        op: PlatformOp::CreateTenant {
            tenant: t("acme"),
            spec: TenantSpec::default(),
        },
    }));
    let bytes = serde_json::to_vec(&proposal).expect("encode");
    let decoded: crate::Proposal = serde_json::from_slice(&bytes).expect("decode");
    assert_eq!(decoded, proposal);
}

#[test]
fn over_long_or_invisible_profile_fields_are_refused() {
    // Finding 11: user name and surname had no length limit.
    let mut world = World::new();
    for (name, surname) in [
        ("x".repeat(300), "ok".to_string()),
        ("ok".to_string(), "a\u{202E}b".to_string()),
    ] {
        let refused = world.refused(
            "eve",
            PlatformOp::RegisterUser {
                uid: t("u-eve"),
                profile: UserProfile {
                    name,
                    surname,
                    ..UserProfile::default()
                },
                operator: false,
            },
        );
        assert!(matches!(refused, PlatformError::Invalid { .. }), "{refused}");
    }
}

fn pod_security(level: crate::pod_security::PodSecurity) -> PlatformOp {
    PlatformOp::SetPodSecurity {
        tenant: t("acme"),
        level,
    }
}

fn shown_pod_security(world: &World, caller: &str) -> crate::pod_security::PodSecurity {
    let grant = world
        .platform
        .authorize(&who(caller), PlatformRead::Tenant("acme").requirement())
        .expect("a member reads the tenant");
    world
        .platform
        .tenant_info("acme", &grant)
        .expect("the tenant's view")
        .pod_security
}

#[test]
fn only_operators_relax_a_tenants_pod_security() {
    use crate::pod_security::PodSecurity;
    for role in [Role::Plain, Role::Admin, Role::Owner] {
        let mut world = acme_with_bob_as(role);
        assert_eq!(shown_pod_security(&world, "bob"), PodSecurity::Baseline);
        // Neither the member nor the tenant's creator (its owner) may relax it.
        for caller in ["bob", "alice"] {
            let refused = world.refused(caller, pod_security(PodSecurity::Privileged));
            assert!(
                matches!(refused, PlatformError::Forbidden(_)),
                "{caller} ({role:?}): {refused}"
            );
        }
        world.ok("dave", pod_security(PodSecurity::BaselineWithHostNetwork));
        assert_eq!(
            shown_pod_security(&world, "bob"),
            PodSecurity::BaselineWithHostNetwork
        );
        world.ok("dave", pod_security(PodSecurity::Baseline));
        assert_eq!(shown_pod_security(&world, "bob"), PodSecurity::Baseline);
    }
    let mut world = World::new();
    let missing = world.refused("dave", pod_security(PodSecurity::Privileged));
    assert!(matches!(missing, PlatformError::NotFound(_)), "{missing}");
}

#[test]
fn a_tenant_stored_before_pod_security_reads_as_baseline() {
    use crate::pod_security::PodSecurity;
    let mut world = acme_with_bob_as(Role::Plain);
    let baseline = serde_json::to_value(world.platform.tenant("acme").expect("acme")).expect("encode");
    // The default is left out of the stored tenant, so its encoding is what it was before.
    assert!(baseline.get("pod_security").is_none(), "{baseline}");
    let old: Tenant = serde_json::from_value(baseline).expect("decode");
    assert_eq!(old.pod_security, PodSecurity::Baseline);
    world.ok("dave", pod_security(PodSecurity::Privileged));
    let relaxed = serde_json::to_value(world.platform.tenant("acme").expect("acme")).expect("encode");
    let back: Tenant = serde_json::from_value(relaxed).expect("decode");
    assert_eq!(back.pod_security, PodSecurity::Privileged);
}
