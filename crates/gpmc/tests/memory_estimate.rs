//! The memory a run of chains is refused on counts what runs at once: a full GP's matrices
//! held once, and each chain's work space — larger when the chain samples the kernel with the
//! GP integrated out (measured 2.0 and 7.9 matrices of `N × N` a chain at N = 2 000; the
//! estimate of one chain was all that was counted, while 16 chains at once held 3× it).

use std::path::Path;

fn prepared(src: &str) -> gpm_runtime::prepared::Prepared {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    let c = gpmc::check("gp_classification", src).unwrap_or_else(|f| panic!("{}", f.render()));
    let d = gpmc::data::load(
        &c.model,
        &[root.join("gp_classification.data.json").as_path()],
    )
    .unwrap();
    let schedule = gpm_schedule::build(&c.model, &c.plans).unwrap();
    let (hv, _) = gpmc::infer::hyper_values(&c);
    gpm_runtime::prepared::Prepared::new(&schedule, &d, &hv).unwrap()
}

#[test]
fn a_chain_sampling_its_kernel_counts_more_work_space_than_one_with_it_fixed() {
    let learned = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/gp_classification.gpm"),
    )
    .unwrap();
    let sampled = learned
        .replace("= learn(1.0)", "~ gamma(2.0, 2.0)")
        .replace("= learn(2.0)", "~ gamma(2.0, 1.0)");
    assert_ne!(learned, sampled);
    let n2 = 60u64 * 60 * 8; // the example's N = 60 points, 8 bytes a value
    let fixed = prepared(&learned).memory;
    assert_eq!((fixed.shared, fixed.per_chain), (3 * n2, 2 * n2));
    let full_bayes = prepared(&sampled).memory;
    assert_eq!((full_bayes.shared, full_bayes.per_chain), (3 * n2, 8 * n2));
    assert_eq!(full_bayes.with_chains(16), (3 + 16 * 8) * n2);
    assert!(full_bayes.largest.contains("full GP `f` of 60 points"));
}
