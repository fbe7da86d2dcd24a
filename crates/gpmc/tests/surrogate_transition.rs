//! The surrogate transition of a GP's kernel move (gpm-runtime/src/gibbs/surrogate.rs) is exact
//! however rough its surrogate: forced onto a small GP regression with a deliberately poor FITC
//! surrogate (4 inducing inputs), the lengthscale's and variance's posterior means and sds match
//! a 2-D quadrature of `p(ℓ, v) N(y | 0, v K₁(ℓ) + σ² I)` within Monte Carlo error, and the
//! correction both accepts and rejects.

use gpm_runtime::gibbs::Sampler;
use gpm_runtime::kernels::HyperValues;
use nalgebra::{Cholesky, DMatrix, DVector};
use rand::SeedableRng;

const SRC: &str = "data { N : int; x : vector[N]; y : vector[N]; }
hyper { lengthscale : real in 0.. ~ gamma(4.0, 4.0); variance : real in 0.. ~ gamma(2.0, 1.0); }
latent { f : vector[N] ~ gp(x, variance * sqexp(lengthscale)); }
model { y ~ normal(f, 0.3); }";

fn data() -> serde_json::Value {
    let n = 40;
    let x: Vec<f64> = (0..n).map(|i| 5.0 * i as f64 / n as f64).collect();
    // A fixed pseudo-random noise (no RNG crate version in the reference).
    let y: Vec<f64> = x
        .iter()
        .enumerate()
        .map(|(i, &t)| (2.0 * t).sin() + 0.3 * ((i as f64 * 12.9898).sin() * 43758.5453).fract())
        .collect();
    serde_json::json!({ "N": n, "x": x, "y": y })
}

#[test]
fn surrogate_transition_matches_quadrature_with_a_rough_surrogate() {
    let c = gpmc::check("m.gpm", SRC).unwrap();
    let data = gpmc::data::from_json_value(&c.model, &data()).unwrap();
    let mut schedule = gpm_schedule::build(&c.model, &c.plans).unwrap();
    assert_eq!(schedule.kernel_updates.len(), 1);
    schedule.kernel_updates[0].surrogate = Some(gpm_schedule::SurrogateTransition {
        inducing: 4,
        steps: 2,
        min_rows: 10,
    });
    let (hv, _) = gpmc::infer::hyper_values(&c);
    let sampler = Sampler::new(&schedule, &data, &hv).unwrap();
    let (chains, warmup, draws) = (4, 300, 2500);
    let mut traces = vec![vec![Vec::new(); chains]; 2];
    let (mut moves, mut accepted) = (0, 0);
    for ch in 0..chains {
        let mut state = sampler.init();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(100 + ch as u64);
        for s in 1..=warmup {
            sampler
                .warmup_sweep(&mut state, &mut rng, s, warmup)
                .unwrap();
        }
        let (m0, a0) = (state.surrogate_moves, state.surrogate_accepted);
        for _ in 0..draws {
            sampler.sweep(&mut state, &mut rng).unwrap();
            traces[0][ch].push(state.hypers[0]);
            traces[1][ch].push(state.hypers[1]);
        }
        moves += state.surrogate_moves - m0;
        accepted += state.surrogate_accepted - a0;
    }
    assert_eq!(
        moves,
        (chains * draws) as u64,
        "one surrogate transition a sweep"
    );
    let rate = accepted as f64 / moves as f64;
    assert!(
        rate > 0.05 && rate < 0.98,
        "acceptance {rate}: the correction must act"
    );

    let reference = quadrature(&c, &schedule, &data, &hv);
    for (k, name) in ["lengthscale", "variance"].iter().enumerate() {
        let all: Vec<f64> = traces[k].iter().flatten().copied().collect();
        let mean = all.iter().sum::<f64>() / all.len() as f64;
        let sd = (all.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / all.len() as f64).sqrt();
        let slices: Vec<&[f64]> = traces[k].iter().map(|t| t.as_slice()).collect();
        let ess = gpm_runtime::diagnostics::ess_bulk(&slices);
        let (m0, s0) = reference[k];
        let z = (mean - m0) / (s0 / ess.sqrt());
        assert!(
            z.abs() < 4.0,
            "{name}: mean {mean} vs {m0} (z = {z}, ESS {ess})"
        );
        assert!(
            (sd / s0 - 1.0).abs() < 5.0 / ess.sqrt() + 0.03,
            "{name}: sd {sd} vs {s0} (ESS {ess})"
        );
    }
}

/// Posterior mean and sd of (lengthscale, variance) by the midpoint rule on a grid of
/// `(log ℓ, log v)`, with the model's priors and kernel (and the runtime's kernel matrix).
fn quadrature(
    c: &gpmc::Checked,
    schedule: &gpm_schedule::Schedule,
    data: &gpm_runtime::data::Data,
    hv: &HyperValues,
) -> [(f64, f64); 2] {
    let gpm_runtime::data::Value::Vector(x) = &data.values["x"] else {
        panic!("x is a vector")
    };
    let gpm_runtime::data::Value::Vector(y) = &data.values["y"] else {
        panic!("y is a vector")
    };
    let x = DMatrix::from_column_slice(x.len(), 1, x);
    let y = DVector::from_column_slice(y);
    let kernel = match &schedule.priors[0] {
        gpm_schedule::BoundPrior::Gp { kernel, .. } => kernel.clone(),
        _ => panic!("a GP prior"),
    };
    let prior = |i: usize| match &c.model.hypers[i].kind {
        gpm_ir::HyperKind::Prior { prior } => prior.clone(),
        _ => panic!("a prior"),
    };
    let (pl, pv) = (prior(0), prior(1));
    let m = 160;
    let (lo_l, hi_l, lo_v, hi_v) = (
        (0.05f64).ln(),
        (6.0f64).ln(),
        (0.02f64).ln(),
        (20.0f64).ln(),
    );
    let mut cells = Vec::with_capacity(m * m);
    for i in 0..m {
        let gl = lo_l + (i as f64 + 0.5) * (hi_l - lo_l) / m as f64;
        for j in 0..m {
            let gv = lo_v + (j as f64 + 0.5) * (hi_v - lo_v) / m as f64;
            let (l, v) = (gl.exp(), gv.exp());
            let mut at = hv.clone();
            at.scalars[0] = l;
            at.scalars[1] = v;
            let mut k = gpm_runtime::kernels::kernel_matrix(&kernel, &x, &x, &at).unwrap();
            for d in 0..k.nrows() {
                k[(d, d)] += 0.09;
            }
            let ch = Cholesky::new(k).unwrap();
            let a = ch.l().solve_lower_triangular(&y).unwrap();
            let ll =
                -0.5 * a.norm_squared() - ch.l().diagonal().iter().map(|d| d.ln()).sum::<f64>();
            cells.push((l, v, ll + pl.log_density(l) + pv.log_density(v) + gl + gv));
        }
    }
    let mx = cells.iter().map(|c| c.2).fold(f64::NEG_INFINITY, f64::max);
    let (mut z, mut s) = (0.0, [0.0; 4]);
    for &(l, v, lp) in &cells {
        let w = (lp - mx).exp();
        z += w;
        s[0] += w * l;
        s[1] += w * l * l;
        s[2] += w * v;
        s[3] += w * v * v;
    }
    let (ml, mv) = (s[0] / z, s[2] / z);
    [
        (ml, (s[1] / z - ml * ml).sqrt()),
        (mv, (s[3] / z - mv * mv).sqrt()),
    ]
}
