//! Errors of evaluation: a value of the wrong shape, an index out of range, a `reject`, a
//! datum that does not fit its declaration. (What cannot be compiled at all is a
//! [`gpm_stan::StanError`] with its span.)

use gpm_syntax::Span;

/// Why the program could not be evaluated here.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct EvalError {
    /// What went wrong.
    pub message: String,
    /// Where in the Stan text, when known.
    pub span: Option<Span>,
    /// Whether it is the program's own `reject` (or a density's argument out of its
    /// support): at a sampler's proposal it is a rejection, not a failure.
    pub rejection: bool,
}

impl EvalError {
    /// An error with no span yet.
    pub fn new(message: impl Into<String>) -> EvalError {
        EvalError {
            message: message.into(),
            span: None,
            rejection: false,
        }
    }

    /// A rejection: an argument outside its support, or the program's `reject`.
    pub fn reject(message: impl Into<String>) -> EvalError {
        EvalError {
            rejection: true,
            ..EvalError::new(message)
        }
    }

    /// A density at arguments outside its support (its value NaN): a rejection naming them.
    pub fn out_of_range(name: &str, args: &[f64]) -> EvalError {
        let shown: Vec<String> = args.iter().map(|v| format!("{v}")).collect();
        EvalError::reject(format!(
            "`{name}` at an argument outside its range ({})",
            shown.join(", ")
        ))
    }

    /// The span of the innermost construct, kept when one is set already.
    pub fn at(mut self, span: Span) -> EvalError {
        if self.span.is_none() {
            self.span = Some(span);
        }
        self
    }
}

/// A shorthand for the results of evaluation.
pub type Eval<T> = Result<T, EvalError>;
