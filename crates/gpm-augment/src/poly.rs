//! Polynomials of degree ≤ 2 in the predictors, with predictor-free coefficient expressions.
//! Used to classify atoms (constant, affine, Gaussian) and to read `r = α − β η + γ η²`.

use crate::tree::{Role, T};
use std::collections::BTreeMap;

/// `c0 + Σ_k lin_k η_k + Σ_{k≤l} quad_kl η_k η_l`.
#[derive(Debug, Clone, PartialEq)]
pub struct Poly {
    /// Constant term.
    pub c0: T,
    /// Linear coefficients by predictor.
    pub lin: BTreeMap<String, T>,
    /// Quadratic coefficients by (ordered) predictor pair.
    pub quad: BTreeMap<(String, String), T>,
}

impl Poly {
    /// The polynomial 0 (what `Poly::of(&T::Num(0.0), 0)` reads).
    pub fn zero() -> Poly {
        Poly::constant(T::Num(0.0))
    }
    fn constant(t: T) -> Poly {
        Poly {
            c0: t,
            lin: BTreeMap::new(),
            quad: BTreeMap::new(),
        }
    }
    /// Highest degree present.
    pub fn degree(&self) -> usize {
        if !self.quad.is_empty() {
            2
        } else if !self.lin.is_empty() {
            1
        } else {
            0
        }
    }
    fn add(mut self, o: Poly) -> Poly {
        self.c0 = T::add(vec![self.c0, o.c0]);
        for (k, v) in o.lin {
            let e = self
                .lin
                .remove(&k)
                .map_or(v.clone(), |u| T::add(vec![u, v]));
            self.lin.insert(k, e);
        }
        for (k, v) in o.quad {
            let e = self
                .quad
                .remove(&k)
                .map_or(v.clone(), |u| T::add(vec![u, v]));
            self.quad.insert(k, e);
        }
        self
    }
    fn scale(self, c: &T) -> Poly {
        Poly {
            c0: T::mul(vec![c.clone(), self.c0]),
            lin: self
                .lin
                .into_iter()
                .map(|(k, v)| (k, T::mul(vec![c.clone(), v])))
                .collect(),
            quad: self
                .quad
                .into_iter()
                .map(|(k, v)| (k, T::mul(vec![c.clone(), v])))
                .collect(),
        }
    }
    fn mul(self, o: Poly) -> Option<Poly> {
        if self.degree() + o.degree() > 2 {
            return None;
        }
        let mut out = o.clone().scale(&self.c0);
        for (k, v) in &self.lin {
            out = out.add(Poly {
                c0: T::Num(0.0),
                lin: [(k.clone(), T::mul(vec![v.clone(), o.c0.clone()]))].into(),
                quad: BTreeMap::new(),
            });
            for (l, w) in &o.lin {
                let key = if k <= l {
                    (k.clone(), l.clone())
                } else {
                    (l.clone(), k.clone())
                };
                out = out.add(Poly {
                    c0: T::Num(0.0),
                    lin: BTreeMap::new(),
                    quad: [(key, T::mul(vec![v.clone(), w.clone()]))].into(),
                });
            }
        }
        for (k, v) in self.quad {
            out = out.add(Poly {
                c0: T::Num(0.0),
                lin: BTreeMap::new(),
                quad: [(k, T::mul(vec![v, o.c0.clone()]))].into(),
            });
        }
        Some(out)
    }

    /// Read an expression as a polynomial of degree ≤ `max` in the predictors.
    pub fn of(t: &T, max: usize) -> Option<Poly> {
        let p = Self::read(t)?;
        (p.degree() <= max).then_some(p)
    }

    fn read(t: &T) -> Option<Poly> {
        if !t.has_predictor() {
            return Some(Poly::constant(t.clone()));
        }
        match t {
            T::Sym(Role::Predictor, n) => Some(Poly {
                c0: T::Num(0.0),
                lin: [(n.clone(), T::Num(1.0))].into(),
                quad: BTreeMap::new(),
            }),
            T::Add(v) => {
                let mut acc = Poly::constant(T::Num(0.0));
                for u in v {
                    acc = acc.add(Self::read(u)?);
                }
                Some(acc)
            }
            T::Mul(v) => {
                let mut acc = Poly::constant(T::Num(1.0));
                for u in v {
                    acc = acc.mul(Self::read(u)?)?;
                }
                Some(acc)
            }
            T::Pow(a, e) => match **e {
                T::Num(2.0) => {
                    let p = Self::read(a)?;
                    p.clone().mul(p)
                }
                T::Num(1.0) => Self::read(a),
                _ => None,
            },
            _ => None,
        }
    }

    /// Back to an expression.
    pub fn to_tree(&self) -> T {
        let mut terms = vec![self.c0.clone()];
        for (k, v) in &self.lin {
            terms.push(T::mul(vec![v.clone(), T::sym(Role::Predictor, k)]));
        }
        for ((k, l), v) in &self.quad {
            terms.push(T::mul(vec![
                v.clone(),
                T::sym(Role::Predictor, k),
                T::sym(Role::Predictor, l),
            ]));
        }
        T::add(terms)
    }
}
