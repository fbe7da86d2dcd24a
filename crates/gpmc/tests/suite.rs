//! Every integration test of `gpmc` in one test binary: one build and one link instead of
//! one per file (43 of them: 48 s of a test build, and a harness that ran one file at a time,
//! a long test on one core while the other idled). Each file is a module; a test is named
//! `file::test`, so `cargo test -p gpmc --test suite nuts::` runs one file's tests.

mod common;
mod workflow_support;

mod ard;
mod bad_data;
mod cavi;
mod check_models;
mod cli_end_to_end;
mod cluster;
mod conditionally_gaussian;
mod docs_models;
mod draw_names;
mod extreme_numerics;
mod fuzz_cli;
mod generic_update;
mod gibbs_quadrature;
mod gibbs_vs_elliptical;
mod gpf;
mod gpm_parameters;
mod hardening;
mod hardening_predict;
mod horseshoe;
mod hyperpriors;
mod latent_priors;
mod learning_phase;
mod linear_regression;
mod memory_estimate;
mod no_panic;
mod nuts;
mod nuts_block;
mod online_inducing;
mod output_safety;
mod pathwise_draw;
mod power_ep;
mod predict;
mod registry_constraints;
mod registry_docs;
mod robust;
mod softmax_links;
mod sparse;
mod sparse_kernel;
mod stan_density;
mod stan_forms;
mod stan_habits;
mod stan_programs;
mod step_times;
mod surrogate_transition;
mod workflow;
mod workflow_variational;
