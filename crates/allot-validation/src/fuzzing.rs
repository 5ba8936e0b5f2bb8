//! The entry point of the `load` fuzz target (`fuzz/fuzz_targets/load.rs`) and of the test that
//! replays its corpus: arbitrary bytes loaded as a manifest file and validated.

use allot_api::defaults::default_object;
use allot_api::load::{LoadError, LoadOptions, Loaded, load_bytes_in_pieces};

use crate::{DraCel, validate_object};

/// The name the fuzzed bytes go by.
const FILE: &str = "fuzz.yaml";

/// Loads `bytes` as a manifest file and validates every document that loads, asserting what
/// must hold for any input:
///
/// - nothing panics (memory is bounded by construction: the loader refuses alias bombs before
///   expanding them and its budgets grow only with the text);
/// - every error names the file and a line of it (1 to the number of lines, plus one for an
///   error at the very end);
/// - cutting the text into tiny pieces parsed on several threads gives exactly what one pass
///   gives (documents, lines and errors);
/// - every validation error's field resolves to a line of the file.
pub fn load_and_validate(bytes: &[u8]) {
    let options = LoadOptions::default();
    let lines = yaml_lines(bytes);
    let one_pass = load_bytes_in_pieces(FILE, bytes.to_vec(), &options, 1, usize::MAX);
    let cut = load_bytes_in_pieces(FILE, bytes.to_vec(), &options, 3, 7);
    assert_eq!(one_pass, cut, "cut into pieces, the text loads differently");
    check_errors(&one_pass, lines, &String::from_utf8_lossy(bytes));
    for mut document in one_pass.documents {
        assert!(
            (1..=lines).contains(&document.raw.line),
            "document at line {} of {lines}",
            document.raw.line
        );
        default_object(&mut document.object);
        for error in validate_object(&document.object, &DraCel) {
            let line = document.raw.line_of(&error.path);
            assert!(
                (1..=lines).contains(&line),
                "{}: line {line} of {lines}",
                error
            );
        }
    }
}

/// The number of lines of `bytes` as YAML counts them (and editors show them): a line ends at
/// `\r\n`, `\n` or a lone `\r`.
fn yaml_lines(bytes: &[u8]) -> u32 {
    let breaks = bytes
        .iter()
        .enumerate()
        .filter(|&(i, &b)| b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n')))
        .count();
    u32::try_from(breaks).unwrap_or(u32::MAX).saturating_add(1)
}

/// Words of the libraries' internals (Rust debug output, parser options) that an error for
/// people never holds, unless the input itself does (messages quote field names).
const INTERNAL_WORDS: &[&str] = &[
    "DuplicateKeyPolicy",
    "from_str",
    "in Options",
    "budget breached",
    " { ",
    "Some(",
];

fn check_errors(loaded: &Loaded, lines: u32, input: &str) {
    for error in &loaded.errors {
        assert_eq!(error.file(), FILE, "{error}");
        assert!(
            !matches!(error, LoadError::Io { .. }),
            "bytes in memory cannot fail to be read: {error}"
        );
        assert!(
            (1..=lines).contains(&error.line()),
            "{error}: line {} of {lines}",
            error.line()
        );
        let text = error.to_string();
        for internal in INTERNAL_WORDS {
            assert!(
                !text.contains(internal) || input.contains(internal),
                "a library's words: {text}"
            );
        }
    }
}
