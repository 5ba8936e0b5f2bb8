// The storage of a serve suite that runs on the embedded log (included with `include!` by
// tests/serve.rs, serve_patch.rs and serve_misc.rs). tests/serve_etcd.rs includes those suites
// as modules and defines its own `backend` at its root, so the suites
// reach them as `crate::backend*` and run every test again on etcd.

/// The storage this suite runs on: the embedded log. Returns extra `allot serve` arguments and
/// what must live as long as the server.
#[allow(dead_code)]
fn backend(
    _data_dir: &std::path::Path,
) -> (Vec<String>, Option<Box<dyn std::any::Any + Send + Sync>>) {
    (Vec::new(), None)
}

/// The kubectl to use (a failure naming the README's test command when there is none).
fn find_kubectl() -> std::path::PathBuf {
    crate::kubectl::find()
}
