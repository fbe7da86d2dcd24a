//! # gpm-syntax
//!
//! Owns the surface language of gpmc: the pest grammar (`grammar/gpm.pest` at the workspace
//! root), the abstract syntax tree with byte spans for every node, and the diagnostics for text
//! that does not parse. It knows nothing about probability, types or shapes: a program that
//! parses may still be meaningless, and saying so is `gpm-ir`'s job.
//!
//! ```
//! let src = "data { N : int; } model { }";
//! let program = gpm_syntax::parse(src).unwrap();
//! assert_eq!(program.data.len(), 1);
//! ```
#![warn(missing_docs)]
// No `unwrap()` outside tests: an error, or an `expect` that states the invariant (issue 51).
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

pub mod ast;
mod error;
pub mod limits;
mod parser;

pub use ast::*;
pub use error::{offending_token, ParseError};
pub use parser::parse;
