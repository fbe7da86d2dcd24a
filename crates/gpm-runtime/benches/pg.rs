//! Pólya-Gamma throughput (draws per second): PG(1, c) by Devroye's method and PG(b, c) for
//! larger and fractional shapes. Run on purpose: `cargo bench -p gpm-runtime --features criterion --bench pg`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use gpm_runtime::draw;
use rand::SeedableRng;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("polya_gamma");
    g.sample_size(20);
    for &(b, cc) in &[
        (1.0, 0.0),
        (1.0, 2.0),
        (1.0, 20.0),
        (10.0, 2.0),
        (100.0, 2.0),
        (1.5, 2.0),
        (0.5, 0.0),
        (0.5, 2.0),
        (0.2, 5.0),
    ] {
        let draws = 10_000u64;
        g.throughput(Throughput::Elements(draws));
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        g.bench_with_input(BenchmarkId::new(format!("b={b}"), cc), &cc, |bench, &cc| {
            bench.iter(|| {
                let mut s = 0.0;
                for _ in 0..draws {
                    s += draw::pg(&mut rng, b, cc).unwrap();
                }
                s
            })
        });
    }
    // Shapes below 1: the series inversion above against the Laplace-transform inversion it
    // replaced (the ratio of the two is what docs/benchmarks.md quotes).
    for &(b, cc) in &[(0.5, 0.0), (0.5, 2.0), (0.2, 5.0)] {
        let draws = 10_000u64;
        g.throughput(Throughput::Elements(draws));
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let id = BenchmarkId::new(format!("laplace_inversion_b={b}"), cc);
        g.bench_with_input(id, &cc, |bench, &cc| {
            bench.iter(|| {
                let mut s = 0.0;
                for _ in 0..draws {
                    s += gpm_families::polya_gamma_small::sample_by_laplace_inversion(
                        &mut rng, b, cc,
                    );
                }
                s
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
