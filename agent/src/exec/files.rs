//! An instance's directory made ready for a run, whatever the last run left in it. A run may
//! replace anything under its directory — a file of its spec by a directory tree, a link out of
//! the directory, a fifo — so every path the agent writes is walked one name at a time from a
//! directory it opened itself, never following a link (`O_NOFOLLOW`): a name that is not what
//! the agent needs there is removed (a tree with all it holds) and made afresh. A start never
//! fails, and nothing outside the instance's directory is touched, because of what a run left.

use std::collections::BTreeMap;
use std::ffi::{CStr, CString};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// Opens directory `name` under `parent` (`O_NOFOLLOW`); whatever else a run left at that name
/// (a file, a link, a fifo) is removed first and a directory of `mode` made in its place.
pub fn real_dir_at(parent: BorrowedFd<'_>, name: &str, mode: u32) -> std::io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat(parent, name, flags, Mode::empty()) {
        Ok(dir) => return Ok(dir),
        // Not there, or there but not a directory (ENOTDIR), or a link (ELOOP).
        Err(Errno::NOENT) => {}
        Err(Errno::NOTDIR | Errno::LOOP) => clear_at(parent, name)?,
        Err(e) => return Err(e.into()),
    }
    rustix::fs::mkdirat(parent, name, Mode::from_raw_mode(mode))?;
    Ok(rustix::fs::openat(parent, name, flags, Mode::empty())?)
}

/// Opens directory `path` (made by the agent, so followed as given) and below it the
/// directories `names`, each made a real directory of mode 0700 ([`real_dir_at`]).
pub fn dir_chain(path: &Path, names: &[&str]) -> std::io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut dir = rustix::fs::open(path, flags, Mode::empty())?;
    for name in names {
        dir = real_dir_at(dir.as_fd(), name, 0o700)?;
    }
    Ok(dir)
}

/// Removes whatever is at `name` under `parent`, a directory with everything in it, following
/// no link; nothing there is no error.
pub fn clear_at(parent: BorrowedFd<'_>, name: &str) -> std::io::Result<()> {
    clear_c(parent, &CString::new(name)?)
}

fn clear_c(parent: BorrowedFd<'_>, name: &CStr) -> std::io::Result<()> {
    if unlink_unless_dir(parent, name)? {
        return Ok(());
    }
    // A directory: emptied depth first with one open directory per level and no recursion, so
    // however deep a tree a run made, it costs the agent heap, never its stack.
    let mut stack: Vec<(OwnedFd, CString)> = vec![(open_dir_at(parent, name)?, name.to_owned())];
    loop {
        let Some((dir, _)) = stack.last() else {
            return Ok(());
        };
        let mut subdir = None;
        for entry in names_in(dir.as_fd())? {
            if !unlink_unless_dir(dir.as_fd(), &entry)? {
                subdir = Some(entry);
                break;
            }
        }
        match subdir {
            Some(entry) => {
                let child = open_dir_at(dir.as_fd(), &entry)?;
                stack.push((child, entry));
            }
            None => {
                let Some((emptied, name)) = stack.pop() else {
                    return Ok(());
                };
                drop(emptied);
                let above = stack.last().map_or(parent, |(d, _)| d.as_fd());
                rustix::fs::unlinkat(above, &name, AtFlags::REMOVEDIR)?;
            }
        }
    }
}

/// Unlinks `name` under `dir` unless it is a directory: whether it is gone (or was not there).
fn unlink_unless_dir(dir: BorrowedFd<'_>, name: &CStr) -> std::io::Result<bool> {
    match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => Ok(true),
        // A directory (Linux answers EISDIR, POSIX EPERM).
        Err(Errno::ISDIR | Errno::PERM) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Opens directory `name` under `dir`, following no link.
fn open_dir_at(dir: BorrowedFd<'_>, name: &CStr) -> std::io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(rustix::fs::openat(dir, name, flags, Mode::empty())?)
}

/// The names in directory `dir`, without `.` and `..` (read whole before anything is removed).
fn names_in(dir: BorrowedFd<'_>) -> std::io::Result<Vec<CString>> {
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if name != c"." && name != c".." {
            names.push(name.to_owned());
        }
    }
    Ok(names)
}

/// Opens regular file `name` under `dir` to append to it, created with `mode`; whatever else a
/// run left at that name is removed first (a fifo would block the open, a link lead elsewhere).
pub fn append_at(dir: BorrowedFd<'_>, name: &str, mode: u32) -> std::io::Result<File> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile => {
            clear_at(dir, name)?;
        }
        Ok(_) | Err(Errno::NOENT) => {}
        Err(e) => return Err(e.into()),
    }
    let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(File::from(rustix::fs::openat(
        dir,
        name,
        flags,
        Mode::from_raw_mode(mode),
    )?))
}

/// Writes an instance's files (their paths were checked when the set was accepted: plain,
/// relative, no `.` or `..`) into its working directory `work`, each afresh with mode 0700,
/// so a run always begins with what the spec says.
pub fn write_files(work: BorrowedFd<'_>, files: &BTreeMap<String, String>) -> std::io::Result<()> {
    for (path, content) in files {
        let mut parts: Vec<&str> = path.split('/').filter(|part| !part.is_empty()).collect();
        let Some(name) = parts.pop() else {
            continue;
        };
        let mut dir: Option<OwnedFd> = None;
        for part in parts {
            let parent = dir.as_ref().map_or(work, |d| d.as_fd());
            dir = Some(real_dir_at(parent, part, 0o700)?);
        }
        let parent = dir.as_ref().map_or(work, |d| d.as_fd());
        clear_at(parent, name)?;
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mut file = File::from(rustix::fs::openat(
            parent,
            name,
            flags,
            Mode::from_raw_mode(0o700),
        )?);
        file.write_all(content.as_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(dir: &tempfile::TempDir) -> OwnedFd {
        dir_chain(dir.path(), &["work"]).unwrap()
    }

    #[test]
    fn files_are_written_afresh_and_links_a_run_left_are_replaced_not_followed() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let at = root.path().join("work");
        let files = BTreeMap::from([
            ("main.sh".to_string(), "echo one".to_string()),
            ("lib/util.sh".to_string(), "true".to_string()),
        ]);
        write_files(work(&root).as_fd(), &files).unwrap();
        assert_eq!(std::fs::read_to_string(at.join("main.sh")).unwrap(), "echo one");
        // A run edits a file, and swaps a directory and a file for links out of its directory.
        std::fs::write(at.join("main.sh"), "tampered").unwrap();
        std::fs::remove_dir_all(at.join("lib")).unwrap();
        std::os::unix::fs::symlink(outside.path(), at.join("lib")).unwrap();
        let victim = outside.path().join("victim");
        std::fs::write(&victim, "mine").unwrap();
        std::fs::remove_file(at.join("main.sh")).unwrap();
        std::os::unix::fs::symlink(&victim, at.join("main.sh")).unwrap();
        write_files(work(&root).as_fd(), &files).unwrap();
        assert_eq!(std::fs::read_to_string(at.join("main.sh")).unwrap(), "echo one");
        assert_eq!(std::fs::read_to_string(at.join("lib/util.sh")).unwrap(), "true");
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "mine",
            "a link was followed"
        );
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
    }

    #[test]
    fn whatever_a_run_left_at_a_files_path_is_replaced() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "mine").unwrap();
        let at = root.path().join("work");
        let files = BTreeMap::from([
            ("config.json".to_string(), "{}".to_string()),
            ("bin/run.sh".to_string(), "exit 0".to_string()),
            ("data/seed.txt".to_string(), "seed".to_string()),
        ]);
        write_files(work(&root).as_fd(), &files).unwrap();
        // A directory tree (holding a link out) where a file was, a fifo where another was, a
        // file where a directory was.
        std::fs::remove_file(at.join("config.json")).unwrap();
        std::fs::create_dir_all(at.join("config.json/deep/er")).unwrap();
        std::fs::write(at.join("config.json/deep/er/x"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), at.join("config.json/deep/out")).unwrap();
        std::fs::remove_file(at.join("bin/run.sh")).unwrap();
        rustix::fs::mkfifoat(rustix::fs::CWD, at.join("bin/run.sh"), Mode::from_raw_mode(0o600)).unwrap();
        std::fs::remove_dir_all(at.join("data")).unwrap();
        std::fs::write(at.join("data"), "not a directory").unwrap();
        write_files(work(&root).as_fd(), &files).unwrap();
        for (path, content) in &files {
            assert_eq!(
                &std::fs::read_to_string(at.join(path)).unwrap(),
                content,
                "{path}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(outside.path().join("keep")).unwrap(),
            "mine",
            "what a link led to is untouched"
        );
    }

    #[test]
    fn a_tree_deeper_than_a_path_can_name_is_removed() {
        let root = tempfile::tempdir().unwrap();
        let top = dir_chain(root.path(), &[]).unwrap();
        let mut dir = real_dir_at(top.as_fd(), "deep", 0o700).unwrap();
        // 800 levels of 10-byte names: more than PATH_MAX allows to name at once (and fewer
        // than the usual 1,024 open files); files and a link on the way.
        for level in 0..800 {
            if level % 200 == 0 {
                let file = rustix::fs::openat(
                    dir.as_fd(),
                    "f",
                    OFlags::WRONLY | OFlags::CREATE,
                    Mode::from_raw_mode(0o600),
                );
                drop(file.unwrap());
                rustix::fs::symlinkat("/", dir.as_fd(), "root").unwrap();
            }
            dir = real_dir_at(dir.as_fd(), "dddddddddd", 0o700).unwrap();
        }
        drop(dir);
        clear_at(top.as_fd(), "deep").unwrap();
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
        assert!(std::fs::metadata("/").unwrap().is_dir(), "a link was followed");
    }

    #[test]
    fn the_working_directory_and_the_log_are_made_real_again() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        std::fs::write(&victim, "mine").unwrap();
        // The working directory made a link out, the log a link to another file.
        std::os::unix::fs::symlink(outside.path(), root.path().join("work")).unwrap();
        std::os::unix::fs::symlink(&victim, root.path().join("output.log")).unwrap();
        let work = work(&root);
        write_files(
            work.as_fd(),
            &BTreeMap::from([("a".to_string(), "b".to_string())]),
        )
        .unwrap();
        let instance = dir_chain(root.path(), &[]).unwrap();
        let mut log = append_at(instance.as_fd(), "output.log", 0o600).unwrap();
        log.write_all(b"line\n").unwrap();
        assert!(std::fs::symlink_metadata(root.path().join("work"))
            .unwrap()
            .is_dir());
        assert_eq!(std::fs::read_to_string(root.path().join("work/a")).unwrap(), "b");
        assert_eq!(
            std::fs::read_to_string(root.path().join("output.log")).unwrap(),
            "line\n"
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
    }
}
