//! etcd-client's build script runs protoc: `.cargo/config.toml` points PROTOC at `tools/protoc`,
//! which runs the binary of the protoc-bin-vendored build-dependency below. A build script
//! cannot set environment variables for another crate's build script, hence the indirection;
//! this one only checks, early and with a clear message, that the vendored protoc is there.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("PROTOC").is_none() && protoc_bin_vendored::protoc_bin_path().is_err() {
        println!(
            "cargo:warning=no vendored protoc for this platform: set PROTOC to a protoc binary"
        );
    }
}
