/**
 * `machine-routes migrate`: brings a store's tables to the latest version.
 */
import type { Command } from 'commander';
import type { CliIo } from '../io.js';

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
      io.stdout(`Migrated ${redact(options.database)}.`);
      exit(0);
    });
}

/** The URL without its password, fit for a terminal. */
function redact(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');
}
