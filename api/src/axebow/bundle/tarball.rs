//! Reading an npm package's tarball (gzip'd tar, every file under `package/`) as hostile input,
//! under the same bounds as a bundle: entries, bytes a file and in all (counted as inflated,
//! whatever the headers say), plain relative names; links and devices refused; pax and GNU
//! long-name headers honoured (`npm pack` writes them for long paths).

use std::collections::BTreeMap;
use std::io::Read;

use super::archive::{BundleError, BundleLimits};

const BLOCK: usize = 512;

/// A header's octal number field.
fn octal(field: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(field).ok()?;
    let digits = text.trim_matches(|c: char| c == '\0' || c == ' ');
    if digits.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(digits, 8).ok()
}

/// A NUL-terminated header string.
fn text(field: &[u8]) -> String {
    let end = field.iter().position(|b| *b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

/// The `path` record of a pax extended header, if any.
fn pax_path(data: &[u8]) -> Option<String> {
    let mut rest = data;
    while !rest.is_empty() {
        let space = rest.iter().position(|b| *b == b' ')?;
        let length: usize = std::str::from_utf8(&rest[..space]).ok()?.parse().ok()?;
        let record = rest.get(space + 1..length)?;
        let record = record.strip_suffix(b"\n").unwrap_or(record);
        if let Some(path) = record.strip_prefix(b"path=") {
            return String::from_utf8(path.to_vec()).ok();
        }
        rest = rest.get(length..)?;
    }
    None
}

/// Reads `tgz`, the files under `package/` by their path below it.
pub fn read_tarball(tgz: &[u8], limits: BundleLimits) -> Result<BTreeMap<String, Vec<u8>>, BundleError> {
    let damaged = |why: &str| BundleError::NotTarball(why.to_string());
    // At most the total and one header a file more: anything past that is refused unread.
    let cap = limits
        .max_total
        .saturating_add((limits.max_entries as u64 + 2).saturating_mul(3 * BLOCK as u64));
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(tgz)
        .take(cap.saturating_add(1))
        .read_to_end(&mut tar)
        .map_err(|e| damaged(&e.to_string()))?;
    if tar.len() as u64 > cap {
        return Err(BundleError::TooLarge(format!(
            "the package tarball inflates past {cap} bytes"
        )));
    }
    let mut files = BTreeMap::new();
    let mut at = 0usize;
    let mut entries = 0usize;
    let mut total = 0u64;
    let mut long_name: Option<String> = None;
    while at + BLOCK <= tar.len() {
        let header = &tar[at..at + BLOCK];
        if header.iter().all(|b| *b == 0) {
            break;
        }
        entries += 1;
        if entries > limits.max_entries {
            return Err(BundleError::TooManyEntries {
                count: entries,
                max: limits.max_entries,
            });
        }
        let size = octal(&header[124..136]).ok_or_else(|| damaged("a header's size is not a number"))?;
        let kind = header[156];
        let data_start = at + BLOCK;
        let data_end = usize::try_from(size)
            .ok()
            .and_then(|size| data_start.checked_add(size))
            .filter(|end| *end <= tar.len())
            .ok_or_else(|| damaged("an entry runs past the end"))?;
        let data = &tar[data_start..data_end];
        at = data_start + (data_end - data_start).div_ceil(BLOCK) * BLOCK;
        let mut name = text(&header[0..100]);
        if &header[257..262] == b"ustar" {
            let prefix = text(&header[345..500]);
            if !prefix.is_empty() {
                name = format!("{prefix}/{name}");
            }
        }
        if let Some(long) = long_name.take() {
            name = long;
        }
        match kind {
            b'x' => {
                long_name = pax_path(data);
                continue;
            }
            b'L' => {
                long_name = Some(text(data));
                continue;
            }
            b'g' | b'5' => continue,
            b'0' | 0 | b'7' => {}
            b'1' | b'2' => return Err(BundleError::Symlink(name)),
            _ => {
                return Err(BundleError::BadName {
                    name,
                    why: "is neither a file nor a directory",
                })
            }
        }
        if size > limits.max_file {
            return Err(BundleError::TooLarge(format!(
                "{name:?} holds {size} bytes, more than the {} a file may",
                limits.max_file
            )));
        }
        total = total.saturating_add(size);
        if total > limits.max_total {
            return Err(BundleError::TooLarge(format!(
                "the package holds more than the {} bytes a module may",
                limits.max_total
            )));
        }
        let plain =
            !name.starts_with('/') && !name.contains('\\') && name.split('/').all(|part| part != "..");
        let relative = name
            .strip_prefix("package/")
            .filter(|rest| plain && !rest.is_empty())
            .ok_or_else(|| BundleError::BadName {
                name: name.clone(),
                why: "is not a plain path under package/",
            })?;
        let relative = relative
            .split('/')
            .filter(|part| !part.is_empty() && *part != ".")
            .collect::<Vec<_>>()
            .join("/");
        if files.insert(relative.clone(), data.to_vec()).is_some() {
            return Err(BundleError::Duplicate(relative));
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::axebow::bundle::module::{read_module, ArtifactKind};
    use crate::axebow::bundle::package::package;

    #[test]
    fn what_drover_packs_it_reads_back() {
        let files: BTreeMap<&str, &[u8]> = BTreeMap::from([
            (
                "kmodule.json",
                br#"{"domain": "acme.mods", "module": "hello", "version": [1, 0, 0], "artifacts": {"web": "component"}}"#
                    .as_slice(),
            ),
            ("web/artifact.json", br#"{"exec": {"argv": ["sh", "main.sh"]}}"#.as_slice()),
            ("web/main.sh", b"echo hi".as_slice()),
        ]);
        let module = read_module("", &files).unwrap();
        let built = package(&module, &files, &[], ArtifactKind::Component, "hello/web", false).unwrap();
        let read = read_tarball(&built.tarball, BundleLimits::default()).unwrap();
        assert_eq!(read["web/main.sh"], b"echo hi");
        assert!(read.contains_key("package.json"));
        assert_eq!(read.len(), 4);
    }

    /// A tar entry: name, type flag, data.
    type Entry<'a> = (&'a str, u8, &'a [u8]);

    fn tgz(entries: &[Entry<'_>]) -> Vec<u8> {
        let mut tar = Vec::new();
        for (name, kind, data) in entries {
            let mut header = [0u8; BLOCK];
            header[..name.len()].copy_from_slice(name.as_bytes());
            header[124..135].copy_from_slice(format!("{:011o}", data.len()).as_bytes());
            header[156] = *kind;
            tar.extend_from_slice(&header);
            tar.extend_from_slice(data);
            tar.resize(tar.len().div_ceil(BLOCK) * BLOCK, 0);
        }
        tar.extend_from_slice(&[0u8; 2 * BLOCK]);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, &tar).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn hostile_tarballs_are_refused() {
        let limits = BundleLimits {
            max_entries: 3,
            max_file: 100,
            max_total: 150,
            max_ratio: 200,
        };
        let read = |entries: &[Entry<'_>]| read_tarball(&tgz(entries), limits).map(|_| ());
        assert!(read(&[("package/a", b'0', b"x")]).is_ok());
        let long = format!("{}/a", "d".repeat(120));
        // "<length> path=package/<long>\n", the length counting its own three digits.
        let record = format!(" path=package/{long}\n");
        let pax = format!("{}{record}", record.len() + 3);
        let files = read_tarball(
            &tgz(&[("pax", b'x', pax.as_bytes()), ("package/short", b'0', b"y")]),
            limits,
        )
        .unwrap();
        assert!(files.contains_key(&long), "{files:?}");
        let cases: [(&[Entry<'_>], &str); 7] = [
            (&[("package/../x", b'0', b"x")], "plain path"),
            (&[("/etc/passwd", b'0', b"x")], "plain path"),
            (&[("other/x", b'0', b"x")], "plain path"),
            (&[("package/l", b'2', b"")], "symbolic link"),
            (&[("package/big", b'0', &[b'a'; 101])], "more than the 100"),
            (
                &[("package/a", b'0', &[b'a'; 80]), ("package/b", b'0', &[b'a'; 80])],
                "more than the 150",
            ),
            (
                &[
                    ("package/a", b'0', b""),
                    ("package/b", b'0', b""),
                    ("package/c", b'0', b""),
                    ("package/d", b'0', b""),
                ],
                "entries",
            ),
        ];
        for (entries, says) in cases {
            let error = read(entries).unwrap_err().to_string();
            assert!(error.contains(says), "{says}: {error}");
        }
        let bomb = vec![0u8; 64 * 1024];
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut gz, &bomb).unwrap();
        let error = read_tarball(&gz.finish().unwrap(), limits)
            .unwrap_err()
            .to_string();
        assert!(error.contains("inflates past"), "{error}");
        assert!(read_tarball(b"not gzip", limits).is_err());
    }
}
