/**
 * Behaviors as users write them: the argument object every guard, action, calculator and output
 * receives, their function and class forms, validation guards, references with parameters, and
 * a machine's `behavior` section. Types only.
 */
import type { EndpointActionConfig } from './endpoint-action.js';
import type { EndpointActionReference } from './endpoint-config.js';
import type { Context, EventObject, EventReference } from './types.js';
import type { ValidationGuardInput } from './validation-guard.js';

/** The read-only view of the current state handed to behaviors. */
export interface StateView {
  /** Active state ids, e.g. `['order.submitted']`. */
  readonly value: readonly string[];
  /** True when `stateId` (with or without the machine id prefix) is active or an ancestor of an active state. */
  matches(stateId: string): boolean;
}

/**
 * The single argument object every behavior receives. `TEvent` is the events that can reach
 * the behavior; `defineMachine` infers it from `behavior.events` (typed-events.ts).
 */
export interface BehaviorArgs<TContext extends Context = Context, TEvent = EventObject> {
  /** Mutable in actions and calculators; changes made by a failing guard are rolled back. */
  context: TContext;
  /** The triggering event (for `@always` transitions, the original external event). */
  event: TEvent;
  state: StateView;
  /** Named parameters of a `[behavior, { ...params }]` tuple; `{}` otherwise. */
  params: Record<string, unknown>;
  /** Definition id (`order`). */
  machineId: string;
  /** Instance id (root event id, a ULID). */
  id: string;
  /** Queue an event to this machine, processed after the current transition completes. */
  raise(event: EventObject | string): void;
  /**
   * Sends an event to another instance synchronously: the shell applies it right after this
   * macrostep commits, before the request answers (effect `{ kind: 'send', mode: 'sync' }`).
   */
  sendTo(target: MachineTarget, event: EventObject | string): void;
  /** Sends an event to another instance through the job queue (retried while it is not accepted yet). */
  dispatchTo(target: MachineTarget, event: EventObject | string): void;
  /** `sendTo` the parent machine. Throws NoParentMachineException when there is none. */
  sendToParent(event: EventObject | string): void;
  /** `dispatchTo` the parent machine. Throws NoParentMachineException when there is none. */
  dispatchToParent(event: EventObject | string): void;
}

/** Names one machine instance: its definition id and its instance id (root event id). */
export interface MachineTarget {
  /** Definition id (`order`). */
  machineId: string;
  /** Instance id (a ULID). */
  id: string;
}

export type GuardFunction<C extends Context = Context, E = EventObject> = (
  args: BehaviorArgs<C, E>,
) => boolean;
export type ActionFunction<C extends Context = Context, E = EventObject> = (
  args: BehaviorArgs<C, E>,
) => void;
export type CalculatorFunction<C extends Context = Context, E = EventObject> = (
  args: BehaviorArgs<C, E>,
) => void;
export type OutputFunction<C extends Context = Context, E = EventObject> = (
  args: BehaviorArgs<C, E>,
) => unknown;
export type ComputedFunction<C extends Context = Context> = (args: { context: C }) => unknown;

/**
 * A guard that, when it fails, rejects the event with 422 instead of recording a silent
 * TRANSITION_FAIL. `field` names the error key (default `<machine>.guard.<name>.fail`).
 */
export interface ValidationGuardDefinition<C extends Context = Context, E = EventObject> {
  readonly kind: 'validationGuard';
  readonly check: GuardFunction<C, E>;
  readonly message: string | ((args: BehaviorArgs<C, E>) => string);
  readonly field?: string;
  readonly name?: string;
}

/** A behavior written as a class: instantiated once per definition, its `run` called. */
export interface BehaviorClass<TArgs, TResult> {
  readonly name: string;
  new (): { run(args: TArgs): TResult };
}

/** A behavior referenced directly (function, class, validation guard) or by inline key. */
export type BehaviorReference =
  | string
  | ((args: BehaviorArgs<never>) => unknown)
  | BehaviorClass<BehaviorArgs<never>, unknown>
  | ValidationGuardDefinition<never>;

/** A behavior, optionally with named parameters: `[behavior, { ...params }]`. */
export type BehaviorEntry =
  BehaviorReference | readonly [BehaviorReference, Record<string, unknown>];

/** One behavior or a list of them, run in order. */
export type BehaviorList = BehaviorEntry | readonly BehaviorEntry[];

/**
 * One guard of `behavior.guards`: a function, a validation guard (`defineValidationGuard(...)`
 * or its input inline) or a class.
 */
export type GuardEntry<C extends Context = Context, E = EventObject> =
  | GuardFunction<C, E>
  | ValidationGuardDefinition<C, E>
  | ValidationGuardInput<C, E>
  | BehaviorClass<BehaviorArgs<C, E>, boolean>;

/** One action, calculator or listener: a function or a class. */
export type ActionEntry<C extends Context = Context, E = EventObject> =
  ActionFunction<C, E> | BehaviorClass<BehaviorArgs<C, E>, void>;

/** One output behavior: a function or a class. */
export type OutputEntry<C extends Context = Context, E = EventObject> =
  OutputFunction<C, E> | BehaviorClass<BehaviorArgs<C, E>, unknown>;

/**
 * `behavior` of a machine: its events and named behaviors. `TEvent` is what every behavior
 * receives; `defineMachine` narrows it per key (`MachineInput`).
 */
export interface BehaviorConfig<TContext extends Context = Context, TEvent = EventObject> {
  events?: Record<string, EventReference>;
  guards?: Record<string, GuardEntry<TContext, TEvent>>;
  actions?: Record<string, ActionEntry<TContext, TEvent>>;
  calculators?: Record<string, ActionEntry<TContext, TEvent>>;
  outputs?: Record<string, OutputEntry<TContext, TEvent>>;
  listeners?: Record<string, ActionEntry<TContext, TEvent>>;
  /** Values derived from context: shown in responses, never persisted. */
  computed?: Record<string, ComputedFunction<TContext>>;
  /** Endpoint actions by key: `defineEndpointAction(...)` results or inline objects of hooks. */
  endpointActions?: Record<string, EndpointActionReference<TEvent> | EndpointActionConfig<TEvent>>;
}
