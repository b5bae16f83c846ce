import { http } from '../../shared/http/handler';
import { receiveTwilioRelayAction as op } from '../../shared/domain/relay/action-operations';
import { relayAction } from '../../shared/domain/relay/action';

export const handler = http(op, ({ event, query, body }) => relayAction(event, query, body));
