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
//!
//! Following (`?from=OFFSET`): every read answers where the current file ended
//! (`x-drover-log-offset`), and a read `from` that offset returns what was written since. When
//! the current file is shorter than `from`, it was rotated meanwhile: the rest of the rotated
//! copy comes first, then the current file from its start.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::SystemTime;

/// Default `tail`.
pub const DEFAULT_TAIL: usize = 100;
/// Largest `tail`.
pub const MAX_TAIL: usize = 10_000;

const CHUNK: u64 = 64 * 1024;

/// The last `n` lines of the file at `path` (a missing file has none), how many lines they
/// are, and the file's length when read.
fn last_lines(path: &Path, n: usize) -> std::io::Result<(Vec<u8>, usize, u64)> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), 0, 0)),
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    if n == 0 || len == 0 {
        return Ok((Vec::new(), 0, len));
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
                return Ok((concat_reversed(chunks), n, len));
            }
            None => chunks.push(chunk),
        }
        end = start;
    }
    Ok((concat_reversed(chunks), newlines + 1, len))
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
/// `since`, and the offset a follower reads on from.
pub fn read(
    current: &Path,
    rotated: &Path,
    tail: usize,
    since: Option<SystemTime>,
) -> std::io::Result<(Vec<u8>, u64)> {
    let mut text = Vec::new();
    let mut taken = 0;
    let mut end = file_len(current)?;
    if modified_since(current, since)? {
        let (lines, count, len) = last_lines(current, tail)?;
        text = lines;
        taken = count;
        end = len;
    }
    if taken < tail && modified_since(rotated, since)? {
        let (mut older, _, _) = last_lines(rotated, tail - taken)?;
        if !older.is_empty() && older.last() != Some(&b'\n') {
            older.push(b'\n');
        }
        older.extend_from_slice(&text);
        text = older;
    }
    Ok((text, end))
}

fn file_len(path: &Path) -> std::io::Result<u64> {
    match std::fs::metadata(path) {
        Ok(meta) => Ok(meta.len()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(e),
    }
}

/// At most `limit` bytes of the file at `path` from `start` on (nothing past its end or when
/// it is missing).
fn bytes_from(path: &Path, start: u64, limit: u64) -> std::io::Result<Vec<u8>> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    if start >= len || limit == 0 {
        return Ok(Vec::new());
    }
    file.seek(SeekFrom::Start(start))?;
    let mut text = Vec::new();
    file.take(limit.min(len - start)).read_to_end(&mut text)?;
    Ok(text)
}

/// What was written from `from` on (at most `limit` bytes), and the offset to read on from.
/// A current file shorter than `from` was rotated since: the rotated copy's rest comes first,
/// then the current file from its start.
pub fn read_from(current: &Path, rotated: &Path, from: u64, limit: u64) -> std::io::Result<(Vec<u8>, u64)> {
    let len = file_len(current)?;
    if from <= len {
        let mut text = bytes_from(current, from, limit)?;
        // A cut read ends at a line's end, so no character is split between two reads.
        if text.len() as u64 == limit {
            if let Some(end) = text.iter().rposition(|b| *b == b'\n') {
                text.truncate(end + 1);
            }
        }
        let next = from + text.len() as u64;
        return Ok((text, next));
    }
    let mut text = bytes_from(rotated, from, limit)?;
    let fresh = bytes_from(current, 0, limit - text.len() as u64)?;
    let next = fresh.len() as u64;
    text.extend_from_slice(&fresh);
    Ok((text, next))
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
        let (text, count, _) = last_lines(&path, 3).unwrap();
        assert_eq!(String::from_utf8(text).unwrap(), lines(19_997..20_000));
        assert_eq!(count, 3);
        let (text, _, _) = last_lines(&path, 10_000).unwrap();
        assert_eq!(String::from_utf8(text).unwrap(), lines(10_000..20_000));
        std::fs::write(&path, "a\nb").unwrap();
        assert_eq!(last_lines(&path, 1).unwrap(), (b"b".to_vec(), 1, 3));
        assert_eq!(last_lines(&path, 5).unwrap(), (b"a\nb".to_vec(), 2, 3));
        assert_eq!(
            last_lines(&dir.path().join("none"), 5).unwrap(),
            (Vec::new(), 0, 0)
        );
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
        let (text, end) = read(&current, &rotated, 4, None).unwrap();
        assert_eq!(String::from_utf8(text).unwrap(), lines(98..102));
        assert_eq!(end, lines(100..102).len() as u64);
        // A file modified before `since` is skipped.
        let later = SystemTime::now() + std::time::Duration::from_secs(3600);
        assert!(read(&current, &rotated, 4, Some(later)).unwrap().0.is_empty());
    }

    #[test]
    fn a_follower_reads_every_line_once_across_a_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let current = dir.path().join("output.log");
        let rotated = dir.path().join("output.log.1");
        let mut writer = File::options().create(true).append(true).open(&current).unwrap();
        writer.write_all(lines(0..10).as_bytes()).unwrap();
        let (text, mut at) = read(&current, &rotated, 3, None).unwrap();
        let mut seen = String::from_utf8(text).unwrap();
        writer.write_all(lines(10..20).as_bytes()).unwrap();
        let (text, next) = read_from(&current, &rotated, at, 1 << 20).unwrap();
        seen.push_str(&String::from_utf8(text).unwrap());
        at = next;
        // Written after the last read, then rotated away before the next one.
        writer.write_all(lines(20..30).as_bytes()).unwrap();
        assert!(rotate_if_needed(&current, &rotated, 10).unwrap());
        writer.write_all(lines(30..32).as_bytes()).unwrap();
        let (text, next) = read_from(&current, &rotated, at, 1 << 20).unwrap();
        seen.push_str(&String::from_utf8(text).unwrap());
        assert_eq!(seen, lines(7..32));
        assert_eq!(next, lines(30..32).len() as u64);
        // Nothing new: nothing read, the offset stays; a limit cuts a long read.
        assert_eq!(
            read_from(&current, &rotated, next, 1 << 20).unwrap(),
            (Vec::new(), next)
        );
        let (text, cut) = read_from(&current, &rotated, 0, 5).unwrap();
        assert_eq!((text.len(), cut), (5, 5));
        let (text, cut) = read_from(&current, &rotated, 0, 12).unwrap();
        assert_eq!((text, cut), (b"line 30\n".to_vec(), 8));
    }
}
