/**
 * Where the instance of an event request comes from (spec "Request handling order" 2): none for
 * stateless routes, the id in the path, the machine stored on a model record, which gets one
 * on its first valid request, or (create-or-send) the business key in the payload.
 */
import type { EventObject, MachineDefinitionBase } from '../definition/types.js';
import type { FieldErrors } from '../errors.js';
import type { MachineSnapshot } from '../interpreter/types.js';
import type { InstanceResult, SendOptions } from '../persistence/types.js';
import type { HttpServices } from './http-services.js';
import { HttpError } from './response-bodies.js';
import type { EndpointRequest, PlannedRoute } from './types.js';

/** The instance of one request. */
export type RouteInstance =
  | { kind: 'stateless' }
  | { kind: 'persisted'; id: string; snapshot: MachineSnapshot }
  /** machineId-bound, not loaded yet: `send` loads it (see `deferredLoad` in event-handler.ts). */
  | { kind: 'deferred'; id: string }
  /** A model record without a machine yet: one is created once the request is valid. */
  | { kind: 'unbound'; record: unknown }
  /**
   * Create-or-send: the instance is the one bound to the payload's business key, found (or
   * created) by the send itself (`MachineInstances.createOrSend`) once the payload is valid.
   */
  | { kind: 'keyed'; field: string };

/** Loads and binds the instances of one route. */
export interface InstanceLoader {
  /** The request's instance; a record without a machine is `unbound` (nothing is written). */
  load(request: EndpointRequest): Promise<RouteInstance>;
  /**
   * No machine yet: create and persist one and store its id on the record (the original's lazy
   * MachineCast, which created an unpersisted machine; persisting keeps the id stable). Called
   * only once the request passed validation, so a refused request writes nothing.
   */
  bind(record: unknown): Promise<RouteInstance & { kind: 'persisted' }>;
  /**
   * The record's first event (`MachineInstances.createAndSend`): the machine is created with
   * the event applied and bound to the record in one commit, or not at all (a refused event
   * writes nothing). `null` when another request bound the record first: the caller sends to
   * that machine. Without `createAndSend` in the runtime: `bind`, then `send`.
   */
  sendFirst(
    record: unknown,
    event: EventObject,
    options: SendOptions | undefined,
  ): Promise<InstanceResult | null>;
}

/**
 * The loader of one route. The model binder is resolved here, once; a missing one is a
 * programming error (the router validated the models), thrown when the handler is built.
 */
export function createInstanceLoader<D extends MachineDefinitionBase>(
  definition: D,
  route: Pick<PlannedRoute, 'binding' | 'name'>,
  services: HttpServices<D>,
): InstanceLoader {
  const binding = route.binding;
  const binder = binding.kind === 'model' ? services.models[binding.model] : undefined;
  if (binding.kind === 'model' && binder === undefined) {
    throw new Error(`Route ${route.name}: no model binder named '${binding.model}'.`);
  }
  const persisted = async (id: string): Promise<RouteInstance & { kind: 'persisted' }> => ({
    kind: 'persisted',
    id,
    snapshot: await services.instances.restore(definition, id),
  });

  // The key each unbound record was found by: the business key its machine is listed under
  // (docs/operations.md), recorded once the machine exists.
  const recordKeys = new WeakMap<object, string>();
  const recordKey = async (record: unknown, id: string): Promise<void> => {
    const key = typeof record === 'object' && record !== null ? recordKeys.get(record) : undefined;
    if (key !== undefined) await services.instances.bindBusinessKey(id, key);
  };

  return {
    async load(request) {
      if (binding.kind === 'none') return { kind: 'stateless' };
      if (binding.kind === 'machineId') return persisted(request.params[binding.param] ?? '');
      if (binding.kind === 'key') return { kind: 'keyed', field: binding.field };
      const key = request.params[binding.param] ?? '';
      const record = await binder!.find(key);
      if (record === null || record === undefined)
        throw new HttpError(404, `${binding.model} not found.`);
      const stored = binder!.readMachineId(record, binding.attribute);
      if (stored) return persisted(stored);
      if (typeof record === 'object') recordKeys.set(record, key);
      return { kind: 'unbound', record };
    },
    async sendFirst(record, event, options) {
      const attribute = binding.kind === 'model' ? binding.attribute : '';
      const claim = binder!.claimMachineId?.bind(binder);
      const result = await services.instances.createAndSend(definition, event, {
        ...options,
        ...(claim === undefined ? {} : { bind: (id: string) => claim(record, attribute, id) }),
      });
      // A binder without an atomic claim writes the id after the commit (not atomic).
      if (result !== null && claim === undefined)
        await binder!.writeMachineId(record, attribute, result.snapshot.id);
      if (result !== null) await recordKey(record, result.snapshot.id);
      return result;
    },
    async bind(record) {
      const attribute = binding.kind === 'model' ? binding.attribute : '';
      const { snapshot } = await services.instances.create(definition);
      await binder!.writeMachineId(record, attribute, snapshot.id);
      await recordKey(record, snapshot.id);
      return { kind: 'persisted', id: snapshot.id, snapshot };
    },
  };
}

/**
 * The business key of a create-or-send request: the payload's `field` as text (a number is
 * its decimal form), or the 422 field errors of a payload that names no instance (an empty key;
 * the schema, checked at build time, already requires a string or number).
 */
export function keyOf(payload: unknown, field: string): string | FieldErrors {
  const value = (payload as Record<string, unknown> | null | undefined)?.[field];
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'bigint') return String(value);
  return {
    [`payload.${field}`]: [`The business key '${field}' must be a non-empty string or a number.`],
  };
}
