//! The generic variational update of a factor no rule augments (one linear predictor `η`): a
//! Gaussian site `b_i η − ½ a_i η²` per observation stands in for `ℓ_i(η)` in the blocks'
//! updates. A local step moves the sites towards `a* = −E_q[ℓ''(η)]`, `b* = E_q[ℓ'(η)] + a* m`
//! with `q(η) = N(m, v)` — the natural-gradient step of Khan & Lin (2017), whose fixed point is
//! the Gaussian variational optimum — with the derivatives the CAS took (`ℓ'`, `ℓ''` in the
//! schedule) and the expectations by Gauss-Hermite quadrature. The step is damped (`ρ ≤ 1`);
//! the executor halves `ρ` whenever the ELBO `E_q[ℓ]` (quadrature) minus the KLs decreases, so
//! the objective is checked, not assumed.

use crate::along::{at, central_differences};
use gpm_schedule::{GenericVariational, Tape};

/// Quadrature nodes per observation.
pub(super) const NODES: usize = 20;

/// Smallest site curvature: keeps a site Gaussian where `ℓ` is locally convex.
const MIN_CURVATURE: f64 = 1e-8;

/// The sites of one factor.
#[derive(Debug, Clone)]
pub(super) struct Sites {
    /// Curvatures `a_i`.
    pub a: Vec<f64>,
    /// Linear terms `b_i`.
    pub b: Vec<f64>,
}

/// The predictor's slots back at its mean (how the factor's other evaluations read them).
fn at_mean(slots: &[usize], m: f64, vals: &mut [f64]) {
    for &s in slots {
        vals[s] = m;
    }
}

/// Standard-normal Gauss-Hermite nodes and weights (summing to 1).
pub(super) struct Rule {
    nodes: Vec<f64>,
    weights: Vec<f64>,
}

impl Rule {
    pub(super) fn new() -> Self {
        let (nodes, weights) = crate::quadrature::gauss_hermite(NODES);
        Rule { nodes, weights }
    }

    /// `E[g(η)]` for `η ~ N(m, v)`, `g` evaluated with the predictor's slots set to each node
    /// (`E_q[ℓ(η)]` is an observation's ELBO term).
    pub(super) fn expect(
        &self,
        tape: &Tape,
        g: &GenericVariational,
        m: f64,
        v: f64,
        vals: &mut [f64],
        stack: &mut Vec<f64>,
    ) -> f64 {
        let sd = v.max(0.0).sqrt();
        let mut total = 0.0;
        let slots = &g.grad.slots;
        for (t, w) in self.nodes.iter().zip(&self.weights) {
            total += w * at(tape, slots, m + sd * t, vals, stack);
        }
        at_mean(slots, m, vals);
        total
    }

    /// The site observation `i` moves to, `(a*, b*)`, at `q(η) = N(m, v)`. The CAS's
    /// derivatives are not simplified into numerically safe forms (`σ(η)σ(−η)/σ(η)`): where one
    /// is not finite at a node (`σ` rounding to 1 far in a tail), the node takes central
    /// differences of the log-density `ld` (itself in log space) instead.
    pub(super) fn target(
        &self,
        g: &GenericVariational,
        ld: &Tape,
        m: f64,
        v: f64,
        vals: &mut [f64],
        stack: &mut Vec<f64>,
    ) -> (f64, f64) {
        let sd = v.max(0.0).sqrt();
        let slots = &g.grad.slots;
        let (mut e1, mut e2) = (0.0, 0.0);
        for (t, w) in self.nodes.iter().zip(&self.weights) {
            let eta = m + sd * t;
            let mut d1 = at(&g.grad.d1, slots, eta, vals, stack);
            let mut d2 = at(&g.d2, slots, eta, vals, stack);
            if !(d1.is_finite() && d2.is_finite()) {
                let h = crate::along::step_at(eta);
                (d1, d2) = central_differences(ld, slots, eta, h, vals, stack);
            }
            e1 += w * d1;
            e2 += w * d2;
        }
        at_mean(slots, m, vals);
        let a = (-e2).max(MIN_CURVATURE);
        (a, e1 + a * m)
    }
}
