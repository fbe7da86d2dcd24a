//! # gpm-special
//!
//! Owns the scalar special functions every stage evaluates — the IR's evaluator, the CAS, the
//! recognizers' certification, the schedule's tapes and the runtime — so that each has one
//! implementation, in its numerically careful form (no overflow of `exp`, log-space where a
//! value under- or overflows). It must not know about models, expressions or data: plain
//! `f64 → f64` functions (and maps over slices, [`vectorised`]) only.
#![warn(missing_docs)]
// No `unwrap()` outside tests: an error, or an `expect` that states the invariant (issue 51).
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

mod concave_sum;
mod elementary;
mod exp_integral;
mod exp_slice;
mod log_slice;
mod poisson_power;
pub mod root;
mod vectorised;
pub use concave_sum::{log_sum_concave, Lattice};
pub use elementary::{
    digamma, inverse_mills, lgamma, log_cosh, log_logistic, log_mean_exp, log_normal_cdf,
    log_normal_pdf, log_sum_exp, logistic, normal_cdf, softplus,
};
pub use exp_integral::{e1_inverse_from, e1_scaled, e2_scaled, log_e1, log_e1_scaled};
pub use exp_slice::{exp, exp_in_place, logistic_in_place, matern_in_place};
pub use log_slice::{ln, ln_1p};
pub use poisson_power::poisson_power_moment;
pub use vectorised::{
    exp_slice, ln_1p_slice, ln_slice, log_logistic_slice, logistic_slice, softplus_slice,
    vectorised, SliceMap,
};
