//! Type-II maximum likelihood: hyperparameters declared `learn(init)` are set to maximise the
//! converged ELBO of the augmented model (a lower bound on the log marginal likelihood), over
//! their logarithms (they are positive scales), by the Nelder-Mead simplex — each evaluation
//! rebuilds the kernel matrices and reruns CAVI to convergence, so no gradient is needed.

use crate::cavi::{self, CaviConfig, CaviResult};
use crate::data::Data;
use crate::kernels::HyperValues;
use crate::progress;
use crate::RuntimeError;
use gpm_schedule::{HyperId, Schedule};

/// One coordinate being learned: a scalar hyperparameter or one entry of an ARD vector.
#[derive(Debug, Clone, PartialEq)]
pub enum Coord {
    /// A scalar.
    Scalar(HyperId),
    /// Entry `k` of a vector.
    Entry(HyperId, usize),
}

/// The result of learning.
#[derive(Debug, Clone)]
pub struct Learned {
    /// The optimised values.
    pub hypers: HyperValues,
    /// The CAVI fit at the optimum.
    pub fit: CaviResult,
    /// Best ELBO after each simplex iteration.
    pub trace: Vec<f64>,
    /// ELBO evaluations.
    pub evaluations: usize,
    /// Whether the simplex stopped at the cap on evaluations rather than by converging.
    pub capped: bool,
}

fn set(h: &mut HyperValues, coords: &[Coord], logs: &[f64]) {
    for (c, l) in coords.iter().zip(logs) {
        match c {
            Coord::Scalar(n) => h.set_scalar(*n, l.exp()),
            Coord::Entry(n, k) => {
                if let Some(v) = h.vectors.get_mut(n.0).and_then(|v| v.get_mut(*k)) {
                    *v = l.exp();
                }
            }
        }
    }
}

/// Maximise the ELBO over the log of the given coordinates, starting from `start`.
pub fn learn(
    schedule: &Schedule,
    data: &Data,
    start: &HyperValues,
    coords: &[Coord],
    max_evals: usize,
) -> Result<Learned, RuntimeError> {
    let config = CaviConfig {
        tolerance: 1e-10,
        max_iter: 1000,
    };
    let x0: Vec<f64> = coords
        .iter()
        .map(|c| {
            match c {
                Coord::Scalar(n) => start.scalar(*n),
                Coord::Entry(n, k) => start.vector(*n).and_then(|v| v.get(*k).copied()),
            }
            .map(f64::ln)
            .ok_or_else(|| {
                RuntimeError::MissingData(format!("no start value for the learned {c:?}"))
            })
        })
        .collect::<Result<_, _>>()?;
    let mut evaluations = 0;
    let mut best = f64::INFINITY;
    // An evaluation that cannot succeed anywhere (too large for memory, or stopped) ends the
    // search with its error, rather than counting as −∞ like a kernel that cannot be factored.
    let fatal: std::cell::RefCell<Option<RuntimeError>> = std::cell::RefCell::new(None);
    // The latents' moments at the best evaluation so far (`cavi::run_from`): the simplex's
    // next points lie around its best vertex (on a 300-point GP classifier, 4 857 CAVI
    // iterations over 53 evaluations, against 5 242 from the last evaluation and 7 347 from
    // the prior).
    let warm: std::cell::RefCell<
        Option<Vec<(String, nalgebra::DVector<f64>, nalgebra::DVector<f64>)>>,
    > = std::cell::RefCell::new(None);
    let halt = || -> Result<(), RuntimeError> {
        crate::stop::check("type-II maximum likelihood (learn)")?;
        match fatal.borrow_mut().take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    };
    let mut eval = |x: &[f64]| -> f64 {
        evaluations += 1;
        let mut h = start.clone();
        set(&mut h, coords, x);
        // A failure (e.g. a kernel matrix that cannot be factored) counts as −∞; a stop
        // ends the search (below). Each run starts from the best one's latents (warm).
        let run = {
            let from = warm.borrow();
            progress::muted(|| cavi::run_from(schedule, data, &h, &config, from.as_deref()))
        };
        let value = match run {
            Ok(r) => {
                let elbo = -r.elbo.last().copied().unwrap_or(f64::INFINITY);
                if elbo < best {
                    *warm.borrow_mut() = Some(r.latents);
                }
                elbo
            }
            Err(e @ (RuntimeError::TooLarge(_) | RuntimeError::Interrupted(_))) => {
                *fatal.borrow_mut() = Some(e);
                f64::INFINITY
            }
            Err(_) => f64::INFINITY,
        };
        best = best.min(value);
        progress::emit(progress::Event::LearnEvaluation {
            evaluation: evaluations,
            max_evaluations: max_evals,
            best_elbo: -best,
        });
        value
    };
    let d = x0.len();
    // Nelder-Mead (standard coefficients), initial steps of 0.5 in log space.
    let mut simplex: Vec<Vec<f64>> = vec![x0.clone()];
    for k in 0..d {
        let mut v = x0.clone();
        v[k] += 0.5;
        simplex.push(v);
    }
    let mut values: Vec<f64> = simplex.iter().map(|v| eval(v)).collect();
    halt()?;
    if !values[0].is_finite() {
        return Err(RuntimeError::Numerical(
            "the ELBO cannot be evaluated at the initial hyperparameters".into(),
        ));
    }
    let mut trace = Vec::new();
    let mut used = d + 1;
    let mut capped = true;
    while used < max_evals {
        halt()?;
        let mut order: Vec<usize> = (0..=d).collect();
        order.sort_by(|a, b| values[*a].total_cmp(&values[*b]));
        simplex = order.iter().map(|&i| simplex[i].clone()).collect();
        values = order.iter().map(|&i| values[i]).collect();
        trace.push(-values[0]);
        if (values[d] - values[0]).abs() <= 1e-7 * values[0].abs().max(1.0) {
            capped = false;
            break;
        }
        let centroid: Vec<f64> = (0..d)
            .map(|j| simplex[..d].iter().map(|v| v[j]).sum::<f64>() / d as f64)
            .collect();
        let along = |t: f64| -> Vec<f64> {
            (0..d)
                .map(|j| centroid[j] + t * (simplex[d][j] - centroid[j]))
                .collect()
        };
        let xr = along(-1.0);
        let fr = eval(&xr);
        used += 1;
        if fr < values[0] {
            let xe = along(-2.0);
            let fe = eval(&xe);
            used += 1;
            if fe < fr {
                simplex[d] = xe;
                values[d] = fe;
            } else {
                simplex[d] = xr;
                values[d] = fr;
            }
        } else if fr < values[d - 1] {
            simplex[d] = xr;
            values[d] = fr;
        } else {
            let xc = if fr < values[d] {
                along(-0.5)
            } else {
                along(0.5)
            };
            let fc = eval(&xc);
            used += 1;
            if fc < values[d].min(fr) {
                simplex[d] = xc;
                values[d] = fc;
            } else {
                // Shrink towards the best vertex.
                for i in 1..=d {
                    simplex[i] = (0..d)
                        .map(|j| simplex[0][j] + 0.5 * (simplex[i][j] - simplex[0][j]))
                        .collect();
                    values[i] = eval(&simplex[i]);
                    used += 1;
                }
            }
        }
    }
    let best = (0..=d)
        .min_by(|a, b| values[*a].total_cmp(&values[*b]))
        .unwrap();
    let mut h = start.clone();
    set(&mut h, coords, &simplex[best]);
    let fit = progress::muted(|| cavi::run(schedule, data, &h, &config))?;
    if capped {
        progress::emit(progress::Event::LearnCapped { evaluations });
    }
    Ok(Learned {
        hypers: h,
        fit,
        trace,
        evaluations,
        capped,
    })
}
