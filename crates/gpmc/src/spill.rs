//! Draw rows spilled to a binary file beside a streamed chain's CSV (`.chain-K.rows`, native
//! `f64`s row after row), from which the summaries at the end of the run are computed exactly
//! (no decimal rounding) and cheaply: a block of columns is gathered by one sequential read of
//! the file, so memory stays bounded by the block whatever the number of draws. The files are
//! removed before the output directory is committed.

use gpm_runtime::diagnostics::Summary;
use gpm_runtime::RuntimeError;
use std::io::{Read as _, Seek, SeekFrom, Write as _};
use std::path::{Path, PathBuf};

/// Bytes per value.
const VALUE: usize = std::mem::size_of::<f64>();

/// Values held in memory at once while summarising (16 MB of them).
const BLOCK_VALUES: usize = 2 << 20;

/// A chain's rows, appended as they are made.
#[derive(Debug)]
pub struct Spill {
    path: PathBuf,
    file: std::io::BufWriter<std::fs::File>,
    width: usize,
    rows: usize,
    bytes: Vec<u8>,
}

impl Spill {
    /// Create the file for rows of `width` values.
    pub fn create(path: &Path, width: usize) -> Result<Spill, RuntimeError> {
        let file = std::fs::File::create(path)
            .map_err(|e| RuntimeError::Output(format!("{}: {e}", path.display())))?;
        Ok(Spill {
            path: path.to_path_buf(),
            file: std::io::BufWriter::new(file),
            width,
            rows: 0,
            bytes: Vec::with_capacity(width * VALUE),
        })
    }

    fn fail(&self, e: std::io::Error) -> RuntimeError {
        RuntimeError::Output(format!("{}: {e}", self.path.display()))
    }

    /// Append a row.
    pub fn push(&mut self, row: &[f64]) -> Result<(), RuntimeError> {
        if row.len() != self.width {
            return Err(RuntimeError::Inconsistent(format!(
                "a draw row of {} values where the layout has {}",
                row.len(),
                self.width
            )));
        }
        self.bytes.clear();
        for v in row {
            self.bytes.extend_from_slice(&v.to_ne_bytes());
        }
        self.file.write_all(&self.bytes).map_err(|e| self.fail(e))?;
        self.rows += 1;
        Ok(())
    }

    /// Keep the first `rows` rows.
    pub fn truncate(&mut self, rows: usize) -> Result<(), RuntimeError> {
        if rows >= self.rows {
            return Ok(());
        }
        self.file.flush().map_err(|e| self.fail(e))?;
        let end = (rows * self.width * VALUE) as u64;
        let f = self.file.get_mut();
        f.set_len(end)
            .and_then(|_| f.seek(SeekFrom::Start(end)).map(|_| ()))
            .map_err(|e| RuntimeError::Output(format!("{}: {e}", self.path.display())))?;
        self.rows = rows;
        Ok(())
    }

    /// Flush and close, returning the file's path.
    pub fn finish(mut self) -> Result<PathBuf, RuntimeError> {
        self.file.flush().map_err(|e| self.fail(e))?;
        Ok(self.path)
    }
}

/// Column `j` of every row of a spill file, for `j` in `j0..j1`: one sequential read.
fn read_block(
    path: &Path,
    width: usize,
    j0: usize,
    j1: usize,
) -> Result<Vec<Vec<f64>>, std::io::Error> {
    let mut reader = std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(path)?);
    let mut row = vec![0u8; width * VALUE];
    let mut cols = vec![Vec::new(); j1 - j0];
    loop {
        match reader.read_exact(&mut row) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e),
        }
        for (c, j) in cols.iter_mut().zip(j0..j1) {
            let b: [u8; VALUE] = row[j * VALUE..(j + 1) * VALUE]
                .try_into()
                .expect("a value's bytes");
            c.push(f64::from_ne_bytes(b));
        }
    }
    Ok(cols)
}

/// The summaries of the first `names.len()` columns of the rows spilled to `paths` (one file
/// per chain, rows of `width` values), a block of columns at a time.
pub fn summarize_spilled(
    paths: &[PathBuf],
    width: usize,
    names: &[String],
    rows_per_chain: usize,
) -> Result<Vec<(String, Summary)>, RuntimeError> {
    let names = &names[..names.len().min(width)];
    crate::summary::summarize_in_blocks(
        names,
        rows_per_chain * paths.len(),
        BLOCK_VALUES,
        |j0, j1| {
            paths
                .iter()
                .map(|p| {
                    read_block(p, width, j0, j1)
                        .map_err(|e| RuntimeError::Output(format!("{}: {e}", p.display())))
                })
                .collect()
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpm_runtime::diagnostics::summarize;

    #[test]
    fn spilled_rows_summarise_as_rows_in_memory() {
        let dir = std::env::temp_dir().join(format!("gpmc-spill-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let width = 3;
        let chains: Vec<Vec<Vec<f64>>> = (0..2)
            .map(|c| {
                (0..50)
                    .map(|k| {
                        let x = ((k * 7 + c * 13) % 17) as f64;
                        vec![x, -x * 0.5, (x * 0.3).sin()]
                    })
                    .collect()
            })
            .collect();
        let mut paths = vec![];
        for (c, rows) in chains.iter().enumerate() {
            let mut s = Spill::create(&dir.join(format!("{c}.rows")), width).unwrap();
            for r in rows {
                s.push(r).unwrap();
            }
            // Two rows too many, cut off as an interrupted run's would be.
            s.push(&[9.0, 9.0, 9.0]).unwrap();
            s.push(&[9.0, 9.0, 9.0]).unwrap();
            s.truncate(50).unwrap();
            paths.push(s.finish().unwrap());
        }
        let names: Vec<String> = vec!["a".into(), "b".into()];
        let got = summarize_spilled(&paths, width, &names, 50).unwrap();
        assert_eq!(got.len(), 2);
        for (j, (name, s)) in got.iter().enumerate() {
            let cols: Vec<Vec<f64>> = chains
                .iter()
                .map(|rows| rows.iter().map(|r| r[j]).collect())
                .collect();
            let refs: Vec<&[f64]> = cols.iter().map(|c| c.as_slice()).collect();
            let want = summarize(&refs);
            assert_eq!(name, &names[j]);
            assert_eq!(s.mean, want.mean);
            assert_eq!(s.rhat.to_bits(), want.rhat.to_bits());
            assert_eq!(s.ess_bulk.to_bits(), want.ess_bulk.to_bits());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
