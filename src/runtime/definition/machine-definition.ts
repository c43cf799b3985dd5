/**
 * The normalized machine: what `defineMachine` returns and the interpreter reads.
 */
import type { ZodType } from 'zod';
import type { ResolvedBehavior } from './behavior-registry.js';
import type { MigrationDefinition } from './migrations.js';
import type { ScenarioDefinition } from './scenarios.js';
import type { StateNode } from './state-node.js';
import type { Context, MachineDefinitionBase } from './types.js';
import type { ComputedFunction } from './behavior-types.js';

/** History types of machine-level steps, prefixed with the machine id. */
export interface MachineRecordTypes {
  readonly start: string;
  readonly finish: string;
  readonly entryStart: string;
  readonly entryFinish: string;
  readonly exitStart: string;
  readonly exitFinish: string;
  readonly listenEntryStart: string;
  readonly listenEntryFinish: string;
  readonly listenExitStart: string;
  readonly listenExitFinish: string;
  readonly listenTransitionStart: string;
  readonly listenTransitionFinish: string;
}

/** `config.listen`, resolved. */
export interface ListenerDefinitions {
  readonly entry: readonly ResolvedBehavior[];
  readonly exit: readonly ResolvedBehavior[];
  readonly transition: readonly ResolvedBehavior[];
}

/**
 * A validated, normalized machine: the base fields every module reads plus the state-node tree
 * the interpreter walks. Produced by `defineMachine`.
 */
export interface MachineDefinition extends MachineDefinitionBase {
  readonly root: StateNode;
  /** Every state by full id (`order.submitted`). */
  readonly idMap: ReadonlyMap<string, StateNode>;
  readonly listeners: ListenerDefinitions;
  /** `behavior.computed`, in declaration order. */
  readonly computed: readonly (readonly [string, ComputedFunction])[];
  /** Scenarios by slug (`defineMachine({ scenarios })`). */
  readonly scenarios: ReadonlyMap<string, ScenarioDefinition>;
  readonly records: MachineRecordTypes;
  /**
   * The version every instance this definition writes records: `config.version`, else a
   * fingerprint of the states, transitions and context shape (definition/versions.ts).
   */
  readonly version: string;
  /** Migration steps by the version they start at (`defineMachine({ migrations })`). */
  readonly migrations: ReadonlyMap<string, MigrationDefinition>;
  /** `versioning: 'pin'`: older definitions of this machine kept loaded, by version. */
  readonly pinned: ReadonlyMap<string, MachineDefinition>;
  /** A fresh initial context (a copy of `config.context`, or the zod schema's defaults). */
  createContext(): Context;
  /** Root `input`: the typed input a parent must pass when it starts this machine (typed-contracts.ts). */
  readonly typedInput: ZodType | null;
  /** Root `failure`: the typed failure a parent's `@fail` carries when this machine fails as a child. */
  readonly typedFailure: ZodType | null;
  /**
   * True when `defineMachine` ran inside `collectDefinitionIssues` and found problems: the
   * definition is only good for reporting, never for running.
   */
  readonly invalid: boolean;
}
