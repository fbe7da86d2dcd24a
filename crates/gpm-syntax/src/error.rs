//! Parse diagnostics: where the text stopped making sense and what was expected there.

use crate::ast::Span;
use miette::Diagnostic;
use thiserror::Error;

/// A syntax error, with the span of the offending text.
#[derive(Debug, Clone, Error, Diagnostic, PartialEq)]
#[error("syntax error: {message}")]
#[diagnostic(code(gpm::syntax))]
pub struct ParseError {
    /// What went wrong, in one sentence.
    pub message: String,
    /// Where.
    #[label("{label}")]
    pub span: Span,
    /// The short label shown under the span.
    pub label: String,
    /// How to fix it.
    #[help]
    pub help: Option<String>,
}

impl ParseError {
    /// A new error.
    pub fn new(message: impl Into<String>, span: Span, label: impl Into<String>) -> Self {
        ParseError {
            message: message.into(),
            span,
            label: label.into(),
            help: None,
        }
    }

    /// Attach a help text.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

/// Where a syntax error stops and what stands there: the end of the token at `start` (not an
/// empty position) and the token as the message quotes it, or "the end of the file". Shared by
/// every front end.
pub fn offending_token(src: &str, start: usize, end: usize) -> (usize, String) {
    let token_end = src[start..]
        .char_indices()
        .find(|(_, c)| c.is_whitespace() || matches!(c, ';' | ',' | ')' | ']' | '}'))
        .map(|(k, _)| start + k.max(src[start..].chars().next().map_or(0, |c| c.len_utf8())))
        .unwrap_or(src.len());
    let end = end.max(token_end).min(src.len());
    let found = if start >= src.len() {
        "the end of the file".to_string()
    } else {
        format!("`{}`", &src[start..end])
    };
    (end, found)
}
