//! The logistic family → Pólya-Gamma (thesis ch. 3; Polson, Scott & Windle 2013): `κ log σ(z)`, `κ softplus(z)`, `κ log cosh(w)` of an affine predictor become a linear term, a constant and a `log cosh(z/2)` piece, grouped later into one Pólya-Gamma variable per `z²`.

use super::*;

/// The rule.
pub(super) struct Logistic;

impl Rule for Logistic {
    fn apply(&self, w: &mut Work<'_>, atom: Atom<'_>, _pending: &mut Vec<T>) -> Applied {
        let Atom { coef, core, .. } = atom;
        match &core {
            T::Call(SxFunc::Log, v) => {
                if let T::Call(SxFunc::Logistic, z) = &v[0] {
                    if let Some(z) = affine(&z[0]) {
                        // log σ(z) = z/2 − log 2 − log cosh(z/2)
                        w.add_poly(&T::mul(vec![coef.clone(), T::Num(0.5), z.to_tree()]));
                        w.log_c
                            .push(T::mul(vec![coef.clone(), T::Num(-std::f64::consts::LN_2)]));
                        w.logcosh.push((coef.clone(), z));
                        return Ok(true);
                    }
                }
                if let T::Call(SxFunc::Cosh, arg) = &v[0] {
                    if let Some(half) = affine(&arg[0]) {
                        let z = Poly::of(&T::mul(vec![T::Num(2.0), half.to_tree()]), 1)
                            .expect("twice an affine form is affine");
                        w.logcosh.push((T::neg(coef.clone()), z));
                        return Ok(true);
                    }
                }
            }
            T::Call(SxFunc::Softplus, z) => {
                if let Some(z) = affine(&z[0]) {
                    // softplus(z) = z/2 + log 2 + log cosh(z/2)
                    w.add_poly(&T::mul(vec![coef.clone(), T::Num(0.5), z.to_tree()]));
                    w.log_c
                        .push(T::mul(vec![coef.clone(), T::Num(std::f64::consts::LN_2)]));
                    w.logcosh.push((T::neg(coef.clone()), z));
                    return Ok(true);
                }
            }
            _ => {}
        }
        Ok(false)
    }
}
