//! Synthetic data shared by the benchmarks.
#![allow(dead_code)]

use gpm_runtime::data::{Data, Value};
use nalgebra::DMatrix;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;

/// The CLI's allocator, so that the benchmarks time what users run.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Seconds per call of `f`: the median of `reps` rounds of `per` calls.
pub fn per_call(reps: usize, per: usize, f: &mut dyn FnMut()) -> f64 {
    let mut t: Vec<f64> = (0..reps)
        .map(|_| {
            let t0 = std::time::Instant::now();
            for _ in 0..per {
                f();
            }
            t0.elapsed().as_secs_f64() / per as f64
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[reps / 2]
}

/// The number after `name` on the command line (`--n 200000`), or `default`.
pub fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Input dimension of [`synthetic`].
pub const D: usize = 10;

/// Inputs N(0, I_D); latent f(x) = 4 sin(2 w₁ᵀx) + 2 cos(1.5 w₂ᵀx) with fixed random directions;
/// labels ±1 with P(y = 1) = σ(f).
pub fn synthetic(n: usize, seed: u64) -> Data {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut dir = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let w1: Vec<f64> = (0..D)
        .map(|_| dir.sample::<f64, _>(StandardNormal) / 3.0)
        .collect();
    let w2: Vec<f64> = (0..D)
        .map(|_| dir.sample::<f64, _>(StandardNormal) / 3.0)
        .collect();
    let mut x = DMatrix::zeros(n, D);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let (mut a, mut b) = (0.0, 0.0);
        for d in 0..D {
            let v: f64 = rng.sample(StandardNormal);
            x[(i, d)] = v;
            a += w1[d] * v;
            b += w2[d] * v;
        }
        let f = 4.0 * (2.0 * a).sin() + 2.0 * (1.5 * b).cos();
        y.push(if rng.gen::<f64>() < 1.0 / (1.0 + (-f).exp()) {
            1.0
        } else {
            -1.0
        });
    }
    let mut data = Data::default();
    data.values.insert("N".into(), Value::Scalar(n as f64));
    data.values.insert("D".into(), Value::Scalar(D as f64));
    data.values
        .insert("X".into(), Value::Matrix(std::sync::Arc::new(x)));
    data.values.insert("y".into(), Value::Vector(y));
    data
}
