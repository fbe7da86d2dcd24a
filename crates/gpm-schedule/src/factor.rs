//! One factor's plan compiled to its program: the symbols its tapes read bound to slots, its
//! auxiliaries' samplers, the curvature each predictor receives, its CAVI program, and its
//! generic update and gradients where no augmentation applies. One function per part, in the
//! order [`compile_factor`] calls them.

use crate::augmented_joint;
use crate::aux::{AuxKind, AuxProgram};
use crate::cavi_program::{cavi_program, tilted};
use crate::error::ScheduleError;
use crate::gradient;
use crate::ids::{HyperId, LatentId, PredictorId};
use crate::program::{
    CategoricalProgram, Curvature, FactorProgram, GenericProgram, GenericVariational,
    ReplicateProgram,
};
use crate::source::{hyper_of, pred_of, DataRef, PredOf, Source};
use crate::tape::{SlotOf, Tape};
use crate::trees::{collect, family_trees};
use gpm_augment::{Family, Plan, Poly, Role, T};
use gpm_ir::Model;
use std::collections::BTreeSet;

/// The symbols a factor's tapes read, each with its role, in slot order.
type Symbols = Vec<(Role, String)>;

/// Compile one factor's plan: its slots, auxiliaries, curvature and CAVI programs, its generic
/// update and gradient (collapsed predictors are added to `collapsed`).
pub(crate) fn compile_factor(
    model: &Model,
    plan: &Plan,
    collapsed: &mut BTreeSet<String>,
) -> Result<FactorProgram, ScheduleError> {
    let k = plan.factor;
    let err = |message: String| ScheduleError::Factor { factor: k, message };
    let f = &model.factors[k];
    if let Some(c) = &plan.categorical {
        return categorical_program(model, f, k, c).map_err(err);
    }
    let gpm_ir::FactorForm::LogDensity { log_density } = &f.form else {
        return Err(err("a categorical factor without a categorical plan".into()));
    };
    let original = T::from_sx(log_density);
    let syms = slot_symbols(&original, plan);
    let slots = bind_slots(model, plan, &syms).map_err(err)?;
    let slot_of = |r: Role, n: &str| syms.iter().position(|(r2, n2)| *r2 == r && n2 == n);
    let tape = |t: &T| Tape::compile(t, &slot_of);
    let aux = aux_programs(plan, &tape, &slot_of).map_err(err)?;
    let pred = pred_of(model);
    let mut curvature = Vec::new();
    for p in &f.predictors {
        // A factor with no augmentation has no Gaussian terms: its latents take the
        // generic update on its log-density.
        if plan.collapsed.iter().any(|(c, _)| c == p) || plan.generic.is_some() {
            continue;
        }
        curvature.push(curvature_of(&plan.augmented, p, &pred, &tape).map_err(err)?);
    }
    let mut coll = Vec::new();
    for (p, poly) in &plan.collapsed {
        coll.push(curvature_of(poly, p, &pred, &tape).map_err(err)?);
        collapsed.insert(p.clone());
    }
    let (cavi, cavi_unavailable) = match &plan.generic {
        Some(_) => (None, None),
        None => match cavi_program(plan, &slot_of, &pred).map_err(err)? {
            Ok(program) => (Some(program), None),
            Err(why) => (None, Some(why)),
        },
    };
    let predictors: Vec<PredictorId> = f
        .predictors
        .iter()
        .map(|p| pred(p))
        .collect::<Result<_, _>>()
        .map_err(err)?;
    // Each predictor's ∂ℓ/∂η, taken once: particle flow's gradient and the generic update's ℓ'.
    let derivatives =
        gradient::Derivatives::new(&original, &syms, &slots, &f.predictors, &predictors);
    let generic = generic_program(f, plan, &predictors, &derivatives);
    let cavi_unavailable = match &generic {
        Some(GenericProgram {
            variational: Err(why),
            ..
        }) => Some(why.clone()),
        _ => cavi_unavailable,
    };
    let hyper_gradient = match &derivatives {
        Ok(d) => d.hypers(&sampled_hypers(model, &slots, &syms)),
        Err(e) => Err(e.clone()),
    };
    Ok(FactorProgram {
        factor: k,
        n: f.n.clone(),
        is_prior: f.prior_of.is_some(),
        response_slots: response_slots(&slots, f),
        augmented_joint: augmented_joint::augmented_joint(
            plan,
            &syms,
            &slots,
            (&f.predictors, &predictors),
        ),
        slots,
        aux,
        curvature,
        collapsed: coll,
        log_density: Some(tape(&original).map_err(err)?),
        log_density_in_predictors: Some(tape(&in_predictors(&original)).map_err(err)?),
        observation: f
            .observation
            .as_ref()
            .map(|o| tape(&T::from_sx(o)))
            .transpose()
            .map_err(err)?,
        replicate: replicate_program(f, &tape).map_err(err)?,
        categorical: None,
        cavi,
        cavi_unavailable,
        generic,
        gradient: derivatives
            .as_ref()
            .map(|d| d.gradient())
            .map_err(Clone::clone),
        hyper_gradient,
    })
}

/// A logistic-softmax factor's program: no slots or tapes of its own; its class scales and
/// latent matrix by id.
fn categorical_program(
    model: &Model,
    f: &gpm_ir::Factor,
    k: usize,
    c: &gpm_augment::CategoricalPlan,
) -> Result<FactorProgram, String> {
    let gpm_ir::FactorForm::Categorical { link, .. } = &f.form else {
        return Err("a categorical plan for a factor that is not categorical".into());
    };
    let scale = match &link.scale {
        Some(t) => Some(HyperId(
            model
                .hypers
                .iter()
                .position(|h| &h.name == t)
                .ok_or_else(|| format!("unknown class scales `{t}`"))?,
        )),
        None => None,
    };
    let latent_id = LatentId(
        model
            .latents
            .iter()
            .position(|z| z.name == c.latent)
            .ok_or_else(|| format!("unknown latent `{}`", c.latent))?,
    );
    Ok(FactorProgram {
        factor: k,
        n: f.n.clone(),
        is_prior: false,
        slots: vec![],
        response_slots: vec![],
        aux: vec![],
        curvature: vec![],
        collapsed: vec![],
        log_density: None,
        log_density_in_predictors: None,
        observation: None,
        replicate: None,
        cavi: None,
        cavi_unavailable: None,
        generic: None,
        // No predictor: its class sum's gradient in the latent matrix is the library's
        // (`ClassWeights::grad_log_prob`), which particle flow and NUTS call directly.
        gradient: Ok(vec![]),
        hyper_gradient: Ok(vec![]),
        augmented_joint: Err(
            "the logistic-softmax's Pólya-Gamma and count auxiliaries have no closed-form density"
                .into(),
        ),
        categorical: Some(CategoricalProgram {
            bijective: link.bijective,
            scale,
            label: c.label.clone(),
            latent: c.latent.clone(),
            latent_id,
        }),
    })
}

/// Every symbol any of the factor's tapes reads — the log-density, the auxiliaries'
/// conditionals, means and priors, the augmented and collapsed polynomials, `log C` — and
/// every auxiliary, each once.
fn slot_symbols(original: &T, plan: &Plan) -> Symbols {
    let mut syms: Symbols = Vec::new();
    collect(original, &mut syms);
    for a in &plan.aux {
        for t in family_trees(&a.conditional) {
            collect(t, &mut syms);
        }
        if let Family::TiltedLaplace { phi, .. } = &a.conditional {
            let mut inner = Vec::new();
            collect(phi, &mut inner);
            for x in inner {
                if !(syms.contains(&x) || x.0 == Role::Aux && x.1 == "r") {
                    syms.push(x);
                }
            }
        }
        collect(&a.mean, &mut syms);
    }
    collect(&plan.augmented.to_tree(), &mut syms);
    collect(&plan.log_c, &mut syms);
    for a in &plan.aux {
        for t in family_trees(&a.prior_family) {
            collect(t, &mut syms);
        }
    }
    for (_, p) in &plan.collapsed {
        collect(&p.to_tree(), &mut syms);
    }
    for a in &plan.aux {
        if !syms.iter().any(|(r, n)| *r == Role::Aux && *n == a.name) {
            syms.push((Role::Aux, a.name.clone()));
        }
    }
    syms
}

/// Where each symbol's value comes from: a predictor, a datum, a hyperparameter or an
/// auxiliary, by id.
fn bind_slots(model: &Model, plan: &Plan, syms: &Symbols) -> Result<Vec<Source>, String> {
    let pred = pred_of(model);
    syms.iter()
        .map(|(r, n)| {
            Ok(match r {
                Role::Predictor => Source::Predictor(pred(n)?),
                Role::Data => Source::Data(DataRef::from_symbol(n)),
                Role::Hyper => Source::Hyper(hyper_of(model, n)?),
                Role::Aux => match plan.aux.iter().position(|a| a.name == *n) {
                    Some(j) => Source::Aux(j),
                    None => return Err(format!("unknown auxiliary `{n}`")),
                },
            })
        })
        .collect()
}

/// Each auxiliary's sampler (a library law, or the tilted inverse Laplace transform of a
/// CAS-proved `φ`) and its CAVI mean.
fn aux_programs(
    plan: &Plan,
    tape: &dyn Fn(&T) -> Result<Tape, String>,
    slot_of: SlotOf,
) -> Result<Vec<AuxProgram>, String> {
    let mut aux = Vec::new();
    for a in &plan.aux {
        let kind = match (a.conditional.law(), &a.conditional) {
            (Some((law, params)), _) => AuxKind::Law {
                law,
                params: params.into_iter().map(tape).collect::<Result<_, _>>()?,
            },
            (None, Family::TiltedLaplace { phi, c2 }) => {
                AuxKind::Tilted(tilted(phi, tape(c2)?, slot_of)?)
            }
            (None, other) => {
                return Err(format!(
                    "the {} conditional has no sampler in the runtime",
                    other.name()
                ))
            }
        };
        aux.push(AuxProgram {
            name: a.name.clone(),
            slot: slot_of(Role::Aux, &a.name).expect("aux slot"),
            kind,
            mean: tape(&a.mean)?,
        });
    }
    Ok(aux)
}

/// The Gaussian term `b·η − ½ a η²` a predictor receives from a polynomial, as tapes.
fn curvature_of(
    poly: &Poly,
    predictor: &str,
    pred: PredOf,
    tape: &dyn Fn(&T) -> Result<Tape, String>,
) -> Result<Curvature, String> {
    let (b, a) = curvature_trees(poly, predictor);
    Ok(Curvature {
        predictor: predictor.to_string(),
        pred: pred(predictor)?,
        lin: tape(&b)?,
        quad: tape(&a)?,
    })
}

/// The terms of a log-density that read a predictor. The others (`lgamma(y + 1)`, `log β`)
/// cancel in every ratio elliptical slice sampling takes, so the likelihood it evaluates at
/// each proposal keeps only these.
fn in_predictors(original: &T) -> T {
    match original {
        T::Add(v) => T::add(v.iter().filter(|t| t.has_predictor()).cloned().collect()),
        other => other.clone(),
    }
}

/// For a factor with no augmentation: why, the predictors whose latents the generic update
/// moves, and its variational update (or why there is none).
fn generic_program(
    f: &gpm_ir::Factor,
    plan: &Plan,
    predictors: &[PredictorId],
    derivatives: &Result<gradient::Derivatives, String>,
) -> Option<GenericProgram> {
    let reason = plan.generic.as_ref()?;
    // The predictors it is Gaussian in (`plan.collapsed`) are drawn from that conditional;
    // the generic update moves the others' latents.
    Some(GenericProgram {
        reason: reason.clone(),
        predictors: predictors
            .iter()
            .zip(&f.predictors)
            .filter(|(_, name)| !plan.collapsed.iter().any(|(c, _)| c == *name))
            .map(|(id, _)| *id)
            .collect(),
        variational: generic_variational(f, derivatives),
    })
}

/// The slots that read the factor's response (a whole vector datum).
fn response_slots(slots: &[Source], f: &gpm_ir::Factor) -> Vec<usize> {
    slots
        .iter()
        .enumerate()
        .filter(|(_, s)| {
            matches!(s, Source::Data(d) if d.column.is_none() && Some(&d.name) == f.response.as_ref())
        })
        .map(|(k, _)| k)
        .collect()
}

/// The sampled hyperparameters a factor reads, each with its slot and name.
fn sampled_hypers(
    model: &Model,
    slots: &[Source],
    syms: &Symbols,
) -> Vec<(usize, HyperId, String)> {
    slots
        .iter()
        .enumerate()
        .filter_map(|(k, s)| match s {
            Source::Hyper(h)
                if matches!(model.hypers[h.0].kind, gpm_ir::HyperKind::Prior { .. }) =>
            {
                Some((k, *h, syms[k].1.clone()))
            }
            _ => None,
        })
        .collect()
}

/// How a replicated response is drawn: the library likelihood and its parameters as tapes.
fn replicate_program(
    f: &gpm_ir::Factor,
    tape: &dyn Fn(&T) -> Result<Tape, String>,
) -> Result<Option<ReplicateProgram>, String> {
    f.replicate
        .as_ref()
        .map(|r| -> Result<_, String> {
            Ok(ReplicateProgram {
                likelihood: r.likelihood,
                labels: r.labels.clone(),
                params: r
                    .params
                    .iter()
                    .map(|p| tape(&T::from_sx(p)))
                    .collect::<Result<_, _>>()?,
            })
        })
        .transpose()
}

/// `ℓ'` and `ℓ''` of a factor's log-density in its one predictor, by the CAS (`ℓ'` is the
/// factor's gradient, differentiated once more).
fn generic_variational(
    f: &gpm_ir::Factor,
    derivatives: &Result<gradient::Derivatives, String>,
) -> Result<GenericVariational, String> {
    let [name] = f.predictors.as_slice() else {
        return Err(format!(
            "the generic variational update handles factors of one linear predictor; this one reads {}",
            f.predictors.len()
        ));
    };
    let d = derivatives.as_ref().map_err(Clone::clone)?;
    let [(grad, d1)] = d.first() else {
        return Err("the factor's gradient does not match its predictors".into());
    };
    Ok(GenericVariational {
        grad: grad.clone(),
        d2: d.second(d1, name)?,
    })
}

/// `(b, a)` of `b·η − ½ a η²` read off a polynomial in the predictors.
fn curvature_trees(p: &Poly, predictor: &str) -> (T, T) {
    let b = p.lin.get(predictor).cloned().unwrap_or(T::Num(0.0));
    let q = p
        .quad
        .get(&(predictor.to_string(), predictor.to_string()))
        .cloned()
        .unwrap_or(T::Num(0.0));
    (b, T::mul(vec![T::Num(-2.0), q]))
}
