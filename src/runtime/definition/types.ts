/**
 * What users write (`*Config`) and the normalized forms the rest of the runtime reads
 * (`*Definition`). Every module outside `definition/` reads only the `*Definition` side. The
 * options of endpoints and endpoint actions are in endpoint-config.ts, behaviors and the
 * `behavior` section in behavior-types.ts.
 */
import type { ZodType } from 'zod';
import type { SourceLocation } from '../errors.js';
import type {
  BehaviorConfig,
  BehaviorEntry,
  BehaviorList,
  OutputFunction,
} from './behavior-types.js';
import type {
  ContentionConfig,
  EndpointActionDefinition,
  ForwardConfig,
} from './endpoint-config.js';
import type { JobRunContext } from './job.js';

/** A machine's context: a plain JSON-serializable object. */
export type Context = Record<string, unknown>;

/** HTTP methods an endpoint may use. */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** An event as it travels through the interpreter and into history. */
export interface EventObject {
  type: string;
  payload?: Record<string, unknown>;
  /** Who caused the event (user id, job name, ...); raised events inherit it. */
  actor?: string | null;
  /** Event schema version, written to history (default 1). */
  version?: number;
}

// ---------------------------------------------------------------------------------------------
// Events

/** A normalized event definition: its type and an optional zod schema of its payload. */
export interface EventDefinition<TType extends string = string> {
  readonly kind: 'event';
  readonly type: TType;
  readonly payload: ZodType | undefined;
  /** Largest payload in bytes (serialised JSON) an endpoint accepts; default: the router's. */
  readonly payloadLimit?: number;
}

/**
 * Class form of an event: `class ConsentGrantedEvent extends MachineEvent { static payload = ... }`.
 * Its type is `static type` when given, else derived from the class name.
 */
export interface EventClass {
  readonly name: string;
  readonly type?: string;
  readonly payload?: ZodType;
  readonly payloadLimit?: number;
  readonly prototype: object;
}

/** Anything accepted where an event type is expected. */
export type EventReference = string | EventDefinition | EventClass;

// ---------------------------------------------------------------------------------------------
// Timers

/** A duration: seconds as a positive number, or an object of units. */
export type TimerSpec =
  number | { seconds?: number; minutes?: number; hours?: number; days?: number; weeks?: number };

// ---------------------------------------------------------------------------------------------
// States and transitions

export interface TransitionConfig {
  /** Target state: a sibling key, an ancestor's sibling, or a dotted path from the root. */
  target?: string | null;
  guards?: BehaviorList;
  actions?: BehaviorList;
  calculators?: BehaviorList;
  description?: string;
  /** One-shot timer: fire this transition `after` the state was entered. */
  after?: TimerSpec;
  /** Recurring timer. */
  every?: TimerSpec;
  /** With `every`: stop after this many fires... */
  max?: number;
  /** ...and then send this event once. */
  then?: string;
}

/** A target string, targetless (`null`), a config, or guarded branches (last unguarded = fallback). */
export type TransitionsConfig = string | null | TransitionConfig | readonly TransitionConfig[];

/** `output` of a state or endpoint: a behavior (key, reference, tuple) or a context-key filter. */
export type OutputConfig = BehaviorEntry | readonly string[];

/**
 * A state's `output`: an `OutputConfig`, or a typed output (`z.object(...)`, built from the
 * context by its keys and parsed; a child's `@done` carries it).
 */
export type StateOutputConfig = OutputConfig | ZodType;

export type StateType = 'atomic' | 'compound' | 'parallel' | 'final';

export interface StateConfig {
  type?: StateType;
  /** Initial child of a compound state (defaults to the first child). */
  initial?: string;
  states?: Record<string, StateConfig>;
  /**
   * Transitions by event type. Reserved keys: `@always` (transient), `@done` (compound /
   * parallel / child completion), `@done.<final>`, `@fail`, `@timeout`.
   */
  on?: Record<string, TransitionsConfig>;
  /** Alias of `on['@done']`, the spec's name for a parallel state's completion. */
  onDone?: TransitionsConfig;
  entry?: BehaviorList;
  exit?: BehaviorList;
  output?: StateOutputConfig;
  description?: string;
  meta?: Record<string, unknown>;
  // Delegation (child machines, forwarded endpoints): see docs/delegation.md.
  /**
   * Delegates to a child machine while this (atomic) state is active. A definition, or the
   * definition id of a machine the runtime knows (resolved when the state is entered, through
   * `MacrostepOptions.machines`), e.g. for machines that import each other.
   */
  machine?: MachineDefinitionBase | string;
  /** The child's initial context from the parent's: keys, a `{ childKey: parentKey }` map or a function. */
  input?: ChildInputConfig;
  /** Present (true or a queue name): the child runs asynchronously, through the job queue. */
  queue?: boolean | string;
  /** Parent events exposed as endpoints and forwarded to the running child (async only). */
  forward?: ForwardConfig;
  /**
   * A job actor instead of a child machine: an async function or `defineJob(...)`, run on the
   * job queue when the (atomic) state is entered. Its result routes `@done` (`@fail` on error,
   * `@timeout` as for children); with `target` instead of `@done` it is fire-and-forget.
   */
  job?: JobReference;
  /** With `job` and no `@done`: move on to this state at once; the job runs after the commit. */
  target?: string;
}

/** What `job` accepts: an async function of (input, job context), or a `defineJob` result. */
export type JobReference =
  | ((input: never, job: JobRunContext) => Promise<unknown>)
  | {
      readonly kind: 'job';
      readonly name: string | null;
      readonly input: ZodType | null;
      readonly output: ZodType | null;
      readonly run: (input: never, job: JobRunContext) => Promise<unknown>;
    };

/**
 * How a child's initial context is built from the parent: a list of parent context keys copied
 * as they are, a rename map `{ childKey: 'parentKey' }`, or a function of the parent's context
 * and the event that entered the delegating state. Merged over the child's own initial context.
 */
export type ChildInputConfig =
  | readonly string[]
  | Readonly<Record<string, string>>
  | ((args: { context: Context; event: EventObject }) => Context);

export interface ListenConfig {
  entry?: BehaviorList;
  exit?: BehaviorList;
  transition?: BehaviorList;
}

export interface MachineConfig<TContext extends Context = Context> extends Omit<
  StateConfig,
  'input'
> {
  /** Definition id: prefix of every state id and default route name. */
  id: string;
  /**
   * The machine's typed input (`z.object(...)`): what a parent must pass in its delegating
   * state's `input` when it starts this machine as a child (checked at definition time where
   * the parent's mapping is known, parsed when the child starts).
   */
  input?: ZodType;
  /**
   * The machine's typed failure (`z.object(...)`): when it fails as a child, the parent's `@fail`
   * carries `failure`, built from the error (`message`, `code`, `name`, its own fields) and the
   * child's input.
   */
  failure?: ZodType;
  /** Initial context, or a zod object schema whose defaults build it. */
  context?: TContext | ZodType<TContext>;
  listen?: ListenConfig;
  /** Protection from `@always` / raise loops while processing one event (default 100). */
  max_transition_depth?: number;
  /** `false`: never persisted on send (stateless use). Default true. */
  should_persist?: boolean;
  /**
   * The machine's version (docs/versioning.md): recorded on every instance it writes and named
   * by migrations. Without it the version is a fingerprint of the machine's structure.
   */
  version?: string | number;
}

// ---------------------------------------------------------------------------------------------
// Normalized definitions (what other modules read)

/** A normalized `output` (state or endpoint). */
export type OutputDefinition =
  | { kind: 'keys'; keys: readonly string[] }
  | { kind: 'behavior'; name: string; run: OutputFunction; params: Record<string, unknown> };

/** A state's normalized `output`: an `OutputDefinition`, or a typed output with its schema keys. */
export type StateOutputDefinition =
  OutputDefinition | { kind: 'typed'; schema: ZodType; keys: readonly string[] };

/** A normalized endpoint: every option resolved to its default. */
export interface EndpointDefinition {
  eventType: string;
  /** The event's payload schema, when the event has one. */
  event: EventDefinition;
  uri: string;
  method: HttpMethod;
  action: EndpointActionDefinition | null;
  output: OutputDefinition | null;
  middleware: readonly string[];
  status: number;
  availableEvents: boolean;
  /** The endpoint's own contention policy; `null` when it sets none (the registration decides). */
  contention: ContentionConfig | null;
}

/** A normalized forwarded endpoint (a delegating state's `forward` entry). */
export interface ForwardDefinition {
  /** Type the parent receives (and the route is named after). */
  parentEventType: string;
  /** Type sent to the child. */
  childEventType: string;
  /** The child's event definition: the request is validated with it. */
  childEvent: EventDefinition;
  /** Full id of the delegating state (`parent.processing`). */
  stateId: string;
  /** Definition id of the child machine. */
  childMachineId: string;
  uri: string;
  method: HttpMethod;
  action: EndpointActionDefinition | null;
  output: OutputDefinition | null;
  middleware: readonly string[];
  status: number;
  availableEvents: boolean;
  /** The forward's own contention policy; `null` when it sets none (the registration decides). */
  contention: ContentionConfig | null;
}

/** Runtime options of one machine after defaults. */
export interface MachineOptions {
  /** The machine's own `max_transition_depth`; `null` when the runtime's setting applies. */
  maxTransitionDepth: number | null;
  shouldPersist: boolean;
}

/**
 * A validated, normalized machine. Produced by `defineMachine`; read by the interpreter, the
 * router and the generator. Internal state nodes live in `interpreter`-facing fields owned by
 * definition/ (see `StateNode`).
 */
export interface MachineDefinitionBase {
  readonly kind: 'machine';
  readonly id: string;
  readonly config: MachineConfig;
  readonly behavior: BehaviorConfig;
  /** Event definitions by type (from `behavior.events`, endpoints and forwards). */
  readonly events: ReadonlyMap<string, EventDefinition>;
  /** Every user-sendable event type some state handles (keys of `on`, `@`-names excluded). */
  readonly eventTypes: ReadonlySet<string>;
  readonly endpoints: readonly EndpointDefinition[];
  readonly forwards: readonly ForwardDefinition[];
  readonly options: MachineOptions;
  /** Where `defineMachine` was called, when it can be told from the stack. */
  readonly source: SourceLocation | undefined;
}
