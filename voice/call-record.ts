import { clockNow } from '../shared/clock';
import { recordConversation, type VoiceEndReason } from '../shared/domain/calls/voice-session';
import { logger } from '../shared/logger';
import type { EndDeps } from './call-ending';
import type { TranscriptRecorder } from './transcript';

/**
 * A session's writes to its call (session.ts): the conversation, the end's reason and error, and
 * when the stream ended. Written only when something changed since the last write, one write at a
 * time: a record made while another is in flight (the stream's end during a hang-up's record)
 * waits for it, so the session's `done` resolves only once the call is written (and, inbound,
 * ended). Each write waits for `before` (the hand-offs' records: the end carries the segments).
 */
export class CallRecord {
  private endReason: VoiceEndReason | undefined;
  private errorMessage: string | undefined;
  /** When the stream ended (the carrier's `stop` or close, or the agent's hang-up). */
  private streamEndedAt: string | undefined;
  private recordedVersion = '';
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly orgId: string,
    private readonly callId: string,
    private readonly transcript: TranscriptRecorder,
    private readonly before: () => Promise<void>,
  ) {}

  /** Notes what is given (a reason, an error, the stream's end: the first one counts) and writes the call. */
  record: EndDeps['record'] = (o) => {
    if (o.reason) this.endReason = o.reason;
    if (o.error) this.errorMessage = o.error;
    if (o.streamEnded) this.streamEndedAt ??= clockNow().toISOString();
    this.writing = this.writing.then(() => this.write());
    return this.writing;
  };

  private async write(): Promise<void> {
    await this.before();
    const version = [this.transcript.version, this.endReason, this.errorMessage, this.streamEndedAt].join('|');
    if (version === this.recordedVersion) return;
    this.recordedVersion = version;
    try {
      await recordConversation(this.orgId, this.callId, {
        transcript: this.transcript.transcript(),
        toolCalls: this.transcript.toolCalls(),
        endReason: this.endReason,
        errorMessage: this.errorMessage,
        ...(this.streamEndedAt ? { streamEndedAt: this.streamEndedAt } : {}),
      });
    } catch (err) {
      this.recordedVersion = '';
      logger.error('The conversation could not be written to the call', { call_id: this.callId, error: err as Error });
    }
  }
}
