//! The global allocator of allot's binaries, benchmarks and examples.
//!
//! allot allocates many small objects (strings of names, vectors of results, store objects), and
//! mimalloc serves them much faster than glibc's malloc. The `mimalloc` crate's allocator passes
//! every request through `mi_malloc_aligned`, whose alignment checks cost about twice mimalloc's
//! plain fast path on a small block. Every mimalloc block is aligned to at least the machine word,
//! so requests that need no more than that (strings, byte buffers, vectors of pointer-sized
//! values: nearly all of them) go to `mi_malloc` / `mi_realloc` / `mi_zalloc` directly, and only
//! larger alignments take the aligned functions.
//!
//! Usage, in a binary, bench or example:
//!
//! ```
//! #[global_allocator]
//! static GLOBAL: allot_alloc::Allocator = allot_alloc::Allocator;
//!
//! fn main() {
//!     let names: Vec<String> = (0..1000).map(|i| format!("gpu-{i}")).collect();
//!     assert_eq!(names[999], "gpu-999");
//! }
//! ```

#![no_std]

use core::alloc::{GlobalAlloc, Layout};
use core::ffi::c_void;

use libmimalloc_sys as mi;

/// Alignment every mimalloc block has whatever its size: its smallest size class is one word
/// and every size class is a multiple of it.
const WORD: usize = core::mem::size_of::<usize>();

/// mimalloc as the global allocator, plain fast path for word alignment or less.
#[derive(Debug, Clone, Copy, Default)]
pub struct Allocator;

fn plain(align: usize) -> bool {
    align <= WORD
}

// SAFETY: mimalloc's functions satisfy GlobalAlloc's contract: the plain functions return
// blocks aligned to at least a word (used only when the layout asks for no more), the aligned
// ones honour any power-of-two alignment, both return null on failure, and `mi_free` takes any
// block either kind returned.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: plain FFI calls with a size and a power-of-two alignment from a valid Layout.
        unsafe {
            if plain(layout.align()) {
                mi::mi_malloc(layout.size()) as *mut u8
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        unsafe {
            if plain(layout.align()) {
                mi::mi_zalloc(layout.size()) as *mut u8
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator (GlobalAlloc's contract), so from mimalloc.
        unsafe { mi::mi_free(ptr as *mut c_void) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout`; the block keeps its alignment.
        unsafe {
            if plain(layout.align()) {
                mi::mi_realloc(ptr as *mut c_void, new_size) as *mut u8
            } else {
                mi::mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every layout size from 1 to 4 KiB with every alignment up to 64: the block is aligned,
    /// writable over its whole size, survives a realloc with its contents, and frees.
    #[test]
    fn blocks_are_aligned_and_keep_their_contents() {
        let a = Allocator;
        for align in [1usize, 2, 4, 8, 16, 32, 64] {
            for size in (1..=4096).step_by(7).chain([align, 2 * align, 3 * align]) {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a non-zero-size layout; the block is written within its size, then
                // reallocated and freed with the layouts it has.
                unsafe {
                    let p = if size % 2 == 0 {
                        a.alloc(layout)
                    } else {
                        a.alloc_zeroed(layout)
                    };
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    if size % 2 == 1 {
                        assert!((0..size).all(|i| *p.add(i) == 0), "zeroed {size}");
                    }
                    for i in 0..size {
                        *p.add(i) = i as u8;
                    }
                    let grown = a.realloc(p, layout, size * 3);
                    assert!(!grown.is_null());
                    assert_eq!(grown as usize % align, 0, "realloc {size} align {align}");
                    assert!((0..size).all(|i| *grown.add(i) == i as u8));
                    a.dealloc(grown, Layout::from_size_align(size * 3, align).unwrap());
                }
            }
        }
    }
}
