//! The bundled examples validate: every YAML example of the spec (examples/spec, one file per
//! example) and the small cluster (examples/cluster), through loading, defaulting, validation
//! with the real CEL environment and the admin-access admission check.

use std::collections::BTreeMap;

use allot_api::core::v1::Namespace;
use allot_api::defaults::default_object;
use allot_api::load::{LoadOptions, Object, load};
use allot_validation::{DraCel, admit_admin_access, validate_object};

fn problems(folder: &str) -> (usize, usize, Vec<String>) {
    let dir = format!("{}/../../examples/{folder}", env!("CARGO_MANIFEST_DIR"));
    let files = std::fs::read_dir(&dir)
        .map(|entries| entries.count())
        .unwrap_or(0);
    let mut loaded = load(&[dir], &LoadOptions::default());
    let mut problems: Vec<String> = loaded.errors.iter().map(ToString::to_string).collect();
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
        if let Object::ResourceClaim(claim) = &document.object {
            errors.extend(admit_admin_access(
                &claim.spec,
                document.raw.namespace(),
                "spec",
                &namespaces,
            ));
        }
        problems.extend(errors.iter().map(|e| {
            format!(
                "{}:{}: {} {}: {e}",
                document.raw.file,
                document.raw.line_of(&e.path),
                document.raw.kind,
                document.raw.object_name()
            )
        }));
    }
    (files, loaded.documents.len(), problems)
}

#[test]
fn every_spec_example_validates() {
    let (files, documents, problems) = problems("spec");
    eprintln!("examples/spec: {files} files, {documents} documents");
    // 28 complete manifests and 6 pod-spec fragments in the spec.
    assert!(
        files >= 34,
        "expected one file per spec example, found {files}"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_example_cluster_validates() {
    let (files, documents, problems) = problems("cluster");
    eprintln!("examples/cluster: {files} files, {documents} documents");
    assert!(documents >= 10);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
