//! What a logistic-softmax factor reads when it is bound (thesis ch. 4, §7.4): its labels,
//! checked against its number of classes (the latent matrix's columns, one more under the
//! bijective link) and its class scales. Every method binds it here; the class weights
//! themselves are [`gpm_library::likelihood::ClassWeights`].

use crate::data::Data;
use crate::kernels::HyperValues;
use crate::RuntimeError;
use gpm_library::likelihood::ClassWeights;
use gpm_schedule::CategoricalProgram;

/// A logistic-softmax factor bound to its data.
#[derive(Debug, Clone)]
pub struct BoundCategorical {
    /// Labels, 0-based; `columns` is the fixed class of a bijective link.
    pub labels: Vec<usize>,
    /// The latent matrix's columns.
    pub columns: usize,
    /// Whether the last class is the fixed one (§7.4.2).
    pub bijective: bool,
}

impl BoundCategorical {
    /// Bind `cat` to `data`: `latent_len` values in the latent matrix (rows × columns).
    pub fn new(
        cat: &CategoricalProgram,
        data: &Data,
        latent_len: usize,
        hypers: &HyperValues,
    ) -> Result<BoundCategorical, RuntimeError> {
        let y = data
            .vector(&cat.label)
            .ok_or_else(|| RuntimeError::MissingData(format!("no labels `{}`", cat.label)))?;
        let columns = latent_len / y.len().max(1);
        let classes = columns + usize::from(cat.bijective);
        let mut labels = Vec::with_capacity(y.len());
        for (i, v) in y.iter().enumerate() {
            if !(v.fract() == 0.0 && *v >= 1.0 && *v <= classes as f64) {
                return Err(RuntimeError::BadData(format!(
                    "`{}[{}]` = {v} is not a class: `{}` has {columns} columns, so the labels run over 1..{classes}{}",
                    cat.label,
                    i + 1,
                    cat.latent,
                    if cat.bijective {
                        " (the last one, with no column, is the bijective link's fixed class)"
                    } else {
                        ""
                    }
                )));
            }
            labels.push(*v as usize - 1);
        }
        if let Some(h) = cat.scale {
            let len = hypers.vector(h).map_or(0, <[f64]>::len);
            if len != classes {
                return Err(RuntimeError::BadData(format!(
                    "the class scales of `{}` have {len} entries for {classes} classes: declare them `vector[C]` with C the number of classes",
                    cat.label
                )));
            }
        }
        Ok(BoundCategorical {
            labels,
            columns,
            bijective: cat.bijective,
        })
    }

    /// The number of classes.
    pub fn classes(&self) -> usize {
        self.columns + usize::from(self.bijective)
    }

    /// The class weights at the class scales in `theta` (empty: unscaled).
    pub fn weights<'t>(&self, theta: &'t [f64]) -> ClassWeights<'t> {
        ClassWeights {
            bijective: self.bijective,
            theta,
        }
    }
}

/// The class scales of `cat` among the vector hyperparameters (empty: unscaled).
pub fn scales<'v>(cat: &CategoricalProgram, vectors: &'v [Vec<f64>]) -> &'v [f64] {
    cat.scale
        .and_then(|h| vectors.get(h.0))
        .map_or(&[][..], |v| v.as_slice())
}
