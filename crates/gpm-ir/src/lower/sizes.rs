//! Sizes, constants and value sets: `vector[N]`, `in 0..`, `in {-1, 1}` resolved to the IR's `Dim` and `ValueSet`.

use super::*;

/// The 0-based position of a constant 1-based index `k` into something of length `len`; `None`
/// unless `k` is an integer in `1..=len` (a length that is a datum bounds it only when the data
/// are bound, so there any integer from 1 passes).
pub(super) fn one_based(k: f64, len: &Dim) -> Option<usize> {
    let within = match len {
        Dim::Const(n) => k <= *n as f64,
        Dim::Var(_) => true,
    };
    (k >= 1.0 && k.fract() == 0.0 && within).then(|| k as usize - 1)
}

impl Lowerer {
    /// A size: an integer literal or an `int` scalar datum.
    pub(super) fn dim(&mut self, e: &ast::Expr) -> Option<Dim> {
        match &e.kind {
            ExprKind::Num { value, is_int } if *is_int && *value >= 0.0 => {
                Some(Dim::Const(*value as usize))
            }
            ExprKind::Var(v) => match self.model.datum(v) {
                Some(d) if d.elem == Elem::Int && d.shape == Shape::Scalar => {
                    Some(Dim::Var(v.clone()))
                }
                Some(_) => {
                    self.err(
                        SemanticError::new(
                            "gpm::bad_size",
                            format!("the size `{v}` is not an `int` scalar"),
                            e.span,
                            "must be an `int` datum",
                        )
                        .help("declare sizes as `N : int;` in the data block"),
                    );
                    None
                }
                None => {
                    if self.names.contains_key(v) {
                        self.err(
                            SemanticError::new(
                                "gpm::bad_size",
                                format!("the size `{v}` is not a datum"),
                                e.span,
                                "sizes must be `int` data",
                            )
                            .help("declare sizes as `N : int;` in the data block, before use"),
                        );
                    } else {
                        self.unknown_name(v, e.span);
                    }
                    None
                }
            },
            _ => {
                self.err(
                    SemanticError::new(
                        "gpm::bad_size",
                        "a size must be a non-negative integer literal or an `int` datum",
                        e.span,
                        "not a size",
                    )
                    .help("write e.g. `vector[N]` or `matrix[N, 3]`"),
                );
                None
            }
        }
    }

    /// A numeric constant (literals and arithmetic on them).
    pub(super) fn constant(&mut self, e: &ast::Expr, what: &str) -> Option<f64> {
        fn go(e: &ast::Expr) -> Option<f64> {
            Some(match &e.kind {
                ExprKind::Num { value, .. } => *value,
                ExprKind::Neg(a) => -go(a)?,
                ExprKind::Binary(op, a, b) => {
                    let (a, b) = (go(a)?, go(b)?);
                    match op {
                        BinOp::Add => a + b,
                        BinOp::Sub => a - b,
                        BinOp::Mul => a * b,
                        BinOp::Div => a / b,
                        BinOp::Pow => a.powf(b),
                        BinOp::Eq => f64::from(u8::from(a == b)),
                    }
                }
                ExprKind::Call(c) if c.args.len() == 1 => {
                    let x = go(&c.args[0].value)?;
                    match c.func.name.as_str() {
                        "sqrt" => x.sqrt(),
                        "exp" => x.exp(),
                        "log" => x.ln(),
                        _ => return None,
                    }
                }
                _ => return None,
            })
        }
        match go(e) {
            Some(v) if v.is_finite() => Some(v),
            Some(_) => {
                self.err(
                    SemanticError::new(
                        "gpm::not_constant",
                        format!("{what} evaluates to a non-finite number"),
                        e.span,
                        "not finite",
                    )
                    .help("see docs/language.md"),
                );
                None
            }
            None => {
                self.err(
                    SemanticError::new(
                        "gpm::not_constant",
                        format!("{what} must be a numeric constant"),
                        e.span,
                        "not a constant",
                    )
                    .help("write a number such as `1.0` or `2 * 3.5`"),
                );
                None
            }
        }
    }

    pub(super) fn value_set(&mut self, c: &Option<ast::Constraint>, elem: Elem) -> ValueSet {
        let Some(c) = c else { return ValueSet::Any };
        match &c.kind {
            ast::ConstraintKind::Set(v) => {
                if elem != Elem::Int {
                    self.err(
                        SemanticError::new(
                            "gpm::set_on_real",
                            "a set of labels constrains an integer, but this is real-valued",
                            c.span,
                            "label set on a real",
                        )
                        .help("declare labels as `y : int[N] in {-1, 1};`"),
                    );
                }
                let mut s = v.clone();
                s.sort();
                if s.windows(2).any(|w| w[0] == w[1]) {
                    self.err(
                        SemanticError::new(
                            "gpm::bad_constraint",
                            "a value is listed twice in the set",
                            c.span,
                            "repeated value",
                        )
                        .help("see docs/language.md"),
                    );
                }
                ValueSet::Set(s)
            }
            ast::ConstraintKind::Range { lo, hi } => {
                let bound = |l: &mut Self, e: &Option<ast::Expr>| -> Option<Bound> {
                    let e = e.as_ref()?;
                    if let ExprKind::Var(v) = &e.kind {
                        return l.dim(e).map(|_| Bound::Var(v.clone()));
                    }
                    l.constant(e, "a range bound").map(Bound::Const)
                };
                let lo_b = bound(self, lo);
                let hi_b = bound(self, hi);
                if let (Some(Bound::Const(a)), Some(Bound::Const(b))) = (&lo_b, &hi_b) {
                    if a > b {
                        self.err(
                            SemanticError::new(
                                "gpm::bad_constraint",
                                format!("the range {a}..{b} is empty"),
                                c.span,
                                "empty range",
                            )
                            .help("see docs/language.md"),
                        );
                    }
                }
                ValueSet::Range { lo: lo_b, hi: hi_b }
            }
        }
    }

    // ---------------------------------------------------------------- declarations
}
