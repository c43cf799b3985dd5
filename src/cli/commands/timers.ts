/**
 * `machine-routes timers`: the timer sweep of the config's `timers`, for hosts that schedule it
 * themselves (`--once`: one sweep, then exit, e.g. from cron or a Kubernetes CronJob) or run it
 * apart from the job worker (without `--once`: a sweep every `--interval` ms until SIGINT or
 * SIGTERM). `machine-routes worker` and the generated app's in-process worker run it too.
 */
import type { Command } from '../commander.js';
import { checkProject } from '../../generator/generate.js';
import type { LoadedConfig } from '../../generator/load-config.js';
import type { OpenRuntimeOptions } from '../../runtime/engine/options.js';
import type { SweepReport } from '../../runtime/engine/timers/timer-sweep.js';
import { describeStoreUrl } from '../../runtime/store-url.js';
import { printIssues, type CliIo } from '../io.js';
import { databaseOption, storeOfLoadedConfig } from '../store-option.js';

interface TimersOptions {
  config?: string;
  database?: string;
  once?: boolean;
  interval?: string;
}

/** Adds the command; `exit` receives its exit code. */
export function registerTimers(program: Command, io: CliIo, exit: (code: number) => void): void {
  databaseOption(
    program
      .command('timers')
      .description('fire due timers (after/every) of the machines registered under `timers`')
      .option('-c, --config <path>', 'config file (default: machine-routes.config.ts)'),
  )
    .option('--once', 'run one sweep and exit (exit code 1 when a delivery failed)')
    .option('--interval <ms>', 'pause between sweeps without --once (default 500)')
    .action(async (options: TimersOptions) => {
      const interval = options.interval === undefined ? 500 : Number(options.interval);
      if (!Number.isInteger(interval) || interval < 1) {
        io.stderr(`--interval must be an integer >= 1 (ms), got '${options.interval}'.`);
        return exit(1);
      }
      const report = await checkProject({ config: options.config, cwd: io.cwd });
      if (report.loaded === null || report.issues.length > 0) {
        printIssues(io, report.issues);
        return exit(1);
      }
      exit(await runTimers(report.loaded, io, options, interval));
    });
}

async function runTimers(
  loaded: LoadedConfig,
  io: CliIo,
  options: TimersOptions,
  intervalMs: number,
): Promise<number> {
  const runtime = loaded.runtime;
  const registrations = loaded.config.timers ?? [];
  if (registrations.length === 0) {
    io.stdout("No machine is registered under 'timers' in the config: nothing to sweep.");
    return 0;
  }
  let failed = 0;
  // Failed deliveries: one line each (and, with --once, exit code 1).
  const logger = {
    error: (fields: Record<string, unknown>, message: string) => {
      failed += 1;
      const error = fields['err'];
      io.stderr(`${message}: ${error instanceof Error ? error.message : String(error)}`);
    },
  };
  const store = storeOfLoadedConfig(options.database, loaded.config);
  io.stdout(`Store: ${describeStoreUrl(store)}`);
  const host = await runtime.MachineRuntime.open({
    ...timersRuntimeOptions(loaded.config, { ...options, database: store.url }, intervalMs),
    logger,
  });
  try {
    if (options.once) {
      const report = await runtime.sweepTimers({
        context: host.context,
        registrations,
        clock: runtime.systemClock,
        onError: (error, where) =>
          logger.error({ err: error }, `timer of ${where.machine} ${where.id} failed`),
      });
      io.stdout(describe(report));
      return failed > 0 ? 1 : 0;
    }
    io.stdout(
      `Timer sweep running every ${intervalMs} ms for ${registrations.length} machine${registrations.length === 1 ? '' : 's'}. SIGINT or SIGTERM stops it.`,
    );
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    io.stdout('Timer sweep stopped.');
    return 0;
  } finally {
    await host.close();
  }
}

/**
 * The options the sweep opens its runtime with: the config's timers, the store at `database`
 * (resolved by `storeOfLoadedConfig`; without it, the runtime's `MACHINE_DATABASE_URL` or
 * default); every other setting from the environment, as in the server. The store's durable queue is not run here: jobs a fire causes (a child start,
 * ...) are written with its commit and run by a worker.
 */
export function timersRuntimeOptions(
  config: LoadedConfig['config'],
  options: { database?: string | undefined; once?: boolean | undefined },
  intervalMs: number,
): OpenRuntimeOptions {
  const databaseUrl = options.database;
  return {
    ...(databaseUrl === undefined ? {} : { databaseUrl }),
    worker: options.once === true ? false : 'timers',
    timers: config.timers ?? [],
    timerIntervalMs: intervalMs,
    keepAlive: true,
  };
}

/** One line about a sweep. */
function describe(report: SweepReport): string {
  return (
    `Timer sweep: ${report.delivered} fire${report.delivered === 1 ? '' : 's'} delivered, ` +
    `${report.locked} instance${report.locked === 1 ? '' : 's'} locked (retried next sweep), ` +
    `${report.conflicts} delivered elsewhere first, ${report.failed} failed; ` +
    `${report.candidates} candidate${report.candidates === 1 ? '' : 's'} read in ${report.queries} quer${report.queries === 1 ? 'y' : 'ies'}.`
  );
}
