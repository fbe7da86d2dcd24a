//! The one place the executors draw auxiliary variables: parameter validation (an invalid
//! parameter is a [`RuntimeError`], never a panic) and dispatch to the exact samplers.

use crate::RuntimeError;
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

fn bad(what: &str, v: &[f64]) -> RuntimeError {
    RuntimeError::Sampler(format!("{what} with invalid parameters {v:?}"))
}

/// Gamma(shape, rate).
pub fn gamma<R: Rng + ?Sized>(rng: &mut R, shape: f64, rate: f64) -> Result<f64, RuntimeError> {
    if !(shape > 0.0 && rate > 0.0 && shape.is_finite() && rate.is_finite()) {
        return Err(bad("Gamma", &[shape, rate]));
    }
    let g = rand_distr::Gamma::new(shape, 1.0 / rate).map_err(|_| bad("Gamma", &[shape, rate]))?;
    Ok(g.sample(rng))
}

/// Poisson(rate); rate 0 gives 0.
pub fn poisson<R: Rng + ?Sized>(rng: &mut R, rate: f64) -> Result<f64, RuntimeError> {
    if rate == 0.0 {
        return Ok(0.0);
    }
    if !(rate > 0.0 && rate.is_finite()) {
        return Err(bad("Poisson", &[rate]));
    }
    let p = rand_distr::Poisson::new(rate).map_err(|_| bad("Poisson", &[rate]))?;
    Ok(p.sample(rng))
}

/// Negative binomial NB(r, p) (`P(k) = Γ(k+r)/(Γ(r) k!) p^k (1−p)^r`), exactly, as the
/// Gamma-Poisson mixture `k | g ~ Poisson(g)`, `g ~ Gamma(r, rate (1−p)/p)`.
pub fn negative_binomial<R: Rng + ?Sized>(
    rng: &mut R,
    shape: f64,
    p: f64,
) -> Result<f64, RuntimeError> {
    if !(shape > 0.0 && shape.is_finite() && (0.0..1.0).contains(&p)) {
        return Err(bad("negative binomial", &[shape, p]));
    }
    if p == 0.0 {
        return Ok(0.0);
    }
    let g = gamma(rng, shape, (1.0 - p) / p)?;
    poisson(rng, g)
}

/// Inverse Gaussian(mean μ, shape λ) by Michael, Schucany & Haas (1976).
pub fn inverse_gaussian<R: Rng + ?Sized>(
    rng: &mut R,
    mean: f64,
    shape: f64,
) -> Result<f64, RuntimeError> {
    if !(shape > 0.0 && shape.is_finite() && mean > 0.0) {
        return Err(bad("inverse Gaussian", &[mean, shape]));
    }
    if mean.is_infinite() {
        // The tilt vanished (c = 0): the untilted Lévy law, λ/N(0,1)².
        let z: f64 = rng.sample(StandardNormal);
        return Ok(shape / (z * z));
    }
    let nu: f64 = rng.sample(StandardNormal);
    let y = nu * nu;
    let x = mean + mean * mean * y / (2.0 * shape)
        - mean / (2.0 * shape) * (4.0 * mean * shape * y + mean * mean * y * y).sqrt();
    let u: f64 = rng.gen();
    Ok(if u <= mean / (mean + x) {
        x
    } else {
        mean * mean / x
    })
}

/// Generalised inverse Gaussian GIG(p, a, b), density ∝ x^(p−1) e^(−(a x + b/x)/2), exactly:
/// in t = log x the density `exp(p t − (a eᵗ + b e⁻ᵗ)/2)` is log-concave, so adaptive rejection
/// sampling with tangent envelopes (Gilks & Wild 1992) applies. The limits `a → 0` (inverse
/// Gamma) and `b → 0` (Gamma) are drawn directly.
pub fn gig<R: Rng + ?Sized>(rng: &mut R, p: f64, a: f64, b: f64) -> Result<f64, RuntimeError> {
    if !(a >= 0.0 && b >= 0.0 && p.is_finite() && a.is_finite() && b.is_finite())
        || (a == 0.0 && b == 0.0)
    {
        return Err(bad("GIG", &[p, a, b]));
    }
    if b == 0.0 {
        return if p > 0.0 {
            gamma(rng, p, a / 2.0)
        } else {
            Err(bad("GIG", &[p, a, b]))
        };
    }
    if a == 0.0 {
        return if p < 0.0 {
            Ok(1.0 / gamma(rng, -p, b / 2.0)?)
        } else {
            Err(bad("GIG", &[p, a, b]))
        };
    }
    let h = |t: f64| p * t - 0.5 * (a * t.exp() + b * (-t).exp());
    let dh = |t: f64| p - 0.5 * (a * t.exp() - b * (-t).exp());
    // Mode of h: a e^{2t} − 2p e^t − b = 0.
    let et = (p + (p * p + a * b).sqrt()) / a;
    let mode = et.ln();
    // Curvature at the mode sets the initial abscissae one "sd" either side.
    let curv = 0.5 * (a * et + b / et);
    let d = 1.0 / curv.sqrt();
    let mut xs = vec![mode - d, mode, mode + d];
    ars(rng, &h, &dh, &mut xs).map(|t| t.exp())
}

/// Adaptive rejection sampling of a log-concave density `exp(h)` on the real line, with
/// tangents at `xs` (sorted; the first must have h' > 0 and the last h' < 0).
fn ars<R: Rng + ?Sized>(
    rng: &mut R,
    h: &dyn Fn(f64) -> f64,
    dh: &dyn Fn(f64) -> f64,
    xs: &mut Vec<f64>,
) -> Result<f64, RuntimeError> {
    // Make sure the envelope is proper at both ends.
    while dh(xs[0]) <= 0.0 {
        let w = xs[1] - xs[0];
        xs.insert(0, xs[0] - 2.0 * w.max(1e-3));
    }
    while dh(*xs.last().unwrap()) >= 0.0 {
        let n = xs.len();
        let w = xs[n - 1] - xs[n - 2];
        xs.push(xs[n - 1] + 2.0 * w.max(1e-3));
    }
    for _ in 0..10_000 {
        let hs: Vec<f64> = xs.iter().map(|&x| h(x)).collect();
        let ds: Vec<f64> = xs.iter().map(|&x| dh(x)).collect();
        let n = xs.len();
        // Intersections of consecutive tangents.
        let mut z = Vec::with_capacity(n + 1);
        z.push(f64::NEG_INFINITY);
        for j in 0..n - 1 {
            let zj = if (ds[j] - ds[j + 1]).abs() < 1e-12 {
                0.5 * (xs[j] + xs[j + 1])
            } else {
                (hs[j + 1] - hs[j] - xs[j + 1] * ds[j + 1] + xs[j] * ds[j]) / (ds[j] - ds[j + 1])
            };
            z.push(zj);
        }
        z.push(f64::INFINITY);
        let hmax = hs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        // Mass of each exponential piece, relative to e^{hmax}.
        let piece = |j: usize| -> f64 {
            let (l, r) = (z[j], z[j + 1]);
            let u = |x: f64| hs[j] - hmax + ds[j] * (x - xs[j]);
            if ds[j].abs() < 1e-12 {
                u(xs[j]).exp() * (r - l)
            } else {
                let el = if l.is_finite() { u(l).exp() } else { 0.0 };
                let er = if r.is_finite() { u(r).exp() } else { 0.0 };
                (er - el) / ds[j]
            }
        };
        let masses: Vec<f64> = (0..n).map(piece).collect();
        let total: f64 = masses.iter().sum();
        let mut pick = rng.gen::<f64>() * total;
        let mut j = 0;
        while j + 1 < n && pick > masses[j] {
            pick -= masses[j];
            j += 1;
        }
        // Invert the exponential piece's CDF.
        let (l, r) = (z[j], z[j + 1]);
        let uu: f64 = rng.gen();
        let x = if ds[j].abs() < 1e-12 {
            l + uu * (r - l)
        } else {
            let base = if l.is_finite() {
                ds[j] * (l - xs[j])
            } else {
                f64::NEG_INFINITY
            };
            let top = if r.is_finite() {
                ds[j] * (r - xs[j])
            } else {
                f64::NEG_INFINITY
            };
            // x = xs_j + log(e^{base} + U (e^{top} − e^{base}))/d, computed in log space.
            let (lo_e, hi_e) = if ds[j] > 0.0 {
                (base, top)
            } else {
                (top, base)
            };
            let mx = lo_e.max(hi_e);
            let v = if ds[j] > 0.0 {
                mx + ((lo_e - mx).exp() + uu * ((hi_e - mx).exp() - (lo_e - mx).exp())).ln()
            } else {
                mx + ((hi_e - mx).exp() + uu * ((lo_e - mx).exp() - (hi_e - mx).exp())).ln()
            };
            xs[j] + v / ds[j]
        };
        let upper = hs[j] + ds[j] * (x - xs[j]);
        if rng.gen::<f64>().ln() <= h(x) - upper {
            return Ok(x);
        }
        let at = xs.partition_point(|v| *v < x);
        xs.insert(at, x);
    }
    Err(RuntimeError::Sampler(
        "adaptive rejection sampling did not accept in 10 000 tries".into(),
    ))
}

/// The exponentially tilted inverse-Laplace law of a CAS-proved completely monotone
/// `φ = exp(−ψ)`: Laplace transform `φ(s + c²)/φ(c²)`, drawn by CDF inversion (Ridout 2009).
pub fn tilted<R: Rng + ?Sized>(
    rng: &mut R,
    t: &gpm_schedule::Tilted,
    vals: &[f64],
    stack: &mut Vec<f64>,
) -> Result<f64, RuntimeError> {
    use num_complex::Complex64;
    let c2 = t.c2.eval(vals, stack).max(0.0);
    let param = |n: &str| t.params.iter().find(|p| p.0 == n).map(|p| vals[p.1]);
    let psi = |s: Complex64| -> Complex64 {
        gpm_cas::eval_complex(&t.psi, &|n| {
            if n == "r" {
                Some(s)
            } else {
                param(n).map(|v| Complex64::new(v, 0.0))
            }
        })
        .unwrap_or(Complex64::new(f64::NAN, 0.0))
    };
    let psi_c2 = psi(Complex64::new(c2, 0.0));
    let phi = |s: Complex64| (psi_c2 - psi(s + c2)).exp();
    let mean = gpm_cas::eval(&t.dpsi, &|n| {
        if n == "r" {
            Some(c2.max(1e-12))
        } else {
            param(n)
        }
    })
    .map_err(|e| RuntimeError::Sampler(e.to_string()))?;
    if !(mean > 0.0 && mean.is_finite()) {
        return Err(RuntimeError::Sampler(format!(
            "tilted law with mean {mean}"
        )));
    }
    Ok(crate::inversion::sample_by_inversion(
        &phi,
        rng.gen::<f64>(),
        mean,
        mean,
    ))
}

/// Pólya-Gamma PG(b, c) for any `b ≥ 0` and finite `c`, exactly: Devroye's method for `b = 1`,
/// the alternate method of Windle, Polson & Scott (2014) in chunks for `b > 1`, and CDF inversion
/// of the closed-form Laplace transform for `b < 1` (see [`crate::samplers::polya_gamma`]).
pub fn pg<R: Rng + ?Sized>(rng: &mut R, b: f64, c: f64) -> Result<f64, RuntimeError> {
    // PG(0, c) is the point mass at 0 (a class with no label and no count).
    if b == 0.0 && c.is_finite() {
        return Ok(0.0);
    }
    if !(b > 0.0 && b.is_finite() && c.is_finite()) {
        return Err(bad("Pólya-Gamma", &[b, c]));
    }
    Ok(crate::samplers::polya_gamma::sample(rng, b, c))
}

pub use crate::samplers::polya_gamma::{mean as pg_mean, variance as pg_var};
