//! A Gibbs run as text: CmdStan chain CSVs, `summary.json` and the summary table.

use super::*;

/// One chain as a CSV in the CmdStan layout (comment header, column names, one row per draw),
/// which `arviz.from_cmdstan` reads.
pub fn chain_csv(c: &Checked, chain: &Chain, k: usize, config: &GibbsConfig) -> String {
    draws_csv(c, chain, k, config, GIBBS_ALGORITHM)
}

/// Draws as a CSV in the CmdStan layout, `algorithm` saying how they were made.
pub fn draws_csv(
    c: &Checked,
    chain: &Chain,
    k: usize,
    config: &GibbsConfig,
    algorithm: &str,
) -> String {
    let columns = column_names(c, &chain.layout);
    let head = chain_head(c, algorithm, config, k, &columns);
    crate::cmdstan::csv(&head, &chain.rows, &chain.times())
}

/// The comment header of chain `k` (0-based) of a run with these settings.
pub(super) fn chain_head<'a>(
    c: &'a Checked,
    algorithm: &'a str,
    config: &GibbsConfig,
    k: usize,
    columns: &'a [String],
) -> crate::cmdstan::Head<'a> {
    crate::cmdstan::Head {
        model: &c.name,
        algorithm,
        num_warmup: config.warmup,
        thin: config.thin,
        id: k + 1,
        seed: config.seed,
        columns,
    }
}

/// `summary.json`.
pub fn summary_json(c: &Checked, r: &InferResult, config: &GibbsConfig) -> serde_json::Value {
    json!({
        "model": c.name,
        "method": if r.nuts.iter().any(|n| !n.in_gibbs) { "nuts" } else { "gibbs" },
        "chains": r.times.len(),
        "warmup": config.warmup,
        "draws": r.draws,
        "draws_requested": config.draws,
        "interrupted": r.interrupted,
        "thin": config.thin,
        "seed": config.seed,
        "hyperparameters": r.hypers.iter().map(|(n, v, how)| json!({"name": n, "value": v, "set_by": how})).collect::<Vec<_>>(),
        "gp_jitter": r.jitter,
        "augmentations": c.plans.iter().map(|p| json!({"factor": p.factor, "form": p.form, "certified_max_rel_error": p.certificate.max_rel_error})).collect::<Vec<_>>(),
        "timing_seconds": {
            "warmup": r.times.iter().map(|t| t.warmup_seconds).collect::<Vec<_>>(),
            "sampling": r.times.iter().map(|t| t.sampling_seconds).collect::<Vec<_>>(),
            // Per chain, per step of the Gibbs sweep as `gpmc check` numbers them: where a
            // sweep's time goes (warm-up included; empty for NUTS on the whole model).
            "gibbs_steps": r.step_seconds,
        },
        "variables": variables_json(&r.summaries),
        // The average of each latent's conditional mean over the draws, beside the plain
        // average above (docs/inference.md, "Rao-Blackwellised means").
        "rao_blackwell": r.rao_blackwell.iter().map(|(n, e)| json!({
            "name": n, "mean": e.mean, "mcse_mean": e.mcse,
        })).collect::<Vec<_>>(),
        "nuts": r.nuts.iter().map(|n| json!({
            "divergences": n.divergences, "max_depth_hits": n.max_depth_hits,
            "step_size": n.step_size, "mean_leapfrog_steps": n.mean_steps,
            "model": if n.augmented { "augmented" } else { "original" },
            // The transitions of the sweep's NUTS step (`GibbsStep::Nuts`), not whole-model NUTS.
            "gibbs_step": n.in_gibbs,
        })).collect::<Vec<_>>(),
        "warnings": gibbs_warnings(c, r),
    })
}

/// The summary over the chains of each of the first `columns.len()` columns: `rows` holds
/// `chains × draws` rows of `width` values, chain after chain (the layout of a run's draws;
/// the columns past the named ones, `log_lik` and `y_rep`, are not summarized).
pub fn summaries_of(
    columns: &[String],
    width: usize,
    rows: &[f64],
    chains: usize,
    draws: usize,
) -> Vec<(String, Summary)> {
    (0..columns.len().min(width))
        .map(|j| {
            let cols: Vec<Vec<f64>> = (0..chains)
                .map(|k| {
                    (0..draws)
                        .map(|d| rows[(k * draws + d) * width + j])
                        .collect()
                })
                .collect();
            let refs: Vec<&[f64]> = cols.iter().map(|v| v.as_slice()).collect();
            (
                columns[j].clone(),
                gpm_runtime::diagnostics::summarize(&refs),
            )
        })
        .collect()
}

/// `summary.json`'s `variables`.
pub fn variables_json(summaries: &[(String, Summary)]) -> serde_json::Value {
    summaries
        .iter()
        .map(|(n, s)| json!({
            "name": n, "mean": s.mean, "sd": s.sd, "q5": s.q5, "q50": s.q50, "q95": s.q95,
            "mcse_mean": s.mcse_mean, "mad": s.mad, "ess_bulk": s.ess_bulk, "ess_tail": s.ess_tail, "rhat": s.rhat,
        }))
        .collect()
}

/// The warnings of a Gibbs run ([`crate::warnings`]): chains that have not mixed, learned
/// hyperparameters the data barely identify.
pub fn gibbs_warnings(c: &Checked, r: &InferResult) -> Vec<String> {
    crate::warnings::extremes(&r.extremes)
        .into_iter()
        .chain(crate::warnings::scale_gaps(&r.scale_gaps))
        .chain(crate::warnings::rounded_log_density(
            &r.summaries,
            !r.nuts.is_empty(),
        ))
        .chain(crate::warnings::mixing(&r.summaries, r.times.len()))
        .chain(crate::warnings::divergences(&r.nuts))
        .chain(crate::warnings::learned(c, &r.hypers))
        .collect()
}

/// The table printed after a run (at most `max_rows` variables, then a count).
pub fn summary_table(r: &InferResult, max_rows: usize) -> String {
    let mut s = crate::summary::table(&r.summaries, 4, max_rows);
    let worst = r
        .summaries
        .iter()
        .map(|(_, x)| x.rhat)
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let min_ess = r
        .summaries
        .iter()
        .map(|(_, x)| x.ess_bulk)
        .filter(|v| v.is_finite())
        .fold(f64::INFINITY, f64::min);
    // Each chain's own elapsed time, summed: the CPU time of the chains when each has a core
    // (more chains than cores overstate it).
    let secs: f64 = r
        .times
        .iter()
        .map(|t| t.warmup_seconds + t.sampling_seconds)
        .sum();
    let _ = writeln!(
        s,
        "max R-hat {worst:.3}; min bulk ESS {min_ess:.0}; {secs:.2} chain-seconds (warm-up and sampling, summed over {} chains; {:.0} min-ESS per chain-second)",
        r.times.len(),
        min_ess / secs.max(1e-9)
    );
    s
}
