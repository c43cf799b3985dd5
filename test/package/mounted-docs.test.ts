/**
 * The reference page as a new user gets it, mounted under `/api`: both tarballs of
 * `npm run package` installed into a fresh CommonJS project as the README's install block says
 * (Fastify and Express, `docs`' line: mermaid-isomorphic and playwright as dev dependencies),
 * the README's first machine with `docs: { enabled: true }`, `generate` for each framework,
 * `tsc --strict`, and an app of the user's own mounting the generated one under `/api`: the
 * Fastify plugin with `prefix: '/api'`, the Express app with `app.use('/api', ...)`. The ES
 * module project gets a hard-linked copy of that install. Headless Chromium opens `/api/docs`:
 * Redoc renders every operation and the diagram drawn at generate time (the rendered DOM, not
 * the HTML source), every request of the page answers 200 from under `/api`, and the served
 * document's server URL is `/api`.
 *
 * Then the production install (`npm ci --omit=dev`) of the CommonJS project: no Mermaid, no
 * Redoc package, and the page still renders; with Redoc's bundle removed from the installed
 * package, the server fails at start with one named line, not a stack.
 */
import { execFileSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../generator/support.js';
import { startNode, type FixtureProcess } from '../support/child-process.js';
import { launchChromium, openReferencePage } from '../support/reference-page.js';
import {
  packTarballs,
  readmeFiles,
  readmeInstallLines,
  readmeTsconfig,
  sh,
  type Tarballs,
} from './support.js';

const INSTALL_TIMEOUT = 600_000;

let work: string;
let tarballs: Tarballs;
let browser: Browser;
const started: FixtureProcess[] = [];

/** The README's install lines for `words`, machine-routes' packages from the tarballs. */
function installAsReadme(project: string, words: string[]): void {
  const lines = words.flatMap((word) => readmeInstallLines(word));
  expect(lines.length).toBeGreaterThanOrEqual(words.length);
  for (const args of lines) {
    sh(project, 'npm', [
      'install',
      '--prefer-offline',
      '--ignore-scripts',
      ...args.map((arg) => (arg in tarballs ? tarballs[arg as keyof Tarballs] : arg)),
    ]);
  }
  // better-sqlite3's native build from this repository's install (same version, same Node).
  cpSync(
    path.join(ROOT, 'node_modules/better-sqlite3/build'),
    path.join(project, 'node_modules/better-sqlite3/build'),
    { recursive: true },
  );
}

/** The user's own app on `framework`, the generated one mounted under `/api`. */
function ownApp(framework: 'fastify' | 'express'): string {
  const lines =
    framework === 'fastify'
      ? [
          "import Fastify from 'fastify';",
          "import { machineRoutes } from './generated/app.gen.js';",
          'async function main(): Promise<void> {',
          '  const app = Fastify();',
          "  await app.register(machineRoutes, { prefix: '/api' });",
          "  console.log(`own app listening on ${await app.listen({ port: 0, host: '127.0.0.1' })}`);",
          '}',
        ]
      : [
          "import express from 'express';",
          "import { buildApp } from './generated-express/app.gen.js';",
          'async function main(): Promise<void> {',
          '  const routes = await buildApp();',
          '  const app = express();',
          "  app.use('/api', routes.app);",
          "  const server = app.listen(0, '127.0.0.1', () => {",
          '    const address = server.address();',
          "    const port = typeof address === 'object' && address !== null ? address.port : 0;",
          '    console.log(`own app listening on http://127.0.0.1:${port}`);',
          '  });',
          '}',
        ];
  return [...lines, 'void main();', ''].join('\n');
}

/** A fresh project: README files with docs, both frameworks generated, compiled. */
function prepare(project: string): void {
  for (const [name, contents] of readmeFiles()) {
    mkdirSync(path.dirname(path.join(project, name)), { recursive: true });
    const withDocs = contents.replace(
      "output: { dir: 'src/generated', framework: 'fastify' },",
      "output: { dir: 'src/generated', framework: 'fastify' },\n  docs: { enabled: true },",
    );
    if (name === 'machine-routes.config.ts') expect(withDocs).not.toBe(contents);
    writeFileSync(path.join(project, name), withDocs);
  }
  writeFileSync(
    path.join(project, 'express.config.ts'),
    [
      "import config from './machine-routes.config.js';",
      "export default { ...config, output: { dir: 'src/generated-express', framework: 'express' as const } };",
      '',
    ].join('\n'),
  );
  // check names no missing peer: the README's lines installed them all.
  expect(sh(project, 'npx', ['machine-routes', 'check'])).toBe(
    'No problems: 1 machine, 4 routes.\n',
  );
  sh(project, 'npx', ['machine-routes', 'generate']);
  sh(project, 'npx', ['machine-routes', 'generate', '--config', 'express.config.ts']);
  for (const dir of ['src/generated', 'src/generated-express'])
    expect(readFileSync(path.join(project, dir, 'diagrams.gen.ts'), 'utf8')).toContain('<svg');
  writeFileSync(path.join(project, 'src/own-fastify.ts'), ownApp('fastify'));
  writeFileSync(path.join(project, 'src/own-express.ts'), ownApp('express'));
  writeFileSync(path.join(project, 'tsconfig.json'), readmeTsconfig());
  sh(project, 'npx', ['tsc', '--strict']);
}

/** Starts `build/src/<script>.js` and resolves with its URL. */
async function start(project: string, script: string): Promise<string> {
  const app = startNode([`build/src/${script}.js`], {
    cwd: project,
    env: { MACHINE_DATABASE_URL: `sqlite:${path.join(project, `${script}.db`)}` },
  });
  started.push(app);
  const line = await app.waitForLine((text) => text.includes('listening on'), 60_000);
  return /listening on (\S+)/.exec(line)![1]!;
}

/** Opens `<origin>/api/docs` and checks what the reader sees and every request of the page. */
async function expectPageUnderApi(origin: string): Promise<void> {
  const served = (await (await fetch(`${origin}/api/openapi.json`)).json()) as {
    servers: { url: string }[];
    tags: { name: string }[];
    paths: Record<string, Record<string, { operationId: string }>>;
  };
  expect(served.servers.map((server) => server.url)).toEqual(['/api']);
  const operations = Object.values(served.paths)
    .flatMap((item) => Object.values(item).map((operation) => operation.operationId))
    .sort();
  expect(operations.length).toBeGreaterThan(0);
  const shown = await openReferencePage(browser, `${origin}/api/docs`, {
    firstOperation: operations[0]!,
    diagrams: served.tags.length,
  });
  expect(shown.operations).toEqual(operations);
  expect(shown.diagrams).toHaveLength(served.tags.length);
  expect(shown.diagrams.every((nodes) => nodes > 0)).toBe(true);
  expect(shown.errors).toEqual([]);
  const own = shown.answers.filter((line) => line.includes(` ${origin}/`));
  expect(own.filter((line) => !line.startsWith(`200 ${origin}/api/`))).toEqual([]);
  expect(own).toContain(`200 ${origin}/api/docs/redoc.standalone.js`);
  expect(own).toContain(`200 ${origin}/api/openapi.json`);
  await shown.page.close();
}

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'machine-routes-docs-'));
  tarballs = packTarballs(work);
  browser = await launchChromium();
}, INSTALL_TIMEOUT);

afterAll(async () => {
  for (const app of started) app.child.kill();
  await browser?.close();
  rmSync(work, { recursive: true, force: true });
}, INSTALL_TIMEOUT);

describe.each(['commonjs', 'module'] as const)('a fresh %s project', (type) => {
  const project = () => path.join(work, type);

  beforeAll(() => {
    mkdirSync(project());
    sh(project(), 'npm', ['init', '-y']);
    sh(project(), 'npm', ['pkg', 'set', `type=${type}`]);
    if (type === 'commonjs') {
      installAsReadme(project(), ['fastify', 'express', 'mermaid-isomorphic', 'typescript']);
    } else {
      // The CommonJS project's install, hard-linked: the same packages, minutes saved.
      const manifest = JSON.parse(readFileSync(path.join(work, 'commonjs/package.json'), 'utf8'));
      for (const field of ['dependencies', 'devDependencies'])
        for (const [name, range] of Object.entries(manifest[field] as Record<string, string>))
          sh(project(), 'npm', ['pkg', 'set', `${field}.${name}=${range}`]);
      execFileSync('cp', ['-al', path.join(work, 'commonjs/node_modules'), project()]);
    }
    prepare(project());
  }, INSTALL_TIMEOUT);

  it.each(['fastify', 'express'] as const)(
    'should render /api/docs of the %s app mounted under /api',
    async (framework) => {
      await expectPageUnderApi(await start(project(), `own-${framework}`));
    },
    120_000,
  );
});

describe('the production install of the CommonJS project', () => {
  const production = () => path.join(work, 'production');

  beforeAll(() => {
    mkdirSync(production());
    for (const file of ['package.json', 'package-lock.json', 'build'])
      cpSync(path.join(work, 'commonjs', file), path.join(production(), file), { recursive: true });
    sh(production(), 'npm', ['ci', '--omit=dev', '--prefer-offline', '--ignore-scripts']);
    cpSync(
      path.join(ROOT, 'node_modules/better-sqlite3/build'),
      path.join(production(), 'node_modules/better-sqlite3/build'),
      { recursive: true },
    );
  }, INSTALL_TIMEOUT);

  it('should serve the page with neither Mermaid nor Redoc installed', async () => {
    for (const name of ['mermaid', 'redoc', 'mermaid-isomorphic', 'playwright'])
      expect(existsSync(path.join(production(), 'node_modules', name)), name).toBe(false);
    await expectPageUnderApi(await start(production(), 'own-fastify'));
  }, 120_000);

  it("should fail at start with one named line when the package lacks Redoc's bundle", async () => {
    rmSync(path.join(production(), 'node_modules/machine-routes/dist/api-reference'), {
      recursive: true,
    });
    const server = startNode(['build/src/generated/server.gen.js'], {
      cwd: production(),
      env: { PORT: '0', MACHINE_DATABASE_URL: 'sqlite::memory:' },
    });
    started.push(server);
    expect(await server.exited).toBe(1);
    const printed = server.stderr().trim().split('\n');
    expect(printed).toHaveLength(1);
    expect(printed[0]).toMatch(
      /^ApiReferenceUnavailableException \[MR_API_REFERENCE_UNAVAILABLE\] docs\.enabled serves the API reference page with Redoc's bundle, which the installed machine-routes package lacks/,
    );
  }, 120_000);
});
