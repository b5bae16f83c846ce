/**
 * Deployed, streamed turns go to the stack's StreamingApiUrl (a REST API that streams), everything
 * else to the API's base URL: the typed client takes both (docs/api.md, "Streaming a turn").
 */
import { createClient } from '../../../client/src/index';

const sse = 'event: turn.completed\ndata: {"chat":{"id":"c"},"messages":[]}\n\n';

it('sends streamed turns to streamUrl and every other request to baseUrl', async () => {
  // Prepare
  const urls: string[] = [];
  const fetch = async (request: Request) => {
    urls.push(request.url);
    return request.url.includes('/messages') || request.url.includes('/tool-results')
      ? new Response(sse, { headers: { 'content-type': 'text/event-stream' } })
      : new Response(JSON.stringify({ success: true, message: 'ok', data: { id: 'c' } }), { headers: { 'content-type': 'application/json' } });
  };
  const api = createClient({ baseUrl: 'https://http.example.com', streamUrl: 'https://rest.example.com/v1/', apiKey: 'k', fetch, retry: false });

  // Act
  for await (const _ of await api.chats.streamMessage('c', { content: 'Hi' })) void _;
  for await (const _ of await api.chats.streamToolResults('c', { results: [] } as never)) void _;
  await api.get('/api/v1/chats/{id}', { params: { path: { id: 'c' } } });

  // Assess
  expect(urls).toEqual([
    'https://rest.example.com/v1/api/v1/chats/c/messages',
    'https://rest.example.com/v1/api/v1/chats/c/tool-results',
    'https://http.example.com/api/v1/chats/c',
  ]);
});

it('streams on baseUrl when no streamUrl is given (the local runtime: one server)', async () => {
  const urls: string[] = [];
  const fetch = async (request: Request) => {
    urls.push(request.url);
    return new Response(sse, { headers: { 'content-type': 'text/event-stream' } });
  };
  const api = createClient({ baseUrl: 'http://localhost:3000', apiKey: 'k', fetch, retry: false });
  for await (const _ of await api.chats.streamMessage('c', { content: 'Hi' })) void _;
  expect(urls).toEqual(['http://localhost:3000/api/v1/chats/c/messages']);
});
