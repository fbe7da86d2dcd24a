//! A compiled program bound to its data: the fixed environment (data and transformed data),
//! the parameters' unconstrained layout, and the log density with its gradient at a point.

use crate::ad::{Tape, R};
use crate::error::{Eval, EvalError};
use crate::eval::Machine;
use crate::program::{Constraint, Decl, Program};
use crate::transform::{self, Evaluated, Shape};
use crate::value::Val;
use rand::SeedableRng;
use std::sync::Arc;

/// The seed of `_rng` calls in transformed data.
const TRANSFORMED_DATA_SEED: u64 = 0x7472_616e_7364_6174;

/// One parameter's place in the unconstrained vector.
#[derive(Debug, Clone)]
struct Param {
    index: usize,
    shape: Shape,
    offset: usize,
    len: usize,
}

/// A program bound to data.
#[derive(Debug, Clone)]
pub struct Model {
    program: Arc<Program>,
    fixed: Vec<Val>,
    params: Vec<Param>,
    dim: usize,
}

impl Model {
    /// Bind data (CmdStan's JSON object) to a program: data read and checked, transformed
    /// data run, the parameters' sizes evaluated.
    pub fn bind(
        program: Arc<Program>,
        data: &serde_json::Map<String, serde_json::Value>,
    ) -> Eval<Model> {
        let mut m = Machine::new(Tape::default(), &[], program.slots, &program.functions);
        // `_rng` in transformed data: one fixed stream, so that the data are the same in every
        // chain and every run.
        m.rng = Some(rand_chacha::ChaCha8Rng::seed_from_u64(
            TRANSFORMED_DATA_SEED,
        ));
        for d in &program.data {
            let shape = m.shape(d)?;
            let v = crate::data::value(d, &shape, data.get(&d.name))?;
            let (lo, hi) = bounds(&mut m, d)?;
            crate::data::check_bounds(d, &v, lo.as_ref(), hi.as_ref())?;
            m.put(d.slot, v)?;
        }
        m.run(&program.transformed_data)?;
        let mut params = Vec::with_capacity(program.parameters.len());
        let mut offset = 0;
        for (index, d) in program.parameters.iter().enumerate() {
            let shape = m.shape(d)?;
            let len = transform::free_len(&kind(&d.constraint), &shape);
            params.push(Param {
                index,
                shape,
                offset,
                len,
            });
            offset += len;
        }
        let mut fixed = m.into_slots();
        fixed.truncate(first_parameter_slot(&program));
        Ok(Model {
            program,
            fixed,
            params,
            dim: offset,
        })
    }

    /// Unconstrained coordinates.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The program.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The log density (up to a constant) at unconstrained coordinates `u`, with its gradient
    /// written into `grad`.
    pub fn log_density_gradient(&self, u: &[f64], grad: &mut [f64]) -> Eval<f64> {
        if grad.len() != u.len() {
            return Err(EvalError::new(format!(
                "a gradient of {} entries for a point of {}",
                grad.len(),
                u.len()
            )));
        }
        let (tape, vars) = Tape::with_inputs(u);
        let mut m = self.machine(tape, &vars)?;
        m.run(&self.program.model)?;
        let terms = std::mem::take(&mut m.target);
        let lp = m.tape.sum(&terms);
        let g = m.tape.gradient(lp, u.len());
        grad.copy_from_slice(&g);
        Ok(lp.v)
    }

    /// The parameters set from `u` (with their Jacobian terms in the target) and the
    /// transformed parameters computed and checked against their bounds.
    fn machine<'a>(&'a self, tape: Tape, vars: &[R]) -> Eval<Machine<'a>> {
        if vars.len() != self.dim {
            return Err(EvalError::new(format!(
                "a point has {} coordinates, the program {}",
                vars.len(),
                self.dim
            )));
        }
        let mut m = Machine::new(
            tape,
            &self.fixed,
            self.program.slots,
            &self.program.functions,
        );
        let mut jacobian = Vec::new();
        for p in &self.params {
            let d = &self.program.parameters[p.index];
            let c = evaluate(&mut m, &d.constraint)?;
            let v = transform::constrain(
                &mut m.tape,
                &c,
                &p.shape,
                &vars[p.offset..p.offset + p.len],
                &mut jacobian,
            )
            .map_err(|e| e.at(d.span))?;
            m.put(d.slot, v)?;
        }
        m.target.extend(jacobian);
        m.run(&self.program.transformed_parameters)?;
        for d in &self.program.transformed_decls {
            let (lo, hi) = bounds(&mut m, d)?;
            let v = m.get(d.slot).clone();
            crate::data::check_bounds(d, &v, lo.as_ref(), hi.as_ref()).map_err(|e| {
                EvalError::reject(format!(
                    "a transformed parameter is outside its bounds: {}",
                    e.message
                ))
            })?;
        }
        Ok(m)
    }

    /// The output columns' names in CmdStan's spelling (`beta.2`, `Omega.1.2`), from the
    /// declared sizes (data only, as Stan requires of these declarations): nothing is
    /// evaluated at any point, so a program that rejects some points still names its columns.
    pub fn column_names(&self) -> Eval<Vec<String>> {
        let p = &self.program;
        let mut m = Machine::new(Tape::default(), &self.fixed, p.slots, &p.functions);
        let mut out = Vec::new();
        for d in p
            .parameters
            .iter()
            .chain(&p.transformed_decls)
            .chain(&p.generated_decls)
        {
            let empty = m.shape(d)?.empty();
            out.extend(
                empty
                    .columns()
                    .into_iter()
                    .map(|(suffix, _)| format!("{}{suffix}", d.name)),
            );
        }
        Ok(out)
    }

    /// The output columns' values at `u`, the generated quantities drawn with `rng`.
    pub fn row(&self, u: &[f64], rng: &mut rand_chacha::ChaCha8Rng) -> Eval<Vec<f64>> {
        Ok(self
            .outputs(u, rng)?
            .into_iter()
            .flat_map(|(_, v)| v.columns().into_iter().map(|(_, x)| x))
            .collect())
    }

    fn outputs(&self, u: &[f64], rng: &mut rand_chacha::ChaCha8Rng) -> Eval<Vec<(String, Val)>> {
        let vars: Vec<R> = u.iter().map(|&x| R::c(x)).collect();
        let mut m = self.machine(Tape::default(), &vars)?;
        let p = &self.program;
        m.rng = Some(rng.clone());
        m.run(&p.generated)?;
        if let Some(r) = m.rng.take() {
            *rng = r;
        }
        Ok(p.parameters
            .iter()
            .chain(&p.transformed_decls)
            .chain(&p.generated_decls)
            .map(|d| (d.name.clone(), m.get(d.slot).clone()))
            .collect())
    }
}

fn first_parameter_slot(p: &Program) -> usize {
    p.parameters.first().map_or(p.slots, |d| d.slot.0)
}

fn kind(c: &Constraint) -> Evaluated {
    match c {
        Constraint::Bounded { .. } => Evaluated::Bounded {
            lower: None,
            upper: None,
            offset: None,
            multiplier: None,
        },
        Constraint::Ordered => Evaluated::Ordered,
        Constraint::PositiveOrdered => Evaluated::PositiveOrdered,
        Constraint::Simplex => Evaluated::Simplex,
        Constraint::CholeskyCorr => Evaluated::CholeskyCorr,
    }
}

fn bounds(m: &mut Machine, d: &Decl) -> Eval<(Option<Val>, Option<Val>)> {
    match &d.constraint {
        Constraint::Bounded { lower, upper, .. } => Ok((
            lower.as_ref().map(|e| m.expr(e)).transpose()?,
            upper.as_ref().map(|e| m.expr(e)).transpose()?,
        )),
        _ => Ok((None, None)),
    }
}

fn evaluate(m: &mut Machine, c: &Constraint) -> Eval<Evaluated> {
    let mut flat = |e: &Option<crate::program::Expr>| -> Eval<Option<Vec<R>>> {
        e.as_ref().map(|x| Ok(m.expr(x)?.flat())).transpose()
    };
    Ok(match c {
        Constraint::Bounded {
            lower,
            upper,
            offset,
            multiplier,
        } => Evaluated::Bounded {
            lower: flat(lower)?,
            upper: flat(upper)?,
            offset: flat(offset)?,
            multiplier: flat(multiplier)?,
        },
        other => kind(other),
    })
}
