import { gsi1, keys } from '../../db/keys';
import { ConditionFailed, queryAll, transact } from '../../db/store';
import { clockNow } from '../../clock';
import { getMany } from '../../db/filtered-query';
import { updateWrite } from '../../db/update';
import { contactStatusIndex, type CampaignContactItem } from './model';

// Apart from the engine (which reaches the calls service and, through it, S3): cancelCampaign
// runs this inline, and a dynamic import of the engine from the service made the bundler load
// part of the S3 client's stream code at every campaign function's cold start.

/**
 * Fails every pending contact of a (cancelled) campaign with `message`, 25 at a time, each batch
 * with its counters in one transaction; contacts that moved on meanwhile are read back and left.
 */
export async function failPending(orgId: string, campaignId: string, message: string): Promise<number> {
  let failed = 0;
  for (;;) {
    const entries: { pk: string; sk: string }[] = [];
    for await (const e of queryAll<{ pk: string; sk: string }>(
      { index: gsi1.name, pkName: 'gsi1pk', pkValue: gsi1.campaignDue(orgId, campaignId), skName: 'gsi1sk' },
      ['pk', 'sk'],
    )) {
      entries.push({ pk: e.pk, sk: e.sk });
      if (entries.length >= 500) break;
    }
    const pending = (await getMany<CampaignContactItem>(entries)).filter((cc) => cc.status === 'pending');
    if (!pending.length) return failed;
    const now = clockNow().toISOString();
    for (let i = 0; i < pending.length; i += 25) {
      const batch = pending.slice(i, i + 25);
      try {
        await transact([
          ...batch.map((cc) =>
            updateWrite(keys.campaignContact(orgId, campaignId, cc.id), {
              set: { status: 'failed', error_message: message, next_retry_at: null, updated_at: now, ...contactStatusIndex(orgId, campaignId, cc.id, 'failed') },
              remove: ['due_at', 'gsi1pk', 'gsi1sk'],
              condition: '#st = :pending AND #ac = :ac',
              names: { '#st': 'status', '#ac': 'attempt_count' },
              values: { ':pending': 'pending', ':ac': cc.attempt_count },
            }),
          ),
          updateWrite(keys.campaign(orgId, campaignId), { add: { 'contact_stats.pending': -batch.length, 'contact_stats.failed': batch.length } }),
        ]);
        failed += batch.length;
      } catch (err) {
        if (!(err instanceof ConditionFailed)) throw err;
        // Another cleanup got some of them first: the next round reads them back.
      }
    }
  }
}
