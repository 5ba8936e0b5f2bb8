//! `allot validate -f FILE|DIR|-... [-R] [-o text|json|yaml]`: parse, default and validate
//! manifests as the API server would; exit 0 when every document is valid, 2 otherwise (the
//! input is at fault: a file that cannot be read or parsed, or an object the API server would
//! reject), with one line per error: `FILE:LINE: KIND NAMESPACE/NAME: FIELD.PATH: message`.
//! The same objects make `allot simulate` exit 2.

use std::collections::BTreeMap;
use std::path::PathBuf;

use allot_api::core::v1::Namespace;
use allot_api::defaults::default_object;
use allot_api::load::{Document, LoadError, LoadOptions, Loaded, Object};
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
        let mut out = format!("{}:{}:", self.file, self.line);
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
    let mut record = Record {
        file: err.file().to_string(),
        line: err.line(),
        kind: String::new(),
        namespace: String::new(),
        name: String::new(),
        field: String::new(),
        message: String::new(),
    };
    match err {
        LoadError::UnknownField {
            kind, object, path, ..
        } => {
            (record.namespace, record.name) = split_object(object);
            record.kind = kind.clone();
            record.field = path.clone();
            record.message = "unknown field".to_string();
        }
        LoadError::InvalidField {
            kind,
            object,
            path,
            message,
            ..
        } => {
            (record.namespace, record.name) = split_object(object);
            record.kind = kind.clone();
            record.field = path.clone();
            record.message = message.clone();
        }
        LoadError::DuplicateField { kind, path, .. } => {
            record.kind = kind.clone();
            record.field = path.clone();
            record.message = "duplicate field".to_string();
        }
        LoadError::Io { message, .. }
        | LoadError::Syntax { message, .. }
        | LoadError::NotAnObject { message, .. } => record.message = message.clone(),
        LoadError::UnknownKind {
            api_version, kind, ..
        } => {
            record.message =
                format!("no kind \"{kind}\" is registered for version \"{api_version}\"")
        }
    }
    record
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

/// Defaults and validates what was loaded; returns the number of documents and the records
/// of every problem, in input order.
pub fn check(mut loaded: Loaded) -> (usize, Vec<Record>) {
    let mut records: Vec<Record> = loaded.errors.iter().map(load_error_record).collect();
    let namespaces: BTreeMap<String, Namespace> = loaded
        .documents
        .iter()
        .filter_map(|d| match &d.object {
            Object::Namespace(ns) => Some((ns.metadata.name.clone(), ns.clone())),
            _ => None,
        })
        .collect();
    for document in &mut loaded.documents {
        default_object(&mut document.object);
        let mut errors = validate_object(&document.object, &DraCel);
        let namespace = document.raw.namespace();
        let namespace = if namespace.is_empty() {
            "default"
        } else {
            namespace
        };
        match &document.object {
            Object::ResourceClaim(claim) => errors.extend(admit_admin_access(
                &claim.spec,
                namespace,
                "spec",
                &namespaces,
            )),
            Object::ResourceClaimTemplate(template) => errors.extend(admit_admin_access(
                &template.spec.spec,
                namespace,
                "spec.spec",
                &namespaces,
            )),
            _ => {}
        }
        records.extend(errors.iter().map(|e| field_error_record(document, e)));
    }
    records.sort_by(|a, b| {
        a.file
            .cmp(&b.file)
            .then(a.line.cmp(&b.line))
            .then_with(|| a.field.cmp(&b.field))
            .then_with(|| a.message.cmp(&b.message))
    });
    (loaded.documents.len(), records)
}

/// Runs the command.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let files = crate::files::Files::new(args.files, args.recursive);
    let (documents, records) = check(files.load(&LoadOptions::default())?);
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
    Ok(if records.is_empty() { 0 } else { 2 })
}
