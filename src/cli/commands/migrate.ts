/**
 * `machine-routes migrate`: brings a store's tables to the latest version; `--dry-run` lists what
 * it would apply, `migrate status` what the store has and lacks. The store URL is `--database`,
 * else `MACHINE_DATABASE_URL`, else the config's `store`, else the embedded SQLite file; every
 * run says which it used.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Command } from '../commander.js';
import { DEFAULT_CONFIG_FILE } from '../../generator/config.js';
import {
  describeStoreUrl,
  resolveStoreUrl,
  type ResolvedStoreUrl,
} from '../../runtime/store-url.js';
import type { CliIo } from '../io.js';
import { databaseOption } from '../store-option.js';

interface MigrateOptions {
  database?: string;
  config?: string;
  dryRun?: boolean;
}

/** Adds the command; `exit` receives its exit code. */
export function registerMigrate(program: Command, io: CliIo, exit: (code: number) => void): void {
  const migrate = program
    .command('migrate')
    .description('create or upgrade the store tables')
    .option('--dry-run', 'list the migrations that would run, and run none');
  storeOptions(migrate).action(async (options: MigrateOptions) => {
    const store = await storeUrlOf(options, io);
    // Loaded here: the database drivers are needed by this command only.
    const persistence = await import('../../runtime/persistence/index.js');
    if (options.dryRun === true) {
      const { pending } = await persistence.migrationStatus(store.url);
      io.stdout(
        pending.length === 0
          ? `${describeStoreUrl(store)} is up to date: nothing to migrate (dry run).`
          : [
              `Would apply ${pending.length} migration(s) to ${describeStoreUrl(store)} (dry run, nothing applied):`,
              ...pending.map((migration) => `  ${migration.version} ${migration.name}`),
            ].join('\n'),
      );
      return exit(0);
    }
    await persistence.migrate(store.url);
    io.stdout(`Migrated ${describeStoreUrl(store)}.`);
    exit(0);
  });
  storeOptions(
    migrate.command('status').description('list the migrations the store has and lacks'),
  ).action(async (_options: MigrateOptions, command: Command) => {
    // `migrate` has the same options: given after `status`, commander may read them as its own.
    const options = command.optsWithGlobals<MigrateOptions>();
    const store = await storeUrlOf(options, io);
    const { migrationStatus } = await import('../../runtime/persistence/index.js');
    const { applied, pending } = await migrationStatus(store.url);
    io.stdout(
      [
        `Store: ${describeStoreUrl(store)}`,
        `Applied: ${applied.length}`,
        ...applied.map(
          ({ version, name }) => `  ${version} ${name ?? '(unknown to this version)'}`,
        ),
        `Pending: ${pending.length}`,
        ...pending.map(({ version, name }) => `  ${version} ${name}`),
      ].join('\n'),
    );
    exit(0);
  });
}

/** `--database` and `--config`, on `migrate` and `migrate status` alike. */
function storeOptions(command: Command): Command {
  return databaseOption(command).option(
    '-c, --config <path>',
    `config file whose store to read (default: ${DEFAULT_CONFIG_FILE})`,
  );
}

/** The store URL of a run: the config is loaded only when neither flag nor variable names one. */
function storeUrlOf(options: MigrateOptions, io: CliIo): Promise<ResolvedStoreUrl> {
  return resolveStoreUrl({
    flag: options.database,
    config: async () => {
      const file = path.resolve(io.cwd, options.config ?? DEFAULT_CONFIG_FILE);
      // Without a config (none given, none in the directory), the default store.
      if (options.config === undefined && !existsSync(file)) return undefined;
      const { loadConfig } = await import('../../generator/load-config.js');
      return (await loadConfig({ config: options.config, cwd: io.cwd })).config.store;
    },
  });
}
