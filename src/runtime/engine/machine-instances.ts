/**
 * `MachineInstances`: the instance lifecycle as the HTTP layer, the jobs and the timers see it,
 * implemented by `MachineRuntime`. Every member is required: the HTTP layer has no fallback
 * for a runtime that lacks one. Once the runtime's `close()` has begun, every member throws
 * (or rejects with) `RuntimeClosedException` (`MR_RUNTIME_CLOSED`, 503 with `Retry-After`).
 */
import type { EventObject, ForwardDefinition } from '../definition/types.js';
import { RuntimeClosedException } from '../errors.js';
import type { NoticeListener } from '../persistence/commit-feed.js';
import type { AvailableEvent, MachineSnapshot, StoredScenario } from '../interpreter/types.js';
import type { TransactionHook } from '../persistence/transaction.js';
import type { IdempotencyKeyStore } from '../persistence/idempotency.js';
import type { FlowControlStore } from '../persistence/flow-control.js';
import type { FindInStateOptions, InstanceInState } from '../persistence/store.js';
import type {
  AvailableEventsReadOptions,
  CreateOptions,
  InstanceRead,
  InstanceResult,
  SendOptions,
} from '../persistence/types.js';

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
   * A model record's first event. Creates the instance and applies `event` in one
   * commit, running `options.bind(id)` (the record's binding) in the same transaction; nothing
   * is written when the event is refused (`NoTransitionDefinitionFoundException`,
   * `MachineValidationException`, a scenario refusal). `null` when the hook found the record
   * bound meanwhile (`RecordAlreadyBoundError`): rolled back, the caller uses that machine.
   */
  createAndSend(
    definition: D,
    event: EventObject,
    options?: SendOptions & { bind?: (id: string) => TransactionHook },
  ): Promise<InstanceResult | null>;
  /**
   * Create-or-send (docs/http.md "Create-or-send"): `event` to the instance of `definition`
   * bound to `businessKey`, through the locked step like `send` (its contention and refusals
   * included); when none is bound, a new instance created with the event applied and the key
   * bound, in one commit (nothing written when the event is refused). Keys are unique per
   * machine in the store: concurrent first requests on one key create one instance and the
   * others send to it. `created` tells which happened.
   */
  createOrSend(
    definition: D,
    businessKey: string,
    event: EventObject,
    options?: SendOptions,
  ): Promise<InstanceResult & { created: boolean }>;
  /**
   * Calls `listener` after each commit of instance `id` (any process on PostgreSQL, this process
   * on the embedded stores). Resolves, with the function that stops it, once later commits are
   * sure to be heard.
   */
  watch(id: string, listener: NoticeListener): Promise<() => void>;
  /** A fresh instance per call, the event applied, nothing persisted (stateless endpoints). */
  sendStateless(definition: D, event: EventObject, options?: SendOptions): Promise<InstanceResult>;
  /**
   * `sendStateless` answered synchronously (a stateless step does no I/O), throwing instead of
   * rejecting. The HTTP layer's stateless routes use it: no promise round trip per request.
   */
  sendStatelessSync(definition: D, event: EventObject, options?: SendOptions): InstanceResult;
  /** Scenarios are enabled (the HTTP layer then reads and answers scenario fields). */
  readonly scenariosEnabled: boolean;
  /** The scenario kept on an instance (scenarios enabled), for contention answers. */
  keptScenario(id: string): Promise<StoredScenario | null>;
  /**
   * Events accepted now including forwarded ones the running children accept (reads
   * children); with `explain`, each says whether its guards pass.
   */
  availableEvents(
    definition: D,
    snapshot: MachineSnapshot,
    options?: AvailableEventsReadOptions,
  ): Promise<AvailableEvent[]>;
  /**
   * Records the business key of an instance a model record got (the record's key), for the
   * operator's lookup by key (docs/operations.md). Written after the instance's first commit: a
   * crash in between leaves the instance without a key, found by id or state only.
   */
  bindBusinessKey(id: string, key: string): Promise<void>;
  /** Idempotency-Key records (routes with `idempotency` need them). */
  readonly idempotencyKeys: IdempotencyKeyStore;
  /** Instances whose active states include `stateId`, oldest entry first (flow's `inState`). */
  findInstancesInState?(
    definition: D,
    stateId: string,
    options: FindInStateOptions,
  ): Promise<InstanceInState[]>;
  /** Flow-control counters (routes with `flow`); absent, a router keeps them in its process. */
  readonly flowControl?: FlowControlStore;
  /** The child a forwarded endpoint reached, for `data.child` of forwarded responses. */
  forwardedChild(
    definition: D,
    parent: MachineSnapshot,
    forward: ForwardDefinition,
  ): Promise<MachineSnapshot | null>;
}

/** The answer of every entry point of a runtime whose `close()` has begun. */
export function runtimeClosed(): RuntimeClosedException {
  return new RuntimeClosedException(
    'The runtime is closed (shutting down): it takes no more requests. Send the request again ' +
      'once a server is back (Retry-After), or to another server of the same store.',
  );
}
