//! What the schedule refuses: a factor's plan it cannot compile, a latent's prior that reads
//! what a prior cannot.

/// A plan the runtime cannot run.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum ScheduleError {
    /// A factor's plan cannot be compiled (`factor` counts from 0; shown from 1).
    #[error("factor #{}: {message}", factor + 1)]
    Factor {
        /// Factor index.
        factor: usize,
        /// What is missing.
        message: String,
    },
    /// A latent's prior reads something a prior cannot read.
    #[error("the prior of `{latent}`: {message}")]
    Prior {
        /// The latent.
        latent: String,
        /// What is wrong.
        message: String,
    },
}
