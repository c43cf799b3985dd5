/**
 * `machine-routes instances migrate --machine <id> [--dry-run] [--batch <n>]`: the eager
 * migration (docs/versioning.md). Lists every instance whose version has a migration to the
 * config's definition and every one that cannot be migrated (a failing migration, an unknown
 * version), then, without `--dry-run`, migrates them in batches, each through the locked step.
 * Resumable: instances already at the version are skipped. Exit code 1 when any instance failed.
 */
import type { Command } from '../commander.js';
import { collectMachineDefinitions } from '../../generator/build-manifest.js';
import { checkProject } from '../../generator/generate.js';
import { isMachineRoutesError } from '../../generator/issues.js';
import type { EagerMigrationReport } from '../../runtime/engine/versioning/eager-migration.js';
import { printIssues, type CliIo } from '../io.js';
import { formatTable } from '../table.js';

interface MigrateOptions {
  machine: string;
  dryRun?: boolean;
  batch?: string;
  config?: string;
  database?: string;
  json?: boolean;
}

/** Adds `migrate` to the `instances` command (registered first by instances.ts). */
export function registerInstancesMigrate(
  program: Command,
  io: CliIo,
  exit: (code: number) => void,
): void {
  const instances =
    program.commands.find((command) => command.name() === 'instances') ??
    program.command('instances');
  instances
    .command('migrate')
    .description(
      "migrate every stored instance of a machine to the config's version (docs/versioning.md)",
    )
    .requiredOption('--machine <id>', 'the machine whose instances to migrate')
    .option('--dry-run', 'list what would change and what would fail; write nothing')
    .option('--batch <n>', 'instances per batch (default 100)')
    .option('-c, --config <path>', 'config file (default: machine-routes.config.ts)')
    .option(
      '-d, --database <url>',
      "store URL (default: the config's store, else MACHINE_DATABASE_URL, else the SQLite file)",
    )
    .option('--json', 'print the report as JSON')
    .action((options: MigrateOptions) => runMigrate(io, exit, options));
}

async function runMigrate(
  io: CliIo,
  exit: (code: number) => void,
  options: MigrateOptions,
): Promise<void> {
  const batch = options.batch === undefined ? 100 : Number(options.batch);
  if (!Number.isInteger(batch) || batch < 1) {
    io.stderr(`--batch must be a positive integer, got '${options.batch}'.`);
    return exit(1);
  }
  const report = await checkProject({ config: options.config, cwd: io.cwd });
  if (report.loaded === null || report.issues.length > 0) {
    printIssues(io, report.issues);
    return exit(1);
  }
  const loaded = report.loaded;
  const machines = [...collectMachineDefinitions(loaded.config.registrations).values()];
  const definition = machines.find((machine) => machine.id === options.machine);
  if (definition === undefined) {
    io.stderr(
      `Machine '${options.machine}' is not in the config. Machines: ${machines.map((machine) => machine.id).join(', ')}.`,
    );
    return exit(1);
  }
  const databaseUrl = options.database ?? loaded.config.store;
  try {
    const host = await loaded.runtime.MachineRuntime.open({
      ...(databaseUrl === undefined ? {} : { databaseUrl }),
      worker: false,
      machines,
    });
    try {
      const result = await loaded.runtime.migrateInstances(host.context, definition, {
        dryRun: options.dryRun === true,
        batch,
        ...(options.json
          ? {}
          : {
              onBatch: (progress: EagerMigrationReport) =>
                io.stderr(
                  `${progress.scanned} read, ${progress.migrated.length} ${progress.dryRun ? 'to migrate' : 'migrated'}, ${progress.failed.length} failed`,
                ),
            }),
      });
      if (options.json) io.stdout(JSON.stringify(result, null, 2));
      else printReport(io, result);
      exit(result.failed.length > 0 ? 1 : 0);
    } finally {
      await host.close();
    }
  } catch (error) {
    if (!isMachineRoutesError(error)) throw error;
    io.stderr(`${error.name} [${error.code}] ${error.message}`);
    exit(1);
  }
}

function printReport(io: CliIo, report: EagerMigrationReport): void {
  const verb = report.dryRun ? 'would migrate' : 'migrated';
  io.stdout(
    `Machine '${report.machineId}' (version '${report.version}'): ${report.scanned} instances, ` +
      `${report.current} already at the version, ${report.pinned} pinned, ` +
      `${report.migrated.length} ${verb}, ${report.failed.length} failed.`,
  );
  if (report.migrated.length > 0) {
    io.stdout(`\n${report.dryRun ? 'Would migrate' : 'Migrated'}:`);
    io.stdout(
      formatTable(
        ['ID', 'FROM', 'STATES BEFORE', 'STATES AFTER'],
        report.migrated.map((row) => [
          row.id,
          row.from,
          row.before.join(', '),
          row.after.join(', '),
        ]),
      ),
    );
  }
  const children = report.migrated.flatMap((row) =>
    (row.children ?? []).map((child) => [
      row.id,
      child.id,
      child.childMachineId,
      child.from,
      child.change === 'moved' ? `moved to ${child.to ?? ''}` : 'cancelled',
    ]),
  );
  if (children.length > 0) {
    io.stdout(`\nChild rows of delegating states (docs/versioning.md "Delegating states"):`);
    io.stdout(formatTable(['ID', 'CHILD ROW', 'CHILD', 'STATE', 'CHANGE'], children));
  }
  if (report.failed.length > 0) {
    io.stdout(`\n${report.dryRun ? 'Would fail' : 'Failed'}:`);
    io.stdout(
      formatTable(
        ['ID', 'FROM', 'STATES', 'CODE', 'WHY'],
        report.failed.map((row) => [
          row.id,
          row.from,
          row.states.join(', '),
          row.code,
          row.message,
        ]),
      ),
    );
  }
}
