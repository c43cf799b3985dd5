/**
 * `check` names each optional peer a config's options need and the project lacks, with the
 * command installing it: the framework (and Express's types), `@tanstack/query-core` for
 * `client.tanstackQuery`, `pg` and `pg-boss` for a PostgreSQL store (problems: tsc or the
 * start would fail), and the diagram renderer of `docs` (a warning: the page still works).
 * The projects sit in temp dirs with no node_modules up their tree; a package dropped into
 * one's node_modules counts as installed.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { run } from './run-cli.js';
import { EXAMPLE_CONFIG, ROOT } from '../generator/support.js';

let dir: string;

function writeConfig(overrides: string): void {
  writeFileSync(
    path.join(dir, 'machine-routes.config.ts'),
    `import example from ${JSON.stringify(path.join(ROOT, EXAMPLE_CONFIG))};\n` +
      `export default { ...example, ${overrides} };\n`,
  );
}

function install(name: string): void {
  mkdirSync(path.join(dir, 'node_modules', name), { recursive: true });
  writeFileSync(path.join(dir, 'node_modules', name, 'package.json'), '{}\n');
}

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'machine-routes-peers-'));
  writeFileSync(path.join(dir, 'package.json'), '{ "type": "module" }\n');
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('machine-routes check with optional peers missing', () => {
  it('should name each missing peer with its install command, failing on what the app needs', async () => {
    writeConfig(
      "output: { dir: 'out', framework: 'express' }, client: { tanstackQuery: true }, store: 'postgres://localhost/x', docs: { enabled: true }",
    );
    const result = await run(['check', '--format', 'json'], dir);
    expect(result.code).toBe(1);
    const report = JSON.parse(result.stdout) as {
      issues: { code: string; message: string }[];
      warnings: { code: string; message: string }[];
    };
    const installs = (issues: { message: string }[]) =>
      issues.map((issue) => issue.message.slice(issue.message.indexOf('Install: ')));
    expect(report.issues.every((issue) => issue.code === 'MR_MISSING_PEER_DEPENDENCY')).toBe(true);
    expect(installs(report.issues)).toEqual([
      'Install: npm install express@^5',
      'Install: npm install -D @types/express',
      'Install: npm install @tanstack/query-core@^5',
      'Install: npm install pg@^8 pg-boss@^10',
    ]);
    expect(report.issues[2]!.message).toContain(
      "client.tanstackQuery needs '@tanstack/query-core', not installed in",
    );
    expect(installs(report.warnings)).toEqual([
      'Install: npm install -D mermaid-isomorphic playwright',
    ]);
  });

  it('should pass once they are installed, and warn in text about the diagrams only', async () => {
    writeConfig("output: { dir: 'out' }, client: { tanstackQuery: true }, docs: { enabled: true }");
    install('fastify');
    install('@tanstack/query-core');
    const result = await run(['check'], dir);
    expect(result.code).toBe(0);
    expect(result.stdout.split('\n')).toEqual([
      expect.stringMatching(
        /^warning: MissingPeerDependencyException \[MR_MISSING_PEER_DEPENDENCY\] docs\.enabled needs 'mermaid-isomorphic' and 'playwright', not installed in .*Install: npm install -D mermaid-isomorphic playwright$/,
      ),
      'No problems: 7 machines, 27 routes.',
    ]);
    install('mermaid-isomorphic');
    install('playwright');
    expect(await run(['check'], dir)).toEqual({
      code: 0,
      stdout: 'No problems: 7 machines, 27 routes.',
      stderr: '',
    });
  });
});
