// machine-routes-generator: the packages `machine-routes check`, `generate` and the other
// commands that read a TypeScript config load (src/generator/dependencies.ts). Each is
// imported from here, where it is a dependency, so it resolves under every package manager.
const loaders = {
  handlebars: () => import('handlebars'),
  jiti: () => import('jiti'),
  prettier: () => import('prettier'),
  'ts-morph': () => import('ts-morph'),
};

/**
 * The generator's templates (handlebars files, `init`'s starter files), shipped here rather than
 * in machine-routes: a server needs none of them.
 */
export const templates = new URL('./templates/', import.meta.url).href;

/** Imports one of the generator's packages by name. */
export function load(name) {
  const loader = loaders[name];
  if (loader === undefined) throw new Error(`machine-routes-generator does not bring '${name}'.`);
  return loader();
}
