//! Device metadata files in the KEP-5304 layout, as the DRA kubelet plugin library writes them
//! while preparing a claim.
//!
//! One file per claim, top-level request and driver:
//! `resourceclaims/<claim>/<request>/<driver>-metadata.json` for a claim the pod names,
//! `resourceclaimtemplates/<podClaimName>/<request>/<driver>-metadata.json` for a claim
//! generated from a template. A file is a stream of `DeviceMetadata` objects, one per
//! configured API version, newest first; `metadata.generation` starts at 1 and grows with each
//! change of the content.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use allot_api::resource::v1::{Device, ResourceClaim};

/// `metadata.resource.k8s.io/v1beta1`, required in every stream.
pub const METADATA_API_V1BETA1: &str = "metadata.resource.k8s.io/v1beta1";
/// `metadata.resource.k8s.io/v1alpha1`, for older consumers.
pub const METADATA_API_V1ALPHA1: &str = "metadata.resource.k8s.io/v1alpha1";

/// The directory inside containers the files appear under.
pub const CONTAINER_DIR: &str = "/var/run/kubernetes.io/dra-device-attributes";

/// The file's path relative to [`CONTAINER_DIR`].
pub(crate) fn relative_path(
    claim_name: &str,
    pod_claim_name: Option<&str>,
    request: &str,
    driver: &str,
) -> PathBuf {
    let mut path = PathBuf::new();
    match pod_claim_name {
        Some(pod_claim) => {
            path.push("resourceclaimtemplates");
            path.push(pod_claim);
        }
        None => {
            path.push("resourceclaims");
            path.push(claim_name);
        }
    }
    path.push(request);
    path.push(format!("{driver}-metadata.json"));
    path
}

/// One device's entry in a metadata object.
pub(crate) struct MetadataDevice<'a> {
    /// The full request name (`<request>` or `<request>/<subrequest>`).
    pub request: &'a str,
    /// The pool.
    pub pool: &'a str,
    /// The device name.
    pub name: &'a str,
    /// The device as its slice lists it, when the slice is known.
    pub device: Option<&'a Device>,
    /// Network data from the claim's `status.devices`, when the driver reported some.
    pub network_data: Option<serde_json::Value>,
}

/// The `DeviceMetadata` content of one file, without `apiVersion`, `kind` and generation:
/// what is compared to decide whether the generation grows.
pub(crate) fn content(
    claim: &ResourceClaim,
    pod_claim_name: Option<&str>,
    driver: &str,
    devices: &[MetadataDevice<'_>],
) -> serde_json::Value {
    // Requests in the order of their first device, as the allocation lists them.
    let mut requests: Vec<(String, Vec<serde_json::Value>)> = Vec::new();
    for d in devices {
        let mut entry = serde_json::Map::new();
        entry.insert("driver".into(), driver.into());
        entry.insert("pool".into(), d.pool.into());
        entry.insert("name".into(), d.name.into());
        if let Some(device) = d.device.filter(|dev| !dev.attributes.is_empty()) {
            let attributes: serde_json::Map<String, serde_json::Value> = device
                .attributes
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or_default()))
                .collect();
            entry.insert("attributes".into(), serde_json::Value::Object(attributes));
        }
        if let Some(net) = &d.network_data {
            entry.insert("networkData".into(), net.clone());
        }
        match requests.iter_mut().find(|(name, _)| name == d.request) {
            Some((_, list)) => list.push(serde_json::Value::Object(entry)),
            None => requests.push((
                d.request.to_string(),
                vec![serde_json::Value::Object(entry)],
            )),
        }
    }
    let mut meta = serde_json::Map::new();
    meta.insert("name".into(), claim.metadata.name.clone().into());
    meta.insert("namespace".into(), claim.metadata.namespace.clone().into());
    meta.insert("uid".into(), claim.metadata.uid.clone().into());
    let mut object = serde_json::Map::new();
    object.insert("metadata".into(), serde_json::Value::Object(meta));
    if let Some(pod_claim) = pod_claim_name {
        object.insert("podClaimName".into(), pod_claim.into());
    }
    object.insert(
        "requests".into(),
        requests
            .into_iter()
            .map(|(name, devices)| serde_json::json!({"name": name, "devices": devices}))
            .collect(),
    );
    serde_json::Value::Object(object)
}

/// The file's bytes: one object per version, each on its own lines, with `kind`,
/// `apiVersion` and the generation filled in.
pub(crate) fn render(content: &serde_json::Value, generation: i64, versions: &[String]) -> Vec<u8> {
    // One object serves every version: only `apiVersion` differs between them (the map keeps
    // its keys in insertion order, so replacing the value keeps the field's place).
    let mut object = serde_json::Map::new();
    object.insert("kind".into(), "DeviceMetadata".into());
    object.insert("apiVersion".into(), serde_json::Value::Null);
    if let serde_json::Value::Object(fields) = content {
        for (k, v) in fields {
            let mut v = v.clone();
            if k == "metadata"
                && let serde_json::Value::Object(meta) = &mut v
            {
                meta.insert("generation".into(), generation.into());
            }
            object.insert(k.clone(), v);
        }
    }
    let mut object = serde_json::Value::Object(object);
    let mut out = Vec::new();
    for version in versions {
        object["apiVersion"] = version.as_str().into();
        if serde_json::to_writer_pretty(&mut out, &object).is_err() {
            continue;
        }
        out.push(b'\n');
    }
    out
}

/// Generations of the files of prepared claims: per file, the last content written, its
/// generation and its bytes (so that an unchanged file is not rendered again).
#[derive(Debug, Clone, Default)]
pub(crate) struct Generations {
    files: BTreeMap<(String, PathBuf), (i64, serde_json::Value, Vec<u8>)>,
}

impl Generations {
    /// The bytes of the file `path` of the claim with uid `claim_uid` holding `content`, in
    /// `versions`: generation 1 at first, one more whenever the content changed.
    pub fn bytes(
        &mut self,
        claim_uid: &str,
        path: &Path,
        content: serde_json::Value,
        versions: &[String],
    ) -> &[u8] {
        let key = (claim_uid.to_string(), path.to_path_buf());
        let entry = self
            .files
            .entry(key)
            .or_insert((0, serde_json::Value::Null, Vec::new()));
        if entry.0 == 0 || entry.1 != content {
            entry.0 += 1;
            entry.2 = render(&content, entry.0, versions);
            entry.1 = content;
        }
        &entry.2
    }

    /// Forgets the files of an unprepared claim.
    pub fn forget(&mut self, claim_uid: &str) {
        self.files.retain(|(uid, _), _| uid != claim_uid);
    }
}
