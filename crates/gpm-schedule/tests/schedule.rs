//! The schedule itself: blocks, step order and every hyperparameter's update, decided from the
//! model alone (no data), for the structures the runtime distinguishes.

use gpm_schedule::marginal_elliptical::{
    MARGINAL_ELLIPTICAL_STEPS, MARGINAL_ELLIPTICAL_STEPS_LABELS,
};
use gpm_schedule::{
    build, start_value, BlockId, BlockKind, EllipseReference, FactorId, GibbsStep, GibbsUpdate,
    HyperId, LatentId, Schedule, StartRule, VariationalUpdate,
};

fn schedule(src: &str) -> (gpm_ir::Model, Schedule) {
    let program = gpm_syntax::parse(src).expect("parses");
    let model = gpm_ir::lower(&program).expect("lowers");
    // A factor no rule augments takes the generic update (as `gpmc::check` does).
    let plans: Vec<_> = gpm_augment::recognize(&model)
        .into_iter()
        .map(|p| p.unwrap_or_else(|r| gpm_augment::Plan::generic(&r)))
        .collect();
    let s = build(&model, &plans).expect("schedules");
    (model, s)
}

fn hyper<'a>(m: &gpm_ir::Model, s: &'a Schedule, name: &str) -> &'a gpm_schedule::HyperStep {
    let i = m
        .hypers
        .iter()
        .position(|h| h.name == name)
        .expect("declared");
    &s.hyper_steps[i]
}

#[test]
fn start_values_are_prior_means_or_modes() {
    use gpm_ir::{HyperKind, HyperPrior};
    let prior = |name: &str, p: Vec<f64>, range: (Option<f64>, Option<f64>)| HyperKind::Prior {
        prior: HyperPrior::new(name, p, range).unwrap(),
    };
    let pos = (Some(0.0), None);
    let cases = [
        (
            prior("gamma", vec![2.0, 4.0], pos),
            0.5,
            StartRule::PriorMean,
        ),
        (
            prior("inv_gamma", vec![3.0, 4.0], pos),
            2.0,
            StartRule::PriorMean,
        ),
        // No mean for shape ≤ 1: the mode β/(α+1).
        (
            prior("inv_gamma", vec![1.0, 4.0], pos),
            2.0,
            StartRule::PriorMode,
        ),
        (
            prior("inv_gamma", vec![0.5, 3.0], pos),
            2.0,
            StartRule::PriorMode,
        ),
        (
            prior("lognormal", vec![0.0, 1.0], pos),
            0.5f64.exp(),
            StartRule::PriorMean,
        ),
        (
            prior("normal", vec![-1.5, 2.0], (None, None)),
            -1.5,
            StartRule::PriorMean,
        ),
        (
            prior("half_normal", vec![2.0], pos),
            2.0 * (2.0 / std::f64::consts::PI).sqrt(),
            StartRule::PriorMean,
        ),
        (
            prior("exponential", vec![4.0], pos),
            0.25,
            StartRule::PriorMean,
        ),
        // A half-Cauchy (Cauchy truncated to its positive half) starts at its median, the scale.
        (
            prior("cauchy", vec![0.0, 5.0], pos),
            5.0,
            StartRule::PriorTruncatedMedian,
        ),
        (
            prior("uniform", vec![0.0, 1.0], (Some(0.0), Some(1.0))),
            0.5,
            StartRule::PriorMean,
        ),
        (prior("flat", vec![], pos), 1.0, StartRule::PriorFlat),
        (HyperKind::Fixed { value: 3.5 }, 3.5, StartRule::Fixed),
        (HyperKind::Learn { init: 0.7 }, 0.7, StartRule::Init),
    ];
    for (kind, want, rule) in cases {
        let (v, r) = start_value(&kind);
        assert!((v - want).abs() < 1e-12, "{kind:?}: {v} vs {want}");
        assert_eq!(r, rule, "{kind:?}");
    }
}

#[test]
fn gp_classifier_draws_auxiliaries_then_the_gp() {
    let (m, s) = schedule(
        "data { N : int; X : matrix[N, 1]; y : int[N] in {-1, 1}; }
         hyper { l : real in 0.. = 1.0; v : real in 0.. = learn(2.0); }
         latent { f : vector[N] ~ gp(X, v * sqexp(l)); }
         model { y ~ bernoulli_logit(f); }",
    );
    assert_eq!(s.blocks.len(), 1);
    assert_eq!(s.blocks[0].kind, BlockKind::FullGp);
    assert!(!s.blocks[0].per_column && !s.blocks[0].collapsed);
    assert_eq!(
        s.gibbs,
        vec![
            GibbsStep::Auxiliaries,
            GibbsStep::Block {
                block: BlockId(0),
                collapsed: false
            },
            GibbsStep::MarginalElliptical {
                block: BlockId(0),
                factors: vec![FactorId(0)],
                steps: MARGINAL_ELLIPTICAL_STEPS_LABELS,
                redraw: false,
                reference: EllipseReference::adapted(),
            }
        ]
    );
    assert_eq!(hyper(&m, &s, "l").gibbs, GibbsUpdate::Fixed);
    assert_eq!(hyper(&m, &s, "v").gibbs, GibbsUpdate::TypeIiMl);
    assert_eq!(hyper(&m, &s, "v").variational, VariationalUpdate::TypeIiMl);
    assert_eq!(hyper(&m, &s, "v").start, 2.0);
    assert!(s.sampled_hypers().is_empty());
}

#[test]
fn every_kind_of_hyperparameter_update() {
    let (m, s) = schedule(
        "data { N : int; D : int; X : matrix[N, D]; x : vector[N]; y : vector[N]; z : vector[N]; k : int[N] in 0..; }
         hyper {
           nu : real in 0.. ~ gamma(6, 1);
           ls : real in 0.. ~ lognormal(0, 0.5);
           ard : vector[D] in 0.. ~ lognormal(0, 1);
           s : real in 0.. ~ lognormal(0, 1);
           tau : real in 0.. ~ gamma(2, 1);
         }
         latent {
           f : vector[N] ~ gp(x, sqexp(ls));
           g : vector[N] ~ gp(X, sqexp(ard));
           w : vector[D] ~ normal(0, s);
         }
         model {
           y ~ student_t(nu, f, 1.0);
           z ~ normal(X * w + g, 1 / sqrt(tau));
           k ~ poisson(3.0 * logistic(g));
         }",
    );
    assert!(matches!(
        hyper(&m, &s, "nu").gibbs,
        GibbsUpdate::Likelihood { .. }
    ));
    assert_eq!(
        hyper(&m, &s, "ls").gibbs,
        GibbsUpdate::GpMarginal { block: BlockId(0) }
    );
    // ARD lengthscales read by one full GP's kernel alone: sampled entry by entry with the GP
    // integrated out.
    assert_eq!(
        hyper(&m, &s, "ard").gibbs,
        GibbsUpdate::GpMarginal { block: BlockId(1) }
    );
    // w is the third latent, in the dense block after the two GP blocks.
    assert_eq!(s.blocks[2].kind, BlockKind::Dense);
    assert_eq!(s.blocks[2].latents, vec![LatentId(2)]);
    assert_eq!(
        hyper(&m, &s, "s").gibbs,
        GibbsUpdate::DenseMarginal { block: BlockId(2) }
    );
    assert_eq!(hyper(&m, &s, "tau").gibbs, GibbsUpdate::Conjugate);
    for h in ["nu", "ls", "ard", "s", "tau"] {
        assert_eq!(hyper(&m, &s, h).variational, VariationalUpdate::Held, "{h}");
    }
    // Draws' columns: conjugate first, then the likelihood's, the GP's, the dense block's.
    let id = |n: &str| HyperId(m.hypers.iter().position(|h| h.name == n).unwrap());
    assert_eq!(
        s.sampled_hypers(),
        vec![id("tau"), id("nu"), id("ls"), id("ard"), id("s")]
    );
    assert_eq!(
        s.gibbs,
        vec![
            GibbsStep::LikelihoodHypers,
            GibbsStep::Auxiliaries,
            GibbsStep::Block {
                block: BlockId(0),
                collapsed: false
            },
            GibbsStep::Block {
                block: BlockId(1),
                collapsed: false
            },
            // g's factors: the Gaussian and the Pólya-Gamma-augmented Poisson; w's draw reads
            // the auxiliaries next, so the steps redraw them.
            GibbsStep::MarginalElliptical {
                block: BlockId(1),
                factors: vec![FactorId(1), FactorId(2)],
                steps: MARGINAL_ELLIPTICAL_STEPS,
                redraw: true,
                // g's kernel is sampled: a fitted reference would stand still while K(θ) moves.
                reference: EllipseReference::Prior,
            },
            GibbsStep::Block {
                block: BlockId(2),
                collapsed: false
            },
            GibbsStep::ConjugateHypers,
        ]
    );
}

#[test]
fn shared_kernels_are_integrated_unless_a_factor_couples_the_gps() {
    let separate = "data { N : int; x : vector[N]; y1 : vector[N]; y2 : vector[N]; }
         hyper { l : real in 0.. ~ lognormal(0, 0.5); }
         latent { f1 : vector[N] ~ gp(x, sqexp(l)); f2 : vector[N] ~ gp(x, sqexp(l)); }
         model { y1 ~ normal(f1, 0.3); y2 ~ normal(f2, 0.3); }";
    let (m, s) = schedule(separate);
    assert_eq!(
        hyper(&m, &s, "l").gibbs,
        GibbsUpdate::KernelGroup { group: 0 }
    );
    let g = &s.kernel_groups[0];
    assert!(g.integrated && g.lead.is_none());
    assert_eq!(g.blocks, vec![BlockId(0), BlockId(1)]);
    assert_eq!(
        s.gibbs,
        vec![GibbsStep::Auxiliaries, GibbsStep::KernelGroup { group: 0 }]
    );

    let coupled = "data { N : int; x : vector[N]; y : vector[N]; }
         hyper { l : real in 0.. ~ lognormal(0, 0.5); v : real in 0.. ~ gamma(2, 2); }
         latent { f1 : vector[N] ~ gp(x, sqexp(l)); f2 : vector[N] ~ gp(x, v * sqexp(l)); }
         model { y ~ normal(f1 + f2, 0.3); }";
    let (m, s) = schedule(coupled);
    let g = &s.kernel_groups[0];
    assert!(!g.integrated);
    assert_eq!(g.lead, Some(BlockId(0)));
    // f2's own variance joins the group's step.
    assert_eq!(
        hyper(&m, &s, "v").gibbs,
        GibbsUpdate::KernelGroup { group: 0 }
    );
    assert!(s.kernel_updates.is_empty());
    assert_eq!(g.hypers.len(), 2);
    assert_eq!(
        s.gibbs,
        vec![
            GibbsStep::Auxiliaries,
            GibbsStep::KernelGroupLead {
                group: 0,
                block: BlockId(0),
                collapsed: false
            },
            GibbsStep::Block {
                block: BlockId(1),
                collapsed: false
            },
        ]
    );
}

#[test]
fn matrix_latent_columns_share_their_kernel() {
    let (m, s) = schedule(
        "data { N : int; C : int; X : matrix[N, 2]; y : int[N] in 1..C; }
         hyper { l : real in 0.. ~ lognormal(0, 0.5); }
         latent { F : matrix[N, C] ~ gp(X, sqexp(l)); }
         model { y ~ categorical_logistic_softmax(F); }",
    );
    assert!(s.blocks[0].per_column);
    assert_eq!(
        hyper(&m, &s, "l").gibbs,
        GibbsUpdate::KernelGroup { group: 0 }
    );
    assert!(s.kernel_groups[0].integrated);
}

#[test]
fn collapsed_blocks_come_first_and_normals_split() {
    let (_, s) = schedule(
        "data { N : int; y : vector[N]; }
         hyper { lambda : real in 0.. = 4.0; }
         latent { f : real ~ normal(0, 1); g : real ~ normal(0, 1); }
         model { for i in 1..N { y[i] ~ normal(f, 1 / sqrt(lambda * logistic(g))); } }",
    );
    // f is read by the collapsed predictor: a dense block of its own, drawn first.
    assert_eq!(s.blocks.len(), 2);
    assert!(s.blocks[0].collapsed && !s.blocks[1].collapsed);
    assert_eq!(
        s.gibbs,
        vec![
            GibbsStep::Block {
                block: BlockId(0),
                collapsed: true
            },
            GibbsStep::Auxiliaries,
            GibbsStep::Block {
                block: BlockId(1),
                collapsed: false
            },
        ]
    );
}

#[test]
fn every_example_model_schedules_every_hyperparameter() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("gpm") {
            continue;
        }
        let (m, s) = schedule(&std::fs::read_to_string(&p).unwrap());
        assert_eq!(s.hyper_steps.len(), m.hypers.len(), "{p:?}");
        // Every latent is in exactly one block.
        for li in 0..m.latents.len() {
            let owners = s
                .blocks
                .iter()
                .filter(|b| b.latents.contains(&LatentId(li)))
                .count();
            assert_eq!(owners, 1, "{p:?}: latent {li}");
        }
        // Every block is visited by exactly one Gibbs step.
        for b in &s.blocks {
            let visits =
                s.gibbs
                    .iter()
                    .filter(|st| match st {
                        GibbsStep::Block { block, .. }
                        | GibbsStep::KernelGroupLead { block, .. } => *block == b.id,
                        GibbsStep::KernelGroup { group } => {
                            s.kernel_groups[*group].blocks.contains(&b.id)
                        }
                        GibbsStep::Elliptical { blocks, .. } => blocks.contains(&b.id),
                        _ => false,
                    })
                    .count();
            assert_eq!(visits, 1, "{p:?}: block {:?}", b.id);
        }
        assert_eq!(
            s.gibbs
                .iter()
                .filter(|st| **st == GibbsStep::Auxiliaries)
                .count(),
            1
        );
        n += 1;
    }
    assert!(n >= 13, "{n} models");
}

#[test]
fn svi_learns_positive_scalars_only() {
    let (m, s) = schedule(
        "data { N : int; D : int; X : matrix[N, D]; y : int[N] in {-1, 1}; }
         hyper { ard : vector[D] in 0.. = learn(1.0); v : real in 0.. = learn(2.0); c : real = learn(0.5); }
         latent { f : vector[N] ~ gp(X, v * sqexp(ard)); b : real ~ normal(c, 1); }
         model { y ~ bernoulli_logit(f + b); }",
    );
    assert_eq!(hyper(&m, &s, "v").variational, VariationalUpdate::TypeIiMl);
    for h in ["ard", "c"] {
        assert_eq!(
            hyper(&m, &s, h).variational,
            VariationalUpdate::TypeIiMlCaviOnly,
            "{h}"
        );
        assert_eq!(hyper(&m, &s, h).gibbs, GibbsUpdate::TypeIiMl, "{h}");
    }
}

/// A factor no rule augments: the blocks it reads take the generic update, jointly when no
/// augmented factor couples them; a kernel hyperparameter of such a block is sampled given
/// its values; the variational update is the generic one (CAS derivatives).
#[test]
fn a_factor_without_augmentation_takes_the_generic_update() {
    let (m, s) = schedule(
        "data { N : int; x : vector[N]; y : int[N] in 0..; }
         hyper { ell : real in 0.. ~ gamma(2, 2); }
         latent { f : vector[N] ~ gp(x, sqexp(ell)); b : real ~ normal(0, 2); }
         model { for i in 1..N { y[i] ~ poisson(exp(f[i] + b)); } }",
    );
    assert!(s.factors[0].generic.is_some());
    assert!(s.factors[0].curvature.is_empty() && s.factors[0].aux.is_empty());
    let ell = hyper(&m, &s, "ell");
    assert!(
        matches!(ell.gibbs, GibbsUpdate::GivenValues { block } if block == BlockId(0)),
        "{:?}",
        ell.gibbs
    );
    let steps: Vec<&GibbsStep> = s
        .gibbs
        .iter()
        .filter(|st| matches!(st, GibbsStep::Elliptical { .. }))
        .collect();
    assert_eq!(steps.len(), 1, "{:?}", s.gibbs);
    let GibbsStep::Elliptical {
        blocks, factors, ..
    } = steps[0]
    else {
        unreachable!()
    };
    assert_eq!(blocks, &vec![BlockId(0), BlockId(1)]);
    assert_eq!(factors.len(), 1);
    let g = s.factors[0].generic.as_ref().unwrap();
    assert!(g.variational.is_ok(), "{:?}", g.variational);
    // A second, augmented factor coupling f and b: separate elliptical steps per block.
    let (_, s) = schedule(
        "data { N : int; x : vector[N]; y : int[N] in 0..; z : int[N] in {-1, 1}; }
         latent { f : vector[N] ~ gp(x, sqexp(1.0)); b : real ~ normal(0, 2); }
         model { for i in 1..N { y[i] ~ poisson(exp(f[i] + b)); }
                 for i in 1..N { target += log(logistic(z[i] * (f[i] + b))); } }",
    );
    let blocks: Vec<Vec<BlockId>> = s
        .gibbs
        .iter()
        .filter_map(|st| match st {
            GibbsStep::Elliptical { blocks, .. } => Some(blocks.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(blocks, vec![vec![BlockId(0)], vec![BlockId(1)]]);
}

/// A logistic-softmax factor's latent matrix gets its translation move right after its draw —
/// unless another factor reads the matrix too (then `p(F | y)` is not the GP prior times this
/// factor alone, which is what the move samples from).
#[test]
fn a_softmax_matrix_read_by_its_factor_alone_gets_a_level_move() {
    let head =
        "data { N : int; D : int; C : int; X : matrix[N, D]; y : int[N] in 1..C; z : vector[N]; }
                latent { F : matrix[N, C] ~ gp(X, sqexp(1.0)); }";
    let (_, alone) = schedule(&format!(
        "{head} model {{ y ~ categorical_logistic_softmax(F); }}"
    ));
    let at = alone
        .gibbs
        .iter()
        .position(|s| matches!(s, GibbsStep::LevelShift { .. }))
        .expect("a level move");
    assert!(matches!(
        alone.gibbs[at - 1],
        GibbsStep::Block {
            collapsed: false,
            ..
        }
    ));
    // Followed only by the marginal elliptical steps (which do not read the auxiliaries
    // either) in a sweep that opens on the auxiliaries' draw: no redraw of its own.
    assert_eq!(at + 2, alone.gibbs.len());
    assert_eq!(alone.gibbs[0], GibbsStep::Auxiliaries);
    assert!(matches!(
        alone.gibbs[at],
        GibbsStep::LevelShift { redraw: false, .. }
    ));
    assert!(matches!(
        alone.gibbs[at + 1],
        GibbsStep::MarginalElliptical { redraw: false, .. }
    ));
    // With its kernel's hyperparameters sampled, F is drawn by its kernel group's step (θ with
    // F integrated out, then F): the moves follow that step.
    let (_, sampled) = schedule(
        "data { N : int; D : int; C : int; X : matrix[N, D]; y : int[N] in 1..C; }
         hyper { l : real in 0.. ~ gamma(4.0, 2.0); v : real in 0.. ~ gamma(2.0, 2.0); }
         latent { F : matrix[N, C] ~ gp(X, v * sqexp(l)); }
         model { y ~ categorical_logistic_softmax(F); }",
    );
    assert!(
        matches!(
            sampled.gibbs.as_slice(),
            [
                GibbsStep::Auxiliaries,
                GibbsStep::KernelGroup { .. },
                GibbsStep::LevelShift { redraw: false, .. },
                GibbsStep::MarginalElliptical { redraw: false, .. },
            ]
        ),
        "{:?}",
        sampled.gibbs
    );
    let (_, shared) = schedule(&format!(
        "{head} model {{ y ~ categorical_logistic_softmax(F); for i in 1..N {{ z[i] ~ normal(F[i, 1], 1.0); }} }}"
    ));
    assert!(
        !shared
            .gibbs
            .iter()
            .any(|s| matches!(s, GibbsStep::LevelShift { .. })),
        "{:?}",
        shared.gibbs
    );
    // Nothing else has one.
    let (_, gp) = schedule(
        "data { N : int; x : vector[N]; y : int[N] in {-1, 1}; }
         latent { f : vector[N] ~ gp(x, sqexp(1.0)); }
         model { y ~ bernoulli_logit(f); }",
    );
    assert!(!gp
        .gibbs
        .iter()
        .any(|s| matches!(s, GibbsStep::LevelShift { .. })));
}

/// Marginal elliptical steps follow the draw of a full GP block whose factors' augmentation
/// mixes slowly under blocked Gibbs (Pólya-Gamma: logistic, Poisson, logistic-softmax), and no
/// other: not under a scale mixture (Student-t), not a Gaussian likelihood, not a block read by
/// a collapsed predictor. They redraw the auxiliaries unless the sweep's next reader of them is
/// the next sweep's opening draw.
#[test]
fn marginal_elliptical_steps_follow_slowly_mixing_gp_blocks_only() {
    let steps = |lik: &str, extra: &str| {
        let (_, s) = schedule(&format!(
            "data {{ N : int; x : vector[N]; y : int[N] in {{-1, 1}}; c : int[N] in 0..; z : vector[N]; }}
             latent {{ f : vector[N] ~ gp(x, sqexp(1.0)); {extra} }}
             model {{ {lik} }}"
        ));
        s.gibbs
    };
    let marginal = |g: &[GibbsStep]| {
        g.iter()
            .filter_map(|s| match s {
                GibbsStep::MarginalElliptical {
                    factors,
                    steps,
                    redraw,
                    ..
                } => Some((factors.len(), *steps, *redraw)),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    let logistic = steps("y ~ bernoulli_logit(f);", "");
    assert_eq!(
        marginal(&logistic),
        vec![(1, MARGINAL_ELLIPTICAL_STEPS_LABELS, false)],
        "{logistic:?}"
    );
    assert!(matches!(
        logistic.last(),
        Some(GibbsStep::MarginalElliptical { .. })
    ));
    // Labels under a sampled kernel keep the default number of steps.
    let (_, sampled_labels) = schedule(
        "data { N : int; x : vector[N]; y : int[N] in {-1, 1}; }
         hyper { l : real in 0.. ~ gamma(2.0, 1.0); }
         latent { f : vector[N] ~ gp(x, sqexp(l)); }
         model { y ~ bernoulli_logit(f); }",
    );
    assert_eq!(
        marginal(&sampled_labels.gibbs),
        vec![(1, MARGINAL_ELLIPTICAL_STEPS, false)],
        "{:?}",
        sampled_labels.gibbs
    );
    // A count response keeps the default number of steps; labels take more.
    assert_eq!(
        marginal(&steps("c ~ poisson(3.0 * logistic(f));", "")),
        vec![(1, MARGINAL_ELLIPTICAL_STEPS, false)]
    );
    // The Student-t's Gamma scale mixture: steps only along a fitted reference, so only under a
    // fixed prior; the Laplace's Lévy mixture and a Gaussian factor: none.
    assert_eq!(
        marginal(&steps("z ~ student_t(4.0, f, 0.5);", "")),
        vec![(1, MARGINAL_ELLIPTICAL_STEPS, false)]
    );
    let (_, sampled) = schedule(
        "data { N : int; x : vector[N]; z : vector[N]; }
         hyper { l : real in 0.. ~ gamma(2.0, 1.0); }
         latent { f : vector[N] ~ gp(x, sqexp(l)); }
         model { z ~ student_t(4.0, f, 0.5); }",
    );
    assert!(marginal(&sampled.gibbs).is_empty(), "{:?}", sampled.gibbs);
    assert!(marginal(&steps("z ~ laplace(f, 0.5);", "")).is_empty());
    assert!(marginal(&steps("z ~ normal(f, 0.5);", "")).is_empty());
    // A factor that also reads a block drawn from its collapsed conditional (the heteroscedastic
    // GP's mean `f`): the precision GP `g` gets the steps, and they redraw the auxiliaries
    // (the sweep opens with `f`'s draw, not theirs).
    let (_, hetero) = schedule(
        "data { N : int; x : vector[N]; z : vector[N]; }
         latent { f : vector[N] ~ gp(x, sqexp(1.0)); g : vector[N] ~ gp(x, sqexp(1.0)); }
         model { z ~ normal(f, 1 / sqrt(20.0 * logistic(g))); }",
    );
    assert_eq!(
        marginal(&hetero.gibbs),
        vec![(1, MARGINAL_ELLIPTICAL_STEPS, true)],
        "{:?}",
        hetero.gibbs
    );
    // A second block drawn after the first reads the auxiliaries: the steps redraw them.
    let two = steps(
        "y ~ bernoulli_logit(f); for i in 1..N { z[i] ~ normal(g[i], 0.5); }",
        "g : vector[N] ~ gp(x, sqexp(1.0));",
    );
    let at = two
        .iter()
        .position(|s| matches!(s, GibbsStep::MarginalElliptical { .. }))
        .expect("steps after f's draw");
    assert!(at + 1 < two.len(), "{two:?}");
    assert_eq!(
        marginal(&two),
        vec![(1, MARGINAL_ELLIPTICAL_STEPS_LABELS, true)],
        "{two:?}"
    );
    // The reference: fitted where the block is one column under a fixed prior; the prior's
    // under a sampled kernel and for the columns of a matrix latent.
    let reference = |src: &str| {
        let (_, s) = schedule(src);
        s.gibbs
            .iter()
            .find_map(|st| match st {
                GibbsStep::MarginalElliptical { reference, .. } => Some(*reference),
                _ => None,
            })
            .expect("marginal elliptical steps")
    };
    assert_eq!(
        reference(
            "data { N : int; x : vector[N]; y : int[N] in {-1, 1}; }
             latent { f : vector[N] ~ gp(x, sqexp(1.0)); }
             model { y ~ bernoulli_logit(f); }"
        ),
        EllipseReference::adapted()
    );
    assert_eq!(
        reference(
            "data { N : int; x : vector[N]; y : int[N] in {-1, 1}; }
             hyper { l : real in 0.. ~ gamma(2.0, 1.0); }
             latent { f : vector[N] ~ gp(x, sqexp(l)); }
             model { y ~ bernoulli_logit(f); }"
        ),
        EllipseReference::Prior
    );
    assert_eq!(
        reference(
            "data { N : int; C : int; x : vector[N]; y : int[N] in 1..C; }
             latent { F : matrix[N, C] ~ gp(x, sqexp(1.0)); }
             model { y ~ categorical_logistic_softmax(F); }"
        ),
        EllipseReference::Prior
    );
}
