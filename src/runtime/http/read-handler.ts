/**
 * The handler of a read route (`reads`): middleware, then the instance's last committed state in
 * the standard envelope. A read writes nothing (no history row, no lock row, no machine for a
 * model record that has none) and never takes or waits for the lock; `isProcessing` says whether
 * someone holds it right now.
 */
import { BehaviorRegistry } from '../definition/behavior-registry.js';
import { normalizeOutput } from '../definition/build-state-tree.js';
import { IssueCollector } from '../definition/issues.js';
import type { MachineDefinitionBase, OutputDefinition } from '../definition/types.js';
import { MachineNotFoundException } from '../errors.js';
import type { InstanceRead } from '../persistence/types.js';
import { runMiddleware, type ResolvedMiddleware } from './middleware-registry.js';
import type { HttpServices } from './http-services.js';
import { guarded, HttpError, machineEnvelope } from './responses.js';
import type { EndpointRequest, EndpointResponse, PlannedRoute, RouteHandler } from './types.js';

/** Builds the handler of one planned read route (`route.handler === 'read'`). */
export function createReadHandler<D extends MachineDefinitionBase>(
  definition: D,
  route: PlannedRoute,
  middleware: readonly ResolvedMiddleware[],
  services: HttpServices<D>,
): RouteHandler {
  const output = readOutput(definition, route);
  const binding = route.binding;
  const binder = binding.kind === 'model' ? services.models[binding.model] : undefined;
  if (binding.kind === 'model' && binder === undefined) {
    throw new Error(`Route ${route.name}: no model binder named '${binding.model}'.`);
  }

  /** The instance id the request names; `null` when there is none (answered 404). */
  const instanceId = async (request: EndpointRequest): Promise<string | null> => {
    const param = request.params[binding.kind === 'none' ? '' : binding.param] ?? '';
    if (binding.kind !== 'model') return param;
    const record = await binder!.find(param);
    if (record === null || record === undefined) {
      throw new HttpError(404, `${binding.model} not found.`);
    }
    // A record without a machine has nothing to read: creating one here would be a write.
    return binder!.readMachineId(record, binding.attribute) || null;
  };

  const respond = async (read: InstanceRead): Promise<EndpointResponse> => {
    const { snapshot } = read;
    let available = route.availableEvents
      ? services.availableEvents(definition, snapshot)
      : undefined;
    if (available instanceof Promise) available = await available;
    return {
      status: route.status,
      body: machineEnvelope({
        id: snapshot.id,
        state: snapshot.value,
        availableEvents: available,
        output: services.resolveOutput(definition, snapshot, output),
        isProcessing: read.isProcessing,
      }),
    };
  };

  return guarded(route, services.logger, async (request) => {
    if (middleware.length > 0) {
      const shortCircuit = await runMiddleware(middleware, request);
      if (shortCircuit) return shortCircuit;
    }
    const id = await instanceId(request);
    if (id === null)
      throw new MachineNotFoundException(
        `The record of this read has no machine of '${definition.id}'.`,
        {
          machine: definition.id,
        },
      );
    return await respond(await services.instances.read(definition, id));
  });
}

/** The read's output as the interpreter runs it: a behavior is looked up in `behavior.outputs`. */
function readOutput(
  definition: MachineDefinitionBase,
  route: PlannedRoute,
): OutputDefinition | null {
  const output = route.output;
  if (output.kind === 'default') return null;
  if (output.kind === 'keys') return { kind: 'keys', keys: output.keys };
  const issues = new IssueCollector(definition.id, undefined);
  const registry = new BehaviorRegistry(definition.id, definition.behavior, issues);
  const resolved = normalizeOutput(output.name, registry, { path: '', key: 'output' });
  if (resolved === null) {
    throw new Error(
      `Route ${route.name}: output behavior '${output.name}' is not in the behavior 'outputs' of machine '${definition.id}': plan it from this definition with planRoutes().`,
    );
  }
  return resolved;
}
