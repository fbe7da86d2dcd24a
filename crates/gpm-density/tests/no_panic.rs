//! Bad data and odd points give errors, never a panic: programs that index, slice, multiply
//! and call densities, bound to data of random sizes and values, evaluated at random points.

use gpm_density::{compile_source, Model};
use proptest::prelude::*;
use std::sync::Arc;

const PROGRAMS: &[&str] = &[
    "data { int N; vector[N] y; matrix[N, 2] X; array[N] int g; int K; }
     parameters { vector[2] b; vector<lower=0>[K] s; real<lower=-1, upper=1> r; }
     model { for (n in 2:N) y[n] ~ normal(X[n] * b + r * y[n - 1], s[g[n]]); }",
    "data { int N; vector[N] y; int K; }
     parameters { simplex[K] w; ordered[K] mu; cholesky_factor_corr[K] L; }
     model {
       for (n in 1:N) { vector[K] lp = log(w); for (k in 1:K) lp[k] += normal_lpdf(y[n] | mu[k], 1); target += log_sum_exp(lp); }
       L ~ lkj_corr_cholesky(2);
       target += sum(head(y, K)) + dot_product(segment(y, 1, K), mu);
       y[1:K] ~ multi_normal_cholesky(mu, L);
     }",
    "data { int N; array[N] int y; vector[N] x; int K; }
     parameters { vector[K] c; real a; }
     model { for (n in 1:N) y[n] ~ ordered_logistic(a * x[n], c); y ~ categorical_logit(softmax(c)); }",
];

fn value(kind: u8, n: i64, v: f64) -> serde_json::Value {
    let n = n.max(0) as usize;
    match kind % 4 {
        0 => serde_json::json!(vec![v; n]),
        1 => serde_json::json!(vec![vec![v; 2]; n]),
        2 => serde_json::json!(vec![(v.abs() as i64) % 4; n]),
        _ => serde_json::json!(v),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn no_panic_on_any_data_or_point(
        which in 0usize..3,
        n in -1i64..6,
        k in -1i64..5,
        kinds in proptest::collection::vec(0u8..4, 4),
        v in -3.0f64..3.0,
        u in proptest::collection::vec(-30.0f64..30.0, 0..20),
    ) {
        let program = Arc::new(compile_source(PROGRAMS[which]).unwrap());
        let data = serde_json::json!({
            "N": n, "K": k,
            "y": value(kinds[0], n, v), "X": value(kinds[1], n, v),
            "g": value(kinds[2], n, v), "x": value(kinds[3], n, v),
        });
        if let Ok(m) = Model::bind(program, data.as_object().unwrap()) {
            let mut point = u.clone();
            point.resize(m.dim(), 0.5);
            let mut grad = vec![0.0; m.dim()];
            let _ = m.log_density_gradient(&point, &mut grad);
            let _ = m.log_density_gradient(&u, &mut grad);
            let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(1);
            let _ = m.row(&point, &mut rng);
        }
    }
}
