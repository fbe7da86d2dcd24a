//! Generalised inverse Gaussian GIG(p, a, b), density ∝ `x^(p−1) e^(−(a x + b/x)/2)`: the
//! conditional of an inverse-Gamma scale mixture (the Matérn-3/2 likelihood), the inverse Gamma
//! tilted by `e^(−ωs)`.

use crate::{bad, LawError, MixingLaw};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// GIG with index `p` and parameters `a`, `b`.
#[derive(Debug, Clone, Copy)]
pub struct Gig;

/// Generalised inverse Gaussian GIG(p, a, b), density ∝ x^(p−1) e^(−(a x + b/x)/2), exactly:
/// in t = log x the density `exp(p t − (a eᵗ + b e⁻ᵗ)/2)` is log-concave, so adaptive rejection
/// sampling with tangent envelopes (Gilks & Wild 1992) applies. The limits `a → 0` (inverse
/// Gamma) and `b → 0` (Gamma) are drawn directly.
pub fn sample<R: Rng + ?Sized>(rng: &mut R, p: f64, a: f64, b: f64) -> Result<f64, LawError> {
    if !(a >= 0.0 && b >= 0.0 && p.is_finite() && a.is_finite() && b.is_finite())
        || (a == 0.0 && b == 0.0)
    {
        return Err(bad("GIG", &[p, a, b]));
    }
    if b == 0.0 {
        return if p > 0.0 {
            crate::gamma::sample(rng, p, a / 2.0)
        } else {
            Err(bad("GIG", &[p, a, b]))
        };
    }
    if a == 0.0 {
        return if p < 0.0 {
            Ok(1.0 / crate::gamma::sample(rng, -p, b / 2.0)?)
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
) -> Result<f64, LawError> {
    // Make sure the envelope is proper at both ends.
    while dh(xs[0]) <= 0.0 {
        let w = xs[1] - xs[0];
        xs.insert(0, xs[0] - 2.0 * w.max(1e-3));
    }
    while dh(*xs.last().expect("the bracket has two points")) >= 0.0 {
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
    Err(LawError(
        "adaptive rejection sampling did not accept in 10 000 tries".into(),
    ))
}

impl MixingLaw for Gig {
    fn sample(&self, rng: &mut ChaCha8Rng, q: &[f64]) -> Result<f64, LawError> {
        sample(rng, q[0], q[1], q[2])
    }
}
