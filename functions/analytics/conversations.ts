import { http } from '../../shared/http/handler';
import { getConversationAnalytics as op } from '../../shared/domain/analytics/operations';
import { conversationAnalytics } from '../../shared/domain/analytics/service';

export const handler = http(op, ({ query, caller }) => conversationAnalytics(caller.organizationId, query));
