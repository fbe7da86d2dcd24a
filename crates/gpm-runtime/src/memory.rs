//! Memory: what a run will hold, estimated from its sizes before anything of that size is
//! allocated, against what the machine has — so that a full GP of 10⁷ points, a billion
//! inducing points or 65 536 particles are refused with the estimate and what to do instead,
//! rather than aborting the process (or killing a Python interpreter) in the allocator.

use crate::RuntimeError;

/// Bytes of memory available now: Linux's `MemAvailable` (free memory plus the page cache it
/// can reclaim), lowered to what the cgroup (a container's limit) still allows; `None` where
/// the system does not say.
pub fn available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb = info
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())?;
    let mut free = kb.saturating_mul(1024);
    let read = |f: &str| {
        std::fs::read_to_string(format!("/sys/fs/cgroup/{f}"))
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
    };
    if let (Some(max), Some(current)) = (read("memory.max"), read("memory.current")) {
        free = free.min(max.saturating_sub(current));
    }
    Some(free)
}

/// A byte count in human units (`1.2 GB`).
pub fn human(b: u64) -> String {
    let units = ["B", "KB", "MB", "GB", "TB", "PB", "EB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1000.0 && u + 1 < units.len() {
        v /= 1000.0;
        u += 1;
    }
    format!("{v:.1} {}", units[u])
}

/// `8 · Σ counts` bytes (f64 values), saturating.
pub fn values(counts: &[u64]) -> u64 {
    counts
        .iter()
        .fold(0u64, |a, c| a.saturating_add(*c))
        .saturating_mul(8)
}

/// Refuse `need` bytes for `what` when they exceed the memory available (nothing when the
/// system does not say), with `instead` — what to do about it — in the message.
pub fn refuse_beyond(need: u64, what: &str, instead: &str) -> Result<(), RuntimeError> {
    match available() {
        Some(free) if need > free => Err(RuntimeError::TooLarge(format!(
            "{what} would need about {} of memory but {} are available: {instead}",
            human(need),
            human(free)
        ))),
        _ => Ok(()),
    }
}

/// Refuse a full-batch method's features of sparse GP blocks of `(n, m)` points and inducing
/// points each before they are formed: `Φ` (`M × N`) and the work space around it — measured
/// 2.25·8·N·M bytes at `M = 100` for CAVI (1.8 GB a million rows), counted as 3·8·N·M plus 16
/// values a row.
pub(crate) fn check_features(blocks: &[(usize, usize)], method: &str) -> Result<(), RuntimeError> {
    let mut counts = Vec::new();
    for &(n, m) in blocks {
        let (n, m) = (n as u64, m as u64);
        counts.extend([n.saturating_mul(m).saturating_mul(3), n.saturating_mul(16)]);
    }
    let Some(&(n, m)) = blocks.iter().max() else {
        return Ok(());
    };
    let what = match blocks.len() {
        1 => format!("{method} over a sparse GP of {n} points and {m} inducing points"),
        k => format!(
            "{method} over {k} sparse GP blocks of up to {n} points and {m} inducing points"
        ),
    };
    refuse_beyond(
        values(&counts),
        &what,
        "use SVI (`--method svi`, Python `Model.svi`: it holds a minibatch's features), fewer \
         inducing points, or `gpmc.cluster` over partitions of the data (each worker holds a \
         partition's)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_saturate_and_print_in_human_units() {
        assert_eq!(values(&[1, 2]), 24);
        assert_eq!(values(&[u64::MAX, 1]), u64::MAX);
        assert_eq!(human(1_500_000_000), "1.5 GB");
        assert_eq!(human(12), "12.0 B");
    }

    #[test]
    fn features_beyond_memory_are_refused_with_what_to_do() {
        assert!(check_features(&[], "CAVI").is_ok());
        assert!(check_features(&[(1000, 10)], "CAVI").is_ok());
        if available().is_none() {
            return;
        }
        let e = check_features(&[(usize::MAX / 4, 100)], "CAVI").unwrap_err();
        assert!(e.to_string().contains("use SVI"), "{e}");
    }

    #[test]
    fn an_impossible_size_is_refused_with_what_to_do() {
        if available().is_none() {
            return; // a system that does not say: nothing is refused
        }
        let e = refuse_beyond(
            u64::MAX,
            "a full GP of 10⁷ points",
            "declare `inducing = M`",
        )
        .unwrap_err();
        let RuntimeError::TooLarge(m) = e else {
            panic!("{e:?}")
        };
        assert!(
            m.contains("would need about") && m.contains("declare `inducing = M`"),
            "{m}"
        );
        assert!(refuse_beyond(1, "one byte", "").is_ok());
    }
}

/// Refuse, before they are formed, the Gaussian blocks of a model that would not fit:
/// a full GP of `N` points holds `N × N` matrices (the kernel and its Cholesky factor, a copy
/// per column of a matrix latent, and the sampler's and CAVI's work space: about `(4 + 2C)·8N²`
/// bytes), a sparse GP `M × M` and `N × M` ones, a dense block `D × D`. `sizes[l]` is latent
/// `l`'s shape, resolved on the data.
pub(crate) fn check_blocks(
    schedule: &gpm_schedule::Schedule,
    data: &crate::data::Data,
    sizes: &[Vec<usize>],
) -> Result<(), RuntimeError> {
    use gpm_schedule::{BlockKind, BoundPrior};
    let mut need = 0u64;
    let mut largest = (0u64, String::new());
    for spec in &schedule.blocks {
        let (bytes, what) = match spec.kind {
            BlockKind::FullGp | BlockKind::SparseGp => {
                let l = spec.latents[0].0;
                let (n, cols) = match sizes[l].as_slice() {
                    [n] => (*n as u64, 1),
                    [n, c] => (*n as u64, *c as u64),
                    _ => (1, 1),
                };
                let name = &schedule.latents[l].name;
                match &schedule.priors[l] {
                    BoundPrior::Gp {
                        inducing: Some(ind),
                        ..
                    } => {
                        let m = match ind {
                            gpm_ir::Inducing::Count(m) => (*m as u64).min(n),
                            gpm_ir::Inducing::Points(z) => {
                                data.inputs(z).map_or(0, |z| z.nrows() as u64)
                            }
                            // At most `max`: what the rule may reach.
                            gpm_ir::Inducing::Adaptive { max, .. } => (*max as u64).min(n),
                        };
                        // What every method forms: `K_mm`, its factor and `q(v)` per column.
                        // The `M × N` features are the full-batch methods' (CAVI, Gibbs),
                        // checked where they form them ([`check_features`]); SVI forms a
                        // minibatch's.
                        let m2 = m.saturating_mul(m);
                        let bytes = values(&[
                            m2.saturating_mul(6).saturating_mul(cols),
                            n.saturating_mul(cols),
                        ]);
                        (
                            bytes,
                            format!("a sparse GP `{name}` of {n} points and {m} inducing points"),
                        )
                    }
                    _ => {
                        let n2 = n.saturating_mul(n);
                        let bytes = values(&[n2.saturating_mul(4 + 2 * cols)]);
                        (bytes, format!("a full GP `{name}` of {n} points"))
                    }
                }
            }
            BlockKind::Dense => {
                let d: u64 = spec
                    .latents
                    .iter()
                    .map(|l| sizes[l.0].iter().product::<usize>() as u64)
                    .fold(0u64, |a, b| a.saturating_add(b));
                (
                    values(&[d.saturating_mul(d).saturating_mul(3)]),
                    format!("a block of {d} jointly Gaussian coefficients"),
                )
            }
        };
        need = need.saturating_add(bytes);
        if bytes >= largest.0 {
            largest = (bytes, what);
        }
    }
    refuse_beyond(
        need,
        &if schedule.blocks.len() == 1 {
            largest.1
        } else {
            format!("{} with the model's other Gaussian blocks", largest.1)
        },
        "declare `inducing = M` on a large GP (a sparse GP holds N·M values, not N²), give fewer inducing points or data rows, or fewer coefficients",
    )
}
