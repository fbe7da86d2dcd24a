//! One Gibbs sweep of the GP classifier against one Cholesky factorisation of an N × N matrix,
//! at N = 250 and 1000 (issue target: a sweep within 2× a Cholesky). Run on purpose:
//! `cargo bench -p gpmc --features criterion --bench sweep`; it prints times, not pass/fail.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use gpm_runtime::gibbs::Sampler;
use nalgebra::DMatrix;
use rand::SeedableRng;

/// The CLI's allocator, so that the benchmark times what users run.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn data_json(n: usize) -> serde_json::Value {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(n as u64);
    use rand::Rng;
    let x: Vec<Vec<f64>> = (0..n)
        .map(|_| vec![rng.gen_range(-3.0..3.0), rng.gen_range(-3.0..3.0)])
        .collect();
    let y: Vec<i64> = x
        .iter()
        .map(|r| {
            if (r[0] * 1.3).sin() + 0.3 * r[1] > 0.0 {
                1
            } else {
                -1
            }
        })
        .collect();
    serde_json::json!({"N": n, "D": 2, "X": x, "y": y})
}

fn bench(c: &mut Criterion) {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../models/gp_classification.gpm"
    ))
    .unwrap();
    let checked = gpmc::check("gp_classification.gpm", &src).unwrap();
    let schedule = gpm_schedule::build(&checked.model, &checked.plans).unwrap();
    let mut group = c.benchmark_group("gp_classification");
    group.sample_size(10);
    for n in [250usize, 1000] {
        let data = gpmc::data::from_json_value(&checked.model, &data_json(n)).unwrap();
        let (hv, _) = gpmc::infer::hyper_values(&checked);
        let sampler = Sampler::new(&schedule, &data, &hv).unwrap();
        let mut state = sampler.init();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        group.bench_with_input(BenchmarkId::new("gibbs_sweep", n), &n, |b, _| {
            b.iter(|| sampler.sweep(&mut state, &mut rng).unwrap())
        });
        let k = sampler.prepared().blocks.iter().find_map(|b| match b {
            gpm_runtime::prepared::Block::Gp { gp, .. } => {
                Some(gp.k.clone() + DMatrix::identity(n, n))
            }
            _ => None,
        });
        let k = k.unwrap();
        group.bench_with_input(BenchmarkId::new("cholesky", n), &n, |b, _| {
            b.iter(|| gpm_runtime::linalg::cholesky(k.clone()).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
