//! What an instance may run: the one set of rules the platform checks before it commits a
//! pinned set or a service's revision and the agent checks again before it accepts a desired
//! set, so that nothing the platform accepts is refused by an agent for its spec. Pure.
//!
//! The rules: a program named first, no NUL in arguments or the environment; environment names
//! non-empty without `=`, none the agent sets itself ([`INSTANCE_ID_ENV`]); a probe on a port
//! other than 0 and, over HTTP, a plain path; at most [`MAX_PROGRAM_BYTES`] of arguments and
//! environment an instance; at most [`MAX_SET_INSTANCES`] instances a set, each id once. What
//! only an agent knows (its capacity, the sets it already holds) it checks alone.
//!
//! A desired set travels to the agent as one JSON body, which the agent limits to 64 MiB: what
//! one revision or pinned set puts in it is held to [`MAX_SET_BYTES`], so that a rollout, which
//! keeps old instances beside the new ones, stays well within that limit.

use std::collections::{BTreeMap, BTreeSet};

use super::agent_api::{ExecSpec, InstanceId, InstanceSpec, Probe, Resources, MAX_ID_LEN, MAX_SET_INSTANCES};
use super::pod::check_pod;

/// The environment variable the agent sets itself: an instance's id.
pub const INSTANCE_ID_ENV: &str = "DROVER_INSTANCE_ID";

/// Environment variables no spec may set (the agent sets them).
pub const RESERVED_ENV: &[&str] = &[INSTANCE_ID_ENV];

/// Most bytes of arguments and environment (names and values) of one instance.
pub const MAX_PROGRAM_BYTES: usize = 64 * 1024;

/// Most files an instance's spec may carry.
pub const MAX_FILES: usize = 256;

/// Most bytes of the files (paths and contents) an instance's spec may carry.
pub const MAX_FILES_BYTES: usize = 1024 * 1024;

/// Longest path of such a file.
pub const MAX_FILE_PATH_LEN: usize = 255;

/// Longest HTTP probe path.
pub const MAX_PROBE_PATH_LEN: usize = 1024;

/// Most bytes (as JSON) the instances of one revision or pinned set may put in a desired set,
/// counting a rollout's surge: a quarter of the agent's 64 MiB body limit, so that old and new
/// instances side by side stay within it.
pub const MAX_SET_BYTES: usize = 16 * 1024 * 1024;

pub use super::spec_error::SpecError;

/// Checks what an instance runs: `exec` and `env`. Fields are named from the instance
/// (`exec.argv`, `env`, `exec.probe.http.path`).
pub fn check_program(exec: &ExecSpec, env: &BTreeMap<String, String>) -> Result<(), SpecError> {
    if let Some(pod) = &exec.pod {
        if !exec.argv.is_empty() || !exec.files.is_empty() || exec.probe.is_some() {
            return Err(SpecError::new(
                "exec",
                "a pod's instance names no argv, files or probe of its own (its containers do)",
            ));
        }
        check_env(env)?;
        return check_pod(pod);
    }
    let Some(program) = exec.argv.first() else {
        return Err(SpecError::new("exec.argv", "must name a program"));
    };
    if program.is_empty() {
        return Err(SpecError::new("exec.argv[0]", "the program must not be empty"));
    }
    if let Some(at) = exec.argv.iter().position(|arg| arg.contains('\0')) {
        return Err(SpecError::new(
            format!("exec.argv[{at}]"),
            "must not hold a NUL byte",
        ));
    }
    check_env(env)?;
    check_probe(&exec.probe)?;
    check_files(&exec.files)?;
    let bytes = program_bytes(exec, env);
    if bytes > MAX_PROGRAM_BYTES {
        return Err(SpecError::new(
            "exec",
            format!("argv and env hold {bytes} bytes; at most {MAX_PROGRAM_BYTES}"),
        ));
    }
    Ok(())
}

/// Checks an instance's environment: names non-empty without `=` or NUL, none the agent sets.
fn check_env(env: &BTreeMap<String, String>) -> Result<(), SpecError> {
    for (key, value) in env {
        if key.is_empty() || key.contains(['=', '\0']) {
            return Err(SpecError::new(
                "env",
                format!("{key:?} is not a variable name: it must be non-empty, without '=' or NUL"),
            ));
        }
        if RESERVED_ENV.contains(&key.as_str()) {
            return Err(SpecError::new("env", format!("{key} is set by the agent")));
        }
        if value.contains('\0') {
            return Err(SpecError::new(format!("env.{key}"), "must not hold a NUL byte"));
        }
    }
    Ok(())
}

/// Checks a program's readiness probe.
fn check_probe(probe: &Option<Probe>) -> Result<(), SpecError> {
    match probe {
        Some(Probe::Http { port, path }) => {
            if *port == 0 {
                return Err(SpecError::new("exec.probe.http.port", "must not be 0"));
            }
            let plain = path.starts_with('/')
                && path.len() <= MAX_PROBE_PATH_LEN
                && path.bytes().all(|b| b.is_ascii_graphic());
            if !plain {
                return Err(SpecError::new(
                    "exec.probe.http.path",
                    format!(
                        "a path starting with '/', at most {MAX_PROBE_PATH_LEN} visible ASCII characters"
                    ),
                ));
            }
        }
        Some(Probe::Tcp { port }) if *port == 0 => {
            return Err(SpecError::new("exec.probe.tcp.port", "must not be 0"));
        }
        Some(Probe::Tcp { .. }) | None => {}
    }
    Ok(())
}

/// Checks the files an instance carries: at most [`MAX_FILES`] of them and [`MAX_FILES_BYTES`]
/// in all; each path relative and plain (no `.`, `..` or empty component, no backslash or NUL),
/// so that it can only name a file inside the instance's working directory; no path also a
/// directory of another; no NUL in a content.
pub fn check_files(files: &BTreeMap<String, String>) -> Result<(), SpecError> {
    if files.len() > MAX_FILES {
        return Err(SpecError::new(
            "exec.files",
            format!("{} files; at most {MAX_FILES}", files.len()),
        ));
    }
    let mut bytes = 0usize;
    for (path, content) in files {
        let plain = !path.is_empty()
            && path.len() <= MAX_FILE_PATH_LEN
            && !path.contains(['\\', '\0'])
            && path
                .split('/')
                .all(|part| !part.is_empty() && part != "." && part != "..");
        if !plain {
            return Err(SpecError::new(
                "exec.files",
                format!(
                    "{path:?} is not a plain relative path (1 to {MAX_FILE_PATH_LEN} characters, no '.', '..' or empty part, no backslash or NUL)"
                ),
            ));
        }
        if content.contains('\0') {
            return Err(SpecError::new(
                format!("exec.files.{path}"),
                "must not hold a NUL byte (files are text)",
            ));
        }
        // A file that is also another's directory could not be written.
        let directory = format!("{path}/");
        if files
            .range(directory.clone()..)
            .next()
            .is_some_and(|(other, _)| other.starts_with(&directory))
        {
            return Err(SpecError::new(
                "exec.files",
                format!("{path:?} is both a file and a directory"),
            ));
        }
        bytes = bytes.saturating_add(path.len()).saturating_add(content.len());
    }
    if bytes > MAX_FILES_BYTES {
        return Err(SpecError::new(
            "exec.files",
            format!("{bytes} bytes of files; at most {MAX_FILES_BYTES}"),
        ));
    }
    Ok(())
}

/// Bytes of arguments and environment.
fn program_bytes(exec: &ExecSpec, env: &BTreeMap<String, String>) -> usize {
    let argv: usize = exec.argv.iter().map(String::len).sum();
    let env: usize = env.iter().map(|(k, v)| k.len() + v.len()).sum();
    argv.saturating_add(env)
}

/// Checks a whole desired set as the agent receives it: at most [`MAX_SET_INSTANCES`]
/// instances, each id once, each program as [`check_program`] says. Fields are named from the
/// set (`instances`, `instances[3].env`).
pub fn check_set(instances: &[InstanceSpec]) -> Result<(), SpecError> {
    if instances.len() > MAX_SET_INSTANCES {
        return Err(SpecError::new(
            "instances",
            format!(
                "{} instances, but a set holds at most {MAX_SET_INSTANCES}",
                instances.len()
            ),
        ));
    }
    let mut seen = BTreeSet::new();
    for (at, spec) in instances.iter().enumerate() {
        if !seen.insert(&spec.id) {
            return Err(SpecError::new(
                format!("instances[{at}].id"),
                format!("{} appears twice", spec.id),
            ));
        }
        check_program(&spec.exec, &spec.env).map_err(|e| e.under(&format!("instances[{at}].")))?;
    }
    Ok(())
}

/// The most bytes one instance running `exec` with `env` takes in a desired set's JSON (with
/// the longest id).
pub fn instance_bytes(exec: &ExecSpec, env: &BTreeMap<String, String>, resources: Resources) -> usize {
    let id = InstanceId::parse(&"a".repeat(MAX_ID_LEN));
    let Ok(id) = id else {
        return usize::MAX;
    };
    let spec = InstanceSpec {
        id,
        exec: exec.clone(),
        resources,
        env: env.clone(),
    };
    // A comma between instances.
    serde_json::to_vec(&spec).map_or(usize::MAX, |json| json.len().saturating_add(1))
}

/// Checks that `copies` instances of `each` bytes ([`instance_bytes`]) fit in
/// [`MAX_SET_BYTES`]; `field` names what sets the count.
pub fn check_set_bytes(field: &str, copies: u64, each: usize) -> Result<(), SpecError> {
    let bytes = u64::try_from(each).unwrap_or(u64::MAX).saturating_mul(copies);
    if bytes > MAX_SET_BYTES as u64 {
        return Err(SpecError::new(
            field,
            format!(
                "{copies} instances of {each} bytes each make a desired set of {bytes} bytes; at most {MAX_SET_BYTES}: run fewer instances or pass less in argv and env"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec(argv: &[&str]) -> ExecSpec {
        ExecSpec {
            argv: argv.iter().map(|a| a.to_string()).collect(),
            probe: None,
            files: Default::default(),
            pod: None,
        }
    }

    fn refusal(exec: &ExecSpec, env: &[(&str, &str)]) -> Option<(String, String)> {
        let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        check_program(exec, &env).err().map(|e| (e.field, e.reason))
    }

    #[test]
    fn program_rules_name_the_field() {
        let fine = exec(&["web", "--port", "8080"]);
        assert_eq!(refusal(&fine, &[("MODE", "prod"), ("PATH", "/bin")]), None);
        let probe = |probe| ExecSpec {
            probe: Some(probe),
            ..fine.clone()
        };
        let long = "x".repeat(MAX_PROGRAM_BYTES);
        // (case, exec, env, field, words in the reason)
        type Row<'a> = (&'a str, ExecSpec, Vec<(&'a str, &'a str)>, &'a str, &'a str);
        let table: Vec<Row<'_>> = vec![
            ("no argv", exec(&[]), vec![], "exec.argv", "must name a program"),
            (
                "empty program",
                exec(&[""]),
                vec![],
                "exec.argv[0]",
                "must not be empty",
            ),
            ("NUL arg", exec(&["a", "b\0"]), vec![], "exec.argv[1]", "NUL"),
            (
                "empty name",
                fine.clone(),
                vec![("", "v")],
                "env",
                "not a variable name",
            ),
            (
                "= in name",
                fine.clone(),
                vec![("A=B", "v")],
                "env",
                "not a variable name",
            ),
            (
                "NUL in name",
                fine.clone(),
                vec![("A\0", "v")],
                "env",
                "not a variable name",
            ),
            (
                "the agent's variable",
                fine.clone(),
                vec![(INSTANCE_ID_ENV, "x")],
                "env",
                "DROVER_INSTANCE_ID is set by the agent",
            ),
            ("NUL in value", fine.clone(), vec![("A", "\0")], "env.A", "NUL"),
            (
                "http port 0",
                probe(Probe::Http {
                    port: 0,
                    path: "/".into(),
                }),
                vec![],
                "exec.probe.http.port",
                "must not be 0",
            ),
            (
                "tcp port 0",
                probe(Probe::Tcp { port: 0 }),
                vec![],
                "exec.probe.tcp.port",
                "must not be 0",
            ),
            (
                "header injection",
                probe(Probe::Http {
                    port: 80,
                    path: "/x\r\nHost: y".into(),
                }),
                vec![],
                "exec.probe.http.path",
                "visible ASCII",
            ),
            (
                "relative path",
                probe(Probe::Http {
                    port: 80,
                    path: "x".into(),
                }),
                vec![],
                "exec.probe.http.path",
                "starting with '/'",
            ),
            (
                "too large",
                fine.clone(),
                vec![("BIG", &long)],
                "exec",
                "at most 65536",
            ),
        ];
        for (case, exec, env, field, words) in table {
            let (got, reason) = refusal(&exec, &env).unwrap_or_else(|| panic!("{case}: accepted"));
            assert_eq!(got, field, "{case}");
            assert!(reason.contains(words), "{case}: {reason}");
        }
        assert_eq!(refusal(&probe(Probe::Tcp { port: 9 }), &[]), None);
    }

    #[test]
    fn sets_are_bounded_and_ids_unique() {
        let spec = |id: &str| InstanceSpec {
            id: InstanceId::parse(id).unwrap(),
            exec: exec(&["x"]),
            resources: Resources::default(),
            env: BTreeMap::new(),
        };
        assert_eq!(check_set(&[spec("a"), spec("b")]), Ok(()));
        let twice = check_set(&[spec("a"), spec("a")]).unwrap_err();
        assert_eq!(twice.to_string(), "instances[1].id: a appears twice");
        let mut reserved = spec("b");
        reserved.env.insert(INSTANCE_ID_ENV.into(), "x".into());
        assert_eq!(
            check_set(&[spec("a"), reserved]).unwrap_err().to_string(),
            "instances[1].env: DROVER_INSTANCE_ID is set by the agent"
        );
        let many: Vec<InstanceSpec> = (0..=MAX_SET_INSTANCES).map(|i| spec(&format!("i{i}"))).collect();
        assert_eq!(check_set(&many).unwrap_err().field, "instances");
    }

    /// A pinned set is checked by the same rules before it is committed.
    #[test]
    fn a_pinned_set_the_agent_would_refuse_is_refused() {
        use crate::cluster::agent_api::SetName;
        use crate::cluster::SetSpec;
        let set = SetName::parse("web").unwrap();
        let pinned = |count, probe, env: &[(&str, &str)]| SetSpec {
            count,
            exec: ExecSpec {
                probe,
                ..exec(&["sleep", "100"])
            },
            resources: Resources::default(),
            env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        };
        let refusal = |spec: &SetSpec| {
            crate::platform::validate_set(&set, spec)
                .err()
                .map(|e| e.to_string())
        };
        assert_eq!(refusal(&pinned(3, None, &[("MODE", "x")])), None);
        assert_eq!(
            refusal(&pinned(1, None, &[(INSTANCE_ID_ENV, "x")])).as_deref(),
            Some("env: DROVER_INSTANCE_ID is set by the agent")
        );
        assert_eq!(
            refusal(&pinned(1, Some(Probe::Tcp { port: 0 }), &[])).as_deref(),
            Some("exec.probe.tcp.port: must not be 0")
        );
        let blob = "x".repeat(60 * 1024);
        let heavy = refusal(&pinned(1_000, None, &[("BLOB", &blob)])).unwrap_or_default();
        assert!(heavy.starts_with("count: 1000 instances of"), "{heavy}");
    }

    #[test]
    fn set_bytes_count_every_copy_as_json() {
        let small = instance_bytes(&exec(&["x"]), &BTreeMap::new(), Resources::default());
        assert!(small > MAX_ID_LEN && small < MAX_ID_LEN + 200, "{small}");
        let env = BTreeMap::from([("A".to_string(), "\u{1}".repeat(100))]);
        // A control character is six bytes of JSON.
        let escaped = instance_bytes(&exec(&["x"]), &env, Resources::default());
        assert!(escaped >= small + 600, "{escaped}");
        assert_eq!(check_set_bytes("count", 10_000, small), Ok(()));
        let big = instance_bytes(
            &exec(&["x"]),
            &BTreeMap::from([("A".to_string(), "v".repeat(60 * 1024))]),
            Resources::default(),
        );
        let refused = check_set_bytes("count", 1_000, big).unwrap_err();
        assert_eq!(refused.field, "count");
        assert!(refused.reason.contains("at most 16777216"), "{refused}");
    }
    #[test]
    fn files_must_stay_inside_the_working_directory() {
        let with = |files: &[(&str, &str)]| ExecSpec {
            files: files
                .iter()
                .map(|(p, c)| (p.to_string(), c.to_string()))
                .collect(),
            ..exec(&["sh", "main.sh"])
        };
        assert_eq!(
            refusal(&with(&[("main.sh", "echo hi"), ("lib/a.sh", "")]), &[]),
            None
        );
        let big = "x".repeat(MAX_FILES_BYTES);
        let long = "p".repeat(MAX_FILE_PATH_LEN + 1);
        // (files, field, words in the reason)
        type Row<'a> = (Vec<(&'a str, &'a str)>, &'a str, &'a str);
        let table: Vec<Row<'_>> = vec![
            (vec![("../x", "")], "exec.files", "plain relative path"),
            (vec![("/etc/passwd", "")], "exec.files", "plain relative path"),
            (vec![("a/./b", "")], "exec.files", "plain relative path"),
            (vec![("a//b", "")], "exec.files", "plain relative path"),
            (vec![("a\\b", "")], "exec.files", "plain relative path"),
            (vec![("", "")], "exec.files", "plain relative path"),
            (vec![(long.as_str(), "")], "exec.files", "plain relative path"),
            (vec![("a", "x\0")], "exec.files.a", "NUL"),
            (
                vec![("a", ""), ("a/b", "")],
                "exec.files",
                "both a file and a directory",
            ),
            (vec![("a", big.as_str())], "exec.files", "bytes of files"),
        ];
        for (files, field, says) in table {
            let (got, reason) = refusal(&with(&files), &[]).unwrap_or_default();
            assert_eq!(got, field, "{files:?}: {reason}");
            assert!(reason.contains(says), "{files:?}: {reason}");
        }
        let many: BTreeMap<String, String> = (0..=MAX_FILES)
            .map(|i| (format!("f{i}"), String::new()))
            .collect();
        let spec = ExecSpec {
            files: many,
            ..exec(&["x"])
        };
        assert!(refusal(&spec, &[]).is_some_and(|(_, reason)| reason.contains("files; at most")));
    }
}
