/**
 * Store URLs, parsed without opening anything: the environment schema (environment.ts) checks
 * `MACHINE_DATABASE_URL` with this before any driver loads, and `openStore` picks the store by it.
 *
 * | URL | Store |
 * |---|---|
 * | `sqlite:./path.db`, `sqlite:/abs/path.db` | SQLite file; `?synchronous=normal|full` |
 * | `sqlite::memory:` | SQLite in memory |
 * | `memory:` | `MemoryStore` |
 * | `postgres://...`, `postgresql://...` | PostgreSQL; `?schema=name` selects the schema |
 */
import { InvalidStoreUrlException } from './errors.js';

/** A parsed store URL. */
export type StoreLocation =
  | { kind: 'memory' }
  | { kind: 'sqlite'; filename: string; synchronous: 'NORMAL' | 'FULL' }
  | { kind: 'postgres'; connectionString: string; schema: string | undefined };

/** What a store URL may look like, as error messages state it. */
export const ACCEPTED_STORE_URLS =
  "'sqlite:<file>', 'sqlite::memory:', 'memory:' or 'postgres://user@host:port/database'";

/** The store of a server or command that names none: the embedded SQLite file. */
export const DEFAULT_STORE_URL = 'sqlite:./data/machines.db';

/** Where a store URL was read, from the strongest to the weakest. */
export type StoreUrlSource = 'flag' | 'MACHINE_DATABASE_URL' | 'config' | 'default';

/** A store URL and where it was read. */
export interface ResolvedStoreUrl {
  url: string;
  /**
   * `flag` (the command's `--database`, or the `databaseUrl` option of an app), the
   * `MACHINE_DATABASE_URL` variable, `config` (its `store`) or `default`.
   */
  source: StoreUrlSource;
  /** How the flag is named in {@link describeStoreUrl}; default `--database`. */
  flagName?: string;
}

/** What the store URL is read from; every field optional. */
export interface StoreUrlSources {
  /** The command's `--database`, or an app's `databaseUrl` option. */
  flag?: string | undefined;
  /** How the flag is named in messages (default `--database`). */
  flagName?: string;
  /** Where `MACHINE_DATABASE_URL` is read; default `process.env`. */
  env?: Record<string, string | undefined>;
}

/**
 * The one order in which every command and the generated app read the store URL: an explicit
 * flag (`--database`, an app's `databaseUrl` option) over `MACHINE_DATABASE_URL` over the
 * config's `store` over {@link DEFAULT_STORE_URL}. The environment beats the config because the
 * config is committed and the environment is the deployment's: one built app is pointed at each
 * deployment's database without a rebuild. The URL is parsed: a bad one throws
 * `InvalidStoreUrlException` whichever place it came from.
 */
export function resolveStoreUrlSync(
  given: StoreUrlSources & { config?: string | undefined },
): ResolvedStoreUrl {
  const resolved: ResolvedStoreUrl =
    explicitStoreUrl(given) ??
    (given.config === undefined
      ? { url: DEFAULT_STORE_URL, source: 'default' }
      : { url: given.config, source: 'config' });
  parseStoreUrl(resolved.url);
  return resolved;
}

/**
 * {@link resolveStoreUrlSync} with a config read only when needed: `config` is called only when
 * neither the flag nor `MACHINE_DATABASE_URL` is set (reading it may load the config file).
 */
export async function resolveStoreUrl(
  given: StoreUrlSources & { config?: () => Promise<string | undefined> | string | undefined },
): Promise<ResolvedStoreUrl> {
  const config = explicitStoreUrl(given) === undefined ? await given.config?.() : undefined;
  return resolveStoreUrlSync({ ...given, config });
}

/** The flag, else a non-empty `MACHINE_DATABASE_URL`, else undefined (the config decides). */
function explicitStoreUrl(given: StoreUrlSources): ResolvedStoreUrl | undefined {
  if (given.flag !== undefined) {
    return {
      url: given.flag,
      source: 'flag',
      ...(given.flagName === undefined ? {} : { flagName: given.flagName }),
    };
  }
  const fromEnv = (given.env ?? process.env)['MACHINE_DATABASE_URL']?.trim();
  return fromEnv !== undefined && fromEnv !== ''
    ? { url: fromEnv, source: 'MACHINE_DATABASE_URL' }
    : undefined;
}

/** `<url, password hidden> (from <source>)`, as commands say which store they use. */
export function describeStoreUrl({ url, source, flagName }: ResolvedStoreUrl): string {
  const from =
    source === 'flag'
      ? (flagName ?? '--database')
      : source === 'config'
        ? "the config's store"
        : source === 'default'
          ? 'the default'
          : source;
  return `${redactStoreUrl(url)} (from ${from})`;
}

/** The URL without its password, fit for messages and logs. */
export function redactStoreUrl(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');
}

/**
 * Parses a store URL. Throws `InvalidStoreUrlException` (`MR_INVALID_STORE_URL`) naming the URL
 * (password hidden) and the accepted forms.
 */
export function parseStoreUrl(url: string): StoreLocation {
  const fail = (why: string): never => {
    throw new InvalidStoreUrlException(`Invalid store URL '${redactStoreUrl(url)}': ${why}.`, {
      key: redactStoreUrl(url),
      accepted: ACCEPTED_STORE_URLS,
    });
  };
  if (url === 'memory:') return { kind: 'memory' };
  if (url.startsWith('sqlite:')) {
    const [rest = '', query = ''] = url.slice('sqlite:'.length).split('?', 2);
    const params = new URLSearchParams(query);
    const synchronous = (params.get('synchronous') ?? 'normal').toUpperCase();
    if (synchronous !== 'NORMAL' && synchronous !== 'FULL') {
      return fail("synchronous must be 'normal' or 'full'");
    }
    // `sqlite://path` is accepted as a courtesy and means the same as `sqlite:path`.
    const filename = rest.startsWith('//') ? rest.slice(2) : rest;
    if (filename === '') return fail("no file name after 'sqlite:'");
    return { kind: 'sqlite', filename, synchronous: synchronous as 'NORMAL' | 'FULL' };
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return fail('not a valid PostgreSQL connection URL');
    }
    const schema = parsed.searchParams.get('schema') ?? undefined;
    parsed.searchParams.delete('schema');
    return { kind: 'postgres', connectionString: parsed.toString(), schema };
  }
  return fail(`expected ${ACCEPTED_STORE_URLS}`);
}
