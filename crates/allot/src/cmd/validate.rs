//! `allot validate -f FILE|DIR|-... [-R] [-o text|json|yaml]`: parse, default and validate
//! manifests as the API server would; exit 0 when every document is valid, 2 otherwise (the
//! input is at fault: a file that cannot be read or parsed, or an object the API server would
//! reject), with one line per error: `FILE:LINE: KIND NAMESPACE/NAME: FIELD.PATH: message`.
//! The same objects make `allot simulate` exit 2.

use std::collections::BTreeMap;
use std::path::PathBuf;

use allot_api::core::v1::Namespace;
use allot_api::defaults::default_object;
use allot_api::load::{Document, LoadError, LoadEvent, LoadOptions, Object, load_stream};
use allot_api::resource::v1::ResourceClaimSpec;
use allot_validation::{DraCel, FieldError, admit_admin_access, validate_object};
use serde::Serialize;

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// One line per error.
    Text,
    /// A JSON list of error records.
    Json,
    /// The same list as YAML.
    Yaml,
}

/// Validate manifests (files or directories) as the Kubernetes API server would.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Files or directories (their .yaml, .yml and .json files) to validate; `-` reads
    /// standard input.
    #[arg(short = 'f', long = "filename", required = true, num_args = 1.., value_name = "FILE|DIR|-")]
    pub files: Vec<PathBuf>,
    /// Read the directories given with -f recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    pub output: Output,
    /// The largest file read, in bytes or as a quantity (`512Mi`, `2G`); default 1Gi, or
    /// ALLOT_MAX_INPUT_BYTES. A larger file is an input error (exit 2).
    #[arg(long = "max-input-bytes", value_parser = parse_max_input_bytes)]
    pub max_input_bytes: Option<u64>,
}

fn parse_max_input_bytes(text: &str) -> Result<u64, String> {
    allot_api::load::parse_byte_count(text)
        .ok_or_else(|| format!("{text:?} is not a byte count (e.g. 1073741824, 512Mi or 2G)"))
}

/// One error, as printed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Record {
    /// The file.
    pub file: String,
    /// The line of the offending field (or of the document).
    pub line: u32,
    /// The object's kind (empty for syntax errors).
    pub kind: String,
    /// The object's namespace.
    pub namespace: String,
    /// The object's name.
    pub name: String,
    /// The field path (empty when the error is about the document).
    pub field: String,
    /// The message, e.g. `Invalid value: 0: must be greater than zero`.
    pub message: String,
}

impl Record {
    fn text(&self) -> String {
        let object = match (self.namespace.is_empty(), self.name.is_empty()) {
            (_, true) => String::new(),
            (true, false) => self.name.clone(),
            (false, false) => format!("{}/{}", self.namespace, self.name),
        };
        // An error about a whole file (it cannot be read) has no line.
        let mut out = if self.line == 0 {
            format!("{}:", self.file)
        } else {
            format!("{}:{}:", self.file, self.line)
        };
        if !self.kind.is_empty() {
            out.push(' ');
            out.push_str(&self.kind);
            if !object.is_empty() {
                out.push(' ');
                out.push_str(&object);
            }
            out.push(':');
        }
        if !self.field.is_empty() {
            out.push(' ');
            out.push_str(&self.field);
            out.push(':');
        }
        out.push(' ');
        // One line per error: multi-line messages (CEL snippets) are joined.
        let message: Vec<&str> = self.message.lines().map(str::trim_end).collect();
        out.push_str(&message.join(" "));
        out
    }
}

fn split_object(object: &str) -> (String, String) {
    match object.split_once('/') {
        Some((namespace, name)) => (namespace.to_string(), name.to_string()),
        None => (String::new(), object.to_string()),
    }
}

fn load_error_record(err: &LoadError) -> Record {
    let (namespace, name) = split_object(err.object());
    Record {
        file: err.file().to_string(),
        line: err.line(),
        kind: err.kind().to_string(),
        namespace,
        name,
        field: err.field().to_string(),
        message: err.detail(),
    }
}

fn field_error_record(document: &Document, error: &FieldError) -> Record {
    Record {
        file: document.raw.file.clone(),
        line: document.raw.line_of(&error.path),
        kind: document.raw.kind.clone(),
        namespace: document.raw.namespace().to_string(),
        name: document.raw.name().to_string(),
        field: error.path.clone(),
        message: error.message(),
    }
}

/// What checking gave: the documents checked and every problem.
pub struct Checked {
    /// Documents loaded.
    pub documents: usize,
    /// Every problem, in input order.
    pub records: Vec<Record>,
    /// Documents converted from an older version, by kind and apiVersion.
    pub conversions: BTreeMap<(String, String), usize>,
}

/// Loads, defaults and validates; returns the records of every problem, in input order.
///
/// Documents stream past: each is validated and dropped as soon as it is loaded, so memory is
/// one file's text and the problems found, whatever the number of documents. A file's problems
/// are kept aside until the file is read to its end, as a syntax error anywhere in it replaces
/// them. Claims asking for admin access wait for the end, when every Namespace is known.
pub fn check(files: &[PathBuf], options: &LoadOptions) -> Checked {
    let mut checker = Checker::default();
    load_stream(files, options, |event| checker.push(event));
    checker.finish()
}

/// What one file gave so far; kept only if the file is read to its end.
#[derive(Default)]
struct FileChecks {
    documents: usize,
    records: Vec<Record>,
    namespaces: Vec<Namespace>,
    admin_access: Vec<PendingAdminAccess>,
}

/// A claim or claim template that asks for admin access: whether it may depends on its
/// namespace, which can come later in the input. Only what the check needs is kept (not the
/// document, whose tree and line map are many times larger), with the records that the check
/// gives when the namespace is known and not labelled for admin access.
struct PendingAdminAccess {
    namespace: String,
    spec: ResourceClaimSpec,
    spec_path: &'static str,
    refused: Vec<Record>,
}

impl PendingAdminAccess {
    fn of(document: &Document) -> Option<Self> {
        let (spec, spec_path) = match &document.object {
            Object::ResourceClaim(claim) => (&claim.spec, "spec"),
            Object::ResourceClaimTemplate(template) => (&template.spec.spec, "spec.spec"),
            _ => return None,
        };
        admin_access_index(spec)?;
        let namespace = match document.raw.namespace() {
            "" => "default",
            other => other,
        }
        .to_string();
        let mut unlabelled = Namespace::default();
        unlabelled.metadata.name.clone_from(&namespace);
        let unlabelled = BTreeMap::from([(namespace.clone(), unlabelled)]);
        let refused = admit_admin_access(spec, &namespace, spec_path, &unlabelled)
            .iter()
            .map(|e| field_error_record(document, e))
            .collect();
        Some(Self {
            namespace,
            spec: spec.clone(),
            spec_path,
            refused,
        })
    }
}

#[derive(Default)]
struct Checker {
    done: FileChecks,
    current: FileChecks,
    conversions: BTreeMap<(String, String), usize>,
}

impl Checker {
    fn push(&mut self, event: LoadEvent) {
        match event {
            LoadEvent::FileStart(_) => self.commit(),
            LoadEvent::FileError(err) => {
                self.current = FileChecks::default();
                self.done.records.push(load_error_record(&err));
            }
            LoadEvent::DocumentError(err) => self.current.records.push(load_error_record(&err)),
            LoadEvent::Document(document) => self.document(*document),
        }
    }

    fn document(&mut self, mut document: Document) {
        self.current.documents += 1;
        allot_api::versions::count_converted(&mut self.conversions, &document);
        if let Object::Namespace(ns) = &document.object {
            self.current.namespaces.push(ns.clone());
        }
        default_object(&mut document.object);
        let errors = validate_object(&document.object, &DraCel);
        self.current
            .records
            .extend(errors.iter().map(|e| field_error_record(&document, e)));
        if let Some(pending) = PendingAdminAccess::of(&document) {
            self.current.admin_access.push(pending);
        }
    }

    fn commit(&mut self) {
        let current = std::mem::take(&mut self.current);
        self.done.documents += current.documents;
        self.done.records.extend(current.records);
        self.done.namespaces.extend(current.namespaces);
        self.done.admin_access.extend(current.admin_access);
    }

    fn finish(mut self) -> Checked {
        self.commit();
        let FileChecks {
            documents,
            mut records,
            namespaces,
            admin_access,
        } = self.done;
        let namespaces: BTreeMap<String, Namespace> = namespaces
            .into_iter()
            .map(|ns| (ns.metadata.name.clone(), ns))
            .collect();
        for pending in admin_access {
            let refused = admit_admin_access(
                &pending.spec,
                &pending.namespace,
                pending.spec_path,
                &namespaces,
            );
            if !refused.is_empty() {
                records.extend(pending.refused);
            }
        }
        records.sort_by(|a, b| {
            a.file
                .cmp(&b.file)
                .then(a.line.cmp(&b.line))
                .then_with(|| a.field.cmp(&b.field))
                .then_with(|| a.message.cmp(&b.message))
        });
        Checked {
            documents,
            records,
            conversions: self.conversions,
        }
    }
}

/// The first request of a claim spec that asks for admin access.
fn admin_access_index(spec: &ResourceClaimSpec) -> Option<usize> {
    spec.devices.requests.iter().position(|r| {
        r.exactly
            .as_ref()
            .is_some_and(|e| e.admin_access == Some(true))
    })
}

/// Runs the command.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let mut options = LoadOptions::default();
    if let Some(limit) = args.max_input_bytes {
        options.max_file_bytes = limit;
        options.settings_error = None;
    }
    // `-R` and `-` as every command reads them; standard input is read by the loader, under
    // the same size limit as a file.
    let paths: Vec<PathBuf> = crate::files::Files::new(args.files, args.recursive)
        .sources()?
        .into_iter()
        .map(|source| match source {
            crate::files::Source::Stdin => PathBuf::from("-"),
            crate::files::Source::Path(path) => path,
        })
        .collect();
    let Checked {
        documents,
        records,
        conversions,
    } = check(&paths, &options);
    if let Some(note) = allot_api::versions::note_for(&conversions) {
        elog!("allot validate: {note}");
    }
    match args.output {
        Output::Json => crate::out::print_json(&records)?,
        Output::Yaml => crate::out::print_yaml(&records)?,
        Output::Text => {
            let mut out = String::new();
            for record in &records {
                out.push_str(&record.text());
                out.push('\n');
            }
            crate::out::print(&out)?;
        }
    }
    if args.output == Output::Text {
        let documents = crate::out::count(documents, "document", "documents");
        if records.is_empty() {
            elog!("{documents} valid");
        } else {
            let errors = crate::out::count(records.len(), "error", "errors");
            elog!("{errors} in {documents}");
        }
    }
    // Whatever the problem (a file that cannot be read or parsed, an invalid object), the
    // input is at fault: exit 2.
    Ok(if records.is_empty() { 0 } else { 2 })
}
