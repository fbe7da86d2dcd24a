//! Reverse-mode automatic differentiation on a tape of scalars: each node keeps its value and
//! the partial derivatives of itself with respect to the nodes it was made from; one backward
//! pass gives the gradient of the log density with respect to every unconstrained coordinate.
//! A value that depends on no coordinate (data, constants) is a [`R`] with no node, so that
//! arithmetic on data costs no tape.

/// A real value: its number and, when it depends on the coordinates, its node on the tape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct R {
    /// The value.
    pub v: f64,
    node: u32,
}

const CONSTANT: u32 = u32::MAX;

impl R {
    /// A constant (no node).
    pub fn c(v: f64) -> R {
        R { v, node: CONSTANT }
    }

    /// Whether it depends on no coordinate.
    pub fn is_constant(self) -> bool {
        self.node == CONSTANT
    }
}

/// The tape: one entry per node, its partials in `edges[starts[k]..starts[k + 1]]`.
#[derive(Debug, Default)]
pub struct Tape {
    starts: Vec<u32>,
    edges: Vec<(u32, f64)>,
}

impl Tape {
    /// An empty tape with `inputs` leaf nodes, returned as values `x`.
    pub fn with_inputs(x: &[f64]) -> (Tape, Vec<R>) {
        let mut t = Tape::default();
        let vars = x.iter().map(|&v| t.push(v, &[])).collect();
        (t, vars)
    }

    /// Nodes on the tape.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// Whether the tape is empty.
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    fn push(&mut self, v: f64, parents: &[(R, f64)]) -> R {
        self.starts.push(self.edges.len() as u32);
        for &(p, d) in parents {
            if !p.is_constant() {
                self.edges.push((p.node, d));
            }
        }
        R {
            v,
            node: (self.starts.len() - 1) as u32,
        }
    }

    /// A value `v` with these partials `(parent, ∂v/∂parent)`; a constant when every parent is.
    pub fn node(&mut self, v: f64, parents: &[(R, f64)]) -> R {
        if parents.iter().all(|(p, _)| p.is_constant()) {
            R::c(v)
        } else {
            self.push(v, parents)
        }
    }

    /// `f(a)` with derivative `d`.
    pub fn unary(&mut self, a: R, v: f64, d: f64) -> R {
        self.node(v, &[(a, d)])
    }

    /// `f(a, b)` with partials `da`, `db`.
    pub fn binary(&mut self, a: R, b: R, v: f64, da: f64, db: f64) -> R {
        self.node(v, &[(a, da), (b, db)])
    }

    /// `a + b`
    pub fn add(&mut self, a: R, b: R) -> R {
        self.binary(a, b, a.v + b.v, 1.0, 1.0)
    }

    /// `a - b`
    pub fn sub(&mut self, a: R, b: R) -> R {
        self.binary(a, b, a.v - b.v, 1.0, -1.0)
    }

    /// `a * b`
    pub fn mul(&mut self, a: R, b: R) -> R {
        self.binary(a, b, a.v * b.v, b.v, a.v)
    }

    /// `a / b`
    pub fn div(&mut self, a: R, b: R) -> R {
        let q = a.v / b.v;
        self.binary(a, b, q, 1.0 / b.v, -q / b.v)
    }

    /// `-a`
    pub fn neg(&mut self, a: R) -> R {
        self.unary(a, -a.v, -1.0)
    }

    /// `exp(a)`
    pub fn exp(&mut self, a: R) -> R {
        let e = a.v.exp();
        self.unary(a, e, e)
    }

    /// `log(a)`
    pub fn log(&mut self, a: R) -> R {
        self.unary(a, a.v.ln(), 1.0 / a.v)
    }

    /// `sqrt(a)`
    pub fn sqrt(&mut self, a: R) -> R {
        let s = a.v.sqrt();
        self.unary(a, s, 0.5 / s)
    }

    /// `Σ terms`, one node.
    pub fn sum(&mut self, terms: &[R]) -> R {
        let v = terms.iter().map(|t| t.v).sum();
        let parents: Vec<(R, f64)> = terms.iter().map(|&t| (t, 1.0)).collect();
        self.node(v, &parents)
    }

    /// `Σ a_k b_k`, one node.
    pub fn dot(&mut self, a: &[R], b: &[R]) -> R {
        let v = a.iter().zip(b).map(|(x, y)| x.v * y.v).sum();
        let mut parents = Vec::with_capacity(2 * a.len());
        for (x, y) in a.iter().zip(b) {
            parents.push((*x, y.v));
            parents.push((*y, x.v));
        }
        self.node(v, &parents)
    }

    /// The gradient of `out` with respect to the first `inputs` nodes (the coordinates).
    pub fn gradient(&self, out: R, inputs: usize) -> Vec<f64> {
        let mut adj = vec![0.0; self.len()];
        if out.is_constant() {
            return vec![0.0; inputs];
        }
        adj[out.node as usize] = 1.0;
        for k in (0..=out.node as usize).rev() {
            let a = adj[k];
            if a == 0.0 {
                continue;
            }
            let end = self
                .starts
                .get(k + 1)
                .map_or(self.edges.len(), |&e| e as usize);
            for &(p, d) in &self.edges[self.starts[k] as usize..end] {
                adj[p as usize] += a * d;
            }
        }
        adj.truncate(inputs);
        adj
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gradient_of_a_product_of_logs_matches_the_hand_derivative() {
        // f(x, y) = log(x) * y + exp(x / y)
        let (mut t, v) = Tape::with_inputs(&[2.0, 3.0]);
        let (x, y) = (v[0], v[1]);
        let lx = t.log(x);
        let a = t.mul(lx, y);
        let q = t.div(x, y);
        let e = t.exp(q);
        let f = t.add(a, e);
        let g = t.gradient(f, 2);
        let eq = (2.0f64 / 3.0).exp();
        assert!((f.v - (2f64.ln() * 3.0 + eq)).abs() < 1e-12);
        assert!((g[0] - (3.0 / 2.0 + eq / 3.0)).abs() < 1e-12);
        assert!((g[1] - (2f64.ln() - eq * 2.0 / 9.0)).abs() < 1e-12);
    }

    #[test]
    fn constants_make_no_nodes() {
        let mut t = Tape::default();
        let s = t.add(R::c(1.0), R::c(2.0));
        assert!(s.is_constant());
        assert!(t.is_empty());
    }
}
