//! What can go wrong in the CAS: text that does not parse, a symbol without a value, a
//! function evaluated where it has no analytic continuation.

/// What can go wrong in the CAS.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum CasError {
    /// Text that is not an s-expression of the language.
    #[error("cannot parse: {0}")]
    Parse(String),
    /// A symbol without a value.
    #[error("no value for the symbol `{0}`")]
    Unbound(String),
    /// A function with no analytic continuation was evaluated in complex arithmetic.
    #[error("not analytic: {0}")]
    NotAnalytic(String),
    /// An empty expression.
    #[error("empty expression")]
    Empty,
}
