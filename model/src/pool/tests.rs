//! Table-style tests of the pool rules, without Raft.

use std::collections::BTreeMap;

use super::*;
use crate::error::DomainError;

fn config(yaml_like: Vec<TypeConfig>) -> PoolConfig {
    PoolConfig { resources: yaml_like }
}

fn static_type(rtype: &str, names: &[&str]) -> TypeConfig {
    TypeConfig {
        rtype: rtype.into(),
        names: names.iter().map(|n| n.to_string()).collect(),
        ..Default::default()
    }
}

fn pools_with(types: Vec<TypeConfig>) -> Pools {
    let mut pools = Pools::default();
    pools
        .apply(
            1,
            1_000,
            &PoolCommand::SetConfig {
                config: config(types),
            },
        )
        .expect("valid config");
    pools
}

fn acquire(rtype: &str, owner: &str, request_id: Option<&str>) -> PoolCommand {
    PoolCommand::Acquire {
        rtype: rtype.into(),
        state: states::FREE.into(),
        dest: states::BUSY.into(),
        owner: owner.into(),
        request_id: request_id.map(str::to_string),
        candidates: None,
        claim_for_ms: None,
        new_dynamic_name: None,
    }
}

fn granted(result: Result<PoolResult, DomainError>) -> Resource {
    match result {
        Ok(PoolResult::Resource(resource)) => resource,
        other => panic!("expected a grant, got {other:?}"),
    }
}

fn release(name: &str, owner: &str, dest: &str, token: Option<u64>) -> PoolCommand {
    PoolCommand::Release {
        name: name.into(),
        dest: dest.into(),
        owner: owner.into(),
        token,
    }
}

#[test]
fn acquire_takes_the_least_recently_updated_and_tokens_grow() {
    let mut pools = pools_with(vec![static_type("t", &["a", "b"])]);
    let first = granted(pools.apply(2, 2_000, &acquire("t", "o", None)));
    let second = granted(pools.apply(3, 3_000, &acquire("t", "o", None)));
    assert_eq!((first.name.as_str(), second.name.as_str()), ("a", "b"));
    pools
        .apply(4, 4_000, &release("a", "o", "free", None))
        .expect("release a");
    pools
        .apply(5, 5_000, &release("b", "o", "free", None))
        .expect("release b");
    let again = granted(pools.apply(6, 6_000, &acquire("t", "p", None)));
    assert_eq!(
        again.name, "a",
        "a was released first, so it is the least recently updated"
    );
    assert!(
        again.token > first.token,
        "a new grant has a greater fencing token"
    );
}

#[test]
fn exhausted_and_unknown_types_are_told_apart() {
    let mut pools = pools_with(vec![static_type("t", &["a"])]);
    granted(pools.apply(2, 2_000, &acquire("t", "o", None)));
    let exhausted = pools
        .apply(3, 3_000, &acquire("t", "o", None))
        .unwrap_err()
        .to_string();
    assert!(exhausted.contains("try again later"), "{exhausted}");
    let unknown = pools
        .apply(4, 4_000, &acquire("nope", "o", None))
        .unwrap_err()
        .to_string();
    assert!(unknown.contains("does not exist"), "{unknown}");
}

#[test]
fn request_ids_queue_fifo_and_expire_when_clients_stop_polling() {
    let mut pools = pools_with(vec![static_type("t", &["a"])]);
    granted(pools.apply(2, 2_000, &acquire("t", "holder", None)));
    assert!(pools.apply(3, 3_000, &acquire("t", "A", Some("1"))).is_err());
    assert!(pools.apply(4, 4_000, &acquire("t", "B", Some("2"))).is_err());
    pools
        .apply(5, 5_000, &release("a", "holder", "free", None))
        .expect("release");
    assert!(
        matches!(
            pools.apply(6, 6_000, &acquire("t", "B", Some("2"))),
            Err(DomainError::Pool(PoolError::Queued { position: 2, .. }))
        ),
        "B is second in line, and told so"
    );
    assert!(
        pools.apply(7, 6_500, &acquire("t", "C", None)).is_err(),
        "no id ranks after the queue"
    );
    assert_eq!(
        granted(pools.apply(8, 7_000, &acquire("t", "A", Some("1")))).owner,
        "A"
    );
    pools
        .apply(9, 8_000, &release("a", "A", "free", None))
        .expect("release");
    // B keeps polling; A's entry is gone; a new id "3" queues behind B.
    assert!(pools.apply(10, 8_100, &acquire("t", "D", Some("3"))).is_err());
    assert_eq!(
        granted(pools.apply(11, 8_200, &acquire("t", "B", Some("2")))).owner,
        "B"
    );
    pools
        .apply(12, 9_000, &release("a", "B", "free", None))
        .expect("release");
    // "3" stopped polling more than the TTL ago: a newcomer is first again.
    let later = 8_100 + REQUEST_TTL_MS + 1;
    assert_eq!(
        granted(pools.apply(13, later, &acquire("t", "E", Some("4")))).owner,
        "E"
    );
}

#[test]
fn acquire_by_state_is_all_or_nothing() {
    let mut pools = pools_with(vec![static_type("t", &["a", "b", "c"])]);
    granted(pools.apply(2, 2_000, &acquire("t", "o", None)));
    let names = vec!["a".to_string(), "b".to_string()];
    let refused = pools.apply(
        3,
        3_000,
        &PoolCommand::AcquireByState {
            state: "free".into(),
            dest: "busy".into(),
            owner: "p".into(),
            names: names.clone(),
        },
    );
    assert!(refused.is_err());
    assert!(
        pools.resource("b").is_some_and(|r| r.owner.is_empty()),
        "b was not taken"
    );
    let ok = pools.apply(
        4,
        4_000,
        &PoolCommand::AcquireByState {
            state: "free".into(),
            dest: "busy".into(),
            owner: "p".into(),
            names: vec!["b".into(), "c".into()],
        },
    );
    assert!(matches!(ok, Ok(PoolResult::Resources(ref r)) if r.len() == 2));
}

#[test]
fn update_merges_user_data_checks_state_and_tokens() {
    let mut pools = pools_with(vec![static_type("t", &["a"])]);
    let grant = granted(pools.apply(2, 2_000, &acquire("t", "o", None)));
    let update = |data: &[(&str, &str)], state: &str, token: Option<u64>| PoolCommand::Update {
        name: "a".into(),
        owner: "o".into(),
        state: state.into(),
        user_data: data
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        token,
    };
    pools
        .apply(
            3,
            3_000,
            &update(&[("k", "v"), ("x", "y")], "busy", Some(grant.token)),
        )
        .expect("update");
    pools
        .apply(4, 4_000, &update(&[("k", "")], "busy", None))
        .expect("update");
    let resource = pools.resource("a").cloned().expect("a");
    assert_eq!(
        resource.user_data,
        BTreeMap::from([("x".to_string(), "y".to_string())])
    );
    assert_eq!(resource.last_update_ms, 4_000);
    assert!(matches!(
        pools.apply(5, 5_000, &update(&[], "free", None)),
        Err(DomainError::Pool(PoolError::StateMismatch { .. }))
    ));
    assert!(matches!(
        pools.apply(6, 6_000, &update(&[], "busy", Some(grant.token - 1))),
        Err(DomainError::Pool(PoolError::StaleToken { .. }))
    ));
    assert!(matches!(
        pools.apply(7, 7_000, &release("a", "intruder", "free", None)),
        Err(DomainError::Pool(PoolError::OwnerMismatch { .. }))
    ));
}

#[test]
fn reset_reclaims_only_owned_stale_resources_and_respects_the_term_start() {
    let mut pools = pools_with(vec![static_type("t", &["a", "b"])]);
    granted(pools.apply(2, 2_000, &acquire("t", "o", None)));
    let reset = |not_before_ms| PoolCommand::Reset {
        rtype: "t".into(),
        state: "busy".into(),
        dest: "dirty".into(),
        expire_ms: 10_000,
        not_before_ms,
    };
    assert_eq!(
        pools.apply(3, 11_000, &reset(0)),
        Ok(PoolResult::Reclaimed(BTreeMap::new()))
    );
    // A new leader that started at 10_000 waits a full expiry from then.
    assert_eq!(
        pools.apply(4, 15_000, &reset(10_000)),
        Ok(PoolResult::Reclaimed(BTreeMap::new()))
    );
    let reclaimed = pools.apply(5, 20_000, &reset(10_000));
    assert_eq!(
        reclaimed,
        Ok(PoolResult::Reclaimed(BTreeMap::from([(
            "a".to_string(),
            "o".to_string()
        )])))
    );
    assert_eq!(
        pools.resource("b").map(|r| r.state.as_str()),
        Some("free"),
        "unowned untouched"
    );
}

#[test]
fn removed_static_resources_wait_for_their_owner() {
    let mut pools = pools_with(vec![static_type("t", &["a", "b"])]);
    granted(pools.apply(2, 2_000, &acquire("t", "o", None)));
    pools
        .apply(
            3,
            3_000,
            &PoolCommand::SetConfig {
                config: config(vec![static_type("t", &["c"])]),
            },
        )
        .expect("config");
    assert!(pools.resource("a").is_some(), "owned a stays");
    assert!(pools.resource("b").is_none(), "unowned b is gone");
    assert!(pools.resource("c").is_some(), "c is new");
    pools
        .apply(4, 4_000, &release("a", "o", "free", None))
        .expect("release");
    assert!(pools.resource("a").is_none(), "a disappears once released");
}

fn dynamic(rtype: &str, min: u32, max: u32, lifespan: Option<&str>) -> TypeConfig {
    TypeConfig {
        rtype: rtype.into(),
        state: "free".into(),
        min_count: Some(min),
        max_count: Some(max),
        lifespan: lifespan.map(str::to_string),
        ..Default::default()
    }
}

fn names(count: usize, prefix: &str) -> Vec<String> {
    (0..count).map(|i| format!("{prefix}-{i}")).collect()
}

#[test]
fn dynamic_types_keep_min_count_expire_and_drain() {
    let mut pools = pools_with(vec![dynamic("d", 2, 3, Some("1s"))]);
    pools
        .apply(
            2,
            2_000,
            &PoolCommand::SyncDynamic {
                rtype: "d".into(),
                new_names: names(3, "x"),
            },
        )
        .expect("sync");
    assert_eq!(pools.of_type("d").count(), 2);
    let grant = granted(pools.apply(3, 3_000, &acquire("d", "o", None)));
    pools
        .apply(4, 4_000, &release(&grant.name, "o", "free", None))
        .expect("release");
    // Lifespan runs from the release: at 5_001 the resource expires.
    pools
        .apply(
            5,
            5_001,
            &PoolCommand::SyncDynamic {
                rtype: "d".into(),
                new_names: names(3, "y"),
            },
        )
        .expect("sync");
    assert_eq!(
        pools.resource(&grant.name).map(|r| r.state.as_str()),
        Some(states::TO_BE_DELETED)
    );
    // As in Boskos, a resource on its way out still counts towards min-count.
    assert_eq!(pools.of_type("d").filter(|r| r.state == "free").count(), 1);
    pools
        .apply(
            6,
            6_000,
            &PoolCommand::Retire {
                name: grant.name.clone(),
            },
        )
        .expect("retire");
    pools
        .apply(
            7,
            7_000,
            &PoolCommand::SyncDynamic {
                rtype: "d".into(),
                new_names: names(3, "z"),
            },
        )
        .expect("sync");
    assert!(pools.resource(&grant.name).is_none(), "tombstones are deleted");
    assert_eq!(
        pools.of_type("d").filter(|r| r.state == "free").count(),
        2,
        "replaced to keep min-count"
    );
    // Lower max-count: the surplus idle resources go toBeDeleted.
    pools
        .apply(
            8,
            8_000,
            &PoolCommand::SetConfig {
                config: config(vec![dynamic("d", 0, 1, None)]),
            },
        )
        .expect("config");
    pools
        .apply(
            9,
            9_000,
            &PoolCommand::SyncDynamic {
                rtype: "d".into(),
                new_names: vec![],
            },
        )
        .expect("sync");
    assert_eq!(
        pools
            .of_type("d")
            .filter(|r| r.state == states::TO_BE_DELETED)
            .count(),
        1
    );
}

#[test]
fn a_new_request_id_creates_a_dynamic_resource_up_to_max() {
    let mut pools = pools_with(vec![dynamic("d", 0, 1, None)]);
    let mut with_name = acquire("d", "o", Some("r1"));
    if let PoolCommand::Acquire { new_dynamic_name, .. } = &mut with_name {
        *new_dynamic_name = Some("made-1".into());
    }
    // Created free, so the same request gets it at once.
    assert_eq!(granted(pools.apply(2, 2_000, &with_name)).name, "made-1");
    let mut second = acquire("d", "p", Some("r2"));
    if let PoolCommand::Acquire { new_dynamic_name, .. } = &mut second {
        *new_dynamic_name = Some("made-2".into());
    }
    assert!(pools.apply(3, 3_000, &second).is_err());
    assert!(pools.resource("made-2").is_none(), "max-count 1 is reached");
}

#[test]
fn retire_releases_children_dirty() {
    let mut pools = pools_with(vec![static_type("child", &["c1"]), dynamic("parent", 1, 1, None)]);
    pools
        .apply(
            2,
            2_000,
            &PoolCommand::SyncDynamic {
                rtype: "parent".into(),
                new_names: names(1, "p"),
            },
        )
        .expect("sync");
    granted(pools.apply(
        3,
        3_000,
        &PoolCommand::Acquire {
            rtype: "child".into(),
            state: "free".into(),
            dest: "p-0".into(),
            owner: "mason".into(),
            request_id: None,
            candidates: None,
            claim_for_ms: None,
            new_dynamic_name: None,
        },
    ));
    let parent = pools.resources.get_mut("p-0").expect("parent");
    parent
        .user_data
        .insert(LEASED_RESOURCES.into(), "[\"c1\"]".into());
    parent.state = states::TO_BE_DELETED.into();
    pools
        .apply(4, 4_000, &PoolCommand::Retire { name: "p-0".into() })
        .expect("retire");
    let child = pools.resource("c1").expect("child");
    assert_eq!((child.state.as_str(), child.owner.as_str()), ("dirty", ""));
    assert_eq!(
        pools.resource("p-0").map(|r| r.state.as_str()),
        Some(states::TOMBSTONE)
    );
}

#[test]
fn claims_expire_server_side_and_release_by_token() {
    let mut pools = pools_with(vec![static_type("cluster", &["c1"])]);
    let claim = PoolCommand::Acquire {
        rtype: "cluster".into(),
        state: "free".into(),
        dest: "leased".into(),
        owner: "token-1".into(),
        request_id: None,
        candidates: Some(vec!["c1".into()]),
        claim_for_ms: Some(30_000),
        new_dynamic_name: None,
    };
    granted(pools.apply(2, 2_000, &claim));
    let expire = PoolCommand::ExpireClaims {
        rtype: "cluster".into(),
        not_before_ms: 0,
    };
    assert_eq!(
        pools.apply(3, 31_000, &expire),
        Ok(PoolResult::Reclaimed(BTreeMap::new()))
    );
    assert!(matches!(pools.apply(4, 32_000, &expire), Ok(PoolResult::Reclaimed(ref r)) if r.len() == 1));
    assert!(matches!(
        pools.apply(
            5,
            33_000,
            &PoolCommand::ReleaseClaim {
                token: "token-1".into()
            }
        ),
        Err(DomainError::Pool(PoolError::ClaimNotFound(_)))
    ));
}

#[test]
fn fulfil_takes_children_all_or_nothing_and_recycles_old_ones() {
    let mut parent_type = dynamic("cluster", 1, 2, None);
    parent_type.state = "dirty".into();
    parent_type.needs = BTreeMap::from([("acct".to_string(), 1)]);
    let mut pools = pools_with(vec![static_type("acct", &["a1", "a2"]), parent_type]);
    pools
        .apply(
            2,
            2_000,
            &PoolCommand::SyncDynamic {
                rtype: "cluster".into(),
                new_names: names(1, "c"),
            },
        )
        .expect("sync");
    let prepared = granted(pools.apply(3, 3_000, &PoolCommand::Fulfil { name: "c-0".into() }));
    assert_eq!(prepared.state, "free");
    assert_eq!(
        prepared.user_data.get(LEASED_RESOURCES).map(String::as_str),
        Some("[\"a1\"]")
    );
    assert_eq!(pools.resource("a1").map(|r| r.state.as_str()), Some("c-0"));
    // Used and returned dirty: Mason recycles the old child and takes a fresh one.
    granted(pools.apply(4, 4_000, &acquire("cluster", "job", None)));
    pools
        .apply(5, 5_000, &release("c-0", "job", "dirty", None))
        .expect("release");
    let again = granted(pools.apply(6, 6_000, &PoolCommand::Fulfil { name: "c-0".into() }));
    assert_eq!(
        again.user_data.get(LEASED_RESOURCES).map(String::as_str),
        Some("[\"a2\"]")
    );
    assert_eq!(pools.resource("a1").map(|r| r.state.as_str()), Some("dirty"));
    // No free account left: nothing changes.
    let parent = pools.resources.get_mut("c-0").expect("parent");
    parent.state = "dirty".into();
    assert!(matches!(
        pools.apply(8, 8_000, &PoolCommand::Fulfil { name: "c-0".into() }),
        Err(DomainError::Pool(PoolError::NoneAvailable(_)))
    ));
    assert_eq!(
        pools.resource("a2").map(|r| r.state.as_str()),
        Some("c-0"),
        "unchanged when refused"
    );
}

fn claim(owner: &str, claim_for_ms: u64) -> PoolCommand {
    PoolCommand::Acquire {
        rtype: "cluster".into(),
        state: "free".into(),
        dest: "leased".into(),
        owner: owner.into(),
        request_id: None,
        candidates: None,
        claim_for_ms: Some(claim_for_ms),
        new_dynamic_name: None,
    }
}

#[test]
fn an_absurd_claim_length_is_refused_and_never_overflows() {
    // Finding 0: `max_time` of i64::MAX seconds once made every replica panic in apply.
    let mut pools = pools_with(vec![static_type("cluster", &["c1"])]);
    let refused = pools.apply(2, 2_000, &claim("t1", u64::MAX));
    assert!(
        matches!(&refused, Err(DomainError::Invalid { field, .. }) if field == "max_time"),
        "{refused:?}"
    );
    assert!(
        pools.resource("c1").is_some_and(|r| r.owner.is_empty()),
        "nothing half-applied"
    );
    let longest = crate::limits::MAX_DURATION_MS;
    let resource = granted(pools.apply(3, u64::MAX - 5, &claim("t2", longest)));
    assert_eq!(resource.claim_expires_ms, Some(u64::MAX));
}

#[test]
fn a_lifespan_near_the_end_of_time_saturates() {
    let mut pools = pools_with(vec![dynamic("d", 1, 1, Some("87600h"))]);
    pools
        .apply(
            2,
            2_000,
            &PoolCommand::SyncDynamic {
                rtype: "d".into(),
                new_names: names(1, "d"),
            },
        )
        .expect("sync");
    let got = granted(pools.apply(3, u64::MAX - 10, &acquire("d", "o", None)));
    pools
        .apply(4, u64::MAX - 5, &release(&got.name, "o", "dirty", None))
        .expect("release near the end of time");
    assert_eq!(
        pools.resource(&got.name).and_then(|r| r.expiration_ms),
        Some(u64::MAX)
    );
}

#[test]
fn a_new_leader_counts_a_claim_from_its_term_start() {
    // Finding 9: a claim granted at 2 s for 30 s, and a new leader whose term started at 20 s by
    // a clock running ahead: the claim lasts at least 30 s from the term's start.
    let mut pools = pools_with(vec![static_type("cluster", &["c1"])]);
    granted(pools.apply(2, 2_000, &claim("t1", 30_000)));
    let expire = |term_start: u64| PoolCommand::ExpireClaims {
        rtype: "cluster".into(),
        not_before_ms: term_start,
    };
    assert_eq!(
        pools.apply(3, 40_000, &expire(20_000)),
        Ok(PoolResult::Reclaimed(BTreeMap::new()))
    );
    assert!(!pools
        .resource("c1")
        .is_some_and(|r| r.claim_expired(49_999, 20_000)));
    assert!(
        matches!(pools.apply(4, 50_000, &expire(20_000)), Ok(PoolResult::Reclaimed(ref r)) if r.len() == 1)
    );
}

#[test]
fn empty_queues_go_and_new_state_names_do_not_grow_the_state() {
    // Finding 8: every new `state` once left a queue behind, even on a 404.
    let mut pools = pools_with(vec![static_type("t", &["a"])]);
    for i in 0..50u64 {
        let mut command = acquire("t", "o", None);
        if let PoolCommand::Acquire { state, .. } = &mut command {
            *state = format!("state-{i}");
        }
        assert!(pools.apply(2 + i, 2_000 + i, &command).is_err());
    }
    assert!(pools.queues.is_empty(), "{} queues left", pools.queues.len());
    // A request id waits in a queue until it is served or stops polling, then the queue goes.
    granted(pools.apply(100, 3_000, &acquire("t", "holder", None)));
    assert!(pools.apply(101, 3_100, &acquire("t", "w", Some("r1"))).is_err());
    assert_eq!(pools.queues.len(), 1);
    pools
        .apply(102, 3_200, &release("a", "holder", "free", None))
        .expect("release");
    granted(pools.apply(103, 3_300, &acquire("t", "w", Some("r1"))));
    assert!(pools.queues.is_empty());
}

#[test]
fn queues_are_capped() {
    let mut pools = pools_with(vec![static_type("t", &["a"])]);
    let limit = crate::limits::MAX_POOL_QUEUES as u64;
    for i in 0..limit {
        let mut command = acquire("t", "o", Some(&format!("r{i}")));
        if let PoolCommand::Acquire { state, .. } = &mut command {
            *state = format!("s{i}");
        }
        assert!(matches!(
            pools.apply(2 + i, 2_000, &command),
            Err(DomainError::Pool(PoolError::Queued { position: 1, .. }))
        ));
    }
    let mut one_more = acquire("t", "o", Some("rx"));
    if let PoolCommand::Acquire { state, .. } = &mut one_more {
        *state = "another".into();
    }
    assert!(matches!(
        pools.apply(limit + 2, 2_000, &one_more),
        Err(DomainError::Pool(PoolError::TooManyQueues(_)))
    ));
}

#[test]
fn states_owners_and_destinations_must_be_printable() {
    // Finding 11: NUL and bidi characters in Boskos words.
    let mut pools = pools_with(vec![static_type("t", &["a"])]);
    for bad in ["a\0b", "evil\u{202E}fdp", &"s".repeat(300)] {
        let mut command = acquire("t", "o", None);
        if let PoolCommand::Acquire { dest, .. } = &mut command {
            *dest = bad.to_string();
        }
        assert!(
            matches!(pools.apply(2, 2_000, &command), Err(DomainError::Invalid { .. })),
            "{bad:?}"
        );
        assert!(matches!(
            pools.apply(3, 2_000, &acquire("t", bad, None)),
            Err(DomainError::Invalid { .. })
        ));
    }
    let got = granted(pools.apply(4, 2_000, &acquire("t", "o", None)));
    assert!(matches!(
        pools.apply(5, 2_000, &release(&got.name, "o", "x\u{2066}", None)),
        Err(DomainError::Invalid { .. })
    ));
}
