/**
 * A forwarded event (spec "Forwarding"): the parent records the parent-facing event, the running
 * child of the delegating state receives the child type, and both commit in one transaction.
 * The parent's lock is held by the caller; the child's is taken without waiting.
 */
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
import type { ActiveScenario, MacrostepResult, MachineSnapshot } from '../interpreter/types.js';
import { planKeptScenarioStep, scenarioWrite } from '../persistence/kept-scenarios.js';
import { toValidationException } from '../interpreter/validation-failure.js';
import type { PreparedCommit } from './commit-step.js';
import type { EngineServices } from './engine-services.js';

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
  /** The caller's lock on the parent, released by the commit. */
  releaseLockOwner?: string | undefined;
}

/**
 * Sends a forwarded event. Throws ForwardTargetUnavailableException (409) when no child runs or
 * it does not accept the event, MachineAlreadyRunningException with the parent's snapshot when
 * the child is busy, MachineValidationException (after committing) when a validation guard of
 * the child failed.
 */
export async function sendForwarded(
  engine: EngineServices,
  send: ForwardedSend,
): Promise<ForwardedStep> {
  const { definition, parent, event, target } = send;
  const where = `Machine '${definition.id}' (instance '${parent.id}'): '${event.type}' is forwarded to child machine '${target.childMachineId}' of state '${target.parentStateId}'`;
  const [row] = await engine.store.findChildren({
    parentRootEventId: parent.id,
    parentStateId: target.parentStateId,
    childMachineId: target.childMachineId,
    statuses: ['running'],
  });
  if (row === undefined) {
    throw new ForwardTargetUnavailableException(
      `${where}, but no child is running there (it may still be starting). Retry shortly.`,
      { machine: definition.id, key: event.type },
    );
  }
  const childId = row.childRootEventId ?? row.id;
  let outcome: { step: ForwardedStep; written: PreparedCommit };
  try {
    outcome = await engine.withLock(
      childId,
      async () => {
        const child = await engine.store.load(childId);
        if (child === null || !childAccepts(target.child, child, target.childEventType)) {
          throw new ForwardTargetUnavailableException(
            `${where}, but the child${child ? ` (in '${child.value.join(', ')}')` : ''} does not accept '${target.childEventType}' now.`,
            { machine: definition.id, key: event.type },
          );
        }
        // The child's kept scenario (its continuation) applies to the forwarded event.
        const scenario = engine.scenariosEnabled
          ? await planKeptScenarioStep(engine.store, target.child, child, target.childEventType, {
              kind: 'omitted',
            })
          : null;
        const childStep = childTransition(
          engine,
          send,
          child,
          where,
          scenario?.step.active ?? null,
        );
        const parentStep = recordForwardedEvent(definition, parent, event, {
          now: () => engine.now(),
        });
        const written = await engine.write(
          {
            main: { result: parentStep, from: parent },
            others: [
              {
                result: childStep,
                from: child,
                ...(scenario === null ? {} : scenarioWrite(scenario.kept, scenario.step)),
              },
            ],
            at: engine.now(),
          },
          send.releaseLockOwner === undefined ? {} : { releaseLockOwner: send.releaseLockOwner },
        );
        return { step: { parent: parentStep, child: childStep }, written };
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
  await engine.finish(outcome.written);
  if (outcome.step.child.validationFailure !== null)
    throw toValidationException(outcome.step.child.validationFailure, target.childMachineId);
  return outcome.step;
}

function childTransition(
  engine: EngineServices,
  send: ForwardedSend,
  child: MachineSnapshot,
  where: string,
  scenario: ActiveScenario | null,
): MacrostepResult {
  const { target, event, definition } = send;
  try {
    return transition(
      target.child,
      child,
      { ...event, type: target.childEventType },
      { ...engine.macrostepOptions(), scenario },
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
