//! Kubernetes' YAML decoder's limit on aliases, checked on the parser's events before anything
//! is expanded.
//!
//! `sigs.k8s.io/yaml` (go-yaml v2, and v3 alike) decodes a document node by node and counts
//! every node it decodes, `decoded`, and among them those it decodes while expanding an alias,
//! `aliased`. Before each node it refuses the document ("document contains excessive aliasing")
//! once `aliased > 100`, `decoded > 1000` and `aliased / decoded` exceeds the allowed ratio:
//! 99% up to 400,000 decoded nodes, falling linearly to 10% at 4,000,000 and 10% beyond. Small
//! documents may alias freely; an alias bomb, whose expansion dwarfs its text, is refused.
//!
//! The same counts follow from the event stream without expanding anything: an anchored node's
//! expanded size is known when it ends (aliases inside it count their target's size), and an
//! alias decodes one node for itself plus its target's expanded size, all of them aliased.
//! Within one expansion the ratio only grows, so checking at its end finds every refusal the
//! node-by-node check finds. Sizes saturate, so a bomb of any depth costs one pass over its text.

use std::collections::HashMap;

use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle};

/// Below this many decoded nodes, 99% of them may come from aliases.
const RATIO_RANGE_LOW: u64 = 400_000;
/// From this many decoded nodes on, 10% of them may come from aliases.
const RATIO_RANGE_HIGH: u64 = 4_000_000;

/// The share of a document's decoded nodes that may come from aliases (go-yaml's
/// `allowedAliasRatio`).
fn allowed_alias_ratio(decoded: u64) -> f64 {
    if decoded <= RATIO_RANGE_LOW {
        0.99
    } else if decoded >= RATIO_RANGE_HIGH {
        0.10
    } else {
        let range = (RATIO_RANGE_HIGH - RATIO_RANGE_LOW) as f64;
        0.99 - 0.89 * ((decoded - RATIO_RANGE_LOW) as f64 / range)
    }
}

/// A document that aliasing dominates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExcessiveAliasing {
    /// The 1-based line of the alias (or node) where the decoder would give up.
    pub line: u32,
    /// Nodes decoded by then.
    pub decoded: u64,
    /// Of which from aliases.
    pub aliased: u64,
}

impl ExcessiveAliasing {
    /// The refusal, worded for people.
    pub(crate) fn message(&self) -> String {
        let share = if self.decoded == u64::MAX {
            "nearly all".to_string()
        } else {
            format!("{} of the {}", self.aliased, self.decoded)
        };
        let percent = (allowed_alias_ratio(self.decoded) * 100.0).round();
        format!(
            "document contains excessive aliasing: its aliases expand to {share} values it \
             decodes to, and Kubernetes' YAML decoder allows at most {percent}% of a document of \
             that size to come from aliases; write the repeated parts out, or split the document"
        )
    }
}

/// An open collection.
struct Frame {
    /// Its anchor id (0: none).
    anchor: usize,
    /// Nodes decoded for it so far, itself included.
    size: u64,
    /// Whether it is a mapping, and then whether its next node is a key.
    mapping: bool,
    next_is_key: bool,
    /// Whether the node being read is the value of a merge key (`<<`).
    merge_value: bool,
}

/// Counts of the document being read.
#[derive(Default)]
struct Counts {
    decoded: u64,
    aliased: u64,
}

impl Counts {
    /// Go's check once `nodes` more nodes are decoded, `aliased` of them from an alias.
    fn add(&mut self, nodes: u64, from_alias: bool, line: u32) -> Result<(), ExcessiveAliasing> {
        self.decoded = self.decoded.saturating_add(nodes);
        if from_alias {
            self.aliased = self.aliased.saturating_add(nodes);
        }
        let refused = self.aliased > 100
            && self.decoded > 1000
            && self.aliased as f64 / self.decoded as f64 > allowed_alias_ratio(self.decoded);
        if refused {
            return Err(ExcessiveAliasing {
                line,
                decoded: self.decoded,
                aliased: self.aliased,
            });
        }
        Ok(())
    }
}

/// Whether `text` may hold an alias at all: one needs an anchor (`&`) and an alias (`*`).
pub(crate) fn may_alias(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.contains(&b'*') && bytes.contains(&b'&')
}

/// Reads the events of `text` (every document of it) and refuses the first document Kubernetes'
/// YAML decoder would refuse for its aliases. A syntax error ends the check quietly: the parse
/// that follows reports it. Lines are 1-based within `text`.
pub(crate) fn check(text: &str) -> Result<(), ExcessiveAliasing> {
    if !may_alias(text) {
        return Ok(());
    }
    let mut sizes: HashMap<usize, u64> = HashMap::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut counts = Counts::default();
    for item in Parser::new_from_str(text) {
        let Ok((event, span)) = item else {
            return Ok(());
        };
        let line = u32::try_from(span.start.line()).unwrap_or(u32::MAX);
        match event {
            Event::DocumentStart(..) => {
                // Each document is decoded on its own, its document node first.
                sizes.clear();
                stack.clear();
                counts = Counts::default();
                counts.add(1, false, line)?;
            }
            Event::Scalar(value, style, anchor, tag) => {
                let merge_key = stack.last().is_some_and(|f| f.mapping && f.next_is_key)
                    && value == "<<"
                    && style == ScalarStyle::Plain
                    && tag.is_none();
                if merge_key {
                    // The decoder merges the value in without decoding the key.
                    if let Some(frame) = stack.last_mut() {
                        frame.next_is_key = false;
                        frame.merge_value = true;
                    }
                    continue;
                }
                counts.add(1, false, line)?;
                if anchor != 0 {
                    sizes.insert(anchor, 1);
                }
                finish_node(&mut stack, 1);
            }
            Event::SequenceStart(_, anchor, _) | Event::MappingStart(_, anchor, _) => {
                let mapping = matches!(event, Event::MappingStart(..));
                // A list of maps merged in (`<<: [*a, *b]`) is not itself decoded.
                let merged_list = !mapping && stack.last().is_some_and(|f| f.merge_value);
                let own = u64::from(!merged_list);
                counts.add(own, false, line)?;
                stack.push(Frame {
                    anchor,
                    size: own,
                    mapping,
                    next_is_key: mapping,
                    merge_value: false,
                });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some(frame) = stack.pop() {
                    if frame.anchor != 0 {
                        sizes.insert(frame.anchor, frame.size);
                    }
                    finish_node(&mut stack, frame.size);
                }
            }
            Event::Alias(target) => {
                // The alias node itself, then its target decoded again, all of it aliased.
                // An alias inside its own anchor (not yet ended) counts as one node; the
                // parser refuses the recursion.
                let expanded = sizes.get(&target).copied().unwrap_or(0);
                counts.add(1, false, line)?;
                counts.add(expanded, true, line)?;
                finish_node(&mut stack, expanded.saturating_add(1));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Adds a finished node's size to its parent and moves the parent past it.
fn finish_node(stack: &mut [Frame], size: u64) {
    if let Some(parent) = stack.last_mut() {
        parent.size = parent.size.saturating_add(size);
        if parent.mapping {
            if parent.next_is_key {
                parent.next_is_key = false;
            } else {
                parent.next_is_key = true;
                parent.merge_value = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `count` aliases of one small anchored mapping, in one list.
    fn many_aliases(count: usize) -> String {
        let mut text = String::from("base: &b {a: 1, b: 2}\nitems:\n");
        for _ in 0..count {
            text.push_str("- *b\n");
        }
        text
    }

    /// The billion laughs, `levels` deep with `fan` aliases per level.
    fn laughs(levels: usize, fan: usize) -> String {
        let mut text = String::from("a0: &a0 [\"lol\"]\n");
        for level in 1..=levels {
            let refs = vec![format!("*a{}", level - 1); fan].join(", ");
            text.push_str(&format!("a{level}: &a{level} [{refs}]\n"));
        }
        text
    }

    #[test]
    fn small_documents_may_alias_freely() {
        assert_eq!(check(&many_aliases(199)), Ok(()));
        // 10,000 aliases of a 5-node map: 60,000 nodes, 50,000 from aliases, 83%.
        assert_eq!(check(&many_aliases(10_000)), Ok(()));
    }

    #[test]
    fn alias_bombs_are_refused_at_the_alias_that_tips_the_ratio() {
        let err = check(&laughs(9, 9)).unwrap_err();
        assert!(err.aliased as f64 / err.decoded as f64 > 0.99, "{err:?}");
        assert!(err.line >= 2 && err.line <= 10, "{err:?}");
        assert!(
            err.message().contains("excessive aliasing"),
            "{}",
            err.message()
        );
        // Saturating sizes: an absurd depth costs no more.
        let err = check(&laughs(80, 10)).unwrap_err();
        assert!(err.line < 10, "{err:?}");
    }

    #[test]
    fn the_ratio_follows_go_yaml() {
        assert_eq!(allowed_alias_ratio(1_000), 0.99);
        assert_eq!(allowed_alias_ratio(400_000), 0.99);
        assert!((allowed_alias_ratio(2_200_000) - 0.545).abs() < 1e-9);
        assert_eq!(allowed_alias_ratio(4_000_000), 0.10);
        assert_eq!(allowed_alias_ratio(u64::MAX), 0.10);
    }

    #[test]
    fn counts_reset_per_document_and_merges_skip_their_key() {
        // Each document alone stays under the ratio's 1,000-node floor.
        let one = many_aliases(150);
        let text = format!("{one}---\n{one}---\n{one}");
        assert_eq!(check(&text), Ok(()));
        // A merge key is not decoded: 999 nodes of a 1,000-node floor stay accepted.
        let merged = "base: &b {a: 1}\nx:\n  <<: *b\n";
        assert_eq!(check(merged), Ok(()));
    }

    #[test]
    fn texts_without_anchor_and_alias_are_not_read() {
        assert!(!may_alias("a: 1\nb: \"x*y\"\n"));
        assert!(may_alias("a: &x 1\nb: *x\n"));
        assert_eq!(check("a: [unclosed"), Ok(()));
    }
}
