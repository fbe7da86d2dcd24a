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
    let (hv, start) = gpmc::cluster::start(&c, &all).unwrap();
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
    let (hv, state) = gpmc::cluster::start(&c, &all).unwrap();
    let mut s = gpmc::cluster::shard(&c, &all, &hv, &state, None).unwrap();
    s.blocks.push(s.blocks[0].clone());
    let e = state.step(&[s]).unwrap_err();
    assert!(e.to_string().contains("do not match the model"), "{e}");
}
