//! The probit (Albert & Chib 1993): `c · log Φ(z)` with `z` affine in the predictors and
//! `c ∈ {0, 1}` (a label, or `(1 + y)/2`) is `log 2^(−c) E_{TN(0)}[e^(c(uz − z²/2))]`: with
//! `u` half-normal, `∫₀^∞ e^(uz − z²/2) 2φ(u) du = 2 ∫₀^∞ φ(u − z) du = 2Φ(z)`. Given `z`,
//! `u ~ TN(cz)` (the unit normal at `cz` truncated to `u > 0`), and the augmented factor
//! `c(uz − z²/2)` is Gaussian in the predictors. `1 − Φ(x)` is read as `Φ(−x)`.

use super::*;

/// The rule.
pub(super) struct Probit;

/// `Φ(x)` or `1 − Φ(x) = Φ(−x)`: the argument.
fn normal_cdf_argument(t: &T) -> Option<T> {
    match t {
        T::Call(SxFunc::NormalCdf, x) => Some(x[0].clone()),
        T::Add(v) if v.len() == 2 => {
            let (one, rest) = match (&v[0], &v[1]) {
                (T::Num(o), r) | (r, T::Num(o)) if *o == 1.0 => (true, r),
                _ => (false, &v[0]),
            };
            if !one {
                return None;
            }
            match rest {
                T::Mul(m) if m.len() == 2 => match (&m[0], &m[1]) {
                    (T::Num(k), T::Call(SxFunc::NormalCdf, x))
                    | (T::Call(SxFunc::NormalCdf, x), T::Num(k))
                        if *k == -1.0 =>
                    {
                        Some(T::neg(x[0].clone()))
                    }
                    _ => None,
                },
                _ => None,
            }
        }
        _ => None,
    }
}

impl Rule for Probit {
    fn apply(&self, w: &mut Work<'_>, atom: Atom<'_>, _pending: &mut Vec<T>) -> Applied {
        let Atom { coef, core, .. } = atom;
        let T::Call(SxFunc::Log, v) = core else {
            return Ok(false);
        };
        let Some(arg) = normal_cdf_argument(&v[0]) else {
            return Ok(false);
        };
        let Some(z) = affine(&arg) else {
            return Ok(false);
        };
        let p = w.probe(&[coef]);
        let binary =
            (0..p.len()).all(|k| coef.eval(&p.env(k)).is_some_and(|c| c == 0.0 || c == 1.0));
        if !binary {
            return Err(format!(
                "the exponent {coef} of Φ({}) is not 0 or 1 everywhere: the truncated-normal representation holds for Φ(z)^c with c ∈ {{0, 1}} only",
                z.to_tree()
            ));
        }
        let u = w.fresh("u");
        let zt = z.to_tree();
        let cz = T::mul(vec![coef.clone(), zt.clone()]);
        w.steps.push(format!(
            "probit (Albert & Chib 1993): Φ({zt})^({coef}) = 2^(−{coef}) ∫ exp({coef}·({u}·{zt} − ({zt})²/2)) TN({u} | 0) d{u}"
        ));
        // c·(u z − z²/2)
        w.add_poly(&T::mul(vec![
            coef.clone(),
            T::sym(Role::Aux, &u),
            zt.clone(),
        ]));
        w.add_poly(&T::mul(vec![
            coef.clone(),
            T::Num(-0.5),
            zt.clone(),
            zt.clone(),
        ]));
        w.log_c
            .push(T::mul(vec![coef.clone(), T::Num(-std::f64::consts::LN_2)]));
        // E[u | z] = cz + φ(cz)/Φ(cz)
        let mills = T::mul(vec![
            T::call(
                SxFunc::Exp,
                T::mul(vec![T::Num(-0.5), cz.clone(), cz.clone()]),
            ),
            T::Num(1.0 / (2.0 * std::f64::consts::PI).sqrt()),
            T::pow(T::call(SxFunc::NormalCdf, cz.clone()), T::Num(-1.0)),
        ]);
        w.aux.push(AuxVar {
            name: u,
            prior_family: Family::TruncatedNormal { mean: T::Num(0.0) },
            conditional: Family::TruncatedNormal { mean: cz.clone() },
            mean: T::add(vec![cz, mills]),
            rule: "probit",
        });
        Ok(true)
    }
}
