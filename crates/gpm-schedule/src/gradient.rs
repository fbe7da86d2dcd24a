//! Derivatives of a factor's log-density `ℓ` in its predictors, taken symbolically by the CAS
//! and compiled to tapes over the factor's slots. One implementation serves the generic
//! variational update (`ℓ'`, `ℓ''` in its one predictor) and Gaussian particle flow (`∂ℓ/∂η_p`
//! for every predictor `p` the factor reads).

use crate::ids::PredictorId;
use crate::source::Source;
use crate::tape::Tape;
use gpm_augment::{Role, T};

/// `∂ℓ/∂η` of one predictor `η` of a factor, and the factor's slots that hold `η`.
#[derive(Debug, Clone)]
pub struct PredictorGradient {
    /// The predictor.
    pub pred: PredictorId,
    /// The factor's slots that hold it.
    pub slots: Vec<usize>,
    /// `∂ℓ/∂η`, reading the factor's slots.
    pub d1: Tape,
}

/// `∂ℓ/∂h` of a factor's log-density in one hyperparameter it reads.
#[derive(Debug, Clone)]
pub struct HyperGradient {
    /// The hyperparameter.
    pub hyper: crate::ids::HyperId,
    /// The factor's slot that holds it.
    pub slot: usize,
    /// `∂ℓ/∂h`, reading the factor's slots.
    pub d1: Tape,
}

/// A factor's log-density in CAS form with its slot table: differentiate, then compile.
pub(crate) struct Differ<'a> {
    cas: gpm_cas::Expr,
    syms: &'a [(Role, String)],
}

fn unbound(e: String) -> String {
    format!("the CAS could not differentiate the log-density: {e}")
}

impl<'a> Differ<'a> {
    /// The log-density `original`, whose symbols are `syms` (slot `k` holds `syms[k]`).
    pub(crate) fn new(original: &T, syms: &'a [(Role, String)]) -> Result<Self, String> {
        let cas = gpm_augment::cas::to_cas(original)
            .ok_or_else(|| unbound("its symbols are not CAS symbols".into()))?;
        Ok(Differ { cas, syms })
    }

    /// The log-density itself.
    pub(crate) fn expr(&self) -> &gpm_cas::Expr {
        &self.cas
    }

    /// `∂e/∂name`.
    pub(crate) fn derivative(&self, e: &gpm_cas::Expr, name: &str) -> gpm_cas::Expr {
        gpm_cas::derivative(e, name)
    }

    /// Compile a CAS expression over the factor's slots.
    pub(crate) fn tape(&self, e: &gpm_cas::Expr) -> Result<Tape, String> {
        let role = |n: &str| {
            self.syms
                .iter()
                .find(|(_, m)| m == n)
                .map(|(r, _)| *r)
                .unwrap_or(Role::Data)
        };
        let slot_of = |r: Role, n: &str| self.syms.iter().position(|(r2, n2)| *r2 == r && n2 == n);
        Tape::compile(&gpm_augment::cas::from_cas(e, &role), &slot_of).map_err(unbound)
    }
}

/// `∂e/∂name` of an expression whose symbols have roles `role`, compiled with `slot`.
pub(crate) fn derivative_tape(
    e: &T,
    name: &str,
    role: &dyn Fn(&str) -> Role,
    slot: crate::tape::SlotOf,
) -> Result<Tape, String> {
    let cas = gpm_augment::cas::to_cas(e)
        .ok_or_else(|| unbound("its symbols are not CAS symbols".into()))?;
    let d = gpm_cas::derivative(&cas, name);
    Tape::compile(&gpm_augment::cas::from_cas(&d, role), slot).map_err(unbound)
}

/// The factor's slots that hold predictor `pred`.
pub(crate) fn predictor_slots(slots: &[Source], pred: PredictorId) -> Vec<usize> {
    slots
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s, Source::Predictor(p) if *p == pred))
        .map(|(k, _)| k)
        .collect()
}

/// A factor's log-density differentiated once in each predictor it reads: the compiled
/// gradient (particle flow), and the CAS expressions, which the generic variational update
/// differentiates once more for its curvature.
pub(crate) struct Derivatives<'a> {
    differ: Differ<'a>,
    /// Per predictor, in the factor's order: `∂ℓ/∂η` compiled, and as a CAS expression.
    first: Vec<(PredictorGradient, gpm_cas::Expr)>,
}

impl<'a> Derivatives<'a> {
    /// `∂ℓ/∂η_p` for every predictor `p` the factor reads (`names[k]` is predictor `ids[k]`).
    pub(crate) fn new(
        original: &T,
        syms: &'a [(Role, String)],
        slots: &[Source],
        names: &[String],
        ids: &[PredictorId],
    ) -> Result<Self, String> {
        let differ = Differ::new(original, syms)?;
        let first = names
            .iter()
            .zip(ids)
            .map(|(name, &pred)| {
                let d1 = differ.derivative(differ.expr(), name);
                let grad = PredictorGradient {
                    pred,
                    slots: predictor_slots(slots, pred),
                    d1: differ.tape(&d1)?,
                };
                Ok((grad, d1))
            })
            .collect::<Result<_, String>>()?;
        Ok(Derivatives { differ, first })
    }

    /// The gradient, one entry per predictor.
    pub(crate) fn gradient(&self) -> Vec<PredictorGradient> {
        self.first.iter().map(|(g, _)| g.clone()).collect()
    }

    /// `∂ℓ/∂h` for each hyperparameter slot `(slot, h, name)` given: NUTS's gradient in the
    /// sampled hyperparameters a likelihood reads (a Student-t's scale, a Gumbel's β).
    pub(crate) fn hypers(
        &self,
        read: &[(usize, crate::ids::HyperId, String)],
    ) -> Result<Vec<HyperGradient>, String> {
        read.iter()
            .map(|(slot, hyper, name)| {
                Ok(HyperGradient {
                    hyper: *hyper,
                    slot: *slot,
                    d1: self
                        .differ
                        .tape(&self.differ.derivative(self.differ.expr(), name))?,
                })
            })
            .collect()
    }

    /// The predictors' gradients with their CAS expressions.
    pub(crate) fn first(&self) -> &[(PredictorGradient, gpm_cas::Expr)] {
        &self.first
    }

    /// `∂²ℓ/∂η²` from `∂ℓ/∂η` (the expression [`Derivatives::first`] holds), compiled.
    pub(crate) fn second(&self, d1: &gpm_cas::Expr, name: &str) -> Result<Tape, String> {
        self.differ.tape(&self.differ.derivative(d1, name))
    }
}
