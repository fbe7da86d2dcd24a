//! Draws in CmdStan's CSV layout (comment header, column names, one row per draw, elapsed
//! times), which `arviz.from_cmdstan` reads — built in memory ([`csv`]) or streamed to a file
//! row by row as a chain makes them ([`ChainWriter`]), so that a run's memory does not grow
//! with its number of draws. Both write the same bytes.

use gpm_runtime::gibbs::{ChainTimes, RowSink};
use gpm_runtime::RuntimeError;
use std::fmt::Write as _;
use std::io::{Seek, SeekFrom, Write as _};
use std::path::{Path, PathBuf};

/// What the comment header of a chain file says.
#[derive(Debug, Clone)]
pub struct Head<'a> {
    /// Model name.
    pub model: &'a str,
    /// How the draws were made.
    pub algorithm: &'a str,
    /// Warm-up sweeps.
    pub num_warmup: usize,
    /// Thinning.
    pub thin: usize,
    /// Chain number (1-based).
    pub id: usize,
    /// Seed.
    pub seed: u64,
    /// Column names.
    pub columns: &'a [String],
}

/// Width of the `num_samples` field, so that a streamed file can state the number of draws
/// it ends with in place.
const COUNT_WIDTH: usize = 20;

/// The header with `num_samples` as given, and the byte offset of its value.
fn header(h: &Head, num_samples: usize) -> (String, usize) {
    let mut s = String::new();
    let _ = writeln!(s, "# model = {}", h.model);
    let _ = writeln!(s, "# method = sample (algorithm = {})", h.algorithm);
    s.push_str("#   num_samples = ");
    let at = s.len();
    let _ = writeln!(s, "{:<COUNT_WIDTH$}", num_samples);
    let _ = writeln!(s, "#   num_warmup = {}", h.num_warmup);
    let _ = writeln!(s, "#   thin = {}", h.thin);
    let _ = writeln!(s, "# id = {}", h.id);
    let _ = writeln!(s, "# seed = {}", h.seed);
    let _ = writeln!(s, "{}", h.columns.join(","));
    (s, at)
}

/// One draw row (10 significant digits).
fn row(r: &[f64], s: &mut String) {
    for (k, v) in r.iter().enumerate() {
        if k > 0 {
            s.push(',');
        }
        let _ = write!(s, "{v:.9e}");
    }
    s.push('\n');
}

/// The closing comment lines: the chain's elapsed times.
fn footer(t: &ChainTimes) -> String {
    format!(
        "#  Elapsed Time: {:.3} seconds (Warm-up)\n#                {:.3} seconds (Sampling)\n",
        t.warmup_seconds, t.sampling_seconds
    )
}

/// A whole chain file in memory.
pub fn csv(h: &Head, rows: &[Vec<f64>], times: &ChainTimes) -> String {
    let (mut s, _) = header(h, rows.len());
    for r in rows {
        row(r, &mut s);
    }
    s + &footer(times)
}

/// A chain file written row by row as the chain makes its draws: a [`RowSink`] for
/// [`gpm_runtime::gibbs::run_into`]. It remembers where each row ends, so that an interrupted
/// run's chains can be cut to the same length, and states the final number of draws in the
/// header when it is finished.
#[derive(Debug)]
pub struct ChainWriter {
    path: PathBuf,
    file: std::io::BufWriter<std::fs::File>,
    count_at: u64,
    /// Byte offset of the end of the header, then of each row.
    ends: Vec<u64>,
    line: String,
    /// The rows in binary too, for the summaries (see [`crate::spill`]).
    spill: Option<crate::spill::Spill>,
    /// Rows whose first value (`lp__`) is finite.
    finite_first: usize,
}

impl ChainWriter {
    /// Create the file and write its header; with `spill`, the rows are also appended to that
    /// binary file.
    pub fn create(
        path: &Path,
        h: &Head,
        expected: usize,
        spill: Option<crate::spill::Spill>,
    ) -> Result<ChainWriter, RuntimeError> {
        let fail = |e: std::io::Error| RuntimeError::Output(format!("{}: {e}", path.display()));
        let mut file = std::io::BufWriter::new(std::fs::File::create(path).map_err(fail)?);
        let (head, at) = header(h, expected);
        file.write_all(head.as_bytes()).map_err(fail)?;
        Ok(ChainWriter {
            path: path.to_path_buf(),
            file,
            count_at: at as u64,
            ends: vec![head.len() as u64],
            line: String::new(),
            spill,
            finite_first: 0,
        })
    }

    fn fail(&self, e: std::io::Error) -> RuntimeError {
        RuntimeError::Output(format!("{}: {e}", self.path.display()))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of rows written.
    pub fn rows(&self) -> usize {
        self.ends.len() - 1
    }

    /// Number of rows written whose first value (`lp__`) is finite (rows truncated away after an
    /// interrupt may still be counted: it is a check for none at all).
    pub fn finite_first(&self) -> usize {
        self.finite_first
    }

    /// Write the elapsed times, state the number of draws in the header, and close the file;
    /// the spill file's path, if any.
    pub fn finish(mut self, times: &ChainTimes) -> Result<Option<PathBuf>, RuntimeError> {
        let foot = footer(times);
        self.file
            .write_all(foot.as_bytes())
            .map_err(|e| self.fail(e))?;
        self.file.flush().map_err(|e| self.fail(e))?;
        let count = format!("{:<COUNT_WIDTH$}", self.rows());
        let f = self.file.get_mut();
        f.seek(SeekFrom::Start(self.count_at))
            .and_then(|_| f.write_all(count.as_bytes()))
            .map_err(|e| RuntimeError::Output(format!("{}: {e}", self.path.display())))?;
        self.spill.take().map(|s| s.finish()).transpose()
    }
}

impl RowSink for ChainWriter {
    fn push(&mut self, r: Vec<f64>) -> Result<(), RuntimeError> {
        if let Some(s) = &mut self.spill {
            s.push(&r)?;
        }
        self.line.clear();
        row(&r, &mut self.line);
        self.file
            .write_all(self.line.as_bytes())
            .map_err(|e| self.fail(e))?;
        let end = self.ends[self.ends.len() - 1] + self.line.len() as u64;
        self.ends.push(end);
        if r.first().is_some_and(|v| v.is_finite()) {
            self.finite_first += 1;
        }
        Ok(())
    }

    fn truncate(&mut self, rows: usize) -> Result<(), RuntimeError> {
        if let Some(s) = &mut self.spill {
            s.truncate(rows)?;
        }
        if rows >= self.rows() {
            return Ok(());
        }
        self.file.flush().map_err(|e| self.fail(e))?;
        let end = self.ends[rows];
        let f = self.file.get_mut();
        f.set_len(end)
            .and_then(|_| f.seek(SeekFrom::Start(end)).map(|_| ()))
            .map_err(|e| RuntimeError::Output(format!("{}: {e}", self.path.display())))?;
        self.ends.truncate(rows + 1);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(columns: &[String]) -> Head<'_> {
        Head {
            model: "m.gpm",
            algorithm: "gibbs",
            num_warmup: 10,
            thin: 1,
            id: 1,
            seed: 7,
            columns,
        }
    }

    #[test]
    fn a_streamed_file_equals_the_file_built_in_memory() {
        let columns = vec!["lp__".to_string(), "x".to_string()];
        let rows: Vec<Vec<f64>> = (0..5).map(|k| vec![-(k as f64), 0.1 * k as f64]).collect();
        let times = ChainTimes {
            warmup_seconds: 1.0,
            sampling_seconds: 2.0,
        };
        let dir = std::env::temp_dir().join(format!("gpmc-cmdstan-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("chain-1.csv");
        // Expected 1000 draws, 7 written, cut to 3 (an interrupted run).
        let mut w = ChainWriter::create(&path, &head(&columns), 1000, None).unwrap();
        for r in rows.iter().chain(rows.iter().take(2)) {
            w.push(r.clone()).unwrap();
        }
        w.truncate(3).unwrap();
        assert_eq!(w.rows(), 3);
        w.finish(&times).unwrap();
        let streamed = std::fs::read_to_string(&path).unwrap();
        assert_eq!(streamed, csv(&head(&columns), &rows[..3], &times));
        assert!(streamed.contains("num_samples = 3 "));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
