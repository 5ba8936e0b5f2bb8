//! The ClusterRole aggregation controller (upstream's `clusterrole-aggregation-controller`): a
//! ClusterRole with an `aggregationRule` gets as rules the union of the rules of every other
//! ClusterRole that one of its `clusterRoleSelectors` matches, selectors in order, roles in
//! name order, each rule once; it is rewritten whenever that union changes (a labelled role
//! created, changed or deleted, or the selectors changed). It runs with the other controllers,
//! so only on the leader when servers share etcd.

use allot_api::meta::v1::LabelSelector;
use allot_api::rbac::v1::{ClusterRole, PolicyRule};
use allot_runtime::{Action, Context, Controller};
use allot_store::{Event, Kind, ObjectKey, Store};
use std::collections::BTreeMap;

/// Whether `labels` satisfy `selector` (`matchLabels` and `matchExpressions`, all of them; an
/// empty selector matches everything, as upstream's `LabelSelectorAsSelector`). An operator
/// upstream would refuse matches nothing.
pub fn selector_matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    selector
        .match_labels
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
        && selector.match_expressions.iter().all(|r| {
            let value = labels.get(&r.key);
            match r.operator.as_str() {
                "In" => value.is_some_and(|v| r.values.contains(v)),
                "NotIn" => value.is_none_or(|v| !r.values.contains(v)),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                _ => false,
            }
        })
}

/// The rules `role` aggregates from the ClusterRoles of `store`; `None` when it has no
/// aggregation rule.
pub fn aggregated_rules(store: &Store, role: &ClusterRole) -> Option<Vec<PolicyRule>> {
    let rule = role.aggregation_rule.as_ref()?;
    let mut rules: Vec<PolicyRule> = Vec::new();
    for selector in &rule.cluster_role_selectors {
        for other in store.list::<ClusterRole>() {
            if other.metadata.name == role.metadata.name
                || !selector_matches(selector, &other.metadata.labels)
            {
                continue;
            }
            for r in &other.rules {
                if !rules.contains(r) {
                    rules.push(r.clone());
                }
            }
        }
    }
    Some(rules)
}

/// The controller.
#[derive(Debug, Default)]
pub struct AggregationController;

impl AggregationController {
    /// A controller.
    pub fn new() -> Self {
        AggregationController
    }
}

impl Controller for AggregationController {
    fn name(&self) -> &'static str {
        "clusterrole-aggregation-controller"
    }

    fn keys_for(&self, event: &Event, store: &Store) -> Vec<ObjectKey> {
        if event.key.kind != Kind::ClusterRole {
            return Vec::new();
        }
        // Any ClusterRole change may change what an aggregated role selects.
        store
            .list::<ClusterRole>()
            .filter(|r| r.aggregation_rule.is_some())
            .map(|r| ObjectKey::new(Kind::ClusterRole, "", r.metadata.name.as_str()))
            .collect()
    }

    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        _ctx: &Context,
    ) -> Result<Action, String> {
        let Some(role) = store.get::<ClusterRole>("", &key.name) else {
            return Ok(Action::Done);
        };
        let Some(rules) = aggregated_rules(store, role) else {
            return Ok(Action::Done);
        };
        if rules == role.rules {
            return Ok(Action::Done);
        }
        let mut updated = role.clone();
        updated.rules = rules;
        store.update(updated).map_err(|e| e.to_string())?;
        Ok(Action::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allot_runtime::{Runtime, SimTime};

    fn role(name: &str, labels: &[(&str, &str)], verbs: &[&str]) -> ClusterRole {
        let mut r = ClusterRole::default();
        r.metadata.name = name.into();
        for (k, v) in labels {
            r.metadata.labels.insert((*k).into(), (*v).into());
        }
        if !verbs.is_empty() {
            r.rules.push(PolicyRule {
                verbs: verbs.iter().map(|v| (*v).to_string()).collect(),
                api_groups: vec!["resource.k8s.io".into()],
                resources: vec!["resourceclaims".into()],
                ..PolicyRule::default()
            });
        }
        r
    }

    fn view_rules(runtime: &Runtime) -> Vec<PolicyRule> {
        runtime
            .store
            .get::<ClusterRole>("", "view")
            .map(|r| r.rules.clone())
            .unwrap_or_default()
    }

    #[test]
    fn aggregated_roles_follow_the_labelled_roles() {
        const TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";
        let mut store = Store::new();
        let mut view = role("view", &[], &[]);
        let mut selector = LabelSelector::default();
        selector.match_labels.insert(TO_VIEW.into(), "true".into());
        view.aggregation_rule = Some(allot_api::rbac::v1::AggregationRule {
            cluster_role_selectors: vec![selector],
        });
        let now = "2026-01-01T00:00:00Z";
        store.create(view, now).expect("creates");
        store
            .create(role("b-read", &[(TO_VIEW, "true")], &["get"]), now)
            .expect("creates");
        store
            .create(role("a-read", &[(TO_VIEW, "true")], &["list"]), now)
            .expect("creates");
        store
            .create(role("same", &[(TO_VIEW, "true")], &["get"]), now)
            .expect("creates");
        store
            .create(role("other", &[(TO_VIEW, "false")], &["delete"]), now)
            .expect("creates");
        let mut runtime = Runtime::new(
            store,
            vec![Box::new(AggregationController::new())],
            SimTime(0),
        );
        runtime.advance_to(SimTime(1000), 1000).expect("runs");
        let verbs: Vec<Vec<String>> = view_rules(&runtime).into_iter().map(|r| r.verbs).collect();
        assert_eq!(
            verbs,
            vec![vec!["list".to_string()], vec!["get".to_string()]],
            "name order, each rule once, only matching roles"
        );

        // A labelled role changes, another goes: view follows.
        let mut a = runtime
            .store
            .get::<ClusterRole>("", "a-read")
            .cloned()
            .expect("exists");
        a.rules[0].verbs = vec!["watch".into()];
        runtime.store.update(a).expect("updates");
        runtime
            .store
            .delete(&ObjectKey::new(Kind::ClusterRole, "", "b-read"))
            .expect("deletes");
        runtime.advance_to(SimTime(2000), 1000).expect("runs");
        let verbs: Vec<Vec<String>> = view_rules(&runtime).into_iter().map(|r| r.verbs).collect();
        assert_eq!(
            verbs,
            vec![vec!["watch".to_string()], vec!["get".to_string()]]
        );
        let rv = runtime.store.resource_version();
        runtime.advance_to(SimTime(3000), 1000).expect("runs");
        assert_eq!(
            runtime.store.resource_version(),
            rv,
            "no write when nothing changed"
        );
    }

    #[test]
    fn selectors_match_as_upstream() {
        let labels: BTreeMap<String, String> = [("a".to_string(), "1".to_string())].into();
        let mut s = LabelSelector::default();
        assert!(selector_matches(&s, &labels), "empty selects all");
        s.match_expressions
            .push(allot_api::meta::v1::LabelSelectorRequirement {
                key: "b".into(),
                operator: "DoesNotExist".into(),
                values: vec![],
            });
        assert!(selector_matches(&s, &labels));
        s.match_labels.insert("a".into(), "2".into());
        assert!(!selector_matches(&s, &labels));
    }
}
