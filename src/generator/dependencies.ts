/**
 * The generator's own packages: handlebars (templates), jiti (a TypeScript config without a
 * build), prettier (formatting) and ts-morph (locating problems in the user's source). They are
 * about 35 MB of what `machine-routes` used to install, and a server needs none of them, so they
 * are not dependencies of `machine-routes`: `machine-routes-generator`, installed beside it as a
 * dev dependency (as `prisma` is beside `@prisma/client`), depends on them, and a production
 * install (`npm install --omit=dev`) carries the runtime only.
 *
 * Each is loaded through `machine-routes-generator`'s entry, which imports it from its own
 * place, so it resolves under every package manager. The entry is found from here (npm's flat
 * `node_modules`, pnpm's hoisting) or else from the project the command runs in, which lists it
 * (a strict layout). Without it, the package is imported from here (this repository, which has
 * them as devDependencies, or a project that installed them itself); when neither has it, the
 * error names the command that installs it.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { MissingPeerDependencyException } from '../runtime/errors.js';
import { OWN_ROOT, packageVersion } from '../runtime/own-root.js';

/** The package that brings the generator's dependencies. */
export const GENERATOR_PACKAGE = 'machine-routes-generator';

/** Each generator dependency's module, as `import()` returns it (handlebars is CommonJS). */
export interface GeneratorDependencies {
  handlebars: { default: typeof import('handlebars') };
  jiti: typeof import('jiti');
  prettier: typeof import('prettier');
  'ts-morph': typeof import('ts-morph');
}

/** A name of {@link GeneratorDependencies}. */
export type GeneratorDependency = keyof GeneratorDependencies;

/** The entry of `machine-routes-generator` (scripts/generator-package/index.js). */
interface GeneratorPackage {
  load(name: GeneratorDependency): Promise<unknown>;
  /** The URL of the `templates/` it ships. */
  templates?: string;
}

const FROM_HERE: { [N in GeneratorDependency]: () => Promise<GeneratorDependencies[N]> } = {
  handlebars: () => import('handlebars'),
  jiti: () => import('jiti'),
  prettier: () => import('prettier'),
  'ts-morph': () => import('ts-morph'),
};

/** What each dependency is needed for, as the error says it. */
const NEEDED_FOR: Record<GeneratorDependency, string> = {
  handlebars: 'Generating code',
  jiti: 'Loading a TypeScript config',
  prettier: 'Formatting generated code',
  'ts-morph': 'Locating problems in your source',
};

/** Whether `error` says that `name` itself (not something it imports) cannot be found. */
function isNotFound(error: unknown, name: string): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (
    (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') &&
    String((error as Error).message).includes(`'${name}'`)
  );
}

let generatorPackage: Promise<GeneratorPackage | null> | undefined;

/** `machine-routes-generator`'s entry, or `null` when it is not installed. */
function importGeneratorPackage(): Promise<GeneratorPackage | null> {
  const fromProject = (): string | null => {
    try {
      const project = createRequire(path.join(process.cwd(), 'package.json'));
      return pathToFileURL(project.resolve(GENERATOR_PACKAGE)).href;
    } catch (error) {
      if (isNotFound(error, GENERATOR_PACKAGE)) return null;
      throw error;
    }
  };
  // A variable specifier: the package is not installed in this repository, so TypeScript must
  // not resolve it.
  const specifier: string = GENERATOR_PACKAGE;
  return (generatorPackage ??= (import(specifier) as Promise<GeneratorPackage>).catch(
    (error: unknown) => {
      if (!isNotFound(error, GENERATOR_PACKAGE)) throw error;
      const entry = fromProject();
      return entry === null ? null : (import(entry) as Promise<GeneratorPackage>);
    },
  ));
}

/**
 * Imports one of the generator's packages. Throws `MissingPeerDependencyException` (one line,
 * with the install command) when neither `machine-routes-generator` nor the package is installed.
 */
export async function loadGeneratorDependency<N extends GeneratorDependency>(
  name: N,
): Promise<GeneratorDependencies[N]> {
  const installed = await importGeneratorPackage();
  if (installed !== null) return (await installed.load(name)) as GeneratorDependencies[N];
  try {
    return await FROM_HERE[name]();
  } catch (error) {
    if (!isNotFound(error, name)) throw error;
    const production =
      name === 'jiti'
        ? ' A production install (npm install --omit=dev) has the runtime only: there, pass the ' +
          'compiled config, e.g. --config build/machine-routes.config.js.'
        : '';
    const missing = new MissingPeerDependencyException(
      `${NEEDED_FOR[name]} needs '${name}', which ${GENERATOR_PACKAGE} brings and is not ` +
        `installed: run npm install --save-dev ${GENERATOR_PACKAGE}@${packageVersion()}.${production}`,
      { key: GENERATOR_PACKAGE },
    );
    missing.cause = error;
    throw missing;
  }
}

/** templates/ of this repository, beside src/ and dist/: a checkout has it, the package does not. */
const OWN_TEMPLATES = new URL('../templates/', OWN_ROOT);

/**
 * The directory of the generator's templates (the handlebars files, `init`'s starter files):
 * this repository's own, else the copy `machine-routes-generator` ships. A server needs none of
 * them, so the `machine-routes` package leaves them out. Throws `MissingPeerDependencyException`
 * (one line, with the install command) when neither is there; `usedFor` says what needs them.
 */
export async function generatorTemplates(usedFor: string): Promise<URL> {
  if (existsSync(fileURLToPath(OWN_TEMPLATES))) return OWN_TEMPLATES;
  const installed = await importGeneratorPackage();
  if (installed?.templates !== undefined) return new URL(installed.templates);
  throw new MissingPeerDependencyException(
    `${usedFor} needs the templates ${GENERATOR_PACKAGE} brings, and it is not installed: ` +
      `run npm install --save-dev ${GENERATOR_PACKAGE}@${packageVersion()}.`,
    { key: GENERATOR_PACKAGE },
  );
}
