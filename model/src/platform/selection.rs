//! The environment-selection algorithm the platform runs for every new service revision
//! (Axebow §2.6): which of a tenant's environments a revision may land in, whether it needs an
//! explicit acceptance, and which one is chosen. Pure, so every replica chooses alike.

use serde_json::{json, Value};

use super::entities::{Rule, TenantRules};
use super::selector::Selector;

/// An environment the revision could land in.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Environment name (`account/environment` or any unique name).
    pub name: String,
    /// What `$.environment` reads.
    pub environment: Value,
    /// vCPU (millicores) still free under the environment's marks.
    pub free_vcpu: i64,
}

/// A resource the revision needs.
#[derive(Debug, Clone, PartialEq)]
pub struct NeededResource {
    /// What `$.resource` reads.
    pub resource: Value,
    /// The resource's own environment selector, if any.
    pub selector: Option<Selector>,
}

/// Everything the algorithm reads.
#[derive(Debug, Clone)]
pub struct SelectionInput<'a> {
    /// The tenant's rules.
    pub rules: &'a TenantRules,
    /// What `$.this` reads (tenant info).
    pub this: Value,
    /// What `$.service` reads (service and revision, usage included).
    pub service: Value,
    /// What `$.user` reads (the requesting tenant user).
    pub user: Value,
    /// The tenant's environments.
    pub environments: Vec<Candidate>,
    /// The service's environment when it already has one.
    pub current: Option<String>,
    /// Resources the revision needs.
    pub resources: Vec<NeededResource>,
}

/// The chosen environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// Its name.
    pub environment: String,
    /// `true` when chosen through `selectEnvironmentService` (deploy at once); `false` when only
    /// `selectAcceptEnvironmentService` allowed it (the revision waits for acceptance).
    pub accepted: bool,
}

/// Why no environment was chosen; carries the reasons of the rules that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SelectionError {
    /// No environment passed the selection and resource rules.
    NoEnvironment {
        /// Reasons of failed rules, one per environment and rule.
        reasons: Vec<String>,
    },
    /// Environments passed, but `validateEnvironmentUser` refused the user on all of them.
    UserRefused {
        /// Reasons of failed rules.
        reasons: Vec<String>,
    },
}

/// Evaluates a rule list; an empty list passes. Reasons of failing rules go to `reasons`.
fn passes(rules: &[Rule], context: &Value, env: &str, reasons: &mut Vec<String>) -> bool {
    let mut ok = true;
    for rule in rules {
        match rule.sel.evaluate(context) {
            Ok(true) => {}
            Ok(false) => {
                ok = false;
                reasons.push(format!("{env}: {}", rule.reason));
            }
            Err(error) => {
                ok = false;
                reasons.push(format!("{env}: {} ({error})", rule.reason));
            }
        }
    }
    ok
}

/// Runs the selection.
pub fn select_environment(input: &SelectionInput<'_>) -> Result<Selection, SelectionError> {
    let mut reasons = Vec::new();
    let pool = input
        .environments
        .iter()
        .filter(|c| input.current.as_ref().is_none_or(|current| *current == c.name));
    // Steps 1 and 2: accepted through the first list, requiring through the second.
    let mut candidates: Vec<(&Candidate, bool)> = Vec::new();
    for candidate in pool {
        let context =
            json!({ "this": input.this, "service": input.service, "environment": candidate.environment });
        if passes(
            &input.rules.select_environment_service,
            &context,
            &candidate.name,
            &mut reasons,
        ) {
            candidates.push((candidate, true));
        } else if !input.rules.select_accept_environment_service.is_empty()
            && passes(
                &input.rules.select_accept_environment_service,
                &context,
                &candidate.name,
                &mut reasons,
            )
        {
            candidates.push((candidate, false));
        }
    }
    // Step 3: every needed resource must be allowed in the environment.
    candidates.retain(|(candidate, _)| {
        input.resources.iter().all(|needed| {
            let context = json!({ "this": input.this, "environment": candidate.environment, "resource": needed.resource });
            let tenant_ok = passes(&input.rules.validate_environment_resource, &context, &candidate.name, &mut reasons);
            let own_ok = needed.selector.as_ref().is_none_or(|selector| {
                let context = json!({ "this": input.this, "environment": candidate.environment });
                let ok = selector.evaluate(&context) == Ok(true);
                if !ok {
                    reasons.push(format!("{}: the resource's selector does not allow it", candidate.name));
                }
                ok
            });
            tenant_ok && own_ok
        })
    });
    if candidates.is_empty() {
        return Err(SelectionError::NoEnvironment { reasons });
    }
    // Step 4: the requesting user must be allowed.
    candidates.retain(|(candidate, _)| {
        let context = json!({ "this": input.this, "environment": candidate.environment, "user": input.user });
        passes(
            &input.rules.validate_environment_user,
            &context,
            &candidate.name,
            &mut reasons,
        )
    });
    // Step 5: accepted before requiring, then most free vCPU, then name.
    candidates
        .into_iter()
        .max_by(|(a, a_accepted), (b, b_accepted)| {
            a_accepted
                .cmp(b_accepted)
                .then(a.free_vcpu.cmp(&b.free_vcpu))
                .then(b.name.cmp(&a.name))
        })
        .map(|(candidate, accepted)| Selection {
            environment: candidate.name.clone(),
            accepted,
        })
        .ok_or(SelectionError::UserRefused { reasons })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(sel: Value) -> Rule {
        Rule {
            reason: format!("rule {sel}"),
            sel: serde_json::from_value(sel).expect("selector"),
        }
    }

    fn env(name: &str, tier: &str, free_vcpu: i64) -> Candidate {
        Candidate {
            name: name.to_string(),
            environment: json!({ "name": name, "labels": { "tier": tier } }),
            free_vcpu,
        }
    }

    fn tier_is(tier: &str) -> Vec<Rule> {
        vec![rule(json!(["$.environment.labels.tier", tier, "::eq"]))]
    }

    struct Case {
        name: &'static str,
        rules: TenantRules,
        environments: Vec<Candidate>,
        current: Option<&'static str>,
        resources: Vec<NeededResource>,
        user_role: &'static str,
        expected: Result<(&'static str, bool), &'static str>,
    }

    fn run(case: &Case) -> Result<(String, bool), &'static str> {
        let input = SelectionInput {
            rules: &case.rules,
            this: json!({ "name": "acme" }),
            service: json!({ "name": "web" }),
            user: json!({ "role": case.user_role }),
            environments: case.environments.clone(),
            current: case.current.map(str::to_string),
            resources: case.resources.clone(),
        };
        select_environment(&input)
            .map(|s| (s.environment, s.accepted))
            .map_err(|e| match e {
                SelectionError::NoEnvironment { .. } => "no environment",
                SelectionError::UserRefused { .. } => "user refused",
            })
    }

    #[test]
    fn the_selection_follows_the_table() {
        let cases = vec![
            Case {
                name: "no rules: most free vCPU wins",
                rules: TenantRules::default(),
                environments: vec![env("a", "dev", 100), env("b", "prod", 300)],
                current: None,
                resources: vec![],
                user_role: "plain",
                expected: Ok(("b", true)),
            },
            Case {
                name: "a tie goes to the first name",
                rules: TenantRules::default(),
                environments: vec![env("b", "dev", 100), env("a", "prod", 100)],
                current: None,
                resources: vec![],
                user_role: "plain",
                expected: Ok(("a", true)),
            },
            Case {
                name: "only the labelled environment passes",
                rules: TenantRules {
                    select_environment_service: tier_is("prod"),
                    ..TenantRules::default()
                },
                environments: vec![env("a", "dev", 900), env("b", "prod", 100)],
                current: None,
                resources: vec![],
                user_role: "plain",
                expected: Ok(("b", true)),
            },
            Case {
                name: "accepted beats requiring even with fewer vCPUs",
                rules: TenantRules {
                    select_environment_service: tier_is("prod"),
                    select_accept_environment_service: tier_is("dev"),
                    ..TenantRules::default()
                },
                environments: vec![env("a", "dev", 900), env("b", "prod", 100)],
                current: None,
                resources: vec![],
                user_role: "plain",
                expected: Ok(("b", true)),
            },
            Case {
                name: "only a requiring environment: chosen, not accepted",
                rules: TenantRules {
                    select_environment_service: tier_is("prod"),
                    select_accept_environment_service: tier_is("dev"),
                    ..TenantRules::default()
                },
                environments: vec![env("a", "dev", 900)],
                current: None,
                resources: vec![],
                user_role: "plain",
                expected: Ok(("a", false)),
            },
            Case {
                name: "an existing environment is the only one considered",
                rules: TenantRules::default(),
                environments: vec![env("a", "dev", 100), env("b", "prod", 900)],
                current: Some("a"),
                resources: vec![],
                user_role: "plain",
                expected: Ok(("a", true)),
            },
            Case {
                name: "a resource the tenant rules forbid removes the environment",
                rules: TenantRules {
                    validate_environment_resource: vec![rule(json!([
                        "$.resource.kind",
                        "secret",
                        "::neq",
                        "$.environment.labels.tier",
                        "prod",
                        "::eq",
                        "::or"
                    ]))],
                    ..TenantRules::default()
                },
                environments: vec![env("a", "dev", 900), env("b", "prod", 100)],
                current: None,
                resources: vec![NeededResource {
                    resource: json!({ "kind": "secret" }),
                    selector: None,
                }],
                user_role: "plain",
                expected: Ok(("b", true)),
            },
            Case {
                name: "a resource's own selector removes the environment",
                rules: TenantRules::default(),
                environments: vec![env("a", "dev", 900), env("b", "prod", 100)],
                current: None,
                resources: vec![NeededResource {
                    resource: json!({ "kind": "volume" }),
                    selector: Some(
                        serde_json::from_value(json!(["$.environment.labels.tier", "dev", "::eq"]))
                            .expect("sel"),
                    ),
                }],
                user_role: "plain",
                expected: Ok(("a", true)),
            },
            Case {
                name: "nothing passes",
                rules: TenantRules {
                    select_environment_service: tier_is("prod"),
                    ..TenantRules::default()
                },
                environments: vec![env("a", "dev", 900)],
                current: None,
                resources: vec![],
                user_role: "plain",
                expected: Err("no environment"),
            },
            Case {
                name: "the user is refused everywhere",
                rules: TenantRules {
                    validate_environment_user: vec![rule(json!(["$.user.role", "admin", "::eq"]))],
                    ..TenantRules::default()
                },
                environments: vec![env("a", "dev", 900)],
                current: None,
                resources: vec![],
                user_role: "plain",
                expected: Err("user refused"),
            },
            Case {
                name: "a rule that errors counts as failing",
                rules: TenantRules {
                    select_environment_service: vec![rule(json!(["$.environment.labels.tier"]))],
                    ..TenantRules::default()
                },
                environments: vec![env("a", "dev", 900)],
                current: None,
                resources: vec![],
                user_role: "plain",
                expected: Err("no environment"),
            },
        ];
        for case in &cases {
            let expected = case.expected.map(|(name, accepted)| (name.to_string(), accepted));
            assert_eq!(run(case), expected, "{}", case.name);
        }
    }
}
