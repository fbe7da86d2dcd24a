//! The abstract syntax tree. Every node carries the byte span of the text it came from, so that
//! later stages can point at the source in their diagnostics.

use serde::Serialize;

/// A byte range `start..end` in the model text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// A span from `start` to `end`.
    pub fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }
    /// The smallest span covering both.
    pub fn join(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.end - self.start
    }
    /// Whether the span is empty.
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }
}

impl From<Span> for miette::SourceSpan {
    fn from(s: Span) -> Self {
        (s.start, s.len()).into()
    }
}

/// A name as written, with where it was written.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ident {
    /// The name.
    pub name: String,
    /// Where it stands.
    pub span: Span,
}

/// A whole `.gpm` program: the contents of its four blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Program {
    /// `data { ... }`: observed values, sizes and covariates.
    pub data: Vec<DataDecl>,
    /// `let` declarations of the data block (transformed data), in order.
    pub data_lets: Vec<DataLet>,
    /// `hyper { ... }`: hyperparameters (fixed, learned or with a prior).
    pub hypers: Vec<HyperDecl>,
    /// `latent { ... }`: Gaussian latent blocks.
    pub latents: Vec<LatentDecl>,
    /// `parameters { ... }`: parameters whose role (latent or hyperparameter) the compiler
    /// decides (`gpm_ir::split_parameters`), in order.
    pub parameters: Vec<ParamDecl>,
    /// `model { ... }`: predictors and likelihood statements.
    pub model: Vec<Stmt>,
    /// Span of each block keyword that appeared, in order (to report a block given twice).
    pub blocks: Vec<(BlockKind, Span)>,
}

/// Which of the four blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum BlockKind {
    /// `data`
    Data,
    /// `hyper`
    Hyper,
    /// `latent`
    Latent,
    /// `parameters`
    Parameters,
    /// `model`
    Model,
}

/// A declared type, with its shape expressions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum TypeKind {
    /// `int`
    Int,
    /// `real`
    Real,
    /// `vector[n]`
    Vector(Expr),
    /// `matrix[rows, cols]`
    Matrix(Expr, Expr),
    /// `int[n]`: an integer array (labels, counts, group indices).
    IntArray(Expr),
    /// `real[n]`: a real array, the same as a vector for the model.
    RealArray(Expr),
}

/// A type with its span.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Type {
    /// The type.
    pub kind: TypeKind,
    /// Where it is written.
    pub span: Span,
}

/// A value constraint `in {...}` or `in lo..hi`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum ConstraintKind {
    /// `in {-1, 1}`: the value is one of these integers.
    Set(Vec<i64>),
    /// `in lo..hi` with either bound optional (`0..` means non-negative); bounds inclusive.
    Range {
        /// Lower bound.
        lo: Option<Expr>,
        /// Upper bound.
        hi: Option<Expr>,
    },
}

/// A constraint with its span.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Constraint {
    /// The constraint.
    pub kind: ConstraintKind,
    /// Where it is written.
    pub span: Span,
}

/// `name : type [constraint];` in the data block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DataDecl {
    /// Variable name.
    pub name: Ident,
    /// Its type.
    pub ty: Type,
    /// Optional value constraint.
    pub constraint: Option<Constraint>,
    /// The whole declaration.
    pub span: Span,
}

/// `let name = expr;` in the data block: a datum computed from the data declared before it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DataLet {
    /// Its name.
    pub name: Ident,
    /// Its value.
    pub value: Expr,
    /// How many data declarations precede it (it may read those and earlier lets).
    pub after: usize,
    /// The whole declaration.
    pub span: Span,
}

/// How a hyperparameter gets its value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum HyperSpec {
    /// `= expr`: fixed.
    Fixed(Expr),
    /// `= learn(init)`: type-II maximum likelihood, starting at `init`.
    Learn(Expr),
    /// `~ dist(...)`: a prior.
    Prior(Call),
}

/// `name : type [constraint] (= value | = learn(init) | ~ prior);` in the hyper block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HyperDecl {
    /// Name.
    pub name: Ident,
    /// Type.
    pub ty: Type,
    /// Optional value constraint.
    pub constraint: Option<Constraint>,
    /// Fixed, learned or prior.
    pub spec: HyperSpec,
    /// The whole declaration.
    pub span: Span,
}

/// `name : type ~ prior;` in the latent block (`gp(...)`, `normal(...)`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatentDecl {
    /// Name.
    pub name: Ident,
    /// Type (shape).
    pub ty: Type,
    /// The Gaussian prior.
    pub prior: Call,
    /// The whole declaration.
    pub span: Span,
}

/// `name : type [constraint] [~ prior];` in the parameters block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParamDecl {
    /// Name.
    pub name: Ident,
    /// Type (shape).
    pub ty: Type,
    /// Optional value constraint (a range).
    pub constraint: Option<Constraint>,
    /// The prior, when written (none: `flat()`).
    pub prior: Option<Call>,
    /// The whole declaration.
    pub span: Span,
}

/// A call `f(a, b, name = c)`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Call {
    /// The function or distribution name.
    pub func: Ident,
    /// Arguments, positional or named.
    pub args: Vec<Arg>,
    /// The whole call.
    pub span: Span,
}

/// One argument of a call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Arg {
    /// `name =` for a named argument.
    pub name: Option<Ident>,
    /// The value.
    pub value: Expr,
}

/// A statement of the model block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Stmt {
    /// `let name = expr;` defines a linear predictor or a derived quantity.
    Let {
        /// Name.
        name: Ident,
        /// Definition.
        value: Expr,
        /// The whole statement.
        span: Span,
    },
    /// `lhs ~ dist(args);` a likelihood statement with a library distribution.
    Sample {
        /// The observed expression (`y`, `y[i]`).
        lhs: Expr,
        /// The distribution.
        dist: Call,
        /// A modifier after it: `robust(beta = 0.2)` (checked by the lowering).
        modifier: Option<Call>,
        /// The whole statement.
        span: Span,
    },
    /// `target += expr;` adds a log-density.
    Target {
        /// The log-density.
        expr: Expr,
        /// The whole statement.
        span: Span,
    },
    /// `factor(expr);` multiplies the density by `expr` (`target += log(expr)`).
    Factor {
        /// The (unnormalised) density.
        expr: Expr,
        /// The whole statement.
        span: Span,
    },
    /// `for i in lo..hi { ... }`, both bounds inclusive.
    For {
        /// Loop variable.
        var: Ident,
        /// First value.
        lo: Expr,
        /// Last value (inclusive).
        hi: Expr,
        /// Body.
        body: Vec<Stmt>,
        /// The whole loop.
        span: Span,
    },
}

impl Stmt {
    /// The statement's span.
    pub fn span(&self) -> Span {
        match self {
            Stmt::Let { span, .. }
            | Stmt::Sample { span, .. }
            | Stmt::Target { span, .. }
            | Stmt::Factor { span, .. }
            | Stmt::For { span, .. } => *span,
        }
    }
}

/// Binary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*` (scalar or matrix product)
    Mul,
    /// `/`
    Div,
    /// `^`
    Pow,
    /// `==` (an indicator, 1 or 0: transformed data only)
    Eq,
}

impl BinOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Pow => "^",
            BinOp::Eq => "==",
        }
    }
}

/// An expression node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum ExprKind {
    /// A numeric literal; `is_int` when written without a point or exponent.
    Num {
        /// Value.
        value: f64,
        /// Written as an integer literal.
        is_int: bool,
    },
    /// A name.
    Var(String),
    /// A string literal, without its quotes: only an argument's value (`link = "bijective"`).
    Str(String),
    /// `-e`
    Neg(Box<Expr>),
    /// `a op b`
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `f(args)`
    Call(Call),
    /// `e[i]` or `e[i, j]`
    Index(Box<Expr>, Vec<Expr>),
}

/// An expression with its span.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Expr {
    /// The node.
    pub kind: ExprKind,
    /// Where it is written.
    pub span: Span,
}

impl Expr {
    /// Visit this expression and every sub-expression, parents first.
    pub fn walk<'a>(&'a self, f: &mut dyn FnMut(&'a Expr)) {
        f(self);
        match &self.kind {
            ExprKind::Num { .. } | ExprKind::Var(_) | ExprKind::Str(_) => {}
            ExprKind::Neg(e) => e.walk(f),
            ExprKind::Binary(_, a, b) => {
                a.walk(f);
                b.walk(f);
            }
            ExprKind::Call(c) => c.args.iter().for_each(|a| a.value.walk(f)),
            ExprKind::Index(e, ix) => {
                e.walk(f);
                ix.iter().for_each(|i| i.walk(f));
            }
        }
    }
}

impl std::fmt::Display for Expr {
    /// Prints the expression back in surface syntax, fully parenthesised where needed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            ExprKind::Num { value, is_int } => {
                // A negative literal is parenthesised: `-1 ^ a` would read as `-(1 ^ a)`.
                let text = if *is_int {
                    format!("{}", *value as i64)
                } else {
                    format!("{value:?}")
                };
                if *value < 0.0 {
                    write!(f, "({text})")
                } else {
                    write!(f, "{text}")
                }
            }
            ExprKind::Var(v) => write!(f, "{v}"),
            ExprKind::Str(s) => write!(f, "{s:?}"),
            ExprKind::Neg(e) => write!(f, "(-({e}))"),
            ExprKind::Binary(op, a, b) => write!(f, "({a} {} {b})", op.symbol()),
            ExprKind::Call(c) => write!(f, "{c}"),
            ExprKind::Index(e, ix) => {
                write!(f, "{e}[")?;
                for (k, i) in ix.iter().enumerate() {
                    if k > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{i}")?;
                }
                write!(f, "]")
            }
        }
    }
}

impl std::fmt::Display for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}(", self.func.name)?;
        for (k, a) in self.args.iter().enumerate() {
            if k > 0 {
                write!(f, ", ")?;
            }
            if let Some(n) = &a.name {
                write!(f, "{} = ", n.name)?;
            }
            write!(f, "{}", a.value)?;
        }
        write!(f, ")")
    }
}
