// The storage of a serve suite that runs on the embedded log (included with `include!` by
// tests/serve.rs, serve_patch.rs and serve_misc.rs). tests/serve_etcd.rs includes those suites
// as modules and defines its own `backend` and `backend_available` at its root, so the suites
// reach them as `crate::backend*` and run every test again on etcd.

/// The storage this suite runs on: the embedded log. Returns extra `allot serve` arguments and
/// what must live as long as the server.
#[allow(dead_code)]
fn backend(
    _data_dir: &std::path::Path,
) -> (Vec<String>, Option<Box<dyn std::any::Any + Send + Sync>>) {
    (Vec::new(), None)
}

/// Whether the storage can run here (tests/serve_etcd.rs: an etcd binary exists).
#[allow(dead_code)]
fn backend_available() -> bool {
    true
}

/// The kubectl to use, or `None` after a loud skip message (a failure under CI).
fn kubectl_or_skip() -> Option<std::path::PathBuf> {
    if !crate::backend_available() {
        return None;
    }
    crate::kubectl::find_or_skip()
}
