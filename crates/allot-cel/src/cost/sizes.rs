//! Size estimates (cel-go's `SizeEstimate`: a range of string lengths in code points, byte
//! counts, or list and map entries) and the DRA environment's sizes of everything reachable from
//! `device` (upstream's `sizeEstimator` in `dynamic-resource-allocation/cel/compile.go`).

/// The most a size or cost can be; cel-go's `math.MaxUint64`, reached by saturation.
pub(crate) const UNBOUNDED: u64 = u64::MAX;

/// Maximum length of a driver name (`DriverNameMaxLength`).
const DRIVER_MAX: u64 = 63;
/// Maximum length of an attribute domain (`DeviceMaxDomainLength`).
const DOMAIN_MAX: u64 = 63;
/// Maximum length of an attribute or capacity name (`DeviceMaxIDLength`).
const ID_MAX: u64 = 32;
/// Maximum entries per attribute/capacity map (`ResourceSliceMaxAttributesAndCapacitiesPerDevice`).
const MAP_MAX: u64 = 32;
/// Maximum size of an attribute value: string length or list length (the larger of
/// `DeviceAttributeMaxValueLength` and `ResourceSliceMaxAttributeValuesPerDevice`).
pub(crate) const ATTRIBUTE_MAX: u64 = 64;

/// A range of sizes, as cel-go's `SizeEstimate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Size {
    pub(crate) min: u64,
    pub(crate) max: u64,
}

impl Size {
    pub(crate) const UNKNOWN: Size = Size {
        min: 0,
        max: UNBOUNDED,
    };

    pub(crate) fn fixed(n: u64) -> Size {
        Size { min: n, max: n }
    }

    pub(crate) fn add(self, o: Size) -> Size {
        Size {
            min: self.min.saturating_add(o.min),
            max: self.max.saturating_add(o.max),
        }
    }

    pub(crate) fn mul(self, o: Size) -> Size {
        Size {
            min: self.min.saturating_mul(o.min),
            max: self.max.saturating_mul(o.max),
        }
    }

    pub(crate) fn union(self, o: Size) -> Size {
        Size {
            min: self.min.min(o.min),
            max: self.max.max(o.max),
        }
    }

    /// The largest cost of traversing this size at `factor` per unit: `ceil(max × factor)`.
    pub(crate) fn cost(self, factor: f64) -> u64 {
        scaled(self.max, factor)
    }
}

/// `ceil(x × factor)`, saturating (cel-go's `multiplyByCostFactor`).
pub(crate) fn scaled(x: u64, factor: f64) -> u64 {
    let xf = x as f64;
    if xf > 0.0 && factor > 0.0 && xf > u64::MAX as f64 / factor {
        return UNBOUNDED;
    }
    let v = (xf * factor).ceil();
    if v >= 18_446_744_073_709_551_616.0 {
        UNBOUNDED
    } else {
        v as u64
    }
}

/// The sizes of a container's entries (cel-go's `entrySizeEstimate`), known for literals and
/// what is computed from them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entries {
    /// Whether the container is a list (keys are indices) rather than a map.
    pub(crate) list: bool,
    pub(crate) key: Size,
    pub(crate) val: Size,
}

impl Entries {
    pub(crate) fn union(a: Option<Entries>, b: Option<Entries>) -> Option<Entries> {
        let (a, b) = (a?, b?);
        Some(Entries {
            list: a.list,
            key: a.key.union(b.key),
            val: a.val.union(b.val),
        })
    }
}

/// One step of a field path (cel-go's `AstNode.Path()`): a field name, or the elements, values
/// or keys of a container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seg {
    Field(String),
    Items,
    Values,
    Keys,
}

/// The declared types of the DRA environment, as far as their sizes go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decl {
    Device,
    Driver,
    MultiAlloc,
    /// `device.attributes` (`false`) or `device.capacity` (`true`).
    Outer(bool),
    /// One domain of `device.attributes` or `device.capacity`.
    Inner(bool),
    Attribute,
    Quantity,
    Domain,
    Id,
}

impl Decl {
    fn max_elements(self) -> u64 {
        match self {
            Decl::Device | Decl::Quantity => 0,
            Decl::Driver => DRIVER_MAX,
            Decl::MultiAlloc => 1,
            Decl::Outer(_) | Decl::Inner(_) => MAP_MAX,
            Decl::Attribute => ATTRIBUTE_MAX,
            Decl::Domain => DOMAIN_MAX,
            Decl::Id => ID_MAX,
        }
    }

    fn step(self, seg: &Seg) -> Option<Decl> {
        Some(match (self, seg) {
            (Decl::Device, Seg::Field(f)) => match f.as_str() {
                "driver" => Decl::Driver,
                "attributes" => Decl::Outer(false),
                "capacity" => Decl::Outer(true),
                "allowMultipleAllocations" => Decl::MultiAlloc,
                _ => return None,
            },
            (Decl::Outer(cap), Seg::Items | Seg::Values) => Decl::Inner(cap),
            (Decl::Outer(_), Seg::Keys) => Decl::Domain,
            (Decl::Inner(false), Seg::Items | Seg::Values | Seg::Field(_)) => Decl::Attribute,
            (Decl::Inner(true), Seg::Items | Seg::Values) => Decl::Quantity,
            (Decl::Inner(_), Seg::Keys) => Decl::Id,
            _ => return None,
        })
    }
}

/// The size of what a path from `device` reaches, or `None` for any other path.
pub(crate) fn device_path_size(path: &[Seg]) -> Option<Size> {
    let (first, rest) = path.split_first()?;
    if *first != Seg::Field("device".into()) {
        return None;
    }
    let mut decl = Decl::Device;
    for seg in rest {
        decl = decl.step(seg)?;
    }
    Some(Size {
        min: 0,
        max: decl.max_elements(),
    })
}
