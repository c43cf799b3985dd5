/**
 * The `--database` option of every command that opens a store (`migrate`, `worker`, `timers`,
 * `instances`): one help text and one resolution, `resolveStoreUrlSync`/`resolveStoreUrl` (runtime/store-url.ts), which
 * the generated app uses too, so a store URL means the same wherever it is read.
 */
import type { Command } from './commander.js';
import {
  DEFAULT_STORE_URL,
  resolveStoreUrlSync,
  type ResolvedStoreUrl,
} from '../runtime/store-url.js';

/** The help of `--database`: the order of {@link resolveStoreUrl}. */
export const DATABASE_OPTION_HELP = `store URL (default: MACHINE_DATABASE_URL, else the config's store, else ${DEFAULT_STORE_URL})`;

/** Adds `-d, --database <url>` with {@link DATABASE_OPTION_HELP}. */
export function databaseOption(command: Command): Command {
  return command.option('-d, --database <url>', DATABASE_OPTION_HELP);
}

/** The store of a command whose config is loaded: `--database`, the variable, the config's. */
export function storeOfLoadedConfig(
  database: string | undefined,
  config: { store?: string | undefined },
): ResolvedStoreUrl {
  return resolveStoreUrlSync({ flag: database, config: config.store });
}
