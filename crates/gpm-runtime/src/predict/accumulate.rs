//! The running sums of a prediction over posterior draws: per draw, the test predictors'
//! values, each factor's pointwise log-likelihood and its label probabilities; at the end, the
//! predictors' moments, the log predictive densities `log (1/S) Σ_s p(y*_i | η*_is)` and the
//! mean label probabilities.

use super::Prediction;
use crate::data::Data;
use crate::prepared::{Prepared, Slot};
use gpm_library::likelihood::{CategoricalLogisticSoftmax, Likelihood};
use gpm_schedule::Schedule;
use gpm_special::log_mean_exp;
use nalgebra::DVector;

/// The running sums of a prediction over draws: the predictors' first two moments, each
/// factor's pointwise log-likelihood per draw, and the label probabilities.
pub(super) struct DrawAccumulator {
    sum: Vec<Vec<f64>>,
    sumsq: Vec<Vec<f64>>,
    lp_draws: Vec<Vec<Vec<f64>>>,
    label_acc: Vec<Option<Vec<Vec<f64>>>>,
    /// Per factor that can be drawn from: a new response per draw at each test point.
    y_draws: Vec<Option<Vec<Vec<f64>>>>,
    draws: usize,
    stack: Vec<f64>,
}

impl DrawAccumulator {
    pub(super) fn new(
        schedule: &Schedule,
        te: &Prepared,
        labels: &super::Labels,
        draws: usize,
    ) -> Self {
        let nf = schedule.factors.len();
        DrawAccumulator {
            sum: te.preds.iter().map(|p| vec![0.0; p.n]).collect(),
            sumsq: te.preds.iter().map(|p| vec![0.0; p.n]).collect(),
            lp_draws: (0..nf)
                .map(|f| vec![Vec::with_capacity(draws); te.factors[f].n])
                .collect(),
            label_acc: (0..nf)
                .map(|f| {
                    labels
                        .get(f)
                        .cloned()
                        .flatten()
                        .map(|l| vec![vec![0.0; l.len()]; te.factors[f].n])
                })
                .collect(),
            y_draws: schedule
                .factors
                .iter()
                .enumerate()
                .map(|(f, fp)| {
                    (fp.replicate.is_some() || fp.categorical.is_some())
                        .then(|| vec![Vec::with_capacity(draws); te.factors[f].n])
                })
                .collect(),
            draws,
            stack: Vec::new(),
        }
    }

    /// One draw: the test latents `lat` and the hyperparameter values `hypers`.
    // The draw's parts and the prediction's fixed context, passed on once per draw.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn add_draw(
        &mut self,
        schedule: &Schedule,
        te: &Prepared,
        test: &Data,
        labels: &super::Labels,
        lat: &[DVector<f64>],
        hypers: &crate::kernels::HyperValues,
        rng: &mut rand_chacha::ChaCha8Rng,
    ) {
        let hv = hypers.scalars.as_slice();
        let (sum, sumsq, lp_draws, label_acc, y_draws, stack) = (
            &mut self.sum,
            &mut self.sumsq,
            &mut self.lp_draws,
            &mut self.label_acc,
            &mut self.y_draws,
            &mut self.stack,
        );
        let pv: Vec<Vec<f64>> = te.preds.iter().map(|p| p.eval(lat)).collect();
        for p in 0..te.preds.len() {
            for i in 0..pv[p].len() {
                sum[p][i] += pv[p][i];
                sumsq[p][i] += pv[p][i] * pv[p][i];
            }
        }
        for (f, fp) in schedule.factors.iter().enumerate() {
            if let Some(c) = &fp.categorical {
                let Some(y) = test.vector(&c.label) else {
                    continue;
                };
                let li = c.latent_id.0;
                let n = te.factors[f].n;
                let columns = te.latents[li].1 / n.max(1);
                let weights = gpm_library::likelihood::ClassWeights {
                    bijective: c.bijective,
                    theta: crate::categorical::scales(c, &hypers.vectors),
                };
                let classes = weights.classes(columns);
                let mut w = Vec::with_capacity(classes);
                for i in 0..n {
                    weights.weights(|k| lat[li][k * n + i], columns, &mut w);
                    let tot: f64 = w.iter().sum();
                    if let Some(yd) = &mut y_draws[f] {
                        yd[i].push(CategoricalLogisticSoftmax.draw(&w, None, rng));
                    }
                    // The class probabilities whether or not the label is known (a test
                    // point without its label is what prediction is for).
                    if let Some(acc) = &mut label_acc[f] {
                        for k in 0..classes.min(acc[i].len()) {
                            acc[i][k] += w[k] / tot;
                        }
                    }
                    if y[i].is_nan() {
                        continue;
                    }
                    // A label the model cannot produce has probability 0.
                    let yi = (y[i] as usize).wrapping_sub(1);
                    lp_draws[f][i].push(w.get(yi).map_or(f64::NEG_INFINITY, |wy| (wy / tot).ln()));
                }
                continue;
            }
            // An observation's density (a robust factor's loss is not one); a latent's prior
            // factor observes nothing.
            let tape = fp.observation.as_ref().or(fp.log_density.as_ref());
            let Some(tape) = tape.filter(|_| !fp.is_prior) else {
                continue;
            };
            let mut vals = vec![0.0; fp.slots.len()];
            let response_known = te.factors[f]
                .slots
                .iter()
                .all(|s| !matches!(s, Slot::Vector(v) if v.iter().any(|x| x.is_nan())));
            // With a finite label set: its labels and the response's slots, overwritten with
            // each label in turn to evaluate the likelihood there.
            let label_slots = labels
                .get(f)
                .and_then(|l| l.as_ref())
                .map(|ls| (ls, &fp.response_slots));
            for i in 0..te.factors[f].n {
                te.factors[f].fill(i, |p| pv[p][i], |_| 0.0, hv, &mut vals);
                if response_known {
                    lp_draws[f][i].push(tape.eval(&vals, stack));
                }
                if let (Some(yd), Some(r)) = (&mut y_draws[f], &fp.replicate) {
                    let params: Vec<f64> = r.params.iter().map(|t| t.eval(&vals, stack)).collect();
                    yd[i].push(r.likelihood.draw(&params, r.labels.as_deref(), rng));
                }
                if let (Some(acc), Some((ls, resp))) = (&mut label_acc[f], &label_slots) {
                    for (k, l) in ls.iter().enumerate() {
                        for &s in resp.iter() {
                            vals[s] = *l;
                        }
                        acc[i][k] += tape.eval(&vals, stack).exp();
                    }
                }
            }
        }
    }

    /// Means over the draws.
    pub(super) fn finish(self, te: &Prepared, labels: &super::Labels) -> Prediction {
        let s = self.draws as f64;
        let predictors = te
            .preds
            .iter()
            .enumerate()
            .map(|(p, pr)| {
                let mean: Vec<f64> = self.sum[p].iter().map(|x| x / s).collect();
                let var: Vec<f64> = self.sumsq[p]
                    .iter()
                    .zip(&mean)
                    .map(|(q, m)| (q / s - m * m).max(0.0))
                    .collect();
                (pr.name.clone(), mean, var)
            })
            .collect();
        let log_predictive = self
            .lp_draws
            .iter()
            .map(|per| {
                per.iter()
                    .filter(|d| !d.is_empty())
                    .map(|d| log_mean_exp(d))
                    .collect()
            })
            .collect();
        let label_probabilities = self
            .label_acc
            .into_iter()
            .enumerate()
            .map(|(f, acc)| {
                let ls = labels.get(f).cloned().flatten()?;
                let acc = acc?;
                Some((
                    ls,
                    acc.into_iter()
                        .map(|v| v.into_iter().map(|x| x / s).collect())
                        .collect(),
                ))
            })
            .collect();
        let responses = self
            .y_draws
            .iter()
            .map(|f| {
                f.as_ref().map(|points| {
                    points
                        .iter()
                        .map(|d| super::ResponseSummary::of(d))
                        .collect()
                })
            })
            .collect();
        Prediction {
            predictors,
            log_predictive,
            label_probabilities,
            draws: self.draws,
            responses,
        }
    }
}
