import { runTick } from '../../shared/domain/campaigns/engine';

// Every minute: one campaign-dispatch message per started campaign (windows open, leases recover).
export const handler = async () => {
  await runTick();
};
