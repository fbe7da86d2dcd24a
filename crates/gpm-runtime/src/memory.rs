//! Memory: what a run will hold, estimated from its sizes before anything of that size is
//! allocated, against what the machine has — so that a full GP of 10⁷ points, a billion
//! inducing points or 65 536 particles are refused with the estimate and what to do instead,
//! rather than aborting the process (or killing a Python interpreter) in the allocator.

use crate::RuntimeError;

/// Bytes of memory available now: Linux's `MemAvailable` (free memory plus the page cache it
/// can reclaim), lowered to what the process's cgroups (a container's or a job's limit) still
/// allow, v2 or v1; `None` where the system does not say.
pub fn available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb = info
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())?;
    let free = kb.saturating_mul(1024);
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    Some(
        match cgroup_room(std::path::Path::new("/sys/fs/cgroup"), &own) {
            Some(room) => free.min(room),
            None => free,
        },
    )
}

/// What the cgroups of a process (its `/proc/self/cgroup` text `own`, the hierarchies mounted
/// under `root`) still allow: the least `limit − usage` over its memory cgroup and every
/// cgroup above it — a limit set on a parent (a job's, a container's) binds too. cgroup v2
/// (`0::/path`: `memory.max`, `memory.current`) and v1 (`N:memory:/path` under `memory/`:
/// `memory.limit_in_bytes`, `memory.usage_in_bytes`); where a container sees its own cgroup
/// as the mount's root the path is not found and the root's files are read. `None` when no
/// limit is set ("max", or v1's page-rounded 2⁶³).
fn cgroup_room(root: &std::path::Path, own: &str) -> Option<u64> {
    let read = |f: std::path::PathBuf| {
        std::fs::read_to_string(f)
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
    };
    let mut least: Option<u64> = None;
    let hierarchies = own.lines().filter_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        if controllers.is_empty() {
            Some((root.to_path_buf(), "memory.max", "memory.current", path))
        } else if controllers.split(',').any(|c| c == "memory") {
            let base = root.join("memory");
            Some((base, "memory.limit_in_bytes", "memory.usage_in_bytes", path))
        } else {
            None
        }
    });
    for (base, limit, usage, path) in hierarchies {
        let mut dir = base.join(path.trim_start_matches('/'));
        if !dir.is_dir() {
            dir = base.clone();
        }
        loop {
            if let (Some(max), Some(used)) = (read(dir.join(limit)), read(dir.join(usage))) {
                // v1 writes "no limit" as 2⁶³ rounded down to a page.
                if max < 1 << 62 {
                    let room = max.saturating_sub(used);
                    least = Some(least.map_or(room, |l| l.min(room)));
                }
            }
            if dir == base || !dir.pop() || !dir.starts_with(&base) {
                break;
            }
        }
    }
    least
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

    /// A cgroup tree under a scratch root: `files` are (path, content).
    fn tree(name: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
        let root = std::env::temp_dir().join(format!("gpmc-cgroup-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (path, text) in files {
            let f = root.join(path);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, text).unwrap();
        }
        root
    }

    #[test]
    fn cgroup_limits_of_v1_and_v2_bind_at_every_level() {
        // v1, the limit on the parent (a job's), none on the process's own cgroup.
        let root = tree(
            "v1",
            &[
                ("memory/job/memory.limit_in_bytes", "1000000000"),
                ("memory/job/memory.usage_in_bytes", "400000000"),
                (
                    "memory/job/task/memory.limit_in_bytes",
                    "9223372036854771712",
                ),
                ("memory/job/task/memory.usage_in_bytes", "100000000"),
            ],
        );
        let own = "5:devices:/\n4:memory:/job/task\n0::/";
        assert_eq!(cgroup_room(&root, own), Some(600_000_000));
        // The same seen from inside a container: its cgroup is the mount's root.
        let inside = tree(
            "v1-inside",
            &[
                ("memory/memory.limit_in_bytes", "2000000000"),
                ("memory/memory.usage_in_bytes", "500000000"),
            ],
        );
        assert_eq!(cgroup_room(&inside, own), Some(1_500_000_000));
        // v2, a nested cgroup with its own smaller limit; "max" above it.
        let v2 = tree(
            "v2",
            &[
                ("memory.max", "max"),
                ("a/memory.max", "max"),
                ("a/memory.current", "10"),
                ("a/b/memory.max", "3000"),
                ("a/b/memory.current", "1000"),
            ],
        );
        assert_eq!(cgroup_room(&v2, "0::/a/b"), Some(2000));
        // No limit anywhere: nothing to lower `MemAvailable` to.
        assert_eq!(cgroup_room(&v2, "0::/a"), None);
        assert_eq!(cgroup_room(&v2, ""), None);
        for r in [root, inside, v2] {
            let _ = std::fs::remove_dir_all(r);
        }
    }

    #[test]
    fn several_chains_at_once_are_counted_and_named() {
        let b = BlockBytes {
            shared: 10,
            per_chain: 7,
            largest: "a full GP `f` of 3 points".into(),
            several: false,
        };
        assert_eq!(b.with_chains(1), 17);
        assert_eq!(b.with_chains(16), 122);
        assert_eq!(b.with_chains(0), 17);
        if available().is_none() {
            return;
        }
        let huge = BlockBytes {
            per_chain: u64::MAX / 4,
            ..b
        };
        let e = huge.refuse_beyond(16).unwrap_err().to_string();
        assert!(
            e.contains("16 chains at once") && e.contains("fewer `--chains`"),
            "{e}"
        );
    }

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

/// What a model's Gaussian blocks hold, in bytes: what every run holds once (`shared`: the
/// kernel matrices and their factors) and what each chain running at once adds (`per_chain`:
/// its state and work space), with the largest block named for a message.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BlockBytes {
    /// Held once, whatever the number of chains.
    pub shared: u64,
    /// Held by each chain that runs at once.
    pub per_chain: u64,
    /// The block holding most, in words (`a full GP \`f\` of 2000 points`).
    pub largest: String,
    /// Whether the model has more than one block.
    pub several: bool,
}

/// Full-GP matrices of `N × N` held once: the kernel, its factor and the prior's work copy.
const FULL_GP_SHARED: u64 = 3;
/// Full-GP matrices a chain holds with the kernel fixed: the conditional's precision and its
/// factor (measured: 2.0·8N² a chain at N = 2000, logistic GP).
const FULL_GP_PER_CHAIN: u64 = 2;
/// Full-GP matrices a chain holds when it samples the kernel's hyperparameters with the GP
/// integrated out: each evaluation's kernel and factor, the surrogate's and the current ones
/// (measured: 7.9·8N² a chain at N = 2000).
const FULL_GP_PER_CHAIN_SAMPLED_KERNEL: u64 = 8;

/// The bytes of the Gaussian blocks of a model: a full GP of `N` points holds `N × N`
/// matrices (see the constants above; a copy per column of a matrix latent), a sparse GP
/// `M × M` and `N × M` ones, a dense block `D × D`. `sizes[l]` is latent `l`'s shape,
/// resolved on the data.
pub fn block_bytes(
    schedule: &gpm_schedule::Schedule,
    data: &crate::data::Data,
    sizes: &[Vec<usize>],
) -> BlockBytes {
    use gpm_schedule::{BlockKind, BoundPrior};
    let mut out = BlockBytes {
        several: schedule.blocks.len() > 1,
        ..Default::default()
    };
    let mut largest = 0u64;
    for spec in &schedule.blocks {
        let (shared, per_chain, what) = match spec.kind {
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
                        (
                            values(&[m2.saturating_mul(2)]),
                            values(&[
                                m2.saturating_mul(4).saturating_mul(cols),
                                n.saturating_mul(cols),
                            ]),
                            format!("a sparse GP `{name}` of {n} points and {m} inducing points"),
                        )
                    }
                    _ => {
                        let n2 = n.saturating_mul(n);
                        let sampled = schedule.kernel_updates.iter().any(|k| k.block == spec.id);
                        let per = if sampled {
                            FULL_GP_PER_CHAIN_SAMPLED_KERNEL
                        } else {
                            FULL_GP_PER_CHAIN
                        };
                        (
                            values(&[n2.saturating_mul(FULL_GP_SHARED)]),
                            values(&[n2.saturating_mul(per).saturating_mul(cols)]),
                            format!("a full GP `{name}` of {n} points"),
                        )
                    }
                }
            }
            BlockKind::Dense => {
                let d: u64 = spec
                    .latents
                    .iter()
                    .map(|l| sizes[l.0].iter().product::<usize>() as u64)
                    .fold(0u64, |a, b| a.saturating_add(b));
                let d2 = d.saturating_mul(d);
                (
                    values(&[d2.saturating_mul(2)]),
                    values(&[d2]),
                    format!("a block of {d} jointly Gaussian coefficients"),
                )
            }
        };
        out.shared = out.shared.saturating_add(shared);
        out.per_chain = out.per_chain.saturating_add(per_chain);
        let bytes = shared.saturating_add(per_chain);
        if bytes >= largest {
            largest = bytes;
            out.largest = what;
        }
    }
    out
}

impl BlockBytes {
    /// The bytes with `chains` chains running at once.
    pub fn with_chains(&self, chains: usize) -> u64 {
        self.shared
            .saturating_add(self.per_chain.saturating_mul(chains.max(1) as u64))
    }

    /// Refuse the blocks when `chains` chains at once would not fit, naming the largest block
    /// and what to do.
    pub fn refuse_beyond(&self, chains: usize) -> Result<(), RuntimeError> {
        let mut what = self.largest.clone();
        if self.several {
            what.push_str(" with the model's other Gaussian blocks");
        }
        let mut instead = String::from(
            "declare `inducing = M` on a large GP (a sparse GP holds N·M values, not N²), give fewer inducing points or data rows, or fewer coefficients",
        );
        if chains > 1 {
            what.push_str(&format!(", {chains} chains at once"));
            instead = format!(
                "run fewer chains at once (fewer `--chains`, or `RAYON_NUM_THREADS=k` for k at a time: each holds {}), or {instead}",
                human(self.per_chain)
            );
        }
        refuse_beyond(self.with_chains(chains), &what, &instead)
    }
}

/// Refuse, before they are formed, the Gaussian blocks of a model that would not fit with one
/// chain (CAVI, SVI and particle flow hold one state; a run of chains checks again with the
/// chains it runs at once: [`BlockBytes::refuse_beyond`]).
pub(crate) fn check_blocks(
    schedule: &gpm_schedule::Schedule,
    data: &crate::data::Data,
    sizes: &[Vec<usize>],
) -> Result<BlockBytes, RuntimeError> {
    let bytes = block_bytes(schedule, data, sizes);
    bytes.refuse_beyond(1)?;
    Ok(bytes)
}
