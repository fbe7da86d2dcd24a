//! Prediction's results as output files: predictive means, sds, quantiles and class
//! probabilities per factor, in the layout `gpmc infer --predict` and `gpmc predict` write.

use super::*;

/// The CSV and metrics of a prediction.
pub fn prediction_outputs(
    p: &gpm_runtime::predict::Prediction,
    labels: &[Option<(String, Vec<f64>)>],
    test: &gpm_runtime::data::Data,
) -> (String, serde_json::Value) {
    let n = p
        .predictors
        .iter()
        .map(|x| x.1.len())
        .chain(p.log_predictive.iter().map(|v| v.len()))
        .chain(p.label_probabilities.iter().flatten().map(|l| l.1.len()))
        .max()
        .unwrap_or(0);
    let mut header = vec!["point".to_string()];
    for (name, _, _) in &p.predictors {
        header.push(format!("{name}_mean"));
        header.push(format!("{name}_sd"));
    }
    for (f, lp) in p.log_predictive.iter().enumerate() {
        if scored(lp) {
            header.push(format!("log_predictive_{}", f + 1));
        }
    }
    for (f, lab) in p.label_probabilities.iter().enumerate() {
        if let Some((ls, _)) = lab {
            for l in ls {
                header.push(format!("p_{}_{}", f + 1, l));
            }
        }
    }
    // The predictive distribution of a new response, per factor that has one.
    let response_names: Vec<String> = (0..p.responses.len())
        .map(|f| format!("y_rep_{}", f + 1))
        .collect();
    for (f, r) in p.responses.iter().enumerate() {
        if r.is_some() {
            for stat in ["mean", "sd", "q5", "q50", "q95"] {
                header.push(format!("{}_{stat}", response_names[f]));
            }
        }
    }
    let mut csv = header.join(",") + "\n";
    for i in 0..n {
        let mut row = vec![(i + 1).to_string()];
        for (_, m, v) in &p.predictors {
            row.push(format!("{:.6e}", m.get(i).copied().unwrap_or(f64::NAN)));
            row.push(format!(
                "{:.6e}",
                v.get(i).copied().unwrap_or(f64::NAN).sqrt()
            ));
        }
        for lp in &p.log_predictive {
            if scored(lp) {
                row.push(format!("{:.6e}", lp.get(i).copied().unwrap_or(f64::NAN)));
            }
        }
        for (ls, probs) in p.label_probabilities.iter().flatten() {
            for k in 0..ls.len() {
                row.push(format!("{:.6}", probs.get(i).map_or(f64::NAN, |pr| pr[k])));
            }
        }
        for r in p.responses.iter().flatten() {
            let s = r.get(i);
            for v in [
                s.map(|s| s.mean),
                s.map(|s| s.sd),
                s.map(|s| s.q5),
                s.map(|s| s.q50),
                s.map(|s| s.q95),
            ] {
                row.push(format!("{:.6e}", v.unwrap_or(f64::NAN)));
            }
        }
        csv += &(row.join(",") + "\n");
    }
    let metrics = metrics(p, labels, test, n);
    (csv, metrics)
}

/// A factor whose test responses were left out (NaN) has no log predictive density.
fn scored(lp: &[f64]) -> bool {
    !lp.is_empty() && lp.iter().all(|v| !v.is_nan())
}

/// The metrics of a prediction over `n` test points: total and mean log predictive density,
/// the error rate where labels exist.
fn metrics(
    p: &gpm_runtime::predict::Prediction,
    labels: &[Option<(String, Vec<f64>)>],
    test: &gpm_runtime::data::Data,
    n: usize,
) -> serde_json::Value {
    let mut metrics = serde_json::Map::new();
    let lpd: f64 = p
        .log_predictive
        .iter()
        .filter(|v| scored(v))
        .flatten()
        .sum();
    let count: usize = p
        .log_predictive
        .iter()
        .filter(|v| scored(v))
        .map(|v| v.len())
        .sum();
    metrics.insert("points".into(), json!(n));
    if p.draws > 0 {
        metrics.insert("draws_used".into(), json!(p.draws));
    } else {
        metrics.insert(
            "quadrature".into(),
            json!("adaptive Gauss-Hermite, 40 nodes"),
        );
    }
    if count > 0 {
        metrics.insert("log_predictive_density".into(), json!(lpd));
        metrics.insert(
            "mean_log_predictive_density".into(),
            json!(lpd / count as f64),
        );
    } else {
        metrics.insert(
            "scored".into(),
            json!("no: the test data have no responses"),
        );
    }
    for (f, lab) in p.label_probabilities.iter().enumerate() {
        let (Some((ls, probs)), Some((name, _))) = (lab, &labels[f]) else {
            continue;
        };
        let Some(y) = test.vector(name).filter(|y| y.iter().all(|v| !v.is_nan())) else {
            continue;
        };
        let wrong = probs
            .iter()
            .zip(y)
            .filter(|(pr, yi)| {
                let best = (0..ls.len())
                    .max_by(|a, b| pr[*a].total_cmp(&pr[*b]))
                    .unwrap_or(0);
                ls[best] != **yi
            })
            .count();
        metrics.insert(
            format!("error_rate_factor_{}", f + 1),
            json!(wrong as f64 / y.len().max(1) as f64),
        );
    }
    serde_json::Value::Object(metrics)
}
