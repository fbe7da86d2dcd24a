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

/// Generalised inverse Gaussian GIG(p, a, b).
pub fn gig<R: Rng + ?Sized>(_rng: &mut R, p: f64, a: f64, b: f64) -> Result<f64, RuntimeError> {
    Err(RuntimeError::Sampler(format!(
        "the GIG sampler is not available yet (GIG({p}, {a}, {b}))"
    )))
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
    if b.fract() != 0.0 {
        return Err(RuntimeError::Sampler(format!(
            "PG({b}, {c}): non-integer shapes need the exact alternate sampler, not available yet"
        )));
    }
    let mut s = 0.0;
    for _ in 0..b as u64 {
        s += pg1(rng, c);
    }
    Ok(s)
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

/// Coefficient `a_n(x)` of the alternating series of J*(1) (Devroye 2009; PSW 2013 §4).
fn a_n(n: usize, x: f64) -> f64 {
    let k = n as f64 + 0.5;
    let pi = std::f64::consts::PI;
    if x > TRUNC {
        pi * k * (-k * k * pi * pi * x / 2.0).exp()
    } else {
        (2.0 / (pi * x)).powf(1.5) * pi * k * (-2.0 * k * k / x).exp()
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
        let mut s = a_n(0, x);
        let y = rng.gen::<f64>() * s;
        let mut n = 0;
        loop {
            n += 1;
            if n % 2 == 1 {
                s -= a_n(n, x);
                if y <= s {
                    return 0.25 * x;
                }
            } else {
                s += a_n(n, x);
                if y > s {
                    break;
                }
            }
        }
    }
}
