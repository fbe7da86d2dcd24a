//! A factor's tapes along one of its predictors: evaluated with the predictor's slots set to a
//! value, and the log-density's central differences there — the fallback where a CAS
//! derivative is not finite (not simplified into a numerically safe form, far in a tail).
//! Shared by the generic CAVI sites and particle flow.

use gpm_schedule::Tape;

/// `tape` with the slots `slots` (one predictor's) set to `eta`; they keep that value.
#[inline]
pub(crate) fn at(
    tape: &Tape,
    slots: &[usize],
    eta: f64,
    vals: &mut [f64],
    stack: &mut Vec<f64>,
) -> f64 {
    for &s in slots {
        vals[s] = eta;
    }
    tape.eval(vals, stack)
}

/// The first and second central differences of the log-density `ld` in the predictor at
/// `eta`, step `h`; the slots are left at `eta`.
pub(crate) fn central_differences(
    ld: &Tape,
    slots: &[usize],
    eta: f64,
    h: f64,
    vals: &mut [f64],
    stack: &mut Vec<f64>,
) -> (f64, f64) {
    let lo = at(ld, slots, eta - h, vals, stack);
    let hi = at(ld, slots, eta + h, vals, stack);
    let mid = at(ld, slots, eta, vals, stack);
    differences(lo, mid, hi, h)
}

/// The central first and second differences from the values at `η − h`, `η`, `η + h`.
#[inline]
pub(crate) fn differences(lo: f64, mid: f64, hi: f64, h: f64) -> (f64, f64) {
    ((hi - lo) / (2.0 * h), (hi - 2.0 * mid + lo) / (h * h))
}

/// The step of the central differences at `η`: relative to `|η|`, at least `1e-4`.
#[inline]
pub(crate) fn step_at(eta: f64) -> f64 {
    1e-4 * eta.abs().max(1.0)
}
