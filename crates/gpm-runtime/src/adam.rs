//! Adam (Kingma & Ba 2015), ascending: the step SVI takes on the logarithms of the learned
//! hyperparameters, on one machine or on a cluster's driver (its state travels with the
//! distributed fit's, [`crate::cluster::GlobalState`]).

use serde::{Deserialize, Serialize};

/// Adam's state: the moment estimates, the steps taken and the step size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Adam {
    m: Vec<f64>,
    v: Vec<f64>,
    t: i32,
    rate: f64,
}

impl Adam {
    /// Before the first step, for `dim` coordinates, with step size `rate`.
    pub fn new(dim: usize, rate: f64) -> Adam {
        Adam {
            m: vec![0.0; dim],
            v: vec![0.0; dim],
            t: 0,
            rate,
        }
    }

    /// Coordinates.
    pub fn dim(&self) -> usize {
        self.m.len()
    }

    /// One ascent step of `x` along `grad`.
    pub fn step(&mut self, x: &mut [f64], grad: &[f64]) {
        const B1: f64 = 0.9;
        const B2: f64 = 0.999;
        self.t += 1;
        for k in 0..x.len() {
            self.m[k] = B1 * self.m[k] + (1.0 - B1) * grad[k];
            self.v[k] = B2 * self.v[k] + (1.0 - B2) * grad[k] * grad[k];
            let mh = self.m[k] / (1.0 - B1.powi(self.t));
            let vh = self.v[k] / (1.0 - B2.powi(self.t));
            x[k] += self.rate * mh / (vh.sqrt() + 1e-8);
        }
    }
}
