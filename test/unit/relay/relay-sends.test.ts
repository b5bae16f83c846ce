import { installLocalRelayConnections, RELAY_SEND_BACKOFF_MS, sendToRelay, type RelayConnections } from '../../../shared/adapters/relay-connections';

/** PostToConnection's failures as the Management API throws them (AWS docs): an error of that name. */
const failure = (name: string) => Object.assign(new Error(name), { name });

function connections(answers: (string | undefined)[]): RelayConnections & { posts: string[] } {
  const posts: string[] = [];
  return {
    posts,
    async post(_id, data) {
      posts.push(data);
      const answer = answers.shift();
      if (answer) throw failure(answer);
    },
    async close() {},
  };
}

describe('sendToRelay', () => {
  afterEach(() => installLocalRelayConnections(undefined));
  const waits: number[] = [];
  const wait = async (ms: number) => void waits.push(ms);
  beforeEach(() => (waits.length = 0));

  it('sends once when the connection takes it', async () => {
    const port = connections([]);
    installLocalRelayConnections(port);
    await expect(sendToRelay('c1', { type: 'text', token: 'Hi', last: false }, wait)).resolves.toBe('sent');
    expect(port.posts).toEqual([JSON.stringify({ type: 'text', token: 'Hi', last: false })]);
    expect(waits).toEqual([]);
  });

  it('retries a throttled send (429) with a growing backoff, and gives up as `failed` after the last wait', async () => {
    installLocalRelayConnections(connections(['LimitExceededException', 'LimitExceededException']));
    await expect(sendToRelay('c1', {}, wait)).resolves.toBe('sent');
    expect(waits).toEqual(RELAY_SEND_BACKOFF_MS.slice(0, 2));
    waits.length = 0;
    installLocalRelayConnections(connections(Array(10).fill('LimitExceededException')));
    await expect(sendToRelay('c1', {}, wait)).resolves.toBe('failed');
    expect(waits).toEqual(RELAY_SEND_BACKOFF_MS);
  });

  it('answers `gone` for 410 and `failed` for anything else, never throwing', async () => {
    installLocalRelayConnections(connections(['GoneException']));
    await expect(sendToRelay('c1', {}, wait)).resolves.toBe('gone');
    installLocalRelayConnections(connections(['InternalServerErrorException']));
    await expect(sendToRelay('c1', {}, wait)).resolves.toBe('failed');
    expect(waits).toEqual([]);
  });
});
