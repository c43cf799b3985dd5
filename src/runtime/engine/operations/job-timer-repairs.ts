/**
 * Repairs of what an instance waits for (docs/operations.md "Repairing"): pause and resume,
 * retrying its failed jobs, firing a pending timer now. Each writes its `@operator.<action>`
 * record through the locked step (operator-steps.ts) before acting, so the timeline shows who
 * asked for what, then acts through the path the runtime itself uses: the job queue's own
 * retry, the timer sweep's delivery (engine/timers, unchanged).
 */
import { InvalidOperationQueryException } from '../../errors.js';
import type { MachineDefinition } from '../../definition/machine-definition.js';
import type { TimerRegistration } from '../../definition/timer-registration.js';
import type { MachineSnapshot } from '../../interpreter/types.js';
import type { MachineRuntime } from '../machine-runtime.js';
import { refusePaused } from '../reads.js';
import { deliverDueFires } from '../timers/timer-delivery.js';
import type { InstanceRecord } from './instance-reads.js';
import { operatorStep, refuseDone, type OperatorStepResult } from './operator-steps.js';
import type { FiredTimer, OperatorOptions, RetriedJobs } from './repairs.js';

/** Pauses instance `id` (a paused one: nothing written). */
export function pause(
  runtime: MachineRuntime,
  definition: MachineDefinition,
  id: string,
  options: OperatorOptions,
): Promise<OperatorStepResult> {
  return operatorStep(
    runtime,
    definition,
    id,
    {
      action: 'pause',
      pause: true,
      check: (snapshot) => {
        refuseDone('pause', snapshot);
        return snapshot.pausedAt === undefined;
      },
    },
    options,
  );
}

/** Resumes instance `id` (one not paused: nothing written). */
export function resume(
  runtime: MachineRuntime,
  definition: MachineDefinition,
  id: string,
  options: OperatorOptions,
): Promise<OperatorStepResult> {
  return operatorStep(
    runtime,
    definition,
    id,
    { action: 'resume', pause: false, check: (snapshot) => snapshot.pausedAt !== undefined },
    options,
  );
}

/** Re-queues the failed jobs of `record` (`jobId` only, when given). */
export async function retryJobs(
  runtime: MachineRuntime,
  definition: MachineDefinition,
  record: InstanceRecord,
  options: OperatorOptions & { jobId?: string },
): Promise<RetriedJobs> {
  const { id } = record.instance;
  const jobs = record.failedJobs.filter(
    (job) => options.jobId === undefined || job.id === options.jobId,
  );
  if (jobs.length === 0) {
    throw new InvalidOperationQueryException(
      options.jobId === undefined
        ? `Machine '${definition.id}' instance '${id}' has no failed jobs to retry (machine-routes instances show lists them).`
        : `Machine '${definition.id}' instance '${id}' has no failed job '${options.jobId}': its failed jobs are ${record.failedJobs.map((job) => job.id).join(', ') || 'none'}.`,
      { machine: definition.id, key: options.jobId ?? id },
    );
  }
  const named = jobs.map((job) => ({ id: job.id, name: job.name }));
  await operatorStep(
    runtime,
    definition,
    id,
    {
      action: 'retry',
      payload: { jobs: named },
      check: (snapshot) => refuseDone('retry', snapshot),
    },
    options,
  );
  // After the record's commit, with the lock released: a retried job may lock the instance.
  const retried = [];
  for (const job of named)
    retried.push({ ...job, retried: await runtime.context.jobs.retryFailed(job) });
  return { jobs: retried };
}

/** Fires a pending timer of `record` now, through the timer sweep's delivery. */
export async function fireTimer(
  runtime: MachineRuntime,
  registration: TimerRegistration | undefined,
  record: InstanceRecord,
  options: OperatorOptions & { timer?: string },
): Promise<FiredTimer> {
  const { id, machineId } = record.instance;
  const pending = record.timers.filter((timer) => timer.dueAt !== null);
  const timer =
    options.timer === undefined
      ? pending.length === 1
        ? pending[0]
        : undefined
      : pending.find((entry) => entry.key === options.timer);
  if (timer === undefined || timer.dueAt === null) {
    throw new InvalidOperationQueryException(
      `Machine '${machineId}' instance '${id}' has ${options.timer === undefined ? `${pending.length} pending timers: name one with --timer` : `no pending timer '${options.timer}'`} (pending: ${pending.map((entry) => entry.key).join(', ') || 'none'}).`,
      { machine: machineId, key: options.timer ?? id },
    );
  }
  if (registration === undefined) {
    throw new InvalidOperationQueryException(
      `Machine '${machineId}' is not in the runtime's timer registrations, so its timers do not fire: register it (timers in the config) first.`,
      { machine: machineId, key: 'timers' },
    );
  }
  const dueAt = timer.dueAt;
  await operatorStep(
    runtime,
    registration.machine,
    id,
    {
      action: 'fire',
      payload: { timer: timer.key, event: timer.eventType, dueAt },
      check: (snapshot: MachineSnapshot) => {
        refuseDone('fire', snapshot);
        refusePaused(snapshot);
      },
    },
    options,
  );
  // The sweep's delivery on a clock set to the timer's due time (or now, if later): the fire is
  // due, claimed exactly once against a concurrent sweep, and sent as the timer's event.
  const at = Math.max(Date.parse(dueAt), runtime.context.now().getTime());
  const deadline = Date.now() + (options.waitMs ?? 5000);
  for (;;) {
    const result = await deliverDueFires(runtime.context, registration, id, () => new Date(at));
    if (!result.locked || Date.now() >= deadline) {
      return {
        timer: { key: timer.key, eventType: timer.eventType, dueAt },
        delivered: result.delivered,
      };
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
