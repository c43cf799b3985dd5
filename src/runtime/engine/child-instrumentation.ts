/**
 * Child machine spans (docs/operating.md "Traces"): a `machine_routes.child.start <machine>`
 * span for each synchronous child a committed step ran inline, and the child's attributes on
 * the `machine_routes.job child.start`, `child.complete` and `child.timeout` spans that run an
 * asynchronous start and route an outcome in the parent. Without a recording span (no SDK, or
 * not sampled) nothing here builds anything.
 */
import type { ChildRowChange } from '../interpreter/child-rows.js';
import { ATTR } from '../telemetry/attributes.js';
import type { Store } from '../persistence/store.js';
import { addCarrierLink, recordingActiveSpan, startSpan } from '../telemetry/tracing.js';

/**
 * Spans the synchronous children a committed step started inline (their `machine_children`
 * rows inserted `running` or `completed`: an asynchronous start's row is `pending`, a job
 * actor's names no child instance). Children of the step's span; their step ran inside the
 * parent's, so the span marks the start and its outcome rather than timing it.
 */
export function spanInlineChildren(rows: readonly ChildRowChange[]): void {
  if (recordingActiveSpan() === undefined) return;
  for (const change of rows) {
    if (change.kind !== 'insert') continue;
    const { row } = change;
    if (row.status === 'pending' || row.childRootEventId === null) continue;
    startSpan(`machine_routes.child.start ${row.childMachineId}`, {
      attributes: () => ({
        [ATTR.machine]: row.parentMachineId,
        [ATTR.instanceId]: row.parentRootEventId,
        [ATTR.childMachine]: row.childMachineId,
        [ATTR.childId]: row.id,
        [ATTR.childMode]: 'sync',
        [ATTR.childStatus]: row.status,
      }),
    }).end();
  }
}

/** Which child a `child.*` job span is about, and what became of it (`running`, `done`, ...). */
export interface ChildSpanFacts {
  parentMachineId?: string;
  parentId?: string;
  childMachineId?: string;
  childId: string;
  /** `child.start`: the row's status after the start; completions: `done`, `fail`, `timeout`. */
  status?: string;
  outcome?: string;
}

/** Records a child's facts on the job span that runs its start or routes its outcome. */
export function recordChildOnSpan(facts: ChildSpanFacts): void {
  const span = recordingActiveSpan();
  if (span === undefined) return;
  if (facts.parentMachineId !== undefined) span.setAttribute(ATTR.machine, facts.parentMachineId);
  if (facts.parentId !== undefined) span.setAttribute(ATTR.instanceId, facts.parentId);
  if (facts.childMachineId !== undefined)
    span.setAttribute(ATTR.childMachine, facts.childMachineId);
  span.setAttribute(ATTR.childId, facts.childId);
  if (facts.status !== undefined) span.setAttribute(ATTR.childStatus, facts.status);
  if (facts.outcome !== undefined) span.setAttribute(ATTR.childOutcome, facts.outcome);
}

/**
 * Links the span routing a child's outcome (or timeout) in its parent to the step that started
 * the child: the step that entered the delegating state, whose trace context that state's
 * `machine_current_states` row keeps (as a timer fire's link). The completion job itself is a
 * child of the step that finished the child, which may be a later event of the child's own
 * trace. One read of the parent's state rows, made only when the span records.
 */
export async function linkToChildStart(
  store: Store,
  parentId: string,
  parentStateId: string,
): Promise<void> {
  const span = recordingActiveSpan();
  if (span === undefined) return;
  const states = await store.currentStates(parentId);
  addCarrierLink(span, states.find((state) => state.stateId === parentStateId)?.traceContext);
}
