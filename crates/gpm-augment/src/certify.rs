//! Certification (RECOGNITION.md §5): every plan is checked numerically when it is built. At
//! random points (predictors, data, hyperparameters), the augmented factor integrated over its
//! auxiliary variables must equal the original factor:
//!
//! `ℓ(η) = log C + P₀(η) + Σ_ω log ∫ p(ω) e^(−ω s_ω(η)) dω`, summed over Poisson counts `n`
//! with weights `Po(n | κ)`,
//!
//! where `P₀` is the augmented polynomial at `ω = 0` and `s_ω` the coefficient of `−ω`.
//! The mixing integrals are computed by quadrature of the prior *density* (Gamma, Lévy, inverse
//! Gamma: trapezoid rule in `log ω`, which converges geometrically for these smooth integrands)
//! — independently of the Laplace transforms the recognizer assumed — and, for Pólya-Gamma,
//! from its closed-form Laplace transform `cosh(√(s/2))^(−b)` (Polson, Scott & Windle 2013,
//! eq. 5), whose series density is numerically unusable in the tails.
//! The original density is evaluated from the IR's own expression evaluator.

use crate::plan::{AuxVar, Certificate, Family, Plan};
use crate::probe::Probe;
use crate::tree::{Role, T};
use gpm_ir::{Factor, FactorForm, Model};
use gpm_special::lgamma;
use gpm_special::log_sum_exp;
use rand::SeedableRng;

/// Relative error a plan must reach.
pub const TOLERANCE: f64 = 1e-8;

/// The largest log-density magnitude certified: there `allowance` is 1 % of the density.
pub const MAX_LOG_DENSITY: f64 = 1e10;

/// Relative error in the density allowed where the log-density is computed from terms of size
/// `magnitude`: [`TOLERANCE`], or twelve digits of that size where it is so large (a Poisson
/// rate of 10⁷, a Student-t with ν = 10⁸) that double precision cannot hold the log-density to
/// `TOLERANCE` absolute.
pub fn allowance(magnitude: f64) -> f64 {
    TOLERANCE.max(1e-12 * magnitude.abs())
}

impl Certificate {
    /// Not certified, with the reason, after `points` points.
    fn refused(points: usize, method: String) -> Self {
        Certificate {
            points,
            max_rel_error: f64::NAN,
            passed: false,
            method,
        }
    }

    /// Not yet checked.
    pub fn pending() -> Self {
        Certificate {
            points: 0,
            max_rel_error: f64::NAN,
            passed: false,
            method: String::new(),
        }
    }
}

/// `log E_prior[e^(−ω s)]` for a prior family evaluated at a point.
fn log_mixing(prior: &Family, env: &dyn Fn(Role, &str) -> Option<f64>, s: f64) -> Option<f64> {
    if let Some((law, trees)) = prior.law() {
        let p = trees
            .iter()
            .map(|t| t.eval(env))
            .collect::<Option<Vec<f64>>>()?;
        // From the density where it has a closed form — an independent check of the Laplace
        // transform the rule relied on — else (Pólya-Gamma, PSW 2013 eq. 5) the closed form.
        return gpm_families::law_log_laplace_quadrature(law, &p, s)
            .or_else(|| law.log_laplace(&p, s));
    }
    Some(match prior {
        // A CAS-proved φ: its Laplace transform is φ itself (the identity is by Bernstein's
        // theorem; what is checked numerically is the algebra that produced φ).
        Family::TiltedLaplace { phi, .. } => {
            let v = phi.eval(&|r, n| {
                if r == Role::Aux && n == "r" {
                    Some(s)
                } else {
                    env(r, n)
                }
            })?;
            v.ln()
        }
        _ => return None,
    })
}

/// Check a log-density plan at random points.
pub fn certify(model: &Model, factor: &Factor, plan: &Plan, log_c: &T) -> Certificate {
    let FactorForm::LogDensity { log_density } = &factor.form else {
        return Certificate::pending();
    };
    let original = T::from_sx(log_density);
    let aug = plan.augmented.to_tree();
    let probe = Probe::new(
        model,
        &[&original, log_c, &aug],
        10,
        0xce47 ^ plan.factor as u64,
    );
    let vars = match Variables::of(plan) {
        Ok(vars) => vars,
        Err(refusal) => return refusal,
    };
    let method = vars.methods();
    let integrand = Integrand {
        reading: vars.reading(&aug),
        vars,
        aug: &aug,
        log_c,
    };
    let mut worst: f64 = 0.0;
    let mut excess: f64 = 0.0;
    for k in 0..probe.len() {
        let base = probe.env(k);
        let Some(target) = original.eval(&|r, n| if r == Role::Aux { None } else { base(r, n) })
        else {
            continue;
        };
        if !target.is_finite() {
            continue;
        }
        let magnitude = magnitude_at(&original, &base, target);
        // With nothing integrated (a conjugate factor: the plan only rewrites the log-density
        // as a polynomial in its predictor) the check is a direct comparison, relative to the
        // terms' size, and holds at any scale: refusing it sent a Gaussian likelihood with a
        // noise sd of 1e-6 to the generic update, whose prior ellipses never reached the data.
        if magnitude > MAX_LOG_DENSITY && !plan.aux.is_empty() {
            return Certificate::refused(k, format!(
                "the log-density is computed from terms of size {magnitude:.3e} at the hyperparameters' scale; beyond {MAX_LOG_DENSITY:e} double precision cannot check an augmentation"
            ));
        }
        let recon = integrand.log_integral(&base);
        if let (Some(v), true) = (recon, plan.aux.is_empty()) {
            // Nothing integrated: the two log-densities are the same sum of terms rewritten,
            // and agree to the rounding of those terms — compared in log space relative to
            // their size, since at a noise sd of 1e-12 a rounding of 1e8 nats is exp(1e8) in
            // the density (the check failed as "relative error inf" and the Gaussian
            // likelihood fell to the generic update).
            let e = (v - target).abs() / magnitude.max(1.0);
            worst = worst.max(e);
            excess = excess.max(if e.is_finite() {
                e / 1e-9
            } else {
                f64::INFINITY
            });
            continue;
        }
        let err = match recon {
            Some(v) if v.is_finite() => (v - target).exp_m1().abs(),
            // A mixing integral or a count's sum out of double range (a Gamma of shape 10⁻³,
            // a count spread against n = 0 over millions of values), or a term undefined at
            // this point: a reason, not a number.
            _ => {
                return Certificate::refused(k, format!(
                    "{}: the integral over the auxiliary variables could not be evaluated at these parameter values (out of double precision's range, or a term undefined there)",
                    method.join("; ")
                ))
            }
        };
        worst = worst.max(err);
        excess = excess.max(err / allowance(magnitude));
    }
    Certificate {
        points: probe.len(),
        max_rel_error: worst,
        passed: excess < 1.0,
        method: if method.is_empty() {
            "no auxiliary variables: the augmented factor is the factor".into()
        } else {
            method.join("; ")
        },
    }
}

/// The size of the terms the log-density is computed from at a point (lgamma((ν+1)/2) −
/// lgamma(ν/2) at ν = 10⁸ is 9 from two terms of 10⁹): rounding is relative to it, not to the
/// result `target`.
fn magnitude_at(original: &T, base: &dyn Fn(Role, &str) -> Option<f64>, target: f64) -> f64 {
    match original {
        T::Add(v) => v
            .iter()
            .map(|t| {
                t.eval(&|r, n| if r == Role::Aux { None } else { base(r, n) })
                    .map_or(0.0, f64::abs)
            })
            .sum::<f64>()
            .max(target.abs()),
        _ => target.abs(),
    }
}

/// A plan's auxiliary variables as the check integrates them: at most one count, summed; at
/// most one Gamma variable in the count's prior, integrated outside the sum; the continuous
/// others, each by its mixing law's closed form or quadrature.
struct Variables<'p> {
    count: Option<&'p AuxVar>,
    outer_gamma: Option<(&'p str, &'p T, &'p T)>,
    continuous: Vec<&'p AuxVar>,
}

impl<'p> Variables<'p> {
    /// The plan's variables sorted, or the reason the check cannot integrate them.
    fn of(plan: &'p Plan) -> Result<Self, Certificate> {
        let counts: Vec<&AuxVar> = plan
            .aux
            .iter()
            .filter(|a| a.conditional.is_count())
            .collect();
        if counts.len() > 1 {
            return Err(Certificate::refused(
                0,
                "more than one count variable per factor is not certified".into(),
            ));
        }
        let count = counts.first().copied();
        // A continuous variable in the count's prior (the Gamma τ whose e^(−τκσ(z)) the Poisson
        // MGF expands) is integrated outside the count's sum.
        let reads_count_prior = |a: &AuxVar| {
            count.is_some_and(|p| match &p.prior_family {
                Family::Poisson { rate } => rate.mentions(Role::Aux, Some(&a.name)),
                Family::NegativeBinomial { shape, p } => {
                    shape.mentions(Role::Aux, Some(&a.name)) || p.mentions(Role::Aux, Some(&a.name))
                }
                _ => false,
            })
        };
        let (outer, continuous): (Vec<&AuxVar>, Vec<&AuxVar>) = plan
            .aux
            .iter()
            .filter(|a| !a.conditional.is_count())
            .partition(|a| reads_count_prior(a));
        if outer.len() > 1 {
            return Err(Certificate::refused(
                0,
                "more than one continuous variable in a count's prior is not certified".into(),
            ));
        }
        let outer_gamma = match outer.first() {
            None => None,
            Some(o) => match &o.prior_family {
                Family::Gamma { shape, rate } => Some((o.name.as_str(), shape, rate)),
                other => {
                    return Err(Certificate::refused(
                        0,
                        format!(
                            "a {} variable in a count's prior is not certified",
                            other.name()
                        ),
                    ))
                }
            },
        };
        Ok(Variables {
            count,
            outer_gamma,
            continuous,
        })
    }

    /// How each variable is integrated, in words, for the certificate.
    fn methods(&self) -> Vec<String> {
        let mut method: Vec<String> = self
            .continuous
            .iter()
            .map(|a| match a.prior_family {
                Family::PolyaGamma { .. } => {
                    format!("{}: PG Laplace transform (closed form)", a.name)
                }
                Family::TiltedLaplace { .. } => format!(
                    "{}: φ proved completely monotone by the CAS; the algebra checked numerically",
                    a.name
                ),
                _ => format!(
                    "{}: quadrature of the {} density",
                    a.name,
                    a.prior_family.name()
                ),
            })
            .collect();
        if let Some(p) = self.count {
            method.push(format!("{}: {} sum", p.name, p.prior_family.name()));
        }
        if let Some((name, ..)) = self.outer_gamma {
            method.push(format!(
                "{name}: integrated outside the count's sum (the Gamma-Poisson mixture as a negative-binomial sum)"
            ));
        }
        method
    }

    /// For each continuous variable, the terms of the augmented polynomial that read it.
    fn reading(&self, aug: &T) -> Vec<T> {
        self.continuous
            .iter()
            .map(|a| match aug {
                T::Add(v) => T::add(
                    v.iter()
                        .filter(|t| t.mentions(Role::Aux, Some(&a.name)))
                        .cloned()
                        .collect(),
                ),
                other => other.clone(),
            })
            .collect()
    }
}

/// The augmented factor `C · exp(augmented)` and what integrating it over the auxiliaries reads.
struct Integrand<'p> {
    vars: Variables<'p>,
    reading: Vec<T>,
    aug: &'p T,
    log_c: &'p T,
}

impl Integrand<'_> {
    /// Given the count's value (if any), the log of the factor integrated over the continuous
    /// variables at the point `base`.
    fn given_count(
        &self,
        base: &dyn Fn(Role, &str) -> Option<f64>,
        n_val: Option<(&str, f64)>,
    ) -> Option<f64> {
        let env = |r: Role, name: &str| -> Option<f64> {
            if r == Role::Aux {
                if let Some((nn, v)) = n_val {
                    if nn == name {
                        return Some(v);
                    }
                }
                return Some(0.0); // ω = 0 gives P₀
            }
            base(r, name)
        };
        let mut total = self.log_c.eval(&env)? + self.aug.eval(&env)?;
        for (a, part) in self.vars.continuous.iter().zip(&self.reading) {
            // s_ω = P(ω = 0) − P(ω = 1), from the terms that read ω only: the others can
            // be as large as the count (n f / 2), and their rounding, times a PG shape
            // as large again, would swamp the check.
            let env1 = |r: Role, name: &str| -> Option<f64> {
                if r == Role::Aux && name == a.name {
                    return Some(1.0);
                }
                env(r, name)
            };
            let s = part.eval(&env)? - part.eval(&env1)?;
            total += log_mixing(&a.prior_family, &env, s)?;
        }
        Some(total)
    }

    /// The log of the factor integrated over every auxiliary at the point `base`: the count's
    /// sum outside the continuous integrals, the count's Gamma prior outside both.
    fn log_integral(&self, base: &dyn Fn(Role, &str) -> Option<f64>) -> Option<f64> {
        let inner = |n_val: Option<(&str, f64)>| self.given_count(base, n_val);
        let Some(p) = self.vars.count else {
            return inner(None);
        };
        if let Some((name, shape, rate)) = self.vars.outer_gamma {
            return count_in_gamma(&base, &inner, p, name, shape, rate, self.aug, self.log_c);
        }
        let at = |t: &T| t.eval(&|r, n| if r == Role::Aux { None } else { base(r, n) });
        let log_pmf = count_log_pmf(&p.prior_family, &at)?;
        gpm_special::log_sum_concave(
            &|nf| Some(log_pmf(nf) + inner(Some((&p.name, nf)))?),
            gpm_special::Lattice::Counts,
        )
    }
}

/// A count's log pmf at the point (`at` evaluates its parameters): Poisson or negative
/// binomial; None for another law or a parameter undefined there.
fn count_log_pmf(
    family: &Family,
    at: &dyn Fn(&T) -> Option<f64>,
) -> Option<Box<dyn Fn(f64) -> f64>> {
    match family {
        Family::Poisson { rate } => at(rate).map(|kappa| {
            let f: Box<dyn Fn(f64) -> f64> = Box::new(move |nf: f64| {
                if kappa == 0.0 {
                    if nf == 0.0 {
                        0.0
                    } else {
                        f64::NEG_INFINITY
                    }
                } else {
                    nf * kappa.ln() - kappa - lgamma(nf + 1.0)
                }
            });
            f
        }),
        Family::NegativeBinomial { shape, p: prob } => at(shape).zip(at(prob)).map(|(r, q)| {
            let f: Box<dyn Fn(f64) -> f64> =
                Box::new(move |nf: f64| log_negative_binomial(nf, r, q));
            f
        }),
        _ => None,
    }
}

/// `log ∫ Gamma(τ | a, b) Σ_n Po(n | τκ) e^(inner(n)) dτ`. By Tonelli the τ integral goes inside
/// the sum, and `∫ Gamma(τ | a, b) Po(n | τκ) dτ = NB(n | a, κ/(b + κ))` (the Gamma-Poisson
/// mixture), so it is one negative-binomial sum. `None` (not certified) when the rate is not
/// linear in `τ` or the rest of the plan reads `τ` — forms the rules do not produce.
/// The rest of a plan's log-density given an auxiliary's value (`None`: not held).
type GivenAux<'a> = &'a dyn Fn(Option<(&str, f64)>) -> Option<f64>;

#[allow(clippy::too_many_arguments)]
fn count_in_gamma(
    base: &dyn Fn(Role, &str) -> Option<f64>,
    inner: GivenAux<'_>,
    count: &crate::plan::AuxVar,
    tau: &str,
    shape: &T,
    rate: &T,
    aug: &T,
    log_c: &T,
) -> Option<f64> {
    let Family::Poisson { rate: kappa } = &count.prior_family else {
        return None;
    };
    if aug.mentions(Role::Aux, Some(tau)) || log_c.mentions(Role::Aux, Some(tau)) {
        return None;
    }
    let fixed = |t: &T| t.eval(&|r, n| if r == Role::Aux { None } else { base(r, n) });
    let (a, b) = (fixed(shape)?, fixed(rate)?);
    let rate_at = |tau_v: f64| {
        kappa.eval(&|r: Role, n: &str| {
            if r == Role::Aux && n == tau {
                Some(tau_v)
            } else if r == Role::Aux {
                None
            } else {
                base(r, n)
            }
        })
    };
    let (k1, k2) = (rate_at(1.0)?, rate_at(2.0)?);
    if (k2 - 2.0 * k1).abs() > 1e-12 * k2.abs().max(1.0) {
        return None;
    }
    let q = k1 / (b + k1);
    gpm_special::log_sum_concave(
        &|nf| Some(log_negative_binomial(nf, a, q) + inner(Some((&count.name, nf)))?),
        gpm_special::Lattice::Counts,
    )
}

/// `log NB(n | r, q)`, the count's log pmf `Γ(n+r)/(Γ(r) n!) qⁿ (1−q)^r` (`q = 0`: the point
/// mass at 0).
fn log_negative_binomial(n: f64, r: f64, q: f64) -> f64 {
    let power = if q > 0.0 {
        n * q.ln()
    } else if n == 0.0 {
        0.0
    } else {
        f64::NEG_INFINITY
    };
    lgamma(n + r) - lgamma(r) - lgamma(n + 1.0) + power + r * (-q).ln_1p()
}

/// Check the logistic-softmax chain for `classes` classes at random predictor values:
/// `σ(η_k)/Σ_c σ(η_c) = ∫₀^∞ σ(η_k) Π_c Σ_n Po(n | λ) σ(−η_c)^n dλ` (λ by quadrature, the
/// Poisson sums truncated far in the tail). The Pólya-Gamma step is the identity certified for
/// the logistic factors.
pub fn certify_categorical(classes: usize, link: &gpm_ir::SoftmaxLink) -> Certificate {
    // The check depends on the number of classes and the link only: once per process each (a
    // model with 200 categorical statements certifies once, not 200 times).
    let key = (classes, link.bijective, link.scale.is_some());
    // (classes, bijective, scaled) → certificate.
    type Done = Vec<((usize, bool, bool), Certificate)>;
    static DONE: std::sync::Mutex<Done> = std::sync::Mutex::new(Vec::new());
    if let Ok(done) = DONE.lock() {
        if let Some((_, c)) = done.iter().find(|(k, _)| *k == key) {
            return c.clone();
        }
    }
    let c = certify_categorical_once(classes, key.1, key.2);
    if let Ok(mut done) = DONE.lock() {
        done.push((key, c.clone()));
    }
    c
}

/// `log ∫ [θ_k σ(η_k)] Π_c Σ_n Po(n | λθ_c) σ(−η_c)^n · e^(−λ θ_K D) dλ` by quadrature in
/// `log λ` against `log w_k − log Σ_j w_j` at random `η`, labels and (scaled) `θ`.
fn certify_categorical_once(classes: usize, bijective: bool, scaled: bool) -> Certificate {
    use rand::Rng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
    let sig = gpm_special::logistic;
    let d = gpm_ir::FIXED_CLASS_WEIGHT;
    let columns = classes - usize::from(bijective);
    let mut worst: f64 = 0.0;
    for _ in 0..6 {
        let eta: Vec<f64> = (0..columns).map(|_| rng.gen_range(-3.0..3.0)).collect();
        let theta: Vec<f64> = (0..classes)
            .map(|_| if scaled { rng.gen_range(0.3..3.0) } else { 1.0 })
            .collect();
        let k = rng.gen_range(0..classes);
        let fixed = if bijective { theta[columns] * d } else { 0.0 };
        let w_k = if k < columns {
            theta[k] * sig(eta[k])
        } else {
            fixed
        };
        let total = fixed + (0..columns).map(|c| theta[c] * sig(eta[c])).sum::<f64>();
        let target = w_k.ln() - total.ln();
        // log n! once for every n the sums reach (λθ ≤ 3e⁶ below).
        let max_top = (3.0 * 6f64.exp() + 12.0 * (3.0 * 6f64.exp()).sqrt() + 41.0) as usize;
        let log_fact: Vec<f64> = (0..max_top).map(|n| lgamma(n as f64 + 1.0)).collect();
        let log_sig_neg: Vec<f64> = eta.iter().map(|&e| sig(-e).ln()).collect();
        let mut terms = Vec::with_capacity(max_top);
        let mut log_integrand = |lam: f64| -> f64 {
            let mut s = w_k.ln() - lam * fixed;
            for (c, &ls) in log_sig_neg.iter().enumerate() {
                let rate = lam * theta[c];
                let top = (rate + 12.0 * rate.sqrt() + 40.0) as usize;
                let log_rate = rate.ln();
                terms.clear();
                terms.extend((0..top).map(|n| {
                    let nf = n as f64;
                    nf * log_rate - rate - log_fact[n] + nf * ls
                }));
                s += log_sum_exp(&terms);
            }
            s
        };
        // ∫ dλ = ∫ e^t dt over t = log λ.
        let (lo, hi, h) = (-30.0, 6.0, 0.01);
        let n = ((hi - lo) / h) as usize;
        let nodes: Vec<f64> = (0..=n)
            .map(|j| {
                let t = lo + j as f64 * h;
                let half = if j == 0 || j == n { 0.5f64.ln() } else { 0.0 };
                log_integrand(t.exp()) + t + half
            })
            .collect();
        let recon = log_sum_exp(&nodes) + h.ln();
        worst = worst.max((recon - target).exp_m1().abs());
    }
    Certificate {
        points: 6,
        max_rel_error: worst,
        passed: worst < TOLERANCE,
        method: format!(
            "λ by quadrature, Poisson sums, {classes} classes{}{}",
            if bijective { ", bijective" } else { "" },
            if scaled { ", random class scales" } else { "" }
        ),
    }
}
