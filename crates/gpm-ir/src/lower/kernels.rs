//! Kernel expressions of GP priors: `variance * sqexp(ell) + ...`, ARD lengthscales.

use super::*;
use gpm_library::kernel::{self as kernels, ParamRole};

impl Lowerer {
    pub(super) fn kernel(&mut self, e: &ast::Expr, dims: &Dim) -> Option<Kernel> {
        match &e.kind {
            ExprKind::Binary(op @ (BinOp::Add | BinOp::Mul), a, b) => {
                let (ka, kb) = (is_kernel_expr(a), is_kernel_expr(b));
                match (op, ka, kb) {
                    (BinOp::Add, true, true) => Some(Kernel::Sum {
                        left: Box::new(self.kernel(a, dims)?),
                        right: Box::new(self.kernel(b, dims)?),
                    }),
                    (BinOp::Mul, true, true) => Some(Kernel::Product {
                        left: Box::new(self.kernel(a, dims)?),
                        right: Box::new(self.kernel(b, dims)?),
                    }),
                    (BinOp::Mul, false, true) => Some(Kernel::Scale {
                        variance: self.positive_param(a, "a kernel variance")?,
                        kernel: Box::new(self.kernel(b, dims)?),
                    }),
                    (BinOp::Mul, true, false) => Some(Kernel::Scale {
                        variance: self.positive_param(b, "a kernel variance")?,
                        kernel: Box::new(self.kernel(a, dims)?),
                    }),
                    _ => self.not_a_kernel(e),
                }
            }
            ExprKind::Call(c) => {
                let Some(law) = kernels::lookup(&c.func.name) else {
                    let help = super::stan_names::kernel(&c.func.name)
                        .map(str::to_string)
                        .or_else(|| did_you_mean(&c.func.name, kernels::names()));
                    self.err(
                        SemanticError::new(
                            "gpm::unknown_kernel",
                            format!("unknown kernel `{}`", c.func.name),
                            c.func.span,
                            "not a kernel",
                        )
                        .help("see docs/language.md")
                        .help(help.unwrap_or_else(|| {
                            format!(
                                "kernels: {}",
                                kernels::names().collect::<Vec<_>>().join(", ")
                            )
                        })),
                    );
                    return None;
                };
                let (min, max) = (law.min_args(), law.params().len());
                if c.args.len() < min
                    || c.args.len() > max
                    || c.args.iter().any(|a| a.name.is_some())
                {
                    self.wrong_arity(c, min, max);
                    return None;
                }
                let mut args = Vec::with_capacity(max);
                for (k, p) in law.params().iter().enumerate() {
                    let given = c.args.get(k).map(|a| &a.value);
                    let what = format!("the {} of `{}`", p.name, law.name());
                    args.push(match (p.role, given) {
                        (ParamRole::Lengthscale, Some(e)) => self.lengthscale(e, dims)?,
                        (ParamRole::Constrained(c), Some(e)) => KernelArg::Scalar {
                            value: self.constrained_param(e, &what, c)?,
                        },
                        (ParamRole::Real { .. }, Some(e)) => KernelArg::Scalar {
                            value: self.param(e, &what)?,
                        },
                        (ParamRole::Real { default }, None) => KernelArg::Scalar {
                            value: Sx::num(default),
                        },
                        (_, None) => unreachable!("arity checked above"),
                    });
                }
                Some(Kernel::Base { law, args })
            }
            _ => self.not_a_kernel(e),
        }
    }

    pub(super) fn not_a_kernel(&mut self, e: &ast::Expr) -> Option<Kernel> {
        self.err(
            SemanticError::new(
                "gpm::not_a_kernel",
                "this is not a kernel expression",
                e.span,
                "expected a kernel",
            )
            .help("build kernels from sqexp(ℓ), matern32(ℓ), linear(), ... with `+`, `*` and scalar variances: `s2 * sqexp(ell) + linear()`"),
        );
        None
    }

    pub(super) fn lengthscale(&mut self, e: &ast::Expr, dims: &Dim) -> Option<KernelArg> {
        if let ExprKind::Var(v) = &e.kind {
            if let Some(h) = self.model.hyper(v).cloned() {
                if let Shape::Vector(n) = &h.shape {
                    if n != dims {
                        self.err(
                            SemanticError::new(
                                "gpm::shape_mismatch",
                                format!("the ARD lengthscale `{v}` has {n} entries but the inputs have {dims} columns"),
                                e.span,
                                format!("needs {dims} entries"),
                            )
                            .help("an ARD lengthscale has one entry per input column"),
                        );
                        return None;
                    }
                    return Some(KernelArg::Ard { hyper: v.clone() });
                }
            }
        }
        Some(KernelArg::Scalar {
            value: self.positive_param(e, "a lengthscale")?,
        })
    }

    // ---------------------------------------------------------------- expressions
}
