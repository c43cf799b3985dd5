/**
 * Scenarios: scripted behaviour of a machine for tests and demos (spec "Scenarios", 9.4.0 to
 * 9.7.0). A scenario names the state and event it applies to, and a plan of overrides (guards,
 * actions, outcomes of delegated children) the interpreter uses instead of the real behaviour
 * for that event; an optional continuation keeps overriding later events until it is cleared.
 *
 * `defineScenario` records its call site so `machine-routes check` can point at it;
 * `normalizeScenarios` (called by `defineMachine`) resolves and validates them against the
 * machine: unknown state, event, guard, action or delegating state are definition problems.
 */
import type { ZodType, output as ZodOutput } from 'zod';
import { InvalidScenarioDefinitionException, type SourceLocation } from '../errors.js';
import { isMachineDefinition } from './invocation.js';
import { callerLocation } from './source-location.js';
import type { StateNode } from './state-node.js';
import type { Context, EventReference } from './types.js';
import type { BehaviorArgs } from './behavior-types.js';
import { eventTypeOf, isEventReference } from './event-type.js';
import { isZodSchema } from './validate-config.js';

/** What a delegated child is forced to end with: `@done`, `@done.<final state>`, `@fail`, `@timeout`. */
export type ChildOutcomeLiteral = '@done' | `@done.${string}` | '@fail' | '@timeout';

/** The arguments of an override: a behavior's arguments plus the request's `scenarioParams`. */
export type ScenarioBehaviorArgs<TParams = Record<string, unknown>> = BehaviorArgs<Context> & {
  readonly scenarioParams: TParams;
};

/** How a delegated child behaves under a scenario. */
export type ChildOverrideConfig<TParams> =
  /** The child is not started; the state routes this outcome at once. */
  | ChildOutcomeLiteral
  /** Decides the outcome when the delegating state is entered. */
  | ((args: ScenarioBehaviorArgs<TParams>) => ChildOutcomeLiteral)
  /**
   * The child starts for real with one of its own scenarios active: persisted with it, that
   * scenario plays when the child reaches its source state and event (through a forwarded
   * endpoint, say), and its continuation overrides the child's later events (9.7.0).
   */
  | { scenario: string; params?: Record<string, unknown> };

/** Overrides of one plan. Keys are behavior names (inline keys or function names) and state paths. */
export interface ScenarioPlanConfig<TParams = Record<string, unknown>> {
  /** Guard name -> the result it returns instead (a value or a function). */
  guards?: Record<string, boolean | ((args: ScenarioBehaviorArgs<TParams>) => boolean)>;
  /** Action name -> what runs instead; `null` skips the action. */
  actions?: Record<string, ((args: ScenarioBehaviorArgs<TParams>) => void) | null>;
  /** Delegating state path (`payment`, `fulfillment.payment`) -> what its child does. */
  children?: Record<string, ChildOverrideConfig<TParams>>;
}

/** What `defineScenario` (or an entry of `defineMachine({ scenarios })`) accepts. */
export interface ScenarioConfig<TParams extends ZodType | undefined = undefined> {
  /** Identifies the scenario in requests (`scenario: 'card-declined'`): letters, digits, `-`, `_`. */
  slug: string;
  /** Shown in `availableScenarios` and `activeScenario`. */
  description: string;
  /** The state the machine must be in (path without the machine id, or the full id). */
  source: string;
  /** The event the scenario is sent with (type, event definition or event class). */
  event: EventReference;
  /** Overrides for the scenario's own event. */
  plan?: ScenarioPlanConfig<ScenarioParamsOf<TParams>>;
  /** Overrides of later events, kept on the instance until `scenario: null` (or another scenario). */
  continuation?: ScenarioPlanConfig<ScenarioParamsOf<TParams>>;
  /** Zod schema of `scenarioParams`; without it they must be absent or `{}`. */
  params?: TParams;
}

/** The params type a schema gives override functions. */
export type ScenarioParamsOf<TParams extends ZodType | undefined> = TParams extends ZodType
  ? ZodOutput<TParams>
  : Record<string, never>;

/** A child override, resolved. */
export type ChildOverride =
  | { readonly kind: 'outcome'; readonly resolve: (args: ScenarioBehaviorArgs) => string }
  | {
      readonly kind: 'scenario';
      readonly slug: string;
      readonly params: Readonly<Record<string, unknown>>;
    };

/** A plan, resolved: overrides by guard name, action name and delegating state id. */
export interface ScenarioPlan {
  readonly guards: ReadonlyMap<string, (args: ScenarioBehaviorArgs) => boolean>;
  /** `null`: the action is skipped. */
  readonly actions: ReadonlyMap<string, ((args: ScenarioBehaviorArgs) => void) | null>;
  /** By full state id (`checkout.payment`). */
  readonly children: ReadonlyMap<string, ChildOverride>;
}

/** A normalized scenario of one machine. */
export interface ScenarioDefinition {
  readonly kind: 'scenario';
  readonly slug: string;
  readonly description: string;
  /** Full state id (`order.submitted`). */
  readonly source: string;
  readonly event: string;
  readonly plan: ScenarioPlan;
  readonly continuation: ScenarioPlan | null;
  readonly params: ZodType | undefined;
  readonly location: SourceLocation | undefined;
}

/** What `defineScenario` returns: the config as written plus where it was written. */
export interface ScenarioInput<
  TParams extends ZodType | undefined = ZodType | undefined,
> extends ScenarioConfig<TParams> {
  readonly kind: 'scenarioInput';
  readonly location: SourceLocation | undefined;
}

/** An entry of `defineMachine({ scenarios })`. */
export type ScenarioEntry = ScenarioInput | ScenarioConfig<ZodType | undefined>;

/**
 * Declares a scenario with its override functions typed by its `params` schema. Pass it in
 * `defineMachine({ scenarios: [...] })`.
 *
 * @example
 * defineScenario({
 *   slug: 'card-declined', description: 'The card is refused', source: 'payment', event: 'PAY',
 *   params: z.object({ reason: z.string().default('insufficient funds') }),
 *   plan: { guards: { cardAccepted: false }, children: { charging: '@fail' } },
 * })
 */
export function defineScenario<TParams extends ZodType | undefined = undefined>(
  config: ScenarioConfig<TParams>,
): ScenarioInput<TParams> {
  return Object.freeze({ ...config, kind: 'scenarioInput', location: callerLocation() });
}

const SLUG = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;
const OUTCOME = /^@(done(\.[A-Za-z0-9_-]+)?|fail|timeout)$/;

/** What validating scenarios needs from the machine being defined. */
export interface ScenarioContext {
  machineId: string;
  /** Where `defineMachine` was called: the location of scenarios that carry none. */
  machineSource: SourceLocation | undefined;
  idMap: ReadonlyMap<string, StateNode>;
  eventTypes: ReadonlySet<string>;
  /** Names of every guard / action the machine can run (inline keys and resolved names). */
  guardNames: ReadonlySet<string>;
  actionNames: ReadonlySet<string>;
}

/**
 * Resolves and validates `scenarios`. Returns the scenarios by slug and the problems found
 * (each an InvalidScenarioDefinitionException naming the machine, the scenario and the key).
 */
export function normalizeScenarios(
  entries: unknown,
  context: ScenarioContext,
): { scenarios: Map<string, ScenarioDefinition>; issues: InvalidScenarioDefinitionException[] } {
  const scenarios = new Map<string, ScenarioDefinition>();
  const issues: InvalidScenarioDefinitionException[] = [];
  if (entries === undefined) return { scenarios, issues };
  const report = (
    location: SourceLocation | undefined,
    slug: string,
    key: string,
    problem: string,
  ): void => {
    issues.push(
      new InvalidScenarioDefinitionException(
        `Machine '${context.machineId}', scenario '${slug}': ${problem}`,
        {
          machine: context.machineId,
          path: `scenarios.${slug}`,
          key,
          ...(location === undefined ? {} : { location }),
        },
      ),
    );
  };
  if (!Array.isArray(entries)) {
    report(
      context.machineSource,
      '?',
      'scenarios',
      'scenarios must be a list of defineScenario(...) entries.',
    );
    return { scenarios, issues };
  }
  for (const entry of entries as unknown[]) {
    const input = (typeof entry === 'object' && entry !== null ? entry : {}) as Partial<
      ScenarioInput<ZodType | undefined>
    >;
    const location = input.location ?? context.machineSource;
    const slug = typeof input.slug === 'string' ? input.slug : '?';
    const problem = (key: string, text: string): void => report(location, slug, key, text);
    if (!SLUG.test(slug)) {
      problem(
        'slug',
        `the slug must be letters, digits, '-' or '_' (got ${JSON.stringify(input.slug)}).`,
      );
      continue;
    }
    if (scenarios.has(slug))
      problem('slug', `the slug is used by another scenario of this machine.`);
    if (typeof input.description !== 'string')
      problem(
        'description',
        'a description (string) is required: clients see it in availableScenarios.',
      );
    const source = resolveState(context, input.source);
    if (source === undefined)
      problem(
        String(input.source),
        `source state '${String(input.source)}' does not exist. Use a state path such as '${firstLeafRoute(context)}'.`,
      );
    let event: string | undefined;
    if (isEventReference(input.event)) {
      try {
        event = eventTypeOf(input.event);
      } catch {
        event = undefined;
      }
    }
    if (event === undefined || !context.eventTypes.has(event)) {
      problem(
        event ?? String(input.event),
        `event '${event ?? String(input.event)}' is not handled by any state of the machine.`,
      );
    } else if (source !== undefined && !handles(source, event)) {
      problem(
        event,
        `source state '${source.route}' (and its ancestors) does not handle event '${event}'.`,
      );
    }
    if (input.params !== undefined && !isZodSchema(input.params))
      problem('params', 'params must be a zod schema of scenarioParams.');
    const plan = normalizePlan(input.plan, 'plan', context, problem);
    const continuation =
      input.continuation === undefined
        ? null
        : normalizePlan(input.continuation, 'continuation', context, problem);
    if (source === undefined || event === undefined) continue;
    scenarios.set(
      slug,
      Object.freeze({
        kind: 'scenario',
        slug,
        description: typeof input.description === 'string' ? input.description : '',
        source: source.id,
        event,
        plan,
        continuation,
        params: isZodSchema(input.params) ? (input.params as ZodType) : undefined,
        location,
      }),
    );
  }
  return { scenarios, issues };
}

function normalizePlan(
  config: unknown,
  where: 'plan' | 'continuation',
  context: ScenarioContext,
  problem: (key: string, text: string) => void,
): ScenarioPlan {
  const plan = {
    guards: new Map<string, (args: ScenarioBehaviorArgs) => boolean>(),
    actions: new Map<string, ((args: ScenarioBehaviorArgs) => void) | null>(),
    children: new Map<string, ChildOverride>(),
  };
  if (config === undefined) return plan;
  const input = (typeof config === 'object' && config !== null ? config : {}) as ScenarioPlanConfig;
  for (const key of Object.keys(input)) {
    if (key !== 'guards' && key !== 'actions' && key !== 'children')
      problem(key, `${where} has an unknown key '${key}' (known: guards, actions, children).`);
  }
  for (const [name, value] of Object.entries(input.guards ?? {})) {
    if (!context.guardNames.has(name))
      problem(name, `${where}.guards overrides guard '${name}', which the machine does not have.`);
    else if (typeof value === 'boolean') plan.guards.set(name, () => value);
    else if (typeof value === 'function') plan.guards.set(name, value);
    else problem(name, `${where}.guards.${name} must be true, false or a function returning one.`);
  }
  for (const [name, value] of Object.entries(input.actions ?? {})) {
    if (!context.actionNames.has(name))
      problem(
        name,
        `${where}.actions overrides action '${name}', which the machine does not have.`,
      );
    else if (value === null || typeof value === 'function') plan.actions.set(name, value);
    else problem(name, `${where}.actions.${name} must be a function, or null to skip the action.`);
  }
  for (const [path, value] of Object.entries(input.children ?? {})) {
    const state = resolveState(context, path);
    if (state === undefined || state.invocation === null) {
      problem(
        path,
        `${where}.children names '${path}', which is not a delegating state (one with 'machine').`,
      );
      continue;
    }
    if (state.invocation.kind === 'job' && !isJobOutcome(value)) {
      // A job has no final states and no scenarios of its own: only its outcome can be forced.
      problem(
        path,
        `${where}.children names '${path}', a job actor: force its outcome with '@done', '@fail', '@timeout' or a function returning one.`,
      );
      continue;
    }
    const override = normalizeChildOverride(value, state, `${where}.children.${path}`, problem);
    if (override !== null) plan.children.set(state.id, override);
  }
  return Object.freeze(plan);
}

function normalizeChildOverride(
  value: unknown,
  state: StateNode,
  where: string,
  problem: (key: string, text: string) => void,
): ChildOverride | null {
  if (typeof value === 'string') {
    if (!OUTCOME.test(value)) {
      problem(
        value,
        `${where} must be '@done', '@done.<final state>', '@fail' or '@timeout' (got '${value}').`,
      );
      return null;
    }
    return { kind: 'outcome', resolve: () => value };
  }
  if (typeof value === 'function')
    return { kind: 'outcome', resolve: value as (args: ScenarioBehaviorArgs) => string };
  if (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { scenario?: unknown }).scenario === 'string'
  ) {
    const { scenario, params } = value as { scenario: string; params?: unknown };
    const child = state.invocation?.machine;
    if (isMachineDefinition(child) && !child.invalid && !child.scenarios.has(scenario)) {
      problem(
        scenario,
        `${where} starts child machine '${child.id}' with scenario '${scenario}', which it does not define.`,
      );
      return null;
    }
    const plain =
      typeof params === 'object' && params !== null ? (params as Record<string, unknown>) : {};
    return { kind: 'scenario', slug: scenario, params: Object.freeze({ ...plain }) };
  }
  problem(
    String(value),
    `${where} must be an outcome ('@done', '@fail', ...), a function returning one, or { scenario }.`,
  );
  return null;
}

/** What may force a job actor's outcome: a plain outcome literal, or a function deciding one. */
function isJobOutcome(value: unknown): boolean {
  return (
    typeof value === 'function' || value === '@done' || value === '@fail' || value === '@timeout'
  );
}

/** A state by path relative to the machine (`fulfillment.payment`) or full id. */
function resolveState(context: ScenarioContext, path: unknown): StateNode | undefined {
  if (typeof path !== 'string' || path === '') return undefined;
  return context.idMap.get(
    path.startsWith(`${context.machineId}.`) ? path : `${context.machineId}.${path}`,
  );
}

/** True when `state` or one of its descendants' leaves handles `event`. */
function handles(state: StateNode, event: string): boolean {
  for (let node: StateNode | null = state; node !== null; node = node.parent)
    if (node.on.has(event)) return true;
  // A compound source: one of its states may handle it.
  const stack = [...state.children];
  while (stack.length > 0) {
    const node = stack.pop() as StateNode;
    if (node.on.has(event)) return true;
    stack.push(...node.children);
  }
  return false;
}

function firstLeafRoute(context: ScenarioContext): string {
  for (const node of context.idMap.values())
    if (node.children.length === 0 && node.route !== '') return node.route;
  return 'idle';
}
