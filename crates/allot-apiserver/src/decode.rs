//! Request bodies to JSON with the duplicate keys that upstream's strict decoding reports.
//!
//! A JSON or YAML body may repeat a key in one object. Like upstream's decoders the later value
//! wins, and the repeats are kept so that `?fieldValidation=` can refuse (`Strict`), warn
//! (`Warn`) or ignore them. The wording follows upstream: a JSON body yields
//! `duplicate field "spec.paused"` (the path in the decoder's notation, as for unknown fields), a
//! YAML body (and every server-side apply body, which upstream reads as YAML) yields
//! `line 12: key "paused" already set in map`.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// A key that an object of the body repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duplicate {
    /// The path of the repeated field (`spec.template.spec.containers[0].imagePullPolicy`).
    pub path: String,
    /// The key itself.
    pub key: String,
    /// The 1-based line of the repeat (YAML only; 0 for JSON).
    pub line: u32,
    /// The index of the repeat among the body's keys in document order.
    pub position: usize,
}

/// How the body was read, which decides the wording of its duplicates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Syntax {
    /// `json: duplicate field` style.
    #[default]
    Json,
    /// `yaml: unmarshal errors` style.
    Yaml,
}

/// The duplicates of one request body, and the document order of its keys (to report them
/// among the unknown fields in the order upstream's decoder meets them).
#[derive(Debug, Clone, Default)]
pub struct Duplicates {
    /// How the body was read.
    pub syntax: Syntax,
    /// The repeats, in document order.
    pub found: Vec<Duplicate>,
    /// Every key path in document order (kept only when there are repeats).
    pub order: Vec<String>,
}

impl Duplicates {
    /// Whether the body repeats no key.
    pub fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// The index of the first key at `path` in document order (for unknown fields), or the end.
    pub fn position_of(&self, path: &str) -> usize {
        self.order
            .iter()
            .position(|p| p == path)
            .unwrap_or(self.order.len())
    }

    /// The texts of the repeats as separate warnings.
    pub fn warnings(&self) -> Vec<String> {
        self.found.iter().map(|d| self.text(d)).collect()
    }

    /// One repeat in upstream's words.
    pub fn text(&self, duplicate: &Duplicate) -> String {
        match self.syntax {
            Syntax::Json => format!("duplicate field {}", quote(&duplicate.path)),
            Syntax::Yaml => format!(
                "line {}: key {} already set in map",
                duplicate.line,
                quote(&duplicate.key)
            ),
        }
    }

    /// All YAML repeats as the one error upstream's YAML reader returns.
    pub fn yaml_error(&self) -> String {
        let mut text = String::from("yaml: unmarshal errors:");
        for duplicate in &self.found {
            text.push_str("\n  ");
            text.push_str(&self.text(duplicate));
        }
        text
    }
}

/// Go's `%q` for the plain strings of field paths and keys.
fn quote(text: &str) -> String {
    Value::String(text.to_string()).to_string()
}

/// A parsed node with its keys in document order, repeats included.
enum Node<K> {
    Leaf(Value),
    Seq(Vec<Node<K>>),
    Map(Vec<(K, Node<K>)>),
}

/// A map key: its text and, for YAML, its line.
trait Key {
    fn text(&self) -> &str;
    fn line(&self) -> u32;
}

impl Key for String {
    fn text(&self) -> &str {
        self
    }
    fn line(&self) -> u32 {
        0
    }
}

impl Key for serde_saphyr::Spanned<String> {
    fn text(&self) -> &str {
        &self.value
    }
    fn line(&self) -> u32 {
        u32::try_from(self.referenced.line()).unwrap_or(u32::MAX)
    }
}

impl<'de, K: Deserialize<'de>> Deserialize<'de> for Node<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor(std::marker::PhantomData))
    }
}

struct NodeVisitor<K>(std::marker::PhantomData<K>);

impl<'de, K: Deserialize<'de>> Visitor<'de> for NodeVisitor<K> {
    type Value = Node<K>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON or YAML value")
    }
    fn visit_unit<E>(self) -> Result<Node<K>, E> {
        Ok(Node::Leaf(Value::Null))
    }
    fn visit_none<E>(self) -> Result<Node<K>, E> {
        Ok(Node::Leaf(Value::Null))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node<K>, D::Error> {
        Node::deserialize(d)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Node<K>, E> {
        Ok(Node::Leaf(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Node<K>, E> {
        Ok(Node::Leaf(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Node<K>, E> {
        Ok(Node::Leaf(Value::from(v)))
    }
    fn visit_i128<E: serde::de::Error>(self, v: i128) -> Result<Node<K>, E> {
        i64::try_from(v)
            .map(|v| Node::Leaf(Value::from(v)))
            .map_err(|_| E::custom(format!("integer {v} is out of range")))
    }
    fn visit_u128<E: serde::de::Error>(self, v: u128) -> Result<Node<K>, E> {
        u64::try_from(v)
            .map(|v| Node::Leaf(Value::from(v)))
            .map_err(|_| E::custom(format!("integer {v} is out of range")))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Node<K>, E> {
        Ok(Node::Leaf(
            serde_json::Number::from_f64(v)
                .map(Value::Number)
                .unwrap_or(Value::Null),
        ))
    }
    fn visit_str<E>(self, v: &str) -> Result<Node<K>, E> {
        Ok(Node::Leaf(Value::String(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> Result<Node<K>, E> {
        Ok(Node::Leaf(Value::String(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node<K>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Node<K>>()? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node<K>, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<K>()? {
            let value = map.next_value::<Node<K>>()?;
            entries.push((key, value));
        }
        Ok(Node::Map(entries))
    }
}

/// Builds the JSON value (later keys win, in the place of the first as upstream's maps keep
/// it) and records the repeats.
fn convert<K: Key>(node: Node<K>, path: &mut String, out: &mut Duplicates) -> Value {
    match node {
        Node::Leaf(value) => value,
        Node::Seq(items) => {
            let base = path.len();
            let mut values = Vec::with_capacity(items.len());
            for (index, item) in items.into_iter().enumerate() {
                path.push_str(&format!("[{index}]"));
                values.push(convert(item, path, out));
                path.truncate(base);
            }
            Value::Array(values)
        }
        Node::Map(entries) => {
            let base = path.len();
            let mut map = serde_json::Map::with_capacity(entries.len());
            for (key, value) in entries {
                if base > 0 {
                    path.push('.');
                }
                path.push_str(key.text());
                out.order.push(path.clone());
                if map.contains_key(key.text()) {
                    out.found.push(Duplicate {
                        path: path.clone(),
                        key: key.text().to_string(),
                        line: key.line(),
                        position: out.order.len() - 1,
                    });
                }
                let value = convert(value, path, out);
                path.truncate(base);
                map.insert(key.text().to_string(), value);
            }
            Value::Object(map)
        }
    }
}

fn finish<K: Key>(node: Node<K>, syntax: Syntax) -> (Value, Duplicates) {
    let mut out = Duplicates {
        syntax,
        ..Duplicates::default()
    };
    let value = convert(node, &mut String::new(), &mut out);
    if out.found.is_empty() {
        out.order = Vec::new();
    }
    (value, out)
}

/// Reads a JSON body; `None` when it is not JSON.
pub fn json(text: &str) -> Option<(Value, Duplicates)> {
    let node: Node<String> = serde_json::from_str(text).ok()?;
    Some(finish(node, Syntax::Json))
}

/// Reads a YAML body of one document (JSON is YAML too); `None` when it does not parse, does
/// not hold exactly one document, or is refused for its aliases (the caller's ordinary reader
/// words those errors). An alias bomb is refused before anything is expanded, in one pass over
/// its text, as Kubernetes' YAML decoder would refuse it.
pub fn yaml(text: &str) -> Option<(Value, Duplicates)> {
    allot_api::load::check_yaml_aliases(text).ok()?;
    // As allot-api's reader: YAML 1.2 booleans; repeats are handed to the visitor.
    let options = allot_api::load::yaml_reader_options(text.len());
    let mut nodes: Vec<Node<serde_saphyr::Spanned<String>>> =
        serde_saphyr::from_multiple_with_options(text, options).ok()?;
    nodes.retain(|n| !matches!(n, Node::Leaf(Value::Null)));
    if nodes.len() != 1 {
        return None;
    }
    Some(finish(nodes.remove(0), Syntax::Yaml))
}

/// The duplicates of a body: read as YAML when `yaml` (its content type says so, or it is an
/// apply) or when it is not JSON.
pub fn duplicates(bytes: &[u8], yaml_body: bool) -> Duplicates {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Duplicates::default();
    };
    if !yaml_body && let Some((_, found)) = json(text) {
        return found;
    }
    yaml(text).map(|(_, found)| found).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_repeats_are_reported_by_path_and_the_last_value_wins() {
        let text = r#"{"spec": {"paused": true, "a": 1, "paused": false,
            "containers": [{"name": "x", "imagePullPolicy": "Always", "imagePullPolicy": "Never"}]}}"#;
        let (value, found) = json(text).unwrap();
        assert_eq!(value["spec"]["paused"], Value::Bool(false));
        assert_eq!(
            value["spec"]["containers"][0]["imagePullPolicy"],
            Value::String("Never".into())
        );
        // The first key keeps its place.
        let keys: Vec<&String> = value["spec"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["paused", "a", "containers"]);
        assert_eq!(
            found.warnings(),
            [
                r#"duplicate field "spec.paused""#,
                r#"duplicate field "spec.containers[0].imagePullPolicy""#
            ]
        );
        assert!(found.position_of("spec.a") < found.found[0].position);
        assert!(found.position_of("spec.containers") > found.found[0].position);
    }

    #[test]
    fn yaml_repeats_are_reported_by_line_as_upstream_words_them() {
        let text = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n  labels:\n    a: \"1\"\n    a: \"2\"\n  name: y\n";
        let (value, found) = yaml(text).unwrap();
        assert_eq!(value["metadata"]["labels"]["a"], Value::String("2".into()));
        assert_eq!(value["metadata"]["name"], Value::String("y".into()));
        assert_eq!(
            found.warnings(),
            [
                r#"line 7: key "a" already set in map"#,
                r#"line 8: key "name" already set in map"#
            ]
        );
        assert_eq!(
            found.yaml_error(),
            "yaml: unmarshal errors:\n  line 7: key \"a\" already set in map\n  line 8: key \"name\" already set in map"
        );
    }

    #[test]
    fn alias_bombs_are_refused_before_they_expand() {
        // Nine levels of nine aliases: 9^9 strings if expanded. The refusal comes from the
        // aliasing check that runs before the parse (the parser's own replay limit would give
        // up only after a million replayed events).
        let mut bomb = String::from(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n  labels: {}\na0: &a0 [\"lol\"]\n",
        );
        for level in 1..=9 {
            let refs = vec![format!("*a{}", level - 1); 9].join(", ");
            bomb.push_str(&format!("a{level}: &a{level} [{refs}]\n"));
        }
        let (line, message) = allot_api::load::check_yaml_aliases(&bomb).unwrap_err();
        assert!(message.contains("excessive aliasing"), "{message}");
        assert!((6..=15).contains(&line), "{line}");
        assert!(yaml(&bomb).is_none());
        assert!(duplicates(bomb.as_bytes(), true).is_empty());
        // 199 aliases of one anchor are what Kubernetes' decoder accepts.
        let mut many =
            String::from("apiVersion: v1\nkind: Namespace\nmetadata: &m {name: x}\nitems:\n");
        for _ in 0..199 {
            many.push_str("- *m\n");
        }
        assert!(yaml(&many).is_some());
    }

    #[test]
    fn bodies_without_repeats_have_none() {
        assert!(duplicates(br#"{"a": {"b": 1}, "b": 2}"#, false).is_empty());
        assert!(duplicates(b"a:\n  b: 1\nb: 2\n", false).is_empty());
        assert!(duplicates(b"not: [valid", false).is_empty());
        assert!(duplicates(b"\xff", false).is_empty());
        // A JSON apply body is read as YAML, as upstream does.
        let found = duplicates(b"{\"a\": 1,\n \"a\": 2}", true);
        assert_eq!(found.syntax, Syntax::Yaml);
        assert_eq!(found.warnings(), [r#"line 2: key "a" already set in map"#]);
    }
}
