//! Checkpoints on disk: `cpu_manager_state` and `memory_manager_state` in a state directory,
//! written atomically (temporary file in the same directory, fsync, rename, fsync of the
//! directory), so a kill at any moment leaves either the old or the new file.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::KubeletError;

/// The CPU Manager checkpoint's file name.
pub const CPU_MANAGER_STATE: &str = "cpu_manager_state";
/// The Memory Manager checkpoint's file name.
pub const MEMORY_MANAGER_STATE: &str = "memory_manager_state";

/// Reads a checkpoint; `None` when the file does not exist.
pub fn read(dir: &Path, name: &str) -> Result<Option<Vec<u8>>, KubeletError> {
    let path = dir.join(name);
    match fs::read(&path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(KubeletError::Io {
            path,
            message: e.to_string(),
        }),
    }
}

/// Writes a checkpoint atomically.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), KubeletError> {
    let io = |path: &PathBuf, e: std::io::Error| KubeletError::Io {
        path: path.clone(),
        message: e.to_string(),
    };
    fs::create_dir_all(dir).map_err(|e| io(&dir.to_path_buf(), e))?;
    let target = dir.join(name);
    let tmp = dir.join(format!(".{name}.tmp"));
    {
        let mut f = fs::File::create(&tmp).map_err(|e| io(&tmp, e))?;
        f.write_all(bytes).map_err(|e| io(&tmp, e))?;
        f.sync_all().map_err(|e| io(&tmp, e))?;
    }
    fs::rename(&tmp, &target).map_err(|e| io(&target, e))?;
    // Persist the rename itself.
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(read(dir.path(), "x").expect("read"), None);
        write_atomic(dir.path(), "x", b"one").expect("write");
        write_atomic(dir.path(), "x", b"two").expect("write");
        assert_eq!(read(dir.path(), "x").expect("read"), Some(b"two".to_vec()));
        let names: Vec<_> = fs::read_dir(dir.path())
            .expect("dir")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn a_write_killed_before_the_rename_leaves_the_old_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        write_atomic(dir.path(), "x", b"old").expect("write");
        // What a kill between writing the temporary file and renaming it leaves behind.
        fs::write(dir.path().join(".x.tmp"), b"half-writ").expect("tmp");
        assert_eq!(read(dir.path(), "x").expect("read"), Some(b"old".to_vec()));
        // The next write replaces the leftover temporary file.
        write_atomic(dir.path(), "x", b"new").expect("write");
        assert_eq!(read(dir.path(), "x").expect("read"), Some(b"new".to_vec()));
        assert!(!dir.path().join(".x.tmp").exists());
    }
}
