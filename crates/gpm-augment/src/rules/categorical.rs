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
        link,
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
    let steps = softmax_steps(label, latent, link);
    let mut plan = Plan {
        factor: k,
        form: match (link.bijective, &link.scale) {
            (false, None) => "logistic-softmax (Gamma → Poisson → Pólya-Gamma)".into(),
            (true, None) => "bijective logistic-softmax (Gamma → Poisson → Pólya-Gamma)".into(),
            (false, Some(_)) => "scaled logistic-softmax (Gamma → Poisson → Pólya-Gamma)".into(),
            (true, Some(_)) => {
                "scaled bijective logistic-softmax (Gamma → Poisson → Pólya-Gamma)".into()
            }
        },
        steps,
        aux: vec![],
        augmented: Poly::zero(),
        collapsed: vec![],
        categorical: Some(CategoricalPlan {
            label: label.clone(),
            latent: latent.clone(),
        }),
        log_c: T::Num(0.0),
        certificate: crate::plan::Certificate::pending(),
        generic: None,
    };
    // Certified for the model's own number of classes; when that is a datum, for 2 and 3
    // classes here and again for the data's number when they are read
    // ([`crate::certify::certify_categorical`], called by the driver).
    plan.certificate = match classes {
        gpm_ir::Dim::Const(c) => crate::certify::certify_categorical(*c, link),
        gpm_ir::Dim::Var(v) => {
            let (two, three) = (
                crate::certify::certify_categorical(2, link),
                crate::certify::certify_categorical(3, link),
            );
            crate::plan::Certificate {
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

/// The derivation `gpmc check` prints (thesis ch. 4 and §7.4.1-7.4.3).
fn softmax_steps(label: &str, latent: &str, link: &gpm_ir::SoftmaxLink) -> Vec<String> {
    let d = gpm_ir::FIXED_CLASS_WEIGHT;
    let (w, sum) = match (&link.scale, link.bijective) {
        (None, false) => ("σ(η_k)".to_string(), "Σ_c σ(η_c)".to_string()),
        (None, true) => (
            format!("σ(η_k), w_K = D = σ(0) = {d}"),
            "D + Σ_c σ(η_c)".into(),
        ),
        (Some(t), false) => (format!("{t}_k σ(η_k)"), format!("Σ_c {t}_c σ(η_c)")),
        (Some(t), true) => (
            format!("{t}_k σ(η_k), w_K = {t}_K D, D = σ(0) = {d}"),
            format!("{t}_K D + Σ_c {t}_c σ(η_c)"),
        ),
    };
    let th = |c: &str| {
        link.scale
            .as_ref()
            .map_or(String::new(), |t| format!("{t}_{c} "))
    };
    let mut steps = vec![
        format!(
            "{}logistic-softmax: p({label} = k) = w_k / Σ_j w_j, w_k = {w}, η = the columns of {latent}  (thesis ch. 4{})",
            if link.bijective { "bijective " } else { "" },
            match (link.bijective, link.scale.is_some()) {
                (false, false) => "",
                (true, false) => ", §7.4.2: K − 1 latent columns, the last class fixed",
                (false, true) => ", §7.4.3: class scales",
                (true, true) => ", §7.4.2-7.4.3",
            }
        ),
        if link.bijective {
            format!("1/({sum}) = ∫ exp(−λ Σ_c {}σ(η_c)) · e^(−λ {}D) dλ  (a Gamma(1, rate {}D) mixture: a proper prior on λ, §7.4.2)", th("c"), th("K"), th("K"))
        } else {
            format!("1/({sum}) = ∫ exp(−λ Σ_c {}σ(η_c)) dλ  (Gamma augmentation, improper flat prior on λ)", th("c"))
        },
        format!("exp(−λ {}σ(η_c)) = Σ_{{n_c}} Po(n_c | λ{}) σ(−η_c)^{{n_c}}  (Poisson MGF, one per latent class)", th("c"), link.scale.as_ref().map_or(String::new(), |t| format!(" {t}_c"))),
        "σ(η_c)^{y_c} σ(−η_c)^{n_c} → ω_c ~ PG(y_c + n_c, |η_c|), linear term (y_c − n_c)/2  (Pólya-Gamma)".into(),
        format!(
            "conditionals: λ | η ~ Gamma(1, {sum}) (counts integrated out, §7.4.1);  n_c | λ, η ~ Poisson(λ {}σ(−η_c));  ω_c | n, η ~ PG(y_c + n_c, |η_c|)",
            th("c")
        ),
    ];
    if let Some(t) = &link.scale {
        steps.push(format!(
            "class scales (§7.4.3): {t}_k | λ, η ~ Gamma(a + #{{{label} = k}}, b + Σ_i λ_i σ(η_ik)) under a Gamma(a, b) prior, the counts integrated out; under CAVI, learned: {t}_k = #{{{label} = k}} / Σ_i E[λ_i](1 − σ̃_ik)"
        ));
    }
    steps
}
