//! A table of rows: the header and cells of a kind's columns (behind the `-A` column), and the
//! text they print as.

use super::columns::{columns, scope_column};
use super::kind::Kind;
use super::rows::Row;

/// The cells of a table: the header, then a line per row.
fn matrix(kind: Kind, rows: &[Row], wide: bool, across: bool) -> Vec<Vec<String>> {
    let columns = columns(kind, wide);
    let scope = (across && kind != Kind::Tenants).then(|| scope_column(kind));
    let mut header: Vec<String> = scope.iter().map(|(h, _)| h.to_string()).collect();
    header.push("NAME".to_string());
    header.extend(columns.iter().map(|(h, _)| h.to_string()));
    let mut lines = vec![header];
    for row in rows {
        let mut line: Vec<String> = scope.iter().map(|(_, c)| c.of(row)).collect();
        line.push(row.name.clone());
        line.extend(columns.iter().map(|(_, c)| c.of(row)));
        lines.push(line);
    }
    lines
}

/// The table as printed: each column as wide as its widest cell, two spaces apart.
pub(super) fn table(kind: Kind, rows: &[Row], wide: bool, across: bool) -> String {
    let rows = matrix(kind, rows, wide, across);
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    rows.iter()
        .map(|row| {
            row.iter()
                .zip(&widths)
                .map(|(cell, width)| format!("{cell:<width$}"))
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use drover_api::axebow::reply::ok;
    use drover_api::axebow::services::ServiceView;
    use drover_model::{LeaseSpec, ObjectKind};
    use serde_json::{json, Value};

    use super::*;
    use crate::cli::resources::rows::{absorb, objects, pick};
    use crate::cli::resources::sample_answers::{answers, cluster_view, lease, service_full, value};

    /// The rows a table shows, as `drover get` makes them: from the list answer, with the
    /// objects of kinds listed by name only taken from their own answers (what `complete`
    /// fetches), and one tenant's role from the tenant list.
    fn listed_rows(kind: Kind, list: &Value, single: Option<&Value>, across: bool) -> Vec<Row> {
        let mut rows = objects(kind, list, None, across);
        for row in &mut rows {
            if row.object.is_null() {
                absorb(row, single.unwrap());
            }
        }
        rows
    }

    fn one_row(kind: Kind, list: &Value, name: &str, single: Option<&Value>) -> Vec<Row> {
        let answer = match single {
            Some(single) => single.clone(),
            None => pick(kind, list, name).unwrap(),
        };
        let mut rows = objects(kind, &answer, Some(name), false);
        if kind == Kind::Tenants {
            rows[0].listed = list["data"][name].clone();
        }
        rows
    }

    /// Every cell of every table, list and one object, normal and wide, comes from the
    /// object: nothing is `-` where the object has the field, and the NAME is the object's.
    #[test]
    fn every_kinds_table_reads_the_api_s_own_shapes() {
        for (kind, list, name, single) in answers() {
            for wide in [false, true] {
                let listed = listed_rows(kind, &list, single.as_ref(), false);
                let one = one_row(kind, &list, name, single.as_ref());
                for (form, rows) in [("list", &listed), ("one", &one)] {
                    let cells = matrix(kind, rows, wide, false);
                    assert_eq!(cells.len(), 2, "{kind:?} {form}: {cells:?}");
                    assert_eq!(cells[0][0], "NAME");
                    assert_eq!(cells[1][0], name, "{kind:?} {form} wide={wide}: {cells:?}");
                    for (header, value) in cells[0].iter().zip(&cells[1]) {
                        assert_ne!(
                            value, "-",
                            "{kind:?} {form} wide={wide}: {header} is empty in {cells:?}"
                        );
                    }
                }
                assert_eq!(
                    matrix(kind, &listed, wide, false),
                    matrix(kind, &one, wide, false),
                    "{kind:?}: a list and its one object show the same row"
                );
                let names: Vec<String> = objects(kind, &list, None, false)
                    .into_iter()
                    .map(|r| r.name)
                    .collect();
                assert_eq!(names, [name], "{kind:?}: -o name");
            }
        }
    }

    /// The cells say what the objects hold (the demo's service: RUNNING revision 1 on
    /// local-exec, two of two ready).
    #[test]
    fn table_cells_hold_the_objects_values() {
        let answers = answers();
        let find = |kind: Kind| answers.iter().find(|a| a.0 == kind).unwrap();
        let row = |kind: Kind, wide: bool| -> BTreeMap<String, String> {
            let (kind, list, _, single) = find(kind);
            let cells = matrix(
                *kind,
                &listed_rows(*kind, list, single.as_ref(), false),
                wide,
                false,
            );
            cells[0].iter().cloned().zip(cells[1].iter().cloned()).collect()
        };
        let services = row(Kind::Services, true);
        assert_eq!(services["NAME"], "greeter");
        assert_eq!(services["PHASE"], "RUNNING");
        assert_eq!(services["CLUSTER"], "local-exec");
        assert_eq!(services["REVISION"], "1");
        assert_eq!(services["READY"], "2/2");
        assert_eq!(services["ENVIRONMENT"], "main/prod");
        assert_eq!(services["CONVERGED"], "true");
        let clusters = row(Kind::Clusters, true);
        assert_eq!(clusters["STATE"], "ONLINE");
        assert_eq!(clusters["ENDPOINT"], "http://127.0.0.1:7701");
        assert_eq!(clusters["RUNNING"], "4");
        assert_eq!(clusters["LABELS"], "kind=exec");
        let tenants = row(Kind::Tenants, true);
        assert_eq!(tenants["ROLE"], "owner");
        assert_eq!(tenants["ACCOUNTS"], "main");
        assert_eq!(tenants["USERS"], "1");
        assert_eq!(row(Kind::Environments, false)["USAGE"], "vcpu=20/8000m");
        assert_eq!(row(Kind::Accounts, true)["IAAS"], "sim");
        let resources = row(Kind::Resources, true);
        assert!(resources["EXPIRES"].starts_with("2023-11-14T"), "{resources:?}");
        assert_eq!(resources["OWNER"], "me");
        assert_eq!(row(Kind::Pools, true)["NAMES"], "r0,r1");
        assert_eq!(row(Kind::Leases, false)["HOLDER"], "me");
        assert_eq!(row(Kind::Members, false)["ROLE"], "leader");
        let revisions = row(Kind::Revisions, false);
        assert_eq!(
            (revisions["NAME"].as_str(), revisions["TYPE"].as_str()),
            ("3", "ROLLBACK")
        );
        assert_eq!(
            (revisions["PREVIOUS"].as_str(), revisions["ACCEPTED"].as_str()),
            ("2", "true")
        );
    }

    /// `-A`: a TENANT column first (NAMESPACE for leases), from the cross-tenant cluster list
    /// and from the per-tenant lists `drover get` gathers for services and accounts.
    #[test]
    fn across_tenants_tables_lead_with_the_tenant() {
        let mut acme = cluster_view();
        acme.tenant = "acme".into();
        acme.name = "edge".into();
        let all = value(ok(vec![cluster_view(), acme]));
        let cells = matrix(
            Kind::Clusters,
            &objects(Kind::Clusters, &all, None, true),
            false,
            true,
        );
        assert_eq!(cells[0][..3], ["TENANT", "NAME", "STATE"]);
        assert_eq!(cells[1][..2], ["operator", "local-exec"]);
        assert_eq!(cells[2][..2], ["acme", "edge"]);
        let services = json!({"data": {"demo": ["greeter"], "acme": ["web", "api"]}, "events": []});
        let full = value(ok(ServiceView::Full(Box::new(service_full()))));
        let rows = listed_rows(Kind::Services, &services, Some(&full), true);
        let cells = matrix(Kind::Services, &rows, false, true);
        let firsts: Vec<(&str, &str)> = cells[1..]
            .iter()
            .map(|c| (c[0].as_str(), c[1].as_str()))
            .collect();
        assert_eq!(firsts, [("acme", "web"), ("acme", "api"), ("demo", "greeter")]);
        assert_eq!(cells[3][2..], ["RUNNING", "local-exec", "1", "2/2"]);
        let leases = value(drover_api::kube::wire::kube_list(
            ObjectKind::CoordinationLease,
            &[lease(
                ObjectKind::CoordinationLease,
                LeaseSpec::Coordination(Default::default()),
            )],
            1,
        ));
        let cells = matrix(
            Kind::Leases,
            &objects(Kind::Leases, &leases, None, true),
            false,
            true,
        );
        assert_eq!(cells[0][..2], ["NAMESPACE", "NAME"]);
        assert_eq!(cells[1][..2], ["ns", "l1"]);
        // Tenants are not in a tenant: -A lists them all, without a TENANT column.
        assert_eq!(matrix(Kind::Tenants, &[], false, true)[0], ["NAME", "ROLE"]);
    }

    #[test]
    fn a_tenant_list_s_entries_are_names_with_roles_not_objects() {
        let tenants = value(ok(BTreeMap::from([
            ("acme".to_string(), "owner".to_string()),
            ("demo".to_string(), "none".to_string()),
        ])));
        let printed = table(
            Kind::Tenants,
            &objects(Kind::Tenants, &tenants, None, false),
            false,
            false,
        );
        assert_eq!(printed, "NAME  ROLE\nacme  owner\ndemo  none", "{printed}");
    }
}
