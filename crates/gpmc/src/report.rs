//! What `gpmc check` prints: a summary a person reads, and the same as JSON (schema in
//! `docs/cli.md`).

use crate::Checked;
use gpm_ir::*;
use serde_json::{json, Value};
use std::fmt::Write;

/// The version of the JSON schema; bumped when a field changes meaning.
pub const SCHEMA_VERSION: u32 = 1;

fn dims(shape: &Shape) -> Vec<String> {
    match shape {
        Shape::Scalar => vec![],
        Shape::Vector(n) => vec![n.to_string()],
        Shape::Matrix(r, c) => vec![r.to_string(), c.to_string()],
    }
}

/// A datum's declared value set as `check` prints it (`{-1, 1}`, `1..C`, `0..`); None for any value.
pub fn value_set(v: &ValueSet) -> Option<String> {
    let b = |b: &Bound| match b {
        Bound::Const(c) => format!("{c}"),
        Bound::Var(v) => v.clone(),
    };
    match v {
        ValueSet::Any => None,
        ValueSet::Set(s) => Some(format!(
            "{{{}}}",
            s.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
        ValueSet::Range { lo, hi } => Some(format!(
            "{}..{}",
            lo.as_ref().map(b).unwrap_or_default(),
            hi.as_ref().map(b).unwrap_or_default()
        )),
    }
}

/// A kernel in surface syntax.
pub fn kernel_text(k: &Kernel) -> String {
    match k {
        Kernel::Base { law, args } => {
            let args: Vec<String> = args
                .iter()
                .map(|a| match a {
                    KernelArg::Scalar { value } => value.to_string(),
                    KernelArg::Ard { hyper } => format!("{hyper} (ARD)"),
                })
                .collect();
            format!("{}({})", law.name(), args.join(", "))
        }
        Kernel::Sum { left, right } => format!("{} + {}", kernel_text(left), kernel_text(right)),
        Kernel::Product { left, right } => {
            format!("({}) * ({})", kernel_text(left), kernel_text(right))
        }
        Kernel::Scale { variance, kernel } => format!("{variance} * {}", kernel_text(kernel)),
    }
}

fn hyper_text(h: &Hyper) -> String {
    match &h.kind {
        HyperKind::Fixed { value } => format!("fixed at {value}"),
        HyperKind::Learn { init } => format!("learned (type-II ML), initial value {init}"),
        HyperKind::Prior { prior } => format!("prior {prior}"),
    }
}

fn latent_text(m: &gpm_ir::Model, z: &Latent) -> String {
    if let Some(f) = m
        .factors
        .iter()
        .find(|f| f.prior_of.as_ref() == Some(&z.name))
    {
        return format!(
            "{} — a flat prior times its density as factor #{} (a Gaussian scale mixture: see the factor)",
            f.source
                .trim_end_matches(" (prior)")
                .split_once(" ~ ")
                .map_or(f.source.as_str(), |(_, d)| d),
            m.factors.iter().position(|g| std::ptr::eq(g, f)).unwrap_or(0) + 1
        );
    }
    match &z.prior {
        LatentPrior::Gp {
            inputs,
            kernel,
            mean,
            inducing,
            alpha,
        } => {
            let mut s = format!("gp over rows of {inputs}, kernel {}", kernel_text(kernel));
            if *mean != Sx::Num(0.0) {
                let _ = write!(s, ", mean {mean}");
            }
            match inducing {
                Some(gpm_ir::Inducing::Count(m)) => {
                    let _ = write!(
                        s,
                        ", sparse with {m} inducing points (k-means++ on {inputs})"
                    );
                }
                Some(gpm_ir::Inducing::Points(z)) => {
                    let _ = write!(s, ", sparse with inducing inputs the rows of {z}");
                }
                Some(gpm_ir::Inducing::Adaptive { rho, max }) => {
                    let _ = write!(
                        s,
                        ", sparse with at most {max} inducing points chosen online (a row joins when its kernel correlation with every point is below {rho}: as SVI's minibatches arrive, else in one pass over {inputs})"
                    );
                }
                None => {}
            }
            if inducing.is_some() {
                let _ = write!(
                    s,
                    "; Gibbs draws it at Power-EP α = {alpha}{} (thesis §7.5), CAVI and SVI by the variational bound (α = 0)",
                    if *alpha == 1.0 { ", FITC" } else if *alpha == 0.0 { ", Titsias' q(u)" } else { "" }
                );
            }
            if let Shape::Matrix(_, c) = &z.shape {
                let _ = write!(s, " (independently for each of the {c} columns)");
            }
            s
        }
        LatentPrior::Normal { mean, scale } => {
            format!("independent normal(mean {mean}, sd {scale})")
        }
        LatentPrior::Flat => "flat (improper: zero prior precision)".into(),
    }
}

fn term_text(t: &Term) -> String {
    let read = match &t.design {
        Design::Identity => format!("{}[i]", t.latent),
        Design::Broadcast => t.latent.clone(),
        Design::Matrix { data } => format!("{data}[i] · {}", t.latent),
        Design::Gather { index } => format!("{}[{index}[i]]", t.latent),
        Design::Column { column } => format!("{}[i, {}]", t.latent, column + 1),
        Design::Entry { index } => format!("{}[{}]", t.latent, index + 1),
    };
    let read = match t.scale_by.as_deref().map(gpm_ir::parse_data_column) {
        Some((x, Some(c))) => format!("{x}[i, {}] · {read}", c + 1),
        Some((x, None)) => format!("{x}[i] · {read}"),
        None => read,
    };
    if t.coef == 1.0 {
        read
    } else {
        format!("{} {read}", t.coef)
    }
}

fn predictor_text(p: &Predictor) -> String {
    let mut s = p
        .terms
        .iter()
        .map(term_text)
        .collect::<Vec<_>>()
        .join(" + ");
    if p.offset != 0.0 {
        let _ = write!(s, " + {}", p.offset);
    }
    s
}

fn factor_formula(f: &Factor) -> String {
    match &f.form {
        FactorForm::LogDensity { log_density } => format!("log p = {log_density}"),
        FactorForm::Categorical {
            label,
            classes,
            latent,
            class_predictor,
            log_weight,
            link,
        } => format!(
            "p({label} = k) = w({latent}[i, k]) / Σ_c w({latent}[i, c]), c = 1..{classes}, with log w({class_predictor}) = {log_weight}{}{}",
            if link.bijective { "; bijective: the last class has no column and weight σ(0)" } else { "" },
            link.scale.as_ref().map_or(String::new(), |t| format!("; class k's weight scaled by {t}[k]"))
        ),
    }
}

/// The statement as the user wrote it (whitespace folded), or the IR's rendering of it.
fn source_text(c: &Checked, f: &Factor) -> String {
    if let Some(z) = &f.prior_of {
        return format!(
            "{} — the prior of `{z}` as a factor, one observation per coordinate (not an observation: no log_lik, y_rep or prediction)",
            f.source
        );
    }
    c.source
        .get(f.span.start..f.span.end)
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| f.source.clone())
}

fn line_of(src: &str, offset: usize) -> usize {
    src[..offset.min(src.len())].matches('\n').count() + 1
}

/// A Stan program's parameters: which are latent, which hyperparameters, and why.
fn stan_text(out: &mut String, front: &crate::StanFront, stan: bool) {
    let title = if stan {
        "Stan parameters"
    } else {
        "parameters (the latent/hyper split, decided by the compiler)"
    };
    let _ = writeln!(out, "\n{title} ({})", front.decisions.len());
    for d in &front.decisions {
        let role = match d.role {
            gpm_stan::Role::Latent => "latent",
            gpm_stan::Role::Hyper => "hyperparameter",
        };
        let _ = writeln!(out, "  {:<14} {role}: {}", d.name, d.why);
    }
    for n in &front.notes {
        let _ = writeln!(out, "  note: {}", n.message);
    }
}

/// A factor's plan: the form, the derivation, each auxiliary, the augmented factor and the
/// certificate.
fn plan_text(out: &mut String, p: &gpm_augment::Plan) {
    let _ = writeln!(out, "      augmentation: {}", p.form);
    for s in &p.steps {
        let _ = writeln!(out, "        {s}");
    }
    for a in &p.aux {
        let _ = writeln!(
            out,
            "        auxiliary {} ~ {} a priori; | rest ~ {}",
            a.name,
            a.prior_family.describe_prior(),
            a.conditional.describe()
        );
    }
    if p.categorical.is_none() && p.generic.is_none() {
        let _ = writeln!(
            out,
            "        augmented log-likelihood: {}",
            p.augmented.to_tree()
        );
    }
    for (pred, poly) in &p.collapsed {
        let _ = writeln!(
            out,
            "        {pred}: sampled from its collapsed Gaussian conditional, the counts and Pólya-Gamma variables integrated out: {}",
            poly.to_tree()
        );
    }
    if p.generic.is_some() {
        let _ = writeln!(
            out,
            "        certified: nothing to certify (the log-density is used as written)"
        );
        return;
    }
    let _ = writeln!(
        out,
        "        certified: {} (max relative error {:.1e} at {} points; {})",
        if p.certificate.passed { "yes" } else { "NO" },
        p.certificate.max_rel_error,
        p.certificate.points,
        p.certificate.method
    );
}

/// The human-readable summary printed by `gpmc check`.
pub fn text(c: &Checked) -> String {
    let m = &c.model;
    let mut out = String::new();
    let _ = writeln!(out, "model {}: ok", c.name);
    if let Some(front) = &c.stan {
        stan_text(&mut out, front, crate::is_stan(&c.name));
    }
    let _ = writeln!(out, "\ndata ({})", m.data.len());
    for d in &m.data {
        let elem = match d.elem {
            Elem::Int => "int",
            Elem::Real => "real",
        };
        let cons = value_set(&d.constraint)
            .map(|s| format!(" in {s}"))
            .unwrap_or_default();
        let derived = d
            .derived
            .as_ref()
            .map(|e| format!(" = {e} (transformed data)"))
            .unwrap_or_default();
        let _ = writeln!(out, "  {:<14} {elem} {}{cons}{derived}", d.name, d.shape);
    }
    let _ = writeln!(out, "\nhyperparameters ({})", m.hypers.len());
    for h in &m.hypers {
        let lower = match (h.lower, h.upper) {
            (Some(l), Some(u)) => format!(" in [{l}, {u}]"),
            (Some(l), None) => format!(" ≥ {l}"),
            (None, Some(u)) => format!(" ≤ {u}"),
            (None, None) => String::new(),
        };
        let _ = writeln!(
            out,
            "  {:<14} {}{lower}, {}",
            h.name,
            h.shape,
            hyper_text(h)
        );
    }
    let _ = writeln!(out, "\nlatent Gaussian blocks ({})", m.latents.len());
    for z in &m.latents {
        let _ = writeln!(out, "  {:<14} {} ~ {}", z.name, z.shape, latent_text(m, z));
    }
    let _ = writeln!(out, "\nlinear predictors ({})", m.predictors.len());
    for p in &m.predictors {
        let _ = writeln!(
            out,
            "  {:<14} {}[i] = {}   for i in 1..{}",
            p.name,
            p.name,
            predictor_text(p),
            p.len
        );
    }
    let _ = writeln!(out, "\nlikelihood factors ({})", m.factors.len());
    for (k, f) in m.factors.iter().enumerate() {
        let _ = writeln!(
            out,
            "  #{} (line {}) {}",
            k + 1,
            line_of(&c.source, f.span.start),
            source_text(c, f)
        );
        let _ = writeln!(out, "      {}   for i in 1..{}", factor_formula(f), f.n);
        if let Some(p) = c.plans.get(k) {
            plan_text(&mut out, p);
        }
    }
    out.push_str(&crate::schedule_report::text(c));
    out
}

fn plan_json(p: &gpm_augment::Plan) -> Value {
    json!({
        "form": p.form,
        "steps": p.steps,
        "auxiliary": p.aux.iter().map(|a| json!({
            "name": a.name,
            "rule": a.rule,
            "prior": a.prior_family.describe_prior(),
            "conditional": {"family": a.conditional.name(), "description": a.conditional.describe()},
            "mean": a.mean.to_string(),
        })).collect::<Vec<_>>(),
        "augmented_log_likelihood": if p.categorical.is_some() || p.generic.is_some() { Value::Null } else { Value::String(p.augmented.to_tree().to_string()) },
        "collapsed": p.collapsed.iter().map(|(x, _)| x.clone()).collect::<Vec<_>>(),
        "certificate": p.certificate,
        "generic": p.generic,
    })
}

/// The JSON document printed by `gpmc check --format json` (schema: `docs/cli.md`).
pub fn json(c: &Checked) -> Value {
    let m = &c.model;
    json!({
        "schema_version": SCHEMA_VERSION,
        "gpmc_version": env!("CARGO_PKG_VERSION"),
        "model": c.name,
        "ok": true,
        "data": m.data.iter().map(|d| json!({
            "name": d.name,
            "type": match d.elem { Elem::Int => "int", Elem::Real => "real" },
            "dims": dims(&d.shape),
            "constraint": value_set(&d.constraint),
            "derived": d.derived.as_ref().map(|e| e.to_string()),
        })).collect::<Vec<_>>(),
        "hypers": m.hypers.iter().map(|h| json!({
            "name": h.name,
            "dims": dims(&h.shape),
            "lower": h.lower,
            "upper": h.upper,
            "spec": h.kind,
            "description": hyper_text(h),
        })).collect::<Vec<_>>(),
        "latents": m.latents.iter().map(|z| json!({
            "name": z.name,
            "dims": dims(&z.shape),
            "prior": z.prior,
            "description": latent_text(m, z),
        })).collect::<Vec<_>>(),
        "predictors": m.predictors.iter().map(|p| json!({
            "name": p.name,
            "length": p.len.to_string(),
            "terms": p.terms,
            "offset": p.offset,
            "formula": predictor_text(p),
        })).collect::<Vec<_>>(),
        "factors": m.factors.iter().enumerate().map(|(k, f)| json!({
            "source": source_text(c, f),
            "line": line_of(&c.source, f.span.start),
            "span": {"start": f.span.start, "end": f.span.end},
            "observations": f.n.to_string(),
            "prior_of": f.prior_of,
            "predictors": f.predictors,
            "data": f.data,
            "response": f.response,
            "hypers": f.hypers,
            "form": match &f.form { FactorForm::LogDensity{..} => "log_density", FactorForm::Categorical{..} => "categorical" },
            "formula": factor_formula(f),
            "augmentation": c.plans.get(k).map(plan_json),
        })).collect::<Vec<_>>(),
        "schedule": crate::schedule_report::json(c),
        "stan": c.stan.as_ref().map(|f| json!({
            "parameters": f.decisions,
            "notes": f.notes,
        })),
        "diagnostics": [],
    })
}

/// The JSON document for a model that failed to compile.
pub fn json_failure(f: &crate::Failure) -> Value {
    json!({
        "schema_version": SCHEMA_VERSION,
        "gpmc_version": env!("CARGO_PKG_VERSION"),
        "model": f.name,
        "ok": false,
        "diagnostics": f.diagnostics,
    })
}
