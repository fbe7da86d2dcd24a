//! The one place the executors draw auxiliary variables: parameter validation (an invalid
//! parameter is a [`RuntimeError`], never a panic) and dispatch to the exact samplers.

use crate::RuntimeError;
use rand::Rng;
use rand_distr::{Distribution, Exp1, StandardNormal};

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

/// Pólya-Gamma PG(b, c): sums of exact Devroye draws for integer `b`.
pub fn pg<R: Rng + ?Sized>(rng: &mut R, b: f64, c: f64) -> Result<f64, RuntimeError> {
    // PG(0, c) is the point mass at 0 (a class with no label and no count).
    if b == 0.0 && c.is_finite() {
        return Ok(0.0);
    }
    if !(b > 0.0 && b.is_finite() && c.is_finite()) {
        return Err(bad("Pólya-Gamma", &[b, c]));
    }
    // Integer part: sums of exact Devroye draws; fractional part: CDF inversion of the
    // closed-form Laplace transform E[e^(−sω)] = cosh(c/2)^f / cosh(√(s/2 + c²/4))^f.
    let mut s = 0.0;
    for _ in 0..b.floor() as u64 {
        s += pg1(rng, c);
    }
    let f = b.fract();
    if f > 0.0 {
        let c2 = c * c;
        let lc = (0.5 * c.abs()).cosh().ln();
        let phi = |z: num_complex::Complex64| -> num_complex::Complex64 {
            // log cosh w = w + log(1 + e^(−2w)) − log 2 (Re w ≥ 0): no overflow for large |s|.
            let w = (z / 2.0 + c2 / 4.0).sqrt();
            let lcosh = w + (1.0 + (-2.0 * w).exp()).ln() - std::f64::consts::LN_2;
            (f * (lc - lcosh)).exp()
        };
        let (mean, var) = (pg_mean(f, c), pg_var(f, c));
        s += crate::inversion::sample_by_inversion(&phi, rng.gen::<f64>(), mean, var.sqrt());
    }
    Ok(s)
}

/// E[PG(b, c)] = b/(2c) tanh(c/2), → b/4 at c = 0.
pub fn pg_mean(b: f64, c: f64) -> f64 {
    let c = c.abs();
    if c < 1e-4 {
        b / 4.0 * (1.0 - c * c / 12.0)
    } else {
        b / (2.0 * c) * (0.5 * c).tanh()
    }
}

/// Var[PG(b, c)] = b/(4c³)(sinh c − c)/cosh²(c/2), → b/24 at c = 0.
pub fn pg_var(b: f64, c: f64) -> f64 {
    let c = c.abs();
    if c < 1e-3 {
        b / 24.0 * (1.0 - c * c / 10.0)
    } else {
        b / (4.0 * c * c * c) * (c.sinh() - c) / (0.5 * c).cosh().powi(2)
    }
}

const TRUNC: f64 = 0.64;

fn std_normal_cdf(x: f64) -> f64 {
    0.5 * statrs::function::erf::erfc(-x / std::f64::consts::SQRT_2)
}

/// P(IG(μ = 1/z, λ = 1) < t).
fn p_ig_below(t: f64, z: f64) -> f64 {
    let st = (1.0 / t).sqrt();
    if z == 0.0 {
        return 2.0 * std_normal_cdf(-st);
    }
    let mu = 1.0 / z;
    let a = std_normal_cdf(st * (t / mu - 1.0));
    let b = (2.0 / mu).exp() * std_normal_cdf(-st * (t / mu + 1.0));
    a + b
}

/// Coefficients `a_n(x)` of the alternating series of J*(1) (Devroye 2009; PSW 2013 §4), with
/// the factors that depend only on `x` computed once per proposal.
struct Series {
    scale: f64,
    rate: f64,
}

impl Series {
    fn new(x: f64) -> Series {
        let pi = std::f64::consts::PI;
        if x > TRUNC {
            Series {
                scale: pi,
                rate: pi * pi * x / 2.0,
            }
        } else {
            let u = 2.0 / (pi * x);
            Series {
                scale: u * u.sqrt() * pi,
                rate: 2.0 / x,
            }
        }
    }
    #[inline]
    fn a(&self, n: usize) -> f64 {
        let k = n as f64 + 0.5;
        self.scale * k * (-k * k * self.rate).exp()
    }
}

/// Inverse Gaussian (mean 1/z, shape 1) truncated to (0, t).
fn truncated_ig<R: Rng + ?Sized>(rng: &mut R, z: f64) -> f64 {
    let t = TRUNC;
    let mu = if z > 0.0 { 1.0 / z } else { f64::INFINITY };
    if mu > t {
        loop {
            let (mut e1, mut e2): (f64, f64) = (rng.sample(Exp1), rng.sample(Exp1));
            while e1 * e1 > 2.0 * e2 / t {
                e1 = rng.sample(Exp1);
                e2 = rng.sample(Exp1);
            }
            let x = t / ((1.0 + t * e1) * (1.0 + t * e1));
            let alpha = (-0.5 * z * z * x).exp();
            if rng.gen::<f64>() <= alpha {
                return x;
            }
        }
    }
    loop {
        let y: f64 = rng.sample::<f64, _>(StandardNormal).powi(2);
        let mut x = mu + 0.5 * mu * mu * y - 0.5 * mu * (4.0 * mu * y + (mu * y) * (mu * y)).sqrt();
        if rng.gen::<f64>() > mu / (mu + x) {
            x = mu * mu / x;
        }
        if x < t {
            return x;
        }
    }
}

/// PG(1, c) by Devroye's alternating-series method (PSW 2013): PG(1, c) = J*(1, c/2)/4.
fn pg1<R: Rng + ?Sized>(rng: &mut R, c: f64) -> f64 {
    let z = 0.5 * c.abs();
    let pi = std::f64::consts::PI;
    let k = pi * pi / 8.0 + z * z / 2.0;
    let p = pi / (2.0 * k) * (-k * TRUNC).exp();
    let q = 2.0 * (-z).exp() * p_ig_below(TRUNC, z);
    loop {
        let x = if rng.gen::<f64>() < p / (p + q) {
            TRUNC + rng.sample::<f64, _>(Exp1) / k
        } else {
            truncated_ig(rng, z)
        };
        let series = Series::new(x);
        let mut s = series.a(0);
        let y = rng.gen::<f64>() * s;
        let mut n = 0;
        loop {
            n += 1;
            if n % 2 == 1 {
                s -= series.a(n);
                if y <= s {
                    return 0.25 * x;
                }
            } else {
                s += series.a(n);
                if y > s {
                    break;
                }
            }
        }
    }
}
