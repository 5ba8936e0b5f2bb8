//! Rules of the kinds allot serves and stores but does not interpret (ServiceAccount, Secret,
//! ConfigMap, Endpoints, ResourceQuota, LimitRange, PodTemplate, EndpointSlice,
//! HorizontalPodAutoscaler, CertificateSigningRequest, ValidatingAdmissionPolicy and its
//! binding, ServiceCIDR, IPAddress): their metadata, and the data keys of Secrets and
//! ConfigMaps, which upstream checks on every write. Their opaque specs are not validated.

use std::collections::BTreeMap;

use allot_api::load::Object;
use allot_api::meta::v1::ObjectMeta;

use crate::field::{FieldError, key};
use crate::meta::{name_is_dns_subdomain, validate_object_meta};

/// The largest total size of a Secret's or ConfigMap's data.
const MAX_DATA_SIZE: usize = 1024 * 1024;

/// Create validation of the uninterpreted kinds; empty for any other kind.
pub fn validate_object(object: &Object) -> Vec<FieldError> {
    let meta = |m: &ObjectMeta, namespaced: bool| {
        validate_object_meta(m, namespaced, name_is_dns_subdomain, "metadata")
    };
    match object {
        Object::ServiceAccount(o) => meta(&o.metadata, true),
        Object::Secret(o) => {
            let mut errs = meta(&o.metadata, true);
            errs.extend(validate_data(&o.data, "data", true));
            errs
        }
        Object::ConfigMap(o) => {
            let mut errs = meta(&o.metadata, true);
            errs.extend(validate_data(&o.data, "data", false));
            errs.extend(validate_data(&o.binary_data, "binaryData", true));
            for k in o.binary_data.keys() {
                if o.data.contains_key(k) {
                    errs.push(FieldError::invalid(
                        &key("binaryData", k),
                        k,
                        "duplicate of key present in data",
                    ));
                }
            }
            errs
        }
        Object::Endpoints(o) => meta(&o.metadata, true),
        Object::ResourceQuota(o) => meta(&o.metadata, true),
        Object::LimitRange(o) => meta(&o.metadata, true),
        Object::PodTemplate(o) => {
            let mut errs = meta(&o.metadata, true);
            errs.extend(crate::kinds::validate_pod_template_spec(
                &o.template,
                "template",
            ));
            errs
        }
        Object::EndpointSlice(o) => meta(&o.metadata, true),
        Object::HorizontalPodAutoscaler(o) => meta(&o.metadata, true),
        Object::CertificateSigningRequest(o) => meta(&o.metadata, false),
        Object::ValidatingAdmissionPolicy(o) => meta(&o.metadata, false),
        Object::ValidatingAdmissionPolicyBinding(o) => meta(&o.metadata, false),
        Object::ServiceCIDR(o) => meta(&o.metadata, false),
        Object::IPAddress(o) => {
            let mut errs = validate_object_meta(
                &o.metadata,
                false,
                crate::rbac::name_is_path_segment,
                "metadata",
            );
            let name = &o.metadata.name;
            if !name.is_empty() && name.parse::<std::net::IpAddr>().is_err() {
                errs.push(FieldError::invalid(
                    "metadata.name",
                    name,
                    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                ));
            }
            errs
        }
        _ => Vec::new(),
    }
}

/// `IsConfigMapKey` for each key, base64 values where `binary`, 1 MiB in all.
fn validate_data(data: &BTreeMap<String, String>, path: &str, binary: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut total = 0;
    for (k, value) in data {
        let item = key(path, k);
        let valid_key = !k.is_empty()
            && k.len() <= 253
            && k.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && k != "."
            && k != ".."
            && !k.starts_with("..");
        if !valid_key {
            errs.push(FieldError::invalid(
                &item,
                k,
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
            ));
        }
        if binary && !is_base64(value) {
            errs.push(FieldError::invalid(
                &item,
                crate::field::BadValue::Raw("...".into()),
                "illegal base64 data",
            ));
        }
        total += value.len() * if binary { 3 } else { 4 } / 4;
    }
    if total > MAX_DATA_SIZE {
        errs.push(FieldError::too_long(path, MAX_DATA_SIZE));
    }
    errs
}

/// Standard base64 with padding, as Go's encoding/json reads `[]byte`.
fn is_base64(text: &str) -> bool {
    text.len().is_multiple_of(4)
        && text.bytes().enumerate().all(|(i, b)| {
            b.is_ascii_alphanumeric()
                || b == b'+'
                || b == b'/'
                || (b == b'=' && i + 2 >= text.len())
        })
}
