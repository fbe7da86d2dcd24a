//! The syntax tree of a Stan program, with the byte span of every node (spans index the Stan
//! text, so every later diagnostic points into the `.stan` file).

use gpm_syntax::{Ident, Span};

/// A whole Stan program: its blocks' contents.
#[derive(Debug, Clone, Default)]
pub struct StanProgram {
    /// The `functions` block's span, when it defines any function (the Gaussian-latent
    /// translation does not inline them yet).
    pub functions_span: Option<Span>,
    /// The user-defined functions, in order (forward declarations included).
    pub functions: Vec<FunDef>,
    /// `data { ... }` declarations.
    pub data: Vec<VarDecl>,
    /// `transformed data { ... }` statements.
    pub transformed_data: Vec<Stmt>,
    /// `parameters { ... }` declarations.
    pub parameters: Vec<VarDecl>,
    /// `transformed parameters { ... }` statements.
    pub transformed_parameters: Vec<Stmt>,
    /// `model { ... }` statements.
    pub model: Vec<Stmt>,
    /// `generated quantities { ... }` statements.
    pub generated: Vec<Stmt>,
    /// The span of the `generated quantities` block's keyword, when present.
    pub generated_span: Option<Span>,
}

/// The element type of a declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaseKind {
    /// `int`
    Int,
    /// `real`
    Real,
    /// `vector[n]`
    Vector,
    /// `row_vector[n]`
    RowVector,
    /// `matrix[r, c]`
    Matrix,
    /// Any other sized type (`simplex`, `ordered`, `cholesky_factor_corr`, ...), by keyword.
    Constrained(&'static str),
}

/// A declared type: arrays of a base type with its bounds.
#[derive(Debug, Clone)]
pub struct StanType {
    /// The element type.
    pub base: BaseKind,
    /// The sizes of the base type (`vector[n]`: one; `matrix[r, c]`: two).
    pub sizes: Vec<Expr>,
    /// The array dimensions (`array[N]`, or the old `real x[N]`), outermost first.
    pub array: Vec<Expr>,
    /// `<lower = ...>`
    pub lower: Option<Expr>,
    /// `<upper = ...>`
    pub upper: Option<Expr>,
    /// `<offset = ...>` or `<multiplier = ...>` (an affine change of the sampler's coordinates:
    /// it changes no density, so gpmc reads the parameter as declared without it).
    pub affine: bool,
    /// `<offset = ...>`, where NUTS on the log density uses it as Stan does.
    pub offset: Option<Expr>,
    /// `<multiplier = ...>`, likewise.
    pub multiplier: Option<Expr>,
    /// Where the type is written.
    pub span: Span,
}

/// An argument or return type of a user function: a base type and array dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnsizedType {
    /// `int`, `real`, `vector`, `row_vector` or `matrix`.
    pub base: BaseKind,
    /// Array dimensions (`array[,] real`: 2).
    pub array_dims: usize,
}

/// A user-defined function.
#[derive(Debug, Clone)]
pub struct FunDef {
    /// Its name.
    pub name: Ident,
    /// Its return type (`None`: `void`).
    pub returns: Option<UnsizedType>,
    /// Its arguments.
    pub args: Vec<(UnsizedType, Ident)>,
    /// Its body (`None`: a forward declaration).
    pub body: Option<Vec<Stmt>>,
    /// The whole definition.
    pub span: Span,
}

/// `type name = value;`
#[derive(Debug, Clone)]
pub struct VarDecl {
    /// The type.
    pub ty: StanType,
    /// The name.
    pub name: Ident,
    /// The initial value, if written.
    pub value: Option<Expr>,
    /// The whole declaration.
    pub span: Span,
}

/// One index inside `[...]`.
#[derive(Debug, Clone)]
pub enum Index {
    /// `e`: one position, or a multi-index when `e` is an integer array.
    Single(Expr),
    /// `lo:hi`, either end optional; `:` alone (or an empty index) is every position.
    Range(Option<Expr>, Option<Expr>),
}

/// Binary operators, with Stan's spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum BinOp {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
    IntDiv,
    Mod,
    LeftDiv,
    EltMul,
    EltDiv,
    Pow,
    EltPow,
}

impl BinOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Or => "||",
            BinOp::And => "&&",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::IntDiv => "%/%",
            BinOp::Mod => "%",
            BinOp::LeftDiv => "\\",
            BinOp::EltMul => ".*",
            BinOp::EltDiv => "./",
            BinOp::Pow => "^",
            BinOp::EltPow => ".^",
        }
    }
}

/// An expression node.
#[derive(Debug, Clone)]
pub enum ExprKind {
    /// A numeric literal; `is_int` when written without a point or exponent.
    Num {
        /// Value.
        value: f64,
        /// Written as an integer.
        is_int: bool,
    },
    /// A name.
    Var(String),
    /// A string (only in `print` and `reject`).
    Str(String),
    /// `-e`
    Neg(Box<Expr>),
    /// `!e`
    Not(Box<Expr>),
    /// `a op b`
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `c ? a : b`
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `f(args)`, or `f(first | rest)` when `conditional`.
    Call {
        /// The function.
        func: Ident,
        /// The arguments (the first is the variate of a conditional call).
        args: Vec<Expr>,
        /// Written with the bar: `normal_lpdf(y | mu, sigma)`.
        conditional: bool,
    },
    /// `e[i, j]`
    Index(Box<Expr>, Vec<Index>),
    /// `e'`
    Transpose(Box<Expr>),
    /// `{a, b}`
    Array(Vec<Expr>),
    /// `[a, b]`
    RowVector(Vec<Expr>),
}

/// An expression with its span.
#[derive(Debug, Clone)]
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
            ExprKind::Neg(e) | ExprKind::Not(e) | ExprKind::Transpose(e) => e.walk(f),
            ExprKind::Binary(_, a, b) => {
                a.walk(f);
                b.walk(f);
            }
            ExprKind::Ternary(c, a, b) => {
                c.walk(f);
                a.walk(f);
                b.walk(f);
            }
            ExprKind::Call { args, .. } | ExprKind::Array(args) | ExprKind::RowVector(args) => {
                args.iter().for_each(|a| a.walk(f))
            }
            ExprKind::Index(e, ix) => {
                e.walk(f);
                for i in ix {
                    match i {
                        Index::Single(x) => x.walk(f),
                        Index::Range(lo, hi) => lo.iter().chain(hi.iter()).for_each(|x| x.walk(f)),
                    }
                }
            }
        }
    }

    /// Every name this expression reads.
    pub fn names(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.walk(&mut |e| {
            if let ExprKind::Var(v) = &e.kind {
                out.push(v.as_str());
            }
        });
        out
    }

    /// Whether this is the integer literal `1` (where a loop over the observations starts).
    pub fn is_one(&self) -> bool {
        matches!(self.kind, ExprKind::Num { value, is_int: true } if value == 1.0)
    }

    /// The name at the root of an indexed or bare variable (`y` of `y[i]`).
    pub fn root_var(&self) -> Option<&str> {
        match &self.kind {
            ExprKind::Var(v) => Some(v),
            ExprKind::Index(e, _) => e.root_var(),
            _ => None,
        }
    }
}

/// Compound assignment operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum AssignOp {
    Set,
    Add,
    Sub,
    Mul,
    Div,
    EltMul,
    EltDiv,
}

/// `T[lo, hi]` after a distribution, either bound optional.
#[derive(Debug, Clone)]
pub struct Truncation {
    /// Where it is written.
    pub span: Span,
    /// The lower bound.
    pub lo: Option<Expr>,
    /// The upper bound.
    pub hi: Option<Expr>,
}

/// A statement.
#[derive(Debug, Clone)]
pub enum Stmt {
    /// A local variable.
    Decl(Box<VarDecl>),
    /// `lhs[idx] op= rhs;`
    Assign {
        /// The variable.
        name: Ident,
        /// Its indices, one `[...]` group each.
        indices: Vec<Vec<Index>>,
        /// The operator.
        op: AssignOp,
        /// The value.
        value: Expr,
        /// The whole statement.
        span: Span,
    },
    /// `lhs ~ dist(args) T[lo, hi];`
    Tilde {
        /// The variate.
        lhs: Expr,
        /// The distribution.
        dist: Ident,
        /// Its arguments.
        args: Vec<Expr>,
        /// A truncation `T[lo, hi]`, when written: its span and bounds.
        truncation: Option<Truncation>,
        /// The whole statement.
        span: Span,
    },
    /// `target += e;`
    Target {
        /// The log-density term.
        expr: Expr,
        /// The whole statement.
        span: Span,
    },
    /// `for (var in lo:hi) body` (or `for (var in container)` with `hi` None).
    For {
        /// The loop variable.
        var: Ident,
        /// First value (or the container).
        lo: Expr,
        /// Last value, inclusive.
        hi: Option<Expr>,
        /// The body.
        body: Vec<Stmt>,
        /// The whole loop.
        span: Span,
    },
    /// `{ ... }`
    Block(Vec<Stmt>, Span),
    /// `if (cond) then else otherwise`
    If {
        /// The condition.
        cond: Expr,
        /// The statement run when it holds.
        then: Box<Stmt>,
        /// The statement run when it does not, when written.
        otherwise: Option<Box<Stmt>>,
        /// The whole statement.
        span: Span,
    },
    /// `while (cond) body`
    While {
        /// The condition.
        cond: Expr,
        /// The body.
        body: Box<Stmt>,
        /// The whole loop.
        span: Span,
    },
    /// `return e;` (in a user function).
    Return(Option<Expr>, Span),
    /// `print`, `reject`, `break`, `continue` or an expression statement: its keyword and span.
    Other(&'static str, Span),
}

impl Stmt {
    /// The statement's span.
    pub fn span(&self) -> Span {
        match self {
            Stmt::Decl(d) => d.span,
            Stmt::Assign { span, .. }
            | Stmt::Tilde { span, .. }
            | Stmt::Target { span, .. }
            | Stmt::For { span, .. }
            | Stmt::Block(_, span)
            | Stmt::If { span, .. }
            | Stmt::While { span, .. }
            | Stmt::Return(_, span)
            | Stmt::Other(_, span) => *span,
        }
    }
}

/// A size expression as text (`N`, `10`), to compare lengths as written.
pub fn size_text(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Num { value, .. } => format!("{value}"),
        ExprKind::Var(v) => v.clone(),
        ExprKind::Binary(op, a, b) => {
            format!("({} {} {})", size_text(a), op.symbol(), size_text(b))
        }
        ExprKind::Call { func, args, .. } => format!(
            "{}({})",
            func.name,
            args.iter().map(size_text).collect::<Vec<_>>().join(", ")
        ),
        _ => format!("<{}..{}>", e.span.start, e.span.end),
    }
}
