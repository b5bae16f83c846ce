import { callsServiceDialer } from '../calls/campaign-calls';
import type { CampaignDialer } from './dial-port';

/** The port (./dial-port.ts), re-exported for the tests and the simulation that install their own dialer. */
export type { CampaignCallOutcome, CampaignCallRequest, CampaignDialer } from './dial-port';

/** Which dialer the engine places calls through: the calls service's unless a test or the simulation installed another. */
const DIALER = Symbol.for('vap.campaignDialer');
type Holder = { [DIALER]?: CampaignDialer };

/** Replaces the dialer for this process (tests and the simulation install their own); `undefined` returns to the calls service. */
export function installCampaignDialer(dialer: CampaignDialer | undefined): void {
  (globalThis as Holder)[DIALER] = dialer;
}

export function campaignDialer(): CampaignDialer {
  return (globalThis as Holder)[DIALER] ?? callsServiceDialer;
}
