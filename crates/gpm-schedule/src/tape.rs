//! Expressions compiled to a flat stack program over numbered slots: evaluating one costs a
//! few dozen arithmetic operations and no allocation, which matters because every auxiliary
//! variable's parameters are evaluated at every observation in every Gibbs sweep.

use gpm_augment::{Role, T};
use gpm_ir::SxFunc;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Const(f64),
    Slot(usize),
    Add(usize),
    Mul(usize),
    Square,
    Recip,
    Pow,
    /// A unary function.
    Call(SxFunc),
    /// A function of this many arguments (`max`, `min`, `poisson_power_moment`).
    CallN(SxFunc, usize),
    /// `log σ(x)`, overflow-safe (`log(logistic(x))` fused).
    LogLogistic,
    /// `log Φ(x)`, finite far into the lower tail (`log(normal_cdf(x))` fused).
    LogNormalCdf,
}

/// A compiled expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Tape {
    ops: Vec<Op>,
    depth: usize,
}

/// A symbol the tape reads, by its slot.
pub type SlotOf<'a> = &'a dyn Fn(Role, &str) -> Option<usize>;

/// Observations [`Tape::eval_chunk`] evaluates together: each op runs as one loop over them,
/// so the interpretation costs once per chunk instead of once per observation.
pub const CHUNK: usize = 64;

/// One slot's values over a chunk of observations.
#[derive(Debug, Clone, Copy)]
pub enum Lane<'a> {
    /// A value per observation (at least as many as the chunk has).
    Each(&'a [f64]),
    /// One value for every observation (a constant, a hyperparameter).
    All(f64),
}

impl Tape {
    /// Compile; `Err` names a symbol that has no slot.
    pub fn compile(t: &T, slot: SlotOf) -> Result<Tape, String> {
        let mut ops = Vec::new();
        emit(t, slot, &mut ops)?;
        // Stack depth bound: the number of ops is always enough.
        let depth = ops.len();
        Ok(Tape { ops, depth })
    }

    /// A constant.
    pub fn constant(v: f64) -> Tape {
        Tape {
            ops: vec![Op::Const(v)],
            depth: 1,
        }
    }

    /// One slot's value.
    pub fn slot(k: usize) -> Tape {
        Tape {
            ops: vec![Op::Slot(k)],
            depth: 1,
        }
    }

    /// The slot the tape is, when it is one slot read as it is (`variance`, not `2 * variance`).
    pub fn as_slot(&self) -> Option<usize> {
        match self.ops.as_slice() {
            [Op::Slot(k)] => Some(*k),
            _ => None,
        }
    }

    /// The slots the tape reads.
    pub fn slots(&self) -> impl Iterator<Item = usize> + '_ {
        self.ops.iter().filter_map(|op| match op {
            Op::Slot(k) => Some(*k),
            _ => None,
        })
    }

    /// Evaluate with these slot values; `stack` is scratch space reused across calls.
    #[inline]
    pub fn eval(&self, slots: &[f64], stack: &mut Vec<f64>) -> f64 {
        stack.clear();
        if stack.capacity() < self.depth {
            stack.reserve(self.depth);
        }
        for op in &self.ops {
            match *op {
                Op::Const(v) => stack.push(v),
                Op::Slot(k) => stack.push(slots[k]),
                Op::Add(n) => {
                    let at = stack.len() - n;
                    let s: f64 = stack[at..].iter().sum();
                    stack.truncate(at);
                    stack.push(s);
                }
                Op::Mul(n) => {
                    let at = stack.len() - n;
                    let s: f64 = stack[at..].iter().product();
                    stack.truncate(at);
                    stack.push(s);
                }
                Op::Square => {
                    let x = stack
                        .pop()
                        .expect("a compiled tape pushes every operand before its op");
                    stack.push(x * x);
                }
                Op::Recip => {
                    let x = stack
                        .pop()
                        .expect("a compiled tape pushes every operand before its op");
                    stack.push(1.0 / x);
                }
                Op::Pow => {
                    let e = stack
                        .pop()
                        .expect("a compiled tape pushes every operand before its op");
                    let b = stack
                        .pop()
                        .expect("a compiled tape pushes every operand before its op");
                    stack.push(b.powf(e));
                }
                Op::Call(f) => {
                    let x = stack
                        .pop()
                        .expect("a compiled tape pushes every operand before its op");
                    stack.push(f.apply(x));
                }
                Op::CallN(f, n) => {
                    let at = stack.len() - n;
                    let v = f.apply_args(&stack[at..]);
                    stack.truncate(at);
                    stack.push(v);
                }
                Op::LogLogistic => {
                    let x = stack
                        .pop()
                        .expect("a compiled tape pushes every operand before its op");
                    stack.push(gpm_special::log_logistic(x));
                }
                Op::LogNormalCdf => {
                    let x = stack
                        .pop()
                        .expect("a compiled tape pushes every operand before its op");
                    stack.push(gpm_special::log_normal_cdf(x));
                }
            }
        }
        stack.pop().unwrap_or(f64::NAN)
    }

    /// Evaluate at `out.len()` (at most [`CHUNK`]) observations at once, slot `k` reading
    /// `lanes[k]`: `out[i]` is what [`Tape::eval`] gives at observation `i`, the same
    /// operations in the same order. `stack` is scratch space reused across calls.
    pub fn eval_chunk(&self, lanes: &[Lane], out: &mut [f64], stack: &mut Vec<f64>) {
        let n = out.len();
        assert!(n <= CHUNK, "a chunk of {n} observations");
        if stack.len() < self.depth * CHUNK {
            stack.resize(self.depth * CHUNK, 0.0);
        }
        // Stack entry `e` is the row `stack[e * CHUNK..][..n]`.
        let row = |e: usize| e * CHUNK..e * CHUNK + n;
        let mut sp = 0;
        for op in &self.ops {
            match *op {
                Op::Const(v) => {
                    stack[row(sp)].fill(v);
                    sp += 1;
                }
                Op::Slot(k) => {
                    match lanes[k] {
                        Lane::Each(x) => stack[row(sp)].copy_from_slice(&x[..n]),
                        Lane::All(v) => stack[row(sp)].fill(v),
                    }
                    sp += 1;
                }
                Op::Add(m) | Op::Mul(m) => {
                    let add = matches!(op, Op::Add(_));
                    if m == 0 {
                        // An empty sum or product: `eval`'s fold gives the identity.
                        stack[row(sp)].fill(if add { -0.0 } else { 1.0 });
                        sp += 1;
                        continue;
                    }
                    let at = sp - m;
                    let (dst, rest) = stack[at * CHUNK..sp * CHUNK].split_at_mut(CHUNK);
                    // `eval` folds from the sum's (product's) identity in order: so here.
                    let start = if add { -0.0 } else { 1.0 };
                    dst[..n]
                        .iter_mut()
                        .for_each(|d| *d = if add { start + *d } else { start * *d });
                    for e in 0..m - 1 {
                        let src = &rest[e * CHUNK..e * CHUNK + n];
                        if add {
                            dst[..n].iter_mut().zip(src).for_each(|(d, s)| *d += s);
                        } else {
                            dst[..n].iter_mut().zip(src).for_each(|(d, s)| *d *= s);
                        }
                    }
                    sp = at + 1;
                }
                Op::Square => stack[row(sp - 1)].iter_mut().for_each(|x| *x *= *x),
                Op::Recip => stack[row(sp - 1)].iter_mut().for_each(|x| *x = 1.0 / *x),
                Op::Pow => {
                    let (b, e) = stack[(sp - 2) * CHUNK..sp * CHUNK].split_at_mut(CHUNK);
                    b[..n]
                        .iter_mut()
                        .zip(&e[..n])
                        .for_each(|(b, e)| *b = b.powf(*e));
                    sp -= 1;
                }
                Op::Call(f) => f.apply_in_place(&mut stack[row(sp - 1)]),
                Op::CallN(f, m) => {
                    let at = sp - m;
                    let mut args = vec![0.0; m];
                    for i in 0..n {
                        for (j, a) in args.iter_mut().enumerate() {
                            *a = stack[(at + j) * CHUNK + i];
                        }
                        stack[at * CHUNK + i] = f.apply_args(&args);
                    }
                    sp = at + 1;
                }
                Op::LogLogistic => gpm_special::log_logistic_slice(&mut stack[row(sp - 1)]),
                Op::LogNormalCdf => stack[row(sp - 1)]
                    .iter_mut()
                    .for_each(|x| *x = gpm_special::log_normal_cdf(*x)),
            }
        }
        if sp == 0 {
            out.fill(f64::NAN);
        } else {
            out.copy_from_slice(&stack[row(sp - 1)]);
        }
    }
}

fn emit(t: &T, slot: SlotOf, ops: &mut Vec<Op>) -> Result<(), String> {
    match t {
        T::Num(v) => ops.push(Op::Const(*v)),
        T::Sym(r, n) => {
            ops.push(Op::Slot(slot(*r, n).ok_or_else(|| {
                format!("no value for the symbol `{n}` ({r:?})")
            })?))
        }
        T::Add(v) => {
            for u in v {
                emit(u, slot, ops)?;
            }
            ops.push(Op::Add(v.len()));
        }
        T::Mul(v) => {
            for u in v {
                emit(u, slot, ops)?;
            }
            ops.push(Op::Mul(v.len()));
        }
        T::Pow(a, e) => {
            emit(a, slot, ops)?;
            match **e {
                T::Num(2.0) => ops.push(Op::Square),
                T::Num(-1.0) => ops.push(Op::Recip),
                _ => {
                    emit(e, slot, ops)?;
                    ops.push(Op::Pow);
                }
            }
        }
        // log σ(x) and log Φ(x) in log space: the naive forms are −∞ where σ or Φ underflows
        // (then 0·(−∞) = NaN for a label that zeroes the term), the fused ones stay finite.
        T::Call(SxFunc::Log, v)
            if matches!(&v[0], T::Call(SxFunc::Logistic | SxFunc::NormalCdf, _)) =>
        {
            let T::Call(inner, x) = &v[0] else {
                unreachable!()
            };
            emit(&x[0], slot, ops)?;
            ops.push(if *inner == SxFunc::Logistic {
                Op::LogLogistic
            } else {
                Op::LogNormalCdf
            });
        }
        T::Call(f, v) => {
            for u in v {
                emit(u, slot, ops)?;
            }
            ops.push(if v.len() == 1 {
                Op::Call(*f)
            } else {
                Op::CallN(*f, v.len())
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Expressions over a predictor `eta`, a datum `y`, a hyperparameter `h` and numbers, with
    /// every op the compiler emits.
    fn expression() -> impl Strategy<Value = T> {
        let leaf = prop_oneof![
            (-3.0..3.0f64).prop_map(T::Num),
            Just(T::sym(Role::Predictor, "eta")),
            Just(T::sym(Role::Data, "y")),
            Just(T::sym(Role::Hyper, "h")),
        ];
        leaf.prop_recursive(4, 24, 3, |inner| {
            let unary = prop_oneof![
                Just(SxFunc::Exp),
                Just(SxFunc::Log1p),
                Just(SxFunc::Abs),
                Just(SxFunc::Tanh),
                Just(SxFunc::Logistic),
                Just(SxFunc::Softplus),
                Just(SxFunc::NormalCdf),
            ];
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(T::Add),
                prop::collection::vec(inner.clone(), 0..4).prop_map(T::Mul),
                inner
                    .clone()
                    .prop_map(|a| T::Pow(Box::new(a), Box::new(T::Num(2.0)))),
                inner
                    .clone()
                    .prop_map(|a| T::Pow(Box::new(a), Box::new(T::Num(-1.0)))),
                (inner.clone(), inner.clone()).prop_map(|(a, e)| T::Pow(Box::new(a), Box::new(e))),
                (unary, inner.clone()).prop_map(|(f, a)| T::Call(f, vec![a])),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| T::Call(SxFunc::Max, vec![a, b])),
                inner
                    .clone()
                    .prop_map(|a| T::Call(SxFunc::Log, vec![T::Call(SxFunc::Logistic, vec![a])])),
                inner.prop_map(|a| T::Call(SxFunc::Log, vec![T::Call(SxFunc::NormalCdf, vec![a])])),
            ]
        })
    }

    fn slot(r: Role, n: &str) -> Option<usize> {
        match (r, n) {
            (Role::Predictor, "eta") => Some(0),
            (Role::Data, "y") => Some(1),
            (Role::Hyper, "h") => Some(2),
            _ => None,
        }
    }

    proptest! {
        /// A chunk's values are `eval`'s at each observation, bit for bit (NaN where it is NaN).
        #[test]
        fn eval_chunk_is_eval_at_each_observation(
            t in expression(),
            eta in prop::collection::vec(-5.0..5.0f64, 1..=CHUNK),
            h in 0.1..4.0f64,
        ) {
            let tape = Tape::compile(&t, &slot).unwrap();
            let y: Vec<f64> = eta.iter().map(|e| (e * 7.3).sin()).collect();
            let mut out = vec![0.0; eta.len()];
            let mut chunk_stack = Vec::new();
            tape.eval_chunk(&[Lane::Each(&eta), Lane::Each(&y), Lane::All(h)], &mut out, &mut chunk_stack);
            let mut stack = Vec::new();
            for i in 0..eta.len() {
                let one = tape.eval(&[eta[i], y[i], h], &mut stack);
                prop_assert!(
                    one.to_bits() == out[i].to_bits() || (one.is_nan() && out[i].is_nan()),
                    "observation {}: eval {} chunk {}", i, one, out[i]
                );
            }
        }
    }
}
