//! The schedule section of `gpmc check`: the Gaussian blocks, the steps of a Gibbs sweep and of
//! a CAVI iteration, and every hyperparameter's start value and updates — what each method will
//! do, printed before anything runs. Everything here is read off [`gpm_schedule::Schedule`];
//! a Gibbs step's text is its move's ([`gpm_runtime::gibbs::describe_sweep`]).

use crate::Checked;
use gpm_schedule::{BlockKind, BlockSpec, CaviStep, GibbsStep, GpfStep, Schedule};
use serde_json::{json, Value};
use std::fmt::Write;

fn block_kind(b: &BlockSpec) -> &'static str {
    match (b.kind, b.per_column) {
        (BlockKind::FullGp, false) => "full GP",
        (BlockKind::FullGp, true) => "full GP, one per column",
        (BlockKind::SparseGp, false) => "sparse GP (inducing points)",
        (BlockKind::SparseGp, true) => "sparse GP (inducing points), one per column",
        (BlockKind::Dense, _) => "joint normal (dense)",
    }
}

fn cavi_step_text(s: &Schedule, step: &CaviStep) -> String {
    match step {
        CaviStep::Block { block } => format!(
            "local updates q(auxiliaries){} at the current moments, then q({}){}",
            if s.factors.iter().any(|f| f.generic.is_some()) {
                " and the generic factors' Gaussian sites (a damped natural-gradient step, E[ℓ'], E[ℓ''] by 20-node Gauss-Hermite quadrature)"
            } else {
                ""
            },
            s.block_name(*block),
            if s.blocks[block.0].per_column {
                ", column by column (fresh local updates before each)"
            } else {
                ""
            }
        ),
        CaviStep::Elbo => "ELBO and convergence test".into(),
    }
}

fn gpf_step_text(s: &Schedule, step: &GpfStep) -> String {
    match step {
        GpfStep::Gradients => {
            "∇ log p(y | x) at every particle: each factor's ∂ℓ/∂η (by the CAS) carried back to the latents".into()
        }
        GpfStep::Flow { blocks } => format!(
            "move the particles of {}{} in coordinates whitened by {}{}: with more particles than coordinates they stay q's symmetric square root applied to their first draws, x = m + R z, and (m, R) take an L-BFGS step on the free energy (--particle-map symmetric, the default); otherwise, or with --particle-map affine, x ← x − ε b − ε A (x − m) (thesis ch. 6, Algorithm 2; preconditioned by the particles' covariance when it has full rank)",
            s.block_names(blocks),
            if blocks.iter().any(|b| s.blocks[b.0].per_column) {
                ", all columns"
            } else {
                ""
            },
            if blocks.len() > 1 { "their priors" } else { "its prior" },
            if blocks.len() > 1 {
                ", all their coordinates as one (a factor reads them together)"
            } else {
                ""
            }
        ),
        GpfStep::FreeEnergy => {
            "empirical free energy E[φ] − ½ log|C|: an L-BFGS step backtracks until it decreases enough (Armijo), an Euler step that raised it is undone with ε halved; convergence test".into()
        }
    }
}

/// The schedule as text, appended to `gpmc check`'s summary.
pub fn text(c: &Checked) -> String {
    let mut out = String::new();
    let s = match &c.schedule {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(out, "\nschedule: the runtime cannot run this model: {e}");
            return out;
        }
    };
    let _ = writeln!(out, "\nschedule");
    let _ = writeln!(out, "  Gaussian blocks ({})", s.blocks.len());
    for b in &s.blocks {
        let _ = writeln!(
            out,
            "    {:<18} {}{}",
            s.block_name(b.id),
            block_kind(b),
            if b.collapsed {
                ", read by a collapsed predictor"
            } else if s.nuts_blocks.iter().any(|n| n.block == b.id) {
                ", generic update (a NUTS step of the sweep)"
            } else if !b.elliptical.is_empty() {
                ", generic update (elliptical slice sampling)"
            } else {
                ""
            }
        );
    }
    learning_lines(s, &mut out);
    let _ = writeln!(out, "  Gibbs sweep");
    for (k, step) in gpm_runtime::gibbs::describe_sweep(s).iter().enumerate() {
        let _ = writeln!(out, "    {}. {step}", k + 1);
    }
    match s
        .factors
        .iter()
        .find_map(|f| f.cavi_unavailable.as_ref().map(|w| (f.factor, w)))
    {
        Some((f, why)) => {
            let _ = writeln!(
                out,
                "  CAVI / SVI: not available (factor #{}: {why}); use Gibbs",
                f + 1
            );
        }
        None => {
            let _ = writeln!(out, "  CAVI iteration");
            for (k, step) in s.cavi.iter().enumerate() {
                let _ = writeln!(out, "    {}. {}", k + 1, cavi_step_text(s, step));
            }
        }
    }
    match &s.gpf {
        Ok(steps) => {
            let _ = writeln!(
                out,
                "  Gaussian particle flow iteration (hyperparameters as under CAVI)"
            );
            for (k, step) in steps.iter().enumerate() {
                let _ = writeln!(out, "    {}. {}", k + 1, gpf_step_text(s, step));
            }
        }
        Err(why) => {
            let _ = writeln!(out, "  Gaussian particle flow: not available ({why})");
        }
    }
    nuts_lines(s, &mut out);
    let _ = writeln!(out, "  hyperparameters ({})", s.hyper_steps.len());
    for h in &s.hyper_steps {
        let _ = writeln!(
            out,
            "    {:<14} starts at {} ({})",
            h.name,
            h.start,
            h.start_rule.describe()
        );
        let _ = writeln!(out, "      Gibbs: {}", h.gibbs.describe(&s.kernel_groups));
        let _ = writeln!(out, "      CAVI/SVI: {}", h.variational.describe());
    }
    out
}

/// The learning phase before the methods' iterations, where there is one.
fn learning_lines(s: &Schedule, out: &mut String) {
    if s.learning.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "  learning phase, before Gibbs, NUTS, CAVI and the particle flow (SVI learns its positive scalars along the way)"
    );
    for (k, line) in s
        .learning
        .describe(&|ids| s.hyper_names(ids))
        .iter()
        .enumerate()
    {
        let _ = writeln!(out, "    {}. {line}", k + 1);
    }
}

/// Whether NUTS runs on the original and on the augmented model, and how or why not.
fn nuts_lines(s: &Schedule, out: &mut String) {
    match gpm_runtime::nuts::refusal(s, gpm_runtime::nuts::On::Original) {
        None => {
            let moved = nuts_hypers(s);
            let hypers = if moved.is_empty() {
                String::new()
            } else {
                format!(
                    ", with {} on unconstrained scales (a normal prior's scale non-centred)",
                    moved.join(", ")
                )
            };
            let _ = writeln!(
                out,
                "  NUTS (--method nuts): on the original model, every latent block whitened by its prior{hypers}, gradients from the CAS; step size and diagonal mass matrix adapted in warm-up"
            );
        }
        Some(why) => {
            let _ = writeln!(out, "  NUTS: not available ({why})");
        }
    }
    match gpm_runtime::nuts::refusal(s, gpm_runtime::nuts::On::Augmented) {
        None => {
            let _ = writeln!(
                out,
                "  NUTS on the augmented model (--method nuts --augmented): each auxiliary a coordinate log ω, the augmented joint and its gradient from the CAS"
            );
        }
        Some(why) => {
            let _ = writeln!(out, "  NUTS on the augmented model: not available ({why})");
        }
    }
}

/// The schedule as JSON (`schedule` in `gpmc check --format json`; schema in docs/cli.md).
pub fn json(c: &Checked) -> Value {
    let s = match &c.schedule {
        Ok(s) => s,
        Err(e) => return json!({"error": e.to_string()}),
    };
    json!({
        "blocks": s.blocks.iter().map(|b| json!({
            "id": b.id.0,
            "kind": b.kind,
            "latents": b.latents.iter().map(|l| c.model.latents[l.0].name.clone()).collect::<Vec<_>>(),
            "per_column": b.per_column,
            "collapsed": b.collapsed,
            "pathwise": b.pathwise,
        })).collect::<Vec<_>>(),
        "gibbs": s.gibbs.iter().zip(gpm_runtime::gibbs::describe_sweep(s)).map(|(st, text)| {
            let mut v = serde_json::to_value(st).unwrap_or(Value::Null);
            v["description"] = Value::String(text);
            if let GibbsStep::Nuts { index } = st {
                v["nuts_block"] = serde_json::to_value(&s.nuts_blocks[*index]).unwrap_or(Value::Null);
            }
            v
        }).collect::<Vec<_>>(),
        "cavi": if s.factors.iter().any(|f| f.cavi_unavailable.is_some()) {
            Value::Null
        } else {
            Value::Array(s.cavi.iter().map(|st| {
                let mut v = serde_json::to_value(st).unwrap_or(Value::Null);
                v["description"] = Value::String(cavi_step_text(s, st));
                v
            }).collect())
        },
        "gpf": match &s.gpf {
            Ok(steps) => Value::Array(steps.iter().map(|st| {
                let mut v = serde_json::to_value(st).unwrap_or(Value::Null);
                v["description"] = Value::String(gpf_step_text(s, st));
                v
            }).collect()),
            Err(why) => json!({"unavailable": why}),
        },
        "nuts_augmented": match gpm_runtime::nuts::refusal(s, gpm_runtime::nuts::On::Augmented) {
            None => json!({"target": "the augmented model, each auxiliary a coordinate log ω"}),
            Some(why) => json!({"unavailable": why}),
        },
        "nuts": match gpm_runtime::nuts::refusal(s, gpm_runtime::nuts::On::Original) {
            None => json!({
                "target": "the original model, latents whitened by their priors",
                "hypers": nuts_hypers(s),
            }),
            Some(why) => json!({"unavailable": why}),
        },
        "learning": {
            "type_ii_ml": hyper_list(s, &s.learning.by_gradient),
            "class_scales": hyper_list(s, &s.learning.class_scales),
            "held_at_initial_values": hyper_list(s, &s.learning.unavailable),
            "max_evaluations": s.learning.max_evaluations,
            "description": s.learning.describe(&|ids| s.hyper_names(ids)),
        },
        "hypers": s.hyper_steps.iter().map(|h| json!({
            "name": h.name,
            "start": h.start,
            "start_rule": h.start_rule,
            "gibbs": h.gibbs,
            "gibbs_description": h.gibbs.describe(&s.kernel_groups),
            "variational": h.variational,
            "variational_description": h.variational.describe(),
        })).collect::<Vec<_>>(),
        "kernel_groups": s.kernel_groups,
    })
}

/// The hyperparameters NUTS moves with the latents: the sampled ones.
fn nuts_hypers(s: &Schedule) -> Vec<String> {
    hyper_list(s, &s.sampled_hypers())
}

/// Hyperparameters' declared names, as a JSON list.
fn hyper_list(s: &Schedule, ids: &[gpm_schedule::HyperId]) -> Vec<String> {
    ids.iter()
        .map(|h| s.hyper_decls[h.0].name.clone())
        .collect()
}
