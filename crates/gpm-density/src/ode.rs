//! Stan's ODE solvers (`integrate_ode_rk45/bdf/adams`, `ode_rk45/bdf/adams/ckrk` and their
//! `_tol` forms) as one adaptive Dormand–Prince 5(4) integrator run on the tape.
//!
//! Why on the tape: the integrator's arithmetic is recorded like any other expression, so the
//! gradient NUTS uses is the exact gradient of the solution gpmc computed (discretise, then
//! differentiate) — the Hamiltonian sees one consistent function. The step sizes are chosen
//! from values only (they are constants on the tape), as an adaptive solver's steps are.
//!
//! Why one method for all names: a stiff system (what `bdf` is for) is still solved to the
//! program's tolerances by an explicit method, only with more steps; when the steps run out
//! (`max_num_steps` between two output times, Stan's meaning) the proposal is rejected as in
//! Stan, never answered with a looser solution.
//!
//! This module does not evaluate programs: the right-hand side comes through [`System`], which
//! the interpreter implements by calling the user's function.

use crate::ad::{Tape, R};
use crate::error::{Eval, EvalError};
use crate::value::Val;

/// Steps (accepted and rejected) one solve may take in all: every step stays on the gradient
/// tape, so this bounds the memory of one evaluation (about 1 GB for a 4-state system).
pub const MAX_TOTAL_STEPS: usize = 2_000_000;

/// Which solver a name calls and how it passes its arguments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OdeKind {
    /// The name as written (for messages).
    pub name: &'static str,
    /// `integrate_ode_*`: `f(t, y, theta, x_r, x_i)` on arrays; else `ode_*`: `f(t, y, ...)`
    /// on vectors.
    pub legacy: bool,
    /// The `_tol` form of the variadic interface (tolerances after `ts`).
    pub tolerances: bool,
    /// Relative tolerance, absolute tolerance, `max_num_steps` when not given (Stan's).
    pub defaults: [f64; 3],
}

const NAMES: [(&str, bool, bool, [f64; 3]); 11] = [
    ("integrate_ode_rk45", true, false, [1e-6, 1e-6, 1e6]),
    ("integrate_ode_bdf", true, false, [1e-10, 1e-10, 1e8]),
    ("integrate_ode_adams", true, false, [1e-10, 1e-10, 1e8]),
    ("ode_rk45", false, false, [1e-6, 1e-6, 1e6]),
    ("ode_bdf", false, false, [1e-6, 1e-6, 1e6]),
    ("ode_adams", false, false, [1e-6, 1e-6, 1e6]),
    ("ode_ckrk", false, false, [1e-6, 1e-6, 1e6]),
    ("ode_rk45_tol", false, true, [0.0; 3]),
    ("ode_bdf_tol", false, true, [0.0; 3]),
    ("ode_adams_tol", false, true, [0.0; 3]),
    ("ode_ckrk_tol", false, true, [0.0; 3]),
];

/// The solver a function name calls, if it is one gpmc evaluates.
pub fn lookup(name: &str) -> Option<OdeKind> {
    NAMES
        .iter()
        .find(|(n, ..)| *n == name)
        .map(|&(name, legacy, tolerances, defaults)| OdeKind {
            name,
            legacy,
            tolerances,
            defaults,
        })
}

/// Arguments after the system function, fewest allowed, and the most (`None`: variadic).
pub fn arity(kind: &OdeKind) -> (usize, Option<usize>) {
    match (kind.legacy, kind.tolerances) {
        (true, _) => (6, Some(9)),
        (false, false) => (3, None),
        (false, true) => (6, None),
    }
}

/// The right-hand side `dy/dt = f(t, y)`, evaluated on the tape.
pub trait System {
    /// `f(t, y)`.
    fn rhs(&mut self, t: f64, y: &[R]) -> Eval<Vec<R>>;
    /// The tape the states are combined on.
    fn tape(&mut self) -> &mut Tape;
}

/// One solve: initial state, times, tolerances, and the arguments passed through to `f`.
#[derive(Debug)]
pub struct Problem {
    /// The state at `t0`.
    pub y0: Vec<R>,
    /// The initial time.
    pub t0: f64,
    /// The output times (after `t0`, non-decreasing).
    pub ts: Vec<f64>,
    /// Relative tolerance.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Steps allowed between two output times.
    pub max_steps: usize,
    /// What `f` gets after `t` and `y`.
    pub extra: Vec<Val>,
}

fn constant(v: &Val, what: &str, kind: &OdeKind) -> Eval<Vec<f64>> {
    let xs = v.flat();
    if xs.iter().any(|x| !x.is_constant()) {
        return Err(EvalError::new(format!(
            "`{}`: {what} depend on the parameters; gpmc solves ODEs at fixed times only (pass them as data)",
            kind.name
        )));
    }
    Ok(xs.iter().map(|x| x.v).collect())
}

impl Problem {
    /// Read the arguments that follow the system function.
    pub fn new(kind: &OdeKind, mut args: Vec<Val>) -> Eval<Problem> {
        let (lo, hi) = arity(kind);
        if args.len() < lo || hi.is_some_and(|h| args.len() != lo && args.len() != h) {
            return Err(EvalError::new(format!(
                "`{}` got {} arguments after the system function",
                kind.name,
                args.len()
            )));
        }
        let y0 = args[0].flat();
        let t0 = constant(&args[1], "the initial time must not", kind)?[0];
        let ts = constant(&args[2], "the output times must not", kind)?;
        let tol_at = if kind.legacy { 6 } else { 3 };
        let given = kind.tolerances || (kind.legacy && args.len() == 9);
        let [rtol, atol, steps] = if given {
            let t: Vec<f64> = (tol_at..tol_at + 3)
                .map(|k| constant(&args[k], "tolerances must not", kind).map(|v| v[0]))
                .collect::<Eval<_>>()?;
            [t[0], t[1], t[2]]
        } else {
            kind.defaults
        };
        check(kind, t0, &ts, rtol, atol, steps)?;
        let extra = if kind.legacy {
            args.drain(3..6).collect()
        } else if kind.tolerances {
            args.split_off(6)
        } else {
            args.split_off(3)
        };
        Ok(Problem {
            y0,
            t0,
            ts,
            rtol,
            atol,
            max_steps: steps as usize,
            extra,
        })
    }
}

/// Stan's argument checks (`check_less(t0, ts[0])`, sorted times, positive tolerances).
fn check(kind: &OdeKind, t0: f64, ts: &[f64], rtol: f64, atol: f64, steps: f64) -> Eval<()> {
    let name = kind.name;
    if !t0.is_finite() || ts.iter().any(|t| !t.is_finite()) {
        return Err(EvalError::reject(format!("`{name}`: a time is not finite")));
    }
    if ts.first().is_some_and(|&t| t <= t0) {
        return Err(EvalError::reject(format!(
            "`{name}`: the first output time {} is not after the initial time {t0}",
            ts[0]
        )));
    }
    if ts.windows(2).any(|w| w[1] < w[0]) {
        return Err(EvalError::reject(format!(
            "`{name}`: the output times are not sorted"
        )));
    }
    let finite = rtol.is_finite() && atol.is_finite() && steps.is_finite();
    if !(finite && rtol > 0.0 && atol > 0.0 && steps >= 1.0) {
        return Err(EvalError::reject(format!(
            "`{name}`: tolerances must be positive and max_num_steps at least 1 (got {rtol}, {atol}, {steps})"
        )));
    }
    Ok(())
}

// Dormand & Prince (1980), the 5(4) pair with the first-same-as-last property (Hairer, Nørsett
// & Wanner, Solving ODEs I, Table II.5.2).
const C: [f64; 7] = [0.0, 0.2, 0.3, 0.8, 8.0 / 9.0, 1.0, 1.0];
const A: [[f64; 6]; 7] = [
    [0.0; 6],
    [0.2, 0.0, 0.0, 0.0, 0.0, 0.0],
    [3.0 / 40.0, 9.0 / 40.0, 0.0, 0.0, 0.0, 0.0],
    [44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0, 0.0, 0.0, 0.0],
    [
        19372.0 / 6561.0,
        -25360.0 / 2187.0,
        64448.0 / 6561.0,
        -212.0 / 729.0,
        0.0,
        0.0,
    ],
    [
        9017.0 / 3168.0,
        -355.0 / 33.0,
        46732.0 / 5247.0,
        49.0 / 176.0,
        -5103.0 / 18656.0,
        0.0,
    ],
    [
        35.0 / 384.0,
        0.0,
        500.0 / 1113.0,
        125.0 / 192.0,
        -2187.0 / 6784.0,
        11.0 / 84.0,
    ],
];
/// The fifth-order solution minus the embedded fourth-order one (the local error estimate).
const E: [f64; 7] = [
    71.0 / 57600.0,
    0.0,
    -71.0 / 16695.0,
    71.0 / 1920.0,
    -17253.0 / 339200.0,
    22.0 / 525.0,
    -1.0 / 40.0,
];

/// `y + h Σ_j a_j k_j`, one tape node per component.
fn combine(tape: &mut Tape, y: &[R], h: f64, a: &[f64], k: &[Vec<R>]) -> Vec<R> {
    let mut parents = Vec::with_capacity(1 + a.len());
    (0..y.len())
        .map(|i| {
            parents.clear();
            parents.push((y[i], 1.0));
            let mut v = y[i].v;
            for (j, &aj) in a.iter().enumerate() {
                if aj != 0.0 {
                    v += h * aj * k[j][i].v;
                    parents.push((k[j][i], h * aj));
                }
            }
            tape.node(v, &parents)
        })
        .collect()
}

/// The scaled error norm of a step (max norm, as Boost's odeint, which Stan's rk45 uses).
fn error_norm(p: &Problem, y: &[R], y_new: &[R], h: f64, k: &[Vec<R>]) -> f64 {
    let mut worst: f64 = 0.0;
    for i in 0..y.len() {
        let e: f64 = h * (0..7).map(|j| E[j] * k[j][i].v).sum::<f64>();
        let scale = p.atol + p.rtol * y[i].v.abs().max(y_new[i].v.abs());
        let r = (e / scale).abs();
        worst = if r.is_nan() {
            f64::INFINITY
        } else {
            worst.max(r)
        };
    }
    worst
}

fn rhs(sys: &mut dyn System, t: f64, y: &[R], name: &str) -> Eval<Vec<R>> {
    let k = sys.rhs(t, y)?;
    if k.len() != y.len() {
        return Err(EvalError::new(format!(
            "`{name}`: the system function returned {} values for a state of {}",
            k.len(),
            y.len()
        )));
    }
    Ok(k)
}

/// A first step from the sizes of `y0` and `f(t0, y0)` (Hairer et al., II.4, the first part
/// of the starting-step algorithm).
fn first_step(p: &Problem, k1: &[R], span: f64) -> f64 {
    let scale = |i: usize| p.atol + p.rtol * p.y0[i].v.abs();
    let norm = |x: &dyn Fn(usize) -> f64| {
        (0..p.y0.len())
            .map(|i| (x(i) / scale(i)).powi(2))
            .sum::<f64>()
            / p.y0.len().max(1) as f64
    };
    let (d0, d1) = (norm(&|i| p.y0[i].v).sqrt(), norm(&|i| k1[i].v).sqrt());
    let h = if d0 < 1e-5 || d1 < 1e-5 || !d1.is_finite() {
        1e-6
    } else {
        0.01 * d0 / d1
    };
    h.min(span)
}

/// Solve: the state at each output time, its entries on the tape.
pub fn dopri5(sys: &mut dyn System, p: &Problem, name: &str) -> Eval<Vec<Vec<R>>> {
    let mut out = Vec::with_capacity(p.ts.len());
    let mut y = p.y0.clone();
    let mut t = p.t0;
    let mut k1 = rhs(sys, t, &y, name)?;
    let Some(&t_end) = p.ts.last() else {
        return Ok(out);
    };
    let mut h = first_step(p, &k1, t_end - p.t0);
    let mut total = 0usize;
    for &t_out in &p.ts {
        let mut steps = 0usize;
        while t < t_out {
            steps += 1;
            total += 1;
            if steps > p.max_steps {
                return Err(EvalError::reject(format!(
                    "`{name}` took more than max_num_steps = {} steps between t = {t} and t = {t_out} (a stiff system, or tolerances too tight?)",
                    p.max_steps
                )));
            }
            if total > MAX_TOTAL_STEPS {
                return Err(EvalError::new(format!(
                    "`{name}` needed more than {MAX_TOTAL_STEPS} steps in one solve; gpmc keeps every step on its gradient tape and stops here (loosen the tolerances, or the system is stiff)"
                )));
            }
            let last = t + h >= t_out;
            let step = if last { t_out - t } else { h };
            if step <= 1e-14 * t.abs().max(1.0) {
                return Err(EvalError::reject(format!(
                    "`{name}`: the step size fell to {step:e} at t = {t}"
                )));
            }
            let mut k = vec![k1.clone()];
            let mut stage = Vec::new();
            for s in 1..7 {
                stage = combine(sys.tape(), &y, step, &A[s][..s], &k);
                k.push(rhs(sys, t + C[s] * step, &stage, name)?);
            }
            let err = error_norm(p, &y, &stage, step, &k);
            let factor = if err == 0.0 {
                5.0
            } else {
                (0.9 * err.powf(-0.2)).clamp(0.2, 5.0)
            };
            if err <= 1.0 {
                // The seventh stage is the new state and its slope the next first stage.
                t = if last { t_out } else { t + step };
                y = stage;
                k1 = k.swap_remove(6);
                // A step cut short to land on `t_out` says little against the longer `h`.
                h = if last && factor >= 1.0 {
                    h.max(step * factor)
                } else {
                    step * factor
                };
            } else {
                h = step * factor.min(1.0);
            }
        }
        out.push(y.clone());
    }
    Ok(out)
}

/// The solution as Stan returns it: an array of arrays (`integrate_ode_*`) or of vectors.
pub fn output(kind: &OdeKind, states: Vec<Vec<R>>) -> Val {
    Val::Array(
        states
            .into_iter()
            .map(|s| {
                if kind.legacy {
                    Val::Array(s.into_iter().map(Val::Real).collect())
                } else {
                    Val::Vector(s)
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `dy/dt = -theta y`, theta the first tape input.
    struct Decay {
        tape: Tape,
        theta: R,
    }

    impl System for Decay {
        fn rhs(&mut self, _t: f64, y: &[R]) -> Eval<Vec<R>> {
            let d = self.tape.mul(self.theta, y[0]);
            Ok(vec![self.tape.neg(d)])
        }
        fn tape(&mut self) -> &mut Tape {
            &mut self.tape
        }
    }

    #[test]
    fn exponential_decay_and_its_gradient_match_the_closed_form() {
        let (tape, x) = Tape::with_inputs(&[0.7, 2.0]);
        let mut sys = Decay { tape, theta: x[0] };
        let p = Problem {
            y0: vec![x[1]],
            t0: 0.0,
            ts: vec![0.5, 1.0, 1.0, 3.0],
            rtol: 1e-8,
            atol: 1e-10,
            max_steps: 10_000,
            extra: vec![],
        };
        let ys = dopri5(&mut sys, &p, "test").unwrap();
        for (y, &t) in ys.iter().zip(&p.ts) {
            let exact = 2.0 * (-0.7 * t).exp();
            assert!((y[0].v - exact).abs() < 1e-8 * exact.max(1.0), "{t}");
            // d/dtheta = -t y, d/dy0 = exp(-theta t)
            let g = sys.tape.gradient(y[0], 2);
            assert!((g[0] + t * exact).abs() < 1e-6, "{t}: {g:?}");
            assert!((g[1] - (-0.7 * t).exp()).abs() < 1e-6, "{t}: {g:?}");
        }
    }

    #[test]
    fn too_few_steps_is_a_rejection_not_a_loose_answer() {
        let (tape, x) = Tape::with_inputs(&[50.0, 1.0]);
        let mut sys = Decay { tape, theta: x[0] };
        let p = Problem {
            y0: vec![x[1]],
            t0: 0.0,
            ts: vec![10.0],
            rtol: 1e-10,
            atol: 1e-10,
            max_steps: 20,
            extra: vec![],
        };
        let e = dopri5(&mut sys, &p, "ode_bdf").unwrap_err();
        assert!(e.rejection && e.message.contains("max_num_steps"), "{e:?}");
    }

    #[test]
    fn times_before_the_start_are_refused() {
        let kind = lookup("ode_rk45").unwrap();
        let v = |x: &[f64]| Val::Array(x.iter().map(|&v| Val::Real(R::c(v))).collect());
        let args = vec![
            Val::Vector(vec![R::c(1.0)]),
            Val::Real(R::c(1.0)),
            v(&[0.5]),
        ];
        let e = Problem::new(&kind, args).unwrap_err();
        assert!(e.message.contains("not after the initial time"), "{e:?}");
    }
}
