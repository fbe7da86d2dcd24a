//! Random points where every symbol of some expressions takes a plausible value (data from
//! their declared domain, hyperparameters near their values or inside their priors): the rules'
//! numerical comparisons and certification's test points both draw them, from this file, so
//! neither imports the other.

use crate::tree::{Role, T};
use gpm_ir::Model;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;

/// Random points for numerical comparisons of predictor-free (or full) expressions.
pub(crate) struct Probe {
    points: Vec<Vec<(Role, String, f64)>>,
}

impl Probe {
    /// Points where every symbol of `t` gets a value in its plausible domain.
    pub(crate) fn new(model: &Model, ts: &[&T], n: usize, seed: u64) -> Probe {
        let mut syms: BTreeSet<(Role, String)> = BTreeSet::new();
        for t in ts {
            collect(t, &mut syms);
        }
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let points = (0..n)
            .map(|_| {
                syms.iter()
                    .map(|(r, name)| (*r, name.clone(), sample_value(model, *r, name, &mut rng)))
                    .collect()
            })
            .collect();
        Probe { points }
    }
    pub(crate) fn env<'a>(&'a self, k: usize) -> impl Fn(Role, &str) -> Option<f64> + 'a {
        move |r, n| {
            self.points[k]
                .iter()
                .find(|(r2, n2, _)| *r2 == r && n2 == n)
                .map(|x| x.2)
                .or(if n == "r" { Some(1.3) } else { None })
        }
    }
    pub(crate) fn len(&self) -> usize {
        self.points.len()
    }
    /// Whether two expressions agree at every point (relative tolerance).
    pub(crate) fn equal(&self, a: &T, b: &T) -> bool {
        (0..self.len()).all(|k| {
            let env = self.env(k);
            match (a.eval(&env), b.eval(&env)) {
                (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * (1.0 + x.abs().max(y.abs())),
                _ => false,
            }
        })
    }
    /// Whether an expression is ≥ 0 (or > 0) at every point.
    pub(crate) fn sign_ok(&self, a: &T, strict: bool) -> bool {
        (0..self.len()).all(|k| match a.eval(&self.env(k)) {
            Some(x) => x.is_finite() && (if strict { x > 0.0 } else { x >= 0.0 }),
            None => false,
        })
    }
}

/// Every symbol of `t`.
pub(crate) fn collect(t: &T, out: &mut BTreeSet<(Role, String)>) {
    match t {
        T::Num(_) => {}
        T::Sym(r, n) => {
            out.insert((*r, n.clone()));
        }
        T::Add(v) | T::Mul(v) | T::Call(_, v) => v.iter().for_each(|u| collect(u, out)),
        T::Pow(a, b) => {
            collect(a, out);
            collect(b, out);
        }
    }
}

/// A plausible value for a symbol: data from their declared domain, hyperparameters near their
/// declared values, predictors from N(0, 1.5²), auxiliaries positive.
pub(crate) fn sample_value(model: &Model, role: Role, name: &str, rng: &mut impl Rng) -> f64 {
    use gpm_ir::{Bound, HyperKind, ValueSet};
    let normal = |rng: &mut dyn rand::RngCore| -> f64 {
        let u1: f64 = rng.gen_range(1e-12..1.0);
        let u2: f64 = rng.gen();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    };
    match role {
        Role::Predictor => 1.5 * normal(rng),
        Role::Aux => rng.gen_range(0.05..3.0),
        Role::Hyper => match model.hyper(name).map(|h| &h.kind) {
            Some(HyperKind::Fixed { value }) | Some(HyperKind::Learn { init: value }) => {
                // Around the declared value, keeping its sign.
                value * rng.gen_range(0.5..2.0)
            }
            // The prior truncated to its range, between its 10 % and 90 % quantiles.
            Some(HyperKind::Prior { prior }) => prior.quantile(rng.gen_range(0.1..0.9)),
            None => rng.gen_range(0.5..2.0),
        },
        Role::Data => {
            let d = model.datum(name.split('[').next().unwrap_or(name));
            match d.map(|d| (&d.constraint, d.elem)) {
                Some((ValueSet::Set(s), _)) => s[rng.gen_range(0..s.len())] as f64,
                Some((ValueSet::Range { lo, hi }, gpm_ir::Elem::Int)) => {
                    let lo = match lo {
                        Some(Bound::Const(c)) => *c,
                        _ => 0.0,
                    };
                    let hi = match hi {
                        Some(Bound::Const(c)) => *c,
                        _ => lo + 12.0,
                    };
                    rng.gen_range(lo as i64..=hi as i64) as f64
                }
                Some((_, gpm_ir::Elem::Int)) => rng.gen_range(0..10) as f64,
                // A real datum with a declared range: inside it.
                Some((ValueSet::Range { lo, hi }, _)) => {
                    let bound = |b: &Option<Bound>| match b {
                        Some(Bound::Const(c)) => Some(*c),
                        _ => None,
                    };
                    match (bound(lo), bound(hi)) {
                        (Some(l), Some(h)) if h > l => rng.gen_range(l..=h),
                        (Some(l), _) => l + rng.gen_range(0.05..4.0),
                        (None, Some(h)) => h - rng.gen_range(0.05..4.0),
                        (None, None) => 2.0 * normal(rng),
                    }
                }
                _ => 2.0 * normal(rng),
            }
        }
    }
}
