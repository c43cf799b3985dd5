/**
 * The precomputed state-node tree the interpreter walks. Everything that does not depend on the
 * current configuration (ids, history names, inherited handlers, transition domains and entry
 * sets) is computed once at definition time so an event costs map lookups, not tree searches.
 */
import type { ResolvedBehavior } from './behavior-registry.js';
import type { InvocationDefinition } from './invocation.js';
import type { TimerDefinition } from './timers.js';
import type { StateConfig, StateOutputDefinition, StateType } from './types.js';

/** One guarded alternative of a transition. */
export interface TransitionBranch {
  /** `null` for a targetless transition. */
  readonly target: StateNode | null;
  readonly guards: readonly ResolvedBehavior[];
  readonly calculators: readonly ResolvedBehavior[];
  readonly actions: readonly ResolvedBehavior[];
  readonly description: string | undefined;
  readonly timer: TimerDefinition | null;
  /** Targeted only: the compound state whose active descendants the transition exits. */
  readonly domain: StateNode | null;
  /** Targeted only: the states entered, in document order (target, its ancestors below the domain, defaults). */
  readonly entrySet: readonly StateNode[];
  /** Branch with neither guards nor calculators: chosen without a context checkpoint. */
  readonly unconditional: boolean;
}

/** The transitions one state declares for one event type. */
export interface TransitionDefinition {
  readonly eventType: string;
  /** The state that declares it (the leaf, or an ancestor the event bubbled to). */
  readonly source: StateNode;
  readonly branches: readonly TransitionBranch[];
}

/** A transition as seen from an active leaf: its history names use the leaf's route. */
export interface Handler {
  readonly transition: TransitionDefinition;
  readonly startType: string;
  readonly finishType: string;
  readonly failType: string;
}

/** History record types of a state, prefixed with the machine id. */
export interface StateRecordTypes {
  readonly enter: string;
  readonly exit: string;
  readonly entryStart: string;
  readonly entryFinish: string;
  readonly exitStart: string;
  readonly exitFinish: string;
  /** Recorded before entering this state when it is a region of a parallel state. */
  readonly regionEnter: string;
  /** Recorded when this parallel state has all regions final. */
  readonly parallelDone: string;
}

/** A delegating state's raw keys, kept for the delegation work (not executed yet). */
export interface DelegationConfig {
  readonly machine: unknown;
  readonly input: unknown;
  readonly queue: boolean | string | undefined;
  readonly forward: StateConfig['forward'];
}

export interface StateNode {
  readonly key: string;
  /** Full id, prefixed with the machine id: `order.fulfillment.payment`. */
  readonly id: string;
  /** Path without the machine id (`fulfillment.payment`); `''` for the root. */
  readonly route: string;
  readonly type: StateType;
  readonly parent: StateNode | null;
  readonly children: readonly StateNode[];
  readonly childMap: ReadonlyMap<string, StateNode>;
  /** Compound states: the initial child. */
  readonly initial: StateNode | null;
  readonly depth: number;
  /** Document order (pre-order index); sorts leaves and entry/exit sets. */
  readonly order: number;
  /** Root first, this node last: `ancestors[d]` is the ancestor at depth `d`. */
  readonly ancestors: readonly StateNode[];
  /** Has an `@always` transition. */
  readonly transient: boolean;
  readonly entry: readonly ResolvedBehavior[];
  readonly exit: readonly ResolvedBehavior[];
  readonly output: StateOutputDefinition | null;
  /** Transitions this state declares, by event type (reserved types included). */
  readonly on: ReadonlyMap<string, TransitionDefinition>;
  /** Leaves only: own and inherited transitions by event type (the nearest declaration wins). */
  readonly handlers: ReadonlyMap<string, Handler>;
  /** Leaves only: user-sendable types handled here or by an ancestor, leaf first, de-duplicated. */
  readonly availableTypes: readonly string[];
  /** Compound and parallel states with `@done` / `onDone`: the completion transition. */
  readonly doneHandler: Handler | null;
  /** Leaves only: true when this leaf or an ancestor has an `@always` transition. */
  readonly hasAlways: boolean;
  /** The state's raw delegation keys (`machine`, `input`, `queue`, `forward`), as written. */
  readonly delegation: DelegationConfig | null;
  /** Delegating atomic states: the validated, normalized delegation the interpreter runs. */
  readonly invocation: InvocationDefinition | null;
  readonly records: StateRecordTypes;
  readonly config: StateConfig;
}

/** A writable node, used only while the tree is built. */
export type MutableStateNode = { -readonly [K in keyof StateNode]: StateNode[K] };

/** True when `node` is `ancestor` or below it. */
export function isDescendantOrSelf(node: StateNode, ancestor: StateNode): boolean {
  return node.depth >= ancestor.depth && node.ancestors[ancestor.depth] === ancestor;
}

/** True when `node` is strictly below `ancestor`. */
export function isProperDescendant(node: StateNode, ancestor: StateNode): boolean {
  return node.depth > ancestor.depth && node.ancestors[ancestor.depth] === ancestor;
}

/** Leaves (atomic and final states) are what a state value lists. */
export function isLeaf(node: StateNode): boolean {
  return node.type === 'atomic' || node.type === 'final';
}

/** Orders nodes by document order. */
export function byDocumentOrder(a: StateNode, b: StateNode): number {
  return a.order - b.order;
}
