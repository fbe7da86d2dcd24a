//! Distributed CAVI of a sparse GP classifier from the library (issue 33): the same steps
//! whether the rows come as one shard or several, the ELBO never decreasing, and what is not
//! built refused with what to do.

use serde_json::json;

fn problem(rows: usize) -> (gpmc::Checked, serde_json::Value) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    let src = std::fs::read_to_string(root.join("sparse_gp_classification.gpm")).unwrap();
    let c = gpmc::check("sparse.gpm", &src.replace("inducing = 50", "inducing = 15")).unwrap();
    let d: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("sparse_gp_classification.data.json")).unwrap(),
    )
    .unwrap();
    let x: Vec<serde_json::Value> = d["X"].as_array().unwrap()[..rows].to_vec();
    let y: Vec<serde_json::Value> = d["y"].as_array().unwrap()[..rows].to_vec();
    (c, json!({"N": rows, "D": 2, "X": x, "y": y}))
}

fn rows_of(
    c: &gpmc::Checked,
    d: &serde_json::Value,
    a: usize,
    b: usize,
) -> gpm_runtime::data::Data {
    let x = d["X"].as_array().unwrap()[a..b].to_vec();
    let y = d["y"].as_array().unwrap()[a..b].to_vec();
    gpmc::data::from_json_value(&c.model, &json!({"N": b - a, "D": 2, "X": x, "y": y})).unwrap()
}

#[test]
fn shards_give_the_same_steps_as_one_and_the_elbo_rises() {
    let (c, d) = problem(500);
    let all = rows_of(&c, &d, 0, 500);
    let gpmc::cluster::Start {
        hypers: hv,
        state: start,
        ..
    } = gpmc::cluster::start(&c, &all, 0.01).unwrap();
    let (mut one, mut three) = (start.clone(), start);
    let mut elbo = Vec::new();
    for _ in 0..8 {
        let s = gpmc::cluster::shard(&c, &all, &hv, &one, None).unwrap();
        let (next, e) = one.step(&[s]).unwrap();
        one = next;
        elbo.push(e);
        let parts: Vec<_> = [(0, 123), (123, 124), (124, 500)]
            .iter()
            .map(|&(a, b)| {
                gpmc::cluster::shard(&c, &rows_of(&c, &d, a, b), &hv, &three, None).unwrap()
            })
            .collect();
        three = three.step(&parts).unwrap().0;
    }
    for ((_, p1, h1), (_, p3, h3)) in one.q.iter().zip(&three.q) {
        let diff = p1
            .iter()
            .zip(p3)
            .chain(h1.iter().zip(h3))
            .map(|(a, b)| (a - b).abs());
        assert!(diff.fold(0.0, f64::max) < 1e-10);
    }
    assert!(
        elbo.windows(2).all(|w| w[1] >= w[0] - 1e-9 * w[0].abs()),
        "{elbo:?}"
    );
    assert!(elbo[7] - elbo[0] > 1.0, "the fit moved: {elbo:?}");
}

#[test]
fn statistics_of_another_model_are_refused() {
    let (c, d) = problem(200);
    let all = rows_of(&c, &d, 0, 200);
    let gpmc::cluster::Start {
        hypers: hv, state, ..
    } = gpmc::cluster::start(&c, &all, 0.01).unwrap();
    let mut s = gpmc::cluster::shard(&c, &all, &hv, &state, None).unwrap();
    s.blocks.push(s.blocks[0].clone());
    let e = state.step(&[s]).unwrap_err();
    assert!(e.to_string().contains("do not match the model"), "{e}");
}

/// A distributed sparse Gibbs run over `cuts` (shard boundaries): per chain, per kept sweep,
/// the block's `v`.
fn cluster_gibbs(
    c: &gpmc::Checked,
    d: &serde_json::Value,
    cuts: &[usize],
    chains: usize,
    (warmup, draws): (usize, usize),
    seed: u64,
) -> Vec<Vec<Vec<f64>>> {
    let n = *cuts.last().unwrap();
    let all = rows_of(c, d, 0, n);
    let gpmc::cluster::Start {
        hypers: hv, state, ..
    } = gpmc::cluster::start(c, &all, 0.01).unwrap();
    let rounds = gpmc::cluster::gibbs_rounds(c, &all, &hv, &state).unwrap();
    assert_eq!((rounds.sizes, rounds.at), (vec![15], vec![0]));
    assert_eq!(rounds.columns[0], "f_inducing.1");
    let shards: Vec<_> = cuts.windows(2).map(|w| rows_of(c, d, w[0], w[1])).collect();
    (0..chains)
        .map(|chain| {
            let mut kept = Vec::new();
            let mut local: Vec<Option<Vec<u8>>> = vec![None; shards.len()];
            let mut v: Option<Vec<f64>> = None;
            for sweep in 0..warmup + draws {
                let key = gpmc::cluster::RoundKey {
                    seed,
                    chain,
                    sweep,
                    round: 0,
                };
                let mut stats = Vec::new();
                for (k, rows) in shards.iter().enumerate() {
                    let previous = local[k].as_deref().map(|chain| gpmc::cluster::Previous {
                        chain,
                        inducing: v.as_deref().unwrap(),
                    });
                    let (s, next) =
                        gpmc::cluster::gibbs_round(c, rows, &hv, &state, previous, key, cuts[k])
                            .unwrap();
                    stats.push(s);
                    local[k] = Some(next);
                }
                v = Some(gpmc::cluster::gibbs_draw(&stats, key).unwrap());
                if sweep >= warmup {
                    kept.push(v.clone().unwrap());
                }
            }
            kept
        })
        .collect()
}

/// Sparse Gibbs over three uneven shards samples the posterior single-process sparse Gibbs
/// samples (the same FITC model, other random streams): every inducing coordinate's mean within
/// 4.5 Monte Carlo standard errors (combined), and its sd within 15 %. Fails (v[0]: 0.21 against
/// 1.40, se 0.01) when the shards do not redraw their auxiliaries each sweep.
#[test]
fn sparse_gibbs_over_shards_matches_the_single_process_chain() {
    let (c, d) = problem(400);
    let shards = cluster_gibbs(&c, &d, &[0, 90, 91, 400], 2, (100, 1500), 7);
    let all = rows_of(&c, &d, 0, 400);
    let config = gpm_runtime::gibbs::GibbsConfig {
        first_chain: 0,
        chains: 2,
        warmup: 100,
        draws: 1500,
        thin: 1,
        seed: 3,
        nuts: Default::default(),
    };
    let one = gpmc::infer::run_gibbs(&c, &all, &config, &|_, _| {}).unwrap();
    let layout = &one.chains[0].layout;
    let var = layout
        .vars
        .iter()
        .find(|v| matches!(v.kind, gpm_runtime::draws::VarKind::Inducing(_)))
        .unwrap();
    let moments = |chains: &[Vec<f64>]| {
        let refs: Vec<&[f64]> = chains.iter().map(|c| c.as_slice()).collect();
        let all: Vec<f64> = chains.concat();
        let mean = all.iter().sum::<f64>() / all.len() as f64;
        let sd = (all.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / all.len() as f64).sqrt();
        let ess = gpm_runtime::diagnostics::ess_mean(&refs);
        (mean, sd, sd / ess.sqrt())
    };
    for k in 0..15 {
        let a: Vec<Vec<f64>> = one
            .chains
            .iter()
            .map(|ch| ch.rows.iter().map(|r| r[var.offset + k]).collect())
            .collect();
        let b: Vec<Vec<f64>> = shards
            .iter()
            .map(|ch| ch.iter().map(|r| r[k]).collect())
            .collect();
        let (ma, sa, ea) = moments(&a);
        let (mb, sb, eb) = moments(&b);
        let se = (ea * ea + eb * eb).sqrt();
        assert!(
            (ma - mb).abs() < 4.5 * se,
            "v[{k}]: mean {ma} on one process, {mb} over shards (se {se})"
        );
        assert!((sa / sb - 1.0).abs() < 0.15, "v[{k}]: sd {sa} vs {sb}");
    }
}

/// Every row draws from a stream keyed by its global position, so another partitioning of
/// the same rows changes the draws only by the rounding of the shards' sums: one shard, two
/// and four uneven ones agree to 1e-9 over eight sweeps (with the rows keyed by their place in
/// their shard instead, they differ by 0.51).
#[test]
fn sparse_gibbs_draws_do_not_depend_on_the_partitioning() {
    let (c, d) = problem(300);
    let one = cluster_gibbs(&c, &d, &[0, 300], 2, (3, 5), 5);
    for cuts in [vec![0, 150, 300], vec![0, 1, 77, 78, 300]] {
        let other = cluster_gibbs(&c, &d, &cuts, 2, (3, 5), 5);
        for (a, b) in one.iter().flatten().zip(other.iter().flatten()) {
            let diff = a
                .iter()
                .zip(b)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f64::max);
            assert!(diff < 1e-9, "{cuts:?}: {diff}");
        }
    }
}

/// The same seed and shards give the same draws bit for bit, whichever order the shards are
/// worked through in (what a cluster's workers do); another seed other draws.
#[test]
fn sparse_gibbs_over_shards_is_a_function_of_the_seed() {
    let (c, d) = problem(200);
    let a = cluster_gibbs(&c, &d, &[0, 70, 200], 1, (3, 5), 11);
    let b = cluster_gibbs(&c, &d, &[0, 70, 200], 1, (3, 5), 11);
    let other = cluster_gibbs(&c, &d, &[0, 70, 200], 1, (3, 5), 12);
    assert_eq!(a, b);
    assert_ne!(a, other);
}

#[test]
fn sparse_gibbs_refuses_a_chain_it_cannot_continue_and_a_model_it_cannot_split() {
    let (c, d) = problem(100);
    let all = rows_of(&c, &d, 0, 100);
    let gpmc::cluster::Start {
        hypers: hv, state, ..
    } = gpmc::cluster::start(&c, &all, 0.01).unwrap();
    let key = gpmc::cluster::RoundKey {
        seed: 1,
        chain: 0,
        sweep: 0,
        round: 0,
    };
    let (_, chain) = gpmc::cluster::gibbs_round(&c, &all, &hv, &state, None, key, 0).unwrap();
    let v = vec![0.0; 15];
    let round = |rows, chain, inducing| {
        let previous = Some(gpmc::cluster::Previous { chain, inducing });
        gpmc::cluster::gibbs_round(&c, rows, &hv, &state, previous, key, 0).unwrap_err()
    };
    // Another shard's chain, a damaged one, and inducing values of another size.
    let half = rows_of(&c, &d, 0, 50);
    let e = round(&half, &chain, &v);
    assert!(e.to_string().contains("does not match its rows"), "{e}");
    let e = round(&all, &chain[..20], &v);
    assert!(e.to_string().contains("not a shard's chain"), "{e}");
    let e = round(&all, &chain, &v[..14]);
    assert!(e.to_string().contains("wrong length"), "{e}");
    // Sampled kernel hyperparameters do not split into rounds.
    let src = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../models/sparse_gp_classification.gpm"),
    )
    .unwrap()
    .replace("inducing = 50", "inducing = 15")
    .replace(
        "lengthscale : real in 0.. = 0.5;",
        "lengthscale : real in 0.. ~ gamma(2, 4);",
    );
    let sampled = gpmc::check("s.gpm", &src).unwrap();
    let gpmc::cluster::Start {
        hypers: hv2,
        state: state2,
        ..
    } = gpmc::cluster::start(&sampled, &all, 0.01).unwrap();
    let e = gpmc::cluster::gibbs_rounds(&sampled, &all, &hv2, &state2).unwrap_err();
    assert!(
        e.to_string().contains("kernel hyperparameter is sampled"),
        "{e}"
    );
}

/// The learned hyperparameters' gradient adds up over shards (to rounding: central
/// differences of sums), and one Adam step moves each by at most its step size in log θ.
#[test]
fn learned_hyperparameters_step_on_the_summed_gradient() {
    let (c, d) = problem(300);
    let src = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../models/sparse_gp_classification.gpm"),
    )
    .unwrap()
    .replace("inducing = 50", "inducing = 15")
    .replace("= 0.5;", "= learn(0.5);")
    .replace("= 3.0;", "= learn(3.0);");
    let learned = gpmc::check("l.gpm", &src).unwrap();
    let all = rows_of(&c, &d, 0, 300);
    let gpmc::cluster::Start { hypers, state, .. } =
        gpmc::cluster::start(&learned, &all, 0.05).unwrap();
    assert_eq!(state.learned().len(), 2);
    let s = gpmc::cluster::shard(&learned, &all, &hypers, &state, None).unwrap();
    let state = state.step(&[s]).unwrap().0;
    let whole = gpmc::cluster::gradient(&learned, &all, &hypers, &state, None).unwrap();
    let parts: Vec<Vec<f64>> = [(0, 100), (100, 300)]
        .iter()
        .map(|&(a, b)| {
            gpmc::cluster::gradient(&learned, &rows_of(&c, &d, a, b), &hypers, &state, None)
                .unwrap()
        })
        .collect();
    for k in 0..2 {
        let sum = parts[0][k] + parts[1][k];
        assert!(
            (sum - whole[k]).abs() < 1e-6 * whole[k].abs().max(1.0),
            "{sum} vs {whole:?}"
        );
    }
    let next = state.hyper_step(&parts, 1.0).unwrap();
    let (before, after) = (state.hypers(&hypers), next.hypers(&hypers));
    for h in state.learned() {
        let moved = (after.scalars[h.0] / before.scalars[h.0]).ln();
        assert!(moved.abs() <= 0.05 + 1e-12 && moved.abs() > 0.01, "{moved}");
    }
    assert!(state.hyper_step(&[vec![1.0]], 1.0).is_err());
}
