//! Instance logs. An `exec` child writes its stdout and stderr straight into
//! `instances/<id>/output.log`, opened `O_APPEND` and handed to it, so it keeps logging while
//! the agent is down; the agent adds no timestamps to the lines.
//!
//! Rotation is copytruncate: once the log is larger than `--log-max-bytes` the agent copies it
//! to `output.log.1` (replacing the previous one) and truncates it; lines written between the
//! copy and the truncation are lost, as with logrotate's `copytruncate`.
//!
//! Reading (`GET /v1/instances/{id}/logs?tail=N&since=T`) returns the last `tail` lines of the
//! rotated file followed by the current one. Since lines carry no timestamps, `since` works per
//! file: a file last modified before `since` holds nothing newer and is skipped; a file
//! modified at or after `since` is returned whole (within `tail`).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::SystemTime;

/// Default `tail`.
pub const DEFAULT_TAIL: usize = 100;
/// Largest `tail`.
pub const MAX_TAIL: usize = 10_000;

const CHUNK: u64 = 64 * 1024;

/// The last `n` lines of the file at `path` (a missing file has none), and how many lines
/// they are.
fn last_lines(path: &Path, n: usize) -> std::io::Result<(Vec<u8>, usize)> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    if n == 0 || len == 0 {
        return Ok((Vec::new(), 0));
    }
    // Chunks from the end backwards; newlines counted exclude the file's final byte, which
    // ends the last line rather than starting another.
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    let mut end = len;
    let mut newlines = 0usize;
    while end > 0 {
        let start = end.saturating_sub(CHUNK);
        let mut chunk = vec![0; usize::try_from(end - start).unwrap_or(0)];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk)?;
        let searchable = if end == len && chunk.last() == Some(&b'\n') {
            &chunk[..chunk.len() - 1]
        } else {
            &chunk[..]
        };
        // The newline before the n-th line from the end, if this chunk holds it.
        let mut cut = None;
        for (at, byte) in searchable.iter().enumerate().rev() {
            if *byte == b'\n' {
                newlines += 1;
                if newlines == n {
                    cut = Some(at + 1);
                    break;
                }
            }
        }
        match cut {
            Some(at) => {
                chunks.push(chunk.split_off(at));
                return Ok((concat_reversed(chunks), n));
            }
            None => chunks.push(chunk),
        }
        end = start;
    }
    Ok((concat_reversed(chunks), newlines + 1))
}

fn concat_reversed(chunks: Vec<Vec<u8>>) -> Vec<u8> {
    chunks.into_iter().rev().flatten().collect()
}

/// Whether the file at `path` was modified at or after `since` (false when it is missing).
fn modified_since(path: &Path, since: Option<SystemTime>) -> std::io::Result<bool> {
    let modified = match std::fs::metadata(path) {
        Ok(meta) => meta.modified()?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    Ok(since.is_none_or(|since| modified >= since))
}

/// The last `tail` lines of `rotated` then `current`, skipping a file last modified before
/// `since`.
pub fn read(
    current: &Path,
    rotated: &Path,
    tail: usize,
    since: Option<SystemTime>,
) -> std::io::Result<Vec<u8>> {
    let mut text = Vec::new();
    let mut taken = 0;
    if modified_since(current, since)? {
        let (lines, count) = last_lines(current, tail)?;
        text = lines;
        taken = count;
    }
    if taken < tail && modified_since(rotated, since)? {
        let (mut older, _) = last_lines(rotated, tail - taken)?;
        if !older.is_empty() && older.last() != Some(&b'\n') {
            older.push(b'\n');
        }
        older.extend_from_slice(&text);
        text = older;
    }
    Ok(text)
}

/// Copies `current` to `rotated` and truncates it when it is larger than `max_bytes`; true
/// when it did.
pub fn rotate_if_needed(current: &Path, rotated: &Path, max_bytes: u64) -> std::io::Result<bool> {
    let len = match std::fs::metadata(current) {
        Ok(meta) => meta.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    if len <= max_bytes {
        return Ok(false);
    }
    std::fs::copy(current, rotated)?;
    File::options().write(true).open(current)?.set_len(0)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn lines(range: std::ops::Range<usize>) -> String {
        range.map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn tail_takes_the_last_lines_across_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("output.log");
        std::fs::write(&path, lines(0..20_000)).unwrap();
        let (text, count) = last_lines(&path, 3).unwrap();
        assert_eq!(String::from_utf8(text).unwrap(), lines(19_997..20_000));
        assert_eq!(count, 3);
        let (text, _) = last_lines(&path, 10_000).unwrap();
        assert_eq!(String::from_utf8(text).unwrap(), lines(10_000..20_000));
        std::fs::write(&path, "a\nb").unwrap();
        assert_eq!(last_lines(&path, 1).unwrap(), (b"b".to_vec(), 1));
        assert_eq!(last_lines(&path, 5).unwrap(), (b"a\nb".to_vec(), 2));
        assert_eq!(last_lines(&dir.path().join("none"), 5).unwrap(), (Vec::new(), 0));
    }

    #[test]
    fn rotation_copies_and_truncates_and_reads_span_both_files() {
        let dir = tempfile::tempdir().unwrap();
        let current = dir.path().join("output.log");
        let rotated = dir.path().join("output.log.1");
        // The writer keeps an O_APPEND handle, as an instance does.
        let mut writer = File::options().create(true).append(true).open(&current).unwrap();
        writer.write_all(lines(0..100).as_bytes()).unwrap();
        assert!(!rotate_if_needed(&current, &rotated, 10_000).unwrap());
        assert!(rotate_if_needed(&current, &rotated, 100).unwrap());
        assert_eq!(std::fs::read_to_string(&rotated).unwrap(), lines(0..100));
        assert_eq!(std::fs::metadata(&current).unwrap().len(), 0);
        writer.write_all(lines(100..102).as_bytes()).unwrap();
        assert_eq!(std::fs::read_to_string(&current).unwrap(), lines(100..102));
        let text = read(&current, &rotated, 4, None).unwrap();
        assert_eq!(String::from_utf8(text).unwrap(), lines(98..102));
        // A file modified before `since` is skipped.
        let later = SystemTime::now() + std::time::Duration::from_secs(3600);
        assert!(read(&current, &rotated, 4, Some(later)).unwrap().is_empty());
    }
}
