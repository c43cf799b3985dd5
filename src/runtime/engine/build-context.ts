/**
 * Builds a runtime's `EngineContext` once, from `MachineRuntimeOptions`: the one lock manager,
 * the commit listeners and feed, the job dispatch with its handlers, the registry of machines
 * and the options of every step. The parts only ever see the context.
 */
import { initialize } from '../interpreter/initialize.js';
import { transition } from '../interpreter/transition.js';
import type { MacrostepOptions } from '../interpreter/types.js';
import { commitFeedFor, RELEASED } from '../persistence/commit-feed.js';
import { LockManager } from '../persistence/locks.js';
import { stderrLogger } from '../logger.js';
import { CommitListeners } from './commit-events.js';
import type { EngineContext, EngineSettings } from './context.js';
import { JobDispatch } from './jobs/job-dispatch.js';
import { jobNames, registerJobHandlers } from './jobs/job-handlers.js';
import { observeJobDepth } from '../telemetry/metrics.js';
import { RunningJobs } from './jobs/running-jobs.js';
import { TransitionSpeeds } from './lock-free-sends.js';
import { MachineRegistry } from './machine-registry.js';
import type { MachineRuntimeOptions } from './options.js';
import { loadParallelDispatchConfig, regionStepOption } from './parallel-dispatch-config.js';
import { send } from './send.js';
import { instrumentedInterpreter } from './instrumentation.js';

/** A built context, the job dispatch it enqueues through, and what closes them. */
export interface BuiltContext {
  context: EngineContext;
  dispatch: JobDispatch;
  /** Stops the in-process queue if one was made, then the commit feed, then the store (if its). */
  close(): Promise<void>;
}

/** The context of one runtime. Reads `MACHINE_PARALLEL_DISPATCH_*` of `process.env` unless given. */
export function buildContext(options: MachineRuntimeOptions): BuiltContext {
  const { store } = options;
  const logger = options.logger ?? stderrLogger;
  const onError =
    options.onDeferredError ??
    ((error: unknown, context: string) =>
      logger.error({ err: error }, `machine-routes: ${context} failed`));
  const parallelDispatch = Object.freeze(loadParallelDispatchConfig(options.parallelDispatch));
  const settings: EngineSettings = {
    lockTtlMs: (options.lockTtl ?? 60) * 1000,
    lockTimeoutMs: (options.lockTimeout ?? 30) * 1000,
    scenariosEnabled: options.scenarios === true,
    timerTries: options.timerTries ?? 3,
    timerBackoffMs: (options.timerBackoff ?? 1) * 1000,
    parallelDispatch,
    sendRetry: {
      tries: options.sendRetry?.tries ?? 25,
      exceptions: options.sendRetry?.exceptions ?? 3,
      delayMs: options.sendRetry?.delayMs ?? 1000,
    },
    jobAbortPollMs: options.jobAbortPollMs ?? 1000,
    traceSteps: options.traceSteps === true,
  };
  const now = options.now ?? (() => new Date());
  const registry = new MachineRegistry(options.machines);
  const macrostepOptions = {
    now,
    machines: registry.resolve,
    parallelDispatch: regionStepOption(parallelDispatch),
    ...(options.maxTransitionDepth === undefined
      ? {}
      : { maxTransitionDepth: options.maxTransitionDepth }),
    ...(options.traceBehaviors === true ? { traceBehaviors: true } : {}),
  };
  // Without a clock of the caller's, stateless steps read Date.now() (no Date object per step);
  // they resolve no child machines: only the depth limit and behavior tracing carry over.
  const statelessStep: MacrostepOptions = {
    ...(options.now === undefined ? {} : { now: options.now }),
    ...(options.maxTransitionDepth === undefined
      ? {}
      : { maxTransitionDepth: options.maxTransitionDepth }),
    ...(options.traceBehaviors === true ? { traceBehaviors: true } : {}),
  };
  const listeners = new CommitListeners(onError);
  // Every committed step goes out on the feed too (commit-step.ts finishCommit): streams and
  // waiting reads of this process (and, on PostgreSQL, of every process) follow instances with it.
  const feed = options.commitFeed ?? commitFeedFor(store, (error) => onError(error, 'commit feed'));
  const locks = new LockManager(store, settings.lockTtlMs, {
    // Waiting sends hear of other processes' commits and releases through the commit feed
    // (NOTIFY on PostgreSQL; in-process elsewhere, where only their backoff wakes them).
    releases: (id, listener) => feed.subscribe(id, () => listener()),
    onRelease: (id) => feed.publish([{ machineId: '', id, sequence: RELEASED }]),
  });
  const dispatch = new JobDispatch({
    store,
    queue: options.jobs,
    register: (queue) => registerJobHandlers(queue, context),
    now,
    onError,
  });
  const context: EngineContext = {
    store,
    now,
    interpreter: instrumentedInterpreter(options.engine ?? { initialize, transition }, {
      stepSpans: settings.traceSteps,
    }),
    registry,
    macrostepOptions,
    statelessSteps: {
      kept: statelessStep,
      light: { ...statelessStep, history: false },
      lightEvent: { ...statelessStep, history: false, adoptContext: true },
    },
    locks,
    settings,
    speeds: new TransitionSpeeds(),
    listeners,
    feed,
    jobs: dispatch,
    runningJobs: new RunningJobs(store, onError),
    logger,
    onError,
    send: (definition, id, event) => send(context, definition, id, event),
  };
  const names = jobNames(context);
  const stopDepth = observeJobDepth(() => dispatch.depth(names));
  const close = async () => {
    stopDepth();
    await dispatch.close();
    // Steps a shutdown cut (requests in flight at its bound, abandoned jobs) still hold lock
    // rows: delete them rather than leave them to the next writer's dead-holder check or TTL.
    await locks.releaseAll().catch((error: unknown) => onError(error, 'releasing locks at close'));
    // Before the store: the feed's LISTEN connection and last NOTIFYs use the store's pool,
    // whose end() waits for every checked-out client and fails every later query.
    await feed.close();
    if (options.closeStore !== false) await store.close();
  };
  return { context, dispatch, close };
}
