import { AppError, ValidationError } from '../../errors';
import type { Agent, AgentVersionPin } from '../agents/schemas';
import { getVersion, listVersions, type AgentVersion } from '../agents/versions';
import { findAgent, isActive } from '../chats/store';
import { rawBody, type RawBody } from '../common/raw-body';

/**
 * The OpenAI-compatible endpoint's models (`GET /openai/v1/models`, `GET /openai/v1/models/{model}`):
 * the organization's active agents and their versions. A module apart from completions.ts, so
 * the two model functions do not bundle the conversation's code.
 */

/** 404 model_not_found, as OpenAI answers it. */
export const notFound = (model: string) =>
  new AppError(404, 'NOT_FOUND', `The model \`${model}\` does not exist or you do not have access to it (model is the id of one of your active agents, optionally @<version> or @draft; GET /openai/v1/models lists them)`, { param: 'model', resource: 'Agent', id: model });

/** `model`: an agent's id, optionally `@<version>` or `@draft`. */
export function parseModel(model: string): { agentId: string; pin: AgentVersionPin | undefined } {
  const at = model.lastIndexOf('@');
  if (at < 0) return { agentId: model, pin: undefined };
  const agentId = model.slice(0, at);
  const tail = model.slice(at + 1);
  if (tail === 'draft') return { agentId, pin: 'draft' };
  if (!/^[1-9][0-9]{0,8}$/.test(tail)) throw ValidationError.field('model', `"${model}": after @ comes a published version's number or "draft"`);
  return { agentId, pin: Number(tail) };
}

/** A model object, as OpenAI's `GET /models` lists and `GET /models/{id}` retrieves it. */
const modelObject = (id: string, createdAt: string | undefined, orgId: string) => ({ id, object: 'model' as const, created: Math.floor(Date.parse(createdAt ?? '') / 1000) || 0, owned_by: orgId });

/** One model (`GET /openai/v1/models/{model}`): an active agent, or one of its versions; 404 model_not_found otherwise. */
export async function retrieveModel(orgId: string, model: string): Promise<RawBody> {
  const { agentId, pin } = parseModel(model);
  const draft = await findAgent(orgId, agentId);
  if (!draft || !isActive(draft)) throw notFound(model);
  let createdAt = draft.created_at;
  if (typeof pin === 'number') {
    const version = await getVersion(orgId, agentId, pin).catch(() => undefined);
    if (!version) throw notFound(model);
    createdAt = version.created_at;
  }
  return rawBody('application/json', JSON.stringify(modelObject(model, createdAt, orgId)));
}

/** The organization's active agents as models: each agent (its published version, else its draft), `<id>@draft` and `<id>@<version>` for each published version. */
export async function listModels(orgId: string): Promise<RawBody> {
  const { listAgents } = await import('../agents/service');
  const data: { id: string; object: 'model'; created: number; owned_by: string }[] = [];
  let cursor: string | undefined;
  do {
    const page = (await listAgents(orgId, { limit: 100, ...(cursor ? { cursor } : {}), status: 'AGENT_STATUS_ACTIVE' } as never)) as unknown as { items: Agent[]; meta: { next_cursor: string | null } };
    for (const a of page.items) {
      data.push(modelObject(a.id, a.created_at, orgId), modelObject(`${a.id}@draft`, a.updated_at, orgId));
      // Each published version, pinned: `<id>@<version>`.
      let versionCursor: string | undefined;
      do {
        const versions = (await listVersions(orgId, a.id, { limit: 100, ...(versionCursor ? { cursor: versionCursor } : {}) } as never)) as unknown as { items: AgentVersion[]; meta: { next_cursor: string | null } };
        for (const v of versions.items) data.push(modelObject(`${a.id}@${v.version}`, v.created_at, orgId));
        versionCursor = versions.meta?.next_cursor ?? undefined;
      } while (versionCursor);
    }
    cursor = page.meta?.next_cursor ?? undefined;
  } while (cursor);
  return rawBody('application/json', JSON.stringify({ object: 'list', data }));
}
