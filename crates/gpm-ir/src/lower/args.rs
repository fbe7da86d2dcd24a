//! Call arguments, positional or named, matched to a parameter list (priors, distributions).

use super::*;

impl Lowerer {
    pub(super) fn check_args(&mut self, c: &ast::Call, params: &[&str]) -> Option<Vec<ast::Expr>> {
        let mut slots: Vec<Option<ast::Expr>> = vec![None; params.len()];
        let mut pos = 0;
        for a in &c.args {
            let k = match &a.name {
                Some(n) => match params.iter().position(|p| *p == n.name) {
                    Some(k) => k,
                    None => {
                        let help = did_you_mean(&n.name, params.iter().copied());
                        let mut e = SemanticError::new(
                            "gpm::unknown_argument",
                            format!("`{}` has no argument `{}`", c.func.name, n.name),
                            n.span,
                            "unknown argument",
                        )
                        .help("see docs/language.md");
                        e.help = Some(help.unwrap_or_else(|| {
                            format!("its arguments are: {}", params.join(", "))
                        }));
                        self.err(e);
                        return None;
                    }
                },
                None => {
                    pos += 1;
                    pos - 1
                }
            };
            if k >= params.len() {
                self.wrong_arity(c, params.len(), params.len());
                return None;
            }
            slots[k] = Some(a.value.clone());
        }
        let filled: Option<Vec<_>> = slots.into_iter().collect();
        if filled.is_none() {
            self.wrong_arity(c, params.len(), params.len());
        }
        filled
    }

    pub(super) fn wrong_arity(&mut self, c: &ast::Call, min: usize, max: usize) {
        let want = if min == max {
            format!("{min}")
        } else {
            format!("{min} to {max}")
        };
        self.err(
            SemanticError::new(
                "gpm::wrong_arity",
                format!(
                    "`{}` takes {want} argument{}, but {} {} given",
                    c.func.name,
                    if max == 1 { "" } else { "s" },
                    c.args.len(),
                    if c.args.len() == 1 { "was" } else { "were" }
                ),
                c.span,
                "wrong number of arguments",
            )
            .help(format!("see docs/language.md for `{}`", c.func.name)),
        );
    }
}
