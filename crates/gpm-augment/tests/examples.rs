//! Every example model's factors are recognised and certified — except the examples of the
//! generic update, whose likelihoods no rule augments (and must stay so, or they stop being
//! examples of it).

use std::path::Path;

fn model(name: &str) -> gpm_ir::Model {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../models")
        .join(name);
    let src = std::fs::read_to_string(path).unwrap();
    gpm_ir::lower(&gpm_syntax::parse(&src).unwrap()).unwrap()
}

/// The examples of the generic update.
const GENERIC: &[&str] = &[
    "gumbel_gp.gpm",
    "poisson_log_gp.gpm",
    "robust_gp_classification.gpm",
    "robust_gp_regression.gpm",
];

#[test]
fn every_example_model_is_recognised_and_certified() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".gpm"))
        .collect();
    names.sort();
    let mut failures = vec![];
    for n in &names {
        let m = model(n);
        for (k, r) in gpm_augment::recognize(&m).into_iter().enumerate() {
            match r {
                Ok(p) => {
                    eprintln!(
                        "{n} #{k}: {} | cert {:.2e} ({})",
                        p.form, p.certificate.max_rel_error, p.certificate.method
                    );
                    for s in &p.steps {
                        eprintln!("    {s}");
                    }
                    for a in &p.aux {
                        eprintln!("    {} | {}", a.name, a.conditional.describe());
                    }
                    assert!(p.certificate.passed);
                }
                Err(_) if GENERIC.contains(&n.as_str()) => continue,
                Err(e) => failures.push(format!(
                    "{n} #{k}: {} — {}\n   normal form: {}",
                    e.atom, e.reason, e.normal_form
                )),
            }
            if GENERIC.contains(&n.as_str()) {
                failures.push(format!(
                    "{n} #{k}: now augmented; it was the generic update's example"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
