/**
 * The `reads` registration option, normalized: every form (`true`, read name -> `null`, a URI
 * string, or options) becomes one {@link ReadSpec}, and every problem an issue of the original's
 * rules R1-R4 (reference notes §2.18) or of the option types. Pure; `planRegistration` turns the
 * specs into routes after create, endpoints and forwards.
 */
import type { BehaviorConfig } from '../definition/behavior-types.js';
import type { ReadOptions, RegistrationOptions, RouteOutput } from './types.js';
import { isValidEndpointUri } from '../definition/uri.js';

/** One read of a registration, every option resolved to its default. */
export interface ReadSpec {
  /** The key under `reads` (`status`); the route is named `<name>.read.<read>`. */
  name: string;
  /** Normalized URI: exactly one leading slash and none trailing (`/status`). */
  uri: string;
  output: RouteOutput;
  middleware: string[];
  status: number;
  availableEvents: boolean;
}

/** Options a read accepts (R2). */
export const READ_OPTION_KEYS: readonly (keyof ReadOptions)[] = [
  'uri',
  'output',
  'middleware',
  'status',
  'available_events',
];

/** Reports one problem: its message and the config key that locates it. */
export type ReadIssueSink = (message: string, key: string) => void;

/** The read `reads: true` stands for (the original's `['status' => null]`). */
const DEFAULT_READS = { status: null } as const;

/**
 * Normalizes `options.reads`. Reads with a problem are left out of the result (their issues
 * are reported), so a plan never carries a read that would not work.
 */
export function normalizeReads(
  reads: RegistrationOptions['reads'] | false | undefined,
  behavior: Pick<BehaviorConfig, 'outputs'>,
  fail: ReadIssueSink,
): ReadSpec[] {
  if (reads === undefined || reads === null || reads === false) return [];
  const entries = reads === true ? DEFAULT_READS : reads;
  if (typeof entries !== 'object' || Array.isArray(entries)) {
    fail(
      `'reads' must be true or a map of read name to null, a URI or options, e.g. { status: null, summary: '/summary' }.`,
      'reads',
    );
    return [];
  }
  const specs: ReadSpec[] = [];
  const byUri = new Map<string, string>();
  for (const [name, value] of Object.entries(entries as Record<string, unknown>)) {
    const spec = normalizeRead(name, value, behavior, fail);
    if (spec === null) continue;
    // R4: two reads at one URI.
    const other = byUri.get(spec.uri);
    if (other !== undefined) {
      fail(
        `duplicate read URI '${spec.uri}' within one registration (reads '${other}' and '${name}'). Give '${name}' another 'uri'.`,
        name,
      );
      continue;
    }
    byUri.set(spec.uri, name);
    specs.push(spec);
  }
  return specs;
}

function normalizeRead(
  name: string,
  value: unknown,
  behavior: Pick<BehaviorConfig, 'outputs'>,
  fail: ReadIssueSink,
): ReadSpec | null {
  const before = countingSink(fail);
  if (!/^[A-Za-z0-9_-]+$/.test(name)) {
    before.fail(
      `invalid read name '${name}': use letters, digits, '_' and '-' (it ends the route name '<name>.read.${name}').`,
      'reads',
    );
  }
  let options: Record<string, unknown>;
  if (value === null) options = {};
  else if (typeof value === 'string') options = { uri: value };
  else if (typeof value === 'object' && !Array.isArray(value)) {
    options = value as Record<string, unknown>;
  } else {
    before.fail(
      `read '${name}' must be null, a URI string or options { uri, output, middleware, status, available_events }.`,
      name,
    );
    return null;
  }

  // R1: reads send no event and run no action.
  for (const key of ['action', 'method']) {
    if (Object.hasOwn(options, key)) {
      before.fail(
        `read definition cannot contain '${key}' — reads are pure GET projections (no actions, GET-only). Remove '${key}' from read '${name}'.`,
        key,
      );
    }
  }
  // R2: unknown option keys.
  for (const key of Object.keys(options)) {
    if (key === 'action' || key === 'method') continue;
    if (!(READ_OPTION_KEYS as readonly string[]).includes(key)) {
      before.fail(
        `unknown read option '${key}' in read '${name}'. Recognized: ${READ_OPTION_KEYS.join(', ')}.`,
        key,
      );
    }
  }

  // R3: a URI of its own, with no parameters. Slashes at either end are dropped, as the
  // original's router does (`status/` is `/status`), so R4 and R15 compare what is routed.
  const rawUri = options['uri'] ?? `/${name}`;
  const uri = typeof rawUri === 'string' ? `/${rawUri.replace(/^\/+|\/+$/g, '')}` : null;
  if (uri === null || uri === '/' || /[{}]/.test(uri) || !isValidEndpointUri(uri)) {
    before.fail(
      `invalid read URI '${String(rawUri)}' in read '${name}' — must be non-empty, not just '/', and contain no route placeholders ({...}); use letters, digits, '-', '_', '.', '~' and '/'.`,
      name,
    );
  }

  const output = readOutput(name, options['output'], behavior, before.fail);
  const middleware = options['middleware'] ?? [];
  if (
    !Array.isArray(middleware) ||
    !middleware.every((entry) => typeof entry === 'string' && entry !== '')
  ) {
    before.fail(
      `'middleware' of read '${name}' must be a list of middleware names, e.g. ['auth:api'].`,
      name,
    );
  }
  const status = options['status'] ?? 200;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 299) {
    before.fail(
      `'status' of read '${name}' must be a 2xx status code, got ${String(status)}.`,
      name,
    );
  }
  const availableEvents = options['available_events'] ?? true;
  if (typeof availableEvents !== 'boolean') {
    before.fail(`'available_events' of read '${name}' must be true or false.`, name);
  }
  if (before.count > 0 || uri === null || output === null) return null;
  return {
    name,
    uri,
    output,
    middleware: [...(middleware as string[])],
    status: status as number,
    availableEvents: availableEvents as boolean,
  };
}

function readOutput(
  name: string,
  output: unknown,
  behavior: Pick<BehaviorConfig, 'outputs'>,
  fail: ReadIssueSink,
): RouteOutput | null {
  if (output === undefined || output === null) return { kind: 'default' };
  if (Array.isArray(output) && output.every((key) => typeof key === 'string')) {
    return { kind: 'keys', keys: [...(output as string[])] };
  }
  if (typeof output === 'string') {
    const outputs = (behavior.outputs ?? {}) as Record<string, unknown>;
    if (typeof outputs[output] === 'function') return { kind: 'behavior', name: output };
    fail(
      `read '${name}' references undefined output behavior '${output}'. List it in the behavior 'outputs' of the machine.`,
      name,
    );
    return null;
  }
  fail(
    `'output' of read '${name}' must be null, a list of context keys, or the name of an output behavior in 'behavior.outputs' (reads live in the registration, so a behavior is referenced by name).`,
    name,
  );
  return null;
}

/** Wraps a sink to know whether a read reported anything. */
function countingSink(fail: ReadIssueSink): { fail: ReadIssueSink; readonly count: number } {
  let count = 0;
  return {
    fail: (message, key) => {
      count += 1;
      fail(message, key);
    },
    get count() {
      return count;
    },
  };
}
