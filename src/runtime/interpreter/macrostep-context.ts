/**
 * The mutable working state of one macrostep: configuration, working context, queues and the
 * history being written. Created per event, discarded after the result is built.
 */
import { behaviorSpan, type BehaviorKind } from './behavior-spans.js';
import { MachineNotFoundException, MaxTransitionDepthExceededException } from '../errors.js';
import type { ResolvedBehavior } from '../definition/behavior-registry.js';
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { ScenarioBehaviorArgs } from '../definition/scenarios.js';
import type { StateNode } from '../definition/state-node.js';
import type { Context, EventObject } from '../definition/types.js';
import type { MachineTarget, StateView } from '../definition/behavior-types.js';
import { createMessaging, type MessagingFunctions } from './messaging.js';
import { cloneContext } from '../definition/clone-context.js';
import { HistoryWriter } from './history.js';
import { LiveStateView } from './state-view.js';
import type { MacrostepEffect } from './effects.js';
import type {
  ActiveScenario,
  MacrostepOptions,
  MachineSnapshot,
  ValidationFailure,
} from './types.js';

/** Where a macrostep starts from. */
export interface MacrostepStart {
  value: string[];
  leaves: StateNode[];
  context: Context;
  sequence: number;
  /** Epoch milliseconds of the macrostep (one `createdAt` for all its records). */
  time: number;
  /** The parent instance, for child machines. */
  parent?: MachineTarget | undefined;
  /** Resolver of child machines referenced by id. */
  machines?: ((machineId: string) => MachineDefinition | undefined) | undefined;
  /** Scenario overrides in force for this macrostep. */
  scenario?: ActiveScenario | null | undefined;
  /** The runtime's depth limit, for machines without their own `max_transition_depth`. */
  maxTransitionDepth?: number | undefined;
  /** Parallel dispatch in force (`MacrostepOptions.parallelDispatch`). */
  parallelDispatch?: { regionTimeoutSeconds: number | null } | null | undefined;
  /** `false`: records are counted, not kept (`MacrostepOptions.history`). */
  history?: boolean | undefined;
  /** A span per guard, action, calculator and listener call (`MacrostepOptions.traceBehaviors`). */
  traceBehaviors?: boolean | undefined;
}

/** One entry of a parallel state under parallel dispatch: the sequence of its `enter` record. */
export interface ParallelEntry {
  enteredAt: number;
}

/** Where a deferred entry belongs. */
export interface RegionDeferral {
  parallel: StateNode;
  region: StateNode;
  entry: ParallelEntry;
}

/** A region whose entry actions a region job runs. */
export interface DispatchedRegion extends RegionDeferral {
  /** Entered states with entry actions, in document order. */
  states: StateNode[];
}

/**
 * The deferral maps of every macrostep without parallel dispatch: `planRegionDeferral`, their
 * only writer, runs under parallel dispatch only (microstep.ts), so this map stays empty.
 */
const NOTHING_DEFERRED: ReadonlyMap<StateNode, unknown> = new Map<StateNode, unknown>();

/** `max_transition_depth` when neither the machine nor the runtime sets one. */
export const DEFAULT_MAX_TRANSITION_DEPTH = 100;

export class Macrostep {
  readonly machineId: string;
  leaves: StateNode[];
  value: string[];
  /** The working context. Shared with the input snapshot until `own()` copies it. */
  context: Context;
  /** True once `context` is this macrostep's private copy. */
  owned = false;
  /** The event behaviors see: the external event, or the raised event being processed. */
  event: EventObject;
  readonly raised: EventObject[] = [];
  /** Compound and parallel states whose completion (`@done`) is pending. */
  readonly completed: StateNode[] = [];
  readonly effects: MacrostepEffect[] = [];
  readonly history: HistoryWriter;
  /** Delegating states entered and not yet invoked (their child starts once the step settles). */
  readonly invocations: StateNode[] = [];
  /** Delegating states whose child outcome was routed in this macrostep: leaving them cancels nothing. */
  readonly settledChildren: StateNode[] = [];
  readonly parent: MachineTarget | null;
  readonly machines: ((machineId: string) => MachineDefinition | undefined) | undefined;
  /** Scenario overrides of this macrostep (guards, actions, child outcomes); `null` when none. */
  readonly scenario: ActiveScenario | null;
  /** Epoch milliseconds of the macrostep. */
  readonly time: number;
  private stateView: StateView | null = null;
  private raiseFunction: ((event: EventObject | string) => void) | null = null;
  private messagingFunctions: MessagingFunctions | null = null;
  /** Internal steps taken so far (`@always`, `@done`, raised events). */
  depth = 0;
  /** The limit of `depth`: the machine's own, else the runtime's, else 100. */
  readonly maxTransitionDepth: number;
  /** A top-level final state was entered. */
  finished = false;
  /** Behaviors run in spans of their own (`MACHINE_TRACE_BEHAVIORS`). */
  readonly traceBehaviors: boolean;
  /** Parallel dispatch in force for this macrostep; `null` when off. */
  readonly parallelDispatch: { regionTimeoutSeconds: number | null } | null;
  /**
   * Parallel dispatch: states about to be entered whose entry actions a region job runs
   * (planned by `enterStates`), and each parallel state being entered with such regions.
   * Without parallel dispatch nothing is planned, so both are one shared empty map that is only
   * read: two maps per macrostep were a visible share of a small event's allocations.
   */
  readonly deferredEntries: Map<StateNode, RegionDeferral>;
  readonly parallelEntries: Map<StateNode, ParallelEntry>;
  /** Regions whose entry actions were deferred, in the order they were entered. */
  readonly dispatchedRegions: DispatchedRegion[] = [];
  validationFailure: ValidationFailure | null = null;

  constructor(
    readonly definition: MachineDefinition,
    readonly id: string,
    start: MacrostepStart,
    /** The event that started the macrostep; `@always` and `@done` behaviors see it. */
    readonly trigger: EventObject,
  ) {
    this.machineId = definition.id;
    this.leaves = start.leaves;
    this.value = start.value;
    this.context = start.context;
    this.event = trigger;
    this.history = new HistoryWriter(
      definition.id,
      id,
      start.sequence,
      start.time,
      start.history !== false,
    );
    this.parent = start.parent ?? null;
    this.machines = start.machines;
    this.scenario = start.scenario ?? null;
    this.time = start.time;
    this.parallelDispatch = start.parallelDispatch ?? null;
    this.traceBehaviors = start.traceBehaviors === true;
    if (this.parallelDispatch === null) {
      this.deferredEntries = NOTHING_DEFERRED as Map<StateNode, RegionDeferral>;
      this.parallelEntries = NOTHING_DEFERRED as Map<StateNode, ParallelEntry>;
    } else {
      this.deferredEntries = new Map();
      this.parallelEntries = new Map();
    }
    this.maxTransitionDepth =
      definition.options.maxTransitionDepth ??
      start.maxTransitionDepth ??
      DEFAULT_MAX_TRANSITION_DEPTH;
  }

  /** The state view of behaviors, made on first use (many events run no behavior). */
  get view(): StateView {
    return (this.stateView ??= new LiveStateView(this.machineId, this));
  }

  /** `raise` as handed to behaviors: bound once per macrostep, on first use. */
  get raise(): (event: EventObject | string) => void {
    return (this.raiseFunction ??= (event) => this.enqueue(event));
  }

  /** Records an internal step with the current value. */
  record(type: string, payload: Record<string, unknown> | null = null): void {
    this.history.push(type, 'internal', payload, this.value, this.event);
  }

  /** Makes the working context private before anything may write to it. */
  own(): void {
    if (!this.owned) {
      this.context = cloneContext(this.context);
      this.owned = true;
    }
  }

  /** sendTo / dispatchTo / sendToParent / dispatchToParent: made on first use, like `raise`. */
  get messaging(): MessagingFunctions {
    return (this.messagingFunctions ??= createMessaging(this));
  }

  /** Messaging source: the actor of the triggering event (messages inherit it). */
  get actor(): string | null {
    return this.trigger.actor ?? null;
  }

  argsFor(behavior: ResolvedBehavior | null): MacrostepArgs {
    return new MacrostepArgs(
      this.context,
      this.event,
      this.view,
      (behavior?.params ?? {}) as Record<string, unknown>,
      this.machineId,
      this.id,
      this.raise,
      this,
    );
  }

  /** Calls a behavior, in a span of its own when behaviors are traced. */
  call<T>(kind: BehaviorKind, behavior: { readonly name: string }, run: () => T): T {
    return this.traceBehaviors ? behaviorSpan(kind, behavior.name, this.machineId, run) : run();
  }

  runActions(actions: readonly ResolvedBehavior[]): void {
    for (const action of actions) {
      this.own();
      this.record(action.startType);
      const override = this.scenario?.plan.actions.get(action.name);
      // A scenario's action override runs instead; `null` skips the action.
      if (override === undefined)
        this.call('action', action, () => action.run(this.argsFor(action)));
      else if (override !== null) override(this.argsFor(action));
      this.record(action.finishType);
    }
  }

  setLeaves(leaves: StateNode[]): void {
    this.leaves = leaves;
    const value = new Array<string>(leaves.length);
    for (let index = 0; index < leaves.length; index++)
      value[index] = (leaves[index] as StateNode).id;
    this.value = value;
  }

  /** Counts one internal step; throws when `max_transition_depth` is exceeded. */
  step(eventType: string): void {
    this.depth += 1;
    const max = this.maxTransitionDepth;
    if (this.depth > max) {
      throw new MaxTransitionDepthExceededException(
        `Machine '${this.machineId}': maximum transition depth of ${max} exceeded at '${this.value.join(', ')}' ` +
          `while processing '${eventType}' (triggered by '${this.trigger.type}'). ` +
          `Check for an @always or raise() loop, or raise max_transition_depth.`,
        { machine: this.machineId, path: this.value.join(','), key: eventType },
      );
    }
  }

  private enqueue(event: EventObject | string): void {
    const raised: EventObject = typeof event === 'string' ? { type: event } : { ...event };
    if (raised.actor === undefined) raised.actor = this.trigger.actor ?? null;
    this.raised.push(raised);
    this.record(`${this.machineId}.event.${raised.type}.raised`);
  }

  /** The snapshot after this macrostep (input value and context when a validation guard failed). */
  snapshot(status: MachineSnapshot['status']): MachineSnapshot {
    const snapshot: MachineSnapshot = {
      machineId: this.machineId,
      id: this.id,
      value: this.value,
      context: this.context,
      status,
      sequence: this.history.lastSequence,
    };
    if (this.parent !== null) snapshot.parent = this.parent;
    // The instance records the version of the definition that computed its last step.
    const version = this.definition.version;
    if (version !== undefined) snapshot.version = version;
    return snapshot;
  }
}

/**
 * The argument object of one behavior call. A class rather than a literal so the messaging
 * functions are prototype getters, made only when a behavior reads them: creating functions per
 * macrostep costs more than a whole small transition (bound functions and closures both), and
 * most behaviors never send.
 */
export class MacrostepArgs implements ScenarioBehaviorArgs {
  // Private: spreading or logging the args shows the behavior's fields only.
  readonly #macrostep: Macrostep;

  constructor(
    public context: Context,
    public event: EventObject,
    public state: StateView,
    public params: Record<string, unknown>,
    public machineId: string,
    public id: string,
    public raise: (event: EventObject | string) => void,
    macrostep: Macrostep,
  ) {
    this.#macrostep = macrostep;
  }

  /** The request's `scenarioParams` while a scenario plays (`{}` otherwise). */
  get scenarioParams(): Record<string, unknown> {
    return this.#macrostep.scenario?.params ?? {};
  }

  get sendTo(): MessagingFunctions['sendTo'] {
    return this.#macrostep.messaging.sendTo;
  }

  get dispatchTo(): MessagingFunctions['dispatchTo'] {
    return this.#macrostep.messaging.dispatchTo;
  }

  get sendToParent(): MessagingFunctions['sendToParent'] {
    return this.#macrostep.messaging.sendToParent;
  }

  get dispatchToParent(): MessagingFunctions['dispatchToParent'] {
    return this.#macrostep.messaging.dispatchToParent;
  }
}

/** The options a macrostep continuing a snapshot takes from its caller. */
export type SnapshotStepOptions = Pick<
  MacrostepOptions,
  | 'now'
  | 'machines'
  | 'maxTransitionDepth'
  | 'scenario'
  | 'parallelDispatch'
  | 'history'
  | 'adoptContext'
  | 'traceBehaviors'
>;

/**
 * A macrostep continuing `snapshot` on `trigger`: every entry point that runs an instance
 * (events, queued listeners, region jobs, child outcomes) starts here. `leaves` defaults to the
 * snapshot's active leaves; pass them when already computed.
 */
export function macrostepFromSnapshot(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  trigger: EventObject,
  options: SnapshotStepOptions,
  leaves: StateNode[] = leavesOf(definition, snapshot.value),
): Macrostep {
  const macrostep = new Macrostep(
    definition,
    snapshot.id,
    {
      value: snapshot.value,
      leaves,
      context: snapshot.context,
      sequence: snapshot.sequence,
      time: options.now === undefined ? Date.now() : options.now().getTime(),
      parent: snapshot.parent,
      machines: options.machines,
      scenario: options.scenario,
      maxTransitionDepth: options.maxTransitionDepth,
      parallelDispatch: options.parallelDispatch,
      history: options.history,
      traceBehaviors: options.traceBehaviors,
    },
    trigger,
  );
  if (options.adoptContext === true) macrostep.owned = true;
  return macrostep;
}

/** The active leaves of a snapshot value; an unknown id means the snapshot is not this machine's. */
export function leavesOf(definition: MachineDefinition, value: readonly string[]): StateNode[] {
  const leaves = new Array<StateNode>(value.length);
  for (let index = 0; index < value.length; index++)
    leaves[index] = leafOf(definition, value[index] as string);
  return leaves;
}

/** The leaf state of one id of a snapshot value, checked as {@link leavesOf} checks each. */
export function leafOf(definition: MachineDefinition, id: string): StateNode {
  const node = definition.idMap.get(id);
  if (node === undefined || (node.type !== 'atomic' && node.type !== 'final')) {
    throw new MachineNotFoundException(
      `State '${String(id)}' does not belong to machine '${definition.id}' (or is not a leaf state).`,
      { machine: definition.id, key: String(id) },
    );
  }
  return node;
}
