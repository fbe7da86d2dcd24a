//! The sweep's NUTS step (`GibbsStep::Nuts`, issue 35 item 2): chosen for a dense block with
//! the generic update whose prior's scales are sampled, printed by `gpmc check` with why, and
//! exact — eight schools with the normal likelihood kept as written (`--generic`) against
//! one-dimensional quadrature of `p(τ | y)` with μ and θ integrated out analytically.

use gpm_runtime::gibbs::GibbsConfig;
use gpm_schedule::{GibbsStep, GibbsUpdate};
use serde_json::json;

const EIGHT_SCHOOLS: &str = "data { J : int; y : vector[J]; sigma : vector[J]; }
hyper { mu : real ~ normal(0, 5); tau : real in 0.. ~ half_cauchy(5); }
latent { theta : vector[J] ~ normal(mu, tau); }
model { for j in 1..J { y[j] ~ normal(theta[j], sigma[j]); } }";

const Y: [f64; 8] = [28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0];
const SIGMA: [f64; 8] = [15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0];

#[test]
fn the_schedule_chooses_nuts_for_a_funnel_and_says_why() {
    let c = gpmc::check_with("eight", EIGHT_SCHOOLS, true).unwrap();
    let s = c.schedule.as_ref().unwrap();
    assert_eq!(s.nuts_blocks.len(), 1);
    assert!(s.gibbs.contains(&GibbsStep::Nuts { index: 0 }));
    assert!(!s
        .gibbs
        .iter()
        .any(|st| matches!(st, GibbsStep::Elliptical { .. })));
    assert!(s.dense_updates.is_empty());
    for h in &s.hyper_steps {
        assert!(matches!(h.gibbs, GibbsUpdate::Nuts { .. }), "{h:?}");
    }
    assert_eq!(s.nuts_blocks[0].hypers.len(), 2);
    assert!(!s.nuts_blocks[0].redraw);
    let text = gpmc::report::text(&c);
    assert!(text.contains("one NUTS transition"), "{text}");
    assert!(text.contains("funnel"), "{text}");
    assert!(
        text.contains("generic update (a NUTS step of the sweep)"),
        "{text}"
    );
    let json = gpmc::report::json(&c);
    let step = &json["schedule"]["gibbs"][1];
    assert_eq!(step["step"], "nuts", "{step}");
    assert_eq!(step["nuts_block"]["hypers"].as_array().unwrap().len(), 2);
    // Augmented (the normal likelihood is conjugate): no generic update, no NUTS step.
    let a = gpmc::check("eight", EIGHT_SCHOOLS).unwrap();
    assert!(a.schedule.as_ref().unwrap().nuts_blocks.is_empty());
    // Without NUTS blocks: the elliptical and slice steps as before.
    let options = gpm_schedule::Options { nuts_blocks: false };
    let plain = gpm_schedule::build_with(&c.model, &c.plans, options).unwrap();
    assert!(plain.nuts_blocks.is_empty());
    assert!(plain
        .gibbs
        .iter()
        .any(|st| matches!(st, GibbsStep::Elliptical { .. })));
    assert_eq!(plain.sampled_hypers(), s.sampled_hypers());
}

/// `p(τ | y)` on a grid with μ and θ integrated out, and `E[τ]`, `sd[τ]`, `E[μ]`, `E[θ₁]`.
fn quadrature() -> [f64; 4] {
    let (mut z, mut m) = (0.0, [0.0; 4]);
    let n = 400_000;
    for k in 1..=n {
        // τ on (0, 400] with the half-Cauchy(5) prior.
        let tau = 400.0 * k as f64 / n as f64;
        let v: Vec<f64> = SIGMA.iter().map(|s| s * s + tau * tau).collect();
        let prec = 1.0 / 25.0 + v.iter().map(|v| 1.0 / v).sum::<f64>();
        let mean_mu = Y.iter().zip(&v).map(|(y, v)| y / v).sum::<f64>() / prec;
        let log_marginal = -0.5 * v.iter().map(|v| v.ln()).sum::<f64>()
            - 0.5 * Y.iter().zip(&v).map(|(y, v)| y * y / v).sum::<f64>()
            + 0.5 * mean_mu * mean_mu * prec
            - 0.5 * prec.ln();
        let w = (log_marginal - (1.0 + (tau / 5.0).powi(2)).ln()).exp();
        let s2 = SIGMA[0] * SIGMA[0];
        let theta1 = (Y[0] / s2 + mean_mu / (tau * tau)) / (1.0 / s2 + 1.0 / (tau * tau));
        z += w;
        m[0] += w * tau;
        m[1] += w * tau * tau;
        m[2] += w * mean_mu;
        m[3] += w * theta1;
    }
    let e_tau = m[0] / z;
    [e_tau, (m[1] / z - e_tau * e_tau).sqrt(), m[2] / z, m[3] / z]
}

#[test]
fn gibbs_with_a_nuts_step_matches_quadrature_on_eight_schools() {
    let c = gpmc::check_with("eight", EIGHT_SCHOOLS, true).unwrap();
    assert_eq!(c.schedule.as_ref().unwrap().nuts_blocks.len(), 1);
    let data = json!({"J": 8, "y": Y, "sigma": SIGMA});
    let d = gpmc::data::from_json_value(&c.model, &data).unwrap();
    let config = GibbsConfig {
        first_chain: 0,
        chains: 4,
        warmup: 500,
        draws: 3000,
        thin: 1,
        seed: 17,
        nuts: Default::default(),
    };
    let r = gpmc::infer::run_gibbs(&c, &d, &config, &|_, _| {}).unwrap();
    // The NUTS step's transitions are reported per chain, as NUTS's are.
    assert_eq!(r.nuts.len(), 4);
    for n in &r.nuts {
        assert!(
            n.in_gibbs && n.step_size > 0.0 && n.mean_steps >= 1.0,
            "{n:?}"
        );
        assert!(n.divergences < 30, "{n:?}");
    }
    let get = |name: &str| &r.summaries.iter().find(|(n, _)| n == name).unwrap().1;
    let [e_tau, sd_tau, e_mu, e_theta1] = quadrature();
    for (name, reference) in [("tau", e_tau), ("mu", e_mu), ("theta.1", e_theta1)] {
        let s = get(name);
        let z = (s.mean - reference) / s.mcse_mean;
        assert!(
            z.abs() < 4.0,
            "{name}: {} vs quadrature {reference} (z {z:.2}, ESS {})",
            s.mean,
            s.ess_bulk
        );
        assert!(s.rhat < 1.01, "{name}: R-hat {}", s.rhat);
    }
    // τ's sd within 7 % (its sampling error at ESS ≥ 2 000 is ~3 %).
    let s = get("tau");
    assert!(
        (s.sd / sd_tau - 1.0).abs() < 0.07,
        "sd(τ) {} vs {sd_tau}",
        s.sd
    );
}

/// `gpmc infer --no-nuts-step` keeps the slice moves, says so, and the saved fit remembers it
/// (`gpmc predict` re-checks the model with the same schedule).
#[test]
fn the_cli_can_keep_the_slice_moves_and_the_fit_remembers() {
    let dir = std::env::temp_dir().join(format!("gpmc-nuts-step-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = dir.join("glmm.gpm");
    // A Poisson log-link GLMM: no rule augments `poisson(exp(η))`, so the generic update.
    std::fs::write(
        &model,
        "data { N : int; G : int; g : int[N] in 1..G; y : int[N] in 0..; }
         hyper { s : real in 0.. ~ half_normal(1); }
         latent { b0 : real ~ normal(0, 2); u : vector[G] ~ normal(0, s); }
         model { for i in 1..N { y[i] ~ poisson(exp(b0 + u[g[i]])); } }",
    )
    .unwrap();
    let data = dir.join("glmm.json");
    let g: Vec<usize> = (0..24).map(|i| i / 6 + 1).collect();
    let y: Vec<u32> = (0..24)
        .map(|i| [1, 3, 0, 2, 5, 2][i % 6] + (i / 6) as u32)
        .collect();
    std::fs::write(&data, json!({"N": 24, "G": 4, "g": g, "y": y}).to_string()).unwrap();
    let run = |extra: &[&str], out: &str| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_gpmc"))
            .arg("infer")
            .arg(&model)
            .arg("--data")
            .arg(&data)
            .arg("--output")
            .arg(dir.join(out))
            .args(["--draws", "50", "--warmup", "50", "--chains", "2"])
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text =
            String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
        let fit: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(out).join("fit.json")).unwrap())
                .unwrap();
        (text, fit)
    };
    let (text, fit) = run(&[], "with");
    assert!(text.contains("by a NUTS step of the sweep"), "{text}");
    assert_eq!(fit["nuts_step"], true);
    let (text, fit) = run(&["--no-nuts-step"], "without");
    assert!(!text.contains("by a NUTS step of the sweep"), "{text}");
    assert!(
        text.contains("slice sampling given the current values"),
        "{text}"
    );
    assert_eq!(fit["nuts_step"], false);
    let reused = gpmc::fit::Reuse::open(&dir.join("without")).unwrap();
    assert!(reused
        .checked
        .schedule
        .as_ref()
        .unwrap()
        .nuts_blocks
        .is_empty());
    let reused = gpmc::fit::Reuse::open(&dir.join("with")).unwrap();
    assert_eq!(
        reused.checked.schedule.as_ref().unwrap().nuts_blocks.len(),
        1
    );
    std::fs::remove_dir_all(&dir).ok();
}
