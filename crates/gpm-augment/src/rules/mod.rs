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
use crate::plan::{AuxVar, CategoricalPlan, Family, Plan};
use crate::poly::Poly;
use crate::tree::{Role, T};
use gpm_ir::{Factor, FactorForm, Model, SxFunc};
use std::collections::BTreeSet;

/// Why a factor could not be augmented.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// Index of the factor.
    pub factor: usize,
    /// The atom no rule applied to (or the reason's subject).
    pub atom: String,
    /// The normal form reached: the atoms of the log-density.
    pub normal_form: String,
    /// Why.
    pub reason: String,
}

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
mod negative_binomial_mgf;
mod poisson_mgf;
mod probit;
mod scale_mixture;

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
    let mut forms = Vec::new();
    // Pólya-Gamma variables: one per distinct z² (thesis ch. 3).
    let mut groups: Vec<(T, Poly)> = Vec::new();
    for (b, z) in std::mem::take(&mut w.logcosh) {
        if let Some(g) = groups.iter().position(|(_, z2)| w.same_up_to_sign(z2, &z)) {
            groups[g].0 = T::add(vec![groups[g].0.clone(), b]);
        } else {
            groups.push((b, z));
        }
    }
    for (b, z) in groups {
        let probe = w.probe(&[&b]);
        let zt = z.to_tree();
        if !probe.sign_ok(&b, true) {
            return Err(refuse(
                format!("log cosh({zt}/2) with coefficient {}", T::neg(b.clone())),
                "cosh(z/2)^(−b) is completely monotone in z² only for b > 0; here b is not positive".into(),
            ));
        }
        let name = w.fresh("ω");
        w.steps.push(format!(
            "Pólya-Gamma: cosh({zt}/2)^(-{b}) = ∫ exp(-{name}·({zt})²/2) PG({name} | {b}, 0) d{name}  (Polson, Scott & Windle 2013)"
        ));
        let c = zt.clone();
        w.aux.push(AuxVar {
            name: name.clone(),
            prior: format!("PG({b}, 0)"),
            prior_family: Family::PolyaGamma {
                b: b.clone(),
                c: T::Num(0.0),
            },
            conditional: Family::PolyaGamma {
                b: b.clone(),
                c: c.clone(),
            },
            mean: T::mul(vec![
                b.clone(),
                T::call(
                    SxFunc::Tanh,
                    T::mul(vec![T::Num(0.5), T::call(SxFunc::Abs, c.clone())]),
                ),
                T::pow(
                    T::mul(vec![T::Num(2.0), T::call(SxFunc::Abs, c)]),
                    T::Num(-1.0),
                ),
            ]),
            rule: "logistic → Pólya-Gamma",
        });
        let z2 = sq(&z);
        w.add_poly(&T::mul(vec![
            T::Num(-0.5),
            T::sym(Role::Aux, &name),
            z2.to_tree(),
        ]));
        forms.push("Pólya-Gamma");
    }
    // Scale mixtures: one variable per distinct r = u² (thesis ch. 5).
    for (u, atoms_r) in std::mem::take(&mut w.mix) {
        let ut = u.to_tree();
        let r = T::sym(Role::Aux, "r");
        let log_phi = T::add(atoms_r.clone());
        let at0 = log_phi.replace(&r, &T::Num(0.0));
        let probe = w.probe(&[&log_phi]);
        let finite0 =
            (0..probe.len()).all(|i| at0.eval(&probe.env(i)).is_some_and(|v| v.is_finite()));
        let r_expr = sq(&u).to_tree();
        let subject = || format!("log φ(r) = {log_phi}, r = ({ut})²");
        // φ normalised by φ(0) (a proper mixing law), or the horseshoe's improper measure.
        let named = if finite0 {
            w.log_c.push(at0);
            name_mixture(&w, &atoms_r, &r, &r_expr)
        } else {
            horseshoe::name_improper(&w, &atoms_r, &r, &r_expr).ok_or_else(|| refuse(
                subject(),
                "φ(0) is not finite: the factor has no scale-mixture representation (a density that is infinite or zero where the residual vanishes)".into(),
            ))?
        };
        let (family, prior_family, prior, mean, form) =
            named.map_err(|reason| refuse(subject(), reason))?;
        let name = w.fresh("ω");
        // An improper mixing measure (the horseshoe's) is not normalised by φ(0) = ∞.
        let phi0 = if finite0 { " − φ₀" } else { "" };
        w.steps.push(format!(
            "scale mixture ({form}): φ(r) = exp({log_phi}{phi0}), r = ({ut})²; φ(r) = ∫ e^(-r·{name}) p({name}) d{name}, p = {prior}  (thesis ch. 5, Theorem 1)"
        ));
        w.aux.push(AuxVar {
            name: name.clone(),
            prior,
            prior_family,
            conditional: family,
            mean,
            rule: "scale mixture",
        });
        w.add_poly(&T::mul(vec![
            T::Num(-1.0),
            T::sym(Role::Aux, &name),
            r_expr,
        ]));
        forms.push(form);
    }
    if w.aux.iter().any(|a| a.rule == "probit") {
        forms.insert(0, "probit → truncated normal (Albert & Chib)");
    }
    if w.aux.is_empty() {
        forms.push("Gaussian (conjugate, no augmentation)");
    }
    if w.aux
        .iter()
        .any(|a| matches!(a.conditional, Family::Poisson { .. }))
    {
        forms.insert(0, "Poisson MGF →");
    }
    if w.aux
        .iter()
        .any(|a| a.rule == negative_binomial_mgf::GAMMA_SCALE_MIXTURE)
    {
        forms.insert(0, "Gamma scale mixture →");
    }
    if w.aux
        .iter()
        .any(|a| matches!(a.conditional, Family::NegativeBinomial { .. }))
    {
        forms.insert(0, "negative-binomial MGF →");
    }
    // The augmented factor must be a Gaussian in each predictor: non-positive curvature.
    let mut collapsed = Vec::new();
    for p in &w.collapsed {
        // The un-augmented log-density read as a polynomial in this predictor alone.
        let as_poly = collapse_poly(&T::add(w.first_level.clone()), p, &signs);
        match as_poly {
            Some(cp) => collapsed.push((p.clone(), cp)),
            None => {
                return Err(refuse(
                    p.clone(),
                    format!("the predictor {p} must be sampled from its collapsed conditional, but the factor is not Gaussian in it"),
                ))
            }
        }
    }
    for ((a, b), coef) in &w.poly.quad {
        let probe = w.probe(&[coef]);
        if a == b && !probe.sign_ok(&T::neg(coef.clone()), false) {
            return Err(refuse(
                format!("{coef}·{a}²"),
                format!("the augmented factor is not concave in {a} (γ ≤ 0): it grows like exp(+c·{a}²) and is not a Gaussian likelihood"),
            ));
        }
        if a != b {
            return Err(refuse(
                format!("{coef}·{a}·{b}"),
                "the augmented factor couples two predictors in one quadratic term; joint Gaussian updates across predictors are not implemented".into(),
            ));
        }
    }
    let mut plan = Plan {
        factor: k,
        form: forms.join(" + ").replace("→ + ", "→ "),
        steps: w.steps,
        aux: w.aux,
        augmented: w.poly,
        collapsed,
        categorical: None,
        log_c: T::add(w.log_c.clone()),
        certificate: crate::certify::Certificate::pending(),
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

/// Name the mixing law of `φ(r) = exp(Σ atoms_r − φ₀)`.
#[allow(clippy::type_complexity)]
fn name_mixture(
    w: &Work,
    atoms_r: &[T],
    r: &T,
    r_expr: &T,
) -> Result<(Family, Family, String, T, &'static str), String> {
    let c2 = r_expr.clone();
    let probe = w.probe(&atoms_r.iter().collect::<Vec<_>>());
    let sqrt_r = T::sqrt(r.clone());
    let coef_of = |a: &T, core: &T| -> Option<T> {
        // a = κ·core with κ free of r.
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
    };
    // (1 + w·r)^(−p) ↔ Gamma(p, 1/w)
    if atoms_r.len() == 1 {
        let a = &atoms_r[0];
        if let (T::Mul(_) | T::Call(SxFunc::Log, _), Some(inner)) = (a, log_argument(a)) {
            if let Some(lin) = poly_in_r(&inner, r) {
                let kappa = coef_of(a, &T::log(inner.clone())).unwrap_or(T::Num(1.0));
                let (c0, wr) = lin;
                let shape = T::neg(kappa);
                let rate = T::mul(vec![c0, T::pow(wr, T::Num(-1.0))]);
                if probe.sign_ok(&shape, true) && probe.sign_ok(&rate, true) {
                    let cond_rate = T::add(vec![rate.clone(), c2.clone()]);
                    return Ok((
                        Family::Gamma {
                            shape: shape.clone(),
                            rate: cond_rate.clone(),
                        },
                        Family::Gamma {
                            shape: shape.clone(),
                            rate: rate.clone(),
                        },
                        format!("Gamma(shape = {shape}, rate = {rate})"),
                        T::mul(vec![shape, T::pow(cond_rate, T::Num(-1.0))]),
                        "Gamma scale mixture, e.g. Student-t",
                    ));
                }
                return Err(format!("φ(r) = (1 + r/b)^(−p) needs p > 0 and b > 0; here p = {shape}, b = {rate}: φ is not completely monotone"));
            }
        }
        // exp(−a√r) ↔ Lévy(a), tilted: inverse Gaussian(a/(2c), a²/2)
        if let Some(kappa) =
            coef_of(a, &sqrt_r).or_else(|| coef_of(a, &T::pow(r.clone(), T::Num(0.5))))
        {
            let a_ = T::neg(kappa);
            if !probe.sign_ok(&a_, true) {
                return Err(format!(
                    "φ(r) = exp(−a√r) with a = {a_} ≤ 0 is increasing, not completely monotone"
                ));
            }
            let c = T::sqrt(c2.clone());
            let mean = T::mul(vec![
                a_.clone(),
                T::pow(T::mul(vec![T::Num(2.0), c]), T::Num(-1.0)),
            ]);
            return Ok((
                Family::InverseGaussian {
                    mean: mean.clone(),
                    shape: T::mul(vec![T::Num(0.5), T::pow(a_.clone(), T::Num(2.0))]),
                },
                Family::Levy { a: a_.clone() },
                format!("Lévy(a = {a_})"),
                mean,
                "Lévy scale mixture, e.g. Laplace or the SVM hinge",
            ));
        }
    }
    // (1 + a√r) e^(−a√r) ↔ inverse Gamma(3/2, a²/4), tilted: GIG(−3/2, 2c², a²/2)
    if atoms_r.len() == 2 {
        for (la, sa) in [(&atoms_r[0], &atoms_r[1]), (&atoms_r[1], &atoms_r[0])] {
            let Some(inner) = log_argument(la) else {
                continue;
            };
            let Some(k_log) = coef_of(la, &T::log(inner.clone())) else {
                continue;
            };
            let Some(k_sqrt) =
                coef_of(sa, &sqrt_r).or_else(|| coef_of(sa, &T::pow(r.clone(), T::Num(0.5))))
            else {
                continue;
            };
            let Some((c0, a_)) = poly_in(&inner, &sqrt_r) else {
                continue;
            };
            if probe.equal(&k_log, &T::Num(1.0))
                && probe.equal(&c0, &T::Num(1.0))
                && probe.equal(&k_sqrt, &T::neg(a_.clone()))
                && probe.sign_ok(&a_, true)
            {
                let a2 = T::pow(a_.clone(), T::Num(2.0));
                let (p, ga, gb) = (
                    T::Num(-1.5),
                    T::mul(vec![T::Num(2.0), c2.clone()]),
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
                return Ok((
                    Family::Gig { p, a: ga, b: gb },
                    Family::InverseGamma {
                        shape: T::Num(1.5),
                        scale: T::mul(vec![T::Num(0.25), a2.clone()]),
                    },
                    format!("InverseGamma(shape = 3/2, scale = {}/4)", a2),
                    mean,
                    "inverse-Gamma scale mixture, e.g. the Matérn-3/2 likelihood",
                ));
            }
        }
    }
    // Not a named law: ask the CAS to prove ψ(r) = log φ(0) − log φ(r) Bernstein, i.e. φ/φ(0)
    // completely monotone (RECOGNITION.md §3); the mixing law is then the tilted inverse
    // Laplace transform of φ, and E[ω | c] = ψ'(c²).
    let log_phi = T::add(atoms_r.to_vec());
    let psi = sqrt_powers(
        &T::sub(log_phi.replace(r, &T::Num(0.0)), log_phi.clone()),
        r,
    );
    let positive = |s: &str| w.signs.positive_hypers.contains(s);
    // Try ψ after constant folding by saturation (ψ(0)-terms vanish, so the ψ shown by `check`
    // reads as the user's term), then as written (when folding hides what the prover needs).
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
    match proof {
        Some((psi_c, proof)) => {
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
            Ok((
                Family::TiltedLaplace { phi: phi.clone(), c2: r_expr.clone() },
                Family::TiltedLaplace { phi, c2: T::Num(0.0) },
                format!("L⁻¹{{exp(−ψ)}} with ψ(r) = {psi} Bernstein ({})", rules.join("; ")),
                mean,
                "completely monotone φ proved by the CAS",
            ))
        }
        None => Err(format!(
            "φ(r) = exp({}) is not one of the named mixing laws (Gamma, Lévy, inverse Gamma), and the CAS could not prove ψ(r) = −log φ(r) + log φ(0) a Bernstein function (so φ may not be completely monotone)",
            log_phi
        )),
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
fn poly_in_r(inner: &T, r: &T) -> Option<(T, T)> {
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
