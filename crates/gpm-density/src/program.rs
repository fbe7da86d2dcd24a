//! The compiled program: every name bound to a typed slot ([`SlotId`]), every function and
//! density bound to its implementation, the statements of each block in order.

use crate::cdf::Cdf;
use crate::functions::FnImpl;
use crate::lpdf::DistImpl;
use crate::rng::RngImpl;
use gpm_stan::ast::{AssignOp, BinOp};
use gpm_syntax::Span;

/// A variable's place in the environment (data, parameters, locals, loop variables).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SlotId(pub usize);

/// A user-defined function's place in [`Program::functions`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FunId(pub usize);

/// A user-defined function: its arguments' slots in its own frame, the frame's size, its body.
#[derive(Debug, Clone)]
pub struct Function {
    /// Its name.
    pub name: String,
    /// Its arguments' slots (a function sees its arguments and locals only).
    pub params: Vec<SlotId>,
    /// Slots in its frame.
    pub slots: usize,
    /// Its body.
    pub body: Vec<Stmt>,
    /// Whether it returns a value (not `void`).
    pub returns: bool,
}

/// An expression with its span.
#[derive(Debug, Clone)]
pub struct Expr {
    /// The node.
    pub kind: ExprKind,
    /// Where it is written.
    pub span: Span,
}

/// Expression nodes.
#[derive(Debug, Clone)]
pub enum ExprKind {
    /// An integer literal.
    Int(i64),
    /// A real literal.
    Real(f64),
    /// A variable.
    Slot(SlotId),
    /// `-e`
    Neg(Box<Expr>),
    /// `!e`
    Not(Box<Expr>),
    /// `a op b`
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `c ? a : b`
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
    /// A built-in function.
    Call(FnImpl, Vec<Expr>),
    /// `foo_lpdf(y | ...)` and friends: a density's log value.
    Density(DistImpl, Vec<Expr>),
    /// `foo_lcdf(y | ...)`, `foo_lccdf`, `foo_cdf`.
    Cdf(Cdf, Vec<Expr>),
    /// `foo_rng(...)`: a random draw (generated quantities and transformed data only).
    Rng(RngImpl, Vec<Expr>),
    /// A user-defined function.
    UserCall(FunId, Vec<Expr>),
    /// An ODE solve: the solver, the system (a user function) and the arguments after it.
    Ode(crate::ode::OdeKind, FunId, Vec<Expr>),
    /// `target()`
    Target,
    /// `e[i, j]`
    Index(Box<Expr>, Vec<Idx>),
    /// `e'`
    Transpose(Box<Expr>),
    /// `{a, b}`
    Array(Vec<Expr>),
    /// `[a, b]`
    RowVector(Vec<Expr>),
}

/// One index.
#[derive(Debug, Clone)]
pub enum Idx {
    /// A position or, when the value is an integer array, a multi-index.
    Single(Expr),
    /// `lo:hi`, either end optional.
    Range(Option<Expr>, Option<Expr>),
}

/// The shape of a declared variable, its sizes as expressions.
#[derive(Debug, Clone)]
pub struct DeclType {
    /// The element type.
    pub base: Base,
    /// The element's sizes.
    pub sizes: Vec<Expr>,
    /// Array sizes, outermost first.
    pub array: Vec<Expr>,
}

/// Element types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// `int`
    Int,
    /// `real`
    Real,
    /// `vector[n]` and the constrained vectors.
    Vector,
    /// `row_vector[n]`
    RowVector,
    /// `matrix[r, c]` and the constrained matrices (`cholesky_factor_corr[K]`: `K × K`).
    Matrix,
}

// Built once per program and walked by reference: the size difference between variants costs
// nothing measurable, and boxing would spread through every pattern.
#[allow(clippy::large_enum_variant)]
/// How a parameter's unconstrained coordinates map to its value (Stan reference manual,
/// "Constraint transforms").
#[derive(Debug, Clone)]
pub enum Constraint {
    /// Bounds (either optional) and an affine map (offset, multiplier).
    Bounded {
        /// `<lower = ...>`
        lower: Option<Expr>,
        /// `<upper = ...>`
        upper: Option<Expr>,
        /// `<offset = ...>`
        offset: Option<Expr>,
        /// `<multiplier = ...>`
        multiplier: Option<Expr>,
    },
    /// `ordered[K]`
    Ordered,
    /// `positive_ordered[K]`
    PositiveOrdered,
    /// `simplex[K]`
    Simplex,
    /// `cholesky_factor_corr[K]`
    CholeskyCorr,
}

/// A declared variable.
#[derive(Debug, Clone)]
pub struct Decl {
    /// Its slot.
    pub slot: SlotId,
    /// Its name.
    pub name: String,
    /// Its shape.
    pub ty: DeclType,
    /// Its constraint (data are checked against bounds; parameters transformed).
    pub constraint: Constraint,
    /// Where it is declared.
    pub span: Span,
}

/// A truncation `T[lo, hi]`: its bounds and the distribution's CDF.
#[derive(Debug, Clone)]
pub struct Truncation {
    /// The lower bound.
    pub lo: Option<Expr>,
    /// The upper bound.
    pub hi: Option<Expr>,
    /// The distribution's log CDF and log complementary CDF.
    pub cdf: Cdf,
}

/// A statement.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // as `Constraint`: built once, walked by reference
pub enum Stmt {
    /// A local variable, with its value when written.
    Decl(Decl, Option<Expr>),
    /// `x[idx] op= value`
    Assign {
        /// The variable.
        slot: SlotId,
        /// Its indices (every `[...]` group, in order).
        indices: Vec<Idx>,
        /// The operator.
        op: AssignOp,
        /// The value.
        value: Expr,
        /// The statement.
        span: Span,
    },
    /// `lhs ~ dist(args) T[lo, hi]`
    Tilde {
        /// The density.
        dist: DistImpl,
        /// The variate, then the arguments.
        args: Vec<Expr>,
        /// A truncation.
        truncation: Option<Box<Truncation>>,
        /// The statement.
        span: Span,
    },
    /// `target += e`
    Target(Expr, Span),
    /// `for (v in lo:hi)`
    For {
        /// The loop variable.
        slot: SlotId,
        /// First value.
        lo: Expr,
        /// Last value (inclusive).
        hi: Expr,
        /// The body.
        body: Vec<Stmt>,
    },
    /// `for (v in container)`
    ForEach {
        /// The loop variable.
        slot: SlotId,
        /// The container.
        container: Expr,
        /// The body.
        body: Vec<Stmt>,
    },
    /// `while (cond) body`
    While(Expr, Vec<Stmt>),
    /// `if (cond) a else b`
    If(Expr, Vec<Stmt>, Vec<Stmt>),
    /// `{ ... }`
    Block(Vec<Stmt>),
    /// `break`
    Break,
    /// `continue`
    Continue,
    /// `reject(...)` / `fatal_error(...)`
    Reject(Span),
    /// `return e;`
    Return(Option<Expr>),
}

/// A compiled Stan program.
#[derive(Debug, Clone)]
pub struct Program {
    /// Slots in the environment.
    pub slots: usize,
    /// The user-defined functions.
    pub functions: Vec<Function>,
    /// `data`
    pub data: Vec<Decl>,
    /// `transformed data`
    pub transformed_data: Vec<Stmt>,
    /// `parameters`
    pub parameters: Vec<Decl>,
    /// `transformed parameters`
    pub transformed_parameters: Vec<Stmt>,
    /// The transformed parameters' declarations (written as output columns).
    pub transformed_decls: Vec<Decl>,
    /// `model`
    pub model: Vec<Stmt>,
    /// `generated quantities`
    pub generated: Vec<Stmt>,
    /// The generated quantities' top-level declarations (written as output columns).
    pub generated_decls: Vec<Decl>,
    /// Why the generated quantities are not computed, when they are not (a construct gpmc
    /// cannot evaluate there: the posterior is unaffected, the columns are left out).
    pub generated_refusal: Option<gpm_stan::StanError>,
}
