import { tableName } from '../../db/client';
import { keys } from '../../db/keys';
import { ConditionFailed, transact } from '../../db/store';
import { ConflictError, UnprocessableError } from '../../errors';
import type { ConcurrencyView, UpdateConcurrencyInput } from './schemas';
import { limitsOf, readConcurrency, type ConcurrencyItem } from './slots';
import { config } from '../../config';
import { promoteWaiting } from '../calls/queued-calls';
import { expireWaiting } from '../calls/lifecycle';

const count = (n: number | undefined) => Math.max(0, n ?? 0);

/** The API's view of the organization's counter item. */
function viewOf(item: ConcurrencyItem | undefined): ConcurrencyView {
  const { limit, ceiling } = limitsOf(item);
  return {
    limit,
    ceiling,
    in_progress: { outbound: count(item?.outbound), inbound: count(item?.inbound), web: count(item?.web), total: count(item?.total) },
    queued: count(item?.queued),
  };
}

/** GET /concurrency: one strongly consistent read of the counter item. */
export async function getConcurrency(orgId: string): Promise<ConcurrencyView> {
  return viewOf(await readConcurrency(orgId));
}

/**
 * PATCH /concurrency: the organization's own limit, 1 … its ceiling. Written conditioned on the
 * ceiling read (an admin lowering it meanwhile is not overtaken): a 409 when it changed. Calls
 * already live stay; new ones are refused (or wait) until the count is below the new limit; a
 * higher limit places waiting calls (`"queue": true`) into the slots it opens.
 */
export async function updateConcurrency(orgId: string, input: UpdateConcurrencyInput): Promise<ConcurrencyView> {
  const item = await readConcurrency(orgId);
  const { ceiling } = limitsOf(item);
  if (input.limit > ceiling) {
    throw new UnprocessableError(`limit ${input.limit} is above the organization's ceiling of ${ceiling} (the operator sets the ceiling)`, { limit: input.limit, ceiling });
  }
  try {
    await transact([setOn(orgId, { limit: input.limit }, item?.ceiling)]);
  } catch (err) {
    if (err instanceof ConditionFailed) throw new ConflictError('The concurrency ceiling changed meanwhile; read it again', { ceiling });
    throw err;
  }
  // A raised limit frees slots no call's end will announce: the waiting calls take them now.
  await promoteWaiting(orgId, expireWaiting);
  return getConcurrency(orgId);
}

/**
 * The operator's ceiling for one organization (the admin command): its limit is lowered to it
 * when above; waiting calls are placed into any slots a higher one opens. `undefined` goes back to
 * CONCURRENCY_CEILING.
 */
export async function setConcurrencyCeiling(orgId: string, ceiling: number | undefined): Promise<ConcurrencyView> {
  const item = await readConcurrency(orgId);
  const effective = ceiling ?? config().concurrencyCeiling;
  const limit = item?.limit !== undefined && item.limit > effective ? effective : undefined;
  await transact([setOn(orgId, { ...(ceiling !== undefined ? { ceiling } : {}), ...(limit !== undefined ? { limit } : {}) }, item?.ceiling, ceiling === undefined)]);
  // A raised ceiling raises a limit left at it (the default): the waiting calls take the slots it opens now.
  await promoteWaiting(orgId, expireWaiting);
  return getConcurrency(orgId);
}

/** An update of the counter item's settings (never its counts), conditioned on the ceiling read. */
function setOn(orgId: string, set: Record<string, number>, ceilingRead: number | undefined, removeCeiling = false) {
  const names: Record<string, string> = { '#ceil': 'ceiling' };
  const values: Record<string, number> = {};
  const sets = Object.entries(set).map(([k, v], i) => {
    names[`#s${i}`] = k;
    values[`:s${i}`] = v;
    return `#s${i} = :s${i}`;
  });
  if (ceilingRead !== undefined) values[':read'] = ceilingRead;
  const expression = [sets.length ? `SET ${sets.join(', ')}` : '', removeCeiling ? 'REMOVE #ceil' : ''].filter(Boolean).join(' ') || 'SET #ceil = #ceil';
  return {
    Update: {
      TableName: tableName(),
      Key: keys.concurrency(orgId),
      UpdateExpression: expression,
      ConditionExpression: ceilingRead === undefined ? 'attribute_not_exists(#ceil)' : '#ceil = :read',
      ExpressionAttributeNames: names,
      ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
    },
  };
}
