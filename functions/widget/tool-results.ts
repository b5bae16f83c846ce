import { http } from '../../shared/http/handler';
import { submitWidgetChatToolResults as op } from '../../shared/domain/widgets/operations';
import { submitWidgetToolResults } from '../../shared/domain/widgets/public-turns';
import { publicCall } from '../../shared/domain/widgets/public-call';

export const handler = http(op, ({ params, body, event, setHeader }) => submitWidgetToolResults(publicCall(params.id, event, setHeader), params.chat_id, body.results));
