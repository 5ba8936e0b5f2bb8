//! The on-disk format of `allot serve`'s event log, and how reading it tells a torn write from
//! corruption.
//!
//! A log is a header line, [`HEADER`], then one line per record: the record's CRC32C as eight
//! lowercase hex digits, a space, the record itself (one line of JSON, which never holds a raw
//! newline), a newline. Appends write whole lines and fsync before a write is acknowledged, so
//! a crash can only leave an incomplete last line (a torn write, never acknowledged): reading
//! drops it and says how many bytes it dropped. Anything else that is wrong — a whole line whose
//! checksum fails, a line without a checksum, an unknown header — is corruption, found at a
//! byte offset; reading stops there and the caller refuses to start rather than serve a cluster
//! with records missing or changed.
//!
//! Key design decision: a text format, one record per line with its checksum in front, instead
//! of binary length-prefixed frames. The log stays readable with `grep` and `tail`, a record's
//! end is found without trusting a length field that could itself be corrupt, and the
//! checksum guards every byte of the record. The cost: eight hex digits and a space per record,
//! and a record may not contain a newline (JSON never does).
//!
//! Logs written before checksums (version 1: plain JSON lines, no header) are read as
//! [`Format::Legacy`] so that the caller can upgrade them.

#![deny(missing_docs)]

use std::io::BufRead;

/// The first line of a checksummed log.
pub const HEADER: &[u8] = b"allot-event-log 2 crc32c\n";

/// The checksum of a record: CRC32C (Castagnoli).
pub fn checksum(record: &[u8]) -> u32 {
    crc32c::crc32c(record)
}

/// Appends one record line (checksum, space, record, newline) to `out`.
pub fn encode(record: &[u8], out: &mut Vec<u8>) -> Result<(), EncodeError> {
    if record.contains(&b'\n') {
        return Err(EncodeError::Newline);
    }
    out.reserve(record.len() + 10);
    out.extend_from_slice(format!("{:08x} ", checksum(record)).as_bytes());
    out.extend_from_slice(record);
    out.push(b'\n');
    Ok(())
}

/// Why a record cannot be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodeError {
    /// The record holds a newline, which would end its line early.
    Newline,
}

impl std::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EncodeError::Newline => f.write_str("a log record may not contain a newline"),
        }
    }
}

impl std::error::Error for EncodeError {}

/// What kind of log was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// No bytes at all.
    Empty,
    /// Version 1: JSON lines without header or checksums.
    Legacy,
    /// Version 2: [`HEADER`], then checksummed lines.
    Checksummed,
}

/// The outcome of reading a log whose whole records are all sound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scanned {
    /// The log's format.
    pub format: Format,
    /// How many records were read.
    pub records: u64,
    /// The length of the sound part: the header and every whole record.
    pub valid_len: u64,
    /// The bytes after it: an incomplete last line, left by a write the crash cut short
    /// (0 when the log ends with a whole record).
    pub torn_bytes: u64,
}

/// What is wrong with a whole line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The first line is neither [`HEADER`] nor a version 1 record.
    UnknownHeader,
    /// The line does not start with eight lowercase hex digits and a space.
    NoChecksum,
    /// The record's checksum is not the one stored in front of it.
    ChecksumMismatch {
        /// The stored checksum.
        stored: u32,
        /// The checksum of the record as read.
        computed: u32,
    },
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::UnknownHeader => write!(
                f,
                "the first line is not {:?} (nor a version 1 record)",
                String::from_utf8_lossy(HEADER.strip_suffix(b"\n").unwrap_or(HEADER))
            ),
            Problem::NoChecksum => f.write_str("the line does not start with a checksum"),
            Problem::ChecksumMismatch { stored, computed } => write!(
                f,
                "checksum mismatch (stored {stored:08x}, computed {computed:08x})"
            ),
        }
    }
}

/// Why reading stopped.
#[derive(Debug)]
pub enum ScanError<E> {
    /// The reader failed.
    Io(std::io::Error),
    /// A whole line that is not a sound record: corruption, not a torn write.
    Corrupt {
        /// Where the line starts.
        offset: u64,
        /// Its record number (1 for the first record; 0 for the header).
        record: u64,
        /// What is wrong.
        problem: Problem,
    },
    /// The caller refused a record whose checksum is right (it does not decode).
    Rejected {
        /// Where the line starts.
        offset: u64,
        /// Its record number (1 for the first).
        record: u64,
        /// The caller's reason.
        error: E,
    },
}

/// Reads a log from `reader`, handing every sound record (without checksum and newline) to
/// `record` with the offset of its line, in order. Stops at the first corrupt line, or the
/// first record `record` refuses. An incomplete last line is not handed over: it is counted in
/// [`Scanned::torn_bytes`].
pub fn scan<R: BufRead, E>(
    mut reader: R,
    mut record: impl FnMut(u64, &[u8]) -> Result<(), E>,
) -> Result<Scanned, ScanError<E>> {
    let mut line = Vec::new();
    let mut offset: u64 = 0;
    let read = |reader: &mut R, line: &mut Vec<u8>| {
        line.clear();
        reader.read_until(b'\n', line).map_err(ScanError::Io)
    };
    let n = read(&mut reader, &mut line)?;
    if n == 0 {
        return Ok(Scanned {
            format: Format::Empty,
            records: 0,
            valid_len: 0,
            torn_bytes: 0,
        });
    }
    let whole = line.last() == Some(&b'\n');
    // A version-1 log starts with a JSON object's first key. `{"` rather than `{` alone, so
    // that a header whose first byte was corrupted into `{` is not mistaken for one.
    let format = if line.starts_with(b"{\"") {
        Format::Legacy
    } else if line == HEADER || (!whole && HEADER.starts_with(&line)) {
        Format::Checksummed
    } else {
        return Err(ScanError::Corrupt {
            offset: 0,
            record: 0,
            problem: Problem::UnknownHeader,
        });
    };
    let mut records: u64 = 0;
    if format == Format::Checksummed {
        if !whole {
            // The header itself was cut short: nothing was ever acknowledged.
            return Ok(Scanned {
                format,
                records,
                valid_len: 0,
                torn_bytes: n as u64,
            });
        }
        offset = n as u64;
        read(&mut reader, &mut line)?;
    }
    loop {
        let n = line.len();
        if n == 0 {
            break;
        }
        if line.last() != Some(&b'\n') {
            return Ok(Scanned {
                format,
                records,
                valid_len: offset,
                torn_bytes: n as u64,
            });
        }
        let number = records + 1;
        let body = &line[..n - 1];
        let payload = match format {
            Format::Checksummed => checked(body).map_err(|problem| ScanError::Corrupt {
                offset,
                record: number,
                problem,
            })?,
            _ => body,
        };
        record(offset, payload).map_err(|error| ScanError::Rejected {
            offset,
            record: number,
            error,
        })?;
        records = number;
        offset += n as u64;
        read(&mut reader, &mut line)?;
    }
    Ok(Scanned {
        format,
        records,
        valid_len: offset,
        torn_bytes: 0,
    })
}

/// The record of a checksummed line (without its newline), if its checksum is right.
fn checked(line: &[u8]) -> Result<&[u8], Problem> {
    let (Some(digits), Some(b' ')) = (line.get(..8), line.get(8)) else {
        return Err(Problem::NoChecksum);
    };
    let mut stored: u32 = 0;
    for &digit in digits {
        let value = match digit {
            b'0'..=b'9' => digit - b'0',
            b'a'..=b'f' => digit - b'a' + 10,
            _ => return Err(Problem::NoChecksum),
        };
        stored = (stored << 4) | u32::from(value);
    }
    let payload = &line[9..];
    let computed = checksum(payload);
    if computed != stored {
        return Err(Problem::ChecksumMismatch { stored, computed });
    }
    Ok(payload)
}

/// The fuzz target's entry point (`fuzz/fuzz_targets/store_log.rs`), also run on the committed
/// corpus by this crate's tests.
#[doc(hidden)]
pub mod fuzzing {
    use super::{Format, HEADER, ScanError, encode, scan};

    /// Reads `bytes` as a log and checks what was accepted against the bytes themselves: on
    /// success the sound part re-encodes, byte for byte, from the records handed over (so each
    /// of them had its checksum right and none was skipped), and the rest is one incomplete
    /// line; on corruption everything before the offset re-encodes and the line at the offset
    /// does not. Panics when an invariant breaks.
    pub fn scan_bytes(bytes: &[u8]) {
        let mut accepted: Vec<(u64, Vec<u8>)> = Vec::new();
        let result = scan(bytes, |offset, record| {
            accepted.push((offset, record.to_vec()));
            Ok::<(), ()>(())
        });
        let len = bytes.len() as u64;
        let rebuilt = |format: Format| {
            let mut out = Vec::new();
            if format == Format::Checksummed {
                out.extend_from_slice(HEADER);
            }
            for (offset, record) in &accepted {
                assert_eq!(*offset as usize, out.len(), "records are contiguous");
                match format {
                    Format::Checksummed => {
                        encode(record, &mut out).expect("a record read holds no newline");
                    }
                    _ => {
                        out.extend_from_slice(record);
                        out.push(b'\n');
                    }
                }
            }
            out
        };
        match result {
            Ok(scanned) => {
                assert_eq!(scanned.valid_len + scanned.torn_bytes, len);
                assert_eq!(scanned.records, accepted.len() as u64);
                let valid = &bytes[..scanned.valid_len as usize];
                let torn = &bytes[scanned.valid_len as usize..];
                assert!(!torn.contains(&b'\n'), "a torn tail is one incomplete line");
                match scanned.format {
                    Format::Empty => assert!(bytes.is_empty()),
                    Format::Checksummed if scanned.valid_len == 0 => {
                        assert!(accepted.is_empty() && HEADER.starts_with(torn));
                    }
                    format => assert_eq!(rebuilt(format), valid),
                }
            }
            Err(ScanError::Corrupt { offset, .. }) => {
                assert!(offset < len);
                let format = if bytes.first() == Some(&b'{') {
                    Format::Legacy
                } else {
                    Format::Checksummed
                };
                if offset > 0 {
                    assert_eq!(format, Format::Checksummed, "legacy lines have no checksum");
                    assert_eq!(rebuilt(format), &bytes[..offset as usize]);
                    let rest = &bytes[offset as usize..];
                    let line_end = rest.iter().position(|&b| b == b'\n').expect("a whole line");
                    let line = &rest[..line_end];
                    let mut again = Vec::new();
                    let sound = line.len() >= 9
                        && encode(&line[9..], &mut again).is_ok()
                        && again[..again.len() - 1] == *line;
                    assert!(!sound, "a sound line was called corrupt");
                } else {
                    assert!(accepted.is_empty());
                }
            }
            Err(ScanError::Rejected { .. }) => unreachable!("the callback accepts everything"),
            Err(ScanError::Io(err)) => panic!("reading a slice failed: {err}"),
        }
    }
}

#[cfg(test)]
mod tests;
