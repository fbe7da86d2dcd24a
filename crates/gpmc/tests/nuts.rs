//! `--method nuts` (issue 35 item 1): NUTS on the original model, the latents whitened by their
//! priors and the gradients the CAS's, against Gibbs on the augmented model — two exact
//! samplers of the same posterior by different routes. On four example models every latent's
//! posterior mean agrees within the two chains' Monte Carlo errors, and its sd within 10 %,
//! with no divergence and short trajectories (which a wrong gradient would not give);
//! a fixed seed gives the same draws; what NUTS cannot run yet is refused with what to do.

mod common;
use common::four_chains;
use std::path::Path;

fn load(model: &str) -> (gpmc::Checked, gpm_runtime::data::Data) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    let src = std::fs::read_to_string(root.join(format!("{model}.gpm"))).unwrap();
    let c = gpmc::check(model, &src).unwrap_or_else(|f| panic!("{}", f.render()));
    let d = gpmc::data::load(
        &c.model,
        &[root.join(format!("{model}.data.json")).as_path()],
    )
    .unwrap();
    (c, d)
}

fn run(
    c: &gpmc::Checked,
    d: &gpm_runtime::data::Data,
    nuts: bool,
    seed: u64,
) -> gpmc::infer::InferResult {
    let extras = gpmc::infer::GibbsExtras {
        nuts,
        ..Default::default()
    };
    let config = four_chains(if nuts { 500 } else { 300 }, 1500, seed);
    gpmc::infer::run_gibbs_with(c, d, &config, extras, &|_, _| {}).unwrap()
}

#[test]
fn nuts_agrees_with_gibbs_on_four_models() {
    for model in [
        "gp_classification",
        "logistic_regression",
        "poisson_gp",
        "robust_gp_regression",
    ] {
        let (c, d) = load(model);
        let (n, g) = (run(&c, &d, true, 11), run(&c, &d, false, 12));
        let (mut worst_z, mut worst_sd): (f64, f64) = (0.0, 0.0);
        for (name, s) in &g.summaries {
            if name == "lp__" {
                continue;
            }
            let t = &n.summaries.iter().find(|(m, _)| m == name).unwrap().1;
            let z = (t.mean - s.mean) / (t.mcse_mean.powi(2) + s.mcse_mean.powi(2)).sqrt();
            worst_z = worst_z.max(z.abs());
            worst_sd = worst_sd.max((t.sd / s.sd - 1.0).abs());
        }
        let divergences: usize = n.nuts.iter().map(|s| s.divergences).sum();
        eprintln!(
            "{model}: worst |z| {worst_z:.2}, worst sd ratio off by {worst_sd:.3}, {divergences} divergences, step {:.3}, {:.1} leapfrog steps a draw",
            n.nuts[0].step_size, n.nuts[0].mean_steps
        );
        assert!(worst_z < 4.5, "{model}: worst z {worst_z}");
        assert!(worst_sd < 0.1, "{model}: worst sd ratio off by {worst_sd}");
        assert_eq!(divergences, 0, "{model}");
        // A wrong gradient leaves NUTS exact (the Metropolis step uses the density) but
        // slow: at 1.3 times the likelihood's gradient every draw took 1 023 leapfrog steps
        // with a step of 0.003; with the right one 4-15.
        for s in &n.nuts {
            assert!(
                s.max_depth_hits == 0 && s.mean_steps < 64.0,
                "{model}: {s:?}"
            );
        }
    }
}

#[test]
fn nuts_is_reproducible_and_refuses_what_it_cannot_run() {
    let (c, d) = load("gp_classification");
    let config = four_chains(100, 50, 3);
    let extras = || gpmc::infer::GibbsExtras {
        nuts: true,
        ..Default::default()
    };
    let a = gpmc::infer::run_gibbs_with(&c, &d, &config, extras(), &|_, _| {}).unwrap();
    let b = gpmc::infer::run_gibbs_with(&c, &d, &config, extras(), &|_, _| {}).unwrap();
    assert_eq!(a.chains[2].rows, b.chains[2].rows);
    for (model, says) in [
        ("hierarchical_logistic", "sampled hyperparameters"),
        ("multiclass_gp", "gradient"),
        ("sparse_gp_classification", "gradient"),
    ] {
        let (c, d) = load(model);
        let e = gpmc::infer::run_gibbs_with(&c, &d, &config, extras(), &|_, _| {})
            .err()
            .unwrap_or_else(|| panic!("{model} ran"));
        assert!(e.to_string().contains(says), "{model}: {e}");
    }
}
