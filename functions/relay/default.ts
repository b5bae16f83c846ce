import { websocket } from '../../shared/http/websocket';
import { relayDefault } from '../../shared/domain/relay/operations';
import { relayMessage } from '../../shared/domain/relay/session';

export const handler = websocket(relayDefault, ({ connectionId, body }) => relayMessage(connectionId, body));
