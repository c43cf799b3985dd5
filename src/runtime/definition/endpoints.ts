/**
 * Definition-time normalization of `endpoints` and of delegating states' `forward` entries.
 * STUB: owned by the HTTP work (issue 4); defineMachine calls it.
 */
import type { MachineRoutesError } from '../errors.js';
import type {
  BehaviorConfig,
  EndpointConfig,
  EndpointDefinition,
  EventDefinition,
  ForwardConfig,
  ForwardDefinition,
} from './types.js';

/** A delegating state as defineMachine found it. */
export interface DelegatingStateInput {
  /** Full state id (`parent.processing`). */
  stateId: string;
  /** Dotted state path without the machine id (`processing`). */
  path: string;
  forward: ForwardConfig | undefined;
  /** The child machine's normalized events and definition id. */
  child: { id: string; events: ReadonlyMap<string, EventDefinition>; eventTypes: ReadonlySet<string> } | null;
}

export interface EndpointNormalizationInput {
  machineId: string;
  endpoints: readonly EndpointConfig[] | undefined;
  behavior: BehaviorConfig;
  /** User-sendable event types handled somewhere in the state tree (keys of `on`). */
  eventTypes: ReadonlySet<string>;
  /** Event definitions by type from `behavior.events`. */
  events: ReadonlyMap<string, EventDefinition>;
  delegatingStates: readonly DelegatingStateInput[];
}

export interface EndpointNormalizationResult {
  endpoints: EndpointDefinition[];
  forwards: ForwardDefinition[];
  issues: MachineRoutesError[];
}

export function normalizeEndpoints(_input: EndpointNormalizationInput): EndpointNormalizationResult {
  return { endpoints: [], forwards: [], issues: [] };
}
