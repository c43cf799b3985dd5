/**
 * A forwarded event (spec "Forwarding"): the parent records the parent-facing event, the running
 * child of the delegating state receives the child type, and both commit in one transaction.
 * The parent's lock is held by the caller; the child's is taken without waiting.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { EventObject } from '../definition/types.js';
import {
  ForwardTargetUnavailableException,
  MachineAlreadyRunningException,
  NoTransitionDefinitionFoundException,
} from '../errors.js';
import {
  childAccepts,
  recordForwardedEvent,
  type ForwardTarget,
} from '../interpreter/forwarding.js';
import { transition } from '../interpreter/transition.js';
import type { ChildRow } from '../interpreter/child-rows.js';
import type { ActiveScenario, MacrostepResult, MachineSnapshot } from '../interpreter/types.js';
import { planKeptScenarioStep, scenarioWrite } from '../persistence/kept-scenarios.js';
import type { LockHandle } from '../persistence/locks.js';
import { toValidationException } from '../interpreter/validation-failure.js';
import { runningDefinition } from './versioning/instance-versions.js';
import type { EngineContext } from './context.js';
import { runLocked } from './locked-step.js';

/** What a forwarded send committed: both steps, so callers read neither instance again. */
export interface ForwardedStep {
  parent: MacrostepResult;
  child: MacrostepResult;
}

/** Arguments of `sendForwarded`. */
export interface ForwardedSend {
  definition: MachineDefinition;
  /** The parent's last committed snapshot (its lock is held by the caller). */
  parent: MachineSnapshot;
  event: EventObject;
  target: ForwardTarget;
  /** The caller's own lock on the parent, released by the commit (`null`: it stays held). */
  parentLock: LockHandle | null;
}

/**
 * Sends a forwarded event. Throws ForwardTargetUnavailableException (409) when no child runs or
 * it does not accept the event, MachineAlreadyRunningException with the parent's snapshot when
 * the child is busy, MachineValidationException (after committing) when a validation guard of
 * the child failed.
 */
export async function sendForwarded(
  ctx: EngineContext,
  send: ForwardedSend,
): Promise<ForwardedStep> {
  const { definition, parent, event, target, parentLock } = send;
  const where = `Machine '${definition.id}' (instance '${parent.id}'): '${event.type}' is forwarded to child machine '${target.childMachineId}' of state '${target.parentStateId}'`;
  const row = await runningChild(ctx, parent.id, target);
  if (row?.status !== 'running') {
    throw new ForwardTargetUnavailableException(
      row === undefined
        ? `${where}, but no child is running there.`
        : `${where}, but the child has not started within ${CHILD_START_WAIT_MS} ms (its start job is still queued). Retry shortly.`,
      { machine: definition.id, key: event.type },
    );
  }
  const childId = row.childRootEventId ?? row.id;
  let step: ForwardedStep;
  try {
    step = await runLocked(ctx, {
      id: childId,
      lock: 'try',
      context: 'forward',
      definition: target.child,
      compute: async (child) => {
        // A child pinned to an older version takes the event on that version (docs/versioning.md).
        const childDefinition =
          child === null ? target.child : runningDefinition(target.child, child);
        if (child === null || !childAccepts(childDefinition, child, target.childEventType)) {
          throw new ForwardTargetUnavailableException(
            `${where}, but the child${child ? ` (in '${child.value.join(', ')}')` : ''} does not accept '${target.childEventType}' now.`,
            { machine: definition.id, key: event.type },
          );
        }
        // The child's kept scenario (its continuation) applies to the forwarded event.
        const scenario = ctx.settings.scenariosEnabled
          ? await planKeptScenarioStep(ctx.store, childDefinition, child, target.childEventType, {
              kind: 'omitted',
            })
          : null;
        const childStep = childTransition(
          ctx,
          send,
          childDefinition,
          child,
          where,
          scenario?.step.active ?? null,
        );
        const parentStep = recordForwardedEvent(definition, parent, event, {
          now: () => ctx.now(),
        });
        return {
          value: { parent: parentStep, child: childStep },
          // The parent is the commit's main instance: the commit releases the parent's lock,
          // the child's goes back after the write.
          commit: {
            main: { result: parentStep, from: parent },
            others: [
              {
                result: childStep,
                from: child,
                ...(scenario === null ? {} : scenarioWrite(scenario.kept, scenario.step)),
              },
            ],
            at: ctx.now(),
          },
          ...(parentLock === null
            ? {}
            : {
                options: { releaseLockOwner: parentLock.ownerId },
                onWritten: () => parentLock.releasedByCommit(),
              }),
        };
      },
    });
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
  if (step.child.validationFailure !== null)
    throw toValidationException(step.child.validationFailure, target.childMachineId);
  return step;
}

/**
 * Longest wait of a forwarded event for a child whose start job has not run yet (`pending`).
 * An asynchronous child (`queue: true`) starts a few milliseconds after its parent's commit,
 * on whichever worker takes the job: a client that forwards right after `create` would
 * otherwise get a 409 it can do nothing about but retry.
 */
export const CHILD_START_WAIT_MS = 2000;

/** Pauses between two reads of a pending child's row: short, the start is usually near. */
const FIRST_POLL_MS = 2;
const LAST_POLL_MS = 50;

/**
 * The delegating state's running child, waiting up to {@link CHILD_START_WAIT_MS} while it is
 * still `pending`. The caller holds the parent's lock, which the start does not need (it
 * commits the child and its row only). `undefined` when no child is pending or running; the
 * pending row when the wait ran out. Polled, not woken by commit notices: the feed is the
 * runtime's, and this wait happens once in an instance's life, right after its state started
 * the child.
 */
async function runningChild(
  ctx: EngineContext,
  parentId: string,
  target: ForwardTarget,
): Promise<ChildRow | undefined> {
  const query = {
    parentRootEventId: parentId,
    parentStateId: target.parentStateId,
    childMachineId: target.childMachineId,
    statuses: ['pending', 'running'] as const,
  };
  const deadline = Date.now() + CHILD_START_WAIT_MS;
  for (let pause = FIRST_POLL_MS; ; pause = Math.min(pause * 2, LAST_POLL_MS)) {
    const rows = await ctx.store.findChildren(query);
    const row = rows.find((candidate) => candidate.status === 'running') ?? rows[0];
    const left = deadline - Date.now();
    if (row?.status !== 'pending' || left <= 0) return row;
    await sleep(Math.min(pause, left));
  }
}

function childTransition(
  ctx: EngineContext,
  send: ForwardedSend,
  childDefinition: MachineDefinition,
  child: MachineSnapshot,
  where: string,
  scenario: ActiveScenario | null,
): MacrostepResult {
  const { target, event, definition } = send;
  try {
    return transition(
      childDefinition,
      child,
      { ...event, type: target.childEventType },
      { ...ctx.macrostepOptions, scenario },
    );
  } catch (error) {
    if (error instanceof NoTransitionDefinitionFoundException) {
      throw new ForwardTargetUnavailableException(
        `${where}, but the child does not accept it: ${error.message}`,
        { machine: definition.id, key: event.type },
      );
    }
    throw error;
  }
}
