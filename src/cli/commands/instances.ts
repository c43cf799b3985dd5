/**
 * `machine-routes instances`: the operator's commands (docs/operations.md) on the store of the
 * config: `list` instances of a machine by state, key or time, `show` one instance (state,
 * context, lock, children, timers, failed jobs), `history` its timeline; `cancel`, `send`,
 * `release`, `pause`, `resume`, `retry` and `fire` repair one, recorded as the operator's
 * (`--who`). Human output is tables; `--json`
 * prints the `MachineOperations` result as it is.
 */
import { userInfo } from 'node:os';
import type { Command } from '../commander.js';
import type { MachineSnapshot } from '../../runtime/interpreter/types.js';
import { collectMachineDefinitions } from '../../generator/build-manifest.js';
import { checkProject } from '../../generator/generate.js';
import type { LoadedConfig } from '../../generator/load-config.js';
import type { MachineOperations } from '../../runtime/engine/operations/machine-operations.js';
import type { InstanceListOptions } from '../../runtime/engine/operations/instance-reads.js';
import { isMachineRoutesError } from '../../generator/issues.js';
import { describeStoreUrl } from '../../runtime/store-url.js';
import { printIssues, type CliIo } from '../io.js';
import { databaseOption, storeOfLoadedConfig } from '../store-option.js';
import { formatTable } from '../table.js';
import { printInstance, printPage } from './instances-output.js';

interface StoreOptions {
  config?: string;
  database?: string;
  json?: boolean;
}

interface ListOptions extends StoreOptions {
  state?: string;
  key?: string;
  status?: string;
  createdFrom?: string;
  createdBefore?: string;
  updatedFrom?: string;
  updatedBefore?: string;
  limit?: string;
  cursor?: string;
}

interface HistoryOptions extends StoreOptions {
  source?: string;
  order?: string;
  limit?: string;
  cursor?: string;
}

/** Adds the command and its subcommands; `exit` receives the exit code. */
export function registerInstances(program: Command, io: CliIo, exit: (code: number) => void): void {
  const instances = program
    .command('instances')
    .description('find and inspect machine instances in the store (docs/operations.md)');
  const storeOptions = (command: Command): Command =>
    databaseOption(
      command.option('-c, --config <path>', 'config file (default: machine-routes.config.ts)'),
    ).option('--json', 'print the result as JSON');

  storeOptions(
    instances
      .command('list <machine>')
      .description('instances of a machine: by state (longest stay first) or newest first')
      .option('--state <state>', 'a state or an ancestor state (full or relative id)')
      .option('--key <key>', 'the business key (model record key) it was bound to')
      .option('--status <status>', 'active or done')
      .option('--created-from <time>', 'created at or after (ISO-8601)')
      .option('--created-before <time>', 'created before (ISO-8601)')
      .option('--updated-from <time>', 'last commit at or after (ISO-8601)')
      .option('--updated-before <time>', 'last commit before (ISO-8601)')
      .option('--limit <n>', 'rows per page (1-500, default 50)')
      .option('--cursor <cursor>', "the previous page's next cursor"),
  ).action((machine: string, options: ListOptions) =>
    withOperations(io, exit, options, async (operations) => {
      const page = await operations.list(machine, listOptions(options));
      if (options.json) return io.stdout(JSON.stringify(page, null, 2));
      printPage(io, page, (items) =>
        formatTable(
          ['ID', 'STATE', 'SINCE', 'STATUS', 'KEY', 'CREATED', 'UPDATED'],
          items.map((item) => [
            item.id,
            item.state?.id ?? item.value.join(', '),
            item.state?.enteredAt ?? '',
            item.status,
            item.businessKey ?? '',
            item.createdAt,
            item.updatedAt,
          ]),
        ),
      );
    }),
  );

  storeOptions(
    instances
      .command('show <machine> <id>')
      .description('one instance: state, context, lock, children, timers, failed jobs'),
  ).action((machine: string, id: string, options: StoreOptions) =>
    withOperations(io, exit, options, async (operations) => {
      const record = await operations.show(machine, id);
      if (options.json) return io.stdout(JSON.stringify(record, null, 2));
      printInstance(io, record);
    }),
  );

  storeOptions(
    instances
      .command('history <machine> <id>')
      .description("one instance's history as a timeline")
      .option('--source <source>', 'external (events sent) or internal (steps)')
      .option('--order <order>', 'asc (from the first record, default) or desc')
      .option('--limit <n>', 'records per page (1-500, default 50)')
      .option('--cursor <cursor>', "the previous page's next cursor"),
  ).action((machine: string, id: string, options: HistoryOptions) =>
    withOperations(io, exit, options, async (operations) => {
      const page = await operations.history(machine, id, {
        ...(options.source === undefined
          ? {}
          : { source: oneOf(options.source, 'source', ['external', 'internal'] as const) }),
        ...(options.order === undefined
          ? {}
          : { order: oneOf(options.order, 'order', ['asc', 'desc'] as const) }),
        ...(options.limit === undefined ? {} : { limit: Number(options.limit) }),
        ...(options.cursor === undefined ? {} : { cursor: options.cursor }),
      });
      if (options.json) return io.stdout(JSON.stringify(page, null, 2));
      printPage(io, page, (items) =>
        formatTable(
          ['SEQ', 'TIME', 'SOURCE', 'TYPE', 'ACTOR', 'STATES'],
          items.map((record) => [
            String(record.sequence),
            record.createdAt,
            record.source,
            record.type,
            record.actor ?? '',
            record.value.join(', '),
          ]),
        ),
      );
    }),
  );

  const operatorOptions = (command: Command): Command =>
    storeOptions(command)
      .option('--who <name>', 'the operator, recorded in history (default: the login name)')
      .option('--wait <ms>', 'how long to wait for a step in flight (default 5000)');

  operatorOptions(
    instances
      .command('cancel <machine> <id>')
      .description('cancel an instance by sending the event that cancels it, as the operator')
      .requiredOption('--event <type>', 'the cancelling event (e.g. CANCEL)'),
  ).action((machine: string, id: string, options: OperatorCliOptions & { event: string }) =>
    withOperations(io, exit, options, async (operations) => {
      const result = await operations.cancel(machine, id, {
        ...operator(options),
        event: options.event,
      });
      printStep(io, options, result.snapshot);
    }),
  );

  operatorOptions(
    instances
      .command('send <machine> <id> <event>')
      .description('send any event of the machine (endpoint or not) as the operator')
      .option('--payload <json>', 'the event payload, a JSON object'),
  ).action(
    (
      machine: string,
      id: string,
      type: string,
      options: OperatorCliOptions & { payload?: string },
    ) =>
      withOperations(io, exit, options, async (operations) => {
        const payload = options.payload === undefined ? undefined : jsonObject(options.payload);
        const result = await operations.send(
          machine,
          id,
          { type, ...(payload === undefined ? {} : { payload }) },
          operator(options),
        );
        printStep(io, options, result.snapshot);
      }),
  );

  operatorOptions(
    instances
      .command('release <machine> <id>')
      .description('free the lock of an instance whose holder is dead or whose lock expired'),
  ).action((machine: string, id: string, options: OperatorCliOptions) =>
    withOperations(io, exit, options, async (operations) => {
      const result = await operations.releaseLock(machine, id, operator(options));
      if (options.json) return io.stdout(JSON.stringify(result, null, 2));
      io.stdout(
        result.released === null
          ? `Machine '${id}' holds no lock.`
          : `Released the lock of machine '${id}' held by ${result.released.ownerId} (${result.released.context ?? 'unknown'}) until ${result.released.expiresAt}.`,
      );
    }),
  );

  for (const action of ['pause', 'resume'] as const) {
    operatorOptions(
      instances
        .command(`${action} <machine> <id>`)
        .description(
          action === 'pause'
            ? 'pause an instance: it refuses events (409 MR_INSTANCE_PAUSED) and fires no timers'
            : 'resume a paused instance',
        ),
    ).action((machine: string, id: string, options: OperatorCliOptions) =>
      withOperations(io, exit, options, async (operations) => {
        const result = await operations[action](machine, id, operator(options));
        if (options.json) return io.stdout(JSON.stringify(result, null, 2));
        io.stdout(
          result.record === null
            ? `Machine '${id}' was already ${action === 'pause' ? 'paused' : 'running'}: nothing written.`
            : `Machine '${id}' ${action === 'pause' ? 'paused' : 'resumed'} (history record ${result.record.sequence}).`,
        );
      }),
    );
  }

  operatorOptions(
    instances
      .command('retry <machine> <id>')
      .description(
        "put an instance's failed jobs (child starts, completions, sends) back in the queue",
      )
      .option('--job <id>', 'only this failed job (default: every failed job of the instance)'),
  ).action((machine: string, id: string, options: OperatorCliOptions & { job?: string }) =>
    withOperations(io, exit, options, async (operations) => {
      const result = await operations.retry(machine, id, {
        ...operator(options),
        ...(options.job === undefined ? {} : { jobId: options.job }),
      });
      if (options.json) return io.stdout(JSON.stringify(result, null, 2));
      for (const job of result.jobs)
        io.stdout(`${job.retried ? 'Retried' : 'Not failed any more:'} ${job.name} ${job.id}`);
    }),
  );

  operatorOptions(
    instances
      .command('fire <machine> <id>')
      .description('fire a pending timer of an instance now, through the timer path')
      .option('--timer <key>', 'the timer key (instances show lists them; default: the only one)'),
  ).action((machine: string, id: string, options: OperatorCliOptions & { timer?: string }) =>
    withOperations(io, exit, options, async (operations) => {
      const result = await operations.fire(machine, id, {
        ...operator(options),
        ...(options.timer === undefined ? {} : { timer: options.timer }),
      });
      if (options.json) return io.stdout(JSON.stringify(result, null, 2));
      io.stdout(
        `Fired ${result.timer.key} (${result.timer.eventType}, due ${result.timer.dueAt}): ${result.delivered} fire(s) delivered.`,
      );
    }),
  );
}

interface OperatorCliOptions extends StoreOptions {
  who?: string;
  wait?: string;
}

function operator(options: OperatorCliOptions): { who: string; waitMs?: number } {
  return {
    who: options.who ?? userInfo().username,
    ...(options.wait === undefined ? {} : { waitMs: Number(options.wait) }),
  };
}

function printStep(io: CliIo, options: StoreOptions, snapshot: MachineSnapshot): void {
  if (options.json) return io.stdout(JSON.stringify(snapshot, null, 2));
  io.stdout(
    `Machine '${snapshot.id}' is now in ${snapshot.value.join(', ')} (${snapshot.status}).`,
  );
}

function jsonObject(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new UsageError(`--payload must be a JSON object, got '${text}'.`);
  return value as Record<string, unknown>;
}

function listOptions(options: ListOptions): InstanceListOptions {
  const list: InstanceListOptions = {};
  if (options.state !== undefined) list.state = options.state;
  if (options.key !== undefined) list.businessKey = options.key;
  if (options.status !== undefined)
    list.status = oneOf(options.status, 'status', ['active', 'done'] as const);
  if (options.createdFrom !== undefined) list.createdFrom = options.createdFrom;
  if (options.createdBefore !== undefined) list.createdBefore = options.createdBefore;
  if (options.updatedFrom !== undefined) list.updatedFrom = options.updatedFrom;
  if (options.updatedBefore !== undefined) list.updatedBefore = options.updatedBefore;
  if (options.limit !== undefined) list.limit = Number(options.limit);
  if (options.cursor !== undefined) list.cursor = options.cursor;
  return list;
}

class UsageError extends Error {}

function oneOf<T extends string>(value: string, option: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new UsageError(`--${option} must be one of ${allowed.join(', ')}, got '${value}'.`);
}

/**
 * Loads the config, opens its runtime on the store (no worker, no sweeps: this process only
 * reads and repairs), runs `run`, closes. A problem of the input is one line on stderr, exit 1.
 */
async function withOperations(
  io: CliIo,
  exit: (code: number) => void,
  options: StoreOptions,
  run: (operations: MachineOperations) => Promise<void>,
): Promise<void> {
  const report = await checkProject({ config: options.config, cwd: io.cwd, exampleRuns: false });
  if (report.loaded === null || report.issues.length > 0) {
    printIssues(io, report.issues);
    return exit(1);
  }
  const loaded: LoadedConfig = report.loaded;
  const runtime = loaded.runtime;
  const machines = [...collectMachineDefinitions(loaded.config.registrations).values()];
  try {
    const store = storeOfLoadedConfig(options.database, loaded.config);
    // On stderr: stdout is the result (a table, or JSON a script parses).
    io.stderr(`Store: ${describeStoreUrl(store)}`);
    const host = await runtime.MachineRuntime.open({
      databaseUrl: store.url,
      worker: false,
      machines,
    });
    try {
      const operations = new runtime.MachineOperations({
        runtime: host,
        machines,
        timers: loaded.config.timers ?? [],
      });
      await run(operations);
      exit(0);
    } finally {
      await host.close();
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(error.message);
      return exit(1);
    }
    if (!isMachineRoutesError(error)) throw error;
    io.stderr(`${error.name} [${error.code}] ${error.message}`);
    exit(1);
  }
}
