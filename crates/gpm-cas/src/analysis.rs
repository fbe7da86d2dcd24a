//! Constant folding: every e-class whose value is a known finite constant gets that constant as
//! a member. Folding never produces NaN or infinities (such classes are left symbolic), so a
//! rule can never "prove" `log 0 = −∞`.

use crate::eval::apply_unary;
use crate::language::{Constant, Math};
use egg::{Analysis, DidMerge, EGraph, Id, Language};

/// The constant-folding analysis.
#[derive(Default, Clone)]
pub struct ConstantFold;

fn c(v: f64) -> Option<Constant> {
    if v.is_finite() {
        Constant::new(v).ok()
    } else {
        None
    }
}

impl Analysis<Math> for ConstantFold {
    type Data = Option<Constant>;

    fn make(egraph: &EGraph<Math, Self>, enode: &Math) -> Self::Data {
        let x = |i: &Id| egraph[*i].data.map(|v| v.into_inner());
        match enode {
            Math::Constant(v) => Some(*v),
            Math::Symbol(_) => None,
            Math::Add([a, b]) => c(x(a)? + x(b)?),
            Math::Sub([a, b]) => c(x(a)? - x(b)?),
            Math::Mul([a, b]) => c(x(a)? * x(b)?),
            Math::Div([a, b]) => {
                let d = x(b)?;
                if d == 0.0 {
                    None
                } else {
                    c(x(a)? / d)
                }
            }
            Math::Pow([a, b]) => {
                let (a, b) = (x(a)?, x(b)?);
                if a < 0.0 && b.fract() != 0.0 {
                    None
                } else {
                    c(a.powf(b))
                }
            }
            Math::Max([a, b]) => c(x(a)?.max(x(b)?)),
            Math::Min([a, b]) => c(x(a)?.min(x(b)?)),
            Math::PoissonPowerMoment([j, rate, b]) => {
                c(gpm_special::poisson_power_moment(x(j)?, x(rate)?, x(b)?))
            }
            other => {
                let arg = other.children()[0];
                c(apply_unary(other, x(&arg)?)?)
            }
        }
    }

    fn merge(&mut self, to: &mut Self::Data, from: Self::Data) -> DidMerge {
        match (to.as_ref(), from) {
            (None, Some(v)) => {
                *to = Some(v);
                DidMerge(true, false)
            }
            (Some(_), None) => DidMerge(false, true),
            // Two foldings of the same class may differ in the last bits; keep the first.
            _ => DidMerge(false, false),
        }
    }

    fn modify(egraph: &mut EGraph<Math, Self>, id: Id) {
        if let Some(v) = egraph[id].data {
            let added = egraph.add(Math::Constant(v));
            egraph.union(id, added);
        }
    }
}
