//! Pólya-Gamma draws per second on one core, for the grid of `bench/compare.py`
//! (`b ∈ {1, 10, 100}`, `c ∈ {0, 2, 20}`), printed as JSON lines. Exact samplers only.

use rand::SeedableRng;

fn main() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    for b in [1.0, 10.0, 100.0] {
        for c in [0.0, 2.0, 20.0] {
            // Aim at ~0.5 s per cell.
            let n = (2_000_000.0 / b) as usize;
            let t = std::time::Instant::now();
            let mut s = 0.0;
            for _ in 0..n {
                s += gpm_runtime::draw::pg(&mut rng, b, c).expect("valid parameters");
            }
            let secs = t.elapsed().as_secs_f64();
            println!(
                "{{\"b\": {b}, \"c\": {c}, \"draws\": {n}, \"seconds\": {secs}, \"per_second\": {}, \"mean\": {}}}",
                n as f64 / secs,
                s / n as f64
            );
        }
    }
}
