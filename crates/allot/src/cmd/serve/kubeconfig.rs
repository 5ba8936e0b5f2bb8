//! `allot serve --write-kubeconfig`: merges the server's cluster, user and context into the
//! user's kubeconfig (`$KUBECONFIG`'s first file, else `~/.kube/config`) as `kind` does: entries
//! of the same name are replaced, every other entry and field is kept, `current-context` is
//! set to the new context, and the file is replaced atomically (temporary file, fsync, rename,
//! fsync of the directory) with mode 0600.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow, bail};
use serde_json::{Map, Value, json};

/// The file to merge into: the first entry of `$KUBECONFIG`, else `~/.kube/config`.
pub fn default_path() -> anyhow::Result<PathBuf> {
    if let Some(list) = std::env::var_os("KUBECONFIG")
        && let Some(first) = std::env::split_paths(&list).find(|p| !p.as_os_str().is_empty())
    {
        return Ok(first);
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or_else(|| anyhow!("neither KUBECONFIG nor HOME is set"))?;
    Ok(PathBuf::from(home).join(".kube").join("config"))
}

/// The name of the entries for a server on `data_dir`: `allot-<directory name>`.
pub fn context_name(data_dir: &Path) -> String {
    let base = data_dir
        .canonicalize()
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .or_else(|| {
            data_dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "server".into());
    format!("allot-{base}")
}

/// Merges the single cluster, user and context of `source` (the server's own kubeconfig)
/// into `target` under `name`.
pub fn merge_into(target: &Path, source: &Path, name: &str) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(source).with_context(|| format!("reading {}", source.display()))?;
    let ours: Value =
        serde_saphyr::from_str(&text).map_err(|e| anyhow!("{}: {e}", source.display()))?;
    let first = |list: &str, field: &str| -> anyhow::Result<Value> {
        ours.get(list)
            .and_then(Value::as_array)
            .and_then(|l| l.first())
            .and_then(|entry| entry.get(field))
            .cloned()
            .ok_or_else(|| anyhow!("{}: no {list}[0].{field}", source.display()))
    };
    let cluster = first("clusters", "cluster")?;
    let user = first("users", "user")?;
    let mut context = first("contexts", "context")?;
    context["cluster"] = json!(name);
    context["user"] = json!(name);

    let mut config = match std::fs::read_to_string(target) {
        Ok(existing) if !existing.trim().is_empty() => {
            let value: Value = serde_saphyr::from_str(&existing)
                .map_err(|e| anyhow!("{}: not a kubeconfig: {e}", target.display()))?;
            if !value.is_object() {
                bail!("{}: not a kubeconfig (not a mapping)", target.display());
            }
            value
        }
        Ok(_) => json!({}),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(err) => return Err(err).with_context(|| format!("reading {}", target.display())),
    };
    let object = config.as_object_mut().expect("checked to be a mapping");
    object.entry("apiVersion").or_insert_with(|| json!("v1"));
    object.entry("kind").or_insert_with(|| json!("Config"));
    upsert(object, "clusters", name, "cluster", cluster)?;
    upsert(object, "users", name, "user", user)?;
    upsert(object, "contexts", name, "context", context)?;
    object.insert("current-context".into(), json!(name));
    let text = serde_saphyr::to_string(&config).map_err(|e| anyhow!("{e}"))?;
    write_atomically(target, text.as_bytes())
}

/// Replaces the entry named `name` of the list `list` (or appends it).
fn upsert(
    config: &mut Map<String, Value>,
    list: &str,
    name: &str,
    field: &str,
    value: Value,
) -> anyhow::Result<()> {
    let entries = config.entry(list).or_insert_with(|| json!([]));
    if entries.is_null() {
        *entries = json!([]);
    }
    let entries = entries
        .as_array_mut()
        .ok_or_else(|| anyhow!("{list} is not a list"))?;
    let entry = json!({"name": name, field: value});
    match entries
        .iter_mut()
        .find(|e| e.get("name").and_then(Value::as_str) == Some(name))
    {
        Some(existing) => *existing = entry,
        None => entries.push(entry),
    }
    Ok(())
}

/// Writes `bytes` to `path` through a temporary file in the same directory (mode 0600),
/// fsync'd and renamed over it, then fsyncs the directory.
fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let temp = dir.join(format!(
        ".{}.allot-{}.tmp",
        path.file_name()
            .map_or_else(|| "config".into(), |n| n.to_string_lossy()),
        std::process::id()
    ));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result.with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OURS: &str = "apiVersion: v1\nkind: Config\nclusters:\n- name: allot\n  cluster:\n    server: https://127.0.0.1:7000\n    certificate-authority-data: Q0E=\nusers:\n- name: admin\n  user:\n    token: secret\ncontexts:\n- name: allot\n  context:\n    cluster: allot\n    user: admin\n    namespace: default\ncurrent-context: allot\n";

    #[test]
    fn merging_keeps_other_entries_and_replaces_its_own() {
        let dir = tempfile::tempdir().expect("tempdir");
        let source = dir.path().join("ours");
        std::fs::write(&source, OURS).expect("writes");
        let target = dir.path().join("kube").join("config");
        std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
        std::fs::write(
            &target,
            "apiVersion: v1\nkind: Config\npreferences: {}\nclusters:\n- name: prod\n  cluster:\n    server: https://prod:6443\nusers:\n- name: me\n  user:\n    token: t\ncontexts:\n- name: prod\n  context:\n    cluster: prod\n    user: me\ncurrent-context: prod\n",
        )
        .expect("writes");
        merge_into(&target, &source, "allot-a").expect("merges");
        merge_into(&target, &source, "allot-a").expect("merges again");
        let merged: Value =
            serde_saphyr::from_str(&std::fs::read_to_string(&target).expect("reads"))
                .expect("YAML");
        assert_eq!(merged["current-context"], "allot-a");
        assert_eq!(merged["preferences"], json!({}));
        let names = |list: &str| -> Vec<String> {
            merged[list]
                .as_array()
                .expect("list")
                .iter()
                .map(|e| e["name"].as_str().unwrap_or_default().to_string())
                .collect()
        };
        assert_eq!(names("clusters"), ["prod", "allot-a"]);
        assert_eq!(names("users"), ["me", "allot-a"]);
        assert_eq!(names("contexts"), ["prod", "allot-a"]);
        assert_eq!(
            merged["contexts"][1]["context"],
            json!({"cluster": "allot-a", "user": "allot-a", "namespace": "default"})
        );
        assert_eq!(merged["users"][1]["user"]["token"], "secret");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&target)
            .expect("stat")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let left: Vec<_> = std::fs::read_dir(target.parent().expect("dir"))
            .expect("lists")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left.len(), 1, "no temporary file left: {left:?}");
    }

    #[test]
    fn a_missing_kubeconfig_is_created_and_garbage_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let source = dir.path().join("ours");
        std::fs::write(&source, OURS).expect("writes");
        let target = dir.path().join("new").join("config");
        merge_into(&target, &source, "allot-x").expect("creates");
        let merged: Value =
            serde_saphyr::from_str(&std::fs::read_to_string(&target).expect("reads"))
                .expect("YAML");
        assert_eq!(merged["kind"], "Config");
        assert_eq!(
            merged["clusters"][0]["cluster"]["server"],
            "https://127.0.0.1:7000"
        );
        let garbage = dir.path().join("garbage");
        std::fs::write(&garbage, "- just\n- a list\n").expect("writes");
        let err = merge_into(&garbage, &source, "allot-x").unwrap_err();
        assert!(err.to_string().contains("not a kubeconfig"), "{err}");
        assert_eq!(
            std::fs::read_to_string(&garbage).expect("reads"),
            "- just\n- a list\n",
            "a refused file is left as it was"
        );
    }
}
