/**
 * `send`: one event to a stored instance, through the locked step (engine/locked-step.ts).
 * Without waiting, a send whose event type was quick last time runs lock-free (the in-process
 * slot only, engine/lock-free-sends.ts); with `lockWaitMs` it waits for the lock; otherwise it
 * takes the lock row without waiting. A parent-facing event of a running child goes to the
 * child (engine/forwarded-send.ts). A machine with `should_persist: false` is computed from its
 * stored state and not written back.
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { EventObject } from '../definition/types.js';
import { PreconditionFailedException } from '../errors.js';
import { isInstanceId } from '../ids.js';
import { resolveForward } from '../interpreter/forwarding.js';
import { keptAfter, type ScenarioRequest } from '../interpreter/scenarios.js';
import type { MachineSnapshot } from '../interpreter/types.js';
import {
  planKeptScenarioStep,
  scenarioWrite,
  type KeptScenarioStep,
} from '../persistence/kept-scenarios.js';
import type { LockHandle } from '../persistence/locks.js';
import type { TimerFireClaim } from '../persistence/store.js';
import type { IdempotentSend, InstanceResult, SendOptions } from '../persistence/types.js';
import type { EngineContext } from './context.js';
import { sendForwarded } from './forwarded-send.js';
import { finish, outcomeOf } from './instance-result.js';
import { runLocked, type LockedStep, type LockMode } from './locked-step.js';
import { checked, notFound, refusePaused, restore } from './reads.js';
import { runningDefinition } from './versioning/instance-versions.js';
import { OMITTED, unkeptScenarioStep } from './stateless.js';

/** What a send carries into its step besides the event. */
interface SendExtras {
  scenarioRequest?: ScenarioRequest | undefined;
  timerFire?: TimerFireClaim | undefined;
  idempotency?: IdempotentSend | undefined;
  /** Told of an error the step's computation threw (a behavior), before it propagates. */
  onStepError?: ((error: unknown) => void) | undefined;
  /** `SendOptions.precondition`: checked on the snapshot read under the lock. */
  precondition?: ((snapshot: MachineSnapshot) => boolean) | undefined;
}

/**
 * Load, lock, run one macrostep, persist, release (see `MachineInstances.send`). Throws
 * `MachineAlreadyRunningException` with the last committed snapshot on contention.
 */
export function send(
  ctx: EngineContext,
  definition: MachineDefinition,
  id: string,
  event: EventObject,
  options: SendOptions = {},
): Promise<InstanceResult> {
  // Not async (its work is in runSend's frame): one promise fewer per event. Fails by rejecting.
  try {
    if (!isInstanceId(id)) throw notFound(definition, id);
    if (!definition.options.shouldPersist)
      return sendUnpersisted(ctx, definition, id, event, options);
    const waitMs = options.lockWaitMs ?? 0;
    const lock: LockMode =
      waitMs > 0 ? { waitMs } : lockFree(ctx, definition, event.type, options) ? 'slot' : 'try';
    return runSend(ctx, definition, id, event, lock, {
      scenarioRequest: options.scenario,
      idempotency: options.idempotency,
      precondition: options.precondition,
    });
  } catch (error) {
    return Promise.reject(error as Error);
  }
}

/**
 * A send under a lock the caller holds (`withLock`, a timer delivery): the lock stays held.
 * `timerFire`: the timer fire this event delivers, claimed in the same transaction;
 * `onStepError`: told when computing the step threw (a behavior, not the store), so a timer
 * delivery can count its failed attempts.
 */
export function sendHeld(
  ctx: EngineContext,
  definition: MachineDefinition,
  id: string,
  event: EventObject,
  lock: LockHandle,
  extras: Pick<SendExtras, 'timerFire' | 'onStepError'> = {},
): Promise<InstanceResult> {
  return runSend(ctx, definition, id, event, { held: lock }, extras);
}

function runSend(
  ctx: EngineContext,
  definition: MachineDefinition,
  id: string,
  event: EventObject,
  lock: LockMode,
  extras: SendExtras,
): Promise<InstanceResult> {
  ctx.registry.register(definition);
  return runLocked(ctx, {
    id,
    lock,
    context: 'send',
    machineId: definition.id,
    definition,
    check: (snapshot) =>
      meetsPrecondition(definition, refusePaused(checked(definition, id, snapshot)), extras),
    // A pinned instance (docs/versioning.md) runs on its own version's definition.
    compute: (snapshot, own) =>
      sendStep(ctx, runningDefinition(definition, snapshot!), snapshot!, event, own, extras),
  }).then(answer);
}

/** The step's value: its result, or its validation failure thrown once the step is done. */
const answer = (value: () => InstanceResult): InstanceResult => value();

/**
 * The step of one event on the instance's last committed snapshot. Its value answers once the
 * step and its follow-ups are done (a failed validation guard throws only then). Computed in the
 * caller's turn unless the step reads first (a forwarded endpoint, a kept scenario) or builds an
 * Idempotency-Key response: no promise on the common path.
 */
function sendStep(
  ctx: EngineContext,
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  event: EventObject,
  lock: LockHandle | null,
  extras: SendExtras,
): SendStep | Promise<SendStep> {
  // A parent-facing event of a running child (forwarded endpoint): recorded on the parent,
  // sent to the child, one transaction.
  const forward =
    definition.forwards.length > 0 ? resolveForward(definition, snapshot, event.type) : null;
  if (forward !== null)
    return sendForwarded(ctx, {
      definition,
      parent: snapshot,
      event,
      target: forward,
      parentLock: lock,
    }).then((step) => ({
      value: () => ({ ...finish(step.parent), forwardedChild: step.child.snapshot }),
    }));
  // Scenario 404 / 422, then NoTransitionDefinitionFoundException: before anything is written.
  if (!ctx.settings.scenariosEnabled)
    return transitionStep(ctx, definition, snapshot, event, extras, null);
  return planKeptScenarioStep(
    ctx.store,
    definition,
    snapshot,
    event.type,
    extras.scenarioRequest ?? OMITTED,
  ).then((scenario) => transitionStep(ctx, definition, snapshot, event, extras, scenario));
}

type SendStep = LockedStep<() => InstanceResult>;

/** The transition of a send and what its commit writes; `scenario`: the kept scenario's step. */
function transitionStep(
  ctx: EngineContext,
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  event: EventObject,
  extras: SendExtras,
  scenario: KeptScenarioStep | null,
): SendStep | Promise<SendStep> {
  const started = performance.now();
  let result;
  try {
    result = ctx.interpreter.transition(definition, snapshot, event, {
      ...ctx.macrostepOptions,
      scenario: scenario?.step.active ?? null,
    });
  } catch (error) {
    extras.onStepError?.(error);
    throw error;
  }
  // Whether the next event of this type may skip the lock row (a slow one announces itself).
  ctx.speeds.record(definition, event.type, performance.now() - started);
  const keptNow = scenario === null ? undefined : keptAfter(scenario.kept, scenario.step);
  const { idempotency, timerFire } = extras;
  const step: SendStep = {
    value: () => finish(result, keptNow),
    commit: {
      main: {
        result,
        from: snapshot,
        // A rejected event (validation guard) keeps the scenario state as it was.
        ...(scenario === null || result.validationFailure !== null
          ? {}
          : scenarioWrite(scenario.kept, scenario.step)),
      },
      at: ctx.now(),
    },
    options: timerFire ? { timerFire } : {},
  };
  if (idempotency === undefined) return step;
  // The response a retry with the same Idempotency-Key replays, committed with the event.
  return idempotency.respond(outcomeOf(result, keptNow)).then((response) =>
    response === null
      ? step
      : {
          ...step,
          options: {
            ...step.options,
            idempotency: {
              scope: idempotency.scope,
              key: idempotency.key,
              ownerId: idempotency.ownerId,
              response,
            },
          },
          onWritten: () => (idempotency.stored = true),
        },
  );
}

/** The snapshot, when the send's precondition (HTTP If-Match) accepts it; else a 412 refusal. */
function meetsPrecondition(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  extras: Pick<SendExtras, 'precondition'>,
): MachineSnapshot {
  if (extras.precondition === undefined || extras.precondition(snapshot)) return snapshot;
  throw new PreconditionFailedException(
    `Instance '${snapshot.id}' of machine '${definition.id}' is at sequence ${snapshot.sequence}, not the version the request's precondition (If-Match) names: read it again and send with its current ETag.`,
    snapshot,
    { machine: definition.id },
  );
}

/**
 * Whether this send may skip the lock row: the store supports it, the transition of this
 * event type was quick last time, and nothing between load and commit needs more than the
 * store's commit (no scenario lookup, no Idempotency-Key response, no forwarded endpoint, no
 * waiting for a held lock).
 */
function lockFree(
  ctx: EngineContext,
  definition: MachineDefinition,
  eventType: string,
  options: SendOptions,
): boolean {
  return (
    ctx.store.lockFreeSends === true &&
    !ctx.settings.scenariosEnabled &&
    options.idempotency === undefined &&
    definition.forwards.length === 0 &&
    ctx.speeds.isQuick(definition, eventType)
  );
}

// `should_persist: false`: computed from the stored state, never written back.
async function sendUnpersisted(
  ctx: EngineContext,
  definition: MachineDefinition,
  id: string,
  event: EventObject,
  options: SendOptions,
): Promise<InstanceResult> {
  const snapshot = meetsPrecondition(definition, await restore(ctx, definition, id), options);
  const step = unkeptScenarioStep(ctx, definition, snapshot, event.type, options);
  return finish(
    ctx.interpreter.transition(definition, snapshot, event, {
      ...ctx.macrostepOptions,
      // Nothing is committed, so no region job could be written: regions run inline.
      parallelDispatch: null,
      scenario: step?.active ?? null,
    }),
    step === null ? undefined : null,
  );
}
