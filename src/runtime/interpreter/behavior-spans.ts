/**
 * Spans of guards, actions, calculators and listeners (`MACHINE_TRACE_BEHAVIORS`, off by
 * default): one `machine_routes.<kind> <name>` span per call, a child of the step's transition
 * span. Off, a behavior runs as a plain call; on without an SDK, each call costs one
 * non-recording span. Behaviors are synchronous, so the span closes when the call returns.
 */
import { ATTR } from '../telemetry/attributes.js';
import { inSpan } from '../telemetry/tracing.js';

/** What a spanned behavior is. */
export type BehaviorKind = 'guard' | 'action' | 'calculator' | 'listener';

/** Runs `run` in a span naming the behavior (`machine_routes.guard isPaid`). */
export function behaviorSpan<T>(
  kind: BehaviorKind,
  name: string,
  machine: string,
  run: () => T,
): T {
  return inSpan(
    `machine_routes.${kind} ${name}`,
    {
      attributes: () => ({
        [ATTR.machine]: machine,
        [ATTR.behaviorKind]: kind,
        [ATTR.behaviorName]: name,
      }),
    },
    run,
  );
}
