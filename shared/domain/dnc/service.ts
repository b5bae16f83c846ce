import { getItem } from '../../db/store';
import { keys } from '../../db/keys';

// Minimal stand-in with the contract's exact signature (contracts: "Calls parts"), so the campaign
// engine codes against it. REPLACED ON MERGE by the calls-parts branch's do-not-call service.

export const DNC_MESSAGES = { do_not_call: 'on do-not-call list', opt_out: 'contact opted out' } as const;

/** Why a number may not be dialed: the contact opted out, the number is on the organization's list, or null. */
export async function dialBlock(orgId: string, phoneE164: string, contact?: { opt_out?: boolean } | null): Promise<'do_not_call' | 'opt_out' | null> {
  if (contact?.opt_out) return 'opt_out';
  const entry = await getItem({ pk: keys.partition(orgId), sk: `DNC#${phoneE164}` });
  return entry ? 'do_not_call' : null;
}
