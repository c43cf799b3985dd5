/**
 * The instance lifecycle: the effectful shell around the pure interpreter. Each call loads the
 * last committed snapshot (one primary-key read, never a replay), computes a macrostep in
 * memory and commits it through `commitStep` (engine/commit-step.ts), the one commit protocol
 * of every writer.
 *
 * `send` order, the same on every store (docs/persistence.md "Locks"): lock + load in one
 * short write transaction (no waiting; a lock this process holds is refused without touching
 * the database) -> transition outside any transaction -> commit + lock release in a second
 * short transaction, fenced on the sequence number read with the lock (or release alone when
 * nothing is written). A refusal answers the snapshot read in the lock's transaction: the last
 * committed state. No process waits on another's transition, only on its short writes.
 *
 * Lock-free sends (stores with `lockFreeSends`: SQLite, PostgreSQL; engine/lock-free-sends.ts): a quick
 * transition takes this process's in-process slot only, reads the instance and its lock row in
 * one statement (a live lock refuses as above), and commits with `lockFree`, which checks the
 * lock row again in the commit's transaction: one write transaction per event.
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { EventObject, ForwardDefinition } from '../definition/types.js';
import {
  MachineAlreadyRunningException,
  MachineNotFoundException,
  StateNotInDefinitionException,
  type MachineValidationException,
} from '../errors.js';
import type { IdempotencyKeyStore } from '../persistence/idempotency.js';
import { isInstanceId } from '../ids.js';
import type { ChildRow } from '../interpreter/child-rows.js';
import { resolveForward } from '../interpreter/forwarding.js';
import { initialize, startAndTransition } from '../interpreter/initialize.js';
import {
  keptAfter,
  planScenarioStep,
  type ScenarioRequest,
  type ScenarioStep,
} from '../interpreter/scenarios.js';
import { transition } from '../interpreter/transition.js';
import {
  isSnapshot,
  type AvailableEvent,
  type HistoryRecord,
  type MachineSnapshot,
  type MacrostepOptions,
  type MacrostepResult,
  type StoredScenario,
} from '../interpreter/types.js';
import { toValidationException } from '../interpreter/validation-failure.js';
import { RecordAlreadyBoundError, type TransactionHook } from '../persistence/transaction.js';
import type { JobQueue } from '../jobs/job-queue.js';
import type { OpenJobQueueOptions } from '../jobs/open-job-queue.js';
import type { DurableJobQueue } from '../jobs/types.js';
import {
  commitFeedFor,
  RELEASED,
  type CommitFeed,
  type NoticeListener,
} from '../persistence/commit-feed.js';
import { LockManager, type LockHandle } from '../persistence/locks.js';
import {
  keptScenario as keptScenarioOf,
  planKeptScenarioStep,
  scenarioWrite,
} from '../persistence/kept-scenarios.js';
import type { Clock } from '../clock.js';
import type { TimerRegistration } from '../definition/timer-registration.js';
import { TimerWorker } from './timer-worker.js';
import { LockSweeper } from './lock-sweeper.js';
import { TransitionSpeeds } from './lock-free-sends.js';
import {
  InstanceLockedError,
  SequenceConflictError,
  StoreBusyError,
  type FindInStateOptions,
  type HistoryQuery,
  type InstanceInState,
  type Store,
  type TimerFireClaim,
} from '../persistence/store.js';
import type {
  AvailableEventsReadOptions,
  CreateOptions,
  InstanceRead,
  IdempotentSend,
  InstanceResult,
  MachineInstances,
  SendOptions,
} from '../persistence/types.js';
import { availableEventsWithChildren, forwardedChild } from './child-reads.js';
import { CommitListeners, type CommitListener } from './commit-events.js';
import { commitStep, finishCommit, writeCommit, type CommitPort } from './commit-step.js';
import type { MachineRuntimeConfig } from './config.js';
import type { EngineServices, SendRetry } from './engine-services.js';
import { sendForwarded } from './forwarded-send.js';
import { applyToParent } from './child-jobs.js';
import { JobActorRunner } from './job-actors.js';
import { JobDispatch } from './job-dispatch.js';
import { RegionJobs } from './region-jobs.js';
import { toJobRequest } from './job-handlers.js';
import { MachineRegistry } from './machine-registry.js';
import {
  loadParallelDispatchConfig,
  type ParallelDispatchSettings,
} from './parallel-dispatch-config.js';
import { openRuntimeParts } from './open-runtime.js';
import { deliverSends } from './send-jobs.js';
import { stderrLogger, type Logger } from '../logger.js';

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
  sendRetry?: Partial<SendRetry>;
  /** Failures of deferred work nobody awaits (a send given up, ...). Default: `logger`. */
  onDeferredError?: (error: unknown, context: string) => void;
  /**
   * The application's logger (pino-style: Fastify's `app.log`), for what nobody awaits: failed
   * deferred work, jobs and timer sweeps. Default: JSON lines on stderr (`stderrLogger`).
   */
  logger?: Logger;
  /**
   * How often a running job actor checks that its state was not left in another process, in ms
   * (default 1000). Left in this process, its signal fires at once.
   */
  jobAbortPollMs?: number;
  /**
   * Depth limit of machines without their own `max_transition_depth` (default 100): how many
   * internal steps (`@always`, raised and `@done` events) one event may trigger.
   */
  maxTransitionDepth?: number;
  /** Seconds a lock lives before it may be taken over (default 60). */
  lockTtl?: number;
  /** Seconds `withLock` waits for a busy lock by default (default 30). */
  lockTimeout?: number;
  /** Clock for history times and state entry times (tests). */
  now?: () => Date;
  engine?: MachineEngine;
  /**
   * Parallel dispatch (docs/parallel-dispatch.md): settings given in code win over the
   * `MACHINE_PARALLEL_DISPATCH_*` variables of `process.env`, read when the runtime is made (a
   * malformed value throws `InvalidSettingsException` here, at startup).
   */
  parallelDispatch?: Partial<ParallelDispatchSettings>;
  /**
   * Scenarios (`MACHINE_SCENARIOS_ENABLED`, default false): `send` plays the requested or kept
   * scenario and keeps continuations in `machine_current_states` (docs/scenarios.md).
   */
  scenarios?: boolean;
  /**
   * Where commits are announced for live state (server-sent events, `waitFor` reads). Default:
   * NOTIFY/LISTEN on PostgreSQL, in-process on the other stores.
   */
  commitFeed?: CommitFeed;
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
  /**
   * `send` without taking the lock again (it is held); same persistence and errors otherwise.
   * `options.timerFire`: the timer fire this event delivers, claimed in the same transaction.
   */
  send(
    definition: MachineDefinition,
    event: EventObject,
    options?: { timerFire?: TimerFireClaim },
  ): Promise<InstanceResult>;
}

/** Options of `MachineRuntime.open`. */
export interface OpenRuntimeOptions extends Partial<MachineRuntimeConfig> {
  /** Run pending migrations on open (default: SQLite yes, PostgreSQL no; see `openStore`). */
  migrate?: boolean;
  /** Environment to read settings from (default `process.env`). */
  env?: Record<string, string | undefined>;
  /**
   * See `MachineRuntimeOptions.jobs`. Default: the durable queue of the store
   * (`openJobQueue(store)`: the embedded `machine_jobs` table on SQLite, pg-boss on
   * PostgreSQL), whose jobs commit with the steps causing them; the runtime owns it and closes
   * it with `close()`.
   */
  jobs?: JobQueue;
  /**
   * Run the default queue's jobs in this process (default true). Set false when separate
   * `machine-routes worker` processes run them: this process then only enqueues.
   */
  worker?: boolean;
  /** Settings of the default queue (concurrency, attempts, ...; see `loadJobQueueConfig`). */
  jobQueue?: OpenJobQueueOptions;
  /** See `MachineRuntimeOptions.machines`. */
  machines?: readonly MachineDefinition[];
  /** See `MachineRuntimeOptions.jobAbortPollMs`. */
  jobAbortPollMs?: number;
  /**
   * Machines whose timed transitions fire (spec 9.3.0: registered explicitly; the config's
   * `timers`). With `worker` (the default), this process sweeps them every `timerIntervalMs`.
   */
  timers?: readonly TimerRegistration[];
  /** Pause between two timer sweeps in ms (default 500). */
  timerIntervalMs?: number;
  /**
   * With `worker` (the default), this process deletes expired lock rows and Idempotency-Key
   * records past their `ttl` (`engine/lock-sweeper.ts`) every this many ms (default 60 000), or
   * never with `false` (another process sweeps, e.g. `machine-routes worker`).
   */
  lockSweepIntervalMs?: number | false;
  /** Time source of history, state entry times and timers (default: the system clock). */
  clock?: Clock;
  /** Parallel dispatch settings given in code (they win over `env`'s `MACHINE_PARALLEL_DISPATCH_*`). */
  parallelDispatch?: Partial<ParallelDispatchSettings>;
  /** See `MachineRuntimeOptions.logger`: also receives failed job attempts and timer sweeps. */
  logger?: Logger;
}

/** What `#sendLocked` is given by the caller holding the instance. */
interface LockedSend {
  /**
   * The lock row taken for this send, released by the commit itself (one write transaction less
   * per event); without it (inside `withLock`) the lock stays held for the rest of the callback.
   */
  lock?: LockHandle;
  scenarioRequest?: ScenarioRequest;
  timerFire?: TimerFireClaim;
  /** The snapshot read when the lock was taken (else read now). */
  loaded?: MachineSnapshot;
  idempotency?: IdempotentSend;
  /**
   * A lock-free send's in-process slot, given back once the commit is written (the follow-up
   * may send to this instance again); its commit checks the lock row (`CommitRequest.lockFree`).
   */
  lockFree?: () => void;
}

/** Runs machines against a `Store`: one writer per instance at a time, one transaction per event. */
export class MachineRuntime implements MachineInstances<MachineDefinition> {
  readonly store: Store;
  /** Whether scenarios play (the `scenarios` option, `MACHINE_SCENARIOS_ENABLED` through `open`). */
  readonly scenariosEnabled: boolean;
  /** Parallel dispatch settings in force (docs/parallel-dispatch.md). */
  readonly parallelDispatch: Readonly<ParallelDispatchSettings>;
  readonly #locks: LockManager;
  /** Event types whose last transition was quick (lock-free sends; engine/lock-free-sends.ts). */
  readonly #speeds = new TransitionSpeeds();
  readonly #lockTimeoutMs: number;
  readonly #now: () => Date;
  readonly #engine: MachineEngine;
  readonly #registry: MachineRegistry;
  readonly #macrostepOptions: Pick<
    MacrostepOptions,
    'now' | 'machines' | 'maxTransitionDepth' | 'parallelDispatch'
  >;
  /**
   * The options of stateless steps, with and without history records (`lightEvent`: the event's
   * step without history, which adopts the initial context): made once, not per send.
   */
  readonly #statelessSteps: {
    kept: MacrostepOptions;
    light: MacrostepOptions;
    lightEvent: MacrostepOptions;
  };
  readonly #listeners: CommitListeners;
  readonly #feed: CommitFeed;
  #closing: Promise<void> | null = null;
  readonly #dispatch: JobDispatch;
  readonly #port: CommitPort;
  readonly #services: EngineServices;
  readonly #jobsRegistered: Promise<void>;
  /** The queue `open` made for this runtime (stopped and closed by `close`). */
  #ownedJobs: DurableJobQueue | null = null;
  /** The timer sweep `open` started (stopped by `close`). */
  #timers: TimerWorker | null = null;
  /** The expired-row sweep `open` started (stopped by `close`). */
  #sweeper: LockSweeper | null = null;

  /** The background timer sweep of this runtime, when `open` started one. */
  get timerWorker(): TimerWorker | null {
    return this.#timers;
  }

  constructor(options: MachineRuntimeOptions) {
    const store = options.store;
    this.store = store;
    this.scenariosEnabled = options.scenarios === true;
    this.parallelDispatch = Object.freeze(loadParallelDispatchConfig(options.parallelDispatch));
    this.#locks = new LockManager(store, (options.lockTtl ?? 60) * 1000, {
      // Waiting sends hear of other processes' commits and releases through the commit feed
      // (NOTIFY on PostgreSQL; in-process elsewhere, where only their backoff wakes them).
      releases: (id, listener) => this.#feed.subscribe(id, () => listener()),
      onRelease: (id) => this.#feed.publish([{ machineId: '', id, sequence: RELEASED }]),
    });
    this.#lockTimeoutMs = (options.lockTimeout ?? 30) * 1000;
    this.#now = options.now ?? (() => new Date());
    this.#engine = options.engine ?? { initialize, transition };
    this.#registry = new MachineRegistry(options.machines);
    const regionJobs = new RegionJobs(
      {
        store,
        now: this.#now,
        definition: this.#registry.resolve,
        macrostepOptions: () => this.#macrostepOptions,
        write: (input, commitOptions) => writeCommit(this.#port, input, commitOptions),
        finish: (prepared) => finishCommit(this.#port, prepared),
      },
      this.parallelDispatch,
    );
    this.#macrostepOptions = {
      now: this.#now,
      machines: this.#registry.resolve,
      parallelDispatch: regionJobs.stepOption(),
      ...(options.maxTransitionDepth === undefined
        ? {}
        : { maxTransitionDepth: options.maxTransitionDepth }),
    };
    // Without a clock of the caller's, the steps read Date.now() (no Date object per step).
    const statelessStep: MacrostepOptions = {
      ...(options.now === undefined ? {} : { now: options.now }),
      ...pickDepth(this.#macrostepOptions),
    };
    this.#statelessSteps = {
      kept: statelessStep,
      light: { ...statelessStep, history: false },
      lightEvent: { ...statelessStep, history: false, adoptContext: true },
    };
    const onError =
      options.onDeferredError ??
      ((error: unknown, context: string) =>
        (options.logger ?? stderrLogger).error(
          { err: error },
          `machine-routes: ${context} failed`,
        ));
    this.#listeners = new CommitListeners(onError);
    // Every committed step goes out on the feed too: streams and waiting reads of this process
    // (and, on PostgreSQL, of every process) follow instances with it.
    this.#feed =
      options.commitFeed ?? commitFeedFor(store, (error) => onError(error, 'commit feed'));
    this.#listeners.subscribe((event) =>
      this.#feed.publish([
        { machineId: event.machineId, id: event.instanceId, sequence: event.sequence },
      ]),
    );
    const sendRetry: SendRetry = {
      tries: options.sendRetry?.tries ?? 25,
      exceptions: options.sendRetry?.exceptions ?? 3,
      delayMs: options.sendRetry?.delayMs ?? 1000,
    };
    const services: EngineServices = {
      store,
      scenariosEnabled: this.scenariosEnabled,
      machines: this.#registry,
      sendRetry,
      now: this.#now,
      macrostepOptions: () => this.#macrostepOptions,
      commit: (input, commitOptions) => commitStep(this.#port, input, commitOptions),
      write: (input, commitOptions) => writeCommit(this.#port, input, commitOptions),
      finish: (prepared) => finishCommit(this.#port, prepared),
      enqueue: (jobs) => this.#dispatch.enqueue(jobs.map((job) => toJobRequest(job, regionJobs))),
      send: (definition, id, event) => this.send(definition, id, event),
      withLock: (id, fn, lockOptions) => this.withLock(id, () => fn(), lockOptions),
      onError,
      regionJobs,
      jobActors: new JobActorRunner(
        {
          store,
          now: this.#now,
          definition: this.#registry.resolve,
          macrostepOptions: () => this.#macrostepOptions,
          applyToParent: (step) => applyToParent(this.#services, step),
          enqueue: (job) => this.#services.enqueue([job]),
          retryDelayMs: sendRetry.delayMs,
          onError,
        },
        { abortPollMs: options.jobAbortPollMs },
      ),
    };
    this.#services = services;
    this.#dispatch = new JobDispatch(services, store, options.jobs);
    this.#port = {
      store,
      outbox: this.#dispatch.outbox,
      listeners: this.#listeners,
      toJobRequest: (job) => toJobRequest(job, regionJobs),
      enqueue: (jobs) => this.#dispatch.enqueue(jobs),
      deliver: (sends) => deliverSends(services, sends),
      abortJob: (slot) => services.jobActors.abort(slot),
    };
    this.#jobsRegistered = this.#dispatch
      .register()
      .catch((error: unknown) => onError(error, 'registering jobs'));
  }

  /** The store's Idempotency-Key records (routes with `idempotency`). */
  get idempotencyKeys(): IdempotencyKeyStore {
    return this.store.idempotencyKeys;
  }

  /** Resolves once the job handlers are registered on the queue (before starting a worker). */
  ready(): Promise<void> {
    return this.#jobsRegistered;
  }

  /**
   * A runtime on the store of the configuration (`loadRuntimeConfig(options, env)`), with the
   * store's durable job queue unless `jobs` is given. `maxTransitionDepth` applies to this
   * runtime's machines that set none.
   */
  static async open(options: OpenRuntimeOptions = {}): Promise<MachineRuntime> {
    const {
      migrate,
      env,
      jobs,
      worker = true,
      jobQueue,
      machines,
      jobAbortPollMs,
      timers = [],
      timerIntervalMs,
      lockSweepIntervalMs,
      clock,
      parallelDispatch,
      logger,
      ...overrides
    } = options;
    // Read before anything is opened: a malformed setting fails the start.
    const dispatch = loadParallelDispatchConfig(parallelDispatch, env);
    const parts = await openRuntimeParts({ overrides, migrate, env, jobs, jobQueue, logger });
    try {
      const runtime = new MachineRuntime({
        store: parts.store,
        lockTtl: parts.config.lockTtl,
        lockTimeout: parts.config.lockTimeout,
        maxTransitionDepth: parts.config.maxTransitionDepth,
        scenarios: parts.config.scenariosEnabled,
        parallelDispatch: dispatch,
        jobs: parts.jobs,
        ...(jobAbortPollMs === undefined ? {} : { jobAbortPollMs }),
        machines: [...(machines ?? []), ...timers.map((registration) => registration.machine)],
        ...(clock === undefined ? {} : { now: () => clock.now() }),
        ...(logger === undefined ? {} : { logger }),
      });
      runtime.#ownedJobs = parts.ownedJobs;
      if (parts.ownedJobs !== null && worker) {
        await runtime.ready();
        await parts.ownedJobs.start();
      }
      if (worker && timers.length > 0) {
        runtime.#timers = new TimerWorker({
          host: runtime,
          registrations: timers,
          ...(clock === undefined ? {} : { clock }),
          ...(timerIntervalMs === undefined ? {} : { intervalMs: timerIntervalMs }),
          ...(logger === undefined
            ? {}
            : {
                onError: (error: unknown, where: string) =>
                  logger.error({ err: error }, `machine-routes: ${where} failed`),
              }),
        });
        runtime.#timers.start();
      }
      if (worker && lockSweepIntervalMs !== false) {
        // Servers running their own jobs are often the only process of a store (SQLite): without
        // this, expired Idempotency-Key records would never be deleted.
        runtime.#sweeper = new LockSweeper({
          store: parts.store,
          ...(lockSweepIntervalMs === undefined ? {} : { intervalMs: lockSweepIntervalMs }),
          ...(logger === undefined
            ? {}
            : {
                onError: (error: unknown) =>
                  logger.error({ err: error }, 'machine-routes: expired-row sweep failed'),
              }),
        });
        runtime.#sweeper.start();
      }
      return runtime;
    } catch (error) {
      await parts.ownedJobs?.close({ timeoutMs: 0 }).catch(() => {});
      await parts.store.close().catch(() => {});
      throw error;
    }
  }

  /**
   * Calls `listener` after every committed step, once per instance the step wrote, with its
   * sequence number and snapshot (reads, streams). Returns the function that unsubscribes.
   */
  onCommit(listener: CommitListener): () => void {
    return this.#listeners.subscribe(listener);
  }

  async create(
    definition: MachineDefinition,
    options: CreateOptions = {},
  ): Promise<InstanceResult> {
    this.#registry.register(definition);
    const result = this.#engine.initialize(definition, {
      ...this.#macrostepOptions,
      ...(options.input === undefined ? {} : { context: options.input }),
      ...(options.actor === undefined ? {} : { actor: options.actor }),
    });
    // Persisted even when `should_persist` is false: the create endpoint persists explicitly.
    await commitStep(this.#port, { main: { result, from: null }, at: this.#now() });
    return finish(result);
  }

  /**
   * A model record's first event (see `MachineInstances.createAndSend`): initial step and event
   * computed in memory, then committed as one step with `options.bind(id)` in its transaction.
   * A refused event writes nothing: no machine is created for a request answered 409 or 422.
   * An event forwarded to a child (which the fresh instance would have to start first) takes
   * the two-step path: the instance is created and bound, then sent the event.
   */
  async createAndSend(
    definition: MachineDefinition,
    event: EventObject,
    options: SendOptions & { bind?: (id: string) => TransactionHook } = {},
  ): Promise<InstanceResult | null> {
    this.#registry.register(definition);
    const initial = this.#engine.initialize(definition, this.#macrostepOptions);
    const bind = options.bind?.(initial.snapshot.id);
    if (
      definition.forwards.length > 0 &&
      resolveForward(definition, initial.snapshot, event.type) !== null
    ) {
      try {
        await commitStep(
          this.#port,
          { main: { result: initial, from: null }, at: this.#now() },
          bind === undefined ? {} : { inTransaction: bind },
        );
      } catch (error) {
        if (error instanceof RecordAlreadyBoundError) return null;
        throw error;
      }
      return this.send(definition, initial.snapshot.id, event, options);
    }
    // A fresh instance keeps no scenario yet: the requested one plays, as on any first event.
    const scenario = this.scenariosEnabled
      ? planScenarioStep(
          definition,
          initial.snapshot,
          event.type,
          options.scenario ?? OMITTED,
          null,
        )
      : null;
    // Throws NoTransitionDefinitionFoundException: nothing written.
    const step = this.#engine.transition(definition, initial.snapshot, event, {
      ...this.#macrostepOptions,
      scenario: scenario?.active ?? null,
    });
    // A failed validation guard on a machine nobody has yet: refused, nothing kept.
    if (step.validationFailure) throw toValidationException(step.validationFailure, definition.id);
    const result: MacrostepResult = {
      ...step,
      history: [...initial.history, ...step.history],
      effects: [...initial.effects, ...step.effects],
    };
    // `should_persist: false`: the instance is persisted as created (as `create` does), the
    // event is computed from it and not written back (as `send` does).
    const persist = definition.options.shouldPersist;
    try {
      await commitStep(
        this.#port,
        {
          main: {
            result: persist ? result : initial,
            from: null,
            ...(scenario === null || !persist ? {} : scenarioWrite(null, scenario)),
          },
          at: this.#now(),
        },
        bind === undefined ? {} : { inTransaction: bind },
      );
    } catch (error) {
      if (error instanceof RecordAlreadyBoundError) return null;
      throw error;
    }
    return finish(
      result,
      scenario === null ? undefined : persist ? keptAfter(null, scenario) : null,
    );
  }

  async restore(definition: MachineDefinition, id: string): Promise<MachineSnapshot> {
    const snapshot = isInstanceId(id) ? await this.store.load(id) : null;
    if (!snapshot || snapshot.machineId !== definition.id) throw notFound(definition, id);
    assertKnownStates(definition, snapshot);
    return snapshot;
  }

  async read(definition: MachineDefinition, id: string): Promise<InstanceRead> {
    // One statement, no write: the lock row is looked at, never taken or waited for.
    const loaded = isInstanceId(id) ? await this.store.loadForRead(id) : null;
    if (!loaded || loaded.snapshot.machineId !== definition.id) throw notFound(definition, id);
    assertKnownStates(definition, loaded.snapshot);
    const expires = loaded.lockExpiresAt;
    return { snapshot: loaded.snapshot, isProcessing: expires !== null && expires > Date.now() };
  }

  /** Listens to the commits of one instance, from any process on PostgreSQL (see {@link CommitFeed}). */
  watch(id: string, listener: NoticeListener): Promise<() => void> {
    return this.#feed.subscribe(id, listener);
  }

  async send(
    definition: MachineDefinition,
    id: string,
    event: EventObject,
    options: SendOptions = {},
  ): Promise<InstanceResult> {
    if (!isInstanceId(id)) throw notFound(definition, id);
    if (!definition.options.shouldPersist) {
      // Never persisted on send: computed from the stored state, not written back.
      const snapshot = await this.restore(definition, id);
      const step = this.#unkeptScenarioStep(definition, snapshot, event.type, options);
      return finish(
        this.#engine.transition(definition, snapshot, event, {
          ...this.#macrostepOptions,
          // Nothing is committed, so no region job could be written: regions run inline.
          parallelDispatch: null,
          scenario: step?.active ?? null,
        }),
        step === null ? undefined : null,
      );
    }
    const waitMs = options.lockWaitMs ?? 0;
    if (waitMs === 0 && this.#lockFree(definition, event.type, options))
      return this.#sendLockFree(definition, id, event, options);
    return this.#sendLocking(definition, id, event, options);
  }

  // The locking path of `send`: lock row + load, transition, commit + release.
  async #sendLocking(
    definition: MachineDefinition,
    id: string,
    event: EventObject,
    options: SendOptions,
  ): Promise<InstanceResult> {
    const waitMs = options.lockWaitMs ?? 0;
    const deadline = Date.now() + waitMs;
    let acquired;
    try {
      acquired =
        waitMs > 0
          ? await this.#locks.acquireAndLoad(id, { waitMs, context: 'send' })
          : await this.#locks.tryAcquireAndLoad(id, 'send');
    } catch (error) {
      // Another connection kept the database locked past the busy timeout: contention.
      if (!(error instanceof StoreBusyError)) throw error;
      throw alreadyRunning(definition, id, await this.#committedAfterBusy(definition, id));
    }
    const { lock, loaded } = acquired;
    if (loaded !== null && (!loaded.snapshot || loaded.snapshot.machineId !== definition.id)) {
      // Unknown id, or another machine's instance: the lock (if taken) goes back at once.
      await lock?.release().catch(() => false);
      throw notFound(definition, id);
    }
    if (loaded?.snapshot) {
      try {
        assertKnownStates(definition, loaded.snapshot);
      } catch (error) {
        await lock?.release().catch(() => false);
        throw error;
      }
    }
    if (lock === null) {
      // Held by someone else (refused by the lock row, with the snapshot read in the same
      // transaction) or by this process (refused without a database round trip).
      throw alreadyRunning(
        definition,
        id,
        loaded?.snapshot ?? (await this.restore(definition, id)),
      );
    }
    try {
      let snapshot = loaded!.snapshot!;
      for (let attempt = 1; ; attempt += 1) {
        try {
          return await this.#sendLocked(definition, id, event, {
            lock,
            scenarioRequest: options.scenario,
            loaded: snapshot,
            idempotency: options.idempotency,
          });
        } catch (error) {
          // A waiting send fenced out before its commit (its snapshot was read while another
          // process's commit was landing) or refused by a busy database still holds the lock:
          // it runs again on the state committed meanwhile, which the refusal carries.
          const fresh = error instanceof MachineAlreadyRunningException ? error.snapshot : null;
          if (
            waitMs === 0 ||
            lock.released ||
            !isSnapshot(fresh) ||
            attempt >= STALE_RETRIES ||
            Date.now() >= deadline
          )
            throw error;
          snapshot = fresh;
        }
      }
    } finally {
      // A failed release must not hide the outcome: the row expires after the lock TTL.
      await lock.release().catch(() => false);
    }
  }

  /**
   * Whether this send may skip the lock row: the store supports it, the transition of this
   * event type was quick last time, and nothing between load and commit needs more than the
   * store's commit (no scenario lookup, no Idempotency-Key response, no forwarded endpoint, no
   * waiting for a held lock).
   */
  #lockFree(definition: MachineDefinition, eventType: string, options: SendOptions): boolean {
    return (
      this.store.lockFreeSends === true &&
      !this.scenariosEnabled &&
      options.idempotency === undefined &&
      definition.forwards.length === 0 &&
      this.#speeds.isQuick(definition, eventType)
    );
  }

  // A send without a lock row: the in-process slot keeps this process's other requests out, the
  // commit's `lockFree` check and sequence fence keep other processes' writers out.
  async #sendLockFree(
    definition: MachineDefinition,
    id: string,
    event: EventObject,
    options: SendOptions,
  ): Promise<InstanceResult> {
    const release = this.#locks.claimSlot(id);
    // Held by this process: refused without a write, as on the locking path.
    if (release === null) throw alreadyRunning(definition, id, await this.restore(definition, id));
    try {
      let loaded;
      try {
        loaded = await this.store.loadForRead(id);
      } catch (error) {
        if (!(error instanceof StoreBusyError)) throw error;
        throw alreadyRunning(definition, id, await this.#committedAfterBusy(definition, id));
      }
      if (!loaded || loaded.snapshot.machineId !== definition.id) throw notFound(definition, id);
      assertKnownStates(definition, loaded.snapshot);
      // A live lock row (another process, a job's withLock elsewhere): refused with the state
      // read in the same statement, the last committed one.
      if (loaded.lockExpiresAt !== null) {
        if (loaded.lockExpiresAt >= Date.now())
          throw alreadyRunning(definition, id, loaded.snapshot);
        // An expired row (a crashed holder's): the locking path takes it over and deletes it.
        release();
        return await this.#sendLocking(definition, id, event, options);
      }
      return await this.#sendLocked(definition, id, event, {
        loaded: loaded.snapshot,
        lockFree: release,
      });
    } finally {
      release();
    }
  }

  // The last committed snapshot after a busy database; `null` when the read fails as well
  // (MachineNotFoundException still propagates: an unknown id stays a 404).
  async #committedAfterBusy(
    definition: MachineDefinition,
    id: string,
  ): Promise<MachineSnapshot | null> {
    try {
      return await this.restore(definition, id);
    } catch (error) {
      if (error instanceof MachineNotFoundException) throw error;
      return null;
    }
  }

  // The send of an instance this caller holds (its lock, its in-process slot, or `withLock`).
  async #sendLocked(
    definition: MachineDefinition,
    id: string,
    event: EventObject,
    held: LockedSend = {},
  ): Promise<InstanceResult> {
    const { lock, scenarioRequest = OMITTED, timerFire, loaded, idempotency, lockFree } = held;
    const snapshot = loaded ?? (await this.restore(definition, id));
    this.#registry.register(definition);
    // A parent-facing event of a running child (forwarded endpoint): recorded on the parent,
    // sent to the child, one transaction.
    const forward =
      definition.forwards.length > 0 ? resolveForward(definition, snapshot, event.type) : null;
    if (forward !== null) {
      const step = await sendForwarded(this.#services, {
        definition,
        parent: snapshot,
        event,
        target: forward,
        releaseLockOwner: lock?.ownerId,
      });
      lock?.releasedByCommit();
      return { ...finish(step.parent), forwardedChild: step.child.snapshot };
    }
    // Scenario 404 / 422, then NoTransitionDefinitionFoundException: before anything is written.
    const scenario = this.scenariosEnabled
      ? await planKeptScenarioStep(this.store, definition, snapshot, event.type, scenarioRequest)
      : null;
    const started = performance.now();
    const result = this.#engine.transition(definition, snapshot, event, {
      ...this.#macrostepOptions,
      scenario: scenario?.step.active ?? null,
    });
    // Whether the next event of this type may skip the lock row (a slow one announces itself).
    this.#speeds.record(definition, event.type, performance.now() - started);
    const keptNow = scenario === null ? undefined : keptAfter(scenario.kept, scenario.step);
    // The response a retry with the same Idempotency-Key replays, committed with the event.
    const answered =
      idempotency === undefined
        ? undefined
        : {
            scope: idempotency.scope,
            key: idempotency.key,
            ownerId: idempotency.ownerId,
            response: await idempotency.respond(outcomeOf(result, keptNow)),
          };
    let written;
    try {
      written = await writeCommit(
        this.#port,
        {
          main: {
            result,
            from: snapshot,
            // A rejected event (validation guard) keeps the scenario state as it was.
            ...(scenario === null || result.validationFailure !== null
              ? {}
              : scenarioWrite(scenario.kept, scenario.step)),
          },
          at: this.#now(),
        },
        {
          ...(lock ? { releaseLockOwner: lock.ownerId } : {}),
          ...(lockFree ? { lockFree: true } : {}),
          ...(timerFire ? { timerFire } : {}),
          ...(answered ? { idempotency: answered } : {}),
        },
      );
      lock?.releasedByCommit();
      lockFree?.();
      if (idempotency !== undefined) idempotency.stored = true;
    } catch (error) {
      // Fenced out: our lock expired and another writer committed in between (or, lock-free,
      // another process took the lock or committed while this step was computed).
      if (error instanceof SequenceConflictError || error instanceof InstanceLockedError) {
        throw alreadyRunning(definition, id, await this.restore(definition, id));
      }
      // The database stayed locked by another connection past its busy timeout: contention.
      if (error instanceof StoreBusyError) {
        throw alreadyRunning(definition, id, await this.#committedAfterBusy(definition, id));
      }
      throw error;
    }
    await finishCommit(this.#port, written);
    return finish(result, keptNow);
  }

  /** The scenario step of an instance that keeps nothing (stateless, `should_persist: false`). */
  #unkeptScenarioStep(
    definition: MachineDefinition,
    snapshot: MachineSnapshot,
    eventType: string,
    options: SendOptions,
  ): ScenarioStep | null {
    if (!this.scenariosEnabled) return null;
    return planScenarioStep(definition, snapshot, eventType, options.scenario ?? OMITTED, null);
  }

  /**
   * Events the instance accepts now, including forwarded events its running children accept
   * (`{ type, source: 'forward' }`): reads the children's rows and snapshots.
   */
  availableEvents(
    definition: MachineDefinition,
    snapshot: MachineSnapshot,
    options?: AvailableEventsReadOptions,
  ): Promise<AvailableEvent[]> {
    return availableEventsWithChildren(this.store, definition, snapshot, options);
  }

  /** The child a forwarded endpoint reached (running, else the latest of its state), or `null`. */
  forwardedChild(
    _definition: MachineDefinition,
    parent: MachineSnapshot,
    forward: ForwardDefinition,
  ): Promise<MachineSnapshot | null> {
    return forwardedChild(this.store, parent, forward);
  }

  /** `machine_children` rows of a parent instance, oldest first. */
  children(parentId: string): Promise<ChildRow[]> {
    return this.store.findChildren({ parentRootEventId: parentId });
  }

  /** A fresh instance, the event applied, nothing persisted: {@link sendStatelessSync} as a promise. */
  async sendStateless(
    definition: MachineDefinition,
    event: EventObject,
    options: SendOptions = {},
  ): Promise<InstanceResult> {
    return this.sendStatelessSync(definition, event, options);
  }

  /**
   * `sendStateless` without the promise: a stateless step does no I/O. The HTTP layer's
   * stateless routes call it, so their requests take no promise round trip for the step.
   * Throws what `sendStateless` rejects with.
   */
  sendStatelessSync(
    definition: MachineDefinition,
    event: EventObject,
    options: SendOptions = {},
  ): InstanceResult {
    const light = options.keepHistory === false;
    const stepOptions = light ? this.#statelessSteps.light : this.#statelessSteps.kept;
    // The interpreter's own steps, without a scenario to plan from the initial snapshot: the
    // start and the event in one macrostep when the start runs no behavior.
    if (
      light &&
      !this.scenariosEnabled &&
      this.#engine.initialize === initialize &&
      this.#engine.transition === transition
    ) {
      const result = startAndTransition(definition, event, stepOptions);
      if (result !== null) return finish(result);
    }
    const initial = this.#engine.initialize(definition, stepOptions);
    const step = this.#unkeptScenarioStep(definition, initial.snapshot, event.type, options);
    // Without history the initial snapshot is this call's alone (no record carries its
    // context), so the event's step may change that context instead of copying it first.
    const eventOptions = light ? this.#statelessSteps.lightEvent : stepOptions;
    const result = this.#engine.transition(
      definition,
      initial.snapshot,
      event,
      step === null ? eventOptions : { ...eventOptions, scenario: step.active },
    );
    // The two steps as one result; the lists are joined only when both have entries.
    result.history = joined(initial.history, result.history);
    result.effects = joined(initial.effects, result.effects);
    return finish(result, step === null ? undefined : null);
  }

  /** The scenario kept on an instance (a continuation), `null` when none. */
  async keptScenario(id: string): Promise<StoredScenario | null> {
    return keptScenarioOf(await this.store.currentStates(id));
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
    if (lock) return this.#runLocked(id, lock, fn);
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

  /**
   * `withLock` without waiting: `null` when someone holds the lock (the timer sweep retries
   * such an instance at its next pass instead of blocking on it).
   */
  async tryWithLock<T>(
    id: string,
    fn: (instance: LockedInstance) => Promise<T>,
    options: { context?: string } = {},
  ): Promise<T | null> {
    const lock = await this.#locks.tryAcquire(id, options.context ?? 'job');
    return lock ? this.#runLocked(id, lock, fn) : null;
  }

  async #runLocked<T>(
    id: string,
    lock: LockHandle,
    fn: (instance: LockedInstance) => Promise<T>,
  ): Promise<T> {
    let released = false;
    const instance: LockedInstance = {
      id,
      restore: (definition) => this.restore(definition, id),
      send: async (definition, event, sendOptions = {}) => {
        if (released)
          throw new Error(`The lock of machine '${id}' was released: send through the runtime.`);
        return this.#sendLocked(definition, id, event, { timerFire: sendOptions.timerFire });
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

  /**
   * Closes the queue `open` made (waiting up to `jobTimeoutMs`, default 10 s, for running jobs;
   * abandoned ones run again elsewhere after their timeout), then the commit feed (its last
   * notices sent, its LISTEN connection given back), then the store. Calling it again returns
   * the first call's promise.
   */
  close(options: { jobTimeoutMs?: number } = {}): Promise<void> {
    // Idempotent: a second close (a test's afterEach, a server's and a worker's shutdown hooks)
    // waits for the first instead of ending the store's pool twice.
    this.#closing ??= this.#close(options);
    return this.#closing;
  }

  async #close(options: { jobTimeoutMs?: number }): Promise<void> {
    await this.#timers?.stop();
    await this.#sweeper?.stop();
    // Registration still running must not meet a closed queue (and report it).
    await this.#jobsRegistered;
    await this.#ownedJobs?.close({ timeoutMs: options.jobTimeoutMs ?? 10_000 });
    await this.#dispatch.close();
    // Before the store: the feed's LISTEN connection and last NOTIFYs use the store's pool,
    // whose end() waits for every checked-out client and fails every later query.
    await this.#feed.close();
    await this.store.close();
  }
}

const OMITTED: ScenarioRequest = Object.freeze({ kind: 'omitted' });

/** Runs of a waiting send on one lock: a second fence failure under the same lock is unusual. */
const STALE_RETRIES = 3;

// The persisted outcome as callers see it; a failed validation guard surfaces only after its
// history was committed. `scenario`: what the instance keeps, when scenarios are enabled.
function finish(result: MacrostepResult, scenario?: StoredScenario | null): InstanceResult {
  if (result.validationFailure)
    throw toValidationException(result.validationFailure, result.snapshot.machineId);
  const instance: InstanceResult = {
    snapshot: result.snapshot,
    history: result.history,
    effects: result.effects,
  };
  if (scenario !== undefined) instance.scenario = scenario;
  return instance;
}

// `finish` without throwing: the validation failure is an outcome an idempotent response stores.
function outcomeOf(
  result: MacrostepResult,
  scenario?: StoredScenario | null,
): InstanceResult | MachineValidationException {
  if (result.validationFailure)
    return toValidationException(result.validationFailure, result.snapshot.machineId);
  return finish(result, scenario);
}

function joined<T>(first: T[], second: T[]): T[] {
  if (first.length === 0) return second;
  return second.length === 0 ? first : [...first, ...second];
}

// Stateless steps resolve no child machines: only the depth limit carries over.
function pickDepth(
  options: Pick<MacrostepOptions, 'maxTransitionDepth'>,
): Pick<MacrostepOptions, 'maxTransitionDepth'> {
  return options.maxTransitionDepth === undefined
    ? {}
    : { maxTransitionDepth: options.maxTransitionDepth };
}

/**
 * A deploy removed or renamed a state the instance sits in: 409 naming the state, instead of
 * letting the interpreter fail on an unknown node (which used to surface as a 404 / 500).
 */
function assertKnownStates(definition: MachineDefinition, snapshot: MachineSnapshot): void {
  for (const stateId of snapshot.value) {
    if (definition.idMap.has(stateId)) continue;
    throw new StateNotInDefinitionException(
      `Machine '${snapshot.id}' of '${definition.id}' is in state '${stateId}', which the current definition no longer has (removed or renamed). ` +
        `Restore the state or migrate the instance; 'machine-routes check --database <url>' lists such instances before a deploy.`,
      { machine: definition.id, key: snapshot.id, path: stateId },
    );
  }
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
  snapshot: MachineSnapshot | null,
): MachineAlreadyRunningException {
  return new MachineAlreadyRunningException(
    `Event processing failed: Machine \`${id}\` is already running.`,
    snapshot,
    { machine: definition.id, key: id },
  );
}
