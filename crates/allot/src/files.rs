//! `-f/--filename` and `-R/--recursive`, as kubectl spells them, for every command that reads
//! files: a file, a directory (its `.yaml`, `.yml` and `.json` files in name order; with `-R`
//! its subdirectories too, each after the files of its parent, in name order), or `-` for
//! standard input (once per command).
//!
//! Commands that load Kubernetes manifests ([`Files::load`]) hand files and directories to
//! `allot_api::load` and read standard input as one more text named `<stdin>`; commands that
//! read one scenario ([`Files::texts`]) get every file's text in order.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use allot_api::load::{LoadOptions, Loaded};
use anyhow::{Context, bail};

/// The name standard input goes by in messages (`<stdin>:3: ...`).
pub const STDIN_NAME: &str = "<stdin>";

/// What `-f` names: standard input, or a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `-`.
    Stdin,
    /// A file, or a directory to list (not recursively: `-R` adds its subdirectories as
    /// sources of their own).
    Path(PathBuf),
}

/// Files given with `-f` (and positional ones, for commands that take them).
#[derive(Debug, Clone, Default)]
pub struct Files {
    /// The paths in the order given; `-` is standard input.
    pub paths: Vec<PathBuf>,
    /// Whether directories are read recursively.
    pub recursive: bool,
}

impl Files {
    /// Files from paths and the `-R` flag.
    pub fn new(paths: Vec<PathBuf>, recursive: bool) -> Self {
        Files { paths, recursive }
    }

    /// The sources in order, with `-R` directories expanded into each subdirectory; an error
    /// when standard input is named twice.
    pub fn sources(&self) -> anyhow::Result<Vec<Source>> {
        let mut out = Vec::new();
        let mut stdin = false;
        for path in &self.paths {
            if path.as_os_str() == "-" {
                if std::mem::replace(&mut stdin, true) {
                    bail!("-f -: standard input can be read only once");
                }
                out.push(Source::Stdin);
            } else if self.recursive && path.is_dir() {
                let mut seen = BTreeSet::new();
                walk(path, &mut seen, &mut out);
            } else {
                out.push(Source::Path(path.clone()));
            }
        }
        Ok(out)
    }

    /// Loads the manifests: consecutive paths through `allot_api::load::load`, standard input
    /// as one text; documents and errors in the order of the sources.
    pub fn load(&self, options: &LoadOptions) -> anyhow::Result<Loaded> {
        let mut loaded = Loaded::default();
        let mut paths: Vec<PathBuf> = Vec::new();
        let flush = |paths: &mut Vec<PathBuf>, loaded: &mut Loaded| {
            if !paths.is_empty() {
                append(loaded, allot_api::load::load(paths, options));
                paths.clear();
            }
        };
        for source in self.sources()? {
            match source {
                Source::Path(path) => paths.push(path),
                Source::Stdin => {
                    flush(&mut paths, &mut loaded);
                    let text = read_stdin()?;
                    append(
                        &mut loaded,
                        allot_api::load::load_texts(&[(STDIN_NAME, &text)], options),
                    );
                }
            }
        }
        flush(&mut paths, &mut loaded);
        Ok(loaded)
    }

    /// Every file's text, `(name, text)`, in order: a directory gives its `.yaml`, `.yml` and
    /// `.json` files in name order; an unreadable path is an error naming it.
    pub fn texts(&self) -> anyhow::Result<Vec<(String, String)>> {
        let mut out = Vec::new();
        for source in self.sources()? {
            match source {
                Source::Stdin => out.push((STDIN_NAME.to_string(), read_stdin()?)),
                Source::Path(path) if path.is_dir() => {
                    for file in manifests_in(&path)? {
                        let text = read_file(&file)?;
                        out.push((file.display().to_string(), text));
                    }
                }
                Source::Path(path) => {
                    let text = read_file(&path)?;
                    out.push((path.display().to_string(), text));
                }
            }
        }
        Ok(out)
    }

    /// The one text of a command that reads one document or one scenario: several files are
    /// joined as one multi-document stream (each starts a new document); `what` names the
    /// input in errors.
    pub fn text(&self, what: &str) -> anyhow::Result<(String, String)> {
        let texts = self.texts()?;
        match texts.as_slice() {
            [] if self.paths.is_empty() => {
                bail!("no {what} given: use -f FILE (or -f - for standard input)")
            }
            [] => bail!(
                "no {what} found: {} holds no .yaml, .yml or .json file",
                display_paths(&self.paths)
            ),
            [(name, text)] => Ok((name.clone(), text.clone())),
            many => {
                let names: Vec<&str> = many.iter().map(|(n, _)| n.as_str()).collect();
                let mut joined = String::new();
                for (_, text) in many {
                    joined.push_str("---\n");
                    joined.push_str(text);
                    if !text.ends_with('\n') {
                        joined.push('\n');
                    }
                }
                Ok((names.join(", "), joined))
            }
        }
    }
}

fn display_paths(paths: &[PathBuf]) -> String {
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    names.join(", ")
}

fn append(into: &mut Loaded, more: Loaded) {
    into.documents.extend(more.documents);
    into.errors.extend(more.errors);
}

/// Reads standard input to the end.
pub fn read_stdin() -> anyhow::Result<String> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .context("reading standard input")?;
    Ok(text)
}

fn read_file(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

fn is_manifest(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml" | "json")
    )
}

/// The manifest files directly in `dir`, in name order; a dangling symlink is reported on
/// stderr and skipped.
fn manifests_in(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry
            .with_context(|| format!("reading {}", dir.display()))?
            .path();
        if !is_manifest(&path) {
            continue;
        }
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() => files.push(path),
            Ok(_) => {}
            Err(err) => elog!("warning: skipping {}: {err}", path.display()),
        }
    }
    files.sort();
    Ok(files)
}

/// `dir` and, depth first in name order, every directory below it (a directory reached twice
/// through symlinks is read once).
fn walk(dir: &Path, seen: &mut BTreeSet<PathBuf>, out: &mut Vec<Source>) {
    let canonical = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    if !seen.insert(canonical) {
        return;
    }
    out.push(Source::Path(dir.to_path_buf()));
    let Ok(entries) = std::fs::read_dir(dir) else {
        // allot_api::load reports the unreadable directory.
        return;
    };
    let mut subdirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    subdirs.sort();
    for sub in subdirs {
        walk(&sub, seen, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recursive_directories_come_parent_first_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for sub in ["b", "a", "a/z", "a/y"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        let files = Files::new(vec![root.to_path_buf()], true);
        let sources = files.sources().unwrap();
        let names: Vec<String> = sources
            .iter()
            .map(|s| match s {
                Source::Path(p) => p.strip_prefix(root).unwrap().display().to_string(),
                Source::Stdin => "-".into(),
            })
            .collect();
        assert_eq!(names, ["", "a", "a/y", "a/z", "b"]);
        let flat = Files::new(vec![root.to_path_buf()], false)
            .sources()
            .unwrap();
        assert_eq!(flat, [Source::Path(root.to_path_buf())]);
    }

    #[test]
    fn standard_input_only_once() {
        let files = Files::new(vec!["-".into(), "-".into()], false);
        assert!(files.sources().is_err());
    }
}
