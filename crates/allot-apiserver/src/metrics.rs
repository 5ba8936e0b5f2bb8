//! `/metrics`: the server's metrics in Prometheus' text format, behind authentication and
//! RBAC as kube-apiserver serves them (the `system:monitoring` group may read them).
//!
//! - `apiserver_storage_objects{resource}`: kube-apiserver's gauge of the objects stored per
//!   resource (`pods`, `resourceclaims.resource.k8s.io`), every served resource listed;
//! - `allot_storage_log_torn_bytes_dropped`: the bytes of a torn last record (a write cut short
//!   by a crash, never acknowledged) dropped from the embedded store's log when the server
//!   started; 0 when there was none or the store is etcd.

use std::fmt::Write;

use allot_store::{Kind, Store};

use crate::resources::info_of;

/// The media type of [`render`]'s text: Prometheus' text format, as kube-apiserver serves it.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The label kube-apiserver gives a resource: `plural` in the core group, else `plural.group`.
fn resource_label(kind: Kind) -> Option<String> {
    let info = info_of(kind)?;
    Some(if info.group.is_empty() {
        info.plural.to_string()
    } else {
        format!("{}.{}", info.plural, info.group)
    })
}

/// The metrics of a server whose store is `store` and whose log dropped `torn_bytes` at start,
/// series in name order. Written by hand rather than through a metrics registry: these are
/// read from the store at each scrape, and a registry's families come out in hash order.
pub fn render(store: &Store, torn_bytes: u64) -> String {
    let mut objects: Vec<(String, usize)> = Kind::ALL
        .into_iter()
        .filter_map(|kind| Some((resource_label(kind)?, store.list_kind(kind).count())))
        .collect();
    objects.sort();
    objects.dedup_by(|a, b| a.0 == b.0);
    let mut text = String::new();
    // Writing into a String cannot fail.
    let _ = writeln!(
        text,
        "# HELP allot_storage_log_torn_bytes_dropped Bytes of a torn last record (a write cut short by a crash, never acknowledged) dropped from the store's log when the server started\n\
         # TYPE allot_storage_log_torn_bytes_dropped gauge\n\
         allot_storage_log_torn_bytes_dropped {torn_bytes}\n\
         # HELP apiserver_storage_objects Number of stored objects at the time of last check split by kind\n\
         # TYPE apiserver_storage_objects gauge"
    );
    for (resource, count) in objects {
        let _ = writeln!(
            text,
            "apiserver_storage_objects{{resource=\"{resource}\"}} {count}"
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of the series `name` in `text`.
    fn series(text: &str, name: &str) -> Option<String> {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
            .map(str::to_string)
    }

    #[test]
    fn objects_are_counted_per_resource_and_the_torn_tail_is_reported() {
        let store = Store::default();
        let text = render(&store, 17);
        assert_eq!(
            series(&text, "allot_storage_log_torn_bytes_dropped").as_deref(),
            Some("17"),
            "{text}"
        );
        assert_eq!(
            series(&text, "apiserver_storage_objects{resource=\"pods\"}").as_deref(),
            Some("0"),
            "{text}"
        );
        assert!(
            text.contains("apiserver_storage_objects{resource=\"resourceclaims.resource.k8s.io\"}"),
            "{text}"
        );
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines
                .windows(2)
                .filter(|w| w[0].starts_with("apiserver"))
                .all(|w| w[0] < w[1]),
            "{text}"
        );
    }
}
