/**
 * The widget's turns and the streaming URL (docs/api.md, "Streaming a turn"): when the streaming
 * API cannot be reached, the turn is asked of the API itself (which answers the same events all
 * at once), and the streaming URL is tried again after STREAM_RETRY_MS rather than never.
 */
import { client, STREAM_RETRY_MS } from '../../../widget/src/api';

const turnEvents = 'event: message.completed\ndata: {"id":"m1","role":"agent","content":"Hi"}\n\nevent: turn.completed\ndata: {"chat":{"id":"c1"},"messages":[]}\n\n';
const config = { stream_base_url: 'https://stream.example.com/v1/api/v1', agent: null };

describe('the widget client\'s fallback from the streaming URL', () => {
  const native = globalThis.fetch;
  let now = 1_000_000;
  let asked: string[] = [];
  let streamingUp = false;
  beforeEach(() => {
    asked = [];
    jest.spyOn(Date, 'now').mockImplementation(() => now);
    globalThis.fetch = (async (url: string) => {
      asked.push(url);
      if (url.endsWith('/config')) return new Response(JSON.stringify({ success: true, data: config }), { headers: { 'content-type': 'application/json' } });
      if (url.startsWith('https://stream.example.com') && !streamingUp) throw new TypeError('Failed to fetch');
      return new Response(turnEvents, { headers: { 'content-type': 'text/event-stream' } });
    }) as typeof fetch;
  });
  afterEach(() => {
    globalThis.fetch = native;
    jest.restoreAllMocks();
  });

  it('asks the API itself when the streaming URL fails, then tries the streaming URL again once STREAM_RETRY_MS has passed', async () => {
    // Prepare
    const api = client('https://api.example.com/api/v1', 'w1');
    await api.config();
    const completed: string[] = [];
    const listen = { delta: () => undefined, completed: (m: { content: string }) => void completed.push(m.content) };

    // Act: a turn while the streaming URL is down, another at once, another once the wait has passed (and it is up).
    await api.send('c1', 't', 'one', listen as never);
    await api.send('c1', 't', 'two', listen as never);
    now += STREAM_RETRY_MS;
    streamingUp = true;
    await api.send('c1', 't', 'three', listen as never);

    // Assess
    expect(asked.slice(1)).toEqual([
      'https://stream.example.com/v1/api/v1/widget/w1/chats/c1/messages',
      'https://api.example.com/api/v1/widget/w1/chats/c1/messages',
      'https://api.example.com/api/v1/widget/w1/chats/c1/messages',
      'https://stream.example.com/v1/api/v1/widget/w1/chats/c1/messages',
    ]);
    // The fallback's answer is read as the same events (the buffered path answers them whole).
    expect(completed).toEqual(['Hi', 'Hi', 'Hi']);
  });
});
