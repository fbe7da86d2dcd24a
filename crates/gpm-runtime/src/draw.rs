//! The one place the executors draw auxiliary variables: the named laws of `gpm-families`
//! (parameter validation there: an invalid parameter is an error, never a panic), and the
//! tilted inverse-Laplace law of a CAS-proved `φ`, which needs the CAS and so lives here.

use crate::RuntimeError;
use gpm_families as fam;
use gpm_families::MixingLaw;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

impl From<gpm_families::LawError> for RuntimeError {
    fn from(e: gpm_families::LawError) -> Self {
        RuntimeError::Sampler(e.0)
    }
}

/// A draw of `law` with these parameters.
pub fn law(rng: &mut ChaCha8Rng, law: &dyn MixingLaw, params: &[f64]) -> Result<f64, RuntimeError> {
    Ok(law.sample(rng, params)?)
}

/// Gamma(shape, rate).
pub fn gamma<R: Rng + ?Sized>(rng: &mut R, shape: f64, rate: f64) -> Result<f64, RuntimeError> {
    Ok(fam::gamma::sample(rng, shape, rate)?)
}

/// Poisson(rate); rate 0 gives 0.
pub fn poisson<R: Rng + ?Sized>(rng: &mut R, rate: f64) -> Result<f64, RuntimeError> {
    Ok(fam::poisson::sample(rng, rate)?)
}

/// Negative binomial NB(r, p) ([`gpm_families::negative_binomial`]).
pub fn negative_binomial<R: Rng + ?Sized>(
    rng: &mut R,
    shape: f64,
    p: f64,
) -> Result<f64, RuntimeError> {
    Ok(fam::negative_binomial::sample(rng, shape, p)?)
}

/// Inverse Gaussian(mean μ, shape λ) ([`gpm_families::inverse_gaussian`]).
pub fn inverse_gaussian<R: Rng + ?Sized>(
    rng: &mut R,
    mean: f64,
    shape: f64,
) -> Result<f64, RuntimeError> {
    Ok(fam::inverse_gaussian::sample(rng, mean, shape)?)
}

/// Generalised inverse Gaussian GIG(p, a, b) ([`gpm_families::gig`]).
pub fn gig<R: Rng + ?Sized>(rng: &mut R, p: f64, a: f64, b: f64) -> Result<f64, RuntimeError> {
    Ok(fam::gig::sample(rng, p, a, b)?)
}

/// Pólya-Gamma PG(b, c) for any `b ≥ 0` and finite `c` ([`gpm_families::polya_gamma`]).
pub fn pg<R: Rng + ?Sized>(rng: &mut R, b: f64, c: f64) -> Result<f64, RuntimeError> {
    Ok(fam::polya_gamma::sample(rng, b, c)?)
}

pub use gpm_families::polya_gamma_sampler::{mean as pg_mean, variance as pg_var};

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
    let mut real = Vec::with_capacity(t.params.len() + 1);
    t.args(c2.max(1e-12), vals, &mut real);
    // ψ's arguments `[r, params…]`, `r` overwritten at each evaluation (no allocation in the
    // inversion's loop).
    let complex = std::cell::RefCell::new(
        real.iter()
            .map(|&v| Complex64::new(v, 0.0))
            .collect::<Vec<_>>(),
    );
    let psi = |s: Complex64| -> Complex64 {
        let mut args = complex.borrow_mut();
        args[0] = s;
        t.psi
            .eval_complex(&args)
            .unwrap_or(Complex64::new(f64::NAN, 0.0))
    };
    let psi_c2 = psi(Complex64::new(c2, 0.0));
    let phi = |s: Complex64| (psi_c2 - psi(s + c2)).exp();
    let mean = t
        .dpsi
        .eval(&real)
        .map_err(|e| RuntimeError::Sampler(e.to_string()))?;
    if !(mean > 0.0 && mean.is_finite()) {
        return Err(RuntimeError::Sampler(format!(
            "tilted law with mean {mean}"
        )));
    }
    Ok(gpm_families::inversion::sample_by_inversion(
        &phi,
        rng.gen::<f64>(),
        mean,
        mean,
    ))
}
