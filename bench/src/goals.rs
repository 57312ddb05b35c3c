//! The write path's goals (docs/BENCHMARKS.md, "Goals"), judged from one `compare` run: each
//! with Drover's figure, etcd's, the ratio, the target and whether it is met.

use std::fmt::Write as _;

/// What one run measured that the goals are judged on; `None` where the run did not measure it.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// Writes per second at 64 clients: Drover, etcd's JSON gateway, etcd's gRPC client.
    pub writes_64: Option<(f64, f64, Option<f64>)>,
    /// Linearizable reads per second at 64 clients: Drover, etcd's gRPC client.
    pub reads_64: Option<(f64, Option<f64>)>,
    /// A single client's write p50 in ms through the leader and through a follower, and etcd's
    /// gRPC client's single-client put p50.
    pub single_p50: Option<(f64, f64, Option<f64>)>,
    /// Node CPU µs per acknowledged write at 64 clients: Drover's nodes, etcd's members.
    pub cpu_per_write_64: Option<(f64, f64)>,
}

/// One goal's verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The goal, as the issue states it.
    pub goal: &'static str,
    /// Drover's figure and etcd's, as text.
    pub figures: String,
    /// Drover / etcd (or etcd / Drover where lower is better, so that above 1 is better).
    pub ratio: f64,
    /// The ratio the goal asks for.
    pub target: f64,
}

impl Verdict {
    /// Whether the goal is met.
    pub fn met(&self) -> bool {
        self.ratio >= self.target
    }
}

/// The verdicts on every goal the run measured.
pub fn judge(measured: &Measured) -> Vec<Verdict> {
    let mut verdicts = Vec::new();
    if let Some((drover, gateway, grpc)) = measured.writes_64 {
        verdicts.push(Verdict {
            goal: "writes at 64 clients >= 2.5x etcd's JSON gateway",
            figures: format!("{drover:.0} / {gateway:.0} writes/s"),
            ratio: drover / gateway,
            target: 2.5,
        });
        if let Some(grpc) = grpc {
            verdicts.push(Verdict {
                goal: "writes at 64 clients >= 2x etcd's gRPC client",
                figures: format!("{drover:.0} / {grpc:.0} writes/s"),
                ratio: drover / grpc,
                target: 2.0,
            });
        }
    }
    if let Some((leader, follower, Some(etcd))) = measured.single_p50 {
        for (goal, drover) in [
            (
                "single-client write p50 through the leader <= etcd's (gRPC)",
                leader,
            ),
            (
                "single-client write p50 through a follower <= etcd's (gRPC)",
                follower,
            ),
        ] {
            verdicts.push(Verdict {
                goal,
                figures: format!("{drover:.2} / {etcd:.2} ms"),
                ratio: etcd / drover,
                target: 1.0,
            });
        }
    }
    if let Some((drover, Some(grpc))) = measured.reads_64 {
        verdicts.push(Verdict {
            goal: "linearizable reads at 64 clients >= 5x etcd's gRPC client",
            figures: format!("{drover:.0} / {grpc:.0} reads/s"),
            ratio: drover / grpc,
            target: 5.0,
        });
    }
    verdicts
}

/// The goals as a Markdown table, with the CPU per write beside them.
pub fn render(measured: &Measured) -> String {
    let mut out = String::from(
        "| goal | Drover / etcd | ratio (above 1: Drover better) | target | met |\n|---|---:|---:|---:|---|\n",
    );
    for verdict in judge(measured) {
        let _ = writeln!(
            out,
            "| {} | {} | {:.2} | {:.1} | {} |",
            verdict.goal,
            verdict.figures,
            verdict.ratio,
            verdict.target,
            if verdict.met() { "yes" } else { "**no**" }
        );
    }
    if let Some((drover, etcd)) = measured.cpu_per_write_64 {
        let _ = writeln!(
            out,
            "\nNode CPU per acknowledged write at 64 clients (the three processes' user and system \
             time over the measured window): Drover {drover:.0} µs, etcd {etcd:.0} µs (through its \
             gateway, whose CPU is inside the members)."
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_goal_is_judged_by_its_ratio_and_lower_latency_counts_as_better() {
        let measured = Measured {
            writes_64: Some((10_000.0, 4_000.0, Some(5_000.0))),
            reads_64: Some((49_000.0, Some(10_000.0))),
            single_p50: Some((0.9, 1.2, Some(1.0))),
            cpu_per_write_64: Some((120.0, 300.0)),
        };
        let verdicts = judge(&measured);
        let met: Vec<(f64, bool)> = verdicts
            .iter()
            .map(|v| ((v.ratio * 100.0).round() / 100.0, v.met()))
            .collect();
        assert_eq!(
            met,
            vec![
                (2.5, true),
                (2.0, true),
                (1.11, true),
                (0.83, false),
                (4.9, false)
            ]
        );
        let table = render(&measured);
        assert!(table.contains("| **no** |"), "{table}");
        assert!(table.contains("Drover 120 µs, etcd 300 µs"), "{table}");
    }

    #[test]
    fn goals_the_run_did_not_measure_are_left_out() {
        let measured = Measured {
            writes_64: Some((10_000.0, 4_000.0, None)),
            ..Measured::default()
        };
        assert_eq!(judge(&measured).len(), 1);
        assert!(judge(&Measured::default()).is_empty());
    }
}
