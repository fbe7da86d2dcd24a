//! Data values as the runtime sees them: every declared datum by name, already validated
//! against its declaration by the caller (`gpmc` checks shapes, NaN and value constraints).

use nalgebra::DMatrix;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One datum.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A scalar (sizes, constants).
    Scalar(f64),
    /// A vector (one entry per observation, or per group).
    Vector(Vec<f64>),
    /// A matrix, rows = observations. Shared, so that the blocks reading it (a sparse GP's
    /// inputs, one block per latent column) do not copy it: at 10⁶ rows the data dominate memory.
    Matrix(Arc<DMatrix<f64>>),
}

impl Value {
    /// Number of rows (1 for a scalar).
    pub fn rows(&self) -> usize {
        match self {
            Value::Scalar(_) => 1,
            Value::Vector(v) => v.len(),
            Value::Matrix(m) => m.nrows(),
        }
    }
}

/// All data of one model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Data {
    /// Values by name.
    pub values: BTreeMap<String, Value>,
}

impl Data {
    /// A scalar datum.
    pub fn scalar(&self, name: &str) -> Option<f64> {
        match self.values.get(name)? {
            Value::Scalar(v) => Some(*v),
            _ => None,
        }
    }
    /// A vector datum.
    pub fn vector(&self, name: &str) -> Option<&[f64]> {
        match self.values.get(name)? {
            Value::Vector(v) => Some(v),
            _ => None,
        }
    }
    /// A matrix datum; a vector is read as a one-column matrix by [`Data::inputs`].
    pub fn matrix(&self, name: &str) -> Option<&DMatrix<f64>> {
        match self.values.get(name)? {
            Value::Matrix(m) => Some(m),
            _ => None,
        }
    }
    /// GP inputs: a matrix as it is (shared, not copied), a vector as one column.
    pub fn inputs(&self, name: &str) -> Option<Arc<DMatrix<f64>>> {
        match self.values.get(name)? {
            Value::Matrix(m) => Some(Arc::clone(m)),
            Value::Vector(v) => Some(Arc::new(DMatrix::from_column_slice(v.len(), 1, v))),
            Value::Scalar(_) => None,
        }
    }
}
