//! The closed-form local steps of CAVI, per observation: `q(ω)` of every continuous auxiliary
//! (`E[ω] = −φ'(E s)/φ(E s)`), `q(n)` of a count, the double bound's block terms, and the
//! observation's ELBO term at the optimal local factors (thesis ch. 5 §3.3.1, §7.1, §7.2).

use gpm_schedule::PredictorId;
use gpm_schedule::{CaviFamily, CaviProgram, CountLaw, PolyTapes};

/// `(E[ω], log φ(s))` of a mixing law at `s = E_q[s]`.
fn mixing(f: &CaviFamily, vals: &[f64], s: f64, stack: &mut Vec<f64>) -> (f64, f64) {
    // A vanishing residual makes E[ω] of the Lévy-type laws infinite; the floor keeps the
    // curvature finite (its effect on the ELBO is below 1e-6 · a).
    let floor = |s: f64| s.max(1e-12);
    match f {
        CaviFamily::Law { law, params } => {
            // The probit's truncated normal is tilted by any real s (s = −c·E[z]).
            let s = if law.any_real_tilt() { s } else { floor(s) };
            let mut p = [0.0; 4];
            for (v, t) in p.iter_mut().zip(params) {
                *v = t.eval(vals, stack);
            }
            law.tilted(&p[..params.len()], s)
                .unwrap_or((f64::NAN, f64::NAN))
        }
        CaviFamily::Tilted(t) => {
            let s = floor(s);
            // E[ω] = ψ'(s), log φ(s) = −ψ(s).
            let mut args = Vec::with_capacity(t.params.len() + 1);
            t.args(s, vals, &mut args);
            let d = t.dpsi.eval(&args).unwrap_or(f64::NAN);
            let p = t.psi.eval(&args).unwrap_or(f64::NAN);
            args[0] = 0.0;
            let p0 = t.psi.eval(&args).unwrap_or(0.0);
            (d, -(p - p0))
        }
    }
}

fn expect(
    p: &PolyTapes,
    vals: &[f64],
    m: &dyn Fn(PredictorId) -> (f64, f64),
    stack: &mut Vec<f64>,
) -> f64 {
    let mut e = p.c0.eval(vals, stack);
    for (pred, t) in &p.lin {
        e += t.eval(vals, stack) * m(*pred).0;
    }
    for (pred, t) in &p.quad {
        let (mu, v) = m(*pred);
        e += t.eval(vals, stack) * (mu * mu + v);
    }
    e
}

/// The closed-form update of observation `i`'s `q(ω)` (and `q(n)`) given the moments `m` of its
/// predictors; `vals` holds its slots, `set(j, E[·])` receives the new expectation of auxiliary `j`
/// (which is also written into `vals`).
pub(crate) fn local_step(
    cp: &CaviProgram,
    vals: &mut [f64],
    m: &dyn Fn(PredictorId) -> (f64, f64),
    stack: &mut Vec<f64>,
    set: &mut dyn FnMut(usize, f64),
) {
    // E[s] for every continuous variable (c² of its q(ω)).
    let svals: Vec<f64> = cp
        .aux
        .iter()
        .map(|a| expect(&a.s, vals, m, stack))
        .collect();
    // q(n) = Po(γ): log γ = log κ + ∂F/∂n, F linear in n (thesis §7.1; the Pólya-Gamma terms
    // contribute −log cosh(c/2) per count).
    if let Some(pn) = &cp.poisson {
        // E_q[κ]: the first bound of the double bound when κ reads a predictor.
        let kappa = expect(&pn.kappa, vals, m, stack);
        let mut f_at = |n: f64, vals: &mut [f64]| {
            vals[pn.slot] = n;
            let mut t = cp.log_c.eval(vals, stack) + expect(&cp.p0, vals, m, stack);
            for (a, sv) in cp.aux.iter().zip(&svals) {
                t += mixing(&a.family, vals, *sv, stack).1;
            }
            t
        };
        let slope = f_at(1.0, vals) - f_at(0.0, vals);
        let gamma = match &pn.law {
            CountLaw::Poisson => kappa * slope.exp(),
            CountLaw::GammaScaled {
                index,
                slot,
                shape,
                rate,
            } => {
                // Coordinate steps between q(τ) = Gamma(α + γ, β + E κ) and
                // q(n) = Po(γ), γ = E κ e^(E log τ + ∂F/∂n), to their joint fixed point: each
                // step maximises the ELBO over its factor. The map γ ↦ c e^(ψ(α + γ)) has
                // derivative c e^ψ ψ' ≈ c < 1 (c = E κ e^(∂F/∂n)/(β + E κ), ∂F/∂n < 0: the
                // Pólya-Gamma bound on log σ(−z)), so this converges.
                let (alpha, beta) = (shape.eval(vals, stack), rate.eval(vals, stack));
                let c = kappa * slope.exp() / (beta + kappa);
                let mut g = vals[pn.slot].max(0.0);
                for _ in 0..500 {
                    let next = c * statrs::function::gamma::digamma(alpha + g).exp();
                    let done = (next - g).abs() <= 1e-13 * (1.0 + g);
                    g = next;
                    if done {
                        break;
                    }
                }
                let e_tau = (alpha + g) / (beta + kappa);
                vals[*slot] = e_tau;
                set(*index, e_tau);
                g
            }
            CountLaw::NegativeBinomial { shape } => {
                // q(k) = NB(α, p̃), p̃ = p e^slope with p = κ/(1 + κ): E[k] = α p̃/(1 − p̃).
                let alpha = shape.eval(vals, stack);
                // ∂F/∂k < 0 keeps p̃ < p < 1; the clamp only guards rounding.
                let pt = (kappa / (1.0 + kappa) * slope.exp()).min(1.0 - 1e-12);
                alpha * pt / (1.0 - pt)
            }
        };
        vals[pn.slot] = gamma;
        set(pn.index, gamma);
    }
    for (a, sv) in cp.aux.iter().zip(&svals) {
        let e = mixing(&a.family, vals, *sv, stack).0;
        vals[a.slot] = e;
        set(a.index, e);
    }
}

/// The double bound's predictor-level curvature and linear term at one observation: with the
/// rate `κ(η) = k₀ + k₁η + k₂η²` and `γ` the current `E[n]`, maximising over `q(n)` leaves
/// `−w·E_q[κ(η)]`, `w = 1 − γ/E[κ]`, i.e. `(2k₂w, −k₁w)` (thesis §7.2.1, Algorithm 3 with
/// `w = 1 − ψ`).
pub(crate) fn double_bound_terms(
    pn: &gpm_schedule::CaviPoisson,
    pred: PredictorId,
    vals: &[f64],
    m: &dyn Fn(PredictorId) -> (f64, f64),
    stack: &mut Vec<f64>,
) -> (f64, f64) {
    let kbar = expect(&pn.kappa, vals, m, stack);
    // The rate's own weight: E[τ] when a Gamma τ scales it (the ELBO reads −E[τ]·E[κ]).
    let scale = match &pn.law {
        CountLaw::GammaScaled { slot, .. } => vals[*slot],
        _ => 1.0,
    };
    let w = if kbar > 0.0 {
        scale - vals[pn.slot] / kbar
    } else {
        scale
    };
    let coef = |list: &[(PredictorId, gpm_schedule::Tape)], stack: &mut Vec<f64>| {
        list.iter()
            .find(|t| t.0 == pred)
            .map_or(0.0, |t| t.1.eval(vals, stack))
    };
    let (k1, k2) = (coef(&pn.kappa.lin, stack), coef(&pn.kappa.quad, stack));
    (2.0 * k2 * w, -k1 * w)
}

/// Observation `i`'s term of the ELBO at the optimal `q(ω)` (ch. 5 §3.3.1), including
/// `−KL(Po(γ) ‖ Po(κ))` of a Poisson chain.
pub(crate) fn local_elbo(
    cp: &CaviProgram,
    vals: &[f64],
    m: &dyn Fn(PredictorId) -> (f64, f64),
    stack: &mut Vec<f64>,
) -> f64 {
    let mut elbo = cp.log_c.eval(vals, stack) + expect(&cp.p0, vals, m, stack);
    for a in &cp.aux {
        let s = expect(&a.s, vals, m, stack);
        elbo += mixing(&a.family, vals, s, stack).1;
    }
    if let Some(pn) = &cp.poisson {
        let (g, k) = (vals[pn.slot], expect(&pn.kappa, vals, m, stack));
        // γ log(κ/γ) + γ: the Poisson's −KL without its −κ, and 0 at γ = 0.
        let count = if g > 0.0 { g * (k / g).ln() + g } else { 0.0 };
        elbo += match &pn.law {
            CountLaw::Poisson => count - k,
            // q(τ) at its optimum given γ: log ∫ Gamma(τ | α, β) τ^γ e^(−τ E κ) dτ.
            CountLaw::GammaScaled { shape, rate, .. } => {
                use statrs::function::gamma::ln_gamma;
                let (alpha, beta) = (shape.eval(vals, stack), rate.eval(vals, stack));
                count + ln_gamma(alpha + g) - ln_gamma(alpha) + alpha * beta.ln()
                    - (alpha + g) * (beta + k).ln()
            }
            // −KL(NB(α, p̃) ‖ NB(α, p)) with p̃ = γ/(α + γ).
            CountLaw::NegativeBinomial { shape } => {
                let alpha = shape.eval(vals, stack);
                let p = k / (1.0 + k);
                let pt = g / (alpha + g);
                let log_ratio = if g > 0.0 { g * (p / pt).ln() } else { 0.0 };
                log_ratio + alpha * ((-p).ln_1p() - (-pt).ln_1p())
            }
        };
    }
    elbo
}
