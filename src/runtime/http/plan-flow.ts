/**
 * Plans the `flow` registration option (docs/http.md "Flow control"): each entry checked and
 * attached to its event's route as `flow`, with 429 among the route's error statuses. Pure;
 * every problem is an `InvalidFlowControlException` (MR_INVALID_FLOW_CONTROL) naming the
 * machine, the registration, the event and what to change.
 */
import { InvalidFlowControlException, type MachineRoutesError } from '../errors.js';
import { describeUnknownKey, findUnknownKeys, KNOWN_KEYS } from '../known-keys.js';
import type { PlannedRoute } from './types.js';
import type { FlowKeySource, RouteFlow } from './flow-types.js';

/** Bounds of the limits, so that a typo (an interval in seconds, a window of hours) is refused. */
export const FLOW_BOUNDS = {
  concurrency: 10_000,
  rateLimit: 1_000_000,
  /** One day, in ms. */
  rateInterval: 86_400_000,
  /** One minute, in ms: a debounced request is held that long before it is answered. */
  debounceWindow: 60_000,
  /** One day, in ms: how long a burst that never pauses may go unsent. */
  debounceMaxWait: 86_400_000,
} as const;

const KEY_SOURCES = ['header', 'payload', 'context'] as const;

/**
 * The `flow` entry of the registration's create route (`POST {prefix}/create`), which has no
 * event type of its own (its events are counted as `@create` too, traced-route.ts).
 */
export const CREATE_FLOW = '@create';

/**
 * A create route takes no payload and has no instance yet, and a create has no later request
 * to be superseded by: its flow counts per header (or the whole route), by concurrency and rate.
 */
function createLimits(planned: RouteFlow, fail: (message: string) => void): boolean {
  const problems: string[] = [];
  if (planned.key !== null && !('header' in planned.key))
    problems.push(
      `has a ${'payload' in planned.key ? 'payload' : 'context'} key, but a create route reads no payload and has no instance yet: use { header: 'x-tenant-id' } or no key`,
    );
  if (planned.debounce !== undefined)
    problems.push(
      `has debounce, which a create route cannot have (each create is its own instance): use rate`,
    );
  if (planned.inState !== undefined)
    problems.push(
      `has inState, which a create route cannot have: declare it on the event that moves instances into the state`,
    );
  for (const problem of problems) fail(`${problem}.`);
  return problems.length === 0;
}

/**
 * Checks `flow` against the registration's planned routes and sets `flow` (and the 429 status)
 * on the routes it names. `issues` receives every problem.
 */
export function planFlow(
  flow: unknown,
  routes: PlannedRoute[],
  where: { machine: string; registration: string },
  issues: MachineRoutesError[],
  /** The machine's state config, to check `inState`'s state; absent, it is not checked. */
  states?: unknown,
): void {
  if (flow === undefined || flow === null) return;
  const fail = (message: string, event?: string): void => {
    issues.push(
      new InvalidFlowControlException(
        `MachineRouter: 'flow'${event === undefined ? '' : ` of \`${event}\``} ${message} (machine '${where.machine}', registration '${where.registration}')`,
        { ...where, key: 'flow', ...(event === undefined ? {} : { event }) },
      ),
    );
  };
  if (!isPlainObject(flow)) {
    fail(
      `must map event types to flow control, e.g. { PAY: { key: { header: 'x-tenant-id' }, rate: { limit: 100, interval: 1000 } } }.`,
    );
    return;
  }
  const eventRoutes = routes.filter(
    (route) => route.eventType !== null && route.endpointIndex !== null,
  );
  const createRoute = routes.find((route) => route.handler === 'create');
  for (const [event, entry] of Object.entries(flow)) {
    const route =
      event === CREATE_FLOW
        ? createRoute
        : eventRoutes.find((candidate) => candidate.eventType === event);
    if (route === undefined) {
      if (event === CREATE_FLOW) {
        fail(
          `names the create route, which this registration does not have: set create: true, or remove '${CREATE_FLOW}'.`,
          event,
        );
        continue;
      }
      const known = [
        ...eventRoutes.map((candidate) => candidate.eventType),
        ...(createRoute === undefined ? [] : [CREATE_FLOW]),
      ].join(', ');
      fail(`names no event route of this registration. Use one of: ${known || '(none)'}.`, event);
      continue;
    }
    const planned = planEntry(entry, route, states, (message) => fail(message, event));
    if (planned === null) continue;
    if (route.handler === 'create' && !createLimits(planned, (message) => fail(message, event)))
      continue;
    route.flow = planned;
    if (!route.errorStatuses.includes(429))
      route.errorStatuses = [...route.errorStatuses, 429].sort((a, b) => a - b);
  }
}

function planEntry(
  entry: unknown,
  route: PlannedRoute,
  states: unknown,
  fail: (message: string) => void,
): RouteFlow | null {
  if (!isPlainObject(entry)) {
    fail(`must be an object of key, concurrency, rate and debounce.`);
    return null;
  }
  let valid = true;
  const problem = (message: string): void => {
    valid = false;
    fail(message);
  };
  for (const unknown of findUnknownKeys(entry, KNOWN_KEYS.flow))
    problem(`has ${describeUnknownKey(unknown)}. Known keys: ${KNOWN_KEYS.flow.join(', ')}.`);
  const planned: RouteFlow = { key: null };
  if (entry['key'] !== undefined) {
    const key = planKey(entry['key'], route, problem);
    if (key !== null) planned.key = key;
  }
  const { concurrency, rate, debounce } = entry;
  if (concurrency !== undefined) {
    if (isIntegerIn(concurrency, 1, FLOW_BOUNDS.concurrency)) planned.concurrency = concurrency;
    else
      problem(
        `has concurrency ${describe(concurrency)}: use the number of requests of one key handled at once, an integer from 1 to ${FLOW_BOUNDS.concurrency}.`,
      );
  }
  if (rate !== undefined) {
    const limit = isPlainObject(rate) ? rate['limit'] : undefined;
    const interval = isPlainObject(rate) ? rate['interval'] : undefined;
    if (
      isPlainObject(rate) &&
      Object.keys(rate).every((key) => key === 'limit' || key === 'interval') &&
      isIntegerIn(limit, 1, FLOW_BOUNDS.rateLimit) &&
      isIntegerIn(interval, 1, FLOW_BOUNDS.rateInterval)
    )
      planned.rate = { limit, interval };
    else
      problem(
        `has rate ${describe(rate)}: use { limit, interval }, at most limit (1 to ${FLOW_BOUNDS.rateLimit}) requests of one key per interval ms (1 to ${FLOW_BOUNDS.rateInterval}), e.g. { limit: 100, interval: 1000 }.`,
      );
  }
  if (debounce !== undefined) {
    const window = isPlainObject(debounce) ? debounce['window'] : undefined;
    const maxWait = isPlainObject(debounce) ? debounce['maxWait'] : undefined;
    if (
      isPlainObject(debounce) &&
      Object.keys(debounce).every((key) => key === 'window' || key === 'maxWait') &&
      isIntegerIn(window, 1, FLOW_BOUNDS.debounceWindow) &&
      (maxWait === undefined || isIntegerIn(maxWait, window, FLOW_BOUNDS.debounceMaxWait))
    )
      planned.debounce = maxWait === undefined ? { window } : { window, maxWait };
    else
      problem(
        `has debounce ${describe(debounce)}: use { window, maxWait? }, the ms (1 to ${FLOW_BOUNDS.debounceWindow}) a request waits for a later one of its key and, optionally, the most ms (window to ${FLOW_BOUNDS.debounceMaxWait}) a burst that never pauses waits before its latest is sent, e.g. { window: 500, maxWait: 5000 }.`,
      );
  }
  const inState = entry['inState'];
  if (inState !== undefined) {
    const state = isPlainObject(inState) ? inState['state'] : undefined;
    const limit = isPlainObject(inState) ? inState['limit'] : undefined;
    if (
      !isPlainObject(inState) ||
      !Object.keys(inState).every((key) => key === 'state' || key === 'limit') ||
      typeof state !== 'string' ||
      !isIntegerIn(limit, 1, FLOW_BOUNDS.concurrency)
    )
      problem(
        `has inState ${describe(inState)}: use { state, limit }, at most limit (1 to ${FLOW_BOUNDS.concurrency}) instances in the state of that id, e.g. { state: 'processing', limit: 10 }.`,
      );
    else if (states !== undefined && !hasState(states, state))
      problem(
        `has inState of state '${state}', which machine '${route.machineId}' does not have: use a state id such as 'processing' or 'review.open'.`,
      );
    else planned.inState = { state, limit };
  }
  if (
    planned.concurrency === undefined &&
    planned.rate === undefined &&
    planned.debounce === undefined &&
    planned.inState === undefined &&
    valid
  )
    problem(`sets no limit: give concurrency, rate, debounce or inState.`);
  return valid ? planned : null;
}

function planKey(
  key: unknown,
  route: PlannedRoute,
  problem: (message: string) => void,
): FlowKeySource | null {
  const example = `{ header: 'x-tenant-id' }, { payload: 'tenantId' } or { context: 'tenantId' }`;
  const entries = isPlainObject(key) ? Object.entries(key) : [];
  const [source, name] = entries[0] ?? [];
  if (
    entries.length !== 1 ||
    !KEY_SOURCES.includes(source as (typeof KEY_SOURCES)[number]) ||
    typeof name !== 'string' ||
    name === ''
  ) {
    problem(`has key ${describe(key)}: use one source, ${example}.`);
    return null;
  }
  if (source === 'header') {
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(name)) {
      problem(`has key header '${name}', which is not a header name.`);
      return null;
    }
    // Adapters hand headers over lower-cased.
    return { header: name.toLowerCase() };
  }
  if (source === 'context') {
    if (route.binding.kind === 'key') {
      problem(
        `reads its key from the context, but route ${route.name} is create-or-send: its instance may not exist before the send. Use a header or payload key (e.g. { payload: '${route.binding.field}' }).`,
      );
      return null;
    }
    if (route.binding.kind === 'none') {
      problem(
        `reads its key from the context, but route ${route.name} sends to a new instance each time: use a header or payload key, or bind the event with machineIdFor or modelFor.`,
      );
      return null;
    }
    return { context: name };
  }
  return { payload: name };
}

/** Whether the `states` of a machine config hold the state of dotted id `id`. */
function hasState(states: unknown, id: string): boolean {
  let level = states;
  for (const segment of id.split('.')) {
    const found = isPlainObject(level) ? level[segment] : undefined;
    if (!isPlainObject(found)) return false;
    level = found['states'];
  }
  return true;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isIntegerIn(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
