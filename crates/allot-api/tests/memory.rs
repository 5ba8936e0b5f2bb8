//! Loading streams: the memory it needs beyond the text grows with the pieces in flight, not
//! with the number of documents. Measured with a counting allocator (this test binary's only
//! test, so no other test allocates meanwhile).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use allot_api::load::{LoadEvent, LoadOptions, load_stream};

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        // SAFETY: the layout is the caller's, passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// About `bytes` of Pods, one per document.
fn pods(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 1024);
    let mut i = 0;
    while text.len() < bytes {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: pod-{i}\n  namespace: team-{}\n  labels:\n    app: trainer\n    index: \"{i}\"\nspec:\n  containers:\n  - name: main\n    resources:\n      requests:\n        cpu: 500m\n        memory: 1Gi\n      claims:\n      - name: gpu\n  resourceClaims:\n  - name: gpu\n    resourceClaimTemplateName: one-gpu\n",
            i % 7
        ));
        i += 1;
    }
    text
}

/// The most memory loading a file of `text` takes (its text included), with a sink that
/// counts the documents and drops them.
fn peak_while_loading(text: &str) -> (usize, usize) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("pods.yaml");
    std::fs::write(&file, text).expect("write");
    let options = LoadOptions::default();
    let before = CURRENT.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let mut documents = 0;
    load_stream(&[&file], &options, |event| {
        if let LoadEvent::Document(_) = event {
            documents += 1;
        }
    });
    (PEAK.load(Ordering::Relaxed) - before, documents)
}

#[test]
fn streaming_memory_does_not_grow_with_the_documents() {
    let small = pods(2 << 20);
    let large = pods(8 << 20);
    let (small_peak, small_documents) = peak_while_loading(&small);
    let (large_peak, large_documents) = peak_while_loading(&large);
    assert!(large_documents > 3 * small_documents && small_documents > 5_000);
    // Holding every document would take about 20 times its text: over 150 MB for the large
    // text. Streamed, it is the text and a few pieces in flight (about 12 MB on 2 cores),
    // whatever the input's size.
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(8);
    let working_set = (24 << 20).max(threads * (6 << 20));
    assert!(
        small_peak < small.len() + working_set && large_peak < large.len() + working_set,
        "peaks {small_peak} and {large_peak} bytes for {} and {} bytes of text",
        small.len(),
        large.len()
    );
}
