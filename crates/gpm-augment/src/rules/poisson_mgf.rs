//! The Poisson moment generating function (thesis §7.1): `−κσ(z)` with `κ ≥ 0` is `log Σ_n Po(n | κ) σ(−z)^n`; a predictor read by `κ` is collapsed (§7.2.1).

use super::*;

/// The rule.
pub(super) struct PoissonMgf;

impl Rule for PoissonMgf {
    fn apply(&self, w: &mut Work<'_>, atom: Atom<'_>, pending: &mut Vec<T>) -> Applied {
        let Atom { coef, core, .. } = atom;
        let factors: Vec<T> = match &core {
            T::Mul(v) => v.clone(),
            other => vec![(*other).clone()],
        };
        let logistic_at: Vec<usize> = factors
            .iter()
            .enumerate()
            .filter(|(_, f)| matches!(f, T::Call(SxFunc::Logistic, _)))
            .map(|(k, _)| k)
            .collect();
        if logistic_at.len() == 1 {
            let T::Call(_, z) = &factors[logistic_at[0]] else {
                unreachable!()
            };
            if let Some(z) = affine(&z[0]) {
                let mut rest: Vec<T> = factors
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| *k != logistic_at[0])
                    .map(|(_, f)| f.clone())
                    .collect();
                rest.push(T::neg(coef.clone()));
                let kappa = T::mul(rest);
                let p = w.probe(&[&kappa]);
                if p.sign_ok(&kappa, false) {
                    let n = w.fresh("n");
                    let zt = z.to_tree();
                    let rate = T::mul(vec![
                        kappa.clone(),
                        T::call(SxFunc::Logistic, T::neg(zt.clone())),
                    ]);
                    let z_preds: BTreeSet<String> = z.lin.keys().cloned().collect();
                    let mut others = BTreeSet::new();
                    collect_predictors(&kappa, &mut others);
                    let others: Vec<String> = others.difference(&z_preds).cloned().collect();
                    w.steps.push(format!(
                        "Poisson MGF: exp(-{kappa}·σ({zt})) = Σ_{n} Po({n} | {kappa}) σ(-({zt}))^{n}  (thesis §7.1)"
                    ));
                    if !others.is_empty() {
                        w.steps.push(format!(
                            "  the rate depends on {}: sampled from its collapsed conditional (thesis §7.2.1)",
                            others.join(", ")
                        ));
                        w.collapsed.extend(others);
                    }
                    w.aux.push(AuxVar {
                        name: n.clone(),
                        prior_family: Family::Poisson {
                            rate: kappa.clone(),
                        },
                        conditional: Family::Poisson { rate: rate.clone() },
                        mean: rate,
                        rule: "Poisson MGF",
                    });
                    // n · log σ(−z), taken by rule 1.
                    pending.push(T::mul(vec![
                        T::sym(Role::Aux, &n),
                        T::log(T::call(SxFunc::Logistic, T::neg(zt))),
                    ]));
                    return Ok(true);
                }
                return Err(format!(
                    "the coefficient {kappa} of σ({}) is not negative everywhere: exp(+κσ(z)) has no Poisson representation{}",
                    z.to_tree(),
                    super::constraint_hint(w.model, &w.signs, &kappa)
                ));
            }
        }
        Ok(false)
    }
}
