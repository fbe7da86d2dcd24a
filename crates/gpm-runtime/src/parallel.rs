//! When one computation splits across threads. The chains of a sampler already run one per
//! core ([`crate::chains`]); a kernel matrix or a product with the features split again
//! inside a chain would only queue beside the other chains' work (and a thread waiting on
//! its split could pick up a whole other chain meanwhile). So the products that can split
//! ([`crate::columns`], the kernel matrices, CAVI's per-observation ranges) split only when
//! called from outside rayon's pool — CAVI, SVI, prediction, a single fit — and inside a
//! chain run as one task. Their results are the same either way: what each task computes is
//! fixed by the sizes, not by the threads.

/// The fewest items a task takes: `floor` outside the pool, all of them inside it.
pub(crate) fn min_items(items: usize, floor: usize) -> usize {
    if rayon::current_thread_index().is_some() {
        items.max(1)
    } else {
        floor.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_the_pool_one_task_takes_everything() {
        assert_eq!(min_items(100, 4), 4);
        let inside = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap()
            .install(|| min_items(100, 4));
        assert_eq!(inside, 100);
    }
}
