//! Runtime errors: a model the runtime cannot run, or a numerical failure.

/// What can go wrong while running inference.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum RuntimeError {
    /// The compiled model asks for something the runtime cannot do.
    #[error("{0}")]
    Model(String),
    /// A numerical failure (a matrix that is not positive definite, a NaN).
    #[error("numerical failure: {0}")]
    Numerical(String),
    /// A sampler was given invalid parameters.
    #[error("sampler: {0}")]
    Sampler(String),
}
