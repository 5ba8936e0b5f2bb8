//! Finding and reading input files: directories expanded as kubectl expands them, `-` for
//! standard input, a size limit per file, and text that must be UTF-8 (or UTF-16 with a byte
//! order mark, which YAML allows).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::LoadError;
use super::stream::Source;

/// The default for [`super::LoadOptions::max_file_bytes`]: 1 GiB.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 1 << 30;

/// The environment variable that sets [`super::LoadOptions::max_file_bytes`] (a byte count, or a
/// quantity such as `512Mi` or `2G`).
pub const MAX_FILE_BYTES_ENV: &str = "ALLOT_MAX_INPUT_BYTES";

/// The name standard input goes by in documents and errors (as every allot command names it).
pub const STDIN_NAME: &str = "<stdin>";

/// Reads [`MAX_FILE_BYTES_ENV`]: the limit, or why the variable's value is not one.
pub(crate) fn max_file_bytes_from_env() -> Result<u64, String> {
    match std::env::var(MAX_FILE_BYTES_ENV) {
        Err(std::env::VarError::NotPresent) => Ok(DEFAULT_MAX_FILE_BYTES),
        Err(std::env::VarError::NotUnicode(_)) => Err("the value is not a byte count".to_string()),
        Ok(text) => parse_byte_count(&text)
            .ok_or_else(|| format!("{text:?} is not a byte count (e.g. 1073741824, 512Mi or 2G)")),
    }
}

/// A positive byte count: an integer or a quantity (`512Mi`, `2G`).
pub fn parse_byte_count(text: &str) -> Option<u64> {
    let quantity = allot_quantity::Quantity::parse(text.trim()).ok()?;
    if quantity.sign() <= 0 || !quantity.is_integer() {
        return None;
    }
    u64::try_from(quantity.as_i64()?).ok()
}

/// `bytes` for people: `1 GiB`, `300.5 MiB`, `812 bytes`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// One path to read: a file (or standard input), or an error found while expanding the paths.
pub(crate) enum Input {
    File(PathBuf),
    Stdin,
    Error(LoadError),
}

fn io_error(path: &Path, err: &std::io::Error) -> LoadError {
    LoadError::Io {
        file: path.display().to_string(),
        message: io_message(err),
    }
}

/// The operating system's message without Rust's `(os error N)` suffix, as kubectl words the
/// common cases.
fn io_message(err: &std::io::Error) -> String {
    match err.kind() {
        std::io::ErrorKind::NotFound => "the path does not exist".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => {
            let text = err.to_string();
            match text.find(" (os error") {
                Some(at) => text[..at].to_string(),
                None => text,
            }
        }
    }
}

fn has_manifest_extension(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml" | "json")
    )
}

/// The inputs of `paths`, in order: `-` is standard input, a file is itself (whatever its
/// extension), a directory its `.yaml`, `.yml` and `.json` files in name order (and, when
/// `recursive`, its subdirectories' in turn; symbolic links to directories are not followed,
/// as kubectl does not). A symbolic link with such a name whose target is missing or loops is
/// an error, as kubectl fails to open it: a manifest that cannot be read is never skipped.
pub(crate) fn expand(paths: &[PathBuf], recursive: bool) -> Vec<Input> {
    let mut inputs = Vec::new();
    for path in paths {
        if path.as_os_str() == "-" {
            inputs.push(Input::Stdin);
        } else if path.is_dir() {
            expand_dir(path, recursive, &mut inputs);
        } else {
            inputs.push(Input::File(path.clone()));
        }
    }
    inputs
}

fn expand_dir(dir: &Path, recursive: bool, inputs: &mut Vec<Input>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) => {
            inputs.push(Input::Error(io_error(dir, &err)));
            return;
        }
    };
    let mut found: Vec<(PathBuf, std::fs::FileType)> = Vec::new();
    for entry in entries {
        match entry.and_then(|entry| Ok((entry.path(), entry.file_type()?))) {
            Ok(found_entry) => found.push(found_entry),
            Err(err) => inputs.push(Input::Error(io_error(dir, &err))),
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    for (path, kind) in found {
        if kind.is_dir() {
            if recursive {
                expand_dir(&path, recursive, inputs);
            }
        } else if !has_manifest_extension(&path) {
            continue;
        } else if kind.is_symlink() {
            match std::fs::metadata(&path) {
                Ok(target) if target.is_dir() => {}
                Ok(_) => inputs.push(Input::File(path)),
                Err(err) => inputs.push(Input::Error(symlink_error(&path, &err))),
            }
        } else {
            inputs.push(Input::File(path));
        }
    }
}

/// Why a symbolic link cannot be read, for people.
fn symlink_error(path: &Path, err: &std::io::Error) -> LoadError {
    let target = std::fs::read_link(path)
        .map(|t| format!(" {}", t.display()))
        .unwrap_or_default();
    let message = if err.kind() == std::io::ErrorKind::NotFound {
        format!("a dangling symbolic link: its target{target} does not exist")
    } else if err.raw_os_error() == Some(40) {
        // ELOOP
        format!("a symbolic link that loops (through{target})")
    } else {
        format!(
            "a symbolic link that cannot be followed: {}",
            io_message(err)
        )
    };
    LoadError::Io {
        file: path.display().to_string(),
        message,
    }
}

/// The size of every file input, to size the work (standard input, whose size is not known
/// before it is read, counts as large enough to be read on every core).
pub(crate) fn total_size(inputs: &[Input]) -> u64 {
    inputs
        .iter()
        .map(|input| match input {
            Input::File(path) => std::fs::metadata(path).map_or(0, |m| m.len()),
            Input::Stdin => super::stream::PARALLEL_BYTES,
            Input::Error(_) => 0,
        })
        .sum()
}

/// Reads one input into a source, checking its size against `limit` before reading it.
pub(crate) fn read(input: Input, limit: u64) -> Source {
    match input {
        Input::Error(err) => Source {
            name: err.file().to_string(),
            text: Err(err),
        },
        Input::Stdin => {
            let mut bytes = Vec::new();
            let read = std::io::stdin()
                .lock()
                .take(limit.saturating_add(1))
                .read_to_end(&mut bytes);
            let text = match read {
                Err(err) => Err(LoadError::Io {
                    file: STDIN_NAME.to_string(),
                    message: io_message(&err),
                }),
                Ok(_) if bytes.len() as u64 > limit => Err(too_large(STDIN_NAME, None, limit)),
                Ok(_) => decode_text(STDIN_NAME, bytes),
            };
            Source {
                name: STDIN_NAME.to_string(),
                text,
            }
        }
        Input::File(path) => {
            let name = path.display().to_string();
            let text = read_file(&path, &name, limit);
            Source { name, text }
        }
    }
}

fn read_file(path: &Path, name: &str, limit: u64) -> Result<Arc<String>, LoadError> {
    let size = std::fs::metadata(path)
        .map_err(|err| io_error(path, &err))?
        .len();
    if size > limit {
        return Err(too_large(name, Some(size), limit));
    }
    // Sized up front: a growing buffer would hold two copies of a large file at its last
    // doubling.
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0).saturating_add(1));
    std::fs::File::open(path)
        .and_then(|file| file.take(limit.saturating_add(1)).read_to_end(&mut bytes))
        .map_err(|err| io_error(path, &err))?;
    if bytes.len() as u64 > limit {
        // It grew while being read.
        return Err(too_large(name, None, limit));
    }
    decode_text(name, bytes)
}

fn too_large(name: &str, size: Option<u64>, limit: u64) -> LoadError {
    let size = match size {
        Some(size) => format!("{} ", human_bytes(size)),
        None => String::new(),
    };
    LoadError::Io {
        file: name.to_string(),
        message: format!(
            "the input is {size}larger than the limit of {} per file ({MAX_FILE_BYTES_ENV} sets it); split it or raise the limit",
            human_bytes(limit)
        ),
    }
}

/// The text of `bytes`: UTF-8 (a leading byte order mark is left to the parser), or UTF-16
/// with a byte order mark; anything else is an error at the line of the first bad byte.
pub(crate) fn decode_text(name: &str, bytes: Vec<u8>) -> Result<Arc<String>, LoadError> {
    if let Some(text) = decode_utf16(name, &bytes) {
        return text;
    }
    match String::from_utf8(bytes) {
        Ok(text) => Ok(Arc::new(text)),
        Err(err) => {
            let bytes = err.as_bytes();
            let at = err.utf8_error().valid_up_to();
            let line = super::stream::count_lines(&bytes[..at]).saturating_add(1);
            let line_start = super::stream::last_line_start(&bytes[..at]);
            let column = String::from_utf8_lossy(&bytes[line_start..at])
                .chars()
                .count()
                + 1;
            Err(LoadError::Syntax {
                file: name.to_string(),
                line,
                message: format!(
                    "invalid UTF-8: byte 0x{:02X} at column {column} is not part of a UTF-8 character; manifests must be UTF-8 text (or UTF-16 with a byte order mark)",
                    bytes[at]
                ),
            })
        }
    }
}

/// UTF-16 text with a byte order mark, as UTF-8; `None` when `bytes` has no such mark.
fn decode_utf16(name: &str, bytes: &[u8]) -> Option<Result<Arc<String>, LoadError>> {
    let little = match bytes {
        [0xFF, 0xFE, ..] => true,
        [0xFE, 0xFF, ..] => false,
        _ => return None,
    };
    let units = bytes[2..].chunks(2).map(|pair| match (pair, little) {
        ([a, b], true) => u16::from_le_bytes([*a, *b]),
        ([a, b], false) => u16::from_be_bytes([*a, *b]),
        _ => 0xD800, // an odd trailing byte: never valid on its own
    });
    let mut text = String::with_capacity(bytes.len() / 2);
    let mut line = 1u32;
    for decoded in char::decode_utf16(units) {
        match decoded {
            Ok(c) => {
                if c == '\n' {
                    line = line.saturating_add(1);
                }
                text.push(c);
            }
            Err(_) => {
                return Some(Err(LoadError::Syntax {
                    file: name.to_string(),
                    line,
                    message: "invalid UTF-16: an unpaired surrogate or a missing byte".to_string(),
                }));
            }
        }
    }
    Some(Ok(Arc::new(text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_utf8_is_reported_at_its_line_and_column() {
        let err = decode_text("f.yaml", b"a: 1\nb: \"x\xFFy\"\n".to_vec()).unwrap_err();
        assert_eq!(err.line(), 2);
        assert!(err.to_string().contains("byte 0xFF at column 6"), "{err}");
        let err = decode_text("f.yaml", b"\xC3".to_vec()).unwrap_err();
        assert_eq!(err.line(), 1);
    }

    #[test]
    fn utf16_with_a_byte_order_mark_is_read() {
        let mut bytes = vec![0xFF, 0xFE];
        for unit in "a: ü\n".encode_utf16() {
            bytes.extend(unit.to_le_bytes());
        }
        assert_eq!(decode_text("f.yaml", bytes).unwrap().as_str(), "a: ü\n");
        let err = decode_text("f.yaml", vec![0xFE, 0xFF, 0x00, 0x61, 0x00]).unwrap_err();
        assert!(err.to_string().contains("UTF-16"), "{err}");
    }

    #[test]
    fn byte_counts_are_integers_or_quantities() {
        assert_eq!(parse_byte_count("1024"), Some(1024));
        assert_eq!(parse_byte_count("512Mi"), Some(512 << 20));
        assert_eq!(parse_byte_count("2G"), Some(2_000_000_000));
        assert_eq!(parse_byte_count("-1"), None);
        assert_eq!(parse_byte_count("0"), None);
        assert_eq!(parse_byte_count("1.5"), None);
        assert_eq!(parse_byte_count("lots"), None);
        assert_eq!(human_bytes(1 << 30), "1 GiB");
        assert_eq!(human_bytes(1536 << 10), "1.5 MiB");
        assert_eq!(human_bytes(12), "12 bytes");
    }
}
