//! From a Stan syntax tree to a [`Program`]: every name bound to a slot in scope order, every
//! function and density bound to its implementation, and what gpmc cannot evaluate refused
//! here — before any data is read — naming the construct and its line.

use crate::cdf::{self, Which};
use crate::functions;
use crate::lpdf;
use crate::program::{
    Base, Constraint, Decl, DeclType, Expr, ExprKind, FunId, Function, Idx, Program, SlotId, Stmt,
    Truncation,
};
use gpm_stan::ast::{self, BaseKind, ExprKind as K, StanProgram};
use gpm_stan::StanError;
use gpm_syntax::Span;
use std::collections::HashMap;

/// Which block a name was declared in (what may assign to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Home {
    Data,
    Parameter,
    Local,
}

#[derive(Default)]
struct Scopes {
    frames: Vec<HashMap<String, (SlotId, Home)>>,
    slots: usize,
}

impl Scopes {
    fn declare(&mut self, name: &str, home: Home) -> SlotId {
        let id = SlotId(self.slots);
        self.slots += 1;
        if self.frames.is_empty() {
            self.frames.push(HashMap::new());
        }
        if let Some(f) = self.frames.last_mut() {
            f.insert(name.to_string(), (id, home));
        }
        id
    }

    fn find(&self, name: &str) -> Option<(SlotId, Home)> {
        self.frames.iter().rev().find_map(|f| f.get(name).copied())
    }

    fn enter(&mut self) {
        self.frames.push(HashMap::new());
    }

    fn leave(&mut self) {
        self.frames.pop();
    }
}

/// Which block is being lowered: what it may assign and whether `~` may appear.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    TransformedData,
    TransformedParameters,
    Model,
    Generated,
    /// A user function: `_lp` ones may add to the target, `_rng` ones draw.
    Function {
        lp: bool,
        rng: bool,
    },
}

struct Lower {
    scopes: Scopes,
    block: Block,
    /// User functions by name.
    funs: HashMap<String, FunId>,
}

/// Compile a parsed Stan program.
pub fn compile(stan: &StanProgram) -> Result<Program, StanError> {
    let mut l = Lower {
        scopes: Scopes::default(),
        block: Block::TransformedData,
        funs: HashMap::new(),
    };
    let functions = l.functions(&stan.functions)?;
    l.scopes = Scopes::default();
    l.block = Block::TransformedData;
    l.scopes.enter();
    let data = stan
        .data
        .iter()
        .map(|d| l.decl(d, Home::Data, false))
        .collect::<Result<Vec<_>, _>>()?;
    let transformed_data = l.top_block(&stan.transformed_data, Home::Data)?;
    let parameters = stan
        .parameters
        .iter()
        .map(|d| l.decl(d, Home::Parameter, true))
        .collect::<Result<Vec<_>, _>>()?;
    l.block = Block::TransformedParameters;
    let transformed_parameters = l.top_block(&stan.transformed_parameters, Home::Parameter)?;
    let transformed_decls = top_decls(&transformed_parameters);
    l.block = Block::Model;
    l.scopes.enter();
    let model = l.stmts(&stan.model)?;
    l.scopes.leave();
    // Generated quantities do not change the posterior: a construct gpmc cannot evaluate
    // there leaves their columns out (said at `check`), rather than refusing the program.
    l.block = Block::Generated;
    let (generated, generated_refusal) = match l.top_block(&stan.generated, Home::Local) {
        Ok(g) => (g, None),
        Err(e) if e.code != "stan::syntax" => (vec![], Some(e)),
        Err(e) => return Err(e),
    };
    let generated_decls = top_decls(&generated);
    Ok(Program {
        slots: l.scopes.slots,
        functions,
        data,
        transformed_data,
        parameters,
        transformed_parameters,
        transformed_decls,
        model,
        generated,
        generated_decls,
        generated_refusal,
    })
}

fn top_decls(stmts: &[Stmt]) -> Vec<Decl> {
    stmts
        .iter()
        .filter_map(|s| match s {
            Stmt::Decl(d, _) => Some(d.clone()),
            _ => None,
        })
        .collect()
}

impl Lower {
    /// The user functions: every name first (a body may call a function defined after it),
    /// then each body in a frame of its own.
    fn functions(&mut self, defs: &[ast::FunDef]) -> Result<Vec<Function>, StanError> {
        let mut order: Vec<&ast::FunDef> = Vec::new();
        for d in defs {
            if !self.funs.contains_key(&d.name.name) {
                self.funs.insert(d.name.name.clone(), FunId(order.len()));
                order.push(d);
            }
        }
        let mut out = Vec::with_capacity(order.len());
        for first in order {
            let name = &first.name.name;
            let def = defs
                .iter()
                .find(|d| d.name.name == *name && d.body.is_some())
                .ok_or_else(|| {
                    StanError::new(
                        "stan::semantic",
                        format!("the function `{name}` is declared but never defined"),
                        first.span,
                    )
                })?;
            self.scopes = Scopes::default();
            self.scopes.enter();
            self.block = Block::Function {
                lp: name.ends_with("_lp"),
                rng: name.ends_with("_rng"),
            };
            let params = def
                .args
                .iter()
                .map(|(_, a)| self.scopes.declare(&a.name, Home::Local))
                .collect();
            let body = self.stmts(def.body.as_deref().unwrap_or(&[]))?;
            out.push(Function {
                name: name.clone(),
                params,
                slots: self.scopes.slots,
                body,
                returns: def.returns.is_some(),
            });
        }
        Ok(out)
    }

    /// A block whose top-level declarations stay visible after it (`transformed data`,
    /// `transformed parameters`, `generated quantities`).
    fn top_block(&mut self, stmts: &[ast::Stmt], home: Home) -> Result<Vec<Stmt>, StanError> {
        let mut out = Vec::with_capacity(stmts.len());
        for s in stmts {
            out.push(match s {
                ast::Stmt::Decl(d) => {
                    let value = d.value.as_ref().map(|v| self.expr(v)).transpose()?;
                    Stmt::Decl(self.decl(d, home, false)?, value)
                }
                other => self.stmt(other)?,
            });
        }
        Ok(out)
    }

    fn decl(&mut self, d: &ast::VarDecl, home: Home, parameter: bool) -> Result<Decl, StanError> {
        let (base, constraint, sizes) = self.decl_type(d, parameter)?;
        let array =
            d.ty.array
                .iter()
                .map(|e| self.expr(e))
                .collect::<Result<Vec<_>, _>>()?;
        let slot = self.scopes.declare(&d.name.name, home);
        Ok(Decl {
            slot,
            name: d.name.name.clone(),
            ty: DeclType { base, sizes, array },
            constraint,
            span: d.span,
        })
    }

    fn decl_type(
        &mut self,
        d: &ast::VarDecl,
        parameter: bool,
    ) -> Result<(Base, Constraint, Vec<Expr>), StanError> {
        let ty = &d.ty;
        let sizes = ty
            .sizes
            .iter()
            .map(|e| self.expr(e))
            .collect::<Result<Vec<_>, _>>()?;
        let opt = |l: &mut Lower, e: &Option<ast::Expr>| e.as_ref().map(|x| l.expr(x)).transpose();
        let bounded = Constraint::Bounded {
            lower: opt(self, &ty.lower)?,
            upper: opt(self, &ty.upper)?,
            offset: opt(self, &ty.offset)?,
            multiplier: opt(self, &ty.multiplier)?,
        };
        let square = |s: Vec<Expr>| match s.len() {
            1 => vec![s[0].clone(), s[0].clone()],
            _ => s,
        };
        let want = match ty.base {
            BaseKind::Int | BaseKind::Real => 0,
            BaseKind::Matrix => 2,
            BaseKind::Constrained(
                "cholesky_factor_corr" | "corr_matrix" | "cov_matrix" | "cholesky_factor_cov",
            ) => sizes.len().clamp(1, 2),
            _ => 1,
        };
        if sizes.len() != want {
            return Err(StanError::new(
                "stan::syntax",
                format!(
                    "this type takes {want} size{}, not {}",
                    if want == 1 { "" } else { "s" },
                    sizes.len()
                ),
                ty.span,
            ));
        }
        Ok(match ty.base {
            BaseKind::Int => (Base::Int, bounded, sizes),
            BaseKind::Real => (Base::Real, bounded, sizes),
            BaseKind::Vector => (Base::Vector, bounded, sizes),
            BaseKind::RowVector => (Base::RowVector, bounded, sizes),
            BaseKind::Matrix => (Base::Matrix, bounded, sizes),
            BaseKind::Constrained("simplex") => (Base::Vector, Constraint::Simplex, sizes),
            BaseKind::Constrained("ordered") => (Base::Vector, Constraint::Ordered, sizes),
            BaseKind::Constrained("positive_ordered") => {
                (Base::Vector, Constraint::PositiveOrdered, sizes)
            }
            BaseKind::Constrained("cholesky_factor_corr") => {
                (Base::Matrix, Constraint::CholeskyCorr, square(sizes))
            }
            BaseKind::Constrained(kind) if parameter => {
                return Err(StanError::unsupported(
                    format!("a `{kind}` parameter is not evaluated yet"),
                    ty.span,
                    "gpmc evaluates real, vector, row_vector and matrix parameters with bounds, offset and multiplier, and simplex, ordered, positive_ordered and cholesky_factor_corr",
                ))
            }
            BaseKind::Constrained("unit_vector") => (Base::Vector, bounded, sizes),
            BaseKind::Constrained(_) => (Base::Matrix, bounded, square(sizes)),
        })
    }

    fn stmts(&mut self, stmts: &[ast::Stmt]) -> Result<Vec<Stmt>, StanError> {
        stmts.iter().map(|s| self.stmt(s)).collect()
    }

    fn scoped(&mut self, s: &ast::Stmt) -> Result<Vec<Stmt>, StanError> {
        self.scopes.enter();
        let out = match s {
            ast::Stmt::Block(body, _) => self.stmts(body),
            other => self.stmt(other).map(|x| vec![x]),
        };
        self.scopes.leave();
        out
    }

    // One match over Stan's statement kinds, one arm each (a dispatch, kept whole: issue 51).
    fn stmt(&mut self, s: &ast::Stmt) -> Result<Stmt, StanError> {
        Ok(match s {
            ast::Stmt::Decl(d) => {
                let value = d.value.as_ref().map(|v| self.expr(v)).transpose()?;
                Stmt::Decl(self.decl(d, Home::Local, false)?, value)
            }
            ast::Stmt::Assign {
                name,
                indices,
                op,
                value,
                span,
            } => {
                let Some((slot, home)) = self.scopes.find(&name.name) else {
                    return Err(undeclared(&name.name, name.span));
                };
                let may = match self.block {
                    Block::TransformedData => home == Home::Data,
                    Block::TransformedParameters => home != Home::Data,
                    Block::Model | Block::Generated | Block::Function { .. } => home == Home::Local,
                };
                if !may {
                    return Err(StanError::new(
                        "stan::semantic",
                        format!("`{}` cannot be assigned in this block", name.name),
                        name.span,
                    ));
                }
                Stmt::Assign {
                    slot,
                    indices: indices
                        .iter()
                        .flatten()
                        .map(|i| self.index(i))
                        .collect::<Result<_, _>>()?,
                    op: *op,
                    value: self.expr(value)?,
                    span: *span,
                }
            }
            ast::Stmt::Tilde {
                lhs,
                dist,
                args,
                truncation,
                span,
            } => self.tilde(lhs, dist, args, truncation.as_ref(), *span)?,
            ast::Stmt::Target { expr, span } => {
                self.density_block(*span, "`target +=`")?;
                Stmt::Target(self.expr(expr)?, *span)
            }
            ast::Stmt::For {
                var,
                lo,
                hi,
                body,
                ..
            } => {
                let (lo, hi) = (self.expr(lo)?, hi.as_ref().map(|h| self.expr(h)).transpose()?);
                self.scopes.enter();
                let slot = self.scopes.declare(&var.name, Home::Local);
                let body = self.stmts(body)?;
                self.scopes.leave();
                match hi {
                    Some(hi) => Stmt::For { slot, lo, hi, body },
                    None => Stmt::ForEach {
                        slot,
                        container: lo,
                        body,
                    },
                }
            }
            ast::Stmt::While { cond, body, .. } => Stmt::While(self.expr(cond)?, self.scoped(body)?),
            ast::Stmt::If {
                cond,
                then,
                otherwise,
                ..
            } => Stmt::If(
                self.expr(cond)?,
                self.scoped(then)?,
                match otherwise {
                    Some(o) => self.scoped(o)?,
                    None => vec![],
                },
            ),
            ast::Stmt::Block(body, _) => {
                self.scopes.enter();
                let b = self.stmts(body)?;
                self.scopes.leave();
                Stmt::Block(b)
            }
            ast::Stmt::Return(value, span) => {
                if !matches!(self.block, Block::Function { .. }) {
                    return Err(StanError::new(
                        "stan::semantic",
                        "`return` belongs in a user-defined function",
                        *span,
                    ));
                }
                Stmt::Return(value.as_ref().map(|v| self.expr(v)).transpose()?)
            }
            ast::Stmt::Other("print", _) => Stmt::Block(vec![]),
            ast::Stmt::Other("reject", span) => Stmt::Reject(*span),
            ast::Stmt::Other("break", _) => Stmt::Break,
            ast::Stmt::Other("continue", _) => Stmt::Continue,
            ast::Stmt::Other(what, span) => {
                return Err(StanError::unsupported(
                    format!("{what} here is not evaluated"),
                    *span,
                    "remove it: a block's statements are declarations, assignments, `~`, `target +=`, loops and conditionals",
                ))
            }
        })
    }

    fn density_block(&self, span: Span, what: &str) -> Result<(), StanError> {
        if matches!(self.block, Block::Model | Block::Function { lp: true, .. }) {
            Ok(())
        } else {
            Err(StanError::new(
                "stan::semantic",
                format!("{what} belongs in the model block"),
                span,
            ))
        }
    }

    fn tilde(
        &mut self,
        lhs: &ast::Expr,
        dist: &gpm_syntax::Ident,
        args: &[ast::Expr],
        truncation: Option<&ast::Truncation>,
        span: Span,
    ) -> Result<Stmt, StanError> {
        self.density_block(span, "`~`")?;
        let mut all = vec![self.expr(lhs)?];
        for a in args {
            all.push(self.expr(a)?);
        }
        // A user density: `y ~ foo(θ)` adds `foo_lpdf(y | θ)` (or `_lpmf`).
        let user = ["_lpdf", "_lpmf"]
            .iter()
            .find_map(|s| self.funs.get(&format!("{}{s}", dist.name)).copied());
        if let Some(f) = user {
            if let Some(t) = truncation {
                return Err(StanError::unsupported(
                    "a truncated user-defined density is not evaluated yet",
                    t.span,
                    "add the truncation's normalising term with `target +=` yourself",
                ));
            }
            let call = Expr {
                kind: ExprKind::UserCall(f, all),
                span,
            };
            return Ok(Stmt::Target(call, span));
        }
        let d = density(&dist.name, dist.span)?;
        let truncation = match truncation {
            None => None,
            Some(t) => {
                let Some(cdf) = cdf::cdf(&dist.name, Which::Lcdf) else {
                    return Err(StanError::unsupported(
                        format!(
                            "a truncated `{}` is not evaluated yet (gpmc has no CDF for it)",
                            dist.name
                        ),
                        t.span,
                        format!(
                            "gpmc truncates {}",
                            cdf::cdf_names().collect::<Vec<_>>().join(", ")
                        ),
                    ));
                };
                let opt = |l: &mut Lower, e: &Option<ast::Expr>| {
                    e.as_ref().map(|x| l.expr(x)).transpose()
                };
                Some(Box::new(Truncation {
                    lo: opt(self, &t.lo)?,
                    hi: opt(self, &t.hi)?,
                    cdf,
                }))
            }
        };
        Ok(Stmt::Tilde {
            dist: d,
            args: all,
            truncation,
            span,
        })
    }

    fn index(&mut self, i: &ast::Index) -> Result<Idx, StanError> {
        Ok(match i {
            ast::Index::Single(e) => Idx::Single(self.expr(e)?),
            ast::Index::Range(lo, hi) => Idx::Range(
                lo.as_ref().map(|e| self.expr(e)).transpose()?,
                hi.as_ref().map(|e| self.expr(e)).transpose()?,
            ),
        })
    }

    fn expr(&mut self, e: &ast::Expr) -> Result<Expr, StanError> {
        let b = |l: &mut Lower, x: &ast::Expr| l.expr(x).map(Box::new);
        let kind = match &e.kind {
            K::Num { value, is_int } if *is_int && value.abs() < 9.0e15 => {
                ExprKind::Int(*value as i64)
            }
            K::Num { value, .. } => ExprKind::Real(*value),
            K::Var(v) => match self.scopes.find(v) {
                Some((slot, _)) => ExprKind::Slot(slot),
                None => return Err(undeclared(v, e.span)),
            },
            K::Str(_) => {
                return Err(StanError::new(
                    "stan::semantic",
                    "a string can only be printed",
                    e.span,
                ))
            }
            K::Neg(x) => ExprKind::Neg(b(self, x)?),
            K::Not(x) => ExprKind::Not(b(self, x)?),
            K::Binary(op, x, y) => ExprKind::Binary(*op, b(self, x)?, b(self, y)?),
            K::Ternary(c, x, y) => ExprKind::Ternary(b(self, c)?, b(self, x)?, b(self, y)?),
            K::Call { func, args, .. } => self.call(func, args)?,
            K::Index(x, ix) => ExprKind::Index(
                b(self, x)?,
                ix.iter().map(|i| self.index(i)).collect::<Result<_, _>>()?,
            ),
            K::Transpose(x) => ExprKind::Transpose(b(self, x)?),
            K::Array(xs) => ExprKind::Array(self.exprs(xs)?),
            K::RowVector(xs) => ExprKind::RowVector(self.exprs(xs)?),
        };
        Ok(Expr { kind, span: e.span })
    }

    fn exprs(&mut self, xs: &[ast::Expr]) -> Result<Vec<Expr>, StanError> {
        xs.iter().map(|x| self.expr(x)).collect()
    }

    fn call(
        &mut self,
        func: &gpm_syntax::Ident,
        args: &[ast::Expr],
    ) -> Result<ExprKind, StanError> {
        let name = func.name.as_str();
        if name == "target" && args.is_empty() {
            return Ok(ExprKind::Target);
        }
        if let Some(kind) = crate::ode::lookup(name) {
            return self.ode(kind, func, args);
        }
        if matches!(name, "reduce_sum" | "reduce_sum_static") {
            return self.reduce_sum(func, args);
        }
        // A user function (`foo_lupdf` calls the `foo_lpdf` defined).
        let defined = defined_name(name);
        if let Some(&f) = self.funs.get(&defined) {
            if defined.ends_with("_lp")
                && !matches!(
                    self.block,
                    Block::Model | Block::TransformedParameters | Block::Function { lp: true, .. }
                )
            {
                return Err(StanError::new(
                    "stan::semantic",
                    format!("`{name}` adds to the target: only the model block, transformed parameters and other `_lp` functions may call it"),
                    func.span,
                ));
            }
            return Ok(ExprKind::UserCall(f, self.exprs(args)?));
        }
        for suffix in ["_lpdf", "_lpmf", "_lupdf", "_lupmf", "_log"] {
            if let Some(base) = name.strip_suffix(suffix) {
                if let Some(d) = lpdf::lookup(base) {
                    return Ok(ExprKind::Density(d, self.exprs(args)?));
                }
                if suffix != "_log" {
                    return Err(density(base, func.span)
                        .err()
                        .unwrap_or_else(|| undeclared(name, func.span)));
                }
            }
        }
        for (suffix, which) in [
            ("_lcdf", Which::Lcdf),
            ("_lccdf", Which::Lccdf),
            ("_cdf", Which::Cdf),
        ] {
            if let Some(base) = name.strip_suffix(suffix) {
                if let Some(c) = cdf::cdf(base, which) {
                    return Ok(ExprKind::Cdf(c, self.exprs(args)?));
                }
                return Err(StanError::unsupported(
                    format!("`{name}` is not evaluated yet"),
                    func.span,
                    format!(
                        "gpmc has the CDFs of {}",
                        cdf::cdf_names().collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
        }
        if let Some(base) = name.strip_suffix("_rng") {
            if !matches!(
                self.block,
                Block::Generated | Block::TransformedData | Block::Function { rng: true, .. }
            ) {
                return Err(StanError::new(
                    "stan::semantic",
                    format!("`{name}` draws at random: only generated quantities and transformed data may call it"),
                    func.span,
                ));
            }
            if let Some(r) = crate::rng::lookup(base) {
                return Ok(ExprKind::Rng(r, self.exprs(args)?));
            }
            return Err(StanError::unsupported(
                format!("`{name}` is not evaluated yet"),
                func.span,
                format!(
                    "gpmc draws from {}",
                    crate::rng::names().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        match functions::lookup(name, args.len()) {
            Some(f) => Ok(ExprKind::Call(f, self.exprs(args)?)),
            None => Err(unknown_function(name, func.span)),
        }
    }
}

impl Lower {
    /// `reduce_sum(f, x, grainsize, ...)` is `f(x, 1, size(x), ...)`: Stan defines it as the
    /// sum of `f` over slices of `x`, which a partial sum written as Stan asks equals on the
    /// whole of `x` (the slicing only spreads the work over threads; the grain size is read
    /// and ignored).
    fn reduce_sum(
        &mut self,
        func: &gpm_syntax::Ident,
        args: &[ast::Expr],
    ) -> Result<ExprKind, StanError> {
        let partial = match args.first().map(|a| &a.kind) {
            Some(ast::ExprKind::Var(f)) if args.len() >= 3 => {
                self.funs.get(&defined_name(f)).copied()
            }
            _ => None,
        };
        let Some(partial) = partial else {
            return Err(StanError::new(
                "stan::semantic",
                format!("`{}` takes a partial-sum function defined in the functions block, the sliced argument, a grain size and the shared arguments", func.name),
                func.span,
            ));
        };
        let sliced = self.expr(&args[1])?;
        let span = sliced.span;
        let size = functions::lookup("size", 1).ok_or_else(|| undeclared("size", span))?;
        let mut call = vec![
            sliced.clone(),
            Expr {
                kind: ExprKind::Int(1),
                span,
            },
            Expr {
                kind: ExprKind::Call(size, vec![sliced]),
                span,
            },
        ];
        self.expr(&args[2])?;
        call.extend(self.exprs(&args[3..])?);
        Ok(ExprKind::UserCall(partial, call))
    }

    /// `integrate_ode_rk45(f, y0, t0, ts, ...)` and friends: the first argument names the
    /// system, a user function returning the derivative.
    fn ode(
        &mut self,
        kind: crate::ode::OdeKind,
        func: &gpm_syntax::Ident,
        args: &[ast::Expr],
    ) -> Result<ExprKind, StanError> {
        let (lo, hi) = crate::ode::arity(&kind);
        let n = args.len().saturating_sub(1);
        let expected = match hi {
            Some(h) => format!("{lo} or {h}"),
            None => format!("at least {lo}"),
        };
        if args.is_empty() || n < lo || hi.is_some_and(|h| n != lo && n != h) {
            return Err(StanError::new(
                "stan::semantic",
                format!(
                    "`{}` takes the system function and {expected} more arguments, not {n}",
                    kind.name
                ),
                func.span,
            ));
        }
        let system = match &args[0].kind {
            ast::ExprKind::Var(f) => self.funs.get(f).copied(),
            _ => None,
        };
        let Some(system) = system else {
            return Err(StanError::new(
                "stan::semantic",
                format!("the first argument of `{}` must name a function defined in the functions block", kind.name),
                args[0].span,
            ));
        };
        Ok(ExprKind::Ode(kind, system, self.exprs(&args[1..])?))
    }
}

/// The user function a call names: `foo_lupdf` calls the `foo_lpdf` defined (and `_lupmf`
/// the `_lpmf`).
fn defined_name(name: &str) -> String {
    name.strip_suffix("_lupdf")
        .map(|b| format!("{b}_lpdf"))
        .or_else(|| name.strip_suffix("_lupmf").map(|b| format!("{b}_lpmf")))
        .unwrap_or_else(|| name.to_string())
}

fn density(name: &str, span: Span) -> Result<crate::lpdf::DistImpl, StanError> {
    lpdf::lookup(name).ok_or_else(|| {
        let near = closest(name, lpdf::names());
        StanError::unsupported(
            format!("the distribution `{name}` is not evaluated yet"),
            span,
            match near {
                Some(n) => format!("did you mean `{n}`?"),
                None => "gpmc evaluates Stan's common univariate densities, categorical, ordered_logistic, dirichlet, multi_normal[_cholesky] and lkj_corr_cholesky".into(),
            },
        )
    })
}

fn unknown_function(name: &str, span: Span) -> StanError {
    let solver = [
        "integrate_ode",
        "ode_",
        "algebra_solver",
        "solve_",
        "map_rect",
        "integrate_1d",
    ]
    .iter()
    .any(|p| name.starts_with(p));
    if solver {
        return StanError::unsupported(
            format!("`{name}` cannot be evaluated by gpmc"),
            span,
            "gpmc solves ODEs with integrate_ode_rk45/bdf/adams and ode_rk45/bdf/adams/ckrk (and their _tol forms) and evaluates reduce_sum; the adjoint ODE solver, algebraic solvers, integrate_1d and map_rect are not evaluated",
        );
    }
    let help = match closest(name, functions::names()) {
        Some(n) => format!("did you mean `{n}`?"),
        None => "see docs/stan_models.md for the functions gpmc evaluates".into(),
    };
    StanError::unsupported(
        format!("the function `{name}` is not evaluated yet"),
        span,
        help,
    )
}

fn closest(name: &str, names: impl Iterator<Item = &'static str>) -> Option<&'static str> {
    names
        .map(|n| (strsim::levenshtein(name, n), n))
        .filter(|(d, n)| *d <= 2.max(n.len() / 4))
        .min()
        .map(|(_, n)| n)
}

fn undeclared(name: &str, span: Span) -> StanError {
    StanError::new("stan::semantic", format!("`{name}` is not declared"), span)
        .with_help("declare it before it is used")
}
