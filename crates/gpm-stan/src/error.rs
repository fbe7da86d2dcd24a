//! The Stan front end's diagnostics: a syntax error, or a construct the translation cannot
//! carry into gpmc's model class, each with the span in the Stan text and what to do.

use gpm_syntax::Span;
use miette::Diagnostic;
use thiserror::Error;

/// An error of the Stan front end.
#[derive(Debug, Clone, Error, Diagnostic, PartialEq)]
#[error("{message}")]
pub struct StanError {
    /// The diagnostic's code: `stan::syntax` or `stan::unsupported`, `stan::...`.
    pub code: &'static str,
    /// What went wrong, in one sentence.
    pub message: String,
    /// Where.
    #[label("{label}")]
    pub span: Span,
    /// The short label under the span.
    pub label: String,
    /// How to fix it.
    #[help]
    pub help: Option<String>,
}

impl StanError {
    /// A construct gpmc does not translate (yet), with what to write instead.
    pub fn unsupported(message: impl Into<String>, span: Span, help: impl Into<String>) -> Self {
        StanError {
            code: "stan::unsupported",
            message: message.into(),
            span,
            label: "here".into(),
            help: Some(help.into()),
        }
    }

    /// An error with its own code.
    pub fn new(code: &'static str, message: impl Into<String>, span: Span) -> Self {
        StanError {
            code,
            message: message.into(),
            span,
            label: "here".into(),
            help: None,
        }
    }

    /// Attach a help text.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Attach a label.
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }
}

impl From<gpm_syntax::ParseError> for StanError {
    fn from(e: gpm_syntax::ParseError) -> Self {
        StanError {
            code: "stan::syntax",
            message: format!("syntax error: {}", e.message),
            span: e.span,
            label: e.label,
            help: e.help,
        }
    }
}
