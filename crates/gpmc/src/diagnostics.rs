//! Diagnostics as values: one shape for syntax and semantic errors, rendered by miette for a
//! terminal and as JSON (with line and column) for tools.

use serde::Serialize;
use std::fmt;

/// A position in the source, for JSON consumers.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Location {
    /// Byte offset of the start.
    pub start: usize,
    /// Byte offset one past the end.
    pub end: usize,
    /// 1-based line of the start.
    pub line: usize,
    /// 1-based column (in characters) of the start.
    pub column: usize,
}

impl Location {
    fn new(src: &str, start: usize, end: usize) -> Self {
        SourceIndex::new(src).location(start, end)
    }
}

/// Lines and character counts of a source, computed once, so that locating each of many
/// diagnostics costs a binary search and at most [`SourceIndex::BLOCK`] bytes of counting (64 000
/// diagnostics on one long line were quadratic: 6.9 s).
pub struct SourceIndex<'a> {
    src: &'a str,
    /// Byte offset of each line's start.
    line_starts: Vec<usize>,
    /// Characters before byte `k · BLOCK`.
    chars_before_block: Vec<usize>,
}

impl<'a> SourceIndex<'a> {
    const BLOCK: usize = 4096;

    /// Index `src`.
    pub fn new(src: &'a str) -> Self {
        let bytes = src.as_bytes();
        let mut line_starts = vec![0];
        line_starts.extend(
            bytes
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(k, _)| k + 1),
        );
        let mut chars_before_block = vec![0];
        let mut total = 0;
        for block in bytes.chunks(Self::BLOCK) {
            total += count_chars(block);
            chars_before_block.push(total);
        }
        SourceIndex {
            src,
            line_starts,
            chars_before_block,
        }
    }

    /// Characters before byte `at`.
    fn chars_before(&self, at: usize) -> usize {
        let k = at / Self::BLOCK;
        self.chars_before_block[k] + count_chars(&self.src.as_bytes()[k * Self::BLOCK..at])
    }

    /// The location of the byte span `start..end`.
    pub fn location(&self, start: usize, end: usize) -> Location {
        let start = start.min(self.src.len());
        let line = self.line_starts.partition_point(|&s| s <= start);
        let line_start = self.line_starts[line - 1];
        Location {
            start,
            end: end.min(self.src.len()).max(start),
            line,
            column: self.chars_before(start) - self.chars_before(line_start) + 1,
        }
    }
}

/// UTF-8 characters in `bytes` (those that are not continuation bytes).
fn count_chars(bytes: &[u8]) -> usize {
    bytes.iter().filter(|b| (**b & 0xC0) != 0x80).count()
}

/// One error in a model.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Diagnostic {
    /// Stable code, e.g. `gpm::unknown_name`.
    pub code: String,
    /// One sentence.
    pub message: String,
    /// Where.
    pub location: Location,
    /// The label under the span.
    pub label: String,
    /// How to fix it.
    pub help: Option<String>,
    /// Other labelled places.
    pub related: Vec<(Location, String)>,
}

impl Diagnostic {
    /// A diagnostic with no place in the source (a schedule's error).
    pub fn plain(code: &str, message: String) -> Self {
        Diagnostic {
            code: code.into(),
            message,
            location: Location::new("", 0, 0),
            label: String::new(),
            help: None,
            related: vec![],
        }
    }

    /// From a syntax error.
    pub fn from_parse(e: &gpm_syntax::ParseError, src: &str) -> Self {
        Diagnostic {
            code: "gpm::syntax".into(),
            message: format!("syntax error: {}", e.message),
            location: Location::new(src, e.span.start, e.span.end),
            label: e.label.clone(),
            help: e.help.clone(),
            related: vec![],
        }
    }

    /// From an error of the Stan front end.
    pub fn from_stan(e: &gpm_stan::StanError, src: &str) -> Self {
        Diagnostic {
            code: e.code.into(),
            message: e.message.clone(),
            location: Location::new(src, e.span.start, e.span.end),
            label: e.label.clone(),
            help: e.help.clone(),
            related: vec![],
        }
    }

    /// From a semantic error.
    pub fn from_semantic(e: &gpm_ir::SemanticError, src: &SourceIndex) -> Self {
        Diagnostic {
            code: e.code.into(),
            message: e.message.clone(),
            location: src.location(e.span.start, e.span.end),
            label: e.label.clone(),
            help: e.help.clone(),
            related: e
                .related
                .iter()
                .map(|(s, l)| (src.location(s.start, s.end), l.clone()))
                .collect(),
        }
    }
}

impl Diagnostic {
    /// From a factor that no augmentation rule could take.
    pub fn from_refusal(
        r: &gpm_augment::Refusal,
        model: &gpm_ir::Model,
        src: &SourceIndex,
    ) -> Self {
        let span = model.factors[r.factor].span;
        Diagnostic {
            code: "gpm::not_augmentable".into(),
            message: format!("no conjugate augmentation found for this likelihood: {}", r.reason),
            location: src.location(span.start, span.end),
            label: format!("stuck at {}", r.atom),
            help: Some(format!(
                "normal form reached: {}. Augmentable forms: logistic / binomial / negative-binomial links, Poisson with a scaled logistic link, scale mixtures φ((y − f)²) with φ completely monotone (Student-t, Laplace, Matérn, SVM hinge), the logistic-softmax; see docs/augmentation.md",
                r.normal_form
            )),
            related: vec![],
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)
    }
}
impl std::error::Error for Diagnostic {}

impl miette::Diagnostic for Diagnostic {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(&self.code))
    }
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let span = |l: &Location| miette::SourceSpan::from((l.start, l.end - l.start));
        let main = miette::LabeledSpan::new_primary_with_span(
            Some(self.label.clone()),
            span(&self.location),
        );
        let rest = self
            .related
            .iter()
            .map(move |(l, t)| miette::LabeledSpan::new_with_span(Some(t.clone()), span(l)));
        Some(Box::new(std::iter::once(main).chain(rest)))
    }
}

/// A model that failed to compile: its diagnostics and the source they point into.
#[derive(Debug, Clone)]
pub struct Failure {
    /// File name.
    pub name: String,
    /// Source text.
    pub source: String,
    /// At least one diagnostic.
    pub diagnostics: Vec<Diagnostic>,
}

impl Failure {
    /// A failure with these diagnostics.
    pub fn new(name: &str, source: &str, diagnostics: Vec<Diagnostic>) -> Self {
        Failure {
            name: name.into(),
            source: source.into(),
            diagnostics,
        }
    }

    /// The diagnostics as miette reports, each with the source attached for rendering — at
    /// most [`MAX_RENDERED`] of them (the rest are counted by [`Failure::unrendered`]). The
    /// source is shared, not copied per report; a diagnostic on a very long line gets a window
    /// of that line instead (miette cannot draw a label past column 65 535).
    pub fn reports(&self) -> Vec<miette::Report> {
        let shared = std::sync::Arc::new(self.source.clone());
        self.diagnostics
            .iter()
            .take(MAX_RENDERED)
            .map(|d| match window(&self.source, d) {
                None => miette::Report::new(d.clone())
                    .with_source_code(miette::NamedSource::new(self.name.clone(), shared.clone())),
                Some((text, shifted)) => {
                    let name = format!(
                        "{} (line {}, from column {})",
                        self.name,
                        d.location.line,
                        d.location.column.saturating_sub(WINDOW_CONTEXT)
                    );
                    miette::Report::new(shifted)
                        .with_source_code(miette::NamedSource::new(name, text))
                }
            })
            .collect()
    }

    /// How many diagnostics [`Failure::reports`] leaves out.
    pub fn unrendered(&self) -> usize {
        self.diagnostics.len().saturating_sub(MAX_RENDERED)
    }

    /// Render every diagnostic as text (without colour), as the CLI prints it.
    pub fn render(&self) -> String {
        let handler =
            miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
                .with_width(100);
        let mut out = String::new();
        for r in self.reports() {
            let _ = handler.render_report(&mut out, r.as_ref());
            out.push('\n');
        }
        if self.unrendered() > 0 {
            out.push_str(&self.more_line());
            out.push('\n');
        }
        out
    }

    /// The line saying how many diagnostics were not rendered.
    pub fn more_line(&self) -> String {
        format!(
            "... and {} more error{} (`--format json` lists every one)",
            self.unrendered(),
            if self.unrendered() == 1 { "" } else { "s" }
        )
    }
}

/// The most diagnostics rendered as text; JSON carries all of them.
pub const MAX_RENDERED: usize = 50;

/// Characters of a long line kept on each side of a diagnostic's span.
const WINDOW_CONTEXT: usize = 60;

/// Lines longer than this are shown as a window around the span.
const MAX_RENDERED_LINE: usize = 1000;

/// For a diagnostic on a line too long to draw, the window of that line around its main span
/// (`WINDOW_CONTEXT` characters each side, the span cut to the window) and the diagnostic with
/// its spans moved into the window (related spans elsewhere are dropped). `None` when every
/// line the diagnostic touches is short enough to draw whole.
fn window(src: &str, d: &Diagnostic) -> Option<(String, Diagnostic)> {
    let line_of = |at: usize| {
        let at = at.min(src.len());
        let start = src[..at].rfind('\n').map_or(0, |k| k + 1);
        let end = src[at..].find('\n').map_or(src.len(), |k| at + k);
        (start, end)
    };
    let spans = std::iter::once(&d.location).chain(d.related.iter().map(|(l, _)| l));
    // The lines of a span and the context line on each side (miette draws those too: a short
    // line under a 1.2 MB one was drawn with the long one in full).
    let long = spans.into_iter().any(|l| {
        let (a, _) = line_of(l.start);
        let (_, b) = line_of(l.end);
        let prev = if a > 0 { line_of(a - 1) } else { (a, a) };
        let next = if b < src.len() {
            line_of(b + 1)
        } else {
            (b, b)
        };
        b - a > MAX_RENDERED_LINE
            || prev.1 - prev.0 > MAX_RENDERED_LINE
            || next.1 - next.0 > MAX_RENDERED_LINE
    });
    if !long {
        return None;
    }
    let (line_start, line_end) = line_of(d.location.start);
    let floor = |mut k: usize| {
        while !src.is_char_boundary(k) {
            k -= 1;
        }
        k
    };
    let back = src[line_start..d.location.start]
        .char_indices()
        .rev()
        .nth(WINDOW_CONTEXT - 1)
        .map_or(line_start, |(k, _)| line_start + k);
    let end_of_span = d
        .location
        .end
        .min(floor((d.location.start + 200).min(line_end)));
    let ahead = src[end_of_span..line_end]
        .char_indices()
        .nth(WINDOW_CONTEXT)
        .map_or(line_end, |(k, _)| end_of_span + k);
    let text = src[back..ahead].to_string();
    let inside = |l: &Location| l.start >= back && l.end <= ahead;
    let moved = |l: &Location, end: usize| Location {
        start: l.start - back,
        end: end - back,
        line: 1,
        column: l.column,
    };
    let mut shifted = d.clone();
    shifted.location = moved(&d.location, end_of_span);
    shifted.related = d
        .related
        .iter()
        .filter(|(l, _)| inside(l))
        .map(|(l, t)| (moved(l, l.end), t.clone()))
        .collect();
    Some((text, shifted))
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} error{}",
            self.name,
            self.diagnostics.len(),
            if self.diagnostics.len() == 1 { "" } else { "s" }
        )
    }
}

impl std::error::Error for Failure {}

#[cfg(test)]
mod location_tests {
    use super::*;

    #[test]
    fn lines_and_character_columns_across_blocks() {
        let src = format!("ab\n{}é\nxyz", "α".repeat(5000));
        let index = SourceIndex::new(&src);
        let l = index.location(0, 1);
        assert_eq!((l.line, l.column), (1, 1));
        let at = src.find('é').unwrap();
        let l = index.location(at, at + 2);
        assert_eq!((l.line, l.column), (2, 5001));
        let at = src.find('z').unwrap();
        assert_eq!(index.location(at, at).column, 3);
        assert_eq!(index.location(at, at).line, 3);
        // The same as counting from the start.
        let before = &src[..at];
        assert_eq!(
            index.location(at, at).column,
            before.rsplit('\n').next().unwrap().chars().count() + 1
        );
    }
}
