// Packs the two published packages from this repository (`npm run package -- --destination <dir>`,
// after `npm run build`): prints their tarball paths as JSON.
//
// - `machine-routes`: the runtime, the adapters, the client runtime and the CLI (`bin`), with the
//   runtime's dependencies only: what a server installs with `npm install --omit=dev`.
// - `machine-routes-generator`, a dev dependency beside it: the generator's heavy packages
//   (GENERATOR_DEPENDENCIES) and the type declarations the `.d.ts` files name, loaded by
//   src/generator/dependencies.ts through its entry (scripts/generator-package/index.js), and
//   templates/ (the handlebars files and `init`'s starter files, which no server reads) and
//   templates/client/ (the client runtime's sources generate copies beside a generated client).
//
// Both manifests are derived from package.json, which stays this repository's development
// manifest (`private`, so `npm publish` cannot ship it by mistake): no `scripts` (the repository's
// `prepare` builds dist/ on `npm ci` here and must not run for users), no devDependencies.
// `machine-routes-generator` names `machine-routes` at its exact version as a peer, so npm refuses
// a mismatch. Not the other way round: npm marks a package an optional peer of a dependency
// reaches as `devOptional`, and `--omit=dev` would install the whole generator again.
import { execFileSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { rollup } from 'rollup';
import { dts } from 'rollup-plugin-dts';

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

/**
 * Packages the published declarations reached from `exports` must not import: an optional peer,
 * which a project without it compiles its own code against ours without (`tsc` without
 * `skipLibCheck`), and the packages the build ships copies of in dist/ (scripts/vendor.js),
 * which no project installs for us.
 */
const UNDECLARED_PEERS = ['@opentelemetry/api', 'commander', 'croner', 'change-case'];

/**
 * Removes the `.d.ts` files of `stage` that no `types` of `exports` reaches through relative
 * imports: tsc writes one per module, and `exports` lets nobody import the others. About a third
 * of them, each a file of its own on disk. Throws if a reached one imports an undeclared peer.
 */
function pruneDeclarations(stage, exports) {
  const reached = new Set();
  const pending = Object.values(exports)
    .map((target) => (typeof target === 'string' ? undefined : target.types))
    .filter((types) => types !== undefined)
    .map((types) => path.join(stage, types));
  while (pending.length > 0) {
    const file = pending.pop();
    if (reached.has(file)) continue;
    reached.add(file);
    const text = readFileSync(file, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/^\s*\/\/.*$/gm, '');
    for (const [, specifier] of text.matchAll(/(?:from|import\()\s*['"]([^'"]+)['"]/g)) {
      if (UNDECLARED_PEERS.includes(specifier)) {
        throw new Error(`${path.relative(stage, file)} imports '${specifier}', not a dependency.`);
      }
      if (!specifier.startsWith('.')) continue;
      const target = path.join(path.dirname(file), specifier.replace(/\.js$/, '.d.ts'));
      if (!existsSync(target)) throw new Error(`${path.relative(stage, file)}: no ${specifier}`);
      pending.push(target);
    }
  }
  const remove = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) remove(full);
      else if (entry.name.endsWith('.d.ts') && !reached.has(full)) rmSync(full);
    }
  };
  remove(path.join(stage, 'dist'));
}

/**
 * The client runtime's TypeScript sources the client emitter copies beside a generated client:
 * only `generate` reads them, so the generator package ships them (in templates/client/).
 */
const CLIENT_SOURCES = ['runtime.ts', 'runtime-types.ts', 'query-runtime.ts'];
const GENERATOR_ONLY_DIST = new Set(
  CLIENT_SOURCES.map((file) => path.join(ROOT, 'dist', 'client', file)),
);

/** Every `.d.ts` file under `dir`. */
function declarationFiles(dir) {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.d.ts'))
    .map((entry) => path.join(entry.parentPath, entry.name));
}

/**
 * Replaces the `.d.ts` files of `stage` by one bundle per `types` of `exports` (same paths) and
 * the chunks they share, in dist/types/: tsc writes one file per module (about 190 reached),
 * and each costs a disk block in every install however small it is (936 KB on disk for 543 KB of
 * text; 17 files take 592 KB). Shared chunks keep one declaration of each class, so the types of
 * `machine-routes/runtime` and `machine-routes/fastify` stay the same types.
 */
async function bundleDeclarations(stage, exports) {
  const entries = Object.values(exports)
    .map((target) => (typeof target === 'string' ? undefined : target.types))
    .filter((types) => types !== undefined);
  const dist = path.join(stage, 'dist');
  const input = Object.fromEntries(
    entries.map((types) => [
      path.relative('dist', types).replace(/\.d\.ts$/, ''),
      path.join(stage, types),
    ]),
  );
  const bundle = await rollup({
    input,
    plugins: [dts()],
    // Packages (zod, fastify, pg...) stay imports; only the package's own files are bundled.
    external: (id) => !id.startsWith('.') && !path.isAbsolute(id),
    onwarn: () => {},
  });
  const { output } = await bundle.generate({
    format: 'es',
    entryFileNames: '[name].d.ts',
    chunkFileNames: (chunk) => `types/${chunk.name.replace(/\.d$/, '')}-[hash].d.ts`,
  });
  await bundle.close();
  for (const file of declarationFiles(dist)) rmSync(file);
  for (const chunk of output) {
    const target = path.join(dist, chunk.fileName);
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, chunk.type === 'chunk' ? chunk.code : chunk.source);
  }
}

/** Writes `files` (relative to the repository) and `packageJson` into a directory and packs it. */
async function pack(packageJson, files) {
  const stage = mkdtempSync(path.join(tmpdir(), `${packageJson.name}-`));
  try {
    for (const [from, to = from] of files) {
      cpSync(path.join(ROOT, from), path.join(stage, to), {
        recursive: true,
        filter: (source) => !source.endsWith('.tsbuildinfo') && !GENERATOR_ONLY_DIST.has(source),
      });
    }
    if (packageJson.exports !== undefined && existsSync(path.join(stage, 'dist'))) {
      pruneDeclarations(stage, packageJson.exports);
      await bundleDeclarations(stage, packageJson.exports);
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
  [manifest.name]: await pack(runtimeManifest, [
    ['dist'],
    ['bin/machine-routes.js'],
    ['README.md'],
    ['LICENSE'],
  ]),
  [GENERATOR]: await pack(generatorManifest, [
    ['scripts/generator-package/index.js', 'index.js'],
    ['scripts/generator-package/README.md', 'README.md'],
    ['templates'],
    ...CLIENT_SOURCES.map((file) => [`src/client/${file}`, `templates/client/${file}`]),
    ['LICENSE'],
  ]),
};
process.stdout.write(`${JSON.stringify(tarballs, null, 2)}\n`);
