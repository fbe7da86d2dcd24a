//! `gpmc plot OUT_DIR`: SVG figures of a run, drawn with plotters —
//! * Gibbs: `trace.svg` (each chosen variable's draws, one line per chain) and `rank.svg` (rank
//!   plots, Vehtari et al. 2021: the histogram of each chain's ranks among all draws, flat when
//!   the chains mix); by default `lp__` and the four variables with the largest R̂;
//! * a variational run: `elbo.svg`, the ELBO (CAVI, SVI) or free energy (GPF) per iteration;
//! * for a model whose GP has one input, `predictive.svg`: the posterior predictive band over
//!   the inputs (mean ± 2 sd of the linear predictor, or the predictive probability of a label)
//!   with the training data, from the saved fit (`gpmc predict`'s path), for every method.

use crate::summary::{is_pointwise, read_chains, ChainFiles};
use plotters::prelude::*;
use std::path::Path;

/// Why a figure cannot be drawn.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct PlotError(pub String);

fn fail(e: impl std::fmt::Display) -> PlotError {
    PlotError(e.to_string())
}

/// Width of every figure, and height of one panel.
const WIDTH: u32 = 900;
const PANEL: u32 = 200;

/// `lo..hi` widened by 5 % (and to a unit interval when flat).
fn padded(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return 0.0..1.0;
    }
    let pad = if hi > lo { 0.05 * (hi - lo) } else { 0.5 };
    (lo - pad)..(hi + pad)
}

/// The figures of the run in `dir`, as (file name, SVG text); `vars` chooses the variables of a
/// Gibbs run's trace and rank plots.
pub fn figures(dir: &Path, vars: &[String]) -> Result<Vec<(String, String)>, PlotError> {
    let summary: serde_json::Value = std::fs::read_to_string(dir.join("summary.json"))
        .map_err(|e| {
            fail(format!(
                "{}: {e} (not a gpmc output directory?)",
                dir.join("summary.json").display()
            ))
        })
        .and_then(|t| serde_json::from_str(&t).map_err(fail))?;
    if summary["method"] != "gibbs" {
        let mut out = vec![("elbo.svg".to_string(), elbo(&summary)?)];
        if dir.join(crate::fit::FIT_FILE).exists() {
            if let Some(svg) = predictive(dir)? {
                out.push(("predictive.svg".into(), svg));
            }
        }
        return Ok(out);
    }
    let files = read_chains(dir).map_err(fail)?;
    let header = &files.header;
    let columns: Vec<usize> = if vars.is_empty() {
        // lp__ and the four worst-mixing variables.
        let mut rhat: Vec<(usize, f64)> = (1..header.len())
            .filter(|&j| !is_pointwise(&header[j]))
            .map(|j| (j, files.summary(j).rhat))
            .collect();
        rhat.sort_by(|a, b| b.1.total_cmp(&a.1));
        std::iter::once(0)
            .chain(rhat.iter().take(4).map(|(j, _)| *j))
            .collect()
    } else {
        vars.iter()
            .map(|v| {
                header.iter().position(|h| h == v).ok_or_else(|| {
                    fail(format!(
                        "no variable `{v}` in the draws (they have {}, ...)",
                        header
                            .iter()
                            .take(6)
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })
            })
            .collect::<Result<_, _>>()?
    };
    let mut out = vec![
        ("trace.svg".to_string(), trace(&files, &columns)?),
        ("rank.svg".to_string(), rank(&files, &columns)?),
    ];
    if dir.join(crate::fit::FIT_FILE).exists() {
        if let Some(svg) = predictive(dir)? {
            out.push(("predictive.svg".into(), svg));
        }
    }
    Ok(out)
}

/// One panel per column: its draws against the draw index, a line per chain.
fn trace(files: &ChainFiles, columns: &[usize]) -> Result<String, PlotError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, PANEL * columns.len() as u32))
            .into_drawing_area();
        root.fill(&WHITE).map_err(fail)?;
        let chains = &files.chains;
        let draws = chains[0].len();
        for (k, (panel, &j)) in root
            .split_evenly((columns.len(), 1))
            .iter()
            .zip(columns)
            .enumerate()
        {
            let name = &files.header[j];
            let y = padded(chains.iter().flat_map(|r| r.iter().map(move |row| row[j])));
            let mut chart = ChartBuilder::on(panel)
                .caption(format!("trace of {name}"), ("sans-serif", 16))
                .margin(8)
                .margin_right(30)
                .x_label_area_size(28)
                .y_label_area_size(60)
                .build_cartesian_2d(0f64..draws.max(1) as f64, y)
                .map_err(fail)?;
            chart
                .configure_mesh()
                .x_desc("draw")
                .light_line_style(WHITE)
                .draw()
                .map_err(fail)?;
            for (c, rows) in chains.iter().enumerate() {
                let colour = Palette99::pick(c).stroke_width(1);
                chart
                    .draw_series(LineSeries::new(
                        rows.iter().enumerate().map(|(i, row)| (i as f64, row[j])),
                        colour,
                    ))
                    .map_err(fail)?
                    .label(format!("chain {}", c + 1))
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 16, y)], Palette99::pick(c))
                    });
            }
            // The legend once, on the first panel (the rank plots use the same colours).
            if k > 0 {
                continue;
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK.mix(0.3))
                .position(SeriesLabelPosition::UpperRight)
                .draw()
                .map_err(fail)?;
        }
        root.present().map_err(fail)?;
    }
    Ok(svg)
}

/// Rank plots: for each column, every chain's histogram of the ranks of its draws among all
/// draws (20 bins), with the flat line a well-mixed run gives.
fn rank(files: &ChainFiles, columns: &[usize]) -> Result<String, PlotError> {
    const BINS: usize = 20;
    let chains = &files.chains;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, PANEL * columns.len() as u32))
            .into_drawing_area();
        root.fill(&WHITE).map_err(fail)?;
        for (panel, &j) in root.split_evenly((columns.len(), 1)).iter().zip(columns) {
            let name = &files.header[j];
            // Pooled ranks (ties broken by order).
            let mut all: Vec<(f64, usize)> = chains
                .iter()
                .enumerate()
                .flat_map(|(c, r)| r.iter().map(move |row| (row[j], c)))
                .collect();
            all.sort_by(|a, b| a.0.total_cmp(&b.0));
            let total = all.len();
            let mut counts = vec![vec![0usize; BINS]; chains.len()];
            for (rank, (_, c)) in all.iter().enumerate() {
                counts[*c][(rank * BINS / total.max(1)).min(BINS - 1)] += 1;
            }
            let expected = chains[0].len() as f64 / BINS as f64;
            let top = counts.iter().flatten().copied().max().unwrap_or(1) as f64;
            let mut chart = ChartBuilder::on(panel)
                .caption(
                    format!("ranks of {name} (flat when the chains mix)"),
                    ("sans-serif", 16),
                )
                .margin(8)
                .margin_right(30)
                .x_label_area_size(28)
                .y_label_area_size(60)
                .build_cartesian_2d(0f64..1f64, 0f64..(top.max(expected) * 1.15))
                .map_err(fail)?;
            chart
                .configure_mesh()
                .x_desc("rank (fraction of all draws)")
                .y_desc("draws")
                .light_line_style(WHITE)
                .draw()
                .map_err(fail)?;
            for (c, bins) in counts.iter().enumerate() {
                // A step line over the bins.
                let steps = bins.iter().enumerate().flat_map(|(b, n)| {
                    let (x0, x1) = (b as f64 / BINS as f64, (b + 1) as f64 / BINS as f64);
                    [(x0, *n as f64), (x1, *n as f64)]
                });
                chart
                    .draw_series(LineSeries::new(steps, Palette99::pick(c).stroke_width(2)))
                    .map_err(fail)?;
            }
            chart
                .draw_series(LineSeries::new(
                    [(0.0, expected), (1.0, expected)],
                    BLACK.mix(0.5),
                ))
                .map_err(fail)?;
        }
        root.present().map_err(fail)?;
    }
    Ok(svg)
}

/// The objective of a variational run per iteration.
fn elbo(summary: &serde_json::Value) -> Result<String, PlotError> {
    let numbers = |v: &serde_json::Value| -> Vec<f64> {
        v.as_array()
            .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
            .unwrap_or_default()
    };
    let (label, points): (&str, Vec<(f64, f64)>) = match summary["method"].as_str() {
        Some("gpf") => (
            "free energy F̃ (lower is better)",
            numbers(&summary["free_energy"])
                .into_iter()
                .enumerate()
                .map(|(i, v)| (i as f64, v))
                .collect(),
        ),
        Some("svi") => (
            "ELBO estimate (minibatch)",
            summary["trace"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| Some((p["iteration"].as_f64()?, p["elbo_estimate"].as_f64()?)))
                .collect(),
        ),
        _ => (
            "ELBO",
            numbers(&summary["elbo"])
                .into_iter()
                .enumerate()
                .map(|(i, v)| (i as f64 + 1.0, v))
                .collect(),
        ),
    };
    if points.is_empty() {
        return Err(fail("the run's summary.json has no trace of its objective"));
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 2 * PANEL)).into_drawing_area();
        root.fill(&WHITE).map_err(fail)?;
        let x = padded(points.iter().map(|p| p.0));
        let y = padded(points.iter().map(|p| p.1));
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{} — {label}", summary["method"].as_str().unwrap_or("?")),
                ("sans-serif", 18),
            )
            .margin(10)
            .margin_right(30)
            .x_label_area_size(30)
            .y_label_area_size(80)
            .build_cartesian_2d(x, y)
            .map_err(fail)?;
        chart
            .configure_mesh()
            .x_desc("iteration")
            .light_line_style(WHITE)
            .draw()
            .map_err(fail)?;
        chart
            .draw_series(LineSeries::new(points, BLUE.stroke_width(2)))
            .map_err(fail)?;
        root.present().map_err(fail)?;
    }
    Ok(svg)
}

/// The predictive band over the one input of the model's GP, with the training data; `None`
/// when the model has no GP with one input, or predicting needs more than the inputs.
fn predictive(dir: &Path) -> Result<Option<String>, PlotError> {
    let reuse = crate::fit::Reuse::open(dir).map_err(fail)?;
    let schedule = crate::infer::schedule(&reuse.checked).map_err(fail)?;
    let Some(inputs) = schedule.priors.iter().find_map(|p| match p {
        gpm_schedule::BoundPrior::Gp { inputs, .. } => Some(inputs.clone()),
        _ => None,
    }) else {
        return Ok(None);
    };
    let Some(x) = reuse.train.inputs(&inputs).filter(|x| x.ncols() == 1) else {
        return Ok(None);
    };
    let x: Vec<f64> = x.column(0).iter().copied().collect();
    let range = padded(x.iter().copied());
    let grid: Vec<f64> = (0..200)
        .map(|k| range.start + (range.end - range.start) * k as f64 / 199.0)
        .collect();
    let declared_matrix = matches!(
        reuse.checked.model.datum(&inputs).map(|d| &d.shape),
        Some(gpm_ir::Shape::Matrix(..))
    );
    let values = if declared_matrix {
        serde_json::json!(grid.iter().map(|v| vec![*v]).collect::<Vec<_>>())
    } else {
        serde_json::json!(grid)
    };
    let Ok(test) = crate::data::test_from_json_value(
        &reuse.checked.model,
        &serde_json::json!({ inputs.clone(): values }),
        Some(&reuse.train),
    ) else {
        return Ok(None); // the test points need more than the inputs (covariates, exposures)
    };
    let (csv, _) = reuse.predict(&test).map_err(fail)?;
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let rows: Vec<Vec<f64>> = lines
        .map(|l| {
            l.split(',')
                .map(|c| c.parse().unwrap_or(f64::NAN))
                .collect()
        })
        .collect();
    let col = |pred: &dyn Fn(&str) -> bool| header.iter().position(|h| pred(h));
    // The response and how it is shown: a probability of its last label, or the predictor.
    let response = reuse
        .checked
        .model
        .factors
        .first()
        .and_then(|f| f.response.clone());
    let y = response
        .as_ref()
        .and_then(|r| reuse.train.vector(r))
        .map(|v| v.to_vec());
    let label_column = col(&|h| h.starts_with("p_1_"));
    let last_label = header.iter().rposition(|h| h.starts_with("p_1_"));
    // The panel's title, its band (x, low, high) and its points (x, y).
    type Panel = (String, Vec<(f64, f64, f64)>, Vec<(f64, f64)>);
    let (title, band, points): Panel = match (label_column, last_label) {
        (Some(_), Some(k)) => {
            let label: f64 = header[k].trim_start_matches("p_1_").parse().unwrap_or(1.0);
            let p: Vec<(f64, f64, f64)> = grid
                .iter()
                .zip(&rows)
                .map(|(g, r)| (*g, r[k], r[k]))
                .collect();
            let pts = y
                .iter()
                .flatten()
                .zip(&x)
                .map(|(yi, xi)| (*xi, if *yi == label { 1.0 } else { 0.0 }))
                .collect();
            (
                format!(
                    "predictive probability of {} = {label} (points: training labels)",
                    response.as_deref().unwrap_or("y")
                ),
                p,
                pts,
            )
        }
        _ => {
            let (Some(m), Some(s)) = (col(&|h| h.ends_with("_mean")), col(&|h| h.ends_with("_sd")))
            else {
                return Ok(None);
            };
            let name = header[m].trim_end_matches("_mean").to_string();
            let p = grid
                .iter()
                .zip(&rows)
                .map(|(g, r)| (*g, r[m] - 2.0 * r[s], r[m] + 2.0 * r[s]))
                .collect();
            let real = response
                .as_ref()
                .and_then(|r| reuse.checked.model.datum(r))
                .is_some_and(|d| d.elem == gpm_ir::Elem::Real);
            let pts = if real {
                y.iter()
                    .flatten()
                    .zip(&x)
                    .map(|(yi, xi)| (*xi, *yi))
                    .collect()
            } else {
                vec![]
            };
            (
                format!(
                    "posterior of {name}: mean ± 2 sd{}",
                    if real { " (points: training data)" } else { "" }
                ),
                p,
                pts,
            )
        }
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 2 * PANEL)).into_drawing_area();
        root.fill(&WHITE).map_err(fail)?;
        let yr = padded(
            band.iter()
                .flat_map(|b| [b.1, b.2])
                .chain(points.iter().map(|p| p.1)),
        );
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .margin_right(30)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(range.clone(), yr)
            .map_err(fail)?;
        chart
            .configure_mesh()
            .x_desc(inputs.as_str())
            .light_line_style(WHITE)
            .draw()
            .map_err(fail)?;
        let area: Vec<(f64, f64)> = band
            .iter()
            .map(|b| (b.0, b.2))
            .chain(band.iter().rev().map(|b| (b.0, b.1)))
            .collect();
        chart
            .draw_series(std::iter::once(Polygon::new(area, BLUE.mix(0.2))))
            .map_err(fail)?;
        chart
            .draw_series(LineSeries::new(
                band.iter().map(|b| (b.0, 0.5 * (b.1 + b.2))),
                BLUE.stroke_width(2),
            ))
            .map_err(fail)?;
        chart
            .draw_series(points.iter().map(|p| Circle::new(*p, 3, BLACK.filled())))
            .map_err(fail)?;
        root.present().map_err(fail)?;
    }
    Ok(Some(svg))
}
