//! Runs of a few chains each joined into the run of all of them (issue 33: chains as tasks on a
//! cluster, `gpmc.Model.sample(..., client=...)`). Chain `k` of a run started at `first_chain`
//! draws from stream `first_chain + k` ([`GibbsConfig::first_chain`]), so the joined chains are
//! the ones a single run of all of them makes, bit for bit; the summaries, the mixing warnings
//! and the Rao-Blackwellised means are then those of all the chains together.

use super::*;
use serde_json::Value;

/// One run's part: its `summary.json`, its rows (chain after chain, `width` values a row).
#[derive(Debug, Clone)]
pub struct RunPart {
    /// Its `summary.json` ([`outputs::summary_json`]).
    pub summary: Value,
    /// Its draws, chain after chain.
    pub rows: Vec<f64>,
    /// Chains.
    pub chains: usize,
    /// Draws per chain.
    pub draws: usize,
}

/// The parts joined, in the order given: the rows (each chain cut to the shortest run's draws,
/// as an interrupted run cuts its chains), chains, draws per chain and the joined
/// `summary.json`. An error if the parts are not of one model run with one set of settings.
pub fn merge_runs(
    c: &Checked,
    columns: &[String],
    parts: &[RunPart],
) -> Result<(Vec<f64>, usize, usize, Value), InferError> {
    let width = columns.len();
    let first = parts
        .first()
        .ok_or_else(|| InferError::Schedule("no runs to join".into()))?;
    for p in parts {
        if p.rows.len() != p.chains * p.draws * width {
            return Err(mismatch(
                "a run's rows are not its chains × draws × columns",
            ));
        }
        for key in ["model", "warmup", "thin", "seed", "hyperparameters"] {
            if p.summary[key] != first.summary[key] {
                return Err(mismatch(&format!("the runs differ in `{key}`")));
            }
        }
    }
    let draws = parts.iter().map(|p| p.draws).min().unwrap_or(0);
    let chains: usize = parts.iter().map(|p| p.chains).sum();
    let mut rows = Vec::with_capacity(chains * draws * width);
    for p in parts {
        for k in 0..p.chains {
            let at = k * p.draws * width;
            rows.extend_from_slice(&p.rows[at..at + draws * width]);
        }
    }
    let params = first.summary["variables"].as_array().map_or(0, Vec::len);
    let summaries =
        outputs::summaries_of(&columns[..params.min(width)], width, &rows, chains, draws);
    let hypers: Vec<(String, f64, String)> = first.summary["hyperparameters"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|h| {
            let text = |k: &str| h[k].as_str().unwrap_or_default().to_string();
            (
                text("name"),
                h["value"].as_f64().unwrap_or(f64::NAN),
                text("set_by"),
            )
        })
        .collect();
    let mut warnings: Vec<String> = crate::warnings::mixing(&summaries, chains)
        .into_iter()
        .chain(crate::warnings::learned(c, &hypers))
        .collect();
    warnings.dedup();
    let joined = |key: &str, inner: &str| -> Vec<Value> {
        parts
            .iter()
            .flat_map(|p| {
                p.summary[key][inner]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .collect()
    };
    let mut summary = first.summary.clone();
    summary["chains"] = json!(chains);
    summary["draws"] = json!(draws);
    summary["interrupted"] = json!(parts.iter().any(|p| p.summary["interrupted"] == true));
    summary["timing_seconds"] = json!({
        "warmup": joined("timing_seconds", "warmup"),
        "sampling": joined("timing_seconds", "sampling"),
        "gibbs_steps": joined("timing_seconds", "gibbs_steps"),
    });
    summary["variables"] = outputs::variables_json(&summaries);
    summary["rao_blackwell"] = rao_blackwell(parts);
    summary["warnings"] = json!(warnings);
    Ok((rows, chains, draws, summary))
}

/// The Rao-Blackwellised means of independent runs: the chain-weighted average of their
/// means, its standard error `√(Σ w² mcse²)` with `w` the runs' shares of the chains.
fn rao_blackwell(parts: &[RunPart]) -> Value {
    let chains: usize = parts.iter().map(|p| p.chains).sum();
    let lists: Vec<&Vec<Value>> = parts
        .iter()
        .filter_map(|p| p.summary["rao_blackwell"].as_array())
        .collect();
    let Some(first) = lists.first() else {
        return json!([]);
    };
    let out: Vec<Value> = first
        .iter()
        .enumerate()
        .filter_map(|(k, entry)| {
            let (mut mean, mut var) = (0.0, 0.0);
            for (p, list) in parts.iter().zip(&lists) {
                let e = list.get(k).filter(|e| e["name"] == entry["name"])?;
                let w = p.chains as f64 / chains as f64;
                mean += w * e["mean"].as_f64()?;
                var += (w * e["mcse_mean"].as_f64().unwrap_or(f64::NAN)).powi(2);
            }
            Some(json!({"name": entry["name"], "mean": mean, "mcse_mean": var.sqrt()}))
        })
        .collect();
    json!(out)
}

fn mismatch(why: &str) -> InferError {
    InferError::Schedule(format!(
        "the chains cannot be joined into one run ({why}): join the results of one call only"
    ))
}
