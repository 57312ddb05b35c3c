//! How a confined instance enters its cgroup before its program runs. The agent starts its
//! own binary again (`/proc/self/exe`) as `drover agent-enter-cgroup <count> <cgroup.procs
//! files…> <program> <args…>`, with exactly the instance's environment; that process writes `0`
//! into each `cgroup.procs` file (moving itself) and then `exec`s the program: same pid, same
//! process group, and the environment handed on untouched — a shell in between would add
//! `PWD` (and, as bash, `SHLVL` and `_`). Drover forbids `unsafe`, which a `pre_exec` hook
//! writing the cgroup in the forked child would need. So a binary that runs an `exec` agent
//! calls [`run_if_asked`] first thing in `main`, as `drover` does.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::ExitCode;

/// The hidden first argument that makes the `drover` binary this helper.
pub const ENTER_CGROUP: &str = "agent-enter-cgroup";

/// Where the running binary is: the helper is the agent's own binary, even if the file it was
/// started from has been replaced since (an upgrade in place).
pub const SELF_EXE: &str = "/proc/self/exe";

/// Runs the helper when the process was started as one (`argv[1]` is [`ENTER_CGROUP`]): it
/// never returns when the program starts, and answers the exit code when it cannot (126 when
/// the cgroup cannot be entered, 127 when the program cannot be run, as a shell would).
/// `None` for every other start of the binary.
pub fn run_if_asked() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != ENTER_CGROUP {
        return None;
    }
    Some(enter_and_exec(args.collect()))
}

/// Enters the cgroups and runs the program, as [`run_if_asked`] says.
fn enter_and_exec(args: Vec<OsString>) -> ExitCode {
    let Some(plan) = Plan::parse(args) else {
        fail("usage: drover agent-enter-cgroup <count> <cgroup.procs>... <program> [args...]");
        return ExitCode::from(126);
    };
    for file in &plan.files {
        if let Err(e) = std::fs::write(file, "0") {
            fail(&format!(
                "cannot enter the cgroup ({}): {e}",
                file.to_string_lossy()
            ));
            return ExitCode::from(126);
        }
    }
    // `exec` hands on this process's environment as it is (nothing was added to it) and
    // returns only when the program could not be run.
    let e = std::process::Command::new(&plan.program).args(&plan.args).exec();
    fail(&format!("cannot run {}: {e}", plan.program.to_string_lossy()));
    ExitCode::from(if e.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    })
}

/// Says why on stderr (the instance's log).
fn fail(message: &str) {
    let _ = writeln!(std::io::stderr(), "drover agent: {message}");
}

/// The helper's arguments.
#[derive(Debug, PartialEq, Eq)]
struct Plan {
    files: Vec<OsString>,
    program: OsString,
    args: Vec<OsString>,
}

impl Plan {
    /// `<count> <files…> <program> <args…>`; `None` when they do not say that.
    fn parse(args: Vec<OsString>) -> Option<Plan> {
        let mut args = args.into_iter();
        let count: usize = args.next()?.to_str()?.parse().ok()?;
        let files: Vec<OsString> = args.by_ref().take(count).collect();
        if files.len() != count {
            return None;
        }
        let program = args.next()?;
        Some(Plan {
            files,
            program,
            args: args.collect(),
        })
    }
}

/// The helper's arguments after [`ENTER_CGROUP`], for `files` and `argv`.
pub fn arguments<'a>(
    files: &'a [std::path::PathBuf],
    argv: &'a [String],
) -> impl Iterator<Item = OsString> + 'a {
    std::iter::once(OsString::from(ENTER_CGROUP))
        .chain(std::iter::once(OsString::from(files.len().to_string())))
        .chain(files.iter().map(|f| f.as_os_str().to_owned()))
        .chain(argv.iter().map(OsString::from))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(items: &[&str]) -> Vec<OsString> {
        items.iter().map(OsString::from).collect()
    }

    #[test]
    fn arguments_read_back_as_written() {
        let files = vec![
            "/sys/fs/cgroup/memory/x/cgroup.procs".into(),
            "/b/cgroup.procs".into(),
        ];
        let argv = vec!["sh".to_string(), "-c".into(), "echo $1".into(), "5".into()];
        let mut written: Vec<OsString> = arguments(&files, &argv).collect();
        assert_eq!(written.remove(0), ENTER_CGROUP);
        assert_eq!(
            Plan::parse(written),
            Some(Plan {
                files: files
                    .iter()
                    .map(|f: &std::path::PathBuf| f.as_os_str().to_owned())
                    .collect(),
                program: "sh".into(),
                args: os(&["-c", "echo $1", "5"]),
            })
        );
    }

    #[test]
    fn arguments_that_do_not_say_it_are_refused() {
        for bad in [
            &[][..],
            &["x", "sleep"],
            &["2", "/a"],
            &["1", "/a"],
            &["-1", "sleep"],
        ] {
            assert_eq!(Plan::parse(os(bad)), None, "{bad:?}");
        }
        assert_eq!(
            Plan::parse(os(&["0", "sleep", "1"])),
            Some(Plan {
                files: Vec::new(),
                program: "sleep".into(),
                args: os(&["1"]),
            })
        );
    }
}
