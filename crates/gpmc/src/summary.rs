//! `gpmc summary OUT_DIR`: a run's summary re-made from its files — for Gibbs, every column of
//! the chain CSVs summarised as `stansummary` does (mean, MCSE, sd, MAD, quantiles, bulk and
//! tail ESS, R̂); for a variational run, its fit and `posterior.csv`. The table printed after
//! `gpmc infer` is the same table.

use gpm_runtime::diagnostics::{summarize, Summary};
use std::fmt::Write as _;
use std::path::Path;

/// Why a directory cannot be summarised.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct SummaryError(pub String);

/// What to show.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Every variable, not only the first 20.
    pub all: bool,
    /// Significant figures of the statistics.
    pub sig_figs: usize,
    /// Include the pointwise columns (`log_lik`, `y_rep`).
    pub pointwise: bool,
}

/// Rows shown unless `--all`.
const FIRST_ROWS: usize = 20;

/// `v` with `sig` significant figures: fixed notation from 1e-6 to below 1e9, scientific
/// beyond (a draw of 1e195 is not printed as 196 digits, nor 1e-20 as 0.000000000000).
fn sig(v: f64, sig: usize) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    if v == 0.0 {
        return "0".into();
    }
    let magnitude = v.abs().log10().floor() as i64;
    if !(-6..9).contains(&magnitude) {
        let decimals = sig.saturating_sub(1);
        return format!("{v:.decimals$e}");
    }
    let decimals = (sig as i64 - 1 - magnitude).clamp(0, 12) as usize;
    format!("{v:.decimals$}")
}

/// The summary table of named columns: at most `max_rows` rows, then a count of the others.
pub fn table(rows: &[(String, Summary)], sig_figs: usize, max_rows: usize) -> String {
    let head = [
        "variable", "mean", "mcse", "sd", "mad", "5%", "50%", "95%", "ess_bulk", "ess_tail", "rhat",
    ];
    let mut cells: Vec<Vec<String>> = vec![head.iter().map(|h| h.to_string()).collect()];
    for (name, s) in rows.iter().take(max_rows) {
        let f = |v: f64| sig(v, sig_figs);
        cells.push(vec![
            name.clone(),
            f(s.mean),
            f(s.mcse_mean),
            f(s.sd),
            f(s.mad),
            f(s.q5),
            f(s.q50),
            f(s.q95),
            format!("{:.0}", s.ess_bulk),
            format!("{:.0}", s.ess_tail),
            format!("{:.3}", s.rhat),
        ]);
    }
    let mut out = aligned(&cells);
    if rows.len() > max_rows {
        let _ = writeln!(
            out,
            "... and {} more (`gpmc summary DIR --all`, or summary.json)",
            rows.len() - max_rows
        );
    }
    out
}

/// Rows of cells as text: the first column left-aligned, the others right-aligned, each as wide
/// as its widest cell.
fn aligned(cells: &[Vec<String>]) -> String {
    let columns = cells.first().map_or(0, |r| r.len());
    let widths: Vec<usize> = (0..columns)
        .map(|k| {
            cells
                .iter()
                .map(|r| r[k].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in cells {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(k, c)| {
                // Padded by hand: `format!`'s width is limited to 65 535.
                let pad = " ".repeat(widths[k].saturating_sub(c.chars().count()));
                if k == 0 {
                    format!("{c}{pad}")
                } else {
                    format!("{pad}{c}")
                }
            })
            .collect();
        let _ = writeln!(out, "{}", line.join("  "));
    }
    out
}

/// The Rao-Blackwellised means of a Gibbs run's `summary.json` (docs/inference.md) beside the
/// plain averages of the draws `rows`: each entry's mean and MCSE both ways and the ratio of the
/// MCSEs (how many times fewer draws the Rao-Blackwellised mean needs, squared). Empty when
/// the run has none.
fn rao_blackwell_table(
    summary: &serde_json::Value,
    rows: &[(String, Summary)],
    sig_figs: usize,
    max_rows: usize,
) -> String {
    let Some(rb) = summary["rao_blackwell"]
        .as_array()
        .filter(|a| !a.is_empty())
    else {
        return String::new();
    };
    let f = |v: f64| sig(v, sig_figs);
    let mut cells: Vec<Vec<String>> = vec![[
        "variable",
        "rb_mean",
        "rb_mcse",
        "draws_mean",
        "draws_mcse",
        "mcse_ratio",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect()];
    for r in rb.iter().take(max_rows) {
        let name = r["name"].as_str().unwrap_or("?");
        let (mean, mcse) = (
            r["mean"].as_f64().unwrap_or(f64::NAN),
            r["mcse_mean"].as_f64().unwrap_or(f64::NAN),
        );
        let plain = rows.iter().find(|(n, _)| n == name).map(|(_, s)| s);
        let (dm, dmcse) = plain.map_or((f64::NAN, f64::NAN), |s| (s.mean, s.mcse_mean));
        cells.push(vec![
            name.to_string(),
            f(mean),
            f(mcse),
            f(dm),
            f(dmcse),
            format!("{:.2}", dmcse / mcse),
        ]);
    }
    let mut out = String::from(
        "Rao-Blackwellised means (averages of each draw's conditional mean given the auxiliaries):\n",
    );
    out += &aligned(&cells);
    if rb.len() > max_rows {
        let _ = writeln!(out, "... and {} more", rb.len() - max_rows);
    }
    out
}

/// The data lines of a chain file, streamed: its column names, then each draw row's text
/// (comment and empty lines skipped), with the row number for messages.
struct Lines {
    path: std::path::PathBuf,
    lines: std::io::Lines<std::io::BufReader<std::fs::File>>,
    header: Vec<String>,
    row: usize,
}

impl Lines {
    fn open(path: &Path) -> Result<Lines, SummaryError> {
        use std::io::BufRead as _;
        let file = std::fs::File::open(path)
            .map_err(|e| SummaryError(format!("{}: {e}", path.display())))?;
        let mut lines = Lines {
            path: path.to_path_buf(),
            lines: std::io::BufReader::new(file).lines(),
            header: vec![],
            row: 0,
        };
        let head = lines
            .next_line()?
            .ok_or_else(|| lines.error("no header row".into()))?;
        lines.header = head.split(',').map(String::from).collect();
        Ok(lines)
    }

    fn error(&self, m: String) -> SummaryError {
        SummaryError(format!("{}: {m}", self.path.display()))
    }

    /// The next data line.
    fn next_line(&mut self) -> Result<Option<String>, SummaryError> {
        for l in self.lines.by_ref() {
            let l = l.map_err(|e| SummaryError(format!("{}: {e}", self.path.display())))?;
            if !l.starts_with('#') && !l.is_empty() {
                return Ok(Some(l));
            }
        }
        Ok(None)
    }

    /// The values of the next row in `cols` (all of them when `None`).
    fn next_row(
        &mut self,
        cols: Option<std::ops::Range<usize>>,
    ) -> Result<Option<Vec<f64>>, SummaryError> {
        let Some(l) = self.next_line()? else {
            return Ok(None);
        };
        self.row += 1;
        let width = self.header.len();
        let cols = cols.unwrap_or(0..width);
        let mut out = Vec::with_capacity(cols.len());
        let mut n = 0;
        for (k, cell) in l.split(',').enumerate() {
            n = k + 1;
            if cols.contains(&k) {
                let v = cell
                    .trim()
                    .parse::<f64>()
                    .map_err(|e| self.error(format!("draw {}: {e}", self.row)))?;
                out.push(v);
            }
        }
        if n != width {
            return Err(self.error(format!(
                "draw {} has {n} values for {width} columns",
                self.row
            )));
        }
        Ok(Some(out))
    }
}

/// One chain file: its column names and rows.
fn read_chain(path: &Path) -> Result<(Vec<String>, Vec<Vec<f64>>), SummaryError> {
    let mut lines = Lines::open(path)?;
    let mut rows = Vec::new();
    while let Some(r) = lines.next_row(None)? {
        rows.push(r);
    }
    Ok((lines.header, rows))
}

/// Values held in memory at once while summarising files (64 MB of them).
const BLOCK_VALUES: usize = 8 << 20;

/// The summaries of the columns named `names` (the first ones), gathered a block of columns at
/// a time so that at most about `budget` values are held: `read(j0, j1)` gives, per chain, the
/// values of columns `j0..j1`; `rows` is the number of rows over all chains.
pub fn summarize_in_blocks<E>(
    names: &[String],
    rows: usize,
    budget: usize,
    mut read: impl FnMut(usize, usize) -> Result<Vec<Vec<Vec<f64>>>, E>,
) -> Result<Vec<(String, Summary)>, E> {
    let block = (budget / rows.max(1)).max(1);
    let mut out = Vec::with_capacity(names.len());
    let mut j0 = 0;
    while j0 < names.len() {
        let j1 = (j0 + block).min(names.len());
        let per_chain = read(j0, j1)?;
        let columns: Vec<Vec<&[f64]>> = (j0..j1)
            .map(|j| per_chain.iter().map(|c| c[j - j0].as_slice()).collect())
            .collect();
        let summaries = gpm_runtime::diagnostics::summarize_each(&columns);
        out.extend(names[j0..j1].iter().cloned().zip(summaries));
        j0 = j1;
    }
    Ok(out)
}

/// Draw rows in the chain files, all chains together.
fn count_rows(paths: &[std::path::PathBuf]) -> Result<usize, SummaryError> {
    let mut rows = 0;
    for p in paths {
        let mut lines = Lines::open(p)?;
        while lines.next_line()?.is_some() {
            rows += 1;
        }
    }
    Ok(rows)
}

/// The summaries of columns `0..columns` of chain files, read back a block of columns at a
/// time, so that memory is bounded whatever the number of draws (one pass over the files per
/// block; one block for most runs).
pub fn summarize_files(
    paths: &[std::path::PathBuf],
    columns: usize,
) -> Result<Vec<(String, Summary)>, SummaryError> {
    let Some(first) = paths.first() else {
        return Ok(vec![]);
    };
    let header = Lines::open(first)?.header;
    let rows = count_rows(paths)?;
    let names = &header[..columns.min(header.len())];
    summarize_in_blocks(names, rows, BLOCK_VALUES, |j0, j1| {
        // Per chain, per column of the block, its values.
        let mut per_chain = Vec::with_capacity(paths.len());
        for p in paths {
            let mut lines = Lines::open(p)?;
            if lines.header != header {
                return Err(lines.error(format!("other columns than {}", first.display())));
            }
            let mut cols = vec![Vec::new(); j1 - j0];
            while let Some(r) = lines.next_row(Some(j0..j1))? {
                for (c, v) in cols.iter_mut().zip(r) {
                    c.push(v);
                }
            }
            per_chain.push(cols);
        }
        Ok(per_chain)
    })
}

/// The chain files of the run in `dir`, in order.
fn chain_paths(dir: &Path) -> Result<Vec<std::path::PathBuf>, SummaryError> {
    let paths: Vec<_> = (1..)
        .map(|k| dir.join(format!("chain-{k}.csv")))
        .take_while(|p| p.exists())
        .collect();
    if paths.is_empty() {
        return Err(SummaryError(format!("{}: no chain files", dir.display())));
    }
    Ok(paths)
}

/// The draws of the run in `dir` that prediction uses: at most about `max_draws` rows, evenly
/// thinned over all chains as [`gpm_runtime::predict::draw_step`] says (only those rows are
/// kept in memory).
pub(crate) fn read_draws(dir: &Path, max_draws: usize) -> Result<ChainFiles, SummaryError> {
    let paths = chain_paths(dir)?;
    let total = count_rows(&paths)?;
    let step = gpm_runtime::predict::draw_step(total, max_draws);
    let mut header: Option<Vec<String>> = None;
    let mut chains = Vec::with_capacity(paths.len());
    let mut k = 0;
    for p in &paths {
        let mut lines = Lines::open(p)?;
        if header.as_ref().is_some_and(|h| *h != lines.header) {
            return Err(lines.error("other columns than chain-1.csv".into()));
        }
        let mut rows = Vec::new();
        while let Some(r) = lines.next_row(None)? {
            if k % step == 0 {
                rows.push(r);
            }
            k += 1;
        }
        header.get_or_insert(lines.header);
        chains.push(rows);
    }
    Ok(ChainFiles {
        header: header.unwrap_or_default(),
        chains,
    })
}

/// A run's chain files (`chain-1.csv`, `chain-2.csv`, … in order): their column names, the
/// same in every file, and each chain's rows.
pub(crate) struct ChainFiles {
    /// Column names.
    pub header: Vec<String>,
    /// Per chain, its rows.
    pub chains: Vec<Vec<Vec<f64>>>,
}

impl ChainFiles {
    /// The summary of column `j` over all chains.
    pub fn summary(&self, j: usize) -> Summary {
        let columns: Vec<Vec<f64>> = self
            .chains
            .iter()
            .map(|rows| rows.iter().map(|row| row[j]).collect())
            .collect();
        let refs: Vec<&[f64]> = columns.iter().map(|c| c.as_slice()).collect();
        summarize(&refs)
    }
}

/// Whether a column is one of the pointwise ones (`log_lik`, `y_rep`), not a parameter.
pub(crate) fn is_pointwise(name: &str) -> bool {
    name.starts_with("log_lik.") || name.starts_with("y_rep.")
}

/// Read the chain files of the run in `dir`.
pub(crate) fn read_chains(dir: &Path) -> Result<ChainFiles, SummaryError> {
    let mut header = None;
    let mut chains = Vec::new();
    for path in chain_paths(dir)? {
        let (h, rows) = read_chain(&path)?;
        if header.as_ref().is_some_and(|first| *first != h) {
            return Err(SummaryError(format!(
                "{}: other columns than chain-1.csv",
                path.display()
            )));
        }
        header.get_or_insert(h);
        chains.push(rows);
    }
    Ok(ChainFiles {
        header: header.unwrap_or_default(),
        chains,
    })
}

/// The summary of the run in `dir`.
pub fn summarize_dir(dir: &Path, options: &Options) -> Result<String, SummaryError> {
    let summary_path = dir.join("summary.json");
    let summary: serde_json::Value = std::fs::read_to_string(&summary_path)
        .map_err(|e| {
            SummaryError(format!(
                "{}: {e} (not a gpmc output directory?)",
                summary_path.display()
            ))
        })
        .and_then(|t| {
            serde_json::from_str(&t)
                .map_err(|e| SummaryError(format!("{}: {e}", summary_path.display())))
        })?;
    let method = summary["method"].as_str().unwrap_or("?").to_string();
    let max_rows = if options.all { usize::MAX } else { FIRST_ROWS };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} — method {method}",
        summary["model"].as_str().unwrap_or("?")
    );
    // Gibbs and NUTS write chain files; the variational methods a fit and `posterior.csv`.
    if method != "gibbs" && method != "nuts" {
        return variational(dir, &summary, options, max_rows).map(|t| out + &t);
    }
    let paths = chain_paths(dir)?;
    let header = Lines::open(&paths[0])?.header;
    // The pointwise columns come last.
    let columns = if options.pointwise {
        header.len()
    } else {
        header.iter().take_while(|n| !is_pointwise(n)).count()
    };
    let rows = summarize_files(&paths, columns)?;
    let draws = summary["draws"].as_u64().unwrap_or(0);
    let _ = writeln!(
        out,
        "{} chains × {draws} draws{}",
        paths.len(),
        if summary["interrupted"] == true {
            " (interrupted)"
        } else {
            ""
        }
    );
    out += &table(&rows, options.sig_figs, max_rows);
    out += &rao_blackwell_table(&summary, &rows, options.sig_figs, max_rows);
    out += &step_times(&summary);
    Ok(out)
}

/// Where a Gibbs sweep's time goes: the seconds each step took over all chains, warm-up
/// included (`summary.json`'s `timing_seconds.gibbs_steps`; empty for NUTS on the whole model
/// and for runs written before it was recorded).
fn step_times(summary: &serde_json::Value) -> String {
    let mut totals: Vec<f64> = Vec::new();
    let chains = summary["timing_seconds"]["gibbs_steps"].as_array();
    for chain in chains.into_iter().flatten() {
        for (k, seconds) in chain.as_array().into_iter().flatten().enumerate() {
            if totals.len() <= k {
                totals.resize(k + 1, 0.0);
            }
            totals[k] += seconds.as_f64().unwrap_or(0.0);
        }
    }
    let all: f64 = totals.iter().sum();
    if !(all > 0.0) {
        return String::new();
    }
    let mut out = String::from(
        "\ntime per step of the sweep (all chains, warm-up included; steps as `gpmc check` \
         numbers them)\n",
    );
    for (k, t) in totals.iter().enumerate() {
        let _ = writeln!(
            out,
            "  {:>2}. {:>9} s  {:>5.1} %",
            k + 1,
            sig(*t, 3),
            100.0 * t / all
        );
    }
    out
}

/// A variational run: its fit, hyperparameters and the marginals of `posterior.csv`.
fn variational(
    dir: &Path,
    summary: &serde_json::Value,
    options: &Options,
    max_rows: usize,
) -> Result<String, SummaryError> {
    let mut out = String::new();
    let elbo = match &summary["elbo"] {
        serde_json::Value::Array(trace) => trace.last().and_then(|v| v.as_f64()),
        v => v.as_f64(),
    };
    let _ = writeln!(
        out,
        "converged: {}; iterations: {}; ELBO {}",
        summary["converged"],
        summary["iterations"],
        elbo.map_or("?".into(), |e| sig(e, options.sig_figs + 4))
    );
    for h in summary["hyperparameters"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "hyperparameter {} = {} ({})",
            h["name"].as_str().unwrap_or("?"),
            h["value"],
            h["set_by"].as_str().unwrap_or("")
        );
    }
    let path = dir.join("posterior.csv");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(out);
    };
    let mut lines = text.lines();
    let _ = lines.next();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let _ = writeln!(out, "{:<16} {:>12} {:>12}", "variable", "mean", "sd");
    for r in rows.iter().take(max_rows) {
        let num = |k: usize| {
            r.get(k)
                .and_then(|c| c.parse::<f64>().ok())
                .unwrap_or(f64::NAN)
        };
        let _ = writeln!(
            out,
            "{:<16} {:>12} {:>12}",
            r.first().unwrap_or(&"?"),
            sig(num(1), options.sig_figs),
            sig(num(2), options.sig_figs)
        );
    }
    if rows.len() > max_rows {
        let _ = writeln!(out, "... and {} more (`--all`)", rows.len() - max_rows);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::sig;

    #[test]
    fn significant_figures() {
        assert_eq!(sig(0.0123456, 3), "0.0123");
        assert_eq!(sig(123.456, 3), "123");
        assert_eq!(sig(-1.5, 2), "-1.5");
        assert_eq!(sig(98765.4, 2), "98765");
        assert_eq!(sig(f64::NAN, 3), "NaN");
        assert_eq!(sig(2.5634e195, 3), "2.56e195");
        assert_eq!(sig(-1.5e-20, 2), "-1.5e-20");
        assert_eq!(sig(1234567890.0, 3), "1.23e9");
        assert_eq!(sig(123456789.0, 3), "123456789");
    }
}
