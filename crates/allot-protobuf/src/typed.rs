//! Typed readers: the messages of the kinds read most (Pods, ResourceSlices) decoded straight
//! into allot-api's structs, field number by field number, as generated protobuf code reads
//! them, without presenting each message to serde as a JSON object; and any object (or the
//! parts of one allot keeps opaque) into a `serde_json::Value` the same way.
//!
//! Why: a typed object read through [`crate::decode`] costs a serde map per message, a
//! string match of every key against the struct's field names, and a visitor call per value;
//! for these kinds that is most of the decode. Here each message's fields are a table (number
//! → struct field, [`messages!`]); a value's type reads itself ([`Decode`]): strings, numbers,
//! times, lists, maps, the tables' structs and `serde_json::Value`s directly, everything else
//! (quantities, enumerations, bytes, raw JSON, the structs with no table) through the serde
//! decoder, from that field's values only.
//!
//! The serde decoder stays the definition. A message the table cannot read exactly as it
//! does (a field the table does not list, an inlined struct, a field that comes back after
//! others, a message of another type than the table's) is no guess: the typed reader stops,
//! and the object is decoded again through serde. So is a body that does not decode, so its
//! error is the serde decoder's, word for word. Tests hold the two to the same objects and
//! errors (in `tests.rs`: every example object, every other kind, messages reordered and split,
//! random bytes; the `protobuf` fuzz target through `fuzzing::check`), check that the typed
//! reader reads the example Pods and ResourceSlices itself, and that each table sends a number
//! to the struct field of the schema's name for it (`typed_tables_follow_the_schema`).

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::sync::OnceLock;

use allot_api::core::v1 as core;
use allot_api::meta::v1 as meta;
use allot_api::resource::v1 as resource;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use smallvec::{SmallVec, smallvec};

use crate::Error;
use crate::decode::{Cx, field_value, fits, is_null, map_entry, omitted_one, time_text, utf8};
use crate::schema::{Card, Field, Message as SchemaMessage, Schema, Ty};
use crate::wire::{Raw, Reader};

/// An object kind with a typed reader ([`crate::decode_typed`]).
pub trait Typed: DeserializeOwned {
    /// Reads the message `raw` of schema message `msg`, the envelope's `api_version` and
    /// `kind` its type meta; an error when the typed reader does not read it exactly.
    #[doc(hidden)]
    fn read(raw: &[u8], msg: u16, api_version: &str, kind: &str) -> Result<Self, Error>;
}

/// Where a value is read from: its field's type and cardinality.
#[derive(Clone, Copy)]
pub(crate) struct Slot {
    ty: Ty,
    card: Card,
}

impl Slot {
    /// The slot of a schema field.
    fn of(field: &Field) -> Slot {
        Slot {
            ty: field.ty,
            card: field.card,
        }
    }

    /// One value of this slot's type (an element of a list, a map's value).
    fn one(self) -> Slot {
        Slot {
            ty: self.ty,
            card: Card::One,
        }
    }
}

/// A value read from a field's values (one, or a list's or map's run). Through serde unless a
/// type reads itself.
pub(crate) trait Decode: DeserializeOwned {
    /// The value of the field's values `vals`.
    fn decode(cx: &Cx<'_>, vals: &[Raw<'_>], slot: Slot) -> Result<Self, Error> {
        field_value(cx, slot.ty, slot.card, vals)
    }

    /// Sets `self` from the field's values (a struct with a table merges them in place).
    fn merge(&mut self, cx: &Cx<'_>, vals: &[Raw<'_>], slot: Slot) -> Result<(), Error> {
        *self = Self::decode(cx, vals, slot)?;
        Ok(())
    }

    /// A value to read in place, or `None` (the default): decoded, then moved where it goes.
    /// A struct with a table is its default, and a list's element or a map's value is merged
    /// into it where it stays (a large struct is not moved).
    fn fresh() -> Option<Self> {
        None
    }
}

/// The typed reader cannot read this message exactly: serde reads the object.
#[cold]
fn not_typed() -> Error {
    Error::new("not read by the typed reader")
}

impl Decode for String {
    #[inline]
    fn decode(cx: &Cx<'_>, vals: &[Raw<'_>], slot: Slot) -> Result<Self, Error> {
        match (slot.ty, slot.card, vals) {
            (Ty::String, Card::One, [Raw::Bytes(b)]) => Ok(utf8(b)?.to_owned()),
            (Ty::Time | Ty::MicroTime, Card::One, [Raw::Bytes(b)]) if !b.is_empty() => {
                time_text(slot.ty, b)
            }
            _ => field_value(cx, slot.ty, slot.card, vals),
        }
    }
}

/// Scalars read from their varint when the field is of their type (as serde's visitors
/// convert it), through serde otherwise.
macro_rules! varint_scalars {
    ($($ty:ty { $($wire:pat => $read:expr),+ $(,)? })*) => {
        $(impl Decode for $ty {
            #[inline]
            fn decode(cx: &Cx<'_>, vals: &[Raw<'_>], slot: Slot) -> Result<Self, Error> {
                match (slot.ty, slot.card, vals) {
                    $(($wire, Card::One, [Raw::Varint(v)]) => Ok($read(*v)),)+
                    _ => field_value(cx, slot.ty, slot.card, vals),
                }
            }
        })*
    };
}

varint_scalars! {
    bool { Ty::Bool => |v: u64| v != 0 }
    i64 { Ty::Int64 => |v: u64| v as i64, Ty::Int32 => |v: u64| i64::from(v as i32) }
    i32 { Ty::Int32 => |v: u64| v as i32 }
}

impl<T: Decode> Decode for Option<T> {
    fn decode(cx: &Cx<'_>, vals: &[Raw<'_>], slot: Slot) -> Result<Self, Error> {
        if is_null(slot.ty, slot.card, vals)? {
            return Ok(None);
        }
        T::decode(cx, vals, slot).map(Some)
    }

    fn merge(&mut self, cx: &Cx<'_>, vals: &[Raw<'_>], slot: Slot) -> Result<(), Error> {
        match self {
            Some(value) if !is_null(slot.ty, slot.card, vals)? => value.merge(cx, vals, slot),
            _ => {
                *self = Self::decode(cx, vals, slot)?;
                Ok(())
            }
        }
    }
}

/// Whether values of `ty` may come packed (read through serde).
fn scalar(ty: Ty) -> bool {
    matches!(
        ty,
        Ty::Bool | Ty::Int32 | Ty::Int64 | Ty::Uint32 | Ty::Uint64 | Ty::Double | Ty::Float
    )
}

impl<T: Decode> Decode for Vec<T> {
    fn decode(cx: &Cx<'_>, vals: &[Raw<'_>], slot: Slot) -> Result<Self, Error> {
        if slot.card != Card::Repeated || scalar(slot.ty) {
            return field_value(cx, slot.ty, slot.card, vals);
        }
        let one = slot.one();
        let mut out: Vec<T> = Vec::with_capacity(vals.len());
        for raw in vals {
            let raw = std::slice::from_ref(raw);
            match T::fresh() {
                Some(fresh) => {
                    out.push(fresh);
                    if let Some(last) = out.last_mut() {
                        last.merge(cx, raw, one)?;
                    }
                }
                None => out.push(T::decode(cx, raw, one)?),
            }
        }
        Ok(out)
    }
}

impl<V: Decode> Decode for BTreeMap<String, V> {
    fn decode(cx: &Cx<'_>, vals: &[Raw<'_>], slot: Slot) -> Result<Self, Error> {
        if slot.card != Card::Map {
            return field_value(cx, slot.ty, slot.card, vals);
        }
        let one = slot.one();
        let mut out = BTreeMap::new();
        for raw in vals {
            let (key, value) = map_entry(raw, slot.ty)?;
            let (key, value) = (utf8(key)?.to_owned(), std::slice::from_ref(&value));
            // A key met again is replaced, as serde's map does.
            match V::fresh() {
                Some(fresh) => {
                    let at = match out.entry(key) {
                        Entry::Vacant(entry) => entry.insert(fresh),
                        Entry::Occupied(entry) => {
                            let at = entry.into_mut();
                            *at = fresh;
                            at
                        }
                    };
                    at.merge(cx, value, one)?;
                }
                None => {
                    out.insert(key, V::decode(cx, value, one)?);
                }
            }
        }
        Ok(out)
    }
}

/// Types read through serde, from their field's values.
macro_rules! through_serde {
    ($($ty:ty),* $(,)?) => {
        $(impl Decode for $ty {})*
    };
}

through_serde!(
    allot_api::Quantity,
    core::Affinity,
    core::NodeSelector,
    core::PreemptionPolicy,
    core::Protocol,
    core::TaintEffect,
    core::TolerationOperator,
    core::TopologySpreadConstraint,
    core::WorkloadReference,
    resource::CounterSet,
    resource::DeviceCounterConsumption,
    resource::DeviceTaint,
    resource::CapacityRequestPolicy,
    resource::SkipNodeOperation,
);

/// A `serde_json::Value` (the parts of an object allot keeps opaque, or a whole object) built
/// from the wire as serde's reading builds it: a message is an object of its fields' JSON
/// names (an inlined struct's fields among them), a list an array, a map an object; a zero
/// scalar left out as Go's JSON leaves it out. Special encodings (quantities, times, bytes,
/// raw JSON) are read through serde.
impl Decode for Value {
    fn decode(cx: &Cx<'_>, vals: &[Raw<'_>], slot: Slot) -> Result<Self, Error> {
        match slot.card {
            Card::One => one_value(cx, slot.ty, vals),
            Card::Repeated if !scalar(slot.ty) => {
                let mut out = Vec::with_capacity(vals.len());
                for raw in vals {
                    out.push(one_value(cx, slot.ty, std::slice::from_ref(raw))?);
                }
                Ok(Value::Array(out))
            }
            Card::Map => {
                let mut out = Map::with_capacity(vals.len());
                for raw in vals {
                    let (key, value) = map_entry(raw, slot.ty)?;
                    let value = one_value(cx, slot.ty, std::slice::from_ref(&value))?;
                    out.insert(utf8(key)?.to_owned(), value);
                }
                Ok(Value::Object(out))
            }
            Card::Repeated => field_value(cx, slot.ty, slot.card, vals),
        }
    }
}

/// One value of type `ty` as a `Value`.
fn one_value(cx: &Cx<'_>, ty: Ty, vals: &[Raw<'_>]) -> Result<Value, Error> {
    Ok(match (ty, vals) {
        (Ty::String, [Raw::Bytes(b)]) => Value::String(utf8(b)?.to_owned()),
        (Ty::Bool, [Raw::Varint(v)]) => Value::Bool(*v != 0),
        (Ty::Int32, [Raw::Varint(v)]) => Value::from(i64::from(*v as i32)),
        (Ty::Int64, [Raw::Varint(v)]) => Value::from(*v as i64),
        (Ty::Uint32, [Raw::Varint(v)]) => Value::from(u64::from(*v as u32)),
        (Ty::Uint64, [Raw::Varint(v)]) => Value::from(*v),
        (Ty::Time | Ty::MicroTime, [Raw::Bytes(b)]) if !b.is_empty() => {
            Value::String(time_text(ty, b)?)
        }
        (Ty::Message(msg), [Raw::Bytes(data)]) => {
            let mut out = Map::with_capacity(count_fields(data));
            message_value(cx, msg, data, &mut out)?;
            Value::Object(out)
        }
        _ => return field_value(cx, ty, Card::One, vals),
    })
}

/// How many fields `data` holds (a repeated field's values each), to size its object: an
/// object grown field by field is rehashed several times.
fn count_fields(data: &[u8]) -> usize {
    let mut reader = Reader::new(data);
    let mut count = 0;
    while let Ok(Some(_)) = reader.field() {
        count += 1;
    }
    count
}

/// The fields of message `msg` in `data` into `out`.
fn message_value(
    cx: &Cx<'_>,
    msg: u16,
    data: &[u8],
    out: &mut Map<String, Value>,
) -> Result<(), Error> {
    let msg = &cx.schema().messages[msg as usize];
    each_field(msg, data, |field, vals| {
        if field.inline {
            let (Ty::Message(inner), [Raw::Bytes(data)]) = (field.ty, vals) else {
                return Err(not_typed());
            };
            return message_value(cx, inner, data, out);
        }
        let value = match field.card {
            Card::One => one_value(cx, field.ty, vals)?,
            _ => Value::decode(cx, vals, Slot::of(field))?,
        };
        out.insert(String::from(&*field.json), value);
        Ok(())
    })
}

/// Calls `each` with every field of message `msg` in `data` and its values, as the typed
/// readers take them: the wire type checked, a zero scalar Go's JSON leaves out skipped, a
/// repeated or map field with its run of values. A field number the schema does not know, or a
/// field met again after others (its values are to merge), stops the typed reader.
fn each_field<'d>(
    msg: &SchemaMessage,
    data: &'d [u8],
    mut each: impl FnMut(&Field, &[Raw<'d>]) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut reader = Reader::new(data);
    let mut seen = 0u128;
    while let Some((number, raw)) = reader.field()? {
        let Some((index, field)) = msg.field_by_number(number) else {
            return Err(not_typed());
        };
        fits(msg, field, &raw)?;
        let bit = 1u128.checked_shl(u32::from(index)).unwrap_or(0);
        if seen & bit != 0 || bit == 0 {
            return Err(not_typed());
        }
        seen |= bit;
        if field.card == Card::One {
            if omitted_one(field, &raw) {
                continue;
            }
            each(field, std::slice::from_ref(&raw))?;
        } else {
            let mut vals: SmallVec<[Raw<'d>; 8]> = smallvec![raw];
            while reader.peek_number() == Some(u64::from(number)) {
                let Some((_, raw)) = reader.field()? else {
                    break;
                };
                fits(msg, field, &raw)?;
                vals.push(raw);
            }
            each(field, &vals)?;
        }
    }
    Ok(())
}

impl Typed for Value {
    fn read(raw: &[u8], msg: u16, api_version: &str, kind: &str) -> Result<Self, Error> {
        let cx = Cx::streamed(Schema::get());
        let mut out = Map::with_capacity(count_fields(raw) + 2);
        out.insert(
            "apiVersion".to_owned(),
            Value::String(api_version.to_owned()),
        );
        out.insert("kind".to_owned(), Value::String(kind.to_owned()));
        message_value(&cx, msg, raw, &mut out)?;
        Ok(Value::Object(out))
    }
}

/// A struct with a table: its schema message and its fields by number.
pub(crate) trait Message: Default {
    /// The schema message (`package/version.Name`).
    const NAME: &'static str;
    /// The field numbers the table reads, with the struct fields they go to.
    #[cfg(test)]
    const FIELDS: &'static [(u32, &'static str)];

    /// The schema message's index.
    fn index() -> Option<u16>;

    /// Sets the field `number` from its values.
    fn field(&mut self, cx: &Cx, number: u32, vals: &[Raw], slot: Slot) -> Result<(), Error>;
}

/// Merges the message `data` (of schema message `msg`) into `out`, field by field. A field the
/// serde decoder would read differently stops the reading (see the module's doc).
fn merge_message<M: Message>(out: &mut M, cx: &Cx<'_>, msg: u16, data: &[u8]) -> Result<(), Error> {
    if M::index() != Some(msg) {
        return Err(not_typed());
    }
    let msg = &cx.schema().messages[msg as usize];
    each_field(msg, data, |field, vals| {
        // An inlined struct's fields are the struct's own in JSON: serde's.
        if field.inline {
            return Err(not_typed());
        }
        out.field(cx, field.number, vals, Slot::of(field))
    })
}

/// Merges a struct with a table from its field's value.
fn merge_struct<M: Message>(
    out: &mut M,
    cx: &Cx<'_>,
    vals: &[Raw<'_>],
    slot: Slot,
) -> Result<(), Error> {
    let (msg, data) = payload(slot, vals)?;
    merge_message(out, cx, msg, data)
}

/// The message a struct reads from its field's value, and its payload.
fn payload<'d>(slot: Slot, vals: &[Raw<'d>]) -> Result<(u16, &'d [u8]), Error> {
    match (slot.ty, slot.card, vals) {
        (Ty::Message(msg), Card::One, [Raw::Bytes(data)]) => Ok((msg, data)),
        _ => Err(not_typed()),
    }
}

/// Tables: `Type = "package/version.Message" { number => field, ... }`. A number the schema
/// has and the table does not is read by serde (which refuses it when the struct has no such
/// field).
macro_rules! messages {
    ($($ty:ty = $name:literal { $($number:literal => $field:ident),* $(,)? })*) => {
        $(
            impl Message for $ty {
                const NAME: &'static str = $name;
                #[cfg(test)]
                const FIELDS: &'static [(u32, &'static str)] = &[$(($number, stringify!($field))),*];

                fn index() -> Option<u16> {
                    static INDEX: OnceLock<Option<u16>> = OnceLock::new();
                    *INDEX.get_or_init(|| Schema::get().message(Self::NAME))
                }

                fn field(
                    &mut self,
                    cx: &Cx<'_>,
                    number: u32,
                    vals: &[Raw<'_>],
                    slot: Slot,
                ) -> Result<(), Error> {
                    match number {
                        $($number => Decode::merge(&mut self.$field, cx, vals, slot),)*
                        _ => Err(not_typed()),
                    }
                }
            }

            impl Decode for $ty {
                fn decode(cx: &Cx<'_>, vals: &[Raw<'_>], slot: Slot) -> Result<Self, Error> {
                    let mut out = Self::default();
                    merge_struct(&mut out, cx, vals, slot)?;
                    Ok(out)
                }

                fn merge(&mut self, cx: &Cx<'_>, vals: &[Raw<'_>], slot: Slot) -> Result<(), Error> {
                    merge_struct(self, cx, vals, slot)
                }

                fn fresh() -> Option<Self> {
                    Some(Self::default())
                }
            }
        )*

        /// The tables' messages and fields, for the tests.
        #[cfg(test)]
        pub(crate) fn tables() -> Vec<(&'static str, &'static [(u32, &'static str)])> {
            vec![$((<$ty as Message>::NAME, <$ty as Message>::FIELDS)),*]
        }
    };
}

/// Top-level kinds: type meta from the envelope, then the message.
macro_rules! objects {
    ($($ty:ty),* $(,)?) => {
        $(impl Typed for $ty {
            fn read(raw: &[u8], msg: u16, api_version: &str, kind: &str) -> Result<Self, Error> {
                let cx = Cx::streamed(Schema::get());
                let mut out = Self::default();
                out.api_version = api_version.to_owned();
                out.kind = kind.to_owned();
                merge_message(&mut out, &cx, msg, raw)?;
                Ok(out)
            }
        })*
    };
}

objects!(core::Pod, resource::ResourceSlice);

messages! {
    meta::ObjectMeta = "meta/v1.ObjectMeta" {
        1 => name, 2 => generate_name, 3 => namespace, 4 => self_link, 5 => uid,
        6 => resource_version, 7 => generation, 8 => creation_timestamp,
        9 => deletion_timestamp, 10 => deletion_grace_period_seconds, 11 => labels,
        12 => annotations, 13 => owner_references, 14 => finalizers, 17 => managed_fields,
    }
    meta::OwnerReference = "meta/v1.OwnerReference" {
        5 => api_version, 1 => kind, 3 => name, 4 => uid, 6 => controller,
        7 => block_owner_deletion,
    }

    core::Pod = "core/v1.Pod" { 1 => metadata, 2 => spec, 3 => status }
    core::PodSpec = "core/v1.PodSpec" {
        1 => volumes, 20 => init_containers, 2 => containers, 34 => ephemeral_containers,
        3 => restart_policy, 4 => termination_grace_period_seconds,
        5 => active_deadline_seconds, 6 => dns_policy, 7 => node_selector,
        8 => service_account_name, 9 => service_account,
        21 => automount_service_account_token, 10 => node_name, 11 => host_network,
        12 => host_pid, 13 => host_ipc, 27 => share_process_namespace,
        14 => security_context, 15 => image_pull_secrets, 16 => hostname, 17 => subdomain,
        18 => affinity, 19 => scheduler_name, 22 => tolerations, 23 => host_aliases,
        24 => priority_class_name, 25 => priority, 26 => dns_config, 28 => readiness_gates,
        29 => runtime_class_name, 30 => enable_service_links, 31 => preemption_policy,
        32 => overhead, 33 => topology_spread_constraints, 35 => set_hostname_as_fqdn,
        36 => os, 37 => host_users, 38 => scheduling_gates, 39 => resource_claims,
        40 => resources, 41 => hostname_override, 43 => scheduling_group,
    }
    core::Container = "core/v1.Container" {
        1 => name, 2 => image, 3 => command, 4 => args, 5 => working_dir, 6 => ports,
        19 => env_from, 7 => env, 8 => resources, 23 => resize_policy, 24 => restart_policy,
        25 => restart_policy_rules, 9 => volume_mounts, 21 => volume_devices,
        10 => liveness_probe, 11 => readiness_probe, 22 => startup_probe, 12 => lifecycle,
        13 => termination_message_path, 20 => termination_message_policy,
        14 => image_pull_policy, 15 => security_context, 16 => stdin, 17 => stdin_once,
        18 => tty,
    }
    core::ContainerPort = "core/v1.ContainerPort" {
        1 => name, 2 => host_port, 3 => container_port, 4 => protocol, 5 => host_ip,
    }
    core::ResourceRequirements = "core/v1.ResourceRequirements" {
        1 => limits, 2 => requests, 3 => claims,
    }
    core::ResourceClaim = "core/v1.ResourceClaim" { 1 => name, 2 => request }
    core::PodResourceClaim = "core/v1.PodResourceClaim" {
        1 => name, 3 => resource_claim_name, 4 => resource_claim_template_name,
    }
    core::Toleration = "core/v1.Toleration" {
        1 => key, 2 => operator, 3 => value, 4 => effect, 5 => toleration_seconds,
    }
    core::PodSchedulingGate = "core/v1.PodSchedulingGate" { 1 => name }
    core::PodSchedulingGroup = "core/v1.PodSchedulingGroup" { 1 => pod_group_name }
    core::PodStatus = "core/v1.PodStatus" {
        17 => observed_generation, 1 => phase, 2 => conditions, 3 => message, 4 => reason,
        11 => nominated_node_name, 5 => host_ip, 16 => host_ips, 6 => pod_ip, 12 => pod_ips,
        7 => start_time, 10 => init_container_statuses, 8 => container_statuses,
        9 => qos_class, 13 => ephemeral_container_statuses, 14 => resize,
        15 => resource_claim_statuses, 18 => extended_resource_claim_status,
        19 => allocated_resources, 20 => resources,
        21 => node_allocatable_resource_claim_statuses,
    }
    core::PodCondition = "core/v1.PodCondition" {
        1 => type_, 7 => observed_generation, 2 => status, 3 => last_probe_time,
        4 => last_transition_time, 5 => reason, 6 => message,
    }
    core::PodResourceClaimStatus = "core/v1.PodResourceClaimStatus" {
        1 => name, 2 => resource_claim_name,
    }

    resource::ResourceSlice = "resource/v1.ResourceSlice" { 1 => metadata, 2 => spec }
    resource::ResourceSliceSpec = "resource/v1.ResourceSliceSpec" {
        1 => driver, 2 => pool, 3 => node_name, 4 => node_selector, 5 => all_nodes,
        6 => devices, 7 => per_device_node_selection, 8 => shared_counters,
        9 => partition_type_attribute, 10 => skip_node_operations,
    }
    resource::ResourcePool = "resource/v1.ResourcePool" {
        1 => name, 2 => generation, 3 => resource_slice_count,
    }
    // nodeAllocatableResources (14) is read by serde: allot's struct regroups it.
    resource::Device = "resource/v1.Device" {
        1 => name, 2 => attributes, 3 => capacity, 4 => consumes_counters, 5 => node_name,
        6 => node_selector, 7 => all_nodes, 8 => taints, 9 => binds_to_node,
        10 => binding_conditions, 11 => binding_failure_conditions,
        12 => allow_multiple_allocations,
    }
    resource::DeviceAttribute = "resource/v1.DeviceAttribute" {
        2 => int_value, 3 => bool_value, 4 => string_value, 5 => version_value,
        6 => int_values, 7 => bool_values, 8 => string_values, 9 => version_values,
    }
}

/// A device's capacity: its quantity and request policy (the struct has no `Default`: the
/// value is required, as serde's reading requires it).
impl Decode for resource::DeviceCapacity {
    fn decode(cx: &Cx<'_>, vals: &[Raw<'_>], slot: Slot) -> Result<Self, Error> {
        static INDEX: OnceLock<Option<u16>> = OnceLock::new();
        let index = *INDEX.get_or_init(|| Schema::get().message("resource/v1.DeviceCapacity"));
        let (msg, data) = payload(slot, vals)?;
        if index != Some(msg) {
            return Err(not_typed());
        }
        let (mut value, mut request_policy) = (None, None);
        each_field(&cx.schema().messages[msg as usize], data, |field, vals| {
            match field.number {
                1 => value = Some(Decode::decode(cx, vals, Slot::of(field))?),
                2 => request_policy = Decode::decode(cx, vals, Slot::of(field))?,
                _ => return Err(not_typed()),
            }
            Ok(())
        })?;
        Ok(resource::DeviceCapacity {
            value: value.ok_or_else(not_typed)?,
            request_policy,
        })
    }
}
