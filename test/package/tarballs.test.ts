/**
 * The two tarballs of `npm run package` (scripts/pack.js) as published: what each holds and
 * what its package.json declares. test/package/install.test.ts installs them.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../generator/support.js';
import { GENERATOR_ONLY, packTarballs, sh, unpacked, type Tarballs } from './support.js';

const VERSION = (
  JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }
).version;

let work: string;
let tarballs: Tarballs;

beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), 'machine-routes-tarballs-'));
  // The global setup built dist/: pack it as it is.
  tarballs = packTarballs(work);
}, 120_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the packed tarballs', () => {
  it('should hold only what runs: dist, the CLI entry, LICENSE, README and package.json', () => {
    const { tops, listed } = unpacked(tarballs['machine-routes']);
    // templates/ is the generator's: machine-routes-generator ships it.
    expect(tops).toEqual(['LICENSE', 'README.md', 'bin', 'dist', 'package.json']);
    expect(listed.filter((entry) => entry.endsWith('.map'))).toEqual([]);
    // The client runtime's sources are for generate only: the generator package ships them.
    expect(listed).toContain('package/dist/client/runtime.js');
    expect(listed).not.toContain('package/dist/client/runtime.ts');
    expect(listed).not.toContain('package/dist/client/runtime-types.ts');
    expect(listed).not.toContain('package/dist/client/query-runtime.ts');
    expect(sh(ROOT, 'tar', ['-xzOf', tarballs['machine-routes'], 'package/LICENSE'])).toContain(
      'MIT License',
    );
  });

  it('should ship no lifecycle script, no devDependencies and the runtime dependencies only', () => {
    const { manifest } = unpacked(tarballs['machine-routes']);
    expect(manifest.scripts).toBeUndefined();
    expect(manifest.devDependencies).toBeUndefined();
    for (const name of [...GENERATOR_ONLY, '@types/better-sqlite3', '@types/pg', 'qs']) {
      expect(manifest.dependencies).not.toHaveProperty(name);
    }
    // The OpenTelemetry API: an optional peer, which the application's SDK brings.
    expect(manifest.dependencies).not.toHaveProperty('@opentelemetry/api');
    expect(manifest.peerDependenciesMeta?.['@opentelemetry/api']).toEqual({ optional: true });
    expect(manifest.peerDependencies).not.toHaveProperty('machine-routes-generator');
  });

  it('should pack machine-routes-generator with the generator packages and templates, pinned to the runtime version', () => {
    const { tops, listed, manifest } = unpacked(tarballs['machine-routes-generator']);
    expect(tops).toEqual(['LICENSE', 'README.md', 'index.js', 'package.json', 'templates']);
    expect(listed).toContain('package/templates/routes.hbs');
    expect(listed).toContain('package/templates/init/machine-routes.config.ts');
    expect(listed).toContain('package/templates/client/runtime.ts');
    expect(listed).toContain('package/templates/client/runtime-types.ts');
    expect(listed).toContain('package/templates/client/query-runtime.ts');
    expect(manifest.scripts).toBeUndefined();
    expect(Object.keys(manifest.dependencies)).toEqual(
      expect.arrayContaining([...GENERATOR_ONLY, '@types/better-sqlite3', '@types/pg']),
    );
    expect(manifest.peerDependencies).toEqual({ 'machine-routes': VERSION });
  });

  it('should ship one declaration bundle per export and the chunks they share, none naming an optional peer', () => {
    const { listed, manifest } = unpacked(tarballs['machine-routes']);
    const declarations = listed.filter((entry) => entry.endsWith('.d.ts'));
    const entries = Object.values(manifest.exports ?? {})
      .flatMap((target) => (typeof target === 'string' || !target.types ? [] : [target.types]))
      .map((types) => `package/${types.slice(2)}`);
    expect(entries).toContain('package/dist/runtime/index.d.ts');
    expect(declarations).toEqual(expect.arrayContaining(entries));
    // Bundled (scripts/pack.js bundleDeclarations): no file per module, as tsc writes them.
    expect(declarations).not.toContain('package/dist/runtime/telemetry/trace-carrier.d.ts');
    expect(declarations.length).toBeLessThan(entries.length + 16);
    for (const entry of declarations) {
      const text = sh(ROOT, 'tar', ['-xzOf', tarballs['machine-routes'], entry]);
      expect(text, entry).not.toContain("'@opentelemetry/api'");
      // Every relative import of a bundle names a file the package ships.
      for (const [, specifier] of text.matchAll(/from\s*'(\.[^']+)'/g)) {
        const target = path.posix
          .join(path.posix.dirname(entry), specifier!)
          .replace(/\.js$/, '.d.ts');
        expect(declarations, `${entry} imports ${specifier}`).toContain(target);
      }
    }
    expect(listed).toContain('package/dist/api-reference/redoc.standalone.js.br');
    expect(listed).not.toContain('package/dist/api-reference/redoc.standalone.js.gz');
    expect(listed).not.toContain('package/dist/api-reference/redoc.standalone.js');
  });

  it('should import only its dependencies, its peers, Node built-ins and, in the generator, the generator package', () => {
    const { listed, manifest } = unpacked(tarballs['machine-routes']);
    // What the generator loads (through machine-routes-generator, or the project's own copy).
    const allowed = new Set([
      ...Object.keys(manifest.dependencies),
      ...Object.keys(manifest.peerDependencies),
      ...GENERATOR_ONLY,
      'mermaid-isomorphic',
      'machine-routes',
    ]);
    const patterns = [
      /^\s*(?:import|export)\b[^'"]*?\bfrom\s*["']([^"'.][^"']*)["']/gm,
      /^\s*import\s*["']([^"'.][^"']*)["']/gm,
      /\b(?:import|require\d*)\(\s*["']([^"'.][^"']*)["']\s*\)/g,
    ];
    const imported = new Set<string>();
    for (const entry of listed.filter((file) => file.endsWith('.js'))) {
      const text = sh(ROOT, 'tar', ['-xzOf', tarballs['machine-routes'], entry]);
      for (const pattern of patterns) {
        for (const [, specifier = ''] of text.matchAll(pattern)) {
          const parts = specifier.split('/');
          imported.add(specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!);
        }
      }
    }
    const undeclared = [...imported].filter(
      (name) => !name.startsWith('node:') && !allowed.has(name),
    );
    expect(undeclared).toEqual([]);
    expect(imported).toContain('@opentelemetry/api');
    // Shipped as copies in dist/ (scripts/vendor.js), not installed beside it.
    for (const name of ['commander', 'croner', 'change-case']) {
      expect(imported, name).not.toContain(name);
      expect(manifest.dependencies, name).not.toHaveProperty(name);
    }
  });

  it('should carry its copies of commander, croner and change-case with their licences, and load them', () => {
    const { listed } = unpacked(tarballs['machine-routes']);
    expect(listed).toEqual(
      expect.arrayContaining([
        'package/dist/vendor/commander.cjs',
        'package/dist/vendor/croner.cjs',
        'package/dist/vendor/LICENSES.txt',
      ]),
    );
    const licences = sh(ROOT, 'tar', [
      '-xzOf',
      tarballs['machine-routes'],
      'package/dist/vendor/LICENSES.txt',
    ]);
    for (const holder of ['TJ Holowaychuk', 'Hexagon', 'Blake Embrey']) {
      expect(licences).toContain(holder);
    }
    const unpackedAt = path.join(work, 'unpacked');
    mkdirSync(unpackedAt);
    sh(unpackedAt, 'tar', ['-xzf', tarballs['machine-routes']]);
    const vendor = path.join(unpackedAt, 'package/dist/vendor');
    const loaded = sh(unpackedAt, process.execPath, [
      '-e',
      [
        `const { Command } = require(${JSON.stringify(path.join(vendor, 'commander.cjs'))});`,
        `const { Cron } = require(${JSON.stringify(path.join(vendor, 'croner.cjs'))});`,
        "const options = new Command().option('--n <n>').parse(['--n', '3'], { from: 'user' }).opts();",
        "const next = new Cron('0 9 * * 1-5', { timezone: 'UTC' }).nextRun(new Date('2026-11-28T00:00:00Z'));",
        'console.log(JSON.stringify([options, next]));',
      ].join('\n'),
    ]);
    // Saturday the 28th: the next weekday at 9:00 is Monday the 30th.
    expect(JSON.parse(loaded)).toEqual([{ n: '3' }, '2026-11-30T09:00:00.000Z']);
  });
});
