//! The recognizers (RECOGNITION.md §2): a worklist of atoms of the log-density; each rule
//! replaces an atom by simpler atoms and may introduce auxiliary variables, until every atom is
//! at most quadratic in the predictors, or no rule applies (a [`Refusal`] naming the atom).
//!
//! Rules, in the order they are tried on an atom `κ · core` (`κ` free of predictors):
//! 1. *logistic*: `log σ(z) = z/2 − log 2 − log cosh(z/2)`, `softplus(z) = z/2 + log 2 +
//!    log cosh(z/2)`, `log cosh(w)` — the `log cosh` atoms with the same `z²` are merged and
//!    become one Pólya-Gamma variable: `cosh(z/2)^(−b) = ∫ e^(−ω z²/2) PG(ω | b, 0) dω`
//!    (Polson, Scott & Windle 2013; thesis ch. 3).
//! 2. *Poisson MGF*: `−κ σ(z)` with `κ ≥ 0`: `e^(−κσ(z)) = Σ_n Po(n | κ) σ(−z)^n`
//!    (thesis §7.1); the atom becomes `n log σ(−z)`, which rule 1 takes. When `κ` depends on
//!    another predictor, that predictor is sampled from its collapsed conditional (§7.2.1).
//! 3. *scale mixture*: an atom that depends on the predictors only through `|u|`, `u²` or
//!    `max(u, 0)` for one affine `u`: with `r = u²`, the atoms in `r` form `log φ(r)`;
//!    `φ(r)/φ(0)` completely monotone gives `φ(r) = ∫ e^(−rω) p(ω) dω` (thesis ch. 5, Theorem 1).
//!    Named mixing laws: `(1 + r/b)^(−p)` ↔ Gamma(p, b); `e^(−a√r)` ↔ Lévy (tilted: inverse
//!    Gaussian); `(1 + a√r)e^(−a√r)` ↔ inverse Gamma(3/2, a²/4) (tilted: GIG); anything else whose
//!    complete monotonicity the CAS proves ↔ the tilted inverse Laplace transform of `φ`.

use crate::atoms::{atomize, Signs};
use crate::norm::normalize;
pub use crate::plan::Refusal;
use crate::plan::{AuxVar, CategoricalPlan, Family, Plan};
use crate::poly::Poly;
use crate::tree::{Role, T};
use gpm_ir::{Factor, FactorForm, Model, SxFunc};
use std::collections::BTreeSet;

use crate::probe::collect;
pub(crate) use crate::probe::Probe;
pub use conditionally_gaussian::generic_plan;

/// Split an atom into its predictor-free coefficient and its core.
fn split(a: &T) -> (T, T) {
    match a {
        T::Mul(v) => {
            let (c, r): (Vec<T>, Vec<T>) = v.iter().cloned().partition(|u| !u.has_predictor());
            (T::mul(c), T::mul(r))
        }
        _ => (T::Num(1.0), a.clone()),
    }
}

fn affine(t: &T) -> Option<Poly> {
    Poly::of(t, 1)
}

fn sq(p: &Poly) -> Poly {
    Poly::of(&T::pow(p.to_tree(), T::Num(2.0)), 2).expect("square of an affine form")
}

/// State of the worklist.
struct Work<'a> {
    model: &'a Model,
    signs: Signs,
    probe_seed: u64,
    log_c: Vec<T>,
    poly: Poly,
    logcosh: Vec<(T, Poly)>,
    mix: Vec<(Poly, Vec<T>)>,
    aux: Vec<AuxVar>,
    steps: Vec<String>,
    collapsed: BTreeSet<String>,
    counter: usize,
    /// The factor's own atoms, with the ones a first-level mixture rewrote (the Gamma scale
    /// mixture of rule 2b) replaced: the log-density the collapsed predictors are read from.
    first_level: Vec<T>,
}

mod categorical;
mod conditionally_gaussian;
mod horseshoe;
mod logistic;
mod mixing_law;
mod negative_binomial_mgf;
mod poisson_mgf;
mod probit;
mod scale_mixture;
mod variables;

/// One augmentation rule, tried on an atom `coef · core` (with `κ = coef` free of the
/// predictors) in the order of [`RULES`]. `Ok(false)`: it does not apply, the next rule is
/// tried; `Ok(true)`: it took the atom (recording variables and pushing simpler atoms on
/// `pending`); `Err(why)`: it applies, and the atom is refused for this reason.
trait Rule: Sync {
    fn apply(&self, w: &mut Work<'_>, atom: Atom<'_>, pending: &mut Vec<T>) -> Applied;
}

/// What a rule says of an atom (see [`Rule`]).
type Applied = Result<bool, String>;

/// An atom of the log-density as a rule sees it: the whole term `a = coef · core`, its factor
/// `coef` free of the predictors, and the `core` that reads them.
#[derive(Clone, Copy)]
struct Atom<'t> {
    a: &'t T,
    coef: &'t T,
    core: &'t T,
}

/// The rules, in the order they are tried; a new rule is a file in `rules/` and a line here.
const RULES: &[&dyn Rule] = &[
    &logistic::Logistic,
    &probit::Probit,
    &poisson_mgf::PoissonMgf,
    &negative_binomial_mgf::NegativeBinomialMgf,
    &scale_mixture::ScaleMixture,
];

impl Work<'_> {
    fn fresh(&mut self, base: &str) -> String {
        self.counter += 1;
        if self.counter == 1 {
            base.to_string()
        } else {
            format!("{base}{}", self.counter)
        }
    }

    fn probe(&self, ts: &[&T]) -> Probe {
        Probe::new(self.model, ts, 12, self.probe_seed)
    }

    fn same_up_to_sign(&self, a: &Poly, b: &Poly) -> bool {
        let (ta, tb) = (a.to_tree(), b.to_tree());
        let p = self.probe(&[&ta, &tb]);
        p.equal(&ta, &tb) || p.equal(&ta, &T::neg(tb.clone()))
    }

    fn add_poly(&mut self, t: &T) -> bool {
        match Poly::of(t, 2) {
            Some(p) => {
                let cur = std::mem::replace(&mut self.poly, Poly::zero());
                self.poly = Poly::of(&T::add(vec![cur.to_tree(), p.to_tree()]), 2)
                    .expect("a sum of polynomials of degree ≤ 2 has degree ≤ 2");
                true
            }
            None => false,
        }
    }

    /// Process one atom; `Err` names why no rule applies.
    fn atom(&mut self, a: T, pending: &mut Vec<T>) -> Result<(), String> {
        if !a.has_predictor() {
            self.log_c.push(a);
            return Ok(());
        }
        if self.add_poly(&a) {
            return Ok(());
        }
        let (coef, core) = split(&a);
        for rule in RULES {
            if rule.apply(
                self,
                Atom {
                    a: &a,
                    coef: &coef,
                    core: &core,
                },
                pending,
            )? {
                return Ok(());
            }
        }
        // A log of a product splits only when its factors are known positive: say which
        // declarations would allow it.
        let hint = if a.to_string().contains("log(") {
            constraint_hint(self.model, &self.signs, &a)
        } else {
            String::new()
        };
        Err(format!(
            "no rule applies to the atom {a}: it is not quadratic in the predictors, not a logistic/softplus/log-cosh of an affine predictor, not −κσ(z), and does not depend on the predictors through one square (y−f)², |y−f| or max(u, 0){hint}"
        ))
    }
}

fn collect_predictors(t: &T, out: &mut BTreeSet<String>) {
    let mut all = BTreeSet::new();
    collect(t, &mut all);
    out.extend(
        all.into_iter()
            .filter(|(r, _)| *r == Role::Predictor)
            .map(|(_, n)| n),
    );
}

/// The affine `u` hidden in `|u|`, `u²`, `sqrt(u²)` or `max(u, 0)` anywhere in `t`, if every
/// predictor of `t` sits inside such a wrapper (checked by substitution later).
fn find_square_argument(t: &T) -> Option<Poly> {
    let mut found: Option<Poly> = None;
    fn walk(t: &T, found: &mut Option<Poly>) {
        if found.is_some() {
            return;
        }
        let cand = match t {
            T::Call(SxFunc::Abs, v) => Some(&v[0]),
            T::Pow(a, e) if matches!(**e, T::Num(x) if x == 2.0) => Some(&**a),
            T::Call(SxFunc::Max, v) | T::Call(SxFunc::Min, v) => {
                if matches!(v[1], T::Num(x) if x == 0.0) {
                    Some(&v[0])
                } else if matches!(v[0], T::Num(x) if x == 0.0) {
                    Some(&v[1])
                } else {
                    None
                }
            }
            _ => None,
        };
        if let Some(c) = cand {
            if c.has_predictor() {
                if let Some(p) = Poly::of(c, 1) {
                    *found = Some(p);
                    return;
                }
            }
        }
        match t {
            T::Add(v) | T::Mul(v) | T::Call(_, v) => v.iter().for_each(|u| walk(u, found)),
            T::Pow(a, b) => {
                walk(a, found);
                walk(b, found);
            }
            _ => {}
        }
    }
    walk(t, &mut found);
    found
}

/// Replace `|±u|` by `√r`, `(±u)²` by `r`, `max(±u, 0)` by `(±u + √r)/2`, `min(±u, 0)` by
/// `(±u − √r)/2` — valid because `r = u²` and `max(v, 0) = (v + |v|)/2`.
fn substitute_square(t: &T, u: &Poly, r: &T) -> T {
    let ut = u.to_tree();
    let sign_of = |c: &T| -> Option<f64> {
        let p = Poly::of(c, 1)?;
        let ct = p.to_tree();
        // Compare at a few fixed points: c = s·u with s = ±1.
        for s in [1.0, -1.0] {
            let ok = (0..6).all(|k| {
                let env = |_: Role, n: &str| -> Option<f64> {
                    let h = n.bytes().fold(k as u64 * 7919 + 17, |h, b| {
                        h.wrapping_mul(31).wrapping_add(b as u64)
                    });
                    Some(((h % 1000) as f64) / 250.0 - 2.0)
                };
                match (ct.eval(&env), ut.eval(&env)) {
                    (Some(a), Some(b)) => (a - s * b).abs() < 1e-9 * (1.0 + a.abs()),
                    _ => false,
                }
            });
            if ok {
                return Some(s);
            }
        }
        None
    };
    let sqrt_r = T::sqrt(r.clone());
    let go = |x: &T| substitute_square(x, u, r);
    match t {
        T::Call(SxFunc::Abs, v) if sign_of(&v[0]).is_some() => sqrt_r,
        T::Pow(a, e) if matches!(**e, T::Num(x) if x == 2.0) && sign_of(a).is_some() => r.clone(),
        T::Call(f @ (SxFunc::Max | SxFunc::Min), v) => {
            let (arg, zero) = if matches!(v[1], T::Num(x) if x == 0.0) {
                (&v[0], true)
            } else {
                (&v[1], matches!(v[0], T::Num(x) if x == 0.0))
            };
            if zero && sign_of(arg).is_some() {
                let s = if *f == SxFunc::Max { 1.0 } else { -1.0 };
                T::mul(vec![
                    T::Num(0.5),
                    T::add(vec![arg.clone(), T::mul(vec![T::Num(s), sqrt_r])]),
                ])
            } else {
                T::Call(*f, v.iter().map(go).collect())
            }
        }
        T::Add(v) => T::add(v.iter().map(go).collect()),
        T::Mul(v) => T::mul(v.iter().map(go).collect()),
        T::Pow(a, b) => T::pow(go(a), go(b)),
        T::Call(f, v) => T::Call(*f, v.iter().map(go).collect()),
        other => other.clone(),
    }
}

/// Recognise every factor of a model.
pub fn recognize(model: &Model) -> Vec<Result<Plan, Refusal>> {
    (0..model.factors.len())
        .map(|k| recognize_factor(model, k))
        .collect()
}

fn signs_of(model: &Model) -> Signs {
    let mut s = Signs::default();
    for h in &model.hypers {
        let positive_prior = match &h.kind {
            gpm_ir::HyperKind::Prior { prior } => prior.lower() >= 0.0,
            _ => false,
        };
        if h.lower.is_some_and(|l| l >= 0.0) || positive_prior {
            s.positive_hypers.insert(h.name.clone());
        }
    }
    // Data declared non-negative (`E : vector[N] in 0..`) are treated like non-negative
    // hyperparameters: as positive, so that `log(E·λ·σ(f))` splits and an exposure scales a
    // Poisson rate.
    for d in &model.data {
        if let gpm_ir::ValueSet::Range {
            lo: Some(gpm_ir::Bound::Const(lo)),
            ..
        } = &d.constraint
        {
            if *lo >= 0.0 {
                s.positive_data.insert(d.name.clone());
            }
        }
    }
    s
}

/// A hint for a sign check that failed: the hyperparameters and data in `t` declared with no
/// lower bound of 0, which may be what blocks the rule.
pub(crate) fn constraint_hint(model: &Model, signs: &Signs, t: &T) -> String {
    let mut syms = BTreeSet::new();
    collect(t, &mut syms);
    let missing: Vec<String> = syms
        .into_iter()
        .filter(|(r, n)| match r {
            Role::Hyper => !signs.positive_hypers.contains(n),
            Role::Data => {
                let base = n.split('[').next().unwrap_or(n);
                !signs.positive_data.contains(base) && model.data.iter().any(|d| d.name == base)
            }
            _ => false,
        })
        .map(|(_, n)| format!("`{} in 0..`", n.split('[').next().unwrap_or(&n)))
        .collect();
    if missing.is_empty() {
        String::new()
    } else {
        format!(
            " (if it is never negative, declare {})",
            missing.join(" and ")
        )
    }
}

/// Recognise one factor.
pub fn recognize_factor(model: &Model, k: usize) -> Result<Plan, Refusal> {
    let f = &model.factors[k];
    match &f.form {
        FactorForm::LogDensity { log_density } => {
            recognize_log_density(model, k, f, &T::from_sx(log_density))
        }
        FactorForm::Categorical { .. } => categorical::recognize_categorical(model, k, f),
    }
}

fn recognize_log_density(model: &Model, k: usize, f: &Factor, ell: &T) -> Result<Plan, Refusal> {
    let signs = signs_of(model);
    let normal = normalize(ell, &signs);
    let atoms = atomize(&normal, &signs);
    let normal_form = atoms
        .iter()
        .map(|a| a.to_string())
        .collect::<Vec<_>>()
        .join("  +  ");
    let refuse = |atom: String, reason: String| Refusal {
        factor: k,
        atom,
        normal_form: normal_form.clone(),
        reason,
    };
    let mut w = Work {
        model,
        signs: signs.clone(),
        probe_seed: 0x5eed ^ k as u64,
        log_c: vec![],
        poly: Poly::zero(),
        logcosh: vec![],
        mix: vec![],
        aux: vec![],
        steps: vec![format!("log-density as a sum of atoms: {normal_form}")],
        collapsed: BTreeSet::new(),
        counter: 0,
        first_level: atoms.clone(),
    };
    let mut pending: Vec<T> = atoms.into_iter().rev().collect();
    let mut guard = 0;
    while let Some(a) = pending.pop() {
        guard += 1;
        if guard > 500 {
            return Err(refuse(
                "(worklist)".into(),
                "the rules did not terminate".into(),
            ));
        }
        let shown = a.to_string();
        w.atom(a, &mut pending)
            .map_err(|reason| refuse(shown, reason))?;
    }
    let mut forms = w
        .polya_gamma_variables()
        .map_err(|(atom, why)| refuse(atom, why))?;
    forms.extend(
        w.scale_mixture_variables()
            .map_err(|(atom, why)| refuse(atom, why))?,
    );
    let forms = w.form_names(forms);
    let collapsed = w
        .gaussian_in_predictors(&signs)
        .map_err(|(atom, why)| refuse(atom, why))?;
    let mut plan = Plan {
        factor: k,
        form: forms,
        steps: w.steps,
        aux: w.aux,
        augmented: w.poly,
        collapsed,
        categorical: None,
        log_c: T::add(w.log_c.clone()),
        certificate: crate::plan::Certificate::pending(),
        generic: None,
    };
    plan.steps.push(format!("log C = {}", plan.log_c));
    plan.certificate = crate::certify::certify(model, f, &plan, &plan.log_c);
    if !plan.certificate.passed {
        // A NaN error: the certifier said why it could not check (its `method`); a number:
        // the plan failed the check, which is a bug of a rule.
        let reason = if plan.certificate.max_rel_error.is_nan() {
            format!("not certified: {}", plan.certificate.method)
        } else {
            format!(
                "internal error: the plan does not integrate back to the factor (relative error {:.2e}); please report this model",
                plan.certificate.max_rel_error
            )
        };
        return Err(refuse("(certification)".into(), reason));
    }
    Ok(plan)
}

impl Work<'_> {
    /// The augmented factor must be a Gaussian in each predictor (non-positive curvature, no
    /// cross terms); each collapsed predictor's un-augmented log-density as a polynomial in it,
    /// or the atom and reason it is not one.
    fn gaussian_in_predictors(
        &self,
        signs: &Signs,
    ) -> Result<Vec<(String, Poly)>, (String, String)> {
        let mut collapsed = Vec::new();
        for p in &self.collapsed {
            // The un-augmented log-density read as a polynomial in this predictor alone.
            let as_poly = collapse_poly(&T::add(self.first_level.clone()), p, signs);
            match as_poly {
                Some(cp) => collapsed.push((p.clone(), cp)),
                None => {
                    return Err((
                        p.clone(),
                        format!("the predictor {p} must be sampled from its collapsed conditional, but the factor is not Gaussian in it"),
                    ))
                }
            }
        }
        for ((a, b), coef) in &self.poly.quad {
            let probe = self.probe(&[coef]);
            if a == b && !probe.sign_ok(&T::neg(coef.clone()), false) {
                return Err((
                    format!("{coef}·{a}²"),
                    format!("the augmented factor is not concave in {a} (γ ≤ 0): it grows like exp(+c·{a}²) and is not a Gaussian likelihood"),
                ));
            }
            if a != b {
                return Err((
                    format!("{coef}·{a}·{b}"),
                    "the augmented factor couples two predictors in one quadratic term; joint Gaussian updates across predictors are not implemented".to_string(),
                ));
            }
        }
        Ok(collapsed)
    }
}

/// The log-density as a polynomial of degree ≤ 2 in one predictor (other predictors are
/// treated as coefficients).
fn collapse_poly(ell: &T, p: &str, signs: &Signs) -> Option<Poly> {
    let mut predictors = BTreeSet::new();
    collect_predictors(ell, &mut predictors);
    // Rename every other predictor to a data symbol so that Poly treats it as a coefficient.
    fn hide(t: &T, keep: &str) -> T {
        match t {
            T::Sym(Role::Predictor, n) if n != keep => T::Sym(Role::Data, n.clone()),
            T::Add(v) => T::add(v.iter().map(|u| hide(u, keep)).collect()),
            T::Mul(v) => T::mul(v.iter().map(|u| hide(u, keep)).collect()),
            T::Pow(a, b) => T::pow(hide(a, keep), hide(b, keep)),
            T::Call(f, v) => T::Call(*f, v.iter().map(|u| hide(u, keep)).collect()),
            other => other.clone(),
        }
    }
    let atoms = atomize(&hide(ell, p), signs);
    let mut acc = Poly::of(&T::Num(0.0), 0)?;
    for a in atoms {
        let q = Poly::of(&a, 2)?;
        acc = Poly::of(&T::add(vec![acc.to_tree(), q.to_tree()]), 2)?;
    }
    // Back: the hidden predictors become predictors again inside the coefficients.
    let unhide = |t: &T| -> T { unhide_tree(t, &predictors) };
    Some(Poly {
        c0: unhide(&acc.c0),
        lin: acc
            .lin
            .iter()
            .map(|(k, v)| (k.clone(), unhide(v)))
            .collect(),
        quad: acc
            .quad
            .iter()
            .map(|(k, v)| (k.clone(), unhide(v)))
            .collect(),
    })
}

/// Turn the hidden predictors (renamed to data by `collapse_poly`) back into predictors.
fn unhide_tree(t: &T, predictors: &BTreeSet<String>) -> T {
    match t {
        T::Sym(Role::Data, n) if predictors.contains(n) => T::Sym(Role::Predictor, n.clone()),
        T::Add(v) => T::add(v.iter().map(|u| unhide_tree(u, predictors)).collect()),
        T::Mul(v) => T::mul(v.iter().map(|u| unhide_tree(u, predictors)).collect()),
        T::Pow(a, b) => T::pow(unhide_tree(a, predictors), unhide_tree(b, predictors)),
        T::Call(f, v) => T::Call(*f, v.iter().map(|u| unhide_tree(u, predictors)).collect()),
        other => other.clone(),
    }
}
