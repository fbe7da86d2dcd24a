//! The warnings of a run, decided once here and shown by every front end: the CLI prints them
//! after its table, `summary.json` lists them (`"warnings"`), and the Python package raises
//! each as a `gpmc.GpmcWarning` and keeps them in the InferenceData's attributes. Each says
//! what to do instead.

use crate::Checked;
use gpm_ir::HyperKind;
use gpm_runtime::diagnostics::Summary;

/// Chains that have not mixed: the thresholds of Vehtari et al. (2021), R̂ below 1.01 and bulk
/// ESS above 100 per chain (400 over four) before the draws are trusted.
pub fn mixing(summaries: &[(String, Summary)], chains: usize) -> Option<String> {
    let need = 100.0 * chains as f64;
    let bad: Vec<&str> = summaries
        .iter()
        .filter(|(_, x)| x.rhat > 1.01 || x.ess_bulk < need)
        .map(|(n, _)| n.as_str())
        .collect();
    if bad.is_empty() {
        return None;
    }
    let shown: Vec<&str> = bad.iter().take(5).copied().collect();
    Some(format!(
        "the chains have not mixed well enough (R-hat > 1.01 or bulk ESS < {need:.0}) for {} variables, e.g. {}; run more draws or check the model",
        bad.len(),
        shown.join(", ")
    ))
}

/// A warning naming the latents whose q has a variance or mean beyond double precision (a sd
/// beyond about 1e154: its square overflows): their sds are reported as infinite.
pub fn q_overflowed(latents: Option<&[gpm_runtime::posterior::LatentMoments]>) -> Option<String> {
    let names: Vec<&str> = latents?
        .iter()
        .filter(|(_, m, v)| m.iter().chain(v.iter()).any(|x| !x.is_finite()))
        .map(|(n, ..)| n.as_str())
        .collect();
    (!names.is_empty()).then(|| {
        format!(
            "q of {} is beyond double precision (a sd beyond about 1e154, whose square overflows): its moments are reported as infinite; rescale the model (priors and data on the scale of the problem)",
            names.join(", ")
        )
    })
}

/// The warning of a particle flow that did not converge, with how far from stationary it
/// ended where that is measured.
pub fn flow_unconverged(r: &gpm_runtime::gpf::GpfResult) -> String {
    let far = r.stationarity.map_or(String::new(), |s| {
        format!(
            " (its gradients would still move a mean by {:.2e} sd and change the spread by {:.2e} %)",
            s.mean_shift_sd,
            100.0 * s.spread_residual
        )
    });
    format!(
        "the particle flow stopped after {} steps without converging{far}: q is not the flow's optimum and its means and sds may be off; more --iterations or --particles (Python: iterations=, particles=), or CAVI or Gibbs where the model has them",
        r.free_energy.len() - 1
    )
}

/// The warning of a CAVI run that stopped after `iterations` without converging.
pub fn cavi_unconverged(iterations: usize) -> String {
    format!(
        "CAVI stopped after {iterations} iterations without converging (the ELBO still rose by more than 1e-9 of its value): q is not the optimum; more --iterations (Python: iterations=)"
    )
}

/// Values whose squares leave double precision ([`crate::magnitudes`]): the arithmetic on
/// them under- or overflows whatever the method.
pub fn extremes(found: &[crate::magnitudes::Extreme]) -> Option<String> {
    let shown: Vec<String> = found
        .iter()
        .take(3)
        .map(|e| format!("{} = {:.3e}", e.what, e.value))
        .collect();
    (!found.is_empty()).then(|| {
        format!(
            "{}{} beyond 1e±150: squares of such values leave double precision (about 1e±308) and under- or overflow, so the results may be wrong; rescale the data and the model's constants to the problem's scale (measure y in other units, divide x by its spread)",
            shown.join(", "),
            if found.len() > 3 {
                format!(" and {} more", found.len() - 3)
            } else {
                String::new()
            }
        )
    })
}

/// Above this magnitude of the log density the rounding of its value (`|lp| · 2⁻⁵²`) is
/// above 10⁻³: NUTS accepts and stops its trees on differences of order one, which rounding
/// then blurs (measured by the extreme fuzz: data at 2e25 with a noise sd of 3e16 put
/// `lp__` near −3e18, rounding ±400, and NUTS returned a posterior sd 5× the exact one).
pub const ROUNDED_LOG_DENSITY: f64 = 1e-3 / f64::EPSILON;

/// NUTS whose log density is so large that its rounding blurs the energy differences it
/// runs on: read from the draws' `lp__`.
pub fn rounded_log_density(summaries: &[(String, Summary)], nuts_ran: bool) -> Option<String> {
    let (_, lp) = summaries.iter().find(|(n, _)| n == "lp__")?;
    let largest = lp.mean.abs() + 3.0 * lp.sd;
    (nuts_ran && largest > ROUNDED_LOG_DENSITY).then(|| {
        format!(
            "the log density reaches {:.1e} in magnitude, where double precision rounds its value by about {:.1e}: NUTS's accept steps and U-turns use differences of order one, which that rounding blurs, so its draws may be wrong; center and rescale the data (the residuals y − η over their scale should be of order one), or use Gibbs (the default)",
            largest,
            largest * f64::EPSILON
        )
    })
}

/// NUTS from prior draws where a prior is far wider than the data allow
/// ([`gpm_runtime::scale_gap`]): why its chains will not mix, and what to do.
pub fn scale_gaps(gaps: &[gpm_runtime::scale_gap::ScaleGap]) -> Vec<String> {
    gaps.iter()
        .map(|g| {
            format!(
                "NUTS whitens `{}` by its prior (sd {:.3e}) and starts from prior draws, but the data pin it about {:.1e} times more tightly than the prior does: warm-up does not cross such a gap (measured: a logistic regression mixes with a prior sd of 1e3 and not with 1e6); give it a prior on the problem's scale, or use Gibbs (the default), which conditions exactly",
                g.latent,
                g.prior_sd,
                g.whitened_curvature.sqrt()
            )
        })
        .collect()
}

/// NUTS's divergent transitions and saturated trees after warm-up, as Stan reports them: a
/// divergence means the sampler could not follow the posterior's curvature there, and its
/// draws may be biased.
pub fn divergences(stats: &[gpm_runtime::nuts::NutsStats]) -> Vec<String> {
    let draws_with =
        |f: fn(&gpm_runtime::nuts::NutsStats) -> usize| stats.iter().map(f).sum::<usize>();
    let mut out = Vec::new();
    let d = draws_with(|s| s.divergences);
    if d > 0 && stats.iter().all(|s| s.in_gibbs) {
        out.push(format!(
            "{d} divergent transitions after warm-up in the sweep's NUTS step: the block's posterior has curvature NUTS could not follow and the draws may be biased; run more warm-up sweeps, or give its scales more informative priors"
        ));
    } else if d > 0 {
        out.push(format!(
            "{d} divergent transitions after warm-up: the posterior has curvature NUTS could not follow (a funnel?) and the draws may be biased; raise --adapt-delta (0.95, 0.99), run more warm-up, reparametrise, or use --method gibbs"
        ));
    }
    let m = draws_with(|s| s.max_depth_hits);
    let depth = stats.iter().map(|s| s.max_depth).max().unwrap_or(0);
    if m > 0 {
        out.push(format!(
            "{m} transitions reached the largest tree depth ({depth}): NUTS took 2^{depth} leapfrog steps there, a sign of a hard geometry; the draws are valid but slow (--max-treedepth raises it)"
        ));
    }
    out
}

/// How far (a factor either way) a learned value may move from its initial value before the
/// run says the data barely identify it.
const LEARNED_RANGE: f64 = 100.0;

/// What the way a learned hyperparameter was set says when type-II ML stopped at its cap on
/// ELBO evaluations (`crate::infer` appends it; [`learned`] warns of it).
pub const CAPPED: &str = "; stopped at the cap on ELBO evaluations before converging";

/// Type-II ML that stopped at its cap, and hyperparameters it took far from their initial
/// values (a lengthscale of 52 on inputs of unit scale, a variance of 38 336): the marginal
/// likelihood is flat in that direction, and a prior would say what the data cannot. `hypers`
/// are the run's (name, value, how it was set), in declaration order.
pub fn learned(c: &Checked, hypers: &[(String, f64, String)]) -> Vec<String> {
    let capped: Vec<&str> = hypers
        .iter()
        .filter(|(_, _, how)| how.ends_with(CAPPED))
        .map(|(n, _, _)| n.as_str())
        .collect();
    let mut out: Vec<String> = (!capped.is_empty())
        .then(|| {
            format!(
                "type-II ML stopped at its cap on ELBO evaluations before converging: `{}` may not be at the optimum; give them priors and sample them, or fix them",
                capped.join("`, `")
            )
        })
        .into_iter()
        .collect();
    out.extend(far_from_start(c, hypers));
    out
}

/// Hyperparameters type-II ML took far from their initial values.
fn far_from_start(c: &Checked, hypers: &[(String, f64, String)]) -> Vec<String> {
    c.model
        .hypers
        .iter()
        .zip(hypers)
        .filter_map(|(h, (name, value, how))| {
            let (HyperKind::Learn { init }, gpm_ir::Shape::Scalar) = (&h.kind, &h.shape) else {
                return None;
            };
            let init = *init;
            let ratio = value / init;
            let far = ratio.is_finite()
                && ratio > 0.0
                && !(1.0 / LEARNED_RANGE..=LEARNED_RANGE).contains(&ratio);
            (far && how.starts_with("learned")).then(|| {
                format!(
                    "type-II ML took `{name}` from {init} to {value:.4}: the data barely identify it (the marginal likelihood is flat that way); give it a prior (`~ gamma(...)`, `~ lognormal(...)`) and sample it with Gibbs, or fix it"
                )
            })
        })
        .collect()
}

/// Hyperparameters with a prior that a variational method held at their starting value (it
/// does not integrate over hyperparameter priors).
pub fn held_by_variational(c: &Checked, hypers: &[(String, f64, String)]) -> Vec<String> {
    c.model
        .hypers
        .iter()
        .zip(hypers)
        .filter(|(h, _)| matches!(h.kind, HyperKind::Prior { .. }))
        .map(|(_, (name, value, _))| {
            format!(
                "`{name}` has a prior, which the variational methods do not integrate over: it was held at {value:.4}; sample it with --method gibbs (Python: `Model.sample`), or declare it `learn(...)` for type-II ML"
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODEL: &str = "data { N : int; x : vector[N]; y : vector[N]; }
        hyper { ell : real in 0.. = learn(1.0); s : real in 0.. ~ gamma(2, 1); }
        latent { f : vector[N] ~ gp(x, sqexp(ell)); }
        model { y ~ normal(f, s); }";

    #[test]
    fn a_learned_value_far_from_its_start_and_a_held_prior_are_named() {
        let c = crate::check("m.gpm", MODEL).unwrap();
        let learned = |v: f64| {
            vec![
                (
                    "ell".to_string(),
                    v,
                    "learned by type-II ML (ELBO -1 after 40 evaluations)".to_string(),
                ),
                ("s".to_string(), 1.5, "prior".to_string()),
            ]
        };
        let w = super::learned(&c, &learned(52.0 * 2.0));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("`ell` from 1 to 104.0000") && w[0].contains("give it a prior"),
            "{w:?}"
        );
        assert!(
            super::learned(&c, &learned(52.0)).is_empty(),
            "within a factor 100"
        );
        assert!(super::learned(&c, &learned(0.001)).len() == 1);
        let mut capped = learned(1.0);
        capped[0].2.push_str(CAPPED);
        let w = super::learned(&c, &capped);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("stopped at its cap") && w[0].contains("`ell`"),
            "{w:?}"
        );
        let held = held_by_variational(&c, &learned(1.0));
        assert_eq!(held.len(), 1);
        assert!(held[0].starts_with("`s` has a prior") && held[0].contains("--method gibbs"));
    }

    #[test]
    fn unmixed_chains_are_counted_and_named() {
        let s = |rhat: f64, ess: f64| Summary {
            mean: 0.0,
            sd: 1.0,
            mad: 1.0,
            q5: -1.6,
            q50: 0.0,
            q95: 1.6,
            mcse_mean: 0.05,
            ess_bulk: ess,
            ess_tail: ess,
            rhat,
        };
        let rows = vec![
            ("a".to_string(), s(1.0, 900.0)),
            ("b".to_string(), s(1.05, 900.0)),
            ("c".to_string(), s(1.0, 150.0)),
        ];
        let w = mixing(&rows, 2).unwrap();
        assert!(
            w.contains("for 2 variables, e.g. b, c") && w.contains("ESS < 200"),
            "{w}"
        );
        assert!(mixing(&rows[..1], 2).is_none());
    }
}
