//! Standard output and standard error for every command.
//!
//! Rust's `print!` and `eprint!` panic when the stream cannot be written; a reader that went away
//! (`allot node admit -o json | head -c1`, `allot simulate 2>&1 | head`) closes the pipe, and the
//! next write fails with `BrokenPipe`. Every command writes through this module instead: standard
//! output through [`print`] or [`stream`], which end the output quietly when the reader left (the
//! command still exits with its own code), and standard error through [`eprint`] (the `elog!`
//! macro), which drops what cannot be written. The crate denies `clippy::print_stdout` and
//! `clippy::print_stderr`, so a new `println!` does not slip back in.

use std::io::Write;

use anyhow::Context;

/// Writes `text` to standard output; a reader that went away ends the output quietly.
pub fn print(text: &str) -> anyhow::Result<()> {
    stream(|out| out.write_all(text.as_bytes()))
}

/// Writes a JSON document (pretty, with a final newline) to standard output.
pub fn print_json<T: serde::Serialize + ?Sized>(value: &T) -> anyhow::Result<()> {
    stream(|out| {
        serde_json::to_writer_pretty(&mut *out, value)?;
        out.write_all(b"\n")
    })
}

/// Writes a YAML document to standard output.
pub fn print_yaml<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    stream(|out| serde_saphyr::to_io_writer(out, value).map_err(std::io::Error::other))
}

/// Writes to standard output through a buffer as `render` produces the text; a reader that went
/// away (a closed pipe) ends the output quietly and stops the rendering (`allot simulate -o json
/// | head` does not serialise the rest of the cluster).
pub fn stream(render: impl FnOnce(&mut Stdout) -> std::io::Result<()>) -> anyhow::Result<()> {
    let mut out = Stdout {
        inner: std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock()),
        closed: false,
    };
    match render(&mut out).and_then(|()| out.flush()) {
        // The serializers wrap the writer's error in their own; the flag says what it was.
        Err(_) if out.closed => Ok(()),
        other => other.context("writing the output"),
    }
}

/// Standard output that remembers its reader closed the pipe.
pub struct Stdout {
    inner: std::io::BufWriter<std::io::StdoutLock<'static>>,
    closed: bool,
}

impl Stdout {
    fn note<T>(&mut self, result: std::io::Result<T>) -> std::io::Result<T> {
        if let Err(err) = &result
            && err.kind() == std::io::ErrorKind::BrokenPipe
        {
            self.closed = true;
        }
        result
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let result = self.inner.write(buf);
        self.note(result)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let result = self.inner.flush();
        self.note(result)
    }
}

/// Writes one line to standard error; what cannot be written (a closed pipe) is dropped.
pub fn eprint(args: std::fmt::Arguments<'_>) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_fmt(args).and_then(|()| err.write_all(b"\n"));
}

/// `eprintln!` that never panics: see [`eprint`].
macro_rules! elog {
    ($($arg:tt)*) => {
        $crate::out::eprint(format_args!($($arg)*))
    };
}

/// `n` and the noun in the right number: `count(1, "error", "errors")` is "1 error".
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
