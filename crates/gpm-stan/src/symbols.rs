//! What each name of a Stan program is: a datum, a transformed datum, a parameter, or a local
//! (a transformed parameter or a model-block variable) with the definition the translation
//! inlines where it is read.

use crate::ast::{BaseKind, Expr, ExprKind, StanType};
use std::collections::HashMap;

/// Where a name was declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `data`
    Data,
    /// `transformed data` (a `let` of the data block)
    TransformedData,
    /// `parameters`
    Parameter,
    /// `transformed parameters` or a local of the model block
    Local,
}

/// How a local is defined.
#[derive(Debug, Clone)]
pub enum Definition {
    /// `x = e;` (or the declaration's value).
    Whole(Expr),
    /// `for (k in 1:n) x[k] = e;`: entry `k` is `e`.
    Elementwise {
        /// The loop variable `e` reads.
        var: String,
        /// The entry's expression.
        value: Expr,
    },
    /// A transformed-data matrix written by its columns, `[a', b', c']'`: read as the columns
    /// (`x * beta` is `a * beta[1] + b * beta[2] + c * beta[3]` at each observation).
    Columns(Vec<Expr>),
}

/// One declared name.
#[derive(Debug, Clone)]
pub struct Symbol {
    /// Its block.
    pub origin: Origin,
    /// Its declared type.
    pub ty: StanType,
    /// A local's definition, once assigned.
    pub def: Option<Definition>,
}

/// The shape of a value, as the translation needs it.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// One number.
    Scalar,
    /// A vector (or one-dimensional array) whose length is written as this text.
    Vector(String),
    /// A matrix (or an array of vectors) with this many rows (as text).
    Matrix(String),
}

/// The names of the program.
#[derive(Debug, Default)]
pub struct Symbols {
    table: HashMap<String, Symbol>,
}

impl Symbols {
    /// Declare a name (a later declaration of the same name replaces it).
    pub fn declare(&mut self, name: &str, origin: Origin, ty: StanType) {
        self.table.insert(
            name.to_string(),
            Symbol {
                origin,
                ty,
                def: None,
            },
        );
    }

    /// The symbol of a name.
    pub fn get(&self, name: &str) -> Option<&Symbol> {
        self.table.get(name)
    }

    /// Give a local its definition.
    pub fn define(&mut self, name: &str, def: Definition) {
        if let Some(s) = self.table.get_mut(name) {
            s.def = Some(def);
        }
    }

    /// The names of the locals (transformed parameters and model-block variables).
    pub fn locals(&self) -> Vec<String> {
        self.table
            .iter()
            .filter(|(_, s)| s.origin == Origin::Local)
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Whether `name` is a datum (given or transformed).
    pub fn is_data(&self, name: &str) -> bool {
        self.get(name)
            .is_some_and(|s| matches!(s.origin, Origin::Data | Origin::TransformedData))
    }

    /// The shape of a declared name.
    pub fn shape(&self, name: &str) -> Option<Shape> {
        self.get(name).map(|s| shape_of(&s.ty))
    }

    /// The parameters an expression reads, through the definitions of the locals it reads.
    pub fn params_read(&self, e: &Expr) -> Vec<String> {
        let mut out = Vec::new();
        self.collect_params(e, &mut out, 0);
        out.sort();
        out.dedup();
        out
    }

    fn collect_params(&self, e: &Expr, out: &mut Vec<String>, depth: usize) {
        if depth > 64 {
            return;
        }
        e.walk(&mut |x| {
            if let ExprKind::Var(v) = &x.kind {
                match self.get(v) {
                    Some(s) if s.origin == Origin::Parameter => out.push(v.clone()),
                    Some(Symbol {
                        origin: Origin::Local,
                        def: Some(d),
                        ..
                    }) => match d {
                        Definition::Whole(b) | Definition::Elementwise { value: b, .. } => {
                            self.collect_params(b, out, depth + 1)
                        }
                        Definition::Columns(_) => {}
                    },
                    _ => {}
                }
            }
        });
    }
}

/// The shape of a declared type: arrays of scalars are vectors, arrays of vectors matrices.
pub fn shape_of(ty: &StanType) -> Shape {
    let text = |e: &Expr| crate::ast::size_text(e);
    match (ty.array.as_slice(), ty.base) {
        ([], BaseKind::Int | BaseKind::Real) => Shape::Scalar,
        ([n], BaseKind::Int | BaseKind::Real) => Shape::Vector(text(n)),
        ([], BaseKind::Vector | BaseKind::RowVector) => match ty.sizes.first() {
            Some(n) => Shape::Vector(text(n)),
            None => Shape::Scalar,
        },
        ([], BaseKind::Matrix) => match ty.sizes.first() {
            Some(n) => Shape::Matrix(text(n)),
            None => Shape::Scalar,
        },
        ([n], BaseKind::Vector | BaseKind::RowVector) => Shape::Matrix(text(n)),
        ([n, ..], _) => Shape::Matrix(text(n)),
        ([], BaseKind::Constrained(_)) => match ty.sizes.first() {
            Some(n) => Shape::Vector(text(n)),
            None => Shape::Scalar,
        },
    }
}

/// Whether an expression is a whole vector or matrix variable.
pub fn is_vector(e: &Expr, syms: &Symbols) -> bool {
    match &e.kind {
        ExprKind::Var(v) => matches!(syms.shape(v), Some(Shape::Vector(_) | Shape::Matrix(_))),
        _ => false,
    }
}
