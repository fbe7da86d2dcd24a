//! Per-step statistics of the Gibbs sweep (issue 51): `summary.json` reports, per chain, the
//! seconds each move took, one entry per step `gpmc check` prints — and they add up to no more
//! than the chain's time; `gpmc summary` shows them.

use crate::workflow_support::{copy_example, gpmc_ok, setup};

#[test]
fn summary_reports_the_seconds_of_each_step_of_the_sweep() {
    let dir = setup("step-times");
    copy_example(&dir, "gp_classification");
    gpmc_ok(
        &dir,
        "infer gp_classification.gpm --data gp_classification.data.json --output out --quiet \
         --chains 2 --warmup 50 --draws 50",
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out/summary.json")).unwrap())
            .unwrap();
    let timing = &summary["timing_seconds"];
    let steps = timing["gibbs_steps"].as_array().unwrap();
    let model = std::fs::read_to_string(dir.join("gp_classification.gpm")).unwrap();
    let checked = gpmc::check("gp", &model).unwrap();
    let sweep = checked.schedule.as_ref().unwrap().gibbs.len();
    assert_eq!(steps.len(), 2, "{timing}");
    for (c, chain) in steps.iter().enumerate() {
        let seconds: Vec<f64> = chain
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(seconds.len(), sweep, "{timing}");
        assert!(seconds.iter().all(|s| *s > 0.0), "{timing}");
        let total = timing["warmup"][c].as_f64().unwrap() + timing["sampling"][c].as_f64().unwrap();
        assert!(seconds.iter().sum::<f64>() <= total, "{timing}");
    }
    // `gpmc summary` shows them: one line per step, the shares adding up to 100 %.
    let shown = gpmc_ok(&dir, "summary out");
    let text = String::from_utf8_lossy(&shown.stdout);
    let section = text
        .split("time per step of the sweep")
        .nth(1)
        .unwrap_or_else(|| panic!("{text}"));
    let shares: Vec<f64> = section
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().nth(3).unwrap().parse().unwrap())
        .collect();
    assert_eq!(shares.len(), sweep, "{text}");
    assert!((shares.iter().sum::<f64>() - 100.0).abs() < 0.5, "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
