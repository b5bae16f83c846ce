import { MAX_ATTEMPTS, pause } from '../../db/retry';
import { listCollection, requireSomeField } from '../common/collection';
import { v7 as uuidv7 } from 'uuid';
import { secrets } from '../../adapters/secrets';
import { newWebhookSecret } from '../webhooks/signature';
import { config } from '../../config';
import { collections, keys, Prefix } from '../../db/keys';
import { getMany } from '../../db/filtered-query';
import {
  ConditionFailed,
  ignoreConditionFailed,
  deleteExisting,
  getItem,
  putNew,
  stripKeys,
  transact,
  updateExisting,
  type PageRequest,
} from '../../db/store';
import { ConflictError, NotFoundError, ValidationError } from '../../errors';
import { removeToolFromAgents } from '../agents/tool-references';
import {
  toolDefaults,
  toolIssues,
  webhookDefaults,
  WEBHOOK_FIELDS,
  type CreateToolInput,
  type Tool,
  type UpdateToolInput,
} from './schemas';

/**
 * The stored tool; `deleting_at` marks one being deleted (see deleteTool), never shown. A webhook
 * tool's signing secrets are sealed (never shown after create or rotate, never logged).
 */
export type ToolItem = Tool & { pk: string; sk: string; version: number; deleting_at?: string; secret_sealed?: string; previous_secret_sealed?: string; previous_secret_expires_at?: string };

/** How long a rotated-out tool secret keeps signing beside the new one. */
export const TOOL_ROTATION_OVERLAP_MS = 24 * 3600_000;

const ENTITY = 'TOOL';


/** The sealed fields of a webhook tool: dropped when it becomes a `function` tool. */
const SECRET_FIELDS = ['secret_sealed', 'previous_secret_sealed', 'previous_secret_expires_at'] as const;

/**
 * The public view: never a sealed secret. Webhook tools show `previous_secret_expires_at` as
 * webhook endpoints do (while a rotated-out secret still signs, when it stops; else null).
 */
function view(item: ToolItem): Tool {
  const { secret_sealed, previous_secret_sealed, previous_secret_expires_at, deleting_at, ...rest } = stripKeys(item) as ToolItem;
  void secret_sealed; void deleting_at;
  if (rest.type !== 'webhook') return rest as Tool;
  return { ...rest, previous_secret_expires_at: previous_secret_sealed ? (previous_secret_expires_at ?? null) : null } as Tool;
}

/** The secrets that sign a webhook tool's request at `now`: the current one, and the previous one during its overlap (none for a tool that has none yet). */
export async function toolSigningSecrets(item: ToolItem, now: number): Promise<string[]> {
  if (!item.secret_sealed) return [];
  const box = secrets();
  const current = await box.open(item.secret_sealed);
  const previousValid = item.previous_secret_sealed && item.previous_secret_expires_at && Date.parse(item.previous_secret_expires_at) > now;
  return previousValid ? [current, await box.open(item.previous_secret_sealed!)] : [current];
}

/** A live tool with its sealed fields, or undefined. */
export async function findToolItem(orgId: string, id: string): Promise<ToolItem | undefined> {
  const item = await getItem<ToolItem>(keys.tool(orgId, id));
  return item && !item.deleting_at ? item : undefined;
}

/**
 * The live tools of the organization among `ids` (with their sealed fields, for the engine to run
 * them without another read), in one BatchGetItem per 100; ids that do not exist or are being
 * deleted are left out. Order is not kept: callers look tools up by id.
 */
export async function getToolsByIds(orgId: string, ids: readonly string[]): Promise<ToolItem[]> {
  const unique = [...new Set(ids)];
  if (!unique.length) return [];
  const stored = await getMany<ToolItem>(unique.map((id) => keys.tool(orgId, id)));
  return stored.filter((t) => !t.deleting_at);
}

/**
 * A webhook tool with no secret yet (created before tools had secrets, or made a webhook tool
 * by PATCH) gets one on first use, so every request it sends is signed; its owner learns a
 * secret from rotate-secret (the first-use one keeps signing beside it for 24 h). Written only
 * if the tool still has none: of two racing first uses, both sign with the one stored.
 */
export async function ensureToolSecret(item: ToolItem): Promise<ToolItem> {
  if (item.secret_sealed || item.type !== 'webhook') return item;
  const sealed = await secrets().seal(newWebhookSecret());
  try {
    await transact([updateExisting(keys.tool(item.organizationId, item.id), { secret_sealed: sealed }, {
      condition: 'attribute_not_exists(secret_sealed) AND attribute_not_exists(deleting_at) AND #type = :webhook',
      names: { '#type': 'type' },
      values: { ':webhook': 'webhook' },
    })]);
    return { ...item, secret_sealed: sealed };
  } catch (err) {
    if (!(err instanceof ConditionFailed)) throw err;
    return (await findToolItem(item.organizationId, item.id)) ?? item;
  }
}

/** Throws one 400 naming every cross-field rule the whole tool breaks. */
function assertConsistent(tool: Partial<Tool>): void {
  const issues = toolIssues(tool, { requireHttps: config().runtime !== 'local' });
  if (issues.length) {
    throw new ValidationError(`Validation failed: ${issues.map((i) => `${i.path} ${i.message}`).join('; ')}`, issues);
  }
}

/** The webhook fields a webhook tool falls back to when they are not set. */
function missingWebhookDefaults(tool: Partial<Tool>): Partial<Tool> {
  if (tool.type !== 'webhook') return {};
  return Object.fromEntries(Object.entries(webhookDefaults).filter(([field]) => tool[field as keyof Tool] === undefined));
}

/** Creates a tool; a webhook tool gets its own signing secret (`whsec_…`), answered once. */
export async function createTool(orgId: string, input: CreateToolInput): Promise<Tool & { secret?: string }> {
  const supplied = { ...toolDefaults, ...input };
  assertConsistent(supplied);
  const now = new Date().toISOString();
  const id = uuidv7();
  const tool = { id, organizationId: orgId, ...supplied, ...missingWebhookDefaults(supplied), createdAt: now, updatedAt: now } as Tool;
  const secret = tool.type === 'webhook' ? newWebhookSecret() : undefined;
  const sealed = secret ? { secret_sealed: await secrets().seal(secret) } : {};
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    try {
      await transact([putNew({ ...keys.tool(orgId, id), entity: ENTITY, version: 1, ...tool, ...sealed })], [{ orgId, collection: collections.tools, delta: 1 }]);
      return secret ? { ...tool, previous_secret_expires_at: null, secret } : tool;
    } catch (err) {
      // A fresh id never exists, so a failed condition is a transaction conflict on the counter.
      if (!(err instanceof ConditionFailed)) throw err;
      await pause(attempt);
    }
  }
  throw new ConflictError('Too many concurrent changes to the organization\'s tools; retry', {});
}

/** A live tool, or a 404 (a tool being deleted is already gone for every caller). */
async function liveTool(orgId: string, id: string): Promise<ToolItem> {
  const item = await getItem<ToolItem>(keys.tool(orgId, id));
  if (!item || item.deleting_at) throw new NotFoundError('Tool', id);
  return item;
}

export async function getTool(orgId: string, id: string): Promise<Tool> {
  return view(await liveTool(orgId, id));
}

export function listTools(orgId: string, query: PageRequest) {
  return listCollection(orgId, Prefix.tool, collections.tools, query, view, (item: ToolItem) => !item.deleting_at);
}

/**
 * Applies a partial update (`definition` is replaced as a whole). Whether the result is a
 * valid tool depends on the stored type, so it reads, merges, validates the merged tool and
 * writes only the changed fields in one UpdateItem conditioned on the version read; a
 * concurrent change makes it start over, so no field is lost and no mixed tool is stored.
 * Changing `type` to `function` drops the stored webhook fields; changing it to `webhook`
 * needs a `url` (in the body or stored) and fills the webhook defaults.
 */
export async function updateTool(orgId: string, id: string, input: UpdateToolInput): Promise<Tool> {
  requireSomeField(input);
  const key = keys.tool(orgId, id);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const item = await liveTool(orgId, id);
    const current = view(item);
    const becomesFunction = input.type === 'function' && current.type !== 'function';
    const remove: string[] = becomesFunction ? WEBHOOK_FIELDS.filter((f) => current[f] !== undefined) : [];
    // A function tool signs nothing: its secrets go (a webhook tool again gets a new one, see ensureToolSecret).
    if (becomesFunction) remove.push(...SECRET_FIELDS.filter((f) => item[f] !== undefined));
    const base: Record<string, unknown> = { ...current };
    for (const field of [...remove, ...(becomesFunction ? SECRET_FIELDS : [])]) delete base[field];
    const merged = { ...base, ...input } as Partial<Tool>;
    assertConsistent(merged);
    const set = { ...input, ...missingWebhookDefaults(merged), updatedAt: new Date().toISOString() };
    try {
      await transact([
        updateExisting(key, set, { remove: [...remove], condition: '#ver = :ver', names: { '#ver': 'version' }, values: { ':ver': item.version } }),
      ]);
      const stored: Record<string, unknown> = { ...item, ...set };
      for (const field of remove) delete stored[field];
      return view(stored as ToolItem);
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      await pause(attempt);
    }
  }
  throw new ConflictError('The tool is being changed by other requests; retry', { id });
}

/**
 * Deletes a tool permanently, then removes it from every agent that selected it. The tool
 * goes first: from then on an agent write that references it fails its reference guard, so
 * the cleanup cannot be undone by a concurrent agent update.
 */
export async function deleteTool(orgId: string, id: string): Promise<void> {
  const key = keys.tool(orgId, id);
  // Phase 1: retire the tool. From here on it is gone for every reader, it no longer counts,
  // and no agent write can select it (the reference guard refuses a retiring tool).
  for (let attempt = 0; ; attempt++) {
    try {
      await transact(
        [updateExisting(key, { deleting_at: new Date().toISOString() }, { condition: 'attribute_not_exists(deleting_at)' })],
        [{ orgId, collection: collections.tools, delta: -1 }],
      );
      break;
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      const item = await getItem<ToolItem>(key);
      if (!item) throw new NotFoundError('Tool', id);
      // A delete that died after phase 1: finish it.
      if (item.deleting_at) break;
      // Still live: the transaction lost a race on the counter; try again.
      if (attempt + 1 >= MAX_ATTEMPTS) throw new ConflictError('The tool is being changed by other requests; retry', { id });
      await pause(attempt);
    }
  }
  // Phase 2: take it out of every agent, then remove the item. A crash in between leaves a
  // retiring tool that the next DELETE of the same id finishes, so no agent keeps a dangling reference.
  await removeToolFromAgents(orgId, id);
  await transact([deleteExisting(key)]).catch(ignoreConditionFailed);
}

/**
 * A new signing secret for a webhook tool, answered once. The old one keeps signing beside it
 * (space-separated signatures, new first) for 24 h, as webhook endpoints do; a tool created
 * before tools had secrets gets its first one here. Function tools have none (400).
 */
export async function rotateToolSecret(orgId: string, id: string): Promise<Tool & { secret: string }> {
  const secret = newWebhookSecret();
  const sealed = await secrets().seal(secret);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const item = await liveTool(orgId, id);
    if (item.type !== 'webhook') throw ValidationError.field('type', 'only webhook tools have a signing secret');
    const now = Date.now();
    const set: Record<string, unknown> = {
      secret_sealed: sealed,
      ...(item.secret_sealed ? { previous_secret_sealed: item.secret_sealed, previous_secret_expires_at: new Date(now + TOOL_ROTATION_OVERLAP_MS).toISOString() } : {}),
      updatedAt: new Date(now).toISOString(),
    };
    try {
      await transact([updateExisting(keys.tool(orgId, id), set, { condition: '#ver = :ver', names: { '#ver': 'version' }, values: { ':ver': item.version } })]);
      return { ...view({ ...item, ...set } as ToolItem), secret };
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      await pause(attempt);
    }
  }
  throw new ConflictError('The tool is being changed by other requests; retry', { id });
}
