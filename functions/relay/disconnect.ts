import { websocket } from '../../shared/http/websocket';
import { relayDisconnect } from '../../shared/domain/relay/operations';
import { disconnectRelay } from '../../shared/domain/relay/session';

export const handler = websocket(relayDisconnect, ({ connectionId }) => disconnectRelay(connectionId));
