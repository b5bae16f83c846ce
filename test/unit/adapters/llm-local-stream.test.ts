/**
 * The local model streams (shared/adapters/llm/local.ts): asked with `onDelta`, it gives its reply
 * word by word (each word with the spaces after it), a turn of the event loop apart, so the
 * platform's streaming path (server-sent events, the widget, the voice relay) runs offline as it
 * does with a streaming provider. The pieces joined are the response's text.
 */
import { localModel, streamWords } from '../../../shared/adapters/llm/local';
import type { LlmRequest } from '../../../shared/adapters/llm/port';

const HOURS = 'Acme Dental is a family practice in Springfield. On Saturdays we open from 9 am to noon.';
const request = (over: Partial<LlmRequest> = {}): LlmRequest => ({
  model: '', temperature: 0.7, system: 'You are helpful.', tools: [],
  passages: [{ doc_id: 'doc-1', url: null, text: HOURS, score: 1 }],
  messages: [{ role: 'user', content: 'When do you open on Saturdays?' }],
  ...over,
});

it('gives the reply word by word, each piece a turn of the event loop apart, the pieces joined being its text', async () => {
  const timeline: string[] = [];
  const pieces: string[] = [];
  const answer = localModel().complete(
    request({
      onDelta: (piece) => {
        pieces.push(piece);
        timeline.push(`delta:${piece}`);
        // Other work gets the event loop between two pieces: a listener can write each as it comes.
        setImmediate(() => timeline.push('tick'));
      },
    }),
  );
  const response = await answer;
  expect(response.text).toBe('On Saturdays we open from 9 am to noon.');
  expect(pieces).toEqual(['On ', 'Saturdays ', 'we ', 'open ', 'from ', '9 ', 'am ', 'to ', 'noon.']);
  expect(pieces.join('')).toBe(response.text);
  // Never two pieces in the same turn of the event loop.
  for (let i = 0; i < timeline.length - 1; i++) if (timeline[i]!.startsWith('delta:')) expect(timeline[i + 1]).toBe('tick');
});

it('hands over the first piece before the reply is complete', async () => {
  let resolved = false;
  const first = new Promise<string>((resolve) => {
    void localModel()
      .complete(request({ onDelta: (piece) => resolve(piece) }))
      .then(() => (resolved = true));
  });
  expect(await first).toBe('On ');
  expect(resolved).toBe(false);
});

it('gives no piece for a step that only calls tools, and streams nothing unasked', async () => {
  const pieces: string[] = [];
  const tools = [{ name: 'check_stock', description: 'stock', parameters: { type: 'object', properties: {} } }];
  const call = await localModel({ newId: () => 'call_1' }).complete(request({ messages: [{ role: 'user', content: 'please check_stock' }], tools, onDelta: (p) => pieces.push(p) }));
  expect(call.toolCalls).toEqual([{ id: 'call_1', name: 'check_stock', arguments: '{}' }]);
  expect(call.text).toBe('');
  expect(pieces).toEqual([]);
  const plain = await localModel().complete(request());
  expect(plain.text).toBe('On Saturdays we open from 9 am to noon.');
});

it('keeps every space and line break of the text (streamWords)', async () => {
  const pieces: string[] = [];
  await streamWords('  Two  spaces,\nthen a line. ', (p) => pieces.push(p));
  expect(pieces).toEqual(['  ', 'Two  ', 'spaces,\n', 'then ', 'a ', 'line. ']);
  expect(pieces.join('')).toBe('  Two  spaces,\nthen a line. ');
});

it('stops streaming and rejects as cancelled when the request\'s signal aborts', async () => {
  const controller = new AbortController();
  const pieces: string[] = [];
  const answer = localModel().complete(request({ signal: controller.signal, onDelta: (piece) => void (pieces.push(piece), pieces.length === 2 && controller.abort()) }));
  await expect(answer).rejects.toMatchObject({ name: 'LlmError', details: { provider: 'local', cancelled: true } });
  expect(pieces).toEqual(['On ', 'Saturdays ']);
  await expect(localModel().complete(request({ signal: AbortSignal.abort() }))).rejects.toMatchObject({ details: { cancelled: true } });
});
