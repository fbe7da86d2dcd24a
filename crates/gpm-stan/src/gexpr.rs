//! Building `.gpm` expressions: spans set to the Stan text they stand for, formulas written as
//! `.gpm` text with placeholders (`A`, `B`, ... for arguments, `Y` for the variate), and the
//! small constructors the translation uses.

use crate::error::StanError;
use gpm_syntax as g;

/// The same expression with every span set to `span` (an inlined definition points at its use).
pub fn respan(mut x: g::Expr, span: g::Span) -> g::Expr {
    fn go(x: &mut g::Expr, span: g::Span) {
        x.span = span;
        match &mut x.kind {
            g::ExprKind::Neg(a) => go(a, span),
            g::ExprKind::Binary(_, a, b) => {
                go(a, span);
                go(b, span);
            }
            g::ExprKind::Call(c) => {
                c.span = span;
                c.func.span = span;
                c.args.iter_mut().for_each(|a| go(&mut a.value, span));
            }
            g::ExprKind::Index(a, ix) => {
                go(a, span);
                ix.iter_mut().for_each(|i| go(i, span));
            }
            _ => {}
        }
    }
    go(&mut x, span);
    x
}

/// A `.gpm` formula with `A`, `B`, ... standing for `args`, every span set to `span`.
pub fn formula(text: &str, args: &[g::Expr], span: g::Span) -> Result<g::Expr, StanError> {
    let template = parse_formula(text).ok_or_else(|| {
        StanError::new(
            "stan::internal",
            format!("the formula `{text}` does not parse (please report)"),
            span,
        )
    })?;
    Ok(substitute(respan(template, span), &|name| {
        let k = match name {
            "A" => 0,
            "B" => 1,
            "C" => 2,
            "D" => 3,
            "Y" => return args.last().cloned(),
            _ => return None,
        };
        args.get(k).cloned()
    }))
}

/// Parse a `.gpm` expression by itself.
fn parse_formula(text: &str) -> Option<g::Expr> {
    let program = g::parse(&format!("model {{ target += {text}; }}")).ok()?;
    match program.model.into_iter().next()? {
        g::Stmt::Target { expr, .. } => Some(expr),
        _ => None,
    }
}

/// Replace the placeholders of a template.
pub fn substitute(x: g::Expr, by: &dyn Fn(&str) -> Option<g::Expr>) -> g::Expr {
    let span = x.span;
    let kind = match x.kind {
        g::ExprKind::Var(v) => match by(&v) {
            Some(r) => return r,
            None => g::ExprKind::Var(v),
        },
        g::ExprKind::Neg(a) => g::ExprKind::Neg(Box::new(substitute(*a, by))),
        g::ExprKind::Binary(op, a, b) => g::ExprKind::Binary(
            op,
            Box::new(substitute(*a, by)),
            Box::new(substitute(*b, by)),
        ),
        g::ExprKind::Call(mut c) => {
            c.args = c
                .args
                .into_iter()
                .map(|a| g::Arg {
                    name: a.name,
                    value: substitute(a.value, by),
                })
                .collect();
            g::ExprKind::Call(c)
        }
        g::ExprKind::Index(a, ix) => g::ExprKind::Index(
            Box::new(substitute(*a, by)),
            ix.into_iter().map(|i| substitute(i, by)).collect(),
        ),
        k => k,
    };
    g::Expr { kind, span }
}

pub fn bin(op: g::BinOp, a: g::Expr, b: g::Expr, span: g::Span) -> g::Expr {
    g::Expr {
        kind: g::ExprKind::Binary(op, Box::new(a), Box::new(b)),
        span,
    }
}

pub fn num(v: f64, span: g::Span) -> g::Expr {
    g::Expr {
        kind: g::ExprKind::Num {
            value: v,
            is_int: v.fract() == 0.0,
        },
        span,
    }
}
