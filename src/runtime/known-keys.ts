/**
 * Every option key users write outside machine definitions, in one place: a registration, the
 * config (`defineConfig`) and its sections. Adding an option is one line here (the types of
 * `RegistrationOptions` and `MachineRoutesConfig` are checked against these lists, so a key
 * added to a type and not here does not compile). An unknown key is an error naming the
 * nearest known one: `machineIDFor` -> `machineIdFor`.
 */

export const KNOWN_KEYS = {
  /** `MachineRouter.register(machine, options)` and a config registration (plus `machine`). */
  registration: [
    'prefix',
    'name',
    'create',
    'machineIdFor',
    'model',
    'attribute',
    'modelFor',
    'only',
    'except',
    'middleware',
    'reads',
    'stream',
    'idempotency',
    'explainAvailableEvents',
    'contention',
    'flow',
    'createOrSend',
    'callbacks',
    'webhooks',
  ],
  /** `createOrSend` of a registration. */
  createOrSend: ['key', 'events'],
  /** An entry of `webhooks` of a registration. */
  webhook: [
    'secretEnv',
    'signature',
    'tolerance',
    'deliveryIdHeader',
    'instance',
    'event',
    'payload',
  ],
  /** `signature` of a webhook. */
  webhookSignature: ['header', 'scheme', 'encoding', 'prefix', 'timestampHeader'],
  /** `idempotency` of a registration, when an object. */
  idempotency: ['events', 'ttl'],
  /** An entry of `flow` of a registration. */
  flow: ['key', 'concurrency', 'rate', 'debounce', 'inState'],
  /** The `defineConfig({ ... })` object. */
  config: [
    'registrations',
    'middleware',
    'models',
    'setup',
    'store',
    'server',
    'output',
    'client',
    'openapi',
    'scenarios',
    'docs',
    'timers',
    'health',
    'admin',
  ],
  /** `output` of the config. */
  output: ['dir', 'framework', 'kinds'],
  /** `openapi` of the config. */
  openapi: ['title', 'version', 'description', 'bearerAuthDescription', 'servers', 'license'],
  /** `docs` of the config (the served API reference). */
  docs: ['enabled', 'prefix'],
  /** `health` of the config (liveness and readiness routes). */
  health: ['enabled', 'path', 'timeoutMs'],
  /** `admin` of the config (the admin route group and its console). */
  admin: ['prefix', 'middleware', 'cancelEvents'],
  /** `client` of the config. */
  client: ['baseUrl', 'tanstackQuery'],
  /** `server` of the config and of the generated `buildApp`. */
  server: ['bodyLimit', 'payloadLimit', 'headersTimeout', 'requestTimeout'],
  /** An entry of `timers` (the config's, or `MachineRuntime.open({ timers })`). */
  timers: ['machine', 'missed', 'schedules'],
  /** An entry of a timer registration's `schedules`. */
  schedule: ['name', 'cron', 'event', 'states', 'instances', 'resolver', 'timezone', 'missed'],
} as const satisfies Record<string, readonly string[]>;

/**
 * `true` when `Keys` lists exactly the keys of `T`: `true satisfies ExactKeys<T, Keys>` next to
 * a type keeps it and its list in step at compile time.
 */
export type ExactKeys<T, Keys extends readonly string[]> = [
  Exclude<keyof T, Keys[number]>,
  Exclude<Keys[number], keyof T>,
] extends [never, never]
  ? true
  : false;

/** A place that takes options: a key of {@link KNOWN_KEYS}. */
export type KeySection = keyof typeof KNOWN_KEYS;

/** An unknown key and the known key it most likely meant (null when none is close). */
export interface UnknownKey {
  key: string;
  suggestion: string | null;
}

/** The keys of `value` that `known` does not list, each with its nearest known key. */
export function findUnknownKeys(value: unknown, known: readonly string[]): UnknownKey[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [];
  return Object.keys(value)
    .filter((key) => !known.includes(key))
    .map((key) => ({ key, suggestion: nearestKey(key, known) }));
}

/**
 * The known key nearest to `key` by Levenshtein distance, compared case-insensitively (a
 * wrong case is the commonest slip), when it is close enough to be a typo: at most a third of
 * the longer word's letters differ (at least 1). Ties go to the first listed key.
 */
export function nearestKey(key: string, known: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const d = editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  if (best === null) return null;
  const allowed = Math.max(1, Math.floor(Math.max(key.length, best.length) / 3));
  return bestDistance <= allowed ? best : null;
}

/**
 * The Levenshtein distance of two strings (insertions, deletions and substitutions of UTF-16
 * code units), one row at a time. Keys are short and compared only while a message is written.
 */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1);
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution);
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** `unknown key 'x' (did you mean 'y'?)` phrases, for messages. */
export function describeUnknownKey({ key, suggestion }: UnknownKey): string {
  return suggestion === null
    ? `unknown key '${key}'`
    : `unknown key '${key}' (did you mean '${suggestion}'?)`;
}
