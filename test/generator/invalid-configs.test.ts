import { describe, expect, it } from 'vitest';
import { checkProject } from '../../src/generator/generate.js';
import { ROOT } from './support.js';

/**
 * One config per build-time error of the spec: [fixture, exception, code, line, column, message]
 * of the first problem `check` reports (sorted by file and line).
 */
const CASES: Array<[string, string, string, number, number, string]> = [
  [
    'admin-without-middleware',
    'AdminMiddlewareRequiredException',
    'MR_ADMIN_MIDDLEWARE_REQUIRED',
    21,
    28,
    "admin: the admin route group names no middleware, and its routes read and repair every instance. Name the middleware that checks operators, e.g. admin: { middleware: ['auth:admin'] }, and declare it in the config's middleware.",
  ],
  [
    'config-shape',
    'InvalidConfigFileException',
    'MR_INVALID_CONFIG_FILE',
    1,
    1,
    'config-shape.config.ts must export defineConfig({ ... }) as default: registrations: register at least one machine; output.framework: Invalid option: expected one of "fastify"|"express".',
  ],
  [
    'config-models',
    'InvalidConfigFileException',
    'MR_INVALID_CONFIG_FILE',
    1,
    1,
    'config-models.config.ts must export defineConfig({ ... }) as default: models.Invoice.table: must be a plain SQL identifier (letters, digits, _); models.Order: must be a table model { table, key } or a model binder { find, readMachineId, writeMachineId }.',
  ],
  [
    'behavior-not-found',
    'BehaviorNotFoundException',
    'MR_BEHAVIOR_NOT_FOUND',
    10,
    55,
    "Machine 'order', state 'idle': guard 'isOpen' (in on.SUBMIT.guards) is not defined. Add it under behavior.guards.",
  ],
  [
    'endpoint-forward-declared-as-endpoint',
    'InvalidEndpointDefinitionException',
    'MR_INVALID_ENDPOINT_DEFINITION',
    26,
    19,
    "State 'checkout.paying' forwards 'PROVIDE_CARD' which is also declared in parent's endpoints. Remove 'PROVIDE_CARD' from endpoints — forward is the single source of truth for child events.",
  ],
  [
    'endpoint-forward-in-behavior-events',
    'InvalidEndpointDefinitionException',
    'MR_INVALID_ENDPOINT_DEFINITION',
    26,
    19,
    "State 'checkout.paying' forwards 'PROVIDE_CARD' which is also declared in parent's behavior.events. Remove 'PROVIDE_CARD' from behavior.events — forward auto-discovers child events.",
  ],
  [
    'endpoint-forward-in-two-states',
    'InvalidEndpointDefinitionException',
    'MR_INVALID_ENDPOINT_DEFINITION',
    32,
    19,
    "Forward event 'PROVIDE_CARD' is declared in multiple delegating states ('checkout.paying' and 'checkout.retrying'). Use rename syntax to disambiguate (e.g., { CANCEL_PAYMENT: 'CANCEL' }).",
  ],
  [
    'endpoint-invalid-action',
    'InvalidEndpointDefinitionException',
    'MR_INVALID_ENDPOINT_DEFINITION',
    11,
    27,
    "Endpoint action `audit` of endpoint `SUBMIT` (machine 'order') must be created with defineEndpointAction(), be an object of before/after/onException hooks, or be a key of behavior 'endpointActions'.",
  ],
  [
    'endpoint-invalid-contention',
    'InvalidEndpointDefinitionException',
    'MR_INVALID_ENDPOINT_DEFINITION',
    11,
    27,
    "Endpoint `SUBMIT` of machine 'order': 'contention' must be 'reject' or { wait: 5000 } (milliseconds, 1 to 60000); 'wait' got 0.",
  ],
  [
    'endpoint-undefined-event',
    'InvalidEndpointDefinitionException',
    'MR_INVALID_ENDPOINT_DEFINITION',
    11,
    25,
    "Endpoint references undefined event type `SHIP` in machine 'order'. Ensure a state handles it under 'on' (and list its payload under the behavior 'events').",
  ],
  [
    'endpoint-undefined-output',
    'InvalidEndpointDefinitionException',
    'MR_INVALID_ENDPOINT_DEFINITION',
    11,
    27,
    "Endpoint references undefined output behavior `summary` (endpoint `SUBMIT` of machine 'order'). Ensure it is listed in the behavior 'outputs' or pass the function itself.",
  ],
  [
    'output-in-parallel-region',
    'InvalidOutputDefinitionException',
    'MR_INVALID_OUTPUT_DEFINITION',
    15,
    65,
    "Machine 'order', state 'active.payment.paid': 'output' is not allowed on a state inside a parallel region. Define it on the parallel state itself.",
  ],
  [
    'output-injection',
    'MachineOutputInjectionException',
    'MR_MACHINE_OUTPUT_INJECTION',
    28,
    21,
    "Machine 'checkout', state 'paying': forward 'PROVIDE_CARD' uses output 'childOutput', which reads the child's output, but child machine 'payment' defines no output on any state. Add output: [...keys] (or an output behavior) to the child's final states, or use a plain output behavior.",
  ],
  [
    'output-on-transient',
    'InvalidOutputDefinitionException',
    'MR_INVALID_OUTPUT_DEFINITION',
    11,
    46,
    "Machine 'order', state 'checking': 'output' is not allowed on a transient (@always) state: it is left before anyone reads it. Move the output to the state it leads to.",
  ],
  [
    'typed-input-missing-key',
    'MachineInputValidationException',
    'MR_MACHINE_INPUT_VALIDATION',
    15,
    35,
    "Machine 'order', state 'paying': its 'input' passes 'amont' to child machine 'payment', but machine 'order' has no such context key (context keys: orderId, amount). Name keys of 'order' context in 'input', or add 'amont' to its context.",
  ],
  [
    'typed-input-unmet',
    'MachineInputValidationException',
    'MR_MACHINE_INPUT_VALIDATION',
    21,
    35,
    "Machine 'order', state 'paying': child machine 'payment' requires input 'amount' (its input schema), which this state's 'input' does not pass. Pass them in 'input' (e.g. input: ['orderId', 'amount']) or make them optional in 'payment' input schema.",
  ],
  [
    'typed-output-unresolvable',
    'MachineOutputResolutionException',
    'MR_MACHINE_OUTPUT_RESOLUTION',
    13,
    30,
    "Machine 'payment', state 'paid': its typed 'output' requires 'paymentId', which the context does not have (context keys: amount). Add 'paymentId' to the context or to behavior.computed, or make them optional in the output schema.",
  ],
  [
    'typed-failure-not-schema',
    'MachineFailureResolutionException',
    'MR_MACHINE_FAILURE_RESOLUTION',
    10,
    5,
    "Machine 'payment', root state: root 'failure' must be a zod object schema (the machine's typed failure). Use failure: z.object({ ... }).",
  ],
  [
    'router-invalid-contention',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    20,
    7,
    "MachineRouter: 'contention' must be 'reject' or { wait: 5000 } (milliseconds, 1 to 60000), got 'wait'. (machine 'order', registration 'order')",
  ],
  [
    'router-invalid-flow',
    'InvalidFlowControlException',
    'MR_INVALID_FLOW_CONTROL',
    20,
    7,
    "MachineRouter: 'flow' of `SUBMIT` has rate {\"limit\":10}: use { limit, interval }, at most limit (1 to 1000000) requests of one key per interval ms (1 to 86400000), e.g. { limit: 100, interval: 1000 }. (machine 'order', registration 'order')",
  ],
  [
    'router-binding-overlap',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    25,
    7,
    "MachineRouter: events cannot be in both 'machineIdFor' and 'modelFor': SUBMIT. Keep each in one list. (machine 'order', registration 'order')",
  ],
  [
    'router-duplicate-name',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    21,
    5,
    "MachineRouter: two registrations are named 'order', so their routes would share names. Give each registration of 'order' a distinct 'name'.",
  ],
  [
    'router-forwarded-in-machine-id-for',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    36,
    51,
    "MachineRouter: 'machineIdFor' cannot reference forwarded endpoints (they inherit binding mode from parent model config): PROVIDE_CARD. Remove them from 'machineIdFor'. (machine 'checkout', registration 'checkout')",
  ],
  [
    'router-forwarded-in-model-for',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    42,
    7,
    "MachineRouter: 'modelFor' cannot reference forwarded endpoints (they inherit binding mode from parent model config): PROVIDE_CARD. Remove them from 'modelFor'. (machine 'checkout', registration 'checkout')",
  ],
  [
    'router-machine-id-for-filtered',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    20,
    52,
    "MachineRouter: 'machineIdFor' references event types not in the registered endpoint set: CANCEL (filtered by 'only'). Remove from 'machineIdFor' or add to 'only'. (machine 'order', registration 'order')",
  ],
  [
    'router-machine-id-for-unknown',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    19,
    48,
    "MachineRouter: 'machineIdFor' references event types not in the registered endpoint set: SHIP. Available: SUBMIT, CANCEL. (machine 'order', registration 'order')",
  ],
  [
    'router-missing-prefix',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    19,
    30,
    "MachineRouter: 'prefix' is required, e.g. { prefix: 'orders' }. (machine 'order', registration 'order')",
  ],
  [
    'router-model-for-filtered',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    26,
    7,
    "MachineRouter: 'modelFor' references event types not in the registered endpoint set: CANCEL (filtered by 'except'). Remove from 'modelFor' or adjust 'except'. (machine 'order', registration 'order')",
  ],
  [
    'router-model-for-unknown',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    20,
    75,
    "MachineRouter: 'modelFor' references event types not in the registered endpoint set: SHIP. Available: SUBMIT, CANCEL. (machine 'order', registration 'order')",
  ],
  [
    'router-model-without-attribute',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    19,
    19,
    "MachineRouter: 'model' and 'attribute' are required when 'modelFor' is set, e.g. { model: 'Order', attribute: 'machine_id' }. (machine 'order', registration 'order')",
  ],
  [
    'read-collides-with-endpoint',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    13,
    9,
    "MachineRouter: read route GET '/{machineId}/current' (read 'current') collides with the existing endpoint route 'order.status' in the same group. Give the read another 'uri'. (machine 'order', registration 'order')",
  ],
  [
    'read-duplicate-uri',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    13,
    9,
    "MachineRouter: duplicate read URI '/status' within one registration (reads 'status' and 'current'). Give 'current' another 'uri'. (machine 'order', registration 'order')",
  ],
  [
    'read-empty-uri',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    13,
    9,
    "MachineRouter: invalid read URI '' in read 'blank' — must be non-empty, not just '/', and contain no route placeholders ({...}); use letters, digits, '-', '_', '.', '~' and '/'. (machine 'order', registration 'order')",
  ],
  [
    'read-invalid-uri',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    13,
    9,
    "MachineRouter: invalid read URI '/items/{itemId}' in read 'item' — must be non-empty, not just '/', and contain no route placeholders ({...}); use letters, digits, '-', '_', '.', '~' and '/'. (machine 'order', registration 'order')",
  ],
  [
    'read-root-uri',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    13,
    9,
    "MachineRouter: invalid read URI '/' in read 'root' — must be non-empty, not just '/', and contain no route placeholders ({...}); use letters, digits, '-', '_', '.', '~' and '/'. (machine 'order', registration 'order')",
  ],
  [
    'read-unknown-option',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    12,
    35,
    "MachineRouter: unknown read option 'availableEvents' in read 'status'. Recognized: uri, output, middleware, status, available_events. (machine 'order', registration 'order')",
  ],
  [
    'read-with-action',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    13,
    37,
    "MachineRouter: read definition cannot contain 'action' — reads are pure GET projections (no actions, GET-only). Remove 'action' from read 'audited'. (machine 'order', registration 'order')",
  ],
  [
    'read-with-method',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    13,
    35,
    "MachineRouter: read definition cannot contain 'method' — reads are pure GET projections (no actions, GET-only). Remove 'method' from read 'posted'. (machine 'order', registration 'order')",
  ],
  [
    'router-only-and-except',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    19,
    48,
    "MachineRouter: 'only' and 'except' cannot be used together. Keep one of them. (machine 'order', registration 'order')",
  ],
  [
    'router-unknown-middleware',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    19,
    73,
    "MachineRouter: unknown middleware 'throttle' on order.submit, order.cancel (machine 'order', registration 'order'). Declare 'throttle' in the middleware registry. Known: auth.",
  ],
  [
    'router-unknown-model',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    20,
    34,
    "MachineRouter: unknown model 'Order' (machine 'order', registration 'order'). Provide a binder for it in the router's 'models' (e.g. models: { Order: tableModelBinder(...) }). Known: (none).",
  ],
  [
    'explain-available-events-not-boolean',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    12,
    7,
    "MachineRouter: 'explainAvailableEvents' must be true or false. (machine 'order', registration 'order')",
  ],
  [
    'router-unknown-only',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    19,
    48,
    "MachineRouter: unknown event types in 'only': SHIP. Available: SUBMIT, CANCEL. (machine 'order', registration 'order')",
  ],
  [
    'state-final-with-transitions',
    'InvalidStateConfigException',
    'MR_INVALID_STATE_CONFIG',
    11,
    30,
    "Machine 'order', state 'done': a final state cannot have transitions. Remove 'on' or make the state non-final.",
  ],
  [
    'stream-collides-with-endpoint',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    20,
    7,
    "MachineRouter: the state stream GET '/{machineId}/events' ('stream: true') collides with the route 'order.history' in the same group. Give that route another 'uri'. (machine 'order', registration 'order')",
  ],
  [
    'stream-not-boolean',
    'InvalidRouterConfigException',
    'MR_INVALID_ROUTER_CONFIG',
    12,
    7,
    "MachineRouter: 'stream' must be true or false. (machine 'order', registration 'order')",
  ],
  [
    'timer-non-positive',
    'InvalidTimerDefinitionException',
    'MR_INVALID_TIMER_DEFINITION',
    11,
    24,
    "Machine 'order', state 'waiting': transition 'EXPIRE': 'after' must be positive, got -5. Use a positive number of seconds or an object such as { minutes: 5 }.",
  ],
  [
    'timer-on-compound',
    'InvalidTimerDefinitionException',
    'MR_INVALID_TIMER_DEFINITION',
    12,
    15,
    "Machine 'order', state 'open': transition 'EXPIRE' has a timer on the compound state 'open'; timers run on leaf states only. Move the timed transition into the leaf states that wait (or into a child state that stays active).",
  ],
  [
    'timers-not-registered',
    'TimersNotRegisteredException',
    'MR_TIMERS_NOT_REGISTERED',
    11,
    24,
    "Machine 'order' has timed transitions (state 'waiting', event 'EXPIRE') but is not registered for timers, so they would never fire. Add { machine: <the order definition> } to 'timers' in the config (timers are registered explicitly since 9.3.0).",
  ],
  [
    'undefined-target',
    'UndefinedTargetStateException',
    'MR_UNDEFINED_TARGET_STATE',
    11,
    29,
    "Machine 'order', state 'idle': transition 'SUBMIT' targets 'shipped', which is not a sibling, an ancestor's sibling or a path from the root. Check the spelling or use a dotted path from the root (e.g. 'checkout.payment').",
  ],
];

describe('checkProject', () => {
  it.each(CASES)('should report %s as %s', async (fixture, name, code, line, column, message) => {
    const file = `fixtures/invalid/${fixture}.config.ts`;
    const report = await checkProject({ config: file, cwd: ROOT });
    expect(report.manifest).toBeNull();
    expect(report.issues[0]).toMatchObject({
      name,
      code,
      message,
      location: { file: `${ROOT}${file}`, line, column },
    });
  });

  it('should report each job actor definition error at its key', async () => {
    const file = 'fixtures/invalid/job-actors.config.ts';
    const report = await checkProject({ config: file, cwd: ROOT });
    expect(
      report.issues.map((issue) => [
        issue.code,
        issue.location?.file,
        issue.location?.line,
        issue.location?.column,
        issue.message.split(':')[0],
      ]),
    ).toEqual(
      [
        [19, 18, 'notAJob'],
        [20, 22, 'withMachine'],
        [21, 39, 'onParallel'],
        [22, 35, 'withForward'],
        [23, 20, 'noOutcome'],
        [24, 37, 'doneAndTarget'],
      ].map(([line, column, state]) => [
        'MR_INVALID_STATE_CONFIG',
        `${ROOT}${file}`,
        line,
        column,
        `Machine 'order', state '${state}'`,
      ]),
    );
    expect(report.issues.map((issue) => issue.message)).toEqual([
      expect.stringContaining(`invalid 'job' value`),
      expect.stringContaining(`cannot have both 'job' and 'machine'`),
      expect.stringContaining(`cannot have both 'job' and type 'parallel'`),
      expect.stringContaining(`has 'forward' with 'job'`),
      expect.stringContaining(`has 'job' without '@done' or 'target'`),
      expect.stringContaining(`cannot have both '@done' and 'target'`),
    ]);
  });

  it('should report an unresolvable target once, not the endpoint and filter naming its event', async () => {
    const report = await checkProject({
      config: 'fixtures/invalid/undefined-target.config.ts',
      cwd: ROOT,
    });
    expect(report.issues.map((issue) => [issue.code, issue.location?.line])).toEqual([
      ['MR_UNDEFINED_TARGET_STATE', 11],
    ]);
  });

  it('should report scenarios naming an unknown state, event, guard or action at their defineScenario', async () => {
    const file = 'fixtures/invalid/scenario-unknown-names.config.ts';
    const report = await checkProject({ config: file, cwd: ROOT });
    expect(report.manifest).toBeNull();
    expect(
      report.issues.map((issue) => [
        issue.code,
        issue.location?.line,
        issue.location?.column,
        issue.message,
      ]),
    ).toEqual([
      [
        'MR_INVALID_SCENARIO_DEFINITION',
        9,
        11,
        "Machine 'order', scenario 'from-nowhere': source state 'shipped' does not exist. Use a state path such as 'idle'.",
      ],
      [
        'MR_INVALID_SCENARIO_DEFINITION',
        17,
        10,
        "Machine 'order', scenario 'rigged': event 'APPROVE' is not handled by any state of the machine.",
      ],
      [
        'MR_INVALID_SCENARIO_DEFINITION',
        18,
        21,
        "Machine 'order', scenario 'rigged': plan.guards overrides guard 'isVip', which the machine does not have.",
      ],
      [
        'MR_INVALID_SCENARIO_DEFINITION',
        18,
        47,
        "Machine 'order', scenario 'rigged': plan.actions overrides action 'sendInvoice', which the machine does not have.",
      ],
    ]);
  });

  it('should report unknown keys of a registration, the config and its sections with the nearest key', async () => {
    const report = await checkProject({
      config: 'fixtures/invalid/unknown-keys.config.ts',
      cwd: ROOT,
    });
    expect(report.manifest).toBeNull();
    expect(
      report.issues.map((issue) => [
        issue.code,
        issue.location?.line,
        issue.location?.column,
        /unknown key '\w+'(?: \(did you mean '\w+'\?\))?/.exec(issue.message)?.[0],
      ]),
    ).toEqual([
      [
        'MR_INVALID_ROUTER_CONFIG',
        11,
        48,
        "unknown key 'machineIDFor' (did you mean 'machineIdFor'?)",
      ],
      ['MR_INVALID_CONFIG_FILE', 12, 13, "unknown key 'framwork' (did you mean 'framework'?)"],
      ['MR_INVALID_CONFIG_FILE', 13, 31, "unknown key 'descripton' (did you mean 'description'?)"],
      ['MR_INVALID_CONFIG_FILE', 14, 3, "unknown key 'midleware' (did you mean 'middleware'?)"],
      ['MR_INVALID_CONFIG_FILE', 15, 3, "unknown key 'somethingElse'"],
    ]);
  });

  it('should report a missing config file as InvalidConfigFileException', async () => {
    const report = await checkProject({ cwd: `${ROOT}fixtures` });
    expect(report.issues).toEqual([
      expect.objectContaining({
        name: 'InvalidConfigFileException',
        code: 'MR_INVALID_CONFIG_FILE',
        message: `No machine-routes.config.ts found in ${ROOT}fixtures. Create one exporting defineConfig({ ... }), or pass --config <path>.`,
      }),
    ]);
  });
});

describe('checkProject: timers entries', () => {
  it('should report unknown keys of a timers entry and of its schedules at their own lines', async () => {
    const file = 'fixtures/invalid/timers-unknown-keys.config.ts';
    const report = await checkProject({ config: file, cwd: ROOT });
    expect(report.manifest).toBeNull();
    expect(
      report.issues.map((issue) => [
        issue.name,
        issue.location?.file,
        issue.location?.line,
        issue.location?.column,
        issue.message,
      ]),
    ).toEqual([
      [
        'InvalidTimerDefinitionException',
        `${ROOT}${file}`,
        11,
        7,
        "The timer registration of 'order' has unknown key 'mised' (did you mean 'missed'?). Known keys: machine, missed, schedules.",
      ],
      [
        'InvalidScheduleDefinitionException',
        `${ROOT}${file}`,
        16,
        11,
        "Schedule 'TICK' of machine 'order': unknown key 'sates' (did you mean 'states'?). Known keys: name, cron, event, states, instances, resolver, timezone, missed.",
      ],
      [
        'InvalidScheduleDefinitionException',
        `${ROOT}${file}`,
        17,
        11,
        "Schedule 'TICK' of machine 'order': unknown key 'every'. Known keys: name, cron, event, states, instances, resolver, timezone, missed.",
      ],
    ]);
  });

  it('should report a bad selection of instances at the schedule key at fault', async () => {
    const file = 'fixtures/invalid/timers-schedule-selection.config.ts';
    const report = await checkProject({ config: file, cwd: ROOT });
    expect(report.manifest).toBeNull();
    expect(
      report.issues.map((issue) => [
        issue.code,
        issue.location?.file,
        issue.location?.line,
        issue.location?.column,
        issue.message,
      ]),
    ).toEqual([
      [
        'MR_INVALID_SCHEDULE_DEFINITION',
        `${ROOT}${file}`,
        12,
        77,
        "Schedule 'both' of machine 'order': 'states' and 'instances' both select instances. Keep one of 'states', 'instances' or 'resolver'.",
      ],
      [
        'MR_INVALID_SCHEDULE_DEFINITION',
        `${ROOT}${file}`,
        13,
        59,
        "Schedule 'some' of machine 'order': instances: \"some\" is not a selection. Use 'all' (every running instance), or 'states' or 'resolver'.",
      ],
      [
        'MR_INVALID_SCHEDULE_DEFINITION',
        `${ROOT}${file}`,
        14,
        59,
        "Schedule 'text' of machine 'order': resolver is string, not a function. Give a function of the tick returning instance ids.",
      ],
      [
        'MR_INVALID_SCHEDULE_DEFINITION',
        `${ROOT}${file}`,
        20,
        11,
        "Schedule 'late' of machine 'order': missed: 'catch-up' needs one answer per missed tick, and a resolver answers for the latest tick only. Give the schedule missed: 'once' or 'skip'.",
      ],
    ]);
  });

  it("should report a bad cron, a bad 'missed' and a second entry at the config's lines, not the machine's", async () => {
    const file = 'fixtures/invalid/timers-bad-cron.config.ts';
    const report = await checkProject({ config: file, cwd: ROOT });
    expect(report.manifest).toBeNull();
    expect(
      report.issues.map((issue) => [
        issue.code,
        issue.location?.file,
        issue.location?.line,
        issue.location?.column,
        issue.message,
      ]),
    ).toEqual([
      [
        'MR_INVALID_TIMER_DEFINITION',
        `${ROOT}${file}`,
        11,
        7,
        "Machine 'order' is registered for timers twice. Keep one entry for it in 'timers'.",
      ],
      [
        'MR_INVALID_TIMER_DEFINITION',
        `${ROOT}${file}`,
        12,
        7,
        'The timer registration of \'order\' has missed: "sometimes". Use one of: once, catch-up, skip.',
      ],
      [
        'MR_INVALID_SCHEDULE_DEFINITION',
        `${ROOT}${file}`,
        18,
        11,
        "Schedule 'nightly' of machine 'order': cron \"61 * * * *\" is not a valid expression. Use 5 fields (minute hour day month weekday) or 6 with seconds first, e.g. '0 9 * * 1-5'.",
      ],
    ]);
  });
});
