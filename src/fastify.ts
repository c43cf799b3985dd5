/**
 * `machine-routes/fastify`: mounts a `MachineRouter` on a Fastify application. Kept apart from
 * `machine-routes/runtime` so Express servers never load Fastify (an optional peer).
 */
export {
  encapsulatedPlugin,
  machineRoutes,
  mountFastify,
  fastifyHandler,
  type FastifyMountOptions,
  type MachineRoutesPluginOptions,
} from './runtime/http/adapters/fastify.js';
export { machineRoutesFrameworkErrors } from './runtime/http/adapters/fastify-framework-errors.js';
export type { MountOptions, MountSource } from './runtime/http/adapters/shared.js';
export {
  buildFastifyApp,
  fastifyAppPlugin,
  type FastifyApp,
  type FastifyAppOptions,
  type FastifyAppPluginOptions,
} from './app/fastify-app.js';
export type {
  AppConfig,
  AppOptions,
  BuiltApp,
  CloseOptions,
  CloseReport,
  GeneratedApp,
} from './app/app-parts.js';
export { serve, type ServeOptions, type Served } from './app/serve.js';
