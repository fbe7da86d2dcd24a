//! Every registered kernel at its own example parameters: its Gram matrix on scattered points is
//! symmetric and positive semi-definite, a stationary profile is 1 at distance 0 and its
//! vectorised form matches its plain formula.

use super::*;

/// Points in 2-D, scattered deterministically.
fn points() -> Vec<[f64; 2]> {
    (0..25)
        .map(|i| {
            let t = i as f64;
            [
                (t * 0.618).fract() * 3.0 - 1.5,
                (t * 0.414).fract() * 2.0 - 1.0,
            ]
        })
        .collect()
}

fn gram(k: &dyn KernelLaw) -> Vec<Vec<f64>> {
    gram_at(k, k.example())
}

fn gram_at(k: &dyn KernelLaw, p: &[f64]) -> Vec<Vec<f64>> {
    let x = points();
    x.iter()
        .enumerate()
        .map(|(i, a)| {
            x.iter()
                .enumerate()
                .map(|(j, b)| match k.form() {
                    KernelForm::Stationary(f) => {
                        let mut r2 = [(a[0] - b[0]).powi(2) / (p[0] * p[0])
                            + (a[1] - b[1]).powi(2) / (p[0] * p[0])];
                        f(&mut r2, &p[1..]);
                        r2[0]
                    }
                    KernelForm::Pointwise(f) => f(a, b, i == j, p),
                })
                .collect()
        })
        .collect()
}

/// The smallest pivot of a Cholesky factorisation of `m + jitter·I` (negative: not PSD).
fn smallest_pivot(m: &[Vec<f64>], jitter: f64) -> f64 {
    let n = m.len();
    let mut l = vec![vec![0.0; n]; n];
    let mut smallest = f64::INFINITY;
    for j in 0..n {
        let d = m[j][j] + jitter - (0..j).map(|k| l[j][k] * l[j][k]).sum::<f64>();
        smallest = smallest.min(d);
        if d <= 0.0 {
            return d;
        }
        l[j][j] = d.sqrt();
        for i in j + 1..n {
            let s = m[i][j] - (0..j).map(|k| l[i][k] * l[j][k]).sum::<f64>();
            l[i][j] = s / l[j][j];
        }
    }
    smallest
}

#[test]
fn every_gram_matrix_is_symmetric_positive_semi_definite() {
    for k in KERNELS {
        let g = gram(*k);
        for (i, row) in g.iter().enumerate() {
            for (j, v) in row.iter().enumerate() {
                assert!(v.is_finite(), "{}", k.name());
                assert!((v - g[j][i]).abs() < 1e-14, "{} not symmetric", k.name());
            }
        }
        assert!(smallest_pivot(&g, 1e-9) > 0.0, "{} not PSD", k.name());
    }
}

#[test]
fn every_stationary_profile_matches_its_formula() {
    for k in KERNELS {
        let KernelForm::Stationary(f) = k.form() else {
            assert!(k.profile_at(1.0, &[]).is_none(), "{}", k.name());
            continue;
        };
        assert_eq!(k.params()[0].role, ParamRole::Lengthscale, "{}", k.name());
        let rest = &k.example()[1..];
        // Lengths that leave a remainder after blocks of eight and chunks of 64.
        let r2: Vec<f64> = (0..203).map(|i| i as f64 * 0.173).collect();
        let mut v = r2.clone();
        f(&mut v, rest);
        assert_eq!(v[0], 1.0, "{} at distance 0", k.name());
        for (x, got) in r2.iter().zip(&v) {
            let want = k.profile_at(*x, rest).unwrap();
            assert!(
                (got - want).abs() <= 16.0 * f64::EPSILON * want.abs().max(1e-300),
                "{} at r² = {x}: {got} vs {want}",
                k.name()
            );
        }
    }
}

#[test]
fn names_and_aliases_are_unique_and_found() {
    let all: Vec<&str> = names().collect();
    for (i, n) in all.iter().enumerate() {
        assert!(!all[..i].contains(n), "{n} twice");
        assert!(lookup(n).is_some());
    }
    assert_eq!(lookup("rbf").map(|k| k.name()), Some("sqexp"));
    for k in KERNELS {
        assert!(k.params().len() >= k.example().len().min(k.params().len()));
        assert_eq!(k.example().len(), k.params().len(), "{}", k.name());
        assert!(k.min_args() <= k.params().len());
    }
}

/// Every kernel's `∂k/∂p_j` against central differences of its value, at its example
/// parameters, on pairs of scattered points.
#[test]
fn parameter_derivatives_match_differences() {
    let x = points();
    for k in KERNELS {
        let p = k.example().to_vec();
        let value = |p: &[f64], a: &[f64; 2], b: &[f64; 2], same: bool| match k.form() {
            KernelForm::Stationary(f) => {
                let mut r2 = [scaled_r2(a, b, p[0])];
                f(&mut r2, &p[1..]);
                r2[0]
            }
            KernelForm::Pointwise(f) => f(a, b, same, p),
        };
        for (i, a) in x.iter().enumerate().step_by(3) {
            for (j, b) in x.iter().enumerate().step_by(4) {
                let mut d = vec![0.0; p.len()];
                k.d_params(a, b, i == j, &p, &mut d);
                for m in 0..p.len() {
                    let h = 1e-6 * p[m].abs().max(1.0);
                    let (mut up, mut down) = (p.clone(), p.clone());
                    up[m] += h;
                    down[m] -= h;
                    let numeric =
                        (value(&up, a, b, i == j) - value(&down, a, b, i == j)) / (2.0 * h);
                    assert!(
                        (d[m] - numeric).abs() < 1e-7,
                        "{}: ∂k/∂{} = {} vs difference {numeric}",
                        k.name(),
                        k.params()[m].name,
                        d[m]
                    );
                }
            }
        }
    }
}

/// Each constrained parameter's example is inside its constraint, and the bound is real: the
/// γ-exponential's Gram matrix is positive semi-definite at γ = 2 and not at γ = 3 (why
/// `gamma_exponential` declares `(0, 2]` and the lowering refuses what is outside).
#[test]
fn constraints_hold_at_the_examples_and_bound_what_is_psd() {
    for k in KERNELS {
        for (p, v) in k.params().iter().zip(k.example()) {
            if let ParamRole::Constrained(c) = p.role {
                assert!(c.contains(*v), "{}: {} = {v}", k.name(), p.name);
            }
        }
    }
    let g = lookup("gamma_exponential").expect("registered");
    assert!(smallest_pivot(&gram_at(g.0, &[0.9, 2.0]), 1e-9) > 0.0);
    assert!(smallest_pivot(&gram_at(g.0, &[0.9, 3.0]), 1e-9) < 0.0);
}
