/**
 * The effectful side of delegation, driven by `MachineRuntime`: it turns the effects of a
 * macrostep into `machine_children` rows and child instances written in the same transaction
 * (`prepare`), runs what must wait for the commit (`afterCommit`: jobs, synchronous sends,
 * completion of a child that finished), runs the jobs themselves, and forwards events to
 * running children.
 *
 * Jobs (names below) carry plain JSON and are idempotent: each re-reads the row and the parent
 * and does nothing when they moved on, so at-least-once queues may run them twice.
 *
 * Jobs a step causes (child start and timeout, the parent's completion, async sends) are
 * collected by `prepare`. When the queue keeps its jobs in the store's database (`outboxFor`),
 * they are written inside the step's own commit (transactional outbox): the step and its jobs
 * commit together or not at all, so a crash after the commit cannot lose a child start or a
 * completion. Otherwise (the in-memory queue, a queue in another database) they are enqueued
 * right after the commit, and a crash in between loses them.
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { EventObject, ForwardDefinition } from '../definition/types.js';
import {
  ForwardTargetUnavailableException,
  MachineAlreadyRunningException,
  NoTransitionDefinitionFoundException,
} from '../errors.js';
import { initialize } from '../interpreter/initialize.js';
import { describeError, type ChildError } from '../interpreter/invoke-child.js';
import { resolveOutput } from '../interpreter/output.js';
import { transition } from '../interpreter/transition.js';
import type {
  AvailableEvent,
  DeferredEffect,
  MacrostepResult,
  MachineSnapshot,
} from '../interpreter/types.js';
import { toValidationException } from '../interpreter/validation-failure.js';
import { availableEvents } from '../interpreter/available-events.js';
import { ACTIVE_CHILD_STATUSES, type ChildRowChange, type ChildStore } from './child-rows.js';
import { completeChild } from './complete-child.js';
import type {
  CancelChildEffect,
  CancelJobEffect,
  PersistChildEffect,
  SendEffect,
  StartChildEffect,
  StartJobEffect,
} from './effects.js';
import {
  activeForwardingStates,
  availableEventsWithForwards,
  childAccepts,
  recordForwardedEvent,
  type ForwardTarget,
} from './forwarding.js';
import { planKeptScenarioStep, scenarioWrite } from '../persistence/kept-scenarios.js';
import type { CommitRequest, Store } from '../persistence/store.js';
import type { TransactionHook } from '../persistence/transaction.js';
import { JobActorRunner, toOutcomePayload, toRunPayload } from './job-actors.js';
import { DELEGATION_JOBS } from './job-names.js';
import {
  InMemoryJobQueue,
  type JobOutbox,
  type JobQueue,
  type JobRequest,
  type Json,
} from './job-queue.js';

export { DELEGATION_JOBS };

/** One instance write of a commit: the persistence `CommitRequest`. */
export type DelegationCommit = CommitRequest;

/** What the shell needs from the store. */
export interface DelegationStore extends ChildStore, Pick<Store, 'currentStates'> {
  load(rootEventId: string): Promise<MachineSnapshot | null>;
  commit(request: DelegationCommit): Promise<void>;
}

/** What the shell needs from the runtime that drives it. */
export interface DelegationHost {
  readonly store: DelegationStore;
  now(): Date;
  /** `MachineRuntime.send`: lock without waiting, one macrostep, commit. */
  send(definition: MachineDefinition, id: string, event: EventObject): Promise<unknown>;
  /** `MachineRuntime.withLock`: runs `fn` holding the instance lock, waiting up to `timeoutMs`. */
  withLock<T>(
    id: string,
    fn: () => Promise<T>,
    options: { timeoutMs?: number; context?: string },
  ): Promise<T>;
}

/** Options of the shell (from `MachineRuntimeOptions`). */
export interface DelegationShellOptions {
  /** Runs child starts, completions, timeouts and async sends (default: an in-process InMemoryJobQueue). */
  jobs?: JobQueue | undefined;
  /** Definitions known up front (a worker process runs jobs of machines it has not seen yet). */
  machines?: readonly MachineDefinition[] | undefined;
  /** Retries of async sends: tries (25), non-retryable failures tolerated (3), delay (1000 ms). */
  sendRetry?: { tries?: number; exceptions?: number; delayMs?: number } | undefined;
  /** Failures nobody awaits (a send given up, an unknown machine in a job). Default: console.error. */
  onError?: ((error: unknown, context: string) => void) | undefined;
  /**
   * Scenarios are on (`MACHINE_SCENARIOS_ENABLED`): a forwarded event honours the child's kept
   * scenario (9.7.0). Children started with a scenario keep it either way.
   */
  scenarios?: boolean | undefined;
  /**
   * How often a running job actor re-reads its row to notice that its state was left in another
   * process, in ms (default 1000). In this process the abort is immediate.
   */
  jobAbortPollMs?: number | undefined;
}

/** Extra writes of one macrostep's commit. */
export interface CommitExtras {
  children: ChildRowChange[];
  also: DelegationCommit[];
  /** Jobs the step causes; written by `inTransaction` when set, else enqueued by `afterCommit`. */
  jobs?: JobRequest[];
  /** Pass as the commit's `inTransaction`: set by `prepare` when the jobs go into the commit. */
  inTransaction?: TransactionHook;
}

/** The payload of a completion job. */
type CompletionJob = { childId: string; error?: ChildError };
/** The payload of a send job. */
type SendJob = { effect: SendEffect; attempt: number; exceptions: number };

/** The delegation shell of one runtime. */
export class DelegationShell {
  readonly #host: DelegationHost;
  #jobs: JobQueue | undefined;
  #jobsReady: Promise<void> | null = null;
  /** The in-process queue made by `#queue()` when none was configured (stopped by `close`). */
  #fallback: InMemoryJobQueue | null = null;
  /** The queue's transactional outbox for the host's store, when it has one. */
  readonly #outbox: JobOutbox | null;
  /** Extras with jobs, by the step they were prepared for (`afterCommit(result)` finds them). */
  readonly #prepared = new WeakMap<MacrostepResult, CommitExtras>();
  /** Extras whose jobs the outbox wrote inside a commit (its hook ran to the end). */
  readonly #outboxed = new WeakSet<CommitExtras>();
  readonly #machines = new Map<string, MachineDefinition>();
  readonly #tries: number;
  readonly #maxExceptions: number;
  readonly #delayMs: number;
  readonly #onError: (error: unknown, context: string) => void;
  readonly #scenarios: boolean;
  readonly #jobActors: JobActorRunner;

  constructor(host: DelegationHost, options: DelegationShellOptions = {}) {
    this.#host = host;
    this.#jobs = options.jobs;
    this.#outbox = options.jobs?.outboxFor?.(host.store) ?? null;
    this.#tries = options.sendRetry?.tries ?? 25;
    this.#maxExceptions = options.sendRetry?.exceptions ?? 3;
    this.#delayMs = options.sendRetry?.delayMs ?? 1000;
    this.#onError =
      options.onError ?? ((error, context) => console.error(`machine-routes: ${context}`, error));
    this.#scenarios = options.scenarios === true;
    for (const definition of options.machines ?? []) this.register(definition);
    this.#jobActors = new JobActorRunner(
      {
        store: host.store,
        now: () => host.now(),
        definition: (machineId) => this.#machines.get(machineId),
        machines: this.machines,
        applyToParent: (definition, parentId, context, compute, first) =>
          this.#applyToParent(definition, parentId, context, compute, first),
        enqueue: async (job) => (await this.#queue()).enqueue(job),
        retryDelayMs: this.#delayMs,
        onError: (error, context) => this.#onError(error, context),
      },
      { abortPollMs: options.jobAbortPollMs },
    );
  }

  /** The resolver handed to the interpreter (`MacrostepOptions.machines`). */
  readonly machines = (machineId: string): MachineDefinition | undefined =>
    this.#machines.get(machineId);

  /** Knows `definition` and every child it delegates to by definition. */
  register(definition: MachineDefinition): void {
    if (this.#machines.get(definition.id) === definition) return;
    this.#machines.set(definition.id, definition);
    for (const node of definition.idMap.values()) {
      const child = node.invocation?.machine;
      if (child !== undefined && typeof child !== 'string') this.register(child);
    }
  }

  /**
   * The job queue: the configured one, else (made on first use) an in-process, non-durable
   * `InMemoryJobQueue` running in the background, so delegation works out of the box; jobs
   * queued there are lost if the process dies.
   */
  async #queue(): Promise<JobQueue> {
    if (this.#jobs === undefined) {
      const fallback = new InMemoryJobQueue({
        now: () => this.#host.now(),
        onError: (error, job) => this.#onError(error, `job ${job.name}`),
      });
      this.#jobs = fallback;
      this.#fallback = fallback;
      this.#jobsReady = this.registerJobs();
      fallback.start();
    }
    await this.#jobsReady;
    return this.#jobs;
  }

  /** Stops the in-process queue this shell made for itself, if any (a configured one is the caller's). */
  async close(): Promise<void> {
    await this.#fallback?.stop();
  }

  /** Registers the job handlers on the queue (once, when the runtime is made). */
  async registerJobs(): Promise<void> {
    const jobs = this.#jobs;
    if (jobs === undefined) return;
    await jobs.work(DELEGATION_JOBS.startChild, (payload) =>
      this.#startChild(payload as unknown as StartChildEffect),
    );
    await jobs.work(DELEGATION_JOBS.completeChild, (payload) =>
      this.#completeChild(payload as unknown as CompletionJob),
    );
    await jobs.work(DELEGATION_JOBS.timeoutChild, (payload) =>
      this.#timeoutChild(payload as unknown as { childId: string }),
    );
    await jobs.work(DELEGATION_JOBS.send, (payload) =>
      this.#sendJob(payload as unknown as SendJob),
    );
    await jobs.work(DELEGATION_JOBS.runJob, (payload, info) =>
      this.#jobActors.run(toRunPayload(payload), info),
    );
    await jobs.work(DELEGATION_JOBS.jobOutcome, (payload) =>
      this.#jobActors.applyLater(toOutcomePayload(payload)),
    );
  }

  // -------------------------------------------------------------------------------------------
  // commits

  /**
   * Rows, child instances and jobs to write with `result` in one transaction. Pass
   * `extras.children`, `extras.also` and `extras.inTransaction` to the commit, then the same
   * extras to `afterCommit`.
   */
  prepare(
    result: MacrostepResult,
    extras: CommitExtras = { children: [], also: [] },
  ): CommitExtras {
    const { snapshot } = result;
    const finishedChild = snapshot.status === 'done' && snapshot.parent !== undefined;
    // The common case (no delegation) costs nothing, not even a clock read.
    if (result.effects.length === 0 && !finishedChild) return extras;
    const at = this.#host.now().toISOString();
    this.#prepareEffects(result.effects, at, extras);
    // A child that finished through its own event: its row completes with this commit, and the
    // parent's completion job is written with it.
    if (finishedChild) {
      extras.children.push({
        kind: 'setStatus',
        childId: snapshot.id,
        from: ACTIVE_CHILD_STATUSES,
        status: 'completed',
        at,
      });
      (extras.jobs ??= []).push(completionJob({ childId: snapshot.id }));
    }
    if (extras.jobs !== undefined && extras.jobs.length > 0) {
      this.#prepared.set(result, extras);
      if (this.#outbox !== null) extras.inTransaction = this.#outboxHook(extras, extras.jobs);
    }
    return extras;
  }

  /**
   * The commit hook writing `jobs`. It records that it ran, so `afterCommit` enqueues the jobs
   * itself when a caller committed without passing the hook (nothing is lost either way).
   */
  #outboxHook(extras: CommitExtras, jobs: readonly JobRequest[]): TransactionHook {
    const write = this.#outbox!.write(jobs);
    return (transaction) => {
      const pending = write(transaction);
      if (pending instanceof Promise) return pending.then(() => void this.#outboxed.add(extras));
      this.#outboxed.add(extras);
    };
  }

  #prepareEffects(effects: readonly DeferredEffect[], at: string, extras: CommitExtras): void {
    for (const effect of effects) {
      if (effect.kind === 'startChild') {
        const start = effect as StartChildEffect;
        const jobs = (extras.jobs ??= []);
        jobs.push({
          name: DELEGATION_JOBS.startChild,
          payload: start as unknown as Json,
          key: `start:${start.childId}`,
        });
        if (start.timeoutSeconds !== null) {
          jobs.push({
            name: DELEGATION_JOBS.timeoutChild,
            payload: { childId: start.childId },
            runAt: new Date(Date.parse(at) + start.timeoutSeconds * 1000),
            key: `timeout:${start.childId}`,
          });
        }
        extras.children.push({
          kind: 'insert',
          row: {
            id: start.childId,
            parentRootEventId: start.parentId,
            parentStateId: start.parentStateId,
            parentMachineId: start.parentMachineId,
            childMachineId: start.childMachineId,
            childRootEventId: start.childId,
            status: 'pending',
            createdAt: at,
            completedAt: null,
          },
        });
      } else if (effect.kind === 'persistChild') {
        const child = effect as PersistChildEffect;
        extras.also.push({
          snapshot: child.snapshot,
          history: child.history,
          expectedSequence: null,
          previousValue: [],
          now: new Date(at),
          ...(child.scenario === undefined ? {} : { scenario: child.scenario }),
        });
        extras.children.push({
          kind: 'insert',
          row: {
            id: child.childId,
            parentRootEventId: child.parentId,
            parentStateId: child.parentStateId,
            parentMachineId: child.parentMachineId,
            childMachineId: child.childMachineId,
            childRootEventId: child.childId,
            status: child.status,
            createdAt: at,
            completedAt: child.status === 'completed' ? at : null,
          },
        });
        this.#prepareEffects(child.effects, at, extras);
      } else if (effect.kind === 'cancelChild') {
        const cancel = effect as CancelChildEffect;
        extras.children.push({
          kind: 'cancel',
          parentRootEventId: cancel.parentId,
          parentStateId: cancel.parentStateId,
          at,
        });
      } else if (effect.kind === 'startJob') {
        this.#jobActors.prepareStart(effect as StartJobEffect, at, extras);
      } else if (effect.kind === 'cancelJob') {
        this.#jobActors.prepareCancel(effect as CancelJobEffect, at, extras.children);
      } else if (effect.kind === 'send' && (effect as SendEffect).mode === 'async') {
        (extras.jobs ??= []).push(
          sendJob({ effect: effect as SendEffect, attempt: 1, exceptions: 0 }),
        );
      }
    }
  }

  /**
   * Work that waits for the commit of `result` (`extras`: what `prepare` returned for it, found
   * by default): enqueues the jobs the outbox did not write, then runs the synchronous sends.
   * Synchronous sends are not jobs: a crash between the commit and their delivery loses them
   * (use `dispatchTo` for messages that must survive one).
   */
  async afterCommit(
    result: MacrostepResult,
    extras: CommitExtras | undefined = this.#prepared.get(result),
  ): Promise<void> {
    if (extras?.jobs !== undefined && extras.jobs.length > 0) {
      if (this.#outboxed.has(extras)) this.#outbox?.committed();
      else {
        const jobs = await this.#queue();
        for (const job of extras.jobs) await jobs.enqueue(job);
      }
    }
    if (result.effects.length > 0) await this.#deliverSync(result.effects);
  }

  async #deliverSync(effects: readonly DeferredEffect[]): Promise<void> {
    for (const effect of effects) {
      if (effect.kind === 'persistChild') {
        await this.#deliverSync((effect as PersistChildEffect).effects);
      } else if (effect.kind === 'cancelJob') {
        // Committed: the job's function, if it runs in this process, stops now.
        this.#jobActors.abort(effect as CancelJobEffect);
      } else if (effect.kind === 'send' && (effect as SendEffect).mode === 'sync') {
        await this.#deliver(effect as SendEffect);
      }
    }
  }

  // -------------------------------------------------------------------------------------------
  // messaging

  /** A synchronous send, right after the sender's commit; retried as a job when the target is busy. */
  async #deliver(effect: SendEffect): Promise<void> {
    const definition = this.#machines.get(effect.target.machineId);
    if (definition === undefined) {
      this.#onError(unknownMachine(effect.target.machineId), `sendTo ${effect.target.machineId}`);
      return;
    }
    try {
      await this.#host.send(definition, effect.target.id, effect.event);
    } catch (error) {
      if (isRetryable(error)) {
        await this.#enqueueSend({ effect, attempt: 2, exceptions: 0 }, this.#delayMs);
        return;
      }
      // The sender has committed; its caller is not the place to fail.
      this.#onError(
        error,
        `sendTo ${effect.target.machineId} ${effect.target.id} (${effect.event.type})`,
      );
    }
  }

  async #enqueueSend(job: SendJob, delayMs = 0): Promise<void> {
    await (
      await this.#queue()
    ).enqueue({
      ...sendJob(job),
      ...(delayMs > 0 ? { runAt: new Date(this.#host.now().getTime() + delayMs) } : {}),
    });
  }

  async #sendJob(job: SendJob): Promise<void> {
    const { effect } = job;
    const definition = this.#machines.get(effect.target.machineId);
    if (definition === undefined) {
      this.#onError(
        unknownMachine(effect.target.machineId),
        `dispatchTo ${effect.target.machineId}`,
      );
      return;
    }
    try {
      await this.#host.send(definition, effect.target.id, effect.event);
    } catch (error) {
      const exceptions = job.exceptions + (isRetryable(error) ? 0 : 1);
      if (job.attempt >= this.#tries || exceptions >= this.#maxExceptions) {
        this.#onError(
          error,
          `dispatchTo ${effect.target.machineId} ${effect.target.id} (${effect.event.type}) given up after ${job.attempt} tries`,
        );
        return;
      }
      await this.#enqueueSend({ effect, attempt: job.attempt + 1, exceptions }, this.#delayMs);
    }
  }

  // -------------------------------------------------------------------------------------------
  // child jobs

  async #startChild(start: StartChildEffect): Promise<void> {
    const { store } = this.#host;
    const [row] = await store.findChildren({ id: start.childId });
    // A failed start whose run died before its completion job was enqueued: enqueue it now
    // (deduplicated while one waits; a completion that already ran finds the parent moved on).
    if (row?.status === 'failed' && !start.fireAndForget) {
      await this.#enqueueCompletion({ childId: start.childId });
      return;
    }
    if (row === undefined || row.status !== 'pending') return;
    const at = this.#host.now().toISOString();
    const child = this.#machines.get(start.childMachineId);
    let result: MacrostepResult;
    try {
      if (child === undefined) throw unknownMachine(start.childMachineId);
      // Created by an earlier run that died before the row was updated: only the row is left.
      if ((await store.load(start.childId)) !== null) {
        await store.updateChildren([
          { kind: 'setStatus', childId: start.childId, from: ['pending'], status: 'running', at },
        ]);
        return;
      }
      result = initialize(child, {
        id: start.childId,
        context: start.input,
        parent: { machineId: start.parentMachineId, id: start.parentId },
        now: () => this.#host.now(),
        machines: this.machines,
      });
    } catch (error) {
      await store.updateChildren([
        { kind: 'setStatus', childId: start.childId, from: ['pending'], status: 'failed', at },
      ]);
      if (!start.fireAndForget)
        await this.#enqueueCompletion({ childId: start.childId, error: describeError(error) });
      return;
    }
    const extras: CommitExtras = {
      children: [
        {
          kind: 'setStatus',
          childId: start.childId,
          from: ['pending'],
          status: result.snapshot.status === 'done' ? 'completed' : 'running',
          at,
        },
      ],
      also: [],
    };
    this.prepare(result, extras);
    await store.commit({
      snapshot: result.snapshot,
      history: result.history,
      expectedSequence: null,
      previousValue: [],
      now: this.#host.now(),
      // Kept while the child waits for events (9.7.0); a child done at once plays nothing more.
      ...(start.scenario === undefined || result.snapshot.status === 'done'
        ? {}
        : { scenario: start.scenario }),
      children: extras.children,
      also: extras.also,
      inTransaction: extras.inTransaction,
    });
    await this.afterCommit(result, extras);
  }

  async #enqueueCompletion(job: CompletionJob): Promise<void> {
    await (await this.#queue()).enqueue(completionJob(job));
  }

  async #completeChild(job: CompletionJob): Promise<void> {
    const { store } = this.#host;
    const [row] = await store.findChildren({ id: job.childId });
    if (
      row === undefined ||
      (row.status !== 'completed' && row.status !== 'failed' && row.status !== 'running')
    )
      return;
    const parentDefinition = this.#machines.get(row.parentMachineId);
    if (parentDefinition === undefined) {
      this.#onError(unknownMachine(row.parentMachineId), `completion of child ${job.childId}`);
      return;
    }
    const invocation = parentDefinition.idMap.get(row.parentStateId)?.invocation;
    if (invocation === null || invocation === undefined || invocation.fireAndForget) return;
    let completion: Parameters<typeof completeChild>[2];
    if (row.status === 'failed' || job.error !== undefined) {
      completion = {
        parentStateId: row.parentStateId,
        outcome: 'fail',
        childId: job.childId,
        ...(job.error ? { error: job.error } : {}),
      };
    } else {
      const childDefinition = this.#machines.get(row.childMachineId);
      const child = await store.load(job.childId);
      if (childDefinition === undefined || child === null || child.status !== 'done') return;
      completion = {
        parentStateId: row.parentStateId,
        outcome: 'done',
        childId: job.childId,
        finalStateId: child.value[0] ?? '',
        output: resolveOutput(childDefinition, child),
      };
    }
    const applied = await this.#applyToParent(
      parentDefinition,
      row.parentRootEventId,
      'child.complete',
      (parent) =>
        completeChild(parentDefinition, parent, completion, {
          now: () => this.#host.now(),
          machines: this.machines,
        }),
    );
    // The parent stayed locked past the lock timeout: try again later rather than lose the outcome.
    if (!applied) await this.#retryLater(DELEGATION_JOBS.completeChild, job as unknown as Json);
  }

  async #retryLater(name: string, payload: Json): Promise<void> {
    await (
      await this.#queue()
    ).enqueue({ name, payload, runAt: new Date(this.#host.now().getTime() + this.#delayMs) });
  }

  async #timeoutChild(job: { childId: string }): Promise<void> {
    const { store } = this.#host;
    const [row] = await store.findChildren({ id: job.childId });
    if (row === undefined || !ACTIVE_CHILD_STATUSES.includes(row.status)) return;
    const parentDefinition = this.#machines.get(row.parentMachineId);
    if (parentDefinition === undefined) return;
    const at = this.#host.now().toISOString();
    const applied = await this.#applyToParent(
      parentDefinition,
      row.parentRootEventId,
      'child.timeout',
      (parent) =>
        completeChild(
          parentDefinition,
          parent,
          { parentStateId: row.parentStateId, outcome: 'timeout', childId: job.childId },
          {
            now: () => this.#host.now(),
            machines: this.machines,
          },
        ),
      [
        {
          kind: 'setStatus',
          childId: job.childId,
          from: ACTIVE_CHILD_STATUSES,
          status: 'timed_out',
          at,
        },
      ],
    );
    if (!applied) await this.#retryLater(DELEGATION_JOBS.timeoutChild, job);
    // A job actor that timed out stops now if it runs in this process.
    else this.#jobActors.abort({ jobId: job.childId });
  }

  /**
   * Computes and commits a macrostep of the parent under its lock (waiting up to the lock
   * timeout). `false` when the lock could not be had; `true` otherwise, also when nothing was
   * left to do.
   */
  async #applyToParent(
    definition: MachineDefinition,
    parentId: string,
    context: string,
    compute: (parent: MachineSnapshot) => MacrostepResult | null | Promise<MacrostepResult | null>,
    first: ChildRowChange[] = [],
  ): Promise<boolean> {
    const { store } = this.#host;
    let result: { step: MacrostepResult; extras: CommitExtras } | null;
    try {
      result = await this.#host.withLock(
        parentId,
        async () => {
          const parent = await store.load(parentId);
          if (parent === null || parent.machineId !== definition.id) return null;
          const step = await compute(parent);
          if (step === null) return null;
          const extras = this.prepare(step, { children: [...first], also: [] });
          await store.commit({
            snapshot: step.snapshot,
            history: step.history,
            expectedSequence: parent.sequence,
            previousValue: parent.value,
            now: this.#host.now(),
            children: extras.children,
            also: extras.also,
            inTransaction: extras.inTransaction,
          });
          return { step, extras };
        },
        { context },
      );
    } catch (error) {
      if (error instanceof MachineAlreadyRunningException) return false;
      throw error;
    }
    if (result !== null) await this.afterCommit(result.step, result.extras);
    return true;
  }

  // -------------------------------------------------------------------------------------------
  // forwarding

  /**
   * Sends a forwarded event: the parent records the parent-facing event, the running child of the
   * delegating state receives the child type, both in one transaction (the parent's lock is
   * held by the caller; the child's is taken without waiting). Throws
   * ForwardTargetUnavailableException (409) when no child runs or it does not accept the event,
   * MachineAlreadyRunningException with the parent's snapshot when the child is busy.
   */
  async sendForwarded(
    definition: MachineDefinition,
    parent: MachineSnapshot,
    event: EventObject,
    target: ForwardTarget,
    releaseLockOwner?: string,
  ): Promise<{ parent: MacrostepResult; child: MacrostepResult }> {
    type Outcome = { parent: MacrostepResult; child: MacrostepResult; extras: CommitExtras };
    const { store } = this.#host;
    const where = `Machine '${definition.id}' (instance '${parent.id}'): '${event.type}' is forwarded to child machine '${target.childMachineId}' of state '${target.parentStateId}'`;
    const [row] = await store.findChildren({
      parentRootEventId: parent.id,
      parentStateId: target.parentStateId,
      childMachineId: target.childMachineId,
      statuses: ['running'],
    });
    if (row === undefined) {
      throw new ForwardTargetUnavailableException(
        `${where}, but no child is running there (it may still be starting). Retry shortly.`,
        {
          machine: definition.id,
          key: event.type,
        },
      );
    }
    const childId = row.childRootEventId ?? row.id;
    let outcome: Outcome;
    try {
      outcome = await this.#host.withLock(
        childId,
        async () => {
          const child = await store.load(childId);
          if (child === null || !childAccepts(target.child, child, target.childEventType)) {
            throw new ForwardTargetUnavailableException(
              `${where}, but the child${child ? ` (in '${child.value.join(', ')}')` : ''} does not accept '${target.childEventType}' now.`,
              { machine: definition.id, key: event.type },
            );
          }
          const childEvent: EventObject = { ...event, type: target.childEventType };
          // The child's kept scenario (its continuation) applies to the forwarded event.
          const scenario = this.#scenarios
            ? await planKeptScenarioStep(store, target.child, child, target.childEventType, {
                kind: 'omitted',
              })
            : null;
          let childStep: MacrostepResult;
          try {
            childStep = transition(target.child, child, childEvent, {
              now: () => this.#host.now(),
              machines: this.machines,
              scenario: scenario?.step.active ?? null,
            });
          } catch (error) {
            if (error instanceof NoTransitionDefinitionFoundException) {
              throw new ForwardTargetUnavailableException(
                `${where}, but the child does not accept it: ${error.message}`,
                {
                  machine: definition.id,
                  key: event.type,
                },
              );
            }
            throw error;
          }
          const parentStep = recordForwardedEvent(definition, parent, event, {
            now: () => this.#host.now(),
          });
          const extras = this.prepare(childStep);
          await store.commit({
            snapshot: parentStep.snapshot,
            history: parentStep.history,
            expectedSequence: parent.sequence,
            previousValue: parent.value,
            now: this.#host.now(),
            ...(releaseLockOwner === undefined ? {} : { releaseLockOwner }),
            children: extras.children,
            also: [
              {
                snapshot: childStep.snapshot,
                history: childStep.history,
                expectedSequence: child.sequence,
                previousValue: child.value,
                now: this.#host.now(),
                ...(scenario === null ? {} : scenarioWrite(scenario.kept, scenario.step)),
              },
              ...extras.also,
            ],
            inTransaction: extras.inTransaction,
          });
          return { parent: parentStep, child: childStep, extras };
        },
        { timeoutMs: 0, context: 'forward' },
      );
    } catch (error) {
      // Contention on the child is contention of this request: answer with the parent's state.
      if (error instanceof MachineAlreadyRunningException && error.snapshot !== parent) {
        throw new MachineAlreadyRunningException(
          `Event processing failed: the child machine of \`${parent.id}\` is busy.`,
          parent,
          { machine: definition.id, key: parent.id },
        );
      }
      throw error;
    }
    await this.afterCommit(outcome.child, outcome.extras);
    if (outcome.child.validationFailure !== null)
      throw toValidationException(outcome.child.validationFailure, target.childMachineId);
    return { parent: outcome.parent, child: outcome.child };
  }

  /** The child a forward reaches (running, else the latest one of its state), for `data.child`. */
  async forwardedChild(
    _definition: MachineDefinition,
    parent: MachineSnapshot,
    forward: ForwardDefinition,
  ): Promise<MachineSnapshot | null> {
    const rows = await this.#host.store.findChildren({
      parentRootEventId: parent.id,
      parentStateId: forward.stateId,
      childMachineId: forward.childMachineId,
    });
    const row = rows.find((candidate) => candidate.status === 'running') ?? rows[rows.length - 1];
    if (row === undefined) return null;
    return this.#host.store.load(row.childRootEventId ?? row.id);
  }

  /** `availableEvents` with the forwarded events the running children accept now. */
  async availableEvents(
    definition: MachineDefinition,
    snapshot: MachineSnapshot,
  ): Promise<AvailableEvent[]> {
    const states = activeForwardingStates(definition, snapshot);
    if (states.length === 0) return availableEvents(definition, snapshot);
    const children = new Map<string, MachineSnapshot | null>();
    for (const state of states) {
      const [row] = await this.#host.store.findChildren({
        parentRootEventId: snapshot.id,
        parentStateId: state.parentStateId,
        childMachineId: state.childMachineId,
        statuses: ['running'],
      });
      children.set(
        state.parentStateId,
        row ? await this.#host.store.load(row.childRootEventId ?? row.id) : null,
      );
    }
    return availableEventsWithForwards(definition, snapshot, children);
  }
}

function completionJob(job: CompletionJob): JobRequest {
  return {
    name: DELEGATION_JOBS.completeChild,
    payload: job as unknown as Json,
    key: `complete:${job.childId}`,
  };
}

function sendJob(job: SendJob): JobRequest {
  return { name: DELEGATION_JOBS.send, payload: job as unknown as Json };
}

function isRetryable(error: unknown): boolean {
  return (
    error instanceof MachineAlreadyRunningException ||
    error instanceof NoTransitionDefinitionFoundException ||
    error instanceof ForwardTargetUnavailableException
  );
}

function unknownMachine(machineId: string): Error {
  return new Error(
    `machine-routes: machine '${machineId}' is not known to this runtime. Pass it in MachineRuntime's 'machines' option.`,
  );
}
