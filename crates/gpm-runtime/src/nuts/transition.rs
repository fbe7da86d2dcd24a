//! One NUTS transition from a given point, with a given step size and diagonal inverse mass
//! matrix — what a Gibbs sweep's NUTS block runs (the sweep's `nuts_block`): the
//! multinomial No-U-Turn sampler as Stan runs it (Hoffman & Gelman 2014; Betancourt 2017,
//! "A conceptual introduction to HMC", §A.4: the trajectory doubled in a random direction,
//! the point drawn from it with weights `exp(−H)`, biased progressive sampling between
//! subtrees and uniform progressive sampling within one, the generalised no-U-turn criterion
//! on the summed momenta checked across every merge including the two extra checks of Stan
//! 2.21).
//!
//! Why not `nuts-rs`, which runs whole-model NUTS ([`crate::nuts`])? Its chain caches the log
//! density and gradient at its position and re-initialises its adaptation when the position
//! is set again; inside a sweep the target changes between transitions (the other blocks and
//! hyperparameters move), so every transition must start from a freshly evaluated point and
//! keep the adapted step size and mass matrix — which its public interface cannot do.

use super::metric::Metric;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// A log density and its gradient at a position; `None` where it is not finite.
pub(crate) type LogDensity<'f> = dyn FnMut(&[f64], &mut [f64]) -> Option<f64> + 'f;

/// Stan's threshold on the energy error that marks a divergence.
const MAX_DELTA_H: f64 = 1000.0;

/// A point of phase space: position, momentum, log density and its gradient.
#[derive(Clone)]
struct Phase {
    q: Vec<f64>,
    p: Vec<f64>,
    logp: f64,
    grad: Vec<f64>,
}

/// What one transition did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Transition {
    /// The new position.
    pub(crate) position: Vec<f64>,
    /// Its log density.
    pub(crate) logp: f64,
    /// The mean Metropolis acceptance probability over the trajectory (what step-size
    /// adaptation targets).
    pub(crate) accept_stat: f64,
    /// Leapfrog steps taken.
    pub(crate) leapfrogs: usize,
    /// Whether the trajectory diverged.
    pub(crate) divergent: bool,
    /// Whether it stopped at the largest depth.
    pub(crate) max_depth: bool,
}

/// The fixed pieces of one transition.
struct Integrator<'a, 'f> {
    logp: &'a mut LogDensity<'f>,
    metric: &'a Metric,
    step: f64,
    h0: f64,
    rng: &'a mut ChaCha8Rng,
    leapfrogs: usize,
    sum_metro: f64,
    divergent: bool,
}

fn log_add(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    let m = a.max(b);
    m + ((a - m).exp() + (b - m).exp()).ln()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn add(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x + y).collect()
}

/// The no-U-turn criterion on the summed momenta `rho` between the velocities at the ends.
fn no_u_turn(p_sharp_minus: &[f64], p_sharp_plus: &[f64], rho: &[f64]) -> bool {
    dot(p_sharp_plus, rho) > 0.0 && dot(p_sharp_minus, rho) > 0.0
}

impl<'a, 'f> Integrator<'a, 'f> {
    fn new(
        logp: &'a mut LogDensity<'f>,
        metric: &'a Metric,
        step: f64,
        rng: &'a mut ChaCha8Rng,
    ) -> Self {
        Integrator {
            logp,
            metric,
            step,
            h0: 0.0,
            rng,
            leapfrogs: 0,
            sum_metro: 0.0,
            divergent: false,
        }
    }
}

impl Integrator<'_, '_> {
    fn kinetic(&self, p: &[f64]) -> f64 {
        self.metric.kinetic(p)
    }

    fn velocity(&self, p: &[f64]) -> Vec<f64> {
        self.metric.velocity(p)
    }

    /// One leapfrog step of `sign · step`; the energy `H` after it (∞ where the density is
    /// not finite).
    fn leapfrog(&mut self, z: &mut Phase, sign: f64) -> f64 {
        let e = sign * self.step;
        for (p, g) in z.p.iter_mut().zip(&z.grad) {
            *p += 0.5 * e * g;
        }
        for (q, v) in z.q.iter_mut().zip(self.metric.velocity(&z.p)) {
            *q += e * v;
        }
        match (self.logp)(&z.q, &mut z.grad) {
            Some(lp) if lp.is_finite() => z.logp = lp,
            _ => return f64::INFINITY,
        }
        for (p, g) in z.p.iter_mut().zip(&z.grad) {
            *p += 0.5 * e * g;
        }
        -z.logp + self.kinetic(&z.p)
    }

    /// Stan's `build_tree`: a subtree of `2^depth` steps from `z` (moved along), its summed
    /// momenta added to `rho`, the momenta and velocities at its two ends written, its
    /// log-weight added to `log_sum_w`, its proposal in `propose`. False when it diverged or
    /// turned back on itself.
    #[allow(clippy::too_many_arguments)]
    fn build_tree(
        &mut self,
        depth: usize,
        z: &mut Phase,
        propose: &mut Phase,
        ends: &mut Ends,
        rho: &mut [f64],
        sign: f64,
        log_sum_w: &mut f64,
    ) -> bool {
        if depth == 0 {
            let mut h = self.leapfrog(z, sign);
            self.leapfrogs += 1;
            if h.is_nan() {
                h = f64::INFINITY;
            }
            if h - self.h0 > MAX_DELTA_H {
                self.divergent = true;
            }
            *log_sum_w = log_add(*log_sum_w, self.h0 - h);
            self.sum_metro += if self.h0 - h > 0.0 {
                1.0
            } else {
                (self.h0 - h).exp()
            };
            *propose = z.clone();
            let v = self.velocity(&z.p);
            for (r, p) in rho.iter_mut().zip(&z.p) {
                *r += p;
            }
            *ends = Ends {
                p_beg: z.p.clone(),
                p_end: z.p.clone(),
                v_beg: v.clone(),
                v_end: v,
            };
            return !self.divergent;
        }
        let n = rho.len();
        // The first half.
        let mut init = Ends::default();
        let mut rho_init = vec![0.0; n];
        let mut w_init = f64::NEG_INFINITY;
        if !self.build_tree(
            depth - 1,
            z,
            propose,
            &mut init,
            &mut rho_init,
            sign,
            &mut w_init,
        ) {
            return false;
        }
        // The second half, from where the first ended.
        let mut propose_final = z.clone();
        let mut fin = Ends::default();
        let mut rho_final = vec![0.0; n];
        let mut w_final = f64::NEG_INFINITY;
        if !self.build_tree(
            depth - 1,
            z,
            &mut propose_final,
            &mut fin,
            &mut rho_final,
            sign,
            &mut w_final,
        ) {
            return false;
        }
        // Uniform progressive sampling within the subtree.
        let w_subtree = log_add(w_init, w_final);
        *log_sum_w = log_add(*log_sum_w, w_subtree);
        if w_final > w_subtree || self.rng.gen::<f64>() < (w_final - w_subtree).exp() {
            *propose = propose_final;
        }
        let rho_subtree = add(&rho_init, &rho_final);
        for (r, s) in rho.iter_mut().zip(&rho_subtree) {
            *r += s;
        }
        let mut persist = no_u_turn(&init.v_beg, &fin.v_end, &rho_subtree);
        // Stan 2.21's extra checks across the merge.
        persist &= no_u_turn(&init.v_beg, &fin.v_beg, &add(&rho_init, &fin.p_beg));
        persist &= no_u_turn(&init.v_end, &fin.v_end, &add(&rho_final, &init.p_end));
        *ends = Ends {
            p_beg: init.p_beg,
            v_beg: init.v_beg,
            p_end: fin.p_end,
            v_end: fin.v_end,
        };
        persist
    }
}

/// The momenta and velocities at the two ends of a (sub)trajectory, in the direction it grew.
#[derive(Default, Clone)]
struct Ends {
    p_beg: Vec<f64>,
    v_beg: Vec<f64>,
    p_end: Vec<f64>,
    v_end: Vec<f64>,
}

/// One transition from `position` (with its log density `logp0` and gradient `grad0`).
pub(crate) fn transition(
    logp: &mut LogDensity<'_>,
    (position, logp0, grad0): (&[f64], f64, &[f64]),
    step: f64,
    metric: &Metric,
    max_depth: usize,
    rng: &mut ChaCha8Rng,
) -> Transition {
    let n = position.len();
    let z0 = Phase {
        q: position.to_vec(),
        p: metric.momentum(rng),
        logp: logp0,
        grad: grad0.to_vec(),
    };
    let mut it = Integrator::new(logp, metric, step, rng);
    it.h0 = -logp0 + it.kinetic(&z0.p);
    let v0 = it.velocity(&z0.p);
    let (mut z_fwd, mut z_bck) = (z0.clone(), z0.clone());
    let mut sample = z0.clone();
    let mut rho = z0.p.clone();
    let mut log_sum_w = 0.0;
    // The outer ends of the whole trajectory: its momenta and velocities.
    let (mut p_fwd_fwd, mut p_bck_bck) = (z0.p.clone(), z0.p.clone());
    let (mut v_fwd_fwd, mut v_bck_bck) = (v0.clone(), v0);
    let mut depth = 0;
    let mut reached_max = false;
    while depth < max_depth {
        let mut propose = z0.clone();
        let mut ends = Ends::default();
        let mut w_subtree = f64::NEG_INFINITY;
        let mut rho_new = vec![0.0; n];
        let forward = it.rng.gen::<f64>() > 0.5;
        let (z, sign) = if forward {
            (&mut z_fwd, 1.0)
        } else {
            (&mut z_bck, -1.0)
        };
        let valid = it.build_tree(
            depth,
            z,
            &mut propose,
            &mut ends,
            &mut rho_new,
            sign,
            &mut w_subtree,
        );
        // The old trajectory and the new subtree as its backward and forward parts, each
        // with its inner end (`_fwd` of the backward part, `_bck` of the forward part).
        let (rho_bck, rho_fwd, p_bck_fwd, v_bck_fwd, p_fwd_bck, v_fwd_bck);
        if forward {
            (rho_bck, p_bck_fwd, v_bck_fwd) = (rho.clone(), p_fwd_fwd, v_fwd_fwd);
            (rho_fwd, p_fwd_bck, v_fwd_bck) = (rho_new, ends.p_beg, ends.v_beg);
            (p_fwd_fwd, v_fwd_fwd) = (ends.p_end, ends.v_end);
        } else {
            (rho_fwd, p_fwd_bck, v_fwd_bck) = (rho.clone(), p_bck_bck, v_bck_bck);
            (rho_bck, p_bck_fwd, v_bck_fwd) = (rho_new, ends.p_beg, ends.v_beg);
            (p_bck_bck, v_bck_bck) = (ends.p_end, ends.v_end);
        }
        if !valid {
            break;
        }
        depth += 1;
        reached_max = depth == max_depth;
        // Biased progressive sampling between the old trajectory and the new subtree.
        if w_subtree > log_sum_w || it.rng.gen::<f64>() < (w_subtree - log_sum_w).exp() {
            sample = propose;
        }
        log_sum_w = log_add(log_sum_w, w_subtree);
        rho = add(&rho_bck, &rho_fwd);
        let mut persist = no_u_turn(&v_bck_bck, &v_fwd_fwd, &rho);
        persist &= no_u_turn(&v_bck_bck, &v_fwd_bck, &add(&rho_bck, &p_fwd_bck));
        persist &= no_u_turn(&v_bck_fwd, &v_fwd_fwd, &add(&rho_fwd, &p_bck_fwd));
        if !persist {
            break;
        }
    }
    let leapfrogs = it.leapfrogs;
    Transition {
        accept_stat: if leapfrogs > 0 {
            it.sum_metro / leapfrogs as f64
        } else {
            0.0
        },
        divergent: it.divergent,
        leapfrogs,
        max_depth: reached_max,
        logp: sample.logp,
        position: sample.q,
    }
}

/// Stan's heuristic for a first step size: from `step`, doubled or halved until one leapfrog
/// step's acceptance probability crosses ½.
pub(crate) fn initial_step(
    logp: &mut LogDensity<'_>,
    (position, logp0, grad0): (&[f64], f64, &[f64]),
    mut step: f64,
    metric: &Metric,
    rng: &mut ChaCha8Rng,
) -> f64 {
    let mut direction = 0.0;
    for _ in 0..50 {
        let p = metric.momentum(rng);
        let mut it = Integrator::new(logp, metric, step, rng);
        let h0 = -logp0 + it.kinetic(&p);
        let mut z = Phase {
            q: position.to_vec(),
            p,
            logp: logp0,
            grad: grad0.to_vec(),
        };
        let h = it.leapfrog(&mut z, 1.0);
        let delta = if h.is_finite() {
            h0 - h
        } else {
            f64::NEG_INFINITY
        };
        let up = if delta > (0.8f64).ln() { 1.0 } else { -1.0 };
        if direction == 0.0 {
            direction = up;
        }
        if up != direction {
            break;
        }
        step = if direction > 0.0 {
            2.0 * step
        } else {
            0.5 * step
        };
        if !(1e-10..=1e7).contains(&step) {
            break;
        }
    }
    step.clamp(1e-10, 1e7)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// A correlated Gaussian in 3-D (sds 1, 3, 0.5; corr 0.8 between the first two): the
    /// transitions' draws must have its means, variances and covariance, and the second
    /// coordinate's draws its distribution (Kolmogorov-Smirnov).
    #[test]
    fn transitions_leave_a_correlated_gaussian_invariant() {
        // A diagonal metric (the variances), and a dense one (the covariance itself).
        leave_invariant(Metric::Diagonal(vec![1.0, 9.0, 0.25]), 0.4, 11);
        let cov = nalgebra::DMatrix::from_row_slice(
            3,
            3,
            &[1.0, 2.4, 0.0, 2.4, 9.0, 0.0, 0.0, 0.0, 0.25],
        );
        leave_invariant(Metric::dense(cov).unwrap(), 0.9, 12);
    }

    fn leave_invariant(metric: Metric, step: f64, seed: u64) {
        let (s, rho) = ([1.0, 3.0, 0.5], 0.8);
        // Precision of [[1, ρ·3, 0], [ρ·3, 9, 0], [0, 0, 0.25]].
        let det = 9.0 * (1.0 - rho * rho);
        let prec = [
            [9.0 / det, -rho * 3.0 / det, 0.0],
            [-rho * 3.0 / det, 1.0 / det, 0.0],
            [0.0, 0.0, 1.0 / (s[2] * s[2])],
        ];
        let mut logp = |q: &[f64], g: &mut [f64]| {
            let mut lp = 0.0;
            for i in 0..3 {
                g[i] = -(0..3).map(|j| prec[i][j] * q[j]).sum::<f64>();
                lp += 0.5 * q[i] * g[i];
            }
            Some(lp)
        };
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut q = vec![0.5, -1.0, 0.2];
        let mut g = vec![0.0; 3];
        let mut lp = logp(&q, &mut g).unwrap();
        let n = 20_000;
        let mut draws = Vec::with_capacity(n);
        let mut accept = 0.0;
        for _ in 0..n {
            let t = transition(&mut logp, (&q, lp, &g), step, &metric, 10, &mut rng);
            accept += t.accept_stat / n as f64;
            q = t.position;
            lp = logp(&q, &mut g).unwrap();
            assert!((lp - t.logp).abs() < 1e-12);
            assert!(!t.divergent);
            draws.push(q.clone());
        }
        assert!(accept > 0.6, "mean acceptance {accept}");
        let mean = |k: usize| draws.iter().map(|d| d[k]).sum::<f64>() / n as f64;
        let cov = |a: usize, b: usize| {
            let (ma, mb) = (mean(a), mean(b));
            draws.iter().map(|d| (d[a] - ma) * (d[b] - mb)).sum::<f64>() / n as f64
        };
        // NUTS draws of a Gaussian are nearly independent: tolerances of ~5 standard errors
        // of n independent draws.
        for k in 0..3 {
            let se = s[k] / (n as f64).sqrt();
            assert!(mean(k).abs() < 5.0 * se, "mean {k}: {}", mean(k));
            let var = s[k] * s[k];
            let rel = (cov(k, k) / var - 1.0).abs();
            assert!(
                rel < 5.0 * (2.0 / n as f64).sqrt(),
                "var {k}: {} vs {var}",
                cov(k, k)
            );
        }
        let c01 = cov(0, 1) / (cov(0, 0) * cov(1, 1)).sqrt();
        assert!((c01 - rho).abs() < 0.02, "correlation {c01}");
        // KS of the second coordinate against N(0, 9), on every 5th draw.
        let mut x: Vec<f64> = draws.iter().step_by(5).map(|d| d[1] / 3.0).collect();
        x.sort_by(f64::total_cmp);
        let m = x.len() as f64;
        let normal = statrs::distribution::Normal::new(0.0, 1.0).unwrap();
        use statrs::distribution::ContinuousCDF;
        let d = x
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let f = normal.cdf(*v);
                (f - i as f64 / m).abs().max(((i + 1) as f64 / m - f).abs())
            })
            .fold(0.0, f64::max);
        // α = 0.001: 1.95/√m.
        assert!(d < 1.95 / m.sqrt(), "KS distance {d}");
    }

    /// A density that is not finite beyond a wall: a trajectory that reaches it diverges
    /// and the transition stays inside.
    #[test]
    fn a_wall_is_a_divergence_and_never_crossed() {
        let mut logp = |q: &[f64], g: &mut [f64]| {
            if q[0] > 1.0 {
                return None;
            }
            g[0] = -q[0];
            Some(-0.5 * q[0] * q[0])
        };
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let (mut q, mut divergent) = (vec![0.9], 0);
        for _ in 0..500 {
            let mut g = vec![0.0];
            let lp = logp(&q, &mut g).unwrap();
            let t = transition(&mut logp, (&q, lp, &g), 0.5, &Metric::unit(1), 10, &mut rng);
            divergent += usize::from(t.divergent);
            assert!(t.position[0] <= 1.0);
            q = t.position;
        }
        assert!(divergent > 0);
    }

    #[test]
    fn the_initial_step_heuristic_scales_with_the_target() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for scale in [0.01, 1.0, 100.0] {
            let mut logp = |q: &[f64], g: &mut [f64]| {
                g[0] = -q[0] / (scale * scale);
                Some(-0.5 * (q[0] / scale).powi(2))
            };
            let q = [0.3 * scale];
            let mut g = [0.0];
            let lp = logp(&q, &mut g).unwrap();
            let e = initial_step(&mut logp, (&q, lp, &g), 1.0, &Metric::unit(1), &mut rng);
            assert!(
                e > 0.1 * scale && e < 10.0 * scale,
                "scale {scale}: step {e}"
            );
        }
    }
}
