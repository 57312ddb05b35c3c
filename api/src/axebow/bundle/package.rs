//! The npm package a module is published as: `@<domain>/<module>` at the module's version, its
//! tarball (gzip'd ustar, every file under `package/`, as `npm pack` makes it) holding the
//! module's files and a `package.json` that carries, under `kumori`, what the marketplace lists
//! and answers about it (artifacts with kinds, schemas and roles; the target kind and
//! directory), so that neither needs the tarball again; and the document `PUT /<package>` takes
//! (npm's publish protocol: the version, its `dist` with SHA-1 and SHA-512 of the tarball, and the
//! tarball itself base64-encoded in `_attachments`).

use std::collections::BTreeMap;
use std::io::Write;

use base64::Engine;
use serde_json::{json, Value};
use sha1::Digest;

use super::module::{ArtifactKind, Module};

/// Everything the publish call needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Package {
    /// `@domain/module`.
    pub name: String,
    /// `major.minor.patch`.
    pub version: String,
    /// The gzip'd tarball.
    pub tarball: Vec<u8>,
    /// `package.json` as written into the tarball.
    pub manifest: Value,
}

/// The package name of `module`.
pub fn package_name(domain: &str, module: &str) -> String {
    format!("@{domain}/{module}")
}

/// The package of `module`, holding `files` (relative to the module's directory), tagged `tags`;
/// `public` when other tenants may list it.
pub fn package(
    module: &Module,
    files: &BTreeMap<&str, &[u8]>,
    tags: &[String],
    target_kind: ArtifactKind,
    target_dir: &str,
    public: bool,
) -> std::io::Result<Package> {
    let name = package_name(&module.domain, &module.module);
    let manifest = json!({
        "name": name,
        "version": module.version,
        "description": format!("Kumori module {} of domain {}", module.module, module.domain),
        "keywords": tags,
        "kumori": {
            "domain": module.domain,
            "module": module.module,
            "targetKind": target_kind,
            "targetDir": target_dir,
            "public": public,
            "artifacts": module.artifacts,
        },
    });
    let manifest_bytes = serde_json::to_vec_pretty(&manifest).map_err(std::io::Error::other)?;
    let mut entries: Vec<(String, &[u8])> = vec![("package/package.json".into(), manifest_bytes.as_slice())];
    for (path, bytes) in files {
        // The module's own package.json would shadow Drover's.
        if *path != "package.json" {
            entries.push((format!("package/{path}"), bytes));
        }
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    for (path, bytes) in entries {
        gz.write_all(&ustar_header(&path, bytes.len() as u64)?)?;
        gz.write_all(bytes)?;
        let pad = (512 - bytes.len() % 512) % 512;
        gz.write_all(&vec![0u8; pad])?;
    }
    gz.write_all(&[0u8; 1024])?;
    Ok(Package {
        name,
        version: module.version.clone(),
        tarball: gz.finish()?,
        manifest,
    })
}

/// A ustar header for a regular file `path` of `size` bytes (mode 0644, owner 0, npm's fixed
/// mtime of 1985-10-26, so the same files always make the same tarball).
fn ustar_header(path: &str, size: u64) -> std::io::Result<[u8; 512]> {
    let mut header = [0u8; 512];
    let (prefix, name) = split_path(path).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{path:?} is too long for a tarball"),
        )
    })?;
    header[..name.len()].copy_from_slice(name.as_bytes());
    let octal = |field: &mut [u8], value: u64| {
        let text = format!("{value:0width$o}", width = field.len() - 1);
        field[..text.len()].copy_from_slice(text.as_bytes());
    };
    octal(&mut header[100..108], 0o644);
    octal(&mut header[108..116], 0);
    octal(&mut header[116..124], 0);
    octal(&mut header[124..136], size);
    octal(&mut header[136..148], 499_162_500);
    header[156] = b'0';
    header[257..263].copy_from_slice(b"ustar\0");
    header[263..265].copy_from_slice(b"00");
    header[345..345 + prefix.len()].copy_from_slice(prefix.as_bytes());
    // The checksum is summed with its own field as spaces.
    header[148..156].copy_from_slice(b"        ");
    let sum: u64 = header.iter().map(|b| u64::from(*b)).sum();
    let text = format!("{sum:06o}\0 ");
    header[148..156].copy_from_slice(text.as_bytes());
    Ok(header)
}

/// `path` as ustar's prefix (at most 155 bytes) and name (at most 100), split at a `/`.
fn split_path(path: &str) -> Option<(&str, &str)> {
    if path.len() <= 100 {
        return Some(("", path));
    }
    path.match_indices('/')
        .map(|(at, _)| (&path[..at], &path[at + 1..]))
        .find(|(prefix, name)| prefix.len() <= 155 && name.len() <= 100 && !name.is_empty())
}

/// The body of `PUT <registry>/<package>` publishing `package`, its tarball served from
/// `endpoint` (registries rewrite the address when they answer; it must be absolute).
pub fn publish_document(package: &Package, endpoint: &str) -> Value {
    let shasum = hex(&sha1::Sha1::digest(&package.tarball));
    let integrity = format!(
        "sha512-{}",
        base64::engine::general_purpose::STANDARD.encode(sha2::Sha512::digest(&package.tarball))
    );
    let base = package.name.rsplit('/').next().unwrap_or(&package.name);
    let file = format!("{}-{}.tgz", package.name, package.version);
    let mut version = package.manifest.clone();
    version["_id"] = json!(format!("{}@{}", package.name, package.version));
    version["dist"] = json!({
        "shasum": shasum,
        "integrity": integrity,
        "tarball": format!("{}/{}/-/{base}-{}.tgz", endpoint.trim_end_matches('/'), package.name, package.version),
    });
    json!({
        "_id": package.name,
        "name": package.name,
        "description": package.manifest["description"],
        "dist-tags": {"latest": package.version},
        "versions": {package.version.clone(): version},
        "access": null,
        "_attachments": {file: {
            "content_type": "application/octet-stream",
            "data": base64::engine::general_purpose::STANDARD.encode(&package.tarball),
            "length": package.tarball.len(),
        }},
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::super::module::Artifact;
    use super::*;

    #[test]
    fn a_module_becomes_a_tarball_npm_reads_and_a_publish_document() {
        let module = Module {
            domain: "acme.mods".into(),
            module: "hello".into(),
            version: "1.0.0".into(),
            artifacts: BTreeMap::from([(
                "web".to_string(),
                Artifact {
                    kind: ArtifactKind::Service,
                    schemas: vec![],
                    roles: vec!["frontend".into()],
                    run: Default::default(),
                },
            )]),
        };
        let long = format!("{}/file.txt", "d".repeat(120));
        let files: BTreeMap<&str, &[u8]> =
            BTreeMap::from([("kmodule.json", &b"{}"[..]), (long.as_str(), &b"hello"[..])]);
        let built = package(
            &module,
            &files,
            &["web".into()],
            ArtifactKind::Service,
            "hello",
            true,
        )
        .unwrap();
        assert_eq!(built.name, "@acme.mods/hello");
        // The tarball is what tar(1) reads: gunzip, then the entries under package/.
        let mut tar = Vec::new();
        flate2::read::GzDecoder::new(built.tarball.as_slice())
            .read_to_end(&mut tar)
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let archive = dir.path().join("p.tar");
        std::fs::write(&archive, &tar).unwrap();
        let listed = std::process::Command::new("tar")
            .arg("tf")
            .arg(&archive)
            .output()
            .unwrap();
        assert!(listed.status.success(), "{listed:?}");
        let listed = String::from_utf8(listed.stdout).unwrap();
        assert_eq!(
            listed.lines().collect::<Vec<_>>(),
            [
                "package/package.json",
                format!("package/{long}").as_str(),
                "package/kmodule.json"
            ]
        );
        let document = publish_document(&built, "http://127.0.0.1:4873/");
        let version = &document["versions"]["1.0.0"];
        assert_eq!(version["kumori"]["artifacts"]["web"]["roles"][0], "frontend");
        assert_eq!(
            version["dist"]["tarball"],
            "http://127.0.0.1:4873/@acme.mods/hello/-/hello-1.0.0.tgz"
        );
        assert_eq!(version["dist"]["shasum"].as_str().unwrap().len(), 40);
        assert!(document["_attachments"]["@acme.mods/hello-1.0.0.tgz"]["data"].is_string());
    }
}
