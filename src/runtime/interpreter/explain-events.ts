/**
 * Guard-aware `availableEvents` (a registration's `explainAvailableEvents`): each listed event
 * says whether its guards pass now and, when a validation guard refuses it, the message a send
 * would answer, so a UI can disable a button and say why. Pure and synchronous: the guards run
 * through the interpreter's own selection (select-transitions.ts) on a throwaway macrostep.
 */
import { isMachineDefinition } from '../definition/invocation.js';
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { Handler, StateNode } from '../definition/state-node.js';
import type { EventObject } from '../definition/types.js';
import { Macrostep, leavesOf } from './macrostep-context.js';
import { probeHandler, type GuardVerdict, type PayloadProbe } from './select-transitions.js';
import type { AvailableEvent, MachineSnapshot } from './types.js';

/** An `availableEvents` entry with what its guards say now. */
export interface ExplainedAvailableEvent extends AvailableEvent {
  /**
   * `true`: the guards of a transition of this event pass now, sending it moves the machine (or
   * runs its targetless transition). `false`: they do not: an ordinary guard fails (a send is
   * answered 200 with the state unchanged) or a validation guard refuses it (422, see `reason`).
   * `null`: the guards read the event's payload (or threw), so only a send can tell.
   */
  enabled: boolean | null;
  /** Set when a validation guard refuses the event now: the message a send would answer (422). */
  reason?: string;
}

/**
 * The probe's macrostep writes no history: its records would be dropped anyway, and each one
 * costs a record id (most of a probe's time when recorded).
 */
class ProbeMacrostep extends Macrostep {
  override record(): void {}
}

const TAKEN: GuardVerdict = Object.freeze({ kind: 'pass' });

/** Thrown by the probe event's `payload`: a guard that reads it cannot be answered without one. */
const PAYLOAD_NEEDED = Symbol('payload needed');

/**
 * Explains `events` (the instance's `availableEvents`, forwarded entries included) against the
 * snapshot: per event type, the transitions the active leaves resolve it to (nearest declaration,
 * ancestors included, as a send selects them) have their calculators and guards evaluated on a
 * copy of the context with an event that carries no payload. Evaluation stops at the first
 * transition's guards: later internal steps (`@always`, raised events) are not run, and neither
 * are actions. In a parallel state a validation guard that refuses the event in one region
 * refuses it everywhere (a send is rejected whole), so every entry of that type carries the reason;
 * otherwise each entry answers for its own region's transition.
 *
 * Forwarded entries are explained against the running child's snapshot (`children`, by
 * delegating state id, as `availableEventsWithForwards` takes them) with the child's event type;
 * without a child snapshot their `enabled` is `null`.
 *
 * @example explainAvailableEvents(order, snapshot, availableEvents(order, snapshot))
 * // [{ type: 'APPROVE', source: 'parent', enabled: false, reason: 'Orders over 10000 need a manual approval.' }]
 */
export function explainAvailableEvents(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  events: readonly AvailableEvent[],
  children: ReadonlyMap<string, MachineSnapshot | null> = new Map(),
): ExplainedAvailableEvent[] {
  if (events.length === 0) return [];
  const leaves = leavesOf(definition, snapshot.value);
  const verdicts = new Map<string, TypeVerdicts>();
  const result: ExplainedAvailableEvent[] = [];
  for (const event of events) {
    let verdict: GuardVerdict;
    if (event.source === 'forward') {
      verdict = forwardedVerdict(definition, leaves, event, children);
    } else {
      let forType = verdicts.get(event.type);
      if (forType === undefined)
        verdicts.set(event.type, (forType = probeType(definition, snapshot, leaves, event.type)));
      verdict = forType.rejection ?? regionVerdict(forType, leaves, event);
    }
    result.push(explained(event, verdict));
  }
  return result;
}

/** What the guards of one event type say: per handler, and the rejection that refuses it whole. */
interface TypeVerdicts {
  byHandler: Map<Handler, GuardVerdict>;
  rejection: GuardVerdict | null;
}

/**
 * Evaluates the handlers of `eventType` from every active leaf, in the order a send does, on one
 * throwaway macrostep: a passing branch's calculators are seen by the next handler, as they are
 * by a send. The first certain rejection refuses the event whole (a send stops there too).
 */
function probeType(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  leaves: readonly StateNode[],
  eventType: string,
): TypeVerdicts {
  const probe: PayloadProbe = { read: false };
  // Made for the first handler with checks to run: most events have an unconditional first branch.
  let macrostep: Macrostep | null = null;
  const byHandler = new Map<Handler, GuardVerdict>();
  for (const leaf of leaves) {
    const handler = leaf.handlers.get(eventType);
    if (handler === undefined || byHandler.has(handler)) continue;
    if ([...byHandler.keys()].some((known) => known.transition === handler.transition)) continue;
    // An unconditional first branch is taken whatever the context (probeHandler agrees).
    const verdict = handler.transition.branches[0]?.unconditional
      ? TAKEN
      : probeHandler(
          (macrostep ??= new ProbeMacrostep(
            definition,
            snapshot.id,
            {
              value: snapshot.value,
              leaves: [...leaves],
              context: snapshot.context,
              sequence: snapshot.sequence,
              // Nothing of the probe is recorded; the time only names the macrostep.
              time: Date.now(),
              parent: snapshot.parent,
            },
            new PayloadlessEvent(eventType, probe),
          )),
          handler,
          probe,
        );
    byHandler.set(handler, verdict);
    if (verdict.kind === 'reject') return { byHandler, rejection: verdict };
  }
  return { byHandler, rejection: null };
}

/** The verdict of an entry: its region's transition (every leaf's when the entry has no region). */
function regionVerdict(
  verdicts: TypeVerdicts,
  leaves: readonly StateNode[],
  event: AvailableEvent,
): GuardVerdict {
  let unknown = false;
  let any = false;
  for (const leaf of leaves) {
    if (event.region !== undefined && regionKeyOf(leaf) !== event.region) continue;
    const handler = leaf.handlers.get(event.type);
    if (handler === undefined) continue;
    const verdict = verdictOf(verdicts.byHandler, handler);
    if (verdict === undefined) continue;
    any = true;
    if (verdict.kind === 'pass') return verdict;
    if (verdict.kind === 'unknown') unknown = true;
  }
  return { kind: unknown || !any ? 'unknown' : 'fail' };
}

/** A handler's verdict, or that of the handler of the same transition (one per transition). */
function verdictOf(
  byHandler: ReadonlyMap<Handler, GuardVerdict>,
  handler: Handler,
): GuardVerdict | undefined {
  const own = byHandler.get(handler);
  if (own !== undefined) return own;
  for (const [known, verdict] of byHandler)
    if (known.transition === handler.transition) return verdict;
  return undefined;
}

/** A forwarded entry: the child's guards for the child's event type, on the child's snapshot. */
function forwardedVerdict(
  definition: MachineDefinition,
  leaves: readonly StateNode[],
  event: AvailableEvent,
  children: ReadonlyMap<string, MachineSnapshot | null>,
): GuardVerdict {
  for (const forward of definition.forwards) {
    if (forward.parentEventType !== event.type) continue;
    const state = leaves.find((leaf) => leaf.id === forward.stateId);
    if (state === undefined || regionKeyOf(state) !== event.region) continue;
    const child = state.invocation?.machine;
    const childSnapshot = children.get(state.id);
    if (!isMachineDefinition(child) || childSnapshot === null || childSnapshot === undefined)
      continue;
    if (childSnapshot.status === 'done' || childSnapshot.machineId !== child.id) continue;
    const childLeaves = leavesOf(child, childSnapshot.value);
    const verdicts = probeType(child, childSnapshot, childLeaves, forward.childEventType);
    return (
      verdicts.rejection ??
      regionVerdict(verdicts, childLeaves, { type: forward.childEventType, source: 'parent' })
    );
  }
  return { kind: 'unknown' };
}

function explained(event: AvailableEvent, verdict: GuardVerdict): ExplainedAvailableEvent {
  const enabled = verdict.kind === 'pass' ? true : verdict.kind === 'unknown' ? null : false;
  // Literals of one shape per case (key order: type, source, region, enabled, reason).
  const entry: ExplainedAvailableEvent =
    event.region === undefined
      ? { type: event.type, source: event.source, enabled }
      : { type: event.type, source: event.source, region: event.region, enabled };
  if (verdict.kind === 'reject') entry.reason = verdict.message;
  return entry;
}

/**
 * The event guards see: its type, and a `payload` that records the read and throws, so a guard
 * depending on the payload stops at once instead of deciding on made-up data. A class, so the
 * getter is one prototype accessor rather than a property defined per probe (which made every
 * probe event a slow dictionary object).
 */
class PayloadlessEvent implements EventObject {
  readonly #probe: PayloadProbe;

  constructor(
    readonly type: string,
    probe: PayloadProbe,
  ) {
    this.#probe = probe;
  }

  get payload(): Record<string, unknown> {
    this.#probe.read = true;
    throw PAYLOAD_NEEDED;
  }
}

/** The key of the region (child of the nearest parallel ancestor) a state sits in. */
function regionKeyOf(state: StateNode): string | undefined {
  for (let depth = state.depth - 1; depth >= 0; depth--) {
    if (state.ancestors[depth]?.type === 'parallel') return state.ancestors[depth + 1]?.key;
  }
  return undefined;
}
