//! Where a factor's slot takes its value at an observation ([`Source`]: a predictor, a datum, a
//! hyperparameter or one of the factor's auxiliaries), and the binding of the model's names to
//! typed ids, done once here so that nothing downstream looks a name up.

use crate::ids::{HyperId, PredictorId};
use gpm_ir::Model;

/// Where a slot's value comes from at observation `i`.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A predictor's value at `i`.
    Predictor(PredictorId),
    /// A datum: a vector's entry `i`, a matrix column's entry `i`, or a scalar (bound to the
    /// data by the runtime).
    Data(DataRef),
    /// A hyperparameter.
    Hyper(HyperId),
    /// An auxiliary variable of this factor at `i`.
    Aux(usize),
}

/// A datum a slot reads: its name and, for a column of a data matrix, the 0-based column.
#[derive(Debug, Clone, PartialEq)]
pub struct DataRef {
    /// The datum's name as declared.
    pub name: String,
    /// The column of a matrix datum.
    pub column: Option<usize>,
}

impl DataRef {
    /// The datum behind a CAS data symbol (`y`, or `X[,2]` for a column).
    pub fn from_symbol(symbol: &str) -> DataRef {
        let (name, column) = gpm_ir::parse_data_column(symbol);
        DataRef {
            name: name.to_string(),
            column,
        }
    }

    /// The symbol as the CAS spells it.
    pub fn symbol(&self) -> String {
        match self.column {
            Some(c) => gpm_ir::data_column_symbol(&self.name, c + 1),
            None => self.name.clone(),
        }
    }
}

/// A hyperparameter's id from its name.
pub(crate) fn hyper_of(model: &Model, name: &str) -> Result<HyperId, String> {
    model
        .hypers
        .iter()
        .position(|h| h.name == name)
        .map(HyperId)
        .ok_or_else(|| format!("unknown hyperparameter `{name}`"))
}

/// A predictor's id from its name: bound once, here, so that nothing downstream looks a
/// predictor up by name.
pub(crate) type PredOf<'a> = &'a dyn Fn(&str) -> Result<PredictorId, String>;

/// The binder of predictor names to ids ([`PredOf`]).
pub(crate) fn pred_of(model: &Model) -> impl Fn(&str) -> Result<PredictorId, String> + '_ {
    move |name: &str| {
        model
            .predictors
            .iter()
            .position(|p| p.name == name)
            .map(PredictorId)
            .ok_or_else(|| format!("unknown predictor `{name}`"))
    }
}
