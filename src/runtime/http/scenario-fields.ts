/**
 * The scenario fields of event routes when scenarios are enabled (docs/scenarios.md): reading
 * `scenario` / `scenarioParams` from a request, and the `availableScenarios` /
 * `activeScenario` response fields. Routes build nothing of this when scenarios are off.
 */
import { MachineValidationException } from '../errors.js';
import type { ScenarioRequest, ScenarioSummary } from '../interpreter/scenarios.js';
import type { MachineSnapshot, StoredScenario } from '../interpreter/types.js';
import type { EndpointRequest } from './types.js';

/** What the lifecycle needs to play and describe scenarios (the router fills it). */
export interface ScenarioServices<D> {
  /** Throws ScenarioNotFoundException (404) for a slug the machine does not define. */
  find(definition: D, slug: string): void;
  /** `availableScenarios` of a snapshot. */
  available(definition: D, snapshot: MachineSnapshot): Record<string, ScenarioSummary[]>;
  /** `activeScenario` of what an instance keeps, `null` when no continuation is active. */
  active(definition: D, kept: StoredScenario | null): ScenarioSummary | null;
  /** What an instance keeps now (read for contention answers). */
  kept(id: string): Promise<StoredScenario | null>;
}

/** The response fields, appended after `isProcessing`. */
export interface ScenarioFields {
  availableScenarios: Record<string, ScenarioSummary[]>;
  activeScenario?: ScenarioSummary;
}

const SCENARIO_KEYS = ['scenario', 'scenarioParams'] as const;

/**
 * The scenario fields of a request. Bodies: `scenario` (string or `null`) and
 * `scenarioParams` (object). GET: `?scenario=<slug>&scenarioParams[key]=value`, where an
 * empty `scenario=` stands for `null` (a query has no null).
 */
export function readScenarioRequest(request: EndpointRequest, read: boolean): ScenarioRequest {
  const source = read ? request.query : request.body;
  if (typeof source !== 'object' || source === null || !Object.hasOwn(source, 'scenario'))
    return { kind: 'omitted' };
  const { scenario, scenarioParams } = source as { scenario?: unknown; scenarioParams?: unknown };
  if (scenario === null || (read && scenario === '')) return { kind: 'deactivate' };
  if (typeof scenario !== 'string') {
    const message = 'The scenario must be a scenario slug (string) or null.';
    throw new MachineValidationException(message, { scenario: [message] });
  }
  return { kind: 'play', slug: scenario, params: scenarioParams };
}

/** A GET query without the scenario keys, so they do not reach the event's payload. */
export function withoutScenarioKeys(query: Record<string, unknown>): Record<string, unknown> {
  if (!SCENARIO_KEYS.some((key) => Object.hasOwn(query, key))) return query;
  const rest = { ...query };
  for (const key of SCENARIO_KEYS) delete rest[key];
  return rest;
}

/** `availableScenarios` and, when a continuation is active, `activeScenario`. */
export function scenarioFields<D>(
  services: ScenarioServices<D>,
  definition: D,
  snapshot: MachineSnapshot,
  kept: StoredScenario | null,
): ScenarioFields {
  const active = services.active(definition, kept);
  return {
    availableScenarios: services.available(definition, snapshot),
    ...(active === null ? {} : { activeScenario: active }),
  };
}
