/**
 * The instance lifecycle as the HTTP layer and jobs see it. Implemented by `MachineRuntime`
 * (engine/machine-runtime.ts) on top of a `Store`.
 */
import type { Context, EventObject, ForwardDefinition } from '../definition/types.js';
import type { NoticeListener } from './commit-feed.js';
import type {
  AvailableEvent,
  HistoryRecord,
  MachineSnapshot,
  StoredScenario,
} from '../interpreter/types.js';
import type { MacrostepEffect } from '../interpreter/effects.js';
import type { ScenarioRequest } from '../interpreter/scenarios.js';
import type { TransactionHook } from './transaction.js';
import type { MachineValidationException } from '../errors.js';
import type { IdempotencyKeyStore, StoredResponse } from './idempotency.js';

/** Result of creating an instance or sending it an event. */
export interface InstanceResult {
  snapshot: MachineSnapshot;
  /** Records written by this call, in order. */
  history: HistoryRecord[];
  /**
   * Deferred effects of the macrostep (child machines, messages, listeners), for the job layer
   * to apply after the commit. `MachineRuntime` returns them; it does not apply them yet.
   */
  effects?: MacrostepEffect[];
  /**
   * The scenario the instance keeps after the call (a continuation), `null` when none. Only
   * set when scenarios are enabled.
   */
  scenario?: StoredScenario | null;
  /**
   * A forwarded event: the child it reached, after its step (the same commit), so responses
   * need not read it again.
   */
  forwardedChild?: MachineSnapshot;
}

/** Options of `send` / `sendStateless`. */
export interface SendOptions {
  /** What the request asks of scenarios (only read when scenarios are enabled; default omitted). */
  scenario?: ScenarioRequest;
  /**
   * An Idempotency-Key the caller claimed for this send: the response it builds from the
   * step's outcome is stored in the event's own commit. Ignored where nothing is committed
   * (stateless, `should_persist: false`) and by forwarded sends; `stored` tells the caller.
   */
  idempotency?: IdempotentSend;
  /**
   * How long to wait for the instance's lock when another request holds it, in ms (the
   * endpoint's `contention: { wait }`); default 0: refuse at once. Requests of one process
   * get the lock in order of arrival; past the wait, `MachineAlreadyRunningException` with
   * the last committed state, as without waiting.
   */
  lockWaitMs?: number;
  /**
   * `sendStateless` only: `false` leaves `history` empty instead of building records nobody
   * reads (the HTTP layer's stateless routes: their answer shows none). Default true.
   */
  keepHistory?: boolean;
}

/**
 * A send answering a claimed Idempotency-Key record (see `IdempotencyKeyStore`): the runtime
 * builds the response before committing and completes the record in the same transaction.
 */
export interface IdempotentSend {
  scope: string;
  key: string;
  ownerId: string;
  /**
   * The response the request will answer, from the step's outcome: its result, or the
   * `MachineValidationException` of a validation guard (whose history commits too). Called
   * once, under the instance lock, before the commit.
   */
  respond(outcome: InstanceResult | MachineValidationException): Promise<StoredResponse>;
  /** Set by the runtime once the response was committed with the event. */
  stored?: boolean;
}

/** What a read sees of an instance. */
export interface InstanceRead {
  snapshot: MachineSnapshot;
  /**
   * A live lock row is held (a send in any process, a job, `withLock`): an event is being
   * processed and the snapshot is the last committed state before it.
   */
  isProcessing: boolean;
}

/** Options of `MachineInstances.availableEvents`. */
export interface AvailableEventsReadOptions {
  /**
   * Explain each entry (`ExplainedAvailableEvent`: `enabled`, `reason`), forwarded ones against
   * the running child's snapshot.
   */
  explain?: boolean;
}

/** Options of `create`. */
export interface CreateOptions {
  /** Merged over the definition's initial context. */
  input?: Context;
  actor?: string | null;
}

/**
 * Runs machines against a store: one writer per instance at a time, one transaction per event.
 *
 * `D` is the machine definition type (kept generic so persistence does not depend on how
 * definitions are built).
 */
export interface MachineInstances<D> {
  /** A fresh instance in its initial state, persisted. */
  create(definition: D, options?: CreateOptions): Promise<InstanceResult>;
  /** The last committed snapshot; `MachineNotFoundException` for unknown or foreign ids. */
  restore(definition: D, id: string): Promise<MachineSnapshot>;
  /**
   * Load, lock (without waiting), run one macrostep, persist, release.
   * Throws `MachineAlreadyRunningException` (carrying the last committed snapshot) when the
   * lock is held, `MachineValidationException` after persisting a validation-guard failure,
   * `NoTransitionDefinitionFoundException` with nothing written, `MachineNotFoundException` for
   * unknown or foreign ids (the HTTP layer relies on it to skip a separate `restore`).
   */
  send(
    definition: D,
    id: string,
    event: EventObject,
    options?: SendOptions,
  ): Promise<InstanceResult>;
  /**
   * The last committed snapshot, and whether a live (unexpired) lock on the instance is held
   * right now. Writes nothing and never takes or waits for the lock (reads). Unknown or foreign
   * ids: `MachineNotFoundException`.
   */
  read(definition: D, id: string): Promise<InstanceRead>;
  /**
   * Optional: a model record's first event. Creates the instance and applies `event` in one
   * commit, running `options.bind(id)` (the record's binding) in the same transaction; nothing
   * is written when the event is refused (`NoTransitionDefinitionFoundException`,
   * `MachineValidationException`, a scenario refusal). `null` when the hook found the record
   * bound meanwhile (`RecordAlreadyBoundError`): rolled back, the caller uses that machine.
   */
  createAndSend?(
    definition: D,
    event: EventObject,
    options?: SendOptions & { bind?: (id: string) => TransactionHook },
  ): Promise<InstanceResult | null>;
  /**
   * Calls `listener` after each commit of instance `id` (any process on PostgreSQL, this process
   * on the embedded stores). Resolves, with the function that stops it, once later commits are
   * sure to be heard.
   */
  watch(id: string, listener: NoticeListener): Promise<() => void>;
  /** A fresh instance per call, the event applied, nothing persisted (stateless endpoints). */
  sendStateless(definition: D, event: EventObject, options?: SendOptions): Promise<InstanceResult>;
  /**
   * Optional: `sendStateless` answered synchronously (a stateless step does no I/O), throwing
   * instead of rejecting. The HTTP layer's stateless routes use it when present: no promise
   * round trip per request.
   */
  sendStatelessSync?(definition: D, event: EventObject, options?: SendOptions): InstanceResult;
  /** Optional: scenarios are enabled (the HTTP layer then reads and answers scenario fields). */
  readonly scenariosEnabled?: boolean;
  /** Optional: the scenario kept on an instance (scenarios enabled), for contention answers. */
  keptScenario?(id: string): Promise<StoredScenario | null>;
  /**
   * Optional: events accepted now including forwarded ones the running children accept
   * (reads children). Without it the HTTP layer lists the instance's own events only.
   */
  availableEvents?(
    definition: D,
    snapshot: MachineSnapshot,
    options?: AvailableEventsReadOptions,
  ): Promise<AvailableEvent[]>;
  /** Optional: Idempotency-Key records (routes with `idempotency` need them). */
  readonly idempotencyKeys?: IdempotencyKeyStore;
  /** Optional: the child a forwarded endpoint reached, for `data.child` of forwarded responses. */
  forwardedChild?(
    definition: D,
    parent: MachineSnapshot,
    forward: ForwardDefinition,
  ): Promise<MachineSnapshot | null>;
}
