//! Naming the mixing law of a scale mixture `φ(r) = exp(Σ atoms − φ₀)`, `r` a squared residual
//! (thesis ch. 5): the Gamma (Student-t), Lévy (Laplace, the SVM hinge) and inverse-Gamma
//! (Matérn-3/2 noise) laws by their forms, any other completely monotone `φ` by a CAS proof that
//! `ψ = −log φ + log φ(0)` is a Bernstein function. One function per law, tried in that order.

use super::*;

/// A named mixing law: the auxiliary's conditional given the residual, its prior, its
/// conditional mean (CAVI's `E[ω | c]`), the form's name and, for a law the CAS proved, the
/// proof (for the derivation).
pub(super) struct Named {
    pub conditional: Family,
    pub prior_family: Family,
    pub proof: Option<String>,
    pub mean: T,
    pub form: &'static str,
}

/// What naming a law reads: the factor's work (its probe and signs), the atoms of `log φ` in
/// the symbol `r`, and `r` as the residual's square `r_expr`.
struct Mixture<'a, 'w> {
    w: &'a Work<'w>,
    atoms_r: &'a [T],
    r: &'a T,
    r_expr: &'a T,
    probe: crate::probe::Probe,
}

/// Name the mixing law of `φ(r) = exp(Σ atoms_r − φ₀)`: `Err` says why `φ` is not completely
/// monotone, or not shown to be.
pub(super) fn name_mixture(w: &Work, atoms_r: &[T], r: &T, r_expr: &T) -> Result<Named, String> {
    let m = Mixture {
        w,
        atoms_r,
        r,
        r_expr,
        probe: w.probe(&atoms_r.iter().collect::<Vec<_>>()),
    };
    if let [a] = atoms_r {
        if let Some(named) = m.gamma(a) {
            return named;
        }
        if let Some(named) = m.levy(a) {
            return named;
        }
    }
    if let [a, b] = atoms_r {
        if let Some(named) = m.inverse_gamma(a, b).or_else(|| m.inverse_gamma(b, a)) {
            return Ok(named);
        }
    }
    m.completely_monotone()
}

/// `a = κ·core` with `κ` free of `r`: `κ`.
fn coef_of(a: &T, core: &T) -> Option<T> {
    match a {
        x if x == core => Some(T::Num(1.0)),
        T::Mul(v) => {
            let (c, rest): (Vec<T>, Vec<T>) = v
                .iter()
                .cloned()
                .partition(|u| !u.mentions(Role::Aux, Some("r")));
            (T::mul(rest) == *core).then(|| T::mul(c))
        }
        _ => None,
    }
}

impl Mixture<'_, '_> {
    /// `κ·√r` (also written `r^0.5`): `κ`.
    fn sqrt_coef(&self, a: &T) -> Option<T> {
        coef_of(a, &T::sqrt(self.r.clone()))
            .or_else(|| coef_of(a, &T::pow(self.r.clone(), T::Num(0.5))))
    }

    /// `(1 + w·r)^(−p)` ↔ Gamma(p, 1/w).
    fn gamma(&self, a: &T) -> Option<Result<Named, String>> {
        let (T::Mul(_) | T::Call(SxFunc::Log, _), Some(inner)) = (a, log_argument(a)) else {
            return None;
        };
        let (c0, wr) = poly_in_r(&inner, self.r)?;
        let kappa = coef_of(a, &T::log(inner.clone())).unwrap_or(T::Num(1.0));
        let shape = T::neg(kappa);
        let rate = T::mul(vec![c0, T::pow(wr, T::Num(-1.0))]);
        if !(self.probe.sign_ok(&shape, true) && self.probe.sign_ok(&rate, true)) {
            return Some(Err(format!("φ(r) = (1 + r/b)^(−p) needs p > 0 and b > 0; here p = {shape}, b = {rate}: φ is not completely monotone")));
        }
        let cond_rate = T::add(vec![rate.clone(), self.r_expr.clone()]);
        Some(Ok(Named {
            conditional: Family::Gamma {
                shape: shape.clone(),
                rate: cond_rate.clone(),
            },
            prior_family: Family::Gamma {
                shape: shape.clone(),
                rate: rate.clone(),
            },
            proof: None,
            mean: T::mul(vec![shape, T::pow(cond_rate, T::Num(-1.0))]),
            form: "Gamma scale mixture, e.g. Student-t",
        }))
    }

    /// `exp(−a√r)` ↔ Lévy(a), tilted: inverse Gaussian(a/(2c), a²/2).
    fn levy(&self, a: &T) -> Option<Result<Named, String>> {
        let a_ = T::neg(self.sqrt_coef(a)?);
        if !self.probe.sign_ok(&a_, true) {
            return Some(Err(format!(
                "φ(r) = exp(−a√r) with a = {a_} ≤ 0 is increasing, not completely monotone"
            )));
        }
        let c = T::sqrt(self.r_expr.clone());
        let mean = T::mul(vec![
            a_.clone(),
            T::pow(T::mul(vec![T::Num(2.0), c]), T::Num(-1.0)),
        ]);
        Some(Ok(Named {
            conditional: Family::InverseGaussian {
                mean: mean.clone(),
                shape: T::mul(vec![T::Num(0.5), T::pow(a_.clone(), T::Num(2.0))]),
            },
            prior_family: Family::Levy { a: a_.clone() },
            proof: None,
            mean,
            form: "Lévy scale mixture, e.g. Laplace or the SVM hinge",
        }))
    }

    /// `(1 + a√r) e^(−a√r)` (the atoms `la` and `sa`) ↔ inverse Gamma(3/2, a²/4), tilted:
    /// GIG(−3/2, 2c², a²/2).
    fn inverse_gamma(&self, la: &T, sa: &T) -> Option<Named> {
        let inner = log_argument(la)?;
        let k_log = coef_of(la, &T::log(inner.clone()))?;
        let k_sqrt = self.sqrt_coef(sa)?;
        let (c0, a_) = poly_in(&inner, &T::sqrt(self.r.clone()))?;
        let probe = &self.probe;
        if !(probe.equal(&k_log, &T::Num(1.0))
            && probe.equal(&c0, &T::Num(1.0))
            && probe.equal(&k_sqrt, &T::neg(a_.clone()))
            && probe.sign_ok(&a_, true))
        {
            return None;
        }
        let a2 = T::pow(a_.clone(), T::Num(2.0));
        let (p, ga, gb) = (
            T::Num(-1.5),
            T::mul(vec![T::Num(2.0), self.r_expr.clone()]),
            T::mul(vec![T::Num(0.5), a2.clone()]),
        );
        // E[GIG(−3/2, a, b)] = √(b/a) K_{−1/2}(√(ab)) / K_{−3/2}(√(ab)) = √(b/a) / (1 + 1/√(ab)).
        let sab = T::sqrt(T::mul(vec![ga.clone(), gb.clone()]));
        let mean = T::mul(vec![
            T::sqrt(T::mul(vec![gb.clone(), T::pow(ga.clone(), T::Num(-1.0))])),
            T::pow(
                T::add(vec![T::Num(1.0), T::pow(sab, T::Num(-1.0))]),
                T::Num(-1.0),
            ),
        ]);
        Some(Named {
            conditional: Family::Gig { p, a: ga, b: gb },
            prior_family: Family::InverseGamma {
                shape: T::Num(1.5),
                scale: T::mul(vec![T::Num(0.25), a2.clone()]),
            },
            proof: None,
            mean,
            form: "inverse-Gamma scale mixture, e.g. the Matérn-3/2 likelihood",
        })
    }

    /// Not a named law: ask the CAS to prove ψ(r) = log φ(0) − log φ(r) Bernstein, i.e. φ/φ(0)
    /// completely monotone (RECOGNITION.md §3); the mixing law is then the tilted inverse
    /// Laplace transform of φ, and E[ω | c] = ψ'(c²).
    fn completely_monotone(&self) -> Result<Named, String> {
        let (w, r, r_expr) = (self.w, self.r, self.r_expr);
        let log_phi = T::add(self.atoms_r.to_vec());
        let psi = sqrt_powers(
            &T::sub(log_phi.replace(r, &T::Num(0.0)), log_phi.clone()),
            r,
        );
        let positive = |s: &str| w.signs.positive_hypers.contains(s);
        // Try ψ after constant folding by saturation (ψ(0)-terms vanish, so the ψ shown by
        // `check` reads as the user's term), then as written (when folding hides what the
        // prover needs).
        let light = gpm_cas::Limits {
            nodes: 4_000,
            iterations: 4,
            time: std::time::Duration::from_millis(100),
        };
        let proof = crate::cas::to_cas(&psi).and_then(|c| {
            [gpm_cas::simplify_with(&c, &light), c.clone()]
                .into_iter()
                .find_map(|c| gpm_cas::is_bernstein(&c, "r", &positive).map(|p| (c, p)))
        });
        let Some((psi_c, proof)) = proof else {
            return Err(format!(
                "φ(r) = exp({}) is not one of the named mixing laws (Gamma, Lévy, inverse Gamma), and the CAS could not prove ψ(r) = −log φ(r) + log φ(0) a Bernstein function (so φ may not be completely monotone)",
                log_phi
            ));
        };
        let dpsi = gpm_cas::derivative(&psi_c, "r");
        let role = |s: &str| {
            if s == "r" {
                Role::Aux
            } else if w.model.hyper(s).is_some() {
                Role::Hyper
            } else {
                Role::Data
            }
        };
        let mean = crate::cas::from_cas(&dpsi, &role).replace(r, r_expr);
        // The proved (constant-folded) ψ is the one shown and used.
        let psi = crate::cas::from_cas(&psi_c, &role);
        let phi = T::exp(T::neg(psi.clone()));
        let rules: Vec<&str> = proof_rules(&proof);
        Ok(Named {
            conditional: Family::TiltedLaplace {
                phi: phi.clone(),
                c2: r_expr.clone(),
            },
            prior_family: Family::TiltedLaplace {
                phi,
                c2: T::Num(0.0),
            },
            proof: Some(format!(
                "ψ(r) = −log φ(r) = {psi} Bernstein ({})",
                rules.join("; ")
            )),
            mean,
            form: "completely monotone φ proved by the CAS",
        })
    }
}

/// `(√r)^p = r^(p/2)` for `r ≥ 0`, so that powers of a residual's absolute value read as
/// powers of `r`.
fn sqrt_powers(t: &T, r: &T) -> T {
    let go = |x: &T| sqrt_powers(x, r);
    match t {
        T::Pow(a, p) => match (&**a, &**p) {
            (T::Call(SxFunc::Sqrt, v), T::Num(e)) if v[0] == *r => {
                T::pow(r.clone(), T::Num(e / 2.0))
            }
            _ => T::pow(go(a), go(p)),
        },
        T::Add(v) => T::add(v.iter().map(go).collect()),
        T::Mul(v) => T::mul(v.iter().map(go).collect()),
        T::Call(f, v) => T::Call(*f, v.iter().map(go).collect()),
        other => other.clone(),
    }
}

fn proof_rules(p: &gpm_cas::Proof) -> Vec<&'static str> {
    let mut out = vec![p.rule];
    for q in &p.premises {
        out.extend(proof_rules(q));
    }
    out
}

fn log_argument(a: &T) -> Option<T> {
    match a {
        T::Call(SxFunc::Log, v) => Some(v[0].clone()),
        T::Mul(v) => v.iter().find_map(|u| match u {
            T::Call(SxFunc::Log, w) => Some(w[0].clone()),
            _ => None,
        }),
        _ => None,
    }
}

/// `inner = c0 + w·r` with `c0, w` free of `r`.
pub(super) fn poly_in_r(inner: &T, r: &T) -> Option<(T, T)> {
    poly_in(inner, r)
}

/// `inner = c0 + w·x` for a sub-expression `x`, by renaming `x` to a predictor.
fn poly_in(inner: &T, x: &T) -> Option<(T, T)> {
    let p = T::sym(Role::Predictor, "__x");
    let renamed = inner.replace(x, &p);
    if renamed.mentions(Role::Aux, Some("r")) {
        return None;
    }
    let poly = Poly::of(&renamed, 1)?;
    let w = poly.lin.get("__x")?.clone();
    Some((poly.c0, w))
}
