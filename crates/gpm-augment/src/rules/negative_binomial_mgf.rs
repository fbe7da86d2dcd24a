//! The negative-binomial moment generating function (thesis §7.2.2): `(1 + κσ(z))^(−α) = Σ_k NB(k | α, κ/(1+κ)) σ(−z)^k`; when `κ` reads a predictor, the Gamma scale mixture of eq. 7.7 first (see [`Work::gamma_then_poisson`]).

use super::*;

/// The rule.
pub(super) struct NegativeBinomialMgf;

/// The name of the Gamma scale mixture `τ` it introduces when `κ` reads a predictor (later
/// passes recognise that variable by it).
pub(super) const GAMMA_SCALE_MIXTURE: &str = "Gamma scale mixture";

impl Rule for NegativeBinomialMgf {
    fn apply(&self, w: &mut Work<'_>, atom: Atom<'_>, pending: &mut Vec<T>) -> Applied {
        let Atom { a, coef, core } = atom;
        // coef·log(1 + κσ(z)) with coef = −α < 0 and κ ≥ 0 free of the predictors:
        // (1 + κσ(z))^(−α) = Σ_k NB(k | α, κ/(1+κ)) σ(−z)^k.
        if let Some((kappa, z)) = one_plus_kappa_logistic(core) {
            let alpha = T::neg(coef.clone());
            let zt = z.to_tree();
            let p = w.probe(&[&kappa, &alpha]);
            if kappa.has_predictor() && p.sign_ok(&kappa, false) && p.sign_ok(&alpha, true) {
                return w
                    .gamma_then_poisson(a.clone(), &alpha, &kappa, &z, pending)
                    .map(|()| true);
            }
            if !p.sign_ok(&kappa, false) || !p.sign_ok(&alpha, true) {
                return Err(format!(
                    "(1 + κσ({zt}))^(−α) with κ = {kappa}, α = {alpha}: the negative-binomial representation needs κ ≥ 0 and α > 0"
                ));
            }
            let k = w.fresh("k");
            let prob = T::mul(vec![
                kappa.clone(),
                T::pow(T::add(vec![T::Num(1.0), kappa.clone()]), T::Num(-1.0)),
            ]);
            let tilted = T::mul(vec![
                prob.clone(),
                T::call(SxFunc::Logistic, T::neg(zt.clone())),
            ]);
            w.steps.push(format!(
                "negative-binomial MGF: (1 + {kappa}·σ({zt}))^(-{alpha}) = Σ_{k} NB({k} | {alpha}, {prob}) σ(-({zt}))^{k}  (thesis §7.2.2)"
            ));
            w.aux.push(AuxVar {
                name: k.clone(),
                prior_family: Family::NegativeBinomial {
                    shape: alpha.clone(),
                    p: prob,
                },
                conditional: Family::NegativeBinomial {
                    shape: alpha.clone(),
                    p: tilted.clone(),
                },
                // E[k | z] = α p'/(1 − p').
                mean: T::mul(vec![
                    alpha,
                    tilted.clone(),
                    T::pow(T::add(vec![T::Num(1.0), T::neg(tilted)]), T::Num(-1.0)),
                ]),
                rule: "negative-binomial MGF",
            });
            // k · log σ(−z), taken by rule 1.
            pending.push(T::mul(vec![
                T::sym(Role::Aux, &k),
                T::log(T::call(SxFunc::Logistic, T::neg(zt))),
            ]));
            return Ok(true);
        }
        Ok(false)
    }
}

impl Work<'_> {
    /// `(1 + κσ(z))^(−α)` with `κ` reading another predictor (the heteroscedastic Student-t
    /// with a latent location, thesis §7.2.2, eq. 7.7): first the Gamma scale mixture
    /// `(1 + x)^(−α) = ∫ e^(−τx) Gamma(τ | α, 1) dτ`, then the Poisson MGF on `e^(−τκσ(z))`
    /// (rule 2). Given `τ` and `z` the factor is `e^(−τκσ(z))`, Gaussian in a predictor that
    /// enters `κ` through a square, so that predictor is sampled from its conditional with the
    /// counts and Pólya-Gamma variables integrated out (the thesis' "right augmented
    /// likelihood for each variable"); the negative-binomial form is `τ` integrated out.
    pub(super) fn gamma_then_poisson(
        &mut self,
        atom: T,
        alpha: &T,
        kappa: &T,
        z: &Poly,
        pending: &mut Vec<T>,
    ) -> Result<(), String> {
        let zt = z.to_tree();
        let Some(at) = self.first_level.iter().position(|x| *x == atom) else {
            return Err(format!(
                "(1 + κσ({zt}))^(−α) with κ = {kappa} reading a predictor arose from another rewrite; the Gamma scale mixture it needs is applied only to atoms of the factor itself"
            ));
        };
        let tau = self.fresh("τ");
        let tau_sym = T::sym(Role::Aux, &tau);
        let x = T::mul(vec![kappa.clone(), T::call(SxFunc::Logistic, zt.clone())]);
        let tilted_rate = T::add(vec![T::Num(1.0), x.clone()]);
        self.steps.push(format!(
            "Gamma scale mixture: (1 + {x})^(-{alpha}) = ∫ exp(-{tau}·{x}) Gamma({tau} | {alpha}, 1) d{tau}  (thesis eq. 7.7)"
        ));
        self.aux.push(AuxVar {
            name: tau.clone(),
            prior_family: Family::Gamma {
                shape: alpha.clone(),
                rate: T::Num(1.0),
            },
            conditional: Family::Gamma {
                shape: alpha.clone(),
                rate: tilted_rate.clone(),
            },
            mean: T::mul(vec![alpha.clone(), T::pow(tilted_rate, T::Num(-1.0))]),
            rule: GAMMA_SCALE_MIXTURE,
        });
        let replacement = T::mul(vec![T::Num(-1.0), tau_sym, x]);
        // The collapsed conditional of the predictors in κ is read from the factor given τ.
        self.first_level[at] = replacement.clone();
        pending.push(replacement);
        Ok(())
    }
}

/// `log(1 + κσ(z))` or `log1p(κσ(z))` with one logistic of an affine `z`: `(κ, z)`.
fn one_plus_kappa_logistic(core: &T) -> Option<(T, Poly)> {
    let inner = match core {
        T::Call(SxFunc::Log1p, v) => v[0].clone(),
        T::Call(SxFunc::Log, v) => {
            let T::Add(terms) = &v[0] else { return None };
            let ones: Vec<usize> = terms
                .iter()
                .enumerate()
                .filter(|(_, t)| matches!(t, T::Num(x) if *x == 1.0))
                .map(|(k, _)| k)
                .collect();
            if ones.len() != 1 || terms.len() != 2 {
                return None;
            }
            terms[1 - ones[0]].clone()
        }
        _ => return None,
    };
    let factors: Vec<T> = match &inner {
        T::Mul(v) => v.clone(),
        other => vec![other.clone()],
    };
    let at: Vec<usize> = factors
        .iter()
        .enumerate()
        .filter(|(_, f)| matches!(f, T::Call(SxFunc::Logistic, _)))
        .map(|(k, _)| k)
        .collect();
    if at.len() != 1 {
        return None;
    }
    let T::Call(_, z) = &factors[at[0]] else {
        return None;
    };
    let z = affine(&z[0])?;
    let kappa = T::mul(
        factors
            .iter()
            .enumerate()
            .filter(|(k, _)| *k != at[0])
            .map(|(_, f)| f.clone())
            .collect(),
    );
    Some((kappa, z))
}
