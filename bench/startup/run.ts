/**
 * Start-up benchmark: `npm run build && npx tsx bench/startup/run.ts [--compiled]`.
 *
 * Starts the generated example server (generated-example/server.gen.ts: Fastify, SQLite, every
 * example machine) and bare Fastify (bench/startup/bare-fastify.ts) as processes, alternating,
 * ROUNDS times each. For each start it records the wall time from spawn to the `listening on`
 * line, the CPU time the process used until then and its resident memory (both read from
 * /proc, Linux only), then stops it. Reports medians and the ratios of the example to bare
 * Fastify, with the load average.
 *
 * Two more rows are not baselines of the issue but its floor (bench/startup/fastify-zod.ts):
 * bare Fastify plus zod and the example machines' own schemas, which any application serving the
 * example's API loads, and the same plus a SQLite file opened with better-sqlite3. Their ratios
 * say how much of the gap is the example's own dependencies and how much is machine-routes.
 *
 * Both sides load the same way, as a user's server would: their own TypeScript entry through
 * `node --import tsx`, and their packages as built JavaScript (Fastify from node_modules,
 * machine-routes from dist/, hence the build first; not from src/ through the
 * `machine-routes-source` condition, which would make tsx transpile and load the whole runtime
 * from TypeScript). With `--compiled` neither has a loader: both entries and what they import
 * of the repository are transpiled to JavaScript (TypeScript's transpileModule, one file per
 * file, under bench/results/startup-js/) and run with plain `node`, as in production.
 *
 * `BENCH_BASELINE=<checkout>` adds that checkout's example server (another worktree, built with
 * `npm run build`), started in the same alternation: old and new A/B under the same load.
 * `--modules` starts each server once with bench/startup/count-modules.mjs instead and prints
 * how many modules each loads until listening, by package. `--stages` (compiled) runs
 * bench/startup/stages.mjs instead: the CPU time of each stage of a start (each import, the
 * config, `buildApp()`, `listen`), medians per server, which says where the time goes.
 */
import { spawn } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 7);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLOCK_TICKS = 100; // USER_HZ on Linux

interface Start {
  wallMs: number;
  cpuMs: number;
  rssMb: number;
}

const STAGES = process.argv.includes('--stages');
const COMPILED = STAGES || process.argv.includes('--compiled');
const MODULES = process.argv.includes('--modules');
const BASELINE = process.env['BENCH_BASELINE'];
const COMPILED_DIR = 'bench/results/startup-js';
const COUNT_MODULES = path.join(ROOT, 'bench/startup/count-modules.mjs');

/** A server to start: its entry, the checkout it runs in (packages resolve from there), arguments. */
interface Server {
  root: string;
  script: string;
  args?: string[];
}

const EXAMPLE = 'generated-example/server.gen.ts';
const BARE = 'bench/startup/bare-fastify.ts';
const FLOOR = 'bench/startup/fastify-zod.ts';
const EXAMPLE_ROW = 'example server (machine-routes)';
const BARE_ROW = 'bare fastify';
const FLOOR_ROW = 'floor: fastify + zod + schemas';
const FLOOR_SQLITE_ROW = 'floor + SQLite open';
const BASELINE_ROW = 'baseline example (BENCH_BASELINE)';
const sources: Record<string, Server> = {
  [EXAMPLE_ROW]: { root: ROOT, script: EXAMPLE },
  [BARE_ROW]: { root: ROOT, script: BARE },
  // Not baselines of the issue: what the example's own dependencies cost any Fastify app.
  [FLOOR_ROW]: { root: ROOT, script: FLOOR },
  [FLOOR_SQLITE_ROW]: { root: ROOT, script: FLOOR, args: ['--sqlite'] },
  ...(BASELINE === undefined
    ? {}
    : { [BASELINE_ROW]: { root: path.resolve(BASELINE), script: EXAMPLE } }),
};

/**
 * Transpiles the TypeScript the servers of checkout `root` run (the generated example, the
 * example config and its machines, bare Fastify) to JavaScript beside each other under its
 * bench/results/startup-js/, so relative imports keep working and packages resolve from its
 * node_modules.
 */
function compileServers(root: string): void {
  rmSync(path.join(root, COMPILED_DIR), { recursive: true, force: true });
  const files = (dir: string): string[] =>
    readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory()
        ? files(path.join(dir, entry.name))
        : entry.name.endsWith('.ts')
          ? [path.join(dir, entry.name)]
          : [],
    );
  const bench = [BARE, FLOOR].filter((file) => existsSync(path.join(root, file)));
  for (const file of [...files('generated-example'), ...files('fixtures/example'), ...bench]) {
    const { outputText } = ts.transpileModule(readFileSync(path.join(root, file), 'utf8'), {
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2022,
        verbatimModuleSyntax: true,
      },
    });
    const out = path.join(root, COMPILED_DIR, file.replace(/\.ts$/, '.js'));
    mkdirSync(path.dirname(out), { recursive: true });
    writeFileSync(out, outputText);
  }
  // This checkout's stage script beside every compiled example (--stages): the same stages.
  copyFileSync(
    path.join(ROOT, 'bench/startup/stages.mjs'),
    path.join(root, COMPILED_DIR, 'generated-example/stages.mjs'),
  );
}

if (COMPILED)
  for (const root of new Set(Object.values(sources).map((s) => s.root))) compileServers(root);
const servers: Record<string, Server> = Object.fromEntries(
  Object.entries(sources).map(([name, { root, script, args }]) => [
    name,
    {
      root,
      script: COMPILED ? path.join(COMPILED_DIR, script.replace(/\.ts$/, '.js')) : script,
      ...(args === undefined ? {} : { args }),
    },
  ]),
);

/** The node arguments that start `server`: its entry, through tsx unless compiled. */
function nodeArguments(server: Server, extra: string[] = []): string[] {
  return [
    ...extra,
    ...(COMPILED ? [] : ['--import', 'tsx']),
    server.script,
    ...(server.args ?? []),
  ];
}

/**
 * The CPU time process `pid` has used, every thread: the sum of each live thread's run time in
 * nanoseconds (/proc/<pid>/task/<tid>/schedstat, first field), or the whole process in clock
 * ticks (/proc/<pid>/stat fields 14 and 15, 10 ms steps, too coarse for an A/B of a few ms)
 * where schedstat is missing or less (a thread that already ended).
 */
function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticksMs = ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  let scheduledNs = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      scheduledNs += Number(
        readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0],
      );
    }
  } catch {
    return ticksMs;
  }
  const scheduledMs = scheduledNs / 1e6;
  // Clock ticks are truncated: more than one tick above the threads means one has ended.
  return scheduledMs + 1000 / CLOCK_TICKS < ticksMs ? ticksMs : scheduledMs;
}

/** Starts `server`, waits for its `listening on` line, measures, then stops it. */
function start(server: Server, databaseUrl: string): Promise<Start> {
  const began = performance.now();
  const child = spawn(process.execPath, nodeArguments(server), {
    cwd: server.root,
    env: { ...process.env, PORT: '0', MACHINE_DATABASE_URL: databaseUrl },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) =>
      reject(new Error(`${server.script} exited (${code}) before listening`)),
    );
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (!line.includes('listening on')) return;
      const wallMs = performance.now() - began;
      const cpuMs = processCpuMs(child.pid!);
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
      child.removeAllListeners('exit');
      child.once('exit', () => resolve({ wallMs, cpuMs, rssMb: rssKb / 1024 }));
      child.kill('SIGTERM');
    });
  });
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

/** Starts `server` with count-modules.mjs, stops it once listening, returns what it counted. */
function countModules(server: Server, databaseUrl: string): Promise<string> {
  const child = spawn(process.execPath, nodeArguments(server, ['--import', COUNT_MODULES]), {
    cwd: server.root,
    env: { ...process.env, PORT: '0', MACHINE_DATABASE_URL: databaseUrl },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${server.script} exited (${code})`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.includes('listening on')) child.kill('SIGTERM');
      if (line.startsWith('modules loaded: ')) resolve(line.slice('modules loaded: '.length));
    });
  });
}

async function printModules(dir: string): Promise<void> {
  console.log(`Modules loaded until listening (${COMPILED ? 'compiled' : 'node --import tsx'}):`);
  for (const [name, server] of Object.entries(servers)) {
    const counted = JSON.parse(
      await countModules(server, `sqlite:${path.join(dir, 'modules.db')}`),
    ) as { total: number; groups: Record<string, number> };
    const groups = Object.entries(counted.groups).map(([group, count]) => `${group} ${count}`);
    console.log(`  ${name}: ${counted.total}\n    ${groups.join(', ')}`);
  }
}

/** One start of `stages.mjs` in `root` (`bare`: bare Fastify's stages): each stage's CPU ms. */
function runStages(root: string, databaseUrl: string, bare: boolean): Promise<[string, number][]> {
  const script = path.join(COMPILED_DIR, 'generated-example/stages.mjs');
  const child = spawn(process.execPath, [script, ...(bare ? ['bare'] : [])], {
    cwd: root,
    env: { ...process.env, MACHINE_DATABASE_URL: databaseUrl },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`stages.mjs in ${root} exited (${code})`));
      else resolve((JSON.parse(output) as { stages: [string, number][] }).stages);
    });
  });
}

/**
 * `--stages`: where a compiled start's CPU goes, stage by stage (imports, config, buildApp,
 * listen), medians of ROUNDS alternating starts of each server, in-process (process.cpuUsage,
 * every thread; without Node's own start-up). Precise to a millisecond or so under load, which
 * the wall time of a whole start is not.
 */
async function printStages(dir: string): Promise<void> {
  const loadBefore = loadavg()[0]!;
  const columns = Object.entries(servers)
    .filter(([, server]) => !server.script.includes('fastify-zod'))
    .map(([name, server]) => ({
      name,
      root: server.root,
      bare: server.script.includes('bare-fastify'),
      runs: [] as [string, number][][],
    }));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [index, column] of columns.entries()) {
      const database = `sqlite:${path.join(dir, `stages-${round}-${index}.db`)}`;
      column.runs.push(await runStages(column.root, database, column.bare));
    }
  }
  const names = [...new Set(columns.flatMap((column) => column.runs[0]!.map(([name]) => name)))];
  const cell = (column: (typeof columns)[0], stage: string): string => {
    const values = column.runs.flatMap((run) => run.filter(([name]) => name === stage));
    return values.length === 0 ? '-' : median(values.map(([, cpu]) => cpu)).toFixed(1);
  };
  const total = (column: (typeof columns)[0]): string =>
    median(column.runs.map((run) => run.reduce((sum, [, cpu]) => sum + cpu, 0))).toFixed(1);
  console.log(`CPU ms by stage, median of ${ROUNDS} alternating compiled starts each:`);
  console.log(
    `  ${'stage'.padEnd(32)}${columns.map((c) => c.name.slice(0, 22).padStart(24)).join('')}`,
  );
  for (const stage of [...names, 'total']) {
    const cells = columns.map((c) => (stage === 'total' ? total(c) : cell(c, stage)));
    console.log(`  ${stage.padEnd(32)}${cells.map((v) => v.padStart(24)).join('')}`);
  }
  console.log(
    `  load average (1 min): ${loadBefore.toFixed(2)} before, ${loadavg()[0]!.toFixed(2)} after`,
  );
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'machine-routes-startup-'));
  if (STAGES) {
    try {
      await printStages(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    return;
  }
  if (MODULES) {
    try {
      await printModules(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    return;
  }
  const loadBefore = loadavg()[0]!;
  const results = new Map<string, Start[]>(Object.keys(servers).map((name) => [name, []]));
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const [index, [name, server]] of Object.entries(servers).entries()) {
        const database = `sqlite:${path.join(dir, `startup-${round}-${index}.db`)}`;
        results.get(name)!.push(await start(server, database));
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const summary = [...results].map(([name, starts]) => ({
    name,
    wallMs: median(starts.map((s) => s.wallMs)),
    cpuMs: median(starts.map((s) => s.cpuMs)),
    rssMb: median(starts.map((s) => s.rssMb)),
  }));
  const named = (name: string): (typeof summary)[0] | undefined =>
    summary.find((entry) => entry.name === name);
  const example = named(EXAMPLE_ROW)!;
  const bare = named(BARE_ROW)!;
  const floor = named(FLOOR_ROW)!;
  const floorSqlite = named(FLOOR_SQLITE_ROW)!;
  const baseline = named(BASELINE_ROW);
  const ratio = (of: (typeof summary)[0], to = bare): string =>
    `wall ${(of.wallMs / to.wallMs).toFixed(2)}x  cpu ${(of.cpuMs / to.cpuMs).toFixed(2)}x  rss ${(of.rssMb / to.rssMb).toFixed(2)}x`;
  console.log(
    `Start-up, spawn to listening, median of ${ROUNDS} alternating starts each (${COMPILED ? 'compiled, plain node' : 'node --import tsx, packages built'}):`,
  );
  for (const row of summary) {
    console.log(
      `  ${row.name.padEnd(34)} wall ${row.wallMs.toFixed(0).padStart(5)} ms  cpu ${row.cpuMs.toFixed(0).padStart(5)} ms  rss ${row.rssMb.toFixed(1).padStart(6)} MB`,
    );
  }
  console.log(`  ratio example / bare fastify:      ${ratio(example)}`);
  if (baseline !== undefined)
    console.log(`  ratio baseline / bare fastify:     ${ratio(baseline)}`);
  console.log(`  ratio floor / bare fastify:        ${ratio(floor)}`);
  console.log(`  ratio example / floor:             ${ratio(example, floor)}`);
  console.log(`  ratio example / floor + SQLite:    ${ratio(example, floorSqlite)}`);
  if (baseline !== undefined)
    console.log(`  ratio baseline / floor:            ${ratio(baseline, floor)}`);
  console.log(
    `  load average (1 min): ${loadBefore.toFixed(2)} before, ${loadavg()[0]!.toFixed(2)} after`,
  );
}

await main();
