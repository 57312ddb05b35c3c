//! Container image references as Docker and the CRI read them (`[host[:port]/]path[:tag][@digest]`):
//! which registry a reference names (checked against the operator's policy before the runtime
//! is asked to pull it), and whether it can be pulled at all (Kubernetes' `InvalidImageName`).
//! Pure.
//!
//! The first path component is a registry host when it holds a `.` or a `:`, or is `localhost`;
//! else the reference is on Docker Hub (`docker.io`), under `library/` when it has one
//! component. A reference without tag or digest means `:latest`.

use std::fmt;

/// Longest reference accepted (the distribution spec's name limit plus tag and digest).
pub const MAX_IMAGE_REF_LEN: usize = 512;

/// The registry a reference without a host names.
pub const DEFAULT_REGISTRY: &str = "docker.io";

/// A parsed image reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    /// Registry host, with its port when it has one (`127.0.0.1:5000`, `docker.io`).
    pub registry: String,
    /// Repository path (`library/busybox`, `team/web`).
    pub repository: String,
    /// Tag, when given (`latest` is not filled in: see [`ImageRef::tag_or_latest`]).
    pub tag: Option<String>,
    /// Digest, when given (`sha256:…`).
    pub digest: Option<String>,
}

/// Why a reference cannot be pulled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reference:?} is not an image reference: {reason}")]
pub struct BadImageRef {
    /// The reference as given.
    pub reference: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl ImageRef {
    /// Parses `text`.
    pub fn parse(text: &str) -> Result<Self, BadImageRef> {
        let bad = |reason| BadImageRef {
            reference: text.to_string(),
            reason,
        };
        if text.is_empty() {
            return Err(bad("it is empty"));
        }
        if text.len() > MAX_IMAGE_REF_LEN {
            return Err(bad("it is longer than 512 characters"));
        }
        let (rest, digest) = match text.split_once('@') {
            Some((rest, digest)) => {
                check_digest(digest).map_err(bad)?;
                (rest, Some(digest.to_string()))
            }
            None => (text, None),
        };
        // A tag is after the last ':' that follows the last '/'.
        let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match rest[last_slash..].rfind(':') {
            Some(colon) => {
                let at = last_slash + colon;
                (&rest[..at], Some(&rest[at + 1..]))
            }
            None => (rest, None),
        };
        if let Some(tag) = tag {
            check_tag(tag).map_err(bad)?;
        }
        let (registry, repository) = match name.split_once('/') {
            Some((first, path)) if first.contains(['.', ':']) || first == "localhost" => {
                check_host(first).map_err(bad)?;
                (first.to_string(), path.to_string())
            }
            Some(_) => (DEFAULT_REGISTRY.to_string(), name.to_string()),
            None => (DEFAULT_REGISTRY.to_string(), format!("library/{name}")),
        };
        check_repository(&repository).map_err(bad)?;
        Ok(Self {
            registry,
            repository,
            tag: tag.map(str::to_string),
            digest,
        })
    }

    /// The tag, `latest` when none was given.
    pub fn tag_or_latest(&self) -> &str {
        self.tag.as_deref().unwrap_or("latest")
    }

    /// Whether the reference pins a digest.
    pub fn is_pinned(&self) -> bool {
        self.digest.is_some()
    }

    /// The registry's host without its port.
    pub fn host(&self) -> &str {
        match self.registry.rsplit_once(':') {
            Some((host, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => host,
            _ => &self.registry,
        }
    }
}

impl fmt::Display for ImageRef {
    /// The fully qualified reference (`docker.io/library/busybox:latest`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        } else if self.digest.is_none() {
            f.write_str(":latest")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

fn check_digest(digest: &str) -> Result<(), &'static str> {
    let Some((algorithm, hex)) = digest.split_once(':') else {
        return Err("a digest is algorithm:hex (sha256:…)");
    };
    let ok = match algorithm {
        "sha256" => hex.len() == 64,
        "sha512" => hex.len() == 128,
        _ => false,
    } && hex
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if ok {
        Ok(())
    } else {
        Err("a digest is sha256: and 64 lower-case hex digits (or sha512: and 128)")
    }
}

fn check_tag(tag: &str) -> Result<(), &'static str> {
    let ok = !tag.is_empty()
        && tag.len() <= 128
        && tag.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        && tag
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if ok {
        Ok(())
    } else {
        Err("a tag is 1-128 letters, digits, '_', '.' or '-', not starting with '.' or '-'")
    }
}

fn check_host(host: &str) -> Result<(), &'static str> {
    let (name, port) = match host.rsplit_once(':') {
        Some((name, port)) => (name, Some(port)),
        None => (host, None),
    };
    if let Some(port) = port {
        if port.parse::<u16>().map_or(true, |p| p == 0) {
            return Err("a registry's port is a number from 1 to 65535");
        }
    }
    let ok = !name.is_empty()
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        });
    if ok {
        Ok(())
    } else {
        Err("a registry host is a domain name or an IPv4 address, with an optional :port")
    }
}

fn check_repository(path: &str) -> Result<(), &'static str> {
    let component_ok = |c: &str| {
        !c.is_empty()
            && c.starts_with(|ch: char| ch.is_ascii_lowercase() || ch.is_ascii_digit())
            && c.ends_with(|ch: char| ch.is_ascii_lowercase() || ch.is_ascii_digit())
            && c.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-'))
    };
    if path.len() <= 255 && path.split('/').all(component_ok) {
        Ok(())
    } else {
        Err("a repository is lower-case letters, digits and separators ('.', '_', '-', '/')")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn references_name_their_registry_repository_tag_and_digest() {
        let pinned = format!("127.0.0.1:5000/web@{DIGEST}");
        // (reference, registry, repository, tag, digest)
        type Row<'a> = (&'a str, &'a str, &'a str, Option<&'a str>, Option<&'a str>);
        let cases: [Row; 8] = [
            ("busybox", "docker.io", "library/busybox", None, None),
            ("busybox:1.36", "docker.io", "library/busybox", Some("1.36"), None),
            ("team/web", "docker.io", "team/web", None, None),
            ("localhost/web:v2", "localhost", "web", Some("v2"), None),
            (
                "127.0.0.1:5000/team/web:v1",
                "127.0.0.1:5000",
                "team/web",
                Some("v1"),
                None,
            ),
            (
                "registry.example:443/a/b/c",
                "registry.example:443",
                "a/b/c",
                None,
                None,
            ),
            ("quay.io/x:y", "quay.io", "x", Some("y"), None),
            (&pinned, "127.0.0.1:5000", "web", None, Some(DIGEST)),
        ];
        for (text, registry, repository, tag, digest) in cases {
            let parsed = ImageRef::parse(text).unwrap();
            assert_eq!(parsed.registry, registry, "{text}");
            assert_eq!(parsed.repository, repository, "{text}");
            assert_eq!(parsed.tag.as_deref(), tag, "{text}");
            assert_eq!(parsed.digest.as_deref(), digest, "{text}");
        }
        assert_eq!(
            ImageRef::parse("busybox").unwrap().to_string(),
            "docker.io/library/busybox:latest"
        );
        assert_eq!(
            ImageRef::parse("127.0.0.1:5000/web:v1").unwrap().host(),
            "127.0.0.1"
        );
        assert_eq!(
            ImageRef::parse("localhost/web").unwrap().tag_or_latest(),
            "latest"
        );
    }

    #[test]
    fn references_that_cannot_be_pulled_are_refused() {
        for text in [
            "",
            "Busybox",
            "web:",
            "web:-x",
            "web@sha256:12",
            "web@md5:0123456789abcdef0123456789abcdef",
            "127.0.0.1:0/web",
            "127.0.0.1:99999/web",
            "-bad.example/web",
            "a//b",
            "web/",
            "we b",
            "../web",
        ] {
            assert!(ImageRef::parse(text).is_err(), "{text:?} was taken");
        }
        assert!(ImageRef::parse(&"a".repeat(600)).is_err());
    }
}
