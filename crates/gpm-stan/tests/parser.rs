//! The Stan parser: operator precedence as Stan defines it (a random arithmetic expression,
//! printed with minimal parentheses, parses to a tree that evaluates to the same number), and
//! no input — however malformed — makes it panic.

use gpm_stan::ast::{BinOp, ExprKind, Stmt};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum T {
    Num(u8),
    Neg(Box<T>),
    Bin(char, Box<T>, Box<T>),
}

fn tree() -> impl Strategy<Value = T> {
    let leaf = (1u8..9).prop_map(T::Num);
    leaf.prop_recursive(5, 32, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|t| T::Neg(Box::new(t))),
            (
                prop_oneof![Just('+'), Just('-'), Just('*'), Just('/'), Just('^')],
                inner.clone(),
                inner
            )
                .prop_map(|(op, a, b)| T::Bin(op, Box::new(a), Box::new(b))),
        ]
    })
}

fn value(t: &T) -> f64 {
    match t {
        T::Num(v) => *v as f64,
        T::Neg(a) => -value(a),
        T::Bin(op, a, b) => {
            let (a, b) = (value(a), value(b));
            match op {
                '+' => a + b,
                '-' => a - b,
                '*' => a * b,
                '/' => a / b,
                _ => a.powf(b),
            }
        }
    }
}

/// Binding strength: `+ -` 1, `* /` 2, unary minus 3, `^` 4 (right-associative), atoms 5.
fn level(t: &T) -> u8 {
    match t {
        T::Num(_) => 5,
        T::Neg(_) => 3,
        T::Bin('+' | '-', ..) => 1,
        T::Bin('*' | '/', ..) => 2,
        T::Bin(..) => 4,
    }
}

/// Stan text with parentheses only where precedence needs them.
fn text(t: &T) -> String {
    let wrap = |s: String, yes: bool| if yes { format!("({s})") } else { s };
    match t {
        T::Num(v) => v.to_string(),
        T::Neg(a) => format!("-{}", wrap(text(a), level(a) < 3)),
        T::Bin(op, a, b) => {
            let p = level(t);
            let (left, right) = if *op == '^' {
                (level(a) <= p, level(b) < p)
            } else {
                (level(a) < p, level(b) <= p)
            };
            format!("{} {op} {}", wrap(text(a), left), wrap(text(b), right))
        }
    }
}

fn eval(e: &gpm_stan::ast::Expr) -> f64 {
    match &e.kind {
        ExprKind::Num { value, .. } => *value,
        ExprKind::Neg(a) => -eval(a),
        ExprKind::Binary(op, a, b) => {
            let (a, b) = (eval(a), eval(b));
            match op {
                BinOp::Add => a + b,
                BinOp::Sub => a - b,
                BinOp::Mul => a * b,
                BinOp::Div => a / b,
                BinOp::Pow => a.powf(b),
                other => panic!("unexpected {other:?}"),
            }
        }
        other => panic!("unexpected {other:?}"),
    }
}

fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

proptest! {
    #[test]
    fn precedence_is_stans(t in tree()) {
        let src = format!("transformed data {{ real x = {}; }}", text(&t));
        let p = gpm_stan::parse(&src).unwrap_or_else(|e| panic!("{src}: {e}"));
        let Stmt::Decl(d) = &p.transformed_data[0] else { panic!("{src}") };
        let got = eval(d.value.as_ref().unwrap());
        prop_assert!(same(got, value(&t)), "{} parsed to {} (expected {})", src, got, value(&t));
    }

    #[test]
    fn no_input_panics(src in "[a-z{}()\\[\\];~+*/<>=,|'0-9 .\n-]{0,80}") {
        let _ = gpm_stan::translate(&src);
    }

    #[test]
    fn no_mutated_program_panics(cut in 0usize..400, insert in "[{}()\\[\\];~+*<>=,|' a-z0-9-]{0,4}") {
        let base = "data { int<lower=0> N; array[N] int<lower=0, upper=1> y; matrix[N, 2] X; }
            parameters { real a; vector[2] b; real<lower=0> s; }
            model { a ~ normal(0, s); b ~ student_t(3, 0, 1); s ~ exponential(1); y ~ bernoulli_logit(a + X * b); }";
        let k = cut.min(base.len());
        let k = (0..=k).rev().find(|&i| base.is_char_boundary(i)).unwrap_or(0);
        let src = format!("{}{}{}", &base[..k], insert, &base[k..]);
        let _ = gpm_stan::translate(&src);
    }
}

#[test]
fn unary_minus_binds_looser_than_power() {
    let p = gpm_stan::parse("transformed data { real x = -2 ^ 2; }").unwrap();
    let Stmt::Decl(d) = &p.transformed_data[0] else {
        panic!()
    };
    assert_eq!(eval(d.value.as_ref().unwrap()), -4.0);
}
