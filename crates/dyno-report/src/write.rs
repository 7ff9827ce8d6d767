//! Writing a finished output file (a report, an export) so that readers never see a
//! partial file, without ever replacing what the path names when it is not a plain file.
//!
//! A new path or a regular file is written atomically: into a temporary file beside it,
//! flushed to disk, then renamed over it (keeping the old file's permissions). Anything
//! else the path names is written through, as a shell's `>` would: a device (`/dev/null`,
//! `/dev/full`, a terminal), a FIFO (its reader gets the bytes) or a socket, so a run as
//! root never turns `/dev/null` into a regular file. A symbolic link is followed, and
//! the file it points at is written (atomically, when that is a regular file or new); the
//! link itself stays. A directory is refused with [`std::io::ErrorKind::IsADirectory`].

use crate::ReportError;
use std::fs::File;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

/// Symbolic links followed before a path is taken as a loop (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// An output file being written: [`OutputFile::commit`] puts it in place. Dropped before
/// that, it leaves the target as it was (a temporary file is removed).
#[derive(Debug)]
pub struct OutputFile {
    file: File,
    /// `(temporary, target)` when the file is written atomically; `None` when written
    /// through to what the path names.
    rename: Option<(PathBuf, PathBuf)>,
}

impl OutputFile {
    /// Opens the output for `path`, deciding from what the path names now how it is
    /// written (see the module documentation).
    pub fn create(path: &Path) -> std::io::Result<OutputFile> {
        let target = resolve_links(path)?;
        match std::fs::metadata(&target) {
            Ok(meta) if meta.is_dir() => Err(std::io::Error::new(
                ErrorKind::IsADirectory,
                "is a directory, not a file",
            )),
            Ok(meta) if !meta.is_file() => {
                // A device, FIFO or socket: open it as it is, never create or rename.
                let file = std::fs::OpenOptions::new().write(true).open(&target)?;
                Ok(OutputFile { file, rename: None })
            }
            Ok(meta) => Self::beside(target, Some(meta.permissions())),
            Err(e) if e.kind() == ErrorKind::NotFound => Self::beside(target, None),
            Err(e) => Err(e),
        }
    }

    /// A temporary file in `target`'s directory, to be renamed over `target`.
    fn beside(target: PathBuf, keep: Option<std::fs::Permissions>) -> std::io::Result<Self> {
        let name = target.file_name().ok_or_else(|| {
            std::io::Error::new(ErrorKind::InvalidInput, "the path names no file")
        })?;
        let tmp = directory_of(&target).join(format!(
            ".{}.tmp-{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        let file = File::create(&tmp)?;
        let out = OutputFile {
            file,
            rename: Some((tmp, target)),
        };
        if let (Some(perms), Some((tmp, _))) = (keep, &out.rename) {
            std::fs::set_permissions(tmp, perms)?;
        }
        Ok(out)
    }

    /// Puts what was written in place: flushed to disk and renamed over the target, or,
    /// written through, flushed as far as the thing written to allows.
    pub fn commit(mut self) -> std::io::Result<()> {
        self.file.flush()?;
        match self.rename.take() {
            Some((tmp, target)) => {
                let moved = self
                    .file
                    .sync_all()
                    .and_then(|()| std::fs::rename(&tmp, &target));
                if moved.is_err() {
                    let _ = std::fs::remove_file(&tmp);
                }
                moved
            }
            None => Ok(()),
        }
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if let Some((tmp, _)) = &self.rename {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// Whether [`OutputFile::create`] could write `path`, asked before a long command starts
/// so a directory or a missing directory named as its output is refused before any
/// work rather than after it: `IsADirectory` or `NotFound` (the directory it would go
/// in). Creates and changes nothing.
pub fn check_output(path: &Path) -> std::io::Result<()> {
    let target = resolve_links(path)?;
    match std::fs::metadata(&target) {
        Ok(meta) if meta.is_dir() => Err(std::io::Error::new(
            ErrorKind::IsADirectory,
            "is a directory, not a file",
        )),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => {
            let dir = directory_of(&target);
            if dir.is_dir() {
                Ok(())
            } else {
                Err(std::io::Error::new(
                    ErrorKind::NotFound,
                    format!("no directory {}", dir.display()),
                ))
            }
        }
        Err(e) => Err(e),
    }
}

/// `path` with every symbolic link along its last component followed, even a link to a
/// file that does not exist yet (it is created where the link points).
fn resolve_links(path: &Path) -> std::io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let to = std::fs::read_link(&current)?;
                current = directory_of(&current).join(to);
            }
            _ => return Ok(current),
        }
    }
    Err(std::io::Error::new(
        ErrorKind::InvalidInput,
        format!("more than {MAX_LINKS} symbolic links"),
    ))
}

/// The directory a path's file lives in (`.` for a bare file name).
fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Writes `bytes` to `path` as an [`OutputFile`]: atomically to a new path or a regular
/// file (a crash leaves the old file or the new one, never half of a report), through to
/// a device or FIFO, to the target of a symbolic link; a directory is refused.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    let err = |source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut out = OutputFile::create(path).map_err(err)?;
    out.write_all(bytes).map_err(err)?;
    out.commit().map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn writes_and_replaces_without_leftovers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.html");
        write_atomic(&path, b"first").unwrap();
        write_atomic(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        let entries: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(entries.len(), 1, "no temporary file is left behind");
    }

    #[test]
    fn a_missing_directory_is_an_error_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no/such/dir/report.html");
        let e = write_atomic(&path, b"x").unwrap_err();
        assert!(e.to_string().contains("no/such/dir/report.html"), "{e}");
    }

    #[test]
    fn a_replaced_file_keeps_its_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.html");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&path, b"new").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
    }

    #[test]
    fn a_symlink_is_written_through_and_stays_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.html");
        std::fs::write(&real, "old").unwrap();
        let link = dir.path().join("link.html");
        std::os::unix::fs::symlink("real.html", &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
        // A dangling link makes its target.
        let dangling = dir.path().join("dangling.html");
        std::os::unix::fs::symlink("made.html", &dangling).unwrap();
        write_atomic(&dangling, b"made").unwrap();
        assert_eq!(
            std::fs::read(dir.path().join("made.html")).unwrap(),
            b"made"
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            4,
            "no leftovers"
        );
    }

    #[test]
    fn a_directory_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let e = OutputFile::create(dir.path()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::IsADirectory);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_fifo_is_written_through_to_its_reader() {
        // Devices (made with mknod) are the CLI tests' (tests/cli/outputs.rs): a test
        // here must not write to the machine's own /dev.
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !made.is_ok_and(|s| s.success()) {
            eprintln!("note: mkfifo is not available; skipping");
            return;
        }
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write_atomic(&fifo, b"through").unwrap();
        assert_eq!(reader.join().unwrap(), b"through");
        let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
        assert!(
            std::os::unix::fs::FileTypeExt::is_fifo(&kind),
            "still a FIFO"
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no leftovers"
        );
    }

    #[test]
    fn check_output_refuses_directories_and_missing_ones_only() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            check_output(dir.path()).unwrap_err().kind(),
            ErrorKind::IsADirectory
        );
        let e = check_output(&dir.path().join("no/such/r.html")).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(e.to_string().contains("no/such"), "{e}");
        check_output(&dir.path().join("new.html")).unwrap();
        std::fs::write(dir.path().join("old.html"), "x").unwrap();
        check_output(&dir.path().join("old.html")).unwrap();
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "nothing made"
        );
    }

    #[test]
    fn a_link_loop_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::os::unix::fs::symlink("b", &a).unwrap();
        std::os::unix::fs::symlink("a", dir.path().join("b")).unwrap();
        assert!(OutputFile::create(&a).is_err());
    }
}
