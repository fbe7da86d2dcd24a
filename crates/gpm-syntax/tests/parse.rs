//! Parser tests: precedence, spans, and a print-then-reparse round trip over random expressions.

use gpm_syntax::{parse, BinOp, Expr, ExprKind, Stmt};
use proptest::prelude::*;

fn target_expr(src_expr: &str) -> Expr {
    let p = parse(&format!("model {{ target += {src_expr}; }}")).unwrap();
    match &p.model[0] {
        Stmt::Target { expr, .. } => expr.clone(),
        s => panic!("unexpected {s:?}"),
    }
}

#[test]
fn precedence_and_associativity() {
    assert_eq!(
        target_expr("a + b * c ^ d").to_string(),
        "(a + (b * (c ^ d)))"
    );
    assert_eq!(target_expr("a - b - c").to_string(), "((a - b) - c)");
    assert_eq!(target_expr("a ^ b ^ c").to_string(), "(a ^ (b ^ c))");
    assert_eq!(target_expr("-a ^ 2").to_string(), "(-((a ^ 2)))");
    assert_eq!(
        target_expr("x[i] * f[g[i]]").to_string(),
        "(x[i] * f[g[i]])"
    );
    assert_eq!(target_expr("-2.5e-1").to_string(), "(-0.25)");
}

#[test]
fn spans_point_at_the_text() {
    let src = "model { target += log(logistic(y[i] * f[i])); }";
    let e = target_expr("log(logistic(y[i] * f[i]))");
    let p = parse(src).unwrap();
    let Stmt::Target { expr, span } = &p.model[0] else {
        panic!()
    };
    assert_eq!(
        &src[span.start..span.end],
        "target += log(logistic(y[i] * f[i]));"
    );
    assert_eq!(
        &src[expr.span.start..expr.span.end],
        "log(logistic(y[i] * f[i]))"
    );
    let ExprKind::Call(c) = &e.kind else { panic!() };
    assert_eq!(c.func.name, "log");
}

#[test]
fn declarations_blocks_and_loops() {
    let src = "data { N : int; y : int[N] in {-1, 1}; k : int[N] in 1..C; } \
               hyper { a : real in 0.. = learn(1.0); b : real ~ gamma(2, 1); } \
               latent { f : vector[N] ~ gp(X, 2 * sqexp(a) + linear(), inducing = 10); } \
               model { for i in 1..N { y[i] ~ bernoulli_logit(f[i]); } factor(1); }";
    let p = parse(src).unwrap();
    assert_eq!(p.data.len(), 3);
    assert_eq!(p.hypers.len(), 2);
    assert_eq!(p.latents[0].prior.args.len(), 3);
    assert_eq!(
        p.latents[0].prior.args[2].name.as_ref().unwrap().name,
        "inducing"
    );
    let Stmt::For { lo, hi, body, .. } = &p.model[0] else {
        panic!()
    };
    assert_eq!(
        (lo.to_string(), hi.to_string(), body.len()),
        ("1".into(), "N".into(), 1)
    );
}

#[test]
fn errors_point_at_the_offending_token() {
    let src = "data { N : int }";
    let e = parse(src).unwrap_err();
    assert_eq!(&src[e.span.start..e.span.end], "}");
    assert!(e.message.contains("expected"), "{}", e.message);
    let e = parse("data { N : int; } model { y ~ ; }").unwrap_err();
    assert!(e.message.contains("found `;`"), "{}", e.message);
}

const KEYWORDS: &[&str] = &[
    "in", "for", "let", "int", "real", "data", "hyper", "model", "latent", "target", "factor",
    "learn", "vector", "matrix",
];

fn ident() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_]{0,3}".prop_filter("not a keyword", |s| !KEYWORDS.contains(&s.as_str()))
}

fn arb_expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        ident(),
        (0u32..1000).prop_map(|n| n.to_string()),
        (0u32..1000, 1u32..100).prop_map(|(a, b)| format!("{a}.{b}")),
    ];
    leaf.prop_recursive(5, 40, 3, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop_oneof![
                    Just("+"),
                    Just("-"),
                    Just("*"),
                    Just("/"),
                    Just("^"),
                    Just("==")
                ],
                inner.clone()
            )
                .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            inner.clone().prop_map(|a| format!("-({a})")),
            (ident(), proptest::collection::vec(inner.clone(), 1..3))
                .prop_map(|(f, args)| format!("{f}({})", args.join(", "))),
            (ident(), inner.clone()).prop_map(|(v, i)| format!("{v}[{i}]")),
            // A column `X[, j]` reads as `col(X, j)`.
            (ident(), inner).prop_map(|(v, j)| format!("{v}[, {j}]")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Printing the AST and parsing it again gives the same printed AST.
    #[test]
    fn print_parse_round_trip(src in arb_expr()) {
        let once = target_expr(&src).to_string();
        let twice = target_expr(&once).to_string();
        prop_assert_eq!(once, twice);
    }
}

#[test]
fn data_lets_keep_their_place_among_the_declarations() {
    let p = gpm_syntax::parse(
        "data { N : int; x : vector[N]; let lx = log(x); X : matrix[N, 2]; let c = X[, 2] == 1; }",
    )
    .unwrap();
    assert_eq!(p.data.len(), 3);
    let lets: Vec<(&str, usize)> = p
        .data_lets
        .iter()
        .map(|l| (l.name.name.as_str(), l.after))
        .collect();
    assert_eq!(lets, [("lx", 2), ("c", 3)]);
    assert_eq!(p.data_lets[1].value.to_string(), "(col(X, 2) == 1)");
}

#[test]
fn binop_symbols() {
    assert_eq!(BinOp::Pow.symbol(), "^");
}
