//! The auxiliary variables of a factor, once the worklist has sorted its atoms: one Pólya-Gamma
//! variable per distinct `z²` among the `log cosh(z/2)` terms (thesis ch. 3), one scale-mixture
//! variable per distinct squared residual (thesis ch. 5); and the name of the form found.

use super::mixing_law::{name_mixture, Named};
use super::*;

/// Why a variable cannot be introduced: the atom as shown, and the reason.
type Refused = (String, String);

impl Work<'_> {
    /// The Pólya-Gamma variables: `cosh(z/2)^(−b) = ∫ exp(−ω z²/2) PG(ω | b, 0) dω` for each
    /// group of `log cosh` terms with the same `z²` (checked up to the sign of `z`).
    pub(super) fn polya_gamma_variables(&mut self) -> Result<Vec<&'static str>, Refused> {
        let mut groups: Vec<(T, Poly)> = Vec::new();
        for (b, z) in std::mem::take(&mut self.logcosh) {
            if let Some(g) = groups
                .iter()
                .position(|(_, z2)| self.same_up_to_sign(z2, &z))
            {
                groups[g].0 = T::add(vec![groups[g].0.clone(), b]);
            } else {
                groups.push((b, z));
            }
        }
        let mut forms = Vec::new();
        for (b, z) in groups {
            let probe = self.probe(&[&b]);
            let zt = z.to_tree();
            if !probe.sign_ok(&b, true) {
                return Err((
                    format!("log cosh({zt}/2) with coefficient {}", T::neg(b.clone())),
                    "cosh(z/2)^(−b) is completely monotone in z² only for b > 0; here b is not positive".into(),
                ));
            }
            let name = self.fresh("ω");
            self.steps.push(format!(
                "Pólya-Gamma: cosh({zt}/2)^(-{b}) = ∫ exp(-{name}·({zt})²/2) PG({name} | {b}, 0) d{name}  (Polson, Scott & Windle 2013)"
            ));
            self.aux.push(polya_gamma(&name, &b, zt));
            let z2 = sq(&z);
            self.add_poly(&T::mul(vec![
                T::Num(-0.5),
                T::sym(Role::Aux, &name),
                z2.to_tree(),
            ]));
            forms.push("Pólya-Gamma");
        }
        Ok(forms)
    }

    /// The scale-mixture variables: `φ(r) = ∫ e^(−rω) p(ω) dω` for each residual `u` whose
    /// square `r = u²` the collected atoms read, `p` named by [`name_mixture`] (or the
    /// horseshoe's improper measure where `φ(0)` is infinite).
    pub(super) fn scale_mixture_variables(&mut self) -> Result<Vec<&'static str>, Refused> {
        let mut forms = Vec::new();
        for (u, atoms_r) in std::mem::take(&mut self.mix) {
            let ut = u.to_tree();
            let r = T::sym(Role::Aux, "r");
            let log_phi = T::add(atoms_r.clone());
            let at0 = log_phi.replace(&r, &T::Num(0.0));
            let probe = self.probe(&[&log_phi]);
            let finite0 =
                (0..probe.len()).all(|i| at0.eval(&probe.env(i)).is_some_and(|v| v.is_finite()));
            let r_expr = sq(&u).to_tree();
            let subject = || format!("log φ(r) = {log_phi}, r = ({ut})²");
            // φ normalised by φ(0) (a proper mixing law), or the horseshoe's improper measure.
            let named = if finite0 {
                self.log_c.push(at0);
                name_mixture(self, &atoms_r, &r, &r_expr)
            } else {
                horseshoe::name_improper(self, &atoms_r, &r, &r_expr).ok_or_else(|| (
                    subject(),
                    "φ(0) is not finite: the factor has no scale-mixture representation (a density that is infinite or zero where the residual vanishes)".to_string(),
                ))?
            };
            let Named {
                conditional,
                prior_family,
                proof,
                mean,
                form,
            } = named.map_err(|reason| (subject(), reason))?;
            let name = self.fresh("ω");
            // An improper mixing measure (the horseshoe's) is not normalised by φ(0) = ∞.
            let phi0 = if finite0 { " − φ₀" } else { "" };
            let prior = prior_family.describe_prior();
            let proof = proof.map(|p| format!(", {p}")).unwrap_or_default();
            self.steps.push(format!(
                "scale mixture ({form}): φ(r) = exp({log_phi}{phi0}), r = ({ut})²; φ(r) = ∫ e^(-r·{name}) p({name}) d{name}, p = {prior}{proof}  (thesis ch. 5, Theorem 1)"
            ));
            self.aux.push(AuxVar {
                name: name.clone(),
                prior_family,
                conditional,
                mean,
                rule: "scale mixture",
            });
            self.add_poly(&T::mul(vec![
                T::Num(-1.0),
                T::sym(Role::Aux, &name),
                r_expr,
            ]));
            forms.push(form);
        }
        Ok(forms)
    }

    /// The plan's form: the variables' forms, the rules that led to them first.
    pub(super) fn form_names(&self, mut forms: Vec<&'static str>) -> String {
        let any = |f: &dyn Fn(&AuxVar) -> bool| self.aux.iter().any(f);
        if any(&|a| a.rule == "probit") {
            forms.insert(0, "probit → truncated normal (Albert & Chib)");
        }
        if self.aux.is_empty() {
            forms.push("Gaussian (conjugate, no augmentation)");
        }
        if any(&|a| matches!(a.conditional, Family::Poisson { .. })) {
            forms.insert(0, "Poisson MGF →");
        }
        if any(&|a| a.rule == negative_binomial_mgf::GAMMA_SCALE_MIXTURE) {
            forms.insert(0, "Gamma scale mixture →");
        }
        if any(&|a| matches!(a.conditional, Family::NegativeBinomial { .. })) {
            forms.insert(0, "negative-binomial MGF →");
        }
        forms.join(" + ").replace("→ + ", "→ ")
    }
}

/// The Pólya-Gamma variable `name` of `cosh(c/2)^(−b)`: prior PG(b, 0), conditional PG(b, c),
/// mean `b tanh(|c|/2) / (2|c|)`.
fn polya_gamma(name: &str, b: &T, c: T) -> AuxVar {
    AuxVar {
        name: name.to_string(),
        prior_family: Family::PolyaGamma {
            b: b.clone(),
            c: T::Num(0.0),
        },
        conditional: Family::PolyaGamma {
            b: b.clone(),
            c: c.clone(),
        },
        mean: T::mul(vec![
            b.clone(),
            T::call(
                SxFunc::Tanh,
                T::mul(vec![T::Num(0.5), T::call(SxFunc::Abs, c.clone())]),
            ),
            T::pow(
                T::mul(vec![T::Num(2.0), T::call(SxFunc::Abs, c)]),
                T::Num(-1.0),
            ),
        ]),
        rule: "logistic → Pólya-Gamma",
    }
}
