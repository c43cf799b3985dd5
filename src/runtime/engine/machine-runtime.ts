/**
 * `MachineRuntime`: the runtime's public face (`MachineInstances`, whose members carry their
 * documentation), a thin facade over modules with one job each: send.ts, create.ts,
 * stateless.ts, reads.ts, with-lock.ts; every locked write goes through locked-step.ts, every
 * commit through commit-step.ts, all on one `EngineContext` built once (build-context.ts).
 * `MachineRuntime.open` enters the composition root (open-runtime.ts).
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { EventObject, ForwardDefinition } from '../definition/types.js';
import type { ChildRow } from '../interpreter/child-rows.js';
import type {
  AvailableEvent,
  HistoryRecord,
  MachineSnapshot,
  StoredScenario,
} from '../interpreter/types.js';
import type { NoticeListener } from '../persistence/commit-feed.js';
import type { IdempotencyKeyStore } from '../persistence/idempotency.js';
import type { FlowControlStore } from '../persistence/flow-control.js';
import type {
  FindInStateOptions,
  HistoryQuery,
  InstanceInState,
  Store,
} from '../persistence/store.js';
import type { TransactionHook } from '../persistence/transaction.js';
import type {
  AvailableEventsReadOptions,
  CreateOptions,
  InstanceRead,
  InstanceResult,
  SendOptions,
} from '../persistence/types.js';
import { buildContext } from './build-context.js';
import type { CommitListener } from './commit-events.js';
import type { ResolvedSettings } from './config.js';
import type { EngineContext } from './context.js';
import { create, createAndSend, createOrSend, type CreateOrSendResult } from './create.js';
import { runtimeClosed, type MachineInstances } from './machine-instances.js';
import { openRuntime, type OpenedParts } from './open-runtime.js';
import type { MachineRuntimeOptions, OpenRuntimeOptions } from './options.js';
import * as reads from './reads.js';
import { send } from './send.js';
import { sendStatelessSync } from './stateless.js';
import type { TimerWorker } from './timers/timer-worker.js';
import { tryWithLock, withLock, type LockedInstance, type WithLockOptions } from './with-lock.js';

/** Runs machines against a `Store`: one writer per instance at a time, one transaction per event. */
export class MachineRuntime implements MachineInstances<MachineDefinition> {
  /** What the engine's parts share (timer sweeps and job handlers of tools take it). */
  readonly context: EngineContext;
  readonly #closeContext: () => Promise<void>;
  readonly #jobsRegistered: Promise<void>;
  /** What `open` started and `close` stops (queue, timer sweep, expired-row sweep). */
  #opened: OpenedParts | null = null;
  #closing: Promise<void> | null = null;

  constructor(options: MachineRuntimeOptions) {
    const { context, dispatch, close } = buildContext(options);
    this.context = context;
    this.#closeContext = close;
    this.#jobsRegistered = dispatch
      .register()
      .catch((error: unknown) => context.onError(error, 'registering jobs'));
  }

  /** A runtime from settings (options over `env` over `process.env`): see `openRuntime`. */
  static async open(options: OpenRuntimeOptions = {}): Promise<MachineRuntime> {
    return openRuntime(options, (runtimeOptions, opened) => {
      const runtime = new MachineRuntime(runtimeOptions);
      runtime.#opened = opened;
      return runtime;
    });
  }

  get store(): Store {
    return this.context.store;
  }

  /** Whether scenarios play (the `scenarios` option, `MACHINE_SCENARIOS_ENABLED` through `open`). */
  get scenariosEnabled(): boolean {
    return this.context.settings.scenariosEnabled;
  }

  /** The settings `open` resolved (store, locks, queue, parallel dispatch); `null` after `new`. */
  get settings(): ResolvedSettings | null {
    return this.#opened?.settings ?? null;
  }

  /** The background timer sweep of this runtime, when `open` started one. */
  get timerWorker(): TimerWorker | null {
    return this.#opened?.timers ?? null;
  }

  /** The store's Idempotency-Key records (routes with `idempotency`). */
  get idempotencyKeys(): IdempotencyKeyStore {
    return this.#live().store.idempotencyKeys;
  }

  /** The store's flow-control counters (routes with `flow`, docs/http.md "Flow control"). */
  get flowControl(): FlowControlStore {
    return this.#live().store.flowControl;
  }

  /** Resolves once the job handlers are registered on the queue (before starting a worker). */
  ready(): Promise<void> {
    return this.#jobsRegistered;
  }

  /**
   * Calls `listener` after every committed step, once per instance the step wrote, with its
   * sequence number and snapshot (reads, streams). Returns the function that unsubscribes.
   */
  onCommit(listener: CommitListener): () => void {
    return this.context.listeners.subscribe(listener);
  }

  async create(definition: MachineDefinition, options?: CreateOptions): Promise<InstanceResult> {
    return create(this.#live(), definition, options);
  }

  async createAndSend(
    definition: MachineDefinition,
    event: EventObject,
    options?: SendOptions & { bind?: (id: string) => TransactionHook },
  ): Promise<InstanceResult | null> {
    return createAndSend(this.#live(), definition, event, options);
  }

  async createOrSend(
    definition: MachineDefinition,
    businessKey: string,
    event: EventObject,
    options?: SendOptions,
  ): Promise<CreateOrSendResult> {
    return createOrSend(this.#live(), definition, businessKey, event, options);
  }

  async restore(definition: MachineDefinition, id: string): Promise<MachineSnapshot> {
    return reads.restore(this.#live(), definition, id);
  }

  async read(definition: MachineDefinition, id: string): Promise<InstanceRead> {
    return reads.read(this.#live(), definition, id);
  }

  async watch(id: string, listener: NoticeListener): Promise<() => void> {
    return this.#live().feed.subscribe(id, listener);
  }

  // Not async: the engine's send is, and a second async frame cost every event two promises
  // (each a run of the context manager's hooks when an OpenTelemetry SDK is registered).
  send(
    definition: MachineDefinition,
    id: string,
    event: EventObject,
    options?: SendOptions,
  ): Promise<InstanceResult> {
    try {
      return send(this.#live(), definition, id, event, options);
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }

  async sendStateless(
    definition: MachineDefinition,
    event: EventObject,
    options?: SendOptions,
  ): Promise<InstanceResult> {
    return sendStatelessSync(this.#live(), definition, event, options);
  }

  sendStatelessSync(
    definition: MachineDefinition,
    event: EventObject,
    options?: SendOptions,
  ): InstanceResult {
    return sendStatelessSync(this.#live(), definition, event, options);
  }

  async availableEvents(
    definition: MachineDefinition,
    snapshot: MachineSnapshot,
    options?: AvailableEventsReadOptions,
  ): Promise<AvailableEvent[]> {
    return reads.availableEvents(this.#live(), definition, snapshot, options);
  }

  async forwardedChild(
    _definition: MachineDefinition,
    parent: MachineSnapshot,
    forward: ForwardDefinition,
  ): Promise<MachineSnapshot | null> {
    return reads.forwardedChildOf(this.#live(), parent, forward);
  }

  /** `machine_children` rows of a parent instance, oldest first. */
  async children(parentId: string): Promise<ChildRow[]> {
    return this.#live().store.findChildren({ parentRootEventId: parentId });
  }

  async bindBusinessKey(id: string, key: string): Promise<void> {
    await this.#live().store.queries.bindBusinessKey(id, key);
  }

  async keptScenario(id: string): Promise<StoredScenario | null> {
    return reads.keptScenario(this.#live(), id);
  }

  /** Runs `fn` holding the instance lock, its sends under it (see engine/with-lock.ts). */
  async withLock<T>(
    id: string,
    fn: (instance: LockedInstance) => Promise<T>,
    options?: WithLockOptions,
  ): Promise<T> {
    return withLock(this.#live(), id, fn, options);
  }

  /** `withLock` without waiting: `null` when someone holds the lock. */
  async tryWithLock<T>(
    id: string,
    fn: (instance: LockedInstance) => Promise<T>,
    options?: { context?: string },
  ): Promise<T | null> {
    return tryWithLock(this.#live(), id, fn, options);
  }

  /** History of an instance in sequence order; `MachineNotFoundException` for unknown or foreign ids. */
  async history(
    definition: MachineDefinition,
    id: string,
    query?: HistoryQuery,
  ): Promise<HistoryRecord[]> {
    return reads.history(this.#live(), definition, id, query);
  }

  /** Instances of `definition` whose active states include `stateId`, oldest entry first. */
  async findInstancesInState(
    definition: MachineDefinition,
    stateId: string,
    options: FindInStateOptions,
  ): Promise<InstanceInState[]> {
    return reads.findInstancesInState(this.#live(), definition, stateId, options);
  }

  /** Deletes locks whose holders are presumed dead (housekeeping; expired rows never block). */
  async sweepExpiredLocks(): Promise<number> {
    return this.#live().store.sweepExpiredLocks();
  }

  /** Stops what `open` started (queue: `jobTimeoutMs`, `MACHINE_SHUTDOWN_TIMEOUT`), the store; idempotent. */
  close(options: { jobTimeoutMs?: number } = {}): Promise<void> {
    // Idempotent: a second close (shutdown hooks, afterEach) waits for the first.
    const bound = (this.#opened?.settings.runtime.shutdownTimeout ?? 10) * 1000;
    this.#closing ??= this.#close(options.jobTimeoutMs ?? bound);
    return this.#closing;
  }

  // Entry points after close() began (jobs still draining use the context): 503, not a 500.
  #live(): EngineContext {
    if (this.#closing !== null) throw runtimeClosed();
    return this.context;
  }

  async #close(jobTimeoutMs: number): Promise<void> {
    // Registration still running must not meet a closed queue (and report it).
    await this.#opened?.stop(this.#jobsRegistered, jobTimeoutMs);
    await this.#closeContext();
  }
}
