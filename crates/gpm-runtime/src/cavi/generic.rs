//! The generic variational update of a factor no rule augments (one linear predictor `η`): a
//! Gaussian site `b_i η − ½ a_i η²` per observation stands in for `ℓ_i(η)` in the blocks'
//! updates. A local step moves the sites towards `a* = −E_q[ℓ''(η)]`, `b* = E_q[ℓ'(η)] + a* m`
//! with `q(η) = N(m, v)` — the natural-gradient step of Khan & Lin (2017), whose fixed point is
//! the Gaussian variational optimum — with the derivatives the CAS took (`ℓ'`, `ℓ''` in the
//! schedule) and the expectations by Gauss-Hermite quadrature. The step is damped (`ρ ≤ 1`);
//! the executor halves `ρ` whenever the ELBO `E_q[ℓ]` (quadrature) minus the KLs decreases, so
//! the objective is checked, not assumed.

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

/// Standard-normal Gauss-Hermite nodes and weights (summing to 1).
pub(super) struct Rule {
    nodes: Vec<f64>,
    weights: Vec<f64>,
}

impl Rule {
    pub(super) fn new() -> Self {
        let (nodes, weights) = crate::predict::gauss_hermite(NODES);
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
        for (t, w) in self.nodes.iter().zip(&self.weights) {
            let eta = m + sd * t;
            for &s in &g.pred_slots {
                vals[s] = eta;
            }
            total += w * tape.eval(vals, stack);
        }
        for &s in &g.pred_slots {
            vals[s] = m;
        }
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
        let mut at = |eta: f64, tape: &Tape, vals: &mut [f64]| {
            for &s in &g.pred_slots {
                vals[s] = eta;
            }
            tape.eval(vals, stack)
        };
        let (mut e1, mut e2) = (0.0, 0.0);
        for (t, w) in self.nodes.iter().zip(&self.weights) {
            let eta = m + sd * t;
            let (mut d1, mut d2) = (at(eta, &g.d1, vals), at(eta, &g.d2, vals));
            if !(d1.is_finite() && d2.is_finite()) {
                let h = 1e-4 * eta.abs().max(1.0);
                let (lo, mid, hi) = (
                    at(eta - h, ld, vals),
                    at(eta, ld, vals),
                    at(eta + h, ld, vals),
                );
                d1 = (hi - lo) / (2.0 * h);
                d2 = (hi - 2.0 * mid + lo) / (h * h);
            }
            e1 += w * d1;
            e2 += w * d2;
        }
        for &s in &g.pred_slots {
            vals[s] = m;
        }
        let a = (-e2).max(MIN_CURVATURE);
        (a, e1 + a * m)
    }
}
