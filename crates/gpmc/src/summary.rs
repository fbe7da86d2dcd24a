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

/// `v` with `sig` significant figures (fixed notation, at most 12 decimals).
fn sig(v: f64, sig: usize) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    if v == 0.0 {
        return "0".into();
    }
    let magnitude = v.abs().log10().floor() as i64;
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
    let widths: Vec<usize> = (0..head.len())
        .map(|k| {
            cells
                .iter()
                .map(|r| r[k].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in &cells {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(k, c)| {
                if k == 0 {
                    format!("{c:<w$}", w = widths[k])
                } else {
                    format!("{c:>w$}", w = widths[k])
                }
            })
            .collect();
        let _ = writeln!(out, "{}", line.join("  "));
    }
    if rows.len() > max_rows {
        let _ = writeln!(
            out,
            "... and {} more (`gpmc summary DIR --all`, or summary.json)",
            rows.len() - max_rows
        );
    }
    out
}

/// One chain file: its column names and rows.
fn read_chain(path: &Path) -> Result<(Vec<String>, Vec<Vec<f64>>), SummaryError> {
    let io = |m: String| SummaryError(format!("{}: {m}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| io(e.to_string()))?;
    let mut lines = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty());
    let header: Vec<String> = lines
        .next()
        .ok_or_else(|| io("no header row".into()))?
        .split(',')
        .map(String::from)
        .collect();
    let mut rows = Vec::new();
    for (k, l) in lines.enumerate() {
        let row: Vec<f64> = l
            .split(',')
            .map(|c| c.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|e| io(format!("draw {}: {e}", k + 1)))?;
        if row.len() != header.len() {
            return Err(io(format!(
                "draw {} has {} values for {} columns",
                k + 1,
                row.len(),
                header.len()
            )));
        }
        rows.push(row);
    }
    Ok((header, rows))
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
    for k in 1.. {
        let path = dir.join(format!("chain-{k}.csv"));
        if !path.exists() {
            break;
        }
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
    let header =
        header.ok_or_else(|| SummaryError(format!("{}: no chain files", dir.display())))?;
    Ok(ChainFiles { header, chains })
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
    if method != "gibbs" {
        return variational(dir, &summary, options, max_rows).map(|t| out + &t);
    }
    let files = read_chains(dir)?;
    let mut rows = Vec::new();
    for (j, name) in files.header.iter().enumerate() {
        if is_pointwise(name) && !options.pointwise {
            continue;
        }
        rows.push((name.clone(), files.summary(j)));
    }
    let draws = files.chains[0].len();
    let _ = writeln!(
        out,
        "{} chains × {draws} draws{}",
        files.chains.len(),
        if summary["interrupted"] == true {
            " (interrupted)"
        } else {
            ""
        }
    );
    out += &table(&rows, options.sig_figs, max_rows);
    Ok(out)
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
    }
}
