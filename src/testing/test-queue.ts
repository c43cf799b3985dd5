/**
 * The job queue of a test runtime: the runtime's own in-process queue on the virtual clock,
 * run only when the kit says so (`runDue`), with the job-actor and child-start jobs passed
 * through the test's fakes first. A faked outcome is applied through the runtime's own
 * handlers (`job.outcome`, `child.complete`), so the parent takes the path a real outcome takes.
 */
import type { MachineDefinition } from '../runtime/definition/machine-definition.js';
// The engine's public surface only (its barrel): its modules move, its exports stay.
import { commitChildRows, JOB_HANDLERS, type EngineContext } from '../runtime/engine/index.js';
import { resolveJobOutcome } from '../runtime/interpreter/complete-child.js';
import { ACTIVE_CHILD_STATUSES } from '../runtime/interpreter/child-rows.js';
import { describeError } from '../runtime/interpreter/child-outcomes.js';
import type { JobPayloads } from '../runtime/interpreter/job-payloads.js';
import {
  InMemoryJobQueue,
  type JobHandler,
  type JobInfo,
  type JobQueue,
  type JobRequest,
  type Json,
} from '../runtime/jobs/job-queue.js';
import type { Store } from '../runtime/persistence/store.js';
import { UnknownFakeTargetException } from './errors.js';
import type { Fakes, FakeOutcome } from './fakes.js';
import { writeInstanceAt } from './start-at.js';

/** What the queue needs from the test runtime. */
export interface TestQueueContext {
  readonly store: Store;
  /** The runtime's engine context (a fake child's final state is committed through it). */
  readonly engine: EngineContext;
  readonly fakes: Fakes;
  now(): Date;
  /** A definition the test runtime knows, by id. */
  definition(machineId: string): MachineDefinition | undefined;
}

const JOB_RUN = JOB_HANDLERS['job.run'].name;
const JOB_OUTCOME = JOB_HANDLERS['job.outcome'].name;
const CHILD_START = JOB_HANDLERS['child.start'].name;
const CHILD_COMPLETE = JOB_HANDLERS['child.complete'].name;

/** A queue whose jobs run in `runDue`, in due order, on the test's clock. */
export class TestJobQueue implements JobQueue {
  readonly #host: TestQueueContext;
  readonly #inner: InMemoryJobQueue;
  readonly #handlers = new Map<string, JobHandler>();

  constructor(host: TestQueueContext, options: { retries?: number } = {}) {
    this.#host = host;
    this.#inner = new InMemoryJobQueue({ now: () => host.now(), retries: options.retries ?? 0 });
  }

  /** Failed job attempts, oldest first (a test asserts on them; nothing is logged). */
  get failures(): readonly { job: JobInfo; error: unknown }[] {
    return this.#inner.failures;
  }

  /** Jobs not run yet, in due order. */
  get pending(): readonly JobInfo[] {
    return this.#inner.pending;
  }

  enqueue(job: JobRequest): Promise<void> {
    return this.#inner.enqueue(job);
  }

  work(name: string, handler: JobHandler): void {
    this.#handlers.set(name, handler);
    this.#inner.work(name, (payload, info) => this.#run(name, handler, payload, info));
  }

  /** Runs every job due now, and those they cause, one at a time; returns how many ran. */
  runDue(): Promise<number> {
    return this.#inner.runDue();
  }

  #run(name: string, handler: JobHandler, payload: Json, info: JobInfo): Promise<void> | void {
    if (name === JOB_RUN) return this.#jobRun(handler, payload as never, info);
    if (name === CHILD_START) return this.#childStart(handler, payload as never, info);
    return handler(payload, info);
  }

  async #jobRun(handler: JobHandler, run: JobPayloads['job.run'], info: JobInfo): Promise<void> {
    const outcome = this.#host.fakes.answer({
      kind: 'job',
      name: run.job,
      input: run.input,
      parent: { machineId: run.parentMachineId, id: run.parentId, state: run.parentStateId },
      at: this.#host.now(),
    });
    if (outcome === null) return handler(run as never, info);
    if (outcome.kind === 'hang') return;
    const invocation = this.#host
      .definition(run.parentMachineId)
      ?.idMap.get(run.parentStateId)?.invocation;
    if (invocation?.kind !== 'job')
      throw new UnknownFakeTargetException(
        `Job '${run.job}' ran for state '${run.parentStateId}', which the test runtime does not know as a job state. Pass its machine in 'machines'.`,
        { machine: run.parentMachineId, key: run.job },
      );
    const jobOutcome = resolveJobOutcome(
      invocation,
      outcome.kind === 'resolve'
        ? { outcome: 'done', jobId: run.jobId, output: outcome.output }
        : { outcome: 'fail', jobId: run.jobId, error: outcome.error },
    );
    if (run.fireAndForget) {
      await commitChildRows(this.#host.engine, [
        {
          kind: 'setStatus',
          childId: run.jobId,
          from: ACTIVE_CHILD_STATUSES,
          status: jobOutcome.outcome === 'done' ? 'completed' : 'failed',
          at: this.#host.now().toISOString(),
        },
      ]);
      return;
    }
    // The fake's answer stands for the run; the scenario the run carried still reaches the
    // parent's completion step (scenario isolation).
    const payload: JobPayloads['job.outcome'] = { jobId: run.jobId, outcome: jobOutcome };
    if (run.scenario !== undefined) payload.scenario = run.scenario;
    await this.#handler(JOB_OUTCOME)(payload as never, info);
  }

  async #childStart(
    handler: JobHandler,
    start: JobPayloads['child.start'],
    info: JobInfo,
  ): Promise<void> {
    const outcome = this.#host.fakes.answer({
      kind: 'child',
      name: start.childMachineId,
      input: start.input,
      parent: { machineId: start.parentMachineId, id: start.parentId, state: start.parentStateId },
      at: this.#host.now(),
    });
    if (outcome === null) return handler(start as never, info);
    if (outcome.kind === 'hang') return;
    const [row] = await this.#host.store.findChildren({ id: start.childId });
    if (row?.status !== 'pending') return;
    if (outcome.kind === 'reject') return this.#failChild(start, outcome.error, info);
    await this.#finishChild(start, outcome);
  }

  async #failChild(start: JobPayloads['child.start'], error: Error, info: JobInfo): Promise<void> {
    await commitChildRows(this.#host.engine, [
      {
        kind: 'setStatus',
        childId: start.childId,
        from: ['pending'],
        status: 'failed',
        at: this.#host.now().toISOString(),
      },
    ]);
    if (start.fireAndForget) return;
    await this.#handler(CHILD_COMPLETE)(
      { childId: start.childId, error: describeError(error) } as never,
      info,
    );
  }

  // The child written as done in its final state, with the fake's output as its context; its
  // commit writes the parent's completion job, as a child finishing on its own does.
  async #finishChild(
    start: JobPayloads['child.start'],
    outcome: Extract<FakeOutcome, { kind: 'resolve' }>,
  ): Promise<void> {
    const child = this.#host.definition(start.childMachineId);
    if (child === undefined)
      throw new UnknownFakeTargetException(
        `Child machine '${start.childMachineId}' is faked but the test runtime does not know its definition. Pass it in 'machines'.`,
        { machine: start.childMachineId },
      );
    const final =
      outcome.final ?? child.root.children.find((state) => state.type === 'final')?.key ?? null;
    if (final === null || child.root.childMap.get(final)?.type !== 'final')
      throw new UnknownFakeTargetException(
        `resolve() of child machine '${child.id}' needs a top-level final state; '${final ?? '(none)'}' is not one. Pass { final: '<state>' }.`,
        { machine: child.id, key: final ?? 'final' },
      );
    const output = outcome.output;
    await writeInstanceAt(this.#host.engine, child, final, this.#host.now(), {
      ...(typeof output === 'object' && output !== null && !Array.isArray(output)
        ? { context: output as Record<string, unknown> }
        : {}),
      child: {
        id: start.childId,
        parent: { machineId: start.parentMachineId, id: start.parentId },
      },
    });
  }

  #handler(name: string): JobHandler {
    const handler = this.#handlers.get(name);
    if (handler === undefined) throw new Error(`machine-routes testing: no handler for ${name}.`);
    return handler;
  }
}
