//! Per-cycle plugin state (upstream `CycleState`): each plugin keeps its own typed value, found
//! by its type. A plugin's state type is private to its module, so no plugin can read another's.

use std::any::{Any, TypeId};

/// What a plugin stores in a [`CycleState`]: any clonable value (preemption, later, copies the
/// state to try removing pods without touching the original).
pub trait StateData: Any {
    /// A boxed copy.
    fn clone_data(&self) -> Box<dyn StateData>;
    /// As `Any`, to downcast.
    fn as_any(&self) -> &dyn Any;
    /// As `Any`, to downcast mutably.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Any + Clone> StateData for T {
    fn clone_data(&self) -> Box<dyn StateData> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// The state of one scheduling cycle: plugins' values by type, and which plugins asked to be
/// skipped at Filter and Score.
#[derive(Default)]
pub struct CycleState {
    entries: Vec<(TypeId, Box<dyn StateData>)>,
    skip_filter: u64,
    skip_score: u64,
}

impl Clone for CycleState {
    fn clone(&self) -> Self {
        CycleState {
            entries: self
                .entries
                .iter()
                .map(|(id, data)| (*id, (**data).clone_data()))
                .collect(),
            skip_filter: self.skip_filter,
            skip_score: self.skip_score,
        }
    }
}

impl std::fmt::Debug for CycleState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CycleState")
            .field("entries", &self.entries.len())
            .field("skip_filter", &self.skip_filter)
            .field("skip_score", &self.skip_score)
            .finish()
    }
}

impl CycleState {
    /// An empty state.
    pub fn new() -> Self {
        CycleState::default()
    }

    /// Stores a value, replacing one of the same type.
    pub fn write<T: Any + Clone>(&mut self, value: T) {
        let id = TypeId::of::<T>();
        match self.entries.iter_mut().find(|(k, _)| *k == id) {
            Some(slot) => slot.1 = Box::new(value),
            None => self.entries.push((id, Box::new(value))),
        }
    }

    /// The value of this type, if written.
    pub fn read<T: Any>(&self) -> Option<&T> {
        let id = TypeId::of::<T>();
        self.entries
            .iter()
            .find(|(k, _)| *k == id)
            .and_then(|(_, v)| (**v).as_any().downcast_ref())
    }

    /// The value of this type, mutably.
    pub fn read_mut<T: Any>(&mut self) -> Option<&mut T> {
        let id = TypeId::of::<T>();
        self.entries
            .iter_mut()
            .find(|(k, _)| *k == id)
            .and_then(|(_, v)| (**v).as_any_mut().downcast_mut())
    }

    /// Marks plugin `index` (in its profile) as skipped at Filter.
    pub(crate) fn skip_filter(&mut self, index: usize) {
        self.skip_filter |= 1 << index;
    }

    /// Whether plugin `index` is skipped at Filter.
    pub(crate) fn filter_skipped(&self, index: usize) -> bool {
        self.skip_filter & (1 << index) != 0
    }

    /// Marks plugin `index` as skipped at Score.
    pub(crate) fn skip_score(&mut self, index: usize) {
        self.skip_score |= 1 << index;
    }

    /// Whether plugin `index` is skipped at Score.
    pub(crate) fn score_skipped(&self, index: usize) -> bool {
        self.skip_score & (1 << index) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct A(u32);
    #[derive(Clone, Debug, PartialEq)]
    struct B(&'static str);

    #[test]
    fn values_are_found_by_type_and_cloned_deeply() {
        let mut state = CycleState::new();
        state.write(A(1));
        state.write(B("x"));
        state.write(A(2));
        assert_eq!(state.read::<A>(), Some(&A(2)));
        let copy = state.clone();
        state.read_mut::<A>().unwrap().0 = 3;
        assert_eq!(copy.read::<A>(), Some(&A(2)));
        assert_eq!(state.read::<B>(), Some(&B("x")));
        assert!(state.read::<u8>().is_none());
    }

    #[test]
    fn skips_are_per_plugin() {
        let mut state = CycleState::new();
        state.skip_filter(3);
        assert!(state.filter_skipped(3) && !state.filter_skipped(2));
        state.skip_score(0);
        assert!(state.score_skipped(0) && !state.score_skipped(3));
    }
}
