//! A run's output directory, built beside it and moved into place whole. Files (the chain
//! CSVs while they are sampled, then the summary and the fit) are written into a fresh
//! directory `.<name>.partial-<pid>` next to the output directory; when the run ends it replaces
//! the output directory in one rename. A rerun with fewer chains so leaves no stale
//! `chain-5.csv` for ArviZ to mix in, and a run that fails (or a write that fails) leaves the
//! previous output as it was: the staging directory is removed when it is dropped uncommitted.
//! Two runs into one directory exclude each other: the first holds a lock (`.<name>.lock`
//! beside the directory, an advisory lock the system releases when the process ends, however
//! it ends; the file is removed when the run ends) and the second is refused at once, before
//! any work. The lock is taken beside the directory's canonical path, so an alias through a
//! symbolic link locks the same file.
//!
//! Only a directory gpmc made is ever replaced: every output directory holds [`MARKER`] (a
//! regular file whose one line says which command wrote it), and an existing directory without
//! exactly that is refused unless it is empty — a `summary.json` of the user's own, beside their
//! other files, is not taken for ours, nor is a marker of another format or a link to one. A
//! directory is replaced only by the command that wrote it (`gpmc predict --output RUN` does not
//! wipe a run), and never when it holds something the command reads (`gpmc plot RUN --output
//! RUN`, data files inside the output directory).

use gpm_runtime::memory::human;
use std::path::{Path, PathBuf};

/// Why an output directory (or the space or memory for it) is refused: one sentence naming
/// the directory and what to do (an `InferError::Io` when it ends a run).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct OutputError(pub String);

/// An output directory being written.
#[derive(Debug)]
pub struct Staging {
    dir: PathBuf,
    partial: PathBuf,
    committed: bool,
    /// Held open (and locked) until the staging ends, and its path (removed then).
    lock: (std::fs::File, PathBuf),
}

/// The file that marks a directory as a gpmc output; its content names the format (a later
/// gpmc that changes the layout can tell its own directories from older ones) and the command.
pub const MARKER: &str = ".gpmc-output";
/// What gpmc before format 2 wrote for every command; taken as a run's.
const FORMAT_1: &str = "gpmc output directory, format 1\n";

/// Which command writes an output directory (its marker says so).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `gpmc infer`: chains, summary, fit.
    Run,
    /// `gpmc predict`.
    Predictions,
    /// `gpmc plot`.
    Plots,
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::Run, Kind::Predictions, Kind::Plots];

    fn command(self) -> &'static str {
        match self {
            Kind::Run => "gpmc infer",
            Kind::Predictions => "gpmc predict",
            Kind::Plots => "gpmc plot",
        }
    }

    fn marker(self) -> String {
        format!(
            "gpmc output directory, format 2, written by `{}`\n",
            self.command()
        )
    }
}

/// The command whose output `dir` holds, by its marker: `None` unless the marker is a regular
/// file (not a link) holding exactly a line gpmc writes (read with a small limit).
fn marked_kind(dir: &Path) -> Option<Kind> {
    use std::io::Read;
    let path = dir.join(MARKER);
    if !std::fs::symlink_metadata(&path).ok()?.file_type().is_file() {
        return None;
    }
    let mut text = String::new();
    std::fs::File::open(&path)
        .ok()?
        .take(256)
        .read_to_string(&mut text)
        .ok()?;
    if text == FORMAT_1 {
        return Some(Kind::Run);
    }
    Kind::ALL.into_iter().find(|k| text == k.marker())
}

/// Refuse an output directory `real` (given as `dir`) that is, or holds, a path the command
/// reads: replacing it would delete that input.
fn refuse_inputs(dir: &Path, real: &Path, reads: &[&Path]) -> Result<(), OutputError> {
    for input in reads {
        let Ok(input_real) = std::fs::canonicalize(input) else {
            continue;
        };
        if input_real.starts_with(real) {
            return Err(OutputError(format!(
                "{} holds {}, which this command reads: writing the output there would delete it; choose another --output",
                dir.display(),
                input.display()
            )));
        }
    }
    Ok(())
}

/// `dir` with its symbolic links resolved: the directory itself when it exists, else its
/// parent's canonical path and its name (the parent is created first).
fn canonical(dir: &Path) -> Result<(PathBuf, String), OutputError> {
    // A link to a directory not made yet (a run is still staging it) names that directory.
    let mut dir = dir.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&dir).map_err(|e| io(&dir, e))?;
                dir = match dir.parent() {
                    Some(p) if target.is_relative() => p.join(target),
                    _ => target,
                };
            }
            _ => break,
        }
    }
    let dir = dir.as_path();
    if dir.exists() {
        let real = std::fs::canonicalize(dir).map_err(|e| io(dir, e))?;
        let name = real
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .ok_or_else(|| OutputError(format!("{}: not a directory name", dir.display())))?;
        return Ok((real, name));
    }
    let name = dir
        .file_name()
        .ok_or_else(|| OutputError(format!("{}: not a directory name", dir.display())))?
        .to_string_lossy()
        .to_string();
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(|e| io(&parent, e))?;
    let parent = std::fs::canonicalize(&parent).map_err(|e| io(&parent, e))?;
    Ok((parent.join(&name), name))
}

fn io(what: &Path, e: std::io::Error) -> OutputError {
    OutputError(format!("{}: {e}", what.display()))
}

impl Staging {
    /// Start writing the output directory `dir` of a `kind` command that reads `reads`. An
    /// existing `dir` may be replaced only if it is empty or the same command made it (its
    /// [`MARKER`]), and never when it is or holds one of `reads` — checked here, before any
    /// work; leftovers of killed runs are removed.
    pub fn create(dir: &Path, kind: Kind, reads: &[&Path]) -> Result<Staging, OutputError> {
        let (real, name) = canonical(dir)?;
        refuse_inputs(dir, &real, reads)?;
        if real.exists() {
            if !real.is_dir() {
                return Err(OutputError(format!(
                    "{} exists and is not a directory: choose another --output",
                    dir.display()
                )));
            }
            let empty = std::fs::read_dir(&real)
                .map_err(|e| io(dir, e))?
                .next()
                .is_none();
            match marked_kind(&real) {
                _ if empty => {}
                None => {
                    return Err(OutputError(format!(
                        "{} exists and was not made by gpmc (it has no {MARKER} file of this gpmc's formats 1 or 2), so it is not replaced: choose another --output, or empty or remove it yourself",
                        dir.display()
                    )))
                }
                Some(other) if other != kind => {
                    return Err(OutputError(format!(
                        "{} holds the output of `{}`, which `{}` does not replace: choose another --output",
                        dir.display(),
                        other.command(),
                        kind.command()
                    )))
                }
                Some(_) => {}
            }
        }
        let parent = real
            .parent()
            .map_or_else(|| PathBuf::from("/"), Path::to_path_buf);
        let lock = lock(&parent, &name, dir)?;
        remove_leftovers(&parent, &name);
        let partial = parent.join(format!(".{name}.partial-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&partial);
        std::fs::create_dir(&partial).map_err(|e| io(&partial, e))?;
        let staging = Staging {
            dir: real,
            partial,
            committed: false,
            lock,
        };
        staging.write(MARKER, &kind.marker())?;
        Ok(staging)
    }

    /// The directory being written (until the commit).
    pub fn partial_dir(&self) -> &Path {
        &self.partial
    }

    /// Where a file of the output is written until the commit.
    pub fn path(&self, file: &str) -> PathBuf {
        self.partial.join(file)
    }

    /// Write one file of the output.
    pub fn write(&self, file: &str, content: &str) -> Result<(), OutputError> {
        let path = self.path(file);
        std::fs::write(&path, content).map_err(|e| io(&path, e))
    }

    /// Write the last `files` of the output, then [`Staging::commit`].
    pub fn finish(self, files: &[(String, String)]) -> Result<(), OutputError> {
        for (file, content) in files {
            self.write(file, content)?;
        }
        self.commit()
    }

    /// Move the written directory into place: the old output aside, the new one in, then the
    /// old one removed.
    pub fn commit(mut self) -> Result<(), OutputError> {
        let parent = self.partial.parent().unwrap_or(Path::new("."));
        let name = self.dir.file_name().unwrap_or_default().to_string_lossy();
        let old = parent.join(format!(".{name}.old-{}", std::process::id()));
        let had_old = self.dir.exists();
        if had_old {
            std::fs::rename(&self.dir, &old).map_err(|e| io(&self.dir, e))?;
        }
        if let Err(e) = std::fs::rename(&self.partial, &self.dir) {
            if had_old {
                let _ = std::fs::rename(&old, &self.dir);
            }
            return Err(io(&self.dir, e));
        }
        self.committed = true;
        if had_old {
            let _ = std::fs::remove_dir_all(&old);
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.partial);
        }
        // Removed while still held (the file closes after this): a run that opened it in the
        // meantime finds, once it has the lock, that the path no longer names its file, and
        // starts again ([`lock`]).
        let _ = std::fs::remove_file(&self.lock.1);
    }
}

/// The exclusive lock on the output directory `dir` (named `name`, in `parent`): refused when
/// another process holds it. The lock is the kernel's (released when the file is closed or the
/// process dies, however it dies); the file `.<name>.lock` holds the holder's pid and is removed
/// when the staging ends (a killed run's stays, and is simply locked again).
fn lock(parent: &Path, name: &str, dir: &Path) -> Result<(std::fs::File, PathBuf), OutputError> {
    use std::os::unix::fs::MetadataExt;
    let path = parent.join(format!(".{name}.lock"));
    // A holder that ends removes the file it locked; a file opened just before that is locked
    // in vain, so the lock counts only while the path still names the locked file.
    for _ in 0..100 {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| io(&path, e))?;
        match file.try_lock() {
            Ok(()) => {
                let same = match (file.metadata(), std::fs::metadata(&path)) {
                    (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
                    _ => false,
                };
                if !same {
                    continue;
                }
                use std::io::{Seek, Write};
                let mut f = &file;
                let _ = f.set_len(0);
                let _ = f.seek(std::io::SeekFrom::Start(0));
                let _ = write!(f, "{}", std::process::id());
                return Ok((file, path));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                let holder = std::fs::read_to_string(&path).unwrap_or_default();
                return Err(OutputError(format!(
                    "another gpmc run{} is writing {}: wait for it, or choose another --output",
                    if holder.trim().is_empty() {
                        String::new()
                    } else {
                        format!(" (process {})", holder.trim())
                    },
                    dir.display()
                )));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(&path, e)),
        }
    }
    Err(OutputError(format!(
        "{}: could not take the lock of {}",
        path.display(),
        dir.display()
    )))
}

/// Bytes free for an unprivileged writer on the file system holding `path` (`None` where the
/// system does not say).
pub fn available_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c` is a NUL-terminated path and `st` a buffer of the right type, filled by the
    // call when it returns 0.
    let rc = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it wrote the struct.
    let st = unsafe { st.assume_init() };
    Some(st.f_bavail.saturating_mul(st.f_frsize))
}

/// Refuse, before any work, output that would not fit: `rows × width` values at `bytes_per_value`
/// bytes each against the space free where `dir` is.
pub fn check_space(
    dir: &Path,
    rows: u64,
    width: usize,
    bytes_per_value: u64,
) -> Result<(), OutputError> {
    let need = rows
        .saturating_mul(width as u64)
        .saturating_mul(bytes_per_value);
    refuse_beyond(need, available_bytes(dir), |need, free| {
        format!(
            "the draws need about {need} ({rows} rows of {width} columns) but {} has {free} free: fewer --draws or --chains, or --thin",
            dir.display()
        )
    })
}

/// An error when `need` bytes exceed `free` (nothing when the system did not say), worded by
/// `say(need, free)` with both sizes in human units.
fn refuse_beyond(
    need: u64,
    free: Option<u64>,
    say: impl Fn(String, String) -> String,
) -> Result<(), OutputError> {
    match free {
        Some(free) if need > free => Err(OutputError(say(human(need), human(free)))),
        _ => Ok(()),
    }
}

/// Refuse, before any work, draws kept in memory that would not fit: `copies` copies at once
/// of `rows × width` values of 8 bytes against the memory available.
pub fn check_memory(rows: u64, width: usize, copies: u64) -> Result<(), OutputError> {
    let need = rows
        .saturating_mul(width as u64)
        .saturating_mul(8)
        .saturating_mul(copies);
    refuse_beyond(need, gpm_runtime::memory::available(), |need, free| {
        format!(
            "the draws need about {need} of memory ({rows} rows of {width} columns) but {free} are available: fewer draws or chains, or thin them"
        )
    })
}

/// Write `files` as the whole content of the output directory `dir` of a `kind` command that
/// reads `reads` (see [`Staging`]).
pub fn write_all(
    dir: &Path,
    kind: Kind,
    reads: &[&Path],
    files: &[(String, String)],
) -> Result<(), OutputError> {
    Staging::create(dir, kind, reads)?.finish(files)
}

/// Remove `.<name>.partial-<pid>` and `.<name>.old-<pid>` directories in `parent` left by runs
/// that were killed (their process no longer exists).
fn remove_leftovers(parent: &Path, name: &str) {
    // Whether a process is alive is read from /proc; elsewhere nothing is removed.
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    if !Path::new("/proc/self").exists() {
        return;
    }
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().to_string();
        let pid = [".partial-", ".old-"].iter().find_map(|tag| {
            file.strip_prefix(&format!(".{name}{tag}"))
                .and_then(|p| p.parse::<u32>().ok())
        });
        let alive = |pid: u32| Path::new(&format!("/proc/{pid}")).exists();
        if let Some(pid) = pid {
            if pid != std::process::id() && !alive(pid) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
}
