import type { SQSEvent } from 'aws-lambda';
import { v7 as uuidv7 } from 'uuid';
import { installLocalQueue } from '../../shared/adapters/queue';
import { installCampaignDialer, type CampaignCallOutcome, type CampaignCallRequest, type CampaignDialer } from '../../shared/domain/campaigns/dialer';
import { recordCampaignCallOutcome } from '../../shared/domain/campaigns/outcomes';
import { lambdaContext } from './events';

export interface PlacedCall extends CampaignCallRequest {
  callId: string;
  ended: boolean;
}

/**
 * A campaign dialer for tests: records every placeCampaignCall (idempotent per campaign contact
 * and attempt, as the port requires), counts calls in flight, and lets the test end calls through
 * the engine's real outcome function.
 */
export class TestDialer implements CampaignDialer {
  readonly calls: PlacedCall[] = [];
  /** Every invocation, including repeats of one attempt. */
  readonly invocations: CampaignCallRequest[] = [];
  maxInFlight = 0;
  /** When set, the next placement never answers (a worker that died after claiming). */
  hangNext = false;
  private hung: (() => void)[] = [];

  async placeCampaignCall(input: CampaignCallRequest): Promise<{ callId: string }> {
    this.invocations.push(input);
    let call = this.calls.find((c) => c.campaignContactId === input.campaignContactId && c.attempt === input.attempt);
    if (!call) {
      call = { ...input, callId: uuidv7(), ended: false };
      this.calls.push(call);
      this.maxInFlight = Math.max(this.maxInFlight, this.inFlight().length);
    }
    const id = call.callId;
    if (this.hangNext) {
      this.hangNext = false;
      return new Promise((resolve) => this.hung.push(() => resolve({ callId: id })));
    }
    return { callId: id };
  }

  inFlight(campaignId?: string): PlacedCall[] {
    return this.calls.filter((c) => !c.ended && (!campaignId || c.campaignId === campaignId));
  }

  /** Ends a call the way the calls service will: through recordCampaignCallOutcome. */
  async end(call: PlacedCall, outcome: Partial<CampaignCallOutcome> = {}, endedAt = new Date()) {
    call.ended = true;
    return recordCampaignCallOutcome(call.organizationId, call.campaignId, call.campaignContactId, call.attempt, {
      callId: call.callId, endedAt: endedAt.toISOString(), durationSec: 42, answered: true, disconnectionReason: 'completed', ...outcome,
    });
  }

  releaseHung(): void {
    for (const r of this.hung.splice(0)) r();
  }
}

/** Captures queued job messages so a test delivers them (once, twice, or not at all) to the real job handlers. */
export class CapturedQueue {
  readonly messages: { queue: string; body: unknown }[] = [];
  async send(queue: string, body: unknown): Promise<void> {
    this.messages.push({ queue, body });
  }
  take(queue: string): unknown[] {
    const out = this.messages.filter((m) => m.queue === queue).map((m) => m.body);
    this.messages.splice(0, this.messages.length, ...this.messages.filter((m) => m.queue !== queue));
    return out;
  }
}

export function installTestEngine() {
  const dialer = new TestDialer();
  const queued = new CapturedQueue();
  installCampaignDialer(dialer);
  installLocalQueue(queued);
  return { dialer, queued };
}

/** Delivers bodies to a queue job's real handler as one SQS batch. */
export async function deliver(entry: string, bodies: unknown[]): Promise<void> {
  if (!bodies.length) return;
  const { handler } = (await import(`../../${entry}`)) as { handler: (e: SQSEvent, c: typeof lambdaContext) => Promise<{ batchItemFailures: unknown[] }> };
  const event = { Records: bodies.map((b, i) => ({ messageId: `m-${i}-${uuidv7()}`, body: JSON.stringify(b), attributes: { ApproximateReceiveCount: '1' } })) } as unknown as SQSEvent;
  const res = await handler(event, lambdaContext);
  if (res?.batchItemFailures?.length) throw new Error(`job ${entry} failed ${res.batchItemFailures.length} message(s)`);
}
