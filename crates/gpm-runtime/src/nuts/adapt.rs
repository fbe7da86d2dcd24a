//! Stan's warm-up adaptation for the NUTS block of a Gibbs sweep ([`super::transition`]):
//! the step size by dual averaging towards a mean acceptance of 0.8 (Hoffman & Gelman 2014,
//! Algorithm 5: γ = 0.05, t₀ = 10, κ = 0.75), and the inverse mass matrix ([`Metric`]: dense
//! for a small block, else diagonal) from the positions' covariance in doubling windows after
//! an initial buffer of 75 transitions and before a terminal one of 50 (Stan's defaults,
//! scaled to 15 % / 75 % / 10 % of a warm-up shorter than 150), regularised towards 10⁻³ as
//! Stan does: `n/(n+5) S + 10⁻³·5/(n+5) I`. Plain data, so that a chain's state stays `Clone`.

use super::metric::Metric;
use nalgebra::{DMatrix, DVector};

/// The mean acceptance statistic the step size is adapted to (Stan's `delta`).
pub(crate) const TARGET_ACCEPT: f64 = 0.8;

/// The state of one NUTS block's adaptation in one chain.
#[derive(Debug, Clone, PartialEq)]
pub struct Adaptation {
    /// The step size transitions use now.
    pub(crate) step: f64,
    /// The inverse mass matrix.
    pub(crate) metric: Metric,
    mu: f64,
    log_step_bar: f64,
    h_bar: f64,
    count: f64,
    window: Welford,
    /// Whether the first step size has been found (Stan's `init_stepsize`).
    pub(crate) started: bool,
    /// The step size needs the heuristic again (a mass-matrix window just closed).
    pub(crate) restart: bool,
}

/// Running mean and sum of squared deviations (Welford): their outer products for a dense
/// metric (`d × d`), the squares alone for a diagonal one (`d × 1`, so that a large block's
/// window costs `O(d)`, not `O(d²)`).
#[derive(Debug, Clone, PartialEq)]
struct Welford {
    n: usize,
    mean: DVector<f64>,
    m2: DMatrix<f64>,
}

impl Welford {
    fn new(dim: usize, dense: bool) -> Self {
        Welford {
            n: 0,
            mean: DVector::zeros(dim),
            m2: DMatrix::zeros(dim, if dense { dim } else { 1 }),
        }
    }

    fn add(&mut self, x: &[f64]) {
        self.n += 1;
        let x = DVector::from_column_slice(x);
        let d = &x - &self.mean;
        self.mean += &d / self.n as f64;
        let e = &x - &self.mean;
        if self.m2.ncols() == 1 {
            self.m2 += d.component_mul(&e);
        } else {
            self.m2 += &d * e.transpose();
        }
    }

    /// The window's metric, regularised as Stan's: `n/(n+5) S + 10⁻³·5/(n+5) I` (a dense
    /// estimate that is not positive definite falls back to its diagonal).
    fn metric(&self) -> Metric {
        let n = self.n as f64;
        let (w, ridge) = (n / (n + 5.0), 1e-3 * 5.0 / (n + 5.0));
        let s = if n > 1.0 {
            &self.m2 / (n - 1.0)
        } else if self.m2.ncols() == 1 {
            DMatrix::from_element(self.m2.nrows(), 1, 1.0)
        } else {
            DMatrix::identity(self.m2.nrows(), self.m2.nrows())
        };
        if s.ncols() == 1 {
            return Metric::Diagonal(s.iter().map(|v| w * v + ridge).collect());
        }
        let d = s.nrows();
        let cov = s * w + DMatrix::identity(d, d) * ridge;
        let diagonal = Metric::Diagonal(cov.diagonal().iter().copied().collect());
        Metric::dense(cov).unwrap_or(diagonal)
    }
}

/// Where transition `t` (from 0) of a warm-up of `warmup` falls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Step size only.
    Buffer,
    /// Step size, and the position counts towards the window's variance; `closes`: the
    /// window ends with this transition.
    Window { closes: bool },
}

/// Stan's windows for a warm-up of `warmup` transitions.
pub(crate) fn phase(t: usize, warmup: usize) -> Phase {
    let (mut init, mut term, mut base) = (75, 50, 25);
    if warmup < 20 {
        return Phase::Buffer;
    }
    if init + term + base > warmup {
        init = warmup * 15 / 100;
        term = warmup / 10;
        base = warmup - init - term;
    }
    let end = warmup - term;
    if t < init || t >= end {
        return Phase::Buffer;
    }
    // Windows of base, 2·base, 4·base, … from `init`; the last one stretched to `end`.
    let (mut start, mut size) = (init, base);
    loop {
        let mut stop = start + size;
        if stop + 2 * size > end {
            stop = end;
        }
        if t < stop {
            return Phase::Window {
                closes: t + 1 == stop,
            };
        }
        start = stop;
        size *= 2;
    }
}

impl Adaptation {
    /// A fresh adaptation of a `dim`-dimensional block: unit mass, step 1 (the heuristic
    /// rescales it before the first transition).
    pub fn new(dim: usize) -> Self {
        let metric = Metric::unit(dim);
        // The window estimates what the metric holds: a covariance or variances.
        let dense = matches!(metric, Metric::Dense { .. });
        let mut a = Adaptation {
            step: 1.0,
            metric,
            mu: 0.0,
            log_step_bar: 0.0,
            h_bar: 0.0,
            count: 0.0,
            window: Welford::new(dim, dense),
            started: false,
            restart: false,
        };
        a.restart_dual(1.0);
        a
    }

    /// Dual averaging from step size `step` (Stan restarts it after every window).
    pub(crate) fn restart_dual(&mut self, step: f64) {
        self.step = step;
        self.mu = (10.0 * step).ln();
        self.log_step_bar = 0.0;
        self.h_bar = 0.0;
        self.count = 0.0;
    }

    /// After warm-up transition `t` of `warmup`, with its acceptance statistic and position.
    pub(crate) fn learn(&mut self, t: usize, warmup: usize, accept: f64, position: &[f64]) {
        // Hoffman & Gelman 2014, Algorithm 5.
        let (gamma, t0, kappa) = (0.05, 10.0, 0.75);
        self.count += 1.0;
        let eta = 1.0 / (self.count + t0);
        let accept = if accept.is_finite() { accept } else { 0.0 };
        self.h_bar = (1.0 - eta) * self.h_bar + eta * (TARGET_ACCEPT - accept.min(1.0));
        let log_step = self.mu - self.count.sqrt() / gamma * self.h_bar;
        let w = self.count.powf(-kappa);
        self.log_step_bar = w * log_step + (1.0 - w) * self.log_step_bar;
        self.step = log_step.exp();
        if let Phase::Window { closes } = phase(t, warmup) {
            self.window.add(position);
            if closes {
                self.metric = self.window.metric();
                self.window = Welford::new(position.len(), self.window.m2.ncols() > 1);
                self.restart = true;
            }
        }
        if t + 1 == warmup {
            // Sampling uses the averaged step size.
            self.step = self.log_step_bar.exp();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stan_windows_for_a_thousand_transitions() {
        // Stan: 75 buffer, windows 25, 50, 100, 200, 500 (the last stretched to 950), 50 buffer.
        let closes: Vec<usize> = (0..1000)
            .filter(|&t| phase(t, 1000) == Phase::Window { closes: true })
            .collect();
        assert_eq!(closes, vec![99, 149, 249, 449, 949]);
        assert_eq!(phase(74, 1000), Phase::Buffer);
        assert_eq!(phase(950, 1000), Phase::Buffer);
    }

    #[test]
    fn short_warmups_scale_the_buffers() {
        // 100 transitions: 15 buffer, one window to 90, 10 buffer.
        let closes: Vec<usize> = (0..100)
            .filter(|&t| phase(t, 100) == Phase::Window { closes: true })
            .collect();
        assert_eq!(closes, vec![89]);
        assert!((0..10).all(|t| phase(t, 10) == Phase::Buffer));
    }

    /// Above `DENSE_MAX` coordinates the window keeps variances only, and the metric is
    /// diagonal with the same regularisation.
    #[test]
    fn a_large_block_gets_a_diagonal_metric() {
        let d = super::super::metric::DENSE_MAX + 1;
        let mut a = Adaptation::new(d);
        assert_eq!(a.window.m2.shape(), (d, 1));
        for t in 0..100 {
            let x = if t % 2 == 0 { 3.0 } else { -3.0 };
            a.learn(t, 100, 0.8, &vec![x; d]);
        }
        let Metric::Diagonal(var) = &a.metric else {
            panic!("a block of {d} coordinates has a diagonal metric")
        };
        // 75 alternating ±3 (38 of one sign), as in the dense test below.
        let (n, k): (f64, f64) = (75.0, 38.0);
        let m = 3.0 / n;
        let s2 = (k * (3.0 - m).powi(2) + (n - k) * (-3.0 - m).powi(2)) / (n - 1.0);
        let expect = n / (n + 5.0) * s2 + 1e-3 * 5.0 / (n + 5.0);
        assert!(var.iter().all(|v| (v - expect).abs() < 1e-12), "{}", var[0]);
    }

    #[test]
    fn dual_averaging_moves_the_step_towards_the_target() {
        let mut a = Adaptation::new(1);
        a.restart_dual(1.0);
        // Acceptance always too low: the step must shrink; always 1: grow.
        for t in 0..50 {
            a.learn(t, 10_000, 0.2, &[0.0]);
        }
        assert!(a.step < 0.5, "{}", a.step);
        let mut b = Adaptation::new(1);
        for t in 0..50 {
            b.learn(t, 10_000, 1.0, &[0.0]);
        }
        assert!(b.step > 2.0, "{}", b.step);
    }

    #[test]
    fn the_window_sets_the_regularised_variance() {
        let mut a = Adaptation::new(2);
        // Window of 100 transitions: 15..89 for warm-up 100 (75 positions).
        for t in 0..100 {
            let x = if t % 2 == 0 { 3.0 } else { -3.0 };
            a.learn(t, 100, 0.8, &[x, 0.5 * x]);
        }
        let n = 75.0;
        let var = |s: f64| {
            // 75 alternating ±s values (38 of one sign): sample variance.
            let (k, m) = (38.0, s * (38.0 - 37.0) / n);
            ((k * (s - m).powi(2)) + (n - k) * (-s - m).powi(2)) / (n - 1.0)
        };
        let expect = |s: f64| n / (n + 5.0) * var(s) + 1e-3 * 5.0 / (n + 5.0);
        let Metric::Dense { cov, .. } = &a.metric else {
            panic!("a 2-D block's metric is dense")
        };
        assert!((cov[(0, 0)] - expect(3.0)).abs() < 1e-12);
        assert!((cov[(1, 1)] - expect(1.5)).abs() < 1e-12);
        // The two coordinates move together: their covariance is ½ var(x), shrunk by n/(n+5).
        let off = n / (n + 5.0) * var(3.0) * 0.5;
        assert!((cov[(0, 1)] - off).abs() < 1e-12, "{}", cov[(0, 1)]);
        assert!(a.restart);
    }
}
