//! Semantic diagnostics: each mistake has a stable code (`gpm::unknown_name`, ...), the span of
//! the offending text, a one-line label and a help text. Codes are part of the CLI's JSON output
//! and are tested one by one in `tests/broken/`.

use gpm_syntax::Span;
use miette::{Diagnostic, LabeledSpan};
use std::fmt;

/// One semantic mistake in a model.
#[derive(Debug, Clone, PartialEq)]
pub struct SemanticError {
    /// Stable code, e.g. `gpm::unknown_name`.
    pub code: &'static str,
    /// One sentence.
    pub message: String,
    /// Where.
    pub span: Span,
    /// The label under the span.
    pub label: String,
    /// How to fix it.
    pub help: Option<String>,
    /// Other places worth showing (e.g. the first declaration of a duplicate).
    pub related: Vec<(Span, String)>,
}

impl SemanticError {
    /// A new error.
    pub fn new(
        code: &'static str,
        message: impl Into<String>,
        span: Span,
        label: impl Into<String>,
    ) -> Self {
        SemanticError {
            code,
            message: message.into(),
            span,
            label: label.into(),
            help: None,
            related: vec![],
        }
    }
    /// Attach a help text.
    pub fn help(mut self, h: impl Into<String>) -> Self {
        self.help = Some(h.into());
        self
    }
    /// Attach a second labelled span.
    pub fn also(mut self, span: Span, label: impl Into<String>) -> Self {
        self.related.push((span, label.into()));
        self
    }
}

impl fmt::Display for SemanticError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for SemanticError {}

impl Diagnostic for SemanticError {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.code))
    }
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let main = LabeledSpan::new_primary_with_span(Some(self.label.clone()), self.span);
        let rest = self
            .related
            .iter()
            .map(|(s, l)| LabeledSpan::new_with_span(Some(l.clone()), *s));
        Some(Box::new(std::iter::once(main).chain(rest)))
    }
}

/// All the mistakes found in one model (lowering goes on after the first where it can).
#[derive(Debug, Clone, PartialEq)]
pub struct SemanticErrors(pub Vec<SemanticError>);

impl fmt::Display for SemanticErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.len() {
            1 => write!(f, "{}", self.0[0]),
            n => write!(f, "{n} errors in the model; the first: {}", self.0[0]),
        }
    }
}

impl std::error::Error for SemanticErrors {}

impl Diagnostic for SemanticErrors {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.0.first().and_then(|e| e.code())
    }
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.0.first().and_then(|e| Diagnostic::help(e))
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        self.0.first().and_then(|e| e.labels())
    }
    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn Diagnostic> + 'a>> {
        if self.0.len() <= 1 {
            return None;
        }
        Some(Box::new(self.0[1..].iter().map(|e| e as &dyn Diagnostic)))
    }
}

/// `did you mean `c`?` for the candidate closest to `name` (Jaro-Winkler above 0.8, letter
/// case ignored: `x` for `X`), if any — shared by the model's diagnostics and the data's.
pub fn did_you_mean<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<String> {
    let lower = name.to_lowercase();
    let best = candidates
        .filter(|c| *c != name)
        .map(|c| {
            let score =
                strsim::jaro_winkler(name, c).max(strsim::jaro_winkler(&lower, &c.to_lowercase()));
            (score, c)
        })
        .filter(|(s, _)| *s > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))?;
    Some(format!("did you mean `{}`?", best.1))
}
