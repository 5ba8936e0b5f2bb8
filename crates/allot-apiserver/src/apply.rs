//! Field ownership: `metadata.managedFields` (FieldsV1) for every write, and server-side apply
//! (`PATCH` with `application/apply-patch+yaml`).
//!
//! This follows structured-merge-diff as kube-apiserver uses it, on plain JSON with the list
//! facts of [`crate::patch::Schema`]:
//! - A write that is not an apply (create, update, patch) is an `Update` operation: the fields
//!   it added or changed become its manager's, are taken from every other manager, and removed
//!   fields leave every manager's set.
//! - An apply merges the applied configuration into the live object (maps field by field, lists
//!   of `list-type=map` by key, sets by value, atomic lists replaced), and fails with a 409
//!   listing the conflicts when it would change a field another manager owns, unless forced (then
//!   the field changes hands). Fields the manager applied before and omits now are removed when
//!   no other manager owns them. The manager's set becomes exactly the applied fields.
//!
//! Path elements are written as FieldsV1 does: `f:<field>`, `k:<json of the key fields>`,
//! `v:<json value>`, and `.` marks a node that is itself owned.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::patch::{ListType, Schema};

/// A set of field paths, as a tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    /// Whether the node itself is in the set.
    pub member: bool,
    /// The children by path element (`f:name`, `k:{...}`, `v:...`).
    pub children: BTreeMap<String, FieldSet>,
}

impl FieldSet {
    /// Whether the set holds no path.
    pub fn is_empty(&self) -> bool {
        !self.member && self.children.values().all(FieldSet::is_empty)
    }

    fn node(&mut self, path: &[String]) -> &mut FieldSet {
        let mut cur = self;
        for element in path {
            cur = cur.children.entry(element.clone()).or_default();
        }
        cur
    }

    /// Adds a path.
    pub fn insert(&mut self, path: &[String]) {
        self.node(path).member = true;
    }

    /// Whether the path is in the set.
    pub fn contains(&self, path: &[String]) -> bool {
        let mut cur = self;
        for element in path {
            match cur.children.get(element) {
                Some(next) => cur = next,
                None => return false,
            }
        }
        cur.member
    }

    /// Whether the path, or any path below it, is in the set.
    pub fn owns_at_or_below(&self, path: &[String]) -> bool {
        let mut cur = self;
        for element in path {
            match cur.children.get(element) {
                Some(next) => cur = next,
                None => return false,
            }
        }
        !cur.is_empty()
    }

    /// Every member path, parents before children.
    pub fn paths(&self) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        let mut prefix = Vec::new();
        self.collect(&mut prefix, &mut out);
        out
    }

    fn collect(&self, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        if self.member {
            out.push(prefix.clone());
        }
        for (element, child) in &self.children {
            prefix.push(element.clone());
            child.collect(prefix, out);
            prefix.pop();
        }
    }

    /// The paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet {
            member: self.member && other.member,
            children: BTreeMap::new(),
        };
        for (element, child) in &self.children {
            if let Some(theirs) = other.children.get(element) {
                let both = child.intersection(theirs);
                if !both.is_empty() {
                    out.children.insert(element.clone(), both);
                }
            }
        }
        out
    }

    /// Adds every path of `other`.
    pub fn union_with(&mut self, other: &FieldSet) {
        self.member |= other.member;
        for (element, child) in &other.children {
            self.children
                .entry(element.clone())
                .or_default()
                .union_with(child);
        }
    }

    /// Removes the paths of `other` (only those paths, not their descendants).
    pub fn remove_paths(&mut self, other: &FieldSet) {
        if other.member {
            self.member = false;
        }
        for (element, child) in &other.children {
            if let Some(mine) = self.children.get_mut(element) {
                mine.remove_paths(child);
            }
        }
        self.prune();
    }

    /// Removes the paths of `other` and everything below them.
    pub fn remove_subtrees(&mut self, other: &FieldSet) {
        for (element, child) in &other.children {
            if child.member {
                self.children.remove(element);
            } else if let Some(mine) = self.children.get_mut(element) {
                mine.remove_subtrees(child);
            }
        }
        self.prune();
    }

    fn prune(&mut self) {
        self.children.retain(|_, c| {
            c.prune();
            !c.is_empty()
        });
    }

    /// The FieldsV1 JSON form.
    pub fn to_fields_v1(&self) -> Value {
        let mut map = Map::new();
        if self.member && !self.children.is_empty() {
            map.insert(".".into(), json!({}));
        }
        let mut children: Vec<(&String, &FieldSet)> = self.children.iter().collect();
        children.sort_by(|a, b| rank(a.0).cmp(&rank(b.0)).then_with(|| a.0.cmp(b.0)));
        for (element, child) in children {
            if !child.is_empty() {
                map.insert(element.clone(), child.to_fields_v1());
            }
        }
        Value::Object(map)
    }

    /// Reads the FieldsV1 JSON form; `None` when it is not one.
    pub fn from_fields_v1(value: &Value) -> Option<FieldSet> {
        let map = value.as_object()?;
        let mut out = FieldSet {
            member: map.is_empty(),
            children: BTreeMap::new(),
        };
        for (element, child) in map {
            if element == "." {
                out.member = true;
            } else {
                out.children
                    .insert(element.clone(), FieldSet::from_fields_v1(child)?);
            }
        }
        Some(out)
    }
}

/// structured-merge-diff orders fields, then keys, then values, then indexes.
fn rank(element: &str) -> u8 {
    match element.as_bytes().first() {
        Some(b'f') => 0,
        Some(b'k') => 1,
        Some(b'v') => 2,
        _ => 3,
    }
}

/// A path as upstream prints it in conflict messages: `.spec.containers[name="app"].image`.
pub fn path_string(path: &[String]) -> String {
    let mut out = String::new();
    for element in path {
        if let Some(field) = element.strip_prefix("f:") {
            out.push('.');
            out.push_str(field);
        } else if let Some(key) = element.strip_prefix("k:") {
            let parts: Vec<String> = serde_json::from_str::<Map<String, Value>>(key)
                .map(|m| m.iter().map(|(k, v)| format!("{k}={v}")).collect())
                .unwrap_or_else(|_| vec![key.to_string()]);
            out.push_str(&format!("[{}]", parts.join(",")));
        } else if let Some(value) = element.strip_prefix("v:") {
            out.push_str(&format!("[={value}]"));
        } else if let Some(index) = element.strip_prefix("i:") {
            out.push_str(&format!("[{index}]"));
        }
    }
    out
}

/// Which part of an object a request may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The main resource of a kind with a status subresource: status is not tracked.
    MainWithoutStatus,
    /// The main resource of a kind without a status subresource.
    Main,
    /// The `/status` subresource: only status is tracked.
    Status,
}

/// Metadata fields the server manages, never owned by a manager.
const SERVER_METADATA: [&str; 10] = [
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
];

/// The part of an object whose fields are tracked.
fn tracked(object: &Value, scope: Scope) -> Value {
    let mut out = Map::new();
    let Some(map) = object.as_object() else {
        return Value::Object(out);
    };
    for (k, v) in map {
        match (k.as_str(), scope) {
            ("apiVersion" | "kind", _) => {}
            ("status", Scope::MainWithoutStatus) => {}
            ("status", Scope::Status) => {
                out.insert(k.clone(), v.clone());
            }
            (_, Scope::Status) => {}
            ("metadata", _) => {
                let mut meta = v.as_object().cloned().unwrap_or_default();
                meta.retain(|k, _| !SERVER_METADATA.contains(&k.as_str()));
                if !meta.is_empty() {
                    out.insert(k.clone(), Value::Object(meta));
                }
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

fn is_scalar(value: &Value) -> bool {
    !matches!(value, Value::Object(_) | Value::Array(_))
}

/// The key element of a `list-type=map` item, or `None` when it has none of the key fields.
fn key_element(item: &Value, keys: &[&str]) -> Option<String> {
    let map = item.as_object()?;
    let mut key = Map::new();
    let mut sorted: Vec<&&str> = keys.iter().collect();
    sorted.sort();
    for k in sorted {
        if let Some(v) = map.get(*k) {
            key.insert((*k).to_string(), v.clone());
        }
    }
    (!key.is_empty()).then(|| format!("k:{}", Value::Object(key)))
}

fn value_element(item: &Value) -> String {
    format!("v:{item}")
}

/// The fields an applied configuration sets (upstream's `ToFieldSet`).
pub fn fields_of(object: &Value, scope: Scope, schema: &dyn Schema) -> FieldSet {
    let mut set = FieldSet::default();
    let tracked = tracked(object, scope);
    let mut names = Vec::new();
    let mut path = Vec::new();
    walk_fields(&tracked, &mut names, &mut path, schema, &mut set);
    set
}

fn walk_fields(
    value: &Value,
    names: &mut Vec<String>,
    path: &mut Vec<String>,
    schema: &dyn Schema,
    set: &mut FieldSet,
) {
    let Value::Object(map) = value else {
        set.insert(path);
        return;
    };
    for (k, child) in map {
        names.push(k.clone());
        path.push(format!("f:{k}"));
        visit_field(child, names, path, schema, set);
        path.pop();
        names.pop();
    }
}

fn visit_field(
    value: &Value,
    names: &mut Vec<String>,
    path: &mut Vec<String>,
    schema: &dyn Schema,
    set: &mut FieldSet,
) {
    match value {
        Value::Object(map) if !map.is_empty() => walk_fields(value, names, path, schema, set),
        Value::Array(items) => match schema.field(names).list_type {
            ListType::Atomic => set.insert(path),
            ListType::Set => {
                if items.iter().all(is_scalar) {
                    for item in items {
                        path.push(value_element(item));
                        set.insert(path);
                        path.pop();
                    }
                } else {
                    set.insert(path);
                }
            }
            ListType::Map(keys) => {
                if items.iter().all(|i| key_element(i, keys).is_some()) {
                    for item in items {
                        let Some(key) = key_element(item, keys) else {
                            continue;
                        };
                        path.push(key);
                        set.insert(path);
                        walk_fields(item, names, path, schema, set);
                        path.pop();
                    }
                } else {
                    set.insert(path);
                }
            }
        },
        _ => set.insert(path),
    }
}

/// What changed from `old` to `new`: fields added or modified, and fields removed.
#[derive(Debug, Default)]
pub struct Comparison {
    /// Added or modified fields.
    pub changed: FieldSet,
    /// Removed fields (their subtrees go with them).
    pub removed: FieldSet,
}

/// Compares two objects field by field (upstream's `Compare`).
pub fn compare(old: &Value, new: &Value, scope: Scope, schema: &dyn Schema) -> Comparison {
    let mut out = Comparison::default();
    let (old, new) = (tracked(old, scope), tracked(new, scope));
    let mut names = Vec::new();
    let mut path = Vec::new();
    compare_objects(&old, &new, &mut names, &mut path, schema, &mut out);
    out
}

fn compare_objects(
    old: &Value,
    new: &Value,
    names: &mut Vec<String>,
    path: &mut Vec<String>,
    schema: &dyn Schema,
    out: &mut Comparison,
) {
    let empty = Map::new();
    let old_map = old.as_object().unwrap_or(&empty);
    let new_map = new.as_object().unwrap_or(&empty);
    for (k, new_child) in new_map {
        names.push(k.clone());
        path.push(format!("f:{k}"));
        match old_map.get(k) {
            None => added(new_child, names, path, schema, out),
            Some(old_child) => compare_values(old_child, new_child, names, path, schema, out),
        }
        path.pop();
        names.pop();
    }
    for k in old_map.keys() {
        if !new_map.contains_key(k) {
            path.push(format!("f:{k}"));
            out.removed.insert(path);
            path.pop();
        }
    }
}

/// A field that is new: itself (for a non-empty map below the top level, and list items) and
/// everything below it.
fn added(
    value: &Value,
    names: &mut Vec<String>,
    path: &mut Vec<String>,
    schema: &dyn Schema,
    out: &mut Comparison,
) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            if path.len() >= 2 {
                out.changed.insert(path);
            }
            for (k, child) in map {
                names.push(k.clone());
                path.push(format!("f:{k}"));
                added(child, names, path, schema, out);
                path.pop();
                names.pop();
            }
        }
        _ => visit_field(value, names, path, schema, &mut out.changed),
    }
}

fn compare_values(
    old: &Value,
    new: &Value,
    names: &mut Vec<String>,
    path: &mut Vec<String>,
    schema: &dyn Schema,
    out: &mut Comparison,
) {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) if !o.is_empty() || !n.is_empty() => {
            compare_objects(old, new, names, path, schema, out);
        }
        (Value::Array(o), Value::Array(n)) => match schema.field(names).list_type {
            ListType::Set if o.iter().chain(n.iter()).all(is_scalar) => {
                for item in n {
                    if !o.contains(item) {
                        path.push(value_element(item));
                        out.changed.insert(path);
                        path.pop();
                    }
                }
                for item in o {
                    if !n.contains(item) {
                        path.push(value_element(item));
                        out.removed.insert(path);
                        path.pop();
                    }
                }
            }
            ListType::Map(keys)
                if o.iter()
                    .chain(n.iter())
                    .all(|i| key_element(i, keys).is_some()) =>
            {
                let old_items: Vec<(String, &Value)> = o
                    .iter()
                    .filter_map(|i| Some((key_element(i, keys)?, i)))
                    .collect();
                let mut seen = Vec::new();
                for item in n {
                    let Some(key) = key_element(item, keys) else {
                        continue;
                    };
                    path.push(key.clone());
                    match old_items.iter().find(|(k, _)| *k == key) {
                        Some((_, old_item)) => {
                            compare_objects(old_item, item, names, path, schema, out);
                        }
                        None => {
                            out.changed.insert(path);
                            walk_fields(item, names, path, schema, &mut out.changed);
                        }
                    }
                    path.pop();
                    seen.push(key);
                }
                for (key, _) in &old_items {
                    if !seen.contains(key) {
                        path.push(key.clone());
                        out.removed.insert(path);
                        path.pop();
                    }
                }
            }
            _ => {
                if o != n {
                    out.changed.insert(path);
                }
            }
        },
        (old, new) => {
            if old != new {
                if new.is_object() || new.is_array() {
                    added(new, names, path, schema, out);
                } else {
                    out.changed.insert(path);
                }
            }
        }
    }
}

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The field manager.
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: String,
    /// The API version the fields were written with.
    pub api_version: String,
    /// When the fields last changed.
    pub time: String,
    /// `status` for the status subresource, empty otherwise.
    pub subresource: String,
    /// The owned fields.
    pub fields: FieldSet,
}

impl Entry {
    /// The `ManagedFieldsEntry` JSON.
    pub fn to_json(&self) -> Value {
        let mut entry = json!({
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": self.fields.to_fields_v1(),
        });
        if !self.subresource.is_empty() {
            entry["subresource"] = Value::String(self.subresource.clone());
        }
        entry
    }

    fn from_json(value: &Value) -> Option<Entry> {
        let text = |k: &str| value.get(k).and_then(Value::as_str).unwrap_or_default();
        Some(Entry {
            manager: text("manager").to_string(),
            operation: text("operation").to_string(),
            api_version: text("apiVersion").to_string(),
            time: text("time").to_string(),
            subresource: text("subresource").to_string(),
            fields: FieldSet::from_fields_v1(value.get("fieldsV1")?)?,
        })
    }

    /// How upstream names this manager in conflict messages.
    pub fn describe(&self) -> String {
        let mut name = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            name.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        // Upstream names managers by an identifier without the time.
        if self.operation == "Update" {
            name.push_str(&format!(" using {}", self.api_version));
        }
        name
    }
}

/// The `managedFields` entries of an object (entries that do not parse are dropped).
pub fn entries_of(object: &Value) -> Vec<Entry> {
    object
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Entry::from_json).collect())
        .unwrap_or_default()
}

/// The `managedFields` JSON of entries.
pub fn entries_json(entries: &[Entry]) -> Vec<Value> {
    entries.iter().map(Entry::to_json).collect()
}

/// Who writes, and how.
#[derive(Debug, Clone)]
pub struct Writer<'a> {
    /// The field manager.
    pub manager: &'a str,
    /// The API version of the request.
    pub api_version: &'a str,
    /// The request's scope.
    pub scope: Scope,
    /// The time to record.
    pub now: &'a str,
}

impl Writer<'_> {
    fn subresource(&self) -> &'static str {
        if self.scope == Scope::Status {
            "status"
        } else {
            ""
        }
    }

    /// Whether the entry is this writer's for `operation`: an `Update` entry is per API
    /// version, an `Apply` entry is not (upstream's manager identifier).
    fn is_mine(&self, entry: &Entry, operation: &str) -> bool {
        entry.manager == self.manager
            && entry.operation == operation
            && entry.subresource == self.subresource()
            && (operation == "Apply" || entry.api_version == self.api_version)
    }
}

/// What a request says about `managedFields` (for writes that are not applies).
#[derive(Debug, Clone, PartialEq)]
pub enum Requested {
    /// Nothing usable: start from the stored object's entries.
    Stored,
    /// `[{}]`: clear them.
    Reset,
    /// Entries the client set: start from these.
    Entries(Vec<Entry>),
}

/// Reads the `metadata.managedFields` a client sent (`value` is that field, `Null` when
/// absent). As upstream: a single empty entry resets; valid non-empty entries replace the stored
/// ones (except on a subresource); anything else keeps the stored ones.
pub fn requested(value: &Value, subresource: bool) -> Requested {
    let Some(items) = value.as_array() else {
        return Requested::Stored;
    };
    if let [only] = items.as_slice()
        && only.as_object().is_some_and(Map::is_empty)
    {
        return Requested::Reset;
    }
    if subresource || items.is_empty() {
        return Requested::Stored;
    }
    let entries: Option<Vec<Entry>> = items.iter().map(Entry::from_json).collect();
    match entries {
        Some(entries) if entries.iter().all(|e| !e.manager.is_empty()) => {
            Requested::Entries(entries)
        }
        _ => Requested::Stored,
    }
}

/// Records an `Update` (create, update or non-apply patch) from `old` (`None` for a create) to
/// `new`: returns the new `managedFields` entries.
pub fn record_update(
    old: Option<&Value>,
    new: &Value,
    writer: &Writer,
    schema: &dyn Schema,
) -> Vec<Entry> {
    record_update_from(
        old,
        old.map(entries_of).unwrap_or_default(),
        new,
        writer,
        schema,
    )
}

/// [`record_update`] starting from given entries instead of the stored object's.
pub fn record_update_from(
    old: Option<&Value>,
    mut entries: Vec<Entry>,
    new: &Value,
    writer: &Writer,
    schema: &dyn Schema,
) -> Vec<Entry> {
    let empty = json!({});
    let old_value = old.unwrap_or(&empty);
    let comparison = compare(old_value, new, writer.scope, schema);
    for entry in &mut entries {
        entry.fields.remove_subtrees(&comparison.removed);
        if !writer.is_mine(entry, "Update") {
            entry.fields.remove_paths(&comparison.changed);
        }
    }
    if !comparison.changed.is_empty() {
        match entries.iter_mut().find(|e| writer.is_mine(e, "Update")) {
            Some(entry) => {
                entry.fields.union_with(&comparison.changed);
                entry.time = writer.now.to_string();
                entry.api_version = writer.api_version.to_string();
            }
            None => entries.push(Entry {
                manager: writer.manager.to_string(),
                operation: "Update".into(),
                api_version: writer.api_version.to_string(),
                time: writer.now.to_string(),
                subresource: writer.subresource().to_string(),
                fields: comparison.changed,
            }),
        }
    }
    entries.retain(|e| !e.fields.is_empty());
    entries
}

/// A server-side apply that would change fields other managers own.
#[derive(Debug, Clone, PartialEq)]
pub struct Conflicts {
    /// `(manager description, path)` per conflicting field.
    pub conflicts: Vec<(String, String)>,
}

impl Conflicts {
    /// Upstream's message: `Apply failed with N conflict(s): ...`.
    pub fn message(&self) -> String {
        if let [(manager, path)] = self.conflicts.as_slice() {
            return format!("Apply failed with 1 conflict: conflict with {manager}: {path}");
        }
        let mut by_manager: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (manager, path) in &self.conflicts {
            by_manager.entry(manager).or_default().push(path);
        }
        let mut lines = Vec::new();
        for (manager, paths) in by_manager {
            lines.push(format!("conflicts with {manager}:"));
            lines.extend(paths.iter().map(|p| format!("- {p}")));
        }
        format!(
            "Apply failed with {} conflicts: {}",
            self.conflicts.len(),
            lines.join("\n")
        )
    }

    /// The `causes` of the 409 Status.
    pub fn causes(&self) -> Vec<Value> {
        self.conflicts
            .iter()
            .map(|(manager, path)| {
                json!({"type": "FieldManagerConflict", "message": format!("conflict with {manager}"), "field": path})
            })
            .collect()
    }
}

/// Applies `config` for `writer` to `live` (`None` when the object does not exist yet).
/// Returns the merged object (without `managedFields`) and its new entries.
pub fn apply(
    live: Option<&Value>,
    config: &Value,
    writer: &Writer,
    force: bool,
    schema: &dyn Schema,
) -> Result<(Value, Vec<Entry>), Conflicts> {
    let empty = json!({});
    let live_value = live.unwrap_or(&empty);
    let mut entries = live.map(entries_of).unwrap_or_default();
    let applied = fields_of(config, writer.scope, schema);
    let mut merged = live_value.clone();
    let mut names = Vec::new();
    merge_into(&mut merged, config, &mut names, schema);
    // Conflicts: fields this apply changes that another manager owns.
    let comparison = compare(live_value, &merged, writer.scope, schema);
    let clashes: Vec<(usize, FieldSet)> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| !writer.is_mine(e, "Apply"))
        .map(|(i, e)| (i, e.fields.intersection(&comparison.changed)))
        .filter(|(_, clash)| !clash.is_empty())
        .collect();
    // `kubectl apply --server-side` (manager `kubectl`) takes over from client-side apply
    // without conflicts on the fields of the last-applied configuration, as upstream.
    let upgrade = !force
        && writer.manager == KUBECTL_MANAGER
        && !clashes.is_empty()
        && last_applied_fields(live_value, writer.scope, schema).is_some_and(|allowed| {
            clashes
                .iter()
                .all(|(_, clash)| clash.paths().iter().all(|p| allowed.contains(p)))
        });
    if !force && !upgrade && !clashes.is_empty() {
        let conflicts = clashes
            .iter()
            .flat_map(|(i, clash)| {
                let who = entries[*i].describe();
                clash
                    .paths()
                    .into_iter()
                    .map(move |p| (who.clone(), path_string(&p)))
            })
            .collect();
        return Err(Conflicts { conflicts });
    }
    for (i, clash) in &clashes {
        entries[*i].fields.remove_paths(clash);
    }
    // The last-applied annotation follows what kubectl server-side applies, so that a later
    // client-side apply still computes the right patch.
    if writer.manager == KUBECTL_MANAGER
        && live_value
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(LAST_APPLIED))
            .is_some()
    {
        let mut applied = config.clone();
        if let Some(annotations) = applied
            .pointer_mut("/metadata/annotations")
            .and_then(Value::as_object_mut)
        {
            annotations.shift_remove(LAST_APPLIED);
        }
        merged["metadata"]["annotations"][LAST_APPLIED] = Value::String(format!("{applied}\n"));
    }
    // Fields this manager applied before and omits now go when nobody else owns them.
    let previous = entries
        .iter()
        .find(|e| writer.is_mine(e, "Apply"))
        .map(|e| e.fields.clone())
        .unwrap_or_default();
    // A node stays while anyone (this apply included) owns it or anything below it, as
    // structured-merge-diff's prune adds back owned items and their parents.
    let mut dropped: Vec<Vec<String>> = previous
        .paths()
        .into_iter()
        .filter(|p| !applied.owns_at_or_below(p))
        .filter(|p| {
            !entries
                .iter()
                .any(|e| !writer.is_mine(e, "Apply") && e.fields.owns_at_or_below(p))
        })
        .collect();
    dropped.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for path in &dropped {
        remove_path(&mut merged, path);
    }
    let after = compare(live_value, &merged, writer.scope, schema);
    for entry in &mut entries {
        entry.fields.remove_subtrees(&after.removed);
    }
    match entries.iter_mut().find(|e| writer.is_mine(e, "Apply")) {
        Some(entry) => {
            if entry.fields != applied {
                entry.time = writer.now.to_string();
            }
            entry.fields = applied;
            entry.api_version = writer.api_version.to_string();
        }
        None => entries.push(Entry {
            manager: writer.manager.to_string(),
            operation: "Apply".into(),
            api_version: writer.api_version.to_string(),
            time: writer.now.to_string(),
            subresource: writer.subresource().to_string(),
            fields: applied,
        }),
    }
    entries.retain(|e| !e.fields.is_empty());
    Ok((merged, entries))
}

/// The annotation client-side apply keeps its configuration in.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The field manager of `kubectl apply --server-side`.
const KUBECTL_MANAGER: &str = "kubectl";

/// The fields of the live object's last-applied configuration, if it has one that parses.
fn last_applied_fields(live: &Value, scope: Scope, schema: &dyn Schema) -> Option<FieldSet> {
    let text = live
        .pointer("/metadata/annotations")?
        .get(LAST_APPLIED)?
        .as_str()?;
    let config: Value = serde_json::from_str(text).ok()?;
    Some(fields_of(&config, scope, schema))
}

/// Merges an applied configuration into an object: maps field by field, keyed lists by key,
/// sets by value, anything else replaced.
fn merge_into(target: &mut Value, config: &Value, names: &mut Vec<String>, schema: &dyn Schema) {
    let (Value::Object(target_map), Value::Object(config_map)) = (&mut *target, config) else {
        *target = config.clone();
        return;
    };
    for (k, v) in config_map {
        if v.is_null() {
            continue;
        }
        names.push(k.clone());
        match target_map.get_mut(k) {
            None => {
                target_map.insert(k.clone(), v.clone());
            }
            Some(existing) => match (&mut *existing, v) {
                (Value::Object(_), Value::Object(_)) => merge_into(existing, v, names, schema),
                (Value::Array(items), Value::Array(new_items)) => {
                    match schema.field(names).list_type {
                        ListType::Set if items.iter().chain(new_items).all(is_scalar) => {
                            for item in new_items {
                                if !items.contains(item) {
                                    items.push(item.clone());
                                }
                            }
                        }
                        ListType::Map(keys)
                            if items
                                .iter()
                                .chain(new_items)
                                .all(|i| key_element(i, keys).is_some()) =>
                        {
                            for item in new_items {
                                let key = key_element(item, keys);
                                match items.iter_mut().find(|i| key_element(i, keys) == key) {
                                    Some(found) => merge_into(found, item, names, schema),
                                    None => items.push(item.clone()),
                                }
                            }
                        }
                        _ => *existing = v.clone(),
                    }
                }
                _ => *existing = v.clone(),
            },
        }
        names.pop();
    }
}

/// Removes the value at a field path (a field, a keyed list item or a set value).
fn remove_path(target: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = target;
    for element in parents {
        let next = match cur {
            Value::Object(map) => element.strip_prefix("f:").and_then(|f| map.get_mut(f)),
            Value::Array(items) => items.iter_mut().find(|i| matches_element(i, element)),
            _ => None,
        };
        match next {
            Some(next) => cur = next,
            None => return,
        }
    }
    match cur {
        Value::Object(map) => {
            if let Some(field) = last.strip_prefix("f:") {
                map.shift_remove(field);
            }
        }
        Value::Array(items) => items.retain(|i| !matches_element(i, last)),
        _ => {}
    }
}

fn matches_element(item: &Value, element: &str) -> bool {
    if let Some(key) = element.strip_prefix("k:") {
        let Ok(Value::Object(key)) = serde_json::from_str::<Value>(key) else {
            return false;
        };
        key.iter().all(|(k, v)| item.get(k) == Some(v))
    } else if let Some(value) = element.strip_prefix("v:") {
        serde_json::from_str::<Value>(value).is_ok_and(|v| &v == item)
    } else {
        false
    }
}

/// `?fieldValidation=`: what to do with fields the schema does not know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them and say so in `Warning` headers (the server's default).
    #[default]
    Warn,
    /// Refuse the request (kubectl's default).
    Strict,
}

/// The write options of a request: field manager, `force`, field validation, and the warnings
/// the request collects on its way.
#[derive(Debug, Default)]
pub struct WriteOptions {
    /// `?fieldManager=`, or the user agent's program name.
    pub field_manager: String,
    /// Whether `?fieldManager=` was given (server-side apply requires it).
    pub explicit_manager: bool,
    /// `?force=true` (server-side apply takes conflicting fields).
    pub force: bool,
    /// `?fieldValidation=`.
    pub validation: FieldValidation,
    /// Texts for `Warning: 299 - "..."` headers.
    pub warnings: std::sync::Mutex<Vec<String>>,
    /// The keys the request body repeats (reported like unknown fields).
    pub duplicates: crate::decode::Duplicates,
    /// Whether the body is the whole object (create, update) rather than a patch: a repeated
    /// field the schema does not know is then reported only as unknown, as upstream's typed
    /// decoder does.
    pub whole_object: bool,
}

impl WriteOptions {
    /// Reads the options from the query (`get` returns "" for a missing key) and the
    /// `User-Agent` header.
    pub fn parse<'a>(get: impl Fn(&str) -> &'a str, user_agent: &str) -> Result<Self, String> {
        let validation = match get("fieldValidation") {
            "" | "Warn" => FieldValidation::Warn,
            "Ignore" => FieldValidation::Ignore,
            "Strict" => FieldValidation::Strict,
            other => {
                return Err(format!(
                    "fieldValidation parameter unsupported: {other}; supported values: Ignore, Warn, Strict"
                ));
            }
        };
        let force = match get("force") {
            "" | "false" => false,
            "true" => true,
            other => return Err(format!("invalid value for force: {other:?}")),
        };
        let explicit = get("fieldManager");
        if explicit.chars().count() > 128 {
            return Err("fieldManager: Too long: may not be more than 128 bytes".into());
        }
        let field_manager = if explicit.is_empty() {
            // Upstream's default: the user agent up to the first '/'.
            let program = user_agent.split('/').next().unwrap_or_default().trim();
            if program.is_empty() {
                "unknown".to_string()
            } else {
                program.chars().take(128).collect()
            }
        } else {
            explicit.to_string()
        };
        Ok(WriteOptions {
            field_manager,
            explicit_manager: !explicit.is_empty(),
            force,
            validation,
            warnings: std::sync::Mutex::new(Vec::new()),
            duplicates: crate::decode::Duplicates::default(),
            whole_object: false,
        })
    }

    /// Adds a warning.
    pub fn warn(&self, text: impl Into<String>) {
        self.warnings
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(text.into());
    }

    /// The collected warnings, as `Warning` header values (`299 - "text"`).
    pub fn warning_headers(&self) -> Vec<String> {
        self.warnings
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|w| format!("299 - {}", serde_json::Value::String(w.clone())))
            .collect()
    }
}

/// A control-plane loop of `allot serve` whose writes record `managedFields` as the API server
/// records a client's `Update`: the loop runs unchanged (it is shared with `allot simulate`),
/// and after each reconcile every object it wrote gets the entries of an `Update` by
/// `manager` (`kube-scheduler`, `kube-controller-manager`, `kubelet`) from the object before
/// the reconcile to the object after it; a change of the status of a kind with a status
/// subresource is recorded as a write of `/status`, like the status updates upstream's
/// components make. The entries are set on the write itself (same resourceVersion), before any
/// reader sees it; the object before the reconcile is the pre-image the store's undo journal
/// kept of its first write. Events are left as written.
pub struct ControllerWrites {
    inner: Box<dyn allot_runtime::Controller>,
    manager: &'static str,
}

impl ControllerWrites {
    /// `inner`, writing as `manager`.
    pub fn new(inner: Box<dyn allot_runtime::Controller>, manager: &'static str) -> Self {
        ControllerWrites { inner, manager }
    }
}

impl allot_runtime::Controller for ControllerWrites {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn keys_for(
        &self,
        event: &allot_store::Event,
        store: &allot_store::Store,
    ) -> Vec<allot_store::ObjectKey> {
        self.inner.keys_for(event, store)
    }

    fn reconcile(
        &mut self,
        store: &mut allot_store::Store,
        key: &allot_store::ObjectKey,
        ctx: &allot_runtime::Context,
    ) -> Result<allot_runtime::Action, String> {
        // The pre-images of the writes come from the store's undo journal: the one the etcd
        // mirror keeps running between commits, or one for this reconcile alone.
        let own_journal = !store.journaling();
        if own_journal {
            store.begin_journal();
        }
        let before = store.resource_version();
        let result = self.inner.reconcile(store, key, ctx);
        record_writes(store, before, self.manager, &ctx.now.rfc3339());
        if own_journal {
            store.end_journal();
        }
        result
    }

    fn subscribe(&mut self, subscriptions: allot_runtime::Subscriptions) -> bool {
        self.inner.subscribe(subscriptions)
    }

    fn event_log_position(&self) -> Option<u64> {
        self.inner.event_log_position()
    }
}

/// Sets the `managedFields` of every object written after resourceVersion `before` by
/// `manager` (see [`ControllerWrites`]). The state of an object before its first write comes
/// from the store's undo journal (its pre-image of that write), which must have been running
/// since `before`; without one nothing is recorded.
pub fn record_writes(store: &mut allot_store::Store, before: u64, manager: &str, now: &str) {
    use allot_store::{EventType, Kind, ObjectKey, Stored};
    // Per object written: its state before the first write (`None`: that write created it),
    // and its last write.
    let mut written: Vec<(ObjectKey, Option<Stored>, u64)> = Vec::new();
    for change in store.uncommitted() {
        let event = change.event;
        if event.resource_version <= before || event.key.kind == Kind::Event {
            continue;
        }
        let at = written.iter().position(|(k, ..)| *k == event.key);
        match (event.event_type, at) {
            (EventType::Deleted, Some(at)) => {
                written.remove(at);
            }
            (EventType::Deleted, None) => {}
            (_, Some(at)) => written[at].2 = event.resource_version,
            (_, None) => written.push((
                event.key.clone(),
                change.previous.cloned(),
                event.resource_version,
            )),
        }
    }
    for (key, previous, last) in written {
        let Some(info) = crate::resources::info_of(key.kind) else {
            continue;
        };
        let render = |object: &Stored| {
            let mut json = object.to_json();
            json["apiVersion"] = Value::String(info.group_version());
            json
        };
        let old = previous.as_ref().map(render);
        let Some(current) = store.get_stored(&key) else {
            continue;
        };
        let new = render(current);
        let api_version = info.group_version();
        let schema = crate::patch::KindSchema(key.kind);
        let mut writer = Writer {
            manager,
            api_version: &api_version,
            scope: if info.status {
                Scope::MainWithoutStatus
            } else {
                Scope::Main
            },
            now,
        };
        let mut entries = record_update(old.as_ref(), &new, &writer, &schema);
        if info.status {
            writer.scope = Scope::Status;
            entries = record_update_from(old.as_ref(), entries, &new, &writer, &schema);
        }
        let json = entries_json(&entries);
        store.amend_meta(&key, last, |meta| meta.managed_fields = json.clone());
    }
}

/// Removes the field at a decoder path like `spec.devices[0].colour` (map keys may hold dots:
/// the longest matching key wins). Returns whether something was removed.
pub fn remove_field(value: &mut Value, path: &str) -> bool {
    let mut cur = value;
    let mut rest = path;
    loop {
        if let Some(after) = rest.strip_prefix('[') {
            let Some((index, tail)) = after.split_once(']') else {
                return false;
            };
            let Ok(index) = index.parse::<usize>() else {
                return false;
            };
            let Value::Array(items) = cur else {
                return false;
            };
            if tail.is_empty() {
                if index < items.len() {
                    items.remove(index);
                    return true;
                }
                return false;
            }
            let Some(next) = items.get_mut(index) else {
                return false;
            };
            cur = next;
            rest = tail.strip_prefix('.').unwrap_or(tail);
            continue;
        }
        let Value::Object(map) = cur else {
            return false;
        };
        let key = map
            .keys()
            .filter(|k| {
                rest.strip_prefix(k.as_str())
                    .is_some_and(|t| t.is_empty() || t.starts_with('.') || t.starts_with('['))
            })
            .max_by_key(|k| k.len())
            .cloned();
        let Some(key) = key else {
            return false;
        };
        let tail = &rest[key.len()..];
        if tail.is_empty() {
            return map.shift_remove(&key).is_some();
        }
        let Some(next) = map.get_mut(&key) else {
            return false;
        };
        cur = next;
        rest = tail.strip_prefix('.').unwrap_or(tail);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::KindSchema;
    use allot_store::Kind;

    fn writer<'a>(manager: &'a str) -> Writer<'a> {
        Writer {
            manager,
            api_version: "v1",
            scope: Scope::MainWithoutStatus,
            now: "2026-11-30T00:00:00Z",
        }
    }

    fn pod(image: &str) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": image, "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}
        })
    }

    #[test]
    fn controller_writes_record_update_entries_on_the_write_itself() {
        use allot_api::core::v1::{Pod, PodCondition};
        let mut store = allot_store::Store::new();
        let mut pod = Pod::default();
        pod.metadata.name = "p".into();
        pod.metadata.namespace = "ns".into();
        let pod = store.create(pod, "t0").expect("creates");
        // ControllerWrites runs each reconcile under a journal, whose pre-images say what the
        // objects were before.
        store.begin_journal();
        let before = store.resource_version();
        let mut bound = pod.clone();
        bound.spec.node_name = Some("n1".into());
        let mut bound = store.update(bound).expect("binds");
        bound.status.conditions.push(PodCondition {
            type_: "PodScheduled".into(),
            status: "True".into(),
            observed_generation: None,
            last_probe_time: None,
            last_transition_time: None,
            reason: None,
            message: None,
        });
        store.update(bound).expect("updates status");
        let rv = store.resource_version();
        record_writes(&mut store, before, "kube-scheduler", "t1");
        assert_eq!(store.resource_version(), rv, "no write of its own");
        let key = allot_store::ObjectKey::new(Kind::Pod, "ns", "p");
        let entries = entries_of(&store.get_stored(&key).expect("pod").to_json());
        let described: Vec<(String, String, Vec<String>)> = entries
            .iter()
            .map(|e| {
                (
                    e.manager.clone(),
                    e.subresource.clone(),
                    e.fields.paths().iter().map(|p| path_string(p)).collect(),
                )
            })
            .collect();
        assert_eq!(
            described,
            [
                (
                    "kube-scheduler".to_string(),
                    String::new(),
                    vec![".spec.nodeName".to_string()]
                ),
                (
                    "kube-scheduler".to_string(),
                    "status".to_string(),
                    vec![
                        ".status.conditions[type=\"PodScheduled\"]".to_string(),
                        ".status.conditions[type=\"PodScheduled\"].status".to_string(),
                        ".status.conditions[type=\"PodScheduled\"].type".to_string(),
                    ]
                ),
            ]
        );
        // Watchers and the log see the same object as the store.
        let last = store.events_since(rv - 1)[0].object.to_json();
        assert_eq!(
            last["metadata"]["managedFields"].as_array().map(Vec::len),
            Some(2)
        );
        // Another manager's later write of the same field takes it over, as for clients.
        let before = store.resource_version();
        let mut moved = store.get::<Pod>("ns", "p").expect("pod").clone();
        moved.spec.node_name = Some("n2".into());
        store.update(moved).expect("updates");
        record_writes(&mut store, before, "kubelet", "t2");
        let entries = entries_of(&store.get_stored(&key).expect("pod").to_json());
        assert_eq!(
            entries
                .iter()
                .map(|e| (e.manager.as_str(), e.subresource.as_str()))
                .collect::<Vec<_>>(),
            [("kube-scheduler", "status"), ("kubelet", "")]
        );
    }

    /// Binds pod ns/p to node n1: a reconcile that writes one object.
    struct Binder;

    impl allot_runtime::Controller for Binder {
        fn name(&self) -> &'static str {
            "binder"
        }

        fn keys_for(
            &self,
            event: &allot_store::Event,
            _store: &allot_store::Store,
        ) -> Vec<allot_store::ObjectKey> {
            vec![event.key.clone()]
        }

        fn reconcile(
            &mut self,
            store: &mut allot_store::Store,
            _key: &allot_store::ObjectKey,
            _ctx: &allot_runtime::Context,
        ) -> Result<allot_runtime::Action, String> {
            let mut pod = store
                .get::<allot_api::core::v1::Pod>("ns", "p")
                .ok_or("no pod")?
                .clone();
            pod.spec.node_name = Some("n1".into());
            store.update(pod).map_err(|e| e.to_string())?;
            Ok(allot_runtime::Action::Done)
        }
    }

    #[test]
    fn controller_writes_take_pre_images_from_the_journal_and_leave_it_as_found() {
        use allot_runtime::Controller;
        for journal_running in [false, true] {
            let mut store = allot_store::Store::new();
            let mut pod = allot_api::core::v1::Pod::default();
            pod.metadata.name = "p".into();
            pod.metadata.namespace = "ns".into();
            store.create(pod, "t0").expect("creates");
            if journal_running {
                // As the etcd mirror keeps one between commits.
                store.begin_journal();
            }
            let mut writes = ControllerWrites::new(Box::new(Binder), "kube-scheduler");
            let key = allot_store::ObjectKey::new(Kind::Pod, "ns", "p");
            let ctx = allot_runtime::Context {
                now: allot_runtime::SimTime::ZERO,
            };
            writes.reconcile(&mut store, &key, &ctx).expect("binds");
            assert_eq!(store.journaling(), journal_running);
            // The running journal still holds the write for its commit.
            assert_eq!(store.uncommitted().len(), usize::from(journal_running));
            let entries = entries_of(&store.get_stored(&key).expect("pod").to_json());
            let described: Vec<(String, Vec<String>)> = entries
                .iter()
                .map(|e| {
                    (
                        e.manager.clone(),
                        e.fields.paths().iter().map(|p| path_string(p)).collect(),
                    )
                })
                .collect();
            assert_eq!(
                described,
                [(
                    "kube-scheduler".to_string(),
                    vec![".spec.nodeName".to_string()]
                )],
                "journal running: {journal_running}"
            );
        }
    }

    #[test]
    fn apply_field_set_is_fieldsv1() {
        let set = fields_of(
            &pod("a:1"),
            Scope::MainWithoutStatus,
            &KindSchema(Kind::Pod),
        );
        assert_eq!(
            set.to_fields_v1(),
            json!({
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {
                    ".": {}, "f:image": {}, "f:name": {},
                    "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:protocol": {}}}
                }}}
            })
        );
        assert_eq!(FieldSet::from_fields_v1(&set.to_fields_v1()), Some(set));
        assert_eq!(
            path_string(&[
                "f:spec".into(),
                "f:containers".into(),
                "k:{\"name\":\"app\"}".into(),
                "f:image".into()
            ]),
            ".spec.containers[name=\"app\"].image"
        );
    }

    #[test]
    fn create_records_an_update_with_dots_for_new_maps() {
        let schema = KindSchema(Kind::Pod);
        let entries = record_update(None, &pod("a:1"), &writer("kubectl-create"), &schema);
        assert_eq!(entries.len(), 1);
        let fields = entries[0].fields.to_fields_v1();
        assert_eq!(
            fields["f:metadata"],
            json!({"f:labels": {".": {}, "f:app": {}}})
        );
        assert_eq!(entries[0].operation, "Update");
    }

    #[test]
    fn second_applier_conflicts_unless_forced() {
        let schema = KindSchema(Kind::Pod);
        let (first, entries) =
            apply(None, &pod("a:1"), &writer("alice"), false, &schema).expect("first apply");
        let mut live = first.clone();
        live["metadata"]["managedFields"] = Value::Array(entries_json(&entries));
        // Same value: shared ownership, no conflict.
        let (_, shared) =
            apply(Some(&live), &pod("a:1"), &writer("bob"), false, &schema).expect("same value");
        assert_eq!(shared.len(), 2);
        // Another value conflicts with upstream's message.
        let err =
            apply(Some(&live), &pod("a:2"), &writer("bob"), false, &schema).expect_err("conflict");
        assert_eq!(
            err.message(),
            "Apply failed with 1 conflict: conflict with \"alice\": .spec.containers[name=\"app\"].image"
        );
        // Forced: bob takes the field.
        let (merged, entries) =
            apply(Some(&live), &pod("a:2"), &writer("bob"), true, &schema).expect("forced");
        assert_eq!(merged["spec"]["containers"][0]["image"], "a:2");
        let alice = entries
            .iter()
            .find(|e| e.manager == "alice")
            .expect("alice");
        let image = [
            "f:spec".to_string(),
            "f:containers".into(),
            "k:{\"name\":\"app\"}".into(),
            "f:image".into(),
        ];
        assert!(!alice.fields.contains(&image));
        let bob = entries.iter().find(|e| e.manager == "bob").expect("bob");
        assert!(bob.fields.contains(&image));
    }

    #[test]
    fn kubectl_server_side_apply_takes_over_from_client_side_apply() {
        let schema = KindSchema(Kind::Pod);
        let mut live = pod("a:1");
        live["metadata"]["annotations"] =
            json!({LAST_APPLIED: serde_json::to_string(&pod("a:1")).expect("encodes")});
        let entries = record_update(None, &live, &writer("kubectl-client-side-apply"), &schema);
        live["metadata"]["managedFields"] = Value::Array(entries_json(&entries));
        // Another manager conflicts; `kubectl` takes the fields of the last-applied config.
        assert!(apply(Some(&live), &pod("a:2"), &writer("other"), false, &schema).is_err());
        let (merged, entries) =
            apply(Some(&live), &pod("a:2"), &writer("kubectl"), false, &schema).expect("upgrade");
        assert_eq!(merged["spec"]["containers"][0]["image"], "a:2");
        let annotation = merged["metadata"]["annotations"][LAST_APPLIED]
            .as_str()
            .unwrap_or_default();
        assert!(annotation.contains("a:2"), "{annotation}");
        assert!(
            entries
                .iter()
                .any(|e| e.manager == "kubectl" && e.operation == "Apply")
        );
        // A field outside the last-applied configuration still conflicts.
        let mut edited = live.clone();
        edited["spec"]["containers"][0]["ports"][0]["name"] = json!("web");
        let entries = record_update(Some(&live), &edited, &writer("kubectl-edit"), &schema);
        edited["metadata"]["managedFields"] = Value::Array(entries_json(&entries));
        let mut config = pod("a:2");
        config["spec"]["containers"][0]["ports"][0]["name"] = json!("http");
        let err = apply(Some(&edited), &config, &writer("kubectl"), false, &schema)
            .expect_err("conflicts");
        assert!(
            err.message().contains("\"kubectl-edit\" using v1"),
            "{}",
            err.message()
        );
    }

    #[test]
    fn omitted_fields_are_removed_unless_someone_else_owns_them() {
        let schema = KindSchema(Kind::Pod);
        let mut config = pod("a:1");
        config["metadata"]["labels"]["tier"] = json!("front");
        let (first, entries) =
            apply(None, &config, &writer("alice"), false, &schema).expect("apply");
        let mut live = first;
        live["metadata"]["managedFields"] = Value::Array(entries_json(&entries));
        let (merged, _) =
            apply(Some(&live), &pod("a:1"), &writer("alice"), false, &schema).expect("apply");
        assert_eq!(merged["metadata"]["labels"], json!({"app": "web"}));
        // An Update by someone else of the label keeps it.
        let mut edited = live.clone();
        edited["metadata"]["labels"]["tier"] = json!("back");
        let entries = record_update(Some(&live), &edited, &writer("kubectl-label"), &schema);
        edited["metadata"]["managedFields"] = Value::Array(entries_json(&entries));
        let (merged, _) =
            apply(Some(&edited), &pod("a:1"), &writer("alice"), false, &schema).expect("apply");
        assert_eq!(merged["metadata"]["labels"]["tier"], "back");
    }

    #[test]
    fn write_options_and_field_removal() {
        let query = [
            ("fieldManager", "me"),
            ("force", "true"),
            ("fieldValidation", "Ignore"),
        ];
        let get = |k: &str| query.iter().find(|(q, _)| *q == k).map_or("", |(_, v)| *v);
        let o = WriteOptions::parse(get, "kubectl/v1.37.1 (linux/amd64)").expect("parses");
        assert_eq!(
            (o.field_manager.as_str(), o.explicit_manager, o.force),
            ("me", true, true)
        );
        assert_eq!(o.validation, FieldValidation::Ignore);
        let o = WriteOptions::parse(|_| "", "kubectl/v1.37.1 (linux/amd64)").expect("parses");
        assert_eq!(
            (o.field_manager.as_str(), o.validation),
            ("kubectl", FieldValidation::Warn)
        );
        assert!(
            WriteOptions::parse(|k| if k == "fieldValidation" { "Loud" } else { "" }, "").is_err()
        );
        o.warn("unknown field \"spec.x\"");
        assert_eq!(
            o.warning_headers(),
            ["299 - \"unknown field \\\"spec.x\\\"\""]
        );
        let mut v = json!({"spec": {"devices": [{"name": "a", "colour": 1}], "attributes": {"dra.example.com/model": {"x": 1}}}});
        assert!(remove_field(&mut v, "spec.devices[0].colour"));
        assert!(remove_field(
            &mut v,
            "spec.attributes.dra.example.com/model.x"
        ));
        assert!(!remove_field(&mut v, "spec.nope"));
        assert_eq!(
            v,
            json!({"spec": {"devices": [{"name": "a"}], "attributes": {"dra.example.com/model": {}}}})
        );
    }

    #[test]
    fn clients_may_replace_or_reset_managed_fields() {
        let schema = KindSchema(Kind::Pod);
        assert_eq!(requested(&Value::Null, false), Requested::Stored);
        assert_eq!(requested(&json!([]), false), Requested::Stored);
        assert_eq!(requested(&json!([{}]), false), Requested::Reset);
        assert_eq!(
            requested(&json!([{"manager": 1}]), false),
            Requested::Stored
        );
        let mine = record_update(None, &pod("a:1"), &writer("someone"), &schema);
        let sent = Value::Array(entries_json(&mine));
        assert_eq!(requested(&sent, false), Requested::Entries(mine.clone()));
        assert_eq!(requested(&sent, true), Requested::Stored);
        // Starting from the sent entries, an Update adds the writer's own.
        let entries = record_update_from(
            Some(&pod("a:1")),
            mine,
            &pod("a:2"),
            &writer("editor"),
            &schema,
        );
        let managers: Vec<&str> = entries.iter().map(|e| e.manager.as_str()).collect();
        assert_eq!(managers, ["someone", "editor"]);
    }

    #[test]
    fn owning_a_map_node_itself_does_not_prune_its_applied_children() {
        // After a client-side apply is taken over, the applier's previous set holds the labels
        // map itself (`.`); applying the labels again must keep them.
        let schema = KindSchema(Kind::Pod);
        let (first, _) =
            apply(None, &pod("a:1"), &writer("kubectl"), false, &schema).expect("apply");
        let mut previous = fields_of(&pod("a:1"), Scope::MainWithoutStatus, &schema);
        previous.insert(&["f:metadata".to_string(), "f:labels".to_string()]);
        let mut live = first;
        live["metadata"]["managedFields"] = json!([Entry {
            manager: "kubectl".into(),
            operation: "Apply".into(),
            api_version: "v1".into(),
            time: String::new(),
            subresource: String::new(),
            fields: previous,
        }
        .to_json()]);
        let (merged, _) =
            apply(Some(&live), &pod("a:1"), &writer("kubectl"), false, &schema).expect("apply");
        assert_eq!(merged["metadata"]["labels"], json!({"app": "web"}));
    }

    #[test]
    fn sets_are_owned_value_by_value() {
        let schema = KindSchema(Kind::Pod);
        let with = |finalizers: Value| {
            let mut p = pod("a:1");
            p["metadata"]["finalizers"] = finalizers;
            p
        };
        let (first, entries) = apply(
            None,
            &with(json!(["a/x", "a/y"])),
            &writer("alice"),
            false,
            &schema,
        )
        .expect("apply");
        let mut live = first;
        live["metadata"]["managedFields"] = Value::Array(entries_json(&entries));
        let alice = &entries[0].fields.to_fields_v1();
        assert_eq!(
            alice["f:metadata"]["f:finalizers"],
            json!({"v:\"a/x\"": {}, "v:\"a/y\"": {}})
        );
        // Bob adds a value: a union, no conflict.
        let (merged, entries) = apply(
            Some(&live),
            &with(json!(["b/z"])),
            &writer("bob"),
            false,
            &schema,
        )
        .expect("apply");
        assert_eq!(
            merged["metadata"]["finalizers"],
            json!(["a/x", "a/y", "b/z"])
        );
        let mut live = merged;
        live["metadata"]["managedFields"] = Value::Array(entries_json(&entries));
        // Alice drops a/y: only her value goes.
        let (merged, _) = apply(
            Some(&live),
            &with(json!(["a/x"])),
            &writer("alice"),
            false,
            &schema,
        )
        .expect("apply");
        assert_eq!(merged["metadata"]["finalizers"], json!(["a/x", "b/z"]));
        // A removed value leaves the Update manager's set too.
        let mut edited = merged.clone();
        edited["metadata"]["finalizers"] = json!(["b/z"]);
        let comparison = compare(&merged, &edited, Scope::MainWithoutStatus, &schema);
        assert_eq!(
            comparison.removed.to_fields_v1(),
            json!({"f:metadata": {"f:finalizers": {"v:\"a/x\"": {}}}})
        );
    }

    #[test]
    fn keyed_lists_merge_by_key() {
        let schema = KindSchema(Kind::Pod);
        let mut live = pod("a:1");
        live["spec"]["containers"]
            .as_array_mut()
            .expect("list")
            .push(json!({"name": "side", "image": "s:1"}));
        let config = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "app", "image": "a:3"}]}});
        let (merged, _) = apply(Some(&live), &config, &writer("x"), false, &schema).expect("apply");
        let names: Vec<&str> = merged["spec"]["containers"]
            .as_array()
            .map(|a| a.iter().filter_map(|c| c["name"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(names, ["app", "side"]);
        assert_eq!(merged["spec"]["containers"][0]["image"], "a:3");
        assert_eq!(
            merged["spec"]["containers"][0]["ports"][0]["containerPort"],
            80
        );
    }
}
