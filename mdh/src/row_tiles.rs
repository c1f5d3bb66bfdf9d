//! The tiles of rows that stages fused along their rows run on (see
//! `mdh_core::fusion::rows`): how many rows a tile holds, and the tiles
//! run in parallel.

use std::sync::{Mutex, PoisonError};

use crate::parallel::each_index;
use mdh_rt::Error;

/// The L2 cache assumed where the machine does not say (most x86 cores
/// since 2017 have 512 KiB to 2 MiB).
const DEFAULT_L2: u64 = 512 << 10;

/// Tiles per thread at least, where the rows allow: tiles differ in cost
/// (the last is short), and more of them even the threads out.
const TILES_PER_THREAD: usize = 4;

/// The rows of a tile, of `rows` rows of `bytes_per_row` bytes (every
/// buffer's row that a tile's stages touch): as many as fit in half this
/// core's L2 cache, where a tile's rows stay from its first stage to its
/// last (the other half for what the stages read whole and for their
/// packed panels), but at most a share that leaves each thread several
/// tiles; at least one.
pub fn row_tile(rows: usize, bytes_per_row: usize) -> usize {
    let l2 = crate::machine::host().machine.l2.unwrap_or(DEFAULT_L2);
    let fit = usize::try_from(l2 / 2).unwrap_or(usize::MAX) / bytes_per_row.max(1);
    let threads = rayon::current_num_threads().max(1);
    let fed = rows.div_ceil(threads * TILES_PER_THREAD);
    fit.min(fed).max(1)
}

/// Runs `tile` on each of `work` (one item per tile, owning the tile's
/// parts of the buffers it writes), in parallel; the calling thread takes
/// tiles too. Once a tile fails, tiles not yet started are skipped and the
/// call returns one of the errors.
pub fn for_each_tile<W: Send>(
    work: Vec<W>,
    tile: impl Fn(W) -> Result<(), Error> + Sync,
) -> Result<(), Error> {
    let slots: Vec<Mutex<Option<W>>> = work.into_iter().map(|w| Mutex::new(Some(w))).collect();
    let failed: Mutex<Option<Error>> = Mutex::new(None);
    each_index(slots.len(), |t| {
        let item = slots[t]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let stopped = failed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some();
        if let (Some(w), false) = (item, stopped) {
            if let Err(e) = tile(w) {
                failed
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get_or_insert(e);
            }
        }
    });
    match failed.into_inner().unwrap_or_else(PoisonError::into_inner) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
