jest.mock('../../../shared/domain/conversations/tools/catalog', () => ({ toolsForAgent: async () => [] }));
import { cachedToolConnections, forgetRelayTools, relayTools, TOOL_CACHE_SIZE } from '../../../shared/domain/relay/tool-calls';
import type { RelayState } from '../../../shared/domain/relay/state';

const stateOf = (connectionId: string) => ({ connection_id: connectionId, organization_id: 'org', agent: { selected_tools: [], ivr: null } }) as unknown as RelayState;

describe('relay tools cache', () => {
  it('keeps at most TOOL_CACHE_SIZE connections (the least recently used goes) and forgets a connection at its end', async () => {
    for (let i = 0; i < TOOL_CACHE_SIZE + 50; i++) await relayTools(stateOf(`c${i}`));
    expect(cachedToolConnections()).toBe(TOOL_CACHE_SIZE);
    forgetRelayTools(`c${TOOL_CACHE_SIZE + 49}`);
    expect(cachedToolConnections()).toBe(TOOL_CACHE_SIZE - 1);
  });

  it('offers press_digits when the agent\'s ivr_options is on', async () => {
    const tools = await relayTools({ ...stateOf('ivr'), agent: { selected_tools: [], ivr: { goal: '' } } } as unknown as RelayState);
    expect(tools.map((t) => t.name)).toEqual(['press_digits']);
  });
});
