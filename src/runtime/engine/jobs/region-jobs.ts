/**
 * The effectful side of parallel dispatch (docs/parallel-dispatch.md): the `parallel.region`
 * and `parallel.timeout` job handlers, with the region jobs' own settings
 * (`MACHINE_PARALLEL_DISPATCH_*`: queue, lock timeout and TTL, attempts, backoff, attempt
 * timeout). The rules are pure, in `interpreter/plan-region-dispatch.ts`; the jobs are written
 * with the entering step's commit by `planCommit` (transactional outbox).
 *
 * A region job runs its entry actions on the last committed snapshot without the lock (so the
 * regions of one parallel state run at the same time in different worker processes), then
 * merges in a locked step (engine/locked-step.ts: the runtime's lock manager, waiting up to
 * `lock_timeout`, the lock living `lock_ttl`): it reads the history since the parallel state
 * was entered and commits fenced on the snapshot it read. A lock not had in time, or a commit
 * fenced out, fails the attempt (`MachineAlreadyRunningException`): the queue retries it. Exactly once: an attempt that died before its commit left nothing and runs again; an
 * attempt that committed left a `region.merged` record, which a later run of the same job finds
 * (it then commits nothing). While a region job holds the lock, the instance answers like any
 * locked one (HTTP 423, GET 200 with `isProcessing: true`). An attempt that fails as the job's
 * last routes the parallel state's `@fail` with a PARALLEL_FAIL record (`failParallel`), so a
 * region that cannot run does not leave its instance in the parallel state for good.
 */
import type { MachineDefinition } from '../../definition/machine-definition.js';
import type { JobPayloads } from '../../interpreter/job-payloads.js';
import type { JobInfo } from '../../jobs/job-queue.js';
import { mergeRegion, runRegionEntry } from '../../interpreter/plan-region-dispatch.js';
import {
  failParallel,
  regionStatus,
  timeoutParallel,
} from '../../interpreter/parallel-entry-end.js';
import type { MacrostepResult, MachineSnapshot } from '../../interpreter/types.js';
import type { EngineContext } from '../context.js';
import { runLocked } from '../locked-step.js';
import { unknownMachine } from '../machine-registry.js';

/** What a region job did (tests and logs). */
export type RegionJobOutcome = 'merged' | 'already-merged' | 'stale' | 'unknown-instance';

/**
 * The `parallel.region` job. A failed attempt is retried by the queue; the last one (`info`)
 * fails the parallel state instead, then rethrows so the queue keeps the job as failed.
 */
export async function runRegionJob(
  ctx: EngineContext,
  work: JobPayloads['parallel.region'],
  info: Pick<JobInfo, 'attempt' | 'maxAttempts'>,
): Promise<RegionJobOutcome> {
  try {
    return await mergeRegionWork(ctx, work);
  } catch (error) {
    if (info.attempt >= (info.maxAttempts ?? 1)) await failRegion(ctx, work, error);
    throw error;
  }
}

/** Entry actions without the lock, then the merge under it. */
async function mergeRegionWork(
  ctx: EngineContext,
  work: JobPayloads['parallel.region'],
): Promise<RegionJobOutcome> {
  const base = await ctx.store.load(work.instanceId);
  if (base === null) return 'unknown-instance';
  const definition = definitionOf(ctx, work.machineId, base);
  const early = regionStatus(definition, base, await afterEntry(ctx, base.id, work), work);
  if (early !== 'pending') return early === 'merged' ? 'already-merged' : 'stale';
  const entry = runRegionEntry(definition, base, work, ctx.macrostepOptions);
  return underLock(ctx, work.instanceId, `parallel-region ${work.regionId}`, async (fresh) => {
    const entered = await afterEntry(ctx, fresh.id, work);
    const running = definitionOf(ctx, work.machineId, fresh);
    const status = regionStatus(running, fresh, entered, work);
    if (status !== 'pending') return { outcome: status === 'merged' ? 'already-merged' : 'stale' };
    const result = mergeRegion(running, fresh, entered, work, entry, ctx.macrostepOptions);
    return { outcome: 'merged', result };
  });
}

/** The parallel state of a region job that failed its last attempt takes its `@fail`. */
async function failRegion(
  ctx: EngineContext,
  work: JobPayloads['parallel.region'],
  error: unknown,
): Promise<void> {
  definitionOf(ctx, work.machineId, null);
  const cause =
    error instanceof Error
      ? { name: error.name, message: error.message }
      : { name: 'Error', message: String(error) };
  await underLock(ctx, work.instanceId, `parallel-fail ${work.regionId}`, async (fresh) => {
    const entered = await afterEntry(ctx, fresh.id, work);
    const definition = definitionOf(ctx, work.machineId, fresh);
    const result = failParallel(definition, fresh, entered, work, cause, ctx.macrostepOptions);
    return result === null ? { outcome: 'stale' } : { outcome: 'merged', result };
  });
}

/** The `parallel.timeout` job (`region_timeout`). */
export async function timeoutRegions(
  ctx: EngineContext,
  watch: JobPayloads['parallel.timeout'],
): Promise<void> {
  definitionOf(ctx, watch.machineId, null);
  if ((await ctx.store.load(watch.instanceId)) === null) return;
  await underLock(
    ctx,
    watch.instanceId,
    `parallel-timeout ${watch.parallelStateId}`,
    async (fresh) => {
      const entered = await afterEntry(ctx, fresh.id, watch);
      const definition = definitionOf(ctx, watch.machineId, fresh);
      const result = timeoutParallel(definition, fresh, entered, watch, ctx.macrostepOptions);
      return result === null ? { outcome: 'stale' } : { outcome: 'merged', result };
    },
  );
}

/**
 * The definition `snapshot` runs on: its own version's when pinned (docs/versioning.md), else
 * the newest; `null`: only checks that the machine is known.
 */
function definitionOf(
  ctx: EngineContext,
  machineId: string,
  snapshot: MachineSnapshot | null,
): MachineDefinition {
  const definition = ctx.registry.forInstance(machineId, snapshot);
  if (definition === undefined) throw unknownMachine(machineId);
  return definition;
}

function afterEntry(ctx: EngineContext, id: string, work: { enteredAt: number }) {
  return ctx.store.history(id, { afterSequence: work.enteredAt });
}

/** `compute`'s step committed in a locked step with the region jobs' own lock settings. */
function underLock(
  ctx: EngineContext,
  id: string,
  context: string,
  compute: (
    fresh: MachineSnapshot,
  ) => Promise<{ outcome: RegionJobOutcome; result?: MacrostepResult }>,
): Promise<RegionJobOutcome> {
  const settings = ctx.settings.parallelDispatch;
  return runLocked<RegionJobOutcome>(ctx, {
    id,
    lock: { waitMs: settings.lockTimeout * 1000 },
    ttlMs: settings.lockTtl * 1000,
    context,
    compute: async (fresh) => {
      if (fresh === null) return { value: 'unknown-instance' };
      const step = await compute(fresh);
      if (step.result === undefined) return { value: step.outcome };
      return {
        value: step.outcome,
        commit: { main: { result: step.result, from: fresh }, at: ctx.now() },
      };
    },
  });
}
