/**
 * Steps of an event route's lifecycle kept apart from its handler (event-handler.ts): the
 * arguments an endpoint action's hooks receive, the Idempotency-Key's part of the send, what
 * its claim keeps once the send went through, and the answer of a send that threw.
 */
import {
  MachineAlreadyRunningException,
  MachineValidationException,
  ScenarioFailedException,
  ScenarioNotFoundException,
} from '../errors.js';
import type { EventObject, MachineDefinitionBase } from '../definition/types.js';
import type { EndpointActionArgs } from '../definition/endpoint-config.js';
import type { MachineSnapshot } from '../interpreter/types.js';
import type { IdempotentSend } from '../persistence/types.js';
import type { EventRoute } from './event-route.js';
import { storedResponse, type IdempotentRequest } from './idempotency.js';
import { consoleLogger } from './http-logger.js';
import { HttpError } from './response-bodies.js';
import { errorToResponse } from './responses.js';
import type { RouteInstance } from './route-instance.js';
import type { EndpointRequest, EndpointResponse } from './types.js';

/** The arguments of an action hook: the state it sees is a copy (hooks must not change it). */
export function hookArgs(
  definition: MachineDefinitionBase,
  event: EventObject,
  request: EndpointRequest,
  snapshot: MachineSnapshot | null,
  id: string | null,
): EndpointActionArgs {
  return {
    machineId: definition.id,
    id,
    state: {
      value: snapshot ? [...snapshot.value] : [],
      context: snapshot ? { ...snapshot.context } : {},
    },
    event,
    headers: request.headers,
    abort(status: number, message?: string): never {
      throw new HttpError(status, message ?? '');
    },
  };
}

/** What an Idempotency-Key claim keeps once the send went through (see idempotency.ts). */
export function noteCommitted(
  idempotent: IdempotentRequest | null,
  instance: RouteInstance,
  idempotency: IdempotentSend | undefined,
): void {
  if (idempotent === null) return;
  idempotent.committed = instance.kind !== 'stateless';
  idempotent.stored = idempotency?.stored === true;
}

/**
 * 5. The Idempotency-Key's part of the send: its response goes into the event's commit when the
 * runtime can build it there, not after an after() hook (which runs after the commit and may
 * change it) nor on a forwarded route. A one-time use (`oneTimeUse`, a callback URL's) is never
 * replayed, so it is committed with the event even with an after() hook, storing the route's
 * status only; a validation guard's refusal leaves it out of the commit, pending, for its
 * handler to free: the third party may retry with another payload.
 */
export function idempotentSend<D extends MachineDefinitionBase>(
  r: EventRoute<D>,
  request: EndpointRequest,
  idempotent: IdempotentRequest | null,
  event: EventObject,
): IdempotentSend | undefined {
  const { route, services } = r;
  if (idempotent === null || r.target.forward !== null) return undefined;
  const oneTimeUse = idempotent.oneTimeUse === true;
  const after = r.target.action?.after !== undefined;
  if (after && !oneTimeUse) return undefined;
  return {
    scope: idempotent.scope,
    key: idempotent.key,
    ownerId: idempotent.ownerId,
    respond: async (outcome) => {
      if (outcome instanceof MachineValidationException)
        return oneTimeUse
          ? null
          : storedResponse(
              errorToResponse(outcome, services.logger ?? consoleLogger, route.name, request),
            );
      if (oneTimeUse && after) return { status: route.status, body: null };
      return storedResponse(
        r.versioned(
          await r.respond({
            snapshot: outcome.snapshot,
            status: route.status,
            isProcessing: false,
            event,
            kept: outcome.scenario ?? null,
            reached: outcome.forwardedChild,
          }),
          outcome.snapshot,
        ),
      );
    },
  };
}

/**
 * 6-7. A send that threw: contention answered with the committed state, validation guards and
 * scenario refusals re-thrown to be answered like request validation (without onException),
 * anything else offered to onException (a response is sent as it is, null/undefined re-throws).
 */
export async function sendFailed<D extends MachineDefinitionBase>(
  r: EventRoute<D>,
  error: unknown,
  request: EndpointRequest,
  sent: {
    instance: RouteInstance;
    pre: MachineSnapshot | null;
    preId: string | null;
    event: EventObject;
    idempotent: IdempotentRequest | null;
    idempotency: IdempotentSend | undefined;
  },
): Promise<EndpointResponse> {
  // A validation guard's refusal commits its history like a success: its answer is kept (not
  // a one-time use: a callback URL stays usable).
  if (error instanceof MachineValidationException && sent.idempotent?.oneTimeUse !== true)
    noteCommitted(sent.idempotent, sent.instance, sent.idempotency);
  if (error instanceof MachineAlreadyRunningException)
    return await r.contended(error, request, sent.instance, sent.pre, sent.event);
  if (
    error instanceof MachineValidationException ||
    error instanceof ScenarioFailedException ||
    error instanceof ScenarioNotFoundException
  )
    throw error;
  const onException = r.target.action?.onException;
  if (onException) {
    const handled = await onException(
      error,
      hookArgs(r.definition, sent.event, request, sent.pre, sent.preId),
    );
    if (handled) return handled;
  }
  throw error;
}
