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
                    let x = stack.pop().unwrap();
                    stack.push(x * x);
                }
                Op::Recip => {
                    let x = stack.pop().unwrap();
                    stack.push(1.0 / x);
                }
                Op::Pow => {
                    let e = stack.pop().unwrap();
                    let b = stack.pop().unwrap();
                    stack.push(b.powf(e));
                }
                Op::Call(f) => {
                    let x = stack.pop().unwrap();
                    stack.push(f.apply(x));
                }
                Op::CallN(f, n) => {
                    let at = stack.len() - n;
                    let v = f.apply_args(&stack[at..]);
                    stack.truncate(at);
                    stack.push(v);
                }
                Op::LogLogistic => {
                    let x = stack.pop().unwrap();
                    stack.push(gpm_special::log_logistic(x));
                }
                Op::LogNormalCdf => {
                    let x = stack.pop().unwrap();
                    stack.push(gpm_special::log_normal_cdf(x));
                }
            }
        }
        stack.pop().unwrap_or(f64::NAN)
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
                T::Num(x) if x == 2.0 => ops.push(Op::Square),
                T::Num(x) if x == -1.0 => ops.push(Op::Recip),
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
