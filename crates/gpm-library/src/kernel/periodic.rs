//! `periodic(ell, p)`: `exp(−2 Σ_d sin²(π (x_d − x'_d) / p) / ℓ²)` (MacKay 1998; GPflow's
//! `Periodic` over a squared exponential). In one dimension this is `exp(−2 sin²(π r / p) / ℓ²)`;
//! with several input columns the sines are taken per column — `sin²(π ‖x − x'‖ / p)` of the
//! whole distance is not positive semi-definite there (the library's Gram-matrix test found a
//! negative pivot on 25 points in 2-D), and this was the form until 2026-11-26.
use super::{KernelForm, KernelLaw};

/// The periodic kernel (MacKay 1998).
pub struct Periodic;

fn k(x: &[f64], z: &[f64], _same: bool, p: &[f64]) -> f64 {
    let s2: f64 = x
        .iter()
        .zip(z)
        .map(|(a, b)| (std::f64::consts::PI * (a - b) / p[1]).sin().powi(2))
        .sum();
    (-2.0 * s2 / (p[0] * p[0])).exp()
}

impl KernelLaw for Periodic {
    fn form(&self) -> KernelForm {
        KernelForm::Pointwise(k)
    }
    fn d_params(&self, x: &[f64], z: &[f64], same: bool, p: &[f64], out: &mut [f64]) {
        // k = exp(−2S/ℓ²), S = Σ sin²(π d/p): ∂k/∂ℓ = 4kS/ℓ³,
        // ∂k/∂p = (2k/ℓ²) Σ sin(2π d/p) π d/p².
        let (l, period) = (p[0], p[1]);
        let k = k(x, z, same, p);
        let pi = std::f64::consts::PI;
        let (mut s, mut ds) = (0.0, 0.0);
        for (a, b) in x.iter().zip(z) {
            let d = a - b;
            s += (pi * d / period).sin().powi(2);
            ds += (2.0 * pi * d / period).sin() * pi * d / (period * period);
        }
        out[0] = 4.0 * k * s / (l * l * l);
        out[1] = 2.0 * k * ds / (l * l);
    }
}
