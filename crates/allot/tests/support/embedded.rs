// The storage of a serve suite that runs on the embedded log, and how the suite starts its
// servers on it (included with `include!` by tests/serve.rs, serve_patch.rs, serve_misc.rs
// and serve_kinds.rs). tests/serve_etcd.rs includes those suites
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

/// `allot serve` on `data_dir` and this suite's storage, with `extra` arguments.
#[allow(dead_code)]
fn start_on(data_dir: &std::path::Path, kubectl: &std::path::Path, extra: &[&str]) -> Serve {
    let (mut args, backend) = crate::backend(data_dir);
    args.extend(extra.iter().map(ToString::to_string));
    Serve::start_on(data_dir, kubectl, &args, backend)
}

/// `allot serve` on a new temporary directory and this suite's storage.
#[allow(dead_code)]
fn start() -> (tempfile::TempDir, Serve) {
    let kubectl = find_kubectl();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start_on(dir.path(), &kubectl, &[]);
    (dir, serve)
}

/// The kubectl to use (a failure naming the README's test command when there is none).
fn find_kubectl() -> std::path::PathBuf {
    crate::kubectl::find()
}
