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
use std::collections::btree_map::Entry;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use allot_api::resource::v1::{Device, NetworkDeviceData, ResourceClaim};
use serde::ser::{Serialize, SerializeSeq, SerializeStruct, Serializer};

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
    pub network_data: Option<&'a NetworkDeviceData>,
}

/// What a metadata file says about one claim, request and driver, without `apiVersion`:
/// serialized straight into the file's bytes (field order as upstream's `DeviceMetadata`).
pub(crate) struct Content<'a> {
    claim: &'a ResourceClaim,
    pod_claim_name: Option<&'a str>,
    driver: &'a str,
    devices: &'a [MetadataDevice<'a>],
}

/// The `DeviceMetadata` content of one file: what is compared to decide whether the
/// generation grows.
pub(crate) fn content<'a>(
    claim: &'a ResourceClaim,
    pod_claim_name: Option<&'a str>,
    driver: &'a str,
    devices: &'a [MetadataDevice<'a>],
) -> Content<'a> {
    Content {
        claim,
        pod_claim_name,
        driver,
        devices,
    }
}

/// A whole `DeviceMetadata` object of one version and generation.
struct Object<'a> {
    api_version: &'a str,
    generation: i64,
    content: &'a Content<'a>,
}

impl Serialize for Object<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let c = self.content;
        let fields = if c.pod_claim_name.is_some() { 5 } else { 4 };
        let mut object = serializer.serialize_struct("DeviceMetadata", fields)?;
        object.serialize_field("kind", "DeviceMetadata")?;
        object.serialize_field("apiVersion", self.api_version)?;
        object.serialize_field(
            "metadata",
            &Meta {
                claim: c.claim,
                generation: self.generation,
            },
        )?;
        if let Some(pod_claim) = c.pod_claim_name {
            object.serialize_field("podClaimName", pod_claim)?;
        }
        object.serialize_field("requests", &Requests(c))?;
        object.end()
    }
}

struct Meta<'a> {
    claim: &'a ResourceClaim,
    generation: i64,
}

impl Serialize for Meta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let meta = &self.claim.metadata;
        let mut object = serializer.serialize_struct("ObjectMeta", 4)?;
        object.serialize_field("name", &meta.name)?;
        object.serialize_field("namespace", &meta.namespace)?;
        object.serialize_field("uid", &meta.uid)?;
        object.serialize_field("generation", &self.generation)?;
        object.end()
    }
}

/// Requests in the order of their first device, as the allocation lists them, each with its
/// devices in allocation order.
struct Requests<'a>(&'a Content<'a>);

impl Serialize for Requests<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let devices = self.0.devices;
        let mut names: Vec<&str> = Vec::new();
        for d in devices {
            if !names.contains(&d.request) {
                names.push(d.request);
            }
        }
        let mut list = serializer.serialize_seq(Some(names.len()))?;
        for name in names {
            list.serialize_element(&Request {
                name,
                content: self.0,
            })?;
        }
        list.end()
    }
}

struct Request<'a> {
    name: &'a str,
    content: &'a Content<'a>,
}

impl Serialize for Request<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut object = serializer.serialize_struct("DeviceMetadataRequest", 2)?;
        object.serialize_field("name", self.name)?;
        object.serialize_field("devices", &RequestDevices(self))?;
        object.end()
    }
}

struct RequestDevices<'a>(&'a Request<'a>);

impl Serialize for RequestDevices<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let request = self.0;
        let content = request.content;
        serializer.collect_seq(
            content
                .devices
                .iter()
                .filter(|d| d.request == request.name)
                .map(|d| DeviceEntry {
                    driver: content.driver,
                    device: d,
                }),
        )
    }
}

struct DeviceEntry<'a> {
    driver: &'a str,
    device: &'a MetadataDevice<'a>,
}

impl Serialize for DeviceEntry<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let d = self.device;
        let attributes = d
            .device
            .map(|dev| &dev.attributes)
            .filter(|a| !a.is_empty());
        let mut object = serializer.serialize_struct("DeviceMetadataDevice", 5)?;
        object.serialize_field("driver", self.driver)?;
        object.serialize_field("pool", d.pool)?;
        object.serialize_field("name", d.name)?;
        if let Some(attributes) = attributes {
            object.serialize_field("attributes", attributes)?;
        }
        if let Some(net) = d.network_data {
            object.serialize_field("networkData", net)?;
        }
        object.end()
    }
}

/// How every object of a stream starts, up to its `apiVersion` value.
const OBJECT_PREFIX: &[u8] = b"{\n  \"kind\": \"DeviceMetadata\",\n  \"apiVersion\": ";

/// The file's bytes: one object per version, each on its own lines, with `kind`,
/// `apiVersion` and the generation filled in. The objects differ only in `apiVersion`: the
/// first one is serialized, the others copy it around their own version.
pub(crate) fn render(content: &Content<'_>, generation: i64, versions: &[String]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1024);
    // The first object's bytes and where its apiVersion value sits in them.
    let mut first: Option<(usize, usize, usize, usize)> = None;
    for version in versions {
        let start = out.len();
        if let Some((from, value, value_end, end)) = first {
            out.extend_from_within(from..value);
            if serde_json::to_writer(&mut out, version.as_str()).is_ok() {
                out.extend_from_within(value_end..end);
                out.push(b'\n');
                continue;
            }
            out.truncate(start);
        }
        let object = Object {
            api_version: version,
            generation,
            content,
        };
        if serde_json::to_writer_pretty(&mut out, &object).is_err() {
            out.truncate(start);
            continue;
        }
        if first.is_none() {
            let value = start + OBJECT_PREFIX.len();
            let quoted = serde_json::to_vec(version.as_str()).unwrap_or_default();
            let value_end = value + quoted.len();
            if out.get(start..value) == Some(OBJECT_PREFIX)
                && out.get(value..value_end) == Some(quoted.as_slice())
            {
                first = Some((start, value, value_end, out.len()));
            }
        }
        out.push(b'\n');
    }
    out
}

/// Generations of the files of prepared claims: per file, its generation and its bytes (which
/// hold the content the generation was last counted for).
#[derive(Debug, Clone, Default)]
pub(crate) struct Generations {
    files: BTreeMap<FileKey, (i64, Arc<[u8]>)>,
}

/// A file of a prepared claim: the claim's uid and the file's relative path.
type FileKey = (String, PathBuf);

impl Generations {
    /// The bytes of the file `path` of the claim with uid `claim_uid` holding `content`, in
    /// `versions`: generation 1 at first, one more whenever the content changed.
    pub fn bytes(
        &mut self,
        claim_uid: &str,
        path: &Path,
        content: &Content<'_>,
        versions: &[String],
    ) -> Arc<[u8]> {
        let key = (claim_uid.to_string(), path.to_path_buf());
        match self.files.entry(key) {
            Entry::Vacant(entry) => entry
                .insert((1, render(content, 1, versions).into()))
                .1
                .clone(),
            Entry::Occupied(mut entry) => {
                let (generation, bytes) = entry.get_mut();
                // The same content renders to the same bytes at the same generation.
                let now = render(content, *generation, versions);
                if *now != **bytes {
                    *generation += 1;
                    *bytes = render(content, *generation, versions).into();
                }
                bytes.clone()
            }
        }
    }

    /// Forgets the files of an unprepared claim.
    pub fn forget(&mut self, claim_uid: &str) {
        self.files.retain(|(uid, _), _| uid != claim_uid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allot_api::resource::v1::DeviceAttribute;

    /// A stream of several versions is the objects rendered one version at a time, in order
    /// (the later objects are copied from the first around their own apiVersion).
    #[test]
    fn each_version_renders_as_if_alone() {
        let mut claim = ResourceClaim::default();
        claim.metadata.name = "pod-0-gpu-x7k2m".into();
        claim.metadata.namespace = "team \"a\"".into();
        claim.metadata.uid = "0001".into();
        let mut device = Device {
            name: "gpu-0".into(),
            ..Device::default()
        };
        device.attributes.insert(
            "model".into(),
            DeviceAttribute {
                string_value: Some("A100 \u{e9}".into()),
                ..DeviceAttribute::default()
            },
        );
        let devices = [
            MetadataDevice {
                request: "gpu",
                pool: "node-0",
                name: "gpu-0",
                device: Some(&device),
                network_data: None,
            },
            MetadataDevice {
                request: "gpu/small",
                pool: "node-0",
                name: "gpu-1",
                device: None,
                network_data: None,
            },
        ];
        let versions = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        for pod_claim in [None, Some("gpu")] {
            let c = content(&claim, pod_claim, "gpu.example.com", &devices);
            for list in [
                versions(&[METADATA_API_V1BETA1, METADATA_API_V1ALPHA1]),
                versions(&[METADATA_API_V1ALPHA1, METADATA_API_V1BETA1, "x\"y"]),
                versions(&[METADATA_API_V1BETA1]),
            ] {
                let one_by_one: Vec<u8> = list
                    .iter()
                    .flat_map(|v| render(&c, 3, std::slice::from_ref(v)))
                    .collect();
                let together = render(&c, 3, &list);
                assert_eq!(
                    String::from_utf8(together).unwrap(),
                    String::from_utf8(one_by_one).unwrap()
                );
            }
        }
    }
}
