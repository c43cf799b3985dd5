/**
 * The child machine jobs: start an asynchronous child, route a child's outcome in its parent,
 * and route `@timeout`. Each re-reads the `machine_children` row and the parent and does
 * nothing when they moved on, so at-least-once queues may run a job twice.
 */
import type { MachineDefinition } from '../../definition/machine-definition.js';
import { MachineAlreadyRunningException } from '../../errors.js';
import {
  ACTIVE_CHILD_STATUSES,
  type ChildRow,
  type ChildRowChange,
} from '../../interpreter/child-rows.js';
import { completeChild, type ChildCompletion } from '../../interpreter/complete-child.js';
import { initialize } from '../../interpreter/initialize.js';
import { describeError } from '../../interpreter/child-outcomes.js';
import type { JobPayloads } from '../../interpreter/job-payloads.js';
import { resolveOutput } from '../../interpreter/output.js';
import { completionJob } from '../../interpreter/plan-commit.js';
import { resumeScenario } from '../../interpreter/scenarios.js';
import type {
  ActiveScenario,
  MacrostepOptions,
  MacrostepResult,
  MachineSnapshot,
} from '../../interpreter/types.js';
import { commitChildRows, commitStep } from '../commit-step.js';
import type { EngineContext } from '../context.js';
import { linkToChildStart, recordChildOnSpan } from '../child-instrumentation.js';
import { completionStep } from '../instrumentation.js';
import { runLocked } from '../locked-step.js';
import { unknownMachine } from '../machine-registry.js';
import { runningDefinition } from '../versioning/instance-versions.js';
import { enqueueJobs, later } from './job-requests.js';

/** `child.start`: creates the child with its id and input, and moves its row to `running`. */
export async function startChild(
  ctx: EngineContext,
  start: JobPayloads['child.start'],
): Promise<void> {
  const { store } = ctx;
  const [row] = await store.findChildren({ id: start.childId });
  recordChildOnSpan({
    parentMachineId: start.parentMachineId,
    parentId: start.parentId,
    childMachineId: start.childMachineId,
    childId: start.childId,
    status: row?.status ?? 'missing',
  });
  // A failed start whose run died before its completion job was enqueued: enqueue it now
  // (deduplicated while one waits; a completion that already ran finds the parent moved on).
  if (row?.status === 'failed' && !start.fireAndForget) {
    await enqueueJobs(ctx, [completionJob(start.childId)]);
    return;
  }
  if (row === undefined || row.status !== 'pending') return;
  const at = ctx.now().toISOString();
  const child = ctx.registry.resolve(start.childMachineId);
  let result: MacrostepResult;
  let inherited: ActiveScenario | null = null;
  try {
    if (child === undefined) throw unknownMachine(start.childMachineId);
    // Created by an earlier run that died before the row was updated: only the row is left.
    if ((await store.load(start.childId)) !== null) {
      await commitChildRows(ctx, [
        { kind: 'setStatus', childId: start.childId, from: ['pending'], status: 'running', at },
      ]);
      return;
    }
    // Started under the parent's scenario: the child starts under its own scenario of that slug
    // (scenario isolation), kept on it like a plan's `{ scenario }` child.
    inherited = resumeScenario(child, start.carriedScenario);
    result = initialize(child, {
      ...ctx.macrostepOptions,
      id: start.childId,
      context: start.input,
      parent: { machineId: start.parentMachineId, id: start.parentId },
      ...(inherited === null ? {} : { scenario: inherited }),
    });
  } catch (error) {
    recordChildOnSpan({ childId: start.childId, status: 'failed' });
    await commitChildRows(ctx, [
      { kind: 'setStatus', childId: start.childId, from: ['pending'], status: 'failed', at },
    ]);
    if (!start.fireAndForget)
      await enqueueJobs(ctx, [completionJob(start.childId, describeError(error))]);
    return;
  }
  recordChildOnSpan({
    childId: start.childId,
    status: result.snapshot.status === 'done' ? 'completed' : 'running',
  });
  const kept =
    start.scenario ??
    (inherited === null ? undefined : { slug: inherited.slug, params: inherited.params });
  await commitStep(ctx, {
    main: {
      result,
      from: null,
      // Kept while the child waits for events (9.7.0); a child done at once plays nothing more.
      ...(kept === undefined || result.snapshot.status === 'done' ? {} : { scenario: kept }),
    },
    children: [
      {
        kind: 'setStatus',
        childId: start.childId,
        from: ['pending'],
        status: result.snapshot.status === 'done' ? 'completed' : 'running',
        at,
      },
    ],
    at: ctx.now(),
  });
}

/** `child.complete`: routes `@done` / `@fail` in the parent (a no-op once it moved on). */
export async function completeChildJob(
  ctx: EngineContext,
  job: JobPayloads['child.complete'],
): Promise<void> {
  const { store } = ctx;
  const [row] = await store.findChildren({ id: job.childId });
  if (
    row === undefined ||
    (row.status !== 'completed' && row.status !== 'failed' && row.status !== 'running')
  )
    return;
  // A parent pinned to an older version (docs/versioning.md) delegates in that version's state.
  const parentDefinition = await instanceDefinition(
    ctx,
    row.parentMachineId,
    row.parentRootEventId,
  );
  if (parentDefinition === undefined) {
    ctx.onError(unknownMachine(row.parentMachineId), `completion of child ${job.childId}`);
    return;
  }
  const invocation = parentDefinition.idMap.get(row.parentStateId)?.invocation;
  if (invocation === null || invocation === undefined || invocation.fireAndForget) return;
  let completion: ChildCompletion;
  if (row.status === 'failed' || job.error !== undefined) {
    completion = {
      parentStateId: row.parentStateId,
      outcome: 'fail',
      childId: job.childId,
      ...(job.error ? { error: job.error } : {}),
    };
  } else {
    const child = await store.load(job.childId);
    const childDefinition = ctx.registry.forInstance(row.childMachineId, child);
    if (childDefinition === undefined || child === null || child.status !== 'done') return;
    completion = doneOrUnresolved(row.parentStateId, job.childId, child, () =>
      resolveOutput(childDefinition, child),
    );
  }
  recordChildOnSpan({
    parentMachineId: row.parentMachineId,
    parentId: row.parentRootEventId,
    childMachineId: row.childMachineId,
    childId: job.childId,
    outcome: completion.outcome,
  });
  await linkToChildStart(store, row.parentRootEventId, row.parentStateId);
  const applied = await applyToParent(ctx, {
    definition: parentDefinition,
    parentId: row.parentRootEventId,
    context: 'child.complete',
    compute: (parent, definition) =>
      completeChild(definition, parent, completion, replaying(ctx, definition, row)),
  });
  // The parent stayed locked past the lock timeout: try again later rather than lose the outcome.
  if (!applied)
    await enqueueJobs(ctx, [{ kind: 'child.complete', payload: job, runAt: later(ctx) }]);
}

/**
 * A finished child's `@done`, or its `@fail` when its typed output cannot be built (the
 * MachineOutputResolutionException as the error): the parent gets no invalid output.
 */
function doneOrUnresolved(
  parentStateId: string,
  childId: string,
  child: MachineSnapshot,
  output: () => unknown,
): ChildCompletion {
  try {
    return {
      parentStateId,
      outcome: 'done',
      childId,
      finalStateId: child.value[0] ?? '',
      output: output(),
    };
  } catch (error) {
    return { parentStateId, outcome: 'fail', childId, error: describeError(error) };
  }
}

/** `child.timeout`: routes `@timeout` in the parent of a child still active. */
export async function timeoutChild(
  ctx: EngineContext,
  job: JobPayloads['child.timeout'],
): Promise<void> {
  const [row] = await ctx.store.findChildren({ id: job.childId });
  if (row === undefined || !ACTIVE_CHILD_STATUSES.includes(row.status)) return;
  const parentDefinition = ctx.registry.resolve(row.parentMachineId);
  if (parentDefinition === undefined) return;
  const at = ctx.now().toISOString();
  recordChildOnSpan({
    parentMachineId: row.parentMachineId,
    parentId: row.parentRootEventId,
    childMachineId: row.childMachineId,
    childId: job.childId,
    outcome: 'timeout',
  });
  await linkToChildStart(ctx.store, row.parentRootEventId, row.parentStateId);
  const applied = await applyToParent(ctx, {
    definition: parentDefinition,
    parentId: row.parentRootEventId,
    context: 'child.timeout',
    compute: (parent, definition) =>
      completeChild(
        definition,
        parent,
        { parentStateId: row.parentStateId, outcome: 'timeout', childId: job.childId },
        replaying(ctx, definition, row),
      ),
    children: [
      {
        kind: 'setStatus',
        childId: job.childId,
        from: ACTIVE_CHILD_STATUSES,
        status: 'timed_out',
        at,
      },
    ],
  });
  if (!applied)
    await enqueueJobs(ctx, [{ kind: 'child.timeout', payload: job, runAt: later(ctx) }]);
  // A job actor that timed out stops now if it runs in this process.
  else ctx.runningJobs.abort({ jobId: job.childId });
}

/**
 * The macrostep options of a parent's completion step: the scenario its step played when it
 * started the child, played again (scenario isolation), so work the completion starts keeps it.
 */
function replaying(
  ctx: EngineContext,
  definition: MachineDefinition,
  row: ChildRow,
): EngineContext['macrostepOptions'] & Pick<MacrostepOptions, 'scenario'> {
  const scenario = resumeScenario(definition, row.parentScenario);
  return scenario === null ? ctx.macrostepOptions : { ...ctx.macrostepOptions, scenario };
}

/** A step of a parent computed from its last committed snapshot under its lock. */
export interface ParentStep {
  /** The newest definition of the parent's machine (the registry's). */
  definition: MachineDefinition;
  parentId: string;
  /** Recorded in the lock row. */
  context: string;
  /**
   * The step, or `null` when there is nothing left to do (the parent moved on). `definition`:
   * the one the parent runs on, its own version's when it is pinned (docs/versioning.md).
   */
  compute: (
    parent: MachineSnapshot,
    definition: MachineDefinition,
  ) => MacrostepResult | null | Promise<MacrostepResult | null>;
  /** Row changes committed with the step. */
  children?: ChildRowChange[];
}

/**
 * Computes and commits a macrostep of the parent under its lock (waiting up to the lock
 * timeout). `false` when the lock could not be had, or the parent is paused by an operator (it
 * takes no step until resumed, docs/operations.md "Pause and resume"); `true` otherwise, also
 * when nothing was left to do. On `false` the caller's job enqueues itself again for later, so a
 * child's outcome or a queued listener waits out the pause instead of being lost or applied.
 */
export async function applyToParent(ctx: EngineContext, step: ParentStep): Promise<boolean> {
  try {
    return await runLocked<boolean>(ctx, {
      id: step.parentId,
      lock: { waitMs: ctx.settings.lockTimeoutMs },
      context: step.context,
      machineId: step.definition.id,
      definition: step.definition,
      compute: async (parent) => {
        if (parent === null || parent.machineId !== step.definition.id) return { value: true };
        // Read with the lock: a pause committed before is seen, and nothing is written.
        if (parent.pausedAt !== undefined) return { value: false };
        const running = runningDefinition(step.definition, parent);
        const result = await completionStep(
          running,
          step.context,
          parent,
          () => step.compute(parent, running),
          ctx.settings.traceSteps,
        );
        if (result === null) return { value: true };
        return {
          value: true,
          commit: {
            main: { result, from: parent },
            ...(step.children === undefined ? {} : { children: step.children }),
            at: ctx.now(),
          },
        };
      },
    });
  } catch (error) {
    if (error instanceof MachineAlreadyRunningException) return false;
    throw error;
  }
}

/**
 * The definition instance `id` of `machineId` runs on (the registry's `forInstance`): read
 * from the store only when the machine keeps older versions loaded, so the common case costs
 * no read. `undefined` for a machine this runtime does not know.
 */
export async function instanceDefinition(
  ctx: EngineContext,
  machineId: string,
  id: string,
): Promise<MachineDefinition | undefined> {
  if (!ctx.registry.hasPinned(machineId)) return ctx.registry.resolve(machineId);
  return ctx.registry.forInstance(machineId, await ctx.store.load(id));
}
