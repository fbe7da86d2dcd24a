//! No input, however malformed, makes the parser or the checker panic: random texts, random
//! token soups, and the example models mutated by deleting, duplicating and swapping pieces.

use proptest::prelude::*;
use std::path::Path;

fn examples() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "gpm"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    v.sort();
    v
}

const TOKENS: &[&str] = &[
    "data",
    "hyper",
    "latent",
    "model",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ";",
    ":",
    ",",
    "~",
    "=",
    "+=",
    "+",
    "-",
    "*",
    "/",
    "^",
    "..",
    "in",
    "for",
    "let",
    "target",
    "factor",
    "learn",
    "int",
    "real",
    "vector",
    "matrix",
    "N",
    "D",
    "C",
    "X",
    "y",
    "f",
    "g",
    "w",
    "i",
    "1",
    "0",
    "-1",
    "2.5",
    "1e9",
    "gp",
    "sqexp",
    "normal",
    "bernoulli_logit",
    "categorical_logistic_softmax",
    "logistic",
    "log",
    "exp",
    "sum",
    "dot",
    "abs",
    "max",
    "{-1, 1}",
    "1..N",
    "0..",
    "\n",
    " ",
];

fn mutate(src: &str, ops: &[(u8, usize, usize)]) -> String {
    let mut s: Vec<char> = src.chars().collect();
    for &(op, a, b) in ops {
        if s.is_empty() {
            break;
        }
        let a = a % s.len();
        let b = b % s.len();
        let (lo, hi) = (a.min(b), a.max(b).min(lo_plus(a.min(b), 40, s.len())));
        match op % 4 {
            0 => {
                s.drain(lo..hi);
            }
            1 => {
                let piece: Vec<char> = s[lo..hi].to_vec();
                let at = b % (s.len() + 1);
                s.splice(at..at, piece);
            }
            2 => s.swap(a, b),
            _ => {
                let t: Vec<char> = TOKENS[a % TOKENS.len()].chars().collect();
                s.splice(lo..lo, t);
            }
        }
    }
    s.into_iter().collect()
}

fn lo_plus(lo: usize, n: usize, len: usize) -> usize {
    (lo + n).min(len)
}

fn check_no_panic(src: &str) {
    let _ = gpmc::check("fuzz.gpm", src).map_err(|f| f.render());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_examples_never_panic(k in 0usize..64, ops in proptest::collection::vec((any::<u8>(), any::<usize>(), any::<usize>()), 1..6)) {
        let ex = examples();
        let src = mutate(&ex[k % ex.len()], &ops);
        check_no_panic(&src);
    }

    #[test]
    fn token_soups_never_panic(toks in proptest::collection::vec(0usize..TOKENS.len(), 0..80)) {
        let src: Vec<&str> = toks.iter().map(|&t| TOKENS[t]).collect();
        check_no_panic(&src.join(" "));
    }

    #[test]
    fn arbitrary_text_never_panics(src in "\\PC{0,200}") {
        check_no_panic(&src);
    }
}
