//! Closed-form CAVI of a factor: the local updates of its auxiliaries (a mixing law's tilted
//! moments, or a CAS-proved φ's), compiled to tapes, and why a plan has none.

use crate::aux::Tilted;
use crate::ids::PredictorId;
use crate::source::PredOf;
use crate::tape::{SlotOf, Tape};
use crate::trees::collect;
use gpm_augment::{Family, Plan, Poly, Role, T};
use gpm_families::MixingLaw;

/// A polynomial of degree ≤ 2 in the predictors (diagonal quadratic terms only), compiled:
/// its expectation under a Gaussian `q` is `c0 + Σ lin·m + Σ quad·(m² + v)`.
#[derive(Debug, Clone)]
pub struct PolyTapes {
    /// Constant term.
    pub c0: Tape,
    /// Linear coefficients by predictor.
    pub lin: Vec<(PredictorId, Tape)>,
    /// Coefficients of `η²` by predictor.
    pub quad: Vec<(PredictorId, Tape)>,
}

/// The mixing law of an auxiliary variable, as CAVI needs it: `E[ω]` and `log φ` at `E[s]`.
#[derive(Debug, Clone)]
pub enum CaviFamily {
    /// A named law's prior, tilted in closed form ([`MixingLaw::tilted`]).
    Law {
        /// The law.
        law: &'static dyn MixingLaw,
        /// Its prior parameters.
        params: Vec<Tape>,
    },
    /// A CAS-proved `φ = exp(−ψ)`: `E[ω] = ψ'(s)`, `log φ(s) = −ψ(s)`.
    Tilted(Tilted),
}

/// One auxiliary variable in CAVI: the augmented log-likelihood contains `−ω·s(η)`.
#[derive(Debug, Clone)]
pub struct CaviAux {
    /// Index of the variable among the plan's auxiliaries (its slot holds `E[ω]`).
    pub index: usize,
    /// Slot of `ω` (holds `E[ω]` during CAVI).
    pub slot: usize,
    /// Its mixing law.
    pub family: CaviFamily,
    /// `s(η)`.
    pub s: PolyTapes,
}

/// What CAVI needs of a factor (thesis ch. 5 §3.3.1): `ELBO_i = log C + E[P₀] + Σ log φ(E[s])`.
#[derive(Debug, Clone)]
pub struct CaviProgram {
    /// `log C`.
    pub log_c: Tape,
    /// The augmented polynomial with every auxiliary at 0.
    pub p0: PolyTapes,
    /// The continuous auxiliaries.
    pub aux: Vec<CaviAux>,
    /// A Poisson count `n ~ Po(κ)` of the Poisson MGF rule, if any: `q(n) = Po(γ)` with the
    /// Pólya-Gamma shape `b(n)` linear in `n` (thesis §7.1). `P₀`, `log C` and `b` read `n`'s
    /// slot, which holds `γ = E[n]`.
    pub poisson: Option<CaviPoisson>,
    /// Predictors read only through the Poisson rate (collapsed in Gibbs): their blocks are
    /// updated from the double bound.
    pub double_bound: Vec<PredictorId>,
}

/// The Poisson count of a factor in CAVI.
#[derive(Debug, Clone)]
pub struct CaviPoisson {
    /// Index among the plan's auxiliaries.
    pub index: usize,
    /// Its slot.
    pub slot: usize,
    /// The prior rate `κ`, a polynomial of degree ≤ 2 in the predictors. When it reads a
    /// predictor (the heteroscedastic Gaussian's `λ(y − f)²/2`, thesis §7.2.1), CAVI uses the
    /// double bound: first `E_q(f)` of the log-likelihood, which is linear in `κ`, then the
    /// Poisson MGF at `E_q[κ]`; those predictors' blocks get the curvature of `−(1 − γ/E κ)·κ`
    /// (see [`CaviProgram::double_bound`]). For a Gamma-scaled count, `κ` without `τ`; for a
    /// negative-binomial count, `κ = p/(1 − p)`.
    pub kappa: PolyTapes,
    /// The count's prior law.
    pub law: CountLaw,
}

/// The prior law of a factor's count in CAVI.
#[derive(Debug, Clone)]
pub enum CountLaw {
    /// `n ~ Po(κ)`.
    Poisson,
    /// `n ~ Po(τκ)` with `τ ~ Gamma(shape, rate)`, another auxiliary of the plan (the Gamma
    /// scale mixture of the heteroscedastic Student-t, thesis eq. 7.7). CAVI keeps `q(τ)` at its
    /// optimum given `q(n) = Po(γ)`: `Gamma(shape + γ, rate + E[κ])`; its slot holds `E[τ]`.
    GammaScaled {
        /// Index of `τ` among the plan's auxiliaries.
        index: usize,
        /// Slot of `τ`.
        slot: usize,
        /// Prior shape of `τ`.
        shape: Tape,
        /// Prior rate of `τ`.
        rate: Tape,
    },
    /// `k ~ NB(shape, κ/(1 + κ))` (thesis §7.2.2 with a known location): `q(k)` is negative
    /// binomial too, `NB(shape, p e^(∂F/∂k))`.
    NegativeBinomial {
        /// Its shape.
        shape: Tape,
    },
}

/// A program, or (inner `Err`) why the plan has none; the outer `Err` is a compile error.
type Program<T> = Result<Result<T, String>, String>;

/// The factor's CAVI program, or (inner `Err`) why the plan has none.
pub(crate) fn cavi_program(plan: &Plan, slot_of: SlotOf, pred: PredOf) -> Program<CaviProgram> {
    let is_count = |a: &gpm_augment::AuxVar| a.conditional.is_count();
    if plan.aux.iter().filter(|a| is_count(a)).count() > 1 {
        return Ok(Err("more than one count variable in one factor".into()));
    }
    let count = match count_program(plan, slot_of, pred)? {
        Ok(count) => count,
        Err(why) => return Ok(Err(why)),
    };
    // The double bound applies when the collapsed predictors are exactly those of the rate and
    // appear nowhere else (the augmented polynomial and log C are then free of them).
    let collapsed: Vec<String> = plan.collapsed.iter().map(|c| c.0.clone()).collect();
    if !collapsed.iter().all(|c| count.rate_preds.contains(c))
        || !count.rate_preds.iter().all(|p| collapsed.contains(p))
    {
        return Ok(Err(
            "the collapsed predictors are not exactly those of the Poisson rate".into(),
        ));
    }
    let aug = plan.augmented.to_tree();
    // Continuous auxiliaries set to values; the Poisson count stays a symbol (its slot).
    let at = |values: &[(&str, f64)]| -> T {
        let mut t = aug.clone();
        for a in plan.aux.iter().filter(|a| !is_count(a)) {
            let v = values
                .iter()
                .find(|(n, _)| *n == a.name)
                .map_or(0.0, |x| x.1);
            t = t.replace(&T::sym(Role::Aux, &a.name), &T::Num(v));
        }
        t
    };
    let zero = at(&[]);
    let Some(p0) = Poly::of(&zero, 2) else {
        return Ok(Err("the augmented polynomial is not of degree ≤ 2".into()));
    };
    let reads = |p: &Poly| {
        p.lin.keys().any(|k| collapsed.contains(k))
            || p.quad
                .keys()
                .any(|(a, b)| collapsed.contains(a) || collapsed.contains(b))
    };
    if reads(&p0) || collapsed.iter().any(|c| tree_reads(&plan.log_c, c)) {
        return Ok(Err(
            "a collapsed predictor is read outside the Poisson rate".into(),
        ));
    }
    let tilts = Tilts {
        plan,
        slot_of,
        pred,
        zero: &zero,
        at: &at,
        reads: &reads,
    };
    let aux = match tilts.aux(count.scale_index)? {
        Ok(aux) => aux,
        Err(why) => return Ok(Err(why)),
    };
    Ok(Ok(CaviProgram {
        log_c: Tape::compile(&plan.log_c, slot_of)?,
        p0: poly_tapes(&p0, slot_of, pred)?,
        aux,
        poisson: count.poisson,
        double_bound: collapsed
            .iter()
            .map(|c| pred(c))
            .collect::<Result<_, _>>()?,
    }))
}

/// The count variable's part of a CAVI program: its law and rate as tapes, the predictors its
/// rate reads, and the Gamma variable scaling the rate (handled with the count, not as a
/// mixture).
struct CountProgram {
    poisson: Option<CaviPoisson>,
    rate_preds: Vec<String>,
    scale_index: Option<usize>,
}

fn count_program(plan: &Plan, slot_of: SlotOf, pred: PredOf) -> Program<CountProgram> {
    let mut poisson = None;
    let mut rate_preds = Vec::new();
    let mut scale_index = None;
    for (index, a) in plan.aux.iter().enumerate() {
        let (kappa_tree, law) = match &a.prior_family {
            Family::Poisson { rate } => match poisson_law(plan, a, rate, slot_of)? {
                Ok((kappa, law, scale)) => {
                    scale_index = scale.or(scale_index);
                    (kappa, law)
                }
                Err(why) => return Ok(Err(why)),
            },
            Family::NegativeBinomial { shape, p } => {
                if p.has_predictor() || shape.has_predictor() {
                    return Ok(Err(format!(
                        "the negative-binomial law of `{}` reads a predictor",
                        a.name
                    )));
                }
                (
                    T::mul(vec![
                        p.clone(),
                        T::pow(T::sub(T::Num(1.0), p.clone()), T::Num(-1.0)),
                    ]),
                    CountLaw::NegativeBinomial {
                        shape: Tape::compile(shape, slot_of)?,
                    },
                )
            }
            _ => continue,
        };
        let Some(kappa) = Poly::of(&kappa_tree, 2) else {
            return Ok(Err(
                "the count's rate is not a polynomial of degree ≤ 2 in the predictors".into(),
            ));
        };
        rate_preds = kappa.lin.keys().cloned().collect();
        for (a, b) in kappa.quad.keys() {
            rate_preds.push(a.clone());
            rate_preds.push(b.clone());
        }
        poisson = Some(CaviPoisson {
            index,
            slot: slot_of(Role::Aux, &a.name).ok_or("aux slot")?,
            kappa: poly_tapes(&kappa, slot_of, pred)?,
            law,
        });
    }
    rate_preds.sort();
    rate_preds.dedup();
    Ok(Ok(CountProgram {
        poisson,
        rate_preds,
        scale_index,
    }))
}

/// A Poisson count's rate `κ` (with a Gamma scale `τ` replaced by 1), its law (plain, or
/// Gamma-scaled: `κτ`), and the index of that scale.
fn poisson_law(
    plan: &Plan,
    a: &gpm_augment::AuxVar,
    rate: &T,
    slot_of: SlotOf,
) -> Program<(T, CountLaw, Option<usize>)> {
    let scale = plan
        .aux
        .iter()
        .enumerate()
        .filter(|(_, b)| rate.mentions(Role::Aux, Some(&b.name)))
        .collect::<Vec<_>>();
    let [(ti, t)] = scale.as_slice() else {
        if scale.is_empty() {
            return Ok(Ok((rate.clone(), CountLaw::Poisson, None)));
        }
        return Ok(Err(format!(
            "the Poisson rate of `{}` reads several auxiliary variables",
            a.name
        )));
    };
    let tau = T::sym(Role::Aux, &t.name);
    // τ must be a factor of the rate: κτ.
    let linear = matches!(rate, T::Mul(v) if v.contains(&tau)
        && v.iter().filter(|u| u.mentions(Role::Aux, Some(&t.name))).count() == 1);
    let Family::Gamma { shape, rate: beta } = &t.prior_family else {
        return Ok(Err(format!(
            "the Poisson rate of `{}` reads the {} variable `{}`",
            a.name,
            t.prior_family.name(),
            t.name
        )));
    };
    if !linear {
        return Ok(Err(format!(
            "the Poisson rate of `{}` is not linear in `{}`",
            a.name, t.name
        )));
    }
    Ok(Ok((
        rate.replace(&tau, &T::Num(1.0)),
        CountLaw::GammaScaled {
            index: *ti,
            slot: slot_of(Role::Aux, &t.name).ok_or("aux slot")?,
            shape: Tape::compile(shape, slot_of)?,
            rate: Tape::compile(beta, slot_of)?,
        },
        Some(*ti),
    )))
}

/// The augmented polynomial with the named continuous auxiliaries at the given values (the
/// others at 0).
type AtValues<'a> = &'a dyn Fn(&[(&str, f64)]) -> T;

/// What the continuous auxiliaries' tilts are read from: the augmented polynomial with every
/// continuous auxiliary at 0 (`zero`) or at given values (`at`), and whether a polynomial reads
/// a collapsed predictor (`reads`).
struct Tilts<'a> {
    plan: &'a Plan,
    slot_of: SlotOf<'a>,
    pred: PredOf<'a>,
    zero: &'a T,
    at: AtValues<'a>,
    reads: &'a dyn Fn(&Poly) -> bool,
}

impl Tilts<'_> {
    /// Each continuous auxiliary (not the count, not the count's Gamma scale) with its family
    /// and its tilt `s = P(ω = 0) − P(ω = 1)` as tapes.
    fn aux(&self, scale_index: Option<usize>) -> Program<Vec<CaviAux>> {
        let (slot_of, pred) = (self.slot_of, self.pred);
        let mut aux = Vec::new();
        for (index, a) in self.plan.aux.iter().enumerate() {
            if a.conditional.is_count() || scale_index == Some(index) {
                continue;
            }
            let s_tree = T::sub(self.zero.clone(), (self.at)(&[(a.name.as_str(), 1.0)]));
            let Some(s) = Poly::of(&s_tree, 2) else {
                return Ok(Err(
                    "the tilt of an auxiliary variable is not of degree ≤ 2".into(),
                ));
            };
            if (self.reads)(&s) {
                return Ok(Err("an auxiliary's tilt reads a collapsed predictor".into()));
            }
            let family = match (a.prior_family.law(), &a.prior_family) {
                (Some((law, params)), _) if law.has_tilted() => CaviFamily::Law {
                    law,
                    params: params
                        .into_iter()
                        .map(|t| Tape::compile(t, slot_of))
                        .collect::<Result<_, _>>()?,
                },
                (None, Family::TiltedLaplace { phi, .. }) => {
                    CaviFamily::Tilted(tilted(phi, Tape::constant(0.0), slot_of)?)
                }
                (_, other) => {
                    return Ok(Err(format!(
                        "no closed-form expectation for the {} variable `{}`",
                        other.name(),
                        a.name
                    )))
                }
            };
            aux.push(CaviAux {
                index,
                slot: slot_of(Role::Aux, &a.name).ok_or("aux slot")?,
                family,
                s: poly_tapes(&s, slot_of, pred)?,
            });
        }
        Ok(Ok(aux))
    }
}

/// Whether an expression reads the predictor `name`.
fn tree_reads(t: &T, name: &str) -> bool {
    let mut syms = Vec::new();
    collect(t, &mut syms);
    syms.iter().any(|(r, n)| *r == Role::Predictor && n == name)
}

/// `φ = exp(−ψ)` as CAS expressions with its parameters bound to slots.
pub(crate) fn tilted(phi: &T, c2: Tape, slot_of: SlotOf) -> Result<Tilted, String> {
    // φ was built as exp(−ψ): take ψ back out.
    let psi_tree = match phi {
        T::Call(gpm_ir::SxFunc::Exp, v) => T::neg(v[0].clone()),
        other => T::neg(T::log(other.clone())),
    };
    let psi = gpm_cas::parse(&psi_tree.to_sexpr()).map_err(|e| e.to_string())?;
    let dpsi = gpm_cas::derivative(&psi, "r");
    let mut syms = Vec::new();
    collect(&psi_tree, &mut syms);
    let mut names = vec!["r".to_string()];
    let mut params = Vec::new();
    for (r, n) in syms {
        if r == Role::Aux && n == "r" {
            continue;
        }
        params.push(slot_of(r, &n).ok_or_else(|| format!("no slot for `{n}` in φ"))?);
        names.push(n);
    }
    let vars: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
    let bind = |e: &gpm_cas::Expr| gpm_cas::SlotExpr::bind(e, &vars).map_err(|e| e.to_string());
    Ok(Tilted {
        psi: bind(&psi)?,
        dpsi: bind(&dpsi)?,
        c2,
        params,
    })
}

/// A quadratic form's coefficients compiled to tapes over the factor's slots, its predictors
/// bound to ids (no cross terms: the recognizers give none).
pub(crate) fn poly_tapes(p: &Poly, slot_of: SlotOf, pred: PredOf) -> Result<PolyTapes, String> {
    let mut quad = Vec::new();
    for ((a, b), t) in &p.quad {
        if a != b {
            return Err(format!("a cross term {a}·{b}"));
        }
        quad.push((pred(a)?, Tape::compile(t, slot_of)?));
    }
    Ok(PolyTapes {
        c0: Tape::compile(&p.c0, slot_of)?,
        lin: p
            .lin
            .iter()
            .map(|(k, t)| Ok((pred(k)?, Tape::compile(t, slot_of)?)))
            .collect::<Result<_, String>>()?,
        quad,
    })
}
