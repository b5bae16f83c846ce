import type { WebSocket } from 'ws';
import { verifyToken } from '../shared/adapters/signed-token';
import { clockNow } from '../shared/clock';
import { openVoiceSession, recordConversation } from '../shared/domain/calls/voice-session';
import { answerWebCall, speechModelProblem } from '../shared/domain/calls/web-calls';
import { logger } from '../shared/logger';
import { BrowserTransport, parseBrowserMessage } from './browser-transport';
import { loadCallContext } from './call-context';
import { voiceSettings } from './config';
import { CallSession } from './session';

/**
 * A browser's WebSocket on `/web` (docs/api.md, "Web calls"). Admitted only by its first message,
 * `start`, with a valid `web-call` token (POST /web-calls) used for the first time, for a web
 * call that has not ended; anything else is an `error` naming why and a close 1008. Admitted: the
 * call is answered (`call.started`), `started` tells the browser its format, and a CallSession
 * bridges it to the Realtime model in that format, exactly as a phone call's stream.
 */
export function acceptBrowserCall(ws: WebSocket, sessions: Map<string, CallSession>): void {
  const line = new BrowserTransport(ws);
  const settings = voiceSettings();
  let session: CallSession | undefined;
  let admitting = false;
  let hungUp = false;
  /** Audio sent while the start was being admitted, passed on in order once admitted. */
  const early: string[] = [];
  const refuse = (why: string, code = 1008) => {
    logger.warn('A web call was refused', { reason: why });
    line.refuse(why, code);
  };
  const startTimer = setTimeout(() => !session && refuse('no start message in time'), settings.startTimeoutMs);

  ws.on('message', (data, isBinary) => {
    const m = parseBrowserMessage(data, isBinary);
    if ('error' in m) {
      if (!session && !admitting) return refuse(m.error);
      return line.error(m.error); // one bad message: the call goes on
    }
    if (m.type === 'start') {
      if (admitting || session) return line.error('start: the call has started already');
      admitting = true;
      line.format = m.format;
      void admit(m.token).catch((err) => {
        logger.error('A web call could not be admitted', { error: err as Error });
        refuse('admission failed', 1011);
      });
      return;
    }
    if (!session && !admitting) return refuse(`${m.type} before start`);
    if (m.type === 'audio') {
      if (session) return session.onCarrierFrame({ event: 'media', media: { payload: m.audio } });
      if (early.length < 500) early.push(m.audio);
      return;
    }
    // hangup: the call ends as when a caller hangs up; `ended` follows once it is written (during
    // the admission: once it is admitted and ended, below).
    hungUp = true;
    line.endReason = 'client_hangup';
    if (session) void hangUp(session);
  });
  ws.on('close', () => {
    clearTimeout(startTimer);
    session?.onCarrierClosed();
  });
  ws.on('error', (err) => logger.warn('A web call socket failed', { error: err }));

  async function hangUp(s: CallSession): Promise<void> {
    s.onCarrierFrame({ event: 'stop' });
    await s.done;
    line.close(1000, 'hung up');
  }

  async function admit(token: string): Promise<void> {
    const startMs = Date.now();
    const claims = await verifyToken('web-call', token);
    if (!claims?.organization_id || !claims.call_id) return refuse('invalid or expired token');
    if (sessions.has(claims.call_id)) return refuse('the call is already connected');
    const problem = speechModelProblem();
    if (problem) return refuse(problem);
    const context = await loadCallContext(claims.organization_id, claims.call_id);
    if (!context || context.call.channel !== 'web') return refuse('unknown call');
    if (context.call.status === 'ended') return refuse('the call has ended');
    // A browser that already left (a `start` and the close at once) or hung up is still admitted,
    // and its call ends at once as a caller's early hang-up (`completed`, call.started then
    // call.ended): none is left `ringing` for the sweep, and its token is spent.
    // One browser per token, ever, whichever runtime task it reaches (the media streams' conditional write).
    const admission = await openVoiceSession(claims.organization_id, claims.call_id, token);
    if (admission !== 'admitted') return refuse(admission === 'token_used' ? 'the token was already used' : 'the call has ended');
    const answered = await answerWebCall(context.call);
    context.call = answered.item;
    if (!line.open || hungUp) {
      clearTimeout(startTimer);
      await endBeforeSession(context.call.organization_id, context.call.id);
      return line.close(1000, 'hung up');
    }
    const s = new CallSession({ carrier: line, audioFormat: line.format, observer: line, context, settings, startMs, ...(claims.traceparent ? { traceparent: claims.traceparent } : {}) });
    line.onMark = (name) => s.onCarrierFrame({ event: 'mark', mark: { name } });
    session = s;
    clearTimeout(startTimer);
    sessions.set(s.callId, s);
    void s.done.then(() => sessions.delete(s.callId));
    line.send(JSON.stringify({ type: 'started', call_id: s.callId, format: line.format, sample_rate: line.format === 'pcm16' ? 24000 : 8000 }));
    for (const payload of early.splice(0)) s.onCarrierFrame({ event: 'media', media: { payload } });
    await s.start();
    logger.info('A web call is live on the voice runtime', { call_id: s.callId, format: line.format });
  }
}

/** The browser left (or hung up) before its session started: the answered call ends at once, nothing said, as at a stream's stop. */
async function endBeforeSession(orgId: string, callId: string): Promise<void> {
  await recordConversation(orgId, callId, { transcript: [], toolCalls: [], streamEndedAt: clockNow().toISOString() });
}
