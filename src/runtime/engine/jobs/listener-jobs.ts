/**
 * The `listener.run` job: runs a queued listener (`[listener, { '@queue': true }]`) after the
 * commit of the step that queued it, on the instance's latest committed state, under the
 * instance lock, and commits its records and context changes like any step.
 *
 * Delivery is at least once, as for every job: a listener that throws fails the attempt and the
 * queue retries it (its `maxAttempts` and backoff), nothing of the failed attempt being
 * committed; a worker killed after the commit but before the queue recorded the job as done
 * runs it again. Listeners with outside effects should be idempotent.
 */
import type { JobPayloads } from '../../interpreter/job-payloads.js';
import { runQueuedListener } from '../../interpreter/queued-listener.js';
import type { EngineContext } from '../context.js';
import { unknownMachine } from '../machine-registry.js';
import { applyToParent } from './child-jobs.js';
import { enqueueJobs, later } from './job-requests.js';

/** `listener.run`: one queued listener on the instance it belongs to. */
export async function runListenerJob(
  ctx: EngineContext,
  job: JobPayloads['listener.run'],
): Promise<void> {
  const definition = ctx.registry.resolve(job.machineId);
  if (definition === undefined) {
    ctx.onError(unknownMachine(job.machineId), `queued listener ${job.listener} of ${job.id}`);
    return;
  }
  const applied = await applyToParent(ctx, {
    definition,
    parentId: job.id,
    context: 'listener.run',
    // A pinned instance's listener is its own version's (docs/versioning.md).
    compute: (snapshot, running) => runQueuedListener(running, snapshot, job, ctx.macrostepOptions),
  });
  // The instance stayed locked past the lock timeout: run it later rather than not at all.
  if (!applied) {
    await enqueueJobs(ctx, [{ kind: 'listener.run', payload: job, runAt: later(ctx) }]);
  }
}
