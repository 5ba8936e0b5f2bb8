//! Older API versions of the kinds allot stores: which `(apiVersion, kind)` pairs convert to
//! the storage version, and the conversions both ways.
//!
//! Key design decision: allot keeps one version per kind (its storage version: `resource.k8s.io/v1`
//! for the DRA kinds, `scheduling.k8s.io/v1beta1` for PodGroup) and converts at the edges, as
//! kube-apiserver converts between the versions it serves and the one it stores. Loading
//! ([`crate::load::decode_object`]) turns a document of an older version into the storage
//! version's type; a server answering at an older version turns the stored object back with
//! [`encode_as`]. Each older version with a different shape has its typed module
//! ([`crate::resource::v1beta1`], [`crate::scheduling::v1alpha2`]) with `From`/`TryFrom`
//! conversions; versions with the storage version's shape (`resource.k8s.io/v1beta2`, and
//! DeviceClass at v1beta1) convert by their `apiVersion`. The cost: a document of an older
//! version is decoded twice in the worst case (strictly, as its own version, then converted),
//! and validation errors name the storage version's fields (`...requests[0].exactly.count`),
//! as kube-apiserver's do.

use std::collections::BTreeMap;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::load::{Document, LoadError, Object, RawDocument, decode};
use crate::resource::{v1, v1beta1, v1beta2};
use crate::scheduling::{v1alpha2, v1beta1 as scheduling_v1beta1};

/// How one older `(apiVersion, kind)` converts to the storage version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conversion {
    /// The storage version's shape: only `apiVersion` changes.
    SameShape,
    /// `resource.k8s.io/v1beta1`'s flat requests, `basic` devices and plain slice fields.
    ResourceV1beta1,
    /// `scheduling.k8s.io/v1alpha2` PodGroup, read only (Kubernetes 1.37 does not serve it).
    PodGroupV1alpha2,
}

/// An older version of a stored kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OlderVersion {
    /// The older `apiVersion`.
    pub api_version: &'static str,
    /// The kind.
    pub kind: &'static str,
    /// The storage version it converts to.
    pub storage_version: &'static str,
    /// How.
    pub conversion: Conversion,
    /// Whether Kubernetes 1.37 still serves this version (it may be read from dumps either way).
    pub served: bool,
}

const fn older(
    api_version: &'static str,
    kind: &'static str,
    storage_version: &'static str,
    conversion: Conversion,
    served: bool,
) -> OlderVersion {
    OlderVersion {
        api_version,
        kind,
        storage_version,
        conversion,
        served,
    }
}

/// Every older version allot reads, with how it converts.
pub const OLDER_VERSIONS: &[OlderVersion] = &[
    older(
        v1beta1::API_VERSION,
        "DeviceClass",
        v1::API_VERSION,
        Conversion::SameShape,
        true,
    ),
    older(
        v1beta1::API_VERSION,
        "ResourceClaim",
        v1::API_VERSION,
        Conversion::ResourceV1beta1,
        true,
    ),
    older(
        v1beta1::API_VERSION,
        "ResourceClaimTemplate",
        v1::API_VERSION,
        Conversion::ResourceV1beta1,
        true,
    ),
    older(
        v1beta1::API_VERSION,
        "ResourceSlice",
        v1::API_VERSION,
        Conversion::ResourceV1beta1,
        true,
    ),
    older(
        v1beta2::API_VERSION,
        "DeviceClass",
        v1::API_VERSION,
        Conversion::SameShape,
        true,
    ),
    older(
        v1beta2::API_VERSION,
        "DeviceTaintRule",
        v1::API_VERSION,
        Conversion::SameShape,
        true,
    ),
    older(
        v1beta2::API_VERSION,
        "ResourceClaim",
        v1::API_VERSION,
        Conversion::SameShape,
        true,
    ),
    older(
        v1beta2::API_VERSION,
        "ResourceClaimTemplate",
        v1::API_VERSION,
        Conversion::SameShape,
        true,
    ),
    older(
        v1beta2::API_VERSION,
        "ResourceSlice",
        v1::API_VERSION,
        Conversion::SameShape,
        true,
    ),
    older(
        crate::resource::v1alpha3::API_VERSION,
        "DeviceTaintRule",
        v1::API_VERSION,
        Conversion::SameShape,
        true,
    ),
    older(
        v1alpha2::API_VERSION,
        "PodGroup",
        scheduling_v1beta1::API_VERSION,
        Conversion::PodGroupV1alpha2,
        false,
    ),
];

/// The older version `(api_version, kind)`, if allot reads it.
pub fn older_version(api_version: &str, kind: &str) -> Option<&'static OlderVersion> {
    OLDER_VERSIONS
        .iter()
        .find(|o| o.api_version == api_version && o.kind == kind)
}

/// Decodes a document of an older version (see [`older_version`]) into the storage version's
/// object: strictly as its own version (unknown fields and type errors name that version's
/// paths), then converted. `None` when the document is not of an older version.
pub fn decode_older(raw: &RawDocument) -> Option<Result<Object, LoadError>> {
    let older = older_version(&raw.api_version, &raw.kind)?;
    Some(decode_as(raw, older))
}

fn decode_as(raw: &RawDocument, older: &OlderVersion) -> Result<Object, LoadError> {
    let object = match (older.conversion, older.kind) {
        (Conversion::ResourceV1beta1, "ResourceClaim") => {
            Object::ResourceClaim(decode::<v1beta1::ResourceClaim>(raw)?.into())
        }
        (Conversion::ResourceV1beta1, "ResourceClaimTemplate") => {
            Object::ResourceClaimTemplate(decode::<v1beta1::ResourceClaimTemplate>(raw)?.into())
        }
        (Conversion::ResourceV1beta1, "ResourceSlice") => {
            Object::ResourceSlice(decode::<v1beta1::ResourceSlice>(raw)?.into())
        }
        (Conversion::PodGroupV1alpha2, _) => {
            let group: v1alpha2::PodGroup = decode(raw)?;
            Object::PodGroup(
                scheduling_v1beta1::PodGroup::try_from(group).map_err(|err| {
                    LoadError::InvalidField {
                        file: raw.file.clone(),
                        line: raw.line_of(&err.field),
                        kind: raw.kind.clone(),
                        object: raw.object_name(),
                        path: err.field.clone(),
                        message: err.message.clone(),
                    }
                })?,
            )
        }
        (_, "DeviceClass") => {
            let mut class: v1::DeviceClass = decode(raw)?;
            class.api_version = v1::API_VERSION.into();
            Object::DeviceClass(class)
        }
        (_, "DeviceTaintRule") => {
            let mut rule: v1::DeviceTaintRule = decode(raw)?;
            rule.api_version = v1::API_VERSION.into();
            Object::DeviceTaintRule(rule)
        }
        (_, "ResourceClaim") => {
            let mut claim: v1::ResourceClaim = decode(raw)?;
            claim.api_version = v1::API_VERSION.into();
            Object::ResourceClaim(claim)
        }
        (_, "ResourceClaimTemplate") => {
            let mut template: v1::ResourceClaimTemplate = decode(raw)?;
            template.api_version = v1::API_VERSION.into();
            Object::ResourceClaimTemplate(template)
        }
        (_, "ResourceSlice") => {
            let mut slice: v1::ResourceSlice = decode(raw)?;
            slice.api_version = v1::API_VERSION.into();
            Object::ResourceSlice(slice)
        }
        (_, kind) => {
            return Err(LoadError::UnknownKind {
                file: raw.file.clone(),
                line: raw.line,
                api_version: raw.api_version.clone(),
                kind: kind.to_string(),
                supported: format!(
                    "allot lists {kind} at this version but has no conversion for it"
                ),
            });
        }
    };
    Ok(object)
}

/// Why an object could not be written at an older version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// The version is not one the kind is served at.
    #[error("{kind} is not served at {api_version}")]
    NotServed {
        /// The kind.
        kind: String,
        /// The version asked for.
        api_version: String,
    },
    /// The object does not decode as its storage version (a bug: stored objects do).
    #[error("{kind}: {message}")]
    Invalid {
        /// The kind.
        kind: String,
        /// The decoder's message.
        message: String,
    },
}

/// Writes an object given in its storage version's JSON (`resource.k8s.io/v1`) as the older
/// served version `api_version`, as kube-apiserver answers a request at that version. The
/// `apiVersion` field is set to `api_version`.
pub fn encode_as(kind: &str, object: Value, api_version: &str) -> Result<Value, EncodeError> {
    let older = older_version(api_version, kind)
        .filter(|o| o.served)
        .ok_or_else(|| EncodeError::NotServed {
            kind: kind.to_string(),
            api_version: api_version.to_string(),
        })?;
    let mut out = match (older.conversion, kind) {
        (Conversion::ResourceV1beta1, "ResourceClaim") => {
            convert::<v1::ResourceClaim, v1beta1::ResourceClaim>(kind, object)?
        }
        (Conversion::ResourceV1beta1, "ResourceClaimTemplate") => {
            convert::<v1::ResourceClaimTemplate, v1beta1::ResourceClaimTemplate>(kind, object)?
        }
        (Conversion::ResourceV1beta1, "ResourceSlice") => {
            convert::<v1::ResourceSlice, v1beta1::ResourceSlice>(kind, object)?
        }
        _ => object,
    };
    if let Some(map) = out.as_object_mut() {
        map.insert("apiVersion".into(), Value::String(api_version.to_string()));
    }
    Ok(out)
}

fn convert<From, To>(kind: &str, object: Value) -> Result<Value, EncodeError>
where
    From: DeserializeOwned,
    To: std::convert::From<From> + Serialize,
{
    let invalid = |err: serde_json::Error| EncodeError::Invalid {
        kind: kind.to_string(),
        message: err.to_string(),
    };
    let typed: From = serde_json::from_value(object).map_err(invalid)?;
    serde_json::to_value(To::from(typed)).map_err(invalid)
}

/// How many loaded documents were converted from each older version: `(kind, apiVersion)` to
/// the count, for the note `allot validate` and `allot simulate` print.
pub fn converted_counts(documents: &[Document]) -> BTreeMap<(String, String), usize> {
    let mut counts = BTreeMap::new();
    for document in documents {
        count_converted(&mut counts, document);
    }
    counts
}

/// Counts one document into [`converted_counts`]' map when it was converted (for readers
/// that stream documents and keep none).
pub fn count_converted(counts: &mut BTreeMap<(String, String), usize>, document: &Document) {
    if let Some(older) = older_version(&document.raw.api_version, &document.raw.kind) {
        *counts
            .entry((older.kind.to_string(), older.api_version.to_string()))
            .or_insert(0) += 1;
    }
}

/// The note for [`converted_counts`]: `converted on load: 2 ResourceClaim
/// resource.k8s.io/v1beta1 → resource.k8s.io/v1, ...`, or `None` when nothing was converted.
pub fn conversion_note(documents: &[Document]) -> Option<String> {
    note_for(&converted_counts(documents))
}

/// The note for counts gathered with [`count_converted`].
pub fn note_for(counts: &BTreeMap<(String, String), usize>) -> Option<String> {
    if counts.is_empty() {
        return None;
    }
    let parts: Vec<String> = counts
        .iter()
        .map(|((kind, api_version), count)| {
            let to = older_version(api_version, kind).map_or("", |o| o.storage_version);
            format!("{count} {kind} {api_version} → {to}")
        })
        .collect();
    Some(format!("converted on load: {}", parts.join(", ")))
}

#[cfg(test)]
mod tests;
