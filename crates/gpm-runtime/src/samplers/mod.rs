//! Exact samplers for the auxiliary-variable families (work in progress).
