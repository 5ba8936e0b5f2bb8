//! `/ui/`: the page of `allot simulate --report`, made from the live store at each request
//! (cluster summary, pods not running by reason, node groups and every node with its devices),
//! behind the same authentication and authorization as the API (a non-resource URL: RBAC rules
//! with `nonResourceURLs: ["/ui", "/ui/"]`, or `*` as cluster-admin has). The page watches
//! pods, claims and nodes from the resourceVersion it shows and reloads on the first change.
//!
//! A browser cannot send the bearer token itself: `kubectl proxy` (with the kubeconfig `allot
//! serve` writes) authenticates for it; then open `http://127.0.0.1:8001/ui/`.

use allot_kubelet_config::KubeletConfiguration;
use allot_store::Store;

/// Whether a path is the page's.
pub(crate) fn is_ui(path: &str) -> bool {
    path == "/ui" || path == "/ui/"
}

/// The page over `store`; nodes are drawn with their NodeTopology and the agents'
/// configuration.
pub(crate) fn page(store: &Store, kubelet_config: &KubeletConfiguration) -> String {
    let setup = |node: &allot_api::core::v1::Node| {
        let machine = crate::nodes::topology_for(store, node)
            .and_then(|t| crate::nodes::machine_of(t).ok())?;
        Some((machine, kubelet_config.clone()))
    };
    let summary = allot_sim::report::summary(store, 0);
    let pending = allot_sim::capacity::pending_groups(store);
    allot_sim::report::html(&allot_sim::report::Report {
        title: format!(
            "allot serve: {} nodes, {} pods",
            summary.nodes, summary.pods
        ),
        store,
        summary: &summary,
        usage: None,
        fragmentation: None,
        pending: &pending,
        scale_up: None,
        consolidation: None,
        workload: None,
        live_resource_version: Some(store.resource_version()),
        setup: Some(&setup),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_is_the_report_of_the_store_watching_from_its_version() {
        let store = Store::new();
        let page = page(&store, &KubeletConfiguration::default());
        assert!(page.contains("allot serve: 0 nodes, 0 pods"));
        assert!(page.contains(&format!(
            "var allotResourceVersion={};",
            store.resource_version()
        )));
        assert!(is_ui("/ui/") && is_ui("/ui") && !is_ui("/uix"));
    }
}
