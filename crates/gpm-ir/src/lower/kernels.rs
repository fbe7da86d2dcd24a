//! Kernel expressions of GP priors: `variance * sqexp(ell) + ...`, ARD lengthscales.

use super::*;

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
                let Some((name, min, max)) = library::KERNELS
                    .iter()
                    .find(|(n, _, _)| *n == c.func.name)
                    .copied()
                else {
                    let help = did_you_mean(&c.func.name, library::KERNELS.iter().map(|k| k.0));
                    self.err(
                        SemanticError::new(
                            "gpm::unknown_kernel",
                            format!("unknown kernel `{}`", c.func.name),
                            c.func.span,
                            "not a kernel",
                        )
.help("see docs/language.md")
                        .help(help.unwrap_or_else(|| {
                            "kernels: sqexp (rbf), matern12, matern32, matern52, linear, periodic, constant, white".into()
                        })),
                    );
                    return None;
                };
                if c.args.len() < min
                    || c.args.len() > max
                    || c.args.iter().any(|a| a.name.is_some())
                {
                    self.wrong_arity(c, min, max);
                    return None;
                }
                let ls = |l: &mut Self| l.lengthscale(&c.args[0].value, dims);
                Some(match name {
                    "sqexp" | "rbf" => Kernel::SqExp {
                        lengthscale: ls(self)?,
                    },
                    "matern12" => Kernel::Matern12 {
                        lengthscale: ls(self)?,
                    },
                    "matern32" => Kernel::Matern32 {
                        lengthscale: ls(self)?,
                    },
                    "matern52" => Kernel::Matern52 {
                        lengthscale: ls(self)?,
                    },
                    "linear" => Kernel::Linear {
                        offset: match c.args.first() {
                            Some(a) => self.param(&a.value, "the offset of `linear`")?,
                            None => Sx::num(0.0),
                        },
                    },
                    "periodic" => Kernel::Periodic {
                        lengthscale: self.positive_param(&c.args[0].value, "a lengthscale")?,
                        period: self.positive_param(&c.args[1].value, "a period")?,
                    },
                    "constant" => Kernel::Constant,
                    _ => Kernel::White,
                })
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

    pub(super) fn lengthscale(&mut self, e: &ast::Expr, dims: &Dim) -> Option<Lengthscale> {
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
                    return Some(Lengthscale::Ard { hyper: v.clone() });
                }
            }
        }
        Some(Lengthscale::Scalar {
            value: self.positive_param(e, "a lengthscale")?,
        })
    }

    // ---------------------------------------------------------------- expressions
}
