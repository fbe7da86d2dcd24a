//! The schedule section of `gpmc check`: the Gaussian blocks, the steps of a Gibbs sweep and of
//! a CAVI iteration, and every hyperparameter's start value and updates — what each method will
//! do, printed before anything runs. Everything here is read off [`gpm_schedule::Schedule`].

use crate::Checked;
use gpm_schedule::{BlockKind, BlockSpec, CaviStep, GibbsStep, GpfStep, Schedule};
use serde_json::{json, Value};
use std::fmt::Write;

fn block_name(s: &Schedule, c: &Checked, b: gpm_schedule::BlockId) -> String {
    let spec = &s.blocks[b.0];
    let names: Vec<&str> = spec
        .latents
        .iter()
        .map(|l| c.model.latents[l.0].name.as_str())
        .collect();
    format!("B{} ({})", b.0 + 1, names.join(", "))
}

/// The blocks' names, comma-separated.
fn block_names(s: &Schedule, c: &Checked, blocks: &[gpm_schedule::BlockId]) -> String {
    let names: Vec<String> = blocks.iter().map(|b| block_name(s, c, *b)).collect();
    names.join(", ")
}

fn block_kind(b: &BlockSpec) -> &'static str {
    match (b.kind, b.per_column) {
        (BlockKind::FullGp, false) => "full GP",
        (BlockKind::FullGp, true) => "full GP, one per column",
        (BlockKind::SparseGp, false) => "sparse GP (inducing points)",
        (BlockKind::SparseGp, true) => "sparse GP (inducing points), one per column",
        (BlockKind::Dense, _) => "joint normal (dense)",
    }
}

fn hyper_names(c: &Checked, ids: &[gpm_schedule::HyperId]) -> String {
    ids.iter()
        .map(|h| c.model.hypers[h.0].name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The auxiliary variables of every factor, for the Gibbs step that draws them.
fn auxiliaries(s: &Schedule, c: &Checked) -> String {
    let mut parts = Vec::new();
    for (fp, plan) in s.factors.iter().zip(&c.plans) {
        if fp.categorical.is_some() {
            parts.push(format!(
                "factor #{}: logistic-softmax λ, n, ω per observation and class",
                fp.factor + 1
            ));
            continue;
        }
        for a in &plan.aux {
            parts.push(format!(
                "{} ~ {} (factor #{})",
                a.name,
                a.conditional.name(),
                fp.factor + 1
            ));
        }
    }
    if parts.is_empty() {
        return if s.factors.iter().any(|f| f.generic.is_some()) {
            "none".into()
        } else {
            "none (every factor is Gaussian in its predictors)".into()
        };
    }
    parts.join("; ")
}

/// The hyperparameter moves that come with drawing block `b`: the kernel's (marginal, with a
/// surrogate transition and a non-centred move where scheduled) and a dense block's normal
/// prior's (non-centred, level-held and Laplace-standardised moves).
fn block_hyper_text(s: &Schedule, c: &Checked, b: gpm_schedule::BlockId) -> String {
    let mut extra = String::new();
    if let Some(k) = s.kernel_updates.iter().find(|k| k.block == b) {
        let _ = write!(
            extra,
            ", after slice sampling {} {} {}",
            hyper_names(c, &k.hypers),
            k.slice.describe(),
            given_or_integrated(k.given_values)
        );
        if let Some(st) = &k.surrogate {
            let _ = write!(extra, "; {}", st.describe());
        }
        if !k.interweave.is_empty() {
            let _ = write!(
                extra,
                "; after the draw, {} again with the standardised values L⁻¹(f − μ₀) held \
                 instead (the non-centred move), the same way, then the auxiliaries drawn \
                 again",
                hyper_names(c, &k.hypers)
            );
        }
    }
    if let Some(d) = s.dense_updates.iter().find(|d| d.block == b) {
        dense_hyper_text(c, d, &mut extra);
    }
    extra
}

fn given_or_integrated(given: bool) -> &'static str {
    if given {
        "given the block's current values"
    } else {
        "with the block integrated out"
    }
}

/// A dense block's prior-scale moves, appended to `extra`.
fn dense_hyper_text(c: &Checked, d: &gpm_schedule::DenseScaleUpdate, extra: &mut String) {
    let _ = write!(
        extra,
        ", after slice sampling {} {} {}",
        hyper_names(c, &d.hypers),
        d.slice.describe(),
        given_or_integrated(d.given_values)
    );
    if !d.interweave.is_empty() {
        let level = if d.level.is_empty() {
            String::new()
        } else {
            let names: Vec<&str> = d
                .level
                .iter()
                .map(|li| c.model.latents[li.0].name.as_str())
                .collect();
            format!(
                " and the level held ({} shifted by the weights' least-squares \
                     projection on {} columns)",
                names.join(", "),
                if names.len() == 1 { "its" } else { "their" }
            )
        };
        let _ = write!(
            extra,
            "; after the update, {} again with the standardised values (θ − m)/s held \
                 instead{level} (the non-centred move, interwoven against the funnel), the \
                 same way, {} times, then the auxiliaries drawn again",
            hyper_names(c, &d.hypers),
            d.interweave_moves
        );
    }
    if d.laplace {
        let _ = write!(
            extra,
            "; then {} once more with the values standardised by the block's Laplace \
                 approximation at each value, ε = Lᵀ(θ − θ̂) held (for a block of at most {} \
                 values), and the auxiliaries drawn again",
            hyper_names(c, &d.hypers),
            gpm_schedule::LAPLACE_MAX_DIM
        );
    }
}

/// One NUTS transition on a block the sweep cannot draw exactly, and why NUTS.
fn nuts_step_text(s: &Schedule, c: &Checked, nb: &gpm_schedule::NutsBlock) -> String {
    format!(
        "one NUTS transition (step size and mass matrix — dense up to 100 coordinates, else diagonal — adapted in warm-up as Stan does; tree depth at most {}) on {} whitened by its prior{}, the other latents and hyperparameters held, with the log-density of factor{} {} as written{} — NUTS because {}",
        nb.max_depth,
        block_name(s, c, nb.block),
        if nb.hypers.is_empty() {
            String::new()
        } else {
            format!(" jointly with {} on their unconstrained scales", hyper_names(c, &nb.hypers))
        },
        if nb.factors.len() > 1 { "s" } else { "" },
        nb.factors
            .iter()
            .map(|f| format!("#{}", s.factors[f.0].factor + 1))
            .collect::<Vec<_>>()
            .join(", "),
        if nb.redraw {
            " (auxiliaries integrated out), then every auxiliary drawn again given it"
        } else {
            ""
        },
        nb.why
    )
}

/// The generic update: elliptical slice sampling on the log-density as written, over the
/// blocks jointly, with the blocks' own hyperparameter moves.
fn elliptical_step_text(
    s: &Schedule,
    c: &Checked,
    blocks: &[gpm_schedule::BlockId],
    factors: &[gpm_schedule::FactorId],
    steps: usize,
    fitted: bool,
) -> String {
    format!(
            "generic update of {} (factor{} {} with no augmentation): {steps} elliptical slice sampling steps{} on the log-density as written, the ellipse's Gaussian being the prior{}{}{}",
            block_names(s, c, blocks),
            if factors.len() > 1 { "s" } else { "" },
            factors
                .iter()
                .map(|f| format!("#{}", s.factors[f.0].factor + 1))
                .collect::<Vec<_>>()
                .join(", "),
            if blocks.len() > 1 { " over the blocks jointly" } else { "" },
            if s.factors.iter().any(|fp| !fp.curvature.is_empty()) {
                " times the augmented factors' Gaussian terms"
            } else {
                ""
            },
            blocks.iter().map(|b| block_hyper_text(s, c, *b)).collect::<String>(),
            if fitted {
                "; from the second quarter of warm-up the ellipses are those of a Gaussian fitted to the block's draws (covariance doubled, refitted every 50 sweeps, frozen after warm-up; blocks of up to 2 000 coordinates), and every other step slices the target over that Gaussian (generalised elliptical slice sampling: exact for any fixed reference), the others following the block's own conditional"
            } else {
                ""
            }
        )
}

fn gibbs_step_text(s: &Schedule, c: &Checked, step: &GibbsStep) -> String {
    let own_hypers = |b: gpm_schedule::BlockId| block_hyper_text(s, c, b);
    match step {
        GibbsStep::Block { block, collapsed } => format!(
            "draw {}{}{}",
            block_name(s, c, *block),
            if *collapsed {
                " from its collapsed conditional (the collapsed factors' counts and Pólya-Gamma variables integrated out)"
            } else {
                " from its Gaussian conditional"
            },
            own_hypers(*block)
        ),
        GibbsStep::KernelGroup { group } => {
            let g = &s.kernel_groups[*group];
            format!(
                "slice sample {} {} with {} integrated out, then draw them",
                hyper_names(c, &g.hypers),
                g.slice.describe(),
                block_names(s, c, &g.blocks)
            )
        }
        GibbsStep::KernelGroupLead {
            group,
            block,
            collapsed,
        } => {
            let g = &s.kernel_groups[*group];
            format!(
                "slice sample {} {} with {} integrated out and the other blocks sharing them given, then draw it{}",
                hyper_names(c, &g.hypers),
                g.slice.describe(),
                block_name(s, c, *block),
                if *collapsed { " (collapsed phase)" } else { "" }
            )
        }
        GibbsStep::LikelihoodHypers => format!(
            "slice sample {} given the latents (auxiliaries integrated out)",
            hyper_names(c, &s.likelihood_hypers)
        ),
        GibbsStep::Auxiliaries => format!("draw the auxiliaries: {}", auxiliaries(s, c)),
        GibbsStep::LevelShift {
            factor,
            block,
            redraw,
        } => format!(
            "move the common level of {}: F + δ with δ slice-sampled from the posterior (factor #{}'s auxiliaries integrated out), then {}",
            block_name(s, c, *block),
            factor.0 + 1,
            if *redraw {
                "redraw its λ, n, ω"
            } else {
                "leave its λ, n, ω to the next sweep's first step, which draws them afresh"
            }
        ),
        GibbsStep::MarginalElliptical {
            block,
            factors,
            steps,
            redraw,
            reference,
        } => format!(
            "{steps} elliptical slice sampling steps on {} along {}, with its GP prior and the log-density of factor{} {} as written (auxiliaries integrated out), then {}",
            block_name(s, c, *block),
            reference.describe(),
            if factors.len() > 1 { "s" } else { "" },
            factors
                .iter()
                .map(|f| format!("#{}", f.0 + 1))
                .collect::<Vec<_>>()
                .join(", "),
            if *redraw {
                "redraw every auxiliary given it"
            } else {
                "leave the auxiliaries to the next sweep's first step, which draws them afresh"
            }
        ),
        GibbsStep::Nuts { index } => nuts_step_text(s, c, &s.nuts_blocks[*index]),
        GibbsStep::Elliptical {
            blocks,
            factors,
            steps,
            fitted,
        } => elliptical_step_text(s, c, blocks, factors, *steps, *fitted),
        GibbsStep::ConjugateHypers => format!(
            "draw {} from their conjugate Gamma conditionals",
            s.hypers
                .iter()
                .map(|h| h.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn cavi_step_text(s: &Schedule, c: &Checked, step: &CaviStep) -> String {
    match step {
        CaviStep::Block { block } => format!(
            "local updates q(auxiliaries){} at the current moments, then q({}){}",
            if s.factors.iter().any(|f| f.generic.is_some()) {
                " and the generic factors' Gaussian sites (a damped natural-gradient step, E[ℓ'], E[ℓ''] by 20-node Gauss-Hermite quadrature)"
            } else {
                ""
            },
            block_name(s, c, *block),
            if s.blocks[block.0].per_column {
                ", column by column (fresh local updates before each)"
            } else {
                ""
            }
        ),
        CaviStep::Elbo => "ELBO and convergence test".into(),
    }
}

fn gpf_step_text(s: &Schedule, c: &Checked, step: &GpfStep) -> String {
    match step {
        GpfStep::Gradients => {
            "∇ log p(y | x) at every particle: each factor's ∂ℓ/∂η (by the CAS) carried back to the latents".into()
        }
        GpfStep::Flow { blocks } => format!(
            "move the particles of {}{} in coordinates whitened by {}{}: with more particles than coordinates they stay q's symmetric square root applied to their first draws, x = m + R z, and (m, R) take an L-BFGS step on the free energy (--particle-map symmetric, the default); otherwise, or with --particle-map affine, x ← x − ε b − ε A (x − m) (thesis ch. 6, Algorithm 2; preconditioned by the particles' covariance when it has full rank)",
            block_names(s, c, blocks),
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
            block_name(s, c, b.id),
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
    for (k, step) in s.gibbs.iter().enumerate() {
        let _ = writeln!(out, "    {}. {}", k + 1, gibbs_step_text(s, c, step));
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
                let _ = writeln!(out, "    {}. {}", k + 1, cavi_step_text(s, c, step));
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
                let _ = writeln!(out, "    {}. {}", k + 1, gpf_step_text(s, c, step));
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
    let name = |h: gpm_schedule::HyperId| s.hyper_decls[h.0].name.clone();
    for (k, line) in s.learning.describe(&name).iter().enumerate() {
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
        })).collect::<Vec<_>>(),
        "gibbs": s.gibbs.iter().map(|st| {
            let mut v = serde_json::to_value(st).unwrap_or(Value::Null);
            v["description"] = Value::String(gibbs_step_text(s, c, st));
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
                v["description"] = Value::String(cavi_step_text(s, c, st));
                v
            }).collect())
        },
        "gpf": match &s.gpf {
            Ok(steps) => Value::Array(steps.iter().map(|st| {
                let mut v = serde_json::to_value(st).unwrap_or(Value::Null);
                v["description"] = Value::String(gpf_step_text(s, c, st));
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
            "type_ii_ml": s.learning.by_gradient.iter().map(|h| s.hyper_decls[h.0].name.clone()).collect::<Vec<_>>(),
            "class_scales": s.learning.class_scales.iter().map(|h| s.hyper_decls[h.0].name.clone()).collect::<Vec<_>>(),
            "held_at_initial_values": s.learning.unavailable.iter().map(|h| s.hyper_decls[h.0].name.clone()).collect::<Vec<_>>(),
            "max_evaluations": s.learning.max_evaluations,
            "description": s.learning.describe(&|h| s.hyper_decls[h.0].name.clone()),
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
    s.sampled_hypers()
        .iter()
        .map(|h| s.hyper_decls[h.0].name.clone())
        .collect()
}
