/**
 * Two small steps of an event route's lifecycle kept apart from its handler (event-handler.ts):
 * the arguments an endpoint action's hooks receive, and what an Idempotency-Key claim keeps
 * once the send went through.
 */
import type { EventObject, MachineDefinitionBase } from '../definition/types.js';
import type { EndpointActionArgs } from '../definition/endpoint-config.js';
import type { MachineSnapshot } from '../interpreter/types.js';
import type { IdempotentSend } from '../persistence/types.js';
import type { IdempotentRequest } from './idempotency.js';
import { HttpError } from './responses.js';
import type { RouteInstance } from './route-instance.js';
import type { EndpointRequest } from './types.js';

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
