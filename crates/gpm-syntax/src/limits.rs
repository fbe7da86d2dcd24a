//! Size and nesting limits, checked on the raw text before the grammar runs.
//!
//! The parser, the syntax tree's destructor and every later pass (lowering, the CAS, the
//! recognisers) walk expressions recursively, so an expression nested thousands deep —
//! `((((…1…))))`, `- - - … 1`, `1^1^…^1`, or a sum of 100 000 terms, which parses into a
//! left-leaning tree as deep as it is long — would overflow the stack. Rather than make every
//! pass iterative, the front end refuses such text with its own diagnostic: a tree can be no
//! deeper than the number of brackets plus operators on the path to any token, and that number
//! is bounded here, in one linear scan that recurses on nothing.

use crate::ast::Span;
use crate::error::ParseError;

/// The deepest an expression may be: brackets `( [ {` open around a token plus the operators
/// `+ - * / ^` before it in each enclosing bracket's current argument. Real models stay below
/// 20; the stack of every pass holds thousands.
pub const MAX_NESTING: usize = 256;

/// The deepest function calls may nest (`logistic(logistic(…))`): the symbolic passes (the CAS
/// and the recognisers) grow about cubically in it (64 deep took 0.6 s, 250 deep 35 s and
/// 3.7 GB in `check`); real models nest a few calls.
pub const MAX_CALL_NESTING: usize = 32;

/// The deepest `min(`/`max(` calls may nest: the recognisers rewrite each into a piecewise
/// form that holds both arguments, so the work doubles per level (12 deep: 0.08 s; 24 deep:
/// 20 s and 2.4 GB).
pub const MAX_MIN_MAX_NESTING: usize = 12;

/// The longest name (or number) accepted, in characters: names are printed in tables, CSV
/// headers and diagnostics, and a name of 65 536 characters once passed `check` only to break
/// the summary table's formatting.
pub const MAX_NAME_CHARS: usize = 256;

/// The largest model text accepted, in bytes (a real model is a few kilobytes).
pub const MAX_SOURCE_BYTES: usize = 4 << 20;

/// Refuse text too large, or nested too deeply, for the passes that follow.
pub fn check_limits(src: &str) -> Result<(), ParseError> {
    if src.len() > MAX_SOURCE_BYTES {
        return Err(ParseError::new(
            format!(
                "the model is {} bytes long; the limit is {} bytes",
                src.len(),
                MAX_SOURCE_BYTES
            ),
            Span::new(0, 0),
            "model too large",
        )
        .with_help("a model is a few declarations and statements; data belongs in --data"));
    }
    let bytes = src.as_bytes();
    // `open[k]` counts the operators seen so far in the current argument of the k-th enclosing
    // bracket (index 0: outside every bracket); `depth` is the brackets plus all those counts.
    let mut open: Vec<usize> = vec![0];
    // Per open bracket, whether it opened a call (`name(`) and whether that call is a
    // `min`/`max`; how many of each are open.
    let mut calls: Vec<(bool, bool)> = Vec::new();
    let mut call_depth = 0usize;
    let mut min_max_depth = 0usize;
    let mut depth = 0usize;
    let mut word = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        // Runs of name characters (a name or a number), counted in bytes: ASCII here.
        word = if c.is_ascii_alphanumeric() || c == b'_' {
            word + 1
        } else {
            0
        };
        if word > MAX_NAME_CHARS {
            return Err(ParseError::new(
                format!("a name or number longer than {MAX_NAME_CHARS} characters"),
                Span::new(i + 1 - word, i + 1),
                "too long",
            )
            .with_help("give it a shorter name"));
        }
        match c {
            b'/' if bytes.get(i + 1) == Some(&b'/') => i = skip_line(bytes, i),
            b'#' => i = skip_line(bytes, i),
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = match src[i + 2..].find("*/") {
                    Some(k) => i + 2 + k + 1,
                    None => bytes.len(),
                }
            }
            b'(' | b'[' | b'{' => {
                open.push(0);
                depth += 1;
                let name = if c == b'(' {
                    preceding_name(bytes, i)
                } else {
                    &[]
                };
                let call = !name.is_empty();
                let min_max = name == b"min" || name == b"max";
                calls.push((call, min_max));
                call_depth += call as usize;
                min_max_depth += min_max as usize;
                if min_max_depth > MAX_MIN_MAX_NESTING {
                    return Err(ParseError::new(
                        format!("`min`/`max` nested more than {MAX_MIN_MAX_NESTING} deep"),
                        Span::new(i, i + 1),
                        "nesting limit reached here",
                    )
                    .with_help("each level doubles the work of the symbolic passes; take the min/max of fewer terms"));
                }
                if call_depth > MAX_CALL_NESTING {
                    return Err(ParseError::new(
                        format!("function calls nested more than {MAX_CALL_NESTING} deep"),
                        Span::new(i, i + 1),
                        "call nesting limit reached here",
                    )
                    .with_help("name an inner part with `let` in the data block, or simplify the expression"));
                }
            }
            b')' | b']' | b'}' => {
                if open.len() > 1 {
                    depth -= 1 + open.pop().unwrap_or(0);
                }
                if let Some((call, min_max)) = calls.pop() {
                    call_depth -= call as usize;
                    min_max_depth -= min_max as usize;
                }
            }
            // A separator starts a new tree at this level.
            b';' | b',' => {
                let top = open.last_mut().expect("level 0 is never popped");
                depth -= *top;
                *top = 0;
            }
            b'+' | b'-' | b'*' | b'/' | b'^' => {
                *open.last_mut().expect("level 0 is never popped") += 1;
                depth += 1;
            }
            _ => {}
        }
        if depth > MAX_NESTING {
            return Err(ParseError::new(
                format!("expression nested more than {MAX_NESTING} deep"),
                Span::new(i, i + 1),
                "nesting limit reached here",
            )
            .with_help(
                "brackets, unary minuses, powers and the terms of a long sum each add a level; \
                 split the expression with `let` or write the sum as a `for` loop",
            ));
        }
        i += 1;
    }
    Ok(())
}

/// The name the `(` at `i` follows (spaces between allowed), empty for a grouping bracket.
fn preceding_name(bytes: &[u8], i: usize) -> &[u8] {
    let end = bytes[..i]
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |k| k + 1);
    let is_name = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
    let start = bytes[..end]
        .iter()
        .rposition(|b| !is_name(b))
        .map_or(0, |k| k + 1);
    &bytes[start..end]
}

/// The index of the newline ending the comment that starts at `i` (or the end of the text).
fn skip_line(bytes: &[u8], i: usize) -> usize {
    bytes[i..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |k| i + k)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(open: &str, mid: &str, close: &str, n: usize) -> String {
        format!("{}{}{}", open.repeat(n), mid, close.repeat(n))
    }

    #[test]
    fn shallow_text_passes_and_deep_text_is_refused_where_it_gets_deep() {
        let ok = nested("(", "1", ")", MAX_NESTING);
        assert!(check_limits(&ok).is_ok());
        let deep = nested("(", "1", ")", MAX_NESTING + 1);
        let e = check_limits(&deep).unwrap_err();
        assert_eq!(e.span.start, MAX_NESTING);
        assert!(e.message.contains("nested more than 256"));
    }

    #[test]
    fn operators_count_along_the_path_but_separators_reset_them() {
        assert!(check_limits(&"1+".repeat(300)).is_err());
        assert!(check_limits(&"-".repeat(300)).is_err());
        assert!(check_limits(&"1^".repeat(300)).is_err());
        // 300 short statements, and 300 short arguments, are fine.
        assert!(check_limits(&"x = 1 + 2;\n".repeat(300)).is_ok());
        assert!(check_limits(&format!("f({})", "1 + 2, ".repeat(300))).is_ok());
        // Operators inside a closed bracket no longer count.
        assert!(check_limits(&format!("{}1", "(1+1+1) * ".repeat(100))).is_ok());
    }

    #[test]
    fn calls_nest_at_most_32_deep_but_brackets_deeper() {
        let calls = |n: usize| format!("{}f[i]{}", "logistic(".repeat(n), ")".repeat(n));
        assert!(check_limits(&calls(MAX_CALL_NESTING)).is_ok());
        let e = check_limits(&calls(MAX_CALL_NESTING + 1)).unwrap_err();
        assert!(
            e.message.contains("calls nested more than 32"),
            "{}",
            e.message
        );
        // Plain brackets and calls side by side do not count as nested calls.
        assert!(check_limits(&nested("(", "1", ")", 100)).is_ok());
        assert!(check_limits(&"exp(1) + ".repeat(40)).is_ok());
        assert!(check_limits(&"x = exp(log(1));\n".repeat(100)).is_ok());
    }

    #[test]
    fn min_and_max_nest_at_most_12_deep() {
        let nest =
            |f: &str, n: usize| format!("{}1{}", format!("{f}(").repeat(n), ", 1)".repeat(n));
        assert!(check_limits(&nest("min", 12)).is_ok());
        assert!(check_limits(&nest("max", 13))
            .unwrap_err()
            .message
            .contains("`min`/`max` nested"));
        assert!(check_limits(&nest("log", 20)).is_ok());
        // `xmin(` is another name.
        assert!(check_limits(&nest("xmin", 20)).is_ok());
    }

    #[test]
    fn names_are_bounded() {
        let ok = format!("x{} = 1;", "a".repeat(MAX_NAME_CHARS - 1));
        assert!(check_limits(&ok).is_ok());
        let long = format!("x{} = 1;", "a".repeat(MAX_NAME_CHARS));
        let e = check_limits(&long).unwrap_err();
        assert!(e.message.contains("longer than 256"), "{}", e.message);
        assert_eq!(e.span.start, 0);
        // Many short names are fine.
        assert!(check_limits(&"abc ".repeat(10_000)).is_ok());
    }

    #[test]
    fn comments_are_skipped() {
        let c = format!(
            "// {}\n# {}\n/* {} */ x",
            "(".repeat(999),
            "-".repeat(999),
            "[".repeat(999)
        );
        assert!(check_limits(&c).is_ok());
    }

    #[test]
    fn oversized_text_is_refused_without_scanning() {
        let big = " ".repeat(MAX_SOURCE_BYTES + 1);
        assert!(check_limits(&big)
            .unwrap_err()
            .message
            .contains("bytes long"));
    }
}
