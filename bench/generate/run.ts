/**
 * Cold `generate` time beside openapi-typescript, on the example and on a synthetic config of
 * 100 machines x 10 endpoints. Every sample is a fresh process (config loading, prettier and
 * all), as CI and developers run them; openapi-typescript gets the openapi.json `generate`
 * emitted for the same config, so both tools read an API of the same size.
 *
 *   npx tsx bench/generate/run.ts [--samples 5]
 *
 * Prints medians and the ratio (goal: generate <= 1.0x openapi-typescript); writes
 * bench/results/generate.json.
 */
import { execFileSync } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = path.join(ROOT, 'bin/machine-routes.js');
const OPENAPI_TS = path.join(ROOT, 'node_modules/openapi-typescript/bin/cli.js');
const samplesFlag = process.argv.indexOf('--samples');
const SAMPLES = samplesFlag === -1 ? 5 : Number(process.argv[samplesFlag + 1]);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Wall time of one fresh process, in milliseconds. */
function time(args: string[], cwd: string): number {
  const start = process.hrtime.bigint();
  execFileSync(process.execPath, args, { cwd, stdio: ['ignore', 'ignore', 'inherit'] });
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/** A config of `machines` machines with `endpoints` endpoints each (payloads of 3 fields). */
function writeSyntheticProject(dir: string, machines: number, endpoints: number): string {
  const lines = [
    `import { defineEvent, defineMachine } from 'machine-routes/runtime';`,
    `import { z } from 'zod';`,
    '',
  ];
  const registrations: string[] = [];
  for (let m = 0; m < machines; m++) {
    const events = Array.from({ length: endpoints }, (_, e) => `EVENT_${e}`);
    lines.push(
      ...events.map(
        (type, e) =>
          `const m${m}e${e} = defineEvent({ type: '${type}', payload: z.object({ id: z.string(), count: z.number().int().min(0), note: z.string().optional() }) });`,
      ),
      `const machine${m} = defineMachine({`,
      `  config: { id: 'machine_${m}', initial: 's0', context: { count: 0, label: 'x' }, states: {`,
      ...events.map((type, e) => `    s${e}: { on: { ${type}: 's${(e + 1) % endpoints}' } },`),
      `  } },`,
      `  behavior: { events: { ${events.map((type, e) => `${type}: m${m}e${e}`).join(', ')} } },`,
      `  endpoints: [${events.map((type) => `'${type}'`).join(', ')}],`,
      `});`,
    );
    registrations.push(
      `{ machine: machine${m}, prefix: 'm${m}', create: true, machineIdFor: [${events.map((type) => `'${type}'`).join(', ')}] }`,
    );
  }
  lines.push(
    '',
    `export default { registrations: [${registrations.join(',\n  ')}], output: { dir: 'out' } };`,
  );
  writeFileSync(path.join(dir, 'machine-routes.config.ts'), `${lines.join('\n')}\n`);
  return path.join(dir, 'machine-routes.config.ts');
}

interface Result {
  case: string;
  routes: number;
  samples: number;
  generateMs: number;
  openapiTypescriptMs: number;
  ratio: number;
}

function bench(name: string, config: string, cwd: string, outDir: string): Result {
  // One untimed run writes openapi.json for openapi-typescript and warms the disk cache.
  execFileSync(process.execPath, [CLI, 'generate', '--config', config], {
    cwd,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const openapi = path.join(outDir, 'openapi.json');
  const document = JSON.parse(readFileSync(openapi, 'utf8')) as { paths: Record<string, object> };
  const routes = Object.values(document.paths).reduce(
    (count, item) => count + Object.keys(item).length,
    0,
  );
  const typesOut = path.join(mkdtempSync(path.join(tmpdir(), 'openapi-ts-')), 'schema.d.ts');
  const generate: number[] = [];
  const openapiTypescript: number[] = [];
  // Interleaved, so a noisy neighbour on the shared cores slows both tools alike.
  for (let sample = 0; sample < SAMPLES; sample++) {
    generate.push(time([CLI, 'generate', '--config', config], cwd));
    openapiTypescript.push(time([OPENAPI_TS, openapi, '--output', typesOut], cwd));
  }
  rmSync(path.dirname(typesOut), { recursive: true, force: true });
  const generateMs = median(generate);
  const openapiTypescriptMs = median(openapiTypescript);
  return {
    case: name,
    routes,
    samples: SAMPLES,
    generateMs,
    openapiTypescriptMs,
    ratio: generateMs / openapiTypescriptMs,
  };
}

function outputSize(dir: string): number {
  return readdirSync(dir).reduce((total, file) => total + statSync(path.join(dir, file)).size, 0);
}

// Inside the repository (bench/results/synthetic/ is ignored by git) so the config resolves zod and
// machine-routes/runtime as a user's project would.
const synthetic = path.join(ROOT, 'bench/results/synthetic');
mkdirSync(synthetic, { recursive: true });
try {
  const results = [
    bench(
      'example',
      'fixtures/example/machine-routes.config.ts',
      ROOT,
      path.join(ROOT, 'generated-example'),
    ),
    bench(
      '100 machines x 10 endpoints',
      writeSyntheticProject(synthetic, 100, 10),
      synthetic,
      path.join(synthetic, 'out'),
    ),
  ];
  console.log(`cold generate vs openapi-typescript, medians of ${SAMPLES} fresh processes each`);
  for (const result of results) {
    console.log(
      `${result.case.padEnd(28)} ${String(result.routes).padStart(5)} routes  generate ${result.generateMs.toFixed(0).padStart(6)} ms  ` +
        `openapi-typescript ${result.openapiTypescriptMs.toFixed(0).padStart(6)} ms  ratio ${result.ratio.toFixed(2)}x`,
    );
  }
  console.log(
    `synthetic output: ${(outputSize(path.join(synthetic, 'out')) / 1024).toFixed(0)} KiB`,
  );
  mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
  writeFileSync(
    path.join(ROOT, 'bench/results/generate.json'),
    `${JSON.stringify(results, null, 2)}\n`,
  );
} finally {
  rmSync(synthetic, { recursive: true, force: true });
}
