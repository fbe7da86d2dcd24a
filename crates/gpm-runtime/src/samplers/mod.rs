//! Exact samplers written here because no crate provides them exactly (the rest of the
//! auxiliary families are drawn in [`crate::draw`] with `rand_distr`).

pub mod polya_gamma;
