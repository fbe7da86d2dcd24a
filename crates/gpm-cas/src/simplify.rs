//! Equality saturation: simplification by extraction, and equivalence of two expressions.

use crate::analysis::ConstantFold;
use crate::language::{Expr, Math};
use crate::rules::rewrites;
use egg::{AstSize, EGraph, Extractor, Runner};
use std::time::Duration;

/// Bounds on saturation (the rule set contains associativity and distribution, which never
/// saturate on their own).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest e-graph.
    pub nodes: usize,
    /// Most iterations.
    pub iterations: usize,
    /// Most time.
    pub time: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            nodes: 20_000,
            iterations: 12,
            time: Duration::from_millis(500),
        }
    }
}

fn runner(limits: &Limits) -> Runner<Math, ConstantFold> {
    Runner::default()
        .with_node_limit(limits.nodes)
        .with_iter_limit(limits.iterations)
        .with_time_limit(limits.time)
}

/// The smallest expression equal to `e` found within the limits.
pub fn simplify_with(e: &Expr, limits: &Limits) -> Expr {
    let r = runner(limits).with_expr(e).run(&rewrites());
    let ex = Extractor::new(&r.egraph, AstSize);
    ex.find_best(r.roots[0]).1
}

/// [`simplify_with`] with the default limits.
pub fn simplify(e: &Expr) -> Expr {
    simplify_with(e, &Limits::default())
}

/// Whether the rules prove `a = b` within the limits (`false` means "not proven").
pub fn equivalent(a: &Expr, b: &Expr) -> bool {
    let r = runner(&Limits::default())
        .with_expr(a)
        .with_expr(b)
        .with_hook(|r| {
            if r.egraph.find(r.roots[0]) == r.egraph.find(r.roots[1]) {
                Err("proved".into())
            } else {
                Ok(())
            }
        })
        .run(&rewrites());
    r.egraph.find(r.roots[0]) == r.egraph.find(r.roots[1])
}

/// The saturated e-graph of several expressions, for searching forms in it.
pub fn saturate(exprs: &[Expr], limits: &Limits) -> (EGraph<Math, ConstantFold>, Vec<egg::Id>) {
    let mut r = runner(limits);
    for e in exprs {
        r = r.with_expr(e);
    }
    let r = r.run(&rewrites());
    (r.egraph, r.roots)
}
