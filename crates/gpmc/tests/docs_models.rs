//! Every `.gpm` block of docs/stan_models.md (five Stan models translated line by line), and
//! each of the five Stan programs they translate, as it is written (through the Stan front end), checks, has a
//! schedule, and runs a short Gibbs chain on synthetic data of the declared shapes.

use std::path::Path;

fn blocks(text: &str, lang: &str) -> Vec<String> {
    let fence = format!("```{lang}\n");
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(&fence) {
        let body = &rest[i + fence.len()..];
        let end = body.find("```").expect("closed block");
        out.push(body[..end].to_string());
        rest = &body[end..];
    }
    out
}

/// Synthetic data for the names the five models declare.
fn data(model: &gpm_ir::Model) -> serde_json::Value {
    let n = 24;
    let mut m = serde_json::Map::new();
    for d in &model.data {
        if d.derived.is_some() {
            continue;
        }
        let v: serde_json::Value = match d.name.as_str() {
            "N" | "J" => n.into(),
            "K" => 3.into(),
            "switched" => (0..n)
                .map(|i| (i * 7 % 5 < 2) as i64)
                .collect::<Vec<_>>()
                .into(),
            "male" => (0..n).map(|i| (i % 2) as f64).collect::<Vec<_>>().into(),
            "X" => (0..n)
                .map(|i| {
                    (0..3)
                        .map(|j| ((i * 3 + j * 5) % 7) as f64 / 3.0 - 1.0)
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
                .into(),
            // Positive, and different for every name (no two collinear covariates).
            name => {
                let s = name.bytes().map(usize::from).sum::<usize>() % 11 + 2;
                (0..n)
                    .map(|i| 1.0 + ((i * s + i * i) % 17) as f64 / 4.0)
                    .collect::<Vec<_>>()
                    .into()
            }
        };
        m.insert(d.name.clone(), v);
    }
    m.into()
}

#[test]
fn the_stan_translations_check_and_run() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("docs/stan_models.md")).unwrap();
    let gpm = blocks(&text, "gpm");
    assert_eq!(gpm.len(), 5, "five models");
    // The translations are the Stan programs each followed by its `.gpm` block; the page's
    // other Stan programs (one NUTS runs on its whole log density) are checked by the docs'
    // own test (python/tests/test_docs.py).
    let stan: Vec<String> = blocks(&text, "stan")
        .into_iter()
        .filter(|b| {
            let after = &text[text.find(b.as_str()).expect("a block of the page") + b.len()..];
            after
                .find("```")
                .is_some_and(|i| after[i..].starts_with("```\n\n```gpm"))
        })
        .collect();
    assert_eq!(stan.len(), 5, "the five Stan programs");
    let named = gpm
        .iter()
        .enumerate()
        .map(|(k, s)| (format!("stan_models.md #{}.gpm", k + 1), s))
        .chain(
            stan.iter()
                .enumerate()
                .map(|(k, s)| (format!("stan_models.md #{}.stan", k + 1), s)),
        );
    for (name, src) in named {
        let c = gpmc::check(&name, src).unwrap_or_else(|e| panic!("{}", e.render()));
        assert!(
            c.schedule.is_ok(),
            "{name}: {:?}",
            c.schedule.as_ref().err()
        );
        let d = gpmc::data::from_json_value(&c.model, &data(&c.model)).unwrap();
        let config = gpm_runtime::gibbs::GibbsConfig {
            first_chain: 0,
            chains: 1,
            warmup: 50,
            draws: 50,
            thin: 1,
            seed: 1,
            nuts: Default::default(),
        };
        let r = gpmc::infer::run_gibbs(&c, &d, &config, &|_, _| {})
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            r.chains[0].rows.iter().flatten().all(|v| v.is_finite()),
            "{name}"
        );
    }
}
