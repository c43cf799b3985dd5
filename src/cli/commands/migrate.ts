/**
 * `machine-routes migrate`: brings a store's tables to the latest version.
 */
import type { Command } from 'commander';
import type { CliIo } from '../io.js';
import { redactStoreUrl } from '../../runtime/store-url.js';

/** Adds the command; `exit` receives its exit code. */
export function registerMigrate(program: Command, io: CliIo, exit: (code: number) => void): void {
  program
    .command('migrate')
    .description('create or upgrade the store tables')
    .requiredOption('-d, --database <url>', 'store URL: sqlite:<file> or postgres://...')
    .action(async (options: { database: string }) => {
      // Loaded here: the database drivers are needed by this command only.
      const { migrate } = await import('../../runtime/persistence/index.js');
      await migrate(options.database);
      io.stdout(`Migrated ${redactStoreUrl(options.database)}.`);
      exit(0);
    });
}
