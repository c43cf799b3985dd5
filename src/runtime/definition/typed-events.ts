/**
 * The types that give behaviors typed events, computed from the machine as written (no
 * annotation beyond the event schemas):
 *
 * - the machine's event union: every `behavior.events` entry with its payload typed by its zod
 *   schema (`z.output`), discriminated by `type`, plus every other type the states handle and
 *   the reserved `@` events with an untyped payload;
 * - a guard, action or calculator whose inline key is used only in transitions on user events
 *   sees only those events; one used anywhere else (entry, exit, `@` transitions, `onDone`,
 *   listeners) sees the whole union.
 *
 * The payload type is the schema's as the HTTP layer validates it; events sent from code
 * (`runtime.send`, `raise`) are trusted to match it. Type-only: nothing here runs. `MachineInput`,
 * what `defineMachine` accepts, is here because its type parameters are what this file reads.
 */
import type { output, ZodType } from 'zod';
import type { MachineDefinition } from './machine-definition.js';
import type { MigrationConfig } from './migrations.js';
import type { ScenarioEntry } from './scenarios.js';
import type { Context, EventObject, EventReference, MachineConfig, StateConfig } from './types.js';
import type { ActionEntry, BehaviorConfig, GuardEntry } from './behavior-types.js';
import type { EndpointConfig } from './endpoint-config.js';

/** An event of one type whose payload is `TPayload`, as behaviors receive it. */
export interface TypedEventObject<TType extends string, TPayload> {
  type: TType;
  payload: TPayload;
  /** Who caused the event (user id, job name, ...); raised events inherit it. */
  actor?: string | null;
  /** Event schema version, written to history (default 1). */
  version?: number;
}

/** An event of type `TType` whose payload is not declared by a schema. */
export interface UntypedEventObject<TType extends string> {
  type: TType;
  payload?: Record<string, unknown>;
  actor?: string | null;
  version?: number;
}

/** The payload of an event reference: its schema's output, untyped without a schema. */
type PayloadOf<TReference> = TReference extends { readonly payload: infer TSchema }
  ? TSchema extends ZodType
    ? output<TSchema>
    : Record<string, unknown> | undefined
  : Record<string, unknown> | undefined;

/** The typed events of `behavior.events`, keyed (as `defineMachine` checks) by their type. */
type DeclaredEvents<TEvents> = {
  [K in keyof TEvents & string]: TypedEventObject<K, PayloadOf<TEvents[K]>>;
}[keyof TEvents & string];

/** The `on` keys of a state and its descendants. */
type HandledTypes<TState> =
  | (TState extends { on?: infer TOn } ? keyof TOn & string : never)
  | (TState extends { states?: infer TChildren }
      ? { [K in keyof TChildren]: HandledTypes<TChildren[K]> }[keyof TChildren]
      : never);

/**
 * The machine's root as the type parameters of `defineMachine` capture it: its states, its own
 * `on` and its listeners.
 */
export interface MachineShape<TStates, TOn, TListen> {
  states: TStates;
  on: TOn;
  listen: TListen;
}

/**
 * Every event a behavior of the machine can receive. A machine whose config or events are not
 * known literally (a `MachineConfig` built elsewhere, an explicit context type argument) gets
 * the untyped `EventObject`.
 */
export type MachineEventUnion<TShape, TEvents> = string extends keyof TEvents
  ? EventObject
  : | DeclaredEvents<TEvents>
    | UntypedEvents<Exclude<HandledTypes<TShape>, keyof TEvents>>
    | UntypedEventObject<`@${string}`>;

/** One member per type, so that `event.type === 'X'` narrows to X's member. */
type UntypedEvents<TType> = TType extends string ? UntypedEventObject<TType> : never;

/** The behavior registries whose inline keys transitions name. */
export type TransitionBehaviorKind = 'guards' | 'actions' | 'calculators';

/** The inline keys a behavior list names: a key, a `[behavior, params]` tuple, a list of them. */
type NamesOf<TList> = TList extends string
  ? TList
  : TList extends readonly [infer TFirst, infer TSecond]
    ? TSecond extends string | readonly unknown[]
      ? NamesOf<TFirst> | NamesOf<TSecond>
      : NamesOf<TFirst>
    : TList extends readonly (infer TEntry)[]
      ? NamesOf<TEntry>
      : never;

/** The keys of one kind a transition (one branch or a list of branches) names. */
type BranchNames<
  TTransition,
  TKind extends TransitionBehaviorKind,
> = TTransition extends readonly (infer TBranch)[]
  ? BranchNames<TBranch, TKind>
  : TTransition extends { readonly [P in TKind]?: infer TList }
    ? NamesOf<TList>
    : never;

type Pair<TName, TType> = TName extends string ? [TName, TType] : never;

/** `[key, event type]` for every key named in a transition on a user event, at any depth. */
type UserTransitionNames<TState, TKind extends TransitionBehaviorKind> =
  | (TState extends { on?: infer TOn }
      ? {
          [E in keyof TOn & string]: E extends `@${string}`
            ? never
            : Pair<BranchNames<TOn[E], TKind>, E>;
        }[keyof TOn & string]
      : never)
  | (TState extends { states?: infer TChildren }
      ? { [K in keyof TChildren]: UserTransitionNames<TChildren[K], TKind> }[keyof TChildren]
      : never);

/** Keys named where any event can arrive: entry, exit, `onDone`, `@` transitions, listeners. */
type AnyEventNames<TState, TKind extends TransitionBehaviorKind> =
  | (TState extends { entry?: infer TList } ? NamesOf<TList> : never)
  | (TState extends { exit?: infer TList } ? NamesOf<TList> : never)
  | (TState extends { onDone?: infer TTransition } ? BranchNames<TTransition, TKind> : never)
  | (TState extends { on?: infer TOn }
      ? {
          [E in keyof TOn & string]: E extends `@${string}` ? BranchNames<TOn[E], TKind> : never;
        }[keyof TOn & string]
      : never)
  | (TState extends { listen?: infer TListen }
      ? { [P in keyof TListen]: NamesOf<TListen[P]> }[keyof TListen]
      : never)
  | (TState extends { states?: infer TChildren }
      ? { [K in keyof TChildren]: AnyEventNames<TChildren[K], TKind> }[keyof TChildren]
      : never);

/**
 * The events the behavior keyed `TName` under `behavior[TKind]` can receive: those of the user
 * transitions naming it when it is named nowhere else, else the machine's whole union.
 */
export type EventsFor<
  TShape,
  TEvents,
  TKind extends TransitionBehaviorKind,
  TName,
> = string extends keyof TEvents
  ? EventObject
  : TName extends AnyEventNames<TShape, TKind>
    ? MachineEventUnion<TShape, TEvents>
    : [Extract<UserTransitionNames<TShape, TKind>, [TName, string]>] extends [never]
      ? MachineEventUnion<TShape, TEvents>
      : Extract<
          MachineEventUnion<TShape, TEvents>,
          { type: Extract<UserTransitionNames<TShape, TKind>, [TName, string]>[1] }
        >;

/**
 * `behavior` as `defineMachine` types it: guards, actions and calculators see the events of the
 * transitions naming them (`EventsFor`), every other behavior the machine's whole event union.
 */
export interface TypedBehaviorConfig<
  TContext extends Context,
  TShape,
  TEvents,
  TGuards,
  TActions,
  TCalculators,
> extends Omit<
  BehaviorConfig<TContext, MachineEventUnion<TShape, TEvents>>,
  'events' | 'guards' | 'actions' | 'calculators'
> {
  events?: TEvents;
  guards?: {
    [N in keyof TGuards]: GuardEntry<TContext, EventsFor<TShape, TEvents, 'guards', N>>;
  };
  actions?: {
    [N in keyof TActions]: ActionEntry<TContext, EventsFor<TShape, TEvents, 'actions', N>>;
  };
  calculators?: {
    [N in keyof TCalculators]: ActionEntry<TContext, EventsFor<TShape, TEvents, 'calculators', N>>;
  };
}

/**
 * What `defineMachine` accepts: the machine config, its behaviors and its HTTP endpoints. The
 * type parameters are inferred from the machine as written, so that behaviors receive typed
 * events (typed-events.ts): `TContext` from `config.context`, `TStates`, `TOn` and `TListen`
 * from the config's literal states, root `on` and `listen`, `TEvents` from `behavior.events`,
 * and the keys of the guards, actions and calculators to type each by the transitions naming it.
 */
export interface MachineInput<
  TContext extends Context = Context,
  TStates = Record<string, StateConfig>,
  TOn = {},
  TListen = {},
  TEvents = Record<string, EventReference>,
  TGuards = Record<string, unknown>,
  TActions = Record<string, unknown>,
  TCalculators = Record<string, unknown>,
> {
  config: MachineConfig<TContext> & { states?: TStates; on?: TOn; listen?: TListen };
  behavior?: TypedBehaviorConfig<
    TContext,
    MachineShape<TStates, TOn, TListen>,
    TEvents,
    TGuards,
    TActions,
    TCalculators
  >;
  endpoints?: readonly EndpointConfig[];
  /**
   * Scripted behaviour for tests and demos (`defineScenario`), played over HTTP when
   * `MACHINE_SCENARIOS_ENABLED` is true. See docs/scenarios.md.
   */
  scenarios?: readonly ScenarioEntry[];
  /**
   * Steps from older versions of this machine to its own (`defineMigration`): instances of an
   * older version are migrated on their next load, or by `machine-routes instances migrate`.
   * See docs/versioning.md.
   */
  migrations?: readonly MigrationConfig<never, Context>[];
  /**
   * Older versions of this machine kept loaded (`defineMachine(...)` of each), for
   * `versioning: 'pin'`: an instance of one of their versions runs on it until it finishes; new
   * instances start on this one. See docs/versioning.md.
   */
  previous?: readonly MachineDefinition[];
  /**
   * `'migrate'` (default): instances of older versions are migrated (`migrations`). `'pin'`:
   * instances of a version in `previous` run on it; others are migrated when a migration exists.
   */
  versioning?: 'migrate' | 'pin';
}
