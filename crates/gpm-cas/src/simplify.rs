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

/// The smallest expression equal to `e` found within the limits. Results are remembered for
/// the process (up to [`MEMO_ENTRIES`] expressions): a model that states the same factor many
/// times, or stages that simplify the same derivative again, saturate it once — an input with
/// 2 500 copies of one statement took 11 s in `gpmc check` without it.
pub fn simplify_with(e: &Expr, limits: &Limits) -> Expr {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    type Memo = Mutex<HashMap<(String, usize, usize, Duration), Expr>>;
    static MEMO: OnceLock<Memo> = OnceLock::new();
    let memo = MEMO.get_or_init(|| Mutex::new(HashMap::new()));
    let key = (e.to_string(), limits.nodes, limits.iterations, limits.time);
    if let Some(hit) = memo.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return hit;
    }
    let r = runner(limits).with_expr(e).run(&rewrites());
    let ex = Extractor::new(&r.egraph, AstSize);
    let best = ex.find_best(r.roots[0]).1;
    if let Ok(mut m) = memo.lock() {
        if m.len() >= MEMO_ENTRIES {
            m.clear();
        }
        m.insert(key, best.clone());
    }
    best
}

/// How many simplified expressions [`simplify_with`] remembers before it starts afresh.
pub const MEMO_ENTRIES: usize = 4096;

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
