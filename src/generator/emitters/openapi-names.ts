/**
 * Names and references of the OpenAPI document's components, and the route facts every part of
 * the document reads (split from openapi.ts): what `OrderResponse`, `OrderSubmitPayload` or
 * `OrderState` is called, so the document, the client and the bindings name them alike.
 */
import type { JsonSchema, ManifestRoute } from '../manifest.js';
import { pascalCase } from '../naming.js';

/** Statuses every route may answer with, besides its success status. */
/** The error statuses of the runtime itself; endpoint actions may declare others. */
export type SharedStatus = 400 | 401 | 404 | 409 | 413 | 415 | 422 | 500 | 503;

/** Names of the shared component schemas. */
export const ERROR_SCHEMA = 'ErrorResponse';
export const VALIDATION_ERROR_SCHEMA = 'ValidationErrorResponse';

/** Component name of a machine's state-id enum. */
export function stateSchemaName(machineId: string): string {
  return `${pascalCase(machineId)}State`;
}

/** Component name of a machine's default output. */
export function outputSchemaName(machineId: string): string {
  return `${pascalCase(machineId)}Output`;
}

/** The output schema of a route: the machine's shared component unless the route has its own. */
export function routeOutputSchema(route: ManifestRoute): JsonSchema {
  return route.output.kind === 'default' && route.childMachineId === null
    ? ref(outputSchemaName(route.machineId))
    : route.outputSchema;
}

/** Component name of a machine's scenario slugs (an enum of them). */
export function scenarioSlugSchemaName(machineId: string): string {
  return `${pascalCase(machineId)}ScenarioSlug`;
}

/** Component name of an entry of `availableScenarios` (and of `activeScenario`). */
export function scenarioSchemaName(machineId: string): string {
  return `${pascalCase(machineId)}Scenario`;
}

/** Component name of a machine's availableEvents entry. */
export function availableEventSchemaName(machineId: string): string {
  return `${pascalCase(machineId)}AvailableEvent`;
}

/**
 * Component name of a machine's explained availableEvents entry (`enabled`, `reason`), used by
 * the routes of registrations with `explainAvailableEvents`.
 */
export function explainedAvailableEventSchemaName(machineId: string): string {
  return `${pascalCase(machineId)}ExplainedAvailableEvent`;
}

/** Type-name stem of a route: `ticket_staff.assign` -> `TicketStaffAssign`. */
export function routeTypeName(route: ManifestRoute): string {
  return pascalCase(route.name);
}

/**
 * Component name of a route's success body (also its 423 body). Routes answering with the
 * machine's standard envelope share one (`OrderResponse`, `OrderExplainedResponse` with
 * explained availableEvents, and `OrderCreatedResponse` for create); a route with its own
 * output, forwarded child or no availableEvents has its own (`OrderCancelResponse`).
 */
export function responseSchemaName(route: ManifestRoute): string {
  const standard = route.output.kind === 'default' && route.childMachineId === null;
  if (standard && route.handler === 'create')
    return `${pascalCase(route.machineId)}CreatedResponse`;
  if (standard && route.availableEvents)
    return `${pascalCase(route.machineId)}${route.explainAvailableEvents ? 'Explained' : ''}Response`;
  return `${routeTypeName(route)}Response`;
}

/** Component name of a route's payload. */
export function payloadSchemaName(route: ManifestRoute): string {
  return `${routeTypeName(route)}Payload`;
}

/** A reference to a component schema. */
export function ref(name: string): JsonSchema {
  return { $ref: `#/components/schemas/${name}` };
}

export function objectSchema(
  properties: Record<string, JsonSchema>,
  required: string[],
): JsonSchema {
  return { type: 'object', properties, required, additionalProperties: false };
}

/** Whether the route reads its payload from the query string instead of a body. */
export function usesQuery(route: ManifestRoute): boolean {
  return route.payloadSource === 'query';
}
