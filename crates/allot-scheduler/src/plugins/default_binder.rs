//! DefaultBinder (Bind): sets the pod's `spec.nodeName` (with `PodScheduled=True`, as the
//! binding subresource does).

use crate::framework::{BindCtx, BindPlugin, CycleState, Plugin, PodInfo, Status};

/// The plugin's name.
pub const NAME: &str = "DefaultBinder";

/// The DefaultBinder plugin.
#[derive(Debug, Default)]
pub struct DefaultBinder;

impl Plugin for DefaultBinder {
    fn name(&self) -> &'static str {
        NAME
    }

    fn as_bind(&mut self) -> Option<&mut dyn BindPlugin> {
        Some(self)
    }
}

impl BindPlugin for DefaultBinder {
    fn bind(
        &mut self,
        ctx: &mut BindCtx<'_>,
        _state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
    ) -> Status {
        let key = allot_store::ObjectKey::new(
            allot_store::Kind::Pod,
            pod.pod.metadata.namespace.clone(),
            pod.pod.metadata.name.clone(),
        );
        match crate::conditions::write_pod_scheduled(ctx.store, &key, Ok(node), ctx.stamp) {
            Ok(_) => Status::success(),
            Err(e) => Status::error(e.to_string()),
        }
    }
}
