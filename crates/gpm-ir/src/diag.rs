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
        self.0.first().and_then(Diagnostic::help)
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
    let n = name.chars().count();
    let best = candidates
        .filter(|c| *c != name && could_be_near(n, c.chars().count()))
        .map(|c| {
            let score =
                strsim::jaro_winkler(name, c).max(strsim::jaro_winkler(&lower, &c.to_lowercase()));
            (score, c)
        })
        .filter(|(s, _)| *s > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))?;
    Some(format!("did you mean `{}`?", best.1))
}

/// Whether two names of `a` and `b` characters can score above 0.8: Jaro is at most
/// `(2 + short/long)/3` (at most `short` characters match) and Winkler's prefix adds at most
/// `0.1 · min(4, short) · (1 − jaro)`. Skips the two Jaro-Winkler computations (and a
/// lowercase copy) for hopeless candidates — with 40 000 declared names and 1 600 unknown
/// ones, they were the whole of `gpmc check`'s 18 s.
fn could_be_near(a: usize, b: usize) -> bool {
    let (short, long) = (a.min(b) as f64, a.max(b) as f64);
    if long == 0.0 {
        return true;
    }
    let jaro = (2.0 + short / long) / 3.0;
    jaro + 0.1 * short.min(4.0) * (1.0 - jaro) > 0.8
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The length bound never skips a pair whose score is above 0.8 (every pair of these
    /// names, of 1 to 12 characters, checked against strsim itself).
    #[test]
    fn the_length_bound_skips_only_hopeless_candidates() {
        let names = [
            "f",
            "F",
            "x",
            "xs",
            "mu",
            "Mu",
            "sigma",
            "sigm",
            "sigma_y",
            "alpha",
            "alphas",
            "z1",
            "z12",
            "z1234",
            "beta",
            "beta_1",
            "lengthscale",
            "lengthscales",
            "tau",
            "taus",
        ];
        for a in names {
            for b in names {
                let score = strsim::jaro_winkler(a, b)
                    .max(strsim::jaro_winkler(&a.to_lowercase(), &b.to_lowercase()));
                if score > 0.8 {
                    assert!(
                        could_be_near(a.chars().count(), b.chars().count()),
                        "{a} {b} {score}"
                    );
                }
            }
        }
        assert!(!could_be_near(1, 6));
        assert_eq!(
            did_you_mean("sigm", ["sigma", "z12345"].into_iter()).as_deref(),
            Some("did you mean `sigma`?")
        );
    }
}
