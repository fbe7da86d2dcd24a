//! A run's output directory, built beside it and moved into place whole. Files (the chain
//! CSVs while they are sampled, then the summary and the fit) are written into a fresh
//! directory `.<name>.partial-<pid>` next to the output directory; when the run ends it replaces
//! the output directory in one rename. A rerun with fewer chains so leaves no stale
//! `chain-5.csv` for ArviZ to mix in, and a run that fails (or a write that fails) leaves the
//! previous output as it was: the staging directory is removed when it is dropped uncommitted.

use crate::infer::InferError;
use std::path::{Path, PathBuf};

/// An output directory being written.
#[derive(Debug)]
pub struct Staging {
    dir: PathBuf,
    partial: PathBuf,
    committed: bool,
}

fn io(what: &Path, e: std::io::Error) -> InferError {
    InferError::Io(format!("{}: {e}", what.display()))
}

impl Staging {
    /// Start writing the output directory `dir`. An existing `dir` may be replaced only if it
    /// is a gpmc output (it holds `summary.json`) or empty, which is checked here, before any
    /// work; leftovers of killed runs are removed.
    pub fn create(dir: &Path) -> Result<Staging, InferError> {
        let name = dir
            .file_name()
            .ok_or_else(|| InferError::Io(format!("{}: not a directory name", dir.display())))?
            .to_string_lossy()
            .to_string();
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if dir.exists() {
            let ours = dir.join("summary.json").is_file()
                || std::fs::read_dir(dir)
                    .map_err(|e| io(dir, e))?
                    .next()
                    .is_none();
            if !dir.is_dir() || !ours {
                return Err(InferError::Io(format!(
                    "{} exists and is not a gpmc output directory (no summary.json): choose another --output",
                    dir.display()
                )));
            }
        }
        std::fs::create_dir_all(&parent).map_err(|e| io(&parent, e))?;
        remove_leftovers(&parent, &name);
        let partial = parent.join(format!(".{name}.partial-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&partial);
        std::fs::create_dir(&partial).map_err(|e| io(&partial, e))?;
        Ok(Staging {
            dir: dir.to_path_buf(),
            partial,
            committed: false,
        })
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
    pub fn write(&self, file: &str, content: &str) -> Result<(), InferError> {
        let path = self.path(file);
        std::fs::write(&path, content).map_err(|e| io(&path, e))
    }

    /// Write the last `files` of the output, then [`Staging::commit`].
    pub fn finish(self, files: &[(String, String)]) -> Result<(), InferError> {
        for (file, content) in files {
            self.write(file, content)?;
        }
        self.commit()
    }

    /// Move the written directory into place: the old output aside, the new one in, then the
    /// old one removed.
    pub fn commit(mut self) -> Result<(), InferError> {
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
    }
}

/// Write `files` as the whole content of the output directory `dir` (see [`Staging`]).
pub fn write_all(dir: &Path, files: &[(String, String)]) -> Result<(), InferError> {
    Staging::create(dir)?.finish(files)
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
