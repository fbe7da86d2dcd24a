//! One safeguarded Newton solver for the monotone equations the samplers invert (a mixing
//! law's CDF from its Laplace transform, `E₁` for the horseshoe's scales): Newton steps while
//! they stay inside the bracket the signs have established, bisection otherwise, and — where
//! no point beyond the root has been seen yet (an upper end at `∞`) — growth by doubling, a
//! Newton step allowed at most to quadruple `x` (a tiny slope far from the root would throw it
//! out of range).

/// How a [`newton`] solve ends.
#[derive(Debug, Clone, Copy)]
pub struct Stop {
    /// `|f(x)|` below which `x` is the root.
    pub f_tol: f64,
    /// The bracket narrower than `x_tol` times `|hi|` (`relative_to_hi`) or `1 + |x|` ends
    /// the solve.
    pub x_tol: f64,
    /// Whether the bracket's width is measured against its upper end.
    pub relative_to_hi: bool,
    /// Steps at most.
    pub max_steps: usize,
    /// Growth stops beyond this `x` (the root is out of range there).
    pub x_max: f64,
}

/// The root of `f`, increasing (`increasing`) or decreasing, in `[lo, hi]` (`hi` may be `∞`:
/// the bracket's upper end not yet known), from `x0`. `f(x)` returns the value and the slope
/// there (a slope of the wrong sign or 0 forces a bisection or growth step).
pub fn newton(
    mut f: impl FnMut(f64) -> (f64, f64),
    (mut lo, mut hi): (f64, f64),
    x0: f64,
    increasing: bool,
    stop: Stop,
) -> f64 {
    let mut x = x0;
    for _ in 0..stop.max_steps {
        let (v, slope) = f(x);
        if v.abs() < stop.f_tol {
            break;
        }
        if (v > 0.0) == increasing {
            hi = x;
        } else {
            lo = x;
        }
        let step_ok = if increasing { slope > 0.0 } else { slope < 0.0 };
        let newton = x - v / slope;
        let cap = if hi.is_finite() {
            hi
        } else {
            4.0 * x.abs().max(f64::MIN_POSITIVE)
        };
        x = if step_ok && newton > lo && newton < cap {
            newton
        } else if hi.is_finite() {
            0.5 * (lo + hi)
        } else {
            // Below the root with no upper end yet (or a flat slope): grow.
            2.0 * x
        };
        let scale = if stop.relative_to_hi {
            hi.abs()
        } else {
            1.0 + x.abs()
        };
        if (hi - lo) < stop.x_tol * scale || x > stop.x_max {
            break;
        }
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    const STOP: Stop = Stop {
        f_tol: 1e-14,
        x_tol: 1e-15,
        relative_to_hi: false,
        max_steps: 200,
        x_max: 1e12,
    };

    #[test]
    fn finds_roots_either_way_and_from_an_open_bracket() {
        // x³ = 10 (increasing), from far below with no upper end.
        let r = newton(
            |x| (x * x * x - 10.0, 3.0 * x * x),
            (0.0, f64::INFINITY),
            0.01,
            true,
            STOP,
        );
        assert!((r - 10f64.cbrt()).abs() < 1e-12, "{r}");
        // e^(−x) = 0.3 (decreasing) on a closed bracket.
        let r = newton(
            |x| ((-x).exp() - 0.3, -(-x).exp()),
            (0.0, 10.0),
            5.0,
            false,
            STOP,
        );
        assert!((r - (1.0f64 / 0.3).ln()).abs() < 1e-12, "{r}");
        // A slope of the wrong sign everywhere: bisection alone still converges.
        let r = newton(|x| (x - 2.0, -1.0), (0.0, 8.0), 7.0, true, STOP);
        assert!((r - 2.0).abs() < 1e-12, "{r}");
    }
}
