/**
 * Public surface of http/ (re-exported by src/runtime/index.ts): route planning shared with
 * the generator and the framework-neutral request lifecycle. The Fastify and Express adapters
 * are entry points of their own (`machine-routes/fastify`, `machine-routes/express`), so a server
 * loads only its framework.
 */
export type {
  EndpointRequest,
  EndpointResponse,
  HttpLogger,
  HttpLogMeta,
  ModelBinder,
  PlannedRoute,
  RegistrationOptions,
  RouteBinding,
  RouteHandler,
  RouteHandlerKind,
  RouteOutput,
} from './types.js';
export type { RouteWebhook, WebhookOptions, WebhookSignature } from './webhook-types.js';
export {
  planRoutes,
  planRegistration,
  type PlannableDefinition,
  type RegistrationPlan,
} from './plan-routes.js';
export {
  validateRegistration,
  validateRouteNames,
  type RegistrationContext,
} from './validate-registration.js';
export {
  MachineRouter,
  type MachineRouterOptions,
  type MountedOptionsRoute,
  type MountedRoute,
} from './machine-router.js';
export { planOptionsRoutes, type OptionsRoute } from './plan-options.js';
export { etagOf, type PreconditionFailedBody } from './conditional.js';
export {
  CALLBACK_BASE_URL_ENV,
  CALLBACK_SECRET_ENV,
  mintCallbackUrl,
  verifyCallbackToken,
  type CallbackMint,
  type CallbackSettings,
  type CallbackVerdict,
} from './callback-token.js';
export { createRouteHandler, type HttpServices } from './request-lifecycle.js';
export { answerClientError } from './client-errors.js';
export { defineEndpointAction, type EndpointActionConfig } from '../definition/endpoint-action.js';
export {
  parseMiddlewareName,
  type Middleware,
  type MiddlewareReference,
  type MiddlewareRegistry,
} from './middleware-registry.js';
export {
  tableModelBinder,
  type TableModelBinderOptions,
  type TableRecord,
} from './model-binder.js';
export { errorToResponse } from './responses.js';
export { consoleLogger, defaultHttpLogger, httpLoggerOf } from './http-logger.js';
export {
  createdEnvelope,
  errorResponse,
  HttpError,
  machineEnvelope,
  validationResponse,
  type MachineEnvelopeData,
} from './response-bodies.js';
export {
  fieldErrorsFromIssues,
  validatePayload,
  validationErrorBody,
  type ValidationErrorBody,
} from './validation-errors.js';
export {
  DEFAULT_BODY_LIMIT,
  DEFAULT_PAYLOAD_LIMIT,
  MAX_NESTING_DEPTH,
  parseJsonBody,
  parseQueryString,
} from './request-parsing.js';
export {
  DEFAULT_HEADERS_TIMEOUT,
  DEFAULT_REQUEST_TIMEOUT,
  resolveServerOptions,
  type ServerOptions,
} from './server-options.js';
export { endpointUriFor, modelParamName, routeNameFor, toColonPath } from '../definition/uri.js';
export type { MountOptions, MountSource } from './adapters/shared.js';
export {
  apiReferenceRoutes,
  type ApiReferenceOptions,
  type ApiReferenceRoute,
} from './api-reference.js';
export {
  DEFAULT_HEALTH_PATH,
  DEFAULT_HEALTH_TIMEOUT_MS,
  healthRoutes,
  readiness,
  type HealthCheck,
  type HealthOptions,
  type HealthRoute,
  type ReadinessBody,
  type ReadinessSource,
} from './health.js';
export { ServerDrain, type DrainResult } from './server-drain.js';
export {
  mountAdminRoutes,
  adminRoutes,
  type AdminRoutesOptions,
  type AdminMachine,
} from './admin/admin-routes.js';
export {
  adminPrefix,
  validateAdminOptions,
  DEFAULT_ADMIN_PREFIX,
  type AdminOptions,
} from './admin/admin-options.js';
