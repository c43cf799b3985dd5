// Packs the two published packages from this repository (`npm run package -- --destination <dir>`,
// after `npm run build`): prints their tarball paths as JSON.
//
// - `machine-routes`: the runtime, the adapters, the client runtime and the CLI (`bin`), with the
//   runtime's dependencies only: what a server installs with `npm install --omit=dev`.
// - `machine-routes-generator`, a dev dependency beside it: the generator's heavy packages
//   (GENERATOR_DEPENDENCIES) and the type declarations the `.d.ts` files name, loaded by
//   src/generator/dependencies.ts through its entry (scripts/generator-package/index.js).
//
// Both manifests are derived from package.json, which stays this repository's development
// manifest (`private`, so `npm publish` cannot ship it by mistake): no `scripts` (the repository's
// `prepare` builds dist/ on `npm ci` here and must not run for users), no devDependencies.
// `machine-routes-generator` names `machine-routes` at its exact version as a peer, so npm refuses
// a mismatch. Not the other way round: npm marks a package an optional peer of a dependency
// reaches as `devOptional`, and `--omit=dev` would install the whole generator again.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const GENERATOR = 'machine-routes-generator';

/** What the generator loads and the published `.d.ts` files import types from. */
const GENERATOR_DEPENDENCIES = [
  'handlebars',
  'jiti',
  'prettier',
  'ts-morph',
  '@types/better-sqlite3',
  '@types/pg',
];

const { values } = parseArgs({ options: { destination: { type: 'string', default: '.' } } });
const destination = path.resolve(values.destination);
const manifest = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const { version } = manifest;

/** `exports` without the repository's `machine-routes-source` condition (src/ is not shipped). */
function publishedExports(exports) {
  return Object.fromEntries(
    Object.entries(exports).map(([key, target]) => {
      if (typeof target === 'string') return [key, target];
      const { 'machine-routes-source': _source, ...conditions } = target;
      return [key, conditions];
    }),
  );
}

/** The shared fields of both manifests. */
function common(name, description) {
  const { license, engines, repository, type } = manifest;
  return { name, version, description, type, license, engines, repository };
}

const runtimeManifest = {
  ...common(manifest.name, manifest.description),
  bin: manifest.bin,
  exports: publishedExports(manifest.exports),
  dependencies: manifest.dependencies,
  peerDependencies: manifest.peerDependencies,
  peerDependenciesMeta: manifest.peerDependenciesMeta,
};

const generatorManifest = {
  ...common(
    GENERATOR,
    'The build-time half of machine-routes (check, generate): install it as a dev dependency beside machine-routes.',
  ),
  exports: { '.': './index.js' },
  dependencies: Object.fromEntries(
    GENERATOR_DEPENDENCIES.map((name) => {
      const range = manifest.devDependencies[name];
      if (range === undefined) throw new Error(`package.json has no devDependency '${name}'.`);
      return [name, range];
    }),
  ),
  peerDependencies: { [manifest.name]: version },
};

/** Writes `files` (relative to the repository) and `packageJson` into a directory and packs it. */
function pack(packageJson, files) {
  const stage = mkdtempSync(path.join(tmpdir(), `${packageJson.name}-`));
  try {
    for (const [from, to = from] of files) {
      cpSync(path.join(ROOT, from), path.join(stage, to), {
        recursive: true,
        filter: (source) => !source.endsWith('.tsbuildinfo'),
      });
    }
    writeFileSync(path.join(stage, 'package.json'), `${JSON.stringify(packageJson, null, 2)}\n`);
    const packed = execFileSync(
      'npm',
      ['pack', '--json', '--ignore-scripts', '--pack-destination', destination],
      { cwd: stage, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
    );
    return path.join(destination, JSON.parse(packed)[0].filename);
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

mkdirSync(destination, { recursive: true });
const tarballs = {
  [manifest.name]: pack(runtimeManifest, [
    ['dist'],
    ['bin/machine-routes.js'],
    ['templates'],
    ['README.md'],
    ['LICENSE'],
  ]),
  [GENERATOR]: pack(generatorManifest, [
    ['scripts/generator-package/index.js', 'index.js'],
    ['scripts/generator-package/README.md', 'README.md'],
    ['LICENSE'],
  ]),
};
process.stdout.write(`${JSON.stringify(tarballs, null, 2)}\n`);
