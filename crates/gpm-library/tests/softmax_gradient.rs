//! The logistic-softmax's gradient in its latent columns (`ClassWeights::grad_log_prob`)
//! against central differences of `log_prob`, for every link: over-parametrised, bijective,
//! scaled and both, at labels on every class (the bijective link's fixed class included) and
//! far in the tails.

use gpm_library::likelihood::ClassWeights;

#[test]
fn softmax_gradients_match_differences() {
    let theta = [0.7, 1.6, 0.9, 1.2];
    let f = [0.4, -2.1, 1.3];
    for (bijective, scaled) in [(false, false), (true, false), (false, true), (true, true)] {
        let w = ClassWeights {
            bijective,
            theta: if scaled { &theta[..] } else { &[] },
        };
        let columns = 3;
        for label in 0..w.classes(columns) {
            for shift in [0.0, -30.0, 25.0] {
                let at: Vec<f64> = f.iter().map(|x| x + shift).collect();
                let mut g = vec![0.0; columns];
                w.grad_log_prob(|k| at[k], columns, label, &mut g);
                for k in 0..columns {
                    let h = 1e-6;
                    let mut up = at.clone();
                    let mut down = at.clone();
                    up[k] += h;
                    down[k] -= h;
                    let numeric = (w.log_prob(|j| up[j], columns, label)
                        - w.log_prob(|j| down[j], columns, label))
                        / (2.0 * h);
                    assert!(
                        (g[k] - numeric).abs() < 1e-6,
                        "bijective {bijective}, scaled {scaled}, label {label}, shift {shift}, column {k}: {} vs {numeric}",
                        g[k]
                    );
                }
            }
        }
    }
}
