//! The bridge to `allot-cel`: a compile cache shared across calls, and one CEL view per device.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use allot_api::resource::v1::{Device, DeviceAttribute};
use allot_cel::{AttributeValue, CelDevice, CompiledExpression};

/// Compiled CEL expressions by source text, kept across allocation calls (upstream's
/// `cel.Cache`). Compile errors are cached too.
///
/// It also remembers selector verdicts per expression and device content (driver, attributes,
/// capacities, allowMultipleAllocations: everything CEL can see), so a device that did not
/// change is not evaluated again in the next scheduling cycle. Evaluation errors are not
/// remembered.
#[derive(Default)]
pub struct CelCache {
    compiled: RefCell<HashMap<String, (usize, Compiled), FxBuild>>,
    /// The expression looked up last: the search asks for the same selector once per device,
    /// and comparing the text is cheaper than hashing it.
    last: RefCell<Option<(String, usize, Compiled)>>,
    verdicts: RefCell<HashMap<(usize, u128), bool, FxBuild>>,
    /// What is known of each node's devices, kept while its slices stay the same objects.
    pub(crate) views: crate::view::Views,
    /// Numbers of the claim device specs the fast path has plans for.
    pub(crate) specs: crate::fast::Specs,
}

/// A compiled expression, or the compiler's message.
pub(crate) type Compiled = Rc<Result<CompiledExpression, String>>;

/// Remembered verdicts beyond this many are dropped (all at once) to bound memory.
const MAX_VERDICTS: usize = 1 << 20;

impl std::fmt::Debug for CelCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CelCache")
            .field("entries", &self.compiled.borrow().len())
            .finish()
    }
}

impl CelCache {
    /// The compiled form of `expression`, compiling it on first use.
    pub(crate) fn get(&self, expression: &str) -> Compiled {
        self.get_with_id(expression).1
    }

    /// The compiled form and a stable id of `expression` within this cache.
    pub(crate) fn get_with_id(&self, expression: &str) -> (usize, Compiled) {
        if let Some((text, id, hit)) = self.last.borrow().as_ref()
            && text == expression
        {
            return (*id, Rc::clone(hit));
        }
        let found = self
            .compiled
            .borrow()
            .get(expression)
            .map(|(id, hit)| (*id, Rc::clone(hit)));
        if let Some((id, hit)) = found {
            *self.last.borrow_mut() = Some((expression.to_string(), id, Rc::clone(&hit)));
            return (id, hit);
        }
        let compiled = Rc::new(allot_cel::compile(expression).map_err(|err| err.to_string()));
        let mut map = self.compiled.borrow_mut();
        let id = map.len();
        map.insert(expression.to_string(), (id, Rc::clone(&compiled)));
        (id, compiled)
    }

    /// A remembered verdict of expression `id` on a device with content hash `device`.
    pub(crate) fn verdict(&self, id: usize, device: u128) -> Option<bool> {
        self.verdicts.borrow().get(&(id, device)).copied()
    }

    /// Remembers a verdict.
    pub(crate) fn remember(&self, id: usize, device: u128, verdict: bool) {
        let mut verdicts = self.verdicts.borrow_mut();
        if verdicts.len() >= MAX_VERDICTS {
            verdicts.clear();
        }
        verdicts.insert((id, device), verdict);
    }
}

fn attribute_value(attribute: &DeviceAttribute) -> Option<AttributeValue> {
    Some(if let Some(v) = attribute.bool_value {
        AttributeValue::Bool(v)
    } else if let Some(v) = attribute.int_value {
        AttributeValue::Int(v)
    } else if let Some(v) = &attribute.string_value {
        AttributeValue::String(v.clone())
    } else if let Some(v) = &attribute.version_value {
        AttributeValue::Version(v.clone())
    } else if !attribute.bool_values.is_empty() {
        AttributeValue::BoolList(attribute.bool_values.clone())
    } else if !attribute.int_values.is_empty() {
        AttributeValue::IntList(attribute.int_values.clone())
    } else if !attribute.string_values.is_empty() {
        AttributeValue::StringList(attribute.string_values.clone())
    } else if !attribute.version_values.is_empty() {
        AttributeValue::VersionList(attribute.version_values.clone())
    } else {
        return None;
    })
}

fn qualified(name: &str, driver: &str) -> String {
    if name.contains('/') {
        name.to_string()
    } else {
        format!("{driver}/{name}")
    }
}

/// The CEL view of a device: attributes and capacities under fully qualified names. An
/// attribute without a value of a known type is an error, as upstream reports it when the
/// device is converted for CEL.
pub(crate) fn cel_device(driver: &str, device: &Device, multi: bool) -> Result<CelDevice, String> {
    let mut cel = CelDevice::new(driver, multi);
    for (name, attribute) in &device.attributes {
        let Some(value) = attribute_value(attribute) else {
            return Err(format!(
                "attribute {}: unsupported attribute value",
                qualified(name, driver)
            ));
        };
        cel = cel.attribute(&qualified(name, driver), value);
    }
    for (name, capacity) in &device.capacity {
        cel = cel.capacity(&qualified(name, driver), capacity.value.clone());
    }
    Ok(cel)
}

/// A small, fast, non-cryptographic hasher (the Fx multiply-rotate scheme) for the cache's
/// maps, whose keys are short and not chosen by an attacker.
#[derive(Default, Clone, Copy)]
pub(crate) struct Fx(u64);

const FX_K: u64 = 0x517c_c1b7_2722_0a95;

impl Fx {
    #[inline]
    fn word(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(FX_K);
    }
}

/// The last 1 to 7 bytes of a hashed slice as one word, without a variable-length copy (which
/// compiles to a `memcpy` call): 4 to 7 bytes as two overlapping 4-byte loads, fewer one by
/// one. For a given length every byte lands in the word, so equal words mean equal bytes.
#[inline]
pub(crate) fn tail_word(rest: &[u8]) -> u64 {
    let n = rest.len();
    if n >= 4 {
        let lo = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
        let hi = u32::from_le_bytes([rest[n - 4], rest[n - 3], rest[n - 2], rest[n - 1]]);
        u64::from(lo) | (u64::from(hi) << 32)
    } else {
        rest.iter()
            .enumerate()
            .fold(0, |word, (i, &byte)| word | (u64::from(byte) << (8 * i)))
    }
}

/// Implements `Hasher` for a state with a `word(u64)` mixing step: bytes are fed as
/// little-endian words, the tail padded and tagged with its length.
macro_rules! word_hasher {
    ($ty:ty) => {
        impl std::hash::Hasher for $ty {
            #[inline]
            fn write(&mut self, bytes: &[u8]) {
                let mut chunks = bytes.chunks_exact(8);
                for chunk in &mut chunks {
                    let mut word = [0u8; 8];
                    word.copy_from_slice(chunk);
                    self.word(u64::from_le_bytes(word));
                }
                let rest = chunks.remainder();
                if !rest.is_empty() {
                    self.word(tail_word(rest) ^ ((rest.len() as u64) << 56));
                }
            }

            #[inline]
            fn write_u8(&mut self, n: u8) {
                self.word(u64::from(n));
            }

            #[inline]
            fn write_u64(&mut self, n: u64) {
                self.word(n);
            }

            #[inline]
            fn write_usize(&mut self, n: usize) {
                self.word(n as u64);
            }

            fn finish(&self) -> u64 {
                self.0
            }
        }
    };
}

word_hasher!(Fx);

/// Builds [`Fx`] hashers for the cache's maps.
pub(crate) type FxBuild = std::hash::BuildHasherDefault<Fx>;

/// Two Fx states fed the same words in one pass: the 128-bit content key of a device. The
/// second state mixes each word with a different multiplier and rotation so that the halves
/// are independent.
struct Fx128(u64, u64);

impl Fx128 {
    #[inline]
    fn word(&mut self, word: u64) {
        const K2: u64 = 0x9e37_79b9_7f4a_7c15;
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(FX_K);
        self.1 = (self.1.rotate_left(23) ^ word).wrapping_mul(K2);
    }
}

word_hasher!(Fx128);

/// A 128-bit hash of everything CEL can see of a device, computed in one pass.
pub(crate) fn device_hash(driver: &str, device: &Device) -> u128 {
    use std::hash::Hash;
    let mut h = Fx128(0xc2b2_ae3d_27d4_eb4f, 0x1656_67b1_9e37_79f9);
    driver.hash(&mut h);
    device.allow_multiple_allocations.hash(&mut h);
    device.attributes.len().hash(&mut h);
    for (name, a) in &device.attributes {
        name.hash(&mut h);
        // Only the value CEL sees (the first one set, as `attribute_value` picks it), behind
        // a tag for its type; an attribute without a value makes the view an error, and
        // verdicts for such devices are never remembered.
        if let Some(v) = a.bool_value {
            (1u8, v).hash(&mut h);
        } else if let Some(v) = a.int_value {
            (2u8, v).hash(&mut h);
        } else if let Some(v) = &a.string_value {
            (3u8, v).hash(&mut h);
        } else if let Some(v) = &a.version_value {
            (4u8, v).hash(&mut h);
        } else if !a.bool_values.is_empty() {
            (5u8, &a.bool_values).hash(&mut h);
        } else if !a.int_values.is_empty() {
            (6u8, &a.int_values).hash(&mut h);
        } else if !a.string_values.is_empty() {
            (7u8, &a.string_values).hash(&mut h);
        } else if !a.version_values.is_empty() {
            (8u8, &a.version_values).hash(&mut h);
        } else {
            0u8.hash(&mut h);
        }
    }
    device.capacity.len().hash(&mut h);
    for (name, c) in &device.capacity {
        name.hash(&mut h);
        c.value.hash(&mut h);
    }
    (u128::from(h.0) << 64) | u128::from(h.1)
}

/// Evaluates a compiled expression against a device.
pub(crate) fn evaluate(
    expression: &CompiledExpression,
    device: &CelDevice,
) -> Result<bool, String> {
    expression.evaluate(device).map_err(|err| err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_words_keep_every_byte() {
        assert_eq!(tail_word(b"a"), 0x61);
        assert_eq!(tail_word(b"abc"), 0x0063_6261);
        assert_eq!(tail_word(b"abcd"), 0x6463_6261_6463_6261);
        assert_eq!(tail_word(b"abcdefg"), 0x6766_6564_6463_6261);
        // Strings of one length that differ in any byte give different words.
        let base = *b"gpu-123";
        for i in 0..base.len() {
            let mut other = base;
            other[i] ^= 1;
            assert_ne!(tail_word(&base), tail_word(&other), "byte {i}");
        }
    }
}
