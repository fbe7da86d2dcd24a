//! The interpreter: statements run in order on an environment of slots, expressions evaluate
//! to values with their tape nodes, `~` and `target +=` add to the target.

use crate::ad::{Tape, R};
use crate::error::{Eval, EvalError};
use crate::index::{self, Ix};
use crate::program::{Decl, Expr, ExprKind, FunId, Function, Idx, SlotId, Stmt};
use crate::transform::Shape;
use crate::value::Val;
use crate::{functions, lpdf, ode, ops};
use gpm_stan::ast::{AssignOp, BinOp};

/// A `while` loop stops with an error after this many turns (a loop that cannot end would
/// otherwise hold a chain forever).
pub const MAX_WHILE_TURNS: u64 = 100_000_000;

/// How a statement ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// On to the next statement.
    Next,
    /// `break`
    Break,
    /// `continue`
    Continue,
    /// `return` (its value in [`Machine::returned`]).
    Return,
}

/// Nested user-function calls allowed before the run stops (a recursion that does not end).
pub const MAX_CALL_DEPTH: usize = 1_000;

/// The operator of a compound assignment (`+=` is `+`).
fn compound(op: AssignOp) -> BinOp {
    match op {
        AssignOp::Add => BinOp::Add,
        AssignOp::Sub => BinOp::Sub,
        AssignOp::Mul => BinOp::Mul,
        AssignOp::Div => BinOp::Div,
        AssignOp::EltMul => BinOp::EltMul,
        AssignOp::EltDiv | AssignOp::Set => BinOp::EltDiv,
    }
}

/// An integer literal or a variable holding an int (an index expression with no side effect).
fn is_int_leaf(e: &Expr, m: &Machine) -> bool {
    match &e.kind {
        ExprKind::Int(_) => true,
        ExprKind::Slot(s) => matches!(m.get(*s), Val::Int(_)),
        _ => false,
    }
}

/// An environment being evaluated: the fixed slots (data and transformed data, read only) and
/// the rest, the tape, and the target's terms.
pub struct Machine<'a> {
    /// The tape.
    pub tape: Tape,
    fixed: &'a [Val],
    slots: Vec<Val>,
    functions: &'a [Function],
    returned: Option<Val>,
    depth: usize,
    /// The target's terms (`~`, `target +=`, Jacobians).
    pub target: Vec<R>,
    /// The random numbers of `_rng` calls (none while the log density is evaluated).
    pub rng: Option<rand_chacha::ChaCha8Rng>,
}

impl<'a> Machine<'a> {
    /// A machine over these fixed slots with `total` slots in all, calling `functions`.
    pub fn new(
        tape: Tape,
        fixed: &'a [Val],
        total: usize,
        functions: &'a [Function],
    ) -> Machine<'a> {
        Machine {
            tape,
            fixed,
            slots: vec![Val::Int(0); total.saturating_sub(fixed.len())],
            functions,
            returned: None,
            depth: 0,
            target: Vec::new(),
            rng: None,
        }
    }

    /// The value in a slot.
    pub fn get(&self, s: SlotId) -> &Val {
        if s.0 < self.fixed.len() {
            &self.fixed[s.0]
        } else {
            &self.slots[s.0 - self.fixed.len()]
        }
    }

    /// Set a slot (not a fixed one).
    pub fn put(&mut self, s: SlotId, v: Val) -> Eval<()> {
        let n = self.fixed.len();
        match s.0.checked_sub(n).and_then(|k| self.slots.get_mut(k)) {
            Some(slot) => {
                *slot = v;
                Ok(())
            }
            None => Err(EvalError::new("data cannot be assigned here")),
        }
    }

    /// Every slot's value (for the end of `transformed data`: they become fixed).
    pub fn into_slots(self) -> Vec<Val> {
        let mut all = self.fixed.to_vec();
        all.extend(self.slots);
        all
    }

    /// Run statements.
    pub fn run(&mut self, stmts: &[Stmt]) -> Eval<Flow> {
        for s in stmts {
            let flow = self.stmt(s)?;
            if flow != Flow::Next {
                return Ok(flow);
            }
        }
        Ok(Flow::Next)
    }

    /// The shape of a declaration, its sizes evaluated here.
    pub fn shape(&mut self, d: &Decl) -> Eval<Shape> {
        let size = |m: &mut Machine, e: &Expr| -> Eval<usize> {
            let v = m.expr(e)?;
            crate::value::size(&v).map_err(|err| err.at(e.span))
        };
        Ok(Shape {
            base: d.ty.base,
            sizes: d
                .ty
                .sizes
                .iter()
                .map(|e| size(self, e))
                .collect::<Eval<_>>()?,
            array: d
                .ty
                .array
                .iter()
                .map(|e| size(self, e))
                .collect::<Eval<_>>()?,
        })
    }

    // One match over the statement kinds of the interpreted language, one arm each (issue 51:
    // a dispatch, kept whole; an arm that grows past a few lines gets its own function).
    fn stmt(&mut self, s: &Stmt) -> Eval<Flow> {
        match s {
            Stmt::Decl(d, value) => {
                let empty = if d.ty.sizes.is_empty() && d.ty.array.is_empty() {
                    match d.ty.base {
                        crate::program::Base::Int => Val::Int(i64::MIN),
                        _ => Val::Real(R::c(f64::NAN)),
                    }
                } else {
                    self.shape(d)?.empty()
                };
                self.put(d.slot, empty)?;
                if let Some(v) = value {
                    let v = self.expr(v)?;
                    let mut cur = self.get(d.slot).clone();
                    index::set(&mut cur, &[], v).map_err(|e| e.at(d.span))?;
                    self.put(d.slot, cur)?;
                }
            }
            Stmt::Assign {
                slot,
                indices,
                op,
                value,
                span,
            } => self
                .assign(*slot, indices, *op, value)
                .map_err(|e| e.at(*span))?,
            Stmt::Tilde {
                dist,
                args,
                truncation,
                span,
            } => {
                let vals = args
                    .iter()
                    .map(|a| self.expr(a))
                    .collect::<Eval<Vec<_>>>()?;
                let lp =
                    lpdf::log_density(*dist, &mut self.tape, &vals).map_err(|e| e.at(*span))?;
                self.target.push(lp);
                if let Some(tr) = truncation {
                    let lo = tr
                        .lo
                        .as_ref()
                        .map(|e| self.expr(e).and_then(|v| v.real()))
                        .transpose()?;
                    let hi = tr
                        .hi
                        .as_ref()
                        .map(|e| self.expr(e).and_then(|v| v.real()))
                        .transpose()?;
                    let y = vals[0].real().map_err(|e| e.at(*span))?;
                    if lo.is_some_and(|l| y.v < l.v) || hi.is_some_and(|h| y.v > h.v) {
                        self.target.push(R::c(f64::NEG_INFINITY));
                    }
                    let mass =
                        crate::cdf::log_truncation_mass(tr.cdf, &mut self.tape, lo, hi, &vals[1..])
                            .map_err(|e| e.at(*span))?;
                    let neg = self.tape.neg(mass);
                    self.target.push(neg);
                }
            }
            Stmt::Target(e, _) => {
                let terms = self.expr(e)?.flat();
                let s = self.tape.sum(&terms);
                self.target.push(s);
            }
            Stmt::For { slot, lo, hi, body } => {
                let (lo, hi) = (self.expr(lo)?.int()?, self.expr(hi)?.int()?);
                for i in lo..=hi {
                    self.put(*slot, Val::Int(i))?;
                    match self.run(body)? {
                        Flow::Break => break,
                        Flow::Return => return Ok(Flow::Return),
                        _ => {}
                    }
                }
            }
            Stmt::ForEach {
                slot,
                container,
                body,
            } => {
                let items = match self.expr(container)? {
                    Val::Array(a) => a,
                    other => other.flat().into_iter().map(Val::Real).collect(),
                };
                for item in items {
                    self.put(*slot, item)?;
                    match self.run(body)? {
                        Flow::Break => break,
                        Flow::Return => return Ok(Flow::Return),
                        _ => {}
                    }
                }
            }
            Stmt::While(cond, body) => {
                let mut turns = 0u64;
                while self.expr(cond)?.real()?.v != 0.0 {
                    turns += 1;
                    if turns > MAX_WHILE_TURNS {
                        return Err(EvalError::new(format!(
                            "a `while` loop ran {MAX_WHILE_TURNS} times without ending"
                        ))
                        .at(cond.span));
                    }
                    match self.run(body)? {
                        Flow::Break => break,
                        Flow::Return => return Ok(Flow::Return),
                        _ => {}
                    }
                }
            }
            Stmt::If(cond, then, otherwise) => {
                let branch = if self.expr(cond)?.real()?.v != 0.0 {
                    then
                } else {
                    otherwise
                };
                return self.run(branch);
            }
            Stmt::Block(body) => return self.run(body),
            Stmt::Break => return Ok(Flow::Break),
            Stmt::Continue => return Ok(Flow::Continue),
            Stmt::Return(value) => {
                self.returned = value.as_ref().map(|v| self.expr(v)).transpose()?;
                return Ok(Flow::Return);
            }
            Stmt::Reject(span) => {
                return Err(
                    EvalError::reject("the program rejected this point (`reject`)").at(*span),
                )
            }
        }
        Ok(Flow::Next)
    }

    /// Call a user function: a frame of its own (it sees its arguments and locals only).
    fn call(&mut self, f: FunId, args: Vec<Val>) -> Eval<Val> {
        let functions = self.functions;
        let fun = &functions[f.0];
        if self.depth >= MAX_CALL_DEPTH {
            return Err(EvalError::new(format!(
                "`{}` was called {MAX_CALL_DEPTH} deep: a recursion that does not end?",
                fun.name
            )));
        }
        let frame = vec![Val::Int(0); fun.slots];
        let saved_slots = std::mem::replace(&mut self.slots, frame);
        let saved_fixed = std::mem::take(&mut self.fixed);
        let saved_returned = self.returned.take();
        self.depth += 1;
        for (slot, v) in fun.params.iter().zip(args) {
            self.slots[slot.0] = v;
        }
        let flow = self.run(&fun.body);
        let value = self.returned.take();
        self.depth -= 1;
        self.slots = saved_slots;
        self.fixed = saved_fixed;
        self.returned = saved_returned;
        flow?;
        match value {
            Some(v) => Ok(v),
            None if !fun.returns => Ok(Val::Int(0)),
            None => Err(EvalError::new(format!(
                "`{}` ended without returning a value",
                fun.name
            ))),
        }
    }

    /// A GLM density whose design matrix is a data variable: the matrix read where it lives
    /// (a copy of N × K entries per gradient was a third of the diamonds regression's time).
    fn glm_on_data(&mut self, d: lpdf::DistImpl, args: &[Expr]) -> Eval<Option<R>> {
        let fixed: &'a [Val] = self.fixed;
        let (Some(family), Some(ExprKind::Slot(s))) =
            (lpdf::glm_family(d), args.get(1).map(|a| &a.kind))
        else {
            return Ok(None);
        };
        let (Some(x), true) = (fixed.get(s.0), args.len() >= 4) else {
            return Ok(None);
        };
        let y = self.expr(&args[0])?;
        let rest = args[2..]
            .iter()
            .map(|a| self.expr(a))
            .collect::<Eval<Vec<_>>>()?;
        let parts = [&y, x, &rest[0], &rest[1]];
        lpdf::glm_parts(&mut self.tape, family, parts, &rest[2..]).map(Some)
    }

    fn assign(&mut self, slot: SlotId, indices: &[Idx], op: AssignOp, value: &Expr) -> Eval<()> {
        let v = self.expr(value)?;
        // The common case, integer positions (`acc[j] = ...`, `gamma[t, k] = ...`).
        if let Some(at) = self.positions(indices)? {
            let at = &at[..indices.len()];
            let v = match op {
                AssignOp::Set => v,
                _ => {
                    let cur = index::get_at(self.get(slot), at)?;
                    ops::binary(&mut self.tape, compound(op), &cur, &v)?
                }
            };
            return index::set_at(self.slot_mut(slot)?, at, v);
        }
        let ix = self.indices(indices)?;
        let v = match op {
            AssignOp::Set => v,
            _ => {
                let cur = index::get(self.get(slot), &ix)?;
                ops::binary(&mut self.tape, compound(op), &cur, &v)?
            }
        };
        index::set(self.slot_mut(slot)?, &ix, v)
    }

    fn slot_mut(&mut self, slot: SlotId) -> Eval<&mut Val> {
        let n = self.fixed.len();
        slot.0
            .checked_sub(n)
            .and_then(|k| self.slots.get_mut(k))
            .ok_or_else(|| EvalError::new("data cannot be assigned here"))
    }

    /// Up to three single integer indices, evaluated (`None`: another kind of index; nothing
    /// evaluated then, so that the general path evaluates each index once).
    fn positions(&mut self, idx: &[Idx]) -> Eval<Option<[i64; 3]>> {
        let mut at = [0i64; 3];
        if idx.len() > 3 {
            return Ok(None);
        }
        for (k, i) in idx.iter().enumerate() {
            match i {
                Idx::Single(e) => match &e.kind {
                    ExprKind::Int(v) => at[k] = *v,
                    ExprKind::Slot(s) => match self.get(*s) {
                        Val::Int(v) => at[k] = *v,
                        _ => return Ok(None),
                    },
                    ExprKind::Binary(BinOp::Add | BinOp::Sub, a, b)
                        if is_int_leaf(a, self) && is_int_leaf(b, self) =>
                    {
                        match self.expr(e)? {
                            Val::Int(v) => at[k] = v,
                            _ => return Ok(None),
                        }
                    }
                    _ => return Ok(None),
                },
                Idx::Range(..) => return Ok(None),
            }
        }
        Ok(Some(at))
    }

    fn indices(&mut self, idx: &[Idx]) -> Eval<Vec<Ix>> {
        idx.iter()
            .map(|i| {
                Ok(match i {
                    Idx::Single(e) => match self.expr(e)? {
                        Val::Int(k) => Ix::One(k),
                        v => Ix::Many(Some(v.ints().ok_or_else(|| {
                            EvalError::new(format!(
                                "an index is an int or an array of ints, not a {}",
                                v.kind()
                            ))
                            .at(e.span)
                        })?)),
                    },
                    Idx::Range(lo, hi) => {
                        let mut end = |x: &Option<Expr>| -> Eval<Option<i64>> {
                            x.as_ref().map(|e| self.expr(e)?.int()).transpose()
                        };
                        let lo = end(lo)?;
                        Ix::Range(lo, end(hi)?)
                    }
                })
            })
            .collect()
    }

    /// Evaluate an expression.
    pub fn expr(&mut self, e: &Expr) -> Eval<Val> {
        self.expr_inner(e).map_err(|err| err.at(e.span))
    }

    // One match over the expression kinds, one arm each (a dispatch, kept whole: issue 51).
    fn expr_inner(&mut self, e: &Expr) -> Eval<Val> {
        Ok(match &e.kind {
            ExprKind::Int(i) => Val::Int(*i),
            ExprKind::Real(r) => Val::Real(R::c(*r)),
            ExprKind::Slot(s) => self.get(*s).clone(),
            ExprKind::Neg(x) => {
                let v = self.expr(x)?;
                ops::negate(&mut self.tape, &v)
            }
            ExprKind::Not(x) => Val::Int(i64::from(self.expr(x)?.real()?.v == 0.0)),
            ExprKind::Binary(op, a, b) => {
                // `&&` and `||` do not evaluate their right side when the left decides.
                if matches!(op, BinOp::And | BinOp::Or) {
                    let left = self.expr(a)?.real()?.v != 0.0;
                    if (*op == BinOp::And) != left {
                        return Ok(Val::Int(i64::from(left)));
                    }
                    return Ok(Val::Int(i64::from(self.expr(b)?.real()?.v != 0.0)));
                }
                let (x, y) = (self.expr(a)?, self.expr(b)?);
                ops::binary(&mut self.tape, *op, &x, &y)?
            }
            ExprKind::Ternary(c, a, b) => {
                if self.expr(c)?.real()?.v != 0.0 {
                    self.expr(a)?
                } else {
                    self.expr(b)?
                }
            }
            ExprKind::Call(f, args) => {
                let vals = args
                    .iter()
                    .map(|a| self.expr(a))
                    .collect::<Eval<Vec<_>>>()?;
                functions::call(*f, &mut self.tape, &vals)?
            }
            ExprKind::Density(d, args) => {
                if let Some(lp) = self.glm_on_data(*d, args)? {
                    return Ok(Val::Real(lp));
                }
                let vals = args
                    .iter()
                    .map(|a| self.expr(a))
                    .collect::<Eval<Vec<_>>>()?;
                Val::Real(lpdf::log_density(*d, &mut self.tape, &vals)?)
            }
            ExprKind::Cdf(c, args) => {
                let vals = args
                    .iter()
                    .map(|a| self.expr(a))
                    .collect::<Eval<Vec<_>>>()?;
                Val::Real(crate::cdf::eval_cdf(*c, &mut self.tape, &vals)?)
            }
            ExprKind::Rng(d, args) => {
                let vals = args
                    .iter()
                    .map(|a| self.expr(a))
                    .collect::<Eval<Vec<_>>>()?;
                let rng = self.rng.as_mut().ok_or_else(|| {
                    EvalError::new("a random draw where the log density is evaluated")
                })?;
                crate::rng::draw(*d, rng, &vals)?
            }
            ExprKind::UserCall(f, args) => {
                let vals = args
                    .iter()
                    .map(|a| self.expr(a))
                    .collect::<Eval<Vec<_>>>()?;
                self.call(*f, vals)?
            }
            ExprKind::Ode(kind, system, args) => {
                let vals = args
                    .iter()
                    .map(|a| self.expr(a))
                    .collect::<Eval<Vec<_>>>()?;
                let problem = ode::Problem::new(kind, vals)?;
                let mut sys = OdeSystem {
                    machine: self,
                    f: *system,
                    legacy: kind.legacy,
                    extra: &problem.extra,
                };
                let states = ode::dopri5(&mut sys, &problem, kind.name)?;
                ode::output(kind, states)
            }
            ExprKind::Target => {
                let terms = self.target.clone();
                Val::Real(self.tape.sum(&terms))
            }
            ExprKind::Index(base, idx) => {
                // The common case, a variable at integer positions (`y[t - k]`, `m[i, j]`),
                // without building the general index list.
                if let (ExprKind::Slot(s), Some(at)) = (&base.kind, self.positions(idx)?) {
                    return index::get_at(self.get(*s), &at[..idx.len()]);
                }
                let ix = self.indices(idx)?;
                // A variable is indexed where it lives: no copy of a whole vector per entry.
                if let ExprKind::Slot(s) = base.kind {
                    index::get(self.get(s), &ix)?
                } else {
                    let v = self.expr(base)?;
                    index::get(&v, &ix)?
                }
            }
            ExprKind::Transpose(x) => ops::transpose(&self.expr(x)?)?,
            ExprKind::Array(xs) => {
                let items = xs.iter().map(|x| self.expr(x)).collect::<Eval<Vec<_>>>()?;
                // `{1, 2.5}` is an array of reals: ints promoted when any entry is real.
                if items.iter().any(|v| matches!(v, Val::Real(_))) {
                    Val::Array(
                        items
                            .iter()
                            .map(|v| v.real().map(Val::Real))
                            .collect::<Eval<_>>()?,
                    )
                } else {
                    Val::Array(items)
                }
            }
            ExprKind::RowVector(xs) => {
                let items = xs.iter().map(|x| self.expr(x)).collect::<Eval<Vec<_>>>()?;
                if items.iter().all(Val::is_scalar) {
                    Val::RowVector(items.iter().map(Val::real).collect::<Eval<_>>()?)
                } else {
                    // `[r1, r2]` of row vectors is a matrix.
                    let rows: Vec<Vec<R>> = items.iter().map(Val::flat).collect();
                    Val::Matrix(crate::value::Mat::from_rows(&rows).ok_or_else(|| {
                        EvalError::new("the rows of a matrix literal differ in size")
                    })?)
                }
            }
        })
    }
}

/// An ODE's right-hand side as the user's function called by the interpreter.
struct OdeSystem<'m, 'a, 'x> {
    machine: &'m mut Machine<'a>,
    f: FunId,
    legacy: bool,
    extra: &'x [Val],
}

impl ode::System for OdeSystem<'_, '_, '_> {
    fn rhs(&mut self, t: f64, y: &[R]) -> Eval<Vec<R>> {
        // `integrate_ode_*` passes the state as `array[] real`, `ode_*` as a vector.
        let state = if self.legacy {
            Val::Array(y.iter().map(|&r| Val::Real(r)).collect())
        } else {
            Val::Vector(y.to_vec())
        };
        let mut args = Vec::with_capacity(2 + self.extra.len());
        args.push(Val::Real(R::c(t)));
        args.push(state);
        args.extend(self.extra.iter().cloned());
        Ok(self.machine.call(self.f, args)?.flat())
    }

    fn tape(&mut self) -> &mut crate::ad::Tape {
        &mut self.machine.tape
    }
}
