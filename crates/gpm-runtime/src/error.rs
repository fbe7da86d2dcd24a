//! Runtime errors, by kind: what the caller can do about each differs (fix the data, choose
//! another method, change a setting, or report a bug), so each kind is its own variant.

/// What can go wrong while running inference.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum RuntimeError {
    /// The data lack a value the model reads (a size, an input matrix, labels, a test input).
    #[error("{0}")]
    MissingData(String),
    /// A datum or a value derived from the data is unusable (a matrix with the wrong number
    /// of columns, a non-positive prior scale, a lengthscale vector of the wrong size).
    #[error("{0}")]
    BadData(String),
    /// The chosen method cannot run this model (yet); the message says which method to use.
    #[error("{0}")]
    Unsupported(String),
    /// Run settings out of range (no chains, an empty batch).
    #[error("{0}")]
    Settings(String),
    /// The compiled pieces disagree with each other: a bug in gpmc, not in the model.
    #[error("internal error: {0} (please report)")]
    Inconsistent(String),
    /// A numerical failure (a matrix that is not positive definite, a NaN).
    #[error("numerical failure: {0}")]
    Numerical(String),
    /// A sampler was given invalid parameters.
    #[error("sampler: {0}")]
    Sampler(String),
    /// Where the draws go refused a row (a full disk, a closed file).
    #[error("cannot write the draws: {0}")]
    Output(String),
    /// What the run would hold does not fit in the memory available (estimated from the
    /// sizes before anything of that size is allocated); the message says what to do instead.
    #[error("{0}")]
    TooLarge(String),
    /// A stop was requested ([`crate::stop`]) while a phase without partial results ran.
    #[error("{0}")]
    Interrupted(String),
}
