/**
 * `machine-routes/express`: mounts a `MachineRouter` on an Express application or router. Kept
 * apart from `machine-routes/runtime` so Fastify servers never load Express (an optional peer).
 */
export {
  machineRoutesRouter,
  notFoundHandler,
  withFallback,
  mountExpress,
  expressHandler,
  type ExpressMountOptions,
} from './runtime/http/adapters/express.js';
export { jsonBody } from './runtime/http/adapters/express-body.js';
export type { MountOptions, MountSource } from './runtime/http/adapters/shared.js';
export { buildExpressApp, type ExpressApp, type ExpressAppOptions } from './app/express-app.js';
export type {
  AppConfig,
  AppOptions,
  BuiltApp,
  CloseOptions,
  CloseReport,
  GeneratedApp,
} from './app/app-parts.js';
export { serve, type ServeOptions, type Served } from './app/serve.js';
