/**
 * `machine-routes worker`: runs the job queue of a store in a process of its own (child starts,
 * completions, `@timeout`, async sends) and the timer sweep of the config's `timers`, for
 * deployments whose servers open their runtime with `worker: false`. It loads the config so it
 * knows every machine a job may name.
 */
import type { Command } from '../commander.js';
import { checkProject } from '../../generator/generate.js';
import type { LoadedConfig } from '../../generator/load-config.js';
import type { MachineDefinition } from '../../runtime/definition/machine-definition.js';
import type { OpenRuntimeOptions } from '../../runtime/engine/options.js';
import { describeStoreUrl, type ResolvedStoreUrl } from '../../runtime/store-url.js';
import { printIssues, type CliIo } from '../io.js';
import { databaseOption, storeOfLoadedConfig } from '../store-option.js';

interface WorkerOptions {
  config?: string;
  database?: string;
  concurrency?: string;
}

/** Adds the command; `exit` receives its exit code (once the worker has stopped). */
export function registerWorker(program: Command, io: CliIo, exit: (code: number) => void): void {
  databaseOption(
    program
      .command('worker')
      .description(
        'run child, completion, timeout and send jobs and the timer sweep until SIGINT/SIGTERM',
      )
      .option('-c, --config <path>', 'config file (default: machine-routes.config.ts)'),
  )
    .option('--concurrency <n>', 'jobs run at the same time (default: MACHINE_JOB_CONCURRENCY, 4)')
    .action(async (options: WorkerOptions) => {
      const concurrency = parseConcurrency(options.concurrency);
      if (concurrency === null) {
        io.stderr(`--concurrency must be an integer >= 1, got '${options.concurrency}'.`);
        return exit(1);
      }
      // The same checks as `check`: a worker must not run machines the build would reject.
      const report = await checkProject({
        config: options.config,
        cwd: io.cwd,
        exampleRuns: false,
      });
      if (report.loaded === null || report.issues.length > 0) {
        printIssues(io, report.issues);
        return exit(1);
      }
      const store = storeOfLoadedConfig(options.database, report.loaded.config);
      exit(await runWorker(report.loaded, io, store, concurrency));
    });
}

/** Runs until SIGINT or SIGTERM; returns the exit code. */
async function runWorker(
  loaded: LoadedConfig,
  io: CliIo,
  store: ResolvedStoreUrl,
  concurrency: number | undefined,
): Promise<number> {
  // The config's own runtime instance: its machines were defined with it, and the store, queue
  // and runtime must agree with them (and with each other's classes). Every other setting
  // (MACHINE_LOCK_TTL, MACHINE_JOB_*, ...) comes from the environment, as in the server.
  const runtime = loaded.runtime;
  const options = workerRuntimeOptions(loaded.config, store.url, concurrency);
  const machines = options.machines;
  const settings = runtime.resolveSettings(options);
  // Registers the child, completion, timeout and send handlers on the store's queue, starts
  // it, the timer sweep of the config's `timers` and the expired-row sweep.
  const worker = await runtime.MachineRuntime.open(options);
  const stop = new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  io.stdout(
    `Worker running: ${machines.length} machine${machines.length === 1 ? '' : 's'}, jobs of ` +
      `${describeStoreUrl(store)}, concurrency ${settings.jobQueue.concurrency}. SIGINT or SIGTERM stops it.`,
  );
  try {
    await stop;
  } finally {
    await worker.close();
  }
  io.stdout('Worker stopped.');
  return 0;
}

/**
 * The options the worker opens its runtime with: the config's machines and timers, the store at
 * `databaseUrl` (resolved by `storeOfLoadedConfig`; without it, the runtime's
 * `MACHINE_DATABASE_URL` or default); every other setting from the environment, as in the server.
 */
export function workerRuntimeOptions(
  config: LoadedConfig['config'],
  databaseUrl: string | undefined,
  concurrency: number | undefined,
): OpenRuntimeOptions & { machines: MachineDefinition[] } {
  return {
    ...(databaseUrl === undefined ? {} : { databaseUrl }),
    machines: uniqueMachines(config),
    timers: config.timers ?? [],
    keepAlive: true,
    ...(concurrency === undefined ? {} : { jobQueue: { concurrency } }),
  };
}

/** The registrations' machines, one per id (children are found through them). */
function uniqueMachines(config: LoadedConfig['config']): MachineDefinition[] {
  const byId = new Map<string, MachineDefinition>();
  for (const registration of config.registrations)
    byId.set(registration.machine.id, registration.machine);
  return [...byId.values()];
}

function parseConcurrency(value: string | undefined): number | undefined | null {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  return Number.isInteger(parsed) && parsed >= 1 ? parsed : null;
}
