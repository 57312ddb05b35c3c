//! Reading a Kumori bundle (a zip archive) as hostile input: every bound is checked before the
//! bytes it guards are read, and any breach refuses the whole bundle, so nothing of a refused
//! bundle is stored or published. Entries are counted from the central directory; a file's
//! declared size is checked before it is inflated and its inflated bytes are counted again
//! (headers can lie); names must be relative paths without `..`, backslashes or duplicates
//! (counted in the central directory itself: the zip reader keeps the last of two entries of one
//! name); symbolic links and encrypted entries are refused.

use std::collections::BTreeMap;
use std::io::Read;

/// What a bundle may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BundleLimits {
    /// Entries (files and directories) in the archive.
    pub max_entries: usize,
    /// Bytes of one file, inflated.
    pub max_file: u64,
    /// Bytes of all files, inflated.
    pub max_total: u64,
    /// Inflated bytes per compressed byte of one file (a zip bomb inflates by thousands).
    pub max_ratio: u64,
}

impl Default for BundleLimits {
    fn default() -> Self {
        Self {
            max_entries: 1_000,
            max_file: 8 << 20,
            max_total: 32 << 20,
            max_ratio: 200,
        }
    }
}

/// Files below this many inflated bytes are never judged by their ratio (a file of zeros
/// compresses a thousandfold and is harmless when small).
const RATIO_FLOOR: u64 = 1 << 20;

/// Why a bundle is refused; each names the entry at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    /// Not a zip archive, or a damaged one.
    #[error("bundle: not a readable zip archive: {0}")]
    NotZip(String),
    /// More entries than allowed.
    #[error("bundle: {count} entries, more than the {max} allowed")]
    TooManyEntries {
        /// Entries found.
        count: usize,
        /// The bound.
        max: usize,
    },
    /// A file, or all of them, larger than allowed.
    #[error("bundle: {0}")]
    TooLarge(String),
    /// A file that inflates far beyond its compressed size.
    #[error("bundle: {name:?} inflates {ratio} times its compressed size, more than the {max} allowed (a zip bomb?)")]
    Bomb {
        /// The entry.
        name: String,
        /// Its ratio.
        ratio: u64,
        /// The bound.
        max: u64,
    },
    /// A name that is not a plain relative path.
    #[error("bundle: entry {name:?} {why}")]
    BadName {
        /// The entry.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A symbolic link.
    #[error("bundle: entry {0:?} is a symbolic link; bundles hold files and directories only")]
    Symlink(String),
    /// An encrypted entry.
    #[error("bundle: entry {0:?} is encrypted")]
    Encrypted(String),
    /// Two entries of the same name.
    #[error("bundle: entry {0:?} appears twice")]
    Duplicate(String),
    /// A package tarball that cannot be read.
    #[error("the package's tarball is not readable: {0}")]
    NotTarball(String),
}

impl BundleError {
    /// The HTTP status it answers with: `413` for sizes, `400` otherwise.
    pub fn status(&self) -> u16 {
        match self {
            BundleError::TooManyEntries { .. } | BundleError::TooLarge(_) | BundleError::Bomb { .. } => 413,
            _ => 400,
        }
    }
}

/// The files of a bundle by their relative path (`deployment/kmodule.json`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bundle {
    /// Path to contents.
    pub files: BTreeMap<String, Vec<u8>>,
}

impl Bundle {
    /// The files under directory `dir` (relative to it).
    pub fn under(&self, dir: &str) -> BTreeMap<&str, &[u8]> {
        let prefix = format!("{}/", dir.trim_end_matches('/'));
        self.files
            .iter()
            .filter_map(|(path, bytes)| Some((path.strip_prefix(&prefix)?, bytes.as_slice())))
            .collect()
    }
}

/// Checks an entry's name: a relative path of plain components.
fn check_name(name: &str) -> Result<String, BundleError> {
    let bad = |why| BundleError::BadName {
        name: name.to_string(),
        why,
    };
    if name.is_empty() || name.len() > 1024 {
        return Err(bad("has no name or one longer than 1024 bytes"));
    }
    if name.contains('\\') {
        return Err(bad("contains a backslash"));
    }
    if name.starts_with('/') || name.as_bytes().get(1) == Some(&b':') {
        return Err(bad("is an absolute path"));
    }
    if name.chars().any(char::is_control) {
        return Err(bad("contains a control character"));
    }
    let trimmed = name.trim_end_matches('/');
    let mut parts = Vec::new();
    for part in trimmed.split('/') {
        match part {
            ".." => return Err(bad("climbs out of the bundle (..)")),
            "" | "." => {}
            part => parts.push(part),
        }
    }
    if parts.is_empty() {
        return Err(bad("names no file"));
    }
    Ok(parts.join("/"))
}

/// The signature of a central directory file header.
const CENTRAL_HEADER: [u8; 4] = *b"PK\x01\x02";
/// Its fixed part's length; the name, extra field and comment follow.
const CENTRAL_HEADER_LEN: usize = 46;

/// The raw names of the central directory starting at `start` of `bytes`, as many as there are
/// headers (at most `max` + 1: one more than allowed is enough to refuse). The zip reader keeps
/// one entry per name, the last one, so the names are counted here, where two of the same name
/// are still two.
fn central_names(bytes: &[u8], start: u64, max: usize) -> Vec<&[u8]> {
    let field = |at: usize| -> Option<usize> {
        let two = bytes.get(at..at + 2)?;
        Some(usize::from(u16::from_le_bytes([two[0], two[1]])))
    };
    let mut names = Vec::new();
    let Ok(mut at) = usize::try_from(start) else {
        return names;
    };
    while names.len() <= max && bytes.get(at..at + 4) == Some(&CENTRAL_HEADER[..]) {
        let (Some(name), Some(extra), Some(comment)) = (field(at + 28), field(at + 30), field(at + 32))
        else {
            break;
        };
        let Some(raw) = bytes.get(at + CENTRAL_HEADER_LEN..at + CENTRAL_HEADER_LEN + name) else {
            break;
        };
        names.push(raw);
        at += CENTRAL_HEADER_LEN + name + extra + comment;
    }
    names
}

/// Refuses a central directory that names one entry twice, or more entries than allowed.
fn check_central_directory(
    bytes: &[u8],
    start: u64,
    distinct: usize,
    limits: BundleLimits,
) -> Result<(), BundleError> {
    let names = central_names(bytes, start, limits.max_entries);
    if names.len().max(distinct) > limits.max_entries {
        return Err(BundleError::TooManyEntries {
            count: names.len().max(distinct),
            max: limits.max_entries,
        });
    }
    let mut seen = std::collections::BTreeSet::new();
    if let Some(twice) = names.iter().find(|name| !seen.insert(**name)) {
        return Err(BundleError::Duplicate(
            String::from_utf8_lossy(twice).into_owned(),
        ));
    }
    if names.len() != distinct {
        return Err(BundleError::NotZip(format!(
            "its central directory holds {} entries of which the reader sees {distinct} (names that read alike?)",
            names.len()
        )));
    }
    Ok(())
}

/// Reads `bytes` as a bundle within `limits`.
pub fn read_bundle(bytes: &[u8], limits: BundleLimits) -> Result<Bundle, BundleError> {
    let mut archive =
        zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| BundleError::NotZip(e.to_string()))?;
    check_central_directory(bytes, archive.central_directory_start(), archive.len(), limits)?;
    let mut bundle = Bundle::default();
    let mut total: u64 = 0;
    for index in 0..archive.len() {
        let entry = archive
            .by_index_raw(index)
            .map_err(|e| BundleError::NotZip(e.to_string()))?;
        let raw_name = String::from_utf8_lossy(entry.name_raw()).into_owned();
        let name = check_name(&raw_name)?;
        if entry.encrypted() {
            return Err(BundleError::Encrypted(raw_name));
        }
        if entry
            .unix_mode()
            .is_some_and(|mode| mode & 0o170_000 == 0o120_000)
        {
            return Err(BundleError::Symlink(raw_name));
        }
        if entry.is_dir() {
            continue;
        }
        let declared = entry.size();
        if declared > limits.max_file {
            return Err(BundleError::TooLarge(format!(
                "entry {raw_name:?} is {declared} bytes, more than the {} allowed for one file",
                limits.max_file
            )));
        }
        drop(entry);
        let entry = archive
            .by_index(index)
            .map_err(|e| BundleError::NotZip(format!("entry {raw_name:?}: {e}")))?;
        let compressed = entry.compressed_size().max(1);
        let mut contents = Vec::new();
        // One byte more than allowed tells a header that lied about the size.
        entry
            .take(limits.max_file + 1)
            .read_to_end(&mut contents)
            .map_err(|e| BundleError::NotZip(format!("entry {raw_name:?}: {e}")))?;
        let size = contents.len() as u64;
        if size > limits.max_file {
            return Err(BundleError::TooLarge(format!(
                "entry {raw_name:?} inflates beyond the {} bytes allowed for one file",
                limits.max_file
            )));
        }
        let ratio = size / compressed;
        if size >= RATIO_FLOOR && ratio > limits.max_ratio {
            return Err(BundleError::Bomb {
                name: raw_name,
                ratio,
                max: limits.max_ratio,
            });
        }
        total = total.saturating_add(size);
        if total > limits.max_total {
            return Err(BundleError::TooLarge(format!(
                "its files inflate beyond the {} bytes allowed in all",
                limits.max_total
            )));
        }
        if bundle.files.insert(name.clone(), contents).is_some() {
            return Err(BundleError::Duplicate(name));
        }
    }
    Ok(bundle)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    /// A zip of `(name, contents, unix mode)` entries, deflated.
    fn zip_of(entries: &[(&str, &[u8], u32)]) -> Vec<u8> {
        let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (name, contents, mode) in entries {
            let options = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Deflated)
                .unix_permissions(*mode);
            if mode & 0o170_000 == 0o120_000 {
                writer
                    .add_symlink(*name, std::str::from_utf8(contents).unwrap(), options)
                    .unwrap();
            } else {
                writer.start_file(*name, options).unwrap();
                writer.write_all(contents).unwrap();
            }
        }
        writer.finish().unwrap().into_inner()
    }

    /// `zip` with every occurrence of the name `from` replaced by `to`, of the same length (in
    /// the local and the central headers alike): the zip writer refuses a name given twice.
    fn renamed(zip: Vec<u8>, from: &str, to: &str) -> Vec<u8> {
        assert_eq!(from.len(), to.len());
        let mut zip = zip;
        let mut at = 0;
        while let Some(found) = zip[at..].windows(from.len()).position(|w| w == from.as_bytes()) {
            zip[at + found..at + found + to.len()].copy_from_slice(to.as_bytes());
            at += found + to.len();
        }
        zip
    }

    #[test]
    fn a_plain_bundle_is_read_by_relative_path() {
        let bytes = zip_of(&[
            ("deployment/kmodule.json", b"{}", 0o644),
            ("./hello/artifact.yaml", b"a: 1", 0o644),
        ]);
        let bundle = read_bundle(&bytes, BundleLimits::default()).unwrap();
        let names: Vec<&str> = bundle.files.keys().map(String::as_str).collect();
        assert_eq!(names, ["deployment/kmodule.json", "hello/artifact.yaml"]);
        assert_eq!(bundle.under("hello").get("artifact.yaml"), Some(&&b"a: 1"[..]));
    }

    #[test]
    fn hostile_bundles_are_refused_naming_the_entry() {
        let zeros = vec![0u8; 4 << 20];
        let many: Vec<(String, Vec<u8>, u32)> =
            (0..1_001).map(|i| (format!("f{i}"), Vec::new(), 0o644)).collect();
        let many_refs: Vec<(&str, &[u8], u32)> = many
            .iter()
            .map(|(n, c, m)| (n.as_str(), c.as_slice(), *m))
            .collect();
        let small = BundleLimits {
            max_file: 1 << 20,
            ..BundleLimits::default()
        };
        let cases: Vec<(&str, Vec<u8>, BundleLimits, &str, u16)> = vec![
            (
                "not a zip",
                b"PK no".to_vec(),
                BundleLimits::default(),
                "not a readable zip",
                400,
            ),
            (
                "traversal",
                zip_of(&[("../etc/passwd", b"x", 0o644)]),
                BundleLimits::default(),
                "climbs out",
                400,
            ),
            (
                "inner traversal",
                zip_of(&[("a/../../b", b"x", 0o644)]),
                BundleLimits::default(),
                "climbs out",
                400,
            ),
            (
                "absolute",
                zip_of(&[("/etc/passwd", b"x", 0o644)]),
                BundleLimits::default(),
                "absolute",
                400,
            ),
            (
                "backslash",
                zip_of(&[("a\\b", b"x", 0o644)]),
                BundleLimits::default(),
                "backslash",
                400,
            ),
            (
                "symlink",
                zip_of(&[("link", b"/etc/passwd", 0o120_777)]),
                BundleLimits::default(),
                "symbolic link",
                400,
            ),
            (
                "duplicate",
                zip_of(&[("a/b", b"x", 0o644), ("a/./b", b"y", 0o644)]),
                BundleLimits::default(),
                "appears twice",
                400,
            ),
            (
                "the same name twice",
                renamed(
                    zip_of(&[("a/b.json", b"{}", 0o644), ("a/b.jsoX", b"{\"x\": 1}", 0o644)]),
                    "a/b.jsoX",
                    "a/b.json",
                ),
                BundleLimits::default(),
                "entry \"a/b.json\" appears twice",
                400,
            ),
            (
                "bomb",
                zip_of(&[("zeros", &zeros, 0o644)]),
                BundleLimits::default(),
                "zip bomb",
                413,
            ),
            (
                "oversize",
                zip_of(&[("big", &zeros, 0o644)]),
                small,
                "more than the 1048576 allowed",
                413,
            ),
            (
                "entries",
                zip_of(&many_refs),
                BundleLimits::default(),
                "1001 entries",
                413,
            ),
        ];
        for (case, bytes, limits, says, status) in cases {
            let error = read_bundle(&bytes, limits).expect_err(case);
            assert!(error.to_string().contains(says), "{case}: {error}");
            assert_eq!(error.status(), status, "{case}: {error}");
        }
    }
}
