/**
 * The instance lifecycle: the effectful shell around the pure interpreter. Each call loads the
 * last committed snapshot (one primary-key read, never a replay), computes a macrostep in
 * memory and applies it to the store in one transaction.
 *
 * `send` order: lock (no waiting) -> load -> transition -> commit + release in one transaction
 * (or release alone when nothing is written). The lock is taken before loading, so the snapshot
 * read is the one the commit is fenced on; on contention the snapshot is read afterwards, which
 * makes it the latest committed state.
 */
import { configureRuntime, type MachineDefinition } from '../definition/index.js';
import type { EventObject, ForwardDefinition } from '../definition/types.js';
import type { ChildRow } from '../delegation/child-rows.js';
import { resolveForward } from '../delegation/forwarding.js';
import type { JobQueue } from '../delegation/job-queue.js';
import { DelegationShell, type DelegationShellOptions } from '../delegation/shell.js';
import { MachineAlreadyRunningException, MachineNotFoundException } from '../errors.js';
import { initialize, toValidationException, transition } from '../interpreter/index.js';
import type {
  AvailableEvent,
  HistoryRecord,
  MachineSnapshot,
  MacrostepResult,
} from '../interpreter/types.js';
import { loadRuntimeConfig, type MachineRuntimeConfig } from '../config.js';
import { isInstanceId } from '../ids.js';
import { LockManager, type LockHandle } from './locks.js';
import { openStore } from './open-store.js';
import {
  SequenceConflictError,
  type FindInStateOptions,
  type HistoryQuery,
  type InstanceInState,
  type Store,
} from './store.js';
import type { CreateOptions, InstanceResult, MachineInstances } from './types.js';

/** The interpreter functions the runtime drives (the real ones unless a test wraps them). */
export interface MachineEngine {
  initialize: typeof initialize;
  transition: typeof transition;
}

/** Options of `new MachineRuntime`. */
export interface MachineRuntimeOptions {
  store: Store;
  /**
   * Job queue of the asynchronous parts of delegation and messaging: child machines with
   * `queue`, their completion and `@timeout`, `dispatchTo` / `dispatchToParent`, and
   * synchronous sends retried after contention. Default (made on first use): an in-process
   * `InMemoryJobQueue` running in the background, which does not survive the process.
   */
  jobs?: JobQueue;
  /**
   * Machines this runtime may have to run before it has seen them: the parents and children
   * named in jobs (a worker process), children referenced by id (`machine: 'payment'`), targets
   * of `sendTo`. Definitions passed to `create`/`send`, and children referenced by definition,
   * are known automatically.
   */
  machines?: readonly MachineDefinition[];
  /** Async sends: tries (25), non-retryable failures tolerated (3), delay between tries (1000 ms). */
  sendRetry?: DelegationShellOptions['sendRetry'];
  /** Failures of deferred work nobody awaits (a send given up, ...). Default: console.error. */
  onDeferredError?: DelegationShellOptions['onError'];
  /** Seconds a lock lives before it may be taken over (default 60). */
  lockTtl?: number;
  /** Seconds `withLock` waits for a busy lock by default (default 30). */
  lockTimeout?: number;
  /** Clock for history times and state entry times (tests). */
  now?: () => Date;
  engine?: MachineEngine;
}

/** Options of `withLock`. */
export interface WithLockOptions {
  /** Milliseconds to wait for a busy lock (default: the runtime's lock timeout). */
  timeoutMs?: number;
  /** Recorded in the lock row (default `job`). */
  context?: string;
}

/** The instance handed to a `withLock` callback: sends under the lock already held. */
export interface LockedInstance {
  readonly id: string;
  /** The last committed snapshot. */
  restore(definition: MachineDefinition): Promise<MachineSnapshot>;
  /** `send` without taking the lock again (it is held); same persistence and errors otherwise. */
  send(definition: MachineDefinition, event: EventObject): Promise<InstanceResult>;
}

/** Options of `MachineRuntime.open`. */
export interface OpenRuntimeOptions extends Partial<MachineRuntimeConfig> {
  /** Run pending migrations on open (default: SQLite yes, PostgreSQL no; see `openStore`). */
  migrate?: boolean;
  /** Environment to read settings from (default `process.env`). */
  env?: Record<string, string | undefined>;
  /** See `MachineRuntimeOptions.jobs`. */
  jobs?: JobQueue;
  /** See `MachineRuntimeOptions.machines`. */
  machines?: readonly MachineDefinition[];
}

/** Runs machines against a `Store`: one writer per instance at a time, one transaction per event. */
export class MachineRuntime implements MachineInstances<MachineDefinition> {
  readonly store: Store;
  readonly #locks: LockManager;
  readonly #lockTimeoutMs: number;
  readonly #now: () => Date;
  readonly #engine: MachineEngine;
  readonly #delegation: DelegationShell;

  constructor(options: MachineRuntimeOptions) {
    this.store = options.store;
    this.#locks = new LockManager(options.store, (options.lockTtl ?? 60) * 1000);
    this.#lockTimeoutMs = (options.lockTimeout ?? 30) * 1000;
    this.#now = options.now ?? (() => new Date());
    this.#engine = options.engine ?? { initialize, transition };
    this.#delegation = new DelegationShell(
      {
        store: this.store,
        now: this.#now,
        send: (definition, id, event) => this.send(definition, id, event),
        withLock: (id, fn, lockOptions) => this.withLock(id, () => fn(), lockOptions),
      },
      {
        jobs: options.jobs,
        machines: options.machines,
        sendRetry: options.sendRetry,
        onError: options.onDeferredError,
      },
    );
    const onError = options.onDeferredError ?? ((error: unknown) => console.error(error));
    this.#delegation.registerJobs().catch((error: unknown) => onError(error, 'registering jobs'));
  }

  /**
   * A runtime on the store of the configuration (`loadRuntimeConfig(options, env)`). Also makes
   * `maxTransitionDepth` the process-wide default of machines that set none (`configureRuntime`).
   */
  static async open(options: OpenRuntimeOptions = {}): Promise<MachineRuntime> {
    const { migrate, env, jobs, machines, ...overrides } = options;
    const config = loadRuntimeConfig(overrides, env);
    configureRuntime({ maxTransitionDepth: config.maxTransitionDepth });
    const store = await openStore(config.databaseUrl, migrate === undefined ? {} : { migrate });
    return new MachineRuntime({
      store,
      lockTtl: config.lockTtl,
      lockTimeout: config.lockTimeout,
      ...(jobs === undefined ? {} : { jobs }),
      ...(machines === undefined ? {} : { machines }),
    });
  }

  async create(
    definition: MachineDefinition,
    options: CreateOptions = {},
  ): Promise<InstanceResult> {
    this.#delegation.register(definition);
    const result = this.#engine.initialize(definition, {
      now: this.#now,
      machines: this.#delegation.machines,
      ...(options.input === undefined ? {} : { context: options.input }),
      ...(options.actor === undefined ? {} : { actor: options.actor }),
    });
    // Persisted even when `should_persist` is false: the create endpoint persists explicitly.
    const extras = this.#delegation.prepare(result);
    await this.store.commit({
      snapshot: result.snapshot,
      history: result.history,
      expectedSequence: null,
      previousValue: [],
      now: this.#now(),
      children: extras.children,
      also: extras.also,
    });
    await this.#delegation.afterCommit(result);
    return finish(result);
  }

  async restore(definition: MachineDefinition, id: string): Promise<MachineSnapshot> {
    const snapshot = isInstanceId(id) ? await this.store.load(id) : null;
    if (!snapshot || snapshot.machineId !== definition.id) throw notFound(definition, id);
    return snapshot;
  }

  async send(
    definition: MachineDefinition,
    id: string,
    event: EventObject,
  ): Promise<InstanceResult> {
    if (!isInstanceId(id)) throw notFound(definition, id);
    if (!definition.options.shouldPersist) {
      // Never persisted on send: computed from the stored state, not written back.
      const snapshot = await this.restore(definition, id);
      return finish(
        this.#engine.transition(definition, snapshot, event, {
          now: this.#now,
          machines: this.#delegation.machines,
        }),
      );
    }
    const lock = await this.#locks.tryAcquire(id, 'send');
    if (!lock) {
      const snapshot = await this.restore(definition, id);
      throw alreadyRunning(definition, id, snapshot);
    }
    try {
      return await this.#sendLocked(definition, id, event, lock);
    } finally {
      // A failed release must not hide the outcome: the row expires after the lock TTL.
      await lock.release().catch(() => false);
    }
  }

  // `lock`: released by the commit itself (one write transaction less per event); without it
  // (inside `withLock`) the lock stays held for the rest of the callback.
  async #sendLocked(
    definition: MachineDefinition,
    id: string,
    event: EventObject,
    lock?: LockHandle,
  ): Promise<InstanceResult> {
    const snapshot = await this.restore(definition, id);
    this.#delegation.register(definition);
    // A parent-facing event of a running child (forwarded endpoint): recorded on the parent,
    // sent to the child, one transaction.
    const forward =
      definition.forwards.length > 0 ? resolveForward(definition, snapshot, event.type) : null;
    if (forward !== null) {
      const { parent } = await this.#delegation.sendForwarded(
        definition,
        snapshot,
        event,
        forward,
        lock?.ownerId,
      );
      lock?.releasedByCommit();
      return finish(parent);
    }
    // Throws NoTransitionDefinitionFoundException before anything is written.
    const result = this.#engine.transition(definition, snapshot, event, {
      now: this.#now,
      machines: this.#delegation.machines,
    });
    // Rows and child instances of delegation effects go into the same transaction.
    const extras = this.#delegation.prepare(result);
    try {
      await this.store.commit({
        snapshot: result.snapshot,
        history: result.history,
        expectedSequence: snapshot.sequence,
        previousValue: snapshot.value,
        now: this.#now(),
        ...(lock ? { releaseLockOwner: lock.ownerId } : {}),
        children: extras.children,
        also: extras.also,
      });
      lock?.releasedByCommit();
    } catch (error) {
      // Fenced out: our lock expired and another writer committed in between.
      if (error instanceof SequenceConflictError) {
        throw alreadyRunning(definition, id, await this.restore(definition, id));
      }
      throw error;
    }
    await this.#delegation.afterCommit(result);
    return finish(result);
  }

  /**
   * Events the instance accepts now, including forwarded events its running children accept
   * (`{ type, source: 'forward' }`): reads the children's rows and snapshots.
   */
  availableEvents(
    definition: MachineDefinition,
    snapshot: MachineSnapshot,
  ): Promise<AvailableEvent[]> {
    return this.#delegation.availableEvents(definition, snapshot);
  }

  /** The child a forwarded endpoint reached (running, else the latest of its state), or `null`. */
  forwardedChild(
    definition: MachineDefinition,
    parent: MachineSnapshot,
    forward: ForwardDefinition,
  ): Promise<MachineSnapshot | null> {
    return this.#delegation.forwardedChild(definition, parent, forward);
  }

  /** `machine_children` rows of a parent instance, oldest first. */
  children(parentId: string): Promise<ChildRow[]> {
    return this.store.findChildren({ parentRootEventId: parentId });
  }

  async sendStateless(definition: MachineDefinition, event: EventObject): Promise<InstanceResult> {
    const initial = this.#engine.initialize(definition, { now: this.#now });
    const result = this.#engine.transition(definition, initial.snapshot, event, { now: this.#now });
    return finish({
      ...result,
      history: [...initial.history, ...result.history],
      effects: [...initial.effects, ...result.effects],
    });
  }

  /**
   * Runs `fn` holding the instance lock, waiting up to `timeoutMs` for it (jobs, timers).
   * `fn` receives the locked instance: its `send` runs under this lock instead of contending,
   * while `runtime.send` from anywhere else is refused as usual. (The lock is handed over
   * explicitly rather than tracked in AsyncLocalStorage, whose promise hooks would tax every
   * request of the process.) Throws `MachineAlreadyRunningException`, carrying the last
   * committed snapshot, on timeout.
   */
  async withLock<T>(
    id: string,
    fn: (instance: LockedInstance) => Promise<T>,
    options: WithLockOptions = {},
  ): Promise<T> {
    const timeoutMs = options.timeoutMs ?? this.#lockTimeoutMs;
    const lock = await this.#locks.acquire(id, { timeoutMs, context: options.context ?? 'job' });
    if (!lock) {
      const holder = await this.store.readLock(id);
      throw new MachineAlreadyRunningException(
        `Failed to acquire lock for machine '${id}' within ${timeoutMs} ms.` +
          (holder
            ? ` Held by: ${holder.ownerId} since ${holder.acquiredAt} (context: ${holder.context}).`
            : ''),
        isInstanceId(id) ? await this.store.load(id) : null,
        { key: id },
      );
    }
    let released = false;
    const instance: LockedInstance = {
      id,
      restore: (definition) => this.restore(definition, id),
      send: async (definition, event) => {
        if (released)
          throw new Error(`The lock of machine '${id}' was released: send through the runtime.`);
        return this.#sendLocked(definition, id, event);
      },
    };
    try {
      return await fn(instance);
    } finally {
      released = true;
      await lock.release().catch(() => false);
    }
  }

  /** History of an instance in sequence order; `MachineNotFoundException` for unknown or foreign ids. */
  async history(
    definition: MachineDefinition,
    id: string,
    query?: HistoryQuery,
  ): Promise<HistoryRecord[]> {
    await this.restore(definition, id);
    return this.store.history(id, query);
  }

  /**
   * Instances of `definition` whose active states include `stateId` (full id `order.submitted`,
   * or relative to the machine, `submitted`), oldest entry first.
   */
  findInstancesInState(
    definition: MachineDefinition,
    stateId: string,
    options: FindInStateOptions,
  ): Promise<InstanceInState[]> {
    const fullId = stateId.startsWith(`${definition.id}.`)
      ? stateId
      : `${definition.id}.${stateId}`;
    return this.store.findInstancesInState(definition.id, fullId, options);
  }

  /** Deletes locks whose holders are presumed dead (housekeeping; expired rows never block). */
  sweepExpiredLocks(): Promise<number> {
    return this.store.sweepExpiredLocks();
  }

  /** Closes the store. */
  async close(): Promise<void> {
    await this.#delegation.close();
    await this.store.close();
  }
}

// The persisted outcome as callers see it; a failed validation guard surfaces only after its
// history was committed.
function finish(result: MacrostepResult): InstanceResult {
  if (result.validationFailure)
    throw toValidationException(result.validationFailure, result.snapshot.machineId);
  return { snapshot: result.snapshot, history: result.history, effects: result.effects };
}

function notFound(definition: MachineDefinition, id: string): MachineNotFoundException {
  return new MachineNotFoundException(`Machine '${id}' of '${definition.id}' was not found.`, {
    machine: definition.id,
    key: id,
  });
}

function alreadyRunning(
  definition: MachineDefinition,
  id: string,
  snapshot: MachineSnapshot,
): MachineAlreadyRunningException {
  return new MachineAlreadyRunningException(
    `Event processing failed: Machine \`${id}\` is already running.`,
    snapshot,
    { machine: definition.id, key: id },
  );
}
