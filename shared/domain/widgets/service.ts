import { MAX_ATTEMPTS, pause } from '../../db/retry';
import { getOr404, listCollection, requireSomeField } from '../common/collection';
import { v7 as uuidv7 } from 'uuid';
import { collections, gsi2, keys, Prefix } from '../../db/keys';
import {
  ConditionFailed,
  getItem,
  putNew,
  stripKeys,
  transact,
  updateExisting,
  type PageRequest,
} from '../../db/store';
import { ConflictError, NotFoundError } from '../../errors';
import { widgetDefaults, type CreateWidgetInput, type UpdateWidgetInput, type WidgetSettings } from './schemas';

type WidgetItem = WidgetSettings & { pk: string; sk: string; version: number };

const ENTITY = 'WIDGET';
const RESOURCE = 'Widget settings';


/** Settings stored before `public_variables` and `daily_message_limit` existed read as their defaults. */
function view(item: WidgetItem): WidgetSettings {
  const stored = stripKeys(item) as Partial<WidgetSettings>;
  return { ...stored, public_variables: stored.public_variables ?? widgetDefaults.public_variables, daily_message_limit: stored.daily_message_limit ?? widgetDefaults.daily_message_limit, voice_enabled: stored.voice_enabled ?? widgetDefaults.voice_enabled } as WidgetSettings;
}

/**
 * Creates widget settings. The item also carries `gsi2pk = WIDGET#<id>`, `gsi2sk = WIDGET`:
 * the agents tied to the widget share that partition, so the public config is one Query.
 */
export async function createWidgetSettings(orgId: string, input: CreateWidgetInput): Promise<WidgetSettings> {
  const now = new Date().toISOString();
  const id = uuidv7();
  const widget: WidgetSettings = { id, organization_id: orgId, ...widgetDefaults, ...input, created_at: now, updated_at: now };
  const item = { ...keys.widget(orgId, id), gsi2pk: gsi2.widget(id), gsi2sk: gsi2.widgetSelf, entity: ENTITY, version: 1, ...widget };
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    try {
      await transact([putNew(item)], [{ orgId, collection: collections.widgets, delta: 1 }]);
      return widget;
    } catch (err) {
      // A fresh id never exists, so a failed condition is a transaction conflict on the counter.
      if (!(err instanceof ConditionFailed)) throw err;
      await pause(attempt);
    }
  }
  throw new ConflictError('Too many concurrent changes to the organization\'s widget settings; retry', {});
}

/** Widget settings stay readable after they are deactivated. */
export async function getWidgetSettings(orgId: string, id: string): Promise<WidgetSettings> {
  return view(await getOr404<WidgetItem>(keys.widget(orgId, id), RESOURCE, id));
}

/** Every widget settings of the organization, deactivated ones included. */
export function listWidgetSettings(orgId: string, query: PageRequest) {
  return listCollection(orgId, Prefix.widget, collections.widgets, query, view);
}

/**
 * Applies a partial update in one conditional UpdateItem: no field depends on another, so no
 * read is needed and concurrent PATCHes never lose each other's fields. `is_active: true`
 * reactivates deactivated settings.
 */
export async function updateWidgetSettings(orgId: string, id: string, input: UpdateWidgetInput): Promise<WidgetSettings> {
  requireSomeField(input);
  try {
    await transact([updateExisting(keys.widget(orgId, id), { ...input, updated_at: new Date().toISOString() })]);
  } catch (err) {
    if (err instanceof ConditionFailed) throw new NotFoundError(RESOURCE, id);
    throw err;
  }
  return getWidgetSettings(orgId, id);
}

/**
 * Deactivates widget settings (the spec's DELETE): `is_active` becomes false, the settings
 * stay readable, and the public config of the widget answers 404 from then on. Deactivating
 * again succeeds and changes nothing.
 */
export async function deactivateWidgetSettings(orgId: string, id: string): Promise<void> {
  const key = keys.widget(orgId, id);
  try {
    await transact([
      updateExisting(key, { is_active: false, updated_at: new Date().toISOString() }, { condition: '#active = :true', names: { '#active': 'is_active' }, values: { ':true': true } }),
    ]);
  } catch (err) {
    if (!(err instanceof ConditionFailed)) throw err;
    if (!(await getItem(key))) throw new NotFoundError(RESOURCE, id);
  }
}
