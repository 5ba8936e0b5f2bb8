//! Loading as a stream: texts are cut at document markers into pieces of bounded size, the
//! pieces are parsed and decoded on every core, and the documents are handed to a sink in input
//! order while later pieces are still being read. At most a few pieces are in flight at once, so
//! memory is the text of the file being read plus a bounded working set, whatever the input's
//! size (a single document, which cannot be cut, is parsed whole).

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use super::{Document, LineOffset, LoadError, LoadOptions, convert_one, decode_object, parse_yaml};

/// What loading hands its sink, in input order.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadEvent {
    /// The documents of this file (as named in documents and errors) follow.
    FileStart(String),
    /// A document that decoded.
    Document(Box<Document>),
    /// A document that did not decode.
    DocumentError(LoadError),
    /// The file is unusable as a whole: it could not be read, or it holds a syntax error, a
    /// document that is not an object or one that repeats a key. Whatever it gave before this
    /// event is to be forgotten, and nothing more comes from it.
    FileError(LoadError),
}

/// One input: a file's name and its text, or why it has none.
pub(crate) struct Source {
    pub name: String,
    pub text: Result<Arc<String>, LoadError>,
}

/// Below this many bytes in all, texts are loaded on the calling thread.
pub(crate) const PARALLEL_BYTES: u64 = 256 * 1024;

/// Pieces are at most this large (a document larger than this is one piece).
const MAX_PIECE_BYTES: usize = 128 * 1024;

/// Pieces are at least this large (fewer, larger pieces cost less to hand around).
const MIN_PIECE_BYTES: usize = 16 * 1024;

/// At most this many threads load (more gain little, and each keeps pieces in flight).
const MAX_THREADS: usize = 8;

/// How many threads loading `total` bytes is worth: every core (up to eight) for large inputs.
pub(crate) fn threads_for(total: u64) -> usize {
    if total < PARALLEL_BYTES {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, usize::from)
            .min(MAX_THREADS)
    }
}

/// The size of pieces for a text of `size` bytes on `threads` threads: several pieces per
/// thread, so that one slow piece does not hold the others up, and never so large that the
/// pieces in flight weigh much.
fn piece_bytes(size: usize, threads: usize) -> usize {
    (size / (threads.max(1) * 8)).clamp(MIN_PIECE_BYTES, MAX_PIECE_BYTES)
}

/// A document-aligned piece of one text.
struct Piece {
    /// The text's index among the sources.
    source: usize,
    name: Arc<str>,
    text: Arc<String>,
    start: usize,
    end: usize,
    offset: LineOffset,
}

/// What a piece gave.
enum PieceLoaded {
    /// The piece does not parse; the error is worked out again over the rest of the text.
    Syntax(LoadError),
    /// A document that is not an object or repeats a key.
    Invalid(LoadError),
    /// Each document, decoded or the reason it could not be.
    Parsed(Vec<Result<Document, LoadError>>),
    /// Loading the piece panicked on a worker thread; the panic goes on on the calling thread.
    Panicked(Box<dyn std::any::Any + Send>),
}

/// Parses a piece, then converts and decodes its documents one by one, so that each parsed
/// tree is gone before the next document is decoded.
fn load_piece(piece: &Piece, options: &LoadOptions) -> PieceLoaded {
    let body = &piece.text[piece.start..piece.end];
    let nodes = match parse_yaml(&piece.name, body, piece.offset) {
        Err(err) => return PieceLoaded::Syntax(err),
        Ok(nodes) => nodes,
    };
    let mut entries = Vec::with_capacity(nodes.len());
    for node in nodes {
        match convert_one(&piece.name, node, piece.offset) {
            Err(err) => return PieceLoaded::Invalid(err),
            Ok(raws) => entries
                .extend(raws.into_iter().map(|raw| {
                    decode_object(&raw, options).map(|object| Document { raw, object })
                })),
        }
    }
    PieceLoaded::Parsed(entries)
}

/// A unit of the stream, in input order: an event ready to go, or a piece to parse.
enum Unit {
    Ready(LoadEvent),
    Piece(Piece),
}

/// Turns sources into units, reading them lazily (a source's text is produced only when the
/// stream reaches it).
struct Units<I> {
    sources: I,
    index: usize,
    threads: usize,
    /// The size of pieces, when not chosen per text.
    piece_bytes: Option<usize>,
    queue: std::collections::VecDeque<Unit>,
}

impl<I: Iterator<Item = Source>> Iterator for Units<I> {
    type Item = Unit;

    fn next(&mut self) -> Option<Unit> {
        if let Some(unit) = self.queue.pop_front() {
            return Some(unit);
        }
        let source = self.sources.next()?;
        let index = self.index;
        self.index += 1;
        self.queue
            .push_back(Unit::Ready(LoadEvent::FileStart(source.name.clone())));
        match source.text {
            Err(err) => self.queue.push_back(Unit::Ready(LoadEvent::FileError(err))),
            Ok(text) => {
                let name: Arc<str> = Arc::from(source.name.as_str());
                let piece_bytes = self
                    .piece_bytes
                    .unwrap_or_else(|| piece_bytes(text.len(), self.threads));
                let cuts = document_cuts(&text, piece_bytes);
                let ends: Vec<usize> = cuts.iter().skip(1).map(|&(at, _)| at).collect();
                for ((start, lines), end) in
                    cuts.into_iter().zip(ends.into_iter().chain([text.len()]))
                {
                    self.queue.push_back(Unit::Piece(Piece {
                        source: index,
                        name: name.clone(),
                        text: text.clone(),
                        start,
                        end,
                        offset: LineOffset(lines),
                    }));
                }
            }
        }
        self.queue.pop_front()
    }
}

/// A unit's outcome, ready to be handed on in order.
enum Done {
    Ready(LoadEvent),
    Piece(Piece, PieceLoaded),
}

/// Hands outcomes to the sink in order, dropping what follows a file's failure.
struct Emitter<F> {
    sink: F,
    /// The source whose remaining pieces are to be ignored.
    failed: Option<usize>,
}

impl<F: FnMut(LoadEvent)> Emitter<F> {
    fn emit(&mut self, done: Done) {
        match done {
            Done::Ready(event) => (self.sink)(event),
            Done::Piece(piece, _) if self.failed == Some(piece.source) => {}
            Done::Piece(piece, PieceLoaded::Syntax(err)) => {
                self.failed = Some(piece.source);
                (self.sink)(LoadEvent::FileError(one_pass_error(&piece, err)));
            }
            Done::Piece(piece, PieceLoaded::Invalid(err)) => {
                self.failed = Some(piece.source);
                // One pass parses the whole text before it converts a document: a syntax
                // error further on is what it reports.
                let err = if piece.end == piece.text.len() {
                    err
                } else {
                    super::check_syntax(&piece.name, &piece.text[piece.start..], piece.offset)
                        .err()
                        .unwrap_or(err)
                };
                (self.sink)(LoadEvent::FileError(err));
            }
            Done::Piece(_, PieceLoaded::Panicked(payload)) => std::panic::resume_unwind(payload),
            Done::Piece(_, PieceLoaded::Parsed(entries)) => {
                for entry in entries {
                    (self.sink)(match entry {
                        Ok(document) => LoadEvent::Document(Box::new(document)),
                        Err(err) => LoadEvent::DocumentError(err),
                    });
                }
            }
        }
    }
}

/// The syntax error exactly as one pass over the whole text reports it. A piece ends where the
/// text does not, which can move an error (an unclosed bracket is reported where the text goes
/// on, not at the piece's end); the pieces before parsed, so reading on from this piece's start
/// is what one pass does. Nothing is kept while reading on.
fn one_pass_error(piece: &Piece, piece_error: LoadError) -> LoadError {
    if piece.end == piece.text.len() {
        return piece_error;
    }
    let rest = &piece.text[piece.start..];
    super::check_syntax(&piece.name, rest, piece.offset)
        .err()
        .unwrap_or(piece_error)
}

/// Loads `sources` on `threads` threads, cutting texts into pieces (of about `piece_bytes` when
/// given, else of a size chosen per text), handing every event to `sink` in input order.
pub(crate) fn run<I, F>(
    sources: I,
    piece_bytes: Option<usize>,
    options: &LoadOptions,
    threads: usize,
    sink: F,
) where
    I: Iterator<Item = Source>,
    F: FnMut(LoadEvent),
{
    let units = Units {
        sources,
        index: 0,
        threads,
        piece_bytes,
        queue: std::collections::VecDeque::new(),
    };
    let mut emitter = Emitter { sink, failed: None };
    // Even alone, pieces are parsed on a worker thread: its stack is sized for the deepest
    // nesting the parser's budget lets through, whatever the caller's stack (a test's or an
    // async runtime's threads have 2 MiB).
    run_on_threads(units, options, threads.max(1), &mut emitter);
}

/// The stack of the threads that parse: the parser and the tree's visitor recurse once per
/// level of nesting (at most 64 levels, the parser's budget), with large frames in unoptimised
/// builds. Only the pages used are ever touched.
const WORKER_STACK_BYTES: usize = 64 << 20;

/// The pipeline: the calling thread reads sources and hands pieces to `threads` workers, keeping
/// at most a few pieces in flight, and passes their outcomes on in input order.
fn run_on_threads<I, F>(
    mut units: Units<I>,
    options: &LoadOptions,
    threads: usize,
    emitter: &mut Emitter<F>,
) where
    I: Iterator<Item = Source>,
    F: FnMut(LoadEvent),
{
    let window = threads * 2 + 1;
    let (job_tx, job_rx) = mpsc::channel::<(usize, Piece)>();
    let job_rx = Mutex::new(job_rx);
    let (done_tx, done_rx) = mpsc::channel::<(usize, Piece, PieceLoaded)>();
    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(threads);
        for _ in 0..threads {
            let done_tx = done_tx.clone();
            let job_rx = &job_rx;
            let spawned = std::thread::Builder::new()
                .name("allot-load".to_string())
                .stack_size(WORKER_STACK_BYTES)
                .spawn_scoped(scope, move || {
                    loop {
                        let job = match job_rx.lock() {
                            Ok(receiver) => receiver.recv(),
                            Err(_) => return,
                        };
                        let Ok((seq, piece)) = job else { return };
                        // A panic is handed back, so that the calling thread, which waits for this
                        // piece, raises it instead of waiting forever.
                        let loaded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            load_piece(&piece, options)
                        }))
                        .unwrap_or_else(PieceLoaded::Panicked);
                        if done_tx.send((seq, piece, loaded)).is_err() {
                            return;
                        }
                    }
                });
            // A thread that cannot start (no memory for its stack) is done without; with none,
            // the pieces are parsed here.
            handles.extend(spawned.ok());
        }
        let workers = handles.len();
        drop(done_tx);
        let mut pending: BTreeMap<usize, Done> = BTreeMap::new();
        let (mut next_seq, mut next_emit, mut exhausted) = (0usize, 0usize, false);
        loop {
            while !exhausted && next_seq - next_emit < window {
                match units.next() {
                    None => exhausted = true,
                    Some(Unit::Ready(event)) => {
                        pending.insert(next_seq, Done::Ready(event));
                        next_seq += 1;
                    }
                    Some(Unit::Piece(piece)) if workers == 0 => {
                        let loaded = load_piece(&piece, options);
                        pending.insert(next_seq, Done::Piece(piece, loaded));
                        next_seq += 1;
                    }
                    Some(Unit::Piece(piece)) => {
                        // The workers outlive the sender; a send cannot fail while they run.
                        let _ = job_tx.send((next_seq, piece));
                        next_seq += 1;
                    }
                }
            }
            while let Some(done) = pending.remove(&next_emit) {
                emitter.emit(done);
                next_emit += 1;
            }
            if next_emit == next_seq && exhausted {
                break;
            }
            if next_seq - next_emit < window && !exhausted {
                continue;
            }
            match done_rx.recv() {
                Ok((seq, piece, loaded)) => {
                    pending.insert(seq, Done::Piece(piece, loaded));
                }
                // Every worker stopped early: a worker panicked, which the scope re-raises.
                Err(_) => break,
            }
        }
        drop(job_tx);
        // Joined here, not left to the scope: the scope returns once each worker's closure has
        // returned, while the thread itself may still be tearing down (its thread-locals and its
        // handle), which a leak checker running right after (the fuzz targets') sees as leaked.
        for handle in handles {
            if let Err(panic) = handle.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
}

/// Where `text` may be cut into pieces of about `piece_bytes` that parse on their own: the
/// start of a line `---` (a document marker, which YAML forbids inside any content), with the
/// number of lines before it. The first cut is the start of the text. A marker right after a
/// directive (`%YAML`, `%TAG`, which belong to the document after them) is not a cut.
pub(crate) fn document_cuts(text: &str, piece_bytes: usize) -> Vec<(usize, u32)> {
    let mut cuts = vec![(0, 0)];
    if text.len() <= piece_bytes {
        return cuts;
    }
    let bytes = text.as_bytes();
    let (mut at, mut lines) = (0usize, 0u32);
    let mut search = piece_bytes;
    while search < text.len() {
        // A byte offset may fall inside a character: search from the next character.
        while !text.is_char_boundary(search) {
            search += 1;
        }
        let Some(found) = text[search..].find("\n---") else {
            break;
        };
        let start = search + found + 1;
        let marker_ends = matches!(
            bytes.get(start + 3),
            None | Some(b' ' | b'\t' | b'\r' | b'\n')
        );
        if marker_ends && !after_directive(&text[at..start]) {
            lines += count_lines(&bytes[at..start]);
            at = start;
            cuts.push((at, lines));
            search = start + piece_bytes;
        } else {
            search = start + 3;
        }
    }
    cuts
}

/// Whether the last line of `before` that is neither blank nor a comment is a directive.
fn after_directive(before: &str) -> bool {
    before
        .lines()
        .rev()
        .map(str::trim_end)
        .find(|line| !line.is_empty() && !line.starts_with('#'))
        .is_some_and(|line| line.starts_with('%'))
}

/// The line breaks of `bytes` as YAML counts them (and the parser reports lines by): `\n`,
/// `\r\n` as one, and a lone `\r`.
pub(crate) fn count_lines(bytes: &[u8]) -> u32 {
    let breaks = bytes
        .iter()
        .enumerate()
        .filter(|&(i, &b)| b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n')))
        .count();
    u32::try_from(breaks).unwrap_or(u32::MAX)
}

/// Where the line holding the end of `bytes` starts: after its last line break.
pub(crate) fn last_line_start(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .rposition(|&b| b == b'\n' || b == b'\r')
        .map_or(0, |i| i + 1)
}

#[cfg(test)]
mod cut_tests {
    use super::document_cuts;

    #[test]
    fn a_piece_size_inside_a_character_does_not_panic() {
        // '胘' is three bytes (3..6): a piece size of 4 falls inside it.
        let text = "a: 胘\n---\nb: 1\n";
        let cuts = document_cuts(text, 4);
        assert_eq!(cuts[0], (0, 0));
        assert!(cuts.iter().all(|(at, _)| text.is_char_boundary(*at)));
        assert_eq!(cuts.len(), 2, "{cuts:?}");
    }

    #[test]
    fn a_lone_carriage_return_is_a_line_as_the_parser_counts_it() {
        // Lines: "a: 1", "b: 2", "---", "c: 3" (the first break is a lone CR).
        let text = "a: 1\rb: 2\n---\nc: 3\n";
        assert_eq!(document_cuts(text, 1), vec![(0, 0), (10, 2)]);
        assert_eq!(super::count_lines(b"a\r\nb\rc\n"), 3);
        assert_eq!(super::last_line_start(b"a\r\nb\rc"), 5);
    }
}
