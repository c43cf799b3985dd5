/**
 * The operator's own steps (docs/operations.md "Repairing"): pause, resume, and the record of a
 * retry, a timer fired now or a lock released. Each is one step of the engine's locked step
 * (`runLocked`): it waits for a step in flight, then commits one history record on the last
 * committed snapshot, fenced on its sequence like any event, so the timeline stays gap-free and
 * shows who did what and when. The record is `internal` (not an event of the machine: the deploy
 * check and restore never read it as one) of type `@operator.<action>`, carries
 * `actor: operator:<who>`, the active states and the full context (the snapshot does not change).
 */
import { ulid } from '../../ids.js';
import { InvalidOperationQueryException } from '../../errors.js';
import type { MachineDefinition } from '../../definition/machine-definition.js';
import type { HistoryRecord, MachineSnapshot } from '../../interpreter/types.js';
import type { CommitOptions } from '../context.js';
import { runLocked, type LockedStep } from '../locked-step.js';
import type { MachineRuntime } from '../machine-runtime.js';
import { checked } from '../reads.js';
import { operatorActor, type OperatorOptions } from './repairs.js';

/** The operator actions a record names (`@operator.<action>`). */
export type OperatorAction = 'pause' | 'resume' | 'retry' | 'fire' | 'release';

/** One operator step. */
export interface OperatorStep {
  action: OperatorAction;
  /** What the record's payload says besides `who`. */
  payload?: Record<string, unknown>;
  /** Sets (`true`) or clears (`false`) the pause flag in the same commit. */
  pause?: boolean;
  /**
   * Checks the snapshot under the lock: throws to refuse (nothing written), returns `false` to
   * write nothing (already in the asked state).
   */
  check?(snapshot: MachineSnapshot): boolean | void;
}

/** What an operator step did. */
export interface OperatorStepResult {
  /** The snapshot after the step (the one before when nothing was written). */
  snapshot: MachineSnapshot;
  /** The record written, `null` when the step found nothing to do. */
  record: HistoryRecord | null;
}

/** Writes one operator step on instance `id` (see the module comment). */
export function operatorStep(
  runtime: MachineRuntime,
  definition: MachineDefinition,
  id: string,
  step: OperatorStep,
  options: OperatorOptions,
): Promise<OperatorStepResult> {
  const actor = operatorActor(options.who);
  const ctx = runtime.context;
  return runLocked<OperatorStepResult>(ctx, {
    id,
    lock: { waitMs: options.waitMs ?? 5000 },
    context: actor,
    machineId: definition.id,
    definition,
    check: (snapshot) => checked(definition, id, snapshot),
    compute: (loaded): LockedStep<OperatorStepResult> => {
      const snapshot = loaded!;
      if (step.check?.(snapshot) === false) return { value: { snapshot, record: null } };
      const at = ctx.now();
      const next: MachineSnapshot = { ...snapshot, sequence: snapshot.sequence + 1 };
      if (step.pause === true) next.pausedAt = at.toISOString();
      if (step.pause === false) delete next.pausedAt;
      const record: HistoryRecord = {
        id: ulid(at.getTime()),
        sequence: next.sequence,
        createdAt: at.toISOString(),
        machineId: definition.id,
        rootEventId: id,
        source: 'internal',
        type: `@operator.${step.action}`,
        payload: { who: options.who, ...step.payload },
        value: [...snapshot.value],
        context: snapshot.context,
        version: 1,
        actor,
      };
      const commitOptions: CommitOptions = {};
      if (step.pause !== undefined) {
        const hook = ctx.store.queries.pauseWrite(id, step.pause ? record.createdAt : null);
        if (hook !== null) commitOptions.inTransaction = hook;
      }
      return {
        value: { snapshot: next, record },
        commit: {
          main: {
            result: { snapshot: next, history: [record], validationFailure: null, effects: [] },
            from: snapshot,
          },
          at,
        },
        options: commitOptions,
      };
    },
  });
}

/** Refuses an operator action on a finished instance (nothing left to repair). */
export function refuseDone(action: OperatorAction, snapshot: MachineSnapshot): void {
  if (snapshot.status !== 'done') return;
  throw new InvalidOperationQueryException(
    `Machine '${snapshot.machineId}' instance '${snapshot.id}' is done (in a final state): there is nothing to ${action}.`,
    { machine: snapshot.machineId, key: snapshot.id },
  );
}
