/**
 * Turns the config's `models` into the binders a `MachineRouter` takes. The generated app calls
 * it once its store is open, since a table model needs the store's own connection.
 */
import { tableModelBinder } from '../runtime/http/model-binder.js';
import type { ModelBinder } from '../runtime/http/types.js';
import type { Store } from '../runtime/persistence/store.js';
import type { ModelConfig, TableModelConfig } from './config.js';

/** Whether a model of the config names a table (`{ table, key }`) rather than being a binder. */
export function isTableModel(model: ModelConfig): model is TableModelConfig {
  return typeof (model as Partial<TableModelConfig>).table === 'string';
}

/**
 * The binder of every model: `tableModelBinder({ store, table, key })` for a table model, the
 * object itself for a binder of your own.
 *
 * @example
 * const router = new MachineRouter({ runtime, models: resolveModelBinders(config.models, runtime.store) });
 */
export function resolveModelBinders(
  models: Readonly<Record<string, ModelConfig>> | undefined,
  store: Store,
): Record<string, ModelBinder> {
  return Object.fromEntries(
    Object.entries(models ?? {}).map(([name, model]) => [
      name,
      isTableModel(model) ? tableModelBinder({ store, table: model.table, key: model.key }) : model,
    ]),
  );
}
