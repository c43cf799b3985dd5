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
 * how many modules each loads until listening, by package.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

const COMPILED = process.argv.includes('--compiled');
const MODULES = process.argv.includes('--modules');
const BASELINE = process.env['BENCH_BASELINE'];
const COMPILED_DIR = 'bench/results/startup-js';
const COUNT_MODULES = path.join(ROOT, 'bench/startup/count-modules.mjs');

/** A server to start: its entry, and the checkout it runs in (packages resolve from there). */
interface Server {
  root: string;
  script: string;
}

const EXAMPLE = 'generated-example/server.gen.ts';
const BARE = 'bench/startup/bare-fastify.ts';
const sources: Record<string, Server> = {
  'example server (machine-routes)': { root: ROOT, script: EXAMPLE },
  'bare fastify': { root: ROOT, script: BARE },
  ...(BASELINE === undefined
    ? {}
    : { 'baseline example (BENCH_BASELINE)': { root: path.resolve(BASELINE), script: EXAMPLE } }),
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
  for (const file of [...files('generated-example'), ...files('fixtures/example'), BARE]) {
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
}

if (COMPILED)
  for (const root of new Set(Object.values(sources).map((s) => s.root))) compileServers(root);
const servers: Record<string, Server> = Object.fromEntries(
  Object.entries(sources).map(([name, { root, script }]) => [
    name,
    { root, script: COMPILED ? path.join(COMPILED_DIR, script.replace(/\.ts$/, '.js')) : script },
  ]),
);

/** The node arguments that start `server`: its entry, through tsx unless compiled. */
function nodeArguments(server: Server, extra: string[] = []): string[] {
  return [...extra, ...(COMPILED ? [] : ['--import', 'tsx']), server.script];
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
      // /proc/<pid>/stat fields 14 and 15: user and system CPU in clock ticks.
      const stat = readFileSync(`/proc/${child.pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const cpuMs = ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
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

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'machine-routes-startup-'));
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
  const [example, bare, baseline] = summary as [
    (typeof summary)[0],
    (typeof summary)[0],
    (typeof summary)[0] | undefined,
  ];
  const ratio = (of: (typeof summary)[0]): string =>
    `wall ${(of.wallMs / bare.wallMs).toFixed(2)}x  cpu ${(of.cpuMs / bare.cpuMs).toFixed(2)}x  rss ${(of.rssMb / bare.rssMb).toFixed(2)}x`;
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
  console.log(
    `  load average (1 min): ${loadBefore.toFixed(2)} before, ${loadavg()[0]!.toFixed(2)} after`,
  );
}

await main();
