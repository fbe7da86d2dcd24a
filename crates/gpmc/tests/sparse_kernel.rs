//! A sparse GP's kernel hyperparameters with priors are sampled under Gibbs, each with the
//! column integrated out under its FITC prior. With the inducing inputs at the training inputs
//! the FITC prior is the full GP, so the posterior of the lengthscale must agree with the full
//! GP's (sampled with the GP integrated out) within Monte Carlo error.

use crate::common;
use common::four_chains;
use serde_json::json;

fn model(sparse: bool) -> String {
    format!(
        "data {{ N : int; x : vector[N]; Z : vector[N]; y : int[N] in {{-1, 1}}; }}
         hyper {{ ell : real in 0.. ~ gamma(4, 4); }}
         latent {{ f : vector[N] ~ gp(x, 2.0 * sqexp(ell){}); }}
         model {{ y ~ bernoulli_logit(f); }}",
        if sparse { ", inducing = Z" } else { "" }
    )
}

#[test]
fn sparse_kernel_hyperparameters_match_the_full_gp_when_inducing_at_the_data() {
    let n = 30;
    let x: Vec<f64> = (0..n)
        .map(|i| -3.0 + 6.0 * i as f64 / (n - 1) as f64)
        .collect();
    let y: Vec<i64> = x
        .iter()
        .enumerate()
        .map(|(i, v)| {
            if (2.0 * v).sin() + 0.4 * ((i * 5 % 7) as f64 - 3.0) / 3.0 > 0.0 {
                1
            } else {
                -1
            }
        })
        .collect();
    let data = json!({"N": n, "x": x, "Z": x, "y": y});
    let config = four_chains(300, 2500, 13);
    let mut ells = Vec::new();
    for sparse in [false, true] {
        let c = gpmc::check("k", &model(sparse)).unwrap();
        let s = c.schedule.as_ref().unwrap();
        assert!(
            s.hyper_steps[0].gibbs.is_sampled(),
            "sparse {sparse}: {:?}",
            s.hyper_steps[0].gibbs
        );
        let d = gpmc::data::from_json_value(&c.model, &data).unwrap();
        let r = gpmc::infer::run_gibbs(&c, &d, &config, &|_, _| {}).unwrap();
        let e = r.summaries.iter().find(|(n, _)| n == "ell").unwrap().1;
        eprintln!(
            "sparse {sparse}: ell {:.4} ± {:.4} (sd {:.4}, R-hat {:.3})",
            e.mean, e.mcse_mean, e.sd, e.rhat
        );
        assert!(e.rhat < 1.02);
        ells.push(e);
    }
    let z = (ells[0].mean - ells[1].mean)
        / (ells[0].mcse_mean.powi(2) + ells[1].mcse_mean.powi(2)).sqrt();
    assert!(
        z.abs() < 4.0,
        "full {} vs sparse {} (z {z:.2})",
        ells[0].mean,
        ells[1].mean
    );
}
