//! Transformed data: `let name = expr;` in the data block, lowered to a [`DataExpr`] with its
//! shape; the value is computed when the data are read.

use super::*;
use crate::transformed::{DataExpr, Reduction};

impl Lowerer {
    pub(super) fn data_let(&mut self, t: &ast::DataLet) {
        let Some((expr, shape)) = self.data_expr(&t.value) else {
            return;
        };
        if !self.declare(&t.name, Binding::Data) {
            return;
        }
        // An integer scalar (`let J = C - 1;`) can size a vector or matrix.
        let elem = if shape == Shape::Scalar && self.int_valued(&expr) {
            Elem::Int
        } else {
            Elem::Real
        };
        self.model.data.push(DataVar {
            name: t.name.name.clone(),
            elem,
            shape,
            constraint: ValueSet::Any,
            span: t.span,
            derived: Some(expr),
        });
    }

    /// Integer literals and `int` data under `+`, `-` and `*`.
    fn int_valued(&self, e: &DataExpr) -> bool {
        match e {
            DataExpr::Num { value } => value.fract() == 0.0,
            DataExpr::Data { name } => self.model.datum(name).is_some_and(|d| d.elem == Elem::Int),
            DataExpr::Neg { arg } => self.int_valued(arg),
            DataExpr::Binary { op, left, right } => {
                matches!(
                    op,
                    crate::DataOp::Add | crate::DataOp::Sub | crate::DataOp::Mul
                ) && self.int_valued(left)
                    && self.int_valued(right)
            }
            _ => false,
        }
    }

    fn bad_transform(
        &mut self,
        span: Span,
        message: String,
        help: &str,
    ) -> Option<(DataExpr, Shape)> {
        self.err(
            SemanticError::new("gpm::bad_transform", message, span, "in transformed data")
                .help(help.to_string()),
        );
        None
    }

    /// An expression of transformed data and its shape.
    fn data_expr(&mut self, e: &ast::Expr) -> Option<(DataExpr, Shape)> {
        match &e.kind {
            ExprKind::Num { value, .. } => Some((DataExpr::Num { value: *value }, Shape::Scalar)),
            ExprKind::Str(_) => self.misplaced_string(e.span),
            ExprKind::Var(v) => match self.names.get(v).map(|b| &b.0) {
                Some(Binding::Data) => {
                    let shape = self.model.datum(v)?.shape.clone();
                    Some((DataExpr::Data { name: v.clone() }, shape))
                }
                Some(_) => self.bad_transform(
                    e.span,
                    format!("transformed data can read only data, and `{v}` is not a datum"),
                    "a `let` in the data block is computed once from the data; hyperparameters and latents belong in the model block",
                ),
                None => {
                    self.unknown_name(v, e.span);
                    None
                }
            },
            ExprKind::Neg(a) => {
                let (x, s) = self.data_expr(a)?;
                Some((DataExpr::Neg { arg: Box::new(x) }, s))
            }
            ExprKind::Binary(op, a, b) => {
                let (x, sa) = self.data_expr(a)?;
                let (y, sb) = self.data_expr(b)?;
                let shape = self.broadcast(&sa, &sb, e.span)?;
                let (left, right) = (Box::new(x), Box::new(y));
                Some((DataExpr::Binary { op: *op, left, right }, shape))
            }
            ExprKind::Call(c) => self.data_call(c),
            ExprKind::Index(..) => self.bad_transform(
                e.span,
                "transformed data are whole vectors and matrices; entries cannot be indexed here".into(),
                "write the operation on the whole vector (`log(x)`, `x - mean(x)`), or take a column with `X[, j]`",
            ),
        }
    }

    fn data_call(&mut self, c: &ast::Call) -> Option<(DataExpr, Shape)> {
        let name = c.func.name.as_str();
        let args: Vec<&ast::Expr> = c.args.iter().map(|a| &a.value).collect();
        let reduction = match name {
            "mean" => Some(Reduction::Mean),
            "sd" => Some(Reduction::Sd),
            "sum" => Some(Reduction::Sum),
            _ => None,
        };
        if let Some(how) = reduction {
            if args.len() != 1 {
                self.wrong_arity(c, 1, 1);
                return None;
            }
            let (x, _) = self.data_expr(args[0])?;
            return Some((
                DataExpr::Reduce {
                    how,
                    arg: Box::new(x),
                },
                Shape::Scalar,
            ));
        }
        if name == "col" {
            return self.data_column(c);
        }
        let arity = library::MATH_FUNCTIONS
            .iter()
            .find(|(f, _)| *f == name && *f != "dot")
            .map(|f| f.1);
        let Some(arity) = arity else {
            let names = library::MATH_FUNCTIONS
                .iter()
                .map(|f| f.0)
                .filter(|f| *f != "dot");
            let list: Vec<&str> = names.collect();
            return self.bad_transform(
                c.func.span,
                format!("`{name}` is not a function of transformed data"),
                &format!(
                    "element-wise: {}; reductions: mean, sd, sum; a column: X[, j]; arithmetic + - * / ^ and the indicator ==",
                    list.join(", ")
                ),
            );
        };
        if args.len() != arity {
            self.wrong_arity(c, arity, arity);
            return None;
        }
        let mut lowered = Vec::new();
        let mut shape = Shape::Scalar;
        for a in &args {
            let (x, s) = self.data_expr(a)?;
            shape = self.broadcast(&shape, &s, a.span)?;
            lowered.push(x);
        }
        let slots = (0..arity)
            .map(|k| Sx::sym(SymRole::Data, &format!("_{k}")))
            .collect();
        let formula = library::apply_math(name, slots);
        Some((
            DataExpr::Func {
                name: name.to_string(),
                formula,
                args: lowered,
            },
            shape,
        ))
    }

    /// `col(X, j)`, written `X[, j]`: column `j` (1-based, a constant) of a matrix datum.
    fn data_column(&mut self, c: &ast::Call) -> Option<(DataExpr, Shape)> {
        if c.args.len() != 2 {
            self.wrong_arity(c, 2, 2);
            return None;
        }
        let (m, j) = (&c.args[0].value, &c.args[1].value);
        let (x, shape) = self.data_expr(m)?;
        let (DataExpr::Data { name }, Shape::Matrix(rows, cols)) = (x, shape) else {
            return self.bad_transform(
                m.span,
                "a column `X[, j]` is taken of a matrix datum".into(),
                "declare `X : matrix[N, D]` in the data block",
            );
        };
        let j = self.constant(j, "a column number")?;
        let Some(column) = sizes::one_based(j, &cols) else {
            return self.bad_transform(
                c.args[1].value.span,
                format!("column {j} of `{name}`, which has {cols} columns"),
                "columns are numbered from 1",
            );
        };
        Some((DataExpr::Column { name, column }, Shape::Vector(rows)))
    }

    /// The shape of an element-wise operation on two shapes (a scalar broadcasts).
    fn broadcast(&mut self, a: &Shape, b: &Shape, span: Span) -> Option<Shape> {
        match (a, b) {
            (Shape::Scalar, s) | (s, Shape::Scalar) => Some(s.clone()),
            (Shape::Vector(n), Shape::Vector(m)) if n == m => Some(a.clone()),
            (Shape::Matrix(r, c), Shape::Matrix(r2, c2)) if r == r2 && c == c2 => Some(a.clone()),
            _ => {
                self.bad_transform(
                    span,
                    format!("an element-wise operation between a {a} and a {b}"),
                    "operands must have the same shape, or one must be a scalar",
                );
                None
            }
        }
    }
}
