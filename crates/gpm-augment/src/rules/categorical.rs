//! The logistic-softmax (thesis ch. 4): `p(y = k) = σ(η_k)/Σ_c σ(η_c)` by a Gamma
//! augmentation of `1/Σ`, a Poisson MGF per class and Pólya-Gamma variables; certified for the
//! model's own number of classes.

use super::*;

pub(super) fn recognize_categorical(model: &Model, k: usize, f: &Factor) -> Result<Plan, Refusal> {
    let FactorForm::Categorical {
        label,
        latent,
        class_predictor,
        log_weight,
        classes,
    } = &f.form
    else {
        unreachable!()
    };
    let w = T::from_sx(log_weight);
    let expected = T::log(T::call(
        SxFunc::Logistic,
        T::sym(Role::Predictor, class_predictor),
    ));
    let probe = Probe::new(model, &[&w, &expected], 12, 77);
    let refuse = |reason: String| Refusal {
        factor: k,
        atom: format!("log w({class_predictor}) = {w}"),
        normal_form: format!("log w({class_predictor}) − log Σ_c w({latent}[i, c])"),
        reason,
    };
    if !probe.equal(&w, &expected) {
        return Err(refuse(
            "only the logistic-softmax class weight w(η) = σ(η) is augmentable (thesis ch. 4); the softmax exp(η) has no such augmentation".into(),
        ));
    }
    let steps = vec![
        format!("logistic-softmax: p({label} = k) = σ(η_k) / Σ_c σ(η_c), η = the columns of {latent}  (thesis ch. 4)"),
        "1/Σ_c σ(η_c) = ∫ exp(−λ Σ_c σ(η_c)) dλ  (Gamma augmentation, improper flat prior on λ)".into(),
        "exp(−λ σ(η_c)) = Σ_{n_c} Po(n_c | λ) σ(−η_c)^{n_c}  (Poisson MGF, one per class)".into(),
        "σ(η_c)^{y_c} σ(−η_c)^{n_c} → ω_c ~ PG(y_c + n_c, |η_c|), linear term (y_c − n_c)/2  (Pólya-Gamma)".into(),
        "conditionals: λ | n ~ Gamma(1 + Σ_c n_c, C);  n_c | λ, η ~ Poisson(λ σ(−η_c));  ω_c | n, η ~ PG(y_c + n_c, |η_c|)".into(),
    ];
    let mut plan = Plan {
        factor: k,
        form: "logistic-softmax (Gamma → Poisson → Pólya-Gamma)".into(),
        steps,
        aux: vec![],
        augmented: Poly::of(&T::Num(0.0), 0).unwrap(),
        collapsed: vec![],
        categorical: Some(CategoricalPlan {
            label: label.clone(),
            latent: latent.clone(),
        }),
        log_c: T::Num(0.0),
        certificate: crate::certify::Certificate::pending(),
        generic: None,
    };
    // Certified for the model's own number of classes; when that is a datum, for 2 and 3
    // classes here and again for the data's number when they are read
    // ([`crate::certify::certify_categorical`], called by the driver).
    plan.certificate = match classes {
        gpm_ir::Dim::Const(c) => crate::certify::certify_categorical(*c),
        gpm_ir::Dim::Var(v) => {
            let (two, three) = (
                crate::certify::certify_categorical(2),
                crate::certify::certify_categorical(3),
            );
            crate::certify::Certificate {
                points: two.points + three.points,
                max_rel_error: two.max_rel_error.max(three.max_rel_error),
                passed: two.passed && three.passed,
                method: format!(
                    "λ by quadrature, Poisson sums, 2 and 3 classes (`{v}` is a datum: certified again for its value when the data are read)"
                ),
            }
        }
    };
    if !plan.certificate.passed {
        return Err(refuse(format!(
            "internal error: certification failed ({:.2e})",
            plan.certificate.max_rel_error
        )));
    }
    Ok(plan)
}
