/**
 * Registration-time validation (spec "Filtering and validation" rule 5), as data: the CLI's
 * `check` lists these issues, `MachineRouter.register` throws them once.
 */
import { InvalidRouterConfigException, type MachineRoutesError } from '../errors.js';
import { parseMiddlewareName } from './middleware-registry.js';
import { planRegistration, type PlannableDefinition } from './plan-routes.js';
import type { PlannedRoute, RegistrationOptions } from './types.js';

/**
 * Names the run time will provide. Each check runs only when its list is given: the
 * generator passes the config's declared names, `MachineRouter` its registries' keys.
 */
export interface RegistrationContext {
  /** Middleware registry entry names (`auth` covers `auth:admin`). */
  middleware?: Iterable<string>;
  /** Model binder names (the `model` option). */
  models?: Iterable<string>;
}

/**
 * Every problem of one registration, without throwing: the rule-5 checks of `planRoutes`
 * plus, given a context, unknown middleware and model names.
 */
export function validateRegistration(
  definition: PlannableDefinition,
  options: RegistrationOptions,
  context: RegistrationContext = {},
): MachineRoutesError[] {
  const plan = planRegistration(definition, options);
  return [...plan.issues, ...validateRouteNames(plan.routes, options, context)];
}

/** Unknown middleware and model names of planned routes (see {@link RegistrationContext}). */
export function validateRouteNames(
  routes: readonly PlannedRoute[],
  options: Pick<RegistrationOptions, 'model'>,
  context: RegistrationContext,
): MachineRoutesError[] {
  const issues: MachineRoutesError[] = [];
  const first = routes[0];
  if (first === undefined) return issues;
  const details = { machine: first.machineId, registration: first.registration };
  const where = `(machine '${first.machineId}', registration '${first.registration}')`;
  if (context.middleware !== undefined) {
    const known = new Set(context.middleware);
    const unknown = new Map<string, string[]>();
    for (const route of routes) {
      for (const reference of route.middleware) {
        if (known.has(parseMiddlewareName(reference).name)) continue;
        unknown.set(reference, [...(unknown.get(reference) ?? []), route.name]);
      }
    }
    for (const [reference, routeNames] of unknown) {
      issues.push(
        new InvalidRouterConfigException(
          `MachineRouter: unknown middleware '${reference}' on ${routeNames.join(', ')} ${where}. ` +
            `Declare '${parseMiddlewareName(reference).name}' in the middleware registry. Known: ${[...known].join(', ') || '(none)'}.`,
          { ...details, key: reference },
        ),
      );
    }
  }
  const model = options.model;
  const bindsModels = routes.some((route) => route.binding.kind === 'model');
  if (context.models !== undefined && bindsModels && typeof model === 'string') {
    const known = [...context.models];
    if (!known.includes(model)) {
      issues.push(
        new InvalidRouterConfigException(
          `MachineRouter: unknown model '${model}' ${where}. Provide a binder for it in the router's 'models' ` +
            `(e.g. models: { ${model}: tableModelBinder(...) }). Known: ${known.join(', ') || '(none)'}.`,
          { ...details, key: 'model' },
        ),
      );
    }
  }
  return issues;
}
